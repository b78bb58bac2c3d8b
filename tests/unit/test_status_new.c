/* Statuses a program makes itself (cubec_status_new), for callbacks that fail with an error of
 * their own, and the 64-bit feature set (cubec_device_info.features, cubec_feature_name): what
 * issue 23 asked of the API for bindings. No device needed. */
#include "test_util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void test_each_code(void **state)
{
    (void)state;
#define CHECK_CODE(name, value, description)                                                       \
    if (name != CUBEC_OK) {                                                                        \
        cubec_status s = cubec_status_new(name, "%s failed: %d of %s", "candidate", 3, #name);     \
        assert_non_null(s);                                                                        \
        assert_int_equal(cubec_status_code(s), name);                                              \
        char want[128];                                                                            \
        snprintf(want, sizeof want, "candidate failed: 3 of %s", #name);                           \
        assert_string_equal(cubec_status_message(s), want);                                        \
        cubec_status_free(s);                                                                      \
    }
    CUBEC_CODES(CHECK_CODE)
#undef CHECK_CODE
}

static void test_ok_is_success(void **state)
{
    (void)state;
    assert_null(cubec_status_new(CUBEC_OK, "nothing wrong"));
    assert_null(cubec_status_new(CUBEC_OK, NULL));
}

static void test_unknown_code_refused(void **state)
{
    (void)state;
    cubec_status s = cubec_status_new((cubec_code)99, "the callback's %s", "reason");
    assert_int_equal(cubec_status_code(s), CUBEC_INVALID_ARGUMENT);
    assert_non_null(strstr(cubec_status_message(s), "code 99 is not a cubec_code"));
    assert_non_null(strstr(cubec_status_message(s), "the callback's reason"));
    cubec_status_free(s);
    s = cubec_status_new(CUBEC_INTERNAL, NULL);
    assert_int_equal(cubec_status_code(s), CUBEC_INTERNAL);
    assert_string_equal(cubec_status_message(s), "(no message)");
    cubec_status_free(s);
    /* A long message is kept whole. */
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    s = cubec_status_new(CUBEC_TIMEOUT, "%s", big);
    assert_int_equal(strlen(cubec_status_message(s)), sizeof big - 1);
    cubec_status_free(s);
}

static void test_features_are_64_bit(void **state)
{
    (void)state;
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    assert_int_equal(sizeof info.features, sizeof(uint64_t));
    info.features = (uint64_t)1 << 40 | CUBEC_FEATURE_BFLOAT16_COOPERATIVE_MATRIX;
    assert_true(info.features >> 40 == 1); /* the high bits are kept */
    assert_string_equal(cubec_feature_name((uint64_t)1 << 40), "unknown");
    assert_string_equal(cubec_feature_name((uint64_t)1 << 32 | CUBEC_FEATURE_INT8), "unknown");
    assert_string_equal(cubec_feature_name(CUBEC_FEATURE_BFLOAT16_COOPERATIVE_MATRIX),
                        "bfloat16_cooperative_matrix");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_code),
        cmocka_unit_test(test_ok_is_success),
        cmocka_unit_test(test_unknown_code_refused),
        cmocka_unit_test(test_features_are_64_bit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
