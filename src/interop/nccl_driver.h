/* The part of NCCL that the NCCL transport of collectives uses (interop/nccl_collectives.h),
 * loaded at run time (dlopen of libnccl.so.2), so cubec builds and runs where NCCL is absent (as
 * libcuda is loaded, interop/cuda_driver.h). The types below restate nccl.h's ABI for 64-bit
 * Linux: nccl.h (which needs the CUDA runtime's headers) is not a build dependency. Their sizes
 * and values are checked against the real header by tests/interop/nccl_layout_check.c where one
 * is installed. */
#ifndef CUBEC_INTEROP_NCCL_DRIVER_H
#define CUBEC_INTEROP_NCCL_DRIVER_H

#include "base/status.h"

#include <stddef.h>

typedef int nccl_result;                    /* ncclResult_t: 0 is ncclSuccess */
typedef struct nccl_comm_st *nccl_comm;     /* ncclComm_t */
typedef struct nccl_stream_st *nccl_stream; /* cudaStream_t, which is CUstream */

enum { NCCL_SUCCESS = 0 }; /* ncclSuccess */

/* ncclDataType_t: the three element types collectives take. */
enum {
    NCCL_INT32 = 2,   /* ncclInt32 */
    NCCL_FLOAT16 = 6, /* ncclFloat16 */
    NCCL_FLOAT32 = 7, /* ncclFloat32 */
};

/* ncclRedOp_t: the two reductions collectives take. */
enum {
    NCCL_SUM = 0, /* ncclSum */
    NCCL_MAX = 2, /* ncclMax */
};

/* The oldest NCCL taken: 2.4 brought ncclCommGetAsyncError. ncclGetVersion's code is
 * major * 1000 + minor * 100 + patch up to 2.8 and major * 10000 + minor * 100 + patch from 2.9
 * (nccl.h's NCCL_VERSION), so every later version compares greater. */
enum { NCCL_OLDEST_VERSION = 2400 };

/* The entry points, by the names libnccl exports (none has a versioned name). */
typedef struct nccl_driver {
    nccl_result (*get_version)(int *version);
    const char *(*get_error_string)(nccl_result result);
    nccl_result (*comm_init_all)(nccl_comm *comms, int ndev, const int *devlist);
    nccl_result (*comm_destroy)(nccl_comm comm);
    nccl_result (*comm_get_async_error)(nccl_comm comm, nccl_result *async_error);
    nccl_result (*group_start)(void);
    nccl_result (*group_end)(void);
    nccl_result (*all_reduce)(const void *send, void *recv, size_t count, int dtype, int op,
                              nccl_comm comm, nccl_stream stream);
    nccl_result (*broadcast)(const void *send, void *recv, size_t count, int dtype, int root,
                             nccl_comm comm, nccl_stream stream);
    nccl_result (*reduce)(const void *send, void *recv, size_t count, int dtype, int op, int root,
                          nccl_comm comm, nccl_stream stream);
    nccl_result (*all_gather)(const void *send, void *recv, size_t send_count, int dtype,
                              nccl_comm comm, nccl_stream stream);
    nccl_result (*reduce_scatter)(const void *send, void *recv, size_t recv_count, int dtype,
                                  int op, nccl_comm comm, nccl_stream stream);
    int version; /* ncclGetVersion's code, read at load */
} nccl_driver;

/* The process's NCCL, loaded on first use (thread-safe; later calls return the same table or
 * the same refusal). The library is $CUBEC_NCCL_LIBRARY when set, else libnccl.so.2. Errors:
 * CUBEC_UNSUPPORTED naming the library and dlerror's reason when it cannot be loaded, the first
 * entry point it lacks, or a version older than NCCL_OLDEST_VERSION. The library stays loaded
 * for the life of the process (NCCL keeps threads of its own). */
MUST_USE cubec_status nccl_driver_get(const nccl_driver **out);

/* Loads NCCL from `path` into *out without caching (nccl_driver_get's steps, apart for tests
 * that load a stand-in library). */
MUST_USE cubec_status nccl_driver_load(const char *path, nccl_driver *out);

/* An NCCL call's failure as a status: "<what>: NCCL error <n> (<its description>)". */
MUST_USE cubec_status nccl_status(const nccl_driver *nc, nccl_result r, const char *what);

#endif
