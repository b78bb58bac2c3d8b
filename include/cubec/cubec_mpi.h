/* cubec_mpi — collectives over MPI on cubec buffers, one device per rank (docs/mpi.md).
 *
 * A separate library (libcubec_mpi, built when CMake finds MPI): libcubec itself never needs MPI.
 * Every rank of an MPI communicator opens its own cubec device and makes a cubec_mpi_comm over it;
 * the collectives then take cubec buffers. The bytes travel through pinned host memory
 * (cubec_host_alloc), in chunks, pipelined: while chunk i is reduced by MPI, chunk i+1 is read
 * from the device and chunk i-1 written back to it.
 *
 * Conventions are cubec.h's: a function that can fail returns a cubec_status (NULL on success,
 * freed by the caller), a refused argument is named with its value, out-parameters come last.
 * The collectives are collective calls in MPI's sense: every rank of the communicator calls the
 * same one, in the same order, with the same count, dtype, op and root; a rank whose arguments
 * differ or are refused makes every rank return CUBEC_INVALID_ARGUMENT naming that rank, so no
 * rank is left waiting in MPI.
 *
 * A communicator is used by one thread at a time (as MPI's collectives on one communicator are);
 * two communicators over two duplicates of a communicator may run on two threads where MPI was
 * initialized with MPI_THREAD_MULTIPLE.
 *
 * Ordering: a collective reads what was queued on `stream` before it (and the other streams'
 * writers of its input, as cubec_read does) and writes its result with cubec_write on `stream`, so
 * later work on the stream sees the result. The call returns when the result has been written.
 *
 * Failures: when any rank's input carries a failure (cubec.h "Failures on memory"), every rank's
 * output carries one (cubec_write_failure) naming the first such rank; the call itself succeeds,
 * as a launch with a failed input does. A failure of MPI itself is returned, and the output
 * carries it too: never a silent wrong result. */
#ifndef CUBEC_CUBEC_MPI_H
#define CUBEC_CUBEC_MPI_H

#include <cubec/cubec.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types. f16 is IEEE binary16; its sums are computed in f32 on the host and rounded once
 * at the end (docs/mpi.md says why). */
typedef enum cubec_mpi_dtype {
    CUBEC_MPI_F32 = 1,
    CUBEC_MPI_F16 = 2,
    CUBEC_MPI_I32 = 3,
} cubec_mpi_dtype;

typedef enum cubec_mpi_op {
    CUBEC_MPI_SUM = 1,
    CUBEC_MPI_MAX = 2,
} cubec_mpi_op;

typedef struct cubec_mpi_comm_s cubec_mpi_comm;

/* How a cubec_mpi_comm is made (start it with CUBEC_MPI_COMM_DESC_INIT). */
typedef struct cubec_mpi_comm_desc {
    uint32_t struct_size; /* CUBEC_MPI_COMM_DESC_INIT */
    /* Bytes of one chunk of one rank's data (0: 1 MiB). Smaller chunks overlap more finely;
     * larger ones pay MPI's per-message cost less often. At least 64, at most 64 MiB, a multiple
     * of 4. */
    uint64_t chunk_bytes;
} cubec_mpi_comm_desc;
#define CUBEC_MPI_COMM_DESC_INIT                                                                   \
    {                                                                                              \
        .struct_size = sizeof(cubec_mpi_comm_desc)                                                 \
    }

/* What a cubec_mpi_comm found (cubec_mpi_comm_get_info). */
typedef struct cubec_mpi_comm_info {
    uint32_t struct_size; /* CUBEC_MPI_COMM_INFO_INIT */
    int rank, size;       /* this rank and the communicator's size */
    uint64_t chunk_bytes; /* the chunk size in use */
    /* MPIX_Query_cuda_support() where mpi-ext.h declares it: 1 when the MPI library can take CUDA
     * device pointers, 0 when it cannot; -1 where the MPI offers no such query. cubec_mpi stages
     * through host memory in every case today (passing device pointers waits for CUDA interop). */
    int cuda_aware;
    /* Bytes of pinned host memory the staging holds now. */
    uint64_t staging_bytes;
} cubec_mpi_comm_info;
#define CUBEC_MPI_COMM_INFO_INIT                                                                   \
    {                                                                                              \
        .struct_size = sizeof(cubec_mpi_comm_info)                                                 \
    }

/* A communicator for collectives on `device`'s buffers over `comm` (duplicated: cubec_mpi's
 * messages never mix with the program's). Collective over `comm`. `desc` may be NULL (defaults).
 * The device must stay open until cubec_mpi_comm_destroy. */
CUBEC_MUST_USE cubec_status cubec_mpi_comm_create(cubec_device *device, MPI_Comm comm,
                                                  const cubec_mpi_comm_desc *desc,
                                                  cubec_mpi_comm **out_comm);
/* Frees the communicator and its staging memory (collective: it frees an MPI communicator).
 * NULL is accepted. */
void cubec_mpi_comm_destroy(cubec_mpi_comm *comm);
CUBEC_MUST_USE cubec_status cubec_mpi_comm_get_info(const cubec_mpi_comm *comm,
                                                    cubec_mpi_comm_info *out_info);

/* Bytes of one element of `dtype`; 0 for a value that is not one. */
uint32_t cubec_mpi_dtype_size(cubec_mpi_dtype dtype);

/* How `total` elements are split over the ranks by cubec_mpi_allgather and
 * cubec_mpi_reduce_scatter: rank r holds `total / size` elements, one more when r < total % size,
 * starting at *out_offset (elements). A rank may hold none (total < size). */
CUBEC_MUST_USE cubec_status cubec_mpi_shard(const cubec_mpi_comm *comm, uint64_t total, int rank,
                                            uint64_t *out_offset, uint64_t *out_count);

/* out[i] = op over the ranks of in[i], for i < count, on every rank. `in` and `out` may be the
 * same buffer (in place); each must hold count elements. */
CUBEC_MUST_USE cubec_status cubec_mpi_allreduce(cubec_mpi_comm *comm, cubec_stream stream,
                                                cubec_buffer in, cubec_buffer out, uint64_t count,
                                                cubec_mpi_dtype dtype, cubec_mpi_op op);
/* The first count elements of `buffer` on `root` are copied into `buffer` on every other rank. */
CUBEC_MUST_USE cubec_status cubec_mpi_broadcast(cubec_mpi_comm *comm, cubec_stream stream,
                                                cubec_buffer buffer, uint64_t count,
                                                cubec_mpi_dtype dtype, int root);
/* Every rank's shard of `total` elements (cubec_mpi_shard: `in` holds this rank's) is gathered
 * into `out` on every rank, at its offset: `out` holds total elements. */
CUBEC_MUST_USE cubec_status cubec_mpi_allgather(cubec_mpi_comm *comm, cubec_stream stream,
                                                cubec_buffer in, cubec_buffer out, uint64_t total,
                                                cubec_mpi_dtype dtype);
/* The element-wise op over the ranks of `in` (total elements on every rank), of which each rank
 * receives its shard (cubec_mpi_shard) in `out`. */
CUBEC_MUST_USE cubec_status cubec_mpi_reduce_scatter(cubec_mpi_comm *comm, cubec_stream stream,
                                                     cubec_buffer in, cubec_buffer out,
                                                     uint64_t total, cubec_mpi_dtype dtype,
                                                     cubec_mpi_op op);

#ifdef __cplusplus
}
#endif
#endif
