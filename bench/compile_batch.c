/* compile.batch64: 64 distinct kernels compiled through the compile queue (cubec_kernel_queue of
 * each, then cubec_kernel_compile_queued) against the same 64 made one after another with
 * cubec_kernel_create (the baseline, cubec_serial). Both sides run with the disk cache off
 * (CUBEC_CACHE_DIR=none, set by the runner while each side's device opens) and every repetition
 * compiles kernels of new salts, so each kernel is compiled by shaderc, validated, reflected and
 * given a new pipeline. Only the compilation is timed; each kernel is then launched once and its
 * output checked against the host. docs/kernels.md "The compile queue". */
#include "bench_figure.h"
#include "bench_kernels.h"

#include <cubec/cubec.h>

#include <stdio.h>
#include <stdlib.h>

#define CU_TRY(call) BENCH_TRY(bench_from_status((call), #call))
#define BATCH 64u

typedef struct batch_fig {
    cubec_device *dev;
    bench_params p;
    int queued;       /* 1: cubec's side (the queue); 0: the serial baseline */
    uint32_t salt;    /* the next salt */
    cubec_buffer buf; /* the tiny kernel's buffer: each kernel's launch writes it */
    cubec_kernel kernels[BATCH];
} batch_fig;

static bench_err setup(void *ctx, const bench_params *params, void **out_state, int queued)
{
    batch_fig *f = calloc(1, sizeof *f);
    *out_state = f;
    if (!f) return bench_errorf("out of host memory");
    f->dev = ctx;
    f->p = *params;
    f->queued = queued;
    /* Salts of this process and this side alone. A driver may keep compiled pipelines on disk
     * itself (NVIDIA's does, across processes): with the same salts in every run, a process
     * after the first found all 64 there (8 ms on the H200, against 38 ms in the first), and
     * the side run second found what the first had compiled. compile.cold's salts are
     * salt_base + 2k and compile.warm_disk's from salt_base + 0x40000000 (salt_base < 2^30). */
    f->salt = params->salt_base + (queued ? 0x80000000u : 0xc0000000u);
    CU_TRY(cubec_buffer_create(f->dev, CUBEC_STREAM_CURRENT, BENCH_RANGE_STRIDE, &f->buf));
    return NULL;
}

static bench_err queued_setup(void *ctx, const bench_params *params, void **out_state)
{
    return setup(ctx, params, out_state, 1);
}

static bench_err serial_setup(void *ctx, const bench_params *params, void **out_state)
{
    return setup(ctx, params, out_state, 0);
}

static void destroy_kernels(batch_fig *f)
{
    for (uint32_t i = 0; i < BATCH; i++) {
        cubec_status_free(cubec_kernel_destroy(f->dev, f->kernels[i]));
        f->kernels[i].id = 0;
    }
}

/* Launches kernel i once and checks the buffer: SALT + step in every word. */
static bench_err check_kernel(batch_fig *f, uint32_t i, uint32_t salt)
{
    static const bench_tiny_info info = {.n = BENCH_TINY_WORDS, .step = 1};
    const cubec_launch_desc launch = {.struct_size = sizeof(cubec_launch_desc),
                                      .kernel = f->kernels[i],
                                      .buffers = &f->buf,
                                      .buffer_count = 1,
                                      .info = &info,
                                      .info_size = sizeof info,
                                      .groups = {1, 1, 1}};
    CU_TRY(cubec_launch(f->dev, CUBEC_STREAM_CURRENT, &launch));
    uint32_t words[BENCH_TINY_WORDS];
    CU_TRY(cubec_read(f->dev, CUBEC_STREAM_CURRENT, f->buf, 0, words, sizeof words));
    for (uint32_t w = 0; w < BENCH_TINY_WORDS; w++)
        if (words[w] != salt + 1u)
            return bench_errorf("kernel %u (SALT %u): word %u holds %u, expected %u", i, salt, w,
                                words[w], salt + 1u);
    return NULL;
}

static bench_err run_batch(batch_fig *f, bench_sample *out)
{
    char values[BATCH][16];
    cubec_define defines[BATCH];
    cubec_kernel_desc descs[BATCH];
    const uint32_t first = f->salt;
    f->salt += BATCH;
    for (uint32_t i = 0; i < BATCH; i++) {
        snprintf(values[i], sizeof values[i], "%u", first + i);
        defines[i] = (cubec_define){"SALT", values[i]};
        descs[i] = (cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc),
                                       .name = "bench_batch",
                                       .glsl = bench_glsl_salted,
                                       .defines = &defines[i],
                                       .define_count = 1};
    }
    double t0 = bench_now();
    for (uint32_t i = 0; i < BATCH; i++)
        CU_TRY(f->queued ? cubec_kernel_queue(f->dev, &descs[i], &f->kernels[i])
                         : cubec_kernel_create(f->dev, &descs[i], &f->kernels[i]));
    if (f->queued) CU_TRY(cubec_kernel_compile_queued(f->dev));
    double t1 = bench_now();
    out->value = (t1 - t0) * 1e3;
    for (uint32_t i = 0; i < BATCH; i++)
        BENCH_TRY(check_kernel(f, i, first + i));
    return NULL;
}

static bench_err batch_run(void *state, bench_sample *out)
{
    batch_fig *f = state;
    bench_err err = run_batch(f, out);
    destroy_kernels(f);
    return err;
}

/* Every repetition checked its 64 kernels already. */
static bench_err batch_verify(void *state)
{
    (void)state;
    return NULL;
}

static void batch_teardown(void *state)
{
    batch_fig *f = state;
    if (!f) return;
    destroy_kernels(f);
    if (f->buf.id) cubec_status_free(cubec_buffer_release(f->dev, f->buf));
    free(f);
}

const bench_impl bench_batch64_impl = {queued_setup, batch_run, batch_verify, batch_teardown};
const bench_impl bench_batch64_serial_impl = {serial_setup, batch_run, batch_verify,
                                              batch_teardown};
