/* The WebGPU backend's device (wg_gpu.h): opening an adapter, memory, pipelines, command
 * buffers, submission and the timeline. The command list's encoding is wg_encode.c, the
 * bind-group cache wg_bind_cache.c, the library's loading wg_loader.c. */
#include "gpu/webgpu/wg_internal.h"

#include "base/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WG_ALIGN4(x) (((x) + 3u) & ~(uint64_t)3u)

/* The fill kernel (wg_encode.c's fill_pattern): words [first, first + count) of the window take
 * `pattern`; grid-stride, so any count fits the dispatch limit. */
static const char fill_wgsl[] = "struct Fill { first: u32, count: u32, pattern: u32, pad: u32 }\n"
                                "var<immediate> f: Fill;\n"
                                "@group(0) @binding(0) var<storage, read_write> dst: array<u32>;\n"
                                "@compute @workgroup_size(256)\n"
                                "fn main(@builtin(global_invocation_id) id: vec3<u32>,\n"
                                "        @builtin(num_workgroups) n: vec3<u32>) {\n"
                                "    var i = id.x;\n"
                                "    loop {\n"
                                "        if (i >= f.count) { break; }\n"
                                "        dst[f.first + i] = f.pattern;\n"
                                "        i = i + n.x * 256u;\n"
                                "    }\n"
                                "}\n";

/* The byte-copy kernel (wg_encode.c's copy_bytes): `count` bytes from byte `src_at` of the source
 * window to byte `dst_at` of the destination window; each destination word is written by one
 * invocation, with its bytes outside the range kept. */
static const char copy_wgsl[] =
    "struct Copy { src_at: u32, dst_at: u32, count: u32, pad: u32 }\n"
    "var<immediate> c: Copy;\n"
    "@group(0) @binding(0) var<storage, read_write> src: array<u32>;\n"
    "@group(0) @binding(1) var<storage, read_write> dst: array<u32>;\n"
    "@compute @workgroup_size(256)\n"
    "fn main(@builtin(global_invocation_id) id: vec3<u32>,\n"
    "        @builtin(num_workgroups) n: vec3<u32>) {\n"
    "    let first = c.dst_at >> 2u;\n"
    "    let last = (c.dst_at + c.count + 3u) >> 2u;\n"
    "    var w = first + id.x;\n"
    "    loop {\n"
    "        if (w >= last) { break; }\n"
    "        var v = dst[w];\n"
    "        for (var k = 0u; k < 4u; k = k + 1u) {\n"
    "            let b = w * 4u + k;\n"
    "            if (b >= c.dst_at && b < c.dst_at + c.count) {\n"
    "                let sb = c.src_at + (b - c.dst_at);\n"
    "                let byte = (src[sb >> 2u] >> ((sb & 3u) * 8u)) & 0xffu;\n"
    "                v = (v & ~(0xffu << (k * 8u))) | (byte << (k * 8u));\n"
    "            }\n"
    "        }\n"
    "        dst[w] = v;\n"
    "        w = w + n.x * 256u;\n"
    "    }\n"
    "}\n";

/* --- Errors and events --------------------------------------------------------------------- */

static void on_uncaptured(WGPUDevice const *device, WGPUErrorType type, WGPUStringView message,
                          void *user1, void *user2)
{
    (void)device;
    (void)user2;
    wg_gpu *w = user1;
    size_t len =
        message.length == WGPU_STRLEN && message.data ? strlen(message.data) : message.length;
    LOG(LOG_WARN, LOG_SYS_DEVICE, "webgpu error (type %d): %.*s", (int)type, (int)len,
        message.data ? message.data : "");
    pthread_mutex_lock(&w->lock);
    if (len > 4096) len = 4096; /* a message is kept for a status, not a log */
    if (!w->error) {
        w->error = malloc(len + 1);
        if (w->error) {
            if (len && message.data) memcpy(w->error, message.data, len);
            w->error[len] = 0;
        }
    }
    pthread_mutex_unlock(&w->lock);
}

cubec_status wg_take_error(wg_gpu *w, const char *what)
{
    pthread_mutex_lock(&w->lock);
    char *e = w->error;
    w->error = NULL;
    pthread_mutex_unlock(&w->lock);
    if (!e) return NULL;
    cubec_status s = status_make(CUBEC_INTERNAL, "webgpu: %s: %s", what, e);
    free(e);
    return s;
}

/* Lets the implementation run its callbacks (work done, maps). */
static void poll_events(wg_gpu *w, int wait)
{
    if (w->p->DevicePoll) w->p->DevicePoll(w->device, wait ? 1 : 0, NULL);
    w->p->InstanceProcessEvents(w->instance);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* --- Memory -------------------------------------------------------------------------------- */

static WGPUBufferUsage usage_of(gpu_mem_kind kind)
{
    switch (kind) {
    case GPU_MEM_METADATA:
        return WGPUBufferUsage_Uniform | WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst |
               WGPUBufferUsage_CopySrc;
    default:
        return WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst |
               WGPUBufferUsage_Indirect;
    }
}

static cubec_status make_buffer(wg_gpu *w, wg_mem *m)
{
    WGPUBufferDescriptor d = {.usage = usage_of(m->base.kind), .size = m->bytes};
    if (m->bytes > w->limits.maxBufferSize)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "webgpu: a buffer of %" PRIu64 " bytes is over the device's "
                           "maxBufferSize (%" PRIu64 ")",
                           m->bytes, (uint64_t)w->limits.maxBufferSize);
    m->buffer = w->p->DeviceCreateBuffer(w->device, &d);
    cubec_status err = wg_take_error(w, "wgpuDeviceCreateBuffer");
    if (!m->buffer && !err)
        err = status_make(CUBEC_OUT_OF_MEMORY, "webgpu: no buffer of %" PRIu64 " bytes", m->bytes);
    if (err && m->buffer) {
        w->p->BufferRelease(m->buffer);
        m->buffer = NULL;
    }
    if (err && cubec_status_code(err) == CUBEC_INTERNAL) {
        cubec_status oom = status_make(CUBEC_OUT_OF_MEMORY, "%s", cubec_status_message(err));
        cubec_status_free(err);
        err = oom;
    }
    return err;
}

/* A wg_mem of `kind` without its buffer yet; NULL when the host is out of memory. */
static wg_mem *new_mem(wg_gpu *w, gpu_mem_kind kind, uint64_t size)
{
    wg_mem *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->base.size = size;
    m->base.kind = kind;
    m->bytes = WG_ALIGN4(size ? size : 4);
    pthread_mutex_lock(&w->lock);
    m->id = ++w->next_mem_id;
    pthread_mutex_unlock(&w->lock);
    return m;
}

static cubec_status wg_mem_create(gpu *g, gpu_mem_kind kind, uint64_t size, gpu_mem **out)
{
    wg_gpu *w = wg_of(g);
    if (kind == GPU_MEM_HOST || kind == GPU_MEM_IMPORTED)
        return status_make(CUBEC_UNSUPPORTED,
                           "the webgpu backend has no host memory the device reads directly "
                           "(cubec_host_alloc, cubec_host_register)");
    wg_mem *m = new_mem(w, kind, size);
    if (!m) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (buffer)");
    cubec_status err = make_buffer(w, m);
    if (err) {
        free(m);
        return err;
    }
    *out = &m->base;
    return NULL;
}

static cubec_status wg_mem_create_unbacked(gpu *g, uint64_t size, gpu_mem **out)
{
    wg_mem *m = new_mem(wg_of(g), GPU_MEM_DEVICE, size);
    if (!m) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (buffer)");
    m->base.unbacked = 1;
    *out = &m->base;
    return NULL;
}

/* WebGPU has no memory apart from its buffer: backing a page is creating it. */
static cubec_status wg_mem_back(gpu *g, gpu_mem *gm)
{
    wg_mem *m = (wg_mem *)gm;
    if (!gm->unbacked) return NULL;
    RETURN_IF_ERROR(make_buffer(wg_of(g), m));
    gm->unbacked = 0;
    return NULL;
}

/* A host copy: WebGPU maps only asynchronously and never while the GPU may use the buffer, so
 * mappings are the seam's non-coherent kind (gpu.h), carried by flush and invalidate. */
static cubec_status wg_mem_map(gpu *g, gpu_mem *gm)
{
    (void)g;
    wg_mem *m = (wg_mem *)gm;
    if (gm->mapped) return NULL;
    if (gm->kind == GPU_MEM_DEVICE)
        return status_make(CUBEC_UNSUPPORTED, "the webgpu backend cannot map device pages");
    gm->mapped = aligned_alloc(64, (m->bytes + 63u) & ~(uint64_t)63u);
    if (!gm->mapped) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (mapping)");
    memset(gm->mapped, 0, m->bytes);
    gm->noncoherent = 1;
    return NULL;
}

static void wg_mem_flush(gpu *g, gpu_mem *gm, uint64_t offset, uint64_t size)
{
    wg_gpu *w = wg_of(g);
    wg_mem *m = (wg_mem *)gm;
    if (!gm->mapped || gm->kind == GPU_MEM_READBACK || offset >= m->bytes) return;
    uint64_t begin = offset & ~(uint64_t)3u;
    uint64_t end = WG_ALIGN4(size > m->bytes - offset ? m->bytes : offset + size);
    /* Queue writes land before the next submission's command buffers: the server flushes
     * before it submits the work that reads the bytes. */
    w->p->QueueWriteBuffer(w->queue, m->buffer, begin, gm->mapped + begin, (size_t)(end - begin));
}

typedef struct map_wait {
    int done;
    WGPUMapAsyncStatus status;
} map_wait;

static void on_map(WGPUMapAsyncStatus status, WGPUStringView message, void *user1, void *user2)
{
    (void)message;
    (void)user2;
    map_wait *mw = user1;
    mw->status = status;
    mw->done = 1;
}

/* Readback staging is a storage buffer (the byte-copy kernel writes it byte by byte; a copy
 * into a mappable buffer is whole words, which would overwrite the bytes of a neighbouring read
 * still pending in the staging ring); its range is copied into the device's map buffer, mapped,
 * and exactly its bytes taken into the host copy. */
static void wg_mem_invalidate(gpu *g, gpu_mem *gm, uint64_t offset, uint64_t size)
{
    wg_gpu *w = wg_of(g);
    const wg_procs *p = w->p;
    wg_mem *m = (wg_mem *)gm;
    if (!gm->mapped || gm->kind != GPU_MEM_READBACK || offset >= m->bytes || !size) return;
    if (size > gm->size - offset) size = gm->size - offset;
    uint64_t begin = offset & ~(uint64_t)3u, end = WG_ALIGN4(offset + size);
    pthread_mutex_lock(&w->queue_lock);
    WGPUBuffer map = NULL;
    cubec_status err = wg_map_buffer(w, end - begin, &map);
    WGPUCommandEncoderDescriptor ed = {0};
    WGPUCommandEncoder enc = err ? NULL : p->DeviceCreateCommandEncoder(w->device, &ed);
    if (enc) {
        p->CommandEncoderCopyBufferToBuffer(enc, m->buffer, begin, map, 0, end - begin);
        WGPUCommandBufferDescriptor cd = {0};
        WGPUCommandBuffer cb = p->CommandEncoderFinish(enc, &cd);
        p->CommandEncoderRelease(enc);
        if (cb) {
            p->QueueSubmit(w->queue, 1, &cb);
            p->CommandBufferRelease(cb);
        }
        map_wait mw = {0};
        WGPUBufferMapCallbackInfo ci = {
            .mode = WGPUCallbackMode_AllowSpontaneous, .callback = on_map, .userdata1 = &mw};
        p->BufferMapAsync(map, WGPUMapMode_Read, 0, (size_t)(end - begin), ci);
        while (!mw.done)
            poll_events(w, 1);
        const void *src = mw.status == WGPUMapAsyncStatus_Success
                              ? p->BufferGetConstMappedRange(map, 0, (size_t)(end - begin))
                              : NULL;
        if (src)
            memcpy(gm->mapped + offset, (const unsigned char *)src + (offset - begin),
                   (size_t)size);
        else
            LOG(LOG_ERROR, LOG_SYS_DEVICE,
                "webgpu: mapping %" PRIu64 " bytes for reading failed (%d)", end - begin,
                (int)mw.status);
        if (mw.status == WGPUMapAsyncStatus_Success) p->BufferUnmap(map);
    }
    pthread_mutex_unlock(&w->queue_lock);
    if (err) {
        LOG(LOG_ERROR, LOG_SYS_DEVICE, "webgpu: %s", cubec_status_message(err));
        cubec_status_free(err);
    }
}

static void wg_mem_destroy(gpu *g, gpu_mem *gm)
{
    wg_gpu *w = wg_of(g);
    wg_mem *m = (wg_mem *)gm;
    if (m->buffer) {
        /* Destroyed now (its memory goes back at once), released for the cached bind groups
         * that may still name it: the server frees pages only after the work using them. */
        w->p->BufferDestroy(m->buffer);
        w->p->BufferRelease(m->buffer);
    }
    free(gm->mapped);
    free(m);
}

/* A buffer of at least `bytes` of `usage` in *buf (grown by doubling, by replacement: command
 * buffers keep their own references to the one replaced). */
static cubec_status grow_buffer(wg_gpu *w, WGPUBufferUsage usage, uint64_t bytes, WGPUBuffer *buf,
                                uint64_t *buf_bytes, const char *what)
{
    if (*buf_bytes >= bytes) return NULL;
    uint64_t size = *buf_bytes ? *buf_bytes : 1u << 12;
    while (size < bytes)
        size *= 2;
    WGPUBufferDescriptor d = {.usage = usage, .size = size};
    WGPUBuffer b = w->p->DeviceCreateBuffer(w->device, &d);
    cubec_status err = wg_take_error(w, what);
    if (err || !b) {
        if (b) w->p->BufferRelease(b);
        return err ? err
                   : status_make(CUBEC_OUT_OF_MEMORY, "webgpu: no %s of %" PRIu64 " bytes", what,
                                 size);
    }
    if (*buf) w->p->BufferRelease(*buf);
    *buf = b;
    *buf_bytes = size;
    return NULL;
}

cubec_status wg_scratch(wg_gpu *w, uint64_t bytes, WGPUBuffer *out)
{
    RETURN_IF_ERROR(
        grow_buffer(w, WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst | WGPUBufferUsage_Storage,
                    bytes, &w->scratch, &w->scratch_bytes, "scratch buffer"));
    *out = w->scratch;
    return NULL;
}

cubec_status wg_map_buffer(wg_gpu *w, uint64_t bytes, WGPUBuffer *out)
{
    RETURN_IF_ERROR(grow_buffer(w, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, bytes,
                                &w->map, &w->map_bytes, "map buffer"));
    *out = w->map;
    return NULL;
}

cubec_status wg_indirect(wg_gpu *w, uint64_t bytes, WGPUBuffer *out)
{
    RETURN_IF_ERROR(grow_buffer(w, WGPUBufferUsage_Indirect | WGPUBufferUsage_CopyDst, bytes,
                                &w->indirect, &w->indirect_bytes, "indirect-arguments buffer"));
    *out = w->indirect;
    return NULL;
}

static void wg_mem_raw(gpu *g, gpu_mem *gm, uint64_t *out_handle, uint64_t *out_address)
{
    (void)g;
    *out_handle = (uint64_t)(uintptr_t)((wg_mem *)gm)->buffer;
    *out_address = 0; /* WebGPU has no device addresses */
}

/* --- Pipelines ----------------------------------------------------------------------------- */

static uint64_t next_pipeline_id(wg_gpu *w)
{
    pthread_mutex_lock(&w->lock);
    uint64_t id = ++w->next_mem_id;
    pthread_mutex_unlock(&w->lock);
    return id;
}

static void wg_pipeline_destroy(gpu *g, gpu_pipeline *pl)
{
    const wg_procs *p = wg_of(g)->p;
    if (!pl) return;
    if (pl->pipeline) p->ComputePipelineRelease(pl->pipeline);
    if (pl->layout) p->PipelineLayoutRelease(pl->layout);
    for (uint32_t i = 0; i < GPU_MAX_SETS; i++)
        if (pl->groups[i]) p->BindGroupLayoutRelease(pl->groups[i]);
    free(pl);
}

static cubec_status build_layouts(wg_gpu *w, const gpu_pipeline_desc *desc, gpu_pipeline *pl)
{
    const wg_procs *p = w->p;
    pl->set_count = desc->slots ? desc->set_count : 1;
    if (pl->set_count == 0) pl->set_count = 1;
    if (pl->set_count > GPU_MAX_SETS || desc->binding_count > GPU_MAX_BINDINGS)
        return status_make(CUBEC_INTERNAL, "webgpu: %" PRIu32 " sets, %" PRIu32 " bindings",
                           pl->set_count, desc->binding_count);
    pl->slot_count = desc->binding_count;
    for (uint32_t i = 0; i < desc->binding_count; i++)
        pl->slots[i] = desc->slots ? desc->slots[i]
                                   : (gpu_slot){.kind = GPU_SLOT_STORAGE, .binding = (uint8_t)i};
    for (uint32_t set = 0; set < pl->set_count; set++) {
        WGPUBindGroupLayoutEntry e[GPU_MAX_BINDINGS];
        uint32_t n = 0;
        for (uint32_t i = 0; i < pl->slot_count; i++) {
            const gpu_slot *s = &pl->slots[i];
            if (s->kind == GPU_SLOT_UNUSED || s->set != set) continue;
            /* read_write for every storage binding: see wg_gpu.h. */
            e[n++] = (WGPUBindGroupLayoutEntry){
                .binding = s->binding,
                .visibility = WGPUShaderStage_Compute,
                .buffer = {.type = s->kind == GPU_SLOT_UNIFORM ? WGPUBufferBindingType_Uniform
                                                               : WGPUBufferBindingType_Storage}};
        }
        if (set == 0 && desc->info_buffer)
            e[n++] = (WGPUBindGroupLayoutEntry){
                .binding = GPU_INFO_BINDING,
                .visibility = WGPUShaderStage_Compute,
                .buffer = {.type = desc->info_uniform ? WGPUBufferBindingType_Uniform
                                                      : WGPUBufferBindingType_Storage}};
        WGPUBindGroupLayoutDescriptor d = {.entryCount = n, .entries = e};
        pl->groups[set] = p->DeviceCreateBindGroupLayout(w->device, &d);
        if (!pl->groups[set]) return status_make(CUBEC_INTERNAL, "wgpuDeviceCreateBindGroupLayout");
    }
    WGPUPipelineLayoutDescriptor ld = {.bindGroupLayoutCount = pl->set_count,
                                       .bindGroupLayouts = pl->groups,
                                       .immediateSize = desc->push_size};
    pl->layout = p->DeviceCreatePipelineLayout(w->device, &ld);
    if (!pl->layout) return status_make(CUBEC_INTERNAL, "wgpuDeviceCreatePipelineLayout");
    return wg_take_error(w, "the pipeline's layout");
}

/* Creates the module and the pipeline of `source` (a chained WGSL or SPIR-V source). */
static cubec_status build_pipeline(wg_gpu *w, WGPUChainedStruct *source, const char *name,
                                   const char *entry, const gpu_spec_constant *spec,
                                   const double *spec_values, uint32_t spec_count,
                                   WGPUPipelineLayout layout, WGPUComputePipeline *out)
{
    const wg_procs *p = w->p;
    WGPUShaderModuleDescriptor md = {.nextInChain = source, .label = wg_str(name)};
    WGPUShaderModule module = p->DeviceCreateShaderModule(w->device, &md);
    cubec_status err = wg_take_error(w, "creating the shader module");
    if (!err && !module) err = status_make(CUBEC_INTERNAL, "wgpuDeviceCreateShaderModule");
    if (err) {
        if (module) p->ShaderModuleRelease(module);
        return status_make(CUBEC_INVALID_SPIRV, "kernel '%s': %s", name ? name : "?",
                           cubec_status_message(err));
    }
    /* Specialization constants are WGSL override constants, keyed by their id. */
    WGPUConstantEntry constants[GPU_MAX_SPEC_CONSTANTS];
    char keys[GPU_MAX_SPEC_CONSTANTS][12];
    for (uint32_t i = 0; i < spec_count && i < GPU_MAX_SPEC_CONSTANTS; i++) {
        snprintf(keys[i], sizeof keys[i], "%" PRIu32, spec[i].id);
        constants[i] = (WGPUConstantEntry){.key = wg_str(keys[i]), .value = spec_values[i]};
    }
    WGPUComputePipelineDescriptor pd = {.label = wg_str(name),
                                        .layout = layout,
                                        .compute = {.module = module,
                                                    .entryPoint = wg_str(entry),
                                                    .constantCount = spec_count,
                                                    .constants = constants}};
    *out = p->DeviceCreateComputePipeline(w->device, &pd);
    p->ShaderModuleRelease(module);
    err = wg_take_error(w, "creating the compute pipeline");
    if (!err && !*out) err = status_make(CUBEC_INTERNAL, "wgpuDeviceCreateComputePipeline");
    if (err) {
        if (*out) p->ComputePipelineRelease(*out);
        *out = NULL;
        cubec_status named = status_make(CUBEC_INVALID_SPIRV, "kernel '%s': %s", name ? name : "?",
                                         cubec_status_message(err));
        cubec_status_free(err);
        return named;
    }
    return NULL;
}

/* How a specialization constant's 32 bits read as the override constant WebGPU takes (a
 * double): its SPIR-V type, found by a walk of the module's words (OpDecorate SpecId, then the
 * OpSpecConstant* of that id and its OpTypeFloat / OpTypeInt / OpTypeBool). */
enum { SPEC_UINT, SPEC_INT, SPEC_FLOAT, SPEC_BOOL };

static int spec_kind(const uint32_t *w, size_t n, uint32_t spec_id)
{
    enum { DECORATE = 71, SPEC_ID = 1, TYPE_BOOL = 20, TYPE_INT = 21, TYPE_FLOAT = 22 };
    enum { SPEC_TRUE = 48, SPEC_FALSE = 49, SPEC_CONSTANT = 50 };
    uint32_t target = 0, type = 0;
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 5; i < n;) {
            uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
            if (!len || i + len > n) return SPEC_UINT;
            if (pass == 0 && op == DECORATE && len >= 4 && w[i + 2] == SPEC_ID &&
                w[i + 3] == spec_id)
                target = w[i + 1];
            if (pass == 1 && target && (op == SPEC_TRUE || op == SPEC_FALSE) && len >= 3 &&
                w[i + 2] == target)
                return SPEC_BOOL;
            if (pass == 1 && target && op == SPEC_CONSTANT && len >= 4 && w[i + 2] == target)
                type = w[i + 1];
            if (pass == 2 && type && w[i + 1] == type && len >= 3) {
                if (op == TYPE_FLOAT) return SPEC_FLOAT;
                if (op == TYPE_INT) return len >= 4 && w[i + 3] ? SPEC_INT : SPEC_UINT;
                if (op == TYPE_BOOL) return SPEC_BOOL;
            }
            i += len;
        }
    return SPEC_UINT;
}

/* The module with every NonWritable and NonReadable decoration left out, so that the
 * implementation's translation declares every storage buffer read_write as the layout does
 * (wgpu requires the two to match, and WebGPU refuses one buffer bound both read-only and
 * writable in one dispatch: two tensors of one pooled page would be). A malloc'ed copy. */
static uint32_t *strip_access(const uint32_t *w, size_t n, size_t *out_n)
{
    enum { DECORATE = 71, MEMBER_DECORATE = 72, NON_WRITABLE = 24, NON_READABLE = 25 };
    uint32_t *out = malloc(n * sizeof *out);
    if (!out) return NULL;
    size_t at = n < 5 ? n : 5;
    memcpy(out, w, at * sizeof *out);
    for (size_t i = at; i < n;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        if (!len || i + len > n) len = (uint32_t)(n - i); /* malformed: kept, naga refuses it */
        uint32_t decoration = op == DECORATE && len >= 3          ? w[i + 2]
                              : op == MEMBER_DECORATE && len >= 4 ? w[i + 3]
                                                                  : 0;
        if ((op == DECORATE || op == MEMBER_DECORATE) &&
            (decoration == NON_WRITABLE || decoration == NON_READABLE)) {
            i += len;
            continue;
        }
        memcpy(out + at, w + i, len * sizeof *out);
        at += len;
        i += len;
    }
    *out_n = at;
    return out;
}

static double spec_value(const gpu_pipeline_desc *desc, const gpu_spec_constant *c)
{
    if (!desc->spirv) return (double)c->value;
    switch (spec_kind(desc->spirv, desc->words, c->id)) {
    case SPEC_FLOAT: {
        float f;
        memcpy(&f, &c->value, sizeof f);
        return (double)f;
    }
    case SPEC_INT: return (double)(int32_t)c->value;
    case SPEC_BOOL: return c->value ? 1.0 : 0.0;
    default: return (double)c->value;
    }
}

static cubec_status wg_pipeline_create(gpu *g, const gpu_pipeline_desc *desc, gpu_pipeline **out)
{
    wg_gpu *w = wg_of(g);
    if (desc->resource_count)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': the webgpu backend binds no images or texel buffers",
                           desc->name ? desc->name : "?");
    if (desc->required_subgroup_size)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': the webgpu backend cannot require a subgroup size",
                           desc->name ? desc->name : "?");
    if (desc->push_size && (!w->immediates || desc->push_size > w->limits.maxImmediateSize))
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': %" PRIu32 " bytes of push constants; the device takes "
                           "%" PRIu32 " bytes of immediates",
                           desc->name ? desc->name : "?", desc->push_size,
                           w->immediates ? w->limits.maxImmediateSize : 0);
    gpu_pipeline *pl = calloc(1, sizeof *pl);
    if (!pl) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (pipeline)");
    pl->info_uniform = desc->info_uniform;
    pl->push_size = desc->push_size;
    pl->id = next_pipeline_id(w);
    cubec_status err = build_layouts(w, desc, pl);
    if (!err) {
        double values[GPU_MAX_SPEC_CONSTANTS];
        uint32_t spec_count =
            desc->spec_count < GPU_MAX_SPEC_CONSTANTS ? desc->spec_count : GPU_MAX_SPEC_CONSTANTS;
        for (uint32_t i = 0; i < spec_count; i++)
            values[i] = spec_value(desc, &desc->spec[i]);
        /* WGSL as it is; SPIR-V through the implementation's translation (naga). */
        WGPUShaderSourceWGSL wgsl = {.chain = {.sType = WGPUSType_ShaderSourceWGSL},
                                     .code = wg_str(desc->wgsl)};
        size_t words = 0;
        uint32_t *code = desc->wgsl ? NULL : strip_access(desc->spirv, desc->words, &words);
        if (!desc->wgsl && !code)
            err = status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (module)");
        WGPUShaderSourceSPIRV spirv = {.chain = {.sType = WGPUSType_ShaderSourceSPIRV},
                                       .codeSize = (uint32_t)words,
                                       .code = code};
        if (!err)
            err = build_pipeline(w, desc->wgsl ? &wgsl.chain : &spirv.chain, desc->name,
                                 desc->entry_point ? desc->entry_point : "main", desc->spec, values,
                                 spec_count, pl->layout, &pl->pipeline);
        free(code);
    }
    if (err) {
        wg_pipeline_destroy(g, pl);
        return err;
    }
    *out = pl;
    return NULL;
}

/* --- Command buffers ----------------------------------------------------------------------- */

static cubec_status wg_cmd_create(gpu *g, gpu_cmd_use use, uint32_t sets, gpu_cmd **out)
{
    (void)g;
    (void)use; /* both kinds are encoded at each submission */
    (void)sets;
    wg_cmd *c = calloc(1, sizeof *c);
    if (!c) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (command buffer)");
    *out = &c->base;
    return NULL;
}

static void wg_cmd_destroy(gpu *g, gpu_cmd *c)
{
    (void)g;
    if (!c) return;
    gpu_cmd_list_free(c);
    free(c);
}

static cubec_status wg_cmd_begin(gpu *g, gpu_cmd *c)
{
    (void)g;
    gpu_cmd_list_reset(c);
    ((wg_cmd *)c)->ended = 0;
    return NULL;
}

static cubec_status wg_cmd_end(gpu *g, gpu_cmd *c)
{
    (void)g;
    RETURN_IF_ERROR(gpu_cmd_list_status(c));
    ((wg_cmd *)c)->ended = 1;
    return NULL;
}

/* --- Queries: none yet (profiles use host time: caps.timestamps is 0) ---------------------- */

static cubec_status wg_queries_create(gpu *g, uint32_t count, gpu_queries **out)
{
    (void)g;
    (void)count;
    (void)out;
    return status_make(CUBEC_UNSUPPORTED, "the webgpu backend has no timestamp queries yet");
}

static void wg_queries_destroy(gpu *g, gpu_queries *q)
{
    (void)g;
    (void)q;
}

static void wg_queries_host_reset(gpu *g, gpu_queries *q, uint32_t first, uint32_t count)
{
    (void)g;
    (void)q;
    (void)first;
    (void)count;
}

static cubec_status wg_queries_read(gpu *g, gpu_queries *q, uint32_t first, uint32_t count,
                                    uint64_t *out_ticks)
{
    (void)g;
    (void)q;
    (void)first;
    (void)count;
    (void)out_ticks;
    return status_make(CUBEC_UNSUPPORTED, "the webgpu backend has no timestamp queries yet");
}

/* --- Submission and the timeline ------------------------------------------------------------ */

typedef struct wg_done {
    wg_gpu *w;
    uint64_t value;
} wg_done;

static void on_work_done(WGPUQueueWorkDoneStatus status, WGPUStringView message, void *user1,
                         void *user2)
{
    (void)message;
    (void)user2;
    wg_done *d = user1;
    wg_gpu *w = d->w;
    pthread_mutex_lock(&w->lock);
    /* A failed queue (device lost) completes nothing: the wait's limit reports it. */
    if (status == WGPUQueueWorkDoneStatus_Success && d->value > w->completed)
        w->completed = d->value;
    pthread_mutex_unlock(&w->lock);
    free(d);
}

static cubec_status wg_submit(gpu *g, const gpu_submit_item *items, uint32_t n)
{
    wg_gpu *w = wg_of(g);
    const wg_procs *p = w->p;
    for (uint32_t i = 0; i < n; i++)
        if (!((wg_cmd *)items[i].cmd)->ended)
            return status_make(CUBEC_INTERNAL, "webgpu: a command buffer submitted unended");
    pthread_mutex_lock(&w->queue_lock);
    cubec_status err = NULL;
    for (uint32_t i = 0; i < n && !err; i++) {
        WGPUCommandBuffer cb = NULL;
        err = wg_encode(w, (const wg_cmd *)items[i].cmd, &cb);
        if (err) break;
        wg_done *d = malloc(sizeof *d);
        if (!d) {
            p->CommandBufferRelease(cb);
            err = status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (submission)");
            break;
        }
        *d = (wg_done){w, items[i].signal};
        p->QueueSubmit(w->queue, 1, &cb);
        p->CommandBufferRelease(cb);
        pthread_mutex_lock(&w->lock);
        if (items[i].signal > w->submitted) w->submitted = items[i].signal;
        pthread_mutex_unlock(&w->lock);
        WGPUQueueWorkDoneCallbackInfo ci = {
            .mode = WGPUCallbackMode_AllowSpontaneous, .callback = on_work_done, .userdata1 = d};
        p->QueueOnSubmittedWorkDone(w->queue, ci);
        err = wg_take_error(w, "submitting");
    }
    pthread_mutex_unlock(&w->queue_lock);
    return err;
}

static cubec_status wg_timeline_value(gpu *g, uint64_t *out)
{
    wg_gpu *w = wg_of(g);
    poll_events(w, 0);
    pthread_mutex_lock(&w->lock);
    *out = w->completed;
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* A poll loop: wgpu-native 29's wgpuDevicePoll has no timeout, so a wait with a limit polls
 * without blocking and sleeps a little between polls, longer as it goes on. */
static cubec_status wg_timeline_wait(gpu *g, uint64_t value, uint64_t timeout_ns)
{
    wg_gpu *w = wg_of(g);
    uint64_t start = now_ns();
    unsigned sleep_us = 0;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        uint64_t reached = w->completed, submitted = w->submitted;
        pthread_mutex_unlock(&w->lock);
        if (reached >= value) return NULL;
        /* Without a limit, and with the value submitted, the implementation's own blocking
         * poll waits for it (and for what was submitted before it). */
        int block = !timeout_ns && submitted >= value && w->p->DevicePoll;
        poll_events(w, block);
        pthread_mutex_lock(&w->lock);
        reached = w->completed;
        pthread_mutex_unlock(&w->lock);
        if (reached >= value) return NULL;
        if (timeout_ns && now_ns() - start > timeout_ns)
            return status_make(CUBEC_TIMEOUT,
                               "webgpu: timeline value %" PRIu64 " not reached after %" PRIu64
                               " ms (reached %" PRIu64 ")",
                               value, timeout_ns / 1000000u, reached);
        if (!block) {
            usleep(sleep_us);
            if (sleep_us < 200) sleep_us += 10;
        }
    }
}

static cubec_status wg_timeline_signal(gpu *g, uint64_t value)
{
    wg_gpu *w = wg_of(g);
    pthread_mutex_lock(&w->lock);
    if (value > w->completed) w->completed = value;
    if (value > w->submitted) w->submitted = value;
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void wg_queue_idle(gpu *g)
{
    wg_gpu *w = wg_of(g);
    if (w->abandoned) return;
    pthread_mutex_lock(&w->lock);
    uint64_t submitted = w->submitted;
    pthread_mutex_unlock(&w->lock);
    cubec_status err = wg_timeline_wait(g, submitted, 0);
    if (err) cubec_status_free(err);
}

static void wg_abandon(gpu *g)
{
    wg_of(g)->abandoned = 1;
}

static int wg_calibrate(gpu *g, uint64_t *out_ticks, uint64_t *out_host_ns)
{
    (void)g;
    (void)out_ticks;
    (void)out_host_ns;
    return 0; /* WebGPU has no device clock to sample with the host's */
}

/* --- Images: none ---------------------------------------------------------------------------- */

static cubec_status wg_image_requirements(gpu *g, const gpu_image_desc *desc, uint64_t *out_size,
                                          uint64_t *out_alignment)
{
    (void)g;
    (void)desc;
    (void)out_size;
    (void)out_alignment;
    return status_make(CUBEC_UNSUPPORTED, "the webgpu backend has no images yet");
}

static cubec_status wg_image_create(gpu *g, const gpu_image_desc *desc, gpu_mem *m, uint64_t offset,
                                    gpu_image **out)
{
    (void)g;
    (void)desc;
    (void)m;
    (void)offset;
    (void)out;
    return status_make(CUBEC_UNSUPPORTED, "the webgpu backend has no images yet");
}

static void wg_image_destroy(gpu *g, gpu_image *im)
{
    (void)g;
    (void)im;
}

/* --- Opening -----------------------------------------------------------------------------------
 */

static void wg_gpu_destroy(gpu *g)
{
    wg_gpu *w = wg_of(g);
    const wg_procs *p = w->p;
    if (w->device && !w->abandoned) wg_queue_idle(g);
    wg_bind_cache_free(w);
    if (w->fill_pipeline) p->ComputePipelineRelease(w->fill_pipeline);
    if (w->fill_layout) p->BindGroupLayoutRelease(w->fill_layout);
    if (w->copy_pipeline) p->ComputePipelineRelease(w->copy_pipeline);
    if (w->copy_layout) p->BindGroupLayoutRelease(w->copy_layout);
    if (w->scratch) p->BufferRelease(w->scratch);
    if (w->indirect) p->BufferRelease(w->indirect);
    if (w->map) p->BufferRelease(w->map);
    if (w->queue) p->QueueRelease(w->queue);
    if (w->device && !w->abandoned) {
        /* Lets the last work-done callbacks run (they free their records). */
        poll_events(w, 1);
        p->DeviceRelease(w->device);
    }
    if (w->adapter) p->AdapterRelease(w->adapter);
    free(w->error);
    pthread_mutex_destroy(&w->lock);
    pthread_mutex_destroy(&w->queue_lock);
    free(w);
}

static const gpu_ops wg_ops = {.name = "webgpu",
                               .destroy = wg_gpu_destroy,
                               .mem_create = wg_mem_create,
                               .mem_create_unbacked = wg_mem_create_unbacked,
                               .mem_back = wg_mem_back,
                               .mem_map = wg_mem_map,
                               .mem_flush = wg_mem_flush,
                               .mem_invalidate = wg_mem_invalidate,
                               .mem_destroy = wg_mem_destroy,
                               .mem_raw = wg_mem_raw,
                               .pipeline_create = wg_pipeline_create,
                               .pipeline_destroy = wg_pipeline_destroy,
                               .cmd_create = wg_cmd_create,
                               .cmd_destroy = wg_cmd_destroy,
                               .cmd_begin = wg_cmd_begin,
                               .cmd_end = wg_cmd_end,
                               .queries_create = wg_queries_create,
                               .queries_destroy = wg_queries_destroy,
                               .queries_host_reset = wg_queries_host_reset,
                               .queries_read = wg_queries_read,
                               .submit = wg_submit,
                               .timeline_value = wg_timeline_value,
                               .timeline_wait = wg_timeline_wait,
                               .timeline_signal = wg_timeline_signal,
                               .queue_idle = wg_queue_idle,
                               .abandon = wg_abandon,
                               .calibrate = wg_calibrate,
                               .image_requirements = wg_image_requirements,
                               .image_create = wg_image_create,
                               .image_destroy = wg_image_destroy};

typedef struct adapter_wait {
    int done;
    WGPUAdapter adapter;
    WGPUDevice device;
    char message[256];
} adapter_wait;

static void copy_message(adapter_wait *aw, WGPUStringView m)
{
    size_t len = m.length == WGPU_STRLEN && m.data ? strlen(m.data) : m.length;
    snprintf(aw->message, sizeof aw->message, "%.*s", (int)len, m.data ? m.data : "");
}

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message,
                       void *user1, void *user2)
{
    (void)user2;
    adapter_wait *aw = user1;
    if (status == WGPURequestAdapterStatus_Success) aw->adapter = adapter;
    copy_message(aw, message);
    aw->done = 1;
}

static void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message,
                      void *user1, void *user2)
{
    (void)user2;
    adapter_wait *aw = user1;
    if (status == WGPURequestDeviceStatus_Success) aw->device = device;
    copy_message(aw, message);
    aw->done = 1;
}

/* The implementation's adapters (at most `cap`), each the caller's to release. */
static cubec_status list_adapters(const wg_procs *p, WGPUInstance instance, WGPUAdapter *out,
                                  uint32_t cap, uint32_t *out_count)
{
    *out_count = 0;
    if (p->InstanceEnumerateAdapters) {
        /* wgpu-native's primary backends (Vulkan, Metal, D3D12): its OpenGL adapter runs
         * compute through the same driver with fewer limits, and probing it needs a display. */
        struct {
            const WGPUChainedStruct *next;
            uint32_t backends; /* WGPUInstanceBackend (wgpu.h) */
        } options = {NULL, (1u << 0) | (1u << 2) | (1u << 3)};
        size_t n = p->InstanceEnumerateAdapters(instance, &options, NULL);
        if (n) {
            WGPUAdapter *all = calloc(n, sizeof(WGPUAdapter));
            if (!all) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (adapters)");
            p->InstanceEnumerateAdapters(instance, &options, all);
            for (size_t i = 0; i < n; i++) {
                if (*out_count < cap)
                    out[(*out_count)++] = all[i];
                else
                    p->AdapterRelease(all[i]);
            }
            free(all);
        }
        return NULL;
    }
    adapter_wait aw = {0};
    WGPURequestAdapterOptions o = {.featureLevel = WGPUFeatureLevel_Core};
    WGPURequestAdapterCallbackInfo ci = {
        .mode = WGPUCallbackMode_AllowSpontaneous, .callback = on_adapter, .userdata1 = &aw};
    p->InstanceRequestAdapter(instance, &o, ci);
    for (int i = 0; i < 100000 && !aw.done; i++)
        p->InstanceProcessEvents(instance);
    if (aw.adapter && cap) out[(*out_count)++] = aw.adapter;
    return NULL;
}

#define WG_MAX_ADAPTERS 16u

static cubec_device_type type_of(WGPUAdapterType t)
{
    switch (t) {
    case WGPUAdapterType_DiscreteGPU: return CUBEC_DEVICE_TYPE_DISCRETE;
    case WGPUAdapterType_IntegratedGPU: return CUBEC_DEVICE_TYPE_INTEGRATED;
    case WGPUAdapterType_CPU: return CUBEC_DEVICE_TYPE_CPU;
    default: return CUBEC_DEVICE_TYPE_OTHER;
    }
}

static const char *backend_of(WGPUBackendType b)
{
    switch (b) {
    case WGPUBackendType_Vulkan: return "Vulkan";
    case WGPUBackendType_Metal: return "Metal";
    case WGPUBackendType_D3D12: return "D3D12";
    case WGPUBackendType_D3D11: return "D3D11";
    case WGPUBackendType_OpenGL: return "OpenGL";
    case WGPUBackendType_OpenGLES: return "OpenGLES";
    default: return "other";
    }
}

static void view_copy(char *dst, size_t cap, WGPUStringView v)
{
    size_t len = v.length == WGPU_STRLEN && v.data ? strlen(v.data) : v.length;
    snprintf(dst, cap, "%.*s", (int)len, v.data ? v.data : "");
}

/* The info of an adapter, from its info and limits (api_version: the SPIR-V the server makes
 * for it). */
static void fill_info(const wg_procs *p, WGPUAdapter a, const WGPULimits *lim,
                      cubec_device_info *out)
{
    WGPUAdapterInfo ai = {0};
    p->AdapterGetInfo(a, &ai);
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    view_copy(out->name, sizeof out->name, ai.device);
    char desc[200];
    view_copy(desc, sizeof desc, ai.description);
    snprintf(out->driver, sizeof out->driver, "WebGPU (%s) on %s: %s", p->path,
             backend_of(ai.backendType), desc);
    out->vendor_id = ai.vendorID;
    out->device_id = ai.deviceID;
    out->api_version = GPU_VULKAN_API_VERSION;
    out->type = type_of(ai.adapterType);
    out->max_storage_buffer_range = lim->maxStorageBufferBindingSize;
    out->max_allocation_size = lim->maxBufferSize;
    out->max_push_constants_size = lim->maxImmediateSize;
    for (int i = 0; i < 3; i++)
        out->max_workgroup_count[i] = lim->maxComputeWorkgroupsPerDimension;
    out->max_workgroup_size[0] = lim->maxComputeWorkgroupSizeX;
    out->max_workgroup_size[1] = lim->maxComputeWorkgroupSizeY;
    out->max_workgroup_size[2] = lim->maxComputeWorkgroupSizeZ;
    out->max_workgroup_invocations = lim->maxComputeInvocationsPerWorkgroup;
    out->max_shared_memory_size = lim->maxComputeWorkgroupStorageSize;
    out->storage_offset_alignment = lim->minStorageBufferOffsetAlignment;
    out->uniform_offset_alignment = lim->minUniformBufferOffsetAlignment;
    out->subgroup_size = ai.subgroupMinSize ? ai.subgroupMinSize : 1;
    out->min_subgroup_size = out->max_subgroup_size = out->subgroup_size;
    /* WebGPU reports no heap: the host's memory on a CPU adapter, the largest buffer's size
     * four times elsewhere (a floor for the server's budget, said so in docs/device.md). */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    out->device_local_heap_size = out->type == CUBEC_DEVICE_TYPE_CPU && pages > 0 && page > 0
                                      ? (uint64_t)pages * (uint64_t)page
                                      : lim->maxBufferSize * 4u;
    out->timestamp_period_ns = 1.0;
    out->host_register_alignment = 4096; /* unused: nothing can be registered */
    p->AdapterInfoFreeMembers(ai);
}

/* The process's one instance, made at the first use and kept until the process exits: wgpu's
 * Vulkan backend loads the Vulkan loader and the driver with an instance and unloads them with
 * it, so an instance per enumeration or device loaded the driver again each time (lavapipe
 * leaks a little at each load, in a library then unloaded: LeakSanitizer cannot even name it). */
static pthread_once_t instance_once = PTHREAD_ONCE_INIT;
static const wg_procs *instance_procs;
static WGPUInstance instance;
static cubec_status instance_error;

static void make_instance(void)
{
    instance_error = wg_procs_get(&instance_procs);
    if (instance_error) return;
    /* wgpu-native's WGPUInstanceExtras (wgpu.h 29, restated: only its backends are set): the
     * primary backends (Vulkan, Metal, D3D12). Its OpenGL backend would run compute through
     * the same driver with fewer limits, and probing it wants a display (XDG_RUNTIME_DIR). A
     * Dawn ignores the unknown sType. The tail (the display handle) stays zero: none. */
    struct {
        WGPUChainedStruct chain;
        WGPUFlags backends, flags;
        uint32_t dx12_compiler, gles3_minor, gl_fence;
        WGPUStringView dxc_path;
        uint32_t dxc_max_model, dx12_presentation;
        const uint8_t *budget_creation, *budget_loss;
        unsigned char display_handle[64];
    } extras = {.chain = {.sType = (WGPUSType)0x00030004},
                .backends = (1u << 0) | (1u << 2) | (1u << 3),
                .flags = 1u << 24 /* WGPUInstanceFlag_Default: the build's own */};
    WGPUInstanceDescriptor d = {.nextInChain = instance_procs->DevicePoll ? &extras.chain : NULL};
    instance = instance_procs->CreateInstance(&d);
    if (!instance) instance_error = status_make(CUBEC_INTERNAL, "wgpuCreateInstance returned NULL");
}

static cubec_status open_instance(const wg_procs **out_p, WGPUInstance *out)
{
    pthread_once(&instance_once, make_instance);
    if (instance_error)
        return status_make(cubec_status_code(instance_error), "%s",
                           cubec_status_message(instance_error));
    *out_p = instance_procs;
    *out = instance;
    return NULL;
}

cubec_status wg_gpu_count(uint32_t *out_count)
{
    if (!out_count) return INVALID_ARG("wg_gpu_count: out_count is NULL");
    *out_count = 0;
    const wg_procs *p = NULL;
    WGPUInstance inst = NULL;
    cubec_status err = open_instance(&p, &inst);
    if (err) {
        /* No implementation installed: no WebGPU devices, not an error (cubec info). */
        if (cubec_status_code(err) == CUBEC_NOT_FOUND) {
            cubec_status_free(err);
            return NULL;
        }
        return err;
    }
    /* open_instance gives the table when it succeeds; said again for the analyzer, which
     * cannot follow pthread_once. */
    if (!p) return status_make(CUBEC_INTERNAL, "wg_gpu_count: no WebGPU procedure table");
    WGPUAdapter a[WG_MAX_ADAPTERS];
    uint32_t n = 0;
    err = list_adapters(p, inst, a, WG_MAX_ADAPTERS, &n);
    for (uint32_t i = 0; i < n; i++)
        p->AdapterRelease(a[i]);
    if (!err) *out_count = n;
    return err;
}

cubec_status wg_gpu_peek(uint32_t index, cubec_device_info *out)
{
    if (!out) return INVALID_ARG("wg_gpu_peek: out is NULL");
    const wg_procs *p = NULL;
    WGPUInstance inst = NULL;
    RETURN_IF_ERROR(open_instance(&p, &inst));
    if (!p) return status_make(CUBEC_INTERNAL, "wg_gpu_peek: no WebGPU procedure table");
    WGPUAdapter a[WG_MAX_ADAPTERS];
    uint32_t n = 0;
    cubec_status err = list_adapters(p, inst, a, WG_MAX_ADAPTERS, &n);
    if (!err && index >= n)
        err = INVALID_ARG("index: %" PRIu32 " is out of range, %" PRIu32 " WebGPU adapter(s)",
                          index, n);
    if (!err) {
        WGPULimits lim = {0};
        p->AdapterGetLimits(a[index], &lim);
        fill_info(p, a[index], &lim, out);
    }
    for (uint32_t i = 0; i < n; i++)
        p->AdapterRelease(a[i]);
    return err;
}

/* Picks the adapter the desc asks for; the others are released. */
static cubec_status choose_adapter(wg_gpu *w, const gpu_open_desc *desc)
{
    const wg_procs *p = w->p;
    WGPUAdapter a[WG_MAX_ADAPTERS];
    uint32_t n = 0;
    RETURN_IF_ERROR(list_adapters(p, w->instance, a, WG_MAX_ADAPTERS, &n));
    int chosen = -1;
    for (uint32_t i = 0; i < n && chosen < 0; i++) {
        if (desc->select_by_index) {
            if (i == desc->index) chosen = (int)i;
            continue;
        }
        if (!desc->name || !*desc->name) {
            chosen = (int)i;
            continue;
        }
        WGPUAdapterInfo ai = {0};
        p->AdapterGetInfo(a[i], &ai);
        char name[256];
        view_copy(name, sizeof name, ai.device);
        p->AdapterInfoFreeMembers(ai);
        if (strstr(name, desc->name)) chosen = (int)i;
    }
    for (uint32_t i = 0; i < n; i++)
        if ((int)i != chosen) p->AdapterRelease(a[i]);
    if (chosen < 0) {
        if (desc->select_by_index)
            return status_make(CUBEC_NOT_FOUND,
                               "device index %" PRIu32 ": %" PRIu32 " WebGPU adapter(s) present",
                               desc->index, n);
        return status_make(CUBEC_NOT_FOUND,
                           "no WebGPU adapter's name contains '%s' (%" PRIu32 " adapter(s))",
                           desc->name ? desc->name : "", n);
    }
    w->adapter = a[chosen];
    return NULL;
}

static cubec_status request_device(wg_gpu *w)
{
    const wg_procs *p = w->p;
    WGPULimits lim = {0};
    p->AdapterGetLimits(w->adapter, &lim);
    /* Immediates: wgpu-native's native feature (push constants); the standard header's
     * wgpuComputePassEncoderSetImmediates needs it enabled there. */
    const WGPUFeatureName immediates = (WGPUFeatureName)0x00030001;
    WGPUFeatureName features[1];
    size_t nf = 0;
    if (p->AdapterHasFeature(w->adapter, immediates) && lim.maxImmediateSize) {
        features[nf++] = immediates;
        w->immediates = 1;
    }
    if (!w->immediates) lim.maxImmediateSize = 0;
    adapter_wait aw = {0};
    WGPUDeviceDescriptor dd = {
        .requiredFeatureCount = nf,
        .requiredFeatures = features,
        .requiredLimits = &lim, /* everything the adapter has: 8 storage buffers is too few */
        .uncapturedErrorCallbackInfo = {.callback = on_uncaptured, .userdata1 = w}};
    WGPURequestDeviceCallbackInfo ci = {
        .mode = WGPUCallbackMode_AllowSpontaneous, .callback = on_device, .userdata1 = &aw};
    p->AdapterRequestDevice(w->adapter, &dd, ci);
    for (int i = 0; i < 100000 && !aw.done; i++)
        p->InstanceProcessEvents(w->instance);
    if (!aw.device)
        return status_make(CUBEC_UNSUPPORTED, "webgpu: the adapter gave no device: %s", aw.message);
    w->device = aw.device;
    p->DeviceGetLimits(w->device, &w->limits);
    w->queue = p->DeviceGetQueue(w->device);
    return NULL;
}

/* One of the backend's own WGSL kernels: `buffers` storage bindings and 16 bytes of
 * immediates. Without it, what it serves is refused by name (logged here). */
static void make_own_kernel(wg_gpu *w, const char *name, const char *wgsl, uint32_t buffers,
                            WGPUBindGroupLayout *out_layout, WGPUComputePipeline *out)
{
    const wg_procs *p = w->p;
    if (!w->immediates || w->limits.maxImmediateSize < 16) return;
    WGPUBindGroupLayoutEntry e[2];
    for (uint32_t i = 0; i < buffers && i < 2; i++)
        e[i] = (WGPUBindGroupLayoutEntry){.binding = i,
                                          .visibility = WGPUShaderStage_Compute,
                                          .buffer = {.type = WGPUBufferBindingType_Storage}};
    WGPUBindGroupLayoutDescriptor d = {.entryCount = buffers, .entries = e};
    *out_layout = p->DeviceCreateBindGroupLayout(w->device, &d);
    WGPUPipelineLayoutDescriptor ld = {
        .bindGroupLayoutCount = 1, .bindGroupLayouts = out_layout, .immediateSize = 16};
    WGPUPipelineLayout layout = p->DeviceCreatePipelineLayout(w->device, &ld);
    WGPUShaderSourceWGSL src = {.chain = {.sType = WGPUSType_ShaderSourceWGSL},
                                .code = wg_str(wgsl)};
    cubec_status err = build_pipeline(w, &src.chain, name, "main", NULL, NULL, 0, layout, out);
    p->PipelineLayoutRelease(layout);
    if (err) {
        LOG(LOG_WARN, LOG_SYS_DEVICE, "webgpu: no kernel %s (%s)", name, cubec_status_message(err));
        cubec_status_free(err);
    }
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

cubec_status wg_gpu_open(const gpu_open_desc *desc, gpu **out)
{
    if (!out) return INVALID_ARG("wg_gpu_open: out is NULL");
    *out = NULL;
    gpu_open_desc defaults = {0};
    if (!desc) desc = &defaults;
    wg_gpu *w = calloc(1, sizeof *w);
    if (!w) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (device)");
    pthread_mutex_init(&w->lock, NULL);
    pthread_mutex_init(&w->queue_lock, NULL);
    gpu *g = &w->base;
    g->ops = &wg_ops;
    cubec_status err = open_instance(&w->p, &w->instance);
    if (!err) err = choose_adapter(w, desc);
    if (!err) err = request_device(w);
    if (err) {
        wg_gpu_destroy(g);
        return err;
    }
    fill_info(w->p, w->adapter, &w->limits, &g->info);
    make_own_kernel(w, "cubec.webgpu.fill", fill_wgsl, 1, &w->fill_layout, &w->fill_pipeline);
    make_own_kernel(w, "cubec.webgpu.copy_bytes", copy_wgsl, 2, &w->copy_layout, &w->copy_pipeline);
    g->info.features = 0; /* no optional shader feature is enabled yet */
    g->features.enabled = 0;
    g->features.disabled = desc->disabled_features;
    g->caps =
        (gpu_caps){.unified = 0,
                   .push_descriptors = 0,
                   .timestamps = 0, /* profiles are host-measured (CUBEC_TIMING_SYSTEM), said so */
                   .deferred_recording = 1,
                   .host_import_alignment = 0,
                   .uniform_info = 0,
                   .metadata_alignment = max_u64(w->limits.minStorageBufferOffsetAlignment,
                                                 w->limits.minUniformBufferOffsetAlignment),
                   .max_uniform_range = w->limits.maxUniformBufferBindingSize,
                   .uniform_offset_alignment = w->limits.minUniformBufferOffsetAlignment,
                   .metadata_device_local = 0,
                   .runs_kernels = 1,
                   .wgsl = 1};
    g->info.unified_memory = 0;
    g->info.push_descriptors = 0;
    *out = g;
    return NULL;
}
