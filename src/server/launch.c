/* Recording launches. The warm path allocates nothing: storage buffers are bound with push
 * descriptors, metadata goes in push constants (or in the metadata ring when it does not fit),
 * a barrier is recorded only when the hazard tracker sees a conflict, and the command buffer is
 * submitted every tasks_max launches. Arguments were checked by api/. */
#include "gpu/vulkan/vk_result.h"
#include "server/device.h"

#include <string.h>

static cubec_status record_dispatch(cubec_device *d, VkCommandBuffer cmd, const pipeline_entry *e,
                                    const VkDescriptorBufferInfo *infos, uint32_t n,
                                    VkDescriptorBufferInfo info_buffer, const void *push_data)
{
    VkWriteDescriptorSet w[33];
    for (uint32_t i = 0; i < n; i++)
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstBinding = i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &infos[i]};
    uint32_t count = n;
    if (e->refl.has_info_buffer)
        w[count++] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                            .dstBinding = CUBEC_INFO_BINDING,
                                            .descriptorCount = 1,
                                            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                            .pBufferInfo = &info_buffer};
    if (d->bound_pipeline != e->pipeline) {
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipeline);
        d->bound_pipeline = e->pipeline;
    }
    if (count && d->vk.push_descriptor) {
        d->vk.push_descriptor(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, e->layout, 0, count, w);
    } else if (count) {
        /* No push descriptors: a set from the batch's pool (reset when the batch is reused, so
         * the warm path still allocates nothing from the host heap). */
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = d->open->descriptors,
                                          .descriptorSetCount = 1,
                                          .pSetLayouts = &e->set_layout};
        VkDescriptorSet set;
        VK_RETURN_IF_ERROR(vkAllocateDescriptorSets(d->vk.device, &ai, &set),
                           "vkAllocateDescriptorSets");
        for (uint32_t i = 0; i < count; i++)
            w[i].dstSet = set;
        vkUpdateDescriptorSets(d->vk.device, count, w, 0, NULL);
        vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, e->layout, 0, 1, &set, 0,
                                NULL);
    }
    if (e->info_in_push)
        vkCmdPushConstants(cmd, e->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, e->info_size, push_data);
    return NULL;
}

cubec_status server_launch(cubec_device *d, const launch_args *a)
{
    const pipeline_entry *e = a->entry;
    if (!a->indirect && (a->groups[0] == 0 || a->groups[1] == 0 || a->groups[2] == 0))
        return NULL; /* an empty grid launches nothing, like a zero cube count in CubeCL */
    VkDescriptorBufferInfo infos[32];
    hazard_range ranges[33];
    uint32_t n = a->buffer_count;
    for (uint32_t i = 0; i < n; i++) {
        const buffer_obj *b = a->buffers[i];
        vk_page *p = buffer_page(b);
        infos[i] = (VkDescriptorBufferInfo){p->buffer, buffer_device_offset(b), b->size};
        ranges[i] = (hazard_range){p, buffer_device_offset(b), b->size,
                                   (e->refl.access[i] & CUBEC_ACCESS_WRITE) != 0};
    }
    uint32_t nr = n;
    if (a->indirect) {
        vk_page *p = buffer_page(a->indirect);
        ranges[nr++] =
            (hazard_range){p, buffer_device_offset(a->indirect) + a->indirect_offset, 12, 0};
    }
    VkDescriptorBufferInfo info_buffer = {0};
    if (e->refl.has_info_buffer) {
        uint64_t at;
        RETURN_IF_ERROR(
            host_ring_alloc(d, &d->info_ring, e->info_size, d->info.storage_offset_alignment, &at));
        memcpy(d->info_ring.mapped + at, a->info, e->info_size);
        info_buffer = (VkDescriptorBufferInfo){d->info_ring.buffer, at, e->info_size};
    }
    VkCommandBuffer cmd;
    RETURN_IF_ERROR(sub_begin(d, &cmd));
    sub_hazards(d, cmd, ranges, nr, a->indirect ? SUB_COMPUTE_INDIRECT : SUB_COMPUTE);
    RETURN_IF_ERROR(record_dispatch(d, cmd, e, infos, n, info_buffer, a->info));
    if (a->indirect)
        vkCmdDispatchIndirect(cmd, buffer_page(a->indirect)->buffer,
                              buffer_device_offset(a->indirect) + a->indirect_offset);
    else
        vkCmdDispatch(cmd, a->groups[0], a->groups[1], a->groups[2]);
    for (uint32_t i = 0; i < n; i++) {
        alloc_obj *al = a->buffers[i]->alloc;
        al->last_use = d->next_value;
        if (ranges[i].write) al->last_write = d->next_value;
    }
    if (a->indirect) a->indirect->alloc->last_use = d->next_value;
    return sub_task_done(d);
}

static uint64_t align_down(uint64_t x, uint64_t a)
{
    return x / a * a;
}

/* One launch of a builtin word kernel over [at, at+bytes) of `dst` (and of `src` for copies). */
static cubec_status word_launch(cubec_device *d, const pipeline_entry *k, buffer_obj *src,
                                uint64_t src_abs, buffer_obj *dst, uint64_t dst_abs, uint64_t bytes,
                                uint32_t word, uint32_t pattern)
{
    uint64_t a = d->info.storage_offset_alignment > 16 ? d->info.storage_offset_alignment : 16;
    buffer_obj views[2];
    buffer_obj *bufs[2];
    uint32_t info[3];
    uint32_t nb = 0;
    uint64_t dst_base = align_down(dst_abs, a);
    if (src) {
        uint64_t src_base = align_down(src_abs, a);
        views[0] = (buffer_obj){src->alloc, src_base - src->alloc->mem.offset,
                                src_abs - src_base + bytes, 1};
        bufs[nb++] = &views[0];
        info[0] = (uint32_t)((src_abs - src_base) / word);
        info[1] = (uint32_t)((dst_abs - dst_base) / word);
        info[2] = (uint32_t)(bytes / word);
    } else {
        info[0] = (uint32_t)((dst_abs - dst_base) / word);
        info[1] = (uint32_t)(bytes / word);
        info[2] = pattern;
    }
    views[1] =
        (buffer_obj){dst->alloc, dst_base - dst->alloc->mem.offset, dst_abs - dst_base + bytes, 1};
    bufs[nb++] = &views[1];
    uint64_t count = bytes / word;
    uint64_t groups = (count + 255) / 256;
    /* A grid-stride loop over at most 2^17 groups of 256: on an H200, 64-128 K groups run a
     * streaming kernel at 4.2+ TB/s where 2^20 groups fall to 2.6 TB/s. */
    uint64_t cap = d->info.max_workgroup_count[0];
    if (cap > (1u << 17)) cap = 1u << 17;
    if (groups > cap) groups = cap;
    launch_args la = {.entry = k,
                      .buffers = bufs,
                      .buffer_count = nb,
                      .info = info,
                      .groups = {(uint32_t)groups, 1, 1}};
    return server_launch(d, &la);
}

/* Largest chunk one binding can cover: the storage range less the alignment slack. */
static uint64_t max_chunk(const cubec_device *d)
{
    uint64_t a = d->info.storage_offset_alignment > 16 ? d->info.storage_offset_alignment : 16;
    uint64_t m = align_down(d->info.max_storage_buffer_range - a, 16);
    return m > (1ull << 34) ? (1ull << 34) : m;
}

/* On a CPU driver the copy engine is memcpy, four times faster than a copy kernel there. */
static cubec_status copy_with_transfer(cubec_device *d, buffer_obj *src, uint64_t src_offset,
                                       buffer_obj *dst, uint64_t dst_offset, uint64_t size)
{
    VkCommandBuffer cmd;
    RETURN_IF_ERROR(sub_begin(d, &cmd));
    vk_page *sp = buffer_page(src), *tp = buffer_page(dst);
    uint64_t s = buffer_device_offset(src) + src_offset, t = buffer_device_offset(dst) + dst_offset;
    hazard_range ranges[2] = {{sp, s, size, 0}, {tp, t, size, 1}};
    sub_hazards(d, cmd, ranges, 2, SUB_TRANSFER);
    VkBufferCopy region = {s, t, size};
    vkCmdCopyBuffer(cmd, sp->buffer, tp->buffer, 1, &region);
    src->alloc->last_use = d->next_value;
    dst->alloc->last_use = dst->alloc->last_write = d->next_value;
    return sub_task_done(d);
}

cubec_status server_copy(cubec_device *d, buffer_obj *src, uint64_t src_offset, buffer_obj *dst,
                         uint64_t dst_offset, uint64_t size)
{
    if (size == 0) return NULL;
    if (d->info.type == CUBEC_DEVICE_TYPE_CPU)
        return copy_with_transfer(d, src, src_offset, dst, dst_offset, size);
    RETURN_IF_ERROR(server_builtin_kernels(d));
    uint64_t s = buffer_device_offset(src) + src_offset, t = buffer_device_offset(dst) + dst_offset;
    uint64_t chunk = max_chunk(d);
    for (uint64_t pos = 0; pos < size;) {
        uint64_t n = size - pos < chunk ? size - pos : chunk;
        uint64_t body = ((s + pos) % 16 == 0 && (t + pos) % 16 == 0) ? n / 16 * 16 : 0;
        if (body)
            RETURN_IF_ERROR(
                word_launch(d, d->copy4_kernel, src, s + pos, dst, t + pos, body, 16, 0));
        if (n > body)
            RETURN_IF_ERROR(word_launch(d, d->copy_kernel, src, s + pos + body, dst, t + pos + body,
                                        n - body, 4, 0));
        pos += n;
    }
    return NULL;
}

cubec_status server_fill(cubec_device *d, buffer_obj *dst, uint64_t offset, uint64_t size,
                         uint32_t pattern)
{
    if (size == 0) return NULL;
    RETURN_IF_ERROR(server_builtin_kernels(d));
    uint64_t t = buffer_device_offset(dst) + offset;
    uint64_t chunk = max_chunk(d);
    for (uint64_t pos = 0; pos < size; pos += chunk) {
        uint64_t n = size - pos < chunk ? size - pos : chunk;
        RETURN_IF_ERROR(word_launch(d, d->fill_kernel, NULL, 0, dst, t + pos, n, 4, pattern));
    }
    return NULL;
}
