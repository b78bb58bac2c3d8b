/* Copies and fills: the built-in kernels that run them on GPUs, and copy and fill commands on CPU
 * devices (where the copy engine is memcpy, four times faster than a kernel there); [device]
 * copy_engine overrides the choice. Offsets are word-aligned (api/ checks); kernels bind from an
 * aligned offset below the range and skip the lead, so hazards, failures and holds see the
 * accessed bytes only. Relocation's copies (server_record_move) take the same engine. */
#include "server/copy_fill.h"

#include "server/buffers.h"
#include "server/device.h"
#include "server/hazards.h"
#include "server/kernels.h"
#include "server/launch.h"
#include "server/streams.h"
#include "server/submission.h"
#include "server/task.h"

#include <stddef.h>
#include <string.h>

/* Copies and fills run as compute kernels: on an H200 vkCmdCopyBuffer reaches 0.85 TB/s where a
 * kernel passes 4 TB/s. The grid-stride loop keeps the group count within every device's limit. */
static const char copy_src[] =
    "#version 450\n"
    "layout(local_size_x = 256) in;\n"
    "layout(std430, binding = 0) readonly buffer Src { WORD src[]; };\n"
    "layout(std430, binding = 1) writeonly buffer Dst { WORD dst[]; };\n"
    "CUBEC_INFO(uint src_at; uint dst_at; uint count;)\n"
    "void main() {\n"
    "  uint stride = gl_NumWorkGroups.x * 256u;\n"
    "  for (uint i = gl_GlobalInvocationID.x; i < info.count; i += stride)\n"
    "    dst[info.dst_at + i] = src[info.src_at + i];\n"
    "}\n";

static const char fill_src[] =
    "#version 450\n"
    "layout(local_size_x = 256) in;\n"
    "layout(std430, binding = 0) writeonly buffer Dst { uint dst[]; };\n"
    "CUBEC_INFO(uint at; uint count; uint pattern;)\n"
    "void main() {\n"
    "  uint stride = gl_NumWorkGroups.x * 256u;\n"
    "  for (uint i = gl_GlobalInvocationID.x; i < info.count; i += stride)\n"
    "    dst[info.at + i] = info.pattern;\n"
    "}\n";

/* Relocation records its copies straight into a command buffer, outside any task, so it has no
 * metadata slice to give a kernel: this one reads its offsets from push constants whatever
 * [kernel] metadata says. */
static const char move_src[] =
    "#version 450\n"
    "layout(local_size_x = 256) in;\n"
    "layout(std430, binding = 0) readonly buffer Src { uvec4 src[]; };\n"
    "layout(std430, binding = 1) writeonly buffer Dst { uvec4 dst[]; };\n"
    "layout(push_constant) uniform Move { uint src_at; uint dst_at; uint count; } mv;\n"
    "void main() {\n"
    "  uint stride = gl_NumWorkGroups.x * 256u;\n"
    "  for (uint i = gl_GlobalInvocationID.x; i < mv.count; i += stride)\n"
    "    dst[mv.dst_at + i] = src[mv.src_at + i];\n"
    "}\n";

int server_copies_by_kernel(const cubec_device *d)
{
    return d->gpu->caps.runs_kernels &&
           config_auto_on(d->config.copy_engine, d->info.type != CUBEC_DEVICE_TYPE_CPU);
}

cubec_status server_builtin_kernels(cubec_device *d)
{
    if (d->kernels->copy) return NULL;
    cubec_define word1 = {"WORD", "uint"}, word4 = {"WORD", "uvec4"};
    cubec_kernel_desc c1 = {.struct_size = sizeof(cubec_kernel_desc),
                            .name = "cubec.copy",
                            .glsl = copy_src,
                            .defines = &word1,
                            .define_count = 1,
                            .optimize = 1};
    cubec_kernel_desc c4 = {.struct_size = sizeof(cubec_kernel_desc),
                            .name = "cubec.copy4",
                            .glsl = copy_src,
                            .defines = &word4,
                            .define_count = 1,
                            .optimize = 1};
    cubec_kernel_desc f = {.struct_size = sizeof(cubec_kernel_desc),
                           .name = "cubec.fill",
                           .glsl = fill_src,
                           .optimize = 1};
    cubec_kernel_desc m = {.struct_size = sizeof(cubec_kernel_desc),
                           .name = "cubec.move",
                           .glsl = move_src,
                           .optimize = 1};
    pipeline_entry *a, *b, *c, *e;
    RETURN_IF_ERROR(server_kernel_create_locked(d, &c1, &a));
    RETURN_IF_ERROR(server_kernel_create_locked(d, &c4, &b));
    RETURN_IF_ERROR(server_kernel_create_locked(d, &f, &c));
    RETURN_IF_ERROR(server_kernel_create_locked(d, &m, &e));
    d->kernels->copy4 = b;
    d->kernels->fill = c;
    d->kernels->move = e;
    d->kernels->copy = a; /* last: it says the others are there */
    return NULL;
}

static uint64_t align_down(uint64_t x, uint64_t a)
{
    return x / a * a;
}

/* The groups of 256 a grid-stride loop over `count` words runs with: at most 2^17, for on an
 * H200 64-128 K groups run a streaming kernel at 4.2+ TB/s where 2^20 groups fall to 2.6 TB/s. */
static uint32_t grid_groups(const cubec_device *d, uint64_t count)
{
    uint64_t groups = (count + 255) / 256;
    uint64_t cap = d->info.max_workgroup_count[0];
    if (cap > (1u << 17)) cap = 1u << 17;
    return (uint32_t)(groups > cap ? cap : groups);
}

/* One launch of a builtin word kernel over [at, at+bytes) of `dst` (and of `src` for copies). */
static cubec_status word_launch(cubec_device *d, stream_ref s, const pipeline_entry *k,
                                buffer_obj *src, uint64_t src_abs, buffer_obj *dst,
                                uint64_t dst_abs, uint64_t bytes, uint32_t word, uint32_t pattern)
{
    uint64_t a = d->info.storage_offset_alignment > 16 ? d->info.storage_offset_alignment : 16;
    buffer_obj views[2];
    buffer_obj *bufs[2];
    uint32_t info[3];
    uint32_t leads[2];
    uint32_t nb = 0;
    uint64_t dst_base = align_down(dst_abs, a);
    if (src) {
        uint64_t src_base = align_down(src_abs, a);
        leads[nb] = (uint32_t)(src_abs - src_base);
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
    leads[nb] = (uint32_t)(dst_abs - dst_base);
    bufs[nb++] = &views[1];
    launch_args la = {.entry = k,
                      .buffers = bufs,
                      .buffer_count = nb,
                      .info = info,
                      .groups = {grid_groups(d, bytes / word), 1, 1},
                      .leads = leads};
    return server_launch(d, s, &la);
}

/* Largest chunk one binding can cover: the storage range less the alignment slack. */
static uint64_t max_chunk(const cubec_device *d)
{
    uint64_t a = d->info.storage_offset_alignment > 16 ? d->info.storage_offset_alignment : 16;
    uint64_t m = align_down(d->info.max_storage_buffer_range - a, 16);
    return m > (1ull << 34) ? (1ull << 34) : m;
}

/* A copy command: on a CPU driver it is a memcpy, four times faster than a copy kernel there. */
static cubec_status copy_with_transfer(cubec_device *d, stream_ref s, buffer_obj *src,
                                       uint64_t src_offset, buffer_obj *dst, uint64_t dst_offset,
                                       uint64_t size)
{
    uint32_t slot = s.slot;
    buffer_obj *both[2] = {src, dst};
    RETURN_IF_ERROR(server_align(d, slot, both, 2, 2u, NULL));
    task *t;
    RETURN_IF_ERROR(server_reserve_task(d, s, TASK_TRANSFER_COPY, &t));
    t->count = 2;
    t->write_mask = 2;
    t->b[0] = (bound_range){src->alloc, buffer_device_offset(src) + src_offset, size, 0};
    t->b[1] = (bound_range){dst->alloc, buffer_device_offset(dst) + dst_offset, size, 0};
    src->alloc->refs++;
    dst->alloc->refs++;
    return server_queue_task(d, slot, t);
}

cubec_status server_copy(cubec_device *d, stream_ref st, buffer_obj *src, uint64_t src_offset,
                         buffer_obj *dst, uint64_t dst_offset, uint64_t size)
{
    if (size == 0) return NULL;
    if (!server_copies_by_kernel(d))
        return copy_with_transfer(d, st, src, src_offset, dst, dst_offset, size);
    RETURN_IF_ERROR(server_builtin_kernels(d));
    uint64_t s = buffer_device_offset(src) + src_offset, t = buffer_device_offset(dst) + dst_offset;
    uint64_t chunk = max_chunk(d);
    for (uint64_t pos = 0; pos < size;) {
        uint64_t n = size - pos < chunk ? size - pos : chunk;
        uint64_t body = ((s + pos) % 16 == 0 && (t + pos) % 16 == 0) ? n / 16 * 16 : 0;
        if (body)
            RETURN_IF_ERROR(
                word_launch(d, st, d->kernels->copy4, src, s + pos, dst, t + pos, body, 16, 0));
        if (n > body)
            RETURN_IF_ERROR(word_launch(d, st, d->kernels->copy, src, s + pos + body, dst,
                                        t + pos + body, n - body, 4, 0));
        pos += n;
    }
    return NULL;
}

/* A fill command: on a CPU driver a memset, no kernel. */
static cubec_status fill_with_transfer(cubec_device *d, stream_ref s, buffer_obj *dst,
                                       uint64_t offset, uint64_t size, uint32_t pattern)
{
    uint32_t slot = s.slot;
    RETURN_IF_ERROR(server_align(d, slot, &dst, 1, 1u, NULL));
    task *t;
    RETURN_IF_ERROR(server_reserve_task(d, s, TASK_TRANSFER_FILL, &t));
    t->count = 1;
    t->write_mask = 1;
    t->pattern = pattern;
    t->b[0] = (bound_range){dst->alloc, buffer_device_offset(dst) + offset, size, 0};
    dst->alloc->refs++;
    return server_queue_task(d, slot, t);
}

cubec_status server_fill(cubec_device *d, stream_ref s, buffer_obj *dst, uint64_t offset,
                         uint64_t size, uint32_t pattern)
{
    if (size == 0) return NULL;
    if (!server_copies_by_kernel(d)) return fill_with_transfer(d, s, dst, offset, size, pattern);
    RETURN_IF_ERROR(server_builtin_kernels(d));
    uint64_t t = buffer_device_offset(dst) + offset;
    uint64_t chunk = max_chunk(d);
    for (uint64_t pos = 0; pos < size; pos += chunk) {
        uint64_t n = size - pos < chunk ? size - pos : chunk;
        RETURN_IF_ERROR(word_launch(d, s, d->kernels->fill, NULL, 0, dst, t + pos, n, 4, pattern));
    }
    return NULL;
}

cubec_status server_record_move(cubec_device *d, gpu_cmd *cmd, gpu_mem *src, uint64_t src_offset,
                                gpu_mem *dst, uint64_t dst_offset, uint64_t size)
{
    hazard_range r[2] = {{src, src_offset, size, 0}, {dst, dst_offset, size, 1}};
    /* Slices start and end on the pools' alignment, so every move of a GPU takes the kernel; a
     * range that does not fit whole 16-byte words falls back to the copy command. */
    int kernel = server_copies_by_kernel(d) && d->kernels->move &&
                 (src_offset | dst_offset | size) % 16 == 0;
    if (!kernel) {
        sub_hazards(d, cmd, r, 2, SUB_TRANSFER);
        gpu_cmd_copy(cmd, src, src_offset, dst, dst_offset, size);
        return NULL;
    }
    sub_hazards(d, cmd, r, 2, SUB_COMPUTE);
    const recorder rec = {cmd, &d->sub->bound, &d->sub->hazards};
    uint64_t a = d->info.storage_offset_alignment > 16 ? d->info.storage_offset_alignment : 16;
    uint64_t chunk = max_chunk(d);
    for (uint64_t pos = 0; pos < size;) {
        uint64_t n = size - pos < chunk ? size - pos : chunk;
        uint64_t s = src_offset + pos, t = dst_offset + pos;
        uint64_t sb = align_down(s, a), tb = align_down(t, a);
        gpu_binding b[2] = {{src, sb, s - sb + n}, {dst, tb, t - tb + n}};
        uint32_t push[3] = {(uint32_t)((s - sb) / 16), (uint32_t)((t - tb) / 16),
                            (uint32_t)(n / 16)};
        RETURN_IF_ERROR(server_record_dispatch(d, &rec, d->kernels->move, b, 2, NULL, push));
        gpu_cmd_dispatch(cmd, grid_groups(d, n / 16), 1, 1);
        pos += n;
    }
    return NULL;
}
