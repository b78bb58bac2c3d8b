/* Bugs found by tests/fuzz/test_random_api.c, each cut down to the few calls that show it. They
 * fail until the bug is fixed; test_random_api tolerates exactly these (CUBEC_FUZZ_STRICT=1 turns
 * that off). Each comment gives the fuzz seed that found it.
 *
 *  - test_fuzz_found_empty_view_check_reports_neighbours: cubec_check (and cubec_sync_check) of a
 *    view of 0 bytes whose offset lies inside a range that carries a failure returns that
 *    failure, though the view holds no byte (cubec.h: NULL "when every byte of every buffer was
 *    written"; docs/errors.md (c): "Views are judged on their own range"). cubec_read of 0 bytes
 *    at the same place succeeds. Found by CUBEC_FUZZ_SEED=1796077817875459 (step 3250).
 *  - test_fuzz_found_unaligned_fill_after_view_read_has_no_barrier: a fill at an offset that is
 *    not a multiple of storage_offset_alignment binds the buffer from the aligned offset below
 *    (docs/errors.md, the fills "of a range below the storage offset alignment"), but the hazard
 *    tracker counts only the bytes it writes, so no barrier separates it from work on the bytes
 *    in between, and the validation layer reports a hazard: a launch reading a view of bytes
 *    [0, 4) then a fill of [4, 8) on the same stream (SYNC-HAZARD-WRITE-AFTER-READ; found by
 *    CUBEC_FUZZ_SEED=1796077688644865, step 577), and a fill of [8, 20) then a cubec_copy into
 *    [0, 8) (SYNC-HAZARD-WRITE-AFTER-WRITE; found by CUBEC_FUZZ_SEED=1796077380362203, step
 *    38052). The bytes are right on lavapipe; the missing barrier is what the layer reports.
 *  - test_fuzz_found_profile_begin_dropped_by_failed_drain: a profile begins on stream s; stream t
 *    is prepared for a capture (so drains go slot by slot) and a warm-up launch that fills t's
 *    batch makes a drain of t's and s's slots whose first submission is lost. The profile is not
 *    made invalid (docs/profiling.md: "A lost submission poisons every open profile"), and its
 *    end writes its end timestamp into a query whose reset never ran: the validation layer reports
 *    UNASSIGNED-CoreValidation-DrawState-QueryNotReset, and cubec_profile_end returns
 *    CUBEC_INTERNAL "vkGetQueryPoolResults(profile): VK_NOT_READY" (in the fuzz run it returned a
 *    time). Found by CUBEC_FUZZ_SEED=1796078254135959 (step 15904). */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_fuzz_found_empty_view_check_reports_neighbours(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    cubec_kernel produce, consume, step;
    uint_kernels_create(d, &produce, &consume, &step);
    cubec_stream s = new_stream(d);
    tbuf b = make_numbered_buffer(d, s, NULL, 256);
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    uint64_t at = info.storage_offset_alignment; /* inside the buffer, not at its start */
    assert_true(at < 256);
    cubec_buffer empty = {0};
    ASSERT_OK(cubec_buffer_view(d, b.h, at, 0, &empty));
    /* The whole buffer carries a failure: the launch that writes it lost its submission. */
    taint_by_lost_submission(d, s, produce, b.h, 64, 3, 1);

    uint8_t byte = 0;
    ASSERT_OK(cubec_read(d, s, empty, 0, &byte, 0)); /* 0 bytes: succeeds */
    cubec_status st = cubec_check(d, &empty, 1);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
    cubec_code code = cubec_status_code(st);
    cubec_status_free(st);
    printf("    cubec_check(a view of 0 bytes at %" PRIu64 ") -> %s: %s\n", at,
           cubec_code_name(code), msg);
    cubec_status st2 = cubec_sync_check(d, s, &empty, 1);
    cubec_code code2 = cubec_status_code(st2);
    cubec_status_free(st2);

    ASSERT_OK(cubec_buffer_release(d, empty));
    ASSERT_OK(cubec_buffer_release(d, b.h));
    uint_kernels_destroy(d, produce, consume, step);
    test_device_close(d);
    if (code != CUBEC_OK || code2 != CUBEC_OK)
        fail_msg(
            "BUG: cubec_check / cubec_sync_check of a view of 0 bytes returned %s / %s (\"%s\"): "
            "it holds no byte that could carry a failure",
            cubec_code_name(code), cubec_code_name(code2), msg);
}

static void test_fuzz_found_unaligned_fill_after_view_read_has_no_barrier(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel produce, consume, step;
    uint_kernels_create(d, &produce, &consume, &step);
    cubec_stream s = new_stream(d);
    uint32_t words[16];
    for (uint32_t i = 0; i < 16; i++)
        words[i] = i * 7 + 1;
    cubec_buffer a, v, y;
    ASSERT_OK(cubec_buffer_from(d, s, words, sizeof words, &a));
    ASSERT_OK(cubec_buffer_view(d, a, 0, 4, &v));
    ASSERT_OK(cubec_buffer_create(d, s, 256, &y));
    ASSERT_OK(cubec_sync(d, s));
    unsigned before = test_validation_messages();

    ASSERT_OK(uint_launch(d, s, consume, v, y, 1, 3, 1)); /* reads bytes [0, 4) of a */
    ASSERT_OK(cubec_fill(d, s, a, 4, 4, 0xabcd1234u));    /* writes bytes [4, 8) of a */
    ASSERT_OK(cubec_sync(d, s));
    unsigned war = test_validation_messages() - before;

    /* A fill of [8, 20), then a copy into [0, 8) of the same buffer. */
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(d, s, words, sizeof words, &b));
    ASSERT_OK(cubec_sync(d, s));
    before = test_validation_messages();
    ASSERT_OK(cubec_fill(d, s, b, 8, 12, 0x5555aaaau));
    ASSERT_OK(cubec_copy(d, s, a, 32, b, 0, 8));
    ASSERT_OK(cubec_sync(d, s));
    unsigned waw = test_validation_messages() - before;
    uint32_t got_b[16];
    ASSERT_OK(cubec_read(d, s, b, 0, got_b, sizeof got_b));
    assert_int_equal(got_b[0], words[8]);
    assert_int_equal(got_b[1], words[9]);
    for (int i = 2; i < 5; i++)
        assert_int_equal(got_b[i], 0x5555aaaau);
    ASSERT_OK(cubec_buffer_release(d, b));

    /* The results are right (lavapipe runs dispatches in order); the validation layer is not. */
    uint32_t got[16], want_y = words[0] * 3 + 1;
    ASSERT_OK(cubec_read(d, s, a, 0, got, sizeof got));
    uint32_t y0 = 0;
    ASSERT_OK(cubec_read(d, s, y, 0, &y0, 4));
    assert_int_equal(got[1], 0xabcd1234u);
    assert_int_equal(got[0], words[0]);
    assert_int_equal(y0, want_y);

    ASSERT_OK(cubec_buffer_release(d, v));
    ASSERT_OK(cubec_buffer_release(d, a));
    ASSERT_OK(cubec_buffer_release(d, y));
    uint_kernels_destroy(d, produce, consume, step);
    cubec_device_close(d); /* not test_device_close: the count is this test's verdict */
    if (war || waw)
        fail_msg("BUG: validation messages (see VALIDATION above): %u for a fill of bytes [4, 8) "
                 "after a launch that read a view of bytes [0, 4), %u for a copy into bytes "
                 "[0, 8) after a fill of bytes [8, 20)",
                 war, waw);
}

static unsigned messages_seen;

static void count_message(void *user, const char *message)
{
    (void)user;
    messages_seen++;
    fprintf(stderr, "VALIDATION: %s\n", message);
}

static void test_fuzz_found_profile_begin_dropped_by_failed_drain(void **state)
{
    (void)state;
    const char *v = getenv("CUBEC_TEST_VALIDATION");
    cubec_device_desc desc = {.struct_size = sizeof(cubec_device_desc),
                              .validation = !(v && v[0] == '0'),
                              .on_validation = count_message,
                              .tasks_max = 2};
    cubec_device *d = NULL;
    ASSERT_OK(cubec_device_open(&desc, &d));
    cubec_kernel produce, consume, step;
    uint_kernels_create(d, &produce, &consume, &step);
    cubec_stream s = new_stream(d), t = new_stream(d);
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_create(d, t, 256, &b));
    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_sync(d, t));
    messages_seen = 0;

    cubec_profile p = {0};
    ASSERT_OK(cubec_profile_begin(d, s, &p)); /* its begin is queued on s's slot */
    ASSERT_OK(cubec_graph_prepare(d, t));     /* t's slot isolated: drains go slot by slot */
    ASSERT_OK(uint_launch(d, t, produce, b, NONE, 64, 1, 1));
    uint64_t c[CUBEC_FAULT_KIND_COUNT];
    ASSERT_OK(cubec_fault_get_counts(d, c));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    /* The second task fills t's batch (tasks_max 2): the drain of [t, s] loses t's submission. */
    cubec_status st = uint_launch(d, t, step, b, NONE, 64, 1, 2);
    printf("    the warm-up launch that filled the batch -> %s: %s\n",
           cubec_code_name(cubec_status_code(st)), cubec_status_message(st));
    cubec_status_free(st);
    cubec_graph g = {0};
    cubec_status_free(cubec_graph_end(d, t, &g)); /* drops the preparation */

    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    st = cubec_profile_end(d, s, p, &r);
    cubec_code code = cubec_status_code(st);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
    cubec_status_free(st);
    printf("    cubec_profile_end -> %s: %s\n", cubec_code_name(code), msg);
    cubec_status_free(cubec_sync(d, s));
    unsigned messages = messages_seen;

    ASSERT_OK(cubec_buffer_release(d, b));
    uint_kernels_destroy(d, produce, consume, step);
    cubec_device_close(d);
    /* The profile either measured (its begin ran) or says it is invalid (it was lost). */
    if ((code != CUBEC_OK && code != CUBEC_PROFILE_INVALID) ||
        (code == CUBEC_OK && r.end_ns < r.begin_ns))
        fail_msg("BUG: cubec_profile_end of a profile whose begin was in the failed drain gave %s "
                 "(%s); expected a measurement or CUBEC_PROFILE_INVALID",
                 cubec_code_name(code), msg);
    if (messages)
        fail_msg("BUG: %u validation message(s) (see VALIDATION above): the end of a profile "
                 "whose begin was dropped writes a query that was never reset",
                 messages);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fuzz_found_empty_view_check_reports_neighbours),
        cmocka_unit_test(test_fuzz_found_unaligned_fill_after_view_read_has_no_barrier),
        cmocka_unit_test(test_fuzz_found_profile_begin_dropped_by_failed_drain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
