/* The Vulkan backend's objects behind the opaque types of gpu/gpu.h. Only src/gpu/vulkan/ includes
 * this header: the server sees a gpu and its function table. */
#ifndef CUBEC_GPU_VK_GPU_H
#define CUBEC_GPU_VK_GPU_H

#include "gpu/gpu.h"
#include "gpu/vulkan/vk_context.h"

typedef struct vk_gpu {
    gpu base; /* first: a gpu * is a vk_gpu * */
    vk_context vk;
    VkSemaphore timeline; /* one per device: every submission signals its next value */
    VkPipelineCache pipeline_cache;
} vk_gpu;

typedef struct vk_mem {
    gpu_mem base;
    VkBuffer buffer;
    VkDeviceMemory memory;
    int coherent;
} vk_mem;

struct gpu_pipeline {
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
};

struct gpu_cmd {
    vk_gpu *g;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    int recorded; /* holds commands: the pool is reset before the next recording */
    int once;     /* a batch: recorded for one submission */
    /* Without push descriptors: pools of sets, `sets` each, more added when one is full; all are
     * reset when the command buffer begins again. */
    VkDescriptorPool *descriptor_pools;
    uint32_t descriptor_pool_count, current_pool, sets;
};

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
/* gpu/vulkan/vk_record.c: the recording functions of the table. */
void vk_record_fill_ops(gpu_ops *ops);
/* Test hook: the Vulkan device under a gpu (tests that provoke a validation message). */
VkDevice vk_gpu_device(gpu *g);

#endif
