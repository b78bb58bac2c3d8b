/* The autotuner (cubec.h "Autotuning", tune/autotune.c, docs/autotune.md), on lavapipe with
 * validation, each test with a cache directory of its own:
 *  - of a slow candidate (the busy kernel with 100x the steps) and a fast one, in either order,
 *    the fast one is chosen (within FAST_TRIES keys: a busy machine slows lavapipe's device,
 *    see lowest_median), each ran exactly warm-up + samples times per key, their outputs match
 *    the CPU's, and every measured choice is the lowest median;
 *  - a candidate whose run returns an error and one whose profile is poisoned (its launch reads
 *    a buffer carrying a failure, so it is skipped and would measure ~0) are rejected with their
 *    reasons, and the valid one is chosen; every candidate rejected is one error naming the
 *    tuner, the key and each reason;
 *  - the choice is reused from memory, by a new tuner of the same name (from disk) and by another
 *    process, without running any candidate; another tuner name or a memory-only tuner measures;
 *    two threads asking for one key at once measure it once;
 *  - a damaged entry (a flipped byte, a payload that is not a choice) is ignored with a warning
 *    and measured again, and a stored checksum other than the request's is measured again;
 *  - bad arguments are refused by name.
 * Before the autotuner existed none of this could be written (cubec_tune_* did not exist). */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include "kernel/disk_cache.h"
#include "tune/autotune.h"

#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define WORDS 1024u
#define FAST_STEPS 40u
#define SLOW_STEPS 4000u /* 100x the work: lavapipe's fixed cost of a window is far below it */
#define WARMUP 1u
#define SAMPLES 5u
#define RUNS (WARMUP + SAMPLES)

static char dir[128];
static char log_path[160];

static int setup(void **state)
{
    (void)state;
    test_temp_dir(dir, sizeof dir, "cubec_test_autotune");
    setenv("CUBEC_CACHE_DIR", dir, 1);
    snprintf(log_path, sizeof log_path, "%s/log.txt", dir);
    setenv("CUBEC_LOG_FILE", log_path, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unsetenv("CUBEC_LOG_FILE");
    test_remove_tree(dir);
    setenv("CUBEC_CACHE_DIR", "none", 1);
    return 0;
}

/* Whether the log holds a line containing `needle`. */
static int logged(const char *needle)
{
    FILE *f = fopen(log_path, "r");
    if (!f) return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* A candidate: `steps` steps of the busy kernel over its own buffer, counting its runs. */
typedef struct cand {
    cubec_kernel busy;
    cubec_buffer v;
    uint32_t steps;
    uint32_t runs;
    uint64_t total_steps; /* over all its runs on v */
    /* 0: runs; 1: its run returns an error; 2: reads a buffer carrying a failure; 3: its run
     * returns an error of its own (cubec_status_new) */
    int mode;
} cand;

static cubec_status run_cand(cubec_device *d, cubec_stream s, void *user)
{
    cand *c = user;
    c->runs++;
    if (c->mode == 1) {
        /* No buffer for the kernel's one binding: refused by name. */
        const cubec_launch_desc bad = {
            .struct_size = sizeof(cubec_launch_desc), .kernel = c->busy, .groups = {1, 1, 1}};
        return cubec_launch(d, s, &bad);
    }
    if (c->mode == 3)
        return cubec_status_new(CUBEC_UNSUPPORTED, "tile %u needs %s", c->steps, "float16");
    cubec_status st = busy_launch(d, s, c->busy, c->v, WORDS, c->steps);
    if (!st) c->total_steps += c->steps;
    return st;
}

typedef struct fixture {
    cubec_device *d;
    cubec_stream s;
    cubec_kernel busy, step;
    cand c[4];
    cubec_tune_candidate tc[4];
} fixture;

static void fixture_open(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->d = test_device_open();
    ASSERT_OK(cubec_stream_new(f->d, &f->s));
    f->busy = make_kernel(f->d, "busy", busy_src);
    f->step = make_kernel(f->d, "step", step_src);
    static const char *names[4] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) {
        ASSERT_OK(cubec_buffer_create(f->d, f->s, WORDS * 4, &f->c[i].v));
        ASSERT_OK(cubec_fill(f->d, f->s, f->c[i].v, 0, WORDS * 4, 7));
        f->c[i].busy = f->busy;
        f->c[i].steps = FAST_STEPS;
        f->tc[i] = (cubec_tune_candidate){names[i], run_cand, &f->c[i]};
    }
    ASSERT_OK(cubec_sync(f->d, f->s));
}

static void fixture_close(fixture *f)
{
    for (int i = 0; i < 4; i++)
        ASSERT_OK(cubec_buffer_release(f->d, f->c[i].v));
    ASSERT_OK(cubec_kernel_destroy(f->d, f->busy));
    ASSERT_OK(cubec_kernel_destroy(f->d, f->step));
    test_device_close(f->d);
}

/* Candidate i's words hold 7 advanced by the steps of all its runs, as the CPU computes it. */
static void check_cand(fixture *f, int i)
{
    cand *c = &f->c[i];
    uint32_t want = 7;
    for (uint64_t k = 0; k < c->total_steps; k++)
        want = want * LCG_MUL + LCG_ADD;
    static uint32_t got[WORDS];
    ASSERT_OK(cubec_read(f->d, f->s, c->v, 0, got, sizeof got));
    for (uint32_t w = 0; w < WORDS; w++)
        if (got[w] != want)
            fail_msg("candidate %d word %u: got %u, expected %u after %u runs", i, w, got[w], want,
                     c->runs);
}

static cubec_tuner *make_tuner(cubec_device *d, const char *name, int memory_only)
{
    const cubec_tuner_desc desc = {.struct_size = sizeof(cubec_tuner_desc),
                                   .name = name,
                                   .warmup = WARMUP,
                                   .samples = SAMPLES,
                                   .memory_only = memory_only};
    cubec_tuner *t = NULL;
    ASSERT_OK(cubec_tuner_create(d, &desc, &t));
    return t;
}

static cubec_tune_result choose(fixture *f, cubec_tuner *t, const char *key, uint32_t n,
                                uint64_t checksum)
{
    const cubec_tune_request req = {.struct_size = sizeof(cubec_tune_request),
                                    .key = key,
                                    .candidates = f->tc,
                                    .candidate_count = n,
                                    .checksum = checksum};
    cubec_tune_result r = CUBEC_TUNE_RESULT_INIT;
    ASSERT_OK(cubec_tune_choose(t, f->s, &req, &r));
    return r;
}

static cubec_tune_outcome outcome(cubec_tuner *t, uint32_t i)
{
    cubec_tune_outcome o = CUBEC_TUNE_OUTCOME_INIT;
    ASSERT_OK(cubec_tune_outcome_get(t, i, &o));
    return o;
}

/* The candidate the tuner's rule picks from the outcomes of its last measurement: the lowest
 * median, ties to the lowest index (docs/autotune.md). Which candidate that is, the machine
 * decides: lavapipe's device is the CPU, and its timestamps, device timing's as much as the host
 * clock of System timing, count the time its threads wait for a core. With the cores busy (two
 * busy loops and three runs of this test at once, as `ctest -j2` beside other tests can make
 * them), the 40-step candidate (0.07 ms alone) measured medians in scheduler ticks, clustered at
 * 3.5, 7.5, 11.5 ms and up to 28 ms (minimums 0.06 to 0.23 ms), where the 4000-step one takes
 * 3.4 ms: 1 run in 5 of this test failed, on the Vulkan and the webgpu backend alike. So the
 * tests whose point is where a choice comes from check the rule, whichever candidate won, and
 * test_fast_candidate_chosen, whose point is the winner, gives the fast candidate FAST_TRIES keys
 * to win one. */
static uint32_t lowest_median(cubec_tuner *t, uint32_t n)
{
    uint32_t best = UINT32_MAX;
    uint64_t best_ns = 0;
    for (uint32_t i = 0; i < n; i++) {
        cubec_tune_outcome o = outcome(t, i);
        if (o.state != CUBEC_TUNE_TIMED) continue;
        if (best == UINT32_MAX || o.median_ns < best_ns) {
            best = i;
            best_ns = o.median_ns;
        }
    }
    assert_int_not_equal(best, UINT32_MAX);
    return best;
}

/* ---- choosing ----------------------------------------------------------------------------- */

/* A slow spell of the machine can make the fast candidate measure slower for one key (see
 * lowest_median); a tuner that preferred the slow one would lose every key. */
#define FAST_TRIES 3u

static void test_fast_candidate_chosen(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cubec_tuner *t = make_tuner(f.d, "busy", 1);
    uint32_t keys = 0;
    for (uint32_t fast = 0; fast < 2; fast++) {
        f.c[fast].steps = FAST_STEPS;
        f.c[1 - fast].steps = SLOW_STEPS;
        int won = 0;
        for (uint32_t try = 0; try < FAST_TRIES && !won; try++) {
            char key[32];
            snprintf(key, sizeof key, "fast=%u try %u", fast, try);
            cubec_tune_result r = choose(&f, t, key, 2, 0);
            keys++;
            cubec_tune_outcome o0 = outcome(t, 0), o1 = outcome(t, 1);
            print_message("fast candidate %u: medians %.1f / %.1f us (minimums %.1f / %.1f), "
                          "chose %u\n",
                          fast, o0.median_ns / 1e3, o1.median_ns / 1e3, o0.min_ns / 1e3,
                          o1.min_ns / 1e3, r.index);
            assert_int_equal(r.source, CUBEC_TUNE_MEASURED);
            assert_int_equal(o0.state, CUBEC_TUNE_TIMED);
            assert_int_equal(o1.state, CUBEC_TUNE_TIMED);
            assert_int_equal(o0.samples, SAMPLES);
            assert_true(o0.min_ns <= o0.median_ns);
            assert_int_equal(r.index, lowest_median(t, 2));
            assert_int_equal(r.median_ns, r.index ? o1.median_ns : o0.median_ns);
            assert_int_equal(f.c[0].runs, RUNS * keys);
            assert_int_equal(f.c[1].runs, RUNS * keys);
            won = r.index == fast;
        }
        if (!won)
            fail_msg("the fast candidate %u lost %u keys in a row to the one with 100x the steps",
                     fast, FAST_TRIES);
    }
    /* Each ran warm-up + samples times per key, and computed what the CPU does. */
    check_cand(&f, 0);
    check_cand(&f, 1);
    ASSERT_OK(cubec_tuner_destroy(t));
    fixture_close(&f);
}

/* Tuning inside the program's dry run measures for real (docs/dry-runs.md): without the real
 * window the candidates' launches would be dropped and their words stay 7. */
static void test_tuning_inside_dry_run(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cubec_tuner *t = make_tuner(f.d, "dry", 1);
    f.c[0].steps = SLOW_STEPS;
    f.c[1].steps = FAST_STEPS;
    ASSERT_OK(cubec_dry_run_begin());
    cubec_tune_result r = choose(&f, t, "in-dry-run", 2, 0);
    ASSERT_OK(cubec_dry_run_end());
    assert_int_equal(r.source, CUBEC_TUNE_MEASURED);
    assert_int_equal(r.index, lowest_median(t, 2));
    check_cand(&f, 0);
    check_cand(&f, 1);
    ASSERT_OK(cubec_tuner_destroy(t));
    fixture_close(&f);
}

static void test_failing_and_poisoned_rejected(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cubec_buffer tainted;
    ASSERT_OK(cubec_buffer_create(f.d, f.s, WORDS * 4, &tainted));
    taint_by_lost_submission(f.d, f.s, f.step, tainted, WORDS, 3, 1);
    f.c[0].mode = 1;
    cubec_buffer own1 = f.c[1].v;
    f.c[1].v = tainted;
    f.c[2].steps = SLOW_STEPS; /* the only valid one, slow: the others would "measure" less */
    cubec_tuner *t = make_tuner(f.d, "rejects", 0);
    cubec_tune_result r = choose(&f, t, "k", 3, 0);
    assert_int_equal(r.index, 2);
    cubec_tune_outcome o0 = outcome(t, 0), o1 = outcome(t, 1), o2 = outcome(t, 2);
    print_message("[0] %s\n[1] %s\n", o0.reason, o1.reason);
    assert_int_equal(o0.state, CUBEC_TUNE_REJECTED);
    assert_int_equal(o0.code, CUBEC_INVALID_ARGUMENT);
    assert_non_null(strstr(o0.reason, "its run returned an error"));
    assert_int_equal(o1.state, CUBEC_TUNE_REJECTED);
    assert_int_equal(o1.code, CUBEC_PROFILE_INVALID);
    assert_non_null(strstr(o1.reason, "skipped"));
    assert_int_equal(o2.state, CUBEC_TUNE_TIMED);
    /* Rejected at their first run, never run again. */
    assert_int_equal(f.c[0].runs, 1);
    assert_int_equal(f.c[1].runs, 1);
    assert_int_equal(f.c[2].runs, RUNS);
    check_cand(&f, 2);

    /* None valid: one error that names the tuner, the key and every candidate's reason. */
    cubec_tune_request req = {.struct_size = sizeof(cubec_tune_request),
                              .key = "shape 7",
                              .candidates = f.tc,
                              .candidate_count = 2};
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, &r), CUBEC_PROFILE_INVALID,
                 "tuner 'rejects', key 'shape 7': every candidate was rejected: [0] a: its run "
                 "returned an error");
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, &r), CUBEC_PROFILE_INVALID, "; [1] b: profile #");
    assert_int_equal(outcome(t, 1).state, CUBEC_TUNE_REJECTED);
    /* All of one kind: that kind's code. */
    f.c[1].mode = 1;
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, &r), CUBEC_INVALID_ARGUMENT,
                 "every candidate was rejected: [0] a: its run returned an error: cubec_launch");
    /* Nothing stored for the keys that failed. */
    char path[1024];
    assert_true(tune_entry_path(t, "shape 7", path, sizeof path)[0]);
    assert_int_equal(access(path, F_OK), -1);
    assert_true(tune_entry_path(t, "k", path, sizeof path)[0]);
    assert_int_equal(access(path, F_OK), 0);
    ASSERT_OK(cubec_tuner_destroy(t));
    f.c[1].v = own1;
    ASSERT_OK(cubec_buffer_release(f.d, tainted));
    fixture_close(&f);
}

/* A candidate (a Python one, say) fails with a status of its own: rejected with its code and
 * message, the other chosen. */
static void test_candidate_own_status(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    f.c[0].mode = 3;
    f.c[0].steps = 16;
    cubec_tuner *t = make_tuner(f.d, "own-status", 1);
    cubec_tune_result r = choose(&f, t, "k", 2, 0);
    assert_int_equal(r.index, 1);
    cubec_tune_outcome o0 = outcome(t, 0);
    assert_int_equal(o0.state, CUBEC_TUNE_REJECTED);
    assert_int_equal(o0.code, CUBEC_UNSUPPORTED);
    assert_non_null(strstr(o0.reason, "its run returned an error: tile 16 needs float16"));
    assert_int_equal(f.c[0].runs, 1);
    assert_int_equal(outcome(t, 1).state, CUBEC_TUNE_TIMED);
    check_cand(&f, 1);
    ASSERT_OK(cubec_tuner_destroy(t));
    fixture_close(&f);
}

/* ---- reuse -------------------------------------------------------------------------------- */

/* A child process: a new device and tuner find the stored choice `want` for "shared" without
 * running any candidate. */
static int child_main(uint32_t want)
{
    fixture f;
    fixture_open(&f);
    cubec_tuner *t = make_tuner(f.d, "reuse", 0);
    cubec_tune_result r = choose(&f, t, "shared", 2, 42);
    int ok = r.source == CUBEC_TUNE_DISK && r.index == want && f.c[0].runs == 0 && f.c[1].runs == 0;
    if (!ok) fprintf(stderr, "child: source %d index %u\n", r.source, r.index);
    ASSERT_OK(cubec_tuner_destroy(t));
    fixture_close(&f);
    return ok ? 0 : 1;
}

static void test_choice_reused(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    f.c[0].steps = SLOW_STEPS;
    cubec_tuner *t = make_tuner(f.d, "reuse", 0);
    cubec_tune_result r = choose(&f, t, "shared", 2, 42);
    assert_int_equal(r.source, CUBEC_TUNE_MEASURED);
    assert_int_equal(r.index, lowest_median(t, 2));
    const uint32_t winner = r.index;
    uint64_t median = r.median_ns;
    const uint32_t ran = f.c[0].runs + f.c[1].runs;
    r = choose(&f, t, "shared", 2, 42);
    assert_int_equal(r.source, CUBEC_TUNE_MEMORY);
    assert_int_equal(r.index, winner);
    assert_int_equal(r.median_ns, median);
    assert_int_equal(outcome(t, 1).state, CUBEC_TUNE_NOT_RUN);
    ASSERT_OK(cubec_tuner_destroy(t));

    /* A new tuner of the same name reads the disk; another name and a memory-only tuner do not. */
    t = make_tuner(f.d, "reuse", 0);
    r = choose(&f, t, "shared", 2, 42);
    assert_int_equal(r.source, CUBEC_TUNE_DISK);
    assert_int_equal(r.index, winner);
    assert_int_equal(r.median_ns, median);
    ASSERT_OK(cubec_tuner_destroy(t));
    assert_int_equal(f.c[0].runs + f.c[1].runs, ran);
    t = make_tuner(f.d, "other", 0);
    assert_int_equal(choose(&f, t, "shared", 2, 42).source, CUBEC_TUNE_MEASURED);
    ASSERT_OK(cubec_tuner_destroy(t));
    t = make_tuner(f.d, "reuse", 1);
    assert_int_equal(choose(&f, t, "shared", 2, 42).source, CUBEC_TUNE_MEASURED);
    char path[64];
    assert_string_equal(tune_entry_path(t, "shared", path, sizeof path), "");
    ASSERT_OK(cubec_tuner_destroy(t));
    /* A single candidate is chosen without running it. */
    const uint32_t ran0 = f.c[0].runs;
    t = make_tuner(f.d, "single", 0);
    r = choose(&f, t, "one", 1, 0);
    assert_int_equal(r.source, CUBEC_TUNE_SINGLE);
    assert_int_equal(r.index, 0);
    assert_int_equal(f.c[0].runs, ran0);
    ASSERT_OK(cubec_tuner_destroy(t));
    check_cand(&f, 0);
    check_cand(&f, 1);
    fixture_close(&f);

    /* Another process. */
    char want[16];
    snprintf(want, sizeof want, "%u", winner);
    char *argv[] = {"test_autotune", "--child", want, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ);
    if (rc) fail_msg("posix_spawn: %s", strerror(rc));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail_msg("the child failed (%d)", status);
}

/* Two threads ask one tuner for one key at once, each on a stream of its own: the key is measured
 * once (each candidate ran warm-up + samples times, not twice that) and both get the same
 * winner, one measured and one remembered. */
typedef struct chooser {
    fixture *f;
    cubec_tuner *t;
    cubec_stream s;
    cubec_tune_result r;
    cubec_status st;
} chooser;

static void *choose_thread(void *arg)
{
    chooser *c = arg;
    const cubec_tune_request req = {.struct_size = sizeof(cubec_tune_request),
                                    .key = "threads",
                                    .candidates = c->f->tc,
                                    .candidate_count = 2};
    c->r = (cubec_tune_result)CUBEC_TUNE_RESULT_INIT;
    c->st = cubec_tune_choose(c->t, c->s, &req, &c->r);
    return NULL;
}

static void test_threads_measure_once(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    f.c[0].steps = SLOW_STEPS;
    cubec_tuner *t = make_tuner(f.d, "threads", 1);
    chooser c[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        c[i] = (chooser){.f = &f, .t = t};
        ASSERT_OK(cubec_stream_new(f.d, &c[i].s));
        assert_int_equal(pthread_create(&th[i], NULL, choose_thread, &c[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        ASSERT_OK(c[i].st);
    }
    /* Both get the one winner and its median. Which candidate that is, the machine decides
     * (lowest_median); the second call's outcomes replaced the first's, so the rule cannot be
     * checked here (test_fast_candidate_chosen holds the tuner to the right choice). */
    assert_int_equal(c[0].r.index, c[1].r.index);
    assert_int_equal(c[0].r.median_ns, c[1].r.median_ns);
    assert_int_equal(c[0].r.source + c[1].r.source, CUBEC_TUNE_MEASURED + CUBEC_TUNE_MEMORY);
    assert_int_equal(f.c[0].runs, RUNS);
    assert_int_equal(f.c[1].runs, RUNS);
    ASSERT_OK(cubec_tuner_destroy(t));
    check_cand(&f, 0);
    check_cand(&f, 1);
    fixture_close(&f);
}

/* ---- damaged and mismatched entries ------------------------------------------------------- */

#define HEADER 96 /* the disk cache's entry header (kernel/disk_cache.c) */

static void flip_byte(const char *path, long offset)
{
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, offset, SEEK_END), 0);
    int c = fgetc(fp);
    assert_int_not_equal(c, EOF);
    assert_int_equal(fseek(fp, offset, SEEK_END), 0);
    assert_int_not_equal(fputc(c ^ 0xff, fp), EOF);
    fclose(fp);
}

/* Rewrites the entry at `path` as a valid disk cache entry (right version, key and checksums)
 * whose payload is `payload`: damage the disk cache cannot see. */
static void rewrite_payload(const char *path, const void *payload, size_t size)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    static unsigned char file[1 << 16];
    size_t n = fread(file, 1, sizeof file, fp);
    fclose(fp);
    assert_true(n > HEADER);
    char version[DISK_CACHE_VERSION_BYTES];
    memcpy(version, file + 16, sizeof version);
    version[sizeof version - 1] = 0;
    uint64_t key_size;
    memcpy(&key_size, file + 64, 8);
    disk_cache *c = NULL;
    ASSERT_OK(disk_cache_open(dir, 1 << 30, version, &c));
    assert_int_equal(disk_cache_put(c, "tune", file + HEADER, key_size, payload, size), 1);
    disk_cache_close(c);
}

/* A new tuner's choice for "k": its source, after the log was emptied. A choice read back from
 * the disk must be the one last measured; a measured one must follow the tuner's rule, whichever
 * candidate won (lowest_median): what these tests check is where the choice came from. */
static cubec_tune_source fresh_choice(fixture *f, uint64_t checksum)
{
    static uint32_t last_measured = 1;
    assert_int_equal(truncate(log_path, 0) == 0 || errno == ENOENT, 1);
    cubec_tuner *t = make_tuner(f->d, "damage", 0);
    cubec_tune_result r = choose(f, t, "k", 2, checksum);
    if (r.source == CUBEC_TUNE_MEASURED) {
        assert_int_equal(r.index, lowest_median(t, 2));
        last_measured = r.index;
    } else {
        assert_int_equal(r.index, last_measured);
    }
    ASSERT_OK(cubec_tuner_destroy(t));
    return r.source;
}

static void test_damaged_entry_measured_again(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    f.c[0].steps = SLOW_STEPS;
    assert_int_equal(fresh_choice(&f, 0), CUBEC_TUNE_MEASURED);
    cubec_tuner *t = make_tuner(f.d, "damage", 0);
    char path[1024];
    assert_true(tune_entry_path(t, "k", path, sizeof path)[0]);
    ASSERT_OK(cubec_tuner_destroy(t));

    /* A flipped byte of the payload: the disk cache's checksum fails. */
    flip_byte(path, -3);
    assert_int_equal(fresh_choice(&f, 0), CUBEC_TUNE_MEASURED);
    if (!logged("the stored choice") || !logged("could not be read; measuring again"))
        fail_msg("no warning about the damaged entry in %s", log_path);
    assert_int_equal(fresh_choice(&f, 0), CUBEC_TUNE_DISK); /* stored again, whole */

    /* A whole entry whose payload is not a choice: too short, and a wrong format. */
    rewrite_payload(path, "nonsense", 8);
    assert_int_equal(fresh_choice(&f, 0), CUBEC_TUNE_MEASURED);
    if (!logged("autotune: ignoring") || !logged("fewer than a choice's"))
        fail_msg("no warning about the short payload in %s", log_path);
    unsigned char payload[64];
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    uint64_t key_size;
    assert_int_equal(fseek(fp, 64, SEEK_SET), 0);
    assert_int_equal(fread(&key_size, 8, 1, fp), 1);
    assert_int_equal(fseek(fp, (long)(HEADER + key_size), SEEK_SET), 0);
    size_t n = fread(payload, 1, sizeof payload, fp);
    fclose(fp);
    assert_true(n > 12);
    payload[8] ^= 0x40; /* the format */
    rewrite_payload(path, payload, n);
    assert_int_equal(fresh_choice(&f, 0), CUBEC_TUNE_MEASURED);
    if (!logged("autotune: ignoring") || !logged("format"))
        fail_msg("no warning about the format in %s", log_path);
    assert_int_equal(fresh_choice(&f, 0), CUBEC_TUNE_DISK);
    check_cand(&f, 1);
    fixture_close(&f);
}

static void test_checksum_mismatch_measured_again(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    f.c[0].steps = SLOW_STEPS;
    assert_int_equal(fresh_choice(&f, 1), CUBEC_TUNE_MEASURED);
    assert_int_equal(fresh_choice(&f, 1), CUBEC_TUNE_DISK);
    assert_int_equal(fresh_choice(&f, 2), CUBEC_TUNE_MEASURED);
    assert_int_equal(fresh_choice(&f, 2), CUBEC_TUNE_DISK);
    /* In memory too, and a changed list of candidates (another count, another winner's name). */
    cubec_tuner *t = make_tuner(f.d, "damage", 0);
    assert_int_equal(choose(&f, t, "k", 2, 2).source, CUBEC_TUNE_DISK);
    assert_int_equal(choose(&f, t, "k", 2, 2).source, CUBEC_TUNE_MEMORY);
    assert_int_equal(choose(&f, t, "k", 2, 3).source, CUBEC_TUNE_MEASURED);
    f.c[2].steps = SLOW_STEPS;
    cubec_tune_result r = choose(&f, t, "k", 3, 3);
    assert_int_equal(r.source, CUBEC_TUNE_MEASURED);
    /* The winner renamed: the choice names it, so it no longer fits. (Renaming candidate 1
     * assumed the fast one won: under load a slow winner's choice still fit, 0x2 != 0x1.) */
    f.tc[r.index].name = "renamed";
    assert_int_equal(choose(&f, t, "k", 3, 3).source, CUBEC_TUNE_MEASURED);
    assert_int_equal(choose(&f, t, "k", 3, 3).source, CUBEC_TUNE_MEMORY);
    ASSERT_OK(cubec_tuner_destroy(t));
    check_cand(&f, 1);
    fixture_close(&f);
}

/* ---- bad arguments ------------------------------------------------------------------------ */

typedef struct reenter {
    cubec_tuner *t;
    cubec_status choose, outcome;
} reenter;

static cubec_status run_reenter(cubec_device *d, cubec_stream s, void *user)
{
    (void)d;
    reenter *re = user;
    cubec_tune_candidate c = {"x", run_reenter, re};
    cubec_tune_request req = {.struct_size = sizeof(cubec_tune_request),
                              .key = "inner",
                              .candidates = &c,
                              .candidate_count = 1};
    cubec_tune_result r = CUBEC_TUNE_RESULT_INIT;
    if (!re->choose) re->choose = cubec_tune_choose(re->t, s, &req, &r);
    cubec_tune_outcome o = CUBEC_TUNE_OUTCOME_INIT;
    if (!re->outcome) re->outcome = cubec_tune_outcome_get(re->t, 0, &o);
    return NULL;
}

static void test_bad_arguments(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cubec_tuner *t = NULL;
    cubec_tuner_desc desc = {.struct_size = sizeof(cubec_tuner_desc), .name = "bad"};
    ASSERT_ERROR(cubec_tuner_create(NULL, &desc, &t), CUBEC_INVALID_ARGUMENT, "device is NULL");
    ASSERT_ERROR(cubec_tuner_create(f.d, NULL, &t), CUBEC_INVALID_ARGUMENT, "desc is NULL");
    ASSERT_ERROR(cubec_tuner_create(f.d, &desc, NULL), CUBEC_INVALID_ARGUMENT, "out_tuner is NULL");
    desc.name = NULL;
    ASSERT_ERROR(cubec_tuner_create(f.d, &desc, &t), CUBEC_INVALID_ARGUMENT, "desc->name is NULL");
    desc.name = "";
    ASSERT_ERROR(cubec_tuner_create(f.d, &desc, &t), CUBEC_INVALID_ARGUMENT, "desc->name is empty");
    static char long_name[CUBEC_TUNE_MAX_KEY_BYTES + 2];
    memset(long_name, 'n', sizeof long_name - 1);
    desc.name = long_name;
    ASSERT_ERROR(cubec_tuner_create(f.d, &desc, &t), CUBEC_INVALID_ARGUMENT,
                 "desc->name is 4097 bytes");
    desc.name = "bad";
    desc.samples = CUBEC_TUNE_MAX_SAMPLES + 1;
    ASSERT_ERROR(cubec_tuner_create(f.d, &desc, &t), CUBEC_INVALID_ARGUMENT,
                 "desc->samples is 1001");
    desc.samples = 0;
    desc.warmup = 5000;
    ASSERT_ERROR(cubec_tuner_create(f.d, &desc, &t), CUBEC_INVALID_ARGUMENT,
                 "desc->warmup is 5000");
    assert_null(t);
    t = make_tuner(f.d, "bad", 0);

    cubec_tune_result r = CUBEC_TUNE_RESULT_INIT;
    cubec_tune_request req = {.struct_size = sizeof(cubec_tune_request),
                              .key = "k",
                              .candidates = f.tc,
                              .candidate_count = 2};
    ASSERT_ERROR(cubec_tune_choose(NULL, f.s, &req, &r), CUBEC_INVALID_ARGUMENT, "tuner is NULL");
    ASSERT_ERROR(cubec_tune_choose(t, f.s, NULL, &r), CUBEC_INVALID_ARGUMENT, "request is NULL");
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, NULL), CUBEC_INVALID_ARGUMENT,
                 "out_result is NULL");
    req.key = NULL;
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, &r), CUBEC_INVALID_ARGUMENT,
                 "request->key is NULL");
    req.key = "";
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, &r), CUBEC_INVALID_ARGUMENT,
                 "request->key is empty");
    req.key = long_name;
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, &r), CUBEC_INVALID_ARGUMENT,
                 "request->key is 4097 bytes");
    req.key = "k";
    req.candidate_count = 0;
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, &r), CUBEC_INVALID_ARGUMENT,
                 "request->candidate_count is 0 (key 'k')");
    req.candidate_count = CUBEC_TUNE_MAX_CANDIDATES + 1;
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, &r), CUBEC_INVALID_ARGUMENT,
                 "request->candidate_count is 257");
    req.candidate_count = 2;
    req.candidates = NULL;
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, &r), CUBEC_INVALID_ARGUMENT,
                 "request->candidates is NULL");
    req.candidates = f.tc;
    f.tc[1].name = NULL;
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, &r), CUBEC_INVALID_ARGUMENT,
                 "request->candidates[1].name is NULL");
    f.tc[1].name = "";
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, &r), CUBEC_INVALID_ARGUMENT,
                 "request->candidates[1].name is empty");
    f.tc[1].name = "a";
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, &r), CUBEC_INVALID_ARGUMENT,
                 "request->candidates[0] and [1] are both named 'a'");
    f.tc[1].name = "b";
    f.tc[1].run = NULL;
    ASSERT_ERROR(cubec_tune_choose(t, f.s, &req, &r), CUBEC_INVALID_ARGUMENT,
                 "request->candidates[1].run ('b') is NULL");
    f.tc[1].run = run_cand;
    ASSERT_ERROR(cubec_tune_choose(t, (cubec_stream)12345, &req, &r), CUBEC_INVALID_ARGUMENT,
                 "cubec_tune_choose");
    /* Nothing ran, nothing was stored. */
    assert_int_equal(f.c[0].runs + f.c[1].runs, 0);
    char path[1024];
    assert_true(tune_entry_path(t, "k", path, sizeof path)[0]);
    assert_int_equal(access(path, F_OK), -1);

    cubec_tune_outcome o = CUBEC_TUNE_OUTCOME_INIT;
    ASSERT_ERROR(cubec_tune_outcome_get(t, 0, &o), CUBEC_INVALID_ARGUMENT,
                 "index 0 is out of range: tuner 'bad' last chose among 0 candidates");
    ASSERT_ERROR(cubec_tune_outcome_get(NULL, 0, &o), CUBEC_INVALID_ARGUMENT, "tuner is NULL");
    ASSERT_ERROR(cubec_tune_outcome_get(t, 0, NULL), CUBEC_INVALID_ARGUMENT, "out_outcome is NULL");

    /* A candidate that calls its own tuner is refused, not left waiting for itself. */
    reenter re = {t, NULL, NULL};
    cubec_tune_candidate rc[2] = {{"x", run_reenter, &re}, {"y", run_cand, &f.c[0]}};
    req = (cubec_tune_request){.struct_size = sizeof(cubec_tune_request),
                               .key = "re",
                               .candidates = rc,
                               .candidate_count = 2};
    ASSERT_OK(cubec_tune_choose(t, f.s, &req, &r));
    ASSERT_ERROR(re.choose, CUBEC_INVALID_ARGUMENT, "called that tuner while it measured");
    ASSERT_ERROR(re.outcome, CUBEC_INVALID_ARGUMENT, "called that tuner while it measured");
    ASSERT_ERROR(cubec_tune_outcome_get(t, 2, &o), CUBEC_INVALID_ARGUMENT,
                 "index 2 is out of range: tuner 'bad' last chose among 2 candidates");
    ASSERT_OK(cubec_tuner_destroy(t));
    ASSERT_OK(cubec_tuner_destroy(NULL));
    fixture_close(&f);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--child")) return child_main((uint32_t)atoi(argv[2]));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fast_candidate_chosen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tuning_inside_dry_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failing_and_poisoned_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_candidate_own_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_choice_reused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_measure_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_entry_measured_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checksum_mismatch_measured_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
