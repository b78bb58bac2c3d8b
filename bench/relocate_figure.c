/* memory.relocate: GB/s of live bytes relocated (issue 13; spec 3.9, docs/memory.md).
 *
 * cubec's side runs on a device whose buffers come from one arena (CUBEC_MEMORY_POOLS=arena,
 * set by the runner while it opens). Sixteen buffers hold the live bytes. Each repetition grows
 * the arena to a page size larger than all of them (a buffer four bytes larger than both the
 * current page and the live bytes, filled so that its memory is touched, then released: not
 * timed), which outdates every page holding them, then times cubec_memory_cleanup, whose
 * relocation (reason Explicit: into room already held) drains the device, copies every live byte
 * into that page and returns the outdated pages (the driver's frees of those run afterwards on a
 * thread of their own; the next repetition waits for them, untimed). Fresh pages are left out on
 * purpose: their first touch (the kernel zeroing them on a CPU device) is the driver's, not
 * relocation's. The baseline is cubec_copy of the same buffers into others, with its sync, on a
 * device of the default layout: what moving those bytes costs without relocation's bookkeeping.
 * Both sides check the bytes at the end. */
#include "bench_figure.h"

#include <cubec/cubec.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CU_TRY(call) BENCH_TRY(bench_from_status((call), #call))
#define STREAM CUBEC_STREAM_CURRENT
#define BUFFERS 16u

typedef struct reloc_fig {
    cubec_device *dev;
    cubec_buffer live[BUFFERS], copy[BUFFERS];
    uint64_t each; /* bytes per buffer (a multiple of 4) */
    uint64_t runs; /* relocations timed or warmed up */
} reloc_fig;

static void reloc_teardown(void *state)
{
    reloc_fig *f = state;
    if (!f) return;
    for (uint32_t i = 0; i < BUFFERS; i++) {
        bench_err_free(bench_from_status(cubec_buffer_release(f->dev, f->live[i]), "release"));
        bench_err_free(bench_from_status(cubec_buffer_release(f->dev, f->copy[i]), "release"));
    }
    free(f);
}

static bench_err reloc_setup(void *dev, const bench_params *params, void **out_state)
{
    reloc_fig *f = calloc(1, sizeof *f);
    if (!f) return bench_errorf("out of host memory");
    *out_state = f;
    f->dev = dev;
    /* 32 MiB of live bytes on a CPU device (1 MiB: a smoke test), 1 GiB on a GPU. An arena page
     * is at most the largest power of two one binding holds (server/buffers.c), and each run
     * grows the arena past all the live bytes: they take half of that at most. On an H200 the
     * webgpu backend binds 2 GiB, so its pages stop at 1 GiB and its live bytes at 512 MiB. */
    uint64_t total = params->gpu ? 1ull << 30 : params->quick ? 1ull << 20 : 32ull << 20;
    uint64_t page_limit = 1;
    while (page_limit <= params->max_binding / 2)
        page_limit *= 2;
    if (params->max_binding && total > page_limit / 2) total = page_limit / 2;
    f->each = total / BUFFERS;
    for (uint32_t i = 0; i < BUFFERS; i++) {
        CU_TRY(cubec_buffer_create(f->dev, STREAM, f->each, &f->live[i]));
        CU_TRY(cubec_fill(f->dev, STREAM, f->live[i], 0, f->each, 0x9e3779b9u * (i + 1)));
    }
    CU_TRY(cubec_sync(f->dev, STREAM));
    return NULL;
}

static bench_err current_page(reloc_fig *f, uint64_t *out)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    CU_TRY(cubec_memory_report_get(f->dev, STREAM, &r));
    if (strcmp(r.pools[0].kind, "arena") != 0)
        return bench_errorf("the device's first pool is \"%s\", not the arena", r.pools[0].kind);
    *out = r.pools[0].page_size;
    return NULL;
}

/* Until the driver has freed the pages the previous relocation emptied (they go back on a thread
 * of the Vulkan backend, and an H200's driver takes ~20 ms per GiB): a free running beside the
 * timed copy slowed it 2-3x there. A program relocates now and then, not every few
 * milliseconds; this figure is one relocation's cost. Bounded: 10 s. */
static bench_err wait_pages_returned(reloc_fig *f)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    for (int i = 0; i < 10000; i++) {
        CU_TRY(cubec_memory_report_get(f->dev, STREAM, &r));
        if (!r.budget_returning_bytes) return NULL;
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    return bench_errorf("%llu bytes of pages still returning to the driver after 10 s",
                        (unsigned long long)r.budget_returning_bytes);
}

static bench_err reloc_run(void *state, bench_sample *out)
{
    reloc_fig *f = state;
    uint64_t page = 0, total = f->each * BUFFERS;
    BENCH_TRY(current_page(f, &page));
    uint64_t grow_bytes = (page > total ? page : total) + 4;
    cubec_buffer grow;
    CU_TRY(cubec_buffer_create(f->dev, STREAM, grow_bytes, &grow));
    CU_TRY(cubec_fill(f->dev, STREAM, grow, 0, grow_bytes, 0));
    CU_TRY(cubec_sync(f->dev, STREAM));
    CU_TRY(cubec_buffer_release(f->dev, grow));
    BENCH_TRY(wait_pages_returned(f));
    double t0 = bench_now();
    CU_TRY(cubec_memory_cleanup(f->dev, STREAM));
    double t1 = bench_now();
    f->runs++;
    out->value = (double)(f->each * BUFFERS) / (t1 - t0) / 1e9;
    return NULL;
}

/* Every byte where it was written, each run's bytes counted as relocated, no outdated page. */
static bench_err reloc_verify(void *state)
{
    reloc_fig *f = state;
    uint32_t *got = malloc(f->each);
    if (!got) return bench_errorf("out of host memory");
    bench_err err = NULL;
    for (uint32_t i = 0; i < BUFFERS && !err; i++) {
        err = bench_from_status(cubec_read(f->dev, STREAM, f->live[i], 0, got, f->each),
                                "cubec_read");
        for (uint64_t w = 0; !err && w < f->each / 4; w++)
            if (got[w] != 0x9e3779b9u * (i + 1))
                err = bench_errorf("buffer %u word %llu changed", i, (unsigned long long)w);
    }
    free(got);
    BENCH_TRY(err);
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    CU_TRY(cubec_memory_report_get(f->dev, STREAM, &r));
    if (r.pools[0].outdated_pages != 0 || r.pools[0].relocated_bytes != f->runs * f->each * BUFFERS)
        return bench_errorf(
            "%u outdated pages left, %llu bytes relocated in %llu runs", r.pools[0].outdated_pages,
            (unsigned long long)r.pools[0].relocated_bytes, (unsigned long long)f->runs);
    return NULL;
}

const bench_impl bench_relocate_impl = {reloc_setup, reloc_run, reloc_verify, reloc_teardown};

/* The baseline: the same bytes copied by cubec_copy into other buffers, until done. */
static bench_err copy_setup(void *dev, const bench_params *params, void **out_state)
{
    BENCH_TRY(reloc_setup(dev, params, out_state));
    reloc_fig *f = *out_state;
    for (uint32_t i = 0; i < BUFFERS; i++)
        CU_TRY(cubec_buffer_create(f->dev, STREAM, f->each, &f->copy[i]));
    return NULL;
}

static bench_err copy_run(void *state, bench_sample *out)
{
    reloc_fig *f = state;
    double t0 = bench_now();
    for (uint32_t i = 0; i < BUFFERS; i++)
        CU_TRY(cubec_copy(f->dev, STREAM, f->live[i], 0, f->copy[i], 0, f->each));
    CU_TRY(cubec_sync(f->dev, STREAM));
    double t1 = bench_now();
    out->value = (double)(f->each * BUFFERS) / (t1 - t0) / 1e9;
    return NULL;
}

static bench_err copy_verify(void *state)
{
    reloc_fig *f = state;
    uint32_t *got = malloc(f->each);
    if (!got) return bench_errorf("out of host memory");
    bench_err err = NULL;
    for (uint32_t i = 0; i < BUFFERS && !err; i++) {
        err = bench_from_status(cubec_read(f->dev, STREAM, f->copy[i], 0, got, f->each),
                                "cubec_read");
        for (uint64_t w = 0; !err && w < f->each / 4; w++)
            if (got[w] != 0x9e3779b9u * (i + 1))
                err = bench_errorf("copy %u word %llu differs", i, (unsigned long long)w);
    }
    free(got);
    return err;
}

const bench_impl bench_relocate_copy_impl = {copy_setup, copy_run, copy_verify, reloc_teardown};
