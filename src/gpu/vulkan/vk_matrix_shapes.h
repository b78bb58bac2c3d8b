/* The cooperative-matrix shapes of a device (cubec_device_info.matrix_shapes): what
 * vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR and its NV forerunner report, subgroup scope
 * only (the scope GLSL's coopmat and fcoopmatNV types have). */
#ifndef CUBEC_GPU_VK_MATRIX_SHAPES_H
#define CUBEC_GPU_VK_MATRIX_SHAPES_H

#include "cubec/cubec.h"

#include <vulkan/vulkan.h>

/* Fills out->matrix_shapes and matrix_shape_count from the extensions among `exts`
 * (VK_FEATURE_EXT_* of vk_features.h) that the device has. */
void vk_matrix_shapes_query(VkInstance instance, VkPhysicalDevice physical, uint32_t exts,
                            cubec_device_info *out);
/* Drops the shapes of an extension whose feature (`enabled`: cubec_feature bits) is off. */
void vk_matrix_shapes_keep(cubec_device_info *info, uint32_t enabled);

#endif
