/* base/clock_bounds.h: the offset between a device clock and the host's, from host times on
 * either side of device events, against a true offset chosen here and random latencies. */
#include "test_util.h"

#include "base/clock_bounds.h"

/* The tightest window the samples allow (reference: a plain scan), and the offset inside it. */
static void test_offset_is_the_middle_of_the_tightest_window(void **state)
{
    (void)state;
    uint32_t seed = 7;
    for (int round = 0; round < 200; round++) {
        const double truth = 1e9 + (double)(test_rand(&seed) % 100000u);
        clock_bounds b = {0};
        double lower = -1e300, upper = 1e300;
        int samples = 1 + (int)(test_rand(&seed) % 20u);
        for (int i = 0; i < samples; i++) {
            double device = 1e6 * i + (double)(test_rand(&seed) % 1000u);
            /* Handed over `before` ns before the event, read back `after` ns after it. */
            double before = 1 + (double)(test_rand(&seed) % 5000u);
            double after = 1 + (double)(test_rand(&seed) % 5000u);
            clock_bounds_after(&b, device + truth - before, device);
            clock_bounds_before(&b, device + truth + after, device);
            if (truth - before > lower) lower = truth - before;
            if (truth + after < upper) upper = truth + after;
        }
        double got = clock_bounds_offset(&b);
        assert_true(b.has_lower && b.has_upper);
        assert_true(b.lower == lower && b.upper == upper);
        assert_true(got == lower + (upper - lower) / 2);
        /* Within half the window of the truth, where the upper bound alone is late by up to
         * the whole window. */
        assert_true(got >= lower && got <= upper);
        assert_true(got - truth <= (upper - lower) / 2 && truth - got <= (upper - lower) / 2);
    }
}

/* One side known: that bound; none: 0. */
static void test_one_side_known(void **state)
{
    (void)state;
    clock_bounds b = {0};
    assert_true(clock_bounds_offset(&b) == 0);
    clock_bounds_before(&b, 5000, 1000);
    assert_true(clock_bounds_offset(&b) == 4000);
    clock_bounds_before(&b, 4500, 1000); /* tighter */
    clock_bounds_before(&b, 9000, 1000); /* looser: ignored */
    assert_true(clock_bounds_offset(&b) == 3500);
    clock_bounds c = {0};
    clock_bounds_after(&c, 3000, 1000);
    clock_bounds_after(&c, 2500, 1000); /* looser: ignored */
    assert_true(clock_bounds_offset(&c) == 2000);
}

/* Clocks that drift apart make a new bound contradict the other side's: the newer one stays,
 * the other is dropped until a new one comes. */
static void test_a_contradicting_bound_replaces_the_other_side(void **state)
{
    (void)state;
    clock_bounds b = {0};
    clock_bounds_after(&b, 1000, 0);  /* offset >= 1000 */
    clock_bounds_before(&b, 1100, 0); /* offset <= 1100 */
    assert_true(clock_bounds_offset(&b) == 1050);
    clock_bounds_after(&b, 1300, 0); /* offset >= 1300: the upper bound no longer holds */
    assert_false(b.has_upper);
    assert_true(clock_bounds_offset(&b) == 1300);
    clock_bounds_before(&b, 1400, 0);
    assert_true(clock_bounds_offset(&b) == 1350);
    clock_bounds_before(&b, 1200, 0); /* offset <= 1200: below the lower bound */
    assert_false(b.has_lower);
    assert_true(clock_bounds_offset(&b) == 1200);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offset_is_the_middle_of_the_tightest_window),
        cmocka_unit_test(test_one_side_known),
        cmocka_unit_test(test_a_contradicting_bound_replaces_the_other_side),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
