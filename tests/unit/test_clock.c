/* base/clock.h: each clock reads between two readings of clock_gettime on the same clock taken
 * around it (the reference), and the monotonic one never goes back. */
#include "test_util.h"

#include "base/clock.h"

static uint64_t reference_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void test_clocks_match_clock_gettime(void **state)
{
    (void)state;
    for (int i = 0; i < 1000; i++) {
        uint64_t before = reference_ns(CLOCK_MONOTONIC);
        uint64_t now = clock_now_ns();
        uint64_t after = reference_ns(CLOCK_MONOTONIC);
        assert_true(before <= now && now <= after);
    }
    /* Once: the wall clock can be stepped (by an administrator), though not within microseconds
     * in practice. */
    uint64_t wall_before = reference_ns(CLOCK_REALTIME);
    uint64_t wall = clock_wall_ns();
    uint64_t wall_after = reference_ns(CLOCK_REALTIME);
    assert_true(wall_before <= wall && wall <= wall_after);
    uint64_t last = clock_now_ns();
    for (int i = 0; i < 100000; i++) {
        uint64_t now = clock_now_ns();
        assert_true(now >= last);
        last = now;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clocks_match_clock_gettime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
