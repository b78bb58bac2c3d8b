/* The WebGPU backend's timestamp queries: which timestamps the device can write (chosen at
 * device creation), the seam's query pools as WebGPU query sets, and their reading (resolved
 * into a buffer, copied to the map buffer and mapped). Where the command list's timestamps are
 * placed in the passes is wg_encode.c's.
 *
 * Why a read resolves then: WebGPU has no vkGetQueryPoolResults; results reach the host only
 * through wgpuCommandEncoderResolveQuerySet into a buffer. Resolving at read time resolves
 * exactly the queries the server reads, which the work it waited for wrote (wgpu-native loses
 * the device, or stalls for seconds, on a resolve of a query never written), at the cost of one
 * submission per read, as reads of memory already take (wg_mem_invalidate). */
#include "gpu/webgpu/wg_internal.h"

#include "base/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* wgpu-native's features for timestamps outside pass boundaries (wgpu.h). */
#define WG_FEATURE_TS_INSIDE_ENCODERS ((WGPUFeatureName)0x00030024)
#define WG_FEATURE_TS_INSIDE_PASSES ((WGPUFeatureName)0x00030025)

/* --- The device's timestamps ------------------------------------------------------------- */

static const char *const mode_names[] = {"off", "boundaries", "encoders", "passes"};

cubec_status wg_timestamp_features(wg_gpu *w, WGPUFeatureName *features, size_t *count)
{
    const wg_procs *p = w->p;
    wg_timestamps mode = WG_TS_NONE;
    if (p->AdapterHasFeature(w->adapter, WGPUFeatureName_TimestampQuery)) {
        mode = WG_TS_PASS_BOUNDARIES;
        if (p->AdapterHasFeature(w->adapter, WG_FEATURE_TS_INSIDE_ENCODERS)) {
            mode = WG_TS_ENCODERS;
            if (p->ComputePassEncoderWriteTimestamp &&
                p->AdapterHasFeature(w->adapter, WG_FEATURE_TS_INSIDE_PASSES))
                mode = WG_TS_PASSES;
        }
    }
    /* A cap on the placement, so that every path can be tested where the implementation has
     * the richest (lavapipe through wgpu-native has all three); never a way to get more. */
    const char *cap = getenv("CUBEC_WEBGPU_TIMESTAMPS");
    if (cap && *cap) {
        int found = -1;
        for (int i = 0; i < (int)(sizeof mode_names / sizeof *mode_names); i++)
            if (strcmp(cap, mode_names[i]) == 0) found = i;
        if (found < 0)
            return INVALID_ARG("CUBEC_WEBGPU_TIMESTAMPS: '%s' is not one of off, boundaries, "
                               "encoders, passes",
                               cap);
        if ((wg_timestamps)found < mode) mode = (wg_timestamps)found;
    }
    if (mode >= WG_TS_PASS_BOUNDARIES) features[(*count)++] = WGPUFeatureName_TimestampQuery;
    if (mode >= WG_TS_ENCODERS) features[(*count)++] = WG_FEATURE_TS_INSIDE_ENCODERS;
    if (mode >= WG_TS_PASSES) features[(*count)++] = WG_FEATURE_TS_INSIDE_PASSES;
    w->timestamps = mode;
    LOG(LOG_DEBUG, LOG_SYS_DEVICE, "webgpu: timestamps: %s", mode_names[mode]);
    return NULL;
}

double wg_timestamp_period(const wg_gpu *w)
{
    /* webgpu.h resolves nanoseconds; wgpu-native resolves the driver's ticks unless its
     * instance normalizes them, and says how long one is. */
    if (w->timestamps == WG_TS_NONE || !w->p->QueueGetTimestampPeriod || !w->queue) return 1.0;
    float period = w->p->QueueGetTimestampPeriod(w->queue);
    return period > 0 ? (double)period : 1.0;
}

/* WebGPU has no clock to sample with the host's (calibrated_clock is 0): the server takes the
 * offset from the first timestamps it reads back (server/device_clock.c). */
int wg_calibrate(gpu *g, uint64_t *out_ticks, uint64_t *out_host_ns)
{
    (void)g;
    (void)out_ticks;
    (void)out_host_ns;
    return 0;
}

/* --- Query pools ----------------------------------------------------------------------------- */

cubec_status wg_queries_create(gpu *g, uint32_t count, gpu_queries **out)
{
    wg_gpu *w = wg_of(g);
    const wg_procs *p = w->p;
    *out = NULL;
    if (w->timestamps == WG_TS_NONE)
        return status_make(CUBEC_UNSUPPORTED,
                           "webgpu: the device writes no timestamps (no TimestampQuery)");
    if (!count) return status_make(CUBEC_INTERNAL, "webgpu: a query pool of 0 queries");
    gpu_queries *q = calloc(1, sizeof *q);
    if (q) {
        q->set_count = (count + WG_QUERIES_PER_SET - 1) / WG_QUERIES_PER_SET;
        q->sets = calloc(q->set_count, sizeof(WGPUQuerySet));
    }
    if (!q || !q->sets) {
        free(q);
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (queries)");
    }
    q->count = count;
    cubec_status err = NULL;
    for (uint32_t i = 0; i < q->set_count && !err; i++) {
        uint32_t n = count - i * WG_QUERIES_PER_SET;
        WGPUQuerySetDescriptor d = {.type = WGPUQueryType_Timestamp,
                                    .count = n < WG_QUERIES_PER_SET ? n : WG_QUERIES_PER_SET};
        q->sets[i] = p->DeviceCreateQuerySet(w->device, &d);
        if (!q->sets[i])
            err = status_make(CUBEC_INTERNAL, "wgpuDeviceCreateQuerySet returned NULL");
    }
    if (!err) {
        /* A read resolves each set's part at a 256-byte boundary of its own. */
        q->resolve_bytes = (uint64_t)count * 8u + (uint64_t)256u * q->set_count;
        WGPUBufferDescriptor bd = {.usage = WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc,
                                   .size = q->resolve_bytes};
        q->resolve = p->DeviceCreateBuffer(w->device, &bd);
        if (!q->resolve) err = status_make(CUBEC_INTERNAL, "wgpuDeviceCreateBuffer (resolve)");
    }
    if (!err) err = wg_take_error(w, "creating a query set");
    if (err) {
        wg_queries_destroy(g, q);
        return err;
    }
    *out = q;
    return NULL;
}

void wg_queries_destroy(gpu *g, gpu_queries *q)
{
    if (!q) return;
    const wg_procs *p = wg_of(g)->p;
    for (uint32_t i = 0; i < q->set_count; i++)
        if (q->sets[i]) {
            /* Released, not destroyed: a command buffer still pending keeps its reference. */
            p->QuerySetRelease(q->sets[i]);
        }
    if (q->resolve) p->BufferRelease(q->resolve);
    free(q->sets);
    free(q);
}

void wg_queries_host_reset(gpu *g, gpu_queries *q, uint32_t first, uint32_t count)
{
    /* WebGPU queries need no reset: a write replaces the value. */
    (void)g;
    (void)q;
    (void)first;
    (void)count;
}

/* One set's part of a read: `n` queries from `index` of `set`, resolved at `at` of the resolve
 * buffer, going to query `out` of the caller's array. */
typedef struct read_part {
    WGPUQuerySet set;
    uint32_t index, n, out;
    uint64_t at;
} read_part;

/* Encodes, submits and maps a read of `parts` (under queue_lock). The resolve and the copy out
 * of its buffer go in two command buffers of one submission: within one encoder wgpu-native's
 * Vulkan backend has read a resolve's destination before the resolve landed (gfx-rs/wgpu#6406). */
static cubec_status read_parts(wg_gpu *w, gpu_queries *q, const read_part *parts, uint32_t nparts,
                               uint32_t count, uint64_t *out_ticks)
{
    const wg_procs *p = w->p;
    WGPUBuffer map = NULL;
    RETURN_IF_ERROR(wg_map_buffer(w, (uint64_t)count * 8u, &map));
    WGPUCommandEncoderDescriptor ed = {0};
    WGPUCommandBufferDescriptor cd = {0};
    WGPUCommandBuffer cbs[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        WGPUCommandEncoder enc = p->DeviceCreateCommandEncoder(w->device, &ed);
        if (!enc) break;
        for (uint32_t i = 0; i < nparts; i++) {
            const read_part *r = &parts[i];
            if (k == 0)
                p->CommandEncoderResolveQuerySet(enc, r->set, r->index, r->n, q->resolve, r->at);
            else
                p->CommandEncoderCopyBufferToBuffer(enc, q->resolve, r->at, map,
                                                    (uint64_t)r->out * 8u, (uint64_t)r->n * 8u);
        }
        cbs[k] = p->CommandEncoderFinish(enc, &cd);
        p->CommandEncoderRelease(enc);
    }
    cubec_status err = NULL;
    if (cbs[0] && cbs[1])
        p->QueueSubmit(w->queue, 2, cbs);
    else
        err = status_make(CUBEC_INTERNAL, "webgpu: encoding a read of %" PRIu32 " queries", count);
    for (int k = 0; k < 2; k++)
        if (cbs[k]) p->CommandBufferRelease(cbs[k]);
    if (!err) err = wg_take_error(w, "resolving queries");
    if (err) return err;
    size_t bytes = (size_t)count * 8u;
    int failed = wg_map_read(w, map, bytes, 0, out_ticks, bytes, 0);
    if (failed)
        return status_make(CUBEC_DEVICE_LOST,
                           "webgpu: mapping %zu bytes of timestamps for reading failed (status %d)",
                           bytes, failed);
    return NULL;
}

cubec_status wg_queries_read(gpu *g, gpu_queries *q, uint32_t first, uint32_t count,
                             uint64_t *out_ticks)
{
    wg_gpu *w = wg_of(g);
    if (!count) return NULL;
    if (first > q->count || count > q->count - first)
        return status_make(CUBEC_INTERNAL,
                           "webgpu: queries %" PRIu32 "..%" PRIu32 " of a pool of %" PRIu32, first,
                           first + count - 1, q->count);
    read_part stack[4];
    uint32_t nparts = (first + count - 1) / WG_QUERIES_PER_SET - first / WG_QUERIES_PER_SET + 1;
    read_part *parts = nparts <= 4 ? stack : calloc(nparts, sizeof *parts);
    if (!parts) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (query read)");
    uint64_t at = 0;
    for (uint32_t i = 0, query = first; i < nparts; i++) {
        uint32_t index = 0;
        WGPUQuerySet set = wg_query_set(q, query, &index);
        uint32_t n = WG_QUERIES_PER_SET - index;
        if (n > first + count - query) n = first + count - query;
        parts[i] = (read_part){set, index, n, query - first, at};
        at = (at + (uint64_t)n * 8u + 255u) & ~(uint64_t)255u; /* resolves land at 256 bytes */
        query += n;
    }
    pthread_mutex_lock(&w->queue_lock);
    cubec_status err = read_parts(w, q, parts, nparts, count, out_ticks);
    pthread_mutex_unlock(&w->queue_lock);
    if (parts != stack) free(parts);
    return err;
}
