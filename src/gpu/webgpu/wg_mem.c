/* The WebGPU backend's memory: one WGPUBuffer per page, host copies flushed by queue writes,
 * reads mapped through a MAP_READ buffer, and the backend's own scratch buffers. */
#include "gpu/webgpu/wg_internal.h"

#include "base/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

cubec_status wg_mem_create(gpu *g, gpu_mem_kind kind, uint64_t size, gpu_mem **out)
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

cubec_status wg_mem_create_unbacked(gpu *g, uint64_t size, gpu_mem **out)
{
    wg_mem *m = new_mem(wg_of(g), GPU_MEM_DEVICE, size);
    if (!m) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (buffer)");
    m->base.unbacked = 1;
    *out = &m->base;
    return NULL;
}

/* WebGPU has no memory apart from its buffer: backing a page is creating it. */
cubec_status wg_mem_back(gpu *g, gpu_mem *gm)
{
    wg_mem *m = (wg_mem *)gm;
    if (!gm->unbacked) return NULL;
    RETURN_IF_ERROR(make_buffer(wg_of(g), m));
    gm->unbacked = 0;
    return NULL;
}

/* A host copy: WebGPU maps only asynchronously and never while the GPU may use the buffer, so
 * mappings are the seam's non-coherent kind (gpu.h), carried by flush and invalidate. */
cubec_status wg_mem_map(gpu *g, gpu_mem *gm)
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

void wg_mem_flush(gpu *g, gpu_mem *gm, uint64_t offset, uint64_t size)
{
    wg_gpu *w = wg_of(g);
    wg_mem *m = (wg_mem *)gm;
    if (!gm->mapped || gm->kind == GPU_MEM_READBACK || offset >= m->bytes) return;
    uint64_t begin = offset & ~(uint64_t)3u;
    uint64_t end = WG_ALIGN4(size > m->bytes - offset ? m->bytes : offset + size);
    /* Queue writes land before the next submission's command buffers: the server flushes
     * before it submits the work that reads the bytes. Under queue_lock, never beside a
     * submission: wgpu zero-fills the parts of a buffer no write has reached yet when it submits
     * a command buffer that binds them (the byte-copy kernel's window runs to the buffer's end),
     * and it decides which parts those are before it takes the queue's pending writes. A write
     * made in between was zeroed after it landed (an upload ring's next range, read back as
     * zeros under load). */
    pthread_mutex_lock(&w->queue_lock);
    w->p->QueueWriteBuffer(w->queue, m->buffer, begin, gm->mapped + begin, (size_t)(end - begin));
    pthread_mutex_unlock(&w->queue_lock);
}

/* Chunks of a direct write: wgpu stages each queue write in memory of its own until the GPU has
 * taken it, so a large write goes in pieces, each handed to the GPU (an empty submission) before
 * the next is staged: what wgpu holds stays bounded whatever the write's size. The pieces are
 * small because a large queue write is slow: write.h2d (64 MiB) on lavapipe gave 3.4 GB/s in one
 * piece, 4.7 in 32 MiB pieces, 6.4 in 16, 7.2 in 8, 7.4-7.8 in 4 and 6.4 in 2, and 3.4 again in
 * 4 MiB pieces submitted only every 64 MiB; wgpu used directly on the H200 writes 64 MiB at 9.7
 * GB/s and 256 MiB at 3.7. Staging memory that wgpu reuses only while its writes stay small would
 * explain it. 8 MiB keeps the empty submissions few where each costs more. */
#define WG_WRITE_CHUNK (8ull << 20)

cubec_status wg_mem_write(gpu *g, gpu_mem *gm, uint64_t offset, const void *src, uint64_t size)
{
    wg_gpu *w = wg_of(g);
    wg_mem *m = (wg_mem *)gm;
    if (gm->kind != GPU_MEM_DEVICE || !m->buffer || (offset | size) & 3u || offset > m->bytes ||
        size > m->bytes - offset)
        return status_make(CUBEC_INTERNAL,
                           "wg_mem_write: [%" PRIu64 ", +%" PRIu64 ") of a %" PRIu64
                           "-byte page of kind %d is not a whole-word device range",
                           offset, size, m->bytes, (int)gm->kind);
    const unsigned char *from = src;
    /* Under queue_lock, as wg_mem_flush's writes: never beside a submission. */
    pthread_mutex_lock(&w->queue_lock);
    for (uint64_t done = 0; done < size;) {
        uint64_t n = size - done < WG_WRITE_CHUNK ? size - done : WG_WRITE_CHUNK;
        w->p->QueueWriteBuffer(w->queue, m->buffer, offset + done, from + done, (size_t)n);
        done += n;
        if (done < size) w->p->QueueSubmit(w->queue, 0, NULL);
    }
    pthread_mutex_unlock(&w->queue_lock);
    return wg_take_error(w, "queue write");
}

/* Copies [offset, +size) of `buffer` into `dst` through the device's map buffer: a copy of the
 * whole words around it, submitted behind everything submitted before, mapped and exactly its
 * bytes copied out. Under queue_lock. */
static cubec_status read_through_map(wg_gpu *w, WGPUBuffer buffer, uint64_t offset, void *dst,
                                     uint64_t size, uint64_t timeout_ns)
{
    const wg_procs *p = w->p;
    uint64_t begin = offset & ~(uint64_t)3u, end = WG_ALIGN4(offset + size);
    WGPUBuffer map = NULL;
    RETURN_IF_ERROR(wg_map_buffer(w, end - begin, &map));
    WGPUCommandEncoderDescriptor ed = {0};
    WGPUCommandEncoder enc = p->DeviceCreateCommandEncoder(w->device, &ed);
    WGPUCommandBuffer cb = NULL;
    if (enc) {
        p->CommandEncoderCopyBufferToBuffer(enc, buffer, begin, map, 0, end - begin);
        WGPUCommandBufferDescriptor cd = {0};
        cb = p->CommandEncoderFinish(enc, &cd);
        p->CommandEncoderRelease(enc);
    }
    if (cb) {
        p->QueueSubmit(w->queue, 1, &cb);
        p->CommandBufferRelease(cb);
    }
    RETURN_IF_ERROR(wg_take_error(w, "copying a read into the map buffer"));
    if (!cb)
        return status_make(CUBEC_INTERNAL,
                           "webgpu: no command buffer for a read of %" PRIu64 " bytes", size);
    int failed = wg_map_read(w, map, (size_t)(end - begin), (size_t)(offset - begin), dst,
                             (size_t)size, timeout_ns);
    if (failed == WG_MAP_TIMED_OUT)
        return status_make(CUBEC_TIMEOUT,
                           "webgpu: a read of %" PRIu64 " bytes was not mapped within %.3g s", size,
                           (double)timeout_ns / 1e9);
    if (failed == WG_MAP_NO_MEMORY)
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (a read's map)");
    if (failed)
        return status_make(CUBEC_DEVICE_LOST,
                           "webgpu: mapping %" PRIu64 " bytes for reading failed (status %d)",
                           end - begin, failed);
    return NULL;
}

/* Readback staging is a storage buffer (the byte-copy kernel writes it byte by byte; a copy
 * into a mappable buffer is whole words, which would overwrite the bytes of a neighbouring read
 * still pending in the staging ring); its range is copied into the device's map buffer, mapped,
 * and exactly its bytes taken into the host copy. */
void wg_mem_invalidate(gpu *g, gpu_mem *gm, uint64_t offset, uint64_t size)
{
    wg_gpu *w = wg_of(g);
    wg_mem *m = (wg_mem *)gm;
    if (!gm->mapped || gm->kind != GPU_MEM_READBACK || offset >= m->bytes || !size) return;
    if (size > gm->size - offset) size = gm->size - offset;
    pthread_mutex_lock(&w->queue_lock);
    cubec_status err = read_through_map(w, m->buffer, offset, gm->mapped + offset, size, 0);
    pthread_mutex_unlock(&w->queue_lock);
    if (err) {
        LOG(LOG_ERROR, LOG_SYS_DEVICE, "webgpu: %s", cubec_status_message(err));
        cubec_status_free(err);
    }
}

/* A direct read maps this much at most at a time: the map buffer stays this size whatever the
 * read's (wgpu keeps a MAP_READ buffer in host memory on a discrete GPU). */
#define WG_READ_CHUNK (64ull << 20)

cubec_status wg_mem_read(gpu *g, gpu_mem *gm, uint64_t offset, void *dst, uint64_t size,
                         uint64_t timeout_ns)
{
    wg_gpu *w = wg_of(g);
    wg_mem *m = (wg_mem *)gm;
    if (gm->kind != GPU_MEM_DEVICE || !m->buffer || offset > gm->size || size > gm->size - offset)
        return status_make(CUBEC_INTERNAL,
                           "wg_mem_read: [%" PRIu64 ", +%" PRIu64 ") of a %" PRIu64
                           "-byte page of kind %d is not a device range",
                           offset, size, gm->size, (int)gm->kind);
    unsigned char *to = dst;
    uint64_t start = wg_now_ns();
    cubec_status err = NULL;
    atomic_fetch_add(&w->reads_begun, 1);
    pthread_mutex_lock(&w->queue_lock);
    for (uint64_t done = 0; done < size && !err;) {
        uint64_t at = offset + done;
        /* Chunks end on whole words, so that each copies WG_READ_CHUNK bytes at most. */
        uint64_t n = WG_READ_CHUNK - (at & 3u);
        if (n > size - done) n = size - done;
        uint64_t left = 0; /* the limit is the read's, not each chunk's */
        if (timeout_ns) {
            uint64_t spent = wg_now_ns() - start;
            left = spent < timeout_ns ? timeout_ns - spent : 1;
        }
        err = read_through_map(w, m->buffer, at, to + done, n, left);
        done += n;
    }
    pthread_mutex_unlock(&w->queue_lock);
    return err;
}

void wg_mem_destroy(gpu *g, gpu_mem *gm)
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

void wg_mem_raw(gpu *g, gpu_mem *gm, uint64_t *out_handle, uint64_t *out_address)
{
    (void)g;
    *out_handle = (uint64_t)(uintptr_t)((wg_mem *)gm)->buffer;
    *out_address = 0; /* WebGPU has no device addresses */
}
