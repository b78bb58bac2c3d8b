/* Encoding the seam's command list (gpu/cmd_list.h) into a WebGPU command buffer, at every
 * submission: WebGPU command buffers are single-submit, so a graph replays by re-encoding (what
 * the seed's wgpu server does) and a batch is encoded once.
 *
 * WebGPU keeps pipeline, bind groups and immediates per compute pass, and copies and clears
 * happen outside passes. So the state the list sets is kept here and applied at the next
 * dispatch, into a pass opened lazily and closed before a copy or a fill; a new pass gets the
 * whole state again. Barriers are no-ops: WebGPU tracks usage between dispatches itself. */
#include "gpu/webgpu/wg_image.h"
#include "gpu/webgpu/wg_internal.h"

#include <inttypes.h>
#include <string.h>

typedef struct wg_enc {
    wg_gpu *w;
    WGPUCommandEncoder enc;
    WGPUComputePassEncoder pass;
    const gpu_pipeline *pipeline;
    WGPUBindGroup groups[GPU_MAX_SETS];
    uint32_t group_mask; /* sets with a group */
    uint32_t applied;    /* in the open pass: 1 the pipeline, 2 << set the groups, 32 immediates */
    unsigned char imm[WG_MAX_IMMEDIATES];
    uint32_t imm_size;
    uint32_t indirect_count; /* indirect dispatches so far (their slots in wg_indirect's) */
    /* Timestamps at pass boundaries (WG_TS_PASS_BOUNDARIES; see encode_timestamp): the entry
     * being encoded (ready_dispatch looks ahead from it), a timestamp waiting for the next
     * pass's beginning, and the timestamp entry the open pass writes at its end. */
    const gpu_cmd *list;
    const gpu_cmd_entry *at;
    WGPUQuerySet begin_set;
    uint32_t begin_index;
    const gpu_cmd_entry *pass_end;
} wg_enc;

#define APPLIED_PIPELINE 1u
#define APPLIED_GROUP(set) (2u << (set))
#define APPLIED_IMMEDIATES 32u

static void flush_begin(wg_enc *e);

/* Closes the open pass, and writes a timestamp still waiting for a pass's beginning: whatever
 * comes next (a copy, a fill, another timestamp, the end) must not be inside it. */
static void end_pass(wg_enc *e)
{
    if (e->pass) {
        e->w->p->ComputePassEncoderEnd(e->pass);
        e->w->p->ComputePassEncoderRelease(e->pass);
        e->pass = NULL;
        e->applied = 0;
        e->pass_end = NULL;
    }
    flush_begin(e);
}

/* --- Timestamps -----------------------------------------------------------------------------
 *
 * The command list's timestamps sit between dispatches, copies and fills. Where the device
 * writes timestamps inside passes (WG_TS_PASSES) one goes where it stands, inside the open pass
 * or on the encoder between passes; inside encoders only (WG_TS_ENCODERS) it closes the open
 * pass and goes on the encoder. Where only a pass descriptor's timestampWrites exist
 * (WG_TS_PASS_BOUNDARIES) each timestamp is moved to the nearest pass boundary with nothing but
 * state between them: a timestamp waits to be the beginning write of the pass the next dispatch
 * opens, and a pass that the list closes with a timestamp (only dispatches and state between)
 * writes that one at its end. One that finds neither (a copy or a fill next, two in a row, or
 * the end of the list) is written by an empty pass of its own, so no work crosses it. */

static void pass_with_writes(wg_enc *e, WGPUQuerySet set, uint32_t begin, uint32_t end)
{
    const wg_procs *p = e->w->p;
    WGPUPassTimestampWrites tw = {
        .querySet = set, .beginningOfPassWriteIndex = begin, .endOfPassWriteIndex = end};
    WGPUComputePassDescriptor d = {.timestampWrites = &tw};
    WGPUComputePassEncoder pass = p->CommandEncoderBeginComputePass(e->enc, &d);
    p->ComputePassEncoderEnd(pass);
    p->ComputePassEncoderRelease(pass);
}

/* Writes the timestamp waiting for a pass's beginning, in an empty pass (end_pass calls it). */
static void flush_begin(wg_enc *e)
{
    if (!e->begin_set) return;
    pass_with_writes(e, e->begin_set, e->begin_index, WGPU_QUERY_SET_INDEX_UNDEFINED);
    e->begin_set = NULL;
}

/* The timestamp entry that closes the pass a dispatch at e->at opens: the first entry after it
 * that is neither a dispatch nor state, when it is a timestamp of `set` (NULL otherwise). */
static const gpu_cmd_entry *pass_end_stamp(const wg_enc *e, WGPUQuerySet set)
{
    for (const gpu_cmd_entry *ce = gpu_cmd_list_next(e->list, e->at); ce;
         ce = gpu_cmd_list_next(e->list, ce)) {
        switch ((gpu_cmd_op)ce->op) {
        case GPU_OP_BARRIER:
        case GPU_OP_BIND_PIPELINE:
        case GPU_OP_BIND_BUFFERS:
        case GPU_OP_PUSH_CONSTANTS:
        case GPU_OP_DISPATCH:
        case GPU_OP_RESET_QUERIES: continue;
        case GPU_OP_TIMESTAMP: {
            uint32_t index = 0;
            /* One pass descriptor names one query set: another set's goes its own way. */
            if (!set || wg_query_set(ce->u.queries.q, ce->u.queries.a, &index) == set) return ce;
            return NULL;
        }
        default: return NULL;
        }
    }
    return NULL;
}

/* A compute pass for dispatches, with the boundary timestamps that fall on it. */
static WGPUComputePassEncoder begin_dispatch_pass(wg_enc *e)
{
    const wg_procs *p = e->w->p;
    WGPUComputePassDescriptor d = {0};
    WGPUPassTimestampWrites tw = {.beginningOfPassWriteIndex = WGPU_QUERY_SET_INDEX_UNDEFINED,
                                  .endOfPassWriteIndex = WGPU_QUERY_SET_INDEX_UNDEFINED};
    if (e->w->timestamps == WG_TS_PASS_BOUNDARIES && e->at) {
        const gpu_cmd_entry *end = pass_end_stamp(e, e->begin_set);
        if (e->begin_set) {
            tw.querySet = e->begin_set;
            tw.beginningOfPassWriteIndex = e->begin_index;
            e->begin_set = NULL;
        }
        if (end) {
            tw.querySet = wg_query_set(end->u.queries.q, end->u.queries.a, &tw.endOfPassWriteIndex);
            e->pass_end = end;
        }
        if (tw.querySet) d.timestampWrites = &tw;
    }
    return p->CommandEncoderBeginComputePass(e->enc, &d);
}

static void encode_timestamp(wg_enc *e, const gpu_cmd_entry *ce)
{
    const wg_procs *p = e->w->p;
    uint32_t index = 0;
    WGPUQuerySet set = wg_query_set(ce->u.queries.q, ce->u.queries.a, &index);
    switch (e->w->timestamps) {
    case WG_TS_PASSES:
        if (e->pass) {
            p->ComputePassEncoderWriteTimestamp(e->pass, set, index);
            return;
        }
        p->CommandEncoderWriteTimestamp(e->enc, set, index);
        return;
    case WG_TS_ENCODERS:
        end_pass(e);
        p->CommandEncoderWriteTimestamp(e->enc, set, index);
        return;
    case WG_TS_PASS_BOUNDARIES:
        if (ce == e->pass_end) {
            end_pass(e); /* the pass writes it as it ends */
            return;
        }
        end_pass(e);
        e->begin_set = set;
        e->begin_index = index;
        return;
    case WG_TS_NONE: return; /* not reached: the server creates no queries then */
    }
}

/* Opens a pass if none is and applies what the list set since. */
static cubec_status ready_dispatch(wg_enc *e)
{
    const wg_procs *p = e->w->p;
    if (!e->pipeline) return status_make(CUBEC_INTERNAL, "webgpu: a dispatch without a pipeline");
    if (!e->pass) {
        e->pass = begin_dispatch_pass(e);
        if (!e->pass) return status_make(CUBEC_INTERNAL, "wgpuCommandEncoderBeginComputePass");
        e->applied = 0;
    }
    if (!(e->applied & APPLIED_PIPELINE)) {
        p->ComputePassEncoderSetPipeline(e->pass, e->pipeline->pipeline);
        e->applied |= APPLIED_PIPELINE;
    }
    for (uint32_t set = 0; set < e->pipeline->set_count; set++)
        if ((e->group_mask & (1u << set)) && !(e->applied & APPLIED_GROUP(set))) {
            p->ComputePassEncoderSetBindGroup(e->pass, set, e->groups[set], 0, NULL);
            e->applied |= APPLIED_GROUP(set);
        }
    /* The last bytes pushed, cut to what this pipeline's layout holds (a pipeline of a smaller
     * block than an earlier one's may follow it). */
    uint32_t imm = e->imm_size < e->pipeline->push_size ? e->imm_size : e->pipeline->push_size;
    if (imm && !(e->applied & APPLIED_IMMEDIATES)) {
        p->ComputePassEncoderSetImmediates(e->pass, 0, e->imm, imm);
        e->applied |= APPLIED_IMMEDIATES;
    }
    return NULL;
}

static cubec_status bind_buffers(wg_enc *e, const gpu_cmd_entry *ce)
{
    const gpu_pipeline *pl = ce->u.buffers.p;
    const gpu_image_binding *images = gpu_cmd_entry_images(ce);
    const gpu_binding *b = gpu_cmd_entry_bindings(ce);
    const gpu_binding *info = ce->u.buffers.info ? &b[ce->u.buffers.n] : NULL;
    uint64_t uniform_range = e->w->limits.maxUniformBufferBindingSize;
    for (uint32_t set = 0; set < pl->set_count; set++) {
        WGPUBindGroupEntry entries[GPU_MAX_BINDINGS + 2 * GPU_MAX_RESOURCES];
        uint64_t ids[GPU_MAX_BINDINGS + 2 * GPU_MAX_RESOURCES];
        gpu_set_buffer sb[GPU_MAX_BINDINGS];
        uint32_t buffers = gpu_cmd_set_buffers(pl->slots, pl->slot_count, pl->info_uniform, b,
                                               ce->u.buffers.n, info, set, sb);
        uint32_t count = 0;
        for (uint32_t i = 0; i < buffers; i++) {
            const gpu_binding *x = sb[i].b;
            const wg_mem *m = (const wg_mem *)x->mem;
            /* Storage bindings are whole words in WebGPU; the buffer is too (wg_mem.bytes). The
             * metadata block's binding is whole 16 bytes: its SPIR-V (std430) size ends at its
             * last member, while the translation's WGSL struct is rounded up to its alignment
             * (16 with a vec3, a vec4 or a matrix), and WebGPU refuses a binding smaller than
             * that. Its ring slice starts at a multiple of metadata_alignment (16 or more), so the
             * bytes past it are the slice's padding or the next slice's, which it never reads. */
            uint64_t granule = sb[i].info ? 16u : 4u;
            uint64_t size = (x->size + granule - 1u) & ~(granule - 1u);
            if (sb[i].uniform && size > uniform_range) size = uniform_range;
            if (x->offset + size > m->bytes) size = m->bytes - x->offset;
            entries[count] = (WGPUBindGroupEntry){
                .binding = sb[i].binding, .buffer = m->buffer, .offset = x->offset, .size = size};
            ids[count++] = m->id;
        }
        /* Images, textures and samplers: their views and the device's samplers. */
        for (uint32_t i = 0; i < ce->u.buffers.images; i++) {
            const gpu_image_binding *x = &images[i];
            if (x->set != set) continue;
            uint32_t declared = 0;
            for (uint32_t r = 0; r < pl->resource_count; r++)
                if (pl->resources[r].set == set && pl->resources[r].binding == x->binding)
                    declared = pl->resources[r].format;
            uint32_t added = 0;
            RETURN_IF_ERROR(
                wg_image_bind_entry(e->w, x, declared, &entries[count], &ids[count], &added));
            count += added;
        }
        if (!count) {
            e->group_mask &= ~(1u << set);
            continue;
        }
        RETURN_IF_ERROR(wg_bind_group(e->w, pl, set, entries, count, ids, &e->groups[set]));
        e->group_mask |= 1u << set;
        e->applied &= ~APPLIED_GROUP(set);
    }
    return NULL;
}

/* One of the backend's own kernels over `words` words, in a pass of its own, with its 16 bytes
 * of immediates; the bind group is released here (the command buffer holds its own reference). */
static void run_own_kernel(wg_enc *e, WGPUComputePipeline pipeline, WGPUBindGroup group,
                           const uint32_t imm[4], uint64_t words)
{
    const wg_procs *p = e->w->p;
    WGPUComputePassDescriptor d = {0};
    WGPUComputePassEncoder pass = p->CommandEncoderBeginComputePass(e->enc, &d);
    p->ComputePassEncoderSetPipeline(pass, pipeline);
    p->ComputePassEncoderSetBindGroup(pass, 0, group, 0, NULL);
    p->ComputePassEncoderSetImmediates(pass, 0, imm, 4 * sizeof imm[0]);
    p->ComputePassEncoderDispatchWorkgroups(pass, wg_own_kernel_groups(e->w, words), 1, 1);
    p->ComputePassEncoderEnd(pass);
    p->ComputePassEncoderRelease(pass);
    p->BindGroupRelease(group);
}

/* A window of `m` bound as storage that holds [offset, +size): its start (at the binding
 * alignment) and size; CUBEC_UNSUPPORTED past one binding's limit. */
static cubec_status window_of(const wg_gpu *w, const wg_mem *m, uint64_t offset, uint64_t size,
                              uint64_t *out_start, uint64_t *out_size)
{
    uint64_t align = w->limits.minStorageBufferOffsetAlignment;
    uint64_t start = offset / align * align;
    uint64_t window = m->bytes - start;
    if (window > w->limits.maxStorageBufferBindingSize)
        window = w->limits.maxStorageBufferBindingSize & ~(uint64_t)3u;
    if (offset + size > start + window)
        return status_make(CUBEC_UNSUPPORTED,
                           "webgpu: %" PRIu64 " bytes at %" PRIu64 " are more than one storage "
                           "binding holds (%" PRIu64 " bytes)",
                           size, offset, (uint64_t)w->limits.maxStorageBufferBindingSize);
    *out_start = start;
    *out_size = window;
    return NULL;
}

/* A fill with a pattern: the backend's fill kernel on a window of the buffer (WebGPU clears to
 * zero only). Offsets and sizes are words, as Vulkan's vkCmdFillBuffer requires too. */
static cubec_status fill_pattern(wg_enc *e, wg_mem *m, uint64_t offset, uint64_t size,
                                 uint32_t pattern)
{
    wg_gpu *w = e->w;
    const wg_procs *p = w->p;
    if (!w->fill_pipeline)
        return status_make(CUBEC_UNSUPPORTED,
                           "webgpu: a fill with pattern 0x%08" PRIx32
                           " needs the fill kernel, which this device could not make (no "
                           "immediates)",
                           pattern);
    uint64_t start = 0, window = 0;
    RETURN_IF_ERROR(window_of(w, m, offset, size, &start, &window));
    WGPUBindGroupEntry be = {.binding = 0, .buffer = m->buffer, .offset = start, .size = window};
    WGPUBindGroupDescriptor bd = {.layout = w->fill_layout, .entryCount = 1, .entries = &be};
    WGPUBindGroup group = p->DeviceCreateBindGroup(w->device, &bd);
    if (!group) return status_make(CUBEC_INTERNAL, "wgpuDeviceCreateBindGroup (fill)");
    uint32_t words = (uint32_t)(size / 4);
    uint32_t imm[4] = {(uint32_t)((offset - start) / 4), words, pattern, 0};
    run_own_kernel(e, w->fill_pipeline, group, imm, words);
    return NULL;
}

/* A copy of bytes that copyBufferToBuffer cannot make (offsets or size not whole words): the
 * backend's byte-copy kernel, which writes each destination word once, keeping its bytes outside
 * the range. */
static cubec_status copy_bytes(wg_enc *e, wg_mem *src, uint64_t so, wg_mem *dst, uint64_t d,
                               uint64_t n)
{
    wg_gpu *w = e->w;
    const wg_procs *p = w->p;
    if (!w->copy_pipeline)
        return status_make(CUBEC_UNSUPPORTED,
                           "webgpu: a copy of %" PRIu64 " bytes from offset %" PRIu64 " to %" PRIu64
                           " (copyBufferToBuffer takes multiples of 4, and the "
                           "byte-copy kernel cannot serve these buffers)",
                           n, so, d);
    uint64_t ss = 0, sn = 0, ds = 0, dn = 0;
    RETURN_IF_ERROR(window_of(w, src, so, n, &ss, &sn));
    RETURN_IF_ERROR(window_of(w, dst, d, n, &ds, &dn));
    WGPUBindGroupEntry be[2] = {{.binding = 0, .buffer = src->buffer, .offset = ss, .size = sn},
                                {.binding = 1, .buffer = dst->buffer, .offset = ds, .size = dn}};
    WGPUBindGroupDescriptor bd = {.layout = w->copy_layout, .entryCount = 2, .entries = be};
    WGPUBindGroup group = p->DeviceCreateBindGroup(w->device, &bd);
    if (!group) return status_make(CUBEC_INTERNAL, "wgpuDeviceCreateBindGroup (byte copy)");
    uint32_t imm[4] = {(uint32_t)(so - ss), (uint32_t)(d - ds), (uint32_t)n, 0};
    uint64_t words = ((d - ds) % 4u + n + 3u) / 4u;
    run_own_kernel(e, w->copy_pipeline, group, imm, words);
    return NULL;
}

static cubec_status encode_entry(wg_enc *e, const gpu_cmd_entry *ce)
{
    const wg_procs *p = e->w->p;
    switch ((gpu_cmd_op)ce->op) {
    case GPU_OP_BARRIER: return NULL; /* WebGPU orders dispatches and copies itself */
    case GPU_OP_BIND_PIPELINE:
        /* The immediates stay: the server pushes them again only when they change, as Vulkan
         * keeps push constants across pipeline binds (a launch without any between two of one
         * kernel with the same bytes gets none recorded). */
        e->pipeline = ce->u.pipeline;
        e->group_mask = 0;
        e->applied = 0;
        return NULL;
    case GPU_OP_BIND_BUFFERS: return bind_buffers(e, ce);
    case GPU_OP_PUSH_CONSTANTS:
        if (ce->u.push.size > WG_MAX_IMMEDIATES)
            return status_make(CUBEC_UNSUPPORTED, "webgpu: %" PRIu32 " bytes of push constants",
                               ce->u.push.size);
        memcpy(e->imm, gpu_cmd_entry_bytes(ce), ce->u.push.size);
        e->imm_size = ce->u.push.size;
        e->applied &= ~APPLIED_IMMEDIATES;
        return NULL;
    case GPU_OP_DISPATCH:
        RETURN_IF_ERROR(ready_dispatch(e));
        p->ComputePassEncoderDispatchWorkgroups(e->pass, ce->u.dispatch.x, ce->u.dispatch.y,
                                                ce->u.dispatch.z);
        return NULL;
    case GPU_OP_DISPATCH_INDIRECT: {
        /* The arguments are copied to a buffer of their own first: in a pooled page they sit
         * beside storage the dispatch binds, and WebGPU refuses one buffer as both in one
         * dispatch. A slot per indirect dispatch of the encoding, so none overwrites another's. */
        WGPUBuffer args = NULL;
        uint64_t slot = (uint64_t)16u * e->indirect_count++;
        RETURN_IF_ERROR(wg_indirect(e->w, slot + 16u, &args));
        end_pass(e);
        p->CommandEncoderCopyBufferToBuffer(e->enc, ((wg_mem *)ce->u.indirect.m)->buffer,
                                            ce->u.indirect.offset, args, slot, 12);
        RETURN_IF_ERROR(ready_dispatch(e));
        p->ComputePassEncoderDispatchWorkgroupsIndirect(e->pass, args, slot);
        return NULL;
    }
    case GPU_OP_COPY: {
        uint64_t so = ce->u.copy.src_offset, d = ce->u.copy.dst_offset, n = ce->u.copy.size;
        end_pass(e);
        if ((so | d | n) & 3u) {
            wg_mem *sm = (wg_mem *)ce->u.copy.src, *dm = (wg_mem *)ce->u.copy.dst;
            return copy_bytes(e, sm, so, dm, d, n);
        }
        WGPUBuffer src = ((wg_mem *)ce->u.copy.src)->buffer;
        WGPUBuffer dst = ((wg_mem *)ce->u.copy.dst)->buffer;
        if (src == dst) {
            /* Two allocations of one pooled page: WebGPU refuses a copy within one buffer, so it
             * goes through the device's scratch buffer (encoder order keeps the two apart). */
            WGPUBuffer scratch = NULL;
            RETURN_IF_ERROR(wg_scratch(e->w, n, &scratch));
            p->CommandEncoderCopyBufferToBuffer(e->enc, src, so, scratch, 0, n);
            p->CommandEncoderCopyBufferToBuffer(e->enc, scratch, 0, dst, d, n);
            return NULL;
        }
        p->CommandEncoderCopyBufferToBuffer(e->enc, src, so, dst, d, n);
        return NULL;
    }
    case GPU_OP_FILL: {
        wg_mem *m = (wg_mem *)ce->u.fill.dst;
        uint64_t off = ce->u.fill.offset, n = ce->u.fill.size;
        if ((off | n) & 3u)
            return status_make(
                CUBEC_INTERNAL,
                "webgpu: a fill of %" PRIu64 " bytes at %" PRIu64 " is not in whole words", n, off);
        end_pass(e);
        if (!ce->u.fill.pattern) {
            p->CommandEncoderClearBuffer(e->enc, m->buffer, off, n);
            return NULL;
        }
        return fill_pattern(e, m, off, n, ce->u.fill.pattern);
    }
    case GPU_OP_TIMESTAMP: encode_timestamp(e, ce); return NULL;
    case GPU_OP_RESET_QUERIES: /* WebGPU queries need no reset */
    case GPU_OP_IMAGE_INIT: /* no layouts, and a new texture is zeroed */ return NULL;
    case GPU_OP_COPY_IMAGE:
        end_pass(e);
        return wg_image_encode_copy(e->w, e->enc, ce->u.image.im, (wg_mem *)ce->u.image.m,
                                    ce->u.image.offset, (int)ce->u.image.to_image);
    case GPU_OP_OWNERSHIP:
        /* Recorded only for external pages, which this backend never has. */
        return status_make(CUBEC_UNSUPPORTED,
                           "the webgpu backend has no external memory to transfer ownership of");
    }
    return status_make(CUBEC_INTERNAL, "webgpu: command %" PRIu32 " is unknown", ce->op);
}

cubec_status wg_encode(wg_gpu *w, const gpu_submit_item *items, uint32_t n, WGPUCommandBuffer *out)
{
    *out = NULL;
    for (uint32_t i = 0; i < n; i++)
        RETURN_IF_ERROR(gpu_cmd_list_status(items[i].cmd));
    const wg_procs *p = w->p;
    WGPUCommandEncoderDescriptor d = {0};
    wg_enc e = {.w = w, .enc = p->DeviceCreateCommandEncoder(w->device, &d)};
    if (!e.enc) return status_make(CUBEC_INTERNAL, "wgpuDeviceCreateCommandEncoder");
    cubec_status err = NULL;
    for (uint32_t i = 0; i < n && !err; i++) {
        /* Each list starts with no state, as a command buffer of its own would (the indirect
         * slots go on counting: they are the encoding's). An open pass goes on into the next
         * list, which sets its state again: wgpu's work per pass grows with the buffers the
         * device holds (its trackers), so one pass for several batches costs less. */
        e.pipeline = NULL;
        e.group_mask = 0;
        e.applied = 0;
        e.imm_size = 0;
        const gpu_cmd *list = items[i].cmd;
        e.list = list;
        for (const gpu_cmd_entry *ce = gpu_cmd_list_first(list); ce && !err;
             ce = gpu_cmd_list_next(list, ce)) {
            e.at = ce;
            err = encode_entry(&e, ce);
        }
    }
    end_pass(&e);
    if (!err) {
        WGPUCommandBufferDescriptor cd = {0};
        *out = p->CommandEncoderFinish(e.enc, &cd);
        if (!*out) err = status_make(CUBEC_INTERNAL, "wgpuCommandEncoderFinish");
    }
    p->CommandEncoderRelease(e.enc);
    if (!err) err = wg_take_error(w, "encoding a command buffer");
    if (err && *out) {
        p->CommandBufferRelease(*out);
        *out = NULL;
    }
    return err;
}
