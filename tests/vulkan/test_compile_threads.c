/* Kernel builds run without the device lock (issue 11, "Hangs": a small GLSL macro bomb held the
 * lock for minutes, so every other thread's launches, reads and syncs on the device stalled).
 * A test-only hook (server_kernel_set_compile_hook) holds a build at its start until the test lets
 * it go; it waits at most GATE_SECONDS and records a timeout, so that a build made under the lock
 * fails these tests by a bounded wait instead of hanging them.
 *
 *  - test_build_runs_without_the_device_lock: while thread A's build is held, this thread writes,
 *    launches a kernel created earlier, reads and syncs on the same device, and its bytes match a
 *    CPU model. Under the lock, these calls waited for the hold to time out.
 *  - test_same_kernel_built_once: two threads create one kernel at once; the second waits for the
 *    first's build (the hook releases the build when it sees that wait), the device counts one
 *    build and one wait, and both handles launch correctly.
 *  - test_build_finishing_after_device_lost: the device is lost (an injected encode fault) while a
 *    build is held; the build then ends, and its publication fails with the device-lost error
 *    instead of adding a pipeline to a lost device (ASan checks that the set-aside pipeline is
 *    freed at close, validation that close is clean).
 * The ThreadSanitizer build runs this file too (make test). */
#include "test_flags.h"
#include "test_util.h"
#include "uint_kernels.h"

#include "server/device.h"
#include "server/kernels.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { WORDS = 4096, GATE_SECONDS = 20 };

/* What the hook holds and what it waits for, guarded by its own mutex (never by the device's). */
typedef struct gate {
    test_flags sync;
    const char *held;    /* the name of the kernel whose build is held */
    int release_on_wait; /* a creation waiting for the held build releases it */
    int build_started;   /* the held build reached the hook */
    int released;        /* the hold may end */
    int waits_seen;      /* creations that waited for the held build */
    int timed_out;       /* the hold ended after GATE_SECONDS without being released */
} gate;

static void gate_init(gate *g, const char *held, int release_on_wait)
{
    memset(g, 0, sizeof *g);
    g->held = held;
    g->release_on_wait = release_on_wait;
    test_flags_init(&g->sync);
}

static void gate_destroy(gate *g)
{
    test_flags_destroy(&g->sync);
}

static void hook(void *user, server_hook_event event, const char *name)
{
    gate *g = user;
    if (strcmp(name, g->held) != 0) return;
    pthread_mutex_lock(&g->sync.lock);
    if (event == SERVER_HOOK_WAIT) {
        g->waits_seen++;
        if (g->release_on_wait) g->released = 1;
    } else {
        g->build_started = 1;
    }
    pthread_cond_broadcast(&g->sync.changed);
    if (event == SERVER_HOOK_BUILD && !test_flags_wait_locked(&g->sync, &g->released, GATE_SECONDS))
        g->timed_out = 1;
    pthread_mutex_unlock(&g->sync.lock);
}

typedef struct creator {
    cubec_device *d;
    const cubec_kernel_desc *desc;
    cubec_kernel k;
    cubec_status st;
} creator;

static void *create(void *arg)
{
    creator *c = arg;
    c->st = cubec_kernel_create(c->d, c->desc, &c->k);
    return NULL;
}

static void start(pthread_t *t, creator *c)
{
    assert_int_equal(pthread_create(t, NULL, create, c), 0);
}

/* Launches produce_src's kernel `k` over a new buffer and checks the words against the CPU. */
static void check_produce(cubec_device *d, cubec_kernel k, uint32_t mul, uint32_t add)
{
    static uint32_t got[WORDS], want[WORDS];
    cpu_produce(want, WORDS, mul, add);
    cubec_buffer o;
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof got, &o));
    ASSERT_OK(uint_launch(d, 0, k, o, NONE, WORDS, mul, add));
    ASSERT_OK(cubec_read(d, 0, o, 0, got, sizeof got));
    assert_memory_equal(got, want, sizeof got);
    ASSERT_OK(cubec_buffer_release(d, o));
}

static void test_build_runs_without_the_device_lock(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    const cubec_kernel_desc sd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "step", .glsl = step_src};
    cubec_kernel step;
    ASSERT_OK(cubec_kernel_create(d, &sd, &step));
    gate g;
    gate_init(&g, "held", 0);
    server_kernel_set_compile_hook(d, hook, &g);
    const cubec_kernel_desc hd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "held", .glsl = produce_src};
    creator a = {.d = d, .desc = &hd};
    pthread_t t;
    start(&t, &a);

    /* Thread B (this one), once A's build is under way. */
    int started = test_flags_await(&g.sync, &g.build_started, GATE_SECONDS);
    static uint32_t init[WORDS], want[WORDS], got[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        init[i] = i * 2654435761u + 7u;
    cpu_consume(init, want, WORDS, 3, 11);
    cubec_buffer v = {0};
    cubec_status st = cubec_buffer_create(d, 0, sizeof init, &v);
    if (!st) st = cubec_write(d, 0, v, 0, init, sizeof init);
    if (!st) st = uint_launch(d, 0, step, v, NONE, WORDS, 3, 11);
    if (!st) st = cubec_read(d, 0, v, 0, got, sizeof got);
    if (!st) st = cubec_sync(d, 0);
    test_flags_set(&g.sync, &g.released);
    assert_int_equal(pthread_join(t, NULL), 0);
    server_kernel_set_compile_hook(d, NULL, NULL);

    assert_true(started);
    ASSERT_OK(st);
    if (g.timed_out)
        fail_msg("the held build kept the device lock: thread B's write, launch, read and sync "
                 "waited %d s for it",
                 GATE_SECONDS);
    assert_memory_equal(got, want, sizeof got);
    ASSERT_OK(a.st);
    check_produce(d, a.k, 5, 1);
    ASSERT_OK(cubec_buffer_release(d, v));
    ASSERT_OK(cubec_kernel_destroy(d, a.k));
    ASSERT_OK(cubec_kernel_destroy(d, step));
    gate_destroy(&g);
    test_device_close(d);
}

static void test_same_kernel_built_once(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    server_stats s0 = server_stats_get(d);
    gate g;
    gate_init(&g, "twin", 1);
    server_kernel_set_compile_hook(d, hook, &g);
    const cubec_kernel_desc td = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "twin", .glsl = produce_src};
    creator c[2] = {{.d = d, .desc = &td}, {.d = d, .desc = &td}};
    pthread_t t[2];
    start(&t[0], &c[0]);
    start(&t[1], &c[1]);
    assert_int_equal(pthread_join(t[0], NULL), 0);
    assert_int_equal(pthread_join(t[1], NULL), 0);
    server_kernel_set_compile_hook(d, NULL, NULL);
    server_stats s1 = server_stats_get(d);

    ASSERT_OK(c[0].st);
    ASSERT_OK(c[1].st);
    if (g.timed_out)
        fail_msg("no second creation waited for the held build within %d s", GATE_SECONDS);
    assert_int_equal(g.waits_seen, 1);
    assert_int_equal(s1.build_waits - s0.build_waits, 1);
    assert_int_equal(s1.compiles - s0.compiles, 1);
    assert_int_not_equal(c[0].k.id, c[1].k.id);
    cubec_kernel_info i0 = CUBEC_KERNEL_INFO_INIT, i1 = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, c[0].k, &i0));
    ASSERT_OK(cubec_kernel_get_info(d, c[1].k, &i1));
    assert_true(i0.hash == i1.hash);
    check_produce(d, c[0].k, 3, 9);
    check_produce(d, c[1].k, 7, 2);
    ASSERT_OK(cubec_kernel_destroy(d, c[0].k));
    ASSERT_OK(cubec_kernel_destroy(d, c[1].k));
    gate_destroy(&g);
    test_device_close(d);
}

static void test_build_finishing_after_device_lost(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    const cubec_kernel_desc sd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "step", .glsl = step_src};
    cubec_kernel step;
    ASSERT_OK(cubec_kernel_create(d, &sd, &step));
    cubec_buffer v;
    ASSERT_OK(cubec_buffer_create(d, 0, WORDS * 4u, &v));
    server_stats s0 = server_stats_get(d);
    gate g;
    gate_init(&g, "late", 0);
    server_kernel_set_compile_hook(d, hook, &g);
    const cubec_kernel_desc ld = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "late", .glsl = produce_src};
    creator a = {.d = d, .desc = &ld, .k = {.id = 1}};
    pthread_t t;
    start(&t, &a);

    /* While the build is held, the device is lost: an injected encode failure of the batch that
     * the flush hands to the submission thread, which the sync then reports. */
    int started = test_flags_await(&g.sync, &g.build_started, GATE_SECONDS);
    cubec_status lost = cubec_fault_inject(d, CUBEC_FAULT_ENCODE, 1);
    if (!lost) lost = uint_launch(d, 0, step, v, NONE, WORDS, 3, 11);
    if (!lost) lost = cubec_flush(d, 0);
    if (!lost) lost = cubec_sync(d, 0);
    test_flags_set(&g.sync, &g.released);
    assert_int_equal(pthread_join(t, NULL), 0);
    server_kernel_set_compile_hook(d, NULL, NULL);
    server_stats s1 = server_stats_get(d);

    assert_true(started);
    if (g.timed_out)
        fail_msg("the held build kept the device lock: losing the device waited %d s for it",
                 GATE_SECONDS);
    ASSERT_ERROR(lost, CUBEC_DEVICE_LOST, "injected fault: encode call #1");
    /* The build finished on a lost device: nothing was published, and the creation says why. */
    ASSERT_ERROR(a.st, CUBEC_DEVICE_LOST, "the device was lost earlier");
    assert_int_equal(a.k.id, 0);
    assert_int_equal(s1.compiles, s0.compiles);
    ASSERT_ERROR(cubec_kernel_create(d, &ld, &a.k), CUBEC_DEVICE_LOST, "lost earlier");
    gate_destroy(&g);
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_runs_without_the_device_lock),
        cmocka_unit_test(test_same_kernel_built_once),
        cmocka_unit_test(test_build_finishing_after_device_lost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
