/* Checks interop/cuda_driver.h against the CUDA toolkit's cuda.h where one is installed: the
 * restated structs have cuda.h's sizes and member offsets, the enum values match, and the names
 * the loader looks up are those cuda.h's macros resolve the plain names to. Built by CMake when
 * cuda.h is found (ctest cuda_layout_check); on the GPU machine by hand:
 *   cc -std=c11 -I/usr/local/cuda/include -Isrc tests/interop/cuda_layout_check.c */
#include <cuda.h>

#include "interop/cuda_driver.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define SAME_SIZE(ours, theirs) _Static_assert(sizeof(ours) == sizeof(theirs), #ours " size")
#define SAME_OFFSET(ours, theirs, a, b)                                                            \
    _Static_assert(offsetof(ours, a) == offsetof(theirs, b), #ours "." #a " offset")

SAME_SIZE(cu_deviceptr, CUdeviceptr);
SAME_SIZE(cu_uuid, CUuuid);
SAME_SIZE(cu_ext_memory_desc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC);
SAME_OFFSET(cu_ext_memory_desc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle.fd, handle.fd);
SAME_OFFSET(cu_ext_memory_desc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, size, size);
SAME_OFFSET(cu_ext_memory_desc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, flags, flags);
SAME_SIZE(cu_ext_buffer_desc, CUDA_EXTERNAL_MEMORY_BUFFER_DESC);
SAME_OFFSET(cu_ext_buffer_desc, CUDA_EXTERNAL_MEMORY_BUFFER_DESC, size, size);
SAME_OFFSET(cu_ext_buffer_desc, CUDA_EXTERNAL_MEMORY_BUFFER_DESC, flags, flags);
SAME_SIZE(cu_ext_semaphore_desc, CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC);
SAME_OFFSET(cu_ext_semaphore_desc, CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, handle.fd, handle.fd);
SAME_OFFSET(cu_ext_semaphore_desc, CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, flags, flags);
SAME_SIZE(cu_ext_signal_params, CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS);
SAME_OFFSET(cu_ext_signal_params, CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, params.fence.value,
            params.fence.value);
SAME_OFFSET(cu_ext_signal_params, CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, flags, flags);
SAME_SIZE(cu_ext_wait_params, CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS);
SAME_OFFSET(cu_ext_wait_params, CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, params.fence.value,
            params.fence.value);
SAME_OFFSET(cu_ext_wait_params, CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, flags, flags);
_Static_assert((int)CU_EXT_MEMORY_OPAQUE_FD == (int)CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD,
               "opaque fd");
_Static_assert(CU_EXT_MEMORY_DEDICATED == CUDA_EXTERNAL_MEMORY_DEDICATED, "dedicated");
_Static_assert((int)CU_EXT_SEMAPHORE_TIMELINE_FD ==
                   (int)CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD,
               "timeline fd");

#define NAME_OF(x) #x
#define RESOLVED(x) NAME_OF(x)

int main(void)
{
    /* What cuda.h maps each plain name to, against the name the loader asks for. */
    static const char *const pairs[][2] = {
        {RESOLVED(cuDeviceGetUuid), "cuDeviceGetUuid_v2"},
        {RESOLVED(cuDevicePrimaryCtxRelease), "cuDevicePrimaryCtxRelease_v2"},
        {RESOLVED(cuCtxPushCurrent), "cuCtxPushCurrent_v2"},
        {RESOLVED(cuCtxPopCurrent), "cuCtxPopCurrent_v2"},
        {RESOLVED(cuStreamDestroy), "cuStreamDestroy_v2"},
        {RESOLVED(cuMemFree), "cuMemFree_v2"},
        {RESOLVED(cuMemcpyDtoH), "cuMemcpyDtoH_v2"},
        {RESOLVED(cuMemcpyHtoD), "cuMemcpyHtoD_v2"},
        {RESOLVED(cuSignalExternalSemaphoresAsync), "cuSignalExternalSemaphoresAsync"},
        {RESOLVED(cuWaitExternalSemaphoresAsync), "cuWaitExternalSemaphoresAsync"},
        {RESOLVED(cuStreamCreate), "cuStreamCreate"},
        {RESOLVED(cuLaunchKernel), "cuLaunchKernel"},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (strcmp(pairs[i][0], pairs[i][1]) != 0) {
            printf("cuda.h resolves to %s, the loader asks for %s\n", pairs[i][0], pairs[i][1]);
            bad = 1;
        }
    printf("cuda_layout_check: %s (CUDA_VERSION %d)\n", bad ? "FAILED" : "ok", CUDA_VERSION);
    return bad;
}
