/* The command list: what the server records into a gpu_cmd, kept on the host and turned into the
 * Vulkan command buffer (encoded) only when it is needed: when a batch is submitted, or when a
 * graph's recording ends.
 *
 * Why: a driver's recording is the largest part of a launch. On an H200 a barrier and a dispatch
 * cost the NVIDIA driver ~0.7 us, five times what cubec spends deciding them. Appending an entry
 * here costs a few nanoseconds; the server hands eager batches to its submission thread
 * (server/submitter.c), which encodes and submits them while the caller issues the next
 * launches. Nothing is allocated once warm: the list keeps its capacity from batch to batch.
 *
 * Threads: the list is written by the thread that records (under the device lock) and read by the
 * one that encodes, after the hand-over (under the submission thread's lock). The server reuses a
 * command buffer only once its submission is known to be made (submitter_released). */
#include "gpu/vulkan/vk_gpu.h"
#include "gpu/vulkan/vk_result.h"

#include <stdlib.h>
#include <string.h>

typedef enum list_op {
    OP_BARRIER,
    OP_BIND_PIPELINE,
    OP_BIND_BUFFERS,
    OP_PUSH_CONSTANTS,
    OP_DISPATCH,
    OP_DISPATCH_INDIRECT,
    OP_COPY,
    OP_FILL,
    OP_TIMESTAMP,
    OP_RESET_QUERIES,
} list_op;

/* One entry; bindings and push-constant bytes follow it, padded to 8 bytes. */
typedef struct list_entry {
    uint32_t op;
    uint32_t bytes; /* the whole entry, what follows included */
    union {
        struct {
            uint32_t src_stages, src_access, dst_stages, dst_access;
        } barrier;
        const gpu_pipeline *pipeline;
        struct {
            const gpu_pipeline *p;
            uint32_t n, info; /* n gpu_binding follow, and the metadata binding when info */
        } buffers;
        struct {
            const gpu_pipeline *p;
            uint32_t size; /* bytes that follow */
        } push;
        struct {
            uint32_t x, y, z;
        } dispatch;
        struct {
            gpu_mem *m;
            uint64_t offset;
        } indirect;
        struct {
            gpu_mem *src, *dst;
            uint64_t src_offset, dst_offset, size;
        } copy;
        struct {
            gpu_mem *dst;
            uint64_t offset, size;
            uint32_t pattern;
        } fill;
        struct {
            gpu_queries *q;
            uint32_t a, b; /* timestamp: query, stage; reset: first, count */
        } queries;
    } u;
} list_entry;

/* An entry of `op` with `tail` bytes after it, or NULL when the host is out of memory (the
 * command buffer then fails at cmd_end: recording functions cannot fail). */
static list_entry *append(gpu_cmd *c, list_op op, size_t tail)
{
    size_t bytes = (sizeof(list_entry) + tail + 7u) & ~(size_t)7u;
    if (c->list_failed) return NULL;
    if (c->list_len + bytes > c->list_cap) {
        size_t cap = c->list_cap ? c->list_cap : 4096;
        while (cap < c->list_len + bytes)
            cap *= 2;
        unsigned char *n = realloc(c->list, cap);
        if (!n) {
            c->list_failed = 1;
            return NULL;
        }
        c->list = n;
        c->list_cap = cap;
    }
    list_entry *e = (list_entry *)(c->list + c->list_len);
    e->op = op;
    e->bytes = (uint32_t)bytes;
    c->list_len += bytes;
    return e;
}

void vk_record_barrier(gpu_cmd *c, uint32_t src_stages, uint32_t src_access, uint32_t dst_stages,
                       uint32_t dst_access)
{
    list_entry *e = append(c, OP_BARRIER, 0);
    if (e) {
        e->u.barrier.src_stages = src_stages;
        e->u.barrier.src_access = src_access;
        e->u.barrier.dst_stages = dst_stages;
        e->u.barrier.dst_access = dst_access;
    }
}

void vk_record_bind_pipeline(gpu_cmd *c, const gpu_pipeline *p)
{
    list_entry *e = append(c, OP_BIND_PIPELINE, 0);
    if (e) e->u.pipeline = p;
}

cubec_status vk_record_bind_buffers(gpu *g, gpu_cmd *c, const gpu_pipeline *p, const gpu_binding *b,
                                    uint32_t n, const gpu_binding *info)
{
    (void)g;
    uint32_t count = n + (info ? 1 : 0);
    if (!count) return NULL;
    list_entry *e = append(c, OP_BIND_BUFFERS, count * sizeof(gpu_binding));
    if (!e) return NULL; /* reported at cmd_end */
    e->u.buffers.p = p;
    e->u.buffers.n = n;
    e->u.buffers.info = info != NULL;
    gpu_binding *to = (gpu_binding *)(e + 1);
    memcpy(to, b, n * sizeof *b);
    if (info) to[n] = *info;
    return NULL;
}

void vk_record_push_constants(gpu_cmd *c, const gpu_pipeline *p, const void *data, uint32_t size)
{
    list_entry *e = append(c, OP_PUSH_CONSTANTS, size);
    if (!e) return;
    e->u.push.p = p;
    e->u.push.size = size;
    memcpy(e + 1, data, size);
}

void vk_record_dispatch(gpu_cmd *c, uint32_t x, uint32_t y, uint32_t z)
{
    list_entry *e = append(c, OP_DISPATCH, 0);
    if (e) {
        e->u.dispatch.x = x;
        e->u.dispatch.y = y;
        e->u.dispatch.z = z;
    }
}

void vk_record_dispatch_indirect(gpu_cmd *c, gpu_mem *m, uint64_t offset)
{
    list_entry *e = append(c, OP_DISPATCH_INDIRECT, 0);
    if (e) {
        e->u.indirect.m = m;
        e->u.indirect.offset = offset;
    }
}

void vk_record_copy(gpu_cmd *c, gpu_mem *src, uint64_t src_offset, gpu_mem *dst,
                    uint64_t dst_offset, uint64_t size)
{
    list_entry *e = append(c, OP_COPY, 0);
    if (e) {
        e->u.copy.src = src;
        e->u.copy.dst = dst;
        e->u.copy.src_offset = src_offset;
        e->u.copy.dst_offset = dst_offset;
        e->u.copy.size = size;
    }
}

void vk_record_fill(gpu_cmd *c, gpu_mem *dst, uint64_t offset, uint64_t size, uint32_t pattern)
{
    list_entry *e = append(c, OP_FILL, 0);
    if (e) {
        e->u.fill.dst = dst;
        e->u.fill.offset = offset;
        e->u.fill.size = size;
        e->u.fill.pattern = pattern;
    }
}

static void queries_entry(gpu_cmd *c, list_op op, gpu_queries *q, uint32_t a, uint32_t b)
{
    list_entry *e = append(c, op, 0);
    if (e) {
        e->u.queries.q = q;
        e->u.queries.a = a;
        e->u.queries.b = b;
    }
}

void vk_record_timestamp(gpu_cmd *c, gpu_queries *q, uint32_t query, uint32_t stage)
{
    queries_entry(c, OP_TIMESTAMP, q, query, stage);
}

void vk_record_reset_queries(gpu_cmd *c, gpu_queries *q, uint32_t first, uint32_t count)
{
    queries_entry(c, OP_RESET_QUERIES, q, first, count);
}

void vk_list_reset(gpu_cmd *c)
{
    c->list_len = 0;
    c->list_failed = 0;
    c->encoded = 0;
}

/* Replays the entries into the open command buffer. */
static cubec_status replay(gpu_cmd *c)
{
    for (size_t at = 0; at < c->list_len;) {
        const list_entry *e = (const list_entry *)(c->list + at);
        at += e->bytes;
        switch ((list_op)e->op) {
        case OP_BARRIER:
            vk_emit_barrier(c, e->u.barrier.src_stages, e->u.barrier.src_access,
                            e->u.barrier.dst_stages, e->u.barrier.dst_access);
            break;
        case OP_BIND_PIPELINE: vk_emit_bind_pipeline(c, e->u.pipeline); break;
        case OP_BIND_BUFFERS: {
            const gpu_binding *b = (const gpu_binding *)(e + 1);
            RETURN_IF_ERROR(vk_emit_bind_buffers(c, e->u.buffers.p, b, e->u.buffers.n,
                                                 e->u.buffers.info ? &b[e->u.buffers.n] : NULL));
            break;
        }
        case OP_PUSH_CONSTANTS:
            vk_emit_push_constants(c, e->u.push.p, e + 1, e->u.push.size);
            break;
        case OP_DISPATCH:
            vk_emit_dispatch(c, e->u.dispatch.x, e->u.dispatch.y, e->u.dispatch.z);
            break;
        case OP_DISPATCH_INDIRECT:
            vk_emit_dispatch_indirect(c, e->u.indirect.m, e->u.indirect.offset);
            break;
        case OP_COPY:
            vk_emit_copy(c, e->u.copy.src, e->u.copy.src_offset, e->u.copy.dst,
                         e->u.copy.dst_offset, e->u.copy.size);
            break;
        case OP_FILL:
            vk_emit_fill(c, e->u.fill.dst, e->u.fill.offset, e->u.fill.size, e->u.fill.pattern);
            break;
        case OP_TIMESTAMP:
            vk_emit_timestamp(c, e->u.queries.q, e->u.queries.a, e->u.queries.b);
            break;
        case OP_RESET_QUERIES:
            vk_emit_reset_queries(c, e->u.queries.q, e->u.queries.a, e->u.queries.b);
            break;
        }
    }
    return NULL;
}

cubec_status vk_list_encode(gpu_cmd *c)
{
    if (c->list_failed)
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (command list)");
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
