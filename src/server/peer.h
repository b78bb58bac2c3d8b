/* Copies between devices (server/peer.c): the host-staged path of cubec_copy_peer. Each ordered
 * pair of devices shares one link: host memory imported by both (two chunk slots, so the source's
 * copy of chunk i+1 into the host overlaps the destination's copy of chunk i out of it). Every
 * chunk is two batches, one per device, handed to the devices' submission threads with a gate:
 * the destination's batch reaches its queue only once the source's batch of that chunk finished,
 * and the source's batch only once the destination is done with the slot it overwrites. The
 * caller never waits for the other device; later work on the destination's stream is recorded
 * into later batches, which its queue runs after the gated one. */
#ifndef CUBEC_SERVER_PEER_H
#define CUBEC_SERVER_PEER_H

#include "failure/failure.h"
#include "gpu/gpu.h"
#include "server/buffers.h"
#include "server/streams.h"

struct cubec_device_s;

/* The process-wide link of the ordered pair (src, dst), made on first use (its host memory
 * imported by both; chunk: src's [multi] chunk_bytes). Both devices' locks held. */
typedef struct peer_link peer_link;
MUST_USE cubec_status server_peer_link(struct cubec_device_s *src, struct cubec_device_s *dst,
                                       peer_link **out);
/* The bytes one chunk of the link moves. */
uint64_t server_peer_chunk(const peer_link *l);

/* One chunk: [at, +size) of `a` (page offsets; size <= the link's chunk) on `src` to
 * [dst_at, +size) of `dst_alloc` on `dst`, in the streams' order. A failure carried by the
 * source range lands on the destination range. Both devices' locks held. */
MUST_USE cubec_status server_peer_copy_chunk(peer_link *l, stream_ref src_stream, alloc_obj *a,
                                             uint64_t at, stream_ref dst_stream,
                                             alloc_obj *dst_alloc, uint64_t dst_at, uint64_t size);

/* The cuda-interop path of cubec_copy_peer (interop/cuda_interop.c, docs/multi-device-paths.md):
 * CUDA copies between exportable pages, ordered by the devices' timelines. One device's lock
 * held for each call.
 *
 * The source's side: the work queued for [at, +size) of `a` is submitted, and its page handed to
 * CUDA (server_stream_hand_out); *out_value is the timeline value CUDA waits for. When the range
 * carries a failure instead, *out_carried is it (retained) and nothing is submitted. */
MUST_USE cubec_status server_peer_external_source(struct cubec_device_s *d, stream_ref s,
                                                  alloc_obj *a, uint64_t at, uint64_t size,
                                                  uint64_t *out_value, failure **out_carried);
/* The destination's side, before the copy: the work queued on `b` is submitted (a copy must not
 * overwrite what earlier work still reads) and its page handed to CUDA; *out_value is the value
 * CUDA waits for. With `carried` (the source's failure) the range [at, +size) carries it instead
 * (`src_number`: the source buffer's number, for the message) and *out_value is 0. */
MUST_USE cubec_status server_peer_external_dest(struct cubec_device_s *d, stream_ref s,
                                                alloc_obj *b, uint64_t at, uint64_t size,
                                                const failure *carried, uint64_t src_number,
                                                uint64_t *out_value);
/* After the destination's stream waits for CUDA's copy (server_stream_wait_inbound): the range
 * holds what was copied, written by the stream's last batch. */
void server_peer_external_landed(struct cubec_device_s *d, stream_ref s, alloc_obj *b, uint64_t at,
                                 uint64_t size);

/* At close, once `d`'s own work finished: waits until no other device's submission thread waits
 * on d's timeline, then lets go of d's side of its links. */
void server_peer_close(struct cubec_device_s *d);

#endif
