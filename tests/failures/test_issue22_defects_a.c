/* Regression tests for defects of issue 22 (a second adversarial round), through the public API,
 * on lavapipe with the validation layer on and (test_issue22_defects_a_null) on the null backend;
 * tests that need a kernel to run skip on the null backend.
 *
 *  (a) test_refused_getters_clear_their_outputs: cubec.h says out-parameters are cleared on entry
 *      and written only on success; cubec_memory_mode_get, cubec_device_get_info,
 *      cubec_device_peek, cubec_fault_counts and cubec_profile_method left a refused call's
 *      outputs as the caller had them.
 *  (b) test_compile_queued_reports_a_finished_failure: a queued kernel that failed to compile,
 *      its job finished (so out of the queue's list) before cubec_kernel_compile_queued: the call
 *      returned success. It reports the failure while the kernel's handle lives.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- (a) refused getters ------------------------------------------------------------------ */

#define JUNK 0xa5u

static int all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

static void test_refused_getters_clear_their_outputs(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    /* A stream the device never handed out: the call is refused after its arguments pass. */
    const cubec_stream bad_stream = 0x7777;
    cubec_memory_mode mode;
    uint32_t depth;
    memset(&mode, JUNK, sizeof mode);
    memset(&depth, JUNK, sizeof depth);
    ASSERT_ERROR(cubec_memory_mode_get(d, bad_stream, &mode, &depth), CUBEC_INVALID_ARGUMENT,
                 "cubec_memory_mode_get");
    assert_int_equal(mode, CUBEC_MEMORY_MODE_AUTO);
    assert_int_equal(depth, 0);
    memset(&mode, JUNK, sizeof mode);
    memset(&depth, JUNK, sizeof depth);
    ASSERT_ERROR(cubec_memory_mode_get(NULL, CUBEC_STREAM_CURRENT, &mode, &depth),
                 CUBEC_INVALID_ARGUMENT, "device");
    assert_int_equal(mode, CUBEC_MEMORY_MODE_AUTO);
    assert_int_equal(depth, 0);

    cubec_device_info info;
    memset(&info, JUNK, sizeof info);
    ASSERT_ERROR(cubec_device_get_info(NULL, &info), CUBEC_INVALID_ARGUMENT, "device is NULL");
    assert_true(all_zero(&info, sizeof info));
    uint32_t count = 0;
    ASSERT_OK(cubec_device_count(&count));
    memset(&info, JUNK, sizeof info);
    ASSERT_ERROR(cubec_device_peek(count + 5u, &info), CUBEC_INVALID_ARGUMENT, "cubec_device_peek");
    assert_true(all_zero(&info, sizeof info));

    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    memset(counts, JUNK, sizeof counts);
    ASSERT_ERROR(cubec_fault_counts(NULL, counts), CUBEC_INVALID_ARGUMENT, "device");
    assert_true(all_zero(counts, sizeof counts));

    cubec_timing timing;
    memset(&timing, JUNK, sizeof timing);
    ASSERT_ERROR(cubec_profile_method(NULL, &timing), CUBEC_INVALID_ARGUMENT, "device");
    assert_int_equal(timing, 0);

    /* And each still answers when the call is good. */
    ASSERT_OK(cubec_memory_mode_push(d, CUBEC_STREAM_CURRENT, CUBEC_MEMORY_MODE_PERSISTENT));
    ASSERT_OK(cubec_memory_mode_get(d, CUBEC_STREAM_CURRENT, &mode, &depth));
    assert_int_equal(mode, CUBEC_MEMORY_MODE_PERSISTENT);
    assert_int_equal(depth, 1);
    ASSERT_OK(cubec_memory_mode_pop(d, CUBEC_STREAM_CURRENT));
    ASSERT_OK(cubec_device_get_info(d, &info));
    assert_true(info.name[0] != '\0');
    ASSERT_OK(cubec_profile_method(d, &timing));
    assert_true(timing == CUBEC_TIMING_DEVICE || timing == CUBEC_TIMING_SYSTEM);
    test_device_close(d);
}

/* ---- (b) the compile queue ----------------------------------------------------------------- */

static const char broken_src[] = "#version 450\n"
                                 "layout(local_size_x = 64) in;\n"
                                 "layout(std430, binding = 0) buffer Y { uint y[]; };\n"
                                 "void main() { y[gl_GlobalInvocationID.x] = undeclared_thing; }\n";
static const char good_src[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) buffer Y { uint y[]; };\n"
                               "void main() { y[gl_GlobalInvocationID.x] = 7u; }\n";

static void test_compile_queued_reports_a_finished_failure(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    const cubec_kernel_desc bd = {.name = "broken.comp", .glsl = broken_src};
    const cubec_kernel_desc gd = {.name = "good.comp", .glsl = good_src};
    cubec_kernel broken, good;
    ASSERT_OK(cubec_kernel_queue(d, &bd, &broken));
    /* The wait returns once the job finished: it has left the queue's list. */
    ASSERT_ERROR(cubec_kernel_wait(d, broken), CUBEC_COMPILE_FAILED, "undeclared_thing");
    ASSERT_ERROR(cubec_kernel_compile_queued(d), CUBEC_COMPILE_FAILED,
                 "1 of the 1 kernels queued did not compile");
    /* With a good kernel queued after it: both waited for, the failure still reported, once. */
    ASSERT_OK(cubec_kernel_queue(d, &gd, &good));
    cubec_kernel again;
    ASSERT_OK(cubec_kernel_queue(d, &bd, &again));
    ASSERT_ERROR(cubec_kernel_compile_queued(d), CUBEC_COMPILE_FAILED, "undeclared_thing");
    ASSERT_OK(cubec_kernel_wait(d, good));
    /* The error stays with the kernels; once their handles are gone nothing failed is left. */
    ASSERT_ERROR(cubec_kernel_wait(d, broken), CUBEC_COMPILE_FAILED, "undeclared_thing");
    ASSERT_OK(cubec_kernel_destroy(d, broken));
    ASSERT_OK(cubec_kernel_destroy(d, again));
    ASSERT_OK(cubec_kernel_compile_queued(d));
    ASSERT_OK(cubec_kernel_destroy(d, good));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_getters_clear_their_outputs),
        cmocka_unit_test(test_compile_queued_reports_a_finished_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
