/* Cooperative-matrix shapes (see vk_matrix_shapes.h). */
#include "gpu/vulkan/vk_matrix_shapes.h"

#include "gpu/vulkan/vk_features.h"

#include <stdlib.h>

static cubec_matrix_type matrix_type(uint32_t component)
{
    switch (component) {
    case VK_COMPONENT_TYPE_FLOAT16_NV: return CUBEC_MATRIX_FLOAT16;
    case VK_COMPONENT_TYPE_FLOAT32_NV: return CUBEC_MATRIX_FLOAT32;
    case VK_COMPONENT_TYPE_FLOAT64_NV: return CUBEC_MATRIX_FLOAT64;
    case VK_COMPONENT_TYPE_SINT8_NV: return CUBEC_MATRIX_SINT8;
    case VK_COMPONENT_TYPE_SINT16_NV: return CUBEC_MATRIX_SINT16;
    case VK_COMPONENT_TYPE_SINT32_NV: return CUBEC_MATRIX_SINT32;
    case VK_COMPONENT_TYPE_SINT64_NV: return CUBEC_MATRIX_SINT64;
    case VK_COMPONENT_TYPE_UINT8_NV: return CUBEC_MATRIX_UINT8;
    case VK_COMPONENT_TYPE_UINT16_NV: return CUBEC_MATRIX_UINT16;
    case VK_COMPONENT_TYPE_UINT32_NV: return CUBEC_MATRIX_UINT32;
    case VK_COMPONENT_TYPE_UINT64_NV: return CUBEC_MATRIX_UINT64;
    case CUBEC_VK_COMPONENT_TYPE_BFLOAT16: return CUBEC_MATRIX_BFLOAT16;
    default: return CUBEC_MATRIX_OTHER;
    }
}

static void add(cubec_device_info *out, cubec_matrix_shape shape)
{
    if (out->matrix_shape_count < CUBEC_MAX_MATRIX_SHAPES)
        out->matrix_shapes[out->matrix_shape_count++] = shape;
}

static void query_khr(VkInstance instance, VkPhysicalDevice physical, cubec_device_info *out)
{
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR get =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)vkGetInstanceProcAddr(
            instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    uint32_t n = 0;
    if (!get || get(physical, &n, NULL) != VK_SUCCESS || n == 0) return;
    VkCooperativeMatrixPropertiesKHR *p = calloc(n, sizeof *p);
    if (!p) return;
    for (uint32_t i = 0; i < n; i++)
        p[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
    VkResult r = get(physical, &n, p);
    for (uint32_t i = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && i < n; i++) {
        if ((uint32_t)p[i].scope != (uint32_t)VK_SCOPE_SUBGROUP_NV) continue;
        add(out, (cubec_matrix_shape){.m = p[i].MSize,
                                      .n = p[i].NSize,
                                      .k = p[i].KSize,
                                      .a = matrix_type((uint32_t)p[i].AType),
                                      .b = matrix_type((uint32_t)p[i].BType),
                                      .c = matrix_type((uint32_t)p[i].CType),
                                      .result = matrix_type((uint32_t)p[i].ResultType),
                                      .saturating = p[i].saturatingAccumulation == VK_TRUE});
    }
    free(p);
}

static void query_nv(VkInstance instance, VkPhysicalDevice physical, cubec_device_info *out)
{
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)vkGetInstanceProcAddr(
            instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
    uint32_t n = 0;
    if (!get || get(physical, &n, NULL) != VK_SUCCESS || n == 0) return;
    VkCooperativeMatrixPropertiesNV *p = calloc(n, sizeof *p);
    if (!p) return;
    for (uint32_t i = 0; i < n; i++)
        p[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
    VkResult r = get(physical, &n, p);
    for (uint32_t i = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && i < n; i++) {
        if (p[i].scope != VK_SCOPE_SUBGROUP_NV) continue;
        add(out, (cubec_matrix_shape){.m = p[i].MSize,
                                      .n = p[i].NSize,
                                      .k = p[i].KSize,
                                      .a = matrix_type((uint32_t)p[i].AType),
                                      .b = matrix_type((uint32_t)p[i].BType),
                                      .c = matrix_type((uint32_t)p[i].CType),
                                      .result = matrix_type((uint32_t)p[i].DType),
                                      .nv = 1});
    }
    free(p);
}

void vk_matrix_shapes_query(VkInstance instance, VkPhysicalDevice physical, uint32_t exts,
                            cubec_device_info *out)
{
    out->matrix_shape_count = 0;
    if (exts & VK_FEATURE_EXT_COOPERATIVE_MATRIX) query_khr(instance, physical, out);
    if (exts & VK_FEATURE_EXT_COOPERATIVE_MATRIX_NV) query_nv(instance, physical, out);
}

void vk_matrix_shapes_keep(cubec_device_info *info, uint32_t enabled)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < info->matrix_shape_count; i++) {
        uint32_t needs = info->matrix_shapes[i].nv ? CUBEC_FEATURE_COOPERATIVE_MATRIX_NV
                                                   : CUBEC_FEATURE_COOPERATIVE_MATRIX;
        if (enabled & needs) info->matrix_shapes[kept++] = info->matrix_shapes[i];
    }
    info->matrix_shape_count = kept;
}
