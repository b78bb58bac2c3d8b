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
    const uint64_t tag_bits = (uint64_t)tag << 48;
    /* This table's tag; a slot never used, a generation the slot never had, generation 0. */
    ASSERT_ERROR(handle_table_lookup(&t, tag_bits | (1ull << 32) | 77, "k", &o),
                 CUBEC_INVALID_ARGUMENT, "k: kernel handle 0x");
    ASSERT_ERROR(handle_table_lookup(&t, tag_bits | (1ull << 32) | 77, "k", &o),
                 CUBEC_INVALID_ARGUMENT, "is unknown: this device never issued it");
    ASSERT_ERROR(handle_table_lookup(&t, tag_bits | (9ull << 32) | (uint32_t)b, "k", &o),
                 CUBEC_INVALID_ARGUMENT, "is unknown: this device never issued it");
    ASSERT_ERROR(handle_table_lookup(&t, tag_bits | (uint32_t)b, "k", &o), CUBEC_INVALID_ARGUMENT,
                 "is unknown: this device never issued it");
    /* Removed: stale. The slot's next generation, not issued yet while the slot is free: unknown.
     */
    handle_table_remove(&t, a);
    ASSERT_ERROR(handle_table_lookup(&t, a, "k", &o), CUBEC_INVALID_ARGUMENT,
                 "is stale: that kernel was destroyed");
    ASSERT_ERROR(handle_table_lookup(&t, a + (1ull << 32), "k", &o), CUBEC_INVALID_ARGUMENT,
                 "never issued");
    /* Another live table's tag; a tag nobody holds; tag 0. */
    ASSERT_ERROR(handle_table_lookup(&t, c, "k", &o), CUBEC_INVALID_ARGUMENT,
                 "belongs to another device");
    uint16_t free_tag = (uint16_t)(other_tag + 1000); /* far from the few tags a test holds */
    ASSERT_ERROR(handle_table_lookup(&t, ((uint64_t)free_tag << 48) | (1ull << 32), "k", &o),
                 CUBEC_INVALID_ARGUMENT, "is unknown: no open device issued it");
    ASSERT_ERROR(handle_table_lookup(&t, 0x1234567, "k", &o), CUBEC_INVALID_ARGUMENT,
                 "is unknown: no open device issued it");
    /* Once the other table's tag is released, its handles are nobody's. */
    handle_tag_release(other_tag);
    ASSERT_ERROR(handle_table_lookup(&t, c, "k", &o), CUBEC_INVALID_ARGUMENT,
                 "is unknown: no open device issued it");
    /* A slot whose generation wrapped may have issued any generation: stale. */
    for (int i = 0; i < 65535; i++) {
        uint64_t id;
        ASSERT_OK(handle_table_insert(&t, &objs[0], &id));
        assert_int_equal((uint32_t)id, (uint32_t)a);
        handle_table_remove(&t, id);
    }
    ASSERT_ERROR(handle_table_lookup(&t, tag_bits | (40000ull << 32) | (uint32_t)a, "k", &o),
                 CUBEC_INVALID_ARGUMENT, "is stale");
    handle_table_free(&t);
    handle_table_free(&other);
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
        cmocka_unit_test(test_handles), cmocka_unit_test(test_handle_explanations),
        cmocka_unit_test(test_tags),    cmocka_unit_test(test_hash),
        cmocka_unit_test(test_hazards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
