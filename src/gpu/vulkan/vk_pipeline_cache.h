/* The driver's pipeline cache as blobs (gpu.h pipeline_cache_data / _merge): what cubec's disk
 * cache saves and offers back to a later device of the same identity; and the caches builds use.
 *
 * One VkPipelineCache shared by every build made parallel builds wait for one another in the
 * NVIDIA driver: 64 kernels compiled by 16 threads took 27-29 ms on an H200 through one cache
 * and 7-8 ms with none (docs/benchmarks.md). So each build takes a cache no other build holds
 * (made on demand, seeded with what was loaded), and a save first merges them all. Without a
 * disk cache nothing would be saved, and builds use no cache at all. */
#ifndef CUBEC_GPU_VK_PIPELINE_CACHE_H
#define CUBEC_GPU_VK_PIPELINE_CACHE_H

#include "gpu/vulkan/vk_gpu.h"

/* The physical device's pipelineCacheUUID, vendor, device and driver version. */
void vk_pipeline_cache_identity(VkPhysicalDevice physical, gpu_cache_identity *out);
cubec_status vk_pipeline_cache_data(gpu *g, void **out, size_t *out_size);
cubec_status vk_pipeline_cache_merge(gpu *g, const void *data, size_t size);
/* Builds use pipeline caches from now on (gpu.h pipeline_cache_enable). */
void vk_pipeline_cache_enable(gpu *g);
/* A cache for one pipeline creation, VK_NULL_HANDLE while caching is off (or when none could be
 * made: the pipeline is then built without one); give it back after the creation. */
VkPipelineCache vk_pipeline_cache_take(vk_gpu *v);
void vk_pipeline_cache_give(vk_gpu *v, VkPipelineCache cache);
/* Creates the loading cache (at open) and destroys every cache (at close). */
cubec_status vk_pipeline_cache_init(vk_gpu *v);
void vk_pipeline_cache_destroy(vk_gpu *v);
/* Closing an abandoned device (its GPU did not finish): the driver's caches stay alive with the
 * device, but the pool's host-side lists and lock go with the record that holds them. */
void vk_pipeline_cache_abandon(vk_gpu *v);

#endif
