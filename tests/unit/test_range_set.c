/* The set of numbers kept as ranges (base/range_set.h), against a plain array of flags: numbers
 * added in order, in reverse, at random with repeats, and around the ends of the 64-bit range. */
#include "test_util.h"

#include "base/range_set.h"

#include <string.h>

enum { UNIVERSE = 2000 };

/* The set holds exactly the flagged numbers, one range per run of them. */
static void expect_matches(const range_set *s, const unsigned char *flag, uint64_t base)
{
    uint32_t runs = 0;
    for (uint32_t n = 0; n < UNIVERSE; n++) {
        if (range_set_has(s, base + n) != flag[n])
            fail_msg("number %llu: the set says %d, the model %d", (unsigned long long)(base + n),
                     range_set_has(s, base + n), flag[n]);
        if (flag[n] && (n == 0 || !flag[n - 1])) runs++;
    }
    assert_int_equal(s->count, runs);
    for (uint32_t i = 1; i < s->count; i++)
        assert_true(s->ranges[i - 1].hi < s->ranges[i].lo); /* sorted, apart */
    if (base) {
        assert_false(range_set_has(s, base - 1));
        assert_false(range_set_has(s, base + UNIVERSE));
    }
}

static void test_in_order_and_reverse(void **state)
{
    (void)state;
    static unsigned char flag[UNIVERSE];
    range_set s = {0};
    memset(flag, 0, sizeof flag);
    expect_matches(&s, flag, 0);
    for (uint32_t n = 0; n < UNIVERSE / 2; n++) {
        assert_int_equal(range_set_add(&s, n), 0);
        flag[n] = 1;
    }
    expect_matches(&s, flag, 0);
    assert_int_equal(s.count, 1); /* a run costs one range */
    for (uint32_t n = UNIVERSE; n-- > UNIVERSE / 2 + 1;) {
        assert_int_equal(range_set_add(&s, n), 0);
        flag[n] = 1;
    }
    expect_matches(&s, flag, 0);
    assert_int_equal(s.count, 2);
    assert_int_equal(range_set_add(&s, UNIVERSE / 2), 0); /* closes the gap */
    flag[UNIVERSE / 2] = 1;
    expect_matches(&s, flag, 0);
    assert_int_equal(s.count, 1);
    range_set_free(&s);
    assert_int_equal(s.count, 0);
}

static void test_random_with_repeats(void **state)
{
    (void)state;
    static unsigned char flag[UNIVERSE];
    const uint64_t bases[] = {1, 1ull << 40, UINT64_MAX - UNIVERSE - 1};
    for (uint32_t b = 0; b < 3; b++) {
        range_set s = {0};
        memset(flag, 0, sizeof flag);
        uint32_t rng = 77 + b;
        for (uint32_t i = 0; i < 3 * UNIVERSE; i++) {
            uint32_t n = test_rand(&rng) % UNIVERSE;
            assert_int_equal(range_set_add(&s, bases[b] + n), 0);
            flag[n] = 1;
            if (i % 97 == 0) expect_matches(&s, flag, bases[b]);
        }
        expect_matches(&s, flag, bases[b]);
        range_set_free(&s);
    }
}

static void test_ends(void **state)
{
    (void)state;
    range_set s = {0};
    assert_int_equal(range_set_add(&s, 0), 0);
    assert_int_equal(range_set_add(&s, UINT64_MAX - 1), 0);
    assert_int_equal(range_set_add(&s, UINT64_MAX), -1); /* cannot be held: refused */
    assert_true(range_set_has(&s, 0));
    assert_true(range_set_has(&s, UINT64_MAX - 1));
    assert_false(range_set_has(&s, UINT64_MAX));
    assert_false(range_set_has(&s, 1));
    assert_int_equal(s.count, 2);
    range_set_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order_and_reverse),
        cmocka_unit_test(test_random_with_repeats),
        cmocka_unit_test(test_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
