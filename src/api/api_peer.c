/* Public entry points of several devices: cubec_copy_peer, the path of an ordered pair of devices
 * (the topology `cubec info --topology` prints) and its measurement (docs/multi-device-paths.md).
 * Both devices' locks are held for a whole copy, taken in address order so that two threads
 * copying in opposite directions cannot hold one each. */
#include "api/api_common.h"
#include "api/api_peer_cuda.h"
#include "api/api_struct.h"
#include "base/clock.h"
#include "interop/cuda_interop.h"
#include "server/copy_fill.h"
#include "server/external.h"
#include "server/graph.h"
#include "server/peer.h"
#include "server/relocate.h"
#include "server/run_mode.h"

#include <string.h>

static const char *const path_names[] = {"none", "same-device", "host-staged", "cuda-interop"};
static const char *const link_names[] = {"none", "same-device", "same-physical-device", "pcie",
                                         "host"};

const char *cubec_path_name(cubec_path path)
{
    unsigned i = (unsigned)path;
    return i < sizeof path_names / sizeof path_names[0] ? path_names[i] : "unknown";
}

const char *cubec_link_class_name(cubec_link_class link)
{
    unsigned i = (unsigned)link;
    return i < sizeof link_names / sizeof link_names[0] ? link_names[i] : "unknown";
}

/* Whether CUDA can copy from src to dst: both devices export memory and their timeline (CUDA
 * maps the buffers and waits on the timelines), and CUDA has both GPUs (interop/cuda_interop.h).
 * Else 0 with "cuda-interop: not available: <why>" in `why`. */
static int cuda_usable(const cubec_device *src, const cubec_device *dst, char *why, size_t n)
{
    const unsigned need = CUBEC_EXTERNAL_MEMORY_FD | CUBEC_EXTERNAL_TIMELINE_FD;
    const cubec_device *lacking = (src->info.external_handles & need) != need   ? src
                                  : (dst->info.external_handles & need) != need ? dst
                                                                                : NULL;
    char reason[96];
    int two_gpus = 0;
    if (lacking)
        snprintf(reason, sizeof reason,
                 "the %s device cannot export memory and its timeline as file descriptors",
                 lacking == src ? "source" : "destination");
    else if (cuda_interop_pair_usable(src->info.device_uuid, dst->info.device_uuid, &two_gpus,
                                      reason, sizeof reason))
        return 1;
    snprintf(why, n, "cuda-interop: not available: %s", reason);
    return 0;
}

/* Bandwidths measured per ordered pair, by device tags (not reused while a device holds one). */
#define MEASURED_PAIRS 64
static struct {
    uint16_t src, dst;
    double gbs;
} measured[MEASURED_PAIRS];
static uint32_t measured_next;
static pthread_mutex_t measured_lock = PTHREAD_MUTEX_INITIALIZER;

static double measured_get(const cubec_device *src, const cubec_device *dst)
{
    double gbs = 0;
    pthread_mutex_lock(&measured_lock);
    for (uint32_t i = 0; i < MEASURED_PAIRS; i++)
        if (measured[i].src == src->tag && measured[i].dst == dst->tag) gbs = measured[i].gbs;
    pthread_mutex_unlock(&measured_lock);
    return gbs;
}

static void measured_set(const cubec_device *src, const cubec_device *dst, double gbs)
{
    pthread_mutex_lock(&measured_lock);
    uint32_t at = measured_next;
    for (uint32_t i = 0; i < MEASURED_PAIRS; i++)
        if (measured[i].src == src->tag && measured[i].dst == dst->tag) at = i;
    if (at == measured_next) measured_next = (measured_next + 1) % MEASURED_PAIRS;
    measured[at].src = src->tag;
    measured[at].dst = dst->tag;
    measured[at].gbs = gbs;
    pthread_mutex_unlock(&measured_lock);
}

/* The path from src to dst: the first that works, unless src's [multi] path names one. Reads
 * what is immutable after open: no lock needed. */
static void choose_path(const cubec_device *src, const cubec_device *dst, cubec_path_info *out)
{
    const gpu *a = src->gpu, *b = dst->gpu;
    /* One physical device: the UUID that export and import compare (cubec_device_info). */
    int same_physical = a->ops == b->ops && !memcmp(src->info.device_uuid, dst->info.device_uuid,
                                                    sizeof src->info.device_uuid);
    if (src == dst)
        out->link = CUBEC_LINK_SAME_DEVICE;
    else if (same_physical)
        out->link = CUBEC_LINK_SAME_PHYSICAL_DEVICE;
    else if (src->info.type == CUBEC_DEVICE_TYPE_DISCRETE &&
             dst->info.type == CUBEC_DEVICE_TYPE_DISCRETE)
        out->link = CUBEC_LINK_PCIE;
    else
        out->link = CUBEC_LINK_HOST;
    char cuda[128];
    int forced = src->config.multi_path;
    int cuda_ok = forced != CONFIG_MULTI_PATH_HOST_STAGED &&
                  !(src == dst && forced == CONFIG_MULTI_PATH_AUTO) &&
                  cuda_usable(src, dst, cuda, sizeof cuda);
    if (forced == CONFIG_MULTI_PATH_HOST_STAGED || (src == dst && forced == CONFIG_MULTI_PATH_AUTO))
        snprintf(cuda, sizeof cuda, "cuda-interop: not tried");
    /* Buffers that are not exportable cannot be mapped into CUDA: their copies take the
     * host-staged path, which the reason says. */
    static const char fallback[] = "buffers not made by cubec_buffer_create_exportable go "
                                   "host-staged";
    if (forced == CONFIG_MULTI_PATH_CUDA_INTEROP) {
        out->path = cuda_ok ? CUBEC_PATH_CUDA_INTEROP : CUBEC_PATH_NONE;
        snprintf(out->reason, sizeof out->reason, "[multi] path = cuda-interop%s%s",
                 cuda_ok ? "; " : ": ", cuda_ok ? fallback : cuda);
        return;
    }
    if (src == dst && forced == CONFIG_MULTI_PATH_AUTO) {
        out->path = CUBEC_PATH_SAME_DEVICE;
        out->reason[0] = 0;
        return;
    }
    if (cuda_ok) {
        out->path = CUBEC_PATH_CUDA_INTEROP;
        snprintf(out->reason, sizeof out->reason, "%s", fallback);
        return;
    }
    if (!a->caps.host_import_alignment || !b->caps.host_import_alignment) {
        out->path = CUBEC_PATH_NONE;
        snprintf(out->reason, sizeof out->reason,
                 "host-staged: not available: the %s device cannot import host memory "
                 "(%s); %s",
                 !a->caps.host_import_alignment ? "source" : "destination",
                 gpu_no_host_import(!a->caps.host_import_alignment ? a : b), cuda);
        return;
    }
    out->path = CUBEC_PATH_HOST_STAGED;
    snprintf(out->reason, sizeof out->reason, "%s%s", cuda,
             forced == CONFIG_MULTI_PATH_HOST_STAGED ? "; [multi] path = host-staged" : "");
}

static cubec_status check_pair(cubec_device *src, cubec_device *dst, const char *fn)
{
    char what[96];
    snprintf(what, sizeof what, "%s: src_device", fn);
    RETURN_IF_ERROR(api_device(src, what));
    snprintf(what, sizeof what, "%s: dst_device", fn);
    return api_device(dst, what);
}

cubec_status cubec_device_get_path(cubec_device *src, cubec_device *dst, cubec_path_info *out_info)
{
    static const char fn[] = "cubec_device_get_path";
    if (!out_info) return INVALID_ARG("%s: out_info is NULL", fn);
    RETURN_IF_ERROR(
        API_STRUCT_CHECK(out_info, cubec_path_info, CUBEC_PATH_INFO_INIT, fn, "out_info"));
    api_struct_clear(out_info);
    RETURN_IF_ERROR(check_pair(src, dst, fn));
    cubec_path_info whole = CUBEC_PATH_INFO_INIT;
    choose_path(src, dst, &whole);
    whole.bandwidth_gbs = measured_get(src, dst);
    api_struct_write(out_info, &whole);
    return NULL;
}

static cubec_status check_words(const char *arg, uint64_t value)
{
    if (value % 4)
        return INVALID_ARG("cubec_copy_peer: %s = %" PRIu64 " is not a multiple of 4", arg, value);
    return NULL;
}

/* Both devices locked, `first` then the other (one lock when they are the same). */
static cubec_status lock_pair(cubec_device *a, cubec_device *b, const char *fn)
{
    cubec_device *first = a < b ? a : b, *second = a < b ? b : a;
    RETURN_IF_ERROR(api_lock(first, fn));
    if (second == first) return NULL;
    cubec_status err = api_lock(second, fn);
    if (err) pthread_mutex_unlock(&first->lock);
    return err;
}

static void unlock_pair(cubec_device *a, cubec_device *b)
{
    pthread_mutex_unlock(&a->lock);
    if (b != a) pthread_mutex_unlock(&b->lock);
}

static cubec_status peer_buffer(cubec_device *d, cubec_buffer h, const char *arg, uint64_t offset,
                                uint64_t size, buffer_obj **out)
{
    char what[96];
    snprintf(what, sizeof what, "cubec_copy_peer: %s", arg);
    RETURN_IF_ERROR(api_buffer(d, h, what, out));
    return api_range("cubec_copy_peer", arg, offset, size, (*out)->size);
}

/* The host-staged copy, chunk by chunk; both locks held. */
static cubec_status copy_staged(cubec_device *src_device, stream_ref ss, buffer_obj *from,
                                uint64_t src_offset, cubec_device *dst_device, stream_ref ds,
                                buffer_obj *to, uint64_t dst_offset, uint64_t size)
{
    peer_link *l;
    RETURN_IF_ERROR(server_back_buffers(src_device, &from, 1, NULL));
    RETURN_IF_ERROR(server_back_buffers(dst_device, &to, 1, NULL));
    RETURN_IF_ERROR(server_peer_link(src_device, dst_device, &l));
    alloc_obj *a = from->alloc, *b = to->alloc;
    /* No relocation moves them while their copies are recorded. */
    server_alloc_pin(src_device, a);
    server_alloc_pin(dst_device, b);
    uint64_t at = buffer_device_offset(from) + src_offset,
             to_at = buffer_device_offset(to) + dst_offset;
    uint64_t chunk = server_peer_chunk(l);
    cubec_status err = NULL;
    for (uint64_t pos = 0; pos < size && !err; pos += chunk) {
        uint64_t n = size - pos < chunk ? size - pos : chunk;
        err = server_peer_copy_chunk(l, ss, a, at + pos, ds, b, to_at + pos, n);
    }
    server_alloc_unpin(dst_device, b);
    server_alloc_unpin(src_device, a);
    return err;
}

/* A buffer CUDA can map: on a page allocated exportable. */
static int exportable(const buffer_obj *b)
{
    return b->alloc->mem.size && buffer_page(b)->external == GPU_EXTERNAL_EXPORTABLE;
}

cubec_status cubec_copy_peer(cubec_device *src_device, cubec_stream src_stream, cubec_buffer src,
                             uint64_t src_offset, cubec_device *dst_device, cubec_stream dst_stream,
                             cubec_buffer dst, uint64_t dst_offset, uint64_t size)
{
    static const char fn[] = "cubec_copy_peer";
    RETURN_IF_ERROR(check_words("src_offset", src_offset));
    RETURN_IF_ERROR(check_words("dst_offset", dst_offset));
    RETURN_IF_ERROR(check_words("size", size));
    RETURN_IF_ERROR(check_pair(src_device, dst_device, fn));
    RETURN_IF_ERROR(lock_pair(src_device, dst_device, fn));
    buffer_obj *from, *to;
    stream_ref ss, ds;
    cubec_status err = api_slot(src_device, src_stream, "cubec_copy_peer (src_stream)", &ss);
    if (!err) err = api_slot(dst_device, dst_stream, "cubec_copy_peer (dst_stream)", &ds);
    if (!err) err = peer_buffer(src_device, src, "src", src_offset, size, &from);
    if (!err) err = peer_buffer(dst_device, dst, "dst", dst_offset, size, &to);
    if (!err && from->alloc == to->alloc && size) {
        uint64_t a = from->offset + src_offset, b = to->offset + dst_offset;
        if (a < b + size && b < a + size)
            err = INVALID_ARG("cubec_copy_peer: source [%" PRIu64 ", +%" PRIu64
                              ") and destination [%" PRIu64 ", +%" PRIu64
                              ") overlap in the same memory",
                              a, size, b, size);
    }
    cubec_path_info pi = CUBEC_PATH_INFO_INIT;
    if (!err) choose_path(src_device, dst_device, &pi);
    if (!err && pi.path == CUBEC_PATH_NONE)
        err = status_make(CUBEC_UNSUPPORTED, "cubec_copy_peer: no path from device %p to %p: %s",
                          (void *)src_device, (void *)dst_device, pi.reason);
    /* A capture records a same-device copy as cubec_copy's; it cannot hold another device's. */
    if (!err && pi.path != CUBEC_PATH_SAME_DEVICE) err = server_graph_refuse(src_device, ss, fn);
    if (!err && pi.path != CUBEC_PATH_SAME_DEVICE) err = server_graph_refuse(dst_device, ds, fn);
    int through_cuda =
        !err && size && pi.path == CUBEC_PATH_CUDA_INTEROP && exportable(from) && exportable(to);
    if (!err && size && !through_cuda) {
        if (pi.path == CUBEC_PATH_SAME_DEVICE)
            err = server_copy(dst_device, ds, from, src_offset, to, dst_offset, size);
        else if (pi.path == CUBEC_PATH_CUDA_INTEROP && !src_device->gpu->caps.host_import_alignment)
            err = status_make(CUBEC_UNSUPPORTED,
                              "cubec_copy_peer: the pair's path is cuda-interop, but a buffer is "
                              "not exportable (cubec_buffer_create_exportable) and the host-staged "
                              "path is not available either");
        else
            err =
                copy_staged(src_device, ss, from, src_offset, dst_device, ds, to, dst_offset, size);
    }
    unlock_pair(src_device, dst_device);
    /* CUDA's calls take each device's lock in turn, and never wait for a device. */
    if (through_cuda)
        err = cuda_interop_copy_peer(src_device, src_stream, src, src_offset, dst_device,
                                     dst_stream, dst, dst_offset, size);
    return err;
}

/* A copy of `bytes` measured: once to warm up (the link, the kernels), once timed. The CUDA path
 * is measured between exportable buffers, the only ones it copies. */
static cubec_status measure(cubec_device *src, cubec_device *dst, uint64_t bytes, int cuda,
                            double *out_gbs)
{
    cubec_stream ss, ds;
    cubec_buffer a = {0}, b = {0};
    cubec_status err = cubec_stream_new(src, &ss);
    if (!err) err = cubec_stream_new(dst, &ds);
    if (!err)
        err = cuda ? cubec_buffer_create_exportable(src, ss, bytes, &a)
                   : cubec_buffer_create(src, ss, bytes, &a);
    if (!err)
        err = cuda ? cubec_buffer_create_exportable(dst, ds, bytes, &b)
                   : cubec_buffer_create(dst, ds, bytes, &b);
    if (!err) err = cubec_fill(src, ss, a, 0, bytes, 0x5a5a5a5au);
    if (!err) err = cubec_copy_peer(src, ss, a, 0, dst, ds, b, 0, bytes);
    if (!err) err = cubec_sync(dst, ds);
    uint64_t t0 = clock_now_ns();
    if (!err) err = cubec_copy_peer(src, ss, a, 0, dst, ds, b, 0, bytes);
    if (!err) err = cubec_sync(dst, ds);
    uint64_t ns = clock_now_ns() - t0;
    if (!err) *out_gbs = (double)bytes / (double)(ns ? ns : 1);
    if (a.id) cubec_status_free(cubec_buffer_release(src, a));
    if (b.id) cubec_status_free(cubec_buffer_release(dst, b));
    return err;
}

cubec_status cubec_device_measure_path(cubec_device *src, cubec_device *dst, uint64_t bytes,
                                       cubec_path_info *out_info)
{
    static const char fn[] = "cubec_device_measure_path";
    if (!out_info) return INVALID_ARG("%s: out_info is NULL", fn);
    RETURN_IF_ERROR(
        API_STRUCT_CHECK(out_info, cubec_path_info, CUBEC_PATH_INFO_INIT, fn, "out_info"));
    api_struct_clear(out_info);
    if (bytes % 4) return INVALID_ARG("%s: bytes = %" PRIu64 " is not a multiple of 4", fn, bytes);
    RETURN_IF_ERROR(check_pair(src, dst, fn));
    cubec_path_info whole = CUBEC_PATH_INFO_INIT;
    choose_path(src, dst, &whole);
    if (whole.path == CUBEC_PATH_NONE)
        return status_make(CUBEC_UNSUPPORTED, "%s: no path from device %p to %p: %s", fn,
                           (void *)src, (void *)dst, whole.reason);
    double gbs = 0;
    RETURN_IF_ERROR(
        measure(src, dst, bytes ? bytes : 4u << 20, whole.path == CUBEC_PATH_CUDA_INTEROP, &gbs));
    measured_set(src, dst, gbs);
    return cubec_device_get_path(src, dst, out_info);
}

/* --- The device-side steps of the cuda-interop path (api/api_peer_cuda.h) ------------------- */

/* The device locked, the stream and buffer looked up, the range checked; *out_at: its page
 * offset. On success the caller unlocks. */
static cubec_status enter_step(cubec_device *d, cubec_stream stream, cubec_buffer h,
                               const char *arg, uint64_t offset, uint64_t size, stream_ref *s,
                               buffer_obj **b, uint64_t *out_at)
{
    RETURN_IF_ERROR(api_lock(d, "cubec_copy_peer"));
    cubec_status err = api_slot(d, stream, "cubec_copy_peer", s);
    if (!err) err = peer_buffer(d, h, arg, offset, size, b);
    if (err) return api_unlock(d, err);
    *out_at = buffer_device_offset(*b) + offset;
    return NULL;
}

cubec_status api_peer_cuda_source(cubec_device *device, cubec_stream stream, cubec_buffer buffer,
                                  uint64_t offset, uint64_t size, uint64_t *out_value,
                                  failure **out_carried, uint64_t *out_number)
{
    *out_value = 0;
    *out_carried = NULL;
    stream_ref s;
    buffer_obj *b;
    uint64_t at;
    RETURN_IF_ERROR(enter_step(device, stream, buffer, "src", offset, size, &s, &b, &at));
    *out_number = b->alloc->number;
    return api_unlock(
        device, server_peer_external_source(device, s, b->alloc, at, size, out_value, out_carried));
}

cubec_status api_peer_cuda_dest(cubec_device *device, cubec_stream stream, cubec_buffer buffer,
                                uint64_t offset, uint64_t size, const failure *carried,
                                uint64_t src_number, uint64_t *out_value)
{
    *out_value = 0;
    stream_ref s;
    buffer_obj *b;
    uint64_t at;
    RETURN_IF_ERROR(enter_step(device, stream, buffer, "dst", offset, size, &s, &b, &at));
    return api_unlock(device, server_peer_external_dest(device, s, b->alloc, at, size, carried,
                                                        src_number, out_value));
}

cubec_status api_peer_cuda_landed(cubec_device *device, cubec_stream stream, cubec_buffer buffer,
                                  uint64_t offset, uint64_t size, uint64_t value,
                                  const uint64_t *also_id)
{
    stream_ref s;
    buffer_obj *b, *also = NULL;
    uint64_t at;
    RETURN_IF_ERROR(enter_step(device, stream, buffer, "dst", offset, size, &s, &b, &at));
    alloc_obj *take_back[2] = {b->alloc, NULL};
    uint32_t n = 1;
    if (also_id) {
        cubec_status st = api_buffer(device, (cubec_buffer){*also_id}, "src", &also);
        if (st)
            cubec_status_free(st); /* released meanwhile: nothing to take back */
        else
            take_back[n++] = also->alloc;
    }
    cubec_status err =
        server_stream_wait_inbound(device, s, value, take_back, n, "cubec_copy_peer");
    if (!err) server_peer_external_landed(device, s, b->alloc, at, size);
    return api_unlock(device, err);
}

cubec_status api_peer_external_landed(cubec_device *device, cubec_stream stream,
                                      cubec_buffer buffer, uint64_t offset, uint64_t size,
                                      const char *fn)
{
    RETURN_IF_ERROR(api_lock(device, fn));
    stream_ref s;
    buffer_obj *b = NULL;
    cubec_status err = api_slot(device, stream, fn, &s);
    if (!err) err = api_buffer(device, buffer, "out", &b);
    if (!err) err = api_range(fn, "out", offset, size, b->size);
    if (!err)
        server_peer_external_landed(device, s, b->alloc, buffer_device_offset(b) + offset, size);
    return api_unlock(device, err);
}

int api_buffer_exportable(cubec_device *device, cubec_buffer buffer)
{
    cubec_status err = api_lock(device, "api_buffer_exportable");
    if (err) {
        cubec_status_free(err);
        return 0;
    }
    buffer_obj *b = NULL;
    err = api_buffer(device, buffer, "buffer", &b);
    const int yes = !err && b->alloc && exportable(b);
    cubec_status_free(api_unlock(device, err));
    return yes;
}
