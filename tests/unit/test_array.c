/* base/array.h: growth by doubling, the limit, the overflow check, and a failed reallocation that
 * leaves the old array as it was. The reallocation goes through a stand-in that counts its calls
 * and fails on demand. */
#include "test_util.h"

#include "base/array.h"

#include <stdlib.h>
#include <string.h>

static int reallocs;  /* calls of counting_realloc */
static int fail_next; /* the next call fails (returns NULL without touching the block) */

static void *counting_realloc(void *ptr, size_t size)
{
    reallocs++;
    if (fail_next) {
        fail_next = 0;
        return NULL;
    }
    return realloc(ptr, size);
}

static int grow(uint32_t **a, uint32_t *cap, uint64_t need)
{
    return array_grow_ex((void **)a, cap, need, sizeof **a, ARRAY_FIRST_CAPACITY, UINT32_MAX,
                         counting_realloc);
}

/* Appending one element at a time doubles the capacity from ARRAY_FIRST_CAPACITY, reallocates only
 * when full, and keeps every element. */
static void test_growth_doubles_and_keeps_elements(void **state)
{
    (void)state;
    uint32_t *a = NULL, cap = 0;
    reallocs = 0;
    uint32_t want_cap = 0;
    int want_reallocs = 0;
    for (uint32_t i = 0; i < 1000; i++) {
        if (i == want_cap) {
            want_cap = want_cap ? want_cap * 2 : 8;
            want_reallocs++;
        }
        assert_int_equal(grow(&a, &cap, (uint64_t)i + 1), 0);
        assert_int_equal(cap, want_cap);
        assert_int_equal(reallocs, want_reallocs);
        a[i] = i * 3 + 1;
    }
    for (uint32_t i = 0; i < 1000; i++)
        assert_int_equal(a[i], i * 3 + 1);
    /* Room already there: nothing happens. */
    assert_int_equal(grow(&a, &cap, 1000), 0);
    assert_int_equal(grow(&a, &cap, 0), 0);
    assert_int_equal(reallocs, want_reallocs);
    free(a);
}

/* A need beyond double the capacity is met exactly; the default first capacity is a minimum. */
static void test_large_need_is_met_exactly(void **state)
{
    (void)state;
    uint32_t *a = NULL, cap = 0;
    assert_int_equal(grow(&a, &cap, 3), 0);
    assert_int_equal(cap, 8);
    assert_int_equal(grow(&a, &cap, 100), 0);
    assert_int_equal(cap, 100);
    assert_int_equal(grow(&a, &cap, 101), 0);
    assert_int_equal(cap, 200);
    free(a);
    /* array_grow: realloc and the defaults. */
    a = NULL;
    cap = 0;
    assert_int_equal(array_grow((void **)&a, &cap, 1, sizeof *a), 0);
    assert_int_equal(cap, ARRAY_FIRST_CAPACITY);
    a[ARRAY_FIRST_CAPACITY - 1] = 7;
    assert_int_equal(array_grow((void **)&a, &cap, 20, sizeof *a), 0);
    assert_int_equal(cap, 20);
    assert_int_equal(a[ARRAY_FIRST_CAPACITY - 1], 7);
    free(a);
}

/* The capacity is clamped to the limit; a need past it fails and changes nothing. */
static void test_limit(void **state)
{
    (void)state;
    uint32_t *a = NULL, cap = 0;
    reallocs = 0;
    assert_int_equal(array_grow_ex((void **)&a, &cap, 1, sizeof *a, 16, 10, counting_realloc), 0);
    assert_int_equal(cap, 10);
    uint32_t *before = a;
    assert_int_equal(array_grow_ex((void **)&a, &cap, 11, sizeof *a, 16, 10, counting_realloc), -1);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 10);
    assert_int_equal(reallocs, 1);
    free(a);
}

/* A byte size that does not fit a size_t is refused before anything is allocated. */
static void test_overflow(void **state)
{
    (void)state;
    void *a = NULL;
    uint32_t cap = 0;
    reallocs = 0;
    size_t huge = SIZE_MAX / 4 + 1; /* 4 of these overflow */
    assert_int_equal(array_grow_ex(&a, &cap, 4, huge, 1, UINT32_MAX, counting_realloc), -1);
    assert_null(a);
    assert_int_equal(cap, 0);
    /* The check is on the capacity that would be allocated: 3 elements of this do not fit. */
    size_t big = SIZE_MAX / 3 + 1;
    assert_int_equal(array_grow_ex(&a, &cap, 3, big, 1, UINT32_MAX, counting_realloc), -1);
    /* A zero element size is no array. */
    assert_int_equal(array_grow_ex(&a, &cap, 3, 0, 1, UINT32_MAX, counting_realloc), -1);
    assert_int_equal(reallocs, 0);
    assert_null(a);
    assert_int_equal(cap, 0);
    /* The largest capacity with a count that would wrap 32 bits: need is 64 bits wide. */
    uint32_t *b = NULL, bcap = 0;
    assert_int_equal(grow(&b, &bcap, (uint64_t)UINT32_MAX + 1), -1);
    assert_null(b);
    assert_int_equal(reallocs, 0);
}

/* A failed reallocation leaves the old array, its capacity and its elements; the next attempt
 * works. */
static void test_failed_realloc_keeps_the_old_array(void **state)
{
    (void)state;
    uint32_t *a = NULL, cap = 0;
    fail_next = 1;
    assert_int_equal(grow(&a, &cap, 1), -1);
    assert_null(a);
    assert_int_equal(cap, 0);
    assert_int_equal(grow(&a, &cap, 8), 0);
    for (uint32_t i = 0; i < 8; i++)
        a[i] = 100 + i;
    uint32_t *before = a;
    fail_next = 1;
    assert_int_equal(grow(&a, &cap, 9), -1);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 8);
    for (uint32_t i = 0; i < 8; i++)
        assert_int_equal(a[i], 100 + i);
    assert_int_equal(grow(&a, &cap, 9), 0);
    assert_int_equal(cap, 16);
    for (uint32_t i = 0; i < 8; i++)
        assert_int_equal(a[i], 100 + i);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_growth_doubles_and_keeps_elements),
        cmocka_unit_test(test_large_need_is_met_exactly),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_failed_realloc_keeps_the_old_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
