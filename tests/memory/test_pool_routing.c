/* The memory manager built from pool lists, on a fake page source: a capped pool that is full
 * spills to the next accepting pool (and says so once in the log), the spill error when nothing
 * takes the request, the arena's growth (page size from the request, outdated pages returned as
 * they empty, a refused growth keeping the old size, at most 64 page sizes), and a random run of
 * every preset checked against a model of the live ranges. */
#include "base/log.h"
#include "fake_page_source.h"
#include "memory/memory_manager.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

static memory_config custom(const char *pools)
{
    memory_config c = {.max_page_size = 128 * MiB,
                       .max_alloc_size = 1 * GiB,
                       .alignment = 16,
                       .preset = MEMORY_PRESET_CUSTOM};
    ASSERT_OK(pool_list_parse(pools, &c.custom));
    return c;
}

static memory_manager *make(const memory_config *c, fake_source *f)
{
    memory_manager *m = NULL;
    ASSERT_OK(memory_manager_create(c, fake_page_source(f), &m));
    return m;
}

static cubec_pool_report pool_report(const memory_manager *m, uint32_t i)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &r);
    assert_true(i < r.pool_count);
    return r.pools[i];
}

/* Pool 0 holds at most two 1 MiB pages; what it takes after that goes to pool 1, with one
 * warning however often it happens. Freed room in pool 0 is used again first. */
static void test_capped_pool_spills(void **state)
{
    (void)state;
    char log_path[4096];
    snprintf(log_path, sizeof log_path, "%s/cubec_spill_logXXXXXX", test_tmp_dir());
    int fd = mkstemp(log_path);
    assert_true(fd >= 0);
    close(fd);
    ASSERT_OK(log_configure(LOG_WARN, log_path));

    fake_source f = {0};
    memory_config c = custom("sliced:page=1MiB,max_slice=1MiB,cap=2MiB; sliced:page=4MiB");
    memory_manager *m = make(&c, &f);
    mem_alloc a[6];
    for (int i = 0; i < 6; i++)
        ASSERT_OK(memory_alloc(m, 600 * KiB, &a[i]));
    /* Two fit pool 0 (one per page: 600 KiB twice exceeds a page); the rest spilled. */
    for (int i = 0; i < 6; i++)
        assert_int_equal(a[i].pool, i < 2 ? 0u : 1u);
    cubec_pool_report p0 = pool_report(m, 0), p1 = pool_report(m, 1);
    assert_int_equal(p0.pages, 2);
    assert_int_equal(p0.cap, 2 * MiB);
    assert_int_equal(p0.bytes_reserved, 2 * MiB);
    assert_int_equal(p1.allocations, 4);
    assert_int_equal(p1.cap, 0);
    assert_int_equal(test_count_lines_with(log_path, "reached its cap of 2 pages"), 1);

    /* Room freed in the capped pool is used again before the spill target. */
    memory_free(m, &a[0]);
    mem_alloc again;
    ASSERT_OK(memory_alloc(m, 600 * KiB, &again));
    assert_int_equal(again.pool, 0);
    assert_ptr_equal(again.page, a[0].page);
    ASSERT_OK(memory_alloc(m, 600 * KiB, &a[0]));
    assert_int_equal(a[0].pool, 1);
    assert_int_equal(test_count_lines_with(log_path, "reached its cap"), 1);

    memory_manager_destroy(m);
    assert_int_equal(f.live_pages, 0);
    fake_destroy(&f);
    ASSERT_OK(log_configure(LOG_WARN, NULL));
    unlink(log_path);
}

/* A capped pool with nothing after it: the request fails naming the cap, nothing is
 * reserved, and a freed slice makes room again. A capped pool takes no near-page request. */
static void test_spill_error(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_config c = custom("sliced:page=1MiB,max_slice=512KiB,cap=1MiB");
    memory_manager *m = make(&c, &f);
    mem_alloc a, b;
    ASSERT_OK(memory_alloc(m, 512 * KiB, &a));
    ASSERT_OK(memory_alloc(m, 512 * KiB, &b));
    mem_alloc no;
    ASSERT_ERROR(memory_alloc(m, 16, &no), CUBEC_OUT_OF_MEMORY,
                 "sliced pool 0 (pages of 1048576 bytes) is at its cap of 1048576 bytes with "
                 "1048576 bytes in use");
    assert_null(no.page);
    assert_int_equal(f.alloc_calls, 1);
    /* 900 KiB would fill 88 % of a page, but a capped pool keeps to its max_slice. */
    ASSERT_ERROR(memory_alloc(m, 900 * KiB, &no), CUBEC_OUT_OF_MEMORY,
                 "no pool of the custom memory layout takes a buffer of that size");
    memory_free(m, &b);
    ASSERT_OK(memory_alloc(m, 16, &b));
    assert_int_equal(pool_report(m, 0).allocations, 2);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

/* The arena's page size follows the requests: size + 1 MiB rounded up to 1 MiB, at least
 * min_page. Older sizes serve nothing new and go back to the source as they empty. */
static void test_arena_growth(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_config c = custom("arena:min_page=2MiB,max_page=64MiB");
    memory_manager *m = make(&c, &f);
    mem_alloc small, mid, big, big2;
    ASSERT_OK(memory_alloc(m, 100 * KiB, &small));
    assert_int_equal(f.last_size, 2 * MiB);
    cubec_pool_report r = pool_report(m, 0);
    assert_string_equal(r.kind, "arena");
    assert_int_equal(r.page_size, 2 * MiB);
    assert_int_equal(r.max_slice_size, 64 * MiB);

    ASSERT_OK(memory_alloc(m, 5 * MiB + 1, &mid)); /* 5 MiB + 1 + 1 MiB → 7 MiB */
    assert_int_equal(f.last_size, 7 * MiB);
    r = pool_report(m, 0);
    assert_int_equal(r.page_size, 7 * MiB);
    assert_int_equal(r.pages, 2);
    assert_int_equal(r.outdated_pages, 1); /* the 2 MiB page still holds `small` */
    assert_int_equal(r.allocations, 2);
    assert_int_equal(r.bytes_reserved, 9 * MiB);

    /* A small request now goes to the current size, not the outdated page's free room. */
    mem_alloc tiny;
    ASSERT_OK(memory_alloc(m, 64, &tiny));
    assert_ptr_equal(tiny.page, mid.page);
    assert_int_equal(f.live_pages, 2);

    /* Freeing the last slice of the outdated page returns it at once, no cleanup needed. */
    uint64_t frees = f.free_calls;
    memory_free(m, &small);
    assert_int_equal(f.free_calls, frees + 1);
    assert_int_equal(f.live_pages, 1);
    r = pool_report(m, 0);
    assert_int_equal(r.outdated_pages, 0);
    assert_int_equal(r.pages, 1);
    assert_int_equal(r.pages_peak, 2);

    /* Growth the source refuses leaves the old size current, and nothing changed. */
    f.fail_at = f.alloc_calls + 1;
    f.fail_count = 2; /* the try and the retry after a cleanup */
    f.fail_code = CUBEC_OUT_OF_MEMORY;
    ASSERT_ERROR(memory_alloc(m, 20 * MiB, &big), CUBEC_OUT_OF_MEMORY, "arena pool 0");
    assert_int_equal(pool_report(m, 0).page_size, 7 * MiB);
    assert_int_equal(f.live_pages, 1);
    ASSERT_OK(memory_alloc(m, 20 * MiB, &big));
    assert_int_equal(f.last_size, 21 * MiB);
    /* The 7 MiB page still holds `mid` and `tiny`; the growth outdated it. */
    assert_int_equal(pool_report(m, 0).outdated_pages, 1);
    memory_free(m, &mid);
    assert_int_equal(f.live_pages, 2);
    memory_free(m, &tiny);
    assert_int_equal(f.live_pages, 1);

    /* Past max_page - 1 MiB the page is max_page; past max_page nothing takes the request. */
    ASSERT_OK(memory_alloc(m, 63 * MiB + 5, &big2));
    assert_int_equal(f.last_size, 64 * MiB);
    ASSERT_ERROR(memory_alloc(m, 64 * MiB + 1, &tiny), CUBEC_OUT_OF_MEMORY,
                 "no pool of the custom memory layout takes a buffer of that size");
    /* An explicit cleanup returns the current size's empty pages too. */
    memory_free(m, &big);
    memory_free(m, &big2);
    assert_int_equal(f.live_pages, 1);
    assert_int_equal(memory_release_empty(m), 1);
    assert_int_equal(f.live_pages, 0);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

/* Each growth that leaves a live slice behind keeps a page size; the 65th cannot grow. */
static void test_arena_page_sizes_run_out(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_config c = custom("arena:min_page=1MiB");
    c.max_page_size = 256 * MiB;
    memory_manager *m = make(&c, &f);
    mem_alloc a[ARENA_MAX_PAGE_SIZES + 1];
    /* (2i + 1) MiB needs a page past the last one, (2i + 2) MiB: a growth each time. */
    for (uint32_t i = 0; i < ARENA_MAX_PAGE_SIZES; i++) {
        ASSERT_OK(memory_alloc(m, (2 * i + 1) * MiB, &a[i]));
        assert_int_equal(f.last_size, (2 * i + 2) * MiB);
    }
    ASSERT_ERROR(memory_alloc(m, 200 * MiB, &a[ARENA_MAX_PAGE_SIZES]), CUBEC_OUT_OF_MEMORY,
                 "all 64 page sizes are taken by outdated pages that still hold live buffers");
    /* Freeing one outdated size's buffer frees its slot: growth works again. */
    memory_free(m, &a[3]);
    ASSERT_OK(memory_alloc(m, 200 * MiB, &a[ARENA_MAX_PAGE_SIZES]));
    assert_int_equal(f.last_size, 201 * MiB);
    cubec_pool_report r = pool_report(m, 0);
    assert_int_equal(r.pages, ARENA_MAX_PAGE_SIZES);
    assert_int_equal(r.outdated_pages, ARENA_MAX_PAGE_SIZES - 1);
    memory_manager_destroy(m);
    assert_int_equal(f.live_pages, 0);
    fake_destroy(&f);
}

/* ---- every preset against a model -------------------------------------------------------- */

typedef struct live {
    mem_alloc a;
    uint32_t tag;
} live;

/* Live ranges lie inside their page (its size from the fake source's ledger) and never
 * overlap another live range of the same page; the report's counts equal the model's. */
static void check_model(const memory_manager *m, const live *l, uint32_t n, uint64_t in_use)
{
    for (uint32_t i = 0; i < n; i++) {
        const fake_page *p = l[i].a.page;
        assert_true(p->live);
        assert_true(l[i].a.offset + l[i].a.size <= p->size);
        assert_int_equal(l[i].a.offset % 16, 0);
        for (uint32_t j = i + 1; j < n; j++) {
            if (l[j].a.page != l[i].a.page) continue;
            int apart = l[i].a.offset + l[i].a.size <= l[j].a.offset ||
                        l[j].a.offset + l[j].a.size <= l[i].a.offset;
            assert_true(apart);
        }
    }
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &r);
    assert_int_equal(r.allocations, n);
    assert_int_equal(r.bytes_in_use, in_use);
}

static void random_run(const memory_config *c, const char *preset_name)
{
    fake_source f = {0};
    memory_manager *m = make(c, &f);
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &r);
    assert_string_equal(r.preset, preset_name);
    enum { N = 160 };
    static live l[N];
    uint32_t n = 0;
    uint64_t in_use = 0;
    rng_state = 0x9e3779b97f4a7c15ull;
    for (int op = 0; op < 3000; op++) {
        if (n < N && (n == 0 || rng_range(0, 99) < 55)) {
            /* Mostly small, some large (up to 40 MiB, below every preset's largest page). */
            uint64_t size = rng_range(0, 9) < 8 ? rng_range(1, 256 * KiB) : rng_range(1, 40 * MiB);
            ASSERT_OK(memory_alloc(m, size, &l[n].a));
            in_use += size;
            n++;
        } else {
            uint32_t k = (uint32_t)rng_range(0, n - 1);
            in_use -= l[k].a.size;
            memory_free(m, &l[k].a);
            l[k] = l[--n];
        }
        if (op % 97 == 0) check_model(m, l, n, in_use);
        if (op % 500 == 499) memory_cleanup(m, 1);
    }
    check_model(m, l, n, in_use);
    while (n)
        memory_free(m, &l[--n].a);
    memory_cleanup(m, 1);
    assert_int_equal(f.live_pages, 0); /* every page went back */
    memory_manager_destroy(m);
    fake_destroy(&f);
}

static void test_every_preset_random(void **state)
{
    (void)state;
    memory_config c = {.max_page_size = 128 * MiB, .max_alloc_size = 1 * GiB, .alignment = 16};
    c.preset = MEMORY_PRESET_LADDER;
    random_run(&c, "ladder");
    c.preset = MEMORY_PRESET_EXCLUSIVE;
    random_run(&c, "exclusive");
    c.preset = MEMORY_PRESET_ADAPTIVE;
    random_run(&c, "adaptive");
    memory_config cu = custom("sliced:page=1MiB,max_slice=128KiB,cap=2MiB; sliced:page=8MiB,"
                              "max_slice=2MiB; exclusive:max=16MiB,dealloc_period=50; arena");
    random_run(&cu, "custom");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capped_pool_spills),  cmocka_unit_test(test_spill_error),
        cmocka_unit_test(test_arena_growth),        cmocka_unit_test(test_arena_page_sizes_run_out),
        cmocka_unit_test(test_every_preset_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
