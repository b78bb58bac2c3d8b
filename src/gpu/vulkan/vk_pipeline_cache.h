/* The driver's pipeline cache as blobs (gpu.h pipeline_cache_data / _merge): what cubec's disk
 * cache saves and offers back to a later device of the same identity. */
#ifndef CUBEC_GPU_VK_PIPELINE_CACHE_H
#define CUBEC_GPU_VK_PIPELINE_CACHE_H

#include "gpu/vulkan/vk_gpu.h"

/* The physical device's pipelineCacheUUID, vendor, device and driver version. */
void vk_pipeline_cache_identity(VkPhysicalDevice physical, gpu_cache_identity *out);
cubec_status vk_pipeline_cache_data(gpu *g, void **out, size_t *out_size);
cubec_status vk_pipeline_cache_merge(gpu *g, const void *data, size_t size);

#endif
