/* Checks interop/nccl_driver.h against NCCL's nccl.h where one is installed: the restated types
 * have nccl.h's sizes and the enum values match, and each entry point the loader takes is
 * declared by nccl.h under that name with the parameters the table passes. Built by CMake when
 * nccl.h and the CUDA runtime's headers it includes are found (ctest nccl_layout_check); on the GPU
 * machine by hand: cc -std=c11 -I/usr/local/cuda/include -Isrc -Iinclude
 * tests/interop/nccl_layout_check.c */
#include <nccl.h>

#include "interop/nccl_driver.h"

#include <stdio.h>

_Static_assert(sizeof(nccl_result) == sizeof(ncclResult_t), "ncclResult_t size");
_Static_assert(sizeof(nccl_comm) == sizeof(ncclComm_t), "ncclComm_t size");
_Static_assert(sizeof(nccl_stream) == sizeof(cudaStream_t), "cudaStream_t size");
_Static_assert(sizeof(int) == sizeof(ncclDataType_t), "ncclDataType_t size");
_Static_assert(sizeof(int) == sizeof(ncclRedOp_t), "ncclRedOp_t size");
_Static_assert(NCCL_SUCCESS == (int)ncclSuccess, "ncclSuccess");
_Static_assert(NCCL_INT32 == (int)ncclInt32, "ncclInt32");
_Static_assert(NCCL_FLOAT16 == (int)ncclFloat16, "ncclFloat16");
_Static_assert(NCCL_FLOAT32 == (int)ncclFloat32, "ncclFloat32");
_Static_assert(NCCL_SUM == (int)ncclSum, "ncclSum");
_Static_assert(NCCL_MAX == (int)ncclMax, "ncclMax");
_Static_assert(NCCL_OLDEST_VERSION == NCCL_VERSION(2, 4, 0), "2.4.0's version code");

/* Each entry point the loader takes, called (unevaluated, in sizeof: nothing is linked) through
 * nccl.h's prototype with the table's argument types: a name nccl.h lacks, or a parameter count
 * or type that differs from the table's, fails to compile (warnings are errors). */
#define DECLARED(call) (void)sizeof(call)

static void same_parameters(nccl_comm ours, nccl_stream our_stream)
{
    /* The opaque handles are distinct struct types: only their sizes are ours to match. */
    ncclComm_t c = (ncclComm_t)ours;
    cudaStream_t s = (cudaStream_t)our_stream;
    int v = 0;
    ncclComm_t comms[1];
    nccl_result async = 0;
    const int devs[1] = {0};
    DECLARED(ncclGetVersion(&v));
    DECLARED(ncclGetErrorString((ncclResult_t)async));
    DECLARED(ncclCommInitAll(comms, 1, devs));
    DECLARED(ncclCommDestroy(c));
    DECLARED(ncclCommGetAsyncError(c, (ncclResult_t *)&async));
    DECLARED(ncclGroupStart());
    DECLARED(ncclGroupEnd());
    DECLARED(ncclAllReduce(NULL, NULL, (size_t)1, ncclFloat32, ncclSum, c, s));
    DECLARED(ncclBroadcast(NULL, NULL, (size_t)1, ncclFloat32, 0, c, s));
    DECLARED(ncclReduce(NULL, NULL, (size_t)1, ncclFloat32, ncclSum, 0, c, s));
    DECLARED(ncclAllGather(NULL, NULL, (size_t)1, ncclFloat32, c, s));
    DECLARED(ncclReduceScatter(NULL, NULL, (size_t)1, ncclFloat32, ncclSum, c, s));
}

int main(int argc, char **argv)
{
    (void)argv;
    /* Referenced so the compiler checks it; argc is never 100 under ctest. */
    if (argc == 100) same_parameters(NULL, NULL);
    printf("nccl_layout_check: ok (NCCL_VERSION_CODE %d)\n", NCCL_VERSION_CODE);
    return 0;
}
