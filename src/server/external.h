/* Export and import of buffers' memory and of the device timeline (server/external.c;
 * docs/multi-device.md). */
#ifndef CUBEC_SERVER_EXTERNAL_H
#define CUBEC_SERVER_EXTERNAL_H

#include "server/buffers.h"
#include "server/streams.h"

/* cubec_buffer_create_exportable: a page of its own, exportable. */
MUST_USE cubec_status server_buffer_create_exportable(cubec_device *d, stream_ref s, uint64_t size,
                                                      cubec_buffer *out);
/* cubec_buffer_export of `b` (handle `id`, for messages): the buffer must sit on an exportable
 * page. *out's fd is new and the caller's. */
MUST_USE cubec_status server_buffer_export(cubec_device *d, uint64_t id, const buffer_obj *b,
                                           cubec_export_info *out);
/* cubec_buffer_import of a checked desc (offset, size and UUID checked here too): closes
 * desc->fd only after success. */
MUST_USE cubec_status server_buffer_import(cubec_device *d, stream_ref s,
                                           const cubec_import_desc *desc, cubec_buffer *out);
/* cubec_stream_get_timeline_value: the stream's work submitted, and the value it signals. */
MUST_USE cubec_status server_stream_timeline_value(cubec_device *d, stream_ref s, uint64_t *out);

/* A new fd of the device's inbound timeline, which only the other API signals
 * (docs/multi-device.md, "CUDA's work before cubec's"). */
MUST_USE cubec_status server_inbound_export(cubec_device *d, int *out_fd);
/* Work queued on `s` after this call (and every later batch of the device) runs after the
 * inbound timeline reached `value`, a GPU wait: the stream's queued work is submitted first, then
 * a batch that waits and takes back those of `take_back` (n allocations) that were handed out
 * (server_stream_hand_out). Refused (naming `fn`) while the stream captures a graph and where the
 * backend has no inbound timeline. */
MUST_USE cubec_status server_stream_wait_inbound(cubec_device *d, stream_ref s, uint64_t value,
                                                 alloc_obj *const *take_back, uint32_t n,
                                                 const char *fn);
/* Submits `s`'s queued work followed, for each of `hand_out` (n allocations) on an external page
 * that cubec owns now, by its release to the other APIs of the GPU (gpu_cmd_ownership); *out is
 * the timeline value the stream's work then signals (cubec_cuda_wait_stream). */
MUST_USE cubec_status server_stream_hand_out(cubec_device *d, stream_ref s,
                                             alloc_obj *const *hand_out, uint32_t n, uint64_t *out);
/* Sets the inbound timeline to `value` from the host (tests: the other API's stand-in). */
MUST_USE cubec_status server_inbound_signal(cubec_device *d, uint64_t value);

#endif
