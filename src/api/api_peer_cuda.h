/* The device-side steps of cubec_copy_peer's cuda-interop path, for the interop code that drives
 * CUDA between them (interop/cuda_interop.c; server/peer.h says what each does). Each takes one
 * device's lock and looks its buffer and stream up as a public call would, naming
 * "cubec_copy_peer". Offsets are the buffer's, as cubec_copy_peer's. */
#ifndef CUBEC_API_API_PEER_CUDA_H
#define CUBEC_API_API_PEER_CUDA_H

#include "base/status.h"
#include "cubec/cubec.h"
#include "failure/failure.h"

#include <stdint.h>

/* The source's writers submitted and its page handed to CUDA: *out_value is what CUDA waits
 * for; or *out_carried (retained) when the range carries a failure. *out_number: the buffer's
 * number, for the destination's message. */
MUST_USE cubec_status api_peer_cuda_source(cubec_device *device, cubec_stream stream,
                                           cubec_buffer buffer, uint64_t offset, uint64_t size,
                                           uint64_t *out_value, failure **out_carried,
                                           uint64_t *out_number);
/* The destination's earlier users submitted and its page handed to CUDA (*out_value), or, with
 * `carried`, the range made to carry it. */
MUST_USE cubec_status api_peer_cuda_dest(cubec_device *device, cubec_stream stream,
                                         cubec_buffer buffer, uint64_t offset, uint64_t size,
                                         const failure *carried, uint64_t src_number,
                                         uint64_t *out_value);
/* The destination's stream waits for CUDA's copy (inbound value `value`), its page (and the
 * buffer `also_id` names, when not NULL: a copy within one device) taken back, and the range
 * marked written by that wait. */
MUST_USE cubec_status api_peer_cuda_landed(cubec_device *device, cubec_stream stream,
                                           cubec_buffer buffer, uint64_t offset, uint64_t size,
                                           uint64_t value, const uint64_t *also_id);

/* After the stream waited for CUDA (cubec_stream_wait_cuda): [offset, +size) of `buffer`, which
 * CUDA work other than cubec_copy_peer wrote (the NCCL transport's collectives), is marked written
 * by that wait, as api_peer_cuda_landed marks a copy's: a failure it carried is gone, and later
 * work on it orders after the wait. `fn` names the caller in refusals. */
MUST_USE cubec_status api_peer_external_landed(cubec_device *device, cubec_stream stream,
                                               cubec_buffer buffer, uint64_t offset, uint64_t size,
                                               const char *fn);
/* 1 when `buffer` is a live buffer of `device` that CUDA can map (its page was allocated
 * exportable: cubec_buffer_create_exportable), else 0. */
int api_buffer_exportable(cubec_device *device, cubec_buffer buffer);

#endif
