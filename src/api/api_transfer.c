/* Public entry points: reads, writes, events, copies and fills. */
#include "api/api_common.h"
#include "server/buffers.h"
#include "server/copy_fill.h"
#include "server/graph.h"
#include "server/streams.h"
#include "server/transfer.h"

#include <string.h>

/* Resolves `h` and checks [offset, offset+size) against it. */
static cubec_status transfer_target(cubec_device *d, const char *fn, const char *arg,
                                    cubec_buffer h, uint64_t offset, uint64_t size,
                                    buffer_obj **out)
{
    char what[96];
    snprintf(what, sizeof what, "%s: %s", fn, arg);
    RETURN_IF_ERROR(api_buffer(d, h, what, out));
    return api_range(fn, arg, offset, size, (*out)->size);
}

cubec_status cubec_write(cubec_device *device, cubec_stream stream, cubec_buffer dst,
                         uint64_t offset, const void *src, uint64_t size)
{
    if (!src && size) return INVALID_ARG("cubec_write: src is NULL with size %" PRIu64, size);
    RETURN_IF_ERROR(api_lock(device, "cubec_write"));
    buffer_obj *b;
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_write", &s);
    if (!err) err = transfer_target(device, "cubec_write", "dst", dst, offset, size, &b);
    if (!err) err = server_write(device, s, b, offset, src, size);
    return api_unlock(device, err);
}

cubec_status cubec_write_failure(cubec_device *device, cubec_stream stream, cubec_buffer dst,
                                 uint64_t offset, uint64_t size, cubec_code code,
                                 const char *message)
{
    static const char fn[] = "cubec_write_failure";
    if (!message) return INVALID_ARG("%s: message is NULL", fn);
    if (code == CUBEC_OK || strcmp(cubec_code_name(code), "CUBEC_UNKNOWN_CODE") == 0)
        return INVALID_ARG("%s: code = %d is not an error code of CUBEC_CODES", fn, (int)code);
    RETURN_IF_ERROR(api_lock(device, fn));
    buffer_obj *b;
    stream_ref s;
    cubec_status err = api_slot(device, stream, fn, &s);
    if (!err) err = server_graph_refuse(device, s, fn);
    if (!err) err = transfer_target(device, fn, "dst", dst, offset, size, &b);
    if (!err) err = server_write_failure(device, s, b, offset, size, code, message);
    return api_unlock(device, err);
}

cubec_status cubec_read(cubec_device *device, cubec_stream stream, cubec_buffer src,
                        uint64_t offset, void *dst, uint64_t size)
{
    if (!dst && size) return INVALID_ARG("cubec_read: dst is NULL with size %" PRIu64, size);
    RETURN_IF_ERROR(api_lock(device, "cubec_read"));
    buffer_obj *b;
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_read", &s);
    if (!err) err = server_graph_refuse(device, s, "cubec_read");
    if (!err) err = transfer_target(device, "cubec_read", "src", src, offset, size, &b);
    if (!err) err = server_read(device, s, b, offset, dst, size);
    return api_unlock(device, err);
}

cubec_status cubec_read_async(cubec_device *device, cubec_stream stream, cubec_buffer src,
                              uint64_t offset, void *dst, uint64_t size, cubec_event **out_event)
{
    if (!out_event) return INVALID_ARG("cubec_read_async: out_event is NULL");
    *out_event = NULL;
    if (!dst && size) return INVALID_ARG("cubec_read_async: dst is NULL with size %" PRIu64, size);
    RETURN_IF_ERROR(api_lock(device, "cubec_read_async"));
    buffer_obj *b;
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_read_async", &s);
    if (!err) err = server_graph_refuse(device, s, "cubec_read_async");
    if (!err) err = transfer_target(device, "cubec_read_async", "src", src, offset, size, &b);
    if (!err) err = server_read_async(device, s, b, offset, dst, size, out_event);
    return api_unlock(device, err);
}

static cubec_status event_progress(cubec_event *event, int block, const char *fn)
{
    if (!event) return INVALID_ARG("%s: event is NULL", fn);
    cubec_device *d = server_event_device(event);
    pthread_mutex_lock(&d->lock);
    cubec_status err = server_event_progress(event, block);
    pthread_mutex_unlock(&d->lock);
    return err;
}

cubec_status cubec_event_wait(cubec_event *event)
{
    return event_progress(event, 1, "cubec_event_wait");
}

cubec_status cubec_event_query(cubec_event *event)
{
    return event_progress(event, 0, "cubec_event_query");
}

void cubec_event_free(cubec_event *event)
{
    if (!event) return;
    cubec_device *d = server_event_device(event);
    pthread_mutex_lock(&d->lock);
    server_event_free(event);
    pthread_mutex_unlock(&d->lock);
}

static cubec_status check_words(const char *fn, const char *arg, uint64_t value)
{
    if (value % 4)
        return INVALID_ARG("%s: %s = %" PRIu64 " is not a multiple of 4", fn, arg, value);
    return NULL;
}

cubec_status cubec_copy(cubec_device *device, cubec_stream stream, cubec_buffer src,
                        uint64_t src_offset, cubec_buffer dst, uint64_t dst_offset, uint64_t size)
{
    static const char fn[] = "cubec_copy";
    RETURN_IF_ERROR(check_words(fn, "src_offset", src_offset));
    RETURN_IF_ERROR(check_words(fn, "dst_offset", dst_offset));
    RETURN_IF_ERROR(check_words(fn, "size", size));
    RETURN_IF_ERROR(api_lock(device, fn));
    buffer_obj *from, *t;
    stream_ref s;
    cubec_status err = api_slot(device, stream, fn, &s);
    if (!err) err = transfer_target(device, fn, "src", src, src_offset, size, &from);
    if (!err) err = transfer_target(device, fn, "dst", dst, dst_offset, size, &t);
    if (!err && from->alloc == t->alloc && size) {
        uint64_t a = from->offset + src_offset, b = t->offset + dst_offset;
        if (a < b + size && b < a + size)
            err = INVALID_ARG("cubec_copy: source [%" PRIu64 ", +%" PRIu64
                              ") and destination [%" PRIu64 ", +%" PRIu64
                              ") overlap in the same memory",
                              a, size, b, size);
    }
    if (!err) err = server_copy(device, s, from, src_offset, t, dst_offset, size);
    return api_unlock(device, err);
}

cubec_status cubec_fill(cubec_device *device, cubec_stream stream, cubec_buffer dst,
                        uint64_t offset, uint64_t size, uint32_t pattern)
{
    static const char fn[] = "cubec_fill";
    RETURN_IF_ERROR(check_words(fn, "offset", offset));
    RETURN_IF_ERROR(check_words(fn, "size", size));
    RETURN_IF_ERROR(api_lock(device, fn));
    buffer_obj *t;
    stream_ref s;
    cubec_status err = api_slot(device, stream, fn, &s);
    if (!err) err = transfer_target(device, fn, "dst", dst, offset, size, &t);
    if (!err) err = server_fill(device, s, t, offset, size, pattern);
    return api_unlock(device, err);
}
