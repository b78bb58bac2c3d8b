/* Dry runs (cubec.h "Dry runs", docs/dry-runs.md): launches and replays checked and dropped,
 * nothing tainted, real windows inside, the process-wide scope, and pages without memory until
 * their first real use. Runs on lavapipe and (test_dry_run_null) on the null backend, where a
 * kernel computes nothing: there the tasks the server recorded show what ran. */
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
    ASSERT_ERROR(uint_launch(f->d, f->s, f->step, v, v, N, 3, 1), CUBEC_INVALID_ARGUMENT,
                 "buffer_count");
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
    cubec_memory_report r;
    ASSERT_OK(cubec_memory_report_get(f->d, f->s, &r));
    return r;
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
    cubec_buffer view;
    ASSERT_OK(cubec_buffer_view(f->d, lazy, 0, N * 4, &view));
    ASSERT_OK(uint_launch(f->d, f->s, f->step, view, NONE, N, 3, 1)); /* dropped */
    assert_int_equal(report_of(f).pages_unbacked, r1.pages_unbacked);
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    uint32_t host[N], want[N];
    fill_words(host, N, 5);
    ASSERT_OK(cubec_write(f->d, f->s, view, 0, host, sizeof host));
    assert_int_equal(report_of(f).pages_unbacked, r0.pages_unbacked);
    ASSERT_OK(uint_launch(f->d, f->s, f->step, view, NONE, N, 3, 1));
    cpu_consume(host, want, N, 3, 1);
    if (!f->null_backend)
        expect_words(f, view, want);
    else
        expect_words(f, view, host);
    ASSERT_OK(cubec_buffer_release(f->d, view));
    ASSERT_OK(cubec_buffer_release(f->d, lazy));
    ASSERT_OK(cubec_memory_cleanup(f->d, f->s)); /* or the next buffer reuses the page */

    /* A dry run's page that is never used goes back without ever getting memory. */
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    ASSERT_OK(cubec_buffer_create(f->d, f->s, big, &lazy));
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    assert_int_equal(report_of(f).pages_unbacked, r0.pages_unbacked + 1);
    ASSERT_OK(cubec_buffer_release(f->d, lazy));
    ASSERT_OK(cubec_memory_cleanup(f->d, f->s));
    cubec_memory_report r2 = report_of(f);
    assert_int_equal(r2.pages_unbacked, r0.pages_unbacked);
    assert_true(r2.pages <= r0.pages);
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
    ASSERT_OK(cubec_fill(f->d, f->s, a, 0, N * 4, 0x5a5a5a5au));
    ASSERT_OK(cubec_copy(f->d, f->s, a, 0, b, 4096, N * 4));
    assert_int_equal(report_of(f).pages_unbacked, r0.pages_unbacked);
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
    assert_int_equal(report_of(f).pages_unbacked, r0.pages_unbacked + 1);
    cubec_raw_buffer raw;
    cubec_guard guard;
    ASSERT_OK(cubec_buffer_raw(f->d, f->s, a, &raw, &guard));
    assert_int_equal(report_of(f).pages_unbacked, r0.pages_unbacked);
    assert_true(raw.buffer != 0);
    assert_int_equal(raw.size, big);
    ASSERT_OK(cubec_guard_release(f->d, guard));
    ASSERT_OK(cubec_buffer_release(f->d, a));
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
    ASSERT_OK(cubec_kernel_queue(f->d, &(cubec_kernel_desc){.name = "queued", .glsl = src}, &good));
    ASSERT_OK(cubec_kernel_queue(
        f->d, &(cubec_kernel_desc){.name = "broken", .glsl = "#version 450\nvoid main() { x; }\n"},
        &bad));
    ASSERT_OK(cubec_run_window_begin(f->d, f->s, CUBEC_RUN_DRY));
    ASSERT_OK(uint_launch(f->d, f->s, good, v, NONE, N, 3, 1));
    ASSERT_ERROR(uint_launch(f->d, f->s, bad, v, NONE, N, 3, 1), CUBEC_COMPILE_FAILED, "broken");
    ASSERT_OK(cubec_run_window_end(f->d, f->s));
    cubec_kernel_info info;
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
        cmocka_unit_test_setup_teardown(dry_replay_and_capture, setup, teardown),
        cmocka_unit_test_setup_teardown(dry_launch_of_queued_kernels, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_windows_are_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
