/* The Vulkan backend's objects behind the opaque types of gpu/gpu.h. Only src/gpu/vulkan/ includes
 * this header: the server sees a gpu and its function table. */
#ifndef CUBEC_GPU_VK_GPU_H
#define CUBEC_GPU_VK_GPU_H

#include "gpu/cmd_list.h"
#include "gpu/gpu.h"
#include "gpu/vulkan/vk_context.h"
#include "gpu/vulkan/vk_reaper.h"

typedef struct vk_gpu {
    gpu base; /* first: a gpu * is a vk_gpu * */
    vk_context vk;
    VkSemaphore timeline; /* one per device: every submission signals its next value */
    /* The inbound timeline (gpu_ops.inbound_export): only another API signals it, submissions
     * wait on it; exportable where `timeline` is. */
    VkSemaphore inbound;
    /* The driver's pipeline cache (vk_pipeline_cache.c): `pipeline_cache` holds what was loaded
     * from cubec's disk cache and, at each save, what every build's cache gathered; builds take
     * a cache of their own from `caches` (one thread at a time each: the driver serializes the
     * pipelines created through one cache). Off (no cache at all) without a disk cache. */
    VkPipelineCache pipeline_cache;
    struct {
        pthread_mutex_t lock;
        VkPipelineCache *all, *idle; /* every cache made; those no build holds now */
        uint32_t count, idle_count, cap;
        int enabled;
        int ready; /* the lock is initialized */
    } caches;
    /* The GPU may never finish (a wait timed out): Vulkan objects are left alive, since
     * destroying them would wait for it or pull memory from under it; host memory is freed. */
    int abandoned;
    vk_reaper reaper; /* frees large pages in the background (vk_reaper.h) */
    /* Samplers of sampled images and sampler bindings, nearest and linear (clamp to edge,
     * normalized coordinates): made with the device (vk_images_init) and only read after. */
    VkSampler samplers[6]; /* [address mode * 2 + linear] (vk_image.c) */
    /* Guards every page's texel-buffer views: batches are encoded on several threads. */
    pthread_mutex_t views_lock;
    int views_lock_ready;
} vk_gpu;

typedef struct vk_mem {
    gpu_mem base;
    VkBuffer buffer;
    VkDeviceMemory memory;
    int coherent;
    int imported;         /* the program's memory: never mapped through Vulkan */
    uint32_t memory_type; /* of `memory` (images bound to a page must allow it) */
    /* External pages (base.external): the allocation's size and whether it is dedicated, which
     * an importer must repeat (vk_external.c). */
    uint64_t allocation_size;
    int dedicated;
    /* Texel-buffer views of ranges of this page (vk_texel_views.c), destroyed with it. */
    struct vk_texel_view *views;
    uint32_t view_count, view_cap;
    int texel_usage; /* the buffer was made with both texel-buffer usages */
} vk_mem;

/* An image bound to a range of a device page (vk_image.c). */
struct gpu_image {
    VkImage image;
    VkImageView view;
    gpu_image_desc desc;
    uint32_t texel_bytes;
};

struct gpu_pipeline {
    VkShaderModule module;
    /* One layout per set up to the highest the module uses (empty for a set it skips); set 0's
     * is pushed where push descriptors exist, the others come from the command buffer's pools
     * (Vulkan allows one push-descriptor set per pipeline layout). */
    VkDescriptorSetLayout set_layouts[GPU_MAX_SETS];
    uint32_t set_count;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    int info_uniform; /* the metadata binding is a uniform buffer */
    /* Where a bind's buffer i goes (slot_count of them; past them, buffers are not bound). */
    gpu_slot slots[GPU_MAX_BINDINGS];
    uint32_t slot_count;
};

/* A command buffer: the seam's command list (gpu/cmd_list.h), encoded into `cmd` when it is needed
 * (vk_command_list.c). */
typedef struct vk_cmd {
    gpu_cmd base; /* first: the list the server records into */
    vk_gpu *g;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    int recorded; /* holds commands: the pool is reset before the next encoding */
    int once;     /* a batch: recorded for one submission */
    int encoded;  /* `cmd` holds the list */
    /* Without push descriptors: pools of sets, `sets` each, more added when one is full; all are
     * reset when the command buffer begins again. */
    VkDescriptorPool *descriptor_pools;
    uint32_t descriptor_pool_count, descriptor_pool_cap, current_pool, sets;
} vk_cmd;

struct gpu_queries {
    VkQueryPool pool;
};

static inline vk_gpu *vk_gpu_of(gpu *g)
{
    return (vk_gpu *)g;
}
static inline VkBuffer vk_buffer_of(const gpu_mem *m)
{
    return ((const vk_mem *)m)->buffer;
}

/* gpu/vulkan/vk_gpu.c */
MUST_USE cubec_status vk_gpu_open(const gpu_open_desc *desc, gpu **out);
/* Enumeration without opening (the backend's row of GPU_BACKENDS): vk_physical_count and
 * vk_physical_info (vk_context.c). */
MUST_USE cubec_status vk_gpu_count(uint32_t *out_count);
MUST_USE cubec_status vk_gpu_peek(uint32_t index, cubec_device_info *out);
/* gpu/vulkan/vk_command_list.c: turns the command list into the Vulkan command buffer (once per
 * recording: again only after cmd_begin). */
MUST_USE cubec_status vk_list_encode(vk_cmd *c);
/* gpu/vulkan/vk_record.c: the Vulkan commands of each list entry. */
void vk_emit_barrier(vk_cmd *c, uint32_t src_stages, uint32_t src_access, uint32_t dst_stages,
                     uint32_t dst_access);
void vk_emit_bind_pipeline(vk_cmd *c, const gpu_pipeline *p);
MUST_USE cubec_status vk_emit_bind_buffers(vk_cmd *c, const gpu_pipeline *p, const gpu_binding *b,
                                           uint32_t n, const gpu_binding *info,
                                           const gpu_image_binding *images, uint32_t ni);
void vk_emit_push_constants(vk_cmd *c, const gpu_pipeline *p, const void *data, uint32_t size);
void vk_emit_dispatch(vk_cmd *c, uint32_t x, uint32_t y, uint32_t z);
void vk_emit_dispatch_indirect(vk_cmd *c, gpu_mem *m, uint64_t offset);
void vk_emit_copy(vk_cmd *c, gpu_mem *src, uint64_t src_offset, gpu_mem *dst, uint64_t dst_offset,
                  uint64_t size);
void vk_emit_fill(vk_cmd *c, gpu_mem *dst, uint64_t offset, uint64_t size, uint32_t pattern);
void vk_emit_ownership(vk_cmd *c, gpu_mem *m, int acquire);
void vk_emit_timestamp(vk_cmd *c, gpu_queries *q, uint32_t query, uint32_t stage);
void vk_emit_reset_queries(vk_cmd *c, gpu_queries *q, uint32_t first, uint32_t count);
/* gpu/vulkan/vk_image.c: images in pages, their commands and descriptor types. */
MUST_USE cubec_status vk_image_requirements(gpu *g, const gpu_image_desc *desc, uint64_t *out_size,
                                            uint64_t *out_alignment);
MUST_USE cubec_status vk_image_create(gpu *g, const gpu_image_desc *desc, gpu_mem *m,
                                      uint64_t offset, gpu_image **out);
void vk_image_destroy(gpu *g, gpu_image *im);
void vk_emit_image_init(vk_cmd *c, gpu_image *im);
void vk_emit_copy_image(vk_cmd *c, gpu_image *im, gpu_mem *m, uint64_t offset, int to_image);
VkDescriptorType vk_descriptor_type(uint32_t type);
/* The VkFormat of a cubec_image_format (VK_FORMAT_UNDEFINED for a value that is not one). */
VkFormat vk_image_format(uint32_t format);
/* At device creation: the samplers, and the format features and texel-buffer limits in the
 * caps (sampled_formats ... texel_offset_alignment). */
MUST_USE cubec_status vk_images_init(vk_gpu *v);
/* gpu/vulkan/vk_texel_views.c: the view of `size` bytes at `offset` of page `m` as texels of
 * `format`, made on first use and kept with the page. */
MUST_USE cubec_status vk_texel_view(vk_gpu *v, vk_mem *m, uint64_t offset, uint64_t size,
                                    uint32_t format, VkBufferView *out);
/* Destroys the page's views (before its buffer). */
void vk_texel_views_destroy(vk_gpu *v, vk_mem *m);
/* Test hook: the Vulkan device under a gpu (tests that provoke a validation message). */
VkDevice vk_gpu_device(gpu *g);

#endif
