/* Encoding the seam's command list (gpu/cmd_list.h) into a Vulkan command buffer, only when it is
 * needed: when a batch is submitted, or when a graph's recording ends.
 *
 * Why: a driver's recording is the largest part of a launch. On an H200 a barrier and a dispatch
 * cost the NVIDIA driver ~0.7 us, five times what cubec spends deciding them. Appending an entry
 * to the list costs a few nanoseconds; the server hands eager batches to its submission thread
 * (server/submitter.c), which encodes and submits them while the caller issues the next
 * launches. */
#include "gpu/vulkan/vk_gpu.h"
#include "gpu/vulkan/vk_result.h"

/* Replays the entries into the open command buffer. */
static cubec_status replay(vk_cmd *c)
{
    const gpu_cmd *list = &c->base;
    for (const gpu_cmd_entry *e = gpu_cmd_list_first(list); e; e = gpu_cmd_list_next(list, e)) {
        switch ((gpu_cmd_op)e->op) {
        case GPU_OP_BARRIER:
            vk_emit_barrier(c, e->u.barrier.src_stages, e->u.barrier.src_access,
                            e->u.barrier.dst_stages, e->u.barrier.dst_access);
            break;
        case GPU_OP_BIND_PIPELINE: vk_emit_bind_pipeline(c, e->u.pipeline); break;
        case GPU_OP_BIND_BUFFERS: {
            const gpu_binding *b = gpu_cmd_entry_bindings(e);
            RETURN_IF_ERROR(vk_emit_bind_buffers(c, e->u.buffers.p, b, e->u.buffers.n,
                                                 e->u.buffers.info ? &b[e->u.buffers.n] : NULL,
                                                 gpu_cmd_entry_images(e), e->u.buffers.images));
            break;
        }
        case GPU_OP_PUSH_CONSTANTS:
            vk_emit_push_constants(c, e->u.push.p, gpu_cmd_entry_bytes(e), e->u.push.size);
            break;
        case GPU_OP_DISPATCH:
            vk_emit_dispatch(c, e->u.dispatch.x, e->u.dispatch.y, e->u.dispatch.z);
            break;
        case GPU_OP_DISPATCH_INDIRECT:
            vk_emit_dispatch_indirect(c, e->u.indirect.m, e->u.indirect.offset);
            break;
        case GPU_OP_COPY:
            vk_emit_copy(c, e->u.copy.src, e->u.copy.src_offset, e->u.copy.dst,
                         e->u.copy.dst_offset, e->u.copy.size);
            break;
        case GPU_OP_FILL:
            vk_emit_fill(c, e->u.fill.dst, e->u.fill.offset, e->u.fill.size, e->u.fill.pattern);
            break;
        case GPU_OP_OWNERSHIP:
            vk_emit_ownership(c, e->u.ownership.m, (int)e->u.ownership.acquire);
            break;
        case GPU_OP_TIMESTAMP:
            vk_emit_timestamp(c, e->u.queries.q, e->u.queries.a, e->u.queries.b);
            break;
        case GPU_OP_RESET_QUERIES:
            vk_emit_reset_queries(c, e->u.queries.q, e->u.queries.a, e->u.queries.b);
            break;
        case GPU_OP_IMAGE_INIT: vk_emit_image_init(c, e->u.image.im); break;
        case GPU_OP_COPY_IMAGE:
            vk_emit_copy_image(c, e->u.image.im, e->u.image.m, e->u.image.offset,
                               (int)e->u.image.to_image);
            break;
        }
    }
    return NULL;
}

cubec_status vk_list_encode(vk_cmd *c)
{
    RETURN_IF_ERROR(gpu_cmd_list_status(&c->base));
    if (c->encoded) return NULL;
    VkDevice dev = c->g->vk.device;
    if (c->recorded) VK_RETURN_IF_ERROR(vkResetCommandPool(dev, c->pool, 0), "vkResetCommandPool");
    c->recorded = 1;
    /* Batches are submitted once; a graph's copies are resubmitted, but never while pending. */
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags =
                                       c->once ? VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT : 0};
    VK_RETURN_IF_ERROR(vkBeginCommandBuffer(c->cmd, &bi), "vkBeginCommandBuffer");
    for (uint32_t i = 0; i < c->descriptor_pool_count; i++)
        vkResetDescriptorPool(dev, c->descriptor_pools[i], 0);
    c->current_pool = 0;
    cubec_status err = replay(c);
    VkResult ended = vkEndCommandBuffer(c->cmd);
    RETURN_IF_ERROR(err);
    VK_RETURN_IF_ERROR(ended, "vkEndCommandBuffer");
    c->encoded = 1;
    return NULL;
}
