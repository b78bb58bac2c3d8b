/* The NCCL transport of collectives within a process (docs/multi-device.md, "The NCCL
 * transport"): a group of cubec devices, one rank each, that are CUDA devices of distinct GPUs,
 * over one NCCL communicator per rank (ncclCommInitAll). The calls take the arguments of the
 * cubec_comm_* collectives (cubec.h) and follow their rules; the public calls choose this
 * transport where it opens. Internal: nothing here is in cubec.h.
 *
 * One collective: every rank's buffers are mapped into CUDA (cubec_cuda_map: they must be
 * exportable), the group's CUDA stream of each rank waits for the cubec stream given for it
 * (cubec_cuda_wait_stream, on the GPU), the NCCL calls of all ranks are queued in one
 * ncclGroupStart/End, and each cubec stream is then ordered after its CUDA stream
 * (cubec_stream_wait_cuda): no thread waits for the GPU. An input that
 * carries a failure (cubec_check) sends it to every rank's output instead (cubec_write_failure),
 * and NCCL is not called.
 *
 * A group is used by one thread at a time (as NCCL's communicators are). */
#ifndef CUBEC_INTEROP_NCCL_COLLECTIVES_H
#define CUBEC_INTEROP_NCCL_COLLECTIVES_H

#include "base/status.h"
#include "cubec/cubec.h"
#include "interop/nccl_driver.h"

typedef struct nccl_group nccl_group;

/* A group over `n` (>= 1) open devices, rank r being devices[r]. Refused, with the reason, when
 * an argument is bad, two ranks are one GPU (equal device_uuid: NCCL refuses a duplicate GPU),
 * NCCL or libcuda cannot be loaded (the library and the loader's reason named), or a device is
 * not a CUDA device (no CUDA device has its UUID). Creates one CUDA stream per rank in the
 * device's primary context. */
MUST_USE cubec_status nccl_group_open(cubec_device *const *devices, uint32_t n, nccl_group **out);
/* nccl_group_open through the given NCCL table (tests load stand-ins with nccl_driver_load). */
MUST_USE cubec_status nccl_group_open_with(const nccl_driver *nc, cubec_device *const *devices,
                                           uint32_t n, nccl_group **out);
/* Destroys the communicators and streams; collectives already queued still run. NULL is
 * accepted. */
void nccl_group_close(nccl_group *g);

/* How `total` elements are split over `n` ranks (cubec_mpi_shard's rule): rank r holds
 * total / n elements, one more when r < total % n, from *out_offset (elements). */
void nccl_shard(uint32_t n, uint64_t total, uint32_t rank, uint64_t *out_offset,
                uint64_t *out_count);

/* The collectives: buffers[r], in[r], out[r] and streams[r] belong to rank r's device; dtype is
 * CUBEC_DTYPE_F32, CUBEC_DTYPE_I32 or 2 (f16, summed by NCCL in f16); op CUBEC_REDUCE_SUM or
 * CUBEC_REDUCE_MAX. Every argument is checked before anything is queued.
 *   all_reduce:     in place, buffers[r][i] = op over the ranks, i < count.
 *   broadcast:      the first count elements of buffers[root] into every rank's buffers[r].
 *   all_gather:     in[r] holds rank r's shard (nccl_shard) from its first element; out[r]
 *                   gets all `total` elements, each shard at its offset.
 *   reduce_scatter: in[r] holds `total` elements; out[r] gets rank r's shard of the op over the
 *                   ranks, from its first element.
 * in[r] and out[r] must be distinct buffers. */
MUST_USE cubec_status nccl_group_all_reduce(nccl_group *g, const cubec_buffer *buffers,
                                            const cubec_stream *streams, uint64_t count,
                                            cubec_dtype dtype, cubec_reduce_op op);
MUST_USE cubec_status nccl_group_broadcast(nccl_group *g, const cubec_buffer *buffers,
                                           const cubec_stream *streams, uint64_t count,
                                           cubec_dtype dtype, uint32_t root);
MUST_USE cubec_status nccl_group_all_gather(nccl_group *g, const cubec_buffer *in,
                                            const cubec_buffer *out, const cubec_stream *streams,
                                            uint64_t total, cubec_dtype dtype);
MUST_USE cubec_status nccl_group_reduce_scatter(nccl_group *g, const cubec_buffer *in,
                                                const cubec_buffer *out,
                                                const cubec_stream *streams, uint64_t total,
                                                cubec_dtype dtype, cubec_reduce_op op);

/* Makes all_gather and reduce_scatter take their path for a total not divisible by n (one
 * ncclBroadcast or ncclReduce per shard) whatever the total: a group of one rank never needs it,
 * and one GPU is all some machines have to test it on. */
void nccl_group_force_per_shard(nccl_group *g, int on);

/* For tests of how a collective becomes NCCL calls, without CUDA or devices: a group of `n`
 * ranks over a stand-in NCCL table (rank r's communicator is the pointer value r + 1), and one
 * collective's NCCL calls queued on the CUDA addresses given (host memory for the stand-in:
 * in[r], out[r]; out == in for all-reduce and broadcast), as the collectives queue them once
 * checked and mapped. The group is freed by nccl_group_close. */
typedef enum nccl_kind {
    NCCL_KIND_ALL_REDUCE,
    NCCL_KIND_BROADCAST,
    NCCL_KIND_ALL_GATHER,
    NCCL_KIND_REDUCE_SCATTER,
} nccl_kind;
nccl_group *nccl_group_open_for_test(const nccl_driver *nc, uint32_t n);
MUST_USE cubec_status nccl_group_queue_for_test(nccl_group *g, nccl_kind kind, char *const *in,
                                                char *const *out, uint64_t count, cubec_dtype dtype,
                                                cubec_reduce_op op, uint32_t root);

#endif
