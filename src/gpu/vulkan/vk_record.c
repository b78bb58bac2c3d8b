/* Recording into a Vulkan command buffer, from the entries of a command list when it is encoded
 * (vk_command_list.c). Nothing here allocates from the host heap once warm: bindings are pushed
 * (VK_KHR_push_descriptor) or taken from the command buffer's descriptor pools, which are reset
 * when it is encoded again, and texel buffers' views are made once per page range
 * (vk_texel_views.c). */
#include "base/array.h"
#include "gpu/vulkan/vk_gpu.h"
#include "gpu/vulkan/vk_result.h"

#include <stdlib.h>

static VkPipelineStageFlags stages_of(uint32_t s)
{
    VkPipelineStageFlags v = 0;
    if (s & GPU_STAGE_COMPUTE) v |= VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
    if (s & GPU_STAGE_TRANSFER) v |= VK_PIPELINE_STAGE_TRANSFER_BIT;
    if (s & GPU_STAGE_INDIRECT) v |= VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT;
    if (s & GPU_STAGE_HOST) v |= VK_PIPELINE_STAGE_HOST_BIT;
    if (s & GPU_STAGE_TOP) v |= VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT;
    if (s & GPU_STAGE_BOTTOM) v |= VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT;
    if (s & GPU_STAGE_ALL) v |= VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    return v;
}

static VkAccessFlags access_of(uint32_t a)
{
    VkAccessFlags v = 0;
    if (a & GPU_ACCESS_SHADER_READ) v |= VK_ACCESS_SHADER_READ_BIT;
    if (a & GPU_ACCESS_SHADER_WRITE) v |= VK_ACCESS_SHADER_WRITE_BIT;
    if (a & GPU_ACCESS_TRANSFER_READ) v |= VK_ACCESS_TRANSFER_READ_BIT;
    if (a & GPU_ACCESS_TRANSFER_WRITE) v |= VK_ACCESS_TRANSFER_WRITE_BIT;
    if (a & GPU_ACCESS_INDIRECT_READ) v |= VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
    if (a & GPU_ACCESS_HOST_READ) v |= VK_ACCESS_HOST_READ_BIT;
    if (a & GPU_ACCESS_HOST_WRITE) v |= VK_ACCESS_HOST_WRITE_BIT;
    return v;
}

void vk_emit_barrier(vk_cmd *c, uint32_t src_stages, uint32_t src_access, uint32_t dst_stages,
                     uint32_t dst_access)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = access_of(src_access),
                          .dstAccessMask = access_of(dst_access)};
    VkPipelineStageFlags src = stages_of(src_stages);
    vkCmdPipelineBarrier(c->cmd, src ? src : VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                         stages_of(dst_stages), 0, (src_access || dst_access) ? 1 : 0, &mb, 0, NULL,
                         0, NULL);
}

void vk_emit_bind_pipeline(vk_cmd *c, const gpu_pipeline *p)
{
    vkCmdBindPipeline(c->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
}

/* A set from the command buffer's pools, adding a pool when the current one is full. */
static cubec_status allocate_set(vk_cmd *c, VkDescriptorSetLayout layout, VkDescriptorSet *out)
{
    VkDevice dev = c->g->vk.device;
    while (c->current_pool < c->descriptor_pool_count) {
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = c->descriptor_pools[c->current_pool],
                                          .descriptorSetCount = 1,
                                          .pSetLayouts = &layout};
        VkResult r = vkAllocateDescriptorSets(dev, &ai, out);
        if (r == VK_SUCCESS) return NULL;
        if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
            return vk_status(r, "vkAllocateDescriptorSets");
        c->current_pool++;
    }
    /* Doubling room: a long recording without push descriptors adds pools one after another. */
    if (array_grow((void **)&c->descriptor_pools, &c->descriptor_pool_cap,
                   (uint64_t)c->descriptor_pool_count + 1, sizeof(VkDescriptorPool)))
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (descriptor pools)");
    VkDescriptorPool *n = c->descriptor_pools;
    VkDescriptorPoolSize sizes[8] = {
        {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, c->sets * GPU_MAX_BINDINGS},
        {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, c->sets * GPU_MAX_BINDINGS},
        {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, c->sets * GPU_MAX_RESOURCES},
        {VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, c->sets * GPU_MAX_RESOURCES},
        {VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, c->sets * GPU_MAX_RESOURCES},
        {VK_DESCRIPTOR_TYPE_SAMPLER, c->sets * GPU_MAX_RESOURCES},
        {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, c->sets * GPU_MAX_RESOURCES},
        {VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, c->sets * GPU_MAX_RESOURCES}};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = c->sets,
                                       .poolSizeCount = 8,
                                       .pPoolSizes = sizes};
    VK_RETURN_IF_ERROR(vkCreateDescriptorPool(dev, &dpci, NULL, &n[c->descriptor_pool_count]),
                       "vkCreateDescriptorPool");
    c->current_pool = c->descriptor_pool_count++;
    return allocate_set(c, layout, out);
}

/* Writes one set's descriptors: pushed for set 0 where push descriptors exist (its layout was
 * made for that), else in a set from the command buffer's pools. */
static cubec_status write_set(vk_cmd *c, const gpu_pipeline *p, uint32_t set,
                              VkWriteDescriptorSet *w, uint32_t count)
{
    vk_gpu *v = c->g;
    if (set == 0 && v->base.caps.push_descriptors) {
        v->vk.push_descriptor(c->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, count, w);
        return NULL;
    }
    VkDescriptorSet ds = VK_NULL_HANDLE;
    RETURN_IF_ERROR(allocate_set(c, p->set_layouts[set], &ds));
    for (uint32_t i = 0; i < count; i++)
        w[i].dstSet = ds;
    vkUpdateDescriptorSets(v->vk.device, count, w, 0, NULL);
    vkCmdBindDescriptorSets(c->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, set, 1, &ds, 0,
                            NULL);
    return NULL;
}

cubec_status vk_emit_bind_buffers(vk_cmd *c, const gpu_pipeline *p, const gpu_binding *b,
                                  uint32_t n, const gpu_binding *info,
                                  const gpu_image_binding *images, uint32_t ni)
{
    /* A uniform binding's range is at most maxUniformBufferRange: the block, which reflection
     * checked fits, is at its start. */
    uint64_t uniform_range = c->g->vk.props.limits.maxUniformBufferRange;
    for (uint32_t set = 0; set < p->set_count; set++) {
        VkDescriptorBufferInfo infos[GPU_MAX_BINDINGS];
        VkDescriptorImageInfo image_infos[GPU_MAX_RESOURCES];
        VkBufferView texel_views[GPU_MAX_RESOURCES];
        VkWriteDescriptorSet w[GPU_MAX_BINDINGS + GPU_MAX_RESOURCES];
        gpu_set_buffer sb[GPU_MAX_BINDINGS];
        uint32_t count =
            gpu_cmd_set_buffers(p->slots, p->slot_count, p->info_uniform, b, n, info, set, sb);
        for (uint32_t i = 0; i < count; i++) {
            const gpu_binding *x = sb[i].b;
            int uniform = sb[i].uniform;
            uint64_t size = uniform && x->size > uniform_range ? uniform_range : x->size;
            infos[i] = (VkDescriptorBufferInfo){vk_buffer_of(x->mem), x->offset, size};
            w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                          .dstBinding = sb[i].binding,
                                          .descriptorCount = 1,
                                          .descriptorType = uniform
                                                                ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                                                : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                          .pBufferInfo = &infos[i]};
        }
        for (uint32_t i = 0; i < ni && i < GPU_MAX_RESOURCES; i++) {
            const gpu_image_binding *x = &images[i];
            if (x->set != set) continue;
            w[count] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                              .dstBinding = x->binding,
                                              .descriptorCount = 1,
                                              .descriptorType = vk_descriptor_type(x->type)};
            if (x->type == GPU_RESOURCE_UNIFORM_TEXEL_BUFFER ||
                x->type == GPU_RESOURCE_STORAGE_TEXEL_BUFFER) {
                RETURN_IF_ERROR(vk_texel_view(c->g, (vk_mem *)x->mem, x->offset, x->size, x->format,
                                              &texel_views[i]));
                w[count++].pTexelBufferView = &texel_views[i];
                continue;
            }
            int sampled = x->type == GPU_RESOURCE_SAMPLED_IMAGE || x->type == GPU_RESOURCE_SAMPLER;
            VkSampler sampler =
                sampled ? c->g->samplers[x->address * 2 + (x->linear ? 1 : 0)] : VK_NULL_HANDLE;
            image_infos[i] =
                x->type == GPU_RESOURCE_SAMPLER
                    ? (VkDescriptorImageInfo){sampler, VK_NULL_HANDLE, VK_IMAGE_LAYOUT_UNDEFINED}
                    : (VkDescriptorImageInfo){sampler, x->image->view, VK_IMAGE_LAYOUT_GENERAL};
            w[count++].pImageInfo = &image_infos[i];
        }
        if (count) RETURN_IF_ERROR(write_set(c, p, set, w, count));
    }
    return NULL;
}

void vk_emit_push_constants(vk_cmd *c, const gpu_pipeline *p, const void *data, uint32_t size)
{
    vkCmdPushConstants(c->cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, size, data);
}

void vk_emit_dispatch(vk_cmd *c, uint32_t x, uint32_t y, uint32_t z)
{
    vkCmdDispatch(c->cmd, x, y, z);
}

void vk_emit_dispatch_indirect(vk_cmd *c, gpu_mem *m, uint64_t offset)
{
    vkCmdDispatchIndirect(c->cmd, vk_buffer_of(m), offset);
}

void vk_emit_copy(vk_cmd *c, gpu_mem *src, uint64_t src_offset, gpu_mem *dst, uint64_t dst_offset,
                  uint64_t size)
{
    VkBufferCopy region = {src_offset, dst_offset, size};
    vkCmdCopyBuffer(c->cmd, vk_buffer_of(src), vk_buffer_of(dst), 1, &region);
}

void vk_emit_fill(vk_cmd *c, gpu_mem *dst, uint64_t offset, uint64_t size, uint32_t pattern)
{
    vkCmdFillBuffer(c->cmd, vk_buffer_of(dst), offset, size, pattern);
}

/* A release's first scope covers every earlier command's writes (submission order); an acquire's
 * second scope every later command's accesses. The other half of each transfer is the other
 * API's, ordered by the semaphores (cubec_cuda_wait_stream, cubec_stream_wait_cuda). */
void vk_emit_ownership(vk_cmd *c, gpu_mem *m, int acquire)
{
    const VkPipelineStageFlags work = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                                      VK_PIPELINE_STAGE_TRANSFER_BIT |
                                      VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT;
    const VkAccessFlags writes = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    const VkAccessFlags all = writes | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                              VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_UNIFORM_READ_BIT;
    uint32_t own = c->g->vk.queue_family;
    VkBufferMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                               .srcAccessMask = acquire ? 0 : writes,
                               .dstAccessMask = acquire ? all : 0,
                               .srcQueueFamilyIndex = acquire ? VK_QUEUE_FAMILY_EXTERNAL : own,
                               .dstQueueFamilyIndex = acquire ? own : VK_QUEUE_FAMILY_EXTERNAL,
                               .buffer = vk_buffer_of(m),
                               .offset = 0,
                               .size = VK_WHOLE_SIZE};
    vkCmdPipelineBarrier(c->cmd, acquire ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT : work,
                         acquire ? work : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0, 0, NULL, 1, &b,
                         0, NULL);
}

void vk_emit_timestamp(vk_cmd *c, gpu_queries *q, uint32_t query, uint32_t stage)
{
    vkCmdWriteTimestamp(c->cmd, stages_of(stage), q->pool, query);
}

void vk_emit_reset_queries(vk_cmd *c, gpu_queries *q, uint32_t first, uint32_t count)
{
    vkCmdResetQueryPool(c->cmd, q->pool, first, count);
}
