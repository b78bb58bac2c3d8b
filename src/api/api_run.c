/* Public entry points of dry-run windows (server/run_mode.h). */
#include "api/api_common.h"
#include "server/run_mode.h"
#include "server/streams.h"

cubec_status cubec_run_window_begin(cubec_device *device, cubec_stream stream, cubec_run_mode mode)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_run_window_begin"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_run_window_begin", &s);
    if (!err) err = server_run_window_begin(device, s, mode);
    return api_unlock(device, err);
}

cubec_status cubec_run_window_end(cubec_device *device, cubec_stream stream)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_run_window_end"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_run_window_end", &s);
    if (!err) err = server_run_window_end(device, s);
    return api_unlock(device, err);
}
