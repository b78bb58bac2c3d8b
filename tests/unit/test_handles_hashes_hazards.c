/* Small base pieces: generation-counted handles, the identity hash, and the hazard rules that
 * decide where barriers go. */
#include "test_util.h"

#include "base/handle_table.h"
#include "base/hash.h"
#include "server/hazards.h"

#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void test_handles(void **state)
{
    (void)state;
    handle_table t, other;
    uint16_t tag = handle_tag_acquire(), other_tag = handle_tag_acquire();
    assert_true(tag != 0 && other_tag != 0 && tag != other_tag);
    handle_table_init(&t, tag, "buffer");
    handle_table_init(&other, other_tag, "buffer");
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
    assert_int_equal(again & HANDLE_INDEX_MASK, ids[10] & HANDLE_INDEX_MASK);
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
    handle_tag_release(tag);
    handle_tag_release(other_tag);
}

/* Why a lookup failed, from what the table and the tag registry know: a made-up id is "unknown",
 * never "another device", unless its tag is a live one of another table. */
static void test_handle_explanations(void **state)
{
    (void)state;
    handle_table t, other;
    uint16_t tag = handle_tag_acquire(), other_tag = handle_tag_acquire();
    handle_table_init(&t, tag, "kernel");
    handle_table_init(&other, other_tag, "kernel");
    int objs[3];
    uint64_t a, b, c;
    ASSERT_OK(handle_table_insert(&t, &objs[0], &a));
    ASSERT_OK(handle_table_insert(&t, &objs[1], &b));
    ASSERT_OK(handle_table_insert(&other, &objs[2], &c));
    void *o;
    /* This table's tag; a slot never used, a generation the slot never had, generation 0. */
    const uint32_t b_index = b & HANDLE_INDEX_MASK;
    ASSERT_ERROR(handle_table_lookup(&t, handle_id_make(tag, 1, 77), "k", &o),
                 CUBEC_INVALID_ARGUMENT, "k: kernel handle 0x");
    ASSERT_ERROR(handle_table_lookup(&t, handle_id_make(tag, 1, 77), "k", &o),
                 CUBEC_INVALID_ARGUMENT, "is unknown: this device never issued it");
    ASSERT_ERROR(handle_table_lookup(&t, handle_id_make(tag, 9, b_index), "k", &o),
                 CUBEC_INVALID_ARGUMENT, "is unknown: this device never issued it");
    ASSERT_ERROR(handle_table_lookup(&t, handle_id_make(tag, 0, b_index), "k", &o),
                 CUBEC_INVALID_ARGUMENT, "is unknown: this device never issued it");
    /* Removed: stale. The slot's next generation, not issued yet while the slot is free: unknown.
     */
    handle_table_remove(&t, a);
    ASSERT_ERROR(handle_table_lookup(&t, a, "k", &o), CUBEC_INVALID_ARGUMENT,
                 "is stale: that kernel was destroyed");
    ASSERT_ERROR(handle_table_lookup(&t, a + (1ull << HANDLE_GENERATION_SHIFT), "k", &o),
                 CUBEC_INVALID_ARGUMENT, "never issued");
    /* Another live table's tag; a tag nobody holds; tag 0. */
    ASSERT_ERROR(handle_table_lookup(&t, c, "k", &o), CUBEC_INVALID_ARGUMENT,
                 "belongs to another device");
    uint16_t free_tag = (uint16_t)(other_tag + 1000); /* far from the few tags a test holds */
    ASSERT_ERROR(handle_table_lookup(&t, handle_id_make(free_tag, 1, 0), "k", &o),
                 CUBEC_INVALID_ARGUMENT, "is unknown: no open device issued it");
    ASSERT_ERROR(handle_table_lookup(&t, 0x1234567, "k", &o), CUBEC_INVALID_ARGUMENT,
                 "is unknown: no open device issued it");
    /* Once the other table's tag is released, its handles are nobody's. */
    handle_tag_release(other_tag);
    ASSERT_ERROR(handle_table_lookup(&t, c, "k", &o), CUBEC_INVALID_ARGUMENT,
                 "is unknown: no open device issued it");
    /* After many reuses of a slot, every generation it issued is stale, the next is unknown. */
    const uint32_t a_index = a & HANDLE_INDEX_MASK;
    for (int i = 0; i < 40000; i++) {
        uint64_t id;
        ASSERT_OK(handle_table_insert(&t, &objs[0], &id));
        assert_int_equal(id & HANDLE_INDEX_MASK, a_index);
        handle_table_remove(&t, id);
    }
    ASSERT_ERROR(handle_table_lookup(&t, handle_id_make(tag, 30000, a_index), "k", &o),
                 CUBEC_INVALID_ARGUMENT, "is stale");
    ASSERT_ERROR(handle_table_lookup(&t, handle_id_make(tag, 40002, a_index), "k", &o),
                 CUBEC_INVALID_ARGUMENT, "never issued");
    handle_table_free(&t);
    handle_table_free(&other);
    handle_tag_release(tag);
}

/* Issue 11: one slot created and released 70 000 times, past the 65 535 generations the
 * handle layout used to have. A released handle stays refused as released and never names the
 * object that now holds its slot; no id is issued twice. */
static void test_handles_never_alias(void **state)
{
    (void)state;
    handle_table t;
    uint16_t tag = handle_tag_acquire();
    handle_table_init(&t, tag, "buffer");
    int first_obj, obj[2];
    uint64_t first, id;
    ASSERT_OK(handle_table_insert(&t, &first_obj, &first));
    handle_table_remove(&t, first);
    enum { CYCLES = 70000 };
    uint64_t *issued = malloc(CYCLES * sizeof *issued);
    assert_non_null(issued);
    for (uint32_t i = 0; i < CYCLES; i++) {
        ASSERT_OK(handle_table_insert(&t, &obj[i & 1], &id));
        issued[i] = id;
        if (id == first || handle_table_get(&t, first) != NULL)
            fail_msg("cycle %u: the released id 0x%016llx names the live object again (new id "
                     "0x%016llx)",
                     i, (unsigned long long)first, (unsigned long long)id);
        assert_ptr_equal(handle_table_get(&t, id), &obj[i & 1]);
        if (i == 65534 || i == CYCLES - 1) {
            /* The cycle that used to bring the first generation back, and the last one. */
            void *o = NULL;
            ASSERT_ERROR(handle_table_lookup(&t, first, "src", &o), CUBEC_INVALID_ARGUMENT,
                         "is stale: that buffer was released");
            assert_null(o);
        }
        handle_table_remove(&t, id);
    }
    /* Every id was issued once: sorted, no two are equal. */
    qsort(issued, CYCLES, sizeof *issued, cmp_u64);
    for (uint32_t i = 1; i < CYCLES; i++)
        if (issued[i] == issued[i - 1])
            fail_msg("id 0x%016llx was issued twice", (unsigned long long)issued[i]);
    free(issued);
    assert_int_equal(t.live, 0);
    handle_table_free(&t);
    handle_tag_release(tag);
}

/* The limits, lowered through the table's fields so that they are reached at once: a slot that
 * issued its last generation is retired (its ids stay stale, the next creation takes another
 * slot), and when every index is live or retired, creation fails naming the limit. */
static void test_handle_limits(void **state)
{
    (void)state;
    handle_table t;
    uint16_t tag = handle_tag_acquire();
    handle_table_init(&t, tag, "buffer");
    assert_int_equal(t.index_limit, HANDLE_INDEX_LIMIT);
    assert_int_equal(t.generation_limit, HANDLE_GENERATION_LIMIT);
    t.index_limit = 2;
    t.generation_limit = 4; /* generations 1, 2, 3 */
    int objs[2];
    uint64_t ids[6], other, id;
    for (int i = 0; i < 3; i++) {
        ASSERT_OK(handle_table_insert(&t, &objs[0], &ids[i]));
        assert_int_equal(ids[i] & HANDLE_INDEX_MASK, 0);
        handle_table_remove(&t, ids[i]);
    }
    assert_int_equal(t.retired, 1);
    /* Index 0 is retired: the next handle is index 1's, and index 0's ids stay stale. */
    ASSERT_OK(handle_table_insert(&t, &objs[1], &other));
    assert_int_equal(other & HANDLE_INDEX_MASK, 1);
    void *o = NULL;
    for (int i = 0; i < 3; i++) {
        assert_null(handle_table_get(&t, ids[i]));
        ASSERT_ERROR(handle_table_lookup(&t, ids[i], "src", &o), CUBEC_INVALID_ARGUMENT,
                     "is stale: that buffer was released");
    }
    ASSERT_ERROR(handle_table_lookup(&t, handle_id_make(tag, 4, 0), "src", &o),
                 CUBEC_INVALID_ARGUMENT, "never issued");
    /* Both indexes used (one live, one retired): the limit is named. */
    ASSERT_ERROR(handle_table_insert(&t, &objs[0], &id), CUBEC_OUT_OF_MEMORY,
                 "too many buffers: 1 are live and 1 buffer handle slots were retired after "
                 "issuing 3 handles each; a device holds at most 2 buffer handles");
    handle_table_free(&t);

    /* Live handles at the limit: the limit is named, and a removal makes room again. */
    handle_table_init(&t, tag, "kernel");
    t.index_limit = 2;
    ASSERT_OK(handle_table_insert(&t, &objs[0], &ids[0]));
    ASSERT_OK(handle_table_insert(&t, &objs[1], &ids[1]));
    ASSERT_ERROR(handle_table_insert(&t, &objs[0], &id), CUBEC_OUT_OF_MEMORY,
                 "too many kernels: a device holds at most 2 live kernel handles");
    handle_table_remove(&t, ids[1]);
    ASSERT_OK(handle_table_insert(&t, &objs[0], &ids[2]));
    assert_true(ids[2] != ids[1]);
    assert_ptr_equal(handle_table_get(&t, ids[2]), &objs[0]);
    assert_null(handle_table_get(&t, ids[1]));
    handle_table_free(&t);
    handle_tag_release(tag);
}

/* Tags are distinct while held, and not handed out again at once when released. */
static void test_tags(void **state)
{
    (void)state;
    uint16_t tags[8];
    for (int i = 0; i < 8; i++) {
        tags[i] = handle_tag_acquire();
        assert_true(tags[i] != 0);
        for (int j = 0; j < i; j++)
            assert_true(tags[i] != tags[j]);
    }
    handle_tag_release(tags[3]);
    uint16_t next = handle_tag_acquire();
    assert_true(next != tags[3]);
    handle_tag_release(next);
    for (int i = 0; i < 8; i++)
        handle_tag_release(tags[i]);
    handle_tag_release(0); /* ignored */
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
        cmocka_unit_test(test_handle_explanations),
        cmocka_unit_test(test_handles_never_alias),
        cmocka_unit_test(test_handle_limits),
        cmocka_unit_test(test_tags),
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_hazards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
