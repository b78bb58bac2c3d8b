/* A stand-in for libnccl.so.2 in tests of the run-time loader (interop/nccl_driver.h): built as
 * FAKE_NCCL_FULL exporting every entry point the loader takes at NCCL 2.28.3's version code,
 * FAKE_NCCL_OLD the same at 2.3.7's (older than cubec takes), and with neither exporting only
 * the first two, so the loader must name the first one missing. No NCCL or CUDA is needed to
 * build them; no collective is ever run through them. */
#define FAKE_EXPORT __attribute__((visibility("default")))

FAKE_EXPORT int ncclGetVersion(int *version)
{
#ifdef FAKE_NCCL_OLD
    *version = 2307;
#else
    *version = 22803;
#endif
    return 0;
}

FAKE_EXPORT const char *ncclGetErrorString(int result)
{
    return result == 0 ? "no error" : "stand-in error";
}

#if defined(FAKE_NCCL_FULL) || defined(FAKE_NCCL_OLD)
/* Every other entry point: each answers ncclInvalidUsage (5) should a test reach it. */
#define FAKE(name)                                                                                 \
    FAKE_EXPORT int name(void)                                                                     \
    {                                                                                              \
        return 5;                                                                                  \
    }
FAKE(ncclCommInitAll)
FAKE(ncclCommDestroy)
FAKE(ncclCommGetAsyncError)
FAKE(ncclGroupStart)
FAKE(ncclGroupEnd)
FAKE(ncclAllReduce)
FAKE(ncclBroadcast)
FAKE(ncclReduce)
FAKE(ncclAllGather)
FAKE(ncclReduceScatter)
#endif
