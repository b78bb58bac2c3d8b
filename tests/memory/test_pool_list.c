/* Pool lists (memory/pool_list.h): the custom list's syntax, every refusal of spec 3.4 with the
 * entry and the reason named, and the presets laid out for a device's limits, each checked
 * against a layout computed here from the rules of docs/memory.md. */
#include "fake_page_source.h"
#include "memory/pool_list.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

static pool_list parse_ok(const char *text)
{
    pool_list l = {0};
    ASSERT_OK(pool_list_parse(text, &l));
    return l;
}

static void test_parse_fields_and_defaults(void **state)
{
    (void)state;
    pool_list l = parse_ok(" sliced : page = 64MiB , max_slice=4mib,cap=1GiB ;exclusive:max=2GiB,"
                           "dealloc_period=7; exclusive; arena:min_page=3MiB; sliced:page=4096");
    assert_int_equal(l.count, 5);
    assert_int_equal(l.pools[0].kind, POOL_SPEC_SLICED);
    assert_int_equal(l.pools[0].page, 64 * MiB);
    assert_int_equal(l.pools[0].max, 4 * MiB);
    assert_int_equal(l.pools[0].cap, 1 * GiB);
    assert_false(l.pools[0].fill_rule); /* capped: no 80 % rule (spec 3.3) */
    assert_int_equal(l.pools[1].kind, POOL_SPEC_EXCLUSIVE);
    assert_int_equal(l.pools[1].max, 2 * GiB);
    assert_int_equal(l.pools[1].dealloc_period, 7);
    assert_int_equal(l.pools[2].max, 0); /* the device's, filled in by pool_list_build */
    assert_int_equal(l.pools[2].dealloc_period, UINT64_MAX);
    assert_int_equal(l.pools[3].kind, POOL_SPEC_ARENA);
    assert_int_equal(l.pools[3].page, 3 * MiB);
    assert_int_equal(l.pools[4].page, 4096);
    assert_int_equal(l.pools[4].max, 4096); /* max_slice defaults to the page */
    assert_true(l.pools[4].fill_rule);

    /* Parsing appends (the ini file's lines add up); blank text adds nothing. */
    ASSERT_OK(pool_list_parse("  ", &l));
    ASSERT_OK(pool_list_parse("exclusive:max=1KiB", &l));
    assert_int_equal(l.count, 6);
    assert_int_equal(l.pools[5].max, 1024);
}

/* Every refusal names the entry and what is wrong, and leaves the list as it was. */
static void test_parse_refusals(void **state)
{
    (void)state;
    char many[4096] = "";
    for (uint32_t i = 0; i <= MEMORY_MAX_POOLS; i++)
        strcat(many, i ? ";exclusive" : "exclusive");
    const struct {
        const char *text, *says;
    } cases[] = {
        {"sliced:page=0", "entry 'sliced:page=0': page is zero"},
        {"sliced:page=1MiB,max_slice=0", "max_slice is zero"},
        {"sliced:page=1MiB,cap=0", "cap is zero"},
        {"exclusive:max=0", "max is zero"},
        {"arena:min_page=0", "min_page is zero"},
        {"sliced:page=1MiB,max_slice=2MiB", "max_slice 2097152 is larger than page 1048576"},
        {"sliced:page=1MiB,cap=1023KiB", "cap 1047552 is smaller than one page (1048576)"},
        {"sliced:page=1KiB,cap=65536KiB", "cap 67108864 holds 65536 pages of 1024 bytes, more "
                                          "than 65535"},
        {many, "too many pools (at most 29)"},
        {"sliced:max_slice=1MiB", "a sliced pool needs page=<size>"},
        {"slice:page=1MiB", "'slice' is not a pool kind of sliced|exclusive|arena"},
        {"sliced:page=1MiB,size=2", "'size' is not a field of sliced (page|max_slice|cap)"},
        {"sliced:page=1MiB,page=2MiB", "page is given twice"},
        {"sliced:page=1MB", "page = '1MB' is not a size"},
        {"sliced:page=-1", "page = '-1' is not a size"},
        {"sliced:page=99999999999TiB", "is not a size"},
        {"exclusive:dealloc_period=1KiB5", "is not a count"},
        {"sliced:page", "'page' is not field=value"},
        {"exclusive;;exclusive", "an empty entry"},
        {"exclusive;", "an empty entry"},
        {"arena:min_page=4MiB,max_page=2MiB", "min_page 4194304 is larger than max_page 2097152"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pool_list l = parse_ok("exclusive");
        ASSERT_ERROR(pool_list_parse(cases[i].text, &l), CUBEC_INVALID_ARGUMENT, cases[i].says);
        assert_int_equal(l.count, 1);
    }
    /* Exactly the most pools is fine. */
    many[strlen(many) - strlen(";exclusive")] = 0;
    assert_int_equal(parse_ok(many).count, MEMORY_MAX_POOLS);
}

static const pool_limits LAVAPIPE = {128 * MiB, 2 * GiB, 16};

static void test_ladder_preset(void **state)
{
    (void)state;
    pool_list l;
    ASSERT_OK(pool_list_build(MEMORY_PRESET_LADDER, NULL, &LAVAPIPE, &l));
    /* 128 MiB / 4 = 32 MiB (slices <= 16 MiB), / 4 = 8 MiB (<= 2 MiB), small first; then the
     * exclusive pool up to the largest allocation, period 5000 * (1 + round(128 MiB / GiB)). */
    assert_int_equal(l.count, 3);
    assert_int_equal(l.pools[0].page, 8 * MiB);
    assert_int_equal(l.pools[0].max, 2 * MiB);
    assert_int_equal(l.pools[1].page, 32 * MiB);
    assert_int_equal(l.pools[1].max, 16 * MiB);
    assert_true(l.pools[0].fill_rule && l.pools[1].fill_rule);
    assert_int_equal(l.pools[2].kind, POOL_SPEC_EXCLUSIVE);
    assert_int_equal(l.pools[2].max, 2 * GiB);
    assert_int_equal(l.pools[2].dealloc_period, 5000);
}

static void test_exclusive_preset(void **state)
{
    (void)state;
    pool_list l;
    ASSERT_OK(pool_list_build(MEMORY_PRESET_EXCLUSIVE, NULL, &LAVAPIPE, &l));
    /* The model: 24 sizes log-spaced from 32 KiB to the page limit, aligned up, duplicates
     * dropped; the last one raised to the largest allocation. */
    uint64_t want[24];
    uint32_t n = 0;
    for (uint32_t i = 0; i < 24; i++) {
        double x = 32.0 * KiB * pow(128.0 * MiB / (32.0 * KiB), i / 23.0);
        uint64_t v = align_up((uint64_t)x, 16);
        if (v > 128 * MiB) v = 128 * MiB;
        if (n && want[n - 1] >= v) continue;
        want[n++] = v;
    }
    want[n - 1] = 2 * GiB;
    assert_int_equal(l.count, n);
    assert_true(n >= 20);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(l.pools[i].kind, POOL_SPEC_EXCLUSIVE);
        assert_int_equal(l.pools[i].max, want[i]);
        uint64_t gib = (want[i] + GiB / 2) / GiB;
        assert_int_equal(l.pools[i].dealloc_period, 5000 * (1 + gib));
    }
    assert_int_equal(l.pools[0].max, 32 * KiB);
}

static void test_adaptive_preset(void **state)
{
    (void)state;
    pool_list l;
    ASSERT_OK(pool_list_build(MEMORY_PRESET_ADAPTIVE, NULL, &LAVAPIPE, &l));
    assert_int_equal(l.count, 2);
    assert_int_equal(l.pools[0].kind, POOL_SPEC_SLICED);
    assert_int_equal(l.pools[0].page, 8 * MiB);
    assert_int_equal(l.pools[0].max, 1 * MiB);
    assert_false(l.pools[0].fill_rule); /* near-page requests go to the arena */
    assert_int_equal(l.pools[1].kind, POOL_SPEC_ARENA);
    assert_int_equal(l.pools[1].page, 2 * MiB);
    assert_int_equal(l.pools[1].max, 128 * MiB);
    /* A device whose pages are below the preset's sizes gets them clamped. */
    const pool_limits small = {4 * MiB, 4 * MiB, 256};
    ASSERT_OK(pool_list_build(MEMORY_PRESET_ADAPTIVE, NULL, &small, &l));
    assert_int_equal(l.pools[0].page, 4 * MiB);
    assert_int_equal(l.pools[0].max, 512 * KiB);
    assert_int_equal(l.pools[1].max, 4 * MiB);
}

static void test_custom_against_device(void **state)
{
    (void)state;
    pool_list c = parse_ok("sliced:page=1000,cap=10000; exclusive; arena:min_page=1MiB");
    pool_list l;
    ASSERT_OK(pool_list_build(MEMORY_PRESET_CUSTOM, &c, &LAVAPIPE, &l));
    assert_int_equal(l.count, 3);
    assert_int_equal(l.pools[0].page, 1008); /* aligned up to 16 */
    assert_int_equal(l.pools[0].max, 1000);
    assert_int_equal(l.pools[1].max, 2 * GiB);
    assert_int_equal(l.pools[1].dealloc_period, 15000); /* 5000 * (1 + round(2)) */
    assert_int_equal(l.pools[2].page, 1 * MiB);
    assert_int_equal(l.pools[2].max, 128 * MiB);

    pool_list empty = {0};
    ASSERT_ERROR(pool_list_build(MEMORY_PRESET_CUSTOM, &empty, &LAVAPIPE, &l),
                 CUBEC_INVALID_ARGUMENT, "the custom pool list is empty");
    pool_list big = parse_ok("sliced:page=256MiB");
    ASSERT_ERROR(pool_list_build(MEMORY_PRESET_CUSTOM, &big, &LAVAPIPE, &l), CUBEC_INVALID_ARGUMENT,
                 "entry 'sliced:page=256MiB': page 268435456 is larger than the device's page "
                 "limit 134217728");
    pool_list ex = parse_ok("exclusive:max=3GiB");
    ASSERT_ERROR(pool_list_build(MEMORY_PRESET_CUSTOM, &ex, &LAVAPIPE, &l), CUBEC_INVALID_ARGUMENT,
                 "max 3221225472 is larger than the device's largest allocation 2147483648");
    pool_list ar = parse_ok("arena:max_page=1GiB");
    ASSERT_ERROR(pool_list_build(MEMORY_PRESET_CUSTOM, &ar, &LAVAPIPE, &l), CUBEC_INVALID_ARGUMENT,
                 "larger than the device's page limit");
    ASSERT_ERROR(pool_list_build((memory_preset)9, NULL, &LAVAPIPE, &l), CUBEC_INVALID_ARGUMENT,
                 "memory preset 9 is not one of ladder|exclusive|custom|adaptive");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_fields_and_defaults),
        cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test(test_ladder_preset),
        cmocka_unit_test(test_exclusive_preset),
        cmocka_unit_test(test_adaptive_preset),
        cmocka_unit_test(test_custom_against_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
