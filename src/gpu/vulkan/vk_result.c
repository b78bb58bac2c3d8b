#include "gpu/vulkan/vk_result.h"

const char *vk_result_name(VkResult r)
{
    switch (r) {
#define N(x)                                                                                       \
    case x: return #x;
        N(VK_SUCCESS)
        N(VK_NOT_READY)
        N(VK_TIMEOUT)
        N(VK_EVENT_SET)
        N(VK_EVENT_RESET)
        N(VK_INCOMPLETE)
        N(VK_ERROR_OUT_OF_HOST_MEMORY)
        N(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        N(VK_ERROR_INITIALIZATION_FAILED)
        N(VK_ERROR_DEVICE_LOST)
        N(VK_ERROR_MEMORY_MAP_FAILED)
        N(VK_ERROR_LAYER_NOT_PRESENT)
        N(VK_ERROR_EXTENSION_NOT_PRESENT)
        N(VK_ERROR_FEATURE_NOT_PRESENT)
        N(VK_ERROR_INCOMPATIBLE_DRIVER)
        N(VK_ERROR_TOO_MANY_OBJECTS)
        N(VK_ERROR_FORMAT_NOT_SUPPORTED)
        N(VK_ERROR_FRAGMENTED_POOL)
        N(VK_ERROR_UNKNOWN)
        N(VK_ERROR_OUT_OF_POOL_MEMORY)
        N(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        N(VK_ERROR_FRAGMENTATION)
        N(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
        N(VK_PIPELINE_COMPILE_REQUIRED)
        N(VK_ERROR_INVALID_SHADER_NV)
#undef N
    default: return "VK_RESULT_UNKNOWN";
    }
}

cubec_status vk_status(VkResult r, const char *what)
{
    if (r == VK_SUCCESS) return NULL;
    cubec_code code = CUBEC_INTERNAL;
    switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTATION:
    case VK_ERROR_TOO_MANY_OBJECTS: code = CUBEC_OUT_OF_MEMORY; break;
    case VK_ERROR_DEVICE_LOST: code = CUBEC_DEVICE_LOST; break;
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_LAYER_NOT_PRESENT: code = CUBEC_UNSUPPORTED; break;
    default: break;
    }
    return status_make(code, "%s: %s", what, vk_result_name(r));
}
