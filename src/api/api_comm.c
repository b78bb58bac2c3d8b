/* Public entry points of collectives within a process (docs/multi-device-paths.md,
 * "Collectives"): the communicator's creation (its transport chosen there), info and shard rule,
 * and the four collectives' argument checks. Every argument of every rank is checked here before
 * the transport (src/comm/) queues anything, so a refusal changes nothing. */
#include "api/api_common.h"
#include "api/api_struct.h"
#include "comm/comm.h"
#include "comm/comm_move.h"
#include "server/graph.h"

#include <stdlib.h>
#include <string.h>

/* Element indices reach the kernels as 32-bit words and offsets: a count past this is refused. */
#define MAX_ELEMENTS (UINT64_C(1) << 31)

cubec_status cubec_comm_create(cubec_device *const *devices, uint32_t n, cubec_comm **out_comm)
{
    static const char fn[] = "cubec_comm_create";
    if (!out_comm) return INVALID_ARG("%s: out_comm is NULL", fn);
    *out_comm = NULL;
    if (!devices) return INVALID_ARG("%s: devices is NULL", fn);
    if (n < 1) return INVALID_ARG("%s: n is %u: a communicator needs at least 1 device", fn, n);
    for (uint32_t r = 0; r < n; r++) {
        cubec_status err = api_device(devices[r], fn);
        if (err) return status_annotate(err, "devices[%u]", r);
        for (uint32_t q = 0; q < r; q++)
            if (devices[q] == devices[r])
                return INVALID_ARG("%s: devices[%u] is devices[%u] (%p): each rank needs a device "
                                   "of its own",
                                   fn, r, q, (const void *)devices[r]);
    }
    cubec_comm *c = calloc(1, sizeof *c);
    if (!c) return status_make(CUBEC_OUT_OF_MEMORY, "%s: the communicator", fn);
    c->devices = malloc(n * sizeof(cubec_device *));
    c->kernels = calloc((size_t)n * COMM_DTYPES, sizeof(cubec_kernel));
    c->max_range = calloc(n, sizeof(uint64_t));
    c->view_align = calloc(n, sizeof(uint64_t));
    if (!c->devices || !c->kernels || !c->max_range || !c->view_align) {
        free(c->devices);
        free(c->kernels);
        free(c->max_range);
        free(c->view_align);
        free(c);
        return status_make(CUBEC_OUT_OF_MEMORY, "%s: %u devices", fn, n);
    }
    memcpy(c->devices, devices, n * sizeof(cubec_device *));
    c->n = n;
    pthread_mutex_init(&c->lock, NULL);
    /* The first transport that serves these devices; the ring serves any. */
    uint32_t count = 0;
    const comm_transport *const *list = comm_transports(&count);
    cubec_status why = NULL;
    for (uint32_t t = 0; t < count && !c->transport; t++) {
        cubec_status_free(why);
        why = list[t]->open(c, &c->transport_state);
        if (!why) {
            c->transport = list[t];
            break;
        }
        /* Kept for cubec_comm_get_info: why a faster transport was not taken. */
        const size_t used = strlen(c->transport_reason);
        snprintf(c->transport_reason + used, sizeof c->transport_reason - used, "%s%s: %s",
                 used ? "; " : "", list[t]->name, cubec_status_message(why));
    }
    if (!c->transport) {
        cubec_comm_destroy(c);
        return status_annotate(why, "%s: no transport serves these devices", fn);
    }
    *out_comm = c;
    return NULL;
}

void cubec_comm_destroy(cubec_comm *comm)
{
    if (!comm) return;
    if (comm->transport) comm->transport->close(comm, comm->transport_state);
    comm_kernels_destroy(comm);
    pthread_mutex_destroy(&comm->lock);
    free(comm->kernels);
    free(comm->max_range);
    free(comm->view_align);
    free(comm->devices);
    free(comm);
}

cubec_status cubec_comm_get_info(const cubec_comm *comm, cubec_comm_info *out_info)
{
    static const char fn[] = "cubec_comm_get_info";
    if (!comm) return INVALID_ARG("%s: comm is NULL", fn);
    if (!out_info) return INVALID_ARG("%s: out_info is NULL", fn);
    RETURN_IF_ERROR(
        API_STRUCT_CHECK(out_info, cubec_comm_info, CUBEC_COMM_INFO_INIT, fn, "out_info"));
    cubec_comm_info whole = CUBEC_COMM_INFO_INIT;
    whole.n = comm->n;
    snprintf(whole.transport, sizeof whole.transport, "%s", comm->transport->name);
    snprintf(whole.transport_reason, sizeof whole.transport_reason, "%s", comm->transport_reason);
    api_struct_write(out_info, &whole);
    return NULL;
}

cubec_status cubec_comm_shard(const cubec_comm *comm, uint64_t total, uint32_t rank,
                              uint64_t *out_offset, uint64_t *out_count)
{
    static const char fn[] = "cubec_comm_shard";
    if (!comm) return INVALID_ARG("%s: comm is NULL", fn);
    if (!out_offset) return INVALID_ARG("%s: out_offset is NULL", fn);
    if (!out_count) return INVALID_ARG("%s: out_count is NULL", fn);
    if (rank >= comm->n)
        return INVALID_ARG("%s: rank %u is not a rank of the communicator (n %u)", fn, rank,
                           comm->n);
    comm_shard(comm->n, total, rank, out_offset, out_count);
    return NULL;
}

/* The arguments every collective shares. */
static cubec_status check_common(const char *fn, const cubec_comm *comm,
                                 const cubec_stream *streams, uint64_t count, const char *count_arg,
                                 cubec_dtype dtype)
{
    if (!comm) return INVALID_ARG("%s: comm is NULL", fn);
    if (!streams) return INVALID_ARG("%s: streams is NULL", fn);
    if (!comm_dtype_size(dtype))
        return INVALID_ARG("%s: dtype %d is not CUBEC_DTYPE_F32 (1), CUBEC_DTYPE_F16 (2) or "
                           "CUBEC_DTYPE_I32 (3)",
                           fn, (int)dtype);
    if (count > MAX_ELEMENTS)
        return INVALID_ARG("%s: %s %" PRIu64 " is past the %" PRIu64
                           " elements one collective handles",
                           fn, count_arg, count, MAX_ELEMENTS);
    return NULL;
}

static cubec_status check_op(const char *fn, cubec_reduce_op op)
{
    if (op != CUBEC_REDUCE_SUM && op != CUBEC_REDUCE_MAX)
        return INVALID_ARG("%s: op %d is not CUBEC_REDUCE_SUM (1) or CUBEC_REDUCE_MAX (2)", fn,
                           (int)op);
    return NULL;
}

/* Rank r's stream, refused by name before anything is queued; so is a stream recording a graph
 * where the collective crosses devices (a capture cannot hold another device's copies, and a
 * refusal half-way would leave the other ranks' steps queued). */
static cubec_status check_stream(const char *fn, const cubec_comm *c, uint32_t r,
                                 const cubec_stream *streams)
{
    cubec_device *d = c->devices[r];
    RETURN_IF_ERROR(api_lock(d, fn));
    stream_ref ref;
    cubec_status err = api_slot(d, streams[r], fn, &ref);
    if (!err && c->n > 1) err = server_graph_refuse(d, ref, fn);
    return api_unlock(d, status_annotate(err, "streams[%u]", r));
}

/* arg[r] (the array named `arg`) is a buffer of rank r's device holding `elems` elements. */
static cubec_status check_buffer(const char *fn, const cubec_comm *c, uint32_t r, const char *arg,
                                 cubec_buffer buffer, uint64_t elems, cubec_dtype dtype)
{
    uint64_t size = 0;
    cubec_status err = cubec_buffer_get_size(c->devices[r], buffer, &size);
    if (err) return status_annotate(err, "%s: %s[%u] (rank %u's device)", fn, arg, r, r);
    const uint64_t need = comm_bytes_for(dtype, elems);
    if (size < need)
        return INVALID_ARG("%s: %s[%u] holds %" PRIu64 " bytes, fewer than the %" PRIu64
                           " that %" PRIu64 " elements of dtype %d need",
                           fn, arg, r, size, need, elems, (int)dtype);
    return NULL;
}

static cubec_status run(cubec_comm *comm, const comm_call *call, const char *fn)
{
    cubec_status err = comm->transport->run(comm, comm->transport_state, call);
    return err ? status_annotate(err, "%s (%s transport)", fn, comm->transport->name) : NULL;
}

cubec_status cubec_comm_all_reduce(cubec_comm *comm, const cubec_buffer *buffers,
                                   const cubec_stream *streams, uint64_t count, cubec_dtype dtype,
                                   cubec_reduce_op op)
{
    static const char fn[] = "cubec_comm_all_reduce";
    if (!comm) return INVALID_ARG("%s: comm is NULL", fn);
    if (!buffers) return INVALID_ARG("%s: buffers is NULL", fn);
    RETURN_IF_ERROR(check_common(fn, comm, streams, count, "count", dtype));
    RETURN_IF_ERROR(check_op(fn, op));
    for (uint32_t r = 0; r < comm->n; r++) {
        RETURN_IF_ERROR(check_stream(fn, comm, r, streams));
        RETURN_IF_ERROR(check_buffer(fn, comm, r, "buffers", buffers[r], count, dtype));
    }
    comm_call call = {COMM_ALL_REDUCE, buffers, buffers, streams, count, dtype, op, 0};
    return run(comm, &call, fn);
}

cubec_status cubec_comm_broadcast(cubec_comm *comm, const cubec_buffer *buffers,
                                  const cubec_stream *streams, uint64_t count, cubec_dtype dtype,
                                  uint32_t root)
{
    static const char fn[] = "cubec_comm_broadcast";
    if (!comm) return INVALID_ARG("%s: comm is NULL", fn);
    if (!buffers) return INVALID_ARG("%s: buffers is NULL", fn);
    RETURN_IF_ERROR(check_common(fn, comm, streams, count, "count", dtype));
    if (root >= comm->n)
        return INVALID_ARG("%s: root %u is not a rank of the communicator (n %u)", fn, root,
                           comm->n);
    for (uint32_t r = 0; r < comm->n; r++) {
        RETURN_IF_ERROR(check_stream(fn, comm, r, streams));
        RETURN_IF_ERROR(check_buffer(fn, comm, r, "buffers", buffers[r], count, dtype));
    }
    comm_call call = {COMM_BROADCAST, buffers, buffers, streams, count, dtype, 0, root};
    return run(comm, &call, fn);
}

/* in[r] and out[r] of a gather or scatter: `in_elems` and `out_elems` elements of rank r, two
 * buffers (one would be read after the ring wrote it). */
static cubec_status check_in_out(const char *fn, const cubec_comm *c, uint32_t r,
                                 const cubec_buffer *in, const cubec_buffer *out, uint64_t in_elems,
                                 uint64_t out_elems, cubec_dtype dtype)
{
    RETURN_IF_ERROR(check_buffer(fn, c, r, "in", in[r], in_elems, dtype));
    RETURN_IF_ERROR(check_buffer(fn, c, r, "out", out[r], out_elems, dtype));
    if (in[r].id == out[r].id)
        return INVALID_ARG("%s: in[%u] and out[%u] are one buffer: the collective writes out "
                           "while it still reads in",
                           fn, r, r);
    return NULL;
}

cubec_status cubec_comm_all_gather(cubec_comm *comm, const cubec_buffer *in,
                                   const cubec_buffer *out, const cubec_stream *streams,
                                   uint64_t total, cubec_dtype dtype)
{
    static const char fn[] = "cubec_comm_all_gather";
    RETURN_IF_ERROR(check_common(fn, comm, streams, total, "total", dtype));
    if (!in) return INVALID_ARG("%s: in is NULL", fn);
    if (!out) return INVALID_ARG("%s: out is NULL", fn);
    for (uint32_t r = 0; r < comm->n; r++) {
        uint64_t off, cnt;
        comm_shard(comm->n, total, r, &off, &cnt);
        RETURN_IF_ERROR(check_stream(fn, comm, r, streams));
        RETURN_IF_ERROR(check_in_out(fn, comm, r, in, out, cnt, total, dtype));
    }
    comm_call call = {COMM_ALL_GATHER, in, out, streams, total, dtype, 0, 0};
    return run(comm, &call, fn);
}

cubec_status cubec_comm_reduce_scatter(cubec_comm *comm, const cubec_buffer *in,
                                       const cubec_buffer *out, const cubec_stream *streams,
                                       uint64_t total, cubec_dtype dtype, cubec_reduce_op op)
{
    static const char fn[] = "cubec_comm_reduce_scatter";
    RETURN_IF_ERROR(check_common(fn, comm, streams, total, "total", dtype));
    if (!in) return INVALID_ARG("%s: in is NULL", fn);
    if (!out) return INVALID_ARG("%s: out is NULL", fn);
    RETURN_IF_ERROR(check_op(fn, op));
    for (uint32_t r = 0; r < comm->n; r++) {
        uint64_t off, cnt;
        comm_shard(comm->n, total, r, &off, &cnt);
        RETURN_IF_ERROR(check_stream(fn, comm, r, streams));
        RETURN_IF_ERROR(check_in_out(fn, comm, r, in, out, total, cnt, dtype));
    }
    comm_call call = {COMM_REDUCE_SCATTER, in, out, streams, total, dtype, op, 0};
    return run(comm, &call, fn);
}
