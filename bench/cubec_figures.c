/* The cubec side of every figure: the same work as raw_figures.c, through the public API only.
 *
 * cubec has no profiling API yet, so device work is timed by the wall clock around the launches
 * and the cubec_sync that waits for them: the same span the raw side times (record + submit +
 * wait), which keeps the ratio fair. */
#include "bench_figure.h"
#include "bench_graph.h"
#include "bench_kernels.h"

#include <cubec/cubec.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CU_TRY(call) BENCH_TRY(bench_from_status((call), #call))

#define STREAM CUBEC_STREAM_CURRENT

/* One state shape serves every figure, as on the raw side. */
typedef struct cu_fig {
    cubec_device *dev;
    bench_params p;
    void *registered; /* *_registered: aligned memory registered with the device */
    void *pinned;     /* *_pinned: from cubec_host_alloc */
    cubec_kernel kernel;
    cubec_buffer buf[3];
    cubec_buffer *many; /* launch.device_independent: one buffer per launch */
    uint32_t many_count;
    void *host;
    uint64_t count; /* increments applied so far: what the tiny kernel's buffer must hold */
    uint32_t salt;  /* compile.*: the last salt compiled and run */
    uint64_t allocations_before;             /* alloc.pair: live allocations before the figure */
    cubec_stream streams[BENCH_MAX_THREADS]; /* streams.*: made by cubec_stream_new */
    uint32_t stream_count;
} cu_fig;

/* A zeroed state, already handed to the runner so that teardown frees it whatever happens next;
 * NULL if out of memory. */
static cu_fig *fig_new(void *dev, const bench_params *params, void **out_state)
{
    cu_fig *f = calloc(1, sizeof *f);
    if (f) {
        f->dev = dev;
        f->p = *params;
    }
    *out_state = f;
    return f;
}

/* Frees what the figure made. Errors here cannot change the figure's outcome any more, but a
 * failure to release is still a bug worth seeing, so it is printed. */
static void release(cubec_device *dev, cubec_buffer b)
{
    bench_err err = bench_from_status(cubec_buffer_release(dev, b), "cubec_buffer_release");
    if (err) fprintf(stderr, "cubec bench: teardown: %s\n", err);
    bench_err_free(err);
}

static void fig_teardown(void *state)
{
    cu_fig *f = state;
    if (!f) return;
    /* Queued work still uses the buffers; cubec keeps them alive, but waiting keeps the next
     * figure from sharing the device with this one's leftovers. */
    cubec_status_free(cubec_sync(f->dev, STREAM));
    for (uint32_t i = 0; i < f->stream_count; i++)
        cubec_status_free(cubec_sync(f->dev, f->streams[i]));
    bench_err err =
        bench_from_status(cubec_kernel_destroy(f->dev, f->kernel), "cubec_kernel_destroy");
    if (err) fprintf(stderr, "cubec bench: teardown: %s\n", err);
    bench_err_free(err);
    for (int i = 0; i < 3; i++)
        release(f->dev, f->buf[i]);
    for (uint32_t i = 0; i < f->many_count; i++)
        release(f->dev, f->many[i]);
    free(f->many);
    bench_host_free(f->host);
    if (f->registered) {
        bench_err e = bench_from_status(cubec_host_unregister(f->dev, f->registered),
                                        "cubec_host_unregister");
        if (e) fprintf(stderr, "cubec bench: teardown: %s\n", e);
        bench_err_free(e);
        free(f->registered);
    }
    if (f->pinned) {
        bench_err e = bench_from_status(cubec_host_free(f->dev, f->pinned), "cubec_host_free");
        if (e) fprintf(stderr, "cubec bench: teardown: %s\n", e);
        bench_err_free(e);
    }
    free(f);
}

/* Creates a kernel and checks that its reflected interface is the one the launches pass. */
static bench_err kernel_create(cu_fig *f, const cubec_kernel_desc *desc, uint32_t bindings,
                               uint32_t info_size, cubec_kernel *out)
{
    CU_TRY(cubec_kernel_create(f->dev, desc, out));
    cubec_kernel_info info = CUBEC_KERNEL_INFO_INIT;
    CU_TRY(cubec_kernel_get_info(f->dev, *out, &info));
    if (info.binding_count != bindings || info.info_size != info_size)
        return bench_errorf("kernel %s reflects %u bindings and %u info bytes, expected %u and %u",
                            desc->name, info.binding_count, info.info_size, bindings, info_size);
    return NULL;
}

/* The tiny kernel and `count` zeroed 256-byte buffers (one in buf[0], or `many`). */
static bench_err tiny_setup(cu_fig *f, uint32_t count)
{
    const cubec_kernel_desc desc = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "bench_tiny", .glsl = bench_glsl_tiny};
    BENCH_TRY(kernel_create(f, &desc, 1, sizeof(bench_tiny_info), &f->kernel));
    if (count == 1) {
        CU_TRY(cubec_buffer_create(f->dev, STREAM, BENCH_RANGE_STRIDE, &f->buf[0]));
        CU_TRY(cubec_fill(f->dev, STREAM, f->buf[0], 0, BENCH_RANGE_STRIDE, 0));
    } else {
        f->many = calloc(count, sizeof *f->many);
        if (!f->many) return bench_errorf("out of host memory");
        for (; f->many_count < count; f->many_count++) {
            cubec_buffer *b = &f->many[f->many_count];
            CU_TRY(cubec_buffer_create(f->dev, STREAM, BENCH_RANGE_STRIDE, b));
            CU_TRY(cubec_fill(f->dev, STREAM, *b, 0, BENCH_RANGE_STRIDE, 0));
        }
    }
    CU_TRY(cubec_sync(f->dev, STREAM));
    return NULL;
}

static bench_err tiny_launch_on(cu_fig *f, cubec_stream stream, const cubec_buffer *buffer)
{
    static const bench_tiny_info info = {.n = BENCH_TINY_WORDS, .step = 1};
    const cubec_launch_desc desc = {
        .struct_size = sizeof(cubec_launch_desc),
        .kernel = f->kernel,
        .buffers = buffer,
        .buffer_count = 1,
        .info = &info,
        .info_size = sizeof info,
        .groups = {1, 1, 1},
    };
    CU_TRY(cubec_launch(f->dev, stream, &desc));
    return NULL;
}

static bench_err tiny_launch(cu_fig *f, const cubec_buffer *buffer)
{
    return tiny_launch_on(f, STREAM, buffer);
}

/* Checks that the first BENCH_TINY_WORDS words of `b` all hold `want`, reading on `stream`. */
static bench_err check_tiny_on(cu_fig *f, cubec_stream stream, cubec_buffer b, uint64_t want)
{
    uint32_t words[BENCH_TINY_WORDS];
    CU_TRY(cubec_read(f->dev, stream, b, 0, words, sizeof words));
    for (uint32_t i = 0; i < BENCH_TINY_WORDS; i++) {
        if (words[i] != (uint32_t)want)
            return bench_errorf("word %u holds %u, expected %u", i, words[i], (uint32_t)want);
    }
    return NULL;
}

static bench_err check_tiny(cu_fig *f, cubec_buffer b, uint64_t want)
{
    return check_tiny_on(f, STREAM, b, want);
}

static bench_err tiny_verify(void *state)
{
    cu_fig *f = state;
    return check_tiny(f, f->buf[0], f->count);
}

static bench_err tiny_only_setup(void *dev, const bench_params *params, void **out_state)
{
    cu_fig *f = fig_new(dev, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    return tiny_setup(f, 1);
}

/* ---- launch.enqueue: host time of `enqueue_launches` launches plus the flush that submits the
 * rest, not waiting for the GPU. -------------------------------------------------------------- */

static bench_err enqueue_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    const uint32_t n = f->p.enqueue_launches;
    double t0 = bench_now();
    for (uint32_t i = 0; i < n; i++)
        BENCH_TRY(tiny_launch(f, &f->buf[0]));
    CU_TRY(cubec_flush(f->dev, STREAM));
    double t1 = bench_now();
    CU_TRY(cubec_sync(f->dev, STREAM));
    f->count += n;
    out->value = (t1 - t0) / n * 1e6;
    return NULL;
}

static const bench_impl enqueue_impl = {tiny_only_setup, enqueue_run, tiny_verify, fig_teardown};

/* Device time of one figure's work: a profile around it whose end is queued right behind the
 * work, so both timestamps are written in the same submission and the window holds the work
 * only. cubec_profile_end submits and waits, so it also stands for the sync of the wall-clock
 * figure. NaN where the device has no timestamps (the profile then measures host time). */
static bench_err profile_close(cu_fig *f, cubec_profile prof, double scale, bench_sample *out)
{
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    CU_TRY(cubec_profile_end(f->dev, STREAM, prof, &r));
    out->device_value = r.method == CUBEC_TIMING_DEVICE && r.duration_ns
                            ? scale / ((double)r.duration_ns * 1e-9)
                            : NAN;
    return NULL;
}

/* ---- launch.roundtrip: one launch and the sync that waits for it. ------------------------- */

static bench_err roundtrip_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    double t0 = bench_now();
    BENCH_TRY(tiny_launch(f, &f->buf[0]));
    CU_TRY(cubec_sync(f->dev, STREAM));
    double t1 = bench_now();
    f->count++;
    out->value = (t1 - t0) * 1e6;
    return NULL;
}

static const bench_impl roundtrip_impl = {tiny_only_setup, roundtrip_run, tiny_verify,
                                          fig_teardown};

/* ---- launch.device_dependent: a chain of launches on one buffer, each reading what the one
 * before wrote, then a sync. ----------------------------------------------------------------- */

static bench_err dependent_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    const uint32_t n = f->p.chain_launches;
    cubec_profile prof;
    double t0 = bench_now();
    CU_TRY(cubec_profile_begin(f->dev, STREAM, &prof));
    for (uint32_t i = 0; i < n; i++)
        BENCH_TRY(tiny_launch(f, &f->buf[0]));
    /* Device time per launch (us) beside the wall clock's: 1e-6 / n seconds per launch. */
    BENCH_TRY(profile_close(f, prof, 1.0, out));
    double t1 = bench_now();
    if (isfinite(out->device_value)) out->device_value = 1e6 / out->device_value / n;
    f->count += n;
    out->value = (t1 - t0) / n * 1e6;
    return NULL;
}

static const bench_impl dependent_impl = {tiny_only_setup, dependent_run, tiny_verify,
                                          fig_teardown};

/* ---- launch.device_independent: one launch on each of `chain` disjoint buffers, then a sync:
 * nothing orders them, so a runtime needs no barrier between them. ---------------------------- */

static bench_err independent_setup(void *dev, const bench_params *params, void **out_state)
{
    cu_fig *f = fig_new(dev, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    return tiny_setup(f, f->p.chain_launches);
}

static bench_err independent_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    const uint32_t n = f->many_count;
    double t0 = bench_now();
    for (uint32_t i = 0; i < n; i++)
        BENCH_TRY(tiny_launch(f, &f->many[i]));
    CU_TRY(cubec_sync(f->dev, STREAM));
    double t1 = bench_now();
    f->count++;
    out->value = (t1 - t0) / n * 1e6;
    return NULL;
}

static bench_err independent_verify(void *state)
{
    cu_fig *f = state;
    for (uint32_t i = 0; i < f->many_count; i++)
        BENCH_TRY(bench_wrap(check_tiny(f, f->many[i], f->count), "buffer %u", i));
    return NULL;
}

static const bench_impl independent_impl = {independent_setup, independent_run, independent_verify,
                                            fig_teardown};

/* ---- write.h2d / read.d2h: 64 MiB between pageable host memory and a buffer. --------------- */

static bench_err transfer_setup(void *dev, const bench_params *params, void **out_state)
{
    cu_fig *f = fig_new(dev, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    const uint64_t bytes = f->p.transfer_bytes;
    f->host = bench_host_alloc(bytes);
    if (!f->host) return bench_errorf("out of host memory (%llu bytes)", (unsigned long long)bytes);
    bench_content_fill(BENCH_CONTENT_PATTERN, BENCH_TRANSFER_SEED, 0, f->host, bytes / 4);
    CU_TRY(cubec_buffer_create(f->dev, STREAM, bytes, &f->buf[0]));
    /* read.d2h reads this back; write.h2d overwrites it with the same bytes. */
    CU_TRY(cubec_write(f->dev, STREAM, f->buf[0], 0, f->host, bytes));
    CU_TRY(cubec_sync(f->dev, STREAM));
    return NULL;
}

/* Timed to the end of the sync: cubec_write may return before the bytes reach the buffer. */
static bench_err h2d_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    double t0 = bench_now();
    CU_TRY(cubec_write(f->dev, STREAM, f->buf[0], 0, f->host, f->p.transfer_bytes));
    CU_TRY(cubec_sync(f->dev, STREAM));
    double t1 = bench_now();
    out->value = (double)f->p.transfer_bytes / (t1 - t0) * 1e-9;
    return NULL;
}

static bench_err h2d_verify(void *state)
{
    cu_fig *f = state;
    uint32_t *back = bench_host_alloc(f->p.transfer_bytes);
    if (!back) return bench_errorf("out of host memory");
    bench_err err = bench_from_status(
        cubec_read(f->dev, STREAM, f->buf[0], 0, back, f->p.transfer_bytes), "cubec_read");
    if (!err)
        err = bench_content_check(BENCH_CONTENT_PATTERN, BENCH_TRANSFER_SEED, 0, back,
                                  f->p.transfer_bytes / 4);
    bench_host_free(back);
    return err;
}

static bench_err d2h_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    /* Cleared so that the check proves the last read wrote every byte (not timed). */
    memset(f->host, 0, f->p.transfer_bytes);
    double t0 = bench_now();
    CU_TRY(cubec_read(f->dev, STREAM, f->buf[0], 0, f->host, f->p.transfer_bytes));
    double t1 = bench_now();
    out->value = (double)f->p.transfer_bytes / (t1 - t0) * 1e-9;
    return NULL;
}

static bench_err d2h_verify(void *state)
{
    cu_fig *f = state;
    return bench_content_check(BENCH_CONTENT_PATTERN, BENCH_TRANSFER_SEED, 0, f->host,
                               f->p.transfer_bytes / 4);
}

static const bench_impl h2d_impl = {transfer_setup, h2d_run, h2d_verify, fig_teardown};
static const bench_impl d2h_impl = {transfer_setup, d2h_run, d2h_verify, fig_teardown};

/* ---- *_registered / *_pinned: the same 64 MiB from memory the GPU copies directly. -------- */

/* The transfer figures' buffer, with f->host pointing at registered (or pinned) memory. */
static bench_err direct_setup(void *dev, const bench_params *params, void **out_state, int pinned)
{
    cu_fig *f = fig_new(dev, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    const uint64_t bytes = f->p.transfer_bytes;
    if (pinned) {
        CU_TRY(cubec_host_alloc(f->dev, bytes, &f->pinned));
    } else {
        cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
        CU_TRY(cubec_device_get_info(f->dev, &info));
        uint64_t a = info.host_register_alignment;
        f->registered = aligned_alloc(a, (bytes + a - 1) / a * a);
        if (!f->registered)
            return bench_errorf("out of host memory (%llu bytes)", (unsigned long long)bytes);
        CU_TRY(cubec_host_register(f->dev, f->registered, (bytes + a - 1) / a * a));
    }
    unsigned char *host = pinned ? f->pinned : f->registered;
    bench_content_fill(BENCH_CONTENT_PATTERN, BENCH_TRANSFER_SEED, 0, host, bytes / 4);
    CU_TRY(cubec_buffer_create(f->dev, STREAM, bytes, &f->buf[0]));
    CU_TRY(cubec_write(f->dev, STREAM, f->buf[0], 0, host, bytes));
    CU_TRY(cubec_sync(f->dev, STREAM));
    return NULL;
}

static bench_err registered_setup(void *dev, const bench_params *params, void **out_state)
{
    return direct_setup(dev, params, out_state, 0);
}

static bench_err pinned_setup(void *dev, const bench_params *params, void **out_state)
{
    return direct_setup(dev, params, out_state, 1);
}

static void *direct_host(cu_fig *f)
{
    return f->pinned ? f->pinned : f->registered;
}

static bench_err h2d_direct_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    double t0 = bench_now();
    CU_TRY(cubec_write(f->dev, STREAM, f->buf[0], 0, direct_host(f), f->p.transfer_bytes));
    CU_TRY(cubec_sync(f->dev, STREAM));
    double t1 = bench_now();
    out->value = (double)f->p.transfer_bytes / (t1 - t0) * 1e-9;
    return NULL;
}

static bench_err d2h_direct_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    memset(direct_host(f), 0, f->p.transfer_bytes);
    double t0 = bench_now();
    CU_TRY(cubec_read(f->dev, STREAM, f->buf[0], 0, direct_host(f), f->p.transfer_bytes));
    double t1 = bench_now();
    out->value = (double)f->p.transfer_bytes / (t1 - t0) * 1e-9;
    return NULL;
}

static bench_err d2h_direct_verify(void *state)
{
    cu_fig *f = state;
    return bench_content_check(BENCH_CONTENT_PATTERN, BENCH_TRANSFER_SEED, 0, direct_host(f),
                               f->p.transfer_bytes / 4);
}

static const bench_impl h2d_registered_impl = {registered_setup, h2d_direct_run, h2d_verify,
                                               fig_teardown};
static const bench_impl d2h_registered_impl = {registered_setup, d2h_direct_run, d2h_direct_verify,
                                               fig_teardown};
static const bench_impl h2d_pinned_impl = {pinned_setup, h2d_direct_run, h2d_verify, fig_teardown};
static const bench_impl d2h_pinned_impl = {pinned_setup, d2h_direct_run, d2h_direct_verify,
                                           fig_teardown};

/* ---- copy.d2d: cubec_copy of the whole buffer, then a sync. ------------------------------- */

/* Fills a buffer of `size` bytes with `what`, or checks it, a chunk at a time, so that a 1 GiB
 * buffer needs no 1 GiB host copy. */
static bench_err fill_buffer(cu_fig *f, cubec_buffer b, uint64_t size, bench_content what,
                             uint32_t seed)
{
    uint32_t *chunk = malloc(BENCH_CHUNK_BYTES);
    if (!chunk) return bench_errorf("out of host memory");
    bench_err err = NULL;
    for (uint64_t off = 0; !err && off < size; off += BENCH_CHUNK_BYTES) {
        uint64_t bytes = size - off < BENCH_CHUNK_BYTES ? size - off : BENCH_CHUNK_BYTES;
        bench_content_fill(what, seed, off / 4, chunk, bytes / 4);
        err = bench_from_status(cubec_write(f->dev, STREAM, b, off, chunk, bytes), "cubec_write");
    }
    if (!err) err = bench_from_status(cubec_sync(f->dev, STREAM), "cubec_sync");
    free(chunk);
    return err;
}

static bench_err check_buffer(cu_fig *f, cubec_buffer b, uint64_t size, bench_content what,
                              uint32_t seed)
{
    uint32_t *chunk = malloc(BENCH_CHUNK_BYTES);
    if (!chunk) return bench_errorf("out of host memory");
    bench_err err = NULL;
    for (uint64_t off = 0; !err && off < size; off += BENCH_CHUNK_BYTES) {
        uint64_t bytes = size - off < BENCH_CHUNK_BYTES ? size - off : BENCH_CHUNK_BYTES;
        err = bench_from_status(cubec_read(f->dev, STREAM, b, off, chunk, bytes), "cubec_read");
        if (!err) err = bench_content_check(what, seed, off / 4, chunk, bytes / 4);
    }
    free(chunk);
    return err;
}

static bench_err copy_setup(void *dev, const bench_params *params, void **out_state)
{
    cu_fig *f = fig_new(dev, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    CU_TRY(cubec_buffer_create(f->dev, STREAM, f->p.copy_bytes, &f->buf[0]));
    CU_TRY(cubec_buffer_create(f->dev, STREAM, f->p.copy_bytes, &f->buf[1]));
    return fill_buffer(f, f->buf[0], f->p.copy_bytes, BENCH_CONTENT_PATTERN, BENCH_COPY_SEED);
}

static bench_err copy_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    double bytes = 2.0 * (double)f->p.copy_bytes; /* read + written */
    cubec_profile prof;
    double t0 = bench_now();
    CU_TRY(cubec_profile_begin(f->dev, STREAM, &prof));
    CU_TRY(cubec_copy(f->dev, STREAM, f->buf[0], 0, f->buf[1], 0, f->p.copy_bytes));
    BENCH_TRY(profile_close(f, prof, bytes * 1e-9, out));
    double t1 = bench_now();
    out->value = bytes / (t1 - t0) * 1e-9;
    return NULL;
}

static bench_err copy_verify(void *state)
{
    cu_fig *f = state;
    return check_buffer(f, f->buf[1], f->p.copy_bytes, BENCH_CONTENT_PATTERN, BENCH_COPY_SEED);
}

static const bench_impl copy_impl = {copy_setup, copy_run, copy_verify, fig_teardown};

/* ---- kernel.vector_add: c = a + b, one launch, then a sync. ------------------------------- */

static bench_err vector_setup(void *dev, const bench_params *params, void **out_state)
{
    cu_fig *f = fig_new(dev, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    const cubec_kernel_desc desc = {.struct_size = sizeof(cubec_kernel_desc),
                                    .name = "bench_vector_add",
                                    .glsl = bench_glsl_vector_add};
    BENCH_TRY(kernel_create(f, &desc, 3, sizeof(bench_vector_info), &f->kernel));
    const uint64_t bytes = f->p.vector_n * 4;
    for (int i = 0; i < 3; i++)
        CU_TRY(cubec_buffer_create(f->dev, STREAM, bytes, &f->buf[i]));
    BENCH_TRY(fill_buffer(f, f->buf[0], bytes, BENCH_CONTENT_VECTOR_A, 0));
    return fill_buffer(f, f->buf[1], bytes, BENCH_CONTENT_VECTOR_B, 0);
}

static bench_err vector_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    const bench_vector_info info = {.n4 = (uint32_t)(f->p.vector_n / 4)};
    const cubec_launch_desc desc = {
        .struct_size = sizeof(cubec_launch_desc),
        .kernel = f->kernel,
        .buffers = f->buf,
        .buffer_count = 3,
        .info = &info,
        .info_size = sizeof info,
        .groups = {f->p.vector_groups, 1, 1},
    };
    cubec_profile prof;
    double bytes = 12.0 * (double)f->p.vector_n;
    double t0 = bench_now();
    CU_TRY(cubec_profile_begin(f->dev, STREAM, &prof));
    CU_TRY(cubec_launch(f->dev, STREAM, &desc));
    BENCH_TRY(profile_close(f, prof, bytes * 1e-9, out));
    double t1 = bench_now();
    out->value = bytes / (t1 - t0) * 1e-9;
    return NULL;
}

static bench_err vector_verify(void *state)
{
    cu_fig *f = state;
    return check_buffer(f, f->buf[2], f->p.vector_n * 4, BENCH_CONTENT_VECTOR_SUM, 0);
}

static const bench_impl vector_impl = {vector_setup, vector_run, vector_verify, fig_teardown};

/* ---- profile.empty: a profile around nothing on an idle GPU (after a sync): what an
 * autotuner's shortest candidate is charged. Device timing where the queue has timestamps. --- */

static bench_err empty_setup(void *dev, const bench_params *params, void **out_state)
{
    return fig_new(dev, params, out_state) ? NULL : bench_errorf("out of host memory");
}

static bench_err empty_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    CU_TRY(cubec_sync(f->dev, STREAM));
    cubec_profile prof;
    CU_TRY(cubec_profile_begin(f->dev, STREAM, &prof));
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    CU_TRY(cubec_profile_end(f->dev, STREAM, prof, &r));
    out->value = (double)r.duration_ns / 1e3;
    /* An empty window measures 0 with Device timing (no timestamps are read): true, not a
     * failure to measure. */
    out->zero_ok = r.method == CUBEC_TIMING_DEVICE;
    return NULL;
}

static bench_err empty_verify(void *state)
{
    (void)state;
    return NULL; /* nothing ran: the profile's own checks (end names a failure) are the test */
}

static const bench_impl empty_impl = {empty_setup, empty_run, empty_verify, fig_teardown};

/* ---- alloc.pair: cubec_buffer_create + cubec_buffer_release, sizes cycling, pool warm (the
 * warm-up run fills the pools). ------------------------------------------------------------- */

static bench_err live_allocations(cu_fig *f, uint64_t *out)
{
    cubec_memory_report report = CUBEC_MEMORY_REPORT_INIT;
    CU_TRY(cubec_memory_report_get(f->dev, STREAM, &report));
    *out = report.allocations;
    return NULL;
}

static bench_err alloc_setup(void *dev, const bench_params *params, void **out_state)
{
    cu_fig *f = fig_new(dev, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    return live_allocations(f, &f->allocations_before);
}

static bench_err alloc_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    uint64_t pairs = 0;
    double t0 = bench_now();
    for (uint32_t c = 0; c < f->p.alloc_cycles; c++) {
        for (uint64_t s = f->p.alloc_min_bytes; s <= f->p.alloc_max_bytes; s *= 2, pairs++) {
            cubec_buffer b;
            CU_TRY(cubec_buffer_create(f->dev, STREAM, s, &b));
            CU_TRY(cubec_buffer_release(f->dev, b));
        }
    }
    double t1 = bench_now();
    out->value = (t1 - t0) / (double)pairs * 1e9;
    return NULL;
}

/* Every size gives a buffer of that size, and the pairs left no allocation behind. */
static bench_err alloc_verify(void *state)
{
    cu_fig *f = state;
    for (uint64_t s = f->p.alloc_min_bytes; s <= f->p.alloc_max_bytes; s *= 2) {
        uint64_t size = 0;
        CU_TRY(cubec_buffer_create(f->dev, STREAM, s, &f->buf[0]));
        CU_TRY(cubec_buffer_get_size(f->dev, f->buf[0], &size));
        cubec_buffer b = f->buf[0];
        f->buf[0] = (cubec_buffer){0};
        CU_TRY(cubec_buffer_release(f->dev, b));
        if (size != s)
            return bench_errorf("a buffer of %llu bytes reports %llu", (unsigned long long)s,
                                (unsigned long long)size);
    }
    uint64_t after;
    BENCH_TRY(live_allocations(f, &after));
    if (after != f->allocations_before)
        return bench_errorf("%llu live allocations before, %llu after",
                            (unsigned long long)f->allocations_before, (unsigned long long)after);
    return NULL;
}

static const bench_impl alloc_impl = {alloc_setup, alloc_run, alloc_verify, fig_teardown};

/* ---- memory.peak_ratio: bytes reserved / bytes in use at the peak of an MLP training loop
 * (docs/benchmarks.md). The weights and biases are allocated once inside a Persistent window;
 * every step draws a batch size, allocates the forward activations, then walks back allocating
 * each layer's activation gradient and weight and bias gradients and freeing what the layer no
 * longer needs, and frees the gradients at the optimizer step. Nothing runs on the GPU: the
 * figure is about where the pools put the bytes, and frees of unused buffers take effect at
 * once. Every allocation samples the stream's report; the value is the largest bytes_reserved
 * over the run divided by the largest bytes_in_use (what a program must have of memory against
 * what it asked for at most, as PyTorch's max_memory_reserved / max_memory_allocated). ------- */

enum { MLP_LAYERS = 4 };
/* 1024 inputs, three hidden layers of 4096, 1000 outputs: 16 + 64 + 64 + 15.6 MiB of float32
 * weights (each fits lavapipe's 128 MiB binding limit). */
static const uint64_t mlp_width[MLP_LAYERS + 1] = {1024, 4096, 4096, 4096, 1000};

typedef struct mlp_run {
    cu_fig *f;
    uint64_t in_use;        /* bytes the host has alive: what the report must say */
    uint64_t peak_in_use;   /* the report's, over the run */
    uint64_t peak_reserved; /* likewise */
} mlp_run;

static bench_err mlp_sample(mlp_run *r)
{
    cubec_memory_report rep = CUBEC_MEMORY_REPORT_INIT;
    CU_TRY(cubec_memory_report_get(r->f->dev, STREAM, &rep));
    if (rep.bytes_in_use != r->in_use)
        return bench_errorf("the report has %llu bytes in use, the loop %llu",
                            (unsigned long long)rep.bytes_in_use, (unsigned long long)r->in_use);
    if (rep.bytes_in_use > r->peak_in_use) r->peak_in_use = rep.bytes_in_use;
    if (rep.bytes_reserved > r->peak_reserved) r->peak_reserved = rep.bytes_reserved;
    return NULL;
}

static bench_err mlp_alloc(mlp_run *r, uint64_t bytes, cubec_buffer *out)
{
    CU_TRY(cubec_buffer_create(r->f->dev, STREAM, bytes, out));
    r->in_use += bytes;
    return mlp_sample(r);
}

static bench_err mlp_free(mlp_run *r, cubec_buffer *b, uint64_t bytes)
{
    cubec_buffer x = *b;
    *b = (cubec_buffer){0};
    CU_TRY(cubec_buffer_release(r->f->dev, x));
    r->in_use -= bytes;
    return NULL;
}

static bench_err peak_setup(void *dev, const bench_params *params, void **out_state)
{
    cu_fig *f = fig_new(dev, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    f->many = calloc((size_t)2 * MLP_LAYERS, sizeof *f->many);
    if (!f->many) return bench_errorf("out of host memory");
    CU_TRY(cubec_memory_window_begin(f->dev, STREAM, CUBEC_MEMORY_MODE_PERSISTENT));
    bench_err err = NULL;
    for (uint32_t i = 0; i < MLP_LAYERS && !err; i++) {
        err = bench_from_status(cubec_buffer_create(f->dev, STREAM,
                                                    mlp_width[i] * mlp_width[i + 1] * 4,
                                                    &f->many[f->many_count]),
                                "cubec_buffer_create (weights)");
        if (!err) f->many_count++;
        if (!err)
            err = bench_from_status(
                cubec_buffer_create(f->dev, STREAM, mlp_width[i + 1] * 4, &f->many[f->many_count]),
                "cubec_buffer_create (bias)");
        if (!err) f->many_count++;
    }
    bench_err pop =
        bench_from_status(cubec_memory_window_end(f->dev, STREAM), "cubec_memory_window_end");
    if (err) {
        bench_err_free(pop);
        return err;
    }
    return pop;
}

static bench_err peak_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    mlp_run r = {.f = f};
    for (uint32_t i = 0; i < MLP_LAYERS; i++)
        r.in_use += mlp_width[i] * mlp_width[i + 1] * 4 + mlp_width[i + 1] * 4;
    uint32_t rng = 2024;
    cubec_buffer act[MLP_LAYERS + 1], dw[MLP_LAYERS], db[MLP_LAYERS], g, g_prev;
    for (uint32_t step = 0; step < f->p.mlp_steps; step++) {
        /* Batches of 32..512 rows, and now and then an epoch's ragged last one. */
        rng = rng * 1664525u + 1013904223u;
        uint64_t batch = step % 7 == 6 ? 1 + (rng >> 8) % 200 : 32 * (1 + (rng >> 8) % 16);
        for (uint32_t i = 0; i <= MLP_LAYERS; i++)
            BENCH_TRY(mlp_alloc(&r, batch * mlp_width[i] * 4, &act[i]));
        BENCH_TRY(mlp_alloc(&r, batch * mlp_width[MLP_LAYERS] * 4, &g));
        for (uint32_t i = MLP_LAYERS; i >= 1; i--) {
            BENCH_TRY(mlp_alloc(&r, mlp_width[i - 1] * mlp_width[i] * 4, &dw[i - 1]));
            BENCH_TRY(mlp_alloc(&r, mlp_width[i] * 4, &db[i - 1]));
            BENCH_TRY(mlp_alloc(&r, batch * mlp_width[i - 1] * 4, &g_prev));
            BENCH_TRY(mlp_free(&r, &act[i], batch * mlp_width[i] * 4));
            BENCH_TRY(mlp_free(&r, &g, batch * mlp_width[i] * 4));
            g = g_prev;
        }
        BENCH_TRY(mlp_free(&r, &act[0], batch * mlp_width[0] * 4));
        BENCH_TRY(mlp_free(&r, &g, batch * mlp_width[0] * 4));
        for (uint32_t i = 0; i < MLP_LAYERS; i++) { /* the optimizer step */
            BENCH_TRY(mlp_free(&r, &dw[i], mlp_width[i] * mlp_width[i + 1] * 4));
            BENCH_TRY(mlp_free(&r, &db[i], mlp_width[i + 1] * 4));
        }
        BENCH_TRY(mlp_sample(&r));
    }
    out->value = (double)r.peak_reserved / (double)r.peak_in_use;
    return NULL;
}

/* The loop left the weights alone (in the persistent pool unless [memory] persistent_memory
 * says otherwise), and nothing else. */
static bench_err peak_verify(void *state)
{
    cu_fig *f = state;
    cubec_memory_report rep = CUBEC_MEMORY_REPORT_INIT;
    CU_TRY(cubec_memory_report_get(f->dev, STREAM, &rep));
    uint64_t weights = 0;
    for (uint32_t i = 0; i < MLP_LAYERS; i++)
        weights += mlp_width[i] * mlp_width[i + 1] * 4 + mlp_width[i + 1] * 4;
    if (rep.allocations != f->many_count || rep.bytes_in_use != weights)
        return bench_errorf("%llu live allocations of %llu bytes; the weights are %u buffers of "
                            "%llu bytes",
                            (unsigned long long)rep.allocations,
                            (unsigned long long)rep.bytes_in_use, f->many_count,
                            (unsigned long long)weights);
    return NULL;
}

static const bench_impl peak_impl = {peak_setup, peak_run, peak_verify, fig_teardown};

/* ---- compile.cold / compile.warm_memory: create a kernel, launch it once, sync. ----------- */

#define WARM_SALT 7u

static bench_err salted_setup(void *dev, const bench_params *params, void **out_state)
{
    cu_fig *f = fig_new(dev, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    CU_TRY(cubec_buffer_create(f->dev, STREAM, BENCH_RANGE_STRIDE, &f->buf[0]));
    /* cubec's salts are even, the raw side's odd: neither side can profit from the other. */
    f->salt = f->p.salt_base & ~1u;
    return NULL;
}

/* Creates the salted kernel, launches it once and syncs; the kernel is destroyed afterwards
 * (the caller times only what it wants). */
static bench_err salted_create_launch(cu_fig *f, uint32_t salt, cubec_kernel *out_kernel)
{
    char value[16];
    snprintf(value, sizeof value, "%u", salt);
    const cubec_define define = {"SALT", value};
    const cubec_kernel_desc desc = {
        .struct_size = sizeof(cubec_kernel_desc),
        .name = "bench_salted",
        .glsl = bench_glsl_salted,
        .defines = &define,
        .define_count = 1,
    };
    CU_TRY(cubec_kernel_create(f->dev, &desc, out_kernel));
    static const bench_tiny_info info = {.n = BENCH_TINY_WORDS, .step = 1};
    const cubec_launch_desc launch = {
        .struct_size = sizeof(cubec_launch_desc),
        .kernel = *out_kernel,
        .buffers = &f->buf[0],
        .buffer_count = 1,
        .info = &info,
        .info_size = sizeof info,
        .groups = {1, 1, 1},
    };
    CU_TRY(cubec_launch(f->dev, STREAM, &launch));
    CU_TRY(cubec_sync(f->dev, STREAM));
    return NULL;
}

static bench_err timed_salted_run(cu_fig *f, uint32_t salt, bench_sample *out)
{
    cubec_kernel kernel = {0};
    double t0 = bench_now();
    bench_err err = salted_create_launch(f, salt, &kernel);
    double t1 = bench_now();
    cubec_status_free(cubec_kernel_destroy(f->dev, kernel));
    out->value = (t1 - t0) * 1e3;
    return err;
}

static bench_err cold_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    f->salt += 2;
    return timed_salted_run(f, f->salt, out);
}

static bench_err salted_verify(void *state)
{
    cu_fig *f = state;
    return check_tiny(f, f->buf[0], 1u + f->salt);
}

static const bench_impl cold_impl = {salted_setup, cold_run, salted_verify, fig_teardown};

/* The first kernel stays alive, so what is re-created is certainly in cubec's memory cache. */
static bench_err warm_setup(void *dev, const bench_params *params, void **out_state)
{
    BENCH_TRY(salted_setup(dev, params, out_state));
    cu_fig *f = *out_state;
    f->salt = WARM_SALT;
    return salted_create_launch(f, WARM_SALT, &f->kernel);
}

static bench_err warm_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    return timed_salted_run(f, WARM_SALT, out);
}

static const bench_impl warm_impl = {warm_setup, warm_run, salted_verify, fig_teardown};

/* ---- streams.independent: 1, 2, 4 or 8 threads (bench_params.threads, one side each), each
 * launching the tiny kernel `thread_launches` times on its own stream (cubec_stream_new) and its
 * own buffer (created on that stream), then syncing its stream. Nothing is shared but the device
 * and the kernel, so the runtime owes no ordering between the threads' work. The value is the
 * launches of all threads per second, from the first thread's start to the last one's sync. -- */

/* Holds the workers until every thread is created, so that they start together (or tells them
 * to give up when one could not be created). */
typedef struct stream_gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int state; /* 0 closed, 1 go, -1 give up */
} stream_gate;

typedef struct stream_worker {
    cu_fig *f;
    stream_gate *gate;
    uint32_t index; /* its stream and buffer: f->streams[index], f->many[index] */
    double start, end;
    bench_err err;
} stream_worker;

static void *stream_worker_main(void *arg)
{
    stream_worker *w = arg;
    cu_fig *f = w->f;
    pthread_mutex_lock(&w->gate->lock);
    while (w->gate->state == 0)
        pthread_cond_wait(&w->gate->cond, &w->gate->lock);
    const int go = w->gate->state > 0;
    pthread_mutex_unlock(&w->gate->lock);
    if (!go) return NULL;
    const cubec_stream stream = f->streams[w->index];
    w->start = bench_now();
    for (uint32_t i = 0; !w->err && i < f->p.thread_launches; i++)
        w->err = tiny_launch_on(f, stream, &f->many[w->index]);
    if (!w->err) w->err = bench_from_status(cubec_sync(f->dev, stream), "cubec_sync");
    w->end = bench_now();
    return NULL;
}

static bench_err streams_independent_setup(void *dev, const bench_params *params, void **out_state)
{
    cu_fig *f = fig_new(dev, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    const uint32_t n = f->p.threads;
    if (n == 0 || n > BENCH_MAX_THREADS || f->p.thread_launches == 0)
        return bench_errorf("%u threads of %u launches each", n, f->p.thread_launches);
    const cubec_kernel_desc desc = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "bench_tiny", .glsl = bench_glsl_tiny};
    BENCH_TRY(kernel_create(f, &desc, 1, sizeof(bench_tiny_info), &f->kernel));
    f->many = calloc(n, sizeof *f->many);
    if (!f->many) return bench_errorf("out of host memory");
    for (uint32_t i = 0; i < n; i++) {
        CU_TRY(cubec_stream_new(f->dev, &f->streams[i]));
        f->stream_count++;
        CU_TRY(cubec_buffer_create(f->dev, f->streams[i], BENCH_RANGE_STRIDE, &f->many[i]));
        f->many_count++;
        CU_TRY(cubec_fill(f->dev, f->streams[i], f->many[i], 0, BENCH_RANGE_STRIDE, 0));
    }
    for (uint32_t i = 0; i < n; i++)
        CU_TRY(cubec_sync(f->dev, f->streams[i]));
    return NULL;
}

static bench_err streams_independent_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    const uint32_t n = f->stream_count;
    stream_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    stream_worker workers[BENCH_MAX_THREADS];
    pthread_t threads[BENCH_MAX_THREADS];
    bench_err err = NULL;
    uint32_t started = 0;
    for (; started < n; started++) {
        workers[started] = (stream_worker){.f = f, .gate = &gate, .index = started};
        int rc = pthread_create(&threads[started], NULL, stream_worker_main, &workers[started]);
        if (rc) {
            err = bench_errorf("pthread_create: %s", strerror(rc));
            break;
        }
    }
    pthread_mutex_lock(&gate.lock);
    gate.state = err ? -1 : 1;
    pthread_cond_broadcast(&gate.cond);
    pthread_mutex_unlock(&gate.lock);
    double t0 = INFINITY, t1 = -INFINITY;
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(threads[i], NULL);
        if (workers[i].err && !err)
            err = bench_wrap(workers[i].err, "thread %u", i);
        else
            bench_err_free(workers[i].err);
        if (workers[i].start < t0) t0 = workers[i].start;
        if (workers[i].end > t1) t1 = workers[i].end;
    }
    pthread_mutex_destroy(&gate.lock);
    pthread_cond_destroy(&gate.cond);
    if (err) return err;
    f->count += f->p.thread_launches;
    out->value = (double)n * f->p.thread_launches / (t1 - t0);
    return NULL;
}

/* Every thread's buffer holds exactly the launches that thread made. */
static bench_err streams_independent_verify(void *state)
{
    cu_fig *f = state;
    for (uint32_t i = 0; i < f->many_count; i++)
        BENCH_TRY(bench_wrap(check_tiny_on(f, f->streams[i], f->many[i], f->count),
                             "thread %u's buffer", i));
    return NULL;
}

static const bench_impl streams_independent_impl = {
    streams_independent_setup, streams_independent_run, streams_independent_verify, fig_teardown};

/* ---- streams.cross: a chain of `cross_launches` tiny launches on one buffer created on stream
 * A, alternating between A and B (launch 0 on A, 1 on B, ...), then a sync of both: each launch
 * on B must run after the work queued on A (the buffer's owner), and each launch on A after B's
 * queued write, so the runtime submits the other stream's work before every launch. The
 * baseline (bench_cubec_baseline_impls) makes the same launches all on A, with the same syncs.
 * Both report the time per launch. ----------------------------------------------------------- */

static bench_err cross_setup(void *dev, const bench_params *params, void **out_state)
{
    cu_fig *f = fig_new(dev, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    if (f->p.cross_launches == 0) return bench_errorf("a chain of 0 launches");
    const cubec_kernel_desc desc = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "bench_tiny", .glsl = bench_glsl_tiny};
    BENCH_TRY(kernel_create(f, &desc, 1, sizeof(bench_tiny_info), &f->kernel));
    for (; f->stream_count < 2; f->stream_count++)
        CU_TRY(cubec_stream_new(f->dev, &f->streams[f->stream_count]));
    CU_TRY(cubec_buffer_create(f->dev, f->streams[0], BENCH_RANGE_STRIDE, &f->buf[0]));
    CU_TRY(cubec_fill(f->dev, f->streams[0], f->buf[0], 0, BENCH_RANGE_STRIDE, 0));
    CU_TRY(cubec_sync(f->dev, f->streams[0]));
    return NULL;
}

static bench_err cross_chain(cu_fig *f, int alternate, bench_sample *out)
{
    const uint32_t n = f->p.cross_launches;
    const cubec_stream a = f->streams[0], b = f->streams[1];
    double t0 = bench_now();
    for (uint32_t i = 0; i < n; i++)
        BENCH_TRY(tiny_launch_on(f, alternate && (i & 1) ? b : a, &f->buf[0]));
    CU_TRY(cubec_sync(f->dev, b));
    CU_TRY(cubec_sync(f->dev, a));
    double t1 = bench_now();
    f->count += n;
    out->value = (t1 - t0) / n * 1e6;
    return NULL;
}

static bench_err cross_run(void *state, bench_sample *out)
{
    return cross_chain(state, 1, out);
}

static bench_err cross_one_stream_run(void *state, bench_sample *out)
{
    return cross_chain(state, 0, out);
}

/* The buffer holds exactly the launches of the chains: none was lost or raced with another. */
static bench_err cross_verify(void *state)
{
    cu_fig *f = state;
    return check_tiny_on(f, f->streams[0], f->buf[0], f->count);
}

static const bench_impl cross_impl = {cross_setup, cross_run, cross_verify, fig_teardown};
static const bench_impl cross_one_stream_impl = {cross_setup, cross_one_stream_run, cross_verify,
                                                 fig_teardown};

/* ---- streams.interleave: from one thread, BENCH_INTERLEAVE_STREAMS streams, each with its own
 * buffer created on it, and `interleave_rounds` rounds of one tiny launch on each stream in turn
 * (s0, s1, s2, s3, s0, ...): as many independent chains, each launch depending on the one before
 * on its stream only; then a sync of every stream. The default strategy records the streams'
 * queued tasks round-robin into one command buffer, so the chains share their barriers; the
 * baseline runs the very same code on a device opened with CUBEC_STREAM_STRATEGY=sequential
 * (set by the runner), which records stream after stream. Both report the time per launch. --- */

static bench_err interleave_setup(void *dev, const bench_params *params, void **out_state)
{
    cu_fig *f = fig_new(dev, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    if (f->p.interleave_rounds == 0) return bench_errorf("0 rounds");
    const uint32_t n = BENCH_INTERLEAVE_STREAMS;
    const cubec_kernel_desc desc = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "bench_tiny", .glsl = bench_glsl_tiny};
    BENCH_TRY(kernel_create(f, &desc, 1, sizeof(bench_tiny_info), &f->kernel));
    f->many = calloc(n, sizeof *f->many);
    if (!f->many) return bench_errorf("out of host memory");
    for (uint32_t i = 0; i < n; i++) {
        CU_TRY(cubec_stream_new(f->dev, &f->streams[i]));
        f->stream_count++;
        CU_TRY(cubec_buffer_create(f->dev, f->streams[i], BENCH_RANGE_STRIDE, &f->many[i]));
        f->many_count++;
        CU_TRY(cubec_fill(f->dev, f->streams[i], f->many[i], 0, BENCH_RANGE_STRIDE, 0));
    }
    for (uint32_t i = 0; i < n; i++)
        CU_TRY(cubec_sync(f->dev, f->streams[i]));
    return NULL;
}

static bench_err interleave_run(void *state, bench_sample *out)
{
    cu_fig *f = state;
    const uint32_t n = f->stream_count, rounds = f->p.interleave_rounds;
    double t0 = bench_now();
    for (uint32_t r = 0; r < rounds; r++) {
        for (uint32_t i = 0; i < n; i++)
            BENCH_TRY(tiny_launch_on(f, f->streams[i], &f->many[i]));
    }
    for (uint32_t i = 0; i < n; i++)
        CU_TRY(cubec_sync(f->dev, f->streams[i]));
    double t1 = bench_now();
    f->count += rounds;
    out->value = (t1 - t0) / ((double)n * rounds) * 1e6;
    return NULL;
}

/* Every stream's buffer holds exactly the launches made on it: one per round. */
static bench_err interleave_verify(void *state)
{
    cu_fig *f = state;
    for (uint32_t i = 0; i < f->many_count; i++)
        BENCH_TRY(bench_wrap(check_tiny_on(f, f->streams[i], f->many[i], f->count),
                             "stream %u's buffer", i));
    return NULL;
}

/* Both sides: the strategy is the device's (the runner opens the baseline's device with
 * CUBEC_STREAM_STRATEGY=sequential). */
static const bench_impl interleave_impl = {interleave_setup, interleave_run, interleave_verify,
                                           fig_teardown};

const bench_impl_entry bench_cubec_impls[] = {
    {"graph.replay_host", &bench_graph_replay_host},
    {"graph.replay_device", &bench_graph_replay_device},
    {"graph.replay_device_independent", &bench_graph_replay_device_independent},
    {"graph.replay_host_vs_eager", &bench_graph_replay_host},
    {"graph.replay_device_vs_eager", &bench_graph_replay_device},
    {"launch.enqueue", &enqueue_impl},
    {"launch.roundtrip", &roundtrip_impl},
    {"launch.device_dependent", &dependent_impl},
    {"launch.device_independent", &independent_impl},
    {"write.h2d", &h2d_impl},
    {"read.d2h", &d2h_impl},
    {"write.h2d_registered", &h2d_registered_impl},
    {"read.d2h_registered", &d2h_registered_impl},
    {"write.h2d_pinned", &h2d_pinned_impl},
    {"read.d2h_pinned", &d2h_pinned_impl},
    {"copy.d2d", &copy_impl},
    {"image.write", &bench_image_write_impl},
    {"image.read", &bench_image_read_impl},
    {"kernel.vector_add", &vector_impl},
    {"kernel.gemm_f16", &bench_gemm_f16_impl},
    {"alloc.pair", &alloc_impl},
    {"memory.relocate", &bench_relocate_impl},
    {"compile.cold", &cold_impl},
    {"compile.warm_memory", &warm_impl},
    {"profile.empty", &empty_impl},
    {"compile.warm_disk", &bench_warm_disk_impl},
    {"compile.batch64", &bench_batch64_impl},
    {"streams.independent", &streams_independent_impl},
    {"streams.cross", &cross_impl},
    {"streams.interleave", &interleave_impl},
    {"memory.peak_ratio", &peak_impl},
    {"multi.copy_peer.1MiB", &bench_copy_peer_1_impl},
    {"multi.copy_peer.16MiB", &bench_copy_peer_16_impl},
    {"multi.copy_peer.256MiB", &bench_copy_peer_256_impl},
    {"multi.copy_peer_exportable.1MiB", &bench_copy_peer_exportable_1_impl},
    {"multi.copy_peer_exportable.16MiB", &bench_copy_peer_exportable_16_impl},
    {"multi.copy_peer_exportable.256MiB", &bench_copy_peer_exportable_256_impl},
    {"multi.allreduce.1MiB", &bench_allreduce_1_impl},
    {"multi.allreduce.16MiB", &bench_allreduce_16_impl},
    {"multi.allreduce.256MiB", &bench_allreduce_256_impl},
    {"multi.cuda_roundtrip", &bench_cuda_roundtrip_impl},
    {NULL, NULL},
};

/* streams.independent's baseline is its own 1-thread side, so it is not here. streams.interleave's
 * is the same code on a device opened with CUBEC_STREAM_STRATEGY=sequential. */
const bench_impl_entry bench_cubec_baseline_impls[] = {
    {"graph.replay_host_vs_eager", &bench_graph_eager_host},
    {"graph.replay_device_vs_eager", &bench_graph_eager_device},
    {"streams.cross", &cross_one_stream_impl},
    {"streams.interleave", &interleave_impl},
    {"compile.warm_disk", &bench_warm_disk_baseline_impl},
    {"kernel.gemm_f16", &bench_gemm_f16_scalar_impl},
    {"compile.batch64", &bench_batch64_serial_impl},
    {"multi.copy_peer.1MiB", &bench_copy_peer_1_baseline_impl},
    {"multi.copy_peer.16MiB", &bench_copy_peer_16_baseline_impl},
    {"multi.copy_peer.256MiB", &bench_copy_peer_256_baseline_impl},
    {"multi.copy_peer_exportable.1MiB", &bench_copy_peer_exportable_1_baseline_impl},
    {"multi.copy_peer_exportable.16MiB", &bench_copy_peer_exportable_16_baseline_impl},
    {"multi.copy_peer_exportable.256MiB", &bench_copy_peer_exportable_256_baseline_impl},
    /* A peer copy of the same bytes over the same pair: the link an all-reduce's bus bandwidth
     * is compared with. */
    {"multi.allreduce.1MiB", &bench_copy_peer_1_impl},
    {"multi.allreduce.16MiB", &bench_copy_peer_16_impl},
    {"multi.allreduce.256MiB", &bench_copy_peer_256_impl},
    {"multi.cuda_roundtrip", &bench_cuda_roundtrip_baseline_impl},
    {"memory.relocate", &bench_relocate_copy_impl},
    {"image.write", &bench_image_write_baseline_impl},
    {"image.read", &bench_image_read_baseline_impl},
    {NULL, NULL},
};
