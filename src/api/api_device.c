/* Public entry points: devices, flush/sync and memory reports. */
#include "api/api_common.h"

#include <string.h>

cubec_status cubec_device_open(const cubec_device_desc *desc, cubec_device **out_device)
{
    if (!out_device) return INVALID_ARG("cubec_device_open: out_device is NULL");
    *out_device = NULL;
    return server_open(desc, out_device);
}

void cubec_device_close(cubec_device *device)
{
    if (device) server_close(device);
}

cubec_status cubec_device_get_info(cubec_device *device, cubec_device_info *out_info)
{
    if (!out_info) return INVALID_ARG("cubec_device_get_info: out_info is NULL");
    if (!device) return INVALID_ARG("cubec_device_get_info: device is NULL");
    pthread_mutex_lock(&device->lock);
    *out_info = device->info;
    pthread_mutex_unlock(&device->lock);
    return NULL;
}

cubec_status cubec_device_count(uint32_t *out_count)
{
    if (!out_count) return INVALID_ARG("cubec_device_count: out_count is NULL");
    *out_count = 0;
    return vk_physical_count(out_count);
}

cubec_status cubec_device_peek(uint32_t index, cubec_device_info *out_info)
{
    if (!out_info) return INVALID_ARG("cubec_device_peek: out_info is NULL");
    return status_annotate(vk_physical_info(index, out_info, NULL), "cubec_device_peek");
}

cubec_status cubec_flush(cubec_device *device, cubec_stream stream)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_flush"));
    uint32_t slot;
    cubec_status err = api_slot(device, stream, "cubec_flush", &slot);
    if (!err) err = server_drain(device, &slot, 1);
    if (!err) err = sub_flush(device, 0); /* transfers recorded outside the queues */
    return api_unlock(device, err);
}

cubec_status cubec_sync(cubec_device *device, cubec_stream stream)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_sync"));
    uint32_t slot;
    cubec_status err = api_slot(device, stream, "cubec_sync", &slot);
    /* After a sync the host may read what the stream wrote (mapped memory, events): the batch
     * that carries the stream's last work ends with a host barrier. */
    device->submit_for_host = 1;
    if (!err) err = server_drain(device, &slot, 1);
    device->submit_for_host = 0;
    if (!err) err = sub_wait_for_host(device, device->slots[slot].last_value);
    return api_unlock(device, err);
}

cubec_status cubec_stream_new(cubec_device *device, cubec_stream *out_stream)
{
    if (!out_stream) return INVALID_ARG("cubec_stream_new: out_stream is NULL");
    *out_stream = 0;
    RETURN_IF_ERROR(api_lock(device, "cubec_stream_new"));
    *out_stream = server_stream_new(device);
    return api_unlock(device, NULL);
}

cubec_status cubec_stream_current(cubec_device *device, cubec_stream *out_stream)
{
    if (!out_stream) return INVALID_ARG("cubec_stream_current: out_stream is NULL");
    *out_stream = 0;
    RETURN_IF_ERROR(api_lock(device, "cubec_stream_current"));
    *out_stream = server_stream_current(device);
    return api_unlock(device, NULL);
}

cubec_status cubec_memory_report_get(cubec_device *device, cubec_stream stream,
                                     cubec_memory_report *out_report)
{
    if (!out_report) return INVALID_ARG("cubec_memory_report_get: out_report is NULL");
    memset(out_report, 0, sizeof *out_report);
    RETURN_IF_ERROR(api_lock(device, "cubec_memory_report_get"));
    uint32_t slot;
    cubec_status err = api_slot(device, stream, "cubec_memory_report_get", &slot);
    if (err) return api_unlock(device, err);
    sub_poll(device);
    /* The stream's own pools (spec 3.8: a report is per stream). */
    if (device->slots[slot].memory) memory_report_fill(device->slots[slot].memory, out_report);
    /* The rings the server keeps (spec 3.8's auxiliary memory), after the buffer pools. */
    const struct {
        const char *kind;
        const host_ring *ring;
    } aux[] = {{"metadata", &device->info_ring},
               {"upload", &device->upload},
               {"readback", &device->readback}};
    for (size_t i = 0; i < sizeof aux / sizeof aux[0]; i++) {
        if (!aux[i].ring->buffer || out_report->pool_count >= CUBEC_MAX_POOLS) continue;
        cubec_pool_report *p = &out_report->pools[out_report->pool_count++];
        snprintf(p->kind, sizeof p->kind, "%s", aux[i].kind);
        p->page_size = aux[i].ring->size;
        p->max_slice_size = aux[i].ring->chunk_size;
        p->pages = p->pages_peak = 1;
        p->bytes_reserved = aux[i].ring->size;
    }
    return api_unlock(device, NULL);
}

cubec_status cubec_memory_cleanup(cubec_device *device, cubec_stream stream)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_memory_cleanup"));
    uint32_t slot;
    cubec_status err = api_slot(device, stream, "cubec_memory_cleanup", &slot);
    /* Frees that wait on the GPU are part of what the caller wants returned: submit the queued
     * work that pins memory, wait for it, then return every empty page of the stream's pools. */
    if (!err) err = server_drain_all(device);
    if (!err && device->deferred_count) err = sub_wait(device, device->next_value - 1);
    if (!err) {
        server_run_deferred_frees(device);
        if (device->slots[slot].memory) memory_cleanup(device->slots[slot].memory, 1);
    }
    return api_unlock(device, err);
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
        buffer_obj *b = handle_table_get(&d->buffers, buffers[i].id);
        if (!b) return INVALID_ARG("%s: buffers[%u] was released meanwhile", fn, i);
        /* Whatever is queued for it must have been recorded (and so judged) first. */
        RETURN_IF_ERROR(server_drain_for_host(d, b->alloc->slot, b->alloc));
        failure *f = server_failure_of(b->alloc, buffer_device_offset(b), b->size);
        if (f) return server_failure_status(b->alloc, f, "check");
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
    uint32_t slot;
    cubec_status err = api_slot(device, stream, "cubec_sync_check", &slot);
    if (!err) err = check_buffers(device, "cubec_sync_check", buffers, count);
    if (!err) {
        device->submit_for_host = 1;
        err = server_drain(device, &slot, 1);
        device->submit_for_host = 0;
    }
    if (!err) err = sub_wait_for_host(device, device->slots[slot].last_value);
    return api_unlock(device, err);
}

cubec_status cubec_fault_inject(cubec_device *device, cubec_fault_kind kind, uint64_t nth)
{
    if ((unsigned)kind >= CUBEC_FAULT_KIND_COUNT)
        return INVALID_ARG("cubec_fault_inject: kind %d is not a cubec_fault_kind", (int)kind);
    RETURN_IF_ERROR(api_lock(device, "cubec_fault_inject"));
    device->faults.fail_at[kind] = nth ? device->faults.count[kind] + nth : 0;
    return api_unlock(device, NULL);
}

cubec_status cubec_fault_counts(cubec_device *device, uint64_t out_counts[CUBEC_FAULT_KIND_COUNT])
{
    if (!out_counts) return INVALID_ARG("cubec_fault_counts: out_counts is NULL");
    RETURN_IF_ERROR(api_lock(device, "cubec_fault_counts"));
    for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++)
        out_counts[k] = device->faults.count[k];
    return api_unlock(device, NULL);
}
