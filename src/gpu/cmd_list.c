/* The command list of gpu/cmd_list.h: the recording functions of the seam (gpu.h's gpu_cmd_*),
 * each a plain append of one entry, and the list's reset, status and memory. */
#include "gpu/cmd_list.h"

#include <stdlib.h>
#include <string.h>

#define CMD_LIST_FIRST_BYTES 4096u /* most batches fit: no allocation once created */

/* An entry of `op` with `tail` bytes after it, or NULL when the host is out of memory (the backend
 * then fails the recording at cmd_end: recording functions cannot fail). */
static gpu_cmd_entry *append(gpu_cmd *c, gpu_cmd_op op, size_t tail)
{
    size_t bytes = (sizeof(gpu_cmd_entry) + tail + 7u) & ~(size_t)7u;
    if (c->failed) return NULL;
    if (c->len + bytes > c->cap) {
        size_t cap = c->cap ? c->cap : CMD_LIST_FIRST_BYTES;
        while (cap < c->len + bytes)
            cap *= 2;
        unsigned char *n = realloc(c->list, cap);
        if (!n) {
            c->failed = 1;
            return NULL;
        }
        c->list = n;
        c->cap = cap;
    }
    gpu_cmd_entry *e = (gpu_cmd_entry *)(c->list + c->len);
    e->op = op;
    e->bytes = (uint32_t)bytes;
    c->len += bytes;
    return e;
}

void gpu_cmd_list_reset(gpu_cmd *c)
{
    c->len = 0;
    c->failed = 0;
}

void gpu_cmd_list_free(gpu_cmd *c)
{
    free(c->list);
    c->list = NULL;
    c->len = c->cap = 0;
}

cubec_status gpu_cmd_list_status(const gpu_cmd *c)
{
    if (c->failed) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (command list)");
    return NULL;
}

uint32_t gpu_cmd_set_buffers(const gpu_slot *slots, uint32_t slot_count, int info_uniform,
                             const gpu_binding *b, uint32_t n, const gpu_binding *info,
                             uint32_t set, gpu_set_buffer *out)
{
    uint32_t count = 0, bound = n < slot_count ? n : slot_count;
    for (uint32_t i = 0; i < bound; i++) {
        const gpu_slot *s = &slots[i];
        if (s->kind == GPU_SLOT_UNUSED || s->set != set) continue;
        out[count++] = (gpu_set_buffer){&b[i], s->binding, s->kind == GPU_SLOT_UNIFORM, 0};
    }
    if (info && set == 0) out[count++] = (gpu_set_buffer){info, GPU_INFO_BINDING, info_uniform, 1};
    return count;
}

void gpu_cmd_barrier(gpu_cmd *c, uint32_t src_stages, uint32_t src_access, uint32_t dst_stages,
                     uint32_t dst_access)
{
    gpu_cmd_entry *e = append(c, GPU_OP_BARRIER, 0);
    if (e) {
        e->u.barrier.src_stages = src_stages;
        e->u.barrier.src_access = src_access;
        e->u.barrier.dst_stages = dst_stages;
        e->u.barrier.dst_access = dst_access;
    }
}

void gpu_cmd_bind_pipeline(gpu_cmd *c, const gpu_pipeline *p)
{
    gpu_cmd_entry *e = append(c, GPU_OP_BIND_PIPELINE, 0);
    if (e) e->u.pipeline = p;
}

void gpu_cmd_bind_buffers(gpu_cmd *c, const gpu_pipeline *p, const gpu_binding *b, uint32_t n,
                          const gpu_binding *info)
{
    gpu_cmd_bind_resources(c, p, b, n, info, NULL, 0);
}

void gpu_cmd_bind_resources(gpu_cmd *c, const gpu_pipeline *p, const gpu_binding *b, uint32_t n,
                            const gpu_binding *info, const gpu_image_binding *images, uint32_t ni)
{
    uint32_t count = n + (info ? 1 : 0);
    if (!count && !ni) return;
    gpu_cmd_entry *e = append(c, GPU_OP_BIND_BUFFERS,
                              count * sizeof(gpu_binding) + ni * sizeof(gpu_image_binding));
    if (!e) return;
    e->u.buffers.p = p;
    e->u.buffers.n = n;
    e->u.buffers.info = info != NULL;
    e->u.buffers.images = ni;
    gpu_binding *to = (gpu_binding *)(e + 1);
    if (n) memcpy(to, b, n * sizeof *b);
    if (info) to[n] = *info;
    if (ni) memcpy(to + count, images, ni * sizeof *images);
}

void gpu_cmd_image_init(gpu_cmd *c, gpu_image *im)
{
    gpu_cmd_entry *e = append(c, GPU_OP_IMAGE_INIT, 0);
    if (!e) return;
    e->u.image.im = im;
    e->u.image.m = NULL;
    e->u.image.offset = 0;
    e->u.image.to_image = 0;
}

void gpu_cmd_copy_image(gpu_cmd *c, gpu_image *im, gpu_mem *m, uint64_t offset, int to_image)
{
    gpu_cmd_entry *e = append(c, GPU_OP_COPY_IMAGE, 0);
    if (!e) return;
    e->u.image.im = im;
    e->u.image.m = m;
    e->u.image.offset = offset;
    e->u.image.to_image = (uint32_t)to_image;
}

void gpu_cmd_push_constants(gpu_cmd *c, const gpu_pipeline *p, const void *data, uint32_t size)
{
    gpu_cmd_entry *e = append(c, GPU_OP_PUSH_CONSTANTS, size);
    if (!e) return;
    e->u.push.p = p;
    e->u.push.size = size;
    if (size) memcpy(e + 1, data, size);
}

void gpu_cmd_dispatch(gpu_cmd *c, uint32_t x, uint32_t y, uint32_t z)
{
    gpu_cmd_entry *e = append(c, GPU_OP_DISPATCH, 0);
    if (e) {
        e->u.dispatch.x = x;
        e->u.dispatch.y = y;
        e->u.dispatch.z = z;
    }
}

void gpu_cmd_dispatch_indirect(gpu_cmd *c, gpu_mem *m, uint64_t offset)
{
    gpu_cmd_entry *e = append(c, GPU_OP_DISPATCH_INDIRECT, 0);
    if (e) {
        e->u.indirect.m = m;
        e->u.indirect.offset = offset;
    }
}

void gpu_cmd_copy(gpu_cmd *c, gpu_mem *src, uint64_t src_offset, gpu_mem *dst, uint64_t dst_offset,
                  uint64_t size)
{
    gpu_cmd_entry *e = append(c, GPU_OP_COPY, 0);
    if (e) {
        e->u.copy.src = src;
        e->u.copy.dst = dst;
        e->u.copy.src_offset = src_offset;
        e->u.copy.dst_offset = dst_offset;
        e->u.copy.size = size;
    }
}

void gpu_cmd_fill(gpu_cmd *c, gpu_mem *dst, uint64_t offset, uint64_t size, uint32_t pattern)
{
    gpu_cmd_entry *e = append(c, GPU_OP_FILL, 0);
    if (e) {
        e->u.fill.dst = dst;
        e->u.fill.offset = offset;
        e->u.fill.size = size;
        e->u.fill.pattern = pattern;
    }
}

void gpu_cmd_ownership(gpu_cmd *c, gpu_mem *m, int acquire)
{
    gpu_cmd_entry *e = append(c, GPU_OP_OWNERSHIP, 0);
    if (e) {
        e->u.ownership.m = m;
        e->u.ownership.acquire = acquire != 0;
    }
}

static void queries_entry(gpu_cmd *c, gpu_cmd_op op, gpu_queries *q, uint32_t a, uint32_t b)
{
    gpu_cmd_entry *e = append(c, op, 0);
    if (e) {
        e->u.queries.q = q;
        e->u.queries.a = a;
        e->u.queries.b = b;
    }
}

void gpu_cmd_timestamp(gpu_cmd *c, gpu_queries *q, uint32_t query, uint32_t stage)
{
    queries_entry(c, GPU_OP_TIMESTAMP, q, query, stage);
}

void gpu_cmd_reset_queries(gpu_cmd *c, gpu_queries *q, uint32_t first, uint32_t count)
{
    queries_entry(c, GPU_OP_RESET_QUERIES, q, first, count);
}
