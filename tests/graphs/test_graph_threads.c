/* Graphs and threads: one thread captures graphs on its stream and replays them (prepare, an
 * eager warm-up, begin, end, replays on fresh inputs, destroy, several times over), while three
 * other threads run eager launches, host writes, reads and buffer creations on their own streams,
 * all at once on one device. Every value read is checked against a CPU model by the thread that
 * read it. The streams are on distinct slots, so none of the eager work is refused by a capture
 * window. The build with -DCUBEC_TSAN=ON runs this under ThreadSanitizer. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    EAGER_THREADS = 3,
    WORDS = 2048,
    CAPTURES = 3,
    REPLAYS = 25,
    EAGER_ROUNDS = 60,
    MAX_SLOTS = 128, /* the default max_streams */
};
#define BYTES ((uint64_t)WORDS * 4)

typedef struct worker {
    cubec_device *d;
    cubec_kernel consume, step;
    cubec_stream s;
    uint32_t id;
    uint32_t rounds; /* graphs replayed or eager rounds checked */
    int failed;
    char why[512];
} worker;

/* A launch of a uint kernel over WORDS words on the worker's stream. */
static cubec_status launch(worker *w, cubec_kernel k, cubec_buffer a, cubec_buffer b, uint32_t mul,
                           uint32_t add)
{
    return uint_launch(w->d, w->s, k, a, b, WORDS, mul, add);
}

/* Records the first failure of a worker; returns 1 when there is one. */
static int failed(worker *w, cubec_status st, const char *what)
{
    if (!st) return 0;
    if (!w->failed) {
        w->failed = 1;
        snprintf(w->why, sizeof w->why, "%s: %s", what, cubec_status_message(st));
    }
    cubec_status_free(st);
    return 1;
}

static int differs(worker *w, const uint32_t *got, const uint32_t *want, const char *what)
{
    for (uint32_t i = 0; i < WORDS; i++)
        if (got[i] != want[i]) {
            w->failed = 1;
            snprintf(w->why, sizeof w->why, "%s: word %u is %u, expected %u", what, i, got[i],
                     want[i]);
            return 1;
        }
    return 0;
}

/* The graph's work: h = x*mul+add; h = h*5+c; y = h*7+1. */
static cubec_status body(worker *w, cubec_buffer x, cubec_buffer h, cubec_buffer y, uint32_t mul,
                         uint32_t add, uint32_t c)
{
    cubec_status st = launch(w, w->consume, x, h, mul, add);
    if (!st) st = launch(w, w->step, h, NONE, 5, c);
    if (!st) st = launch(w, w->consume, h, y, 7, 1);
    return st;
}

static void model(const uint32_t *x, uint32_t *y, uint32_t mul, uint32_t add, uint32_t c)
{
    uint32_t *h = malloc(BYTES);
    cpu_consume(x, h, WORDS, mul, add);
    cpu_consume(h, h, WORDS, 5, c);
    cpu_consume(h, y, WORDS, 7, 1);
    free(h);
}

static void *capturer(void *arg)
{
    worker *w = arg;
    uint32_t rng = 1000 + w->id;
    uint32_t *xs = malloc(BYTES), *want = malloc(BYTES), *got = malloc(BYTES);
    cubec_buffer x = {0}, h = {0}, y = {0};
    cubec_status st = cubec_buffer_create(w->d, w->s, BYTES, &x);
    if (!st) st = cubec_buffer_create(w->d, w->s, BYTES, &h);
    if (!st) st = cubec_buffer_create(w->d, w->s, BYTES, &y);
    if (failed(w, st, "creating the capturer's buffers")) goto out;
    for (uint32_t c = 0; c < CAPTURES && !w->failed; c++) {
        uint32_t mul = 3 + 2 * c, add = c;
        for (uint32_t i = 0; i < WORDS; i++)
            xs[i] = test_rand(&rng);
        st = cubec_write(w->d, w->s, x, 0, xs, BYTES);
        if (!st) st = cubec_graph_prepare(w->d, w->s);
        if (!st) st = body(w, x, h, y, mul, add, c);
        if (!st) st = cubec_read(w->d, w->s, y, 0, got, BYTES);
        if (failed(w, st, "the warm-up")) break;
        model(xs, want, mul, add, c);
        if (differs(w, got, want, "the warm-up's output")) break;
        st = cubec_graph_begin(w->d, w->s);
        if (!st) st = body(w, x, h, y, mul, add, c);
        cubec_graph g = {0};
        if (!st) st = cubec_graph_end(w->d, w->s, &g);
        if (failed(w, st, "the capture")) break;
        for (uint32_t r = 0; r < REPLAYS && !w->failed; r++) {
            for (uint32_t i = 0; i < WORDS; i++)
                xs[i] = test_rand(&rng);
            st = cubec_write(w->d, w->s, x, 0, xs, BYTES);
            if (!st) st = cubec_graph_replay(w->d, w->s, g);
            if (!st) st = cubec_read(w->d, w->s, y, 0, got, BYTES);
            if (failed(w, st, "a replay")) break;
            model(xs, want, mul, add, c);
            if (differs(w, got, want, "a replay's output")) break;
            w->rounds++;
        }
        failed(w, cubec_graph_destroy(w->d, w->s, g), "cubec_graph_destroy");
    }
out:
    failed(w, cubec_buffer_release(w->d, x), "release x");
    failed(w, cubec_buffer_release(w->d, h), "release h");
    failed(w, cubec_buffer_release(w->d, y), "release y");
    free(xs);
    free(want);
    free(got);
    return NULL;
}

static void *eager(void *arg)
{
    worker *w = arg;
    uint32_t rng = 2000 + w->id;
    uint32_t *xs = malloc(BYTES), *want = malloc(BYTES), *got = malloc(BYTES);
    cubec_buffer x = {0}, y = {0};
    cubec_status st = cubec_buffer_create(w->d, w->s, BYTES, &x);
    if (failed(w, st, "creating the eager thread's buffer")) goto out;
    for (uint32_t r = 0; r < EAGER_ROUNDS && !w->failed; r++) {
        uint32_t mul = test_rand(&rng) | 1, add = test_rand(&rng);
        for (uint32_t i = 0; i < WORDS; i++)
            xs[i] = test_rand(&rng);
        /* A fresh output buffer every round: creations and releases race with the capture. */
        st = cubec_buffer_create(w->d, w->s, BYTES, &y);
        if (!st) st = cubec_write(w->d, w->s, x, 0, xs, BYTES);
        if (!st) st = launch(w, w->consume, x, y, mul, add);
        if (!st) st = launch(w, w->step, y, NONE, 3, r);
        if (!st && r % 4 == 3) st = cubec_sync(w->d, w->s);
        if (!st) st = cubec_read(w->d, w->s, y, 0, got, BYTES);
        if (failed(w, st, "an eager round")) break;
        cpu_consume(xs, want, WORDS, mul, add);
        cpu_consume(want, want, WORDS, 3, r);
        if (differs(w, got, want, "an eager round's output")) break;
        failed(w, cubec_buffer_release(w->d, y), "release y");
        y = (cubec_buffer){0};
        w->rounds++;
    }
out:
    failed(w, cubec_buffer_release(w->d, x), "release x");
    failed(w, cubec_buffer_release(w->d, y), "release y");
    free(xs);
    free(want);
    free(got);
    return NULL;
}

static void test_capture_while_other_threads_launch(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel consume = make_kernel(d, "consume", consume_src);
    cubec_kernel step = make_kernel(d, "step", step_src);
    worker w[1 + EAGER_THREADS];
    for (uint32_t i = 0; i < 1 + EAGER_THREADS; i++) {
        w[i] = (worker){.d = d, .consume = consume, .step = step, .id = i};
        ASSERT_OK(cubec_stream_new(d, &w[i].s));
        for (uint32_t j = 0; j < i; j++)
            if (stream_number(w[i].s) % MAX_SLOTS == stream_number(w[j].s) % MAX_SLOTS)
                fail_msg("streams %u and %u share a slot", i, j);
    }
    pthread_t t[1 + EAGER_THREADS];
    for (uint32_t i = 0; i < 1 + EAGER_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, i == 0 ? capturer : eager, &w[i]), 0);
    for (uint32_t i = 0; i < 1 + EAGER_THREADS; i++)
        pthread_join(t[i], NULL);
    for (uint32_t i = 0; i < 1 + EAGER_THREADS; i++)
        if (w[i].failed) fail_msg("%s %u: %s", i == 0 ? "capturer" : "eager thread", i, w[i].why);
    assert_int_equal(w[0].rounds, CAPTURES * REPLAYS);
    for (uint32_t i = 1; i < 1 + EAGER_THREADS; i++)
        assert_int_equal(w[i].rounds, EAGER_ROUNDS);
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    for (uint32_t i = 0; i < 1 + EAGER_THREADS; i++) {
        ASSERT_OK(cubec_memory_report_get(d, w[i].s, &r));
        assert_int_equal(r.allocations, 0);
    }
    ASSERT_OK(cubec_kernel_destroy(d, consume));
    ASSERT_OK(cubec_kernel_destroy(d, step));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_capture_while_other_threads_launch)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
