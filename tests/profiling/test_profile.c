/* Profiles (cubec.h "Profiling"), on the default device with the validation layer on:
 *  - a kernel whose cost scales with its input measures proportionally longer, and never longer
 *    than the host saw around it;
 *  - an empty window (idle, after queued work, nested) measures 0 with Device timing, as in the
 *    seed, never the work queued before it (it measured 70 ns to 19 us before, two timestamps
 *    around nothing), while the window with work around it measures more than 0;
 *  - nested and overlapping profiles on one stream each measure their own window;
 *  - abandon drops a token without submitting anything;
 *  - a launch that fails (a lost submission) or is skipped (its input carries a failure) while a
 *    profile is open makes cubec_profile_end return CUBEC_PROFILE_INVALID naming the failure,
 *    while a profile of another stream is unaffected;
 *  - System timing (CUBEC_TIMING=system) measures too and says so, and an end that races an
 *    abandon of its profile from another thread fails or measures, never both, never a crash;
 *  - bad tokens and streams are refused by name.
 * The busy kernel's results are checked against the same recurrence computed here, so a profile
 * of work that did not run correctly cannot pass. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include "base/clock.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The busy kernel (uint_kernels.h): cost = words x steps. */
#define STEPS 20000u /* a launch of the nested and overlapping profiles */
/* The scaling test: 4x the steps is 4x the work on any device (a GPU runs the words in parallel;
 * lavapipe ends loops after 65535 steps). */
#define SMALL_STEPS 5000u
#define WORDS 1024u

typedef struct fixture {
    cubec_device *d;
    cubec_stream s;
    cubec_kernel busy, step;
    cubec_buffer v; /* 4 * WORDS words */
} fixture;

static void fixture_open(fixture *f)
{
    f->d = test_device_open();
    ASSERT_OK(cubec_stream_new(f->d, &f->s));
    f->busy = make_kernel(f->d, "busy", busy_src);
    f->step = make_kernel(f->d, "step", step_src);
    ASSERT_OK(cubec_buffer_create(f->d, f->s, 4 * WORDS * 4, &f->v));
    ASSERT_OK(cubec_fill(f->d, f->s, f->v, 0, 4 * WORDS * 4, 7));
}

static void fixture_close(fixture *f)
{
    ASSERT_OK(cubec_buffer_release(f->d, f->v));
    ASSERT_OK(cubec_kernel_destroy(f->d, f->busy));
    ASSERT_OK(cubec_kernel_destroy(f->d, f->step));
    test_device_close(f->d);
}

static cubec_status busy(fixture *f, cubec_buffer v, uint32_t words, uint32_t steps)
{
    return busy_launch(f->d, f->s, f->busy, v, words, steps);
}

/* Profiles one busy launch of `steps` steps over WORDS words; the duration must fit in the
 * host's wall time around it. Returns the duration. */
static uint64_t profile_busy(fixture *f, uint32_t steps)
{
    ASSERT_OK(cubec_sync(f->d, f->s));
    uint64_t t0 = clock_now_ns();
    cubec_profile p;
    ASSERT_OK(cubec_profile_begin(f->d, f->s, &p));
    ASSERT_OK(busy(f, f->v, WORDS, steps));
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_OK(cubec_profile_end(f->d, f->s, p, &r));
    uint64_t wall = clock_now_ns() - t0;
    assert_true(r.duration_ns > 0);
    assert_int_equal(r.duration_ns, r.end_ns - r.begin_ns);
    if (r.duration_ns > wall)
        fail_msg("profile says %" PRIu64 " ns; the host saw only %" PRIu64 " ns", r.duration_ns,
                 wall);
    return r.duration_ns;
}

static uint64_t min3(fixture *f)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        uint64_t t = profile_busy(f, STEPS);
        if (t < best) best = t;
    }
    return best;
}

/* The fastest of 5 measurements of each size, taken alternately so that a slow spell of a shared
 * machine (lavapipe runs on the CPU) weighs on both. */
static void min_pair(fixture *f, uint64_t *small, uint64_t *large)
{
    *small = *large = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t s = profile_busy(f, SMALL_STEPS), l = profile_busy(f, 4 * SMALL_STEPS);
        if (s < *small) *small = s;
        if (l < *large) *large = l;
    }
}

/* The words' values after `steps` steps of busy launches from 7, as the GPU must have computed
 * them. */
static void check_values(fixture *f, uint32_t words, const uint32_t *steps)
{
    uint32_t *got = malloc(4 * WORDS * 4);
    ASSERT_OK(cubec_read(f->d, f->s, f->v, 0, got, 4 * WORDS * 4));
    for (uint32_t i = 0; i < words; i++) {
        uint32_t s = 7;
        for (uint32_t k = 0; k < steps[i]; k++)
            s = s * LCG_MUL + LCG_ADD;
        if (got[i] != s) fail_msg("word %u: got %u, expected %u", i, got[i], s);
    }
    free(got);
}

static void check_scaling(fixture *f)
{
    uint64_t small, large;
    min_pair(f, &small, &large);
    double ratio = (double)large / (double)small;
    print_message("busy x1: %.3f ms, x4: %.3f ms, ratio %.2f\n", small / 1e6, large / 1e6, ratio);
    /* 4x the work: allow for fixed costs, a GPU that is not full with the small launch, and a
     * CPU device sharing its cores with other programs. */
    if (ratio < 1.8 || ratio > 10.0) fail_msg("4x the work measured %.2fx the time", ratio);
    uint32_t *runs = malloc(4 * WORDS * sizeof *runs);
    for (uint32_t i = 0; i < 4 * WORDS; i++)
        runs[i] = i < WORDS ? 5 * 5 * SMALL_STEPS : 0;
    check_values(f, 4 * WORDS, runs);
    free(runs);
}

static void test_duration_scales_with_work(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cubec_timing method;
    ASSERT_OK(cubec_profile_get_method(f.d, &method));
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(f.d, &info));
    print_message("timing: %s (timestamp period %.3f ns)\n",
                  method == CUBEC_TIMING_DEVICE ? "device" : "system", info.timestamp_period_ns);
    check_scaling(&f);
    fixture_close(&f);
}

/* One window with nothing in it: 0 with Device timing (no timestamps read); with System timing
 * within the host's wall time around it and (the relative bound) no longer than two windows
 * around one real launch (`work`, what one measured). */
static uint64_t profile_nothing(fixture *f, uint64_t work, const char *where)
{
    cubec_timing method;
    ASSERT_OK(cubec_profile_get_method(f->d, &method));
    uint64_t t0 = clock_now_ns();
    cubec_profile p;
    ASSERT_OK(cubec_profile_begin(f->d, f->s, &p));
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_OK(cubec_profile_end(f->d, f->s, p, &r));
    uint64_t wall = clock_now_ns() - t0;
    assert_int_equal(r.duration_ns, r.end_ns - r.begin_ns);
    if (method == CUBEC_TIMING_DEVICE && r.duration_ns != 0)
        fail_msg("an empty window %s measured %" PRIu64 " ns, expected 0 (nothing ran in it)",
                 where, r.duration_ns);
    if (r.duration_ns > wall)
        fail_msg("an empty window %s measured %" PRIu64 " ns; the host saw only %" PRIu64 " ns",
                 where, r.duration_ns, wall);
    if (r.duration_ns > 2 * work)
        fail_msg("an empty window %s measured %" PRIu64 " ns, more than twice the %" PRIu64
                 " ns of a window around a launch of %u x %u steps",
                 where, r.duration_ns, work, WORDS, STEPS);
    return r.duration_ns;
}

/* QUEUED launches of STEPS steps, queued and not submitted: an empty window that took them in
 * would measure about QUEUED launches, where the bound is two. */
#define QUEUED 6
static void queue_work(fixture *f)
{
    for (int i = 0; i < QUEUED; i++)
        ASSERT_OK(busy(f, f->v, WORDS, STEPS));
}

/* Empty windows (whose end goes at the top of the pipe after an idle begin): on an idle GPU,
 * after queued work (a bottom-of-pipe begin), and around an empty window nested in a window with
 * work: each measures within the wall time, never a wrapped-around duration, and no longer than
 * two windows around one launch of STEPS steps, measured here on the same device under the same
 * load, while one that held the QUEUED launches queued before it would measure three times
 * that. On lavapipe a launch measures ~10 ms, an empty window 0.1-0.6 us after an idle begin and
 * 10-200 us after a bottom-of-pipe one; with two CPU hogs on the 2-core machine, launches took
 * 20-50 ms and the worst bottom-of-pipe empty window 16 ms, under half of one launch. The work
 * around them still runs and measures. */
static void test_empty_windows(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    uint64_t work = min3(&f); /* 3 launches */
    ASSERT_OK(cubec_sync(f.d, f.s));
    for (int i = 0; i < 20; i++)
        (void)profile_nothing(&f, work, "on an idle GPU");
    queue_work(&f); /* not synced: the next begin waits for it */
    (void)profile_nothing(&f, work, "after queued work");
    cubec_profile outer;
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &outer));
    ASSERT_OK(busy(&f, f.v, WORDS, 100));
    queue_work(&f);
    (void)profile_nothing(&f, work, "nested in a window with work");
    ASSERT_OK(busy(&f, f.v, WORDS, 100));
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_OK(cubec_profile_end(f.d, f.s, outer, &r));
    assert_true(r.duration_ns > 0);
    uint32_t *runs = malloc(4 * WORDS * sizeof *runs);
    for (uint32_t i = 0; i < 4 * WORDS; i++)
        runs[i] = i < WORDS ? (3 + 2 * QUEUED) * STEPS + 200 : 0;
    check_values(&f, 4 * WORDS, runs);
    free(runs);
    fixture_close(&f);
}

/* A window on one stream is empty when nothing of that stream ran in it, whatever another stream
 * recorded meanwhile: a launch and a whole profile of a second stream between its begin and end,
 * submitted before the end, leave it at 0, while the second stream's own window measures its
 * launch. Before the rule the count was device-wide and such a window measured the gap between
 * two timestamps (0.1 us to 265 us). */
static void test_empty_window_beside_another_stream(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cubec_stream s2;
    ASSERT_OK(cubec_stream_new(f.d, &s2));
    cubec_buffer v2;
    ASSERT_OK(cubec_buffer_create(f.d, s2, 4 * WORDS * 4, &v2));
    ASSERT_OK(cubec_fill(f.d, s2, v2, 0, 4 * WORDS * 4, 7));
    ASSERT_OK(cubec_sync(f.d, s2));
    ASSERT_OK(cubec_sync(f.d, f.s));
    cubec_timing method;
    ASSERT_OK(cubec_profile_get_method(f.d, &method));
    for (int round = 0; round < 3; round++) {
        cubec_profile p, q;
        ASSERT_OK(cubec_profile_begin(f.d, f.s, &p));
        ASSERT_OK(cubec_flush(f.d, f.s));
        ASSERT_OK(cubec_profile_begin(f.d, s2, &q));
        ASSERT_OK(busy_launch(f.d, s2, f.busy, v2, WORDS, STEPS));
        cubec_profile_result rq = CUBEC_PROFILE_RESULT_INIT, rp = CUBEC_PROFILE_RESULT_INIT;
        ASSERT_OK(cubec_profile_end(f.d, s2, q, &rq));
        ASSERT_OK(cubec_profile_end(f.d, f.s, p, &rp));
        if (rq.duration_ns == 0) fail_msg("round %d: the window around a launch measured 0", round);
        if (method == CUBEC_TIMING_DEVICE && rp.duration_ns != 0)
            fail_msg("round %d: an empty window beside another stream's work measured %" PRIu64
                     " ns, expected 0",
                     round, rp.duration_ns);
    }
    ASSERT_OK(cubec_buffer_release(f.d, v2));
    fixture_close(&f);
}

/* A window whose only work is a graph replay is not empty: a replay is submitted without being
 * recorded into the stream's command buffer, and the window still measures it (> 0). */
static void test_window_with_only_a_replay(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cubec_graph g;
    ASSERT_OK(cubec_graph_prepare(f.d, f.s));
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) ASSERT_OK(cubec_graph_begin(f.d, f.s));
        ASSERT_OK(busy(&f, f.v, WORDS, STEPS));
    }
    ASSERT_OK(cubec_graph_end(f.d, f.s, &g));
    ASSERT_OK(cubec_sync(f.d, f.s));
    cubec_profile p;
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &p));
    ASSERT_OK(cubec_graph_replay(f.d, f.s, g));
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_OK(cubec_profile_end(f.d, f.s, p, &r));
    if (r.duration_ns == 0) fail_msg("a window around a replay measured 0 ns");
    ASSERT_OK(cubec_graph_destroy(f.d, f.s, g));
    /* The warm-up and the replay ran. */
    uint32_t *runs = malloc(4 * WORDS * sizeof *runs);
    for (uint32_t i = 0; i < 4 * WORDS; i++)
        runs[i] = i < WORDS ? 2 * STEPS : 0;
    check_values(&f, 4 * WORDS, runs);
    free(runs);
    fixture_close(&f);
}

static void test_nested_and_overlapping(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    uint64_t one = min3(&f); /* what one launch costs */
    /* Nested: outer = A + B + C, inner = B only. */
    cubec_profile outer, inner;
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &outer));
    ASSERT_OK(busy(&f, f.v, WORDS, STEPS));
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &inner));
    ASSERT_OK(busy(&f, f.v, WORDS, STEPS));
    cubec_profile_result ri = CUBEC_PROFILE_RESULT_INIT, ro = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_OK(cubec_profile_end(f.d, f.s, inner, &ri));
    ASSERT_OK(busy(&f, f.v, WORDS, STEPS));
    ASSERT_OK(cubec_profile_end(f.d, f.s, outer, &ro));
    print_message("one %.3f ms, nested inner %.3f ms, outer %.3f ms\n", one / 1e6,
                  ri.duration_ns / 1e6, ro.duration_ns / 1e6);
    assert_true(ro.begin_ns <= ri.begin_ns && ri.end_ns <= ro.end_ns);
    assert_true(ro.duration_ns > ri.duration_ns); /* A and C besides B */
    /* Not compared with `one`: how long a launch runs on lavapipe follows the CPU's load (one
     * launch measured 24 ms and the next 9.6 ms on a loaded machine). An empty window measures
     * exactly 0, so a nonzero one recorded the launch it brackets. */
    assert_true(ri.duration_ns > 0);
    /* Overlapping: p1 = A + B, p2 = B + C; each covers two launches. */
    cubec_profile p1, p2;
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &p1));
    ASSERT_OK(busy(&f, f.v, WORDS, STEPS));
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &p2));
    ASSERT_OK(busy(&f, f.v, WORDS, STEPS));
    cubec_profile_result r1 = CUBEC_PROFILE_RESULT_INIT, r2 = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_OK(cubec_profile_end(f.d, f.s, p1, &r1));
    ASSERT_OK(busy(&f, f.v, WORDS, STEPS));
    ASSERT_OK(cubec_profile_end(f.d, f.s, p2, &r2));
    print_message("overlapping: %.3f ms and %.3f ms\n", r1.duration_ns / 1e6, r2.duration_ns / 1e6);
    assert_true(r1.begin_ns <= r2.begin_ns && r1.end_ns <= r2.end_ns && r2.begin_ns < r1.end_ns);
    assert_true(r1.duration_ns > 0 && r2.duration_ns > 0);
    /* 3 (min3) + 3 (nested) + 3 (overlapping) launches over the first WORDS words. */
    uint32_t *runs = malloc(4 * WORDS * sizeof *runs);
    for (uint32_t i = 0; i < 4 * WORDS; i++)
        runs[i] = i < WORDS ? 9 * STEPS : 0;
    check_values(&f, WORDS, runs);
    free(runs);
    fixture_close(&f);
}

static void test_abandon(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    ASSERT_OK(cubec_sync(f.d, f.s));
    uint64_t before[CUBEC_FAULT_KIND_COUNT], after[CUBEC_FAULT_KIND_COUNT];
    cubec_profile p;
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &p));
    ASSERT_OK(busy(&f, f.v, WORDS, 10));
    ASSERT_OK(cubec_fault_get_counts(f.d, before));
    ASSERT_OK(cubec_profile_abandon(f.d, f.s, p));
    ASSERT_OK(cubec_fault_get_counts(f.d, after));
    /* Nothing was submitted or waited for. */
    assert_int_equal(before[CUBEC_FAULT_SUBMIT], after[CUBEC_FAULT_SUBMIT]);
    assert_int_equal(before[CUBEC_FAULT_WAIT], after[CUBEC_FAULT_WAIT]);
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_ERROR(cubec_profile_end(f.d, f.s, p, &r), CUBEC_INVALID_ARGUMENT, "profile");
    ASSERT_ERROR(cubec_profile_abandon(f.d, f.s, p), CUBEC_INVALID_ARGUMENT, "profile");
    /* Many abandoned profiles: their queries are reused, and a later profile still measures. */
    for (int i = 0; i < 2000; i++) {
        ASSERT_OK(cubec_profile_begin(f.d, f.s, &p));
        ASSERT_OK(cubec_profile_abandon(f.d, f.s, p));
    }
    assert_true(profile_busy(&f, STEPS) > 0);
    /* The abandoned profile's launch ran: 10 steps, then a STEPS launch. */
    uint32_t got;
    ASSERT_OK(cubec_read(f.d, f.s, f.v, 0, &got, 4));
    uint32_t want = 7;
    for (uint32_t k = 0; k < 10 + STEPS; k++)
        want = want * LCG_MUL + LCG_ADD;
    assert_int_equal(got, want);
    fixture_close(&f);
}

/* A buffer of 64 words whose contents carry a failure: the submission of the step that should have
 * written it is lost. */
static cubec_buffer tainted_buffer(fixture *f)
{
    cubec_buffer t;
    ASSERT_OK(cubec_buffer_create(f->d, f->s, 64 * 4, &t));
    taint_by_lost_submission(f->d, f->s, f->step, t, 64, 3, 1);
    return t;
}

static void test_poisoned_by_failed_launch(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cubec_stream other;
    ASSERT_OK(cubec_stream_new(f.d, &other));
    cubec_profile p, q;
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &p));
    ASSERT_OK(cubec_profile_begin(f.d, other, &q));
    cubec_buffer t = tainted_buffer(&f); /* a launch of f.s fails while p is open */
    ASSERT_OK(busy(&f, f.v, WORDS, 10));
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_ERROR(cubec_profile_end(f.d, f.s, p, &r), CUBEC_PROFILE_INVALID,
                 "the submission of its work failed");
    assert_int_equal(r.duration_ns, 0);
    cubec_timing method;
    ASSERT_OK(cubec_profile_get_method(f.d, &method));
    if (method == CUBEC_TIMING_DEVICE) {
        /* The other stream's profile had not begun on the GPU when the submission was lost (its
         * queue was not submitted): it measures. */
        ASSERT_OK(cubec_profile_end(f.d, other, q, &r));
    } else {
        /* System timing (a queue without timestamps: the webgpu backend's): q opened at its
         * begin, on the host, so the lost submission poisons it too, as it does every open
         * profile (docs/profiling.md, "Poisoning"). */
        print_message("system timing: the other stream's profile is open, and poisoned\n");
        ASSERT_ERROR(cubec_profile_end(f.d, other, q, &r), CUBEC_PROFILE_INVALID,
                     "the submission of its work failed");
    }
    /* The stream works again, and a new profile on it measures. */
    assert_true(profile_busy(&f, STEPS) > 0);
    ASSERT_OK(cubec_buffer_release(f.d, t));
    fixture_close(&f);
}

static void test_poisoned_by_skipped_launch(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cubec_buffer t = tainted_buffer(&f);
    cubec_stream other;
    ASSERT_OK(cubec_stream_new(f.d, &other));
    cubec_profile p, q;
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &p));
    ASSERT_OK(cubec_profile_begin(f.d, other, &q));
    ASSERT_OK(busy(&f, f.v, WORDS, 10));
    ASSERT_OK(busy(&f, t, 64, 10)); /* reads the tainted buffer: skipped */
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_ERROR(cubec_profile_end(f.d, f.s, p, &r), CUBEC_PROFILE_INVALID, "was skipped");
    /* A profile of another stream saw no failure on its stream. */
    ASSERT_OK(cubec_profile_end(f.d, other, q, &r));
    /* A profile that closed before the skip is valid; one opened after it is too. */
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &p));
    ASSERT_OK(busy(&f, f.v, WORDS, 10));
    ASSERT_OK(cubec_profile_end(f.d, f.s, p, &r));
    ASSERT_OK(busy(&f, t, 64, 10));
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &p));
    ASSERT_OK(busy(&f, f.v, WORDS, 10));
    ASSERT_OK(cubec_profile_end(f.d, f.s, p, &r));
    ASSERT_OK(cubec_buffer_release(f.d, t));
    fixture_close(&f);
}

/* A fixture on a device opened with CUBEC_TIMING=system, which its profiles must report. */
static void fixture_open_system(fixture *f)
{
    setenv("CUBEC_TIMING", "system", 1);
    fixture_open(f);
    unsetenv("CUBEC_TIMING");
    cubec_timing method;
    ASSERT_OK(cubec_profile_get_method(f->d, &method));
    assert_int_equal(method, CUBEC_TIMING_SYSTEM);
}

static void test_system_timing(void **state)
{
    (void)state;
    fixture f;
    fixture_open_system(&f);
    check_scaling(&f);
    cubec_profile p;
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &p));
    ASSERT_OK(busy(&f, f.v, WORDS, 10));
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_OK(cubec_profile_end(f.d, f.s, p, &r));
    assert_int_equal(r.method, CUBEC_TIMING_SYSTEM);
    cubec_buffer t = tainted_buffer(&f);
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &p));
    ASSERT_OK(busy(&f, t, 64, 10));
    ASSERT_ERROR(cubec_profile_end(f.d, f.s, p, &r), CUBEC_PROFILE_INVALID, "was skipped");
    ASSERT_OK(cubec_buffer_release(f.d, t));
    fixture_close(&f);
}

/* Found in review. With System timing, cubec_profile_end waits for the stream's work, and the
 * wait lets other threads in: one of them may abandon the profile meanwhile. Exactly one of them
 * must win: the end fails with CUBEC_INVALID_ARGUMENT naming the abandon (and the abandon
 * succeeds), or, when the end finished first, it measures and the late abandon is refused as a
 * stale profile. The end must never touch the freed profile (the sanitizer build catches a use
 * after free; elsewhere a double free aborts). The abandoning thread starts while the end waits
 * on long work (it sleeps first), which makes the race likely. */
#define ABANDON_LAUNCHES 8
#define ABANDON_STEPS 60000u
#define ABANDON_DELAY_NS 30000000L /* the abandoning thread's head start for the end: 30 ms */

typedef struct abandon_arg {
    cubec_device *d;
    cubec_stream s;
    cubec_profile p;
    cubec_status st;
} abandon_arg;

static void *abandon_later(void *arg)
{
    abandon_arg *a = arg;
    struct timespec delay = {0, ABANDON_DELAY_NS};
    nanosleep(&delay, NULL);
    a->st = cubec_profile_abandon(a->d, a->s, a->p);
    return NULL;
}

static void test_system_end_while_another_thread_abandons(void **state)
{
    (void)state;
    fixture f;
    fixture_open_system(&f);
    ASSERT_OK(cubec_sync(f.d, f.s));
    cubec_profile p;
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &p));
    for (int i = 0; i < ABANDON_LAUNCHES; i++)
        ASSERT_OK(busy(&f, f.v, WORDS, ABANDON_STEPS));
    abandon_arg a = {f.d, f.s, p, NULL};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, abandon_later, &a), 0);
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    uint64_t t0 = clock_now_ns();
    cubec_status end = cubec_profile_end(f.d, f.s, p, &r);
    uint64_t wall = clock_now_ns() - t0;
    assert_int_equal(pthread_join(t, NULL), 0);

    char end_msg[512], abandon_msg[512];
    cubec_code end_code = end ? cubec_status_code(end) : CUBEC_OK;
    cubec_code abandon_code = a.st ? cubec_status_code(a.st) : CUBEC_OK;
    snprintf(end_msg, sizeof end_msg, "%s", end ? cubec_status_message(end) : "");
    snprintf(abandon_msg, sizeof abandon_msg, "%s", a.st ? cubec_status_message(a.st) : "");
    cubec_status_free(end);
    cubec_status_free(a.st);
    print_message("end (waited %.3f ms): %s %s; abandon: %s %s\n", wall / 1e6,
                  cubec_code_name(end_code), end_msg, cubec_code_name(abandon_code), abandon_msg);
    int abandon_won = end_code == CUBEC_INVALID_ARGUMENT &&
                      strstr(end_msg, "abandoned by another thread") && abandon_code == CUBEC_OK;
    int end_won = end_code == CUBEC_OK && abandon_code == CUBEC_INVALID_ARGUMENT &&
                  strstr(abandon_msg, "cubec_profile_abandon: profile");
    if (!abandon_won && !end_won)
        fail_msg("end gave %s (%s) and abandon %s (%s); expected the end to fail naming the "
                 "abandon and the abandon to succeed, or the end to measure and the abandon to "
                 "be refused",
                 cubec_code_name(end_code), end_msg, cubec_code_name(abandon_code), abandon_msg);
    if (end_won) {
        assert_int_equal(r.method, CUBEC_TIMING_SYSTEM);
        assert_true(r.duration_ns > 0);
        assert_int_equal(r.duration_ns, r.end_ns - r.begin_ns);
    }
    /* Either way the profile is gone, and the profiled launches ran. */
    cubec_profile_result r2 = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_ERROR(cubec_profile_end(f.d, f.s, p, &r2), CUBEC_INVALID_ARGUMENT, "profile");
    uint32_t want = 7;
    for (uint32_t k = 0; k < ABANDON_LAUNCHES * ABANDON_STEPS; k++)
        want = want * LCG_MUL + LCG_ADD;
    uint32_t *got = malloc(WORDS * 4);
    assert_non_null(got);
    ASSERT_OK(cubec_read(f.d, f.s, f.v, 0, got, WORDS * 4));
    for (uint32_t i = 0; i < WORDS; i++)
        if (got[i] != want) {
            uint32_t g = got[i];
            free(got);
            fail_msg("word %u: got %u, expected %u", i, g, want);
        }
    free(got);
    /* A new profile on the stream measures. */
    assert_true(profile_busy(&f, STEPS) > 0);
    fixture_close(&f);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cubec_stream other;
    ASSERT_OK(cubec_stream_new(f.d, &other));
    ASSERT_ERROR(cubec_profile_begin(f.d, f.s, NULL), CUBEC_INVALID_ARGUMENT, "out_profile");
    ASSERT_ERROR(cubec_profile_begin(NULL, f.s, &(cubec_profile){0}), CUBEC_INVALID_ARGUMENT,
                 "device");
    cubec_profile p;
    ASSERT_OK(cubec_profile_begin(f.d, f.s, &p));
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_ERROR(cubec_profile_end(f.d, f.s, p, NULL), CUBEC_INVALID_ARGUMENT, "out_result");
    char want[128];
    snprintf(want, sizeof want, "not on stream %" PRIu64, (uint64_t)(other & 0xffffffffffffull));
    ASSERT_ERROR(cubec_profile_end(f.d, other, p, &r), CUBEC_INVALID_ARGUMENT, want);
    ASSERT_ERROR(cubec_profile_end(f.d, f.s, (cubec_profile){0}, &r), CUBEC_INVALID_ARGUMENT,
                 "profile");
    ASSERT_ERROR(cubec_profile_end(f.d, f.s, (cubec_profile){12345}, &r), CUBEC_INVALID_ARGUMENT,
                 "profile");
    /* The refusals changed nothing: the profile still ends. */
    ASSERT_OK(cubec_profile_end(f.d, f.s, p, &r));
    fixture_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration_scales_with_work),
        cmocka_unit_test(test_empty_windows),
        cmocka_unit_test(test_window_with_only_a_replay),
        cmocka_unit_test(test_empty_window_beside_another_stream),
        cmocka_unit_test(test_nested_and_overlapping),
        cmocka_unit_test(test_abandon),
        cmocka_unit_test(test_poisoned_by_failed_launch),
        cmocka_unit_test(test_poisoned_by_skipped_launch),
        cmocka_unit_test(test_system_timing),
        cmocka_unit_test(test_system_end_while_another_thread_abandons),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
