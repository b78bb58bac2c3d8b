/* Regression tests for defects the fault sweeps of tests/failures/fault_sweeps.c found (issue 11,
 * "the fault sweep grows"), on the default device with the validation layer on, through the
 * public API. Each reproduces the sweep's failing run in a few calls.
 *
 *  (a) test_failed_submission_spares_other_streams (sweep graph, submit:1): a drain that submits
 *      one queue after another (a stream prepared for a graph capture is drained in isolation)
 *      lost the submission of the first queue to an injected fault and then dropped the queues
 *      after it, unrelated work of other streams that was never part of that submission: their
 *      outputs read back as "launch ... was dropped: an earlier task of the same submission
 *      failed", a message that names no root cause, against rule (d) (isolation). The other
 *      stream's output must read back its reference.
 */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORDS 256u

static void test_failed_submission_spares_other_streams(void **state)
{
    (void)state;
    setenv("CUBEC_TASKS_MAX", "4", 1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_TASKS_MAX");
    cubec_kernel produce = make_kernel(d, "produce", produce_src);
    cubec_stream s = new_stream(d), other = new_stream(d);
    cubec_buffer a, b;
    ASSERT_OK(cubec_buffer_create(d, s, WORDS * 4u, &a));
    ASSERT_OK(cubec_buffer_create(d, other, WORDS * 4u, &b));
    /* Queued on the other stream, not submitted yet (one task of four). */
    ASSERT_OK(uint_launch(d, other, produce, b, NONE, WORDS, 5, 9));
    /* The capture's stream is drained on its own: the fourth launch drains its queue and then
     * the other stream's, each in a submission of its own. The first submission fails. */
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    for (uint32_t i = 0; i < 3; i++)
        ASSERT_OK(uint_launch(d, s, produce, a, NONE, WORDS, 3, i));
    ASSERT_ERROR(uint_launch(d, s, produce, a, NONE, WORDS, 3, 7), CUBEC_INTERNAL,
                 "injected fault: submit call #");
    /* The other stream's work was not in the failed submission: it ran. */
    uint32_t want[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        want[i] = i * 5u + 9u;
    expect_range_in(d, other, b, WORDS, 0, WORDS, want, "the other stream's output");
    /* What was in it carries the failure, naming the fault. */
    uint32_t got[WORDS];
    ASSERT_ERROR(cubec_read(d, s, a, 0, got, sizeof got), CUBEC_INTERNAL,
                 "the submission of its work failed: injected fault: submit call #");
    cubec_graph g = {0};
    cubec_status_free(cubec_graph_end(d, s, &g)); /* drops the preparation */
    ASSERT_OK(cubec_buffer_release(d, a));
    ASSERT_OK(cubec_buffer_release(d, b));
    ASSERT_OK(cubec_kernel_destroy(d, produce));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_submission_spares_other_streams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
