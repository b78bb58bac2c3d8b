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

/* At close, once `d`'s own work finished: waits until no other device's submission thread waits
 * on d's timeline, then lets go of d's side of its links. */
void server_peer_close(struct cubec_device_s *d);

#endif
