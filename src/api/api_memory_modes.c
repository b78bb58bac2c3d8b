/* Public entry points of allocation windows (cubec.h "Allocation modes", docs/memory.md). */
#include "api/api_common.h"
#include "server/memory_windows.h"
#include "server/streams.h"

cubec_status cubec_memory_window_begin(cubec_device *device, cubec_stream stream,
                                       cubec_memory_mode mode)
{
    static const char fn[] = "cubec_memory_window_begin";
    RETURN_IF_ERROR(api_lock(device, fn));
    stream_ref s;
    cubec_status err = api_slot(device, stream, fn, &s);
    if (!err) err = status_annotate(server_memory_mode_push(device, s, (uint32_t)mode), "%s", fn);
    return api_unlock(device, err);
}

cubec_status cubec_memory_window_end(cubec_device *device, cubec_stream stream)
{
    static const char fn[] = "cubec_memory_window_end";
    RETURN_IF_ERROR(api_lock(device, fn));
    stream_ref s;
    cubec_status err = api_slot(device, stream, fn, &s);
    if (!err)
        err = status_annotate(server_memory_mode_pop(device, s), "%s: stream %llu", fn,
                              (unsigned long long)s.number);
    return api_unlock(device, err);
}

cubec_status cubec_memory_window_get(cubec_device *device, cubec_stream stream,
                                     cubec_memory_mode *out_mode, uint32_t *out_depth)
{
    static const char fn[] = "cubec_memory_window_get";
    /* Cleared on entry (cubec.h): a refused call leaves no stale window behind. */
    if (out_mode) *out_mode = CUBEC_MEMORY_MODE_AUTO;
    if (out_depth) *out_depth = 0;
    RETURN_IF_ERROR(api_lock(device, fn));
    stream_ref s;
    cubec_status err = api_slot(device, stream, fn, &s);
    if (!err) {
        uint32_t mode, depth;
        server_memory_mode_get(device, s, &mode, &depth);
        if (out_mode) *out_mode = (cubec_memory_mode)mode;
        if (out_depth) *out_depth = depth;
    }
    return api_unlock(device, err);
}
