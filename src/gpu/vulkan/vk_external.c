/* External memory and the exported timeline on Vulkan (see vk_external.h). Pages are exported as
 * opaque fds, which another Vulkan device or CUDA imports only on the same physical device (the
 * importer compares deviceUUID): dma-buf would reach other devices, but the GPUs cubec targets
 * do not all offer it (../shared/reviews/anchors.md 3.1). */
#include "gpu/vulkan/vk_external.h"
#include "gpu/vulkan/vk_gpu.h"
#include "gpu/vulkan/vk_result.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define OPAQUE_FD VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT

int vk_external_memory_supported(VkPhysicalDevice pd, VkBufferUsageFlags usage,
                                 int *out_dedicated_only)
{
    VkPhysicalDeviceExternalBufferInfo info = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO,
        .usage = usage,
        .handleType = OPAQUE_FD};
    VkExternalBufferProperties props = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
    vkGetPhysicalDeviceExternalBufferProperties(pd, &info, &props);
    VkExternalMemoryFeatureFlags f = props.externalMemoryProperties.externalMemoryFeatures;
    *out_dedicated_only = (f & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT) != 0;
    /* Both ways: a cubec device imports what another exported. */
    return (f & VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT) &&
           (f & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT) &&
           (props.externalMemoryProperties.compatibleHandleTypes & OPAQUE_FD);
}

int vk_external_timeline_supported(VkPhysicalDevice pd)
{
    VkSemaphoreTypeCreateInfo type = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkPhysicalDeviceExternalSemaphoreInfo info = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO,
        .pNext = &type,
        .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkExternalSemaphoreProperties props = {.sType =
                                               VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES};
    vkGetPhysicalDeviceExternalSemaphoreProperties(pd, &info, &props);
    return (props.externalSemaphoreFeatures & VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT) != 0;
}

void vk_device_uuid(VkPhysicalDevice pd, uint8_t out[16])
{
    VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &id};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    memcpy(out, id.deviceUUID, 16);
}

/* A page's VkBuffer that external memory may back (both sides must say so at creation). */
static cubec_status external_buffer(vk_gpu *v, uint64_t size, VkBuffer *out)
{
    VkExternalMemoryBufferCreateInfo ext = {
        .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO, .handleTypes = OPAQUE_FD};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .pNext = &ext,
                              .size = size,
                              .usage = vk_page_usage(v->vk.buffer_device_address),
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    return vk_status(vkCreateBuffer(v->vk.device, &bci, NULL, out), "vkCreateBuffer (external)");
}

/* Allocates (with `export_info` or `import_info` chained) and binds the memory of m->buffer.
 * `dedicated` < 0: decided here from the buffer's requirements. */
static cubec_status external_memory(vk_gpu *v, vk_mem *m, uint64_t allocation_size, int dedicated,
                                    const void *handle_info)
{
    VkDevice dev = v->vk.device;
    VkMemoryDedicatedRequirements dreq = {.sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_REQUIREMENTS};
    VkMemoryRequirements2 req = {.sType = VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2, .pNext = &dreq};
    VkBufferMemoryRequirementsInfo2 ri = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_REQUIREMENTS_INFO_2, .buffer = m->buffer};
    vkGetBufferMemoryRequirements2(dev, &ri, &req);
    uint32_t type = v->vk.device_memory_type;
    if (!(req.memoryRequirements.memoryTypeBits & (1u << type)))
        return status_make(CUBEC_UNSUPPORTED,
                           "memory type %u of device pages is not allowed for external buffers "
                           "(allowed: 0x%x)",
                           type, req.memoryRequirements.memoryTypeBits);
    if (dedicated < 0)
        dedicated = v->vk.external_dedicated_only || dreq.requiresDedicatedAllocation ||
                    dreq.prefersDedicatedAllocation;
    if (!allocation_size) allocation_size = req.memoryRequirements.size;
    if (allocation_size < req.memoryRequirements.size)
        return INVALID_ARG("an allocation of %" PRIu64 " bytes is smaller than its buffer needs "
                           "(%" PRIu64 ")",
                           allocation_size, (uint64_t)req.memoryRequirements.size);
    VkMemoryDedicatedAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
                                         .pNext = handle_info,
                                         .buffer = m->buffer};
    VkMemoryAllocateFlagsInfo flags = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                       .pNext = dedicated ? (const void *)&dai : handle_info,
                                       .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    const void *chain = v->vk.buffer_device_address ? (const void *)&flags : flags.pNext;
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .pNext = chain,
                                .allocationSize = allocation_size,
                                .memoryTypeIndex = type};
    VkResult r = vkAllocateMemory(dev, &mai, NULL, &m->memory);
    if (r != VK_SUCCESS) {
        m->memory = VK_NULL_HANDLE;
        cubec_code code = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
                              ? CUBEC_OUT_OF_MEMORY
                          : r == VK_ERROR_INVALID_EXTERNAL_HANDLE ? CUBEC_INVALID_ARGUMENT
                                                                  : CUBEC_INTERNAL;
        return status_make(code, "vkAllocateMemory of %" PRIu64 " bytes (%s): %s", allocation_size,
                           m->base.external == GPU_EXTERNAL_IMPORTED ? "importing an fd"
                                                                     : "exportable",
                           vk_result_name(r));
    }
    VK_RETURN_IF_ERROR(vkBindBufferMemory(dev, m->buffer, m->memory, 0), "vkBindBufferMemory");
    m->memory_type = type;
    m->coherent =
        (v->vk.memory.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    m->allocation_size = allocation_size;
    m->dedicated = dedicated;
    m->base.unbacked = 0;
    return NULL;
}

static void destroy_failed(vk_gpu *v, vk_mem *m)
{
    if (m->buffer) vkDestroyBuffer(v->vk.device, m->buffer, NULL);
    if (m->memory) vkFreeMemory(v->vk.device, m->memory, NULL);
    free(m);
}

static cubec_status new_external(vk_gpu *v, uint64_t size, int external, vk_mem **out)
{
    vk_mem *m = calloc(1, sizeof *m);
    if (!m) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (memory record)");
    m->base.size = size;
    m->base.kind = GPU_MEM_DEVICE;
    m->base.external = external;
    cubec_status err = external_buffer(v, size, &m->buffer);
    if (err) {
        free(m);
        return err;
    }
    *out = m;
    return NULL;
}

cubec_status vk_mem_create_exportable(gpu *g, uint64_t size, gpu_mem **out)
{
    vk_gpu *v = vk_gpu_of(g);
    vk_mem *m = NULL;
    RETURN_IF_ERROR(new_external(v, size, GPU_EXTERNAL_EXPORTABLE, &m));
    if (!m) return status_make(CUBEC_INTERNAL, "vk mem_create_exportable: no buffer record");
    VkExportMemoryAllocateInfo exp = {.sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
                                      .handleTypes = OPAQUE_FD};
    cubec_status err = external_memory(v, m, 0, -1, &exp);
    if (err) {
        destroy_failed(v, m);
        return err;
    }
    *out = &m->base;
    return NULL;
}

cubec_status vk_mem_export(gpu *g, gpu_mem *gm, gpu_export *out)
{
    vk_gpu *v = vk_gpu_of(g);
    vk_mem *m = (vk_mem *)gm;
    VkMemoryGetFdInfoKHR info = {.sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
                                 .memory = m->memory,
                                 .handleType = OPAQUE_FD};
    int fd = -1;
    VK_RETURN_IF_ERROR(v->vk.get_memory_fd(v->vk.device, &info, &fd), "vkGetMemoryFdKHR");
    *out = (gpu_export){.fd = fd, .allocation_size = m->allocation_size, .dedicated = m->dedicated};
    return NULL;
}

cubec_status vk_mem_import_fd(gpu *g, int fd, uint64_t allocation_size, int dedicated,
                              gpu_mem **out)
{
    vk_gpu *v = vk_gpu_of(g);
    vk_mem *m = NULL;
    /* The buffer spans the whole allocation: a dedicated allocation's buffer must need exactly
     * its size, and the exporter's buffer's size rounded up is what it allocated. */
    RETURN_IF_ERROR(new_external(v, allocation_size, GPU_EXTERNAL_IMPORTED, &m));
    if (!m) return status_make(CUBEC_INTERNAL, "vk mem_import_fd: no buffer record");
    VkImportMemoryFdInfoKHR imp = {
        .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR, .handleType = OPAQUE_FD, .fd = fd};
    cubec_status err = external_memory(v, m, allocation_size, dedicated != 0, &imp);
    if (err) {
        destroy_failed(v, m);
        return err;
    }
    *out = &m->base;
    return NULL;
}

cubec_status vk_timeline_export(gpu *g, int *out_fd)
{
    vk_gpu *v = vk_gpu_of(g);
    VkSemaphoreGetFdInfoKHR info = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR,
                                    .semaphore = v->timeline,
                                    .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    *out_fd = -1;
    VK_RETURN_IF_ERROR(v->vk.get_semaphore_fd(v->vk.device, &info, out_fd), "vkGetSemaphoreFdKHR");
    return NULL;
}

cubec_status vk_inbound_export(gpu *g, int *out_fd)
{
    vk_gpu *v = vk_gpu_of(g);
    VkSemaphoreGetFdInfoKHR info = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR,
                                    .semaphore = v->inbound,
                                    .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    *out_fd = -1;
    VK_RETURN_IF_ERROR(v->vk.get_semaphore_fd(v->vk.device, &info, out_fd),
                       "vkGetSemaphoreFdKHR(inbound)");
    return NULL;
}
