/* Public entry points: devices, streams, flush/sync, checks and fault injection (memory is in
 * api_memory.c). */
#include "api/api_common.h"
#include "api/api_struct.h"
#include "base/config.h"
#include "base/log.h"
#include "gpu/gpu.h"
#include "interop/cuda_interop.h"
#include "server/buffers.h"
#include "server/device.h"
#include "server/graph.h"
#include "server/streams.h"
#include "server/sync.h"

#include <stdlib.h>
#include <string.h>

cubec_status cubec_device_open(const cubec_device_desc *desc, cubec_device **out_device)
{
    if (!out_device) return INVALID_ARG("cubec_device_open: out_device is NULL");
    *out_device = NULL;
    if (!desc) return server_open(NULL, out_device);
    RETURN_IF_ERROR(API_STRUCT_CHECK(desc, cubec_device_desc, CUBEC_DEVICE_DESC_INIT,
                                     "cubec_device_open", "desc"));
    cubec_device_desc whole;
    api_struct_read(desc, &whole, sizeof whole);
    return server_open(&whole, out_device);
}

void cubec_device_close(cubec_device *device)
{
    if (!device) return;
    /* Taken out of the registry first: a second close, or calls racing this one that come after
     * it, find it closed. A pointer that is not open is left alone (closing returns nothing to
     * refuse with), and said so in the log. */
    if (!device_registry_remove(device)) {
        LOG(LOG_WARN, LOG_SYS_DEVICE,
            "cubec_device_close: device %p is not an open device (closed, or never opened): "
            "ignored",
            (void *)device);
        return;
    }
    /* What CUDA holds of the device's memory goes before the memory does. */
    cuda_interop_forget(device);
    server_close(device);
}

cubec_status cubec_device_get_info(cubec_device *device, cubec_device_info *out_info)
{
    if (!out_info) return INVALID_ARG("cubec_device_get_info: out_info is NULL");
    RETURN_IF_ERROR(API_STRUCT_CHECK(out_info, cubec_device_info, CUBEC_DEVICE_INFO_INIT,
                                     "cubec_device_get_info", "out_info"));
    api_struct_clear(out_info);
    RETURN_IF_ERROR(api_device(device, "cubec_device_get_info"));
    pthread_mutex_lock(&device->lock);
    cubec_device_info info = device->info;
    pthread_mutex_unlock(&device->lock);
    /* The backend and what it can do are the seam's, constant from open to close. */
    snprintf(info.backend, sizeof info.backend, "%s", device->gpu->ops->name);
    info.capabilities = gpu_capabilities(&device->gpu->caps, device->gpu->ops);
    api_struct_write(out_info, &info);
    return NULL;
}

cubec_status cubec_device_get_vulkan_handles(cubec_device *device,
                                             cubec_vulkan_handles *out_handles)
{
    if (!out_handles) return INVALID_ARG("cubec_device_get_vulkan_handles: out_handles is NULL");
    RETURN_IF_ERROR(API_STRUCT_CHECK(out_handles, cubec_vulkan_handles, CUBEC_VULKAN_HANDLES_INIT,
                                     "cubec_device_get_vulkan_handles", "out_handles"));
    api_struct_clear(out_handles);
    RETURN_IF_ERROR(api_device(device, "cubec_device_get_vulkan_handles"));
    /* Constant from open to close: no lock needed. */
    if (!device->gpu->ops->vulkan_handles)
        return status_make(CUBEC_UNSUPPORTED,
                           "cubec_device_get_vulkan_handles: the %s backend has no Vulkan objects",
                           device->gpu->ops->name);
    cubec_vulkan_handles whole = CUBEC_VULKAN_HANDLES_INIT;
    device->gpu->ops->vulkan_handles(device->gpu, &whole);
    api_struct_write(out_handles, &whole);
    return NULL;
}

/* The backend the configuration names (CUBEC_BACKEND), read as cubec_device_open reads it, so
 * that counting and peeking look at the backend an open would use. */
static cubec_status configured_backend(const char *call, gpu_backend *out)
{
    cubec_config *c = malloc(sizeof *c); /* large (the pool list's text): not on the stack */
    if (!c) return status_make(CUBEC_OUT_OF_MEMORY, "%s: host out of memory", call);
    cubec_status err = config_load(c);
    if (!err) *out = (gpu_backend)c->backend;
    free(c);
    return status_annotate(err, "%s", call);
}

cubec_status cubec_device_get_count(uint32_t *out_count)
{
    if (!out_count) return INVALID_ARG("cubec_device_get_count: out_count is NULL");
    *out_count = 0;
    gpu_backend backend = (gpu_backend)0;
    RETURN_IF_ERROR(configured_backend("cubec_device_get_count", &backend));
    return gpu_device_count(backend, out_count);
}

cubec_status cubec_device_peek(uint32_t index, cubec_device_info *out_info)
{
    if (!out_info) return INVALID_ARG("cubec_device_peek: out_info is NULL");
    RETURN_IF_ERROR(API_STRUCT_CHECK(out_info, cubec_device_info, CUBEC_DEVICE_INFO_INIT,
                                     "cubec_device_peek", "out_info"));
    api_struct_clear(out_info);
    gpu_backend backend = (gpu_backend)0;
    RETURN_IF_ERROR(configured_backend("cubec_device_peek", &backend));
    /* Into a copy: a backend that fails part way must not leave half an answer (cubec.h). */
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    cubec_status err = gpu_device_peek(backend, index, &info);
    if (err) return status_annotate(err, "cubec_device_peek");
    snprintf(info.backend, sizeof info.backend, "%s", gpu_backend_name(backend));
    api_struct_write(out_info, &info);
    return NULL;
}

cubec_status cubec_flush(cubec_device *device, cubec_stream stream)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_flush"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_flush", &s);
    if (!err) err = server_flush(device, s);
    return api_unlock(device, err);
}

cubec_status cubec_sync(cubec_device *device, cubec_stream stream)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_sync"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_sync", &s);
    if (!err) err = server_sync(device, s);
    return api_unlock(device, err);
}

cubec_status cubec_stream_new(cubec_device *device, cubec_stream *out_stream)
{
    if (!out_stream) return INVALID_ARG("cubec_stream_new: out_stream is NULL");
    *out_stream = 0;
    RETURN_IF_ERROR(api_lock(device, "cubec_stream_new"));
    return api_unlock(device, server_stream_new(device, out_stream));
}

cubec_status cubec_stream_get_current(cubec_device *device, cubec_stream *out_stream)
{
    if (!out_stream) return INVALID_ARG("cubec_stream_get_current: out_stream is NULL");
    *out_stream = 0;
    RETURN_IF_ERROR(api_lock(device, "cubec_stream_get_current"));
    return api_unlock(device, server_stream_current(device, out_stream));
}

/* The failure of the first listed buffer that carries one (after submitting its queued work). */
static cubec_status check_buffers(cubec_device *d, const char *fn, const cubec_buffer *buffers,
                                  uint32_t count)
{
    if (count && !buffers) return INVALID_ARG("%s: buffers is NULL with count %u", fn, count);
    for (uint32_t i = 0; i < count; i++) {
        buffer_obj *b;
        char arg[64];
        snprintf(arg, sizeof arg, "%s: buffers[%u]", fn, i);
        RETURN_IF_ERROR(api_buffer(d, buffers[i], arg, &b));
    }
    for (uint32_t i = 0; i < count; i++) {
        buffer_obj *b = handle_table_get(&d->buffers->handles, buffers[i].id);
        if (!b) return INVALID_ARG("%s: buffers[%u] was released meanwhile", fn, i);
        /* Whatever is queued for it must have been recorded (and so judged) first. */
        RETURN_IF_ERROR(server_check_buffer(d, b));
    }
    return NULL;
}

cubec_status cubec_check(cubec_device *device, const cubec_buffer *buffers, uint32_t count)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_check"));
    return api_unlock(device, check_buffers(device, "cubec_check", buffers, count));
}

cubec_status cubec_sync_check(cubec_device *device, cubec_stream stream,
                              const cubec_buffer *buffers, uint32_t count)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_sync_check"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_sync_check", &s);
    if (!err) err = server_graph_refuse(device, s, "cubec_sync_check");
    if (!err) err = check_buffers(device, "cubec_sync_check", buffers, count);
    if (!err) err = server_sync(device, s);
    return api_unlock(device, err);
}

cubec_status cubec_fault_inject(cubec_device *device, cubec_fault_kind kind, uint64_t nth)
{
    if ((unsigned)kind >= CUBEC_FAULT_KIND_COUNT)
        return INVALID_ARG("cubec_fault_inject: kind %d is not a cubec_fault_kind", (int)kind);
    RETURN_IF_ERROR(api_lock(device, "cubec_fault_inject"));
    server_fault_inject(device, kind, nth);
    return api_unlock(device, NULL);
}

cubec_status cubec_fault_get_counts(cubec_device *device,
                                    uint64_t out_counts[CUBEC_FAULT_KIND_COUNT])
{
    if (!out_counts) return INVALID_ARG("cubec_fault_get_counts: out_counts is NULL");
    memset(out_counts, 0, CUBEC_FAULT_KIND_COUNT * sizeof *out_counts);
    RETURN_IF_ERROR(api_lock(device, "cubec_fault_get_counts"));
    for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++)
        out_counts[k] = device->faults.count[k];
    return api_unlock(device, NULL);
}
