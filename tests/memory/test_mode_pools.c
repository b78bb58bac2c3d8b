/* The persistent pool, dedicated allocations and the window routing of memory_modes.h, on a fake
 * page source (no GPU): a random run of allocations and frees through every route against a
 * model of where each buffer lives and which pages the source holds; exact-fit reuse by the same
 * effective size only; the explicit release of free slices; stale and double frees ignored; a
 * refused page changing nothing and the manager's one retry after returning empty pages. */
#include "fake_page_source.h"
#include "memory/memory_manager.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

static memory_manager *make(fake_source *f, persistent_memory setting)
{
    memory_config c = {.max_page_size = 128 * MiB,
                       .max_alloc_size = 1 * GiB,
                       .alignment = 256,
                       .preset = MEMORY_PRESET_LADDER,
                       .persistent_memory = setting};
    memory_manager *m = NULL;
    ASSERT_OK(memory_manager_create(&c, fake_page_source(f), &m));
    return m;
}

static cubec_memory_report report(const memory_manager *m)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &r);
    return r;
}

/* Exact fit, reuse by the same effective size only, kept by periodic cleanups, released by an
 * explicit one; frees that do not match a live slice change nothing. */
static void test_persistent_buckets(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_manager *m = make(&f, PERSISTENT_MEMORY_ENABLED);
    memory_modes *mm = memory_manager_modes(m);
    ASSERT_OK(memory_modes_push(mm, MEMORY_MODE_PERSISTENT));
    mem_alloc a, b, c;
    ASSERT_OK(memory_alloc(m, 1000, &a));
    assert_int_equal(a.pool, MEMORY_POOL_PERSISTENT);
    assert_int_equal(a.offset, 0);
    assert_int_equal(f.last_size, 1024); /* 1000 rounded up to 256 */
    ASSERT_OK(memory_alloc(m, 1000, &b));
    assert_ptr_not_equal(a.page, b.page);
    memory_free(m, &a);
    memory_free(m, &a); /* a double free is ignored */
    mem_alloc stale = b;
    stale.size = 999; /* not what the slice holds */
    memory_free(m, &stale);
    cubec_memory_report r = report(m);
    assert_int_equal(r.persistent.allocations, 1);
    assert_int_equal(r.persistent.pages, 2);
    ASSERT_OK(memory_alloc(m, 800, &c)); /* 1024 too: a's page again */
    assert_ptr_equal(c.page, a.page);
    assert_int_equal(f.alloc_calls, 2);
    ASSERT_OK(memory_alloc(m, 1025, &a)); /* 1280: a page of its own */
    assert_int_equal(f.last_size, 1280);
    memory_free(m, &c);
    memory_cleanup(m, 0); /* periodic: kept */
    assert_int_equal(report(m).persistent.pages, 3);
    memory_cleanup(m, 1); /* explicit: the free one goes */
    r = report(m);
    assert_int_equal(r.persistent.pages, 2);
    assert_int_equal(r.persistent.bytes_reserved, 1024 + 1280);
    assert_int_equal(r.persistent.bytes_in_use, 1000 + 1025);
    assert_int_equal(r.persistent.bytes_padding, 24 + 255);
    assert_int_equal(f.live_pages, 2);
    memory_free(m, &a);
    memory_free(m, &b);
    memory_manager_destroy(m);
    assert_int_equal(f.live_pages, 0);
    fake_destroy(&f);
}

/* A refused page: the manager returns the empty pages (here a free persistent slice) and tries
 * once more; when that fails too, the error names the route and nothing changed. */
static void test_refused_page(void **state)
{
    (void)state;
    fake_source f = {.capacity = 3 * MiB};
    memory_manager *m = make(&f, PERSISTENT_MEMORY_ENABLED);
    memory_modes *mm = memory_manager_modes(m);
    mem_alloc a, b, c;
    ASSERT_OK(memory_modes_push(mm, MEMORY_MODE_PERSISTENT));
    ASSERT_OK(memory_alloc(m, 2 * MiB, &a));
    memory_free(m, &a); /* kept as a free slice: 2 MiB held */
    ASSERT_OK(memory_modes_push(mm, MEMORY_MODE_DEDICATED));
    ASSERT_OK(memory_alloc(m, 2 * MiB + 1, &b)); /* fits only once the free slice goes back */
    assert_int_equal(b.pool, MEMORY_POOL_DEDICATED);
    assert_int_equal(report(m).persistent.pages, 0);
    uint64_t calls = f.alloc_calls;
    cubec_status s = memory_alloc(m, 2 * MiB, &c);
    assert_int_equal(cubec_status_code(s), CUBEC_OUT_OF_MEMORY);
    const char *says[] = {"requested 2097152 bytes", "dedicated allocations", "bytes reserved",
                          "bytes in use"};
    for (size_t i = 0; i < 4; i++)
        if (!strstr(cubec_status_message(s), says[i]))
            fail_msg("'%s' lacks '%s'", cubec_status_message(s), says[i]);
    cubec_status_free(s);
    assert_int_equal(f.alloc_calls, calls + 2); /* tried, then once more */
    cubec_memory_report r = report(m);
    assert_int_equal(r.dedicated.pages, 1);
    assert_int_equal(r.dedicated.bytes_reserved, 2 * MiB + 256);
    memory_free(m, &b); /* a dedicated page goes back at once */
    assert_int_equal(f.live_pages, 0);
    /* A graph's frozen pages: only a free persistent slice may serve. */
    ASSERT_OK(memory_modes_pop(mm));
    s = memory_alloc_flags(m, 4096, MEMORY_NO_NEW_PAGE, &c);
    assert_int_equal(cubec_status_code(s), CUBEC_OUT_OF_MEMORY);
    cubec_status_free(s);
    ASSERT_OK(memory_alloc(m, 4096, &c));
    memory_free(m, &c);
    ASSERT_OK(memory_alloc_flags(m, 4000, MEMORY_NO_NEW_PAGE, &c));
    memory_free(m, &c);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

typedef struct live {
    mem_alloc a;
    uint32_t route; /* 0: the layout's pools */
} live;

/* Where the model says an allocation goes (docs/memory.md "Modes and windows"). */
static uint32_t model_route(persistent_memory set, const int *stack, int depth,
                            const uint64_t *sizes, int nsizes, uint64_t size)
{
    int w = depth ? stack[depth - 1] : MEMORY_MODE_AUTO;
    if (w == MEMORY_MODE_DEDICATED) return MEMORY_POOL_DEDICATED;
    if (set == PERSISTENT_MEMORY_ENFORCED) return MEMORY_POOL_PERSISTENT;
    if (set == PERSISTENT_MEMORY_DISABLED) return 0;
    if (w == MEMORY_MODE_PERSISTENT) return MEMORY_POOL_PERSISTENT;
    if (set == PERSISTENT_MEMORY_SIZE_MATCH)
        for (int i = 0; i < nsizes; i++)
            if (sizes[i] == (size + 255) / 256 * 256) return MEMORY_POOL_PERSISTENT;
    return 0;
}

/* Random pushes, pops, allocations and frees under every setting, against the model. */
static void test_random_routes(void **state)
{
    (void)state;
    for (int set = 0; set < 4; set++) {
        fake_source f = {0};
        memory_manager *m = make(&f, (persistent_memory)set);
        memory_modes *mm = memory_manager_modes(m);
        rng_state = 0x9E3779B97F4A7C15ull + (uint64_t)set;
        static live lv[512];
        int n = 0, stack[64], depth = 0, nsizes = 0;
        uint64_t sizes[600]; /* effective sizes the persistent pool holds, live or free */
        for (int step = 0; step < 4000; step++) {
            uint64_t op = rng_range(0, 9);
            if (op == 0 && depth < 64) {
                int mode = (int)rng_range(0, 2);
                ASSERT_OK(memory_modes_push(mm, (uint32_t)mode));
                stack[depth++] = mode;
            } else if (op == 1) {
                cubec_status s = memory_modes_pop(mm);
                if (depth == 0) {
                    assert_int_equal(cubec_status_code(s), CUBEC_INVALID_ARGUMENT);
                    cubec_status_free(s);
                } else {
                    ASSERT_OK(s);
                    depth--;
                }
            } else if (op <= 5 && n < 512) {
                /* A few recurring sizes, so that buckets are reused and size-match matches. */
                uint64_t size =
                    rng_range(0, 3) == 0 ? rng_range(1, 4 * MiB) : 1000 * rng_range(1, 8);
                uint32_t want =
                    model_route((persistent_memory)set, stack, depth, sizes, nsizes, size);
                ASSERT_OK(memory_alloc(m, size, &lv[n].a));
                uint32_t got = lv[n].a.pool >= MEMORY_POOL_DEDICATED ? lv[n].a.pool : 0;
                if (got != want)
                    fail_msg("step %d: %llu bytes went to %u, the model says %u", step,
                             (unsigned long long)size, got, want);
                lv[n].route = got;
                uint64_t eff = (size + 255) / 256 * 256;
                int known = 0;
                for (int i = 0; i < nsizes; i++)
                    known |= sizes[i] == eff;
                if (got == MEMORY_POOL_PERSISTENT && !known) sizes[nsizes++] = eff;
                n++;
            } else if (op <= 8 && n) {
                int i = (int)rng_range(0, (uint64_t)n - 1);
                memory_free(m, &lv[i].a);
                lv[i] = lv[--n];
            } else if (op == 9 && rng_range(0, 20) == 0) {
                memory_cleanup(m, 1); /* free persistent slices go, and their sizes */
                nsizes = 0;
                for (int i = 0; i < n; i++) {
                    if (lv[i].route != MEMORY_POOL_PERSISTENT) continue;
                    uint64_t eff = (lv[i].a.size + 255) / 256 * 256;
                    int known = 0;
                    for (int k = 0; k < nsizes; k++)
                        known |= sizes[k] == eff;
                    if (!known) sizes[nsizes++] = eff;
                }
            }
            /* The report against the live set. */
            cubec_memory_report r = report(m);
            uint64_t bytes[3] = {0, 0, 0}, count[3] = {0, 0, 0};
            for (int i = 0; i < n; i++) {
                int k = lv[i].route == MEMORY_POOL_PERSISTENT  ? 1
                        : lv[i].route == MEMORY_POOL_DEDICATED ? 2
                                                               : 0;
                bytes[k] += lv[i].a.size;
                count[k]++;
            }
            assert_int_equal(r.persistent.bytes_in_use, bytes[1]);
            assert_int_equal(r.persistent.allocations, count[1]);
            assert_int_equal(r.dedicated.bytes_in_use, bytes[2]);
            assert_int_equal(r.dedicated.pages, count[2]);
            assert_int_equal(r.bytes_in_use, bytes[0] + bytes[1] + bytes[2]);
        }
        /* Every page the source handed out is held by exactly what the report counts. */
        cubec_memory_report r = report(m);
        assert_int_equal(f.live_pages, r.pages);
        assert_int_equal(f.live_bytes, r.bytes_reserved);
        while (n)
            memory_free(m, &lv[--n].a);
        memory_cleanup(m, 1);
        assert_int_equal(f.live_pages, 0);
        memory_manager_destroy(m);
        fake_destroy(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_persistent_buckets),
        cmocka_unit_test(test_refused_page),
        cmocka_unit_test(test_random_routes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
