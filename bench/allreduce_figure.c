/* multi.allreduce.{1MiB,16MiB,256MiB}: cubec_comm_all_reduce, f32 sum in place, over 2 ranks (the
 * benchmark's device and a second open of it, as multi.copy_peer's pair), then a sync of both
 * ranks' streams: the wall time of the whole collective, as bus bandwidth the way NCCL's tests
 * define it, 2(n-1)/n * bytes / time with n = 2 ranks (the bytes one link must carry, so the
 * figure compares with a link's bandwidth and across rank counts). The baseline is
 * cubec_copy_peer of the same bytes over the same pair (multi_figures.c): the link's bandwidth,
 * which a ring all-reduce's bus bandwidth approaches.
 *
 * Every repetition sums the two ranks into both, so after k of them each element holds
 * 2^(k-1) * (a + b): the inputs are kernel.vector_add's small integers and halves, and doubling
 * is exact in float32, so the result is compared for equality. */
#include "bench_figure.h"

#include <cubec/cubec.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CU_TRY(call) BENCH_TRY(bench_from_status((call), #call))

enum { RANKS = 2 };

typedef struct allreduce_fig {
    cubec_device *devs[RANKS]; /* devs[0]: the benchmark's; devs[1]: a second open of it */
    cubec_stream streams[RANKS];
    cubec_buffer bufs[RANKS];
    cubec_comm *comm;
    uint64_t bytes;
    uint32_t runs; /* all-reduces done: the result's scale is 2^(runs-1) */
} allreduce_fig;

/* Fills rank r's buffer with its input, chunk by chunk, so a large one needs no host copy. */
static bench_err fill_rank(allreduce_fig *f, uint32_t r)
{
    float *chunk = malloc(BENCH_CHUNK_BYTES);
    if (!chunk) return bench_errorf("out of host memory");
    bench_err err = NULL;
    const bench_content what = r == 0 ? BENCH_CONTENT_VECTOR_A : BENCH_CONTENT_VECTOR_B;
    for (uint64_t off = 0; !err && off < f->bytes; off += BENCH_CHUNK_BYTES) {
        uint64_t n = f->bytes - off < BENCH_CHUNK_BYTES ? f->bytes - off : BENCH_CHUNK_BYTES;
        bench_content_fill(what, 0, off / 4, chunk, n / 4);
        err = bench_from_status(cubec_write(f->devs[r], f->streams[r], f->bufs[r], off, chunk, n),
                                "cubec_write");
    }
    free(chunk);
    return err;
}

/* Checks rank r's buffer against 2^(runs-1) * (a + b), chunk by chunk. */
static bench_err check_rank(allreduce_fig *f, uint32_t r)
{
    float *got = malloc(BENCH_CHUNK_BYTES), *want = malloc(BENCH_CHUNK_BYTES);
    if (!got || !want) {
        free(got);
        free(want);
        return bench_errorf("out of host memory");
    }
    bench_err err = NULL;
    const float scale = ldexpf(1.0f, (int)f->runs - 1);
    for (uint64_t off = 0; !err && off < f->bytes; off += BENCH_CHUNK_BYTES) {
        uint64_t n = f->bytes - off < BENCH_CHUNK_BYTES ? f->bytes - off : BENCH_CHUNK_BYTES;
        err = bench_from_status(cubec_read(f->devs[r], f->streams[r], f->bufs[r], off, got, n),
                                "cubec_read");
        if (err) break;
        bench_content_fill(BENCH_CONTENT_VECTOR_SUM, 0, off / 4, want, n / 4);
        for (uint64_t i = 0; i < n / 4; i++) {
            if (got[i] != want[i] * scale) {
                err =
                    bench_errorf("rank %u element %llu is %g after %u all-reduces, want %g", r,
                                 (unsigned long long)off / 4 + i, got[i], f->runs, want[i] * scale);
                break;
            }
        }
    }
    free(got);
    free(want);
    return err;
}

static bench_err setup(void *dev, uint64_t bytes, void **out_state)
{
    allreduce_fig *f = calloc(1, sizeof *f);
    *out_state = f;
    if (!f) return bench_errorf("out of host memory");
    f->devs[0] = dev;
    f->bytes = bytes;
    CU_TRY(cubec_device_open(NULL, &f->devs[1]));
    for (uint32_t r = 0; r < RANKS; r++) {
        CU_TRY(cubec_stream_new(f->devs[r], &f->streams[r]));
        CU_TRY(cubec_buffer_create(f->devs[r], f->streams[r], bytes, &f->bufs[r]));
        BENCH_TRY(fill_rank(f, r));
        CU_TRY(cubec_sync(f->devs[r], f->streams[r]));
    }
    CU_TRY(cubec_comm_create(f->devs, RANKS, &f->comm));
    return NULL;
}

static bench_err run(void *state, bench_sample *out)
{
    allreduce_fig *f = state;
    double t0 = bench_now();
    CU_TRY(cubec_comm_all_reduce(f->comm, f->bufs, f->streams, f->bytes / 4, CUBEC_DTYPE_F32,
                                 CUBEC_REDUCE_SUM));
    f->runs++;
    for (uint32_t r = 0; r < RANKS; r++)
        CU_TRY(cubec_sync(f->devs[r], f->streams[r]));
    const double seconds = bench_now() - t0;
    out->value = 2.0 * (RANKS - 1) / RANKS * (double)f->bytes / seconds * 1e-9;
    return NULL;
}

static bench_err verify(void *state)
{
    allreduce_fig *f = state;
    for (uint32_t r = 0; r < RANKS; r++)
        BENCH_TRY(check_rank(f, r));
    return NULL;
}

/* The communicator's transport and the path of the pair rank 1 -> rank 0 (the ring's copies go
 * both ways over the same pair): the ranks' buffers are plain, so a cuda-interop pair copies them
 * host-staged. */
static char *describe(void *state)
{
    allreduce_fig *f = state;
    cubec_comm_info ci = CUBEC_COMM_INFO_INIT;
    cubec_status st = cubec_comm_get_info(f->comm, &ci);
    if (st) snprintf(ci.transport, sizeof ci.transport, "unknown");
    cubec_status_free(st);
    char *path = bench_peer_path_note(f->devs[1], f->devs[0], 0);
    if (!path) return NULL;
    const size_t len = strlen(path) + sizeof ci.transport + 48;
    char *note = malloc(len);
    if (note) snprintf(note, len, "transport (cubec_comm_get_info): %s; %s", ci.transport, path);
    free(path);
    return note;
}

static void teardown(void *state)
{
    allreduce_fig *f = state;
    if (!f) return;
    cubec_comm_destroy(f->comm);
    for (uint32_t r = 0; r < RANKS; r++) {
        if (!f->devs[r]) continue;
        if (f->streams[r]) cubec_status_free(cubec_sync(f->devs[r], f->streams[r]));
        if (f->bufs[r].id) cubec_status_free(cubec_buffer_release(f->devs[r], f->bufs[r]));
    }
    if (f->devs[1]) cubec_device_close(f->devs[1]);
    free(f);
}

/* Every size runs: the collectives bind views of a buffer past the device's binding limit
 * (docs/multi-device-paths.md, "Collectives"), lavapipe's 128 MiB included. The hook stays for a
 * size a device cannot hold. */
static bench_err unavailable(const bench_params *params, uint64_t bytes)
{
    (void)params;
    (void)bytes;
    return NULL;
}

#define ALLREDUCE_SIDE(mib)                                                                        \
    static bench_err allreduce_setup_##mib(void *dev, const bench_params *p, void **out)           \
    {                                                                                              \
        (void)p;                                                                                   \
        return setup(dev, (uint64_t)(mib) << 20, out);                                             \
    }                                                                                              \
    bench_err bench_allreduce_##mib##_unavailable(const bench_params *params)                      \
    {                                                                                              \
        return unavailable(params, (uint64_t)(mib) << 20);                                         \
    }                                                                                              \
    const bench_impl bench_allreduce_##mib##_impl = {allreduce_setup_##mib, run, verify, teardown, \
                                                     describe};

ALLREDUCE_SIDE(1)
ALLREDUCE_SIDE(16)
ALLREDUCE_SIDE(256)
