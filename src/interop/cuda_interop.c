/* CUDA on the same GPU (interop/cuda_interop.h). */
#include "interop/cuda_interop.h"

#include "api/api_inbound.h"
#include "api/api_struct.h"
#include "base/status.h"
#include "interop/cuda_driver.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One buffer mapped into CUDA. */
typedef struct mapping {
    uint64_t buffer; /* cubec_buffer.id */
    cu_ext_memory memory;
    cu_deviceptr ptr;
    uint64_t size;
    struct mapping *next;
} mapping;

/* What CUDA holds for one cubec device: the CUDA device with its UUID, its primary context
 * (retained), the imported timeline and the mapped buffers. */
typedef struct device_entry {
    cubec_device *device;
    cu_device cuda_device;
    int cuda_ordinal;
    cu_context context;
    cu_ext_semaphore timeline; /* NULL until the first wait */
    /* The device's inbound timeline (api/api_inbound.h) imported, NULL until the first
     * cubec_stream_wait_cuda, and the last value CUDA was asked to signal on it. */
    cu_ext_semaphore inbound;
    uint64_t inbound_last;
    mapping *mappings;
    struct device_entry *next;
} device_entry;

/* Few devices use CUDA, and these calls are not on a hot path: one list under one lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static device_entry *entries;

static device_entry *find_entry(cubec_device *device)
{
    for (device_entry *e = entries; e; e = e->next)
        if (e->device == device) return e;
    return NULL;
}

/* The CUDA device whose UUID is the cubec device's, found once per device. */
static cubec_status open_entry(const cuda_driver *cu, cubec_device *device, const char *fn,
                               device_entry **out)
{
    *out = find_entry(device);
    if (*out) return NULL;
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    RETURN_IF_ERROR(cubec_device_get_info(device, &info));
    int count = 0;
    cu_result r = cu->device_get_count(&count);
    if (r) return cuda_status(cu, r, "cuDeviceGetCount");
    for (int i = 0; i < count; i++) {
        cu_device dev = 0;
        cu_uuid uuid;
        if (cu->device_get(&dev, i) || cu->device_get_uuid(&uuid, dev)) continue;
        if (memcmp(uuid.bytes, info.device_uuid, sizeof uuid.bytes) != 0) continue;
        device_entry *e = calloc(1, sizeof *e);
        if (!e) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (%s)", fn);
        r = cu->primary_ctx_retain(&e->context, dev);
        if (r) {
            free(e);
            return cuda_status(cu, r, "cuDevicePrimaryCtxRetain");
        }
        e->device = device;
        e->cuda_device = dev;
        e->cuda_ordinal = i;
        e->next = entries;
        entries = e;
        *out = e;
        return NULL;
    }
    return status_make(CUBEC_UNSUPPORTED,
                       "%s: no CUDA device (of %d) is the same GPU as cubec's '%s' (no UUID "
                       "matches): CUDA interop needs both on one GPU",
                       fn, count, info.name);
}

/* The driver, the device's entry, and its context made current for the calls that follow
 * (pop_context undoes it). */
static cubec_status enter(cubec_device *device, const char *fn, const cuda_driver **cu,
                          device_entry **e)
{
    cubec_status err = cuda_driver_get(cu);
    if (err) return status_annotate(err, "%s", fn);
    RETURN_IF_ERROR(open_entry(*cu, device, fn, e));
    if (!*e) return status_make(CUBEC_INTERNAL, "%s: no CUDA device entry", fn);
    cu_result r = (*cu)->ctx_push((*e)->context);
    return r ? cuda_status(*cu, r, "cuCtxPushCurrent") : NULL;
}

static void pop_context(const cuda_driver *cu)
{
    cu_context ignored;
    cu->ctx_pop(&ignored);
}

static cubec_status map_buffer(const cuda_driver *cu, cubec_device *device, cubec_buffer buffer,
                               device_entry *e, cubec_cuda_mapping *out)
{
    for (mapping *m = e->mappings; m; m = m->next)
        if (m->buffer == buffer.id) {
            out->device_ptr = m->ptr;
            out->size = m->size;
            out->cuda_device = e->cuda_ordinal;
            return NULL;
        }
    cubec_export_info x = CUBEC_EXPORT_INFO_INIT;
    RETURN_IF_ERROR(cubec_buffer_export(device, buffer, &x));
    mapping *m = calloc(1, sizeof *m);
    if (!m) {
        close(x.fd);
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (cubec_cuda_map)");
    }
    cu_ext_memory_desc md = {.type = CU_EXT_MEMORY_OPAQUE_FD,
                             .handle.fd = x.fd,
                             .size = x.allocation_size,
                             .flags = x.dedicated ? CU_EXT_MEMORY_DEDICATED : 0};
    cu_result r = cu->import_memory(&m->memory, &md);
    if (r) {
        close(x.fd); /* CUDA takes the fd only when the import succeeds */
        free(m);
        return cuda_status(cu, r, "cubec_cuda_map: cuImportExternalMemory");
    }
    cu_ext_buffer_desc bd = {.offset = x.offset, .size = x.size};
    r = cu->memory_get_mapped_buffer(&m->ptr, m->memory, &bd);
    if (r) {
        cu->destroy_memory(m->memory);
        free(m);
        return cuda_status(cu, r, "cubec_cuda_map: cuExternalMemoryGetMappedBuffer");
    }
    m->buffer = buffer.id;
    m->size = x.size;
    m->next = e->mappings;
    e->mappings = m;
    out->device_ptr = m->ptr;
    out->size = m->size;
    out->cuda_device = e->cuda_ordinal;
    return NULL;
}

cubec_status cubec_cuda_map(cubec_device *device, cubec_buffer buffer,
                            cubec_cuda_mapping *out_mapping)
{
    if (!out_mapping) return INVALID_ARG("cubec_cuda_map: out_mapping is NULL");
    RETURN_IF_ERROR(API_STRUCT_CHECK(out_mapping, cubec_cuda_mapping, CUBEC_CUDA_MAPPING_INIT,
                                     "cubec_cuda_map", "out_mapping"));
    cubec_cuda_mapping result = CUBEC_CUDA_MAPPING_INIT;
    result.cuda_device = -1;
    api_struct_write(out_mapping, &result);
    const cuda_driver *cu = NULL;
    device_entry *e = NULL;
    pthread_mutex_lock(&lock);
    cubec_status err = enter(device, "cubec_cuda_map", &cu, &e);
    if (!err && e) {
        err = map_buffer(cu, device, buffer, e, &result);
        pop_context(cu);
    }
    pthread_mutex_unlock(&lock);
    if (!err) api_struct_write(out_mapping, &result);
    return err;
}

/* Frees one mapping: the pointer before the memory (CUDA's rule). */
static void unmap(const cuda_driver *cu, mapping *m)
{
    cu->mem_free(m->ptr);
    cu->destroy_memory(m->memory);
    free(m);
}

cubec_status cubec_cuda_unmap(cubec_device *device, cubec_buffer buffer)
{
    pthread_mutex_lock(&lock);
    device_entry *e = find_entry(device);
    mapping **at = e ? &e->mappings : NULL;
    while (at && *at && (*at)->buffer != buffer.id)
        at = &(*at)->next;
    cubec_status err = NULL;
    if (!at || !*at) {
        err = INVALID_ARG("cubec_cuda_unmap: buffer %" PRIu64 " is not mapped into CUDA "
                          "(cubec_cuda_map) on device %p",
                          buffer.id, (void *)device);
    } else {
        const cuda_driver *cu = NULL;
        err = cuda_driver_get(&cu); /* loaded: the buffer was mapped through it */
        if (!err) {
            mapping *m = *at;
            *at = m->next;
            cu->ctx_push(e->context);
            unmap(cu, m);
            pop_context(cu);
        }
    }
    pthread_mutex_unlock(&lock);
    return err;
}

/* The device's timeline as a CUDA external semaphore, imported at the first wait. */
static cubec_status import_timeline(const cuda_driver *cu, cubec_device *device, device_entry *e)
{
    if (e->timeline) return NULL;
    int fd = -1;
    RETURN_IF_ERROR(cubec_timeline_export(device, &fd));
    cu_ext_semaphore_desc sd = {.type = CU_EXT_SEMAPHORE_TIMELINE_FD, .handle.fd = fd};
    cu_result r = cu->import_semaphore(&e->timeline, &sd);
    if (r) {
        close(fd);
        e->timeline = NULL;
        return cuda_status(cu, r, "cubec_cuda_wait_stream: cuImportExternalSemaphore");
    }
    return NULL;
}

cubec_status cubec_cuda_wait_stream(cubec_device *device, cubec_stream stream, void *cuda_stream)
{
    /* The value first: it submits the stream's work (cubec_stream_get_timeline_value). */
    uint64_t value = 0;
    RETURN_IF_ERROR(cubec_stream_get_timeline_value(device, stream, &value));
    const cuda_driver *cu = NULL;
    device_entry *e = NULL;
    pthread_mutex_lock(&lock);
    cubec_status err = enter(device, "cubec_cuda_wait_stream", &cu, &e);
    if (!err && e) {
        err = import_timeline(cu, device, e);
        if (!err && value) {
            cu_ext_wait_params p = {.params.fence.value = value};
            cu_result r = cu->wait_semaphores(&e->timeline, &p, 1, (cu_stream)cuda_stream);
            if (r)
                err = cuda_status(cu, r, "cubec_cuda_wait_stream: cuWaitExternalSemaphoresAsync");
        }
        pop_context(cu);
    }
    pthread_mutex_unlock(&lock);
    return err;
}

/* The device's inbound timeline as a CUDA external semaphore, imported at the first
 * cubec_stream_wait_cuda. */
static cubec_status import_inbound(const cuda_driver *cu, cubec_device *device, device_entry *e)
{
    if (e->inbound) return NULL;
    int fd = -1;
    RETURN_IF_ERROR(api_inbound_export(device, "cubec_stream_wait_cuda", &fd));
    cu_ext_semaphore_desc sd = {.type = CU_EXT_SEMAPHORE_TIMELINE_FD, .handle.fd = fd};
    cu_result r = cu->import_semaphore(&e->inbound, &sd);
    if (r) {
        close(fd);
        e->inbound = NULL;
        return cuda_status(cu, r, "cubec_stream_wait_cuda: cuImportExternalSemaphore");
    }
    return NULL;
}

/* Queues, on cuda_stream, the signal of the next inbound value and returns it. Values must reach
 * the semaphore in increasing order, but CUDA streams run in any order: so the stream first
 * waits for the previous value (already signalled when one stream makes every call). The wait
 * names only work queued before this call, so it cannot close a cycle. */
static cubec_status signal_inbound(const cuda_driver *cu, device_entry *e, cu_stream stream,
                                   uint64_t *out_value)
{
    uint64_t value = e->inbound_last + 1;
    if (e->inbound_last) {
        cu_ext_wait_params w = {.params.fence.value = e->inbound_last};
        cu_result r = cu->wait_semaphores(&e->inbound, &w, 1, stream);
        if (r) return cuda_status(cu, r, "cubec_stream_wait_cuda: cuWaitExternalSemaphoresAsync");
    }
    cu_ext_signal_params p = {.params.fence.value = value};
    cu_result r = cu->signal_semaphores(&e->inbound, &p, 1, stream);
    if (r) return cuda_status(cu, r, "cubec_stream_wait_cuda: cuSignalExternalSemaphoresAsync");
    e->inbound_last = value;
    *out_value = value;
    return NULL;
}

cubec_status cubec_stream_wait_cuda(cubec_device *device, cubec_stream stream, void *cuda_stream)
{
    /* Refusals that need no CUDA first: a device without the handle type says so by name. */
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    RETURN_IF_ERROR(cubec_device_get_info(device, &info));
    if (!(info.external_handles & CUBEC_EXTERNAL_TIMELINE_FD))
        return status_make(CUBEC_UNSUPPORTED,
                           "cubec_stream_wait_cuda: the device \"%s\" cannot export a timeline "
                           "semaphore (cubec_device_info.external_handles has no "
                           "CUBEC_EXTERNAL_TIMELINE_FD: VK_KHR_external_semaphore_fd)",
                           info.name);
    const cuda_driver *cu = NULL;
    device_entry *e = NULL;
    uint64_t value = 0;
    pthread_mutex_lock(&lock);
    cubec_status err = enter(device, "cubec_stream_wait_cuda", &cu, &e);
    if (!err && e) {
        err = import_inbound(cu, device, e);
        if (!err) err = signal_inbound(cu, e, (cu_stream)cuda_stream, &value);
        pop_context(cu);
    }
    pthread_mutex_unlock(&lock);
    /* Outside the interop lock (the device's close takes it under the device lock). Two calls
     * racing may queue their batches in either order: CUDA signals the values in order, so a
     * wait for the higher one implies the lower. A refusal here leaves a signal nobody waits
     * for, which costs nothing. */
    if (!err) err = api_stream_wait_inbound(device, stream, value, "cubec_stream_wait_cuda");
    return err;
}

void cuda_interop_forget(cubec_device *device)
{
    pthread_mutex_lock(&lock);
    device_entry **at = &entries;
    while (*at && (*at)->device != device)
        at = &(*at)->next;
    device_entry *e = *at;
    if (e) {
        *at = e->next;
        const cuda_driver *cu = NULL;
        cubec_status st = cuda_driver_get(&cu);
        cubec_status_free(st);
        if (cu) {
            cu->ctx_push(e->context);
            while (e->mappings) {
                mapping *m = e->mappings;
                e->mappings = m->next;
                unmap(cu, m);
            }
            if (e->timeline) cu->destroy_semaphore(e->timeline);
            if (e->inbound) cu->destroy_semaphore(e->inbound);
            pop_context(cu);
            cu->primary_ctx_release(e->cuda_device);
        }
        free(e);
    }
    pthread_mutex_unlock(&lock);
}
