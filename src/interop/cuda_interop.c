/* CUDA on the same GPU (interop/cuda_interop.h). */
#include "interop/cuda_interop.h"

#include "api/api_inbound.h"
#include "api/api_peer_cuda.h"
#include "api/api_struct.h"
#include "base/status.h"
#include "interop/cuda_driver.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
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
 * (retained), the imported timeline and the mapped buffers, and the stream of cubec_copy_peer's
 * copies to this device (NULL until the first). */
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
    cu_stream copy_stream;
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

/* The buffer ids `device` has mapped into CUDA (a malloc'ed array, NULL when none): the memory
 * whose queue-family ownership moves between cubec and CUDA. Under the interop lock. */
static cubec_status mapped_ids(cubec_device *device, const char *fn, uint64_t **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    device_entry *e = find_entry(device);
    uint32_t count = 0;
    for (mapping *m = e ? e->mappings : NULL; m; m = m->next)
        count++;
    if (!count) return NULL;
    *out = malloc(count * sizeof **out);
    if (!*out) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (%s)", fn);
    for (mapping *m = e->mappings; m; m = m->next)
        (*out)[(*n)++] = m->buffer;
    return NULL;
}

cubec_status cubec_cuda_wait_stream(cubec_device *device, cubec_stream stream, void *cuda_stream)
{
    static const char fn[] = "cubec_cuda_wait_stream";
    /* The value first: it submits the stream's work, then hands the mapped buffers to CUDA
     * (Vulkan's release to VK_QUEUE_FAMILY_EXTERNAL). */
    uint64_t *ids = NULL, value = 0;
    uint32_t n = 0;
    pthread_mutex_lock(&lock);
    cubec_status err = mapped_ids(device, fn, &ids, &n);
    pthread_mutex_unlock(&lock);
    if (!err) err = api_stream_hand_out(device, stream, ids, n, &value, fn);
    free(ids);
    if (err) return err;
    const cuda_driver *cu = NULL;
    device_entry *e = NULL;
    pthread_mutex_lock(&lock);
    err = enter(device, "cubec_cuda_wait_stream", &cu, &e);
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
    uint64_t value = 0, *ids = NULL;
    uint32_t n = 0;
    pthread_mutex_lock(&lock);
    cubec_status err = enter(device, "cubec_stream_wait_cuda", &cu, &e);
    if (!err && e) {
        err = import_inbound(cu, device, e);
        if (!err) err = signal_inbound(cu, e, (cu_stream)cuda_stream, &value);
        pop_context(cu);
    }
    if (!err) err = mapped_ids(device, "cubec_stream_wait_cuda", &ids, &n);
    pthread_mutex_unlock(&lock);
    /* Outside the interop lock (the device's close takes it under the device lock). Two calls
     * racing may queue their batches in either order: CUDA signals the values in order, so a
     * wait for the higher one implies the lower. A refusal here leaves a signal nobody waits
     * for, which costs nothing. */
    if (!err)
        err = api_stream_wait_inbound(device, stream, value, ids, n, "cubec_stream_wait_cuda");
    free(ids);
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
            if (e->copy_stream) {
                cu->stream_synchronize(e->copy_stream);
                cu->stream_destroy(e->copy_stream);
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

/* The CUDA device whose UUID is `uuid`, or -1. */
static int ordinal_of(const cuda_driver *cu, const uint8_t uuid[16], cu_device *out)
{
    int count = 0;
    if (cu->device_get_count(&count)) return -1;
    for (int i = 0; i < count; i++) {
        cu_uuid u;
        if (cu->device_get(out, i) || cu->device_get_uuid(&u, *out)) continue;
        if (!memcmp(u.bytes, uuid, sizeof u.bytes)) return i;
    }
    return -1;
}

int cuda_interop_pair_usable(const uint8_t src_uuid[16], const uint8_t dst_uuid[16],
                             int *out_two_gpus, char *why, size_t why_size)
{
    *out_two_gpus = 0;
    const cuda_driver *cu = NULL;
    cubec_status st = cuda_driver_get(&cu);
    if (st) {
        snprintf(why, why_size, "%s",
                 strstr(cubec_status_message(st), "libcuda") ? "libcuda absent"
                                                             : cubec_status_message(st));
        cubec_status_free(st);
        return 0;
    }
    cu_device a = 0, b = 0;
    if (ordinal_of(cu, src_uuid, &a) < 0 || ordinal_of(cu, dst_uuid, &b) < 0) {
        snprintf(why, why_size, "the %s device is no CUDA device (no UUID matches)",
                 ordinal_of(cu, src_uuid, &a) < 0 ? "source" : "destination");
        return 0;
    }
    if (a == b) return 1;
    *out_two_gpus = 1;
    int ab = 0, ba = 0;
    if (cu->device_can_access_peer(&ab, a, b) || cu->device_can_access_peer(&ba, b, a) || !ab ||
        !ba) {
        snprintf(why, why_size,
                 "CUDA devices %d and %d cannot reach each other's memory "
                 "(cuDeviceCanAccessPeer)",
                 (int)a, (int)b);
        return 0;
    }
    return 1;
}

/* The entry's stream for copies, made in its context (current). */
static cubec_status copy_stream(const cuda_driver *cu, device_entry *e)
{
    if (e->copy_stream) return NULL;
    cu_result r = cu->stream_create(&e->copy_stream, 1 /* CU_STREAM_NON_BLOCKING */);
    if (r) {
        e->copy_stream = NULL;
        return cuda_status(cu, r, "cubec_copy_peer: cuStreamCreate");
    }
    return NULL;
}

/* CUDA's part of a peer copy, under the interop lock: on the destination's copy stream, waits for
 * both devices' values, copies, and signals both inbound timelines (*out_src_value,
 * *out_dst_value). */
static cubec_status cuda_copy(cubec_device *src_device, cubec_device *dst_device, uint64_t src_ptr,
                              uint64_t dst_ptr, uint64_t size, uint64_t src_wait, uint64_t dst_wait,
                              uint64_t *out_src_value, uint64_t *out_dst_value)
{
    static const char fn[] = "cubec_copy_peer";
    const cuda_driver *cu = NULL;
    device_entry *s = NULL, *d = NULL;
    /* Each device's timeline and inbound timeline imported with its own context current (once
     * each; cubec_cuda_wait_stream and cubec_stream_wait_cuda use them there too). Two opens of
     * one GPU share its primary context. Between two GPUs the copy stream is the destination
     * context's: that case is written to CUDA's rules but was not run (one GPU was lent). */
    cubec_status err = enter(src_device, fn, &cu, &s);
    if (err) return err;
    if (!s) return status_make(CUBEC_INTERNAL, "%s: no CUDA device entry", fn);
    err = import_timeline(cu, src_device, s);
    if (!err) err = import_inbound(cu, src_device, s);
    pop_context(cu);
    if (err) return err;
    err = enter(dst_device, fn, &cu, &d);
    if (err) return err;
    if (!d) return status_make(CUBEC_INTERNAL, "%s: no CUDA device entry", fn);
    err = import_timeline(cu, dst_device, d);
    if (!err) err = import_inbound(cu, dst_device, d);
    if (!err) err = copy_stream(cu, d);
    cu_stream cs = d->copy_stream;
    cu_result r = 0;
    if (s == d && dst_wait > src_wait) src_wait = dst_wait; /* one timeline: the later value */
    if (!err && src_wait) {
        cu_ext_wait_params p = {.params.fence.value = src_wait};
        r = cu->wait_semaphores(&s->timeline, &p, 1, cs);
    }
    if (!err && !r && dst_wait && d != s) {
        cu_ext_wait_params p = {.params.fence.value = dst_wait};
        r = cu->wait_semaphores(&d->timeline, &p, 1, cs);
    }
    if (!err && r) err = cuda_status(cu, r, "cubec_copy_peer: cuWaitExternalSemaphoresAsync");
    if (!err) {
        r = s->cuda_device == d->cuda_device
                ? cu->memcpy_dtod_async(dst_ptr, src_ptr, size, cs)
                : cu->memcpy_peer_async(dst_ptr, d->context, src_ptr, s->context, size, cs);
        if (r)
            err = cuda_status(cu, r,
                              s->cuda_device == d->cuda_device
                                  ? "cubec_copy_peer: cuMemcpyDtoDAsync"
                                  : "cubec_copy_peer: cuMemcpyPeerAsync");
    }
    if (!err) err = signal_inbound(cu, d, cs, out_dst_value);
    if (!err && s != d) err = signal_inbound(cu, s, cs, out_src_value);
    if (!err && s == d) *out_src_value = *out_dst_value;
    pop_context(cu);
    return err;
}

cubec_status cuda_interop_copy_peer(cubec_device *src_device, cubec_stream src_stream,
                                    cubec_buffer src, uint64_t src_offset, cubec_device *dst_device,
                                    cubec_stream dst_stream, cubec_buffer dst, uint64_t dst_offset,
                                    uint64_t size)
{
    cubec_cuda_mapping ms = CUBEC_CUDA_MAPPING_INIT, md = CUBEC_CUDA_MAPPING_INIT;
    RETURN_IF_ERROR(cubec_cuda_map(src_device, src, &ms));
    RETURN_IF_ERROR(cubec_cuda_map(dst_device, dst, &md));
    /* The source's writers submitted, or the failure they left. */
    uint64_t src_wait = 0, dst_wait = 0, src_number = 0;
    failure *carried = NULL;
    RETURN_IF_ERROR(api_peer_cuda_source(src_device, src_stream, src, src_offset, size, &src_wait,
                                         &carried, &src_number));
    cubec_status err = api_peer_cuda_dest(dst_device, dst_stream, dst, dst_offset, size, carried,
                                          src_number, &dst_wait);
    if (carried) {
        failure_release(carried);
        return err; /* the destination range carries the source's failure: no copy */
    }
    if (err) return err;
    uint64_t src_value = 0, dst_value = 0;
    pthread_mutex_lock(&lock);
    err = cuda_copy(src_device, dst_device, ms.device_ptr + src_offset, md.device_ptr + dst_offset,
                    size, src_wait, dst_wait, &src_value, &dst_value);
    pthread_mutex_unlock(&lock);
    if (err) return err;
    /* Both queues wait for the copy: the destination's readers, and the source's later writers,
     * which must not overwrite what CUDA still reads. */
    const uint64_t src_id = src.id;
    if (src_device != dst_device)
        err = api_stream_wait_inbound(src_device, src_stream, src_value, &src_id, 1,
                                      "cubec_copy_peer");
    if (!err)
        err = api_peer_cuda_landed(dst_device, dst_stream, dst, dst_offset, size, dst_value,
                                   src_device == dst_device ? &src_id : NULL);
    return err;
}
