/* Public entry points: profiles. */
#include "api/api_common.h"
#include "api/api_struct.h"
#include "server/graph.h"
#include "server/profile.h"
#include "server/streams.h"

#include <string.h>

cubec_status cubec_profile_begin(cubec_device *device, cubec_stream stream,
                                 cubec_profile *out_profile)
{
    if (!out_profile) return INVALID_ARG("cubec_profile_begin: out_profile is NULL");
    out_profile->id = 0;
    RETURN_IF_ERROR(api_lock(device, "cubec_profile_begin"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_profile_begin", &s);
    if (!err) err = server_graph_refuse(device, s, "cubec_profile_begin");
    if (!err) err = server_profile_begin(device, s, &out_profile->id);
    return api_unlock(device, err);
}

cubec_status cubec_profile_end(cubec_device *device, cubec_stream stream, cubec_profile profile,
                               cubec_profile_result *out_result)
{
    if (!out_result) return INVALID_ARG("cubec_profile_end: out_result is NULL");
    /* Refused before the token is consumed: nothing changes on a refusal. */
    RETURN_IF_ERROR(API_STRUCT_CHECK(out_result, cubec_profile_result, CUBEC_PROFILE_RESULT_INIT,
                                     "cubec_profile_end", "out_result"));
    api_struct_clear(out_result);
    RETURN_IF_ERROR(api_lock(device, "cubec_profile_end"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_profile_end", &s);
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    if (!err) err = server_profile_end(device, s, profile.id, &r);
    if (!err) api_struct_write(out_result, &r);
    return api_unlock(device, err);
}

cubec_status cubec_profile_abandon(cubec_device *device, cubec_stream stream, cubec_profile profile)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_profile_abandon"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_profile_abandon", &s);
    if (!err) err = server_profile_abandon(device, s, profile.id);
    return api_unlock(device, err);
}

cubec_status cubec_profile_get_method(cubec_device *device, cubec_timing *out_method)
{
    if (!out_method) return INVALID_ARG("cubec_profile_get_method: out_method is NULL");
    *out_method = (cubec_timing)0;
    RETURN_IF_ERROR(api_lock(device, "cubec_profile_get_method"));
    *out_method = device->profiles->timing;
    return api_unlock(device, NULL);
}
