/* The optional features of a Vulkan device (cubec_feature): which ones it has, and the feature
 * structs that enable them at vkCreateDevice. Only what the device reports is ever enabled.
 *
 * cubec asks for Vulkan 1.2, so the features come from the Vulkan 1.1 and 1.2 feature structs
 * (16-bit storage is in the 1.1 one, 8-bit storage, float16/int8, int64 atomics and buffer
 * device address in the 1.2 one), from the structs of device extensions (subgroup size control
 * and integer dot product, core only in 1.3; cooperative matrices and bfloat16), and the
 * subgroup operations from VkPhysicalDeviceSubgroupProperties. An extension's struct is linked
 * into the chain only where the device has the extension: a struct the driver or the validation
 * layer does not know is an error there. */
#ifndef CUBEC_GPU_VK_FEATURES_H
#define CUBEC_GPU_VK_FEATURES_H

#include "gpu/vulkan/vk_ext_defs.h"

#include <stdint.h>
#include <vulkan/vulkan.h>

/* Device extensions behind optional features (bits of vk_feature_chain.extensions). */
enum {
    VK_FEATURE_EXT_SUBGROUP_SIZE_CONTROL = 1u << 0,
    VK_FEATURE_EXT_INTEGER_DOT_PRODUCT = 1u << 1,
    VK_FEATURE_EXT_COOPERATIVE_MATRIX = 1u << 2,
    VK_FEATURE_EXT_COOPERATIVE_MATRIX_NV = 1u << 3,
    VK_FEATURE_EXT_BFLOAT16 = 1u << 4,
};
#define VK_FEATURE_EXT_COUNT 5

/* core.pNext -> v11 -> v12 -> the extensions' structs that are linked: the chain points into
 * itself, so it must not be copied. */
typedef struct vk_feature_chain {
    VkPhysicalDeviceFeatures2 core;
    VkPhysicalDeviceVulkan11Features v11;
    VkPhysicalDeviceVulkan12Features v12;
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT size_control;
    VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR dot_product;
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cooperative_matrix;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cooperative_matrix_nv;
    VkPhysicalDeviceShaderBfloat16FeaturesKHR bfloat16;
    uint32_t extensions; /* VK_FEATURE_EXT_* whose structs are linked */
} vk_feature_chain;

/* The VK_FEATURE_EXT_* extensions the device has. */
uint32_t vk_features_extensions(VkPhysicalDevice physical);
/* Fills `have` with every feature the device reports and returns its cubec_feature bits. */
uint32_t vk_features_query(VkPhysicalDevice physical, vk_feature_chain *have);
/* `bits` less `disabled` and less what needs a disabled feature (the "uniform and storage"
 * variants need the storage-buffer one, device-scope memory model needs the memory model, the
 * bfloat16 dot product and cooperative matrices need bfloat16, and the latter also
 * cooperative_matrix). */
uint32_t vk_features_mask(uint32_t bits, uint32_t disabled);
/* Fills `want` with the Vulkan features behind `bits` (which the device must have) and nothing
 * else, linking the structs of the extensions they need; the caller adds the features cubec
 * always needs. */
void vk_features_want(uint32_t bits, vk_feature_chain *want);
/* The names of the extensions `want` needs enabled (its linked structs), at most `max`;
 * returns how many. */
uint32_t vk_features_extension_names(const vk_feature_chain *want, const char **names,
                                     uint32_t max);

#endif
