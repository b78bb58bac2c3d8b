/* Graphs (cubec.h "Graphs"), one test per rule, on the default device with the validation layer
 * on:
 *  1. the lifecycle: prepare, an eager warm-up, begin, the same launches recorded (not run: what
 *     they write keeps its bytes, a read in the window is refused), end, replays that compute what
 *     a CPU model computes, destroy (twice), and replays of dead or made-up graphs refused;
 *  2. calls in the wrong state are refused and leave the stream usable;
 *  3. reads, syncs, profiles, replays and memory cleanup are refused while a stream records, and
 *     those refusals do not doom the capture;
 *  4. a write inside the window is refused lazily and dooms the capture; a neighbour on the slot
 *     is outside the window: its write lands;
 *  5. doomed captures (a launch that would be skipped, a buffer that cannot be created) fail at
 *     end, and what they would have written carries the failure (a buffer that needs a new page
 *     is created: spec 3.9's AddOnly); an end from a neighbour finds
 *     no capture of its own and leaves the owner's alone;
 *  6. begin reports the warm-up's failure;
 *  7. a graph keeps the memory of a buffer whose handle was released;
 *  8. replays are ordered after the stream's work, a failed replay taints its outputs until one
 *     succeeds, indirect counts are read at replay time, and a replay whose input carries a
 *     failure is skipped;
 *  9. a two-layer MLP captured once and replayed 100 times on fresh inputs.
 * Also: a graph of 600 launches with metadata beyond push constants (test_long_graph), and a
 * device closed with a live graph and a capture still recording (test_close_with_live_graphs).
 * Every value read back is compared with a model computed here. Four tests guard what these tests
 * found (test_replay_ordered_after_many_owners, test_replay_skipped_when_read_write_input_failed,
 * test_failed_replay_recovers_when_graph_reads_a_view_it_wrote and
 * test_profile_spanning_capture_returns_no_time); their comments say why. Three guard what a
 * review found (test_failed_replay_recovers_when_graph_writes_a_buffer_in_pieces,
 * test_replay_skipped_when_aliased_read_binding_failed and
 * test_destroy_after_failed_wait_with_replays_queued).
 * Failures are made with cubec's fault injection (CUBEC_FAULT_SUBMIT), after a sync, so that only
 * the intended submission is lost; the lost device of
 * test_destroy_after_failed_wait_with_replays_queued with CUBEC_FAULT_WAIT. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include "server/device.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 256 /* words per buffer */
#define BYTES ((uint64_t)N * 4)
#define FILL_PATTERN 0xabcd1234u

/* y[i] = x[i] * mul + pad[63]: 268 bytes of metadata, more than the push constants of lavapipe
 * (128) and of the H200 (256), so the graph must keep it in memory of its own. */
static const char big_info_src[] =
    UINT_KERNEL_HEAD "layout(std430, binding = 0) readonly buffer X { uint x[]; };\n"
                     "layout(std430, binding = 1) writeonly buffer Y { uint y[]; };\n"
                     "CUBEC_INFO(uint n; uint mul; uint add; uint pad[64];)\n"
                     "void main() {\n"
                     "  uint i = gl_GlobalInvocationID.x;\n"
                     "  if (i < info.n) y[i] = x[i] * info.mul + info.pad[63];\n"
                     "}\n";

typedef struct kernels {
    cubec_kernel produce, consume, step, big;
} kernels;

static kernels kernels_create(cubec_device *d)
{
    kernels k;
    uint_kernels_create(d, &k.produce, &k.consume, &k.step);
    k.big = make_kernel(d, "big_info", big_info_src);
    return k;
}

static void kernels_destroy(cubec_device *d, kernels k)
{
    uint_kernels_destroy(d, k.produce, k.consume, k.step);
    ASSERT_OK(cubec_kernel_destroy(d, k.big));
}

static cubec_status launch_big(cubec_device *d, cubec_stream s, cubec_kernel k, cubec_buffer x,
                               cubec_buffer y, uint32_t mul, uint32_t add)
{
    uint32_t info[67] = {N, mul, 0};
    info[66] = add; /* pad[63] */
    cubec_buffer bufs[2] = {x, y};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = bufs,
                            .buffer_count = 2,
                            .info = info,
                            .info_size = sizeof info,
                            .groups = {N / 64, 1, 1}};
    return cubec_launch(d, s, &ld);
}

/* A new stream that shares `s`'s slot (stream number modulo max_streams). */
static cubec_stream neighbour_of(cubec_device *d, cubec_stream s)
{
    uint32_t slots = server_stats_get(d).max_streams;
    for (uint32_t i = 0; i <= slots; i++) {
        cubec_stream n = new_stream(d);
        if (stream_number(n) % slots == stream_number(s) % slots) return n;
    }
    fail_msg("no stream on the slot of stream %" PRIu64 " after %u new streams", stream_number(s),
             slots + 1);
    return 0;
}

/* A buffer of N words, numbered (launch_util.h). */
static tbuf make_buffer(cubec_device *d, cubec_stream s, const uint32_t *data)
{
    return make_numbered_buffer(d, s, data, BYTES);
}

static void release(cubec_device *d, tbuf b)
{
    ASSERT_OK(cubec_buffer_release(d, b.h));
}

/* The end of a test: releases its buffers, destroys the kernels and closes the device (the
 * validation layer judges). A test that reports a BUG calls it first, so that the failure leaves
 * nothing behind for the next test or the leak check. */
static void finish(cubec_device *d, kernels k, const tbuf *bufs, size_t count)
{
    for (size_t i = 0; i < count; i++)
        release(d, bufs[i]);
    kernels_destroy(d, k);
    test_device_close(d);
}
/* finish() of the buffers listed, which it counts itself: FINISH(d, k, x, y). */
#define FINISH(d, k, ...)                                                                          \
    finish((d), (k), (tbuf[]){__VA_ARGS__}, sizeof((tbuf[]){__VA_ARGS__}) / sizeof(tbuf))

/* Prepares a capture on `s`, runs uint_launch(kernel, a, b, N, mul, add) eagerly as its warm-up,
 * begins the capture and records the same launch: the window is left open. */
static void begin_after_warm_up(cubec_device *d, cubec_stream s, cubec_kernel kernel,
                                cubec_buffer a, cubec_buffer b, uint32_t mul, uint32_t add)
{
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(uint_launch(d, s, kernel, a, b, N, mul, add));
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(uint_launch(d, s, kernel, a, b, N, mul, add));
}

/* Ends the capture that `s` records, which must succeed; returns the graph. */
static cubec_graph end_capture(cubec_device *d, cubec_stream s)
{
    cubec_graph g = {0};
    ASSERT_OK(cubec_graph_end(d, s, &g));
    return g;
}

/* A graph of the one uint_launch(kernel, a, b, N, mul, add), captured after its warm-up. */
static cubec_graph capture_one(cubec_device *d, cubec_stream s, cubec_kernel kernel, cubec_buffer a,
                               cubec_buffer b, uint32_t mul, uint32_t add)
{
    begin_after_warm_up(d, s, kernel, a, b, mul, add);
    return end_capture(d, s);
}

static void random_words(uint32_t *v, uint32_t n, uint32_t *rng)
{
    for (uint32_t i = 0; i < n; i++)
        v[i] = test_rand(rng);
}

/* All N words of `b` (a buffer of N words). */
static void expect_words(cubec_device *d, cubec_stream s, cubec_buffer b, const uint32_t *want,
                         const char *what)
{
    expect_range_in(d, s, b, N, 0, N, want, what);
}

/* ASSERT_ERROR that also prints the message, and checks a second fragment when one is given. */
static void show_error(cubec_status st, cubec_code code, const char *needle, const char *needle2,
                       const char *expr, int line)
{
    if (st) {
        printf("    %s\n      -> %s: %s\n", expr, cubec_code_name(cubec_status_code(st)),
               cubec_status_message(st));
        if (needle2 && !strstr(cubec_status_message(st), needle2)) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
            cubec_status_free(st);
            fail_msg("%s:%d: %s message \"%s\" lacks \"%s\"", __FILE__, line, expr, msg, needle2);
        }
    }
    test_assert_error(st, code, needle, expr, __FILE__, line);
}
#undef ASSERT_ERROR
#define ASSERT_ERROR(expr, code, needle) show_error((expr), (code), (needle), NULL, #expr, __LINE__)
#define ASSERT_ERROR2(expr, code, needle, needle2)                                                 \
    show_error((expr), (code), (needle), (needle2), #expr, __LINE__)

/* An eager launch and a read on `s` give the right result: the stream is usable. */
static void expect_eager_works(cubec_device *d, cubec_stream s, const kernels *k, cubec_buffer x,
                               cubec_buffer y, uint32_t *rng, const char *when)
{
    uint32_t xs[N], want[N];
    random_words(xs, N, rng);
    uint32_t mul = test_rand(rng) | 1, add = test_rand(rng);
    ASSERT_OK(cubec_write(d, s, x, 0, xs, BYTES));
    ASSERT_OK(uint_launch(d, s, k->consume, x, y, N, mul, add));
    cpu_consume(xs, want, N, mul, add);
    char what[160];
    snprintf(what, sizeof what, "eager launch %s", when);
    expect_words(d, s, y, want, what);
}

/* A capture of consume(x -> y, mul, add) on `s`, with its warm-up checked; returns the graph. */
static cubec_graph capture_consume(cubec_device *d, cubec_stream s, const kernels *k,
                                   cubec_buffer x, cubec_buffer y, uint32_t mul, uint32_t add)
{
    uint32_t xs[N], want[N];
    ASSERT_OK(cubec_read(d, s, x, 0, xs, BYTES));
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(uint_launch(d, s, k->consume, x, y, N, mul, add));
    cpu_consume(xs, want, N, mul, add);
    expect_words(d, s, y, want, "the warm-up's output");
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(uint_launch(d, s, k->consume, x, y, N, mul, add));
    cubec_graph g = end_capture(d, s);
    assert_true(g.id != 0);
    return g;
}

/* Writes fresh words into x, replays `g` (consume(x -> y, mul, add)) and checks y. */
static void expect_replay_computes(cubec_device *d, cubec_stream s, cubec_graph g, cubec_buffer x,
                                   cubec_buffer y, uint32_t mul, uint32_t add, uint32_t *rng,
                                   const char *what)
{
    uint32_t xs[N], want[N];
    random_words(xs, N, rng);
    ASSERT_OK(cubec_write(d, s, x, 0, xs, BYTES));
    ASSERT_OK(cubec_graph_replay(d, s, g));
    cpu_consume(xs, want, N, mul, add);
    expect_words(d, s, y, want, what);
}

/* 1 ------------------------------------------------------------------------------------------- */

/* The body of the lifecycle graph: launches with push constants and with big metadata, a copy
 * and a fill. h = x*3+1; y = copy of h, then y = y*5+2; z = h*9+4 (big metadata); f = pattern. */
static void lifecycle_body(cubec_device *d, cubec_stream s, const kernels *k, cubec_buffer x,
                           cubec_buffer h, cubec_buffer y, cubec_buffer z, cubec_buffer f)
{
    ASSERT_OK(uint_launch(d, s, k->consume, x, h, N, 3, 1));
    ASSERT_OK(cubec_copy(d, s, h, 0, y, 0, BYTES));
    ASSERT_OK(uint_launch(d, s, k->step, y, NONE, N, 5, 2));
    ASSERT_OK(launch_big(d, s, k->big, h, z, 9, 4));
    ASSERT_OK(cubec_fill(d, s, f, 0, BYTES, FILL_PATTERN));
}

static void lifecycle_model(const uint32_t *xs, uint32_t *h, uint32_t *y, uint32_t *z, uint32_t *f)
{
    cpu_consume(xs, h, N, 3, 1);
    cpu_consume(h, y, N, 5, 2);
    cpu_consume(h, z, N, 9, 4);
    for (uint32_t i = 0; i < N; i++)
        f[i] = FILL_PATTERN;
}

/* Refused arguments name themselves and change nothing: the stream still captures. */
static void test_bad_arguments(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    cubec_stream s = new_stream(d);
    cubec_graph g = {0};
    ASSERT_ERROR(cubec_graph_prepare(NULL, s), CUBEC_INVALID_ARGUMENT, "device is NULL");
    ASSERT_ERROR(cubec_graph_begin(NULL, s), CUBEC_INVALID_ARGUMENT, "device is NULL");
    ASSERT_ERROR(cubec_graph_end(d, s, NULL), CUBEC_INVALID_ARGUMENT, "out_graph is NULL");
    ASSERT_ERROR(cubec_graph_replay(NULL, s, g), CUBEC_INVALID_ARGUMENT, "device is NULL");
    /* A stream id that no cubec_stream_new made, for each call. */
    const cubec_stream bogus = 0x1234567890abcdefull;
    ASSERT_ERROR(cubec_graph_prepare(d, bogus), CUBEC_INVALID_ARGUMENT, "cubec_graph_prepare");
    ASSERT_ERROR(cubec_graph_begin(d, bogus), CUBEC_INVALID_ARGUMENT, "cubec_graph_begin");
    ASSERT_ERROR(cubec_graph_end(d, bogus, &g), CUBEC_INVALID_ARGUMENT, "cubec_graph_end");
    ASSERT_ERROR(cubec_graph_replay(d, bogus, g), CUBEC_INVALID_ARGUMENT, "cubec_graph_replay");
    ASSERT_ERROR(cubec_graph_destroy(d, bogus, (cubec_graph){1}), CUBEC_INVALID_ARGUMENT,
                 "cubec_graph_destroy");
    assert_int_equal(g.id, 0);
    /* Nothing was prepared by the refusals: a capture from here works. */
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(cubec_graph_end(d, s, &g));
    assert_true(g.id != 0);
    ASSERT_OK(cubec_graph_replay(d, s, g));
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    test_device_close(d);
}

static void test_lifecycle(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t rng = 12345;
    uint32_t xs[N], sentinel[N], wh[N], wy[N], wz[N], wf[N];
    random_words(xs, N, &rng);
    cpu_produce(sentinel, N, 0, 0x5e5e5e5eu);
    tbuf x = make_buffer(d, s, xs);
    tbuf h = make_buffer(d, s, NULL), y = make_buffer(d, s, NULL);
    tbuf z = make_buffer(d, s, NULL), f = make_buffer(d, s, NULL);

    ASSERT_OK(cubec_graph_prepare(d, s));
    lifecycle_body(d, s, &k, x.h, h.h, y.h, z.h, f.h); /* the warm-up runs */
    lifecycle_model(xs, wh, wy, wz, wf);
    expect_words(d, s, h.h, wh, "warm-up h");
    expect_words(d, s, y.h, wy, "warm-up y");
    expect_words(d, s, z.h, wz, "warm-up z");
    expect_words(d, s, f.h, wf, "warm-up f");
    /* Outputs hold other bytes now: the recorded launches must not change them. */
    tbuf outs[] = {h, y, z, f};
    for (size_t i = 0; i < 4; i++)
        ASSERT_OK(cubec_write(d, s, outs[i].h, 0, sentinel, BYTES));

    ASSERT_OK(cubec_graph_begin(d, s));
    lifecycle_body(d, s, &k, x.h, h.h, y.h, z.h, f.h);
    uint32_t got[N];
    ASSERT_ERROR2(cubec_read(d, s, y.h, 0, got, BYTES), CUBEC_GRAPH_STATE, "cubec_read: refused",
                  "records a graph");
    cubec_graph g = end_capture(d, s);
    assert_true(g.id != 0);
    const char *names[] = {"h", "y", "z", "f"};
    for (size_t i = 0; i < 4; i++) {
        char what[96];
        snprintf(what, sizeof what, "%s after the capture (recorded, not run)", names[i]);
        expect_words(d, s, outs[i].h, sentinel, what);
    }

    for (uint32_t r = 0; r < 8; r++) {
        random_words(xs, N, &rng);
        ASSERT_OK(cubec_write(d, s, x.h, 0, xs, BYTES));
        if (r % 2) /* fresh outputs: the replay writes them all again */
            for (size_t i = 0; i < 4; i++)
                ASSERT_OK(cubec_write(d, s, outs[i].h, 0, sentinel, BYTES));
        ASSERT_OK(cubec_graph_replay(d, s, g));
        lifecycle_model(xs, wh, wy, wz, wf);
        expect_words(d, s, h.h, wh, "replayed h");
        expect_words(d, s, y.h, wy, "replayed y");
        expect_words(d, s, z.h, wz, "replayed z");
        expect_words(d, s, f.h, wf, "replayed f");
        expect_words(d, s, x.h, xs, "x (only read)");
    }
    /* Two replays back to back on different inputs: the second one's result is read. */
    random_words(xs, N, &rng);
    ASSERT_OK(cubec_write(d, s, x.h, 0, xs, BYTES));
    ASSERT_OK(cubec_graph_replay(d, s, g));
    random_words(xs, N, &rng);
    ASSERT_OK(cubec_write(d, s, x.h, 0, xs, BYTES));
    ASSERT_OK(cubec_graph_replay(d, s, g));
    lifecycle_model(xs, wh, wy, wz, wf);
    expect_words(d, s, y.h, wy, "y after two replays");
    expect_words(d, s, z.h, wz, "z after two replays");

    ASSERT_OK(cubec_graph_destroy(d, s, g));
    ASSERT_OK(cubec_graph_destroy(d, s, g)); /* twice: accepted, nothing happens */
    ASSERT_OK(cubec_graph_destroy(d, s, (cubec_graph){0}));
    ASSERT_ERROR(cubec_graph_replay(d, s, g), CUBEC_GRAPH_STATE,
                 "is stale: that graph was destroyed");
    ASSERT_ERROR(cubec_graph_replay(d, s, (cubec_graph){0}), CUBEC_GRAPH_STATE,
                 "the graph handle is zero");
    ASSERT_ERROR(cubec_graph_replay(d, s, (cubec_graph){0x123456789abcull}), CUBEC_GRAPH_STATE,
                 "is unknown: no open device issued it");
    /* This device's tag, an index no graph ever had. */
    cubec_graph forged = {(g.id & 0xffff000000000000ull) | 77};
    ASSERT_ERROR(cubec_graph_replay(d, s, forged), CUBEC_GRAPH_STATE,
                 "is unknown: this device never issued it");
    /* The refused replays wrote nothing. */
    expect_words(d, s, y.h, wy, "y after refused replays");
    expect_eager_works(d, s, &k, x.h, y.h, &rng, "after the graph was destroyed");

    FINISH(d, k, x, h, y, z, f);
}

/* 2 ------------------------------------------------------------------------------------------- */

static void test_wrong_transitions_leave_stream_usable(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t rng = 777;
    tbuf x = make_buffer(d, s, NULL), y = make_buffer(d, s, NULL);

    ASSERT_ERROR(cubec_graph_begin(d, s), CUBEC_GRAPH_STATE, "call cubec_graph_prepare");
    expect_eager_works(d, s, &k, x.h, y.h, &rng, "after begin without prepare");

    cubec_graph g = {42};
    ASSERT_ERROR(cubec_graph_end(d, s, &g), CUBEC_GRAPH_STATE, "no graph capture is recording");
    assert_int_equal(g.id, 0);
    expect_eager_works(d, s, &k, x.h, y.h, &rng, "after end without begin");

    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_ERROR(cubec_graph_prepare(d, s), CUBEC_GRAPH_STATE, "already prepared");
    expect_eager_works(d, s, &k, x.h, y.h, &rng, "after prepare twice");

    /* End after prepare only: refused, and the preparation is dropped. */
    ASSERT_ERROR2(cubec_graph_end(d, s, &g), CUBEC_GRAPH_STATE, "no graph capture is recording",
                  "preparation is dropped");
    assert_int_equal(g.id, 0);
    ASSERT_ERROR(cubec_graph_begin(d, s), CUBEC_GRAPH_STATE, "call cubec_graph_prepare");
    expect_eager_works(d, s, &k, x.h, y.h, &rng, "after end of a prepared capture");

    /* Begin and prepare while recording are refused; the capture goes on and seals. */
    g = capture_consume(d, s, &k, x.h, y.h, 3, 4);
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    begin_after_warm_up(d, s, k.consume, x.h, y.h, 7, 8);
    ASSERT_ERROR(cubec_graph_begin(d, s), CUBEC_GRAPH_STATE, "already recording");
    ASSERT_ERROR(cubec_graph_prepare(d, s), CUBEC_GRAPH_STATE, "already recording");
    ASSERT_OK(cubec_graph_end(d, s, &g));
    expect_replay_computes(d, s, g, x.h, y.h, 7, 8, &rng, "replay after refused transitions");
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    expect_eager_works(d, s, &k, x.h, y.h, &rng, "after the capture");

    FINISH(d, k, x, y);
}

/* 3 ------------------------------------------------------------------------------------------- */

static void test_refusals_while_recording(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d), other = new_stream(d);
    uint32_t rng = 31337;
    uint32_t xs[N], sentinel[N], produced[N], got[N];
    random_words(xs, N, &rng);
    cpu_produce(sentinel, N, 0, 0x77777777u);
    cpu_produce(produced, N, 2, 9);
    tbuf x = make_buffer(d, s, xs), y = make_buffer(d, s, NULL), o = make_buffer(d, s, NULL);
    tbuf mine = make_buffer(d, other, xs);

    /* An already captured graph: o = i*2+9. */
    cubec_graph g0 = capture_one(d, s, k.produce, o.h, NONE, 2, 9);
    ASSERT_OK(cubec_write(d, s, o.h, 0, sentinel, BYTES));

    begin_after_warm_up(d, s, k.consume, x.h, y.h, 3, 1);

    ASSERT_ERROR2(cubec_read(d, s, y.h, 0, got, BYTES), CUBEC_GRAPH_STATE, "cubec_read: refused",
                  "records a graph");
    cubec_event *ev = NULL;
    ASSERT_ERROR(cubec_read_async(d, s, y.h, 0, got, BYTES, &ev), CUBEC_GRAPH_STATE,
                 "cubec_read_async: refused");
    assert_null(ev);
    ASSERT_ERROR(cubec_sync(d, s), CUBEC_GRAPH_STATE, "cubec_sync: refused");
    ASSERT_ERROR(cubec_sync_check(d, s, &y.h, 1), CUBEC_GRAPH_STATE, "cubec_sync_check: refused");
    cubec_profile p = {5};
    ASSERT_ERROR(cubec_profile_begin(d, s, &p), CUBEC_GRAPH_STATE, "cubec_profile_begin: refused");
    assert_int_equal(p.id, 0);
    ASSERT_ERROR(cubec_graph_replay(d, s, g0), CUBEC_GRAPH_STATE, "cubec_graph_replay: refused");
    ASSERT_ERROR(cubec_memory_cleanup(d, s), CUBEC_GRAPH_STATE, "cubec_memory_cleanup: refused");
    /* Cleanup is refused from any stream while one records; other streams' reads are not. */
    ASSERT_ERROR(cubec_memory_cleanup(d, other), CUBEC_GRAPH_STATE,
                 "cubec_memory_cleanup: refused");
    expect_words(d, other, mine.h, xs, "a buffer of another slot, read while s records");

    cubec_graph g = {0};
    ASSERT_OK(cubec_graph_end(d, s, &g)); /* refusals do not doom */
    expect_words(d, s, o.h, sentinel, "o (its refused replay did not run)");
    expect_replay_computes(d, s, g, x.h, y.h, 3, 1, &rng, "replay after the refusals");
    expect_replay_computes(d, s, g, x.h, y.h, 3, 1, &rng, "second replay after the refusals");
    ASSERT_OK(cubec_graph_replay(d, s, g0));
    expect_words(d, s, o.h, produced, "o replayed by the first graph");
    ASSERT_OK(cubec_memory_cleanup(d, other)); /* accepted again */
    ASSERT_OK(cubec_sync(d, s));

    ASSERT_OK(cubec_graph_destroy(d, s, g));
    ASSERT_OK(cubec_graph_destroy(d, s, g0));
    FINISH(d, k, x, y, o, mine);
}

/* 4 ------------------------------------------------------------------------------------------- */

static void test_lazy_write_refusal(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    cubec_stream nb = neighbour_of(d, s);
    uint32_t rng = 4242;
    uint32_t xs[N], data[N], want[N];
    random_words(xs, N, &rng);
    random_words(data, N, &rng);
    tbuf x = make_buffer(d, s, xs), y = make_buffer(d, s, NULL), w = make_buffer(d, s, NULL);
    tbuf w2 = make_buffer(d, nb, NULL);

    /* The owner writes inside its own window: the call succeeds, the bytes carry the refusal and
     * the capture is doomed. */
    begin_after_warm_up(d, s, k.consume, x.h, y.h, 3, 1);
    ASSERT_OK(cubec_write(d, s, w.h, 0, data, BYTES));
    char needle[256];
    snprintf(needle, sizeof needle,
             "a write from stream %" PRIu64 " was refused: stream %" PRIu64 " records a graph",
             stream_number(s), stream_number(s));
    ASSERT_ERROR(cubec_check(d, &w.h, 1), CUBEC_GRAPH_STATE, needle);
    cubec_graph g = {0};
    char doom[160];
    snprintf(doom, sizeof doom, "a write of buffer #%" PRIu64 " inside the capture window",
             w.number);
    ASSERT_ERROR(cubec_graph_end(d, s, &g), CUBEC_GRAPH_STATE, doom);
    assert_int_equal(g.id, 0);
    ASSERT_ERROR(cubec_check(d, &w.h, 1), CUBEC_GRAPH_STATE, needle);
    ASSERT_ERROR2(cubec_check(d, &y.h, 1), CUBEC_GRAPH_STATE, "was discarded", doom);
    expect_eager_works(d, s, &k, x.h, y.h, &rng, "after the doomed capture");
    ASSERT_OK(cubec_write(d, s, w.h, 0, data, BYTES));
    expect_words(d, s, w.h, data, "w written again after the capture");

    /* A neighbour on the slot writes inside the window: the window is the owner's, so the write
     * lands (issue 11: it used to be refused) and the capture goes on. */
    begin_after_warm_up(d, s, k.consume, x.h, y.h, 5, 6);
    ASSERT_OK(cubec_write(d, nb, w2.h, 0, data, BYTES));
    ASSERT_OK(cubec_check(d, &w2.h, 1));
    expect_words(d, nb, w2.h, data, "w2 written by the neighbour inside the window");
    ASSERT_OK(cubec_graph_end(d, s, &g));
    expect_replay_computes(d, s, g, x.h, y.h, 5, 6, &rng, "replay of the neighbour's window");
    expect_words(d, nb, w2.h, data, "w2 after the replays");
    cpu_consume(data, want, N, 2, 2);
    ASSERT_OK(uint_launch(d, nb, k.consume, w2.h, w.h, N, 2, 2));
    expect_words(d, nb, w.h, want, "the neighbour's eager launch");
    ASSERT_OK(cubec_graph_destroy(d, s, g));

    FINISH(d, k, x, y, w, w2);
}

/* 5 ------------------------------------------------------------------------------------------- */

/* After a doomed capture: the stream runs eagerly and captures again. */
static void expect_recapture_works(cubec_device *d, cubec_stream s, const kernels *k,
                                   cubec_buffer x, cubec_buffer y, uint32_t *rng)
{
    expect_eager_works(d, s, k, x, y, rng, "after a doomed capture");
    cubec_graph g = capture_consume(d, s, k, x, y, 11, 12);
    expect_replay_computes(d, s, g, x, y, 11, 12, rng, "replay of a capture after a doomed one");
    ASSERT_OK(cubec_graph_destroy(d, s, g));
}

static void test_doomed_by_skipped_launch(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t rng = 99;
    uint32_t xs[N], sentinel[N], want[N];
    random_words(xs, N, &rng);
    cpu_produce(sentinel, N, 0, 0x1234u);
    tbuf x = make_buffer(d, s, xs), t = make_buffer(d, s, NULL);
    tbuf h = make_buffer(d, s, NULL), y = make_buffer(d, s, NULL), z = make_buffer(d, s, NULL);
    taint_by_lost_submission(d, s, k.produce, t.h, N, 1, 1);

    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, h.h, N, 3, 1));
    cpu_consume(xs, want, N, 3, 1);
    expect_words(d, s, h.h, want, "the warm-up's output");
    ASSERT_OK(cubec_write(d, s, y.h, 0, sentinel, BYTES));
    ASSERT_OK(cubec_write(d, s, z.h, 0, sentinel, BYTES));
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, h.h, N, 3, 1));
    ASSERT_OK(uint_launch(d, s, k.consume, t.h, y.h, N, 5, 2)); /* its input carries a failure */
    ASSERT_OK(uint_launch(d, s, k.consume, h.h, z.h, N, 7, 1));
    cubec_graph g = {7};
    char skipped[256];
    snprintf(skipped, sizeof skipped,
             "launch \"consume\" on stream %" PRIu64
             " was skipped because its input buffer #%" PRIu64 " was not written",
             stream_number(s), t.number);
    ASSERT_ERROR(cubec_graph_end(d, s, &g), CUBEC_GRAPH_STATE, skipped);
    assert_int_equal(g.id, 0);
    /* Every recorded launch's output carries it, before and after the skipped one. */
    char discarded[96];
    snprintf(discarded, sizeof discarded, "graph capture on stream %" PRIu64 " was discarded",
             stream_number(s));
    ASSERT_ERROR2(cubec_check(d, &h.h, 1), CUBEC_INTERNAL, skipped, discarded);
    ASSERT_ERROR2(cubec_check(d, &y.h, 1), CUBEC_INTERNAL, skipped, discarded);
    ASSERT_ERROR2(cubec_check(d, &z.h, 1), CUBEC_INTERNAL, skipped, discarded);
    expect_words(d, s, x.h, xs, "x (only read by the capture)");

    ASSERT_OK(cubec_write(d, s, t.h, 0, xs, BYTES));
    expect_recapture_works(d, s, &k, x.h, y.h, &rng);
    expect_eager_works(d, s, &k, t.h, z.h, &rng, "on the rewritten input");

    FINISH(d, k, x, t, h, y, z);
}

/* Spec 3.9's AddOnly permission: a buffer that needs a new page may be created while the stream
 * records (nothing recorded names the new page), and the graph still seals and replays; a
 * reservation that cannot be served dooms the capture. */
static void test_new_page_while_recording(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t rng = 5;
    uint32_t xs[N];
    random_words(xs, N, &rng);
    tbuf x = make_buffer(d, s, xs), y = make_buffer(d, s, NULL);
    const uint64_t big_size = 64ull << 20; /* larger than anything allocated so far */
    cubec_memory_report before = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &before));

    begin_after_warm_up(d, s, k.consume, x.h, y.h, 3, 1);
    cubec_buffer big = {0};
    ASSERT_OK(cubec_buffer_create(d, s, big_size, &big));
    cubec_memory_report during = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &during));
    assert_true(during.bytes_reserved > before.bytes_reserved); /* a page was added */
    cubec_graph g = end_capture(d, s);
    expect_replay_computes(d, s, g, x.h, y.h, 3, 1, &rng, "replay of a capture that added a page");
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    ASSERT_OK(cubec_buffer_release(d, big));

    /* More than the device's largest allocation: refused, and the capture is doomed. */
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    begin_after_warm_up(d, s, k.consume, x.h, y.h, 3, 1);
    big.id = 99;
    ASSERT_ERROR(cubec_buffer_create(d, s, info.max_allocation_size + 1, &big), CUBEC_OUT_OF_MEMORY,
                 "largest allocation");
    assert_int_equal(big.id, 0);
    g.id = 0;
    ASSERT_ERROR(cubec_graph_end(d, s, &g), CUBEC_GRAPH_STATE, "creating a buffer of");
    assert_int_equal(g.id, 0);
    ASSERT_ERROR2(cubec_check(d, &y.h, 1), CUBEC_OUT_OF_MEMORY, "was discarded",
                  "largest allocation");
    expect_recapture_works(d, s, &k, x.h, y.h, &rng);

    FINISH(d, k, x, y);
}

/* A capture belongs to the stream that began it: cubec_graph_end from another stream on its slot
 * finds no capture of its own, says whose the slot's capture is, and changes nothing, whether
 * the capture records or was only prepared. */
static void test_end_from_a_neighbour_finds_no_capture(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    cubec_stream nb = neighbour_of(d, s);
    uint32_t rng = 6;
    uint32_t xs[N];
    random_words(xs, N, &rng);
    tbuf x = make_buffer(d, s, xs), y = make_buffer(d, s, NULL);

    begin_after_warm_up(d, s, k.consume, x.h, y.h, 3, 1);
    cubec_graph g = {0};
    char needle[200];
    snprintf(needle, sizeof needle,
             "cubec_graph_end: no graph capture is recording on stream %" PRIu64 " (stream %" PRIu64
             ", which shares its slot, records one",
             stream_number(nb), stream_number(s));
    ASSERT_ERROR(cubec_graph_end(d, nb, &g), CUBEC_GRAPH_STATE, needle);
    assert_int_equal(g.id, 0);
    /* The capture goes on: the owner ends it and its replays compute. */
    ASSERT_OK(cubec_graph_end(d, s, &g));
    expect_replay_computes(d, s, g, x.h, y.h, 3, 1, &rng, "replay after a neighbour's end");
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    expect_eager_works(d, nb, &k, x.h, y.h, &rng, "on the neighbour after the capture");

    /* A preparation is not dropped by a neighbour's end either. */
    ASSERT_OK(cubec_graph_prepare(d, s));
    snprintf(needle, sizeof needle,
             "no graph capture is recording on stream %" PRIu64 " (stream %" PRIu64
             ", which shares its slot, prepared one",
             stream_number(nb), stream_number(s));
    ASSERT_ERROR(cubec_graph_end(d, nb, &g), CUBEC_GRAPH_STATE, needle);
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, y.h, N, 11, 12));
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, y.h, N, 11, 12));
    ASSERT_OK(cubec_graph_end(d, s, &g));
    expect_replay_computes(d, s, g, x.h, y.h, 11, 12, &rng, "replay after a neighbour's end");
    ASSERT_OK(cubec_graph_destroy(d, s, g));

    FINISH(d, k, x, y);
}

/* 6 ------------------------------------------------------------------------------------------- */

static void test_begin_reports_warmup_failure(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t rng = 8;
    uint32_t xs[N];
    random_words(xs, N, &rng);
    tbuf x = make_buffer(d, s, xs), y = make_buffer(d, s, NULL);
    ASSERT_OK(cubec_sync(d, s));

    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, y.h, N, 3, 1));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_ERROR2(cubec_graph_begin(d, s), CUBEC_INTERNAL, "the warm-up failed",
                  "injected fault: submit call #");
    ASSERT_ERROR(cubec_check(d, &y.h, 1), CUBEC_INTERNAL, "injected fault: submit call #");
    /* The preparation was dropped: begin needs a new prepare. */
    ASSERT_ERROR(cubec_graph_begin(d, s), CUBEC_GRAPH_STATE, "call cubec_graph_prepare");
    expect_eager_works(d, s, &k, x.h, y.h, &rng, "after the warm-up failed");
    expect_recapture_works(d, s, &k, x.h, y.h, &rng);

    FINISH(d, k, x, y);
}

/* 7 ------------------------------------------------------------------------------------------- */

static uint64_t bytes_in_use(cubec_device *d, cubec_stream s)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    return r.bytes_in_use;
}

static void test_graph_keeps_released_buffer(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t pattern[N];
    cpu_produce(pattern, N, 0, 0xc0ffee00u);
    tbuf o = make_buffer(d, s, NULL);
    uint64_t with_o = bytes_in_use(d, s);
    assert_true(with_o >= BYTES);

    cubec_graph g = capture_one(d, s, k.produce, o.h, NONE, 3, 7);

    release(d, o);
    ASSERT_OK(cubec_sync(d, s));
    assert_int_equal(bytes_in_use(d, s), with_o); /* the graph holds O's memory */
    tbuf p = make_buffer(d, s, pattern);
    assert_int_equal(bytes_in_use(d, s), with_o + BYTES);
    for (int r = 0; r < 3; r++) {
        ASSERT_OK(cubec_graph_replay(d, s, g));
        expect_words(d, s, p.h, pattern, "P after a replay that writes released O");
    }
    assert_int_equal(bytes_in_use(d, s), with_o + BYTES);

    ASSERT_OK(cubec_graph_destroy(d, s, g));
    assert_int_equal(bytes_in_use(d, s), with_o); /* O's bytes returned, P's remain */
    expect_words(d, s, p.h, pattern, "P after the graph was destroyed");
    release(d, p);
    assert_int_equal(bytes_in_use(d, s), with_o - BYTES);
    finish(d, k, NULL, 0);
}

/* 8 ------------------------------------------------------------------------------------------- */

/* write x; step(x) eagerly (x = x*2+7); replay consume(x -> y, 3, 1): y reflects both. */
static void test_replay_ordered_after_stream_work(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t rng = 10;
    uint32_t xs[N], stepped[N], want[N];
    random_words(xs, N, &rng);
    tbuf x = make_buffer(d, s, xs), y = make_buffer(d, s, NULL);
    cubec_graph g = capture_consume(d, s, &k, x.h, y.h, 3, 1);
    for (uint32_t r = 0; r < 6; r++) {
        random_words(xs, N, &rng);
        ASSERT_OK(cubec_write(d, s, x.h, 0, xs, BYTES));
        ASSERT_OK(uint_launch(d, s, k.step, x.h, NONE, N, 2, 7 + r));
        ASSERT_OK(cubec_graph_replay(d, s, g));
        cpu_consume(xs, stepped, N, 2, 7 + r);
        cpu_consume(stepped, want, N, 3, 1);
        expect_words(d, s, y.h, want, "y of a replay after an eager step of its input");
        /* And a launch after the replay sees what the replay wrote. */
        ASSERT_OK(uint_launch(d, s, k.step, y.h, NONE, N, 5, r));
        cpu_consume(want, stepped, N, 5, r);
        expect_words(d, s, y.h, stepped, "y stepped after the replay");
    }
    /* Like any use of a buffer on another stream: a replay on stream t runs after the work
     * queued on the owner of what it binds (s) and on the stream whose queued task last writes it
     * (u), and a read on t after it sees what it wrote. */
    cubec_stream t = new_stream(d), u = new_stream(d);
    for (uint32_t r = 0; r < 3; r++) {
        random_words(xs, N, &rng);
        ASSERT_OK(cubec_write(d, s, x.h, 0, xs, BYTES));
        ASSERT_OK(uint_launch(d, s, k.step, x.h, NONE, N, 2, r));
        ASSERT_OK(uint_launch(d, u, k.step, x.h, NONE, N, 3, r));
        ASSERT_OK(cubec_graph_replay(d, t, g));
        cpu_consume(xs, stepped, N, 2, r);
        cpu_consume(stepped, stepped, N, 3, r);
        cpu_consume(stepped, want, N, 3, 1);
        expect_words(d, t, y.h, want, "y of a replay on another stream");
    }
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    FINISH(d, k, x, y);
}

/* finish() for test_replay_ordered_after_many_owners: each owner's buffer and its output. */
static void finish_many_owners(cubec_device *d, kernels k, const tbuf *b, const tbuf *out,
                               uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        release(d, b[i]);
        release(d, out[i]);
    }
    finish(d, k, NULL, 0);
}

/* Found by these tests. A graph that reads buffers of 70 streams (one launch each): a replay must
 * run after the work queued on each buffer's owner (cubec.h "Streams"), however many owners
 * there are; each owner has a step of its buffer queued, not yet submitted, when the replay is
 * issued. */
static void test_replay_ordered_after_many_owners(void **state)
{
    (void)state;
    enum { MANY = 70 };
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    cubec_stream owners[MANY];
    tbuf b[MANY], out[MANY];
    static uint32_t data[MANY][N];
    uint32_t rng = 70, want[N], stepped[N];
    for (uint32_t i = 0; i < MANY; i++) {
        owners[i] = new_stream(d);
        random_words(data[i], N, &rng);
        b[i] = make_buffer(d, owners[i], data[i]);
        out[i] = make_buffer(d, s, NULL);
    }
    ASSERT_OK(cubec_graph_prepare(d, s));
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) ASSERT_OK(cubec_graph_begin(d, s));
        for (uint32_t i = 0; i < MANY; i++)
            ASSERT_OK(uint_launch(d, s, k.consume, b[i].h, out[i].h, N, 3, i));
        if (pass == 0) ASSERT_OK(cubec_sync(d, s));
    }
    cubec_graph g = end_capture(d, s);
    for (uint32_t i = 0; i < MANY; i++)
        ASSERT_OK(uint_launch(d, owners[i], k.step, b[i].h, NONE, N, 2, 1));
    ASSERT_OK(cubec_graph_replay(d, s, g));
    for (uint32_t i = 0; i < MANY; i++) {
        cpu_consume(data[i], stepped, N, 2, 1);
        cpu_consume(stepped, want, N, 3, i);
        char what[96];
        snprintf(what, sizeof what, "out[%u]: the replay ran before the step queued on its owner",
                 i);
        uint32_t got[N];
        ASSERT_OK(cubec_read(d, s, out[i].h, 0, got, BYTES));
        if (memcmp(got, want, sizeof got)) {
            ASSERT_OK(cubec_graph_destroy(d, s, g));
            finish_many_owners(d, k, b, out, MANY);
            fail_msg("BUG: %s (of %u owners)", what, (unsigned)MANY);
        }
    }
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    finish_many_owners(d, k, b, out, MANY);
}

static void test_failed_replay_taints_until_next_success(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t rng = 11;
    uint32_t xs[N];
    random_words(xs, N, &rng);
    tbuf x = make_buffer(d, s, xs), y = make_buffer(d, s, NULL);
    cubec_graph g = capture_consume(d, s, &k, x.h, y.h, 3, 1);
    expect_replay_computes(d, s, g, x.h, y.h, 3, 1, &rng, "replay before the failure");

    random_words(xs, N, &rng);
    ASSERT_OK(cubec_write(d, s, x.h, 0, xs, BYTES));
    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_ERROR(cubec_graph_replay(d, s, g), CUBEC_INTERNAL, "injected fault: submit call #");
    char failed[128];
    snprintf(failed, sizeof failed, "replay of graph #1 on stream %" PRIu64 " failed",
             stream_number(s));
    ASSERT_ERROR2(cubec_check(d, &y.h, 1), CUBEC_INTERNAL, failed, "injected fault");
    uint32_t got[N];
    ASSERT_ERROR(cubec_read(d, s, y.h, 0, got, BYTES), CUBEC_INTERNAL, failed);
    expect_words(d, s, x.h, xs, "x (the failed replay's input is not tainted)");

    expect_replay_computes(d, s, g, x.h, y.h, 3, 1, &rng, "replay after the failed one");
    ASSERT_OK(cubec_check(d, &y.h, 1));
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    FINISH(d, k, x, y);
}

static void test_replay_reads_indirect_counts_at_replay(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t rng = 12;
    uint32_t xs[N], sentinel[N], want[N], counts[N] = {4, 1, 1};
    random_words(xs, N, &rng);
    cpu_produce(sentinel, N, 0, 0xdddddddu);
    tbuf x = make_buffer(d, s, xs), y = make_buffer(d, s, NULL), c = make_buffer(d, s, counts);

    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(uint_launch_indirect(d, s, k.consume, x.h, y.h, N, 3, 1, c.h));
    cpu_consume(xs, want, N, 3, 1);
    expect_words(d, s, y.h, want, "the indirect warm-up (4 groups)");
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(uint_launch_indirect(d, s, k.consume, x.h, y.h, N, 3, 1, c.h));
    cubec_graph g = end_capture(d, s);

    const uint32_t groups[] = {1, 3, 0, 2, 4, 1};
    for (size_t r = 0; r < sizeof groups / sizeof groups[0]; r++) {
        random_words(xs, N, &rng);
        ASSERT_OK(cubec_write(d, s, x.h, 0, xs, BYTES));
        ASSERT_OK(cubec_write(d, s, y.h, 0, sentinel, BYTES));
        uint32_t cnt[3] = {groups[r], 1, 1};
        ASSERT_OK(cubec_write(d, s, c.h, 0, cnt, sizeof cnt));
        ASSERT_OK(cubec_graph_replay(d, s, g));
        memcpy(want, sentinel, sizeof want);
        cpu_consume(xs, want, groups[r] * 64, 3, 1);
        char what[96];
        snprintf(what, sizeof what, "y of a replay with %u indirect groups", groups[r]);
        expect_words(d, s, y.h, want, what);
    }
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    FINISH(d, k, x, y, c);
}

static void test_replay_skipped_when_input_failed(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t rng = 13;
    uint32_t xs[N], sentinel[N];
    random_words(xs, N, &rng);
    cpu_produce(sentinel, N, 0, 0xaaaau);
    tbuf x = make_buffer(d, s, xs), y = make_buffer(d, s, NULL);
    cubec_graph g = capture_consume(d, s, &k, x.h, y.h, 3, 1);
    expect_replay_computes(d, s, g, x.h, y.h, 3, 1, &rng, "replay before the input failed");

    taint_by_lost_submission(d, s, k.produce, x.h, N, 1, 1);
    ASSERT_OK(cubec_write(d, s, y.h, 0, sentinel, BYTES));
    uint64_t skipped = server_stats_get(d).skipped;
    ASSERT_OK(cubec_graph_replay(d, s, g)); /* skipped: not an error of the call */
    assert_int_equal(server_stats_get(d).skipped, skipped + 1);
    char want[256];
    snprintf(want, sizeof want,
             "replay of graph #1 on stream %" PRIu64
             " was skipped because its input buffer #%" PRIu64 " was not written",
             stream_number(s), x.number);
    ASSERT_ERROR2(cubec_check(d, &y.h, 1), CUBEC_INTERNAL, want, "injected fault");
    ASSERT_ERROR(cubec_check(d, &x.h, 1), CUBEC_INTERNAL, "injected fault");

    expect_replay_computes(d, s, g, x.h, y.h, 3, 1, &rng, "replay after the input was rewritten");
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    FINISH(d, k, x, y);
}

/* Found by these tests. A binding that a graph's first launch reads and writes (step: v = v*mul +
 * add) is read before the graph writes it, so it is an input of the replay: cubec.h says a replay
 * whose input carries a failure is skipped "like a launch", and a launch treats a read-write
 * binding as an input (test_failure_rules: "A read-write binding that carries a failure is an
 * input too"); the capture itself does (a skipped step dooms it). A replay that runs on it instead
 * computes from bytes nobody wrote and then clears their failure. */
static void test_replay_skipped_when_read_write_input_failed(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t vs[N], want[N];
    cpu_produce(vs, N, 5, 3);
    tbuf v = make_buffer(d, s, vs);
    cubec_graph g = capture_one(d, s, k.step, v.h, NONE, 3, 1);
    ASSERT_OK(cubec_write(d, s, v.h, 0, vs, BYTES));
    ASSERT_OK(cubec_graph_replay(d, s, g));
    cpu_consume(vs, want, N, 3, 1);
    expect_words(d, s, v.h, want, "v after one replay");

    taint_by_lost_submission(d, s, k.produce, v.h, N, 1, 1);
    uint64_t skipped = server_stats_get(d).skipped;
    ASSERT_OK(cubec_graph_replay(d, s, g));
    char msg[256];
    snprintf(msg, sizeof msg,
             "replay of graph #1 on stream %" PRIu64
             " was skipped because its input buffer #%" PRIu64 " was not written",
             stream_number(s), v.number);
    cubec_status st = cubec_check(d, &v.h, 1);
    if (!st) {
        ASSERT_OK(cubec_graph_destroy(d, s, g));
        FINISH(d, k, v);
        fail_msg("BUG: a replay ran on a read-write input that carried a failure and cleared it "
                 "(expected the replay to be skipped: \"%s\")",
                 msg);
    }
    ASSERT_ERROR2(st, CUBEC_INTERNAL, msg, "injected fault");
    assert_int_equal(server_stats_get(d).skipped, skipped + 1);

    ASSERT_OK(cubec_write(d, s, v.h, 0, vs, BYTES));
    ASSERT_OK(cubec_graph_replay(d, s, g));
    expect_words(d, s, v.h, want, "v after it was rewritten and replayed");
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    FINISH(d, k, v);
}

/* Found by these tests. A graph that writes a buffer and then reads a view of it (here: produce
 * into y, consume the first half of y through a view) does not read that view before writing it.
 * After a failed replay taints y, the next replay must run and clear it (cubec.h: "if it fails,
 * its outputs carry the failure until a later replay succeeds"); it must not take the view for an
 * input that carries a failure and skip itself, and so every later replay, for ever. */
static void test_failed_replay_recovers_when_graph_reads_a_view_it_wrote(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    const uint32_t half = N / 2;
    uint32_t wy[N], wz[N];
    cpu_produce(wy, N, 3, 7);
    cpu_consume(wy, wz, half, 5, 1);
    tbuf y = make_buffer(d, s, NULL), z = make_buffer(d, s, NULL);
    cubec_buffer yv = {0};
    ASSERT_OK(cubec_buffer_view(d, y.h, 0, (uint64_t)half * 4, &yv));

    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(uint_launch(d, s, k.produce, y.h, NONE, N, 3, 7));
    ASSERT_OK(uint_launch(d, s, k.consume, yv, z.h, half, 5, 1));
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(uint_launch(d, s, k.produce, y.h, NONE, N, 3, 7));
    ASSERT_OK(uint_launch(d, s, k.consume, yv, z.h, half, 5, 1));
    cubec_graph g = end_capture(d, s);
    ASSERT_OK(cubec_graph_replay(d, s, g));
    expect_words(d, s, y.h, wy, "y after a replay");
    expect_range_in(d, s, z.h, N, 0, half, wz, "z after a replay");

    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_ERROR(cubec_graph_replay(d, s, g), CUBEC_INTERNAL, "injected fault: submit call #");
    ASSERT_ERROR(cubec_check(d, &y.h, 1), CUBEC_INTERNAL, "failed: injected fault");

    ASSERT_OK(cubec_graph_replay(d, s, g));
    cubec_status st = cubec_check(d, (cubec_buffer[]){y.h, z.h}, 2);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
        cubec_status_free(st);
        ASSERT_OK(cubec_graph_destroy(d, s, g));
        ASSERT_OK(cubec_buffer_release(d, yv));
        FINISH(d, k, y, z);
        fail_msg("BUG: the replay after a failed one did not clear its outputs: %s", msg);
    }
    expect_words(d, s, y.h, wy, "y after the replay that followed the failed one");
    expect_range_in(d, s, z.h, N, 0, half, wz, "z after the replay that followed the failed one");
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    ASSERT_OK(cubec_buffer_release(d, yv));
    FINISH(d, k, y, z);
}

/* Found in review. A graph that writes a buffer in two views (produce into its first half and into
 * its second half) and then reads the whole buffer (consume b -> y) wrote every byte of b before
 * reading it, in two pieces: b is not an input of a replay. After a failed replay taints b and y,
 * the next replay must run and clear them; it must not take b for an input that carries a failure
 * and skip itself, and so every later replay. */
static void test_failed_replay_recovers_when_graph_writes_a_buffer_in_pieces(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    const uint32_t half = N / 2;
    uint32_t wb[N], wy[N];
    cpu_produce(wb, half, 1, 0);
    cpu_produce(wb + half, half, 1, 1000);
    cpu_consume(wb, wy, N, 3, 7);
    tbuf b = make_buffer(d, s, NULL), y = make_buffer(d, s, NULL);
    cubec_buffer lo = {0}, hi = {0};
    ASSERT_OK(cubec_buffer_view(d, b.h, 0, (uint64_t)half * 4, &lo));
    ASSERT_OK(cubec_buffer_view(d, b.h, (uint64_t)half * 4, (uint64_t)half * 4, &hi));

    ASSERT_OK(cubec_graph_prepare(d, s));
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) ASSERT_OK(cubec_graph_begin(d, s));
        ASSERT_OK(uint_launch(d, s, k.produce, lo, NONE, half, 1, 0));
        ASSERT_OK(uint_launch(d, s, k.produce, hi, NONE, half, 1, 1000));
        ASSERT_OK(uint_launch(d, s, k.consume, b.h, y.h, N, 3, 7));
        if (pass == 0) expect_words(d, s, y.h, wy, "the warm-up's y");
    }
    cubec_graph g = end_capture(d, s);
    ASSERT_OK(cubec_graph_replay(d, s, g));
    expect_words(d, s, b.h, wb, "b after a replay");
    expect_words(d, s, y.h, wy, "y after a replay");

    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_ERROR(cubec_graph_replay(d, s, g), CUBEC_INTERNAL, "injected fault: submit call #");
    char failed[128];
    snprintf(failed, sizeof failed, "replay of graph #1 on stream %" PRIu64 " failed",
             stream_number(s));
    ASSERT_ERROR2(cubec_check(d, &b.h, 1), CUBEC_INTERNAL, failed, "injected fault");
    ASSERT_ERROR2(cubec_check(d, &y.h, 1), CUBEC_INTERNAL, failed, "injected fault");

    for (int r = 0; r < 3; r++) {
        uint64_t skipped = server_stats_get(d).skipped;
        ASSERT_OK(cubec_graph_replay(d, s, g));
        cubec_status st = cubec_sync_check(d, s, (cubec_buffer[]){b.h, y.h}, 2);
        if (st || server_stats_get(d).skipped != skipped) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", st ? cubec_status_message(st) : "no failure");
            cubec_status_free(st);
            ASSERT_OK(cubec_graph_destroy(d, s, g));
            ASSERT_OK(cubec_buffer_release(d, lo));
            ASSERT_OK(cubec_buffer_release(d, hi));
            FINISH(d, k, b, y);
            fail_msg("BUG: replay %d after the failed one was skipped or did not clear its "
                     "outputs: %s",
                     r + 1, msg);
        }
        expect_words(d, s, b.h, wb, "b after a replay that followed the failed one");
        expect_words(d, s, y.h, wy, "y after a replay that followed the failed one");
    }
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    ASSERT_OK(cubec_buffer_release(d, lo));
    ASSERT_OK(cubec_buffer_release(d, hi));
    FINISH(d, k, b, y);
}

/* o[i] = x[i] * mul + add with the output at binding 0 (write-only) and the input at binding 1
 * (read-only): bound to one buffer twice, it steps the buffer. */
static const char inc_src[] = UINT_KERNEL_HEAD
    "layout(std430, binding = 0) writeonly buffer O { uint o[]; };\n"
    "layout(std430, binding = 1) readonly buffer X { uint x[]; };\n" UINT_KERNEL_INFO
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < info.n) o[i] = x[i] * info.mul + info.add;\n"
    "}\n";

/* Found in review. A launch that binds one buffer as write-only (binding 0) and as read-only
 * (binding 1) reads it: its write binding does not make the read one the graph's own data. When
 * the buffer carries a failure, the eager launch is skipped, and so must a replay of a graph of
 * that launch be (cubec.h: a replay whose input carries a failure is skipped "like a launch"),
 * its output keeping a failure that names the replay; a replay that runs computes from bytes
 * nobody wrote and clears their failure. */
static void test_replay_skipped_when_aliased_read_binding_failed(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_kernel inc = make_kernel(d, "inc", inc_src);
    cubec_stream s = new_stream(d);
    uint32_t vs[N], want[N];
    cpu_produce(vs, N, 5, 3);
    tbuf v = make_buffer(d, s, vs);
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(uint_launch(d, s, inc, v.h, v.h, N, 3, 1));
    cpu_consume(vs, want, N, 3, 1);
    expect_words(d, s, v.h, want, "v after the warm-up");
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(uint_launch(d, s, inc, v.h, v.h, N, 3, 1));
    cubec_graph g = end_capture(d, s);
    ASSERT_OK(cubec_graph_replay(d, s, g));
    cpu_consume(want, want, N, 3, 1);
    expect_words(d, s, v.h, want, "v after one replay");

    taint_by_lost_submission(d, s, k.produce, v.h, N, 1, 1);
    uint64_t skipped = server_stats_get(d).skipped;
    ASSERT_OK(uint_launch(d, s, inc, v.h, v.h, N, 3, 1));
    char eager[256];
    snprintf(eager, sizeof eager,
             "launch \"inc\" on stream %" PRIu64 " was skipped because its input buffer #%" PRIu64
             " was not written",
             stream_number(s), v.number);
    ASSERT_ERROR2(cubec_sync_check(d, s, &v.h, 1), CUBEC_INTERNAL, eager, "injected fault");
    assert_int_equal(server_stats_get(d).skipped, skipped + 1);

    ASSERT_OK(cubec_graph_replay(d, s, g)); /* skipped: not an error of the call */
    char msg[256];
    snprintf(msg, sizeof msg,
             "replay of graph #1 on stream %" PRIu64
             " was skipped because its input buffer #%" PRIu64 " was not written",
             stream_number(s), v.number);
    cubec_status st = cubec_sync_check(d, s, &v.h, 1);
    if (!st) {
        ASSERT_OK(cubec_graph_destroy(d, s, g));
        ASSERT_OK(cubec_kernel_destroy(d, inc));
        FINISH(d, k, v);
        fail_msg("BUG: a replay ran on an aliased read-only binding that carried a failure and "
                 "cleared it (expected the replay to be skipped: \"%s\")",
                 msg);
    }
    ASSERT_ERROR2(st, CUBEC_INTERNAL, msg, "injected fault");
    assert_int_equal(server_stats_get(d).skipped, skipped + 2);

    /* Rewritten by the host, v is an input that is fine again: the replay runs. */
    ASSERT_OK(cubec_write(d, s, v.h, 0, vs, BYTES));
    ASSERT_OK(cubec_graph_replay(d, s, g));
    cpu_consume(vs, want, N, 3, 1);
    expect_words(d, s, v.h, want, "v after it was rewritten and replayed");
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    ASSERT_OK(cubec_kernel_destroy(d, inc));
    FINISH(d, k, v);
}

/* Found in review. Destroying a graph waits for its last replay; when that wait fails (the device
 * is lost) while replays are still queued for the submission thread, the destroy must let that
 * thread finish with the queue and the graph's command buffers before it waits for the device
 * and frees them: the call returns CUBEC_DEVICE_LOST, the validation layer says nothing (freeing
 * command buffers in use or using the queue from two threads at once would), and the device
 * closes. */
static void test_destroy_after_failed_wait_with_replays_queued(void **state)
{
    (void)state;
    /* One workgroup per launch: lavapipe allocates a 4096-aligned block of 192 bytes for every
     * workgroup it runs, which under ASan takes a 10 KiB chunk while the quarantine counts it as
     * 192 bytes; with 64 workgroups per launch this test alone held 8.9 GB. The replays stay
     * queued for the submission thread all the same (23-24 of 24 found there either way). */
    enum { GRAPHS = 24, LAUNCHES = 300, WORDS = 64 };
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    static uint32_t v_words[WORDS];
    memset(v_words, 0, sizeof v_words);
    cubec_buffer v = {0};
    ASSERT_OK(cubec_buffer_from(d, s, v_words, sizeof v_words, &v));
    cubec_graph g[GRAPHS];
    for (int i = 0; i < GRAPHS; i++) {
        ASSERT_OK(cubec_graph_prepare(d, s));
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1) ASSERT_OK(cubec_graph_begin(d, s));
            for (int j = 0; j < LAUNCHES; j++)
                ASSERT_OK(uint_launch(d, s, k.step, v, NONE, WORDS, 3, 1));
        }
        g[i] = end_capture(d, s);
    }
    /* The warm-ups ran: GRAPHS * LAUNCHES steps v = 3v + 1 from 0. */
    uint32_t want = 0;
    for (int i = 0; i < GRAPHS * LAUNCHES; i++)
        want = want * 3 + 1;
    ASSERT_OK(cubec_read(d, s, v, 0, v_words, sizeof v_words));
    for (uint32_t i = 0; i < WORDS; i++)
        if (v_words[i] != want)
            fail_msg("v after the warm-ups: word %u is %u, expected %u", i, v_words[i], want);

    for (int i = 0; i < GRAPHS; i++)
        ASSERT_OK(cubec_graph_replay(d, s, g[i]));
    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    ASSERT_OK(cubec_fault_get_counts(d, counts));
    char want_msg[96];
    snprintf(want_msg, sizeof want_msg, "injected fault: wait call #%" PRIu64,
             counts[CUBEC_FAULT_WAIT] + 1);
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_WAIT, 1));
    ASSERT_ERROR(cubec_graph_destroy(d, s, g[GRAPHS - 1]), CUBEC_DEVICE_LOST, want_msg);
    ASSERT_ERROR(cubec_sync(d, s), CUBEC_DEVICE_LOST, "lost");
    ASSERT_ERROR(cubec_graph_replay(d, s, g[0]), CUBEC_DEVICE_LOST, "lost");
    test_device_close(d); /* frees the other graphs, the buffer and the kernels */
}

/* A long graph: 600 launches with metadata that does not fit push constants, ping-ponging between
 * two buffers. The graph keeps their metadata in more than one chunk of its own memory and, without
 * push descriptors (CUBEC_PUSH_DESCRIPTORS=0, test_graphs_descriptor_pools), their descriptor sets
 * in more than one pool. */
static void test_long_graph(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    enum { LAUNCHES = 600 };
    uint32_t rng = 77;
    uint32_t as[N], want[N];
    tbuf a = make_buffer(d, s, NULL), b = make_buffer(d, s, NULL);
    ASSERT_OK(cubec_graph_prepare(d, s));
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) ASSERT_OK(cubec_graph_begin(d, s));
        for (uint32_t i = 0; i < LAUNCHES; i++)
            ASSERT_OK(launch_big(d, s, k.big, i % 2 ? b.h : a.h, i % 2 ? a.h : b.h, 2 * i + 1, i));
        if (pass == 0) ASSERT_OK(cubec_sync(d, s));
    }
    cubec_graph g = end_capture(d, s);
    for (uint32_t r = 0; r < 3; r++) {
        random_words(as, N, &rng);
        ASSERT_OK(cubec_write(d, s, a.h, 0, as, BYTES));
        ASSERT_OK(cubec_graph_replay(d, s, g));
        memcpy(want, as, sizeof want);
        for (uint32_t i = 0; i < LAUNCHES; i++)
            cpu_consume(want, want, N, 2 * i + 1, i);
        expect_words(d, s, a.h, want, "a after 600 launches"); /* LAUNCHES is even */
    }
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    FINISH(d, k, a, b);
}

/* Found by these tests. A profile begun before a capture window and ended inside it covers
 * launches that were recorded, not run. cubec.h "Profiling": "a measurement of work that did not
 * run is never returned as a time"; and a profile's end waits for the stream, like the cubec_sync
 * that the window refuses. So cubec_profile_end there must fail (refused with CUBEC_GRAPH_STATE,
 * or CUBEC_PROFILE_INVALID), and that failure must not doom the capture. */
static void test_profile_spanning_capture_returns_no_time(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t rng = 21;
    uint32_t xs[N];
    random_words(xs, N, &rng);
    tbuf x = make_buffer(d, s, xs), y = make_buffer(d, s, NULL);
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, y.h, N, 3, 1));
    cubec_profile p = {0};
    ASSERT_OK(cubec_profile_begin(d, s, &p)); /* before the window: accepted */
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, y.h, N, 3, 1));
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    cubec_status st = cubec_profile_end(d, s, p, &r);
    cubec_code code = cubec_status_code(st);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
    cubec_status_free(st);
    cubec_status_free(cubec_profile_abandon(d, s, p)); /* whether or not end consumed it */
    cubec_graph g = {0};
    st = cubec_graph_end(d, s, &g);
    if (code != CUBEC_GRAPH_STATE && code != CUBEC_PROFILE_INVALID) {
        cubec_status_free(st);
        ASSERT_OK(cubec_graph_destroy(d, s, g));
        FINISH(d, k, x, y);
        fail_msg("BUG: cubec_profile_end inside a capture window gave %s (%s, %" PRIu64
                 " ns) for a launch that was recorded, not run",
                 cubec_code_name(code), msg, r.duration_ns);
    }
    printf("    cubec_profile_end inside the window\n      -> %s: %s\n", cubec_code_name(code),
           msg);
    ASSERT_OK(st);
    expect_replay_computes(d, s, g, x.h, y.h, 3, 1, &rng, "replay of the profiled capture");
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    FINISH(d, k, x, y);
}

/* Closing the device frees what graphs hold: a graph never destroyed (with a replay in flight)
 * and a capture still recording (ASan's leak check and the validation layer judge). */
static void test_close_with_live_graphs(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d), s2 = new_stream(d);
    uint32_t rng = 3;
    uint32_t xs[N];
    random_words(xs, N, &rng);
    tbuf x = make_buffer(d, s, xs), y = make_buffer(d, s, NULL), z = make_buffer(d, s2, NULL);
    cubec_graph g = capture_consume(d, s, &k, x.h, y.h, 3, 1);
    expect_replay_computes(d, s, g, x.h, y.h, 3, 1, &rng, "replay before the close");
    ASSERT_OK(cubec_graph_replay(d, s, g));
    release(d, x);
    release(d, y);
    begin_after_warm_up(d, s2, k.produce, z.h, NONE, 1, 2);
    finish(d, k, NULL, 0);
}

/* 9 ------------------------------------------------------------------------------------------- */

/* One dense layer: y[r][j] = act(sum_k w[j][k] * x[r][k] + b[j]), act = ReLU when RELU is set. */
static const char dense_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer X { float x[]; };\n"
    "layout(std430, binding = 1) readonly buffer W { float w[]; };\n"
    "layout(std430, binding = 2) readonly buffer B { float b[]; };\n"
    "layout(std430, binding = 3) writeonly buffer Y { float y[]; };\n"
    "CUBEC_INFO(uint batch; uint n_in; uint n_out;)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i >= info.batch * info.n_out) return;\n"
    "  uint r = i / info.n_out, j = i % info.n_out;\n"
    "  float acc = b[j];\n"
    "  for (uint k = 0u; k < info.n_in; k++) acc += w[j * info.n_in + k] * x[r * info.n_in + k];\n"
    "#ifdef RELU\n"
    "  acc = max(acc, 0.0);\n"
    "#endif\n"
    "  y[i] = acc;\n"
    "}\n";

enum { BATCH = 16, D_IN = 64, D_HID = 128, D_OUT = 32, MLP_REPLAYS = 100 };

static void cpu_dense(const float *x, const float *w, const float *b, float *y, uint32_t n_in,
                      uint32_t n_out, int relu)
{
    for (uint32_t r = 0; r < BATCH; r++)
        for (uint32_t j = 0; j < n_out; j++) {
            double acc = b[j];
            for (uint32_t k = 0; k < n_in; k++)
                acc += (double)w[j * n_in + k] * (double)x[r * n_in + k];
            y[r * n_out + j] = (float)(relu && acc < 0 ? 0 : acc);
        }
}

static cubec_status dense(cubec_device *d, cubec_stream s, cubec_kernel k, cubec_buffer x,
                          cubec_buffer w, cubec_buffer b, cubec_buffer y, uint32_t n_in,
                          uint32_t n_out)
{
    uint32_t info[3] = {BATCH, n_in, n_out};
    cubec_buffer bufs[4] = {x, w, b, y};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = bufs,
                            .buffer_count = 4,
                            .info = info,
                            .info_size = sizeof info,
                            .groups = {(BATCH * n_out + 63) / 64, 1, 1}};
    return cubec_launch(d, s, &ld);
}

static void expect_floats(cubec_device *d, cubec_stream s, cubec_buffer b, const float *want,
                          uint32_t n, const char *what, uint32_t round)
{
    float got[BATCH * D_OUT];
    assert_true(n <= BATCH * D_OUT);
    ASSERT_OK(cubec_read(d, s, b, 0, got, (uint64_t)n * 4));
    for (uint32_t i = 0; i < n; i++)
        if (!(fabsf(got[i] - want[i]) <= 1e-4f + 1e-4f * fabsf(want[i])))
            fail_msg("%s (round %u): element %u is %.7g, expected %.7g", what, round, i,
                     (double)got[i], (double)want[i]);
}

static void test_mlp_forward_replayed(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    cubec_stream s = new_stream(d);
    const cubec_define relu_def = {"RELU", NULL};
    cubec_kernel k1 = make_kernel_defined(d, "dense_relu", dense_src, &relu_def, 1);
    cubec_kernel k2 = make_kernel(d, "dense", dense_src);
    uint32_t rng = 2024;
    static float w1[D_HID * D_IN], b1[D_HID], w2[D_OUT * D_HID], b2[D_OUT];
    static float x[BATCH * D_IN], hid[BATCH * D_HID], out[BATCH * D_OUT];
    for (uint32_t i = 0; i < D_HID * D_IN; i++)
        w1[i] = test_randf(&rng) * 0.125f;
    for (uint32_t i = 0; i < D_HID; i++)
        b1[i] = test_randf(&rng) * 0.1f;
    for (uint32_t i = 0; i < D_OUT * D_HID; i++)
        w2[i] = test_randf(&rng) * 0.09f;
    for (uint32_t i = 0; i < D_OUT; i++)
        b2[i] = test_randf(&rng) * 0.1f;
    for (uint32_t i = 0; i < BATCH * D_IN; i++)
        x[i] = test_randf(&rng);
    cubec_buffer bw1, bb1, bw2, bb2, bx, bh, bz;
    ASSERT_OK(cubec_buffer_from(d, s, w1, sizeof w1, &bw1));
    ASSERT_OK(cubec_buffer_from(d, s, b1, sizeof b1, &bb1));
    ASSERT_OK(cubec_buffer_from(d, s, w2, sizeof w2, &bw2));
    ASSERT_OK(cubec_buffer_from(d, s, b2, sizeof b2, &bb2));
    ASSERT_OK(cubec_buffer_from(d, s, x, sizeof x, &bx));
    ASSERT_OK(cubec_buffer_create(d, s, sizeof hid, &bh));
    ASSERT_OK(cubec_buffer_create(d, s, sizeof out, &bz));

    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(dense(d, s, k1, bx, bw1, bb1, bh, D_IN, D_HID));
    ASSERT_OK(dense(d, s, k2, bh, bw2, bb2, bz, D_HID, D_OUT));
    cpu_dense(x, w1, b1, hid, D_IN, D_HID, 1);
    cpu_dense(hid, w2, b2, out, D_HID, D_OUT, 0);
    expect_floats(d, s, bz, out, BATCH * D_OUT, "the warm-up's output", 0);
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(dense(d, s, k1, bx, bw1, bb1, bh, D_IN, D_HID));
    ASSERT_OK(dense(d, s, k2, bh, bw2, bb2, bz, D_HID, D_OUT));
    cubec_graph g = end_capture(d, s);

    uint32_t positive = 0; /* the ReLU must neither pass nor cut everything */
    for (uint32_t r = 1; r <= MLP_REPLAYS; r++) {
        for (uint32_t i = 0; i < BATCH * D_IN; i++)
            x[i] = test_randf(&rng);
        ASSERT_OK(cubec_write(d, s, bx, 0, x, sizeof x));
        ASSERT_OK(cubec_graph_replay(d, s, g));
        cpu_dense(x, w1, b1, hid, D_IN, D_HID, 1);
        cpu_dense(hid, w2, b2, out, D_HID, D_OUT, 0);
        expect_floats(d, s, bz, out, BATCH * D_OUT, "MLP output", r);
        for (uint32_t i = 0; i < BATCH * D_HID; i++)
            positive += hid[i] > 0;
    }
    assert_true(positive > MLP_REPLAYS * BATCH * D_HID / 5);
    assert_true(positive < MLP_REPLAYS * BATCH * D_HID * 4 / 5);

    ASSERT_OK(cubec_graph_destroy(d, s, g));
    cubec_buffer all[] = {bw1, bb1, bw2, bb2, bx, bh, bz};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        ASSERT_OK(cubec_buffer_release(d, all[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k1));
    ASSERT_OK(cubec_kernel_destroy(d, k2));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_lifecycle),
        cmocka_unit_test(test_wrong_transitions_leave_stream_usable),
        cmocka_unit_test(test_refusals_while_recording),
        cmocka_unit_test(test_lazy_write_refusal),
        cmocka_unit_test(test_doomed_by_skipped_launch),
        cmocka_unit_test(test_new_page_while_recording),
        cmocka_unit_test(test_end_from_a_neighbour_finds_no_capture),
        cmocka_unit_test(test_begin_reports_warmup_failure),
        cmocka_unit_test(test_graph_keeps_released_buffer),
        cmocka_unit_test(test_replay_ordered_after_stream_work),
        cmocka_unit_test(test_replay_ordered_after_many_owners),
        cmocka_unit_test(test_failed_replay_taints_until_next_success),
        cmocka_unit_test(test_replay_reads_indirect_counts_at_replay),
        cmocka_unit_test(test_replay_skipped_when_input_failed),
        cmocka_unit_test(test_replay_skipped_when_read_write_input_failed),
        cmocka_unit_test(test_failed_replay_recovers_when_graph_reads_a_view_it_wrote),
        cmocka_unit_test(test_failed_replay_recovers_when_graph_writes_a_buffer_in_pieces),
        cmocka_unit_test(test_replay_skipped_when_aliased_read_binding_failed),
        cmocka_unit_test(test_destroy_after_failed_wait_with_replays_queued),
        cmocka_unit_test(test_long_graph),
        cmocka_unit_test(test_profile_spanning_capture_returns_no_time),
        cmocka_unit_test(test_close_with_live_graphs),
        cmocka_unit_test(test_mlp_forward_replayed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
