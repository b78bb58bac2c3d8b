/* The device's inbound timeline for the interop code above the API (src/interop/): a timeline
 * only another API signals, on which the device's batches wait on the GPU (server/external.h,
 * docs/multi-device.md "CUDA's work before cubec's"). Internal: the public call built on it is
 * cubec_stream_wait_cuda. Each takes the device lock and checks its arguments as a public call. */
#ifndef CUBEC_API_API_INBOUND_H
#define CUBEC_API_API_INBOUND_H

#include "base/status.h"
#include "cubec/cubec.h"

#include <stdint.h>

/* A new opaque fd of the inbound timeline (the caller's). CUBEC_UNSUPPORTED naming `fn` where
 * the device has no CUBEC_EXTERNAL_TIMELINE_FD. */
MUST_USE cubec_status api_inbound_export(cubec_device *device, const char *fn, int *out_fd);
/* Work queued on `stream` after the call waits on the GPU for the inbound timeline to reach
 * `value` (server_stream_wait_inbound), and the buffers of `ids` (n cubec_buffer ids; ids no
 * longer valid are passed over) that were handed out are taken back. */
MUST_USE cubec_status api_stream_wait_inbound(cubec_device *device, cubec_stream stream,
                                              uint64_t value, const uint64_t *ids, uint32_t n,
                                              const char *fn);
/* Submits `stream`'s queued work, then hands the buffers of `ids` to the other APIs of the GPU
 * (server_stream_hand_out); *out_value is what the work signals on the device timeline. */
MUST_USE cubec_status api_stream_hand_out(cubec_device *device, cubec_stream stream,
                                          const uint64_t *ids, uint32_t n, uint64_t *out_value,
                                          const char *fn);
/* Sets the inbound timeline from the host, without the device lock: the other API's stand-in in
 * tests (null backend, lavapipe). */
MUST_USE cubec_status api_inbound_signal(cubec_device *device, uint64_t value);

#endif
