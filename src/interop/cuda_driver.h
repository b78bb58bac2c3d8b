/* The part of the CUDA driver API that interop uses, loaded at run time (dlopen of libcuda.so.1),
 * so cubec builds and runs where CUDA is absent (as IREE and Open MPI load it). The types below
 * restate cuda.h's ABI for 64-bit Linux: cuda.h is not a build dependency. Their sizes and offsets
 * are checked against the real header by tests/interop/cuda_layout_check.c where the toolkit is
 * installed. */
#ifndef CUBEC_INTEROP_CUDA_DRIVER_H
#define CUBEC_INTEROP_CUDA_DRIVER_H

#include "base/status.h"

#include <stddef.h>

typedef int cu_result; /* CUresult: 0 is CUDA_SUCCESS */
typedef int cu_device; /* CUdevice: an ordinal */
typedef unsigned long long cu_deviceptr;
typedef struct cu_context_st *cu_context;
typedef struct cu_stream_st *cu_stream;
typedef struct cu_module_st *cu_module;
typedef struct cu_function_st *cu_function;
typedef struct cu_ext_memory_st *cu_ext_memory;
typedef struct cu_ext_semaphore_st *cu_ext_semaphore;

typedef struct cu_uuid {
    char bytes[16];
} cu_uuid;

enum {
    CU_EXT_MEMORY_OPAQUE_FD = 1,      /* CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD */
    CU_EXT_MEMORY_DEDICATED = 1,      /* CUDA_EXTERNAL_MEMORY_DEDICATED */
    CU_EXT_SEMAPHORE_TIMELINE_FD = 9, /* CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD */
};

/* CUDA_EXTERNAL_MEMORY_HANDLE_DESC */
typedef struct cu_ext_memory_desc {
    int type;
    union {
        int fd;
        struct {
            void *handle;
            const void *name;
        } win32;
        const void *nv_sci_buf;
    } handle;
    unsigned long long size;
    unsigned int flags;
    unsigned int reserved[16];
} cu_ext_memory_desc;

/* CUDA_EXTERNAL_MEMORY_BUFFER_DESC */
typedef struct cu_ext_buffer_desc {
    unsigned long long offset;
    unsigned long long size;
    unsigned int flags;
    unsigned int reserved[16];
} cu_ext_buffer_desc;

/* CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC */
typedef struct cu_ext_semaphore_desc {
    int type;
    union {
        int fd;
        struct {
            void *handle;
            const void *name;
        } win32;
        const void *nv_sci_sync;
    } handle;
    unsigned int flags;
    unsigned int reserved[16];
} cu_ext_semaphore_desc;

/* CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS: a timeline semaphore uses params.fence.value. */
typedef struct cu_ext_signal_params {
    struct {
        struct {
            unsigned long long value;
        } fence;
        union {
            void *fence;
            unsigned long long reserved;
        } nv_sci_sync;
        struct {
            unsigned long long key;
        } keyed_mutex;
        unsigned int reserved[12];
    } params;
    unsigned int flags;
    unsigned int reserved[16];
} cu_ext_signal_params;

/* CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS */
typedef struct cu_ext_wait_params {
    struct {
        struct {
            unsigned long long value;
        } fence;
        union {
            void *fence;
            unsigned long long reserved;
        } nv_sci_sync;
        struct {
            unsigned long long key;
            unsigned int timeout_ms;
        } keyed_mutex;
        unsigned int reserved[10];
    } params;
    unsigned int flags;
    unsigned int reserved[16];
} cu_ext_wait_params;

/* The entry points, by the names libcuda exports (cuda.h maps the plain names of some to their
 * _v2 versions; the table uses what the header's mapping resolves to). */
typedef struct cuda_driver {
    cu_result (*init)(unsigned int flags);
    cu_result (*get_error_name)(cu_result error, const char **out);
    cu_result (*get_error_string)(cu_result error, const char **out);
    cu_result (*device_get_count)(int *count);
    cu_result (*device_get)(cu_device *device, int ordinal);
    cu_result (*device_get_uuid)(cu_uuid *uuid, cu_device device);
    cu_result (*primary_ctx_retain)(cu_context *ctx, cu_device device);
    cu_result (*primary_ctx_release)(cu_device device);
    cu_result (*ctx_push)(cu_context ctx);
    cu_result (*ctx_pop)(cu_context *ctx);
    cu_result (*stream_create)(cu_stream *stream, unsigned int flags);
    cu_result (*stream_destroy)(cu_stream stream);
    cu_result (*stream_synchronize)(cu_stream stream);
    cu_result (*import_memory)(cu_ext_memory *out, const cu_ext_memory_desc *desc);
    cu_result (*memory_get_mapped_buffer)(cu_deviceptr *out, cu_ext_memory mem,
                                          const cu_ext_buffer_desc *desc);
    cu_result (*destroy_memory)(cu_ext_memory mem);
    cu_result (*import_semaphore)(cu_ext_semaphore *out, const cu_ext_semaphore_desc *desc);
    cu_result (*signal_semaphores)(const cu_ext_semaphore *sems, const cu_ext_signal_params *p,
                                   unsigned int count, cu_stream stream);
    cu_result (*wait_semaphores)(const cu_ext_semaphore *sems, const cu_ext_wait_params *p,
                                 unsigned int count, cu_stream stream);
    cu_result (*destroy_semaphore)(cu_ext_semaphore sem);
    cu_result (*mem_free)(cu_deviceptr ptr);
    cu_result (*memcpy_dtoh)(void *dst, cu_deviceptr src, size_t bytes);
    cu_result (*memcpy_htod)(cu_deviceptr dst, const void *src, size_t bytes);
    cu_result (*module_load_data)(cu_module *module, const void *image);
    cu_result (*module_get_function)(cu_function *fn, cu_module module, const char *name);
    cu_result (*module_unload)(cu_module module);
    cu_result (*launch_kernel)(cu_function fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared_bytes, cu_stream stream,
                               void **params, void **extra);
    /* cubec_copy_peer's cuda-interop path (interop/cuda_peer.c). */
    cu_result (*memcpy_dtod_async)(cu_deviceptr dst, cu_deviceptr src, size_t bytes,
                                   cu_stream stream);
    cu_result (*memcpy_peer_async)(cu_deviceptr dst, cu_context dst_ctx, cu_deviceptr src,
                                   cu_context src_ctx, size_t bytes, cu_stream stream);
    cu_result (*device_can_access_peer)(int *can, cu_device device, cu_device peer);
} cuda_driver;

/* The process's driver table, loaded and cuInit'ed on first use (thread-safe; later calls return
 * the same table or the same refusal). The library is $CUBEC_CUDA_LIBRARY when set, else
 * libcuda.so.1. Errors: CUBEC_UNSUPPORTED naming the library and dlerror's reason when it cannot
 * be loaded, the first entry point it lacks, or cuInit's error (no CUDA device, driver too old).
 * The library stays loaded for the life of the process (CUDA keeps threads of its own). */
MUST_USE cubec_status cuda_driver_get(const cuda_driver **out);

/* Loads the driver from `path` into *out without caching or cuInit (cuda_driver_get's steps,
 * apart for tests that load a stand-in library). */
MUST_USE cubec_status cuda_driver_load(const char *path, cuda_driver *out);

/* A CUDA call's failure as a status: "<what>: <CUDA_ERROR_NAME> (<its description>)". */
MUST_USE cubec_status cuda_status(const cuda_driver *cu, cu_result r, const char *what);

#endif
