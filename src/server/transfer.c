/* Host <-> device transfers.
 *
 * Unified memory (lavapipe, integrated GPUs): pages are mapped, so a write waits only for GPU work
 * that still uses the buffer and then copies straight into it; a read waits for the last GPU write
 * and copies straight out. No staging copy.
 *
 * Discrete GPUs: through persistently mapped staging rings, in chunks, so the host copy of one
 * chunk overlaps the DMA of the previous one. Writes are recorded in stream order and return as
 * soon as the bytes are in staging. When the host side lies within registered or pinned memory
 * (server/host_memory.c) the GPU copies it directly instead: one DMA, no memcpy. */
#include "server/transfer.h"
#include "base/clock.h"
#include "server/buffers.h"
#include "server/device.h"
#include "server/failures.h"
#include "server/graph.h"
#include "server/hazards.h"
#include "server/health.h"
#include "server/host_memory.h"
#include "server/host_ring.h"
#include "server/launch_timing.h"
#include "server/relocate.h"
#include "server/run_mode.h"
#include "server/streams.h"
#include "server/submission.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cubec_event_s {
    cubec_device *device;
    alloc_obj *alloc;         /* kept alive until the event is freed */
    uint64_t value;           /* timeline value that completes the copy */
    const unsigned char *src; /* mapped bytes to copy from when done */
    unsigned char *dst;
    uint64_t size;
    gpu_mem *staging; /* discrete: a private readback buffer */
    int done;
    cubec_status result;
    /* While `src` is to be copied into `dst`: in the device's list of such reads (host_memory's
     * deferred_reads), so that memory of the program's that cubec hands back or lets go of is
     * written before, never after. */
    struct cubec_event_s *next_deferred, **prev_deferred;
    /* For the trace: when the read started, on which stream, of which buffer. */
    uint64_t trace_begin_ns, stream, buffer_number;
};

static void touch(cubec_device *d, buffer_obj *b, int write)
{
    b->alloc->last_use = d->sub->next_value;
    if (write) b->alloc->last_write = d->sub->next_value;
}

/* What a host transfer of `a` from `slot` waits for, given `value`, the last batch that used it
 * as the transfer needs: for a guarded allocation (cubec_buffer_raw), also the stream's last
 * work, since any launch may have reached the bytes through their device address, which names
 * them in no binding (cubec.h: a transfer comes after all earlier work on its stream); and the
 * stream's last wait for another API's work (cubec_stream_wait_cuda), whose writes no range
 * names either. */
static uint64_t transfer_after(const cubec_device *d, uint32_t slot, const alloc_obj *a,
                               uint64_t value)
{
    const slot_state *ss = &d->streams->slots[slot];
    uint64_t stream = a->raw_guards ? ss->last_value : 0;
    if (ss->inbound_after > stream) stream = ss->inbound_after;
    return stream > value ? stream : value;
}

/* Records the barrier in front of a copy of `range` of `a`: for a guarded allocation one after
 * every earlier command, whose accesses through the device address no hazard range holds. */
static void copy_hazards(cubec_device *d, gpu_cmd *cmd, const alloc_obj *a,
                         const hazard_range *range)
{
    if (a->raw_guards) sub_barrier_all_in(d, &d->sub->hazards, cmd);
    sub_hazards(d, cmd, range, 1, SUB_TRANSFER);
}

static void invalidate(cubec_device *d, gpu_mem *m, uint64_t offset, uint64_t size)
{
    gpu_mem_invalidate(d->gpu, m, offset, size);
}

static void defer(cubec_device *d, cubec_event *e)
{
    e->next_deferred = d->host->deferred_reads;
    if (e->next_deferred) e->next_deferred->prev_deferred = &e->next_deferred;
    e->prev_deferred = &d->host->deferred_reads;
    d->host->deferred_reads = e;
}

static void undefer(cubec_event *e)
{
    if (!e->prev_deferred) return;
    *e->prev_deferred = e->next_deferred;
    if (e->next_deferred) e->next_deferred->prev_deferred = e->prev_deferred;
    e->next_deferred = NULL;
    e->prev_deferred = NULL;
}

static int lands_in(const cubec_event *e, const unsigned char *base, uint64_t size)
{
    uintptr_t at = (uintptr_t)e->dst, from = (uintptr_t)base;
    return at < from + size && from < at + e->size;
}

/* The batch a host transfer just opened (or joined) carries the transfer's stream. */
static void note_transfer_stream(cubec_device *d)
{
    if (d->sub->open && d->sub->transfer_stream)
        batch_note_stream(d->sub->open, d->sub->transfer_stream);
}

/* Discrete GPUs: chunk by chunk through the upload ring, each full chunk submitted so that its
 * DMA overlaps the host copy of the next. */
static cubec_status write_staged(cubec_device *d, buffer_obj *b, uint64_t at, const void *src,
                                 uint64_t size)
{
    gpu_mem *page = buffer_page(b);
    const unsigned char *from = src;
    for (uint64_t done = 0; done < size;) {
        uint64_t n = size - done;
        if (n > d->rings->upload.chunk_size) n = d->rings->upload.chunk_size;
        uint64_t ring_at;
        RETURN_IF_ERROR(host_ring_alloc(d, &d->rings->upload, n, 16, &ring_at));
        copy_pool_memcpy(d->rings->copies, d->rings->upload.mapped + ring_at, from + done, n);
        gpu_mem_flush(d->gpu, d->rings->upload.mem, ring_at, n);
        gpu_cmd *cmd;
        RETURN_IF_ERROR(sub_begin(d, &cmd));
        note_transfer_stream(d);
        hazard_range r = {page, at + done, n, 1};
        copy_hazards(d, cmd, b->alloc, &r);
        gpu_cmd_copy(cmd, d->rings->upload.mem, ring_at, page, at + done, n);
        touch(d, b, 1);
        done += n;
        /* Submit each chunk so the DMA starts while the next chunk is copied in. */
        RETURN_IF_ERROR(sub_flush(d, 0));
    }
    return NULL;
}

/* A host transfer on the host track of the trace: its name, bytes and buffer number. The number
 * is taken before the transfer: a wait inside it drops the device lock, and another thread may
 * release the buffer meanwhile, freeing its record. */
static void trace_transfer(cubec_device *d, const char *what, const char *category, uint64_t t0,
                           uint64_t stream, uint64_t buffer_number, uint64_t size)
{
    char args[96];
    snprintf(args, sizeof args, "\"bytes\":%" PRIu64 ",\"buffer\":%" PRIu64, size, buffer_number);
    timing_host(d, what, category, t0, stream, args);
}

static cubec_status write_body(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t offset,
                               const void *src, uint64_t size);

/* Below this a write from registered memory still goes through staging: copying a few
 * kilobytes into the ring costs less than waiting for a DMA, which a write must (the program
 * may reuse its memory when cubec_write returns). */
#define REGISTERED_WRITE_MIN (256u << 10)

/* How long a DMA of `size` bytes may take (twice its time at PCIe 5 x16's ~50 GB/s): how long
 * its wait polls before blocking (sub_wait_polling). */
static uint64_t dma_expected_us(uint64_t size)
{
    return size / 25000u;
}

/* A DMA between registered host memory and a buffer, in stream order; waits for it when
 * `wait` (the device lock is dropped meanwhile: the caller holds a reference on the buffer). */
static cubec_status transfer_registered(cubec_device *d, buffer_obj *b, uint64_t at, host_range *r,
                                        const void *host, uint64_t size, int to_device,
                                        uint64_t *out_value)
{
    gpu_mem *page = buffer_page(b);
    uint64_t host_at = (uint64_t)((const unsigned char *)host - r->base);
    gpu_cmd *cmd;
    RETURN_IF_ERROR(sub_begin(d, &cmd));
    note_transfer_stream(d);
    hazard_range hr = {page, at, size, to_device};
    copy_hazards(d, cmd, b->alloc, &hr);
    if (to_device)
        gpu_cmd_copy(cmd, r->mem, host_at, page, at, size);
    else
        gpu_cmd_copy(cmd, page, at, r->mem, host_at, size);
    touch(d, b, to_device);
    uint64_t value = d->sub->next_value;
    r->last_use = value;
    d->host->dma_transfers++;
    d->host->dma_bytes += size;
    *out_value = value;
    /* Submitted on this thread, both ways: the caller waits for the DMA (a write, before the
     * program may reuse its memory), and handing it to the submission thread made it wait for
     * that thread's wake-up first (write.h2d_registered 44-48 GB/s on an H200 against 50-51
     * for reads). The host barrier a write does not need costs nothing next to the DMA. */
    return sub_flush(d, 1);
}

cubec_status server_write(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t offset,
                          const void *src, uint64_t size)
{
    uint64_t t0 = d->timing->trace ? clock_now_ns() : 0, number = b->alloc->number;
    cubec_status err = server_back_buffers(d, &b, 1, NULL);
    d->sub->transfer_stream = s.number;
    if (!err) err = write_body(d, s, b, offset, src, size);
    d->sub->transfer_stream = 0;
    if (!err && d->timing->trace) trace_transfer(d, "write", "write", t0, s.number, number, size);
    return err;
}

cubec_status server_write_failure(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t offset,
                                  uint64_t size, cubec_code code, const char *message)
{
    if (size == 0) return NULL;
    RETURN_IF_ERROR(server_drain_for_host(d, s.slot, b->alloc, 1));
    failure *f = failure_new(code, "%s", message); /* failure_oom() when the host is out */
    server_taint(b->alloc, buffer_device_offset(b) + offset, size, f);
    failure_release(f);
    return NULL;
}

/* The range of a write that went through the GPU (a queue write or a copy) after it: tainted
 * with its error when it failed, since part of the bytes may have been written and the range
 * carries the error; cleared of any earlier failure when it succeeded (spec 5.4). */
static void settle_write(alloc_obj *a, uint64_t at, uint64_t size, cubec_status err)
{
    if (!err) {
        server_untaint(a, at, size);
        return;
    }
    failure *f =
        failure_new(cubec_status_code(err), "a write failed: %s", cubec_status_message(err));
    server_taint(a, at, size, f);
    failure_release(f);
}

cubec_status server_write_queued(cubec_device *d, stream_ref s, alloc_obj *a, uint64_t at,
                                 uint64_t size, server_put_fn put, void *ctx)
{
    uint32_t slot = s.slot;
    uint64_t stream_was = d->sub->transfer_stream;
    d->sub->transfer_stream = s.number;
    /* Ordered as a write of mapped memory: after the work that used the bytes is done; work
     * recorded later is submitted after the write, so it sees the bytes. The wait may release
     * the device lock: the reference keeps the memory, the guard its place. */
    server_alloc_pin(d, a);
    cubec_status err = sub_wait(d, transfer_after(d, slot, a, a->last_use));
    if (!err) err = put(d, ctx);
    if (!err) {
        /* A submission takes the write to the GPU now, and gives the stream a value that
         * cubec_sync waits for: the bytes are in the buffer when it returns, as after a
         * staged write. */
        gpu_cmd *cmd;
        d->streams->slots[slot].recorded++;
        err = sub_begin(d, &cmd);
        if (!err) {
            note_transfer_stream(d);
            err = sub_flush(d, 0);
        }
        if (!err) d->streams->slots[slot].last_value = d->sub->next_value - 1;
    }
    settle_write(a, at, size, err);
    server_alloc_unpin(d, a);
    d->sub->transfer_stream = stream_was;
    return err;
}

/* A buffer's bytes for server_write_queued: gpu_ops.mem_write's arguments. */
typedef struct mem_put {
    gpu_mem *page;
    uint64_t at;
    const void *src;
    uint64_t size;
} mem_put;

static cubec_status put_mem(cubec_device *d, void *ctx)
{
    const mem_put *p = ctx;
    return d->gpu->ops->mem_write(d->gpu, p->page, p->at, p->src, p->size);
}

static cubec_status write_body(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t offset,
                               const void *src, uint64_t size)
{
    uint32_t slot = s.slot;
    if (size == 0) return NULL;
    gpu_mem *page = buffer_page(b);
    uint64_t at = buffer_device_offset(b) + offset;
    /* Work queued earlier on the bytes is recorded first, refused write or not: the refusal's
     * failure must land after what earlier work reads and writes there. That holds when the
     * earlier work fails too: its submission failing in this drain taints what it would have
     * written (and a lost device stays lost for every later call), and the refusal, which comes
     * after it, still replaces that failure on the refused range and dooms the capture. The
     * refused write itself succeeds, as it always does: an error would say that nothing
     * changed. */
    cubec_status drained = server_drain_for_host(d, slot, b->alloc, 1);
    if (server_graph_refuse_write(d, s, b->alloc, at, size)) {
        cubec_status_free(drained);
        return NULL;
    }
    RETURN_IF_ERROR(drained);
    if (page->mapped) {
        /* The wait may release the device lock: the reference keeps the memory, the guard its
         * place (no relocation meanwhile). */
        alloc_obj *a = b->alloc;
        server_alloc_pin(d, a);
        cubec_status err = sub_wait(d, transfer_after(d, slot, a, a->last_use));
        if (!err) {
            memcpy(page->mapped + at, src, size);
            gpu_mem_flush(d->gpu, page, at, size);
            server_untaint(a, at, size); /* a successful write clears the failure (spec 5.4) */
        }
        server_alloc_unpin(d, a);
        return err;
    }
    if (d->gpu->ops->mem_write && ((at | size) & 3u) == 0) {
        /* A backend whose uploads are queue writes (WebGPU) takes the bytes straight from the
         * program: the upload ring would add two copies (into the ring, then into the
         * implementation's own staging) and a copy command. */
        mem_put put = {page, at, src, size};
        return server_write_queued(d, s, b->alloc, at, size, put_mem, &put);
    }
    host_range *r = size >= REGISTERED_WRITE_MIN ? server_host_find(d->host, src, size) : NULL;
    /* The upload ring comes with the first staged write; failing to create it refuses this
     * write before anything is recorded, the buffer's bytes and failures as they were. */
    if (!r) RETURN_IF_ERROR(host_rings_staging(d, &d->rings->upload));
    d->streams->slots[slot].recorded++; /* a copy on the GPU, staged or straight from the host */
    /* The reference keeps the memory through the registered path's wait, which may drop the
     * lock (unregistering waits for the range's last use). */
    alloc_obj *a = b->alloc;
    server_alloc_pin(d, a);
    cubec_status err;
    uint64_t value = 0; /* what cubec_sync(stream) waits for */
    if (r) {
        /* Taken when the DMA is done. */
        err = transfer_registered(d, b, at, r, src, size, 1, &value);
        if (!err) err = sub_wait_polling(d, value, dma_expected_us(size));
    } else {
        /* The staging rings are shared: its waits keep the lock while they hold this
         * transfer's bytes (host_ring_alloc's waits keep it). */
        err = write_staged(d, b, at, src, size);
        value = d->sub->next_value - 1;
    }
    settle_write(a, at, size, err);
    if (!err) d->streams->slots[slot].last_value = value;
    server_alloc_unpin(d, a);
    return err;
}

typedef struct pending_chunk {
    uint64_t value, ring_at, dst_at, size;
} pending_chunk;

/* Discrete GPUs: two chunks in flight through the readback ring. */
static cubec_status read_staged(cubec_device *d, buffer_obj *b, uint64_t at, void *dst,
                                uint64_t size)
{
    gpu_mem *page = buffer_page(b);
    unsigned char *to = dst;
    pending_chunk q[2];
    uint32_t queued = 0;
    for (uint64_t done = 0; done < size || queued;) {
        if (done < size && queued < 2) {
            uint64_t n = size - done;
            if (n > d->rings->readback.chunk_size) n = d->rings->readback.chunk_size;
            uint64_t ring_at;
            RETURN_IF_ERROR(host_ring_alloc(d, &d->rings->readback, n, 16, &ring_at));
            gpu_cmd *cmd;
            RETURN_IF_ERROR(sub_begin(d, &cmd));
            note_transfer_stream(d);
            hazard_range r = {page, at + done, n, 0};
            copy_hazards(d, cmd, b->alloc, &r);
            gpu_cmd_copy(cmd, page, at + done, d->rings->readback.mem, ring_at, n);
            touch(d, b, 0);
            q[queued++] = (pending_chunk){d->sub->next_value, ring_at, done, n};
            RETURN_IF_ERROR(sub_flush(d, 1));
            done += n;
            continue;
        }
        RETURN_IF_ERROR(sub_wait_flags(d, q[0].value, WAIT_KEEP_LOCK));
        invalidate(d, d->rings->readback.mem, q[0].ring_at, q[0].size);
        copy_pool_memcpy(d->rings->copies, to + q[0].dst_at,
                         d->rings->readback.mapped + q[0].ring_at, q[0].size);
        q[0] = q[1];
        queued--;
    }
    return NULL;
}

/* The backend's copy and map of [at, +size) of the device page into `dst` (gpu_ops.mem_read),
 * under the wait limit, after the work it follows is done. With `unlock`, without the device
 * lock meanwhile, as a wait for the GPU: other threads queue and record while the map is
 * waited for (the caller pins the page; the backend keeps its map buffer to one read at a
 * time). */
static cubec_status backend_read(cubec_device *d, gpu_mem *page, uint64_t at, void *dst,
                                 uint64_t size, int unlock)
{
    /* The backend waits for the device: a point of the fault plan, as the staged read's wait
     * was. */
    cubec_status err = gpu_fault(d->gpu, CUBEC_FAULT_WAIT, CUBEC_DEVICE_LOST);
    if (err) {
        err = status_annotate(err, "the device is treated as lost");
    } else {
        uint64_t limit = d->sub->wait_timeout_ns;
        if (unlock) pthread_mutex_unlock(&d->lock);
        err = d->gpu->ops->mem_read(d->gpu, page, at, dst, size, limit);
        if (unlock) pthread_mutex_lock(&d->lock);
        if (err && cubec_status_code(err) == CUBEC_TIMEOUT)
            err = status_annotate(err, "past the wait limit ([device] wait_timeout, "
                                       "CUBEC_WAIT_TIMEOUT) the device is treated as lost");
    }
    return err ? server_note_error(d, err) : NULL;
}

/* A backend that reads by mapping (WebGPU: gpu_ops.mem_read) copies the bytes straight into the
 * program's memory: the readback ring would add a GPU copy (into the ring) and a host copy (out
 * of it) to the backend's own copy into its map buffer and out of it. Ordered as the mapped path
 * of read_body, with the same wait (which submits the open batch when the bytes' last writer is
 * not done, as a staged read's flush did): after the last work that wrote the bytes; the
 * backend's copy goes into the queue behind it. Both waits keep the wait limit; the backend's
 * copy and map are one operation of the backend's, not a task on the stream (as a read of mapped
 * memory is none). */
static cubec_status read_direct(cubec_device *d, uint32_t slot, buffer_obj *b, uint64_t at,
                                void *dst, uint64_t size)
{
    gpu_mem *page = buffer_page(b);
    /* The wait may release the device lock: the reference keeps the memory, the guard its place
     * (no relocation meanwhile). */
    alloc_obj *a = b->alloc;
    server_alloc_pin(d, a);
    cubec_status err = sub_wait_for_host(d, transfer_after(d, slot, a, a->last_write));
    if (!err) err = backend_read(d, page, at, dst, size, 1);
    server_alloc_unpin(d, a);
    return err;
}

static cubec_status read_body(cubec_device *d, uint32_t slot, buffer_obj *b, uint64_t offset,
                              void *dst, uint64_t size);

cubec_status server_read(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t offset, void *dst,
                         uint64_t size)
{
    uint64_t t0 = d->timing->trace ? clock_now_ns() : 0, number = b->alloc->number;
    cubec_status err = server_back_buffers(d, &b, 1, NULL);
    d->sub->transfer_stream = s.number;
    if (!err) err = read_body(d, s.slot, b, offset, dst, size);
    d->sub->transfer_stream = 0;
    if (!err && d->timing->trace) trace_transfer(d, "read", "read", t0, s.number, number, size);
    return err;
}

static cubec_status read_body(cubec_device *d, uint32_t slot, buffer_obj *b, uint64_t offset,
                              void *dst, uint64_t size)
{
    if (size == 0) return NULL;
    gpu_mem *page = buffer_page(b);
    uint64_t at = buffer_device_offset(b) + offset;
    RETURN_IF_ERROR(server_drain_for_host(d, slot, b->alloc, 0));
    /* Bytes that work failed to write are an error, never stale data. */
    failure *f = server_failure_of(b->alloc, at, size);
    if (f) return server_failure_status(b->alloc, f, "read");
    if (page->mapped) {
        /* The wait may release the device lock: the reference keeps the memory, the guard its
         * place (no relocation meanwhile). */
        alloc_obj *a = b->alloc;
        server_alloc_pin(d, a);
        cubec_status err = sub_wait_for_host(d, transfer_after(d, slot, a, a->last_write));
        if (!err) {
            invalidate(d, page, at, size);
            memcpy(dst, page->mapped + at, size);
        }
        server_alloc_unpin(d, a);
        return err;
    }
    if (d->gpu->ops->mem_read) return read_direct(d, slot, b, at, dst, size);
    host_range *r = server_host_find(d->host, dst, size);
    /* The readback ring comes with the first staged read; failing to create it refuses this
     * read before anything is recorded. */
    if (!r) RETURN_IF_ERROR(host_rings_staging(d, &d->rings->readback));
    d->streams->slots[slot].recorded++; /* a copy on the GPU, staged or straight to the host */
    if (r) {
        alloc_obj *a = b->alloc;
        server_alloc_pin(d, a);
        uint64_t value = 0;
        cubec_status err = transfer_registered(d, b, at, r, dst, size, 0, &value);
        if (!err) err = sub_wait_polling(d, value, dma_expected_us(size));
        server_alloc_unpin(d, a);
        return err;
    }
    /* Its waits keep the lock while the shared readback ring holds this transfer's bytes. */
    return read_staged(d, b, at, dst, size);
}

static cubec_status read_async_body(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t offset,
                                    void *dst, uint64_t size, cubec_event **out);

cubec_status server_read_async(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t offset,
                               void *dst, uint64_t size, cubec_event **out)
{
    uint64_t t0 = d->timing->trace ? clock_now_ns() : 0, number = b->alloc->number;
    cubec_status err = server_back_buffers(d, &b, 1, NULL);
    d->sub->transfer_stream = s.number;
    if (!err) err = read_async_body(d, s, b, offset, dst, size, out);
    d->sub->transfer_stream = 0;
    if (!err && d->timing->trace)
        trace_transfer(d, "read (async start)", "read", t0, s.number, number, size);
    return err;
}

static cubec_status read_async_body(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t offset,
                                    void *dst, uint64_t size, cubec_event **out)
{
    uint32_t slot = s.slot;
    if (size) RETURN_IF_ERROR(server_drain_for_host(d, slot, b->alloc, 0));
    if (size) {
        failure *f = server_failure_of(b->alloc, buffer_device_offset(b) + offset, size);
        if (f) return server_failure_status(b->alloc, f, "read");
    }
    cubec_event *e = calloc(1, sizeof *e);
    if (!e) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (event)");
    e->device = d;
    e->dst = dst;
    e->size = size;
    e->trace_begin_ns = d->timing->trace ? clock_now_ns() : 0;
    e->stream = s.number;
    e->buffer_number = b->alloc->number;
    if (size == 0) {
        e->done = 1;
        *out = e;
        return NULL;
    }
    gpu_mem *page = buffer_page(b);
    uint64_t at = buffer_device_offset(b) + offset;
    cubec_status err = NULL;
    /* On mapped memory whose writes are already visible to the host, the bytes are copied now.
     * Otherwise the GPU copies them, in stream order, into private memory the event reads when it
     * completes: copying out of the buffer itself at completion would return what later work
     * wrote meanwhile (found by the null-backend fuzzer). */
    sub_poll(d);
    uint64_t written = transfer_after(d, slot, b->alloc, b->alloc->last_write),
             visible = d->sub->host_visible_value;
    int ready = !written || (written <= visible && visible <= d->sub->completed_value);
    host_range *reg = page->mapped ? NULL : server_host_find(d->host, dst, size);
    if (page->mapped && ready) {
        /* Complete already: the event keeps its reference and reports like any other. */
        invalidate(d, page, at, size);
        memcpy(dst, page->mapped + at, size);
        e->src = NULL;
        e->value = 0;
    } else if (reg) {
        d->streams->slots[s.slot].recorded++;
        /* Straight into the program's registered memory: nothing to copy at completion. */
        e->src = NULL;
        err = transfer_registered(d, b, at, reg, dst, size, 0, &e->value);
    } else {
        d->streams->slots[s.slot].recorded++;
        /* Where the backend reads device memory itself (gpu_ops.mem_read: webgpu maps it
         * straight into the program's memory), the private copy is a device range it reads at
         * completion: no host copy of it in between. Elsewhere it is readback memory. */
        int direct = d->gpu->ops->mem_read != NULL;
        err = gpu_mem_alloc(d->gpu, direct ? GPU_MEM_DEVICE : GPU_MEM_READBACK, size, &e->staging);
        gpu_cmd *cmd;
        if (!err) err = sub_begin(d, &cmd);
        if (!err) note_transfer_stream(d);
        if (!err) {
            e->src = direct ? NULL : e->staging->mapped;
            hazard_range r = {page, at, size, 0};
            copy_hazards(d, cmd, b->alloc, &r);
            gpu_cmd_copy(cmd, page, at, e->staging, 0, size);
            touch(d, b, 0);
            e->value = d->sub->next_value;
            err = sub_flush(d, 1);
        }
    }
    if (err) {
        gpu_mem_free(d->gpu, e->staging);
        free(e);
        return err;
    }
    e->alloc = b->alloc;
    e->alloc->refs++;
    if (e->staging) defer(d, e); /* its bytes land at completion */
    *out = e;
    return NULL;
}

cubec_status server_reads_land_before_release(cubec_device *d, const void *ptr)
{
    const uint64_t size = server_host_range_size(d->host, ptr);
    for (;;) {
        uint64_t last = 0;
        for (const cubec_event *e = d->host->deferred_reads; e; e = e->next_deferred)
            if (lands_in(e, ptr, size) && e->value > last) last = e->value;
        if (!last) return NULL;
        if (last <= d->sub->completed_value) break;
        /* The wait drops the device lock: the list is walked again after it. */
        RETURN_IF_ERROR(sub_wait(d, last));
    }
    /* Every one of them finished on the GPU: completing them waits for nothing, and keeps the
     * lock. */
    for (cubec_event *e = d->host->deferred_reads, *next; e; e = next) {
        next = e->next_deferred;
        if (lands_in(e, ptr, size)) cubec_status_free(server_event_progress(e, 0));
    }
    return NULL;
}

/* Finishes the event if its work is done (or waits when `block`). Device lock held. */
cubec_status server_event_progress(cubec_event *e, int block)
{
    cubec_device *d = e->device;
    if (!e->done) {
        if (!block) {
            sub_poll(d);
            if (e->value > d->sub->completed_value)
                return status_make(CUBEC_NOT_READY, "the read has not finished yet");
        }
        cubec_status err = sub_wait(d, e->value);
        if (e->done) {
            /* Completed while the wait dropped the lock: the range it lands in was let go of
             * (server_reads_land_before_release), and its bytes must not be copied again. */
            cubec_status_free(err);
            return status_clone(e->result);
        }
        if (err) {
            e->result = err;
        } else {
            if (e->staging && !e->src) {
                e->result = backend_read(d, e->staging, 0, e->dst, e->size, 0);
            } else {
                if (e->staging) invalidate(d, e->staging, 0, e->size);
                if (e->src) memcpy(e->dst, e->src, e->size); /* NULL: copied at the call */
            }
            if (!e->result && d->timing->trace && e->trace_begin_ns) {
                /* From the call to the bytes in host memory, as a blocking read is shown. */
                char args[96];
                snprintf(args, sizeof args, "\"bytes\":%" PRIu64 ",\"buffer\":%" PRIu64, e->size,
                         e->buffer_number);
                timing_host(d, "read (async)", "read", e->trace_begin_ns, e->stream, args);
            }
        }
        e->done = 1;
        undefer(e);
        if (e->alloc) server_alloc_release(d, e->alloc);
        e->alloc = NULL;
    }
    return status_clone(e->result);
}

void server_event_free(cubec_event *e)
{
    cubec_device *d = e->device;
    if (!e->done) cubec_status_free(server_event_progress(e, 1));
    /* After a failed wait the GPU may still be copying into the staging. */
    server_retire_mem(d, e->staging, e->value);
    cubec_status_free(e->result);
    free(e);
}

cubec_device *server_event_device(cubec_event *e)
{
    return e->device;
}
