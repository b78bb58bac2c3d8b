/* Dry runs (cubec.h "Dry runs", docs/dry-runs.md): launches and replays checked and dropped,
 * nothing tainted, real windows inside, the process-wide scope, and pages without memory until
 * their first real use. Runs on lavapipe and (test_dry_run_null) on the null backend, where a
 * kernel computes nothing: there the tasks the server recorded show what ran, and with its heap
 * capped (CUBEC_NULL_HEAP_BYTES) the report's budget_used_bytes shows what memory the pages
 * really took: none until their first real use, then their size; and a first use that finds the
 * heap full fails, takes nothing, and succeeds once room is made. */
#include "launch_util.h"
#include "server/device.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 256u

typedef struct fixture {
    cubec_device *d;
    cubec_kernel produce, consume, step;
    cubec_stream s;
    int null_backend; /* kernels compute nothing: compare recorded tasks, not bytes */
    int null_heap;    /* the null backend's heap is capped (setup_null_heap) */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->d = test_device_open();
    const char *backend = getenv("CUBEC_BACKEND");
    f->null_backend = backend && strcmp(backend, "null") == 0;
    uint_kernels_create(f->d, &f->produce, &f->consume, &f->step);
    ASSERT_OK(cubec_stream_new(f->d, &f->s));
    *state = f;
    return 0;
}

/* The fixture on a null device whose heap holds HEAP_BYTES (CUBEC_NULL_HEAP_BYTES): the report's
 * budget_used_bytes is then the heap's use, the memory pages really took. Elsewhere the cap means
 * nothing, and the heap checks below check nothing (their tests check the rest as usual). */
#define HEAP_BYTES (160ull << 20)

static int setup_null_heap(void **state)
{
    char cap[24];
    snprintf(cap, sizeof cap, "%llu", HEAP_BYTES);
    setenv("CUBEC_NULL_HEAP_BYTES", cap, 1);
    int rc = setup(state);
    unsetenv("CUBEC_NULL_HEAP_BYTES");
    fixture *f = *state;
    f->null_heap = f->null_backend;
    return rc;
}

static int teardown(void **state)
{
    fixture *f = *state;
    uint_kernels_destroy(f->d, f->produce, f->consume, f->step);
    test_device_close(f->d);
    free(f);
    return 0;
}

static void fill_words(uint32_t *w, uint32_t n, uint32_t seed)
{
    for (uint32_t i = 0; i < n; i++)
        w[i] = seed * 2654435761u + i;
}

static cubec_buffer buffer_of(fixture *f, const uint32_t *words)
{
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(f->d, f->s, words, N * 4, &b));
    return b;
}

static void expect_words(fixture *f, cubec_buffer b, const uint32_t *want)
{
    uint32_t got[N];
    ASSERT_OK(cubec_read(f->d, f->s, b, 0, got, sizeof got));
    for (uint32_t i = 0; i < N; i++)
        if (got[i] != want[i]) fail_msg("word %u: got %u, want %u", i, got[i], want[i]);
}

/* A step launch (v = v * 3 + 1) on f->s: under a dry window the bytes stay, the server records
 * nothing and counts a dropped launch; after the window the same launch runs. */
static void dry_launch_is_dropped(void **state)
{
    fixture *f = *state;
    uint32_t host[N], want[N];
    fill_words(host, N, 1);
    cubec_buffer v = buffer_of(f, host);
    ASSERT_OK(cubec_sync(f->d, f->s));
    server_stats before = server_stats_get(f->d);
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    ASSERT_OK(uint_launch(f->d, f->s, f->step, v, NONE, N, 3, 1));
    ASSERT_OK(uint_launch(f->d, f->s, f->step, v, NONE, N, 3, 1));
    /* Still checked: a bad argument is refused as in a real launch. */
    ASSERT_ERROR(uint_launch(f->d, f->s, f->step, NONE, NONE, N, 3, 1), CUBEC_INVALID_ARGUMENT,
                 "desc->buffers[0]");
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    ASSERT_OK(cubec_sync(f->d, f->s));
    server_stats after = server_stats_get(f->d);
    assert_int_equal(after.dry_launches - before.dry_launches, 2);
    assert_int_equal(after.tasks - before.tasks, 0);
    expect_words(f, v, host);
    /* The window is closed: the launch runs. */
    ASSERT_OK(uint_launch(f->d, f->s, f->step, v, NONE, N, 3, 1));
    ASSERT_OK(cubec_sync(f->d, f->s));
    assert_true(server_stats_get(f->d).tasks > after.tasks);
    if (!f->null_backend) {
        cpu_consume(host, want, N, 3, 1);
        expect_words(f, v, want);
    }
    ASSERT_OK(cubec_buffer_release(f->d, v));
}

/* A dry launch that reads a buffer carrying a failure leaves its output untainted; the same
 * launch for real taints it (so the check can fail). */
static void dry_launch_taints_nothing(void **state)
{
    fixture *f = *state;
    uint32_t host[N];
    fill_words(host, N, 2);
    cubec_buffer x, y = buffer_of(f, host);
    ASSERT_OK(cubec_buffer_create(f->d, f->s, N * 4, &x));
    taint_by_lost_submission(f->d, f->s, f->produce, x, N, 1, 0);
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    ASSERT_OK(uint_launch(f->d, f->s, f->consume, x, y, N, 5, 7));
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    expect_words(f, y, host); /* readable: no failure, bytes as written */
    ASSERT_OK(uint_launch(f->d, f->s, f->consume, x, y, N, 5, 7));
    uint32_t got[N];
    cubec_status st = cubec_read(f->d, f->s, y, 0, got, sizeof got);
    assert_non_null(st); /* the real launch carried x's failure onto y */
    cubec_status_free(st);
    ASSERT_OK(cubec_buffer_release(f->d, x));
    ASSERT_OK(cubec_buffer_release(f->d, y));
}

/* Windows nest: real inside dry runs, dry inside that is dropped again; ending restores. */
static void windows_nest(void **state)
{
    fixture *f = *state;
    uint32_t host[N], want[N];
    fill_words(host, N, 3);
    memcpy(want, host, sizeof want);
    cubec_buffer v = buffer_of(f, host);
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    ASSERT_OK(uint_launch(f->d, f->s, f->step, v, NONE, N, 3, 1)); /* dropped */
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_REAL));
    ASSERT_OK(uint_launch(f->d, f->s, f->step, v, NONE, N, 5, 2)); /* runs */
    cpu_consume(want, want, N, 5, 2);
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    ASSERT_OK(uint_launch(f->d, f->s, f->step, v, NONE, N, 7, 3)); /* dropped */
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    ASSERT_OK(uint_launch(f->d, f->s, f->step, v, NONE, N, 9, 4)); /* runs: real again */
    cpu_consume(want, want, N, 9, 4);
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    ASSERT_OK(uint_launch(f->d, f->s, f->step, v, NONE, N, 3, 1)); /* dropped: dry again */
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    /* Another stream is not affected by f->s's windows. */
    cubec_stream other;
    ASSERT_OK(cubec_stream_new(f->d, &other));
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    ASSERT_OK(uint_launch(f->d, other, f->step, v, NONE, N, 11, 5)); /* runs */
    cpu_consume(want, want, N, 11, 5);
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    ASSERT_OK(cubec_sync(f->d, other));
    if (!f->null_backend) expect_words(f, v, want);
    ASSERT_OK(cubec_buffer_release(f->d, v));
}

/* The process-wide dry run covers every stream without a window of its own; a stream's real
 * window opts it back in. */
static void process_wide_dry_run(void **state)
{
    fixture *f = *state;
    uint32_t host[N], want[N];
    fill_words(host, N, 4);
    memcpy(want, host, sizeof want);
    cubec_buffer v = buffer_of(f, host);
    cubec_stream other;
    ASSERT_OK(cubec_stream_new(f->d, &other));
    ASSERT_OK(cubec_sync(f->d, f->s));
    server_stats before = server_stats_get(f->d);
    ASSERT_OK(cubec_dry_run_begin());
    ASSERT_OK(cubec_dry_run_begin()); /* nests */
    ASSERT_OK(uint_launch(f->d, other, f->step, v, NONE, N, 3, 1));
    ASSERT_OK(uint_launch(f->d, CUBEC_STREAM_CURRENT, f->step, v, NONE, N, 3, 1));
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_REAL));
    ASSERT_OK(uint_launch(f->d, f->s, f->step, v, NONE, N, 5, 2)); /* runs */
    cpu_consume(want, want, N, 5, 2);
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    ASSERT_OK(cubec_dry_run_end());
    ASSERT_OK(uint_launch(f->d, other, f->step, v, NONE, N, 3, 1)); /* still dry */
    ASSERT_OK(cubec_dry_run_end());
    ASSERT_ERROR(cubec_dry_run_end(), CUBEC_INVALID_ARGUMENT, "no process-wide dry run");
    ASSERT_OK(cubec_sync(f->d, f->s));
    assert_int_equal(server_stats_get(f->d).dry_launches - before.dry_launches, 3);
    if (!f->null_backend) expect_words(f, v, want);
    ASSERT_OK(cubec_buffer_release(f->d, v));
}

static cubec_memory_report report_of(fixture *f)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(f->d, f->s, &r));
    return r;
}

/* Under the null heap: the heap holds what it held at `base` plus `taken` bytes (pages backed
 * since). Without it (another setup, or lavapipe) there is no heap to count. */
static void expect_heap(fixture *f, const cubec_memory_report *base, uint64_t taken,
                        const char *when)
{
    if (!f->null_heap) return;
    cubec_memory_report r = report_of(f);
    assert_string_equal(r.budget_source, "null heap");
    assert_int_equal(r.budget_bytes, HEAP_BYTES);
    if (r.budget_used_bytes != base->budget_used_bytes + taken)
        fail_msg("%s: the heap holds %llu bytes, not %llu + %llu", when,
                 (unsigned long long)r.budget_used_bytes,
                 (unsigned long long)base->budget_used_bytes, (unsigned long long)taken);
}

/* A buffer created under a dry run that needs a new page gets a page without memory; a dry
 * launch does not back it; the first write does, and the bytes read back are those written. */
static void dry_pages_are_backed_at_first_use(void **state)
{
    fixture *f = *state;
    const uint64_t big = 64ull << 20; /* larger than any sliced page: a page of its own */
    cubec_memory_report r0 = report_of(f);
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    cubec_buffer lazy;
    ASSERT_OK(cubec_buffer_create(f->d, f->s, big, &lazy));
    cubec_memory_report r1 = report_of(f);
    assert_int_equal(r1.pages, r0.pages + 1);
    assert_int_equal(r1.pages_unbacked, r0.pages_unbacked + 1);
    const uint64_t page = r1.bytes_reserved - r0.bytes_reserved;
    assert_true(page >= big);
    expect_heap(f, &r0, 0, "a page made under a dry run");
    cubec_buffer view;
    ASSERT_OK(cubec_buffer_view(f->d, lazy, 0, N * 4, &view));
    ASSERT_OK(uint_launch(f->d, f->s, f->step, view, NONE, N, 3, 1)); /* dropped */
    assert_int_equal(report_of(f).pages_unbacked, r1.pages_unbacked);
    expect_heap(f, &r0, 0, "after a dry launch that binds it");
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    expect_heap(f, &r0, 0, "after the dry window");
    uint32_t host[N], want[N];
    fill_words(host, N, 5);
    ASSERT_OK(cubec_write(f->d, f->s, view, 0, host, sizeof host));
    assert_int_equal(report_of(f).pages_unbacked, r0.pages_unbacked);
    expect_heap(f, &r0, page, "after its first write");
    ASSERT_OK(uint_launch(f->d, f->s, f->step, view, NONE, N, 3, 1));
    cpu_consume(host, want, N, 3, 1);
    if (!f->null_backend)
        expect_words(f, view, want);
    else
        expect_words(f, view, host);
    expect_heap(f, &r0, page, "after a real launch");
    ASSERT_OK(cubec_buffer_release(f->d, view));
    ASSERT_OK(cubec_buffer_release(f->d, lazy));
    ASSERT_OK(cubec_memory_cleanup(f->d, f->s)); /* or the next buffer reuses the page */
    expect_heap(f, &r0, 0, "after the backed page went back");

    /* A dry run's page that is never used goes back without ever getting memory. */
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    ASSERT_OK(cubec_buffer_create(f->d, f->s, big, &lazy));
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    assert_int_equal(report_of(f).pages_unbacked, r0.pages_unbacked + 1);
    expect_heap(f, &r0, 0, "a second page made under a dry run");
    ASSERT_OK(cubec_buffer_release(f->d, lazy));
    expect_heap(f, &r0, 0, "after its buffer was released");
    ASSERT_OK(cubec_memory_cleanup(f->d, f->s));
    cubec_memory_report r2 = report_of(f);
    assert_int_equal(r2.pages_unbacked, r0.pages_unbacked);
    assert_true(r2.pages <= r0.pages);
    expect_heap(f, &r0, 0, "after the unused page went back");
}

/* A copy and a fill are real uses too: they back the pages of both sides. */
static void copy_and_fill_back_pages(void **state)
{
    fixture *f = *state;
    const uint64_t big = 64ull << 20;
    /* How many pages two big buffers take depends on the device's page ladder (one 256 MiB
     * page on the H200, two on lavapipe): count what the dry run added, not an absolute. */
    cubec_memory_report r0 = report_of(f);
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    cubec_buffer a, b;
    ASSERT_OK(cubec_buffer_create(f->d, f->s, big, &a));
    ASSERT_OK(cubec_buffer_create(f->d, f->s, big, &b));
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    cubec_memory_report r1 = report_of(f);
    assert_true(r1.pages > r0.pages);
    assert_int_equal(r1.pages_unbacked - r0.pages_unbacked, r1.pages - r0.pages);
    expect_heap(f, &r0, 0, "two buffers made under a dry run");
    ASSERT_OK(cubec_fill(f->d, f->s, a, 0, N * 4, 0x5a5a5a5au));
    ASSERT_OK(cubec_copy(f->d, f->s, a, 0, b, 4096, N * 4));
    assert_int_equal(report_of(f).pages_unbacked, r0.pages_unbacked);
    expect_heap(f, &r0, r1.bytes_reserved - r0.bytes_reserved, "after a fill and a copy");
    uint32_t got[N];
    ASSERT_OK(cubec_read(f->d, f->s, b, 4096, got, sizeof got));
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(got[i], 0x5a5a5a5au);
    ASSERT_OK(cubec_buffer_release(f->d, a));
    ASSERT_OK(cubec_buffer_release(f->d, b));
}

/* A raw resource hands the memory to the program's own code: a dry run's page is backed first. */
static void raw_resource_backs_page(void **state)
{
    fixture *f = *state;
    const uint64_t big = 64ull << 20;
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    cubec_buffer a;
    cubec_memory_report r0 = report_of(f);
    ASSERT_OK(cubec_buffer_create(f->d, f->s, big, &a));
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    cubec_memory_report r1 = report_of(f);
    assert_int_equal(r1.pages_unbacked, r0.pages_unbacked + 1);
    expect_heap(f, &r0, 0, "a page made under a dry run");
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    cubec_guard guard;
    ASSERT_OK(cubec_buffer_raw(f->d, f->s, a, &raw, &guard));
    assert_int_equal(report_of(f).pages_unbacked, r0.pages_unbacked);
    expect_heap(f, &r0, r1.bytes_reserved - r0.bytes_reserved, "after its raw resource");
    assert_true(raw.buffer != 0);
    assert_int_equal(raw.size, big);
    ASSERT_OK(cubec_guard_release(f->d, guard));
    ASSERT_OK(cubec_buffer_release(f->d, a));
}

/* Under the null heap a dry run may make more pages than the heap holds, since they take none of
 * it: the first use that finds no room for its page fails with CUBEC_OUT_OF_MEMORY naming the
 * page, takes nothing and leaves the page without memory; once another page went back, the same
 * use backs it. */
static void dry_pages_past_the_heap(void **state)
{
    fixture *f = *state;
    if (!f->null_heap) skip(); /* only the null backend's heap can be capped */
    const uint64_t big = 64ull << 20;
    cubec_memory_report r0 = report_of(f);
    assert_string_equal(r0.budget_source, "null heap");
    cubec_buffer lazy[3];
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_create(f->d, f->s, big, &lazy[i]));
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    cubec_memory_report r1 = report_of(f);
    assert_int_equal(r1.pages - r0.pages, 3);
    assert_int_equal(r1.pages_unbacked - r0.pages_unbacked, 3);
    const uint64_t page = (r1.bytes_reserved - r0.bytes_reserved) / 3;
    assert_true(page >= big && r0.budget_used_bytes + 3 * page > HEAP_BYTES);
    expect_heap(f, &r0, 0, "three pages made under a dry run");
    uint32_t host[3][N];
    for (int i = 0; i < 2; i++) {
        fill_words(host[i], N, 10 + (uint32_t)i);
        ASSERT_OK(cubec_write(f->d, f->s, lazy[i], 0, host[i], sizeof host[i]));
    }
    expect_heap(f, &r0, 2 * page, "two of them written");
    fill_words(host[2], N, 12);
    char says[128];
    snprintf(says, sizeof says, "backing a page of %llu bytes made under a dry run",
             (unsigned long long)page);
    ASSERT_ERROR(cubec_write(f->d, f->s, lazy[2], 0, host[2], sizeof host[2]), CUBEC_OUT_OF_MEMORY,
                 says);
    assert_int_equal(report_of(f).pages_unbacked, r0.pages_unbacked + 1);
    expect_heap(f, &r0, 2 * page, "after the third page found no room");
    ASSERT_OK(cubec_buffer_release(f->d, lazy[0]));
    ASSERT_OK(cubec_memory_cleanup(f->d, f->s));
    expect_heap(f, &r0, page, "after the first page went back");
    ASSERT_OK(cubec_write(f->d, f->s, lazy[2], 0, host[2], sizeof host[2]));
    assert_int_equal(report_of(f).pages_unbacked, r0.pages_unbacked);
    expect_heap(f, &r0, 2 * page, "after the third page's write");
    for (int i = 1; i < 3; i++) {
        expect_words(f, lazy[i], host[i]);
        ASSERT_OK(cubec_buffer_release(f->d, lazy[i]));
    }
}

/* Replays are dropped like launches; a launch dropped while recording is not in the graph. */
static void dry_replay_and_capture(void **state)
{
    fixture *f = *state;
    uint32_t host[N], want[N];
    fill_words(host, N, 6);
    memcpy(want, host, sizeof want);
    cubec_buffer v = buffer_of(f, host);
    ASSERT_OK(cubec_graph_prepare(f->d, f->s));
    ASSERT_OK(uint_launch(f->d, f->s, f->step, v, NONE, N, 3, 1)); /* warm-up: runs */
    cpu_consume(want, want, N, 3, 1);
    ASSERT_OK(cubec_graph_begin(f->d, f->s));
    ASSERT_OK(uint_launch(f->d, f->s, f->step, v, NONE, N, 5, 2));
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    ASSERT_OK(uint_launch(f->d, f->s, f->step, v, NONE, N, 7, 3)); /* not recorded */
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    cubec_graph g;
    ASSERT_OK(cubec_graph_end(f->d, f->s, &g));
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    ASSERT_OK(cubec_graph_replay(f->d, f->s, g)); /* dropped */
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    ASSERT_OK(cubec_graph_replay(f->d, f->s, g)); /* runs the one recorded launch */
    cpu_consume(want, want, N, 5, 2);
    ASSERT_OK(cubec_sync(f->d, f->s));
    if (!f->null_backend) expect_words(f, v, want);
    ASSERT_OK(cubec_graph_destroy(f->d, f->s, g));
    ASSERT_OK(cubec_buffer_release(f->d, v));
}

/* A dry launch of a queued kernel waits for its build (compiled and cached, then dropped); a
 * kernel that did not build taints nothing in a dry run, so the launch returns its error. */
static void dry_launch_of_queued_kernels(void **state)
{
    fixture *f = *state;
    uint32_t host[N];
    fill_words(host, N, 7);
    cubec_buffer v = buffer_of(f, host);
    cubec_kernel good, bad;
    char src[512];
    snprintf(src, sizeof src, "%s%s%s", UINT_KERNEL_HEAD, UINT_KERNEL_INFO,
             "layout(std430, binding = 0) buffer V { uint v[]; };\n"
             "void main() { uint i = gl_GlobalInvocationID.x;\n"
             "  if (i < info.n) v[i] = v[i] * info.mul + info.add + 1u; }\n");
    ASSERT_OK(cubec_kernel_queue(f->d,
                                 &(cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc),
                                                      .name = "queued",
                                                      .glsl = src},
                                 &good));
    ASSERT_OK(cubec_kernel_queue(f->d,
                                 &(cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc),
                                                      .name = "broken",
                                                      .glsl = "#version 450\nvoid main() { x; }\n"},
                                 &bad));
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    ASSERT_OK(uint_launch(f->d, f->s, good, v, NONE, N, 3, 1));
    ASSERT_ERROR(uint_launch(f->d, f->s, bad, v, NONE, N, 3, 1), CUBEC_COMPILE_FAILED, "broken");
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    cubec_kernel_info info = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(f->d, good, &info)); /* it built */
    expect_words(f, v, host);                            /* dropped, and nothing tainted */
    ASSERT_OK(cubec_kernel_destroy(f->d, good));
    ASSERT_OK(cubec_kernel_destroy(f->d, bad));
    ASSERT_OK(cubec_buffer_release(f->d, v));
}

static void bad_windows_are_refused(void **state)
{
    fixture *f = *state;
    ASSERT_ERROR(cubec_run_window_begin(f->d, f->s, (cubec_run_mode)3), CUBEC_INVALID_ARGUMENT,
                 "mode 3");
    ASSERT_ERROR(cubec_run_window_begin(f->d, f->s, (cubec_run_mode)0), CUBEC_INVALID_ARGUMENT,
                 "mode 0");
    ASSERT_ERROR(cubec_run_window_end(f->d, f->s), CUBEC_INVALID_ARGUMENT, "no run window open");
    ASSERT_ERROR(cubec_run_window_begin(NULL, f->s, CUBEC_RUN_DRY), CUBEC_INVALID_ARGUMENT,
                 "device is NULL");
    ASSERT_ERROR(cubec_run_window_begin(f->d, (cubec_stream)12345, CUBEC_RUN_DRY),
                 CUBEC_INVALID_ARGUMENT, "0x0000000000003039");
    for (int i = 0; i < 64; i++)
        ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    ASSERT_ERROR(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_REAL), CUBEC_INVALID_ARGUMENT,
                 "64 windows");
    for (int i = 0; i < 64; i++)
        ASSERT_OK(cubec_run_window_end(f->d, f->s));
    ASSERT_ERROR(cubec_run_window_end(f->d, f->s), CUBEC_INVALID_ARGUMENT, "no run window open");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(dry_launch_is_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(dry_launch_taints_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(windows_nest, setup, teardown),
        cmocka_unit_test_setup_teardown(process_wide_dry_run, setup, teardown),
        cmocka_unit_test_setup_teardown(dry_pages_are_backed_at_first_use, setup, teardown),
        cmocka_unit_test_setup_teardown(copy_and_fill_back_pages, setup, teardown),
        cmocka_unit_test_setup_teardown(raw_resource_backs_page, setup, teardown),
        /* The same under the null heap, and more pages than it holds. */
        {"dry_pages_are_backed_at_first_use under the null heap", dry_pages_are_backed_at_first_use,
         setup_null_heap, teardown, NULL},
        {"copy_and_fill_back_pages under the null heap", copy_and_fill_back_pages, setup_null_heap,
         teardown, NULL},
        {"raw_resource_backs_page under the null heap", raw_resource_backs_page, setup_null_heap,
         teardown, NULL},
        cmocka_unit_test_setup_teardown(dry_pages_past_the_heap, setup_null_heap, teardown),
        cmocka_unit_test_setup_teardown(dry_replay_and_capture, setup, teardown),
        cmocka_unit_test_setup_teardown(dry_launch_of_queued_kernels, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_windows_are_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
