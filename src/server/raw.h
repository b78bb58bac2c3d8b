/* Raw resources, host mappings and page guards (server/raw.c): the backend object behind a
 * buffer, for a program's own GPU code, or its bytes' host address, with a guard that keeps the
 * allocation alive and its page in place. */
#ifndef CUBEC_SERVER_RAW_H
#define CUBEC_SERVER_RAW_H

#include "server/buffers.h"
#include "server/streams.h"

/* cubec_buffer_raw: every queued or running use of the buffer's bytes finishes first (a
 * program's code may read or write them), then the raw resource and a new guard. */
MUST_USE cubec_status server_buffer_raw(cubec_device *d, stream_ref s, buffer_obj *b,
                                        cubec_raw_buffer *out, cubec_guard *out_guard);
/* cubec_buffer_map: every queued or running use of the buffer's bytes finishes and what the GPU
 * wrote is made visible to the host, then the bytes' host address and a new guard (`id` names
 * the buffer in a refusal). Refused (CUBEC_UNSUPPORTED) where the page is not mapped or not
 * coherent, and with the failure a range carries. A size-0 buffer maps to NULL. */
MUST_USE cubec_status server_buffer_map(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t id,
                                        void **out_ptr, cubec_guard *out_guard);
/* cubec_guard_release: releasing a guard twice, or a zero guard, is harmless; a guard of another
 * device (or a made-up value) is refused naming it. */
MUST_USE cubec_status server_guard_release(cubec_device *d, uint64_t id);
/* Releases every guard left (device close, before the buffers). */
void server_guards_destroy(cubec_device *d);

#endif
