/* The one step every collective algorithm is made of: elements of a buffer on one rank moved to,
 * or reduced into, a buffer on another (or the same) rank, at any element offsets. Whole words
 * that need no arithmetic travel by cubec_copy_peer alone; the rest go by cubec_copy_peer into
 * scratch on the receiving device and an element kernel there, which works on 32-bit words (f16
 * through unpackHalf2x16 / packHalf2x16: no 16-bit storage needed) and so can start or end in
 * the middle of a word without touching its other half. */
#ifndef CUBEC_COMM_COMM_MOVE_H
#define CUBEC_COMM_COMM_MOVE_H

#include "comm/comm.h"

/* A range's end: elements of `buf` (a buffer of `rank`'s device) from element `elem`. */
typedef struct comm_end {
    uint32_t rank;
    cubec_buffer buf;
    uint64_t elem;
} comm_end;

/* dst[i] = src[i] for i < count (op 0), or dst[i] = src[i] op local[i] (a reduction; local is on
 * dst's rank and may be dst itself at dst's element: in place). Ordered on call->streams of both
 * ranks as cubec_copy_peer is: after the source's writers, before later work on dst's stream. */
cubec_status comm_move(cubec_comm *comm, const comm_call *call, comm_end src, comm_end dst,
                       uint64_t count, cubec_reduce_op op, comm_end local);

/* Destroys the kernels compiled on the devices still open. */
void comm_kernels_destroy(cubec_comm *comm);

#endif
