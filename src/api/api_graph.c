/* Public entry points: graph capture and replay. */
#include "api/api_common.h"
#include "server/graph.h"
#include "server/streams.h"

cubec_status cubec_graph_prepare(cubec_device *device, cubec_stream stream)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_graph_prepare"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_graph_prepare", &s);
    if (!err) err = server_graph_prepare(device, s);
    return api_unlock(device, err);
}

cubec_status cubec_graph_begin(cubec_device *device, cubec_stream stream)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_graph_begin"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_graph_begin", &s);
    if (!err) err = server_graph_begin(device, s);
    return api_unlock(device, err);
}

cubec_status cubec_graph_end(cubec_device *device, cubec_stream stream, cubec_graph *out_graph)
{
    if (!out_graph) return INVALID_ARG("cubec_graph_end: out_graph is NULL");
    out_graph->id = 0;
    RETURN_IF_ERROR(api_lock(device, "cubec_graph_end"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_graph_end", &s);
    if (!err) err = server_graph_end(device, s, &out_graph->id);
    return api_unlock(device, err);
}

cubec_status cubec_graph_replay(cubec_device *device, cubec_stream stream, cubec_graph graph)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_graph_replay"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_graph_replay", &s);
    if (!err) err = server_graph_replay(device, s, graph.id);
    return api_unlock(device, err);
}

cubec_status cubec_graph_destroy(cubec_device *device, cubec_stream stream, cubec_graph graph)
{
    if (graph.id == 0 && device) return NULL;
    RETURN_IF_ERROR(api_lock(device, "cubec_graph_destroy"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_graph_destroy", &s);
    if (!err) err = server_graph_destroy(device, s, graph.id);
    return api_unlock(device, err);
}
