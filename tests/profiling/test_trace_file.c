/* The profiling outputs a user sees, end to end on the default device with the validation layer
 * on:
 *  - CUBEC_TRACE: a workload on two streams (launches of "produce" on one, "consume" on the
 *    other, host writes and reads) leaves a trace file that tests/profiling/check_trace.py
 *    accepts with exactly the launches the workload made, on at least two stream rows, each row
 *    named after its stream and slot;
 *  - CUBEC_LOG=profiling=summary: the kernel summary table in the log file counts each kernel's
 *    launches;
 *  - a graph replayed several times: every replayed launch is in the trace, naming its graph;
 *  - a read that waits for the GPU while another thread releases the buffer: the read returns
 *    the right bytes and the trace records it without touching the released buffer's record
 *    (a heap use after free under ASan before the fix).
 * Every kernel's results are read back and compared with the same arithmetic done here, so a
 * trace or a summary of work that did not run correctly cannot pass. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CUBEC_SOURCE_DIR
#error "CUBEC_SOURCE_DIR (the source tree, for check_trace.py) is set by tests/CMakeLists.txt"
#endif

#define WORDS 256u /* per buffer: 4 groups of 64 */
#define PRODUCES 3u
#define CONSUMES 5u /* the first consumes a buffer written by cubec_write, the rest produce's */
#define MAX_STREAMS 128u /* the default streaming.max_streams: a stream's slot is number % it */

static char trace_path[4096];
static char log_path[4096];

/* Each test sets the environment of the device it opens; whatever happens, it is gone after,
 * and so are the files (a failed test leaves them otherwise). */
static int cleanup(void **state)
{
    (void)state;
    unsetenv("CUBEC_TRACE");
    unsetenv("CUBEC_LOG");
    unsetenv("CUBEC_LOG_FILE");
    if (trace_path[0]) unlink(trace_path);
    if (log_path[0]) unlink(log_path);
    return 0;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
    text[size] = 0;
    fclose(f);
    return text;
}

static void expect_words(cubec_device *d, cubec_stream s, cubec_buffer b, const uint32_t *want,
                         const char *what)
{
    uint32_t got[WORDS];
    ASSERT_OK(cubec_read(d, s, b, 0, got, sizeof got));
    for (uint32_t i = 0; i < WORDS; i++)
        if (got[i] != want[i]) fail_msg("%s: word %u is %u, expected %u", what, i, got[i], want[i]);
}

/* Produce on stream A, consume on stream B (each consume reads a buffer that A created and wrote,
 * or one that B wrote from the host), read everything back, close: the trace holds every launch,
 * on both streams' rows, and the host's writes and reads. */
static void test_trace_two_streams(void **state)
{
    (void)state;
    snprintf(trace_path, sizeof trace_path, "%s/cubec_test_trace_file_%d.json", test_tmp_dir(),
             (int)getpid());
    unlink(trace_path);
    assert_int_equal(setenv("CUBEC_TRACE", trace_path, 1), 0);
    cubec_device *d = test_device_open();
    cubec_stream a, b;
    ASSERT_OK(cubec_stream_new(d, &a));
    ASSERT_OK(cubec_stream_new(d, &b));
    cubec_kernel produce = make_kernel(d, "produce", produce_src);
    cubec_kernel consume = make_kernel(d, "consume", consume_src);

    /* produce: p[k][i] = i * (k + 2) + 7k, each on its own buffer of stream A. */
    cubec_buffer p[PRODUCES];
    static uint32_t p_want[PRODUCES][WORDS];
    for (uint32_t k = 0; k < PRODUCES; k++) {
        ASSERT_OK(cubec_buffer_create(d, a, WORDS * 4, &p[k]));
        ASSERT_OK(uint_launch(d, a, produce, p[k], NONE, WORDS, k + 2, 7 * k));
        for (uint32_t i = 0; i < WORDS; i++)
            p_want[k][i] = i * (k + 2) + 7 * k;
    }

    /* The host's input, written on stream B. */
    static uint32_t host_in[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        host_in[i] = 0x9e3779b9u * (i + 1);
    cubec_buffer in;
    ASSERT_OK(cubec_buffer_create(d, b, WORDS * 4, &in));
    ASSERT_OK(cubec_write(d, b, in, 0, host_in, sizeof host_in));

    /* consume: y[j][i] = x[i] * (j + 3) + j, x = the host's input for j = 0, else p[j % 3]. */
    cubec_buffer y[CONSUMES];
    static uint32_t y_want[CONSUMES][WORDS];
    for (uint32_t j = 0; j < CONSUMES; j++) {
        ASSERT_OK(cubec_buffer_create(d, b, WORDS * 4, &y[j]));
        const uint32_t *x = j == 0 ? host_in : p_want[j % PRODUCES];
        cubec_buffer input = j == 0 ? in : p[j % PRODUCES];
        ASSERT_OK(uint_launch(d, b, consume, input, y[j], WORDS, j + 3, j));
        for (uint32_t i = 0; i < WORDS; i++)
            y_want[j][i] = x[i] * (j + 3) + j;
    }

    for (uint32_t j = 0; j < CONSUMES; j++)
        expect_words(d, b, y[j], y_want[j], "consume");
    for (uint32_t k = 0; k < PRODUCES; k++)
        expect_words(d, a, p[k], p_want[k], "produce");

    for (uint32_t k = 0; k < PRODUCES; k++)
        ASSERT_OK(cubec_buffer_release(d, p[k]));
    for (uint32_t j = 0; j < CONSUMES; j++)
        ASSERT_OK(cubec_buffer_release(d, y[j]));
    ASSERT_OK(cubec_buffer_release(d, in));
    ASSERT_OK(cubec_kernel_destroy(d, produce));
    ASSERT_OK(cubec_kernel_destroy(d, consume));
    test_device_close(d); /* writes the trace */
    unsetenv("CUBEC_TRACE");

    /* The validator: the file's structure, and exactly the launches made (no fill or copy here,
     * which would add launches of the builtin kernels). */
    char command[8192];
    snprintf(command, sizeof command,
             "python3 '%s/tests/profiling/check_trace.py' '%s' --launches %u --min-streams 2 "
             "--submit-streams "
             "--kernel produce --kernel consume",
             CUBEC_SOURCE_DIR, trace_path, PRODUCES + CONSUMES);
    int rc = system(command);
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
        fail_msg("check_trace.py refused %s (status %d): %s", trace_path, rc, command);

    /* Each stream's row is named after its number (the id's low 48 bits) and its slot. */
    char *text = read_text(trace_path);
    const cubec_stream streams[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        uint64_t number = streams[i] & 0xffffffffffffull;
        char row[128];
        snprintf(row, sizeof row, "\"args\":{\"name\":\"stream %" PRIu64 " (slot %" PRIu64 ")\"}",
                 number, number % MAX_STREAMS);
        if (!strstr(text, row)) fail_msg("%s has no row named %s", trace_path, row);
    }
    /* The host's transfers are on the host row. */
    assert_non_null(strstr(text, "\"cat\":\"write\""));
    assert_non_null(strstr(text, "\"cat\":\"read\""));
    free(text);
}

/* The counts of kernel `name` summed over every summary table in `text` (the summary is logged at
 * a sync at most once a second and at close, each table covering the launches since the last).
 * Each table: a header line "kernel count total ms mean us share %", one row per kernel, then a
 * "total" row whose count must be the sum of the rows'. */
/* How often `needle` occurs in `text`. */
static unsigned occurrences(const char *text, const char *needle)
{
    unsigned n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

#define GRAPH_STEPS 6u /* launches of "step" in the graph */
#define REPLAYS 5u     /* back to back: the two copies of the graph are reused and waited for */

/* The begin times ("ts") of the events of `text` whose line holds `a` and `b`, in file order,
 * at most `max`; returns how many. */
static unsigned event_begins(const char *text, const char *a, const char *b, double *out,
                             unsigned max)
{
    unsigned n = 0;
    for (const char *line = text; *line && n < max;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        const char *ts = strstr(buf, "\"ts\":");
        if (strstr(buf, a) && strstr(buf, b) && ts && sscanf(ts + 5, "%lf", &out[n]) == 1) n++;
        line += len + (end != NULL);
    }
    return n;
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* A captured graph replayed REPLAYS times: the trace holds the warm-up's launches and every
 * launch of every replay, each replayed one carrying the graph's number, and a replay event per
 * replay on the host row; the launches of the i-th replay (in time) begin no earlier than the
 * i-th replay call (the GPU had nothing of it to run before; a device clock converted too early
 * breaks this). */
static void test_trace_graph_replays(void **state)
{
    (void)state;
    snprintf(trace_path, sizeof trace_path, "%s/cubec_test_trace_graph_%d.json", test_tmp_dir(),
             (int)getpid());
    unlink(trace_path);
    assert_int_equal(setenv("CUBEC_TRACE", trace_path, 1), 0);
    cubec_device *d = test_device_open();
    cubec_stream s = new_stream(d);
    cubec_kernel step = make_kernel(d, "step", step_src);
    cubec_buffer v;
    ASSERT_OK(cubec_buffer_create(d, s, WORDS * 4, &v));
    static uint32_t want[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        want[i] = i;
    ASSERT_OK(cubec_write(d, s, v, 0, want, sizeof want));
    ASSERT_OK(cubec_graph_prepare(d, s));
    for (uint32_t k = 0; k < GRAPH_STEPS; k++) /* the warm-up runs */
        ASSERT_OK(uint_launch(d, s, step, v, NONE, WORDS, 3, k));
    ASSERT_OK(cubec_graph_begin(d, s));
    for (uint32_t k = 0; k < GRAPH_STEPS; k++) /* recorded */
        ASSERT_OK(uint_launch(d, s, step, v, NONE, WORDS, 3, k));
    cubec_graph g;
    ASSERT_OK(cubec_graph_end(d, s, &g));
    for (uint32_t r = 0; r < REPLAYS; r++)
        ASSERT_OK(cubec_graph_replay(d, s, g));
    for (uint32_t r = 0; r < 1 + REPLAYS; r++)
        for (uint32_t k = 0; k < GRAPH_STEPS; k++)
            for (uint32_t i = 0; i < WORDS; i++)
                want[i] = want[i] * 3 + k;
    expect_words(d, s, v, want, "step");
    /* An asynchronous read shows on the host row from the call to the bytes being there. */
    static uint32_t got[WORDS];
    cubec_event *ev = NULL;
    ASSERT_OK(cubec_read_async(d, s, v, 0, got, sizeof got, &ev));
    ASSERT_OK(cubec_event_wait(ev));
    cubec_event_free(ev);
    for (uint32_t i = 0; i < WORDS; i++)
        if (got[i] != want[i])
            fail_msg("async read: word %u is %u, expected %u", i, got[i], want[i]);
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    ASSERT_OK(cubec_buffer_release(d, v));
    ASSERT_OK(cubec_kernel_destroy(d, step));
    test_device_close(d);
    unsetenv("CUBEC_TRACE");

    char command[8192];
    snprintf(command, sizeof command,
             "python3 '%s/tests/profiling/check_trace.py' '%s' --launches %u --min-streams 1 "
             "--kernel step",
             CUBEC_SOURCE_DIR, trace_path, GRAPH_STEPS * (1 + REPLAYS));
    int rc = system(command);
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
        fail_msg("check_trace.py refused %s (status %d): %s", trace_path, rc, command);
    char *text = read_text(trace_path);
    /* The replayed launches name their graph (#1: the device's first); the replays themselves
     * are host events that name it too. */
    unsigned replayed = occurrences(text, "\"cat\":\"launch\"") - GRAPH_STEPS;
    assert_int_equal(replayed, GRAPH_STEPS * REPLAYS);
    assert_int_equal(occurrences(text, "\"graph\":1"), GRAPH_STEPS * REPLAYS + REPLAYS);
    assert_int_equal(occurrences(text, "{\"name\":\"replay\""), REPLAYS);
    assert_int_equal(occurrences(text, "{\"name\":\"read (async start)\""), 1);
    assert_int_equal(occurrences(text, "{\"name\":\"read (async)\""), 1);
    double calls[REPLAYS], launches[GRAPH_STEPS * REPLAYS];
    assert_int_equal(event_begins(text, "{\"name\":\"replay\"", "\"graph\":1", calls, REPLAYS),
                     REPLAYS);
    assert_int_equal(
        event_begins(text, "\"cat\":\"launch\"", "\"graph\":1", launches, GRAPH_STEPS * REPLAYS),
        GRAPH_STEPS * REPLAYS);
    qsort(calls, REPLAYS, sizeof calls[0], by_value);
    qsort(launches, GRAPH_STEPS * REPLAYS, sizeof launches[0], by_value);
    for (uint32_t i = 0; i < GRAPH_STEPS * REPLAYS; i++)
        if (launches[i] < calls[i / GRAPH_STEPS])
            fail_msg("replayed launch %u (in time) begins at %.3f us, before replay %u was called "
                     "(%.3f us)",
                     i, launches[i], i / GRAPH_STEPS, calls[i / GRAPH_STEPS]);
    free(text);
}

static uint64_t summary_count(const char *text, const char *name, int *tables)
{
    uint64_t sum = 0, table_sum = 0;
    int in_table = 0;
    *tables = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[256], first[128], second[64];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        unsigned long long count = 0;
        int fields = sscanf(buf, "%127s %63s", first, second);
        if (fields == 2 && !strcmp(first, "kernel") && !strcmp(second, "count")) {
            in_table = 1;
            table_sum = 0;
            (*tables)++;
        } else if (in_table && sscanf(buf, "%127s %llu", first, &count) == 2) {
            if (!strcmp(first, "total")) {
                if (count != table_sum)
                    fail_msg("a summary's total count is %llu, its rows add up to %" PRIu64, count,
                             table_sum);
                in_table = 0;
            } else {
                table_sum += count;
                if (!strcmp(first, name)) sum += count;
            }
        } else {
            in_table = 0;
        }
        line += len + (end != NULL);
    }
    return sum;
}

/* 3 launches of "alpha" and 5 of "beta", a sync, a close: the summary in the log file counts
 * them. */
static void test_summary_counts(void **state)
{
    (void)state;
    snprintf(log_path, sizeof log_path, "%s/cubec_test_summary_%d.log", test_tmp_dir(),
             (int)getpid());
    unlink(log_path); /* the logger appends */
    assert_int_equal(setenv("CUBEC_LOG", "profiling=summary", 1), 0);
    assert_int_equal(setenv("CUBEC_LOG_FILE", log_path, 1), 0);
    cubec_device *d = test_device_open();
    cubec_kernel alpha = make_kernel(d, "alpha", step_src);
    cubec_kernel beta = make_kernel(d, "beta", step_src);

    /* v = v * mul + add, applied 3 times to va and 5 times to vb. */
    static uint32_t va_want[WORDS], vb_want[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        va_want[i] = vb_want[i] = i * 31u + 5u;
    cubec_buffer va, vb;
    ASSERT_OK(cubec_buffer_from(d, CUBEC_STREAM_CURRENT, va_want, sizeof va_want, &va));
    ASSERT_OK(cubec_buffer_from(d, CUBEC_STREAM_CURRENT, vb_want, sizeof vb_want, &vb));
    for (uint32_t n = 0; n < 3; n++) {
        ASSERT_OK(uint_launch(d, CUBEC_STREAM_CURRENT, alpha, va, NONE, WORDS, 3 + n, n));
        for (uint32_t i = 0; i < WORDS; i++)
            va_want[i] = va_want[i] * (3 + n) + n;
    }
    for (uint32_t n = 0; n < 5; n++) {
        ASSERT_OK(uint_launch(d, CUBEC_STREAM_CURRENT, beta, vb, NONE, WORDS, 5 + n, 2 * n));
        for (uint32_t i = 0; i < WORDS; i++)
            vb_want[i] = vb_want[i] * (5 + n) + 2 * n;
    }
    ASSERT_OK(cubec_sync(d, CUBEC_STREAM_CURRENT));
    expect_words(d, CUBEC_STREAM_CURRENT, va, va_want, "alpha");
    expect_words(d, CUBEC_STREAM_CURRENT, vb, vb_want, "beta");
    ASSERT_OK(cubec_buffer_release(d, va));
    ASSERT_OK(cubec_buffer_release(d, vb));
    ASSERT_OK(cubec_kernel_destroy(d, alpha));
    ASSERT_OK(cubec_kernel_destroy(d, beta));
    test_device_close(d); /* logs what the last summary did not */
    unsetenv("CUBEC_LOG");
    unsetenv("CUBEC_LOG_FILE");

    char *text = read_text(log_path);
    int tables = 0;
    uint64_t alpha_count = summary_count(text, "alpha", &tables);
    uint64_t beta_count = summary_count(text, "beta", &tables);
    if (tables < 1) fail_msg("%s holds no kernel summary:\n%s", log_path, text);
    if (alpha_count != 3 || beta_count != 5)
        fail_msg("the summary counts alpha %" PRIu64 " and beta %" PRIu64 " times (expected 3 and "
                 "5):\n%s",
                 alpha_count, beta_count, text);
    assert_non_null(strstr(text, "kernel summary"));
    free(text);
}

typedef struct releaser {
    cubec_device *d;
    cubec_buffer v;
    atomic_int reading; /* the main thread is about to wait in cubec_read */
    cubec_status result;
} releaser;

static void *release_during_read(void *arg)
{
    releaser *r = arg;
    while (!atomic_load(&r->reading))
        sched_yield();
    /* Give the read time to drop the device lock in its wait (the GPU runs for much longer). */
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    r->result = cubec_buffer_release(r->d, r->v);
    return NULL;
}

/* With the trace on, a read waits for a long kernel (the device lock is dropped in the wait)
 * while another thread releases the buffer: the read keeps the memory alive and returns the
 * kernel's results, and its trace event is written from what was known before the wait. */
static void test_trace_read_while_buffer_released(void **state)
{
    (void)state;
    snprintf(trace_path, sizeof trace_path, "%s/cubec-test-trace-release-%d.json", test_tmp_dir(),
             (int)getpid());
    setenv("CUBEC_TRACE", trace_path, 1);
    cubec_device *d = test_device_open();
    cubec_kernel busy;
    const cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "busy", .glsl = busy_src};
    ASSERT_OK(cubec_kernel_create(d, &kd, &busy));
    enum { BUSY_WORDS = 64u * 1024u, STEPS = 2000u };
    uint32_t *init = malloc(BUSY_WORDS * sizeof *init), *got = malloc(BUSY_WORDS * sizeof *got);
    assert_non_null(init);
    assert_non_null(got);
    for (uint32_t i = 0; i < BUSY_WORDS; i++)
        init[i] = i * 7u + 3u;
    releaser r = {.d = d};
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, BUSY_WORDS * 4u, &r.v));
    ASSERT_OK(cubec_write(d, CUBEC_STREAM_CURRENT, r.v, 0, init, BUSY_WORDS * 4u));
    ASSERT_OK(busy_launch(d, CUBEC_STREAM_CURRENT, busy, r.v, BUSY_WORDS, STEPS));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_during_read, &r), 0);
    atomic_store(&r.reading, 1);
    ASSERT_OK(cubec_read(d, CUBEC_STREAM_CURRENT, r.v, 0, got, BUSY_WORDS * 4u));
    pthread_join(t, NULL);
    ASSERT_OK(r.result);
    for (uint32_t i = 0; i < BUSY_WORDS; i++) {
        uint32_t want = init[i];
        for (uint32_t k = 0; k < STEPS; k++)
            want = want * LCG_MUL + LCG_ADD;
        if (got[i] != want) fail_msg("word %u is %u, expected %u", i, got[i], want);
    }
    free(init);
    free(got);
    ASSERT_OK(cubec_kernel_destroy(d, busy));
    test_device_close(d);
    char *trace = read_text(trace_path);
    assert_non_null(strstr(trace, "\"read\""));
    free(trace);
}

/* A trace file the program removed after its device closed stays removed when a device then
 * traces to another path (and at exit: the ctest fixture test_tmp_empty checks that). Before the
 * fix the process-wide trace was written again when it was replaced, recreating the file. */
static void test_removed_trace_stays_removed(void **state)
{
    (void)state;
    snprintf(trace_path, sizeof trace_path, "%s/cubec_test_trace_first_%d.json", test_tmp_dir(),
             (int)getpid());
    setenv("CUBEC_TRACE", trace_path, 1);
    test_device_close(test_device_open());
    assert_int_equal(access(trace_path, F_OK), 0); /* written at close */
    assert_int_equal(unlink(trace_path), 0);
    char second[4096];
    snprintf(second, sizeof second, "%s/cubec_test_trace_second_%d.json", test_tmp_dir(),
             (int)getpid());
    setenv("CUBEC_TRACE", second, 1);
    test_device_close(test_device_open());
    int first_back = access(trace_path, F_OK) == 0;
    unlink(second);
    if (first_back) fail_msg("%s came back after it was removed", trace_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_trace_two_streams, cleanup),
        cmocka_unit_test_teardown(test_summary_counts, cleanup),
        cmocka_unit_test_teardown(test_trace_graph_replays, cleanup),
        cmocka_unit_test_teardown(test_trace_read_while_buffer_released, cleanup),
        cmocka_unit_test_teardown(test_removed_trace_stays_removed, cleanup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
