/* multi.copy_peer.{1MiB,16MiB,256MiB}: cubec_copy_peer from a buffer of the benchmark's device to
 * one of a second device, then a sync of the destination stream (the wall time of the whole copy,
 * in GB/s of bytes moved). The second device is a second open of the default one (on one GPU or
 * lavapipe, the pair (0,1) of `cubec info --topology`). The baseline is cubec_copy of the same
 * bytes on the one device: what the copy would cost without a second device.
 *
 * The buffers of multi.copy_peer are plain (cubec_buffer_create): their copies go host-staged
 * whatever the pair's path. multi.copy_peer_exportable makes both with
 * cubec_buffer_create_exportable, so its copies take the path the topology chose (cuda-interop
 * where libcuda maps both devices' memory, on an H200; host-staged on lavapipe). Each row's note
 * names the pair's path and the one its copies took (bench_peer_path_note). */
#include "bench_figure.h"

#include <cubec/cubec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CU_TRY(call) BENCH_TRY(bench_from_status((call), #call))

#define PEER_SEED 0x9eedu

typedef struct peer_fig {
    cubec_device *dev, *peer; /* peer: the second device (NULL for the baseline) */
    cubec_stream src_stream, dst_stream;
    cubec_buffer src, dst;
    uint64_t bytes;
    int exportable; /* both buffers made by cubec_buffer_create_exportable */
} peer_fig;

/* Fills (`check` 0) or checks a buffer chunk by chunk, so a large one needs no host copy of it. */
static bench_err pattern(cubec_device *d, cubec_stream s, cubec_buffer b, uint64_t size, int check)
{
    uint32_t *chunk = malloc(BENCH_CHUNK_BYTES);
    if (!chunk) return bench_errorf("out of host memory");
    bench_err err = NULL;
    for (uint64_t off = 0; !err && off < size; off += BENCH_CHUNK_BYTES) {
        uint64_t n = size - off < BENCH_CHUNK_BYTES ? size - off : BENCH_CHUNK_BYTES;
        if (check) {
            err = bench_from_status(cubec_read(d, s, b, off, chunk, n), "cubec_read");
            if (!err)
                err = bench_content_check(BENCH_CONTENT_PATTERN, PEER_SEED, off / 4, chunk, n / 4);
        } else {
            bench_content_fill(BENCH_CONTENT_PATTERN, PEER_SEED, off / 4, chunk, n / 4);
            err = bench_from_status(cubec_write(d, s, b, off, chunk, n), "cubec_write");
        }
    }
    free(chunk);
    return err;
}

char *bench_peer_path_note(cubec_device *src, cubec_device *dst, int exportable)
{
    cubec_path_info pi = CUBEC_PATH_INFO_INIT;
    cubec_status st = cubec_device_get_path(src, dst, &pi);
    char note[512];
    if (st) {
        snprintf(note, sizeof note, "path: unknown (cubec_device_get_path: %s)",
                 cubec_status_message(st));
        cubec_status_free(st);
        return strdup(note);
    }
    const char *pair = cubec_path_name(pi.path);
    const char *buffers =
        exportable ? "exportable buffers (cubec_buffer_create_exportable)" : "plain buffers";
    /* cubec_copy_peer sends exportable buffers of a cuda-interop pair through CUDA, every other
     * copy of a pair of two devices host-staged (api_peer.c). */
    if (pi.path == CUBEC_PATH_CUDA_INTEROP && exportable)
        snprintf(note, sizeof note,
                 "path (cubec_device_get_path): cuda-interop; %s: copied by CUDA", buffers);
    else if (pi.path == CUBEC_PATH_CUDA_INTEROP)
        snprintf(note, sizeof note,
                 "path (cubec_device_get_path): cuda-interop; %s: fell back to host-staged (CUDA "
                 "maps only exportable ones)",
                 buffers);
    else if (pi.path == CUBEC_PATH_HOST_STAGED)
        snprintf(note, sizeof note, "path (cubec_device_get_path): host-staged; %s: %s (%s)",
                 buffers, exportable ? "fell back to host-staged" : "host-staged", pi.reason);
    else
        snprintf(note, sizeof note, "path (cubec_device_get_path): %s (%s)", pair, pi.reason);
    return strdup(note);
}

static bench_err setup(void *dev, uint64_t bytes, int two_devices, int exportable, void **out_state)
{
    peer_fig *f = calloc(1, sizeof *f);
    *out_state = f;
    if (!f) return bench_errorf("out of host memory");
    f->dev = dev;
    f->bytes = bytes;
    f->exportable = exportable;
    if (two_devices) CU_TRY(cubec_device_open(NULL, &f->peer));
    cubec_device *to = f->peer ? f->peer : f->dev;
    CU_TRY(cubec_stream_new(f->dev, &f->src_stream));
    CU_TRY(cubec_stream_new(to, &f->dst_stream));
    if (exportable) {
        CU_TRY(cubec_buffer_create_exportable(f->dev, f->src_stream, bytes, &f->src));
        CU_TRY(cubec_buffer_create_exportable(to, f->dst_stream, bytes, &f->dst));
    } else {
        CU_TRY(cubec_buffer_create(f->dev, f->src_stream, bytes, &f->src));
        CU_TRY(cubec_buffer_create(to, f->dst_stream, bytes, &f->dst));
    }
    BENCH_TRY(pattern(f->dev, f->src_stream, f->src, bytes, 0));
    return bench_from_status(cubec_sync(f->dev, f->src_stream), "cubec_sync");
}

static bench_err run(void *state, bench_sample *out)
{
    peer_fig *f = state;
    cubec_device *to = f->peer ? f->peer : f->dev;
    double t0 = bench_now();
    if (f->peer)
        CU_TRY(cubec_copy_peer(f->dev, f->src_stream, f->src, 0, f->peer, f->dst_stream, f->dst, 0,
                               f->bytes));
    else
        CU_TRY(cubec_copy(f->dev, f->dst_stream, f->src, 0, f->dst, 0, f->bytes));
    CU_TRY(cubec_sync(to, f->dst_stream));
    out->value = (double)f->bytes / (bench_now() - t0) * 1e-9;
    return NULL;
}

static bench_err verify(void *state)
{
    peer_fig *f = state;
    return pattern(f->peer ? f->peer : f->dev, f->dst_stream, f->dst, f->bytes, 1);
}

/* The baseline (one device) has no pair to describe. */
static char *describe(void *state)
{
    peer_fig *f = state;
    return f->peer ? bench_peer_path_note(f->dev, f->peer, f->exportable) : NULL;
}

static void teardown(void *state)
{
    peer_fig *f = state;
    if (!f) return;
    cubec_device *to = f->peer ? f->peer : f->dev;
    cubec_status_free(cubec_sync(to, f->dst_stream));
    if (f->src.id) cubec_status_free(cubec_buffer_release(f->dev, f->src));
    if (f->dst.id) cubec_status_free(cubec_buffer_release(to, f->dst));
    if (f->peer) cubec_device_close(f->peer);
    free(f);
}

/* Both sides of one row: `kind` names the implementations, `exportable` the buffers. */
#define PEER_SIDES(kind, mib, exportable)                                                          \
    static bench_err kind##_peer_setup_##mib(void *dev, const bench_params *p, void **out)         \
    {                                                                                              \
        (void)p;                                                                                   \
        return setup(dev, (uint64_t)(mib) << 20, 1, (exportable), out);                            \
    }                                                                                              \
    static bench_err kind##_copy_setup_##mib(void *dev, const bench_params *p, void **out)         \
    {                                                                                              \
        (void)p;                                                                                   \
        return setup(dev, (uint64_t)(mib) << 20, 0, (exportable), out);                            \
    }                                                                                              \
    const bench_impl bench_##kind##_##mib##_impl = {kind##_peer_setup_##mib, run, verify,          \
                                                    teardown, describe};                           \
    const bench_impl bench_##kind##_##mib##_baseline_impl = {kind##_copy_setup_##mib, run, verify, \
                                                             teardown, describe};

PEER_SIDES(copy_peer, 1, 0)
PEER_SIDES(copy_peer, 16, 0)
PEER_SIDES(copy_peer, 256, 0)
PEER_SIDES(copy_peer_exportable, 1, 1)
PEER_SIDES(copy_peer_exportable, 16, 1)
PEER_SIDES(copy_peer_exportable, 256, 1)
