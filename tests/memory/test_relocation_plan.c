/* Relocation planning in the memory manager (spec 3.9), on a fake page source: live slices of
 * outdated arena pages get targets in the current page size, a page is emptied only when all of
 * its slices find one, guarded pages and slices without an owner never move, Explicit and
 * MemoryPressure use held room only while ArenaFull and Capture may add pages, a relocation that
 * moved nothing is not wanted again until the arena's shape changes, and relocation_need names
 * ArenaFull and MemoryPressure. */
#include "fake_page_source.h"
#include "memory/memory_manager.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

typedef struct plan {
    mem_move *moves;
    uint32_t count, cap;
} plan;

static memory_manager *make_arena(fake_source *f)
{
    memory_config c = {.max_page_size = 128 * MiB,
                       .max_alloc_size = 1 * GiB,
                       .alignment = 16,
                       .preset = MEMORY_PRESET_CUSTOM};
    ASSERT_OK(pool_list_parse("arena:min_page=2MiB,max_page=128MiB", &c.custom));
    memory_manager *m = NULL;
    ASSERT_OK(memory_manager_create(&c, fake_page_source(f), &m));
    return m;
}

static cubec_pool_report arena_report(const memory_manager *m)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &r);
    assert_string_equal(r.pools[0].kind, "arena");
    return r.pools[0];
}

/* Allocates and names the owner, as the server does for every buffer. */
static mem_alloc owned(memory_manager *m, uint64_t size, void *owner)
{
    mem_alloc a;
    ASSERT_OK(memory_alloc(m, size, &a));
    memory_set_owner(m, &a, owner);
    return a;
}

/* What the server does after the copies: the sources are freed, the moves counted. */
static void commit(memory_manager *m, plan *p)
{
    for (uint32_t i = 0; i < p->count; i++)
        memory_free(m, &p->moves[i].from);
    memory_relocation_done(m, MEMORY_RELOCATE_EXPLICIT, p->moves, p->count);
    p->count = 0;
}

static void test_explicit_moves_into_held_room(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_manager *m = make_arena(&f);
    int o_small, o_mid;
    mem_alloc small = owned(m, 100 * KiB, &o_small);
    mem_alloc mid = owned(m, 5 * MiB + 1, &o_mid); /* grows to 7 MiB pages */
    assert_int_equal(arena_report(m).outdated_pages, 1);
    assert_true(memory_relocation_wanted(m, MEMORY_RELOCATE_EXPLICIT));

    plan p = {0};
    ASSERT_OK(memory_relocation_plan(m, MEMORY_RELOCATE_EXPLICIT, &p.moves, &p.count, &p.cap));
    assert_int_equal(p.count, 1);
    const mem_move *mv = &p.moves[0];
    assert_ptr_equal(mv->owner, &o_small);
    assert_ptr_equal(mv->from.page, small.page);
    assert_int_equal(mv->from.offset, small.offset);
    assert_int_equal(mv->from.size, 100 * KiB);
    assert_ptr_equal(mv->to.page, mid.page); /* the room the current page holds */
    assert_int_equal(mv->to.size, 100 * KiB);
    assert_int_equal(f.live_pages, 2); /* no page was added */
    /* A second plan finds nothing: the source slice lost its owner. */
    plan again = {0};
    ASSERT_OK(memory_relocation_plan(m, MEMORY_RELOCATE_EXPLICIT, &again.moves, &again.count,
                                     &again.cap));
    assert_int_equal(again.count, 0);

    mem_alloc moved = mv->to;
    commit(m, &p);
    assert_int_equal(f.live_pages, 1); /* the outdated page went back */
    cubec_pool_report r = arena_report(m);
    assert_int_equal(r.outdated_pages, 0);
    assert_int_equal(r.relocations, 1);
    assert_int_equal(r.relocated_bytes, 100 * KiB);
    assert_int_equal(r.allocations, 2);
    assert_int_equal(r.bytes_in_use, 100 * KiB + 5 * MiB + 1);
    assert_false(memory_relocation_wanted(m, MEMORY_RELOCATE_EXPLICIT));
    memory_free(m, &moved);
    memory_free(m, &mid);
    assert_int_equal(arena_report(m).allocations, 0);
    free(p.moves);
    free(again.moves);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

/* Two 600 KiB slices on the outdated page, 1148 KiB of room in the current one: one would fit,
 * so neither moves with held room only; with new pages allowed both do. */
static void test_page_moves_whole_or_not_at_all(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_manager *m = make_arena(&f);
    int o1, o2, o3;
    mem_alloc a1 = owned(m, 600 * KiB, &o1);
    mem_alloc a2 = owned(m, 600 * KiB, &o2);
    mem_alloc mid = owned(m, 5 * MiB + 900 * KiB, &o3); /* 7 MiB pages */
    cubec_pool_report before = arena_report(m);

    plan p = {0};
    ASSERT_OK(memory_relocation_plan(m, MEMORY_RELOCATE_PRESSURE, &p.moves, &p.count, &p.cap));
    assert_int_equal(p.count, 0);
    cubec_pool_report r = arena_report(m);
    assert_int_equal(r.allocations, before.allocations); /* the one target taken went back */
    assert_int_equal(r.bytes_in_use, before.bytes_in_use);
    assert_int_equal(f.live_pages, 2);

    ASSERT_OK(memory_relocation_plan(m, MEMORY_RELOCATE_ARENA_FULL, &p.moves, &p.count, &p.cap));
    assert_int_equal(p.count, 2);
    assert_int_equal(f.live_pages, 3); /* a current-size page was added */
    for (uint32_t i = 0; i < 2; i++)
        assert_int_equal(p.moves[i].to.part, mid.part);
    assert_true(p.moves[0].from.page == a1.page && p.moves[1].from.page == a2.page);
    mem_alloc t1 = p.moves[0].to, t2 = p.moves[1].to;
    commit(m, &p);
    assert_int_equal(f.live_pages, 2);
    assert_int_equal(arena_report(m).relocations, 2);
    memory_free(m, &t1);
    memory_free(m, &t2);
    memory_free(m, &mid);
    free(p.moves);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

/* A guarded page, and a page holding a slice without an owner (a free waiting on the GPU), stay
 * where they are; once the guard goes the page moves. */
static void test_guards_and_ownerless_slices_stay(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_manager *m = make_arena(&f);
    int o1, o2;
    mem_alloc guarded = owned(m, 64 * KiB, &o1);
    mem_alloc mid = owned(m, 3 * MiB + 1, &o2); /* 5 MiB pages: the 2 MiB page is outdated */
    mem_alloc orphan;
    ASSERT_OK(memory_alloc(m, 64 * KiB, &orphan)); /* in the 5 MiB page, no owner */
    mem_alloc big = owned(m, 5 * MiB + 1, &o2);    /* 7 MiB pages: two outdated pages now */
    assert_int_equal(arena_report(m).outdated_pages, 2);
    memory_guard(m, &guarded, +1);
    assert_int_equal(arena_report(m).guarded_pages, 1);

    plan p = {0};
    ASSERT_OK(memory_relocation_plan(m, MEMORY_RELOCATE_EXPLICIT, &p.moves, &p.count, &p.cap));
    assert_int_equal(p.count, 0);
    memory_relocation_done(m, MEMORY_RELOCATE_EXPLICIT, p.moves, 0);
    /* Nothing moved and nothing changed: not wanted again, except by a relocation that may add
     * pages, which the futile one could not. */
    assert_false(memory_relocation_wanted(m, MEMORY_RELOCATE_EXPLICIT));
    assert_true(memory_relocation_wanted(m, MEMORY_RELOCATE_CAPTURE));
    ASSERT_OK(memory_relocation_plan(m, MEMORY_RELOCATE_CAPTURE, &p.moves, &p.count, &p.cap));
    assert_int_equal(p.count, 0);
    memory_relocation_done(m, MEMORY_RELOCATE_CAPTURE, p.moves, 0);
    assert_false(memory_relocation_wanted(m, MEMORY_RELOCATE_CAPTURE));

    memory_guard(m, &guarded, -1); /* the shape changes: wanted again */
    assert_int_equal(arena_report(m).guarded_pages, 0);
    assert_true(memory_relocation_wanted(m, MEMORY_RELOCATE_EXPLICIT));
    ASSERT_OK(memory_relocation_plan(m, MEMORY_RELOCATE_CAPTURE, &p.moves, &p.count, &p.cap));
    assert_int_equal(p.count, 1);
    assert_ptr_equal(p.moves[0].from.page, guarded.page);
    mem_alloc moved = p.moves[0].to;
    commit(m, &p);
    assert_int_equal(arena_report(m).outdated_pages, 1); /* the orphan's page */
    memory_free(m, &moved);
    memory_free(m, &orphan);
    memory_free(m, &mid);
    memory_free(m, &big);
    assert_int_equal(arena_report(m).outdated_pages, 0);
    free(p.moves);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

/* Spec 3.9's relocation_need: ArenaFull once every page-size slot is taken (pages 2, 4, ...,
 * 128 MiB, each kept by a small live slice), MemoryPressure when the pages come within one
 * current page of the capacity, nothing without an outdated page. */
static void test_relocation_need(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_manager *m = make_arena(&f);
    memory_relocation_reason why;
    int owner;
    mem_alloc keep[64];
    keep[0] = owned(m, 64, &owner);
    assert_false(memory_relocation_need(m, 0, 0, &why)); /* no outdated page */
    for (int k = 1; k < 64; k++) {
        mem_alloc big;
        ASSERT_OK(memory_alloc(m, (uint64_t)(2 * k + 1) * MiB, &big));
        assert_int_equal(f.last_size, (uint64_t)(2 * k + 2) * MiB);
        keep[k] = owned(m, 64, &owner);
        memory_free(m, &big);
        if (k == 1) {
            /* 2 + 4 MiB held; the current page is 4 MiB. */
            assert_true(memory_relocation_need(m, 13 * MiB, 6 * MiB, &why));
            assert_int_equal(why, MEMORY_RELOCATE_PRESSURE);
            assert_false(memory_relocation_need(m, 15 * MiB, 6 * MiB, &why));
            assert_false(memory_relocation_need(m, 0, 6 * MiB, &why));
        }
    }
    assert_int_equal(arena_report(m).outdated_pages, 63);
    assert_true(memory_relocation_need(m, 0, 0, &why));
    assert_int_equal(why, MEMORY_RELOCATE_ARENA_FULL);

    plan p = {0};
    ASSERT_OK(memory_relocation_plan(m, why, &p.moves, &p.count, &p.cap));
    assert_int_equal(p.count, 63);
    for (uint32_t i = 0; i < p.count; i++) {
        int k = -1;
        for (int j = 0; j < 63; j++)
            if (keep[j].page == p.moves[i].from.page && keep[j].offset == p.moves[i].from.offset)
                k = j;
        assert_true(k >= 0);
        keep[k] = p.moves[i].to;
    }
    commit(m, &p);
    cubec_pool_report r = arena_report(m);
    assert_int_equal(r.outdated_pages, 0);
    assert_int_equal(r.pages, 1);
    assert_int_equal(r.relocations, 63);
    assert_int_equal(r.relocated_bytes, 63 * 64);
    assert_false(memory_relocation_need(m, 0, 0, &why));
    for (int k = 0; k < 64; k++)
        memory_free(m, &keep[k]);
    assert_int_equal(arena_report(m).allocations, 0);
    free(p.moves);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_explicit_moves_into_held_room),
        cmocka_unit_test(test_page_moves_whole_or_not_at_all),
        cmocka_unit_test(test_guards_and_ownerless_slices_stay),
        cmocka_unit_test(test_relocation_need),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
