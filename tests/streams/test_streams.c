/* Logical streams end to end on the default device (lavapipe in CI) with the validation layer on:
 * producer and consumer on different streams, release-and-reuse while a consumer is still queued,
 * host reads and writes across streams, many streams folding onto few slots, the `single` policy
 * and the `sequential` strategy, and cubec_sync of one stream; at the end, regression tests for
 * bugs found on the way (metadata arena growth, host ring chunk reuse). Every result is compared
 * with a CPU reference computed here; nothing is synchronised beyond what the stream rules promise
 * (cubec.h, "Streams"). */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include "server/device.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The shared kernels (uint_kernels.h) and more of the same shape below. */
#define KERNEL_HEAD UINT_KERNEL_HEAD
#define KERNEL_INFO UINT_KERNEL_INFO

typedef struct kernels {
    cubec_kernel produce, consume, step;
} kernels;

static kernels kernels_create(cubec_device *d)
{
    kernels k;
    uint_kernels_create(d, &k.produce, &k.consume, &k.step);
    return k;
}

static void kernels_destroy(cubec_device *d, kernels k)
{
    uint_kernels_destroy(d, k.produce, k.consume, k.step);
}

static void cpu_step(uint32_t *v, uint32_t n, uint32_t mul, uint32_t add)
{
    cpu_consume(v, v, n, mul, add);
}

/* Reads `n` words of `b` on stream `s` and compares them with `want`, naming the first
 * difference. */
static void expect_words(cubec_device *d, cubec_stream s, cubec_buffer b, const uint32_t *want,
                         uint32_t n, const char *what)
{
    expect_range_in(d, s, b, n, 0, n, want, what);
}

/* Opens the test device with CUBEC_* variables set only for this open. */
static cubec_device *open_with(const char *key1, const char *value1, const char *key2,
                               const char *value2)
{
    if (key1) setenv(key1, value1, 1);
    if (key2) setenv(key2, value2, 1);
    cubec_device *d = test_device_open();
    if (key1) unsetenv(key1);
    if (key2) unsetenv(key2);
    return d;
}

/* Stream ids: distinct, never CUBEC_STREAM_CURRENT, the current one stable per thread. */
static void test_stream_ids(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    enum { N = 64 };
    cubec_stream ids[N + 1];
    for (uint32_t i = 0; i < N; i++)
        ids[i] = new_stream(d);
    ASSERT_OK(cubec_stream_get_current(d, &ids[N]));
    assert_true(ids[N] != CUBEC_STREAM_CURRENT);
    for (uint32_t i = 0; i <= N; i++)
        for (uint32_t j = i + 1; j <= N; j++)
            if (ids[i] == ids[j])
                fail_msg("streams %u and %u are both 0x%llx", i, j, (unsigned long long)ids[i]);
    cubec_stream again;
    ASSERT_OK(cubec_stream_get_current(d, &again));
    assert_true(again == ids[N]);
    test_device_close(d);
}

/* A kernel on stream A produces X; a kernel on stream B consumes it into Y; Y is read on B. No
 * sync in between: the launch on B of A's buffer runs after A's queued work. Each round has its
 * own X and Y so that no write on A can overtake a read queued on B. */
static void test_producer_consumer(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    kernels k = kernels_create(d);
    enum { N = 5000, ROUNDS = 6 };
    cubec_stream a = new_stream(d), b = new_stream(d);
    cubec_buffer x[ROUNDS], y[ROUNDS];
    uint32_t *hx = malloc(N * 4), *want = malloc(N * 4);
    for (uint32_t r = 0; r < ROUNDS; r++) {
        ASSERT_OK(cubec_buffer_create(d, a, N * 4, &x[r]));
        ASSERT_OK(cubec_buffer_create(d, b, N * 4, &y[r]));
        /* A chain on A: produce, then three dependent steps. */
        ASSERT_OK(uint_launch(d, a, k.produce, x[r], NONE, N, 7 + r, 11));
        for (uint32_t j = 0; j < 3; j++)
            ASSERT_OK(uint_launch(d, a, k.step, x[r], NONE, N, 3, r * 100 + j));
        ASSERT_OK(uint_launch(d, b, k.consume, x[r], y[r], N, 5, r));
    }
    for (uint32_t r = 0; r < ROUNDS; r++) {
        cpu_produce(hx, N, 7 + r, 11);
        for (uint32_t j = 0; j < 3; j++)
            cpu_step(hx, N, 3, r * 100 + j);
        cpu_consume(hx, want, N, 5, r);
        char what[64];
        snprintf(what, sizeof what, "consumer on B, round %u", r);
        expect_words(d, b, y[r], want, N, what);
        ASSERT_OK(cubec_buffer_release(d, x[r]));
        ASSERT_OK(cubec_buffer_release(d, y[r]));
    }
    free(hx);
    free(want);
    kernels_destroy(d, k);
    test_device_close(d);
}

/* A creates X; B queues a kernel reading X into Y; A releases X at once and creates buffers of
 * the same size, writing garbage into them (host writes, fills and kernels). X's memory must not
 * be reused before B's kernel has run: B's result is the X-based one. With `flush`, B's work is
 * submitted (but not waited for) before the release. */
static void release_and_reuse(int flush)
{
    cubec_device *d = test_device_open();
    kernels k = kernels_create(d);
    enum { N = 4096, ROUNDS = 4, REUSE = 6 };
    cubec_stream a = new_stream(d), b = new_stream(d);
    uint32_t *hx = malloc(N * 4), *want = malloc(N * 4), *garbage = malloc(N * 4);
    uint32_t seed = 12345;
    for (uint32_t i = 0; i < N; i++)
        garbage[i] = 0xdead0000u | (test_rand(&seed) & 0xffff);
    cubec_buffer y[ROUNDS];
    for (uint32_t r = 0; r < ROUNDS; r++) {
        for (uint32_t i = 0; i < N; i++)
            hx[i] = test_rand(&seed);
        cubec_buffer x;
        ASSERT_OK(cubec_buffer_from(d, a, hx, N * 4, &x));
        /* Half of the rounds also queue a kernel on A that writes X before B reads it. */
        if (r % 2) {
            ASSERT_OK(uint_launch(d, a, k.step, x, NONE, N, 9, r));
            cpu_step(hx, N, 9, r);
        }
        ASSERT_OK(cubec_buffer_create(d, b, N * 4, &y[r]));
        ASSERT_OK(uint_launch(d, b, k.consume, x, y[r], N, 3, 1000 + r));
        cpu_consume(hx, want, N, 3, 1000 + r);
        if (flush) ASSERT_OK(cubec_flush(d, b));
        ASSERT_OK(cubec_buffer_release(d, x));
        /* Reuse on A: same size, garbage by every kind of write. */
        cubec_buffer again[REUSE];
        for (uint32_t j = 0; j < REUSE; j++) {
            ASSERT_OK(cubec_buffer_create(d, a, N * 4, &again[j]));
            if (j % 3 == 0) ASSERT_OK(cubec_write(d, a, again[j], 0, garbage, N * 4));
            if (j % 3 == 1) ASSERT_OK(cubec_fill(d, a, again[j], 0, N * 4, 0xbadbad00u + j));
            if (j % 3 == 2) ASSERT_OK(uint_launch(d, a, k.produce, again[j], NONE, N, 0, 0xfeedu));
        }
        /* The first garbage buffer reads back as garbage (the writes did land somewhere). */
        expect_words(d, a, again[0], garbage, N, "garbage buffer on A");
        for (uint32_t j = 0; j < REUSE; j++)
            ASSERT_OK(cubec_buffer_release(d, again[j]));
        char what[64];
        snprintf(what, sizeof what, "B's result after A reused X's size, round %u", r);
        expect_words(d, b, y[r], want, N, what);
    }
    for (uint32_t r = 0; r < ROUNDS; r++)
        ASSERT_OK(cubec_buffer_release(d, y[r]));
    free(hx);
    free(want);
    free(garbage);
    kernels_destroy(d, k);
    test_device_close(d);
}

static void test_release_and_reuse_queued(void **state)
{
    (void)state;
    release_and_reuse(0);
}

static void test_release_and_reuse_flushed(void **state)
{
    (void)state;
    release_and_reuse(1);
}

/* The consumer's queued work outlives the owner releasing every buffer it gave it: each round A
 * produces X, B consumes it into its own Y and steps Y, A releases X at once and fills a new
 * buffer that may take X's place. All Ys are read at the end. */
static void test_release_all_owner_buffers_while_queued(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    kernels k = kernels_create(d);
    enum { N = 1024, COUNT = 12 };
    cubec_stream a = new_stream(d), b = new_stream(d);
    cubec_buffer y[COUNT];
    uint32_t *want = malloc((size_t)COUNT * N * 4), *tmp = malloc(N * 4);
    for (uint32_t c = 0; c < COUNT; c++) {
        cubec_buffer x;
        ASSERT_OK(cubec_buffer_create(d, a, N * 4, &x));
        ASSERT_OK(uint_launch(d, a, k.produce, x, NONE, N, c + 1, c));
        cpu_produce(tmp, N, c + 1, c);
        ASSERT_OK(cubec_buffer_create(d, b, N * 4, &y[c]));
        ASSERT_OK(uint_launch(d, b, k.consume, x, y[c], N, 2, c)); /* y = 2x + c */
        cpu_consume(tmp, want + (size_t)c * N, N, 2, c);
        ASSERT_OK(uint_launch(d, b, k.step, y[c], NONE, N, 5, 1)); /* y = 5y + 1 */
        cpu_step(want + (size_t)c * N, N, 5, 1);
        ASSERT_OK(cubec_buffer_release(d, x));
        cubec_buffer z;
        ASSERT_OK(cubec_buffer_create(d, a, N * 4, &z));
        ASSERT_OK(cubec_fill(d, a, z, 0, N * 4, 0xffffffffu));
        ASSERT_OK(cubec_buffer_release(d, z));
    }
    for (uint32_t c = 0; c < COUNT; c++) {
        char what[64];
        snprintf(what, sizeof what, "Y of round %u after the owner released X", c);
        expect_words(d, b, y[c], want + (size_t)c * N, N, what);
        ASSERT_OK(cubec_buffer_release(d, y[c]));
    }
    free(want);
    free(tmp);
    kernels_destroy(d, k);
    test_device_close(d);
}

/* Host reads and writes across streams, without any sync:
 *  - a kernel on A writes X (A's buffer); cubec_read on B sees it;
 *  - a kernel on A writes Y (B's buffer: A is the queued writer); cubec_read on B and on a third
 *    stream C see it;
 *  - cubec_write and cubec_fill on B of A's buffer land after A's queued kernel;
 *  - cubec_copy on C from A's buffer into B's buffer sees A's queued work. */
static void test_reads_and_writes_across_streams(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    kernels k = kernels_create(d);
    enum { N = 3000 };
    cubec_stream a = new_stream(d), b = new_stream(d), c = new_stream(d);
    uint32_t *want = malloc(N * 4), *part = malloc(N * 4);
    cubec_buffer x, y, z;
    ASSERT_OK(cubec_buffer_create(d, a, N * 4, &x));
    ASSERT_OK(cubec_buffer_create(d, b, N * 4, &y));
    ASSERT_OK(cubec_buffer_create(d, b, N * 4, &z));

    ASSERT_OK(uint_launch(d, a, k.produce, x, NONE, N, 13, 2));
    for (uint32_t j = 0; j < 5; j++)
        ASSERT_OK(uint_launch(d, a, k.step, x, NONE, N, 3, j));
    cpu_produce(want, N, 13, 2);
    for (uint32_t j = 0; j < 5; j++)
        cpu_step(want, N, 3, j);
    expect_words(d, b, x, want, N, "read on B of A's buffer after A's kernels");

    /* A writes B's buffer: the read on B (the owner) must wait for A, the queued writer. */
    ASSERT_OK(uint_launch(d, a, k.produce, y, NONE, N, 17, 5));
    ASSERT_OK(uint_launch(d, a, k.step, y, NONE, N, 7, 1));
    uint32_t *wy = malloc(N * 4);
    cpu_produce(wy, N, 17, 5);
    cpu_step(wy, N, 7, 1);
    expect_words(d, b, y, wy, N, "read on B of B's buffer written by a kernel on A");
    ASSERT_OK(uint_launch(d, a, k.step, y, NONE, N, 3, 3));
    cpu_step(wy, N, 3, 3);
    expect_words(d, c, y, wy, N, "read on C of B's buffer written by a kernel on A");

    /* A queues a kernel on X; B writes part of X from the host, then fills another part. */
    ASSERT_OK(uint_launch(d, a, k.step, x, NONE, N, 11, 4));
    cpu_step(want, N, 11, 4);
    for (uint32_t i = 0; i < 100; i++)
        part[i] = 0xc0de0000u + i;
    ASSERT_OK(cubec_write(d, b, x, 400 * 4, part, 100 * 4));
    memcpy(want + 400, part, 100 * 4);
    ASSERT_OK(uint_launch(d, a, k.step, x, NONE, N, 3, 9));
    cpu_step(want, N, 3, 9);
    ASSERT_OK(cubec_fill(d, b, x, 1000 * 4, 256 * 4, 0x5a5a5a5au));
    for (uint32_t i = 1000; i < 1256; i++)
        want[i] = 0x5a5a5a5au;
    expect_words(d, a, x, want, N, "A's buffer after A's kernels and B's write and fill");

    /* C copies A's buffer (after another queued kernel on A) into B's buffer Z. */
    ASSERT_OK(uint_launch(d, a, k.step, x, NONE, N, 5, 5));
    cpu_step(want, N, 5, 5);
    ASSERT_OK(cubec_copy(d, c, x, 0, z, 0, N * 4));
    expect_words(d, b, z, want, N, "copy on C of A's buffer into B's buffer");

    /* read_async on C of A's queued work. */
    ASSERT_OK(uint_launch(d, a, k.step, x, NONE, N, 3, 1));
    cpu_step(want, N, 3, 1);
    cubec_event *e = NULL;
    uint32_t *got = calloc(N, 4);
    ASSERT_OK(cubec_read_async(d, c, x, 0, got, N * 4, &e));
    ASSERT_OK(cubec_event_wait(e));
    cubec_event_free(e);
    assert_memory_equal(got, want, N * 4);

    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, y));
    ASSERT_OK(cubec_buffer_release(d, z));
    free(want);
    free(part);
    free(wy);
    free(got);
    kernels_destroy(d, k);
    test_device_close(d);
}

/* `nstreams` streams, each with a buffer it owns and a dependent chain of steps on it, all
 * interleaved; halfway every stream reads its neighbour's buffer from the host; at the end each
 * stream's kernel consumes its neighbour's buffer into a second buffer it owns, and everything is
 * read back on yet another stream. Returns the sum of allocations reported by every stream's
 * pools while all buffers are alive (see test_many_streams_fold). */
static uint64_t run_chains(cubec_device *d, uint32_t nstreams, uint32_t rounds)
{
    kernels k = kernels_create(d);
    enum { N = 700 };
    cubec_stream *s = calloc(nstreams, sizeof *s);
    cubec_buffer *b = calloc(nstreams, sizeof *b), *c = calloc(nstreams, sizeof *c);
    uint32_t *model = calloc((size_t)nstreams * N, 4), *cm = calloc((size_t)nstreams * N, 4);
    for (uint32_t i = 0; i < nstreams; i++) {
        s[i] = new_stream(d);
        uint32_t *m = model + (size_t)i * N;
        for (uint32_t j = 0; j < N; j++)
            m[j] = i * 100000 + j;
        ASSERT_OK(cubec_buffer_from(d, s[i], m, N * 4, &b[i]));
        ASSERT_OK(cubec_buffer_create(d, s[i], N * 4, &c[i]));
    }
    for (uint32_t r = 0; r < rounds; r++) {
        for (uint32_t i = 0; i < nstreams; i++) {
            uint32_t mul = 3 + 2 * ((i + r) % 4), add = i * 1000 + r;
            ASSERT_OK(uint_launch(d, s[i], k.step, b[i], NONE, N, mul, add));
            cpu_step(model + (size_t)i * N, N, mul, add);
        }
        if (r == rounds / 2)
            for (uint32_t i = 0; i < nstreams; i++) {
                uint32_t o = (i + 1) % nstreams;
                char what[80];
                snprintf(what, sizeof what, "stream %u reads stream %u's chain at round %u", i, o,
                         r);
                expect_words(d, s[i], b[o], model + (size_t)o * N, N, what);
            }
    }
    for (uint32_t i = 0; i < nstreams; i++) {
        uint32_t o = (i + 1) % nstreams;
        ASSERT_OK(uint_launch(d, s[i], k.consume, b[o], c[i], N, 7, i));
        cpu_consume(model + (size_t)o * N, cm + (size_t)i * N, N, 7, i);
    }
    uint64_t allocations = 0;
    for (uint32_t i = 0; i < nstreams; i++) {
        cubec_memory_report rep = CUBEC_MEMORY_REPORT_INIT;
        ASSERT_OK(cubec_memory_report_get(d, s[i], &rep));
        allocations += rep.allocations;
    }
    for (uint32_t i = 0; i < nstreams; i++) {
        uint32_t reader = (i + 5) % nstreams;
        char what[80];
        snprintf(what, sizeof what, "chain of stream %u read on stream %u", i, reader);
        expect_words(d, s[reader], b[i], model + (size_t)i * N, N, what);
        snprintf(what, sizeof what, "consumer on stream %u", i);
        expect_words(d, s[reader], c[i], cm + (size_t)i * N, N, what);
    }
    for (uint32_t i = 0; i < nstreams; i++) {
        ASSERT_OK(cubec_buffer_release(d, b[i]));
        ASSERT_OK(cubec_buffer_release(d, c[i]));
    }
    free(s);
    free(b);
    free(c);
    free(model);
    free(cm);
    kernels_destroy(d, k);
    return allocations;
}

/* 16 streams on 3 slots (CUBEC_MAX_STREAMS=3): the chains stay correct, and the streams share
 * pools: each stream's memory report shows the buffers of every stream on its slot. With 16
 * streams of 2 buffers each on 3 slots of sizes n1+n2+n3 = 16, the sum over streams of the
 * allocations reported is 2*(n1^2+n2^2+n3^2) >= 2*86 = 172; unfolded it would be 32. */
static void test_many_streams_fold_onto_few_slots(void **state)
{
    (void)state;
    cubec_device *d = open_with("CUBEC_MAX_STREAMS", "3", NULL, NULL);
    uint64_t allocations = run_chains(d, 16, 40);
    if (allocations < 172)
        fail_msg("the 16 streams' reports add up to %llu allocations: fewer than 3 slots "
                 "shared by 16 streams give (>= 172)",
                 (unsigned long long)allocations);
    /* Everything was released: no slot's pools hold an allocation (a fresh stream lands on one
     * of the 3 slots; 3 of them cover all). */
    for (uint32_t i = 0; i < 3; i++) {
        cubec_stream s = new_stream(d);
        cubec_memory_report rep = CUBEC_MEMORY_REPORT_INIT;
        ASSERT_OK(cubec_memory_cleanup(d, s));
        ASSERT_OK(cubec_memory_report_get(d, s, &rep));
        assert_int_equal(rep.allocations, 0);
    }
    test_device_close(d);
}

/* The same workload with the default number of slots: every stream has its own pools. */
static void test_many_streams_own_slots(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    uint64_t allocations = run_chains(d, 16, 40);
    assert_int_equal(allocations, 32);
    test_device_close(d);
}

/* CUBEC_STREAM_STRATEGY=sequential (and a small CUBEC_TASKS_MAX so that slots drain on their own
 * many times): the same results as interleave. */
static void test_sequential_strategy(void **state)
{
    (void)state;
    cubec_device *d = open_with("CUBEC_STREAM_STRATEGY", "sequential", "CUBEC_TASKS_MAX", "3");
    run_chains(d, 12, 30);
    test_device_close(d);
    d = open_with("CUBEC_STREAM_STRATEGY", "interleave", "CUBEC_TASKS_MAX", "3");
    run_chains(d, 12, 30);
    test_device_close(d);
    /* Folding and sequential together. */
    d = open_with("CUBEC_STREAM_STRATEGY", "sequential", "CUBEC_MAX_STREAMS", "2");
    run_chains(d, 7, 20);
    test_device_close(d);
}

typedef struct current_arg {
    cubec_device *d;
    cubec_stream id;
    cubec_kernel step;
    cubec_buffer v;
    uint32_t n;
    cubec_status st;
} current_arg;

static void *current_thread(void *p)
{
    current_arg *a = p;
    a->st = cubec_stream_get_current(a->d, &a->id);
    /* Queue a step on the current stream and return without waiting for it. */
    if (!a->st) a->st = uint_launch(a->d, CUBEC_STREAM_CURRENT, a->step, a->v, NONE, a->n, 3, 7);
    return NULL;
}

/* The thread's current stream under a policy; with a kernel queued on it by another thread. */
static void check_policy(cubec_device *d, int single)
{
    kernels k = kernels_create(d);
    enum { N = 512 };
    uint32_t *want = malloc(N * 4);
    for (uint32_t i = 0; i < N; i++)
        want[i] = i;
    cubec_buffer v;
    ASSERT_OK(cubec_buffer_from(d, CUBEC_STREAM_CURRENT, want, N * 4, &v));
    cubec_stream mine, mine_again;
    ASSERT_OK(cubec_stream_get_current(d, &mine));
    current_arg arg = {.d = d, .step = k.step, .v = v, .n = N};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, current_thread, &arg), 0);
    pthread_join(t, NULL);
    ASSERT_OK(arg.st);
    cpu_step(want, N, 3, 7);
    ASSERT_OK(cubec_stream_get_current(d, &mine_again));
    assert_true(mine == mine_again);
    if (single) {
        if (arg.id != mine)
            fail_msg("policy single: threads got streams 0x%llx and 0x%llx",
                     (unsigned long long)mine, (unsigned long long)arg.id);
    } else {
        if (arg.id == mine)
            fail_msg("policy per-thread: two threads share stream 0x%llx",
                     (unsigned long long)mine);
    }
    /* The other thread's queued step is seen by this thread's stream (ordered either way). */
    ASSERT_OK(uint_launch(d, CUBEC_STREAM_CURRENT, k.step, v, NONE, N, 5, 1));
    cpu_step(want, N, 5, 1);
    expect_words(d, CUBEC_STREAM_CURRENT, v, want, N, "steps from two threads");
    /* The explicit id of the current stream names the same stream. */
    expect_words(d, mine, v, want, N, "read on the explicit current id");
    ASSERT_OK(cubec_buffer_release(d, v));
    free(want);
    kernels_destroy(d, k);
}

static void test_single_policy(void **state)
{
    (void)state;
    cubec_device *d = open_with("CUBEC_STREAM_POLICY", "single", NULL, NULL);
    check_policy(d, 1);
    test_device_close(d);
}

static void test_per_thread_policy(void **state)
{
    (void)state;
    cubec_device *d = open_with("CUBEC_STREAM_POLICY", "per-thread", NULL, NULL);
    check_policy(d, 0);
    test_device_close(d);
    d = test_device_open(); /* the default */
    check_policy(d, 0);
    test_device_close(d);
}

/* Reads `buf` right after a cubec_sync of `s`. On unified memory the read copies straight out of
 * the mapped pages, so after the sync it must be complete at once (cubec_event_query does not
 * answer NOT_READY). A discrete GPU must first copy through staging (a DMA issued by the read
 * itself), so there the event is waited for; the data check that follows is the same. */
static void read_after_sync(cubec_device *d, cubec_stream s, cubec_buffer buf, void *dst,
                            uint64_t size, const char *name)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_event *e = NULL;
    ASSERT_OK(cubec_read_async(d, s, buf, 0, dst, size, &e));
    cubec_status q = info.unified_memory ? cubec_event_query(e) : cubec_event_wait(e);
    if (q) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", cubec_status_message(q));
        cubec_status_free(q);
        cubec_event_free(e);
        fail_msg("after cubec_sync(%s), a read of %s's buffer is not complete: %s", name, name,
                 msg);
    }
    cubec_event_free(e);
}

/* cubec_sync(d, s) waits for s's work: afterwards a read of what s wrote is complete at once
 * (cubec_event_query does not answer NOT_READY). A sync of another stream, and of a stream with
 * nothing queued, succeeds. */
static void test_sync_one_stream(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    kernels k = kernels_create(d);
    /* 256 workgroups per launch: lavapipe allocates a 4096-aligned block per workgroup it runs,
     * which ASan keeps in a 10 KiB chunk through its quarantine (tests must stay under 2 GB). */
    enum { N = 1 << 14, CHAIN = 40 };
    cubec_stream a = new_stream(d), b = new_stream(d), idle = new_stream(d);
    uint32_t *want = malloc(N * 4), *wb = malloc(N * 4), *got = malloc(N * 4);
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_create(d, a, N * 4, &x));
    ASSERT_OK(cubec_buffer_create(d, b, N * 4, &y));
    ASSERT_OK(cubec_sync(d, idle));
    ASSERT_OK(uint_launch(d, a, k.produce, x, NONE, N, 1, 0));
    cpu_produce(want, N, 1, 0);
    ASSERT_OK(uint_launch(d, b, k.produce, y, NONE, N, 2, 0));
    cpu_produce(wb, N, 2, 0);
    for (uint32_t j = 0; j < CHAIN; j++) {
        ASSERT_OK(uint_launch(d, a, k.step, x, NONE, N, 3, j));
        cpu_step(want, N, 3, j);
        ASSERT_OK(uint_launch(d, b, k.step, y, NONE, N, 5, j));
        cpu_step(wb, N, 5, j);
    }
    ASSERT_OK(cubec_sync(d, a));
    ASSERT_OK(cubec_sync(d, idle));
    read_after_sync(d, a, x, got, N * 4, "a");
    assert_memory_equal(got, want, N * 4);
    /* The same for B. */
    ASSERT_OK(cubec_sync(d, b));
    read_after_sync(d, b, y, got, N * 4, "b");
    assert_memory_equal(got, wb, N * 4);
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, y));
    free(want);
    free(wb);
    free(got);
    kernels_destroy(d, k);
    test_device_close(d);
}

/* --- Regression tests for bugs found while writing these tests ------------------------------ */

/* Bytes of live heap allocations (freed memory, and AddressSanitizer's quarantine, not counted). */
#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#ifdef HAVE_ASAN
size_t __sanitizer_get_current_allocated_bytes(void); /* <sanitizer/allocator_interface.h> */
static long heap_kib(void)
{
    return (long)(__sanitizer_get_current_allocated_bytes() / 1024);
}
#else
#include <malloc.h>
static long heap_kib(void)
{
    struct mallinfo2 m = mallinfo2();
    return (long)((m.uordblks + m.hblkhd) / 1024);
}
#endif

/* v[i] += add + pad[i % 64], with 60000 bytes of metadata: too large for push constants and for
 * the task record, so it waits in the slot's metadata arena until the task is recorded. (60000,
 * not 65536, so that metadata ring allocations never end exactly on a ring chunk boundary: see
 * test_large_metadata_chain for that.) */
static const char arena_info_src[] =
    KERNEL_HEAD "layout(std430, binding = 0) buffer V { uint v[]; };\n"
                "CUBEC_INFO(uint n; uint add; uint pad[14998];)\n"
                "void main() {\n"
                "  uint i = gl_GlobalInvocationID.x;\n"
                "  if (i < info.n) v[i] += info.add + info.pad[i % 64u];\n"
                "}\n";

/* Stream B queues launches with large metadata and never drains its own queue: the auto-drains
 * of stream A take it along (under Interleave a full slot drains with every pending slot). B's
 * metadata arena must be recycled once its tasks are recorded, not grow with every launch. */
static void test_metadata_arena_recycled_when_drained_by_another_slot(void **state)
{
    (void)state;
    cubec_device *d = open_with("CUBEC_TASKS_MAX", "2", NULL, NULL);
    kernels k = kernels_create(d);
    cubec_kernel big = make_kernel(d, "arena_info", arena_info_src);
    enum { N = 64, INFO = 60000, ITER = 1500, WARM = 100 };
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, big, &ki));
    assert_int_equal(ki.info_size, INFO);
    cubec_stream a = new_stream(d), b = new_stream(d);
    cubec_buffer xa, xb;
    uint32_t want_a[N], want_b[N];
    for (uint32_t i = 0; i < N; i++)
        want_a[i] = want_b[i] = i;
    ASSERT_OK(cubec_buffer_from(d, a, want_a, sizeof want_a, &xa));
    ASSERT_OK(cubec_buffer_from(d, b, want_b, sizeof want_b, &xb));
    uint32_t *info = calloc(INFO / 4, 4);
    info[0] = N;
    long before = 0;
    for (uint32_t it = 0; it < ITER; it++) {
        if (it == WARM) before = heap_kib();
        info[1] = it;
        for (uint32_t j = 0; j < 64; j++)
            info[2 + j] = it * 64 + j;
        cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                                .kernel = big,
                                .buffers = &xb,
                                .buffer_count = 1,
                                .info = info,
                                .info_size = INFO,
                                .groups = {1, 1, 1}};
        ASSERT_OK(cubec_launch(d, b, &ld));
        for (uint32_t i = 0; i < N; i++)
            want_b[i] += it + it * 64 + i % 64;
        /* Two launches on A: A is full (tasks_max 2) and drains, with B. */
        for (uint32_t j = 0; j < 2; j++) {
            ASSERT_OK(uint_launch(d, a, k.step, xa, NONE, N, 3, it));
            cpu_step(want_a, N, 3, it);
        }
    }
    long after = heap_kib();
    expect_words(d, a, xa, want_a, N, "A's chain");
    expect_words(d, b, xb, want_b, N, "B's chain with large metadata");
    free(info);
    ASSERT_OK(cubec_buffer_release(d, xa));
    ASSERT_OK(cubec_buffer_release(d, xb));
    ASSERT_OK(cubec_kernel_destroy(d, big));
    kernels_destroy(d, k);
    test_device_close(d);
    /* 1400 launches of 60000 bytes: 80 MiB if the arena is never recycled; a few KiB if it is. */
    assert_true(before > 0 && after > 0);
    if (after - before > 32 * 1024)
        fail_msg("the heap grew by %ld KiB over %d launches with %d bytes of metadata on "
                 "a stream whose queue is drained only by another stream's auto-drains: its "
                 "metadata arena is never recycled",
                 after - before, ITER - WARM, INFO);
}

/* v[i] = v[i] * 3 + add + pad[i % 64], with 64 KiB of metadata (through the metadata ring). */
static const char big_step_src[] =
    KERNEL_HEAD "layout(std430, binding = 0) buffer V { uint v[]; };\n"
                "CUBEC_INFO(uint n; uint add; uint pad[16382];)\n"
                "void main() {\n"
                "  uint i = gl_GlobalInvocationID.x;\n"
                "  if (i < info.n) v[i] = v[i] * 3u + info.add + info.pad[i % 64u];\n"
                "}\n";

/* A chain of launches whose metadata goes through the metadata ring, 64 KiB each, so that the
 * ring's chunks fill exactly and each new chunk is entered at its very start. The metadata of a
 * launch must not be overwritten before the GPU has run it, however far the host runs ahead
 * (large grids keep the GPU behind: 256 workgroups per launch, not more, since each costs a 10 KiB
 * chunk in ASan's quarantine on lavapipe, and the program must stay under 2 GB). */
static void test_large_metadata_chain(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel big = make_kernel(d, "big_step", big_step_src);
    enum { N = 1 << 14, LAUNCHES = 160 };
    uint32_t *want = malloc(N * 4);
    for (uint32_t i = 0; i < N; i++)
        want[i] = i;
    cubec_buffer v;
    ASSERT_OK(cubec_buffer_from(d, CUBEC_STREAM_CURRENT, want, N * 4, &v));
    uint32_t *info = calloc(16384, 4);
    info[0] = N;
    for (uint32_t it = 0; it < LAUNCHES; it++) {
        info[1] = it * 1000;
        for (uint32_t j = 0; j < 64; j++)
            info[2 + j] = it * 64 + j;
        cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                                .kernel = big,
                                .buffers = &v,
                                .buffer_count = 1,
                                .info = info,
                                .info_size = 65536,
                                .groups = {N / 64, 1, 1}};
        ASSERT_OK(cubec_launch(d, CUBEC_STREAM_CURRENT, &ld));
        for (uint32_t i = 0; i < N; i++)
            want[i] = want[i] * 3u + it * 1000 + it * 64 + i % 64;
    }
    uint32_t *got = malloc(N * 4);
    ASSERT_OK(cubec_read(d, CUBEC_STREAM_CURRENT, v, 0, got, N * 4));
    uint32_t first_wrong = N;
    for (uint32_t i = 0; i < N && first_wrong == N; i++)
        if (got[i] != want[i]) first_wrong = i;
    uint32_t g = first_wrong < N ? got[first_wrong] : 0,
             w = first_wrong < N ? want[first_wrong] : 0;
    free(got);
    free(info);
    free(want);
    ASSERT_OK(cubec_buffer_release(d, v));
    ASSERT_OK(cubec_kernel_destroy(d, big));
    test_device_close(d);
    if (first_wrong < N)
        fail_msg("chain with 64 KiB of metadata per launch: word %u is %u, expected %u (a launch "
                 "ran with the metadata of a later one)",
                 first_wrong, g, w);
}

/* The same ring logic carries host writes on discrete GPUs (CUBEC_FORCE_STAGING=1 takes that path
 * on lavapipe): six writes of one upload-ring chunk (16 MiB) each, the first four followed by
 * work that keeps the GPU behind. The fifth write wraps to chunk 0 and waits for the first; the
 * sixth enters chunk 1 at its start and must wait for the second write's copy too. */
static void test_staged_writes_lapping_the_upload_ring(void **state)
{
    (void)state;
    cubec_device *d = open_with("CUBEC_FORCE_STAGING", "1", NULL, NULL);
    cubec_kernel busy = make_kernel(d, "busy", busy_src);
    enum { WRITES = 6, SIZE = 16 << 20, BUSY_WORDS = 1 << 16 };
    cubec_stream s = new_stream(d);
    cubec_buffer work, b[WRITES];
    ASSERT_OK(cubec_buffer_create(d, s, BUSY_WORDS * 4, &work));
    ASSERT_OK(cubec_fill(d, s, work, 0, BUSY_WORDS * 4, 1));
    uint32_t *data = malloc(SIZE), *got = malloc(SIZE);
    uint32_t iters = 20000;
    for (uint32_t i = 0; i < WRITES; i++) {
        ASSERT_OK(cubec_buffer_create(d, s, SIZE, &b[i]));
        for (uint32_t j = 0; j < SIZE / 4; j++)
            data[j] = i * 0x01010101u + j;
        ASSERT_OK(cubec_write(d, s, b[i], 0, data, SIZE));
        if (i < 4) {
            ASSERT_OK(busy_launch(d, s, busy, work, BUSY_WORDS, iters)); /* keeps the GPU behind */
            ASSERT_OK(cubec_flush(d, s));
        }
    }
    uint32_t wrong = WRITES, wrong_word0 = 0;
    for (uint32_t i = 0; i < WRITES; i++) {
        ASSERT_OK(cubec_read(d, s, b[i], 0, got, SIZE));
        for (uint32_t j = 0; j < SIZE / 4; j++)
            data[j] = i * 0x01010101u + j;
        if (wrong == WRITES && memcmp(got, data, SIZE) != 0) {
            wrong = i;
            wrong_word0 = got[0];
        }
        ASSERT_OK(cubec_buffer_release(d, b[i]));
    }
    free(data);
    free(got);
    ASSERT_OK(cubec_buffer_release(d, work));
    ASSERT_OK(cubec_kernel_destroy(d, busy));
    test_device_close(d);
    if (wrong < WRITES)
        fail_msg("staged write %u did not land: word 0 is 0x%08x, expected 0x%08x (0x%08x = the "
                 "data of write %u, written into the same upload ring chunk before the copy of "
                 "write %u had run)",
                 wrong, wrong_word0, wrong * 0x01010101u, wrong_word0, wrong_word0 & 0xff, wrong);
}

/* Issue 11: stream ids that cubec did not hand out, and streams that share the slot of a stream
 * recording a graph. With the default 128 slots, the stream made 128 cubec_stream_new calls after
 * `s` shares its slot. While s records: a made-up id of this device that folds onto that slot is
 * refused (it used to be accepted and its launch recorded into s's graph); the neighbour's write,
 * launch, sync and read run at once and compute what the CPU model computes (they used to be
 * recorded or refused), and so does its replay of a graph it captured before; its graph calls
 * find no capture of its own and leave s's alone. The
 * graph holds s's launch only: its replays compute y from fresh inputs and never touch the
 * neighbour's buffer. */
static void test_neighbour_of_a_capture_runs_eagerly(void **state)
{
    (void)state;
    enum { N = 256 };
    cubec_device *d = test_device_open();
    kernels k = kernels_create(d);
    const uint32_t slots = server_stats_get(d).max_streams;
    cubec_stream s = new_stream(d), nb = 0;
    for (uint32_t i = 0; i < slots && !nb; i++) {
        cubec_stream c = new_stream(d);
        if (stream_number(c) % slots == stream_number(s) % slots) nb = c;
    }
    assert_true(nb != 0);
    const cubec_stream made_up = (s & 0xffff000000000000ull) | (stream_number(s) + slots * 4096ull);
    uint32_t rng = 1111;
    uint32_t xs[N], us[N], sentinel[N], want[N];
    for (uint32_t i = 0; i < N; i++) {
        xs[i] = test_rand(&rng);
        us[i] = test_rand(&rng);
        sentinel[i] = 0x5e5e0000u + i;
    }
    cubec_buffer x, y, u, w, v;
    ASSERT_OK(cubec_buffer_from(d, s, xs, sizeof xs, &x));
    ASSERT_OK(cubec_buffer_create(d, s, sizeof xs, &y));
    ASSERT_OK(cubec_buffer_create(d, nb, sizeof xs, &u));
    ASSERT_OK(cubec_buffer_from(d, nb, sentinel, sizeof sentinel, &w));
    ASSERT_OK(cubec_buffer_create(d, nb, sizeof xs, &v));

    /* The neighbour's own graph, captured before s's: v = u * 2 + 3. */
    cubec_graph gn;
    ASSERT_OK(cubec_write(d, nb, u, 0, sentinel, sizeof sentinel));
    ASSERT_OK(cubec_graph_prepare(d, nb));
    ASSERT_OK(uint_launch(d, nb, k.consume, u, v, N, 2, 3));
    ASSERT_OK(cubec_graph_begin(d, nb));
    ASSERT_OK(uint_launch(d, nb, k.consume, u, v, N, 2, 3));
    ASSERT_OK(cubec_graph_end(d, nb, &gn));

    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(uint_launch(d, s, k.consume, x, y, N, 3, 1)); /* the warm-up */
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(uint_launch(d, s, k.consume, x, y, N, 3, 1)); /* recorded */

    char needle[160];
    snprintf(needle, sizeof needle,
             "cubec_launch: stream 0x%016" PRIx64
             " was not created by cubec_stream_new on this device",
             made_up);
    ASSERT_ERROR(uint_launch(d, made_up, k.consume, u, w, N, 9, 9), CUBEC_INVALID_ARGUMENT, needle);

    /* The neighbour works as if no capture were open. */
    ASSERT_OK(cubec_write(d, nb, u, 0, us, sizeof us));
    ASSERT_OK(uint_launch(d, nb, k.consume, u, w, N, 5, 7));
    ASSERT_OK(cubec_sync(d, nb));
    cpu_consume(us, want, N, 5, 7);
    expect_words(d, nb, w, want, N, "the neighbour's launch inside s's capture window");
    ASSERT_OK(cubec_graph_replay(d, nb, gn));
    cpu_consume(us, want, N, 2, 3);
    expect_words(d, nb, v, want, N, "the neighbour's replay inside s's capture window");
    /* Its graph calls: it has no capture of its own, and s's goes on. */
    snprintf(needle, sizeof needle, "no graph capture is recording on stream %" PRIu64,
             stream_number(nb));
    cubec_graph g = {0};
    ASSERT_ERROR(cubec_graph_end(d, nb, &g), CUBEC_GRAPH_STATE, needle);
    ASSERT_ERROR(cubec_graph_begin(d, nb), CUBEC_GRAPH_STATE, "shares its slot");
    ASSERT_ERROR(cubec_graph_prepare(d, nb), CUBEC_GRAPH_STATE, "shares its slot");

    ASSERT_OK(cubec_graph_end(d, s, &g));
    ASSERT_OK(cubec_write(d, nb, w, 0, sentinel, sizeof sentinel));
    for (uint32_t r = 0; r < 3; r++) {
        for (uint32_t i = 0; i < N; i++)
            xs[i] = test_rand(&rng);
        ASSERT_OK(cubec_write(d, s, x, 0, xs, sizeof xs));
        ASSERT_OK(cubec_graph_replay(d, s, g));
        cpu_consume(xs, want, N, 3, 1);
        expect_words(d, s, y, want, N, "y after a replay");
        expect_words(d, nb, w, sentinel, N, "the neighbour's buffer after a replay");
    }
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    ASSERT_OK(cubec_graph_destroy(d, nb, gn));
    ASSERT_OK(cubec_buffer_release(d, v));
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, y));
    ASSERT_OK(cubec_buffer_release(d, u));
    ASSERT_OK(cubec_buffer_release(d, w));
    kernels_destroy(d, k);
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_ids),
        cmocka_unit_test(test_producer_consumer),
        cmocka_unit_test(test_release_and_reuse_queued),
        cmocka_unit_test(test_release_and_reuse_flushed),
        cmocka_unit_test(test_release_all_owner_buffers_while_queued),
        cmocka_unit_test(test_reads_and_writes_across_streams),
        cmocka_unit_test(test_many_streams_fold_onto_few_slots),
        cmocka_unit_test(test_many_streams_own_slots),
        cmocka_unit_test(test_sequential_strategy),
        cmocka_unit_test(test_single_policy),
        cmocka_unit_test(test_per_thread_policy),
        cmocka_unit_test(test_sync_one_stream),
        cmocka_unit_test(test_metadata_arena_recycled_when_drained_by_another_slot),
        cmocka_unit_test(test_large_metadata_chain),
        cmocka_unit_test(test_staged_writes_lapping_the_upload_ring),
        cmocka_unit_test(test_neighbour_of_a_capture_runs_eagerly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
