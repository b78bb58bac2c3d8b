/* Small base pieces: generation-counted handles, the identity hash, and the hazard rules that
 * decide where barriers go. */
#include "test_util.h"

#include "base/handle_table.h"
#include "base/hash.h"
#include "server/hazards.h"

#include <string.h>

static void test_handles(void **state)
{
    (void)state;
    handle_table t, other;
    handle_table_init(&t, 3, "buffer");
    handle_table_init(&other, 4, "buffer");
    int objs[200];
    uint64_t ids[200];
    for (int i = 0; i < 200; i++)
        ASSERT_OK(handle_table_insert(&t, &objs[i], &ids[i]));
    for (int i = 0; i < 200; i++)
        assert_ptr_equal(handle_table_get(&t, ids[i]), &objs[i]);
    handle_table_remove(&t, ids[10]);
    assert_null(handle_table_get(&t, ids[10]));
    uint64_t again;
    ASSERT_OK(handle_table_insert(&t, &objs[10], &again));
    assert_true(again != ids[10]); /* same slot, new generation */
    assert_int_equal((uint32_t)again, (uint32_t)ids[10]);
    assert_null(handle_table_get(&t, ids[10]));    /* the stale id stays dead */
    assert_null(handle_table_get(&other, ids[0])); /* another table's id */
    void *o;
    ASSERT_ERROR(handle_table_lookup(&t, 0, "arg", &o), CUBEC_INVALID_ARGUMENT, "zero");
    ASSERT_ERROR(handle_table_lookup(&t, ids[10], "arg", &o), CUBEC_INVALID_ARGUMENT, "released");
    ASSERT_ERROR(handle_table_lookup(&other, ids[1], "arg", &o), CUBEC_INVALID_ARGUMENT,
                 "another device");
    assert_int_equal(t.live, 200);
    handle_table_free(&t);
    handle_table_free(&other);
}

static void test_hash(void **state)
{
    (void)state;
    /* FNV-1a reference values, computed by the definition. */
    uint64_t h = 0xcbf29ce484222325ull;
    const char *s = "cubec";
    for (const char *p = s; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    assert_true(hash_bytes(HASH_SEED, s, 5) == h);
    /* Strings hash with their terminator: a split point changes the value. */
    assert_true(hash_str(hash_str(HASH_SEED, "ab"), "c") !=
                hash_str(hash_str(HASH_SEED, "a"), "bc"));
    assert_true(hash_str(HASH_SEED, NULL) != hash_str(HASH_SEED, ""));
}

static void test_hazards(void **state)
{
    (void)state;
    hazard_tracker t;
    hazard_reset(&t);
    int page_a, page_b;
    hazard_range w0 = {&page_a, 0, 100, 1}, r0 = {&page_a, 50, 10, 0};
    hazard_range w1 = {&page_a, 100, 100, 1}, other = {&page_b, 0, 100, 1};
    assert_false(hazard_needs_barrier(&t, &w0, 1));
    hazard_note(&t, &w0, 1, 1, 2);
    assert_true(hazard_needs_barrier(&t, &r0, 1));     /* read after write */
    assert_false(hazard_needs_barrier(&t, &w1, 1));    /* adjacent, not overlapping */
    assert_false(hazard_needs_barrier(&t, &other, 1)); /* another page */
    hazard_note(&t, &w1, 1, 1, 2);
    hazard_reset(&t);
    hazard_note(&t, &r0, 1, 1, 2);
    hazard_range rr = {&page_a, 55, 10, 0};
    assert_false(hazard_needs_barrier(&t, &rr, 1)); /* read after read */
    rr.write = 1;
    assert_true(hazard_needs_barrier(&t, &rr, 1)); /* write after read */
    /* A full tracker asks for a barrier rather than overflow. */
    hazard_reset(&t);
    for (int i = 0; i < HAZARD_CAPACITY; i++) {
        hazard_range r = {&page_b, (uint64_t)i * 16, 16, 0};
        assert_false(hazard_needs_barrier(&t, &r, 1));
        hazard_note(&t, &r, 1, 1, 2);
    }
    hazard_range last = {&page_a, 0, 4, 0};
    assert_true(hazard_needs_barrier(&t, &last, 1));
    /* Stages and write access accumulate until a reset. */
    hazard_reset(&t);
    hazard_note(&t, &w0, 1, 4, 8);
    hazard_note(&t, &r0, 1, 16, 32);
    assert_int_equal(t.stages, 4 | 16);
    assert_int_equal(t.write_access, 8); /* r0 writes nothing */
    hazard_reset(&t);
    assert_int_equal(t.stages, 0);
    assert_int_equal(t.write_access, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handles),
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_hazards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
