/* Loading the CUDA driver at run time (interop/cuda_driver.h). */
#include "interop/cuda_driver.h"

#include "base/dl_table.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENTRY(field, symbol)                                                                       \
    {                                                                                              \
        symbol, offsetof(cuda_driver, field)                                                       \
    }

/* The _v2 names are those cuda.h's macros resolve the plain names to since CUDA 11.4 (the
 * oldest driver with cuDeviceGetUuid_v2); older names may also be exported with other
 * semantics, so the table never takes them. */
static const dl_entry entries[] = {
    ENTRY(init, "cuInit"),
    ENTRY(get_error_name, "cuGetErrorName"),
    ENTRY(get_error_string, "cuGetErrorString"),
    ENTRY(device_get_count, "cuDeviceGetCount"),
    ENTRY(device_get, "cuDeviceGet"),
    ENTRY(device_get_uuid, "cuDeviceGetUuid_v2"),
    ENTRY(primary_ctx_retain, "cuDevicePrimaryCtxRetain"),
    ENTRY(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(ctx_push, "cuCtxPushCurrent_v2"),
    ENTRY(ctx_pop, "cuCtxPopCurrent_v2"),
    ENTRY(stream_create, "cuStreamCreate"),
    ENTRY(stream_destroy, "cuStreamDestroy_v2"),
    ENTRY(stream_synchronize, "cuStreamSynchronize"),
    ENTRY(import_memory, "cuImportExternalMemory"),
    ENTRY(memory_get_mapped_buffer, "cuExternalMemoryGetMappedBuffer"),
    ENTRY(destroy_memory, "cuDestroyExternalMemory"),
    ENTRY(import_semaphore, "cuImportExternalSemaphore"),
    ENTRY(signal_semaphores, "cuSignalExternalSemaphoresAsync"),
    ENTRY(wait_semaphores, "cuWaitExternalSemaphoresAsync"),
    ENTRY(destroy_semaphore, "cuDestroyExternalSemaphore"),
    ENTRY(mem_free, "cuMemFree_v2"),
    ENTRY(memcpy_dtoh, "cuMemcpyDtoH_v2"),
    ENTRY(memcpy_htod, "cuMemcpyHtoD_v2"),
    ENTRY(module_load_data, "cuModuleLoadData"),
    ENTRY(module_get_function, "cuModuleGetFunction"),
    ENTRY(module_unload, "cuModuleUnload"),
    ENTRY(launch_kernel, "cuLaunchKernel"),
    ENTRY(memcpy_dtod_async, "cuMemcpyDtoDAsync_v2"),
    ENTRY(memcpy_peer_async, "cuMemcpyPeerAsync"),
    ENTRY(device_can_access_peer, "cuDeviceCanAccessPeer"),
};

cubec_status cuda_driver_load(const char *path, cuda_driver *out)
{
    void *lib = NULL; /* kept loaded for the process, as the table points into it */
    return dl_table_load(path, entries, sizeof entries / sizeof entries[0], out, sizeof *out,
                         "CUDA interop", "a driver older than CUDA 11.4?", &lib);
}

static struct {
    pthread_once_t once;
    cuda_driver table;
    cubec_code code; /* CUBEC_OK when the table is usable */
    char why[512];
} loaded = {.once = PTHREAD_ONCE_INIT};

static void load_once(void)
{
    const char *path = getenv("CUBEC_CUDA_LIBRARY");
    if (!path || !path[0]) path = "libcuda.so.1";
    cubec_status st = cuda_driver_load(path, &loaded.table);
    if (!st) {
        /* A driver without a usable device (or too old for this one) leaves interop
         * unavailable rather than broken. */
        cu_result r = loaded.table.init(0);
        if (r) {
            st = cuda_status(&loaded.table, r, "CUDA interop: cuInit");
            cubec_status annotated = status_make(CUBEC_UNSUPPORTED, "%s", cubec_status_message(st));
            cubec_status_free(st);
            st = annotated;
        }
    }
    loaded.code = st ? cubec_status_code(st) : CUBEC_OK;
    if (st) snprintf(loaded.why, sizeof loaded.why, "%s", cubec_status_message(st));
    cubec_status_free(st);
}

cubec_status cuda_driver_get(const cuda_driver **out)
{
    *out = NULL;
    pthread_once(&loaded.once, load_once);
    if (loaded.code != CUBEC_OK) return status_make(loaded.code, "%s", loaded.why);
    *out = &loaded.table;
    return NULL;
}

cubec_status cuda_status(const cuda_driver *cu, cu_result r, const char *what)
{
    const char *name = NULL, *text = NULL;
    if (cu->get_error_name) cu->get_error_name(r, &name);
    if (cu->get_error_string) cu->get_error_string(r, &text);
    return status_make(CUBEC_INTERNAL, "%s: %s (%s)", what, name ? name : "unknown CUDA error",
                       text ? text : "no description");
}
