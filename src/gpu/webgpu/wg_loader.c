/* Loading the WebGPU implementation (wg_loader.h): dlopen once per process, every core function
 * by dlsym, the native extensions where present. */
#include "gpu/webgpu/wg_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static wg_procs procs;
static cubec_status load_error; /* kept for every later call: the library does not come later */

/* Fills the table from `lib`; the name of the first core function missing, or NULL. */
static const char *fill(void *lib)
{
#define WG_PROC_LOAD_(name)                                                                        \
    *(void **)&procs.name = dlsym(lib, "wgpu" #name);                                              \
    if (!procs.name) return "wgpu" #name;
    WG_CORE_PROCS(WG_PROC_LOAD_)
#undef WG_PROC_LOAD_
    *(void **)&procs.DevicePoll = dlsym(lib, "wgpuDevicePoll");
    *(void **)&procs.InstanceEnumerateAdapters = dlsym(lib, "wgpuInstanceEnumerateAdapters");
    *(void **)&procs.ComputePassEncoderWriteTimestamp =
        dlsym(lib, "wgpuComputePassEncoderWriteTimestamp");
    *(void **)&procs.QueueGetTimestampPeriod = dlsym(lib, "wgpuQueueGetTimestampPeriod");
    *(void **)&procs.GetVersion = dlsym(lib, "wgpuGetVersion");
    return NULL;
}

static void load(void)
{
    const char *candidates[4];
    int n = 0;
    const char *env = getenv("CUBEC_WEBGPU_LIBRARY");
    if (env && *env) {
        /* A library named by the program is the only one tried: falling back to another
         * would run on an implementation the program did not choose. */
        candidates[n++] = env;
    } else {
#ifdef CUBEC_WEBGPU_BUILD_LIBRARY
        candidates[n++] = CUBEC_WEBGPU_BUILD_LIBRARY;
#endif
        candidates[n++] = "libwgpu_native.so";
        candidates[n++] = "libwebgpu_dawn.so";
    }
    char tried[2048] = "";
    for (int i = 0; i < n; i++) {
        void *lib = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char *why = dlerror();
            snprintf(tried + strlen(tried), sizeof tried - strlen(tried), "%s%s (%s)",
                     i ? "; " : "", candidates[i], why ? why : "not loadable");
            continue;
        }
        const char *missing = fill(lib);
        if (missing) {
            /* A library that is not a webgpu.h implementation of this header's generation:
             * refused by name rather than half used. It stays loaded (its state is unknown). */
            load_error = status_make(CUBEC_UNSUPPORTED,
                                     "the WebGPU library '%s' lacks %s (webgpu.h of wgpu-native "
                                     "29 or a Dawn of the same header is needed)",
                                     candidates[i], missing);
            memset(&procs, 0, sizeof procs);
            return;
        }
        procs.path = candidates[i];
        return;
    }
    load_error = status_make(CUBEC_NOT_FOUND,
                             "no WebGPU implementation could be loaded (set CUBEC_WEBGPU_LIBRARY "
                             "to libwgpu_native.so); tried: %s",
                             tried);
}

cubec_status wg_procs_get(const wg_procs **out)
{
    pthread_once(&once, load);
    if (load_error)
        return status_make(cubec_status_code(load_error), "%s", cubec_status_message(load_error));
    *out = &procs;
    return NULL;
}
