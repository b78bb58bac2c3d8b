/* Blobs of the VkPipelineCache (see vk_pipeline_cache.h). A blob is checked against this device
 * before the driver sees it: drivers are meant to refuse a foreign blob by its header, but a blob
 * is bytes from a file, and the header is cheap to check here. */
#include "gpu/vulkan/vk_pipeline_cache.h"

#include "gpu/vulkan/vk_result.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void vk_pipeline_cache_identity(VkPhysicalDevice physical, gpu_cache_identity *out)
{
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(physical, &p);
    memset(out, 0, sizeof *out);
    memcpy(out->uuid, p.pipelineCacheUUID, sizeof out->uuid);
    out->vendor_id = p.vendorID;
    out->device_id = p.deviceID;
    out->driver_version = p.driverVersion;
}

cubec_status vk_pipeline_cache_init(vk_gpu *v)
{
    if (pthread_mutex_init(&v->caches.lock, NULL) != 0)
        return status_make(CUBEC_INTERNAL, "pthread_mutex_init (pipeline caches) failed");
    v->caches.ready = 1;
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    return vk_status(vkCreatePipelineCache(v->vk.device, &ci, NULL, &v->pipeline_cache),
                     "vkCreatePipelineCache");
}

/* The host side: the pool's lists and lock. */
static void forget(vk_gpu *v)
{
    free(v->caches.all);
    free(v->caches.idle);
    v->caches.all = v->caches.idle = NULL;
    v->caches.count = v->caches.idle_count = v->caches.cap = 0;
    if (v->caches.ready) pthread_mutex_destroy(&v->caches.lock);
    v->caches.ready = 0;
}

void vk_pipeline_cache_destroy(vk_gpu *v)
{
    for (uint32_t i = 0; i < v->caches.count; i++)
        vkDestroyPipelineCache(v->vk.device, v->caches.all[i], NULL);
    if (v->pipeline_cache) vkDestroyPipelineCache(v->vk.device, v->pipeline_cache, NULL);
    v->pipeline_cache = VK_NULL_HANDLE;
    forget(v);
}

void vk_pipeline_cache_abandon(vk_gpu *v)
{
    forget(v);
}

void vk_pipeline_cache_enable(gpu *g)
{
    vk_gpu *v = vk_gpu_of(g);
    pthread_mutex_lock(&v->caches.lock);
    v->caches.enabled = 1;
    pthread_mutex_unlock(&v->caches.lock);
}

/* Room for one more cache in both lists (under the lock); 0 when the host is out of memory. */
static int grow(vk_gpu *v)
{
    uint32_t cap = v->caches.cap ? v->caches.cap * 2 : 8;
    VkPipelineCache *all = realloc(v->caches.all, (size_t)cap * sizeof(VkPipelineCache));
    if (!all) return 0;
    v->caches.all = all;
    VkPipelineCache *idle = realloc(v->caches.idle, (size_t)cap * sizeof(VkPipelineCache));
    if (!idle) return 0;
    v->caches.idle = idle;
    v->caches.cap = cap;
    return 1;
}

/* The loading cache's contents, malloc'ed (at least one byte). The size may grow between the two
 * calls if another thread creates a pipeline through it: the second call then reports
 * VK_INCOMPLETE with a valid (shorter) blob, which is kept as it is. */
static cubec_status loading_cache_bytes(vk_gpu *v, void **out, size_t *out_size)
{
    size_t size = 0;
    VK_RETURN_IF_ERROR(vkGetPipelineCacheData(v->vk.device, v->pipeline_cache, &size, NULL),
                       "vkGetPipelineCacheData");
    void *data = malloc(size ? size : 1);
    if (!data) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (pipeline cache)");
    VkResult r = vkGetPipelineCacheData(v->vk.device, v->pipeline_cache, &size, data);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        free(data);
        return vk_status(r, "vkGetPipelineCacheData");
    }
    *out = data;
    *out_size = size;
    return NULL;
}

/* A new build cache holding what the loading cache holds (an empty one when that cannot be
 * read). Under the lock: the loading cache is only read here, and merged into while no build
 * runs. */
static VkPipelineCache make_cache(vk_gpu *v)
{
    void *data = NULL;
    size_t size = 0;
    cubec_status_free(loading_cache_bytes(v, &data, &size));
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                    .initialDataSize = data ? size : 0,
                                    .pInitialData = data};
    VkPipelineCache c = VK_NULL_HANDLE;
    if (vkCreatePipelineCache(v->vk.device, &ci, NULL, &c) != VK_SUCCESS) c = VK_NULL_HANDLE;
    free(data);
    return c;
}

VkPipelineCache vk_pipeline_cache_take(vk_gpu *v)
{
    VkPipelineCache c = VK_NULL_HANDLE;
    pthread_mutex_lock(&v->caches.lock);
    if (v->caches.enabled) {
        if (v->caches.idle_count) {
            c = v->caches.idle[--v->caches.idle_count];
        } else if (v->caches.count < v->caches.cap || grow(v)) {
            c = make_cache(v);
            if (c) v->caches.all[v->caches.count++] = c;
        }
    }
    pthread_mutex_unlock(&v->caches.lock);
    return c;
}

void vk_pipeline_cache_give(vk_gpu *v, VkPipelineCache cache)
{
    if (!cache) return;
    pthread_mutex_lock(&v->caches.lock);
    v->caches.idle[v->caches.idle_count++] = cache; /* idle has room for every cache made */
    pthread_mutex_unlock(&v->caches.lock);
}

cubec_status vk_pipeline_cache_data(gpu *g, void **out, size_t *out_size)
{
    vk_gpu *v = vk_gpu_of(g);
    *out = NULL;
    *out_size = 0;
    /* What every build's cache gathered goes into the loading cache first (no build runs now:
     * gpu.h). */
    pthread_mutex_lock(&v->caches.lock);
    VkResult m = v->caches.count ? vkMergePipelineCaches(v->vk.device, v->pipeline_cache,
                                                         v->caches.count, v->caches.all)
                                 : VK_SUCCESS;
    pthread_mutex_unlock(&v->caches.lock);
    VK_RETURN_IF_ERROR(m, "vkMergePipelineCaches (the builds' caches)");
    return loading_cache_bytes(v, out, out_size);
}

/* The header every blob starts with (VkPipelineCacheHeaderVersionOne, Vulkan 1.0 section
 * "Pipeline Cache"): 32 bytes, then the driver's own data. */
static cubec_status check_header(const gpu_cache_identity *id, const unsigned char *data,
                                 size_t size)
{
    VkPipelineCacheHeaderVersionOne h;
    if (size < sizeof h)
        return status_make(CUBEC_INVALID_ARGUMENT,
                           "pipeline cache blob of %zu bytes: shorter "
                           "than its header",
                           size);
    memcpy(&h, data, sizeof h);
    if (h.headerSize < sizeof h || h.headerSize > size)
        return status_make(CUBEC_INVALID_ARGUMENT, "pipeline cache blob: header size %u",
                           h.headerSize);
    if (h.headerVersion != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
        return status_make(CUBEC_INVALID_ARGUMENT, "pipeline cache blob: header version %d",
                           (int)h.headerVersion);
    if (h.vendorID != id->vendor_id || h.deviceID != id->device_id)
        return status_make(CUBEC_INVALID_ARGUMENT,
                           "pipeline cache blob of device %04x:%04x, not this %04x:%04x",
                           h.vendorID, h.deviceID, id->vendor_id, id->device_id);
    if (memcmp(h.pipelineCacheUUID, id->uuid, VK_UUID_SIZE) != 0)
        return status_make(CUBEC_INVALID_ARGUMENT,
                           "pipeline cache blob of another pipelineCacheUUID (another driver)");
    return NULL;
}

cubec_status vk_pipeline_cache_merge(gpu *g, const void *data, size_t size)
{
    vk_gpu *v = vk_gpu_of(g);
    RETURN_IF_ERROR(check_header(&g->cache_id, data, size));
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                    .initialDataSize = size,
                                    .pInitialData = data};
    VkPipelineCache loaded = VK_NULL_HANDLE;
    VK_RETURN_IF_ERROR(vkCreatePipelineCache(v->vk.device, &ci, NULL, &loaded),
                       "vkCreatePipelineCache (from the disk cache)");
    VkResult r = vkMergePipelineCaches(v->vk.device, v->pipeline_cache, 1, &loaded);
    vkDestroyPipelineCache(v->vk.device, loaded, NULL);
    return r == VK_SUCCESS ? NULL : vk_status(r, "vkMergePipelineCaches");
}
