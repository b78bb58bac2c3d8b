/* multi.allreduce.{1MiB,16MiB,256MiB}: cubec_comm_all_reduce over the benchmark's device and a
 * second open of it (on one GPU or lavapipe: the pair (0,1) of `cubec info --topology`, joined
 * host-staged), then a sync of both ranks' streams; in GB/s of bus bandwidth, NCCL's measure:
 * 2 (n - 1) / n x bytes / time, bytes for n = 2. The op is max over i32: it moves the same bytes
 * and runs the same kernels as a sum, and being idempotent every repetition leaves the same
 * result to check (rank 0 holds a pattern, rank 1 INT32_MIN). The baseline is one
 * cubec_copy_peer of the same bytes from rank 0 to rank 1: the link the ring's steps use. */
#include "bench_figure.h"

#include <cubec/cubec.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CU_TRY(call) BENCH_TRY(bench_from_status((call), #call))

#define ALLREDUCE_SEED 0xa11du

typedef struct allreduce_fig {
    cubec_device *dev[2]; /* dev[1]: the second open */
    cubec_stream stream[2];
    cubec_buffer buf[2];
    cubec_comm *comm;
    uint64_t bytes;
    int copy_only; /* the baseline: a peer copy from rank 0 to rank 1 */
} allreduce_fig;

/* Fills (`check` 0) or checks rank r's buffer chunk by chunk, so a large one needs no host copy
 * of it: the pattern on rank 0 (and everywhere after the all-reduce). */
static bench_err pattern(allreduce_fig *f, int r, int check)
{
    uint32_t *chunk = malloc(BENCH_CHUNK_BYTES);
    if (!chunk) return bench_errorf("out of host memory");
    bench_err err = NULL;
    for (uint64_t off = 0; !err && off < f->bytes; off += BENCH_CHUNK_BYTES) {
        uint64_t n = f->bytes - off < BENCH_CHUNK_BYTES ? f->bytes - off : BENCH_CHUNK_BYTES;
        if (check) {
            err = bench_from_status(cubec_read(f->dev[r], f->stream[r], f->buf[r], off, chunk, n),
                                    "cubec_read");
            if (!err)
                err = bench_content_check(BENCH_CONTENT_PATTERN, ALLREDUCE_SEED, off / 4, chunk,
                                          n / 4);
        } else {
            bench_content_fill(BENCH_CONTENT_PATTERN, ALLREDUCE_SEED, off / 4, chunk, n / 4);
            err = bench_from_status(cubec_write(f->dev[r], f->stream[r], f->buf[r], off, chunk, n),
                                    "cubec_write");
        }
    }
    free(chunk);
    return err;
}

static bench_err setup(void *dev, uint64_t bytes, int copy_only, void **out_state)
{
    allreduce_fig *f = calloc(1, sizeof *f);
    *out_state = f;
    if (!f) return bench_errorf("out of host memory");
    f->dev[0] = dev;
    f->bytes = bytes;
    f->copy_only = copy_only;
    CU_TRY(cubec_device_open(NULL, &f->dev[1]));
    for (int r = 0; r < 2; r++) {
        CU_TRY(cubec_stream_new(f->dev[r], &f->stream[r]));
        CU_TRY(cubec_buffer_create(f->dev[r], f->stream[r], bytes, &f->buf[r]));
    }
    CU_TRY(cubec_comm_create(f->dev, 2, &f->comm));
    BENCH_TRY(pattern(f, 0, 0));
    CU_TRY(cubec_fill(f->dev[1], f->stream[1], f->buf[1], 0, bytes, 0x80000000u));
    for (int r = 0; r < 2; r++)
        CU_TRY(cubec_sync(f->dev[r], f->stream[r]));
    return NULL;
}

static bench_err run(void *state, bench_sample *out)
{
    allreduce_fig *f = state;
    double t0 = bench_now();
    if (f->copy_only)
        CU_TRY(cubec_copy_peer(f->dev[0], f->stream[0], f->buf[0], 0, f->dev[1], f->stream[1],
                               f->buf[1], 0, f->bytes));
    else
        CU_TRY(cubec_comm_all_reduce(f->comm, f->buf, f->stream, f->bytes / 4, CUBEC_DTYPE_I32,
                                     CUBEC_REDUCE_MAX));
    for (int r = 0; r < 2; r++)
        CU_TRY(cubec_sync(f->dev[r], f->stream[r]));
    /* Bus bandwidth: 2 (n - 1) / n of the bytes cross a link, for n = 2 the bytes. */
    out->value = (double)f->bytes / (bench_now() - t0) * 1e-9;
    return NULL;
}

static bench_err verify(void *state)
{
    allreduce_fig *f = state;
    BENCH_TRY(pattern(f, 1, 1));
    return f->copy_only ? NULL : pattern(f, 0, 1);
}

static void teardown(void *state)
{
    allreduce_fig *f = state;
    if (!f) return;
    for (int r = 0; r < 2; r++)
        if (f->dev[r]) cubec_status_free(cubec_sync(f->dev[r], f->stream[r]));
    cubec_comm_destroy(f->comm);
    for (int r = 0; r < 2; r++)
        if (f->buf[r].id) cubec_status_free(cubec_buffer_release(f->dev[r], f->buf[r]));
    if (f->dev[1]) cubec_device_close(f->dev[1]);
    free(f);
}

#define ALLREDUCE_SIDES(mib)                                                                       \
    static bench_err allreduce_setup_##mib(void *dev, const bench_params *p, void **out)           \
    {                                                                                              \
        (void)p;                                                                                   \
        return setup(dev, (uint64_t)(mib) << 20, 0, out);                                          \
    }                                                                                              \
    static bench_err peer_copy_setup_##mib(void *dev, const bench_params *p, void **out)           \
    {                                                                                              \
        (void)p;                                                                                   \
        return setup(dev, (uint64_t)(mib) << 20, 1, out);                                          \
    }                                                                                              \
    const bench_impl bench_allreduce_##mib##_impl = {allreduce_setup_##mib, run, verify,           \
                                                     teardown};                                    \
    const bench_impl bench_allreduce_##mib##_baseline_impl = {peer_copy_setup_##mib, run, verify,  \
                                                              teardown};

ALLREDUCE_SIDES(1)
ALLREDUCE_SIDES(16)
ALLREDUCE_SIDES(256)
