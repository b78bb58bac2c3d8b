/* The NCCL transport of collectives within a process (interop/nccl_collectives.h). */
#include "interop/nccl_collectives.h"

#include "api/api_common.h"
#include "api/api_peer_cuda.h"
#include "interop/cuda_driver.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CUBEC_DTYPE_F16's value (cubec_mpi's CUBEC_MPI_F16), taken before cubec.h names it. */
enum { DTYPE_F16 = 2 };

enum { CU_STREAM_NON_BLOCKING = 1 }; /* cuda.h's: no implicit order with the legacy stream */

/* One rank: its cubec device and what CUDA and NCCL hold for it. */
typedef struct nccl_rank {
    cubec_device *device;
    int ordinal;      /* the CUDA device ordinal */
    cu_device cuda;   /* for the primary context's release */
    cu_context ctx;   /* the device's primary context, retained; NULL until then */
    cu_stream stream; /* NCCL's work queue for the nccl_rank */
    nccl_comm comm;   /* NULL until ncclCommInitAll */
    char *in, *out;   /* the collective under way: its buffers' CUDA addresses */
} nccl_rank;

struct nccl_group {
    uint32_t n;
    const nccl_driver *nc;
    const cuda_driver *cu;
    int per_shard;     /* nccl_group_force_per_shard */
    nccl_rank ranks[]; /* n of them */
};

/* Keeps the calling thread's CUDA context stack as it was around NCCL calls: NCCL makes each
 * communicator's device current (cudaSetDevice replaces the top of the stack), so a context
 * pushed before them is what they replace, and popping it restores the caller's. */
static cubec_status push(const cuda_driver *cu, cu_context ctx)
{
    cu_result r = cu->ctx_push(ctx);
    return r ? cuda_status(cu, r, "cuCtxPushCurrent") : NULL;
}

static void pop(const cuda_driver *cu)
{
    cu_context ignored;
    cu->ctx_pop(&ignored);
}

/* The CUDA ordinal of the GPU whose UUID is `uuid`, or -1. */
static cubec_status find_cuda_device(const cuda_driver *cu, const uint8_t uuid[16], int *out,
                                     int *count)
{
    *out = -1;
    *count = 0;
    cu_result r = cu->device_get_count(count);
    if (r) return cuda_status(cu, r, "nccl_group_open: cuDeviceGetCount");
    for (int i = 0; i < *count; i++) {
        cu_device dev = 0;
        cu_uuid id;
        if (cu->device_get(&dev, i) || cu->device_get_uuid(&id, dev)) continue;
        if (memcmp(id.bytes, uuid, sizeof id.bytes) == 0) {
            *out = i;
            return NULL;
        }
    }
    return NULL;
}

/* A closed device, a device given twice, two ranks on one GPU: refusals that need neither NCCL
 * nor CUDA, made first so that a bad argument is named the same where NCCL is absent. */
static cubec_status check_arguments(cubec_device *const *devices, uint32_t n, nccl_group **out)
{
    static const char fn[] = "nccl_group_open";
    if (!out) return INVALID_ARG("%s: out is NULL", fn);
    *out = NULL;
    if (!devices) return INVALID_ARG("%s: devices is NULL", fn);
    if (n < 1 || n > 4096) return INVALID_ARG("%s: n is %u: a group has 1 to 4096 ranks", fn, n);
    uint8_t(*uuids)[16] = calloc(n, sizeof *uuids);
    if (!uuids) return status_make(CUBEC_OUT_OF_MEMORY, "%s: %u ranks", fn, n);
    cubec_status err = NULL;
    for (uint32_t r = 0; r < n && !err; r++) {
        err = api_device(devices[r], fn);
        if (err) {
            err = status_annotate(err, "devices[%u]", r);
            break;
        }
        cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
        err = cubec_device_get_info(devices[r], &info);
        if (err) {
            err = status_annotate(err, "%s: devices[%u]", fn, r);
            break;
        }
        memcpy(uuids[r], info.device_uuid, sizeof uuids[r]);
        for (uint32_t q = 0; q < r && !err; q++) {
            if (devices[q] == devices[r])
                err = INVALID_ARG("%s: devices[%u] is devices[%u] (%p): each rank needs a device "
                                  "of its own",
                                  fn, r, q, (const void *)devices[r]);
            else if (memcmp(uuids[q], uuids[r], sizeof uuids[r]) == 0)
                err = status_make(CUBEC_UNSUPPORTED,
                                  "%s: devices[%u] and devices[%u] are the same GPU ('%s', one "
                                  "device_uuid): NCCL refuses two ranks on one GPU (duplicate "
                                  "GPU); use the host-staged transport for opens of one GPU",
                                  fn, q, r, info.name);
        }
    }
    free(uuids);
    return err;
}

void nccl_group_close(nccl_group *g)
{
    if (!g) return;
    for (uint32_t i = 0; i < g->n; i++) {
        nccl_rank *r = &g->ranks[i];
        if (r->comm) g->nc->comm_destroy(r->comm);
        if (!r->ctx) continue;
        if (r->stream && !push(g->cu, r->ctx)) {
            g->cu->stream_destroy(r->stream);
            pop(g->cu);
        }
        g->cu->primary_ctx_release(r->cuda);
    }
    free(g);
}

/* Rank i's CUDA side: the CUDA device with its UUID, the primary context and a stream. */
static cubec_status open_rank(nccl_group *g, uint32_t i)
{
    static const char fn[] = "nccl_group_open";
    const cuda_driver *cu = g->cu;
    nccl_rank *r = &g->ranks[i];
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    RETURN_IF_ERROR(cubec_device_get_info(r->device, &info));
    int count = 0;
    RETURN_IF_ERROR(find_cuda_device(cu, info.device_uuid, &r->ordinal, &count));
    if (r->ordinal < 0)
        return status_make(CUBEC_UNSUPPORTED,
                           "%s: devices[%u] ('%s') is not a CUDA device: none of the %d CUDA "
                           "devices has its UUID",
                           fn, i, info.name, count);
    cu_result res = cu->device_get(&r->cuda, r->ordinal);
    if (res) return cuda_status(cu, res, "nccl_group_open: cuDeviceGet");
    res = cu->primary_ctx_retain(&r->ctx, r->cuda);
    if (res) {
        r->ctx = NULL;
        return cuda_status(cu, res, "nccl_group_open: cuDevicePrimaryCtxRetain");
    }
    RETURN_IF_ERROR(push(cu, r->ctx));
    res = cu->stream_create(&r->stream, CU_STREAM_NON_BLOCKING);
    pop(cu);
    if (res) {
        r->stream = NULL;
        return cuda_status(cu, res, "nccl_group_open: cuStreamCreate");
    }
    return NULL;
}

/* One communicator per rank, made together (ncclCommInitAll takes the ranks' arrays). */
static cubec_status init_comms(nccl_group *g)
{
    int *devlist = calloc(g->n, sizeof(int));
    nccl_comm *comms = calloc(g->n, sizeof(nccl_comm));
    if (!devlist || !comms) {
        free(devlist);
        free(comms);
        return status_make(CUBEC_OUT_OF_MEMORY, "nccl_group_open: %u ranks", g->n);
    }
    for (uint32_t i = 0; i < g->n; i++)
        devlist[i] = g->ranks[i].ordinal;
    cubec_status err = push(g->cu, g->ranks[0].ctx);
    if (!err) {
        nccl_result nr = g->nc->comm_init_all(comms, (int)g->n, devlist);
        pop(g->cu);
        if (nr == NCCL_SUCCESS)
            for (uint32_t i = 0; i < g->n; i++)
                g->ranks[i].comm = comms[i];
        else
            err = nccl_status(g->nc, nr, "nccl_group_open: ncclCommInitAll");
    }
    free(devlist);
    free(comms);
    return err;
}

cubec_status nccl_group_open_with(const nccl_driver *nc, cubec_device *const *devices, uint32_t n,
                                  nccl_group **out)
{
    static const char fn[] = "nccl_group_open";
    RETURN_IF_ERROR(check_arguments(devices, n, out));
    const cuda_driver *cu = NULL;
    cubec_status err = cuda_driver_get(&cu);
    if (err) return status_annotate(err, "%s", fn);
    nccl_group *g = calloc(1, sizeof *g + n * sizeof(nccl_rank));
    if (!g) return status_make(CUBEC_OUT_OF_MEMORY, "%s: %u ranks", fn, n);
    g->n = n;
    g->nc = nc;
    g->cu = cu;
    for (uint32_t i = 0; i < n; i++)
        g->ranks[i].device = devices[i];
    for (uint32_t i = 0; i < n && !err; i++)
        err = open_rank(g, i);
    if (!err) err = init_comms(g);
    if (err) {
        nccl_group_close(g);
        return err;
    }
    *out = g;
    return NULL;
}

cubec_status nccl_group_open(cubec_device *const *devices, uint32_t n, nccl_group **out)
{
    RETURN_IF_ERROR(check_arguments(devices, n, out));
    const nccl_driver *nc = NULL;
    cubec_status err = nccl_driver_get(&nc);
    if (err) return status_annotate(err, "nccl_group_open");
    return nccl_group_open_with(nc, devices, n, out);
}

void nccl_group_force_per_shard(nccl_group *g, int on)
{
    g->per_shard = on;
}

void nccl_shard(uint32_t n, uint64_t total, uint32_t rank, uint64_t *out_offset,
                uint64_t *out_count)
{
    if (n == 0) n = 1; /* never from a group: n >= 1 */
    uint64_t base = total / n, extra = total % n;
    *out_count = base + (rank < extra ? 1 : 0);
    *out_offset = rank * base + (rank < extra ? rank : extra);
}

/* ------------------------------------------------------------------------------------------ */

/* What one collective was asked, checked and resolved to CUDA pointers. */

typedef struct call {
    const char *fn;
    nccl_kind kind;
    const cubec_buffer *in, *out; /* in == out for all_reduce and broadcast */
    const cubec_stream *streams;
    uint64_t count; /* all_reduce, broadcast: count; all_gather, reduce_scatter: total */
    int nccl_type, nccl_op;
    uint32_t esize, root;
} call;

static cubec_status check_dtype(const char *fn, cubec_dtype dtype, int *nccl_type, uint32_t *esize)
{
    if (dtype == CUBEC_DTYPE_F32 || dtype == CUBEC_DTYPE_I32 || (int)dtype == DTYPE_F16) {
        *nccl_type = dtype == CUBEC_DTYPE_F32   ? NCCL_FLOAT32
                     : dtype == CUBEC_DTYPE_I32 ? NCCL_INT32
                                                : NCCL_FLOAT16;
        *esize = (int)dtype == DTYPE_F16 ? 2 : 4;
        return NULL;
    }
    return INVALID_ARG("%s: dtype %d is not CUBEC_DTYPE_F32 (1), f16 (2) or CUBEC_DTYPE_I32 (3)",
                       fn, (int)dtype);
}

static cubec_status check_op(const char *fn, cubec_reduce_op op, int *nccl_op)
{
    if (op == CUBEC_REDUCE_SUM)
        *nccl_op = NCCL_SUM;
    else if (op == CUBEC_REDUCE_MAX)
        *nccl_op = NCCL_MAX;
    else
        return INVALID_ARG("%s: op %d is not CUBEC_REDUCE_SUM (1) or CUBEC_REDUCE_MAX (2)", fn,
                           (int)op);
    return NULL;
}

/* One buffer of rank r holds at least `elements`. */
static cubec_status check_buffer(const call *c, cubec_device *d, const char *arg, uint32_t r,
                                 cubec_buffer b, uint64_t elements)
{
    uint64_t size = 0;
    cubec_status err = cubec_buffer_get_size(d, b, &size);
    if (err) return status_annotate(err, "%s: %s[%u] (rank %u's device)", c->fn, arg, r, r);
    if (size < elements * c->esize) /* no overflow: run() bounds the count */
        return INVALID_ARG("%s: %s[%u] holds %" PRIu64 " bytes, fewer than the %" PRIu64
                           " elements of %u bytes rank %u needs",
                           c->fn, arg, r, size, elements, c->esize, r);
    return NULL;
}

/* Elements of rank r's input and output buffers the call reads or writes. */
static void extents(const nccl_group *g, const call *c, uint32_t r, uint64_t *in_elems,
                    uint64_t *out_elems)
{
    uint64_t off = 0, mine = 0;
    nccl_shard(g->n, c->count, r, &off, &mine);
    *in_elems = *out_elems = c->count;
    if (c->kind == NCCL_KIND_ALL_GATHER) *in_elems = mine;
    if (c->kind == NCCL_KIND_REDUCE_SCATTER) *out_elems = mine;
}

/* Every rank's stream and buffers, before anything is mapped or queued. */
static cubec_status check_ranks(const nccl_group *g, const call *c)
{
    for (uint32_t r = 0; r < g->n; r++) {
        cubec_device *d = g->ranks[r].device;
        RETURN_IF_ERROR(api_lock(d, c->fn));
        stream_ref ref;
        cubec_status err = api_slot(d, c->streams[r], c->fn, &ref);
        RETURN_IF_ERROR(api_unlock(d, status_annotate(err, "streams[%u]", r)));
        uint64_t in_elems = 0, out_elems = 0;
        extents(g, c, r, &in_elems, &out_elems);
        if (c->in == c->out) {
            RETURN_IF_ERROR(check_buffer(c, d, "buffers", r, c->in[r], in_elems));
            continue;
        }
        RETURN_IF_ERROR(check_buffer(c, d, "in", r, c->in[r], in_elems));
        RETURN_IF_ERROR(check_buffer(c, d, "out", r, c->out[r], out_elems));
        if (c->in[r].id == c->out[r].id)
            return INVALID_ARG("%s: in[%u] and out[%u] are one buffer (id %" PRIu64 "): NCCL "
                               "needs them apart",
                               c->fn, r, r, c->in[r].id);
    }
    return NULL;
}

/* Earlier collectives' failures NCCL found while they ran. */
static cubec_status async_errors(const nccl_group *g, const char *fn)
{
    for (uint32_t r = 0; r < g->n; r++) {
        nccl_result async = NCCL_SUCCESS;
        nccl_result nr = g->nc->comm_get_async_error(g->ranks[r].comm, &async);
        if (nr == NCCL_SUCCESS) nr = async;
        if (nr != NCCL_SUCCESS) {
            cubec_status err = nccl_status(g->nc, nr, "ncclCommGetAsyncError");
            return status_annotate(err, "%s: rank %u's communicator", fn, r);
        }
    }
    return NULL;
}

/* Maps each rank's buffers into CUDA and makes each rank's CUDA stream wait for its cubec
 * stream. */
static cubec_status enter_cuda(nccl_group *g, const call *c)
{
    for (uint32_t r = 0; r < g->n; r++) {
        nccl_rank *k = &g->ranks[r];
        cubec_device *d = k->device;
        cubec_cuda_mapping m = CUBEC_CUDA_MAPPING_INIT;
        const char *in_name = c->in == c->out ? "buffers" : "in";
        cubec_status err = cubec_cuda_map(d, c->in[r], &m);
        if (err) return status_annotate(err, "%s: %s[%u]", c->fn, in_name, r);
        k->in = (char *)(uintptr_t)m.device_ptr;
        k->out = k->in;
        if (c->in != c->out) {
            m = (cubec_cuda_mapping)CUBEC_CUDA_MAPPING_INIT;
            err = cubec_cuda_map(d, c->out[r], &m);
            if (err) return status_annotate(err, "%s: out[%u]", c->fn, r);
            k->out = (char *)(uintptr_t)m.device_ptr;
        }
    }
    for (uint32_t r = 0; r < g->n; r++) {
        cubec_status err =
            cubec_cuda_wait_stream(g->ranks[r].device, c->streams[r], g->ranks[r].stream);
        if (err) return status_annotate(err, "%s: streams[%u]", c->fn, r);
    }
    return NULL;
}

/* The NCCL calls of one rank; in a group, every rank issues the same calls in the same order. */
static nccl_result queue_rank(const nccl_group *g, const call *c, uint32_t r)
{
    const nccl_driver *nc = g->nc;
    const nccl_rank *me = &g->ranks[r];
    nccl_comm comm = me->comm;
    nccl_stream s = (nccl_stream)me->stream;
    const int t = c->nccl_type;
    switch (c->kind) {
    case NCCL_KIND_ALL_REDUCE:
        return nc->all_reduce(me->in, me->in, c->count, t, c->nccl_op, comm, s);
    case NCCL_KIND_BROADCAST:
        return nc->broadcast(me->in, me->in, c->count, t, (int)c->root, comm, s);
    case NCCL_KIND_ALL_GATHER:
    case NCCL_KIND_REDUCE_SCATTER: break;
    }
    const uint64_t n = g->n;
    if (!g->per_shard && c->count % n == 0) {
        if (c->kind == NCCL_KIND_ALL_GATHER)
            return nc->all_gather(me->in, me->out, c->count / n, t, comm, s);
        return nc->reduce_scatter(me->in, me->out, c->count / n, t, c->nccl_op, comm, s);
    }
    /* Uneven shards: NCCL's all-gather and reduce-scatter take one count for every rank, so each
     * shard moves by itself, rooted at its owner: a broadcast from its owner's input into its
     * offset of every output, or a reduction of its range of every input into its owner's
     * output. n calls per rank in one group, without scratch memory. */
    for (uint32_t k = 0; k < g->n; k++) {
        uint64_t off = 0, cnt = 0;
        nccl_shard(g->n, c->count, k, &off, &cnt);
        if (cnt == 0) continue;
        nccl_result nr;
        if (c->kind == NCCL_KIND_ALL_GATHER)
            nr = nc->broadcast(me->in, me->out + off * c->esize, cnt, t, (int)k, comm, s);
        else
            nr = nc->reduce(me->in + off * c->esize, me->out, cnt, t, c->nccl_op, (int)k, comm, s);
        if (nr != NCCL_SUCCESS) return nr;
    }
    return NCCL_SUCCESS;
}

/* Every rank's NCCL calls in one group (NCCL needs the ranks of one process in one group, or it
 * waits forever for the second rank inside the first call). */
static cubec_status queue_nccl(const nccl_group *g, const call *c)
{
    const nccl_driver *nc = g->nc;
    const int with_cuda = g->cu != NULL; /* a group made for tests has none */
    if (with_cuda) RETURN_IF_ERROR(push(g->cu, g->ranks[0].ctx));
    nccl_result nr = nc->group_start();
    cubec_status err = nr ? nccl_status(nc, nr, "ncclGroupStart") : NULL;
    const int started = !err;
    for (uint32_t r = 0; r < g->n && !err; r++) {
        nr = queue_rank(g, c, r);
        if (nr) err = status_annotate(nccl_status(nc, nr, "an NCCL call"), "rank %u", r);
    }
    if (started) {
        /* Ended even after a refused call: NCCL's group state is the thread's, and an open
         * group would swallow the thread's next NCCL calls. */
        nccl_result end = nc->group_end();
        if (end && !err) err = nccl_status(nc, end, "ncclGroupEnd");
    }
    if (with_cuda) pop(g->cu);
    return err ? status_annotate(err, "%s", c->fn) : NULL;
}

/* Each cubec stream after its CUDA stream, on the GPU: no thread waits for NCCL. Its errors
 * found while it runs are returned by the group's next call (async_errors). Each output range is
 * then known to its server as written by that wait, as a cuda-interop copy's destination is: a
 * failure it carried before is gone (NCCL wrote every byte of it), and later cubec work on it
 * orders after the wait rather than after the range's last cubec writer. */
static cubec_status leave_cuda(const nccl_group *g, const call *c)
{
    for (uint32_t r = 0; r < g->n; r++) {
        cubec_status err =
            cubec_stream_wait_cuda(g->ranks[r].device, c->streams[r], g->ranks[r].stream);
        if (err) return status_annotate(err, "%s: streams[%u]", c->fn, r);
        uint64_t in_elems = 0, out_elems = 0;
        extents(g, c, r, &in_elems, &out_elems);
        if (out_elems == 0) continue;
        err = api_peer_external_landed(g->ranks[r].device, c->streams[r], c->out[r], 0,
                                       out_elems * c->esize, c->fn);
        if (err) return status_annotate(err, "out[%u]", r);
    }
    return NULL;
}

/* A failure carried by an input the collective reads (docs/errors.md): NCCL would move whatever
 * bytes are there, so instead every rank's output range takes the failure of the first such
 * rank, as cubec_mpi's collectives do, and NCCL is not called. *carried is 1 when it did so. */
static cubec_status carry_failures(const nccl_group *g, const call *c, int *carried)
{
    *carried = 0;
    uint32_t first = 0;
    cubec_status found = NULL;
    for (uint32_t r = 0; r < g->n && !found; r++) {
        if (c->kind == NCCL_KIND_BROADCAST && r != c->root)
            continue; /* only the root's bytes travel */
        found = cubec_check(g->ranks[r].device, &c->in[r], 1);
        first = r;
    }
    if (!found) return NULL;
    *carried = 1;
    cubec_code code = cubec_status_code(found);
    char message[512];
    snprintf(message, sizeof message, "%s: rank %u's input carries a failure: %s", c->fn, first,
             cubec_status_message(found));
    cubec_status_free(found);
    for (uint32_t r = 0; r < g->n; r++) {
        uint64_t in_elems = 0, out_elems = 0;
        extents(g, c, r, &in_elems, &out_elems);
        if (out_elems == 0) continue;
        cubec_status err = cubec_write_failure(g->ranks[r].device, c->streams[r], c->out[r], 0,
                                               out_elems * c->esize, code, message);
        if (err) return status_annotate(err, "%s: out[%u]", c->fn, r);
    }
    return NULL;
}

static cubec_status run(nccl_group *g, call *c)
{
    if (!g) return INVALID_ARG("%s: group is NULL", c->fn);
    if (!c->in) return INVALID_ARG("%s: %s is NULL", c->fn, c->in == c->out ? "buffers" : "in");
    if (!c->out) return INVALID_ARG("%s: out is NULL", c->fn);
    if (!c->streams) return INVALID_ARG("%s: streams is NULL", c->fn);
    if (c->kind == NCCL_KIND_BROADCAST && c->root >= g->n)
        return INVALID_ARG("%s: root %u is not a rank of the group (n = %u)", c->fn, c->root, g->n);
    if (c->count > (UINT64_MAX / 8) / g->n)
        return INVALID_ARG("%s: count %" PRIu64 " is too large", c->fn, c->count);
    RETURN_IF_ERROR(check_ranks(g, c));
    if (c->count == 0) return NULL;
    RETURN_IF_ERROR(async_errors(g, c->fn));
    int carried = 0;
    RETURN_IF_ERROR(carry_failures(g, c, &carried));
    if (carried) return NULL;
    cubec_status err = enter_cuda(g, c);
    if (!err) err = queue_nccl(g, c);
    if (!err) err = leave_cuda(g, c);
    return err;
}

cubec_status nccl_group_all_reduce(nccl_group *g, const cubec_buffer *buffers,
                                   const cubec_stream *streams, uint64_t count, cubec_dtype dtype,
                                   cubec_reduce_op op)
{
    call c = {.fn = "nccl_group_all_reduce",
              .kind = NCCL_KIND_ALL_REDUCE,
              .in = buffers,
              .out = buffers,
              .streams = streams,
              .count = count};
    RETURN_IF_ERROR(check_dtype(c.fn, dtype, &c.nccl_type, &c.esize));
    RETURN_IF_ERROR(check_op(c.fn, op, &c.nccl_op));
    return run(g, &c);
}

cubec_status nccl_group_broadcast(nccl_group *g, const cubec_buffer *buffers,
                                  const cubec_stream *streams, uint64_t count, cubec_dtype dtype,
                                  uint32_t root)
{
    call c = {.fn = "nccl_group_broadcast",
              .kind = NCCL_KIND_BROADCAST,
              .in = buffers,
              .out = buffers,
              .streams = streams,
              .count = count,
              .root = root};
    RETURN_IF_ERROR(check_dtype(c.fn, dtype, &c.nccl_type, &c.esize));
    return run(g, &c);
}

cubec_status nccl_group_all_gather(nccl_group *g, const cubec_buffer *in, const cubec_buffer *out,
                                   const cubec_stream *streams, uint64_t total, cubec_dtype dtype)
{
    call c = {.fn = "nccl_group_all_gather",
              .kind = NCCL_KIND_ALL_GATHER,
              .in = in,
              .out = out,
              .streams = streams,
              .count = total};
    if (in && in == out) return INVALID_ARG("%s: in and out are one array", c.fn);
    RETURN_IF_ERROR(check_dtype(c.fn, dtype, &c.nccl_type, &c.esize));
    return run(g, &c);
}

cubec_status nccl_group_reduce_scatter(nccl_group *g, const cubec_buffer *in,
                                       const cubec_buffer *out, const cubec_stream *streams,
                                       uint64_t total, cubec_dtype dtype, cubec_reduce_op op)
{
    call c = {.fn = "nccl_group_reduce_scatter",
              .kind = NCCL_KIND_REDUCE_SCATTER,
              .in = in,
              .out = out,
              .streams = streams,
              .count = total};
    if (in && in == out) return INVALID_ARG("%s: in and out are one array", c.fn);
    RETURN_IF_ERROR(check_dtype(c.fn, dtype, &c.nccl_type, &c.esize));
    RETURN_IF_ERROR(check_op(c.fn, op, &c.nccl_op));
    return run(g, &c);
}

nccl_group *nccl_group_open_for_test(const nccl_driver *nc, uint32_t n)
{
    nccl_group *g = calloc(1, sizeof *g + n * sizeof(nccl_rank));
    if (!g) return NULL;
    g->n = n;
    g->nc = nc;
    for (uint32_t i = 0; i < n; i++)
        g->ranks[i].comm = (nccl_comm)(uintptr_t)(i + 1); /* the stand-in's rank, from 1 */
    return g;
}

cubec_status nccl_group_queue_for_test(nccl_group *g, nccl_kind what, char *const *in,
                                       char *const *out, uint64_t count, cubec_dtype dtype,
                                       cubec_reduce_op op, uint32_t root)
{
    call c = {.fn = "nccl_group_queue_for_test", .kind = what, .count = count, .root = root};
    RETURN_IF_ERROR(check_dtype(c.fn, dtype, &c.nccl_type, &c.esize));
    if (what == NCCL_KIND_ALL_REDUCE || what == NCCL_KIND_REDUCE_SCATTER)
        RETURN_IF_ERROR(check_op(c.fn, op, &c.nccl_op));
    for (uint32_t r = 0; r < g->n; r++) {
        g->ranks[r].in = in[r];
        g->ranks[r].out = out[r];
    }
    return queue_nccl(g, &c);
}
