/* The wait limit ([device] wait_timeout, CUBEC_WAIT_TIMEOUT; docs/errors.md "(g) Waits that do not
 * end") on the null backend, whose submissions complete null_delay_us after they are made, so a
 * GPU that "takes too long" is made in the test:
 *  - with a delay under the limit, a sync waits and the fill's bytes read back (host reference);
 *  - with a delay over the limit (10 s against 0.2 s), the sync returns CUBEC_TIMEOUT naming the
 * work that did not finish (the fill, its stream) and the limit; every later call fails at once
 * with CUBEC_DEVICE_LOST naming that cause; close returns (the ctest timeout would catch a hang);
 *  - bad values of CUBEC_WAIT_TIMEOUT are refused at open, naming the variable and the value. */
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cubec_device *open_null(uint32_t delay_us, const char *limit)
{
    setenv("CUBEC_WAIT_TIMEOUT", limit, 1);
    cubec_device_desc desc = {
        .struct_size = sizeof(cubec_device_desc), .backend = "null", .null_delay_us = delay_us};
    cubec_device *d = NULL;
    cubec_status st = cubec_device_open(&desc, &d);
    unsetenv("CUBEC_WAIT_TIMEOUT");
    ASSERT_OK(st);
    return d;
}

static void test_wait_under_the_limit_succeeds(void **state)
{
    (void)state;
    cubec_device *d = open_null(100 * 1000, "5");
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, 256, &b));
    ASSERT_OK(cubec_fill(d, CUBEC_STREAM_CURRENT, b, 0, 256, 0x01020304u));
    ASSERT_OK(cubec_sync(d, CUBEC_STREAM_CURRENT));
    uint32_t got[64];
    ASSERT_OK(cubec_read(d, CUBEC_STREAM_CURRENT, b, 0, got, sizeof got));
    for (uint32_t i = 0; i < 64; i++)
        assert_int_equal(got[i], 0x01020304u);
    ASSERT_OK(cubec_buffer_release(d, b));
    cubec_device_close(d);
}

static void test_wait_over_the_limit_times_out(void **state)
{
    (void)state;
    /* The submission completes after 10 s (the longest null delay); the limit is 0.2 s. */
    cubec_device *d = open_null(10 * 1000 * 1000, "0.2");
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(d, &s));
    char stream_text[64];
    snprintf(stream_text, sizeof stream_text, "on stream %" PRIu64,
             (uint64_t)(s & 0xffffffffffffull));
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_create(d, s, 256, &b));
    ASSERT_OK(cubec_fill(d, s, b, 0, 256, 7));
    cubec_status st = cubec_sync(d, s);
    assert_int_equal(cubec_status_code(st), CUBEC_TIMEOUT);
    const char *msg = cubec_status_message(st);
    if (!strstr(msg, "did not finish within 0.2 s") || !strstr(msg, "\"cubec.fill\"") ||
        !strstr(msg, stream_text) || !strstr(msg, "treated as lost"))
        fail_msg("the timeout does not name the work, its stream and the limit: %s", msg);
    cubec_status_free(st);
    /* Lost from now on: every call fails at once, naming the cause. */
    uint32_t got[64];
    ASSERT_ERROR(cubec_read(d, s, b, 0, got, sizeof got), CUBEC_DEVICE_LOST, "did not finish");
    ASSERT_ERROR(cubec_sync(d, s), CUBEC_DEVICE_LOST, "did not finish");
    cubec_buffer other;
    ASSERT_ERROR(cubec_buffer_create(d, s, 64, &other), CUBEC_DEVICE_LOST, "did not finish");
    cubec_device_close(d); /* returns without waiting 10 s for the submission */
}

static void test_bad_limits_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {"-1", "abc", "1e9", "", "0.5s", "nan"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("CUBEC_WAIT_TIMEOUT", bad[i], 1);
        cubec_device_desc desc = {.struct_size = sizeof(cubec_device_desc), .backend = "null"};
        cubec_device *d = NULL;
        cubec_status st = cubec_device_open(&desc, &d);
        unsetenv("CUBEC_WAIT_TIMEOUT");
        if (!st) {
            cubec_device_close(d);
            fail_msg("CUBEC_WAIT_TIMEOUT=%s was accepted", bad[i]);
        }
        char want[64];
        snprintf(want, sizeof want, "'%s'", bad[i]);
        const char *msg = cubec_status_message(st);
        if (cubec_status_code(st) != CUBEC_INVALID_ARGUMENT || !strstr(msg, "CUBEC_WAIT_TIMEOUT") ||
            !strstr(msg, want))
            fail_msg("CUBEC_WAIT_TIMEOUT=%s: %s", bad[i], msg);
        cubec_status_free(st);
        assert_null(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_under_the_limit_succeeds),
        cmocka_unit_test(test_wait_over_the_limit_times_out),
        cmocka_unit_test(test_bad_limits_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
