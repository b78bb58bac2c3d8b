/* Regression tests for defects of issue 11 (what an adversarial trial broke), on the default
 * device with the validation layer on (any message fails the test), through the public API.
 *
 *  (a) test_event_free_after_failed_wait_keeps_staging: with staging forced (the discrete path on
 *      any device), an asynchronous read is queued behind a long kernel and its wait is made to
 *      fail (an injected wait fault: the device is treated as lost, but the GPU is still running).
 *      cubec_event_free must not destroy the staging buffer the queue is still copying into (the
 *      driver crashed, and the validation layer reports a buffer destroyed while in use); the
 *      memory is retired until the GPU is known to be done, here at close. A round whose read
 *      finished before the wait (a driver whose submissions wait for the earlier ones) is redone.
 *  (b) test_event_after_success_returns_results: the same read waited for successfully returns
 *      the kernel's results (a CPU model here) through the staging, which the event then frees.
 *  (c) test_launch_clears_its_whole_output_range / test_view_narrows_what_a_launch_clears: the rule
 *      docs/errors.md states (a launch is taken to write the whole range of each binding it may
 *      write): after a lost submission taints a buffer, a launch that stores to its first half
 *      only, given the whole buffer, clears the failure of all of it (the second half reads back
 *      the bytes from before the lost work); given a view of the first half, the second half keeps
 *      the failure.
 *  (d) test_long_kernel_wait_times_out: a kernel that never ends on a GPU and runs for seconds
 *      on lavapipe, against a wait limit of 0.2 s (CUBEC_WAIT_TIMEOUT): cubec_sync returns
 * CUBEC_TIMEOUT naming the kernel and the limit instead of blocking, later calls fail at once, and
 * close returns without waiting for the GPU (the ctest timeout would catch a hang) and without a
 * validation message.
 */
#include "test_util.h"
#include "uint_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUSY_WORDS (64u * 1024u)
#define STEPS 2000u

static void expected_busy(const uint32_t *init, uint32_t *want)
{
    for (uint32_t i = 0; i < BUSY_WORDS; i++) {
        uint32_t x = init[i];
        for (uint32_t k = 0; k < STEPS; k++)
            x = x * LCG_MUL + LCG_ADD;
        want[i] = x;
    }
}

typedef struct staged {
    cubec_device *d;
    cubec_kernel busy;
    cubec_buffer v;
    uint32_t *init, *got;
} staged;

/* A device with staging forced, a buffer of BUSY_WORDS known words and a long kernel queued on
 * it (tens of milliseconds on lavapipe), so that a read queued next waits for the GPU. */
static staged staged_open(void)
{
    setenv("CUBEC_FORCE_STAGING", "1", 1);
    staged s = {.d = test_device_open()};
    unsetenv("CUBEC_FORCE_STAGING");
    const cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "busy", .glsl = busy_src};
    ASSERT_OK(cubec_kernel_create(s.d, &kd, &s.busy));
    s.init = malloc(BUSY_WORDS * sizeof *s.init);
    s.got = calloc(BUSY_WORDS, sizeof *s.got);
    assert_non_null(s.init);
    assert_non_null(s.got);
    for (uint32_t i = 0; i < BUSY_WORDS; i++)
        s.init[i] = i * 2654435761u + 1u;
    ASSERT_OK(cubec_buffer_create(s.d, CUBEC_STREAM_CURRENT, BUSY_WORDS * 4u, &s.v));
    ASSERT_OK(cubec_write(s.d, CUBEC_STREAM_CURRENT, s.v, 0, s.init, BUSY_WORDS * 4u));
    ASSERT_OK(cubec_sync(s.d, CUBEC_STREAM_CURRENT));
    ASSERT_OK(busy_launch(s.d, CUBEC_STREAM_CURRENT, s.busy, s.v, BUSY_WORDS, STEPS));
    return s;
}

static void staged_free(staged *s)
{
    free(s->init);
    free(s->got);
}

/* Rounds that may find the read finished before its wait (see below). */
#define STAGED_ROUNDS 12

static void test_event_free_after_failed_wait_keeps_staging(void **state)
{
    (void)state;
    /* The case needs the read still in flight when the wait fails. Where a submission waits in
     * the driver for the earlier ones to finish (wgpu on lavapipe: the kernel is done when
     * cubec_read_async returns), only the read's own copy is left in flight, and under load it
     * may finish before the wait: then the wait succeeds (the bytes must be right) and the round
     * is done again. On Vulkan the first round has the kernel still running. */
    uint32_t *want = malloc(BUSY_WORDS * sizeof *want);
    assert_non_null(want);
    int have_want = 0;
    for (int round = 0;; round++) {
        if (round == STAGED_ROUNDS)
            fail_msg("the read finished before its wait in all %d rounds", STAGED_ROUNDS);
        staged s = staged_open();
        cubec_event *e = NULL;
        ASSERT_OK(cubec_read_async(s.d, CUBEC_STREAM_CURRENT, s.v, 0, s.got, BUSY_WORDS * 4u, &e));
        ASSERT_OK(cubec_fault_inject(s.d, CUBEC_FAULT_WAIT, 1));
        cubec_status st = cubec_event_wait(e);
        if (!st) {
            if (!have_want) expected_busy(s.init, want);
            have_want = 1;
            printf("round %d: the read finished before its wait; once more\n", round);
            assert_memory_equal(s.got, want, BUSY_WORDS * sizeof *want);
            cubec_event_free(e);
            ASSERT_OK(cubec_fault_inject(s.d, CUBEC_FAULT_WAIT, 0));
            test_device_close(s.d);
            staged_free(&s);
            continue;
        }
        ASSERT_ERROR(st, CUBEC_DEVICE_LOST, "injected fault: wait call");
        cubec_event_free(e); /* the queue may still be copying into the event's staging */
        /* Every later call fails at once; closing waits for the queue and then frees the
         * staging. */
        ASSERT_ERROR(cubec_sync(s.d, CUBEC_STREAM_CURRENT), CUBEC_DEVICE_LOST, "injected fault");
        test_device_close(s.d);
        staged_free(&s);
        break;
    }
    free(want);
}

static void test_event_after_success_returns_results(void **state)
{
    (void)state;
    staged s = staged_open();
    cubec_event *e = NULL;
    ASSERT_OK(cubec_read_async(s.d, CUBEC_STREAM_CURRENT, s.v, 0, s.got, BUSY_WORDS * 4u, &e));
    ASSERT_OK(cubec_event_wait(e));
    cubec_event_free(e);
    uint32_t *want = malloc(BUSY_WORDS * sizeof *want);
    assert_non_null(want);
    expected_busy(s.init, want);
    for (uint32_t i = 0; i < BUSY_WORDS; i++)
        if (s.got[i] != want[i]) fail_msg("word %u is %u, expected %u", i, s.got[i], want[i]);
    free(want);
    ASSERT_OK(cubec_kernel_destroy(s.d, s.busy));
    ASSERT_OK(cubec_buffer_release(s.d, s.v));
    test_device_close(s.d);
    staged_free(&s);
}

#define WORDS 1024u
#define HALF (WORDS / 2u)

/* X holds produce(3, 5) everywhere; then a produce(7, 11) of all of X is lost (an injected
 * submit fault), so X carries the failure. Returns the device, the produce kernel and X. */
static cubec_device *tainted_buffer(cubec_kernel *produce, cubec_buffer *x)
{
    cubec_device *d = test_device_open();
    const cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "produce", .glsl = produce_src};
    ASSERT_OK(cubec_kernel_create(d, &kd, produce));
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, WORDS * 4u, x));
    ASSERT_OK(uint_launch(d, CUBEC_STREAM_CURRENT, *produce, *x, NONE, WORDS, 3, 5));
    ASSERT_OK(cubec_sync(d, CUBEC_STREAM_CURRENT));
    ASSERT_OK(uint_launch(d, CUBEC_STREAM_CURRENT, *produce, *x, NONE, WORDS, 7, 11));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_ERROR(cubec_flush(d, CUBEC_STREAM_CURRENT), CUBEC_INTERNAL, "injected fault");
    ASSERT_ERROR(cubec_check(d, x, 1), CUBEC_INTERNAL, "injected fault: submit call");
    return d;
}

static void test_launch_clears_its_whole_output_range(void **state)
{
    (void)state;
    cubec_kernel produce;
    cubec_buffer x;
    cubec_device *d = tainted_buffer(&produce, &x);
    /* Stores to the first half only (n = HALF), bound to the whole of X. */
    ASSERT_OK(uint_launch(d, CUBEC_STREAM_CURRENT, produce, x, NONE, HALF, 13, 17));
    uint32_t got[WORDS], want[WORDS];
    ASSERT_OK(cubec_read(d, CUBEC_STREAM_CURRENT, x, 0, got, sizeof got));
    cpu_produce(want, WORDS, 3, 5);  /* what X held before the lost launch */
    cpu_produce(want, HALF, 13, 17); /* the relaunch's half */
    for (uint32_t i = 0; i < WORDS; i++)
        if (got[i] != want[i]) fail_msg("word %u is %u, expected %u", i, got[i], want[i]);
    ASSERT_OK(cubec_kernel_destroy(d, produce));
    ASSERT_OK(cubec_buffer_release(d, x));
    test_device_close(d);
}

static void test_view_narrows_what_a_launch_clears(void **state)
{
    (void)state;
    cubec_kernel produce;
    cubec_buffer x, first;
    cubec_device *d = tainted_buffer(&produce, &x);
    ASSERT_OK(cubec_buffer_view(d, x, 0, HALF * 4u, &first));
    ASSERT_OK(uint_launch(d, CUBEC_STREAM_CURRENT, produce, first, NONE, HALF, 13, 17));
    uint32_t got[HALF], want[HALF];
    ASSERT_OK(cubec_read(d, CUBEC_STREAM_CURRENT, x, 0, got, sizeof got));
    cpu_produce(want, HALF, 13, 17);
    for (uint32_t i = 0; i < HALF; i++)
        if (got[i] != want[i]) fail_msg("word %u is %u, expected %u", i, got[i], want[i]);
    ASSERT_ERROR(cubec_read(d, CUBEC_STREAM_CURRENT, x, HALF * 4u, got, sizeof got), CUBEC_INTERNAL,
                 "injected fault: submit call");
    ASSERT_OK(cubec_buffer_release(d, first));
    ASSERT_OK(cubec_kernel_destroy(d, produce));
    ASSERT_OK(cubec_buffer_release(d, x));
    test_device_close(d);
}

/* Spins until word 0 holds 12345, which nothing writes: endless on a GPU (the atomic keeps the
 * loop from being optimised away); lavapipe ends any loop after 65535 iterations, so there it
 * takes seconds (each invocation spins that long), still far over the test's limit. */
static const char spin_src[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) buffer V { uint v[]; };\n"
                               "CUBEC_INFO(uint n; uint mul; uint add;)\n"
                               "void main() {\n"
                               "  uint i = gl_GlobalInvocationID.x;\n"
                               "  while (atomicAdd(v[0], 0u) != 12345u) {}\n"
                               "  v[i + 1u] = i * info.mul + info.add;\n"
                               "}\n";

static void test_long_kernel_wait_times_out(void **state)
{
    (void)state;
    setenv("CUBEC_WAIT_TIMEOUT", "0.2", 1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_WAIT_TIMEOUT");
    cubec_kernel spin;
    const cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "spin", .glsl = spin_src};
    ASSERT_OK(cubec_kernel_create(d, &kd, &spin));
    const uint32_t words = 64u * 64u;
    cubec_buffer v;
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, (words + 1u) * 4u, &v));
    ASSERT_OK(cubec_fill(d, CUBEC_STREAM_CURRENT, v, 0, (words + 1u) * 4u, 0));
    ASSERT_OK(cubec_sync(d, CUBEC_STREAM_CURRENT));
    ASSERT_OK(busy_launch(d, CUBEC_STREAM_CURRENT, spin, v, words, 1));
    cubec_status st = cubec_sync(d, CUBEC_STREAM_CURRENT);
    assert_int_equal(cubec_status_code(st), CUBEC_TIMEOUT);
    const char *msg = cubec_status_message(st);
    if (!strstr(msg, "\"spin\"") || !strstr(msg, "within 0.2 s"))
        fail_msg("the timeout does not name the kernel and the limit: %s", msg);
    cubec_status_free(st);
    uint32_t word;
    ASSERT_ERROR(cubec_read(d, CUBEC_STREAM_CURRENT, v, 0, &word, 4), CUBEC_DEVICE_LOST,
                 "did not finish");
    test_device_close(d); /* abandons the driver objects the kernel still uses */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_free_after_failed_wait_keeps_staging),
        cmocka_unit_test(test_event_after_success_returns_results),
        cmocka_unit_test(test_launch_clears_its_whole_output_range),
        cmocka_unit_test(test_view_narrows_what_a_launch_clears),
        cmocka_unit_test(test_long_kernel_wait_times_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
