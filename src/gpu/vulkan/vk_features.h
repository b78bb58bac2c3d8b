/* The optional features of a Vulkan device (cubec_feature): which ones it has, and the feature
 * structs that enable them at vkCreateDevice. Only what the device reports is ever enabled.
 *
 * cubec requires Vulkan 1.2, so the features come from the Vulkan 1.1 and 1.2 feature structs
 * (16-bit storage is in the 1.1 one, 8-bit storage, float16/int8 and int64 atomics in the 1.2
 * one) and the subgroup operations from VkPhysicalDeviceSubgroupProperties. */
#ifndef CUBEC_GPU_VK_FEATURES_H
#define CUBEC_GPU_VK_FEATURES_H

#include <stdint.h>
#include <vulkan/vulkan.h>

/* core.pNext -> v11, v11.pNext -> v12: the chain points into itself, so it must not be copied. */
typedef struct vk_feature_chain {
    VkPhysicalDeviceFeatures2 core;
    VkPhysicalDeviceVulkan11Features v11;
    VkPhysicalDeviceVulkan12Features v12;
} vk_feature_chain;

/* Fills `have` with every feature the device reports and returns its cubec_feature bits. */
uint32_t vk_features_query(VkPhysicalDevice physical, vk_feature_chain *have);
/* `bits` less `disabled` and less what needs a disabled feature (the "uniform and storage"
 * variants need the storage-buffer one, device-scope memory model needs the memory model). */
uint32_t vk_features_mask(uint32_t bits, uint32_t disabled);
/* Fills `want` with the Vulkan features behind `bits` (which the device must have) and nothing
 * else; the caller adds the features cubec always needs. */
void vk_features_want(uint32_t bits, vk_feature_chain *want);

#endif
