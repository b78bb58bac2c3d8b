/* The WebGPU implementation, loaded at run time: the one table of webgpu.h functions the WebGPU
 * backend calls (wg_procs), filled by dlopen/dlsym once per process.
 *
 * Why at run time: cubec must build and run where no WebGPU implementation is installed, and the
 * implementations (wgpu-native from the PyPI `wgpu` wheel, Dawn) are not ABI-interchangeable yet,
 * so none is linked. The library tried: $CUBEC_WEBGPU_LIBRARY alone when it is set, else the copy
 * the build tree fetched (CUBEC_WEBGPU_BUILD_LIBRARY, cmake/WebGPU.cmake), then libwgpu_native.so
 * and libwebgpu_dawn.so from the system's search path. Native extensions (wgpu-native's wgpu.h) are
 * optional entries, NULL where the library lacks them. */
#ifndef CUBEC_GPU_WEBGPU_WG_LOADER_H
#define CUBEC_GPU_WEBGPU_WG_LOADER_H

#include "base/status.h"

/* Only the types and proc typedefs: no symbol is referenced at link time. */
#define WGPU_SKIP_DECLARATIONS
#include <webgpu/webgpu.h>

#include <stddef.h>
#include <stdint.h>

/* The core functions used, by name after their `wgpu` prefix (the proc type is WGPUProc##name). */
#define WG_CORE_PROCS(X)                                                                           \
    X(CreateInstance)                                                                              \
    X(InstanceRequestAdapter)                                                                      \
    X(InstanceProcessEvents)                                                                       \
    X(InstanceRelease)                                                                             \
    X(AdapterGetInfo)                                                                              \
    X(AdapterInfoFreeMembers)                                                                      \
    X(AdapterGetLimits)                                                                            \
    X(AdapterHasFeature)                                                                           \
    X(AdapterRequestDevice)                                                                        \
    X(AdapterRelease)                                                                              \
    X(DeviceGetQueue)                                                                              \
    X(DeviceGetLimits)                                                                             \
    X(DeviceCreateBuffer)                                                                          \
    X(DeviceCreateShaderModule)                                                                    \
    X(DeviceCreateBindGroupLayout)                                                                 \
    X(DeviceCreatePipelineLayout)                                                                  \
    X(DeviceCreateComputePipeline)                                                                 \
    X(DeviceCreateBindGroup)                                                                       \
    X(DeviceCreateCommandEncoder)                                                                  \
    X(DeviceCreateQuerySet)                                                                        \
    X(DevicePushErrorScope)                                                                        \
    X(DevicePopErrorScope)                                                                         \
    X(DeviceDestroy)                                                                               \
    X(DeviceRelease)                                                                               \
    X(BufferDestroy)                                                                               \
    X(BufferRelease)                                                                               \
    X(BufferMapAsync)                                                                              \
    X(BufferGetConstMappedRange)                                                                   \
    X(BufferUnmap)                                                                                 \
    X(QueueWriteBuffer)                                                                            \
    X(QueueWriteTexture)                                                                           \
    X(QueueSubmit)                                                                                 \
    X(QueueOnSubmittedWorkDone)                                                                    \
    X(QueueRelease)                                                                                \
    X(CommandEncoderBeginComputePass)                                                              \
    X(CommandEncoderCopyBufferToBuffer)                                                            \
    X(CommandEncoderClearBuffer)                                                                   \
    X(CommandEncoderResolveQuerySet)                                                               \
    X(CommandEncoderWriteTimestamp)                                                                \
    X(CommandEncoderFinish)                                                                        \
    X(CommandEncoderRelease)                                                                       \
    X(CommandBufferRelease)                                                                        \
    X(ComputePassEncoderSetPipeline)                                                               \
    X(ComputePassEncoderSetBindGroup)                                                              \
    X(ComputePassEncoderSetImmediates)                                                             \
    X(ComputePassEncoderDispatchWorkgroups)                                                        \
    X(ComputePassEncoderDispatchWorkgroupsIndirect)                                                \
    X(ComputePassEncoderEnd)                                                                       \
    X(ComputePassEncoderRelease)                                                                   \
    X(ShaderModuleRelease)                                                                         \
    X(ComputePipelineRelease)                                                                      \
    X(BindGroupLayoutRelease)                                                                      \
    X(PipelineLayoutRelease)                                                                       \
    X(BindGroupRelease)                                                                            \
    X(DeviceCreateTexture)                                                                         \
    X(DeviceCreateSampler)                                                                         \
    X(TextureCreateView)                                                                           \
    X(TextureDestroy)                                                                              \
    X(TextureRelease)                                                                              \
    X(TextureViewRelease)                                                                          \
    X(SamplerRelease)                                                                              \
    X(CommandEncoderCopyBufferToTexture)                                                           \
    X(CommandEncoderCopyTextureToBuffer)                                                           \
    X(QuerySetDestroy)                                                                             \
    X(QuerySetRelease)

/* wgpu-native's extensions (wgpu.h), declared here rather than included: only these. */
typedef WGPUBool (*wg_device_poll_fn)(WGPUDevice device, WGPUBool wait,
                                      const uint64_t *submission_index);
typedef size_t (*wg_enumerate_adapters_fn)(WGPUInstance instance, const void *options,
                                           WGPUAdapter *adapters);
typedef void (*wg_pass_write_timestamp_fn)(WGPUComputePassEncoder pass, WGPUQuerySet set,
                                           uint32_t index);
typedef float (*wg_timestamp_period_fn)(WGPUQueue queue);
/* The implementation's version: major << 24 | minor << 16 | patch << 8 | build. */
typedef uint32_t (*wg_get_version_fn)(void);

typedef struct wg_procs {
#define WG_PROC_MEMBER_(name) WGPUProc##name name;
    WG_CORE_PROCS(WG_PROC_MEMBER_)
#undef WG_PROC_MEMBER_
    wg_device_poll_fn DevicePoll;                       /* NULL: not wgpu-native */
    wg_enumerate_adapters_fn InstanceEnumerateAdapters; /* NULL: one adapter, requested */
    /* Timestamps inside compute passes (WGPUNativeFeature_TimestampQueryInsidePasses). */
    wg_pass_write_timestamp_fn ComputePassEncoderWriteTimestamp;
    /* Nanoseconds per tick of resolved timestamps; NULL: 1 (webgpu.h's, in nanoseconds). */
    wg_timestamp_period_fn QueueGetTimestampPeriod;
    /* wgpu-native's version (`cubec info` shows it); NULL: another implementation. */
    wg_get_version_fn GetVersion;
    const char *path; /* the library loaded */
} wg_procs;

/* The table, loading the library on the first call (thread-safe); CUBEC_NOT_FOUND naming every
 * path tried when none loads, CUBEC_UNSUPPORTED naming the first core function a library lacks.
 * The library stays loaded until the process exits. */
MUST_USE cubec_status wg_procs_get(const wg_procs **out);

/* A webgpu.h string view as a C string's pointer and length. */
static inline WGPUStringView wg_str(const char *s)
{
    return (WGPUStringView){s, s ? WGPU_STRLEN : 0};
}

#endif
