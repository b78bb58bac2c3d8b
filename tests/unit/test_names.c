/* The names generated from the lists of cubec.h (CUBEC_CODES, CUBEC_FAULT_KINDS): each code and
 * fault kind keeps the value it had before the lists existed, and its name is the one written out
 * here by hand, which is the reference. */
#include "test_util.h"

#include "base/fault.h"

#include <stdio.h>
#include <string.h>

static void test_code_names_and_values(void **state)
{
    (void)state;
    static const struct {
        cubec_code code;
        int value;
        const char *name;
    } ref[] = {
        {CUBEC_OK, 0, "CUBEC_OK"},
        {CUBEC_INVALID_ARGUMENT, 1, "CUBEC_INVALID_ARGUMENT"},
        {CUBEC_OUT_OF_MEMORY, 2, "CUBEC_OUT_OF_MEMORY"},
        {CUBEC_COMPILE_FAILED, 3, "CUBEC_COMPILE_FAILED"},
        {CUBEC_INVALID_SPIRV, 4, "CUBEC_INVALID_SPIRV"},
        {CUBEC_UNSUPPORTED, 5, "CUBEC_UNSUPPORTED"},
        {CUBEC_DEVICE_LOST, 6, "CUBEC_DEVICE_LOST"},
        {CUBEC_NOT_FOUND, 7, "CUBEC_NOT_FOUND"},
        {CUBEC_INTERNAL, 8, "CUBEC_INTERNAL"},
        {CUBEC_NOT_READY, 9, "CUBEC_NOT_READY"},
        {CUBEC_PROFILE_INVALID, 10, "CUBEC_PROFILE_INVALID"},
        {CUBEC_GRAPH_STATE, 11, "CUBEC_GRAPH_STATE"},
        {CUBEC_TIMEOUT, 12, "CUBEC_TIMEOUT"},
    };
    for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++) {
        assert_int_equal(ref[i].code, ref[i].value);
        assert_string_equal(cubec_code_name(ref[i].code), ref[i].name);
    }
    /* The list has exactly these rows. */
    size_t rows = 0;
#define COUNT_ROW(name, value, description) rows++;
    CUBEC_CODES(COUNT_ROW)
#undef COUNT_ROW
    assert_int_equal(rows, sizeof ref / sizeof ref[0]);
    assert_string_equal(cubec_code_name((cubec_code)13), "CUBEC_UNKNOWN_CODE");
    assert_string_equal(cubec_code_name((cubec_code)-1), "CUBEC_UNKNOWN_CODE");
}

static void test_fault_kind_names_and_values(void **state)
{
    (void)state;
    static const struct {
        cubec_fault_kind kind;
        int value;
        const char *name;
    } ref[] = {
        {CUBEC_FAULT_PAGE, 0, "page"},         {CUBEC_FAULT_COMPILE, 1, "compile"},
        {CUBEC_FAULT_PIPELINE, 2, "pipeline"}, {CUBEC_FAULT_SUBMIT, 3, "submit"},
        {CUBEC_FAULT_MAP, 4, "map"},           {CUBEC_FAULT_WAIT, 5, "wait"},
        {CUBEC_FAULT_ENCODE, 6, "encode"},
    };
    assert_int_equal(CUBEC_FAULT_KIND_COUNT, sizeof ref / sizeof ref[0]);
    for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++) {
        assert_int_equal(ref[i].kind, ref[i].value);
        assert_string_equal(cubec_fault_kind_name(ref[i].kind), ref[i].name);
    }
    assert_string_equal(cubec_fault_kind_name(CUBEC_FAULT_KIND_COUNT), "unknown");
    assert_string_equal(cubec_fault_kind_name((cubec_fault_kind)-1), "unknown");
}

/* fault_parse accepts every kind by its name, and its refusals list all of them. */
static void test_fault_parse_uses_the_names(void **state)
{
    (void)state;
    for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++) {
        fault_plan p;
        memset(&p, 0, sizeof p);
        p.count[k] = 10;
        char spec[32];
        snprintf(spec, sizeof spec, "%s:3", cubec_fault_kind_name((cubec_fault_kind)k));
        ASSERT_OK(fault_parse(&p, spec));
        for (int j = 0; j < CUBEC_FAULT_KIND_COUNT; j++)
            assert_int_equal(p.fail_at[j], j == k ? 13 : 0);
        cubec_status st = fault_status(&p, (cubec_fault_kind)k, CUBEC_INTERNAL);
        char want[64];
        snprintf(want, sizeof want, "injected fault: %s call #10",
                 cubec_fault_kind_name((cubec_fault_kind)k));
        assert_string_equal(cubec_status_message(st), want);
        cubec_status_free(st);
    }
    const char *kinds = "(kinds: page, compile, pipeline, submit, map, wait, encode)";
    fault_plan p;
    memset(&p, 0, sizeof p);
    ASSERT_ERROR(fault_parse(&p, "bogus:1"), CUBEC_INVALID_ARGUMENT, kinds);
    ASSERT_ERROR(fault_parse(&p, "page"), CUBEC_INVALID_ARGUMENT, kinds);
    ASSERT_ERROR(fault_parse(&p, "page:1,wait"), CUBEC_INVALID_ARGUMENT, kinds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_code_names_and_values),
        cmocka_unit_test(test_fault_kind_names_and_values),
        cmocka_unit_test(test_fault_parse_uses_the_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
