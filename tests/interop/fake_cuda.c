/* A stand-in for libcuda.so.1 in tests of the run-time loader (interop/cuda_driver.h): built twice,
 * FAKE_CUDA_FULL exporting every entry point the loader takes (cuInit answers
 * CUDA_ERROR_NO_DEVICE, 100, as on a host without a GPU), and without it exporting only the first
 * three, so the loader must name the first one missing. No CUDA is needed to build either. */
/* FAKE_CUDA_WEAK: fake_cuda_maps.c, linked beside, replaces some of these with working ones
 * (and gets every entry point added here later without a change of its own). */
#ifdef FAKE_CUDA_WEAK
#define FAKE_EXPORT __attribute__((visibility("default"), weak))
#else
#define FAKE_EXPORT __attribute__((visibility("default")))
#endif

FAKE_EXPORT int cuInit(unsigned int flags)
{
    (void)flags;
    return 100;
}

FAKE_EXPORT int cuGetErrorName(int error, const char **out)
{
    *out = error == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
    return 0;
}

FAKE_EXPORT int cuGetErrorString(int error, const char **out)
{
    *out = error == 100 ? "no CUDA-capable device is detected" : "unknown error";
    return 0;
}

#ifdef FAKE_CUDA_FULL
/* Every other entry point: never called by the tests (cuInit fails first). */
#define FAKE(name)                                                                                 \
    FAKE_EXPORT int name(void)                                                                     \
    {                                                                                              \
        return 999;                                                                                \
    }
FAKE(cuDeviceGetCount)
FAKE(cuDeviceGet)
FAKE(cuDeviceGetUuid_v2)
FAKE(cuDevicePrimaryCtxRetain)
FAKE(cuDevicePrimaryCtxRelease_v2)
FAKE(cuCtxPushCurrent_v2)
FAKE(cuCtxPopCurrent_v2)
FAKE(cuStreamCreate)
FAKE(cuStreamDestroy_v2)
FAKE(cuStreamSynchronize)
FAKE(cuImportExternalMemory)
FAKE(cuExternalMemoryGetMappedBuffer)
FAKE(cuDestroyExternalMemory)
FAKE(cuImportExternalSemaphore)
FAKE(cuSignalExternalSemaphoresAsync)
FAKE(cuWaitExternalSemaphoresAsync)
FAKE(cuDestroyExternalSemaphore)
FAKE(cuMemFree_v2)
FAKE(cuMemcpyDtoH_v2)
FAKE(cuMemcpyHtoD_v2)
FAKE(cuModuleLoadData)
FAKE(cuModuleGetFunction)
FAKE(cuModuleUnload)
FAKE(cuLaunchKernel)
FAKE(cuMemcpyDtoDAsync_v2)
FAKE(cuMemcpyPeerAsync)
FAKE(cuDeviceCanAccessPeer)
#endif
