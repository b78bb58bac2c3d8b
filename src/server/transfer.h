/* Host transfers and events (server/transfer.c). */
#ifndef CUBEC_SERVER_TRANSFER_H
#define CUBEC_SERVER_TRANSFER_H

#include "server/buffers.h"
#include "server/streams.h"

/* Host transfers on `slot`: they first submit the caller's queue and the queues whose work on
 * the buffer must come first. */
MUST_USE cubec_status server_write(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t offset,
                                   const void *src, uint64_t size);
/* A write of a failure instead of bytes (cubec_write_failure): the earlier work on the range is
 * recorded first, as for a write, so that what it does to the range's failures comes before, and
 * the range then carries a failure of `code` with `message`. Waits for nothing on the GPU: the
 * bytes are not touched, only what reads of them return. */
MUST_USE cubec_status server_write_failure(cubec_device *d, stream_ref s, buffer_obj *b,
                                           uint64_t offset, uint64_t size, cubec_code code,
                                           const char *message);
/* A write the backend takes straight from the host in queue order (gpu_ops.mem_write,
 * image_write), for [at, +size) of `a` from `s`: `put(d, ctx)` runs once the work that used the
 * allocation is done on the GPU; then an empty batch takes the write to the GPU and gives `s` the
 * value cubec_sync waits for. The range is cleared of failures when it succeeded, tainted with
 * the error when not (part of it may have been written). The caller recorded the work queued on
 * `a` first (server_drain_for_host). */
typedef cubec_status (*server_put_fn)(cubec_device *d, void *ctx);
MUST_USE cubec_status server_write_queued(cubec_device *d, stream_ref s, alloc_obj *a, uint64_t at,
                                          uint64_t size, server_put_fn put, void *ctx);
MUST_USE cubec_status server_read(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t offset,
                                  void *dst, uint64_t size);
MUST_USE cubec_status server_read_async(cubec_device *d, stream_ref s, buffer_obj *b,
                                        uint64_t offset, void *dst, uint64_t size,
                                        cubec_event **out);

/* Before the registered or pinned range at `ptr` goes (cubec_host_unregister, cubec_host_free):
 * the asynchronous reads still to copy their bytes into it wait for their GPU work (the device
 * lock is dropped meanwhile) and copy them now, so nothing writes the range afterwards; their
 * events report done. Nothing to do when no range starts at `ptr` (the caller refuses it). */
MUST_USE cubec_status server_reads_land_before_release(cubec_device *d, const void *ptr);
MUST_USE cubec_status server_event_progress(cubec_event *e, int block);
void server_event_free(cubec_event *e);
cubec_device *server_event_device(cubec_event *e);

#endif
