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
    (void)stream;
    RETURN_IF_ERROR(api_lock(device, "cubec_flush"));
    return api_unlock(device, sub_flush(device, 0));
}

cubec_status cubec_sync(cubec_device *device, cubec_stream stream)
{
    (void)stream;
    RETURN_IF_ERROR(api_lock(device, "cubec_sync"));
    cubec_status err = sub_flush(device, 1);
    if (!err) err = sub_wait(device, device->next_value - 1);
    return api_unlock(device, err);
}

cubec_status cubec_memory_report_get(cubec_device *device, cubec_stream stream,
                                     cubec_memory_report *out_report)
{
    (void)stream;
    if (!out_report) return INVALID_ARG("cubec_memory_report_get: out_report is NULL");
    RETURN_IF_ERROR(api_lock(device, "cubec_memory_report_get"));
    sub_poll(device);
    memset(out_report, 0, sizeof *out_report);
    memory_report_fill(device->memory, out_report);
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
    (void)stream;
    RETURN_IF_ERROR(api_lock(device, "cubec_memory_cleanup"));
    /* Frees that wait on the GPU are part of what the caller wants returned. */
    cubec_status err = NULL;
    if (device->deferred_count) err = sub_wait(device, device->next_value - 1);
    if (!err) {
        server_run_deferred_frees(device);
        memory_cleanup(device->memory, 1);
    }
    return api_unlock(device, err);
}
