/* Public entry points: buffers and views. */
#include "api/api_common.h"
#include "server/buffers.h"
#include "server/memory_ops.h"
#include "server/run_mode.h"
#include "server/streams.h"
#include "server/transfer.h"

cubec_status cubec_buffer_create(cubec_device *device, cubec_stream stream, uint64_t size,
                                 cubec_buffer *out_buffer)
{
    if (!out_buffer) return INVALID_ARG("cubec_buffer_create: out_buffer is NULL");
    out_buffer->id = 0;
    RETURN_IF_ERROR(api_lock(device, "cubec_buffer_create"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_buffer_create", &s);
    if (!err) {
        /* Pages added for a dry run's buffers get memory at their first real use. */
        uint32_t flags = server_run_dry(device, s) ? MEMORY_LAZY_PAGE : 0;
        err = server_buffer_create(device, s, size, flags, out_buffer);
    }
    return api_unlock(device, err);
}

cubec_status cubec_buffer_from(cubec_device *device, cubec_stream stream, const void *data,
                               uint64_t size, cubec_buffer *out_buffer)
{
    if (!out_buffer) return INVALID_ARG("cubec_buffer_from: out_buffer is NULL");
    out_buffer->id = 0;
    if (!data && size)
        return INVALID_ARG("cubec_buffer_from: data is NULL with size %" PRIu64, size);
    RETURN_IF_ERROR(api_lock(device, "cubec_buffer_from"));
    cubec_buffer b;
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_buffer_from", &s);
    if (!err) err = server_buffer_create(device, s, size, 0, &b);
    if (!err && size) {
        buffer_obj *o = handle_table_get(&device->buffers->handles, b.id);
        o->refs++; /* the write may release the lock: keep the handle alive */
        err = server_write(device, s, o, 0, data, size);
        server_buffer_release(device, b.id, o);
        if (err) server_buffer_release(device, b.id, o);
    }
    if (!err) *out_buffer = b;
    return api_unlock(device, err);
}

cubec_status cubec_buffer_view(cubec_device *device, cubec_buffer buffer, uint64_t offset,
                               uint64_t size, cubec_buffer *out_view)
{
    if (!out_view) return INVALID_ARG("cubec_buffer_view: out_view is NULL");
    out_view->id = 0;
    RETURN_IF_ERROR(api_lock(device, "cubec_buffer_view"));
    buffer_obj *b;
    cubec_status err = api_buffer(device, buffer, "cubec_buffer_view: buffer", &b);
    if (!err) err = api_range("cubec_buffer_view", "view", offset, size, b->size);
    if (!err && offset % device->info.storage_offset_alignment)
        err = INVALID_ARG("cubec_buffer_view: offset %" PRIu64
                          " is not a multiple of the device's storage_offset_alignment %" PRIu64,
                          offset, device->info.storage_offset_alignment);
    if (!err) err = server_buffer_view(device, b, offset, size, out_view);
    return api_unlock(device, err);
}

cubec_status cubec_buffer_get_size(cubec_device *device, cubec_buffer buffer, uint64_t *out_size)
{
    if (!out_size) return INVALID_ARG("cubec_buffer_get_size: out_size is NULL");
    *out_size = 0;
    RETURN_IF_ERROR(api_lock(device, "cubec_buffer_get_size"));
    buffer_obj *b;
    cubec_status err = api_buffer(device, buffer, "cubec_buffer_get_size: buffer", &b);
    if (!err) *out_size = b->size;
    return api_unlock(device, err);
}

cubec_status cubec_buffer_retain(cubec_device *device, cubec_buffer buffer)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_buffer_retain"));
    buffer_obj *b;
    cubec_status err = api_buffer(device, buffer, "cubec_buffer_retain: buffer", &b);
    if (!err) b->refs++;
    return api_unlock(device, err);
}

cubec_status cubec_buffer_release(cubec_device *device, cubec_buffer buffer)
{
    if (buffer.id == 0) return NULL;
    RETURN_IF_ERROR(api_lock(device, "cubec_buffer_release"));
    buffer_obj *b;
    cubec_status err = api_buffer(device, buffer, "cubec_buffer_release: buffer", &b);
    if (!err) server_buffer_release(device, buffer.id, b);
    return api_unlock(device, err);
}
