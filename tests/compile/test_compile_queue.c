/* The compile queue (server/compile_queue.c, docs/kernels.md "The compile queue"), on lavapipe
 * with validation. Every launch's output is compared with the CPU's.
 *
 *  - test_queue_under_threads: 6 threads queue 8 kernels each (12 distinct identities, shared
 *    between threads) and launch them at once on their own streams; every output matches, and
 *    the device compiled each identity exactly once.
 *  - test_launch_waits_only_for_its_kernel: with one worker held inside kernel A's build, a
 *    launch of kernel B, queued after A, runs and reads back right (the launching thread compiles
 *    B itself); when the launch waited for A, the hold timed out and the test fails.
 *  - test_dedupe: five handles of one kernel queued while its build is held share one job and one
 *    compilation; a sixth queued afterwards is ready at once.
 *  - test_async_error_lands_on_outputs: with [compile] async_create, a kernel that does not
 *    compile gives a handle; its launch puts the compiler's diagnostic on the declared output
 *    only (the input reads back as written), a consumer of that output is skipped with the chain
 *    down to the diagnostic, a launch declaring no output returns the error, and a write clears
 *    the output.
 *  - test_failed_kernel_in_profile_and_capture: that launch invalidates the profile around it
 *    and fails the graph capture recording it, naming the diagnostic; the input stays clean.
 *  - test_compile_fault_in_queue, test_pipeline_fault_in_queue: an injected compile or
 *    pipeline-creation fault (the third call) fails exactly one of six queued kernels, whose
 *    launch taints only its declared output (a consumer of it is skipped down to the fault; its
 *    input stays clean and usable); the other five run right, and queuing the failed one again
 *    builds it.
 *  - test_queue_and_disk_cache: kernels queued on a second device read their SPIR-V from the
 *    disk cache the first device's queue filled: no compile call is made.
 *  - test_queue_refusals: bad arguments to the new calls are refused, naming them; without
 *    async_create, cubec_kernel_create still returns a compile error itself.
 *
 * Before the queue existed, none of the calls these tests make (cubec_kernel_queue,
 * cubec_kernel_wait, cubec_kernel_compile_queued, declared_outputs) existed. The ThreadSanitizer
 * build runs this file too (make test). */
#include "test_flags.h"
#include "test_util.h"
#include "uint_kernels.h"

#include "server/compile_queue.h"
#include "server/device.h"
#include "server/kernel_disk.h"
#include "server/kernels.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 1000u
#define STREAM CUBEC_STREAM_CURRENT
enum { GATE_SECONDS = 20, THREADS = 6, PER_THREAD = 8, DISTINCT = 12 };

/* o[i] = i * mul + add + SALT: one source, a kernel per SALT. */
static const char salted_src[] = UINT_KERNEL_HEAD
    "layout(set = 0, binding = 0) writeonly buffer O { uint o[]; };\n" UINT_KERNEL_INFO
    "void main()\n"
    "{\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i < info.n) o[i] = i * info.mul + info.add + uint(SALT);\n"
    "}\n";

/* consume_src with an error on line 8 (an undeclared identifier). */
static const char broken_src[] = UINT_KERNEL_HEAD
    "layout(std430, binding = 0) readonly buffer X { uint x[]; };\n"
    "layout(std430, binding = 1) writeonly buffer Y { uint y[]; };\n" UINT_KERNEL_INFO
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < info.n) y[i] = x[i] * info.mul + undeclared_thing;\n"
    "}\n";

static cubec_status queue_salted(cubec_device *d, const char *name, uint32_t salt,
                                 cubec_kernel *out)
{
    char value[16];
    snprintf(value, sizeof value, "%u", salt);
    const cubec_define define = {"SALT", value};
    const cubec_kernel_desc desc = {.struct_size = sizeof(cubec_kernel_desc),
                                    .name = name,
                                    .glsl = salted_src,
                                    .defines = &define,
                                    .define_count = 1};
    return cubec_kernel_queue(d, &desc, out);
}

/* Launches salted kernel `k` (SALT `salt`) on `s` over a new buffer and compares with the CPU;
 * returns 1 when the words match. */
static int check_salted(cubec_device *d, cubec_stream s, cubec_kernel k, uint32_t salt)
{
    uint32_t *got = malloc(N * 4), *want = malloc(N * 4);
    assert_non_null(got);
    assert_non_null(want);
    cubec_buffer o = {0};
    ASSERT_OK(cubec_buffer_create(d, s, N * 4, &o));
    const uint32_t mul = 3 + salt, add = 7;
    ASSERT_OK(uint_launch(d, s, k, o, NONE, N, mul, add));
    ASSERT_OK(cubec_read(d, s, o, 0, got, N * 4));
    cpu_produce(want, N, mul, add + salt);
    ASSERT_OK(cubec_buffer_release(d, o));
    int same = memcmp(got, want, N * 4) == 0;
    free(got);
    free(want);
    return same;
}

/* ---- A gate holding one kernel's build (test-only compile hook) ----------------------------- */

typedef struct gate {
    test_flags sync;
    const char *held;  /* the kernel whose build is held */
    int build_started; /* its build reached the hook */
    int released;
    int timed_out; /* the hold ended after GATE_SECONDS without being released */
    int builds;    /* builds of any kernel that reached the hook */
} gate;

static void gate_init(gate *g, const char *held)
{
    memset(g, 0, sizeof *g);
    g->held = held;
    test_flags_init(&g->sync);
}

static void gate_destroy(gate *g)
{
    test_flags_destroy(&g->sync);
}

static void hook(void *user, server_hook_event event, const char *name)
{
    gate *g = user;
    if (event != SERVER_HOOK_BUILD) return;
    pthread_mutex_lock(&g->sync.lock);
    g->builds++;
    if (strcmp(name, g->held) == 0) {
        g->build_started = 1;
        pthread_cond_broadcast(&g->sync.changed);
        if (!test_flags_wait_locked(&g->sync, &g->released, GATE_SECONDS)) g->timed_out = 1;
    }
    pthread_mutex_unlock(&g->sync.lock);
}

/* A device opened with one environment variable set (read at open only). */
static cubec_device *open_with(const char *var, const char *value)
{
    const char *was = getenv(var);
    char old[256] = "";
    if (was) snprintf(old, sizeof old, "%s", was);
    setenv(var, value, 1);
    cubec_device *d = test_device_open();
    if (was)
        setenv(var, old, 1);
    else
        unsetenv(var);
    return d;
}

/* ---- Tests ------------------------------------------------------------------------------ */

typedef struct worker {
    cubec_device *d;
    uint32_t index;
    int mismatches;
    cubec_status st;
} worker;

static void *queue_and_launch(void *arg)
{
    worker *w = arg;
    cubec_stream s;
    w->st = cubec_stream_new(w->d, &s);
    if (w->st) return NULL;
    cubec_kernel k[PER_THREAD] = {{0}};
    uint32_t salt[PER_THREAD];
    for (uint32_t i = 0; i < PER_THREAD && !w->st; i++) {
        salt[i] = (w->index * 5 + i) % DISTINCT;
        w->st = queue_salted(w->d, "threaded", salt[i], &k[i]);
    }
    /* Launched in reverse: most are still compiling when their launch comes. */
    for (uint32_t i = PER_THREAD; i-- > 0 && !w->st;)
        w->mismatches += !check_salted(w->d, s, k[i], salt[i]);
    for (uint32_t i = 0; i < PER_THREAD; i++)
        cubec_status_free(cubec_kernel_destroy(w->d, k[i]));
    return NULL;
}

static void test_queue_under_threads(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    server_stats s0 = server_stats_get(d);
    worker w[THREADS];
    pthread_t t[THREADS];
    for (uint32_t i = 0; i < THREADS; i++) {
        w[i] = (worker){.d = d, .index = i};
        assert_int_equal(pthread_create(&t[i], NULL, queue_and_launch, &w[i]), 0);
    }
    for (uint32_t i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    for (uint32_t i = 0; i < THREADS; i++) {
        ASSERT_OK(w[i].st);
        assert_int_equal(w[i].mismatches, 0);
    }
    server_stats s1 = server_stats_get(d);
    compile_queue_stats q;
    compile_queue_get_stats(d, &q);
    /* Each identity built once, whichever thread compiled it and whenever the others queued it. */
    assert_int_equal(s1.compiles - s0.compiles, DISTINCT);
    assert_int_equal(q.queued, THREADS * PER_THREAD);
    assert_int_equal(q.jobs, q.by_workers + q.by_waiters);
    assert_int_equal(q.queued, q.jobs + q.deduped + q.ready);
    assert_true(q.threads >= 1 && q.threads <= q.parallelism);
    assert_int_equal(q.failed, 0);
    test_device_close(d);
}

static void test_launch_waits_only_for_its_kernel(void **state)
{
    (void)state;
    cubec_device *d = open_with("CUBEC_COMPILE_PARALLELISM", "1");
    gate g;
    gate_init(&g, "slow");
    server_kernel_set_compile_hook(d, hook, &g);
    cubec_kernel slow = {0}, fast = {0};
    ASSERT_OK(queue_salted(d, "slow", 1, &slow));
    int started =
        test_flags_await(&g.sync, &g.build_started, GATE_SECONDS); /* the only worker holds it */
    ASSERT_OK(queue_salted(d, "fast", 2, &fast));
    int fast_right = check_salted(d, STREAM, fast, 2);
    pthread_mutex_lock(&g.sync.lock);
    int slow_still_held = !g.released && !g.timed_out;
    pthread_mutex_unlock(&g.sync.lock);
    test_flags_set(&g.sync, &g.released);
    ASSERT_OK(cubec_kernel_wait(d, slow));
    server_kernel_set_compile_hook(d, NULL, NULL);
    assert_true(started);
    assert_true(fast_right);
    if (!slow_still_held)
        fail_msg("the launch of 'fast' waited for the build of 'slow' (held %d s)", GATE_SECONDS);
    assert_false(g.timed_out);
    assert_true(check_salted(d, STREAM, slow, 1));
    compile_queue_stats q;
    compile_queue_get_stats(d, &q);
    assert_int_equal(q.threads, 1);
    assert_int_equal(q.by_workers, 1);
    assert_int_equal(q.by_waiters, 1); /* 'fast', by the launching thread */
    ASSERT_OK(cubec_kernel_destroy(d, slow));
    ASSERT_OK(cubec_kernel_destroy(d, fast));
    gate_destroy(&g);
    test_device_close(d);
}

static void test_dedupe(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    server_stats s0 = server_stats_get(d);
    gate g;
    gate_init(&g, "twin");
    server_kernel_set_compile_hook(d, hook, &g);
    static const char *const names[5] = {"twin", "b", "c", "d", "e"};
    cubec_kernel k[6] = {{0}};
    ASSERT_OK(queue_salted(d, names[0], 9, &k[0]));
    int started = test_flags_await(&g.sync, &g.build_started, GATE_SECONDS);
    for (int i = 1; i < 5; i++)
        ASSERT_OK(queue_salted(d, names[i], 9, &k[i]));
    test_flags_set(&g.sync, &g.released);
    ASSERT_OK(cubec_kernel_compile_queued(d));
    server_kernel_set_compile_hook(d, NULL, NULL);
    ASSERT_OK(queue_salted(d, "late", 9, &k[5]));
    assert_true(started);
    assert_int_equal(g.builds, 1);
    compile_queue_stats q;
    compile_queue_get_stats(d, &q);
    assert_int_equal(q.jobs, 1);
    assert_int_equal(q.deduped, 4);
    assert_int_equal(q.ready, 1);
    assert_int_equal(server_stats_get(d).compiles - s0.compiles, 1);
    cubec_kernel_info first = CUBEC_KERNEL_INFO_INIT, info = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k[0], &first));
    for (int i = 0; i < 6; i++) {
        ASSERT_OK(cubec_kernel_get_info(d, k[i], &info));
        assert_true(info.hash == first.hash);
        assert_true(check_salted(d, STREAM, k[i], 9));
        ASSERT_OK(cubec_kernel_destroy(d, k[i]));
    }
    gate_destroy(&g);
    test_device_close(d);
}

static void test_async_error_lands_on_outputs(void **state)
{
    (void)state;
    cubec_device *d = open_with("CUBEC_COMPILE_ASYNC_CREATE", "on");
    static uint32_t x[N], y0[N], got[N], want[N];
    for (uint32_t i = 0; i < N; i++) {
        x[i] = i * 2654435761u + 1u;
        y0[i] = 0xdead0000u + i;
    }
    cubec_buffer bx = {0}, by = {0}, bz = {0};
    ASSERT_OK(cubec_buffer_create(d, STREAM, sizeof x, &bx));
    ASSERT_OK(cubec_buffer_create(d, STREAM, sizeof x, &by));
    ASSERT_OK(cubec_buffer_create(d, STREAM, sizeof x, &bz));
    ASSERT_OK(cubec_write(d, STREAM, bx, 0, x, sizeof x));
    ASSERT_OK(cubec_write(d, STREAM, by, 0, y0, sizeof y0));
    /* Returns at once, error or not. */
    const cubec_kernel_desc bd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "broken.comp", .glsl = broken_src};
    cubec_kernel broken = {0}, consume = {0};
    ASSERT_OK(cubec_kernel_create(d, &bd, &broken));
    const cubec_kernel_desc cd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "consume", .glsl = consume_src};
    ASSERT_OK(cubec_kernel_create(d, &cd, &consume));

    uint32_t info[3] = {N, 3, 5};
    cubec_buffer xy[2] = {bx, by};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = broken,
                            .buffers = xy,
                            .buffer_count = 2,
                            .info = info,
                            .info_size = sizeof info,
                            .groups = {(N + 63) / 64, 1, 1},
                            .declared_outputs = 1u << 1};
    ASSERT_OK(cubec_launch(d, STREAM, &ld));
    /* The output carries the diagnostic, file name and line included. */
    ASSERT_ERROR(cubec_read(d, STREAM, by, 0, got, sizeof got), CUBEC_COMPILE_FAILED,
                 "launch \"broken.comp\" on stream");
    ASSERT_ERROR(cubec_check(d, &by, 1), CUBEC_COMPILE_FAILED, "broken.comp:8: error");
    /* The input is untouched and clean. */
    ASSERT_OK(cubec_check(d, &bx, 1));
    ASSERT_OK(cubec_read(d, STREAM, bx, 0, got, sizeof got));
    assert_memory_equal(got, x, sizeof x);
    /* A consumer of the output is skipped; the chain ends at the diagnostic. */
    ASSERT_OK(uint_launch(d, STREAM, consume, by, bz, N, 1, 0));
    ASSERT_ERROR(cubec_check(d, &bz, 1), CUBEC_COMPILE_FAILED, "was skipped because its input");
    ASSERT_ERROR(cubec_check(d, &bz, 1), CUBEC_COMPILE_FAILED, "undeclared_thing");
    /* Nothing declared: the launch returns the error and touches nothing. */
    ld.declared_outputs = 0;
    ld.buffers = (cubec_buffer[2]){bx, bz};
    ASSERT_ERROR(cubec_launch(d, STREAM, &ld), CUBEC_COMPILE_FAILED, "declares no outputs");
    ASSERT_ERROR(cubec_kernel_wait(d, broken), CUBEC_COMPILE_FAILED, "broken.comp:8: error");
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_ERROR(cubec_kernel_get_info(d, broken, &ki), CUBEC_COMPILE_FAILED, "broken.comp:8");
    /* A write clears the output; the good kernel then runs from it. */
    ASSERT_OK(cubec_write(d, STREAM, by, 0, y0, sizeof y0));
    ASSERT_OK(uint_launch(d, STREAM, consume, by, bz, N, 3, 1));
    ASSERT_OK(cubec_read(d, STREAM, bz, 0, got, sizeof got));
    cpu_consume(y0, want, N, 3, 1);
    assert_memory_equal(got, want, sizeof got);
    ASSERT_OK(cubec_kernel_destroy(d, broken));
    ASSERT_OK(cubec_kernel_destroy(d, consume));
    ASSERT_OK(cubec_buffer_release(d, bx));
    ASSERT_OK(cubec_buffer_release(d, by));
    ASSERT_OK(cubec_buffer_release(d, bz));
    test_device_close(d);
}

/* The launch of a kernel that did not compile does not run: a profile around it is invalid and a
 * capture that records it fails (spec 5.3), as for any launch that does not run. */
static void test_failed_kernel_in_profile_and_capture(void **state)
{
    (void)state;
    cubec_device *d = open_with("CUBEC_COMPILE_ASYNC_CREATE", "1");
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(d, &s));
    cubec_buffer bx = {0}, by = {0};
    ASSERT_OK(cubec_buffer_create(d, s, N * 4, &bx));
    ASSERT_OK(cubec_buffer_create(d, s, N * 4, &by));
    static uint32_t x[N];
    for (uint32_t i = 0; i < N; i++)
        x[i] = i ^ 0x5a5a5a5au;
    ASSERT_OK(cubec_write(d, s, bx, 0, x, sizeof x));
    const cubec_kernel_desc bd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "broken.comp", .glsl = broken_src};
    cubec_kernel broken = {0};
    ASSERT_OK(cubec_kernel_create(d, &bd, &broken));
    uint32_t info[3] = {N, 3, 5};
    cubec_buffer xy[2] = {bx, by};
    const cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                                  .kernel = broken,
                                  .buffers = xy,
                                  .buffer_count = 2,
                                  .info = info,
                                  .info_size = sizeof info,
                                  .groups = {(N + 63) / 64, 1, 1},
                                  .declared_outputs = 1u << 1};
    cubec_profile p;
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_OK(cubec_profile_begin(d, s, &p));
    ASSERT_OK(cubec_launch(d, s, &ld));
    ASSERT_ERROR(cubec_profile_end(d, s, p, &r), CUBEC_PROFILE_INVALID, "broken.comp:8: error");
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(cubec_launch(d, s, &ld));
    cubec_graph g = {0};
    ASSERT_ERROR(cubec_graph_end(d, s, &g), CUBEC_GRAPH_STATE, "its kernel did not compile");
    /* Through all of it the input stayed clean. */
    static uint32_t got[N];
    ASSERT_OK(cubec_read(d, s, bx, 0, got, sizeof got));
    assert_memory_equal(got, x, sizeof x);
    ASSERT_ERROR(cubec_check(d, &by, 1), CUBEC_COMPILE_FAILED, "did not run");
    ASSERT_OK(cubec_kernel_destroy(d, broken));
    ASSERT_OK(cubec_buffer_release(d, bx));
    ASSERT_OK(cubec_buffer_release(d, by));
    test_device_close(d);
}

/* y[i] = x[i] * mul + add + SALT (x read, y written): a salted kernel with an input. */
static const char salted_io_src[] = UINT_KERNEL_HEAD
    "layout(std430, binding = 0) readonly buffer X { uint x[]; };\n"
    "layout(std430, binding = 1) writeonly buffer Y { uint y[]; };\n" UINT_KERNEL_INFO
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < info.n) y[i] = x[i] * info.mul + info.add + uint(SALT);\n"
    "}\n";

static cubec_status queue_salted_io(cubec_device *d, uint32_t salt, cubec_kernel *out)
{
    char value[16];
    snprintf(value, sizeof value, "%u", salt);
    const cubec_define define = {"SALT", value};
    const cubec_kernel_desc desc = {.struct_size = sizeof(cubec_kernel_desc),
                                    .name = "faulty",
                                    .glsl = salted_io_src,
                                    .defines = &define,
                                    .define_count = 1};
    return cubec_kernel_queue(d, &desc, out);
}

/* Launches salted_io kernel `k` over in -> out (out declared written). */
static cubec_status launch_io(cubec_device *d, cubec_kernel k, cubec_buffer in, cubec_buffer out)
{
    static const uint32_t info[3] = {N, 3, 1};
    cubec_buffer io[2] = {in, out};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = io,
                            .buffer_count = 2,
                            .info = info,
                            .info_size = sizeof info,
                            .groups = {(N + 63) / 64, 1, 1},
                            .declared_outputs = 1u << 1};
    return cubec_launch(d, STREAM, &ld);
}

/* What a fault of `kind` (failing with `code`) at its third call does to six queued kernels:
 * exactly one fails, keeping the fault, which cubec_kernel_compile_queued reports with the
 * count; its launch puts the fault on its declared output, after which a consumer of that output
 * is skipped with the chain down to the fault, while its input reads back as written and feeds
 * another launch that runs right; the other five run right; queuing the failed kernel again
 * builds it (the fault is not repeated) while the failed handle keeps its error. */
static void fault_in_queue(cubec_fault_kind kind, cubec_code code)
{
    enum { K = 6 };
    char fault[64];
    snprintf(fault, sizeof fault, "injected fault: %s call #3", cubec_fault_kind_name(kind));
    cubec_device *d = test_device_open();
    uint64_t before[CUBEC_FAULT_KIND_COUNT], counts[CUBEC_FAULT_KIND_COUNT];
    ASSERT_OK(cubec_fault_get_counts(d, before));
    ASSERT_OK(cubec_fault_inject(d, kind, 3));
    cubec_kernel k[K] = {{0}}, consume = {0};
    for (uint32_t i = 0; i < K; i++)
        ASSERT_OK(queue_salted_io(d, 100 + i, &k[i]));
    ASSERT_ERROR(cubec_kernel_compile_queued(d), code,
                 "1 of the 6 kernels queued did not compile; the first");
    ASSERT_OK(cubec_fault_get_counts(d, counts));
    assert_int_equal(counts[kind] - before[kind], K);
    const cubec_kernel_desc cd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "consume", .glsl = consume_src};
    ASSERT_OK(cubec_kernel_create(d, &cd, &consume));
    static uint32_t in[N], got[N], want[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = 77u * i + 5u;
    cubec_buffer bin = {0}, o = {0}, next = {0};
    ASSERT_OK(cubec_buffer_create(d, STREAM, N * 4, &bin));
    ASSERT_OK(cubec_buffer_create(d, STREAM, N * 4, &o));
    ASSERT_OK(cubec_buffer_create(d, STREAM, N * 4, &next));
    ASSERT_OK(cubec_write(d, STREAM, bin, 0, in, sizeof in));
    int failed = 0;
    for (uint32_t i = 0; i < K; i++) {
        cubec_status st = cubec_kernel_wait(d, k[i]);
        if (!st) {
            ASSERT_OK(launch_io(d, k[i], bin, o));
            ASSERT_OK(cubec_read(d, STREAM, o, 0, got, sizeof got));
            cpu_consume(in, want, N, 3, 1 + 100 + i);
            assert_memory_equal(got, want, sizeof got);
            continue;
        }
        failed++;
        ASSERT_ERROR(st, code, fault);
        /* Its launch: the declared output carries the fault, after which a consumer of it is
         * skipped, the chain ending at the fault. */
        ASSERT_OK(launch_io(d, k[i], bin, o));
        ASSERT_ERROR(cubec_check(d, &o, 1), code, "launch \"faulty\" on stream");
        ASSERT_ERROR(cubec_check(d, &o, 1), code, fault);
        ASSERT_OK(uint_launch(d, STREAM, consume, o, next, N, 1, 0));
        ASSERT_ERROR(cubec_check(d, &next, 1), code, "was skipped because its input");
        ASSERT_ERROR(cubec_check(d, &next, 1), code, fault);
        /* Its input is clean: as written, and another launch reads it and runs. */
        ASSERT_OK(cubec_check(d, &bin, 1));
        ASSERT_OK(cubec_read(d, STREAM, bin, 0, got, sizeof got));
        assert_memory_equal(got, in, sizeof in);
        ASSERT_OK(uint_launch(d, STREAM, consume, bin, next, N, 5, 2));
        ASSERT_OK(cubec_read(d, STREAM, next, 0, got, sizeof got));
        cpu_consume(in, want, N, 5, 2);
        assert_memory_equal(got, want, sizeof got);
        /* Queued again: a new attempt, which builds; the failed handle stays failed. */
        cubec_kernel again = {0};
        ASSERT_OK(queue_salted_io(d, 100 + i, &again));
        ASSERT_OK(cubec_kernel_wait(d, again));
        ASSERT_OK(launch_io(d, again, bin, o));
        ASSERT_OK(cubec_read(d, STREAM, o, 0, got, sizeof got));
        cpu_consume(in, want, N, 3, 1 + 100 + i);
        assert_memory_equal(got, want, sizeof got);
        ASSERT_ERROR(cubec_kernel_wait(d, k[i]), code, fault);
        ASSERT_OK(cubec_kernel_destroy(d, again));
    }
    assert_int_equal(failed, 1);
    for (uint32_t i = 0; i < K; i++)
        ASSERT_OK(cubec_kernel_destroy(d, k[i]));
    ASSERT_OK(cubec_kernel_destroy(d, consume));
    ASSERT_OK(cubec_buffer_release(d, bin));
    ASSERT_OK(cubec_buffer_release(d, o));
    ASSERT_OK(cubec_buffer_release(d, next));
    test_device_close(d);
}

static void test_compile_fault_in_queue(void **state)
{
    (void)state;
    fault_in_queue(CUBEC_FAULT_COMPILE, CUBEC_COMPILE_FAILED);
}

/* A pipeline-creation fault behaves as a compile fault does (docs/kernels.md), with its own code
 * (CUBEC_INTERNAL, docs/errors.md). */
static void test_pipeline_fault_in_queue(void **state)
{
    (void)state;
    fault_in_queue(CUBEC_FAULT_PIPELINE, CUBEC_INTERNAL);
}

static void test_queue_and_disk_cache(void **state)
{
    (void)state;
    enum { K = 5 };
    char dir[128];
    test_temp_dir(dir, sizeof dir, "cubec_test_compile_queue");
    for (int pass = 0; pass < 2; pass++) {
        cubec_device *d = open_with("CUBEC_CACHE_DIR", dir);
        cubec_kernel k[K] = {{0}};
        for (uint32_t i = 0; i < K; i++)
            ASSERT_OK(queue_salted(d, "cached", 200 + i, &k[i]));
        ASSERT_OK(cubec_kernel_compile_queued(d));
        for (uint32_t i = 0; i < K; i++) {
            assert_true(check_salted(d, STREAM, k[i], 200 + i));
            ASSERT_OK(cubec_kernel_destroy(d, k[i]));
        }
        kernel_disk_stats ds;
        kernel_disk_get_stats(d, &ds);
        uint64_t counts[CUBEC_FAULT_KIND_COUNT];
        ASSERT_OK(cubec_fault_get_counts(d, counts));
        assert_true(ds.enabled);
        /* The first device compiles all five and stores them; the second compiles none. */
        assert_int_equal(ds.spirv_hits, pass ? K : 0);
        assert_int_equal(counts[CUBEC_FAULT_COMPILE], pass ? 0 : K);
        test_device_close(d);
    }
    test_remove_tree(dir);
}

static void test_queue_refusals(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = {0};
    ASSERT_ERROR(cubec_kernel_queue(d, NULL, &k), CUBEC_INVALID_ARGUMENT,
                 "cubec_kernel_queue: desc is NULL");
    const cubec_kernel_desc pd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "produce", .glsl = produce_src};
    ASSERT_ERROR(cubec_kernel_queue(d, &pd, NULL), CUBEC_INVALID_ARGUMENT,
                 "cubec_kernel_queue: out_kernel is NULL");
    ASSERT_ERROR(cubec_kernel_wait(d, (cubec_kernel){12345}), CUBEC_INVALID_ARGUMENT,
                 "cubec_kernel_wait: kernel");
    ASSERT_OK(cubec_kernel_compile_queued(d)); /* nothing queued */
    /* Without [compile] async_create, cubec_kernel_create still returns the compile error. */
    const cubec_kernel_desc bd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "broken.comp", .glsl = broken_src};
    ASSERT_ERROR(cubec_kernel_create(d, &bd, &k), CUBEC_COMPILE_FAILED, "broken.comp:8: error");
    assert_int_equal(k.id, 0);
    ASSERT_OK(cubec_kernel_queue(d, &pd, &k));
    cubec_buffer o = {0};
    ASSERT_OK(cubec_buffer_create(d, STREAM, N * 4, &o));
    uint32_t info[3] = {N, 1, 1};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = &o,
                            .buffer_count = 1,
                            .info = info,
                            .info_size = sizeof info,
                            .groups = {(N + 63) / 64, 1, 1},
                            .declared_outputs = 1u << 1};
    ASSERT_ERROR(cubec_launch(d, STREAM, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->declared_outputs is 0x2");
    ASSERT_OK(cubec_kernel_wait(d, k));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_buffer_release(d, o));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_under_threads),
        cmocka_unit_test(test_launch_waits_only_for_its_kernel),
        cmocka_unit_test(test_dedupe),
        cmocka_unit_test(test_async_error_lands_on_outputs),
        cmocka_unit_test(test_failed_kernel_in_profile_and_capture),
        cmocka_unit_test(test_compile_fault_in_queue),
        cmocka_unit_test(test_pipeline_fault_in_queue),
        cmocka_unit_test(test_queue_and_disk_cache),
        cmocka_unit_test(test_queue_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
