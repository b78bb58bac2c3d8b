/* Public entry points: graph capture and replay. */
#include "api/api_common.h"

cubec_status cubec_graph_prepare(cubec_device *device, cubec_stream stream)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_graph_prepare"));
    uint32_t slot;
    cubec_status err = api_slot(device, stream, "cubec_graph_prepare", &slot);
    if (!err) err = server_graph_prepare(device, slot);
    return api_unlock(device, err);
}

cubec_status cubec_graph_begin(cubec_device *device, cubec_stream stream)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_graph_begin"));
    uint32_t slot;
    cubec_status err = api_slot(device, stream, "cubec_graph_begin", &slot);
    if (!err) err = server_graph_begin(device, slot);
    return api_unlock(device, err);
}

cubec_status cubec_graph_end(cubec_device *device, cubec_stream stream, cubec_graph *out_graph)
{
    if (!out_graph) return INVALID_ARG("cubec_graph_end: out_graph is NULL");
    out_graph->id = 0;
    RETURN_IF_ERROR(api_lock(device, "cubec_graph_end"));
    uint32_t slot;
    cubec_status err = api_slot(device, stream, "cubec_graph_end", &slot);
    if (!err) err = server_graph_end(device, slot, &out_graph->id);
    return api_unlock(device, err);
}

cubec_status cubec_graph_replay(cubec_device *device, cubec_stream stream, cubec_graph graph)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_graph_replay"));
    uint32_t slot;
    cubec_status err = api_slot(device, stream, "cubec_graph_replay", &slot);
    if (!err) err = server_graph_replay(device, slot, graph.id);
    return api_unlock(device, err);
}

cubec_status cubec_graph_destroy(cubec_device *device, cubec_stream stream, cubec_graph graph)
{
    if (graph.id == 0 && device) return NULL;
    RETURN_IF_ERROR(api_lock(device, "cubec_graph_destroy"));
    uint32_t slot;
    cubec_status err = api_slot(device, stream, "cubec_graph_destroy", &slot);
    if (!err) err = server_graph_destroy(device, slot, graph.id);
    return api_unlock(device, err);
}
