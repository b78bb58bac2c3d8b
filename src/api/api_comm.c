/* Public entry points of collectives within a process: cubec_comm_create / _destroy and
 * cubec_comm_all_reduce (docs/multi-device-paths.md, "Collectives"). Built only on public calls
 * (cubec_copy_peer, cubec_launch), so that the ordering and failure rules of those calls are the
 * collective's without a second implementation of them: every rank's buffer is gathered into
 * scratch memory on rank 0, reduced there by a kernel, and the result copied back. */
#include "api/api_common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { WORKGROUP = 256, MAX_GROUPS = 65535, KERNELS = 4 /* indexed by dtype */ };

struct cubec_comm_s {
    uint32_t n;
    cubec_device **devices;
    /* The reduction kernels on rank 0, by dtype, compiled at first use (0: not yet). The lock
     * keeps two threads from compiling one twice. */
    pthread_mutex_t lock;
    cubec_kernel reduce[KERNELS];
};

/* data[i] = op(data[i], scratch[k * count + i]) for every source k in rank order: the sum's order
 * is fixed, so every rank gets the same bits. A grid-stride loop keeps the group count within
 * the device's limit for any count. */
static const char reduce_src[] =
    "#version 450\n"
    "layout(local_size_x = 256) in;\n"
    "layout(std430, set = 0, binding = 0) buffer Data { T data[]; };\n"
    "layout(std430, set = 0, binding = 1) readonly buffer Scratch { T scratch[]; };\n"
    "CUBEC_INFO(uint count; uint sources; uint op;)\n"
    "void main() {\n"
    "    uint stride = gl_NumWorkGroups.x * 256u;\n"
    "    for (uint i = gl_GlobalInvocationID.x; i < info.count; i += stride) {\n"
    "        T acc = data[i];\n"
    "        for (uint k = 0u; k < info.sources; k++) {\n"
    "            T v = scratch[k * info.count + i];\n"
    "            acc = info.op == 1u ? acc + v : max(acc, v);\n"
    "        }\n"
    "        data[i] = acc;\n"
    "    }\n"
    "}\n";

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
    if (!c->devices) {
        free(c);
        return status_make(CUBEC_OUT_OF_MEMORY, "%s: %u devices", fn, n);
    }
    memcpy(c->devices, devices, n * sizeof(cubec_device *));
    c->n = n;
    pthread_mutex_init(&c->lock, NULL);
    *out_comm = c;
    return NULL;
}

void cubec_comm_destroy(cubec_comm *comm)
{
    if (!comm) return;
    for (int t = 0; t < KERNELS; t++)
        if (comm->reduce[t].id && device_registry_is_open(comm->devices[0]))
            cubec_status_free(cubec_kernel_destroy(comm->devices[0], comm->reduce[t]));
    pthread_mutex_destroy(&comm->lock);
    free(comm->devices);
    free(comm);
}

/* The reduction kernel of `dtype` on rank 0, compiled on first use. */
static cubec_status reduce_kernel(cubec_comm *c, cubec_dtype dtype, cubec_kernel *out)
{
    pthread_mutex_lock(&c->lock);
    cubec_status err = NULL;
    if (!c->reduce[dtype].id) {
        cubec_define def = {"T", dtype == CUBEC_DTYPE_F32 ? "float" : "int"};
        cubec_kernel_desc desc = CUBEC_KERNEL_DESC_INIT;
        desc.name = dtype == CUBEC_DTYPE_F32 ? "cubec_comm_reduce_f32" : "cubec_comm_reduce_i32";
        desc.glsl = reduce_src;
        desc.defines = &def;
        desc.define_count = 1;
        err = cubec_kernel_create(c->devices[0], &desc, &c->reduce[dtype]);
    }
    *out = c->reduce[dtype];
    pthread_mutex_unlock(&c->lock);
    return err;
}

/* Refuses a rank's stream or buffer before anything is queued, naming the argument. */
static cubec_status check_rank(cubec_comm *c, uint32_t r, const cubec_buffer *buffers,
                               const cubec_stream *streams, uint64_t bytes)
{
    static const char fn[] = "cubec_comm_all_reduce";
    cubec_device *d = c->devices[r];
    RETURN_IF_ERROR(api_lock(d, fn));
    stream_ref ref;
    cubec_status err = api_slot(d, streams[r], fn, &ref);
    RETURN_IF_ERROR(api_unlock(d, status_annotate(err, "streams[%u]", r)));
    uint64_t size = 0;
    err = cubec_buffer_get_size(d, buffers[r], &size);
    if (err) return status_annotate(err, "%s: buffers[%u] (rank %u's device)", fn, r, r);
    if (size < bytes)
        return INVALID_ARG("%s: buffers[%u] holds %" PRIu64 " bytes, fewer than count's %" PRIu64,
                           fn, r, size, bytes);
    return NULL;
}

cubec_status cubec_comm_all_reduce(cubec_comm *comm, const cubec_buffer *buffers,
                                   const cubec_stream *streams, uint64_t count, cubec_dtype dtype,
                                   cubec_reduce_op op)
{
    static const char fn[] = "cubec_comm_all_reduce";
    if (!comm) return INVALID_ARG("%s: comm is NULL", fn);
    if (!buffers) return INVALID_ARG("%s: buffers is NULL", fn);
    if (!streams) return INVALID_ARG("%s: streams is NULL", fn);
    if (dtype != CUBEC_DTYPE_F32 && dtype != CUBEC_DTYPE_I32)
        return INVALID_ARG("%s: dtype %d is not CUBEC_DTYPE_F32 (1) or CUBEC_DTYPE_I32 (3)", fn,
                           (int)dtype);
    if (op != CUBEC_REDUCE_SUM && op != CUBEC_REDUCE_MAX)
        return INVALID_ARG("%s: op %d is not CUBEC_REDUCE_SUM (1) or CUBEC_REDUCE_MAX (2)", fn,
                           (int)op);
    uint32_t n = comm->n;
    /* The kernel indexes the scratch with 32-bit words: (n - 1) * count must fit. */
    if (count > UINT32_MAX / n)
        return INVALID_ARG("%s: count %" PRIu64 " over %u ranks is past the %u elements one "
                           "reduction handles",
                           fn, count, n, UINT32_MAX / n);
    uint64_t bytes = count * 4;
    for (uint32_t r = 0; r < n; r++)
        RETURN_IF_ERROR(check_rank(comm, r, buffers, streams, bytes));
    if (count == 0 || n == 1) return NULL;

    cubec_device *d0 = comm->devices[0];
    cubec_kernel k;
    RETURN_IF_ERROR(reduce_kernel(comm, dtype, &k));
    cubec_buffer scratch;
    RETURN_IF_ERROR(cubec_buffer_create(d0, streams[0], (uint64_t)(n - 1) * bytes, &scratch));
    cubec_status err = NULL;
    for (uint32_t r = 1; r < n && !err; r++)
        err = cubec_copy_peer(comm->devices[r], streams[r], buffers[r], 0, d0, streams[0], scratch,
                              (uint64_t)(r - 1) * bytes, bytes);
    if (!err) {
        struct {
            uint32_t count, sources, op;
        } info = {(uint32_t)count, n - 1, (uint32_t)op};
        cubec_buffer bound[2] = {buffers[0], scratch};
        uint64_t groups = (count + WORKGROUP - 1) / WORKGROUP;
        cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
        ld.kernel = k;
        ld.buffers = bound;
        ld.buffer_count = 2;
        ld.info = &info;
        ld.info_size = sizeof info;
        ld.groups[0] = groups < MAX_GROUPS ? (uint32_t)groups : MAX_GROUPS;
        ld.groups[1] = ld.groups[2] = 1;
        err = cubec_launch(d0, streams[0], &ld);
    }
    for (uint32_t r = 1; r < n && !err; r++)
        err = cubec_copy_peer(d0, streams[0], buffers[0], 0, comm->devices[r], streams[r],
                              buffers[r], 0, bytes);
    /* Queued work holds the scratch until it has run. */
    cubec_status rel = cubec_buffer_release(d0, scratch);
    if (err) {
        cubec_status_free(rel);
        return status_annotate(err, "%s", fn);
    }
    return rel;
}
