/* Public entry points: export and import of buffers' memory and of the device timeline
 * (docs/multi-device.md). */
#include "api/api_common.h"
#include "api/api_inbound.h"
#include "api/api_struct.h"
#include "server/external.h"

#include <stdlib.h>

cubec_status cubec_buffer_create_exportable(cubec_device *device, cubec_stream stream,
                                            uint64_t size, cubec_buffer *out_buffer)
{
    if (!out_buffer) return INVALID_ARG("cubec_buffer_create_exportable: out_buffer is NULL");
    out_buffer->id = 0;
    if (size == 0)
        return INVALID_ARG("cubec_buffer_create_exportable: size 0 holds no memory to export");
    RETURN_IF_ERROR(api_lock(device, "cubec_buffer_create_exportable"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_buffer_create_exportable", &s);
    if (!err) err = server_buffer_create_exportable(device, s, size, out_buffer);
    return api_unlock(device, err);
}

cubec_status cubec_buffer_export(cubec_device *device, cubec_buffer buffer,
                                 cubec_export_info *out_info)
{
    if (!out_info) return INVALID_ARG("cubec_buffer_export: out_info is NULL");
    RETURN_IF_ERROR(API_STRUCT_CHECK(out_info, cubec_export_info, CUBEC_EXPORT_INFO_INIT,
                                     "cubec_buffer_export", "out_info"));
    /* Whatever happens, the caller's fd field says -1 unless an fd is its own. */
    cubec_export_info info = CUBEC_EXPORT_INFO_INIT;
    api_struct_write(out_info, &info);
    RETURN_IF_ERROR(api_lock(device, "cubec_buffer_export"));
    buffer_obj *b;
    cubec_status err = api_buffer(device, buffer, "cubec_buffer_export: buffer", &b);
    if (!err) err = server_buffer_export(device, buffer.id, b, &info);
    if (!err) api_struct_write(out_info, &info);
    return api_unlock(device, err);
}

cubec_status cubec_buffer_import(cubec_device *device, cubec_stream stream,
                                 const cubec_import_desc *desc, cubec_buffer *out_buffer)
{
    if (!out_buffer) return INVALID_ARG("cubec_buffer_import: out_buffer is NULL");
    out_buffer->id = 0;
    if (!desc) return INVALID_ARG("cubec_buffer_import: desc is NULL");
    RETURN_IF_ERROR(API_STRUCT_CHECK(desc, cubec_import_desc, CUBEC_IMPORT_DESC_INIT,
                                     "cubec_buffer_import", "desc"));
    cubec_import_desc d;
    api_struct_read(desc, &d, sizeof d);
    if (d.fd < 0)
        return INVALID_ARG("cubec_buffer_import: desc->fd %d is not a file descriptor", d.fd);
    if (d.size == 0) return INVALID_ARG("cubec_buffer_import: desc->size 0 imports nothing");
    if (d.allocation_size == 0)
        return INVALID_ARG("cubec_buffer_import: desc->allocation_size 0: pass the exporter's "
                           "cubec_export_info.allocation_size");
    if (d.offset > d.allocation_size || d.size > d.allocation_size - d.offset)
        return INVALID_ARG("cubec_buffer_import: desc->offset %" PRIu64 " + desc->size %" PRIu64
                           " is past desc->allocation_size %" PRIu64,
                           d.offset, d.size, d.allocation_size);
    RETURN_IF_ERROR(api_lock(device, "cubec_buffer_import"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_buffer_import", &s);
    if (!err) err = server_buffer_import(device, s, &d, out_buffer);
    return api_unlock(device, err);
}

cubec_status cubec_timeline_export(cubec_device *device, int *out_fd)
{
    if (!out_fd) return INVALID_ARG("cubec_timeline_export: out_fd is NULL");
    *out_fd = -1;
    RETURN_IF_ERROR(api_lock(device, "cubec_timeline_export"));
    cubec_status err = gpu_timeline_export(device->gpu, out_fd);
    if (err) err = status_annotate(err, "cubec_timeline_export");
    return api_unlock(device, err);
}

cubec_status cubec_stream_get_timeline_value(cubec_device *device, cubec_stream stream,
                                             uint64_t *out_value)
{
    if (!out_value) return INVALID_ARG("cubec_stream_get_timeline_value: out_value is NULL");
    *out_value = 0;
    RETURN_IF_ERROR(api_lock(device, "cubec_stream_get_timeline_value"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_stream_get_timeline_value", &s);
    if (!err) err = server_stream_timeline_value(device, s, out_value);
    return api_unlock(device, err);
}

cubec_status api_inbound_export(cubec_device *device, const char *fn, int *out_fd)
{
    *out_fd = -1;
    RETURN_IF_ERROR(api_lock(device, fn));
    cubec_status err = server_inbound_export(device, out_fd);
    if (err) err = status_annotate(err, "%s", fn);
    return api_unlock(device, err);
}

/* The allocations of the buffers `ids` names (*out_n of them: stale ids are passed over, since
 * a mapping may outlive its buffer handle); a malloc'ed array, or NULL when there are none. */
static cubec_status allocs_of(cubec_device *d, const uint64_t *ids, uint32_t n, const char *fn,
                              alloc_obj ***out, uint32_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    if (!n) return NULL;
    alloc_obj **all = calloc(n, sizeof(alloc_obj *));
    if (!all) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (%s)", fn);
    for (uint32_t i = 0; i < n; i++) {
        buffer_obj *b;
        cubec_status st = api_buffer(d, (cubec_buffer){ids[i]}, "buffer", &b);
        if (st)
            cubec_status_free(st);
        else
            all[(*out_n)++] = b->alloc;
    }
    *out = all;
    return NULL;
}

cubec_status api_stream_wait_inbound(cubec_device *device, cubec_stream stream, uint64_t value,
                                     const uint64_t *ids, uint32_t n, const char *fn)
{
    RETURN_IF_ERROR(api_lock(device, fn));
    stream_ref s;
    alloc_obj **allocs = NULL;
    uint32_t count = 0;
    cubec_status err = api_slot(device, stream, fn, &s);
    if (!err) err = allocs_of(device, ids, n, fn, &allocs, &count);
    if (!err) err = server_stream_wait_inbound(device, s, value, allocs, count, fn);
    free(allocs);
    return api_unlock(device, err);
}

cubec_status api_stream_hand_out(cubec_device *device, cubec_stream stream, const uint64_t *ids,
                                 uint32_t n, uint64_t *out_value, const char *fn)
{
    *out_value = 0;
    RETURN_IF_ERROR(api_lock(device, fn));
    stream_ref s;
    alloc_obj **allocs = NULL;
    uint32_t count = 0;
    cubec_status err = api_slot(device, stream, fn, &s);
    if (!err) err = allocs_of(device, ids, n, fn, &allocs, &count);
    if (!err) err = server_stream_hand_out(device, s, allocs, count, out_value);
    free(allocs);
    return api_unlock(device, err);
}

cubec_status api_inbound_signal(cubec_device *device, uint64_t value)
{
    /* Without the device lock, like the other API it stands in for: a caller holding the lock
     * may be waiting for a submission that waits for this signal (the null backend submits on
     * the submission thread and blocks there). */
    if (!device) return INVALID_ARG("api_inbound_signal: device is NULL");
    return server_inbound_signal(device, value);
}
