/* Taint maps (src/failure/failure.h) against a byte model computed in the test: each byte of a
 * small allocation holds the failure it should carry, or NULL. With host memory, the map answers
 * exactly like the model. When the host runs out of memory (the map's reallocation made to fail
 * through taint_set_realloc_hook), a map may taint more than the model, but a byte the model says
 * carries a failure must never read as clean: losing a failure would let a read return bytes that
 * were never written. */
#include "test_util.h"

#include "failure/failure.h"

#include <stdlib.h>
#include <string.h>

#define BYTES 512u

static int fail_all;         /* every reallocation of the maps fails */
static uint32_t fail_one_in; /* or one in this many (0: none) */
static uint32_t fail_rng = 7;

static void *failing_realloc(void *ptr, size_t size)
{
    if (fail_all || (fail_one_in && test_rand(&fail_rng) % fail_one_in == 0)) return NULL;
    return realloc(ptr, size);
}

static int setup(void **state)
{
    (void)state;
    fail_all = 0;
    fail_one_in = 0;
    taint_set_realloc_hook(failing_realloc);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    taint_set_realloc_hook(NULL);
    return 0;
}

static void model_set(failure **model, uint64_t offset, uint64_t size, failure *f)
{
    for (uint64_t b = offset; b < offset + size; b++)
        model[b] = f;
}

/* Every byte reads as the model says. */
static void check_exact(const taint_map *m, failure *const *model, const char *what)
{
    for (uint32_t b = 0; b < BYTES; b++) {
        failure *got = taint_find(m, b, 1);
        if (got != model[b])
            fail_msg("%s: byte %u carries %s, expected %s", what, b, got ? got->message : "nothing",
                     model[b] ? model[b]->message : "nothing");
    }
    /* A range query sees the first failure of the range, or none. */
    assert_null(taint_find(m, BYTES, 100));
}

/* Every byte that should carry a failure carries one (the same one when `same`). */
static void check_kept(const taint_map *m, failure *const *model, int same, const char *what)
{
    for (uint32_t b = 0; b < BYTES; b++) {
        if (!model[b]) continue;
        failure *got = taint_find(m, b, 1);
        if (!got) fail_msg("%s: byte %u lost its failure (%s)", what, b, model[b]->message);
        if (same && got != model[b])
            fail_msg("%s: byte %u carries %s, expected %s", what, b, got->message,
                     model[b]->message);
    }
}

/* Ranges of 10 bytes every 12 bytes, alternating two failures. */
static void fill(taint_map *m, failure **model, uint32_t ranges, failure *a, failure *b)
{
    for (uint32_t k = 0; k < ranges; k++) {
        failure *f = k % 2 ? a : b;
        assert_int_equal(taint_set(m, k * 12, 10, f), 0);
        model_set(model, k * 12, 10, f);
    }
    check_exact(m, model, "filled");
}

/* The defect: clearing a hole in a range splits it in two, and when the map could not grow for
 * the second piece, that piece lost its failure. Now the map reserves the slot first; without it
 * the whole range stays tainted. Whatever the capacity, some count of ranges fills it. */
static void test_split_without_memory_keeps_the_failure(void **state)
{
    (void)state;
    failure *a = failure_new(CUBEC_INTERNAL, "a"), *b = failure_new(CUBEC_INTERNAL, "b");
    for (uint32_t ranges = 1; ranges <= 40; ranges++) {
        taint_map m = {0};
        failure *model[BYTES] = {0};
        fill(&m, model, ranges, a, b);
        fail_all = 1;
        int degraded = 0;
        for (uint32_t k = 0; k < ranges; k++) {
            int rc = taint_clear(&m, k * 12 + 4, 2);
            model_set(model, k * 12 + 4, 2, NULL);
            check_kept(&m, model, 1, "a hole cleared without memory");
            if (rc == 0)
                check_exact(&m, model, "a hole cleared without memory, reported exact");
            else
                degraded = 1;
        }
        fail_all = 0;
        /* Once memory is back, clearing again is exact. */
        if (degraded)
            for (uint32_t k = 0; k < ranges; k++)
                assert_int_equal(taint_clear(&m, k * 12 + 4, 2), 0);
        check_exact(&m, model, "holes cleared again with memory");
        taint_free(&m);
    }
    assert_int_equal(a->refs, 1);
    assert_int_equal(b->refs, 1);
    failure_release(a);
    failure_release(b);
}

/* Setting a range without memory: on an empty map, in a gap, inside a range, across the edges
 * of two ranges, over a whole range. The new bytes carry a failure (the new one, or the one of
 * the range they were merged into) and no other byte loses its own. */
static void test_set_without_memory_keeps_every_failure(void **state)
{
    (void)state;
    failure *a = failure_new(CUBEC_INTERNAL, "a"), *b = failure_new(CUBEC_INTERNAL, "b");
    failure *c = failure_new(CUBEC_INTERNAL, "c");
    {
        taint_map m = {0};
        failure *model[BYTES] = {0};
        fail_all = 1;
        assert_int_equal(taint_set(&m, 10, 20, c), 0); /* the first range needs no allocation */
        model_set(model, 10, 20, c);
        check_exact(&m, model, "the first range without memory");
        fail_all = 0;
        taint_free(&m);
    }
    static const struct {
        uint64_t offset, size;
        const char *what;
    } cases[] = {
        {10, 2, "in a gap"},
        {2, 3, "inside a range"},
        {8, 6, "across the edges of two ranges"},
        {12, 10, "over a whole range"},
        {3, 30, "over ranges and gaps"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (uint32_t ranges = 3; ranges <= 40; ranges++) {
            taint_map m = {0};
            failure *model[BYTES] = {0};
            fill(&m, model, ranges, a, b);
            fail_all = 1;
            /* Repeat the case along the map, so that it also lands where the map is full. */
            for (uint64_t base = 0; base + cases[i].offset + cases[i].size <= ranges * 12;
                 base += 36) {
                int rc = taint_set(&m, base + cases[i].offset, cases[i].size, c);
                model_set(model, base + cases[i].offset, cases[i].size, c);
                check_kept(&m, model, 0, cases[i].what);
                if (rc == 0) check_exact(&m, model, cases[i].what);
            }
            fail_all = 0;
            taint_free(&m);
        }
    }
    assert_int_equal(a->refs, 1);
    assert_int_equal(b->refs, 1);
    assert_int_equal(c->refs, 1);
    failure_release(a);
    failure_release(b);
    failure_release(c);
}

static void random_op(taint_map *m, failure **model, failure **fs, uint32_t *rng, int *rc)
{
    uint64_t offset = test_rand(rng) % BYTES;
    uint64_t room = BYTES - offset;
    uint64_t size = 1 + test_rand(rng) % (room < 48 ? room : 48);
    uint32_t pick = test_rand(rng) % 4;
    if (pick == 3) {
        *rc = taint_clear(m, offset, size);
        model_set(model, offset, size, NULL);
    } else {
        *rc = taint_set(m, offset, size, fs[pick]);
        model_set(model, offset, size, fs[pick]);
    }
}

/* With memory, any sequence of sets and clears matches the model byte for byte. */
static void test_random_against_model(void **state)
{
    (void)state;
    failure *fs[3] = {failure_new(CUBEC_INTERNAL, "x"), failure_new(CUBEC_INTERNAL, "y"),
                      failure_new(CUBEC_INTERNAL, "z")};
    uint32_t rng = 12345;
    taint_map m = {0};
    failure *model[BYTES] = {0};
    for (int op = 0; op < 20000; op++) {
        int rc;
        random_op(&m, model, fs, &rng, &rc);
        assert_int_equal(rc, 0);
        check_exact(&m, model, "random operations");
    }
    taint_free(&m);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(fs[i]->refs, 1);
        failure_release(fs[i]);
    }
}

/* With reallocations failing at random, no failure is ever lost, and clearing everything with
 * memory back leaves an empty map that holds no reference. */
static void test_random_with_failing_memory(void **state)
{
    (void)state;
    failure *fs[3] = {failure_new(CUBEC_INTERNAL, "x"), failure_new(CUBEC_INTERNAL, "y"),
                      failure_new(CUBEC_INTERNAL, "z")};
    uint32_t rng = 999;
    int degraded = 0;
    for (int round = 0; round < 50; round++) {
        taint_map m = {0};
        failure *model[BYTES] = {0};
        fail_one_in = 3;
        for (int op = 0; op < 400; op++) {
            int rc;
            random_op(&m, model, fs, &rng, &rc);
            degraded |= rc != 0;
            check_kept(&m, model, 0, "random operations, memory failing");
        }
        fail_one_in = 0;
        assert_int_equal(taint_clear(&m, 0, BYTES), 0);
        memset(model, 0, sizeof model);
        check_exact(&m, model, "cleared");
        assert_int_equal(m.count, 0);
        taint_free(&m);
    }
    assert_true(degraded); /* the failing reallocations were met */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(fs[i]->refs, 1);
        failure_release(fs[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_split_without_memory_keeps_the_failure, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_set_without_memory_keeps_every_failure, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_random_against_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_with_failing_memory, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
