/* Unit tests of the sliced pool, against a fake page source and a model of the live ranges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/status.h"
#include "fake_page_source.h"
#include "memory/sliced_pool.h"

/* ---- helpers ------------------------------------------------------------------------------- */

/* Reserves like the manager does: room already held first, else a new page. */
static int reserve(sliced_pool *p, const page_source *src, uint64_t size, pool_slice *out)
{
    int found = 0;
    ok(sliced_pool_try_reserve(p, size, &found, out));
    if (found) return 1;
    ok(sliced_pool_add_page(p, src, size, out));
    return 0;
}

typedef struct live {
    pool_slice s;
    uint64_t size;
    uint64_t eff;
} live;

static int cmp_live(const void *a, const void *b)
{
    const live *x = a, *y = b;
    if (x->s.page != y->s.page) return x->s.page < y->s.page ? -1 : 1;
    return x->s.offset < y->s.offset ? -1 : x->s.offset > y->s.offset;
}

/* Checks the live ranges: aligned, inside a live page of the pool's size, never overlapping.
 * Returns the largest free gap (what a reservation could use without a new page). */
static uint64_t check_model(const sliced_pool *p, const fake_source *f, live *v, uint32_t n)
{
    live *sorted = malloc((n ? n : 1) * sizeof *sorted);
    assert_non_null(sorted);
    memcpy(sorted, v, n * sizeof *v);
    qsort(sorted, n, sizeof *sorted, cmp_live);
    uint64_t in_use = 0, padding = 0;
    for (uint32_t i = 0; i < n; i++) {
        const fake_page *pg = sorted[i].s.page;
        assert_true(pg->live);
        assert_int_equal(pg->size, p->page_size);
        assert_int_equal(sorted[i].s.offset % p->alignment, 0);
        assert_true(sorted[i].s.offset + sorted[i].eff <= pg->size);
        if (i > 0 && sorted[i - 1].s.page == sorted[i].s.page)
            assert_true(sorted[i - 1].s.offset + sorted[i - 1].eff <= sorted[i].s.offset);
        in_use += sorted[i].size;
        padding += sorted[i].eff - sorted[i].size;
    }
    /* Largest gap over every live page, empty pages included. */
    uint64_t best = 0;
    for (uint32_t k = 0; k < f->count; k++) {
        const fake_page *pg = f->pages[k];
        if (!pg->live) continue;
        uint64_t cursor = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (sorted[i].s.page != pg) continue;
            if (sorted[i].s.offset - cursor > best) best = sorted[i].s.offset - cursor;
            cursor = sorted[i].s.offset + sorted[i].eff;
        }
        if (pg->size - cursor > best) best = pg->size - cursor;
    }
    free(sorted);

    cubec_pool_report r;
    sliced_pool_report(p, &r);
    assert_string_equal(r.kind, "sliced");
    assert_int_equal(r.allocations, n);
    assert_int_equal(r.bytes_in_use, in_use);
    assert_int_equal(r.bytes_padding, padding);
    assert_int_equal(r.pages, f->live_pages);
    assert_int_equal(r.bytes_reserved, f->live_bytes);
    return best;
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_accepts(void **state)
{
    (void)state;
    sliced_pool p;
    const uint64_t MiB = 1024 * 1024;
    sliced_pool_init(&p, 8 * MiB, 2 * MiB, 256);
    assert_true(sliced_pool_accepts(&p, 1));
    assert_true(sliced_pool_accepts(&p, 2 * MiB));
    assert_false(sliced_pool_accepts(&p, 2 * MiB + 1));
    /* 80 % of 8 MiB is 6.4 MiB: less waste than that is accepted, exactly 20 % is not. */
    assert_false(sliced_pool_accepts(&p, 8 * MiB - 8 * MiB / 5));
    assert_true(sliced_pool_accepts(&p, 8 * MiB - 8 * MiB / 5 + 1));
    assert_true(sliced_pool_accepts(&p, 7 * MiB));
    assert_true(sliced_pool_accepts(&p, 8 * MiB));
    assert_false(sliced_pool_accepts(&p, 8 * MiB + 1));
    assert_false(sliced_pool_accepts(&p, UINT64_MAX));
}

static void test_carve_sequential_and_padding(void **state)
{
    (void)state;
    fake_source f = {0};
    page_source src = fake_page_source(&f);
    sliced_pool p;
    sliced_pool_init(&p, 4096, 2048, 256);

    int found = 1;
    pool_slice s;
    ok(sliced_pool_try_reserve(&p, 100, &found, &s));
    assert_false(found); /* no page yet */
    assert_int_equal(f.alloc_calls, 0);

    pool_slice a[16];
    for (int i = 0; i < 16; i++) {
        reserve(&p, &src, 100, &a[i]);
        assert_int_equal(a[i].offset, (uint64_t)i * 256);
        assert_ptr_equal(a[i].page, f.pages[0]);
    }
    assert_int_equal(f.alloc_calls, 1);
    assert_int_equal(f.last_size, 4096);
    /* The page is full: the next one needs a second page. */
    ok(sliced_pool_try_reserve(&p, 1, &found, &s));
    assert_false(found);
    reserve(&p, &src, 1, &s);
    assert_ptr_equal(s.page, f.pages[1]);
    assert_int_equal(s.offset, 0);

    cubec_pool_report r;
    sliced_pool_report(&p, &r);
    assert_int_equal(r.allocations, 17);
    assert_int_equal(r.bytes_in_use, 16 * 100 + 1);
    assert_int_equal(r.bytes_padding, 16 * 156 + 255);
    assert_int_equal(r.pages, 2);
    assert_int_equal(r.pages_peak, 2);
    assert_int_equal(r.bytes_reserved, 8192);
    assert_int_equal(r.page_size, 4096);
    assert_int_equal(r.max_slice_size, 2048);

    sliced_pool_destroy(&p, &src);
    assert_int_equal(f.live_pages, 0);
    fake_destroy(&f);
}

static void test_coalescing(void **state)
{
    (void)state;
    fake_source f = {0};
    page_source src = fake_page_source(&f);
    sliced_pool p;
    sliced_pool_init(&p, 4096, 4096, 16);

    pool_slice a[4];
    for (int i = 0; i < 4; i++)
        reserve(&p, &src, 1024, &a[i]);
    int found = 1;
    pool_slice s;
    ok(sliced_pool_try_reserve(&p, 16, &found, &s));
    assert_false(found);

    /* Two adjacent slices freed: their combined size fits in the same page, at the lower one. */
    assert_true(sliced_pool_free(&p, a[1].slot, a[1].page, a[1].offset, 1024));
    assert_true(sliced_pool_free(&p, a[2].slot, a[2].page, a[2].offset, 1024));
    ok(sliced_pool_try_reserve(&p, 2048, &found, &s));
    assert_true(found);
    assert_ptr_equal(s.page, a[0].page);
    assert_int_equal(s.offset, 1024);
    assert_int_equal(f.alloc_calls, 1);

    /* Freed in the other order, merging across three: the whole page comes back as one. */
    assert_true(sliced_pool_free(&p, s.slot, s.page, s.offset, 2048));
    assert_true(sliced_pool_free(&p, a[3].slot, a[3].page, a[3].offset, 1024));
    assert_true(sliced_pool_free(&p, a[0].slot, a[0].page, a[0].offset, 1024));
    ok(sliced_pool_try_reserve(&p, 4096, &found, &s));
    assert_true(found);
    assert_int_equal(s.offset, 0);
    assert_int_equal(f.alloc_calls, 1);

    /* A gap that is not the lower bound of its size class still gets found: 3 x 1040 bytes
     * free in the middle, then a request of exactly that. */
    assert_true(sliced_pool_free(&p, s.slot, s.page, s.offset, 4096));
    pool_slice b[3];
    reserve(&p, &src, 1040, &b[0]);
    reserve(&p, &src, 1040, &b[1]);
    reserve(&p, &src, 4096 - 2080, &b[2]);
    assert_true(sliced_pool_free(&p, b[1].slot, b[1].page, b[1].offset, 1040));
    ok(sliced_pool_try_reserve(&p, 1040, &found, &s));
    assert_true(found);
    assert_int_equal(s.offset, 1040);
    assert_int_equal(f.alloc_calls, 1);

    sliced_pool_destroy(&p, &src);
    fake_destroy(&f);
}

static void test_reuse_and_stale_free(void **state)
{
    (void)state;
    fake_source f = {0};
    page_source src = fake_page_source(&f);
    sliced_pool p;
    sliced_pool_init(&p, 65536, 32768, 64);

    pool_slice a, b;
    reserve(&p, &src, 1000, &a);
    reserve(&p, &src, 3000, &b);
    assert_true(sliced_pool_free(&p, a.slot, a.page, a.offset, 1000));
    /* Double free, wrong offset, wrong size, wrong page, out-of-range slot: all ignored. */
    assert_false(sliced_pool_free(&p, a.slot, a.page, a.offset, 1000));
    assert_false(sliced_pool_free(&p, b.slot, b.page, b.offset + 64, 3000));
    assert_false(sliced_pool_free(&p, b.slot, b.page, b.offset, 2999));
    assert_false(sliced_pool_free(&p, b.slot, &f, b.offset, 3000));
    assert_false(sliced_pool_free(&p, 999999, b.page, b.offset, 3000));
    cubec_pool_report r;
    sliced_pool_report(&p, &r);
    assert_int_equal(r.allocations, 1);
    assert_int_equal(r.bytes_in_use, 3000);

    pool_slice c;
    assert_true(reserve(&p, &src, 1000, &c)); /* reused, no new page */
    assert_ptr_equal(c.page, a.page);
    assert_int_equal(c.offset, a.offset);
    assert_int_equal(f.alloc_calls, 1);

    sliced_pool_destroy(&p, &src);
    fake_destroy(&f);
}

static void test_release_empty_exact(void **state)
{
    (void)state;
    fake_source f = {0};
    page_source src = fake_page_source(&f);
    sliced_pool p;
    sliced_pool_init(&p, 4096, 4096, 16);

    /* Three full pages of four slices each. */
    pool_slice a[12];
    for (int i = 0; i < 12; i++)
        reserve(&p, &src, 1024, &a[i]);
    assert_int_equal(f.alloc_calls, 3);
    /* Empty the middle page and half of the last one. */
    for (int i = 4; i < 10; i++)
        assert_true(sliced_pool_free(&p, a[i].slot, a[i].page, a[i].offset, 1024));
    assert_int_equal(sliced_pool_release_empty(&p, &src), 1);
    assert_int_equal(f.free_calls, 1);
    assert_false(f.pages[1]->live);
    assert_true(f.pages[0]->live && f.pages[2]->live);
    assert_int_equal(sliced_pool_release_empty(&p, &src), 0);

    /* The freed page's slots are recycled for a new page; the half-free one is used first. */
    pool_slice s;
    reserve(&p, &src, 2048, &s);
    assert_ptr_equal(s.page, f.pages[2]);
    reserve(&p, &src, 4096, &s);
    assert_int_equal(f.alloc_calls, 4);
    cubec_pool_report r;
    sliced_pool_report(&p, &r);
    assert_int_equal(r.pages, 3);
    assert_int_equal(r.pages_peak, 3);
    assert_int_equal(r.bytes_reserved, 3 * 4096);

    sliced_pool_destroy(&p, &src);
    assert_int_equal(f.live_pages, 0);
    fake_destroy(&f);
}

static void test_add_page_failure_changes_nothing(void **state)
{
    (void)state;
    fake_source f = {0};
    f.fail_at = 2;
    f.fail_count = 1;
    f.fail_code = CUBEC_OUT_OF_MEMORY;
    page_source src = fake_page_source(&f);
    sliced_pool p;
    sliced_pool_init(&p, 4096, 4096, 16);
    pool_slice s;
    ok(sliced_pool_add_page(&p, &src, 4096, &s));
    cubec_pool_report before, after;
    sliced_pool_report(&p, &before);
    cubec_status st = sliced_pool_add_page(&p, &src, 100, &s);
    assert_int_equal(cubec_status_code(st), CUBEC_OUT_OF_MEMORY);
    cubec_status_free(st);
    sliced_pool_report(&p, &after);
    assert_memory_equal(&before, &after, sizeof before);
    ok(sliced_pool_add_page(&p, &src, 100, &s));
    assert_int_equal(s.offset, 0);
    assert_ptr_equal(s.page, f.pages[1]);
    sliced_pool_destroy(&p, &src);
    fake_destroy(&f);
}

/* Random reservations and frees checked against the model after every step: a reservation must
 * find room exactly when the model has a large enough gap (so coalescing never misses one). */
static void test_random_against_model(void **state)
{
    (void)state;
    rng_state = 0x1234567ull;
    fake_source f = {0};
    page_source src = fake_page_source(&f);
    sliced_pool p;
    const uint64_t page = 1 << 20, align = 64;
    sliced_pool_init(&p, page, page / 4, align);

    enum { OPS = 6000, MAXLIVE = 400 };
    live *v = calloc(MAXLIVE, sizeof *v);
    assert_non_null(v);
    uint32_t n = 0;
    uint64_t gap = 0;
    for (int op = 0; op < OPS; op++) {
        int do_alloc = n == 0 || (n < MAXLIVE && rng_next() % 100 < 55);
        if (do_alloc) {
            /* Log-uniform sizes: many small, some near a page. */
            uint64_t bits = rng_range(0, 20);
            uint64_t size = rng_range(1, (1ull << bits) > page ? page : (1ull << bits));
            uint64_t eff = align_up(size, align);
            int found = 0;
            pool_slice s;
            ok(sliced_pool_try_reserve(&p, size, &found, &s));
            assert_int_equal(found, gap >= eff);
            if (!found) ok(sliced_pool_add_page(&p, &src, size, &s));
            v[n].s = s;
            v[n].size = size;
            v[n].eff = eff;
            n++;
        } else {
            uint32_t i = (uint32_t)(rng_next() % n);
            assert_true(sliced_pool_free(&p, v[i].s.slot, v[i].s.page, v[i].s.offset, v[i].size));
            v[i] = v[--n];
        }
        gap = check_model(&p, &f, v, n);
        if (op % 1000 == 999) {
            /* Explicit release returns exactly the pages the model holds nothing in. */
            uint32_t empty = 0;
            for (uint32_t k = 0; k < f.count; k++) {
                if (!f.pages[k]->live) continue;
                int used = 0;
                for (uint32_t i = 0; i < n && !used; i++)
                    used = v[i].s.page == f.pages[k];
                f.pages[k]->pool = used; /* reuse the tag as "must survive" */
                empty += !used;
            }
            uint32_t live_before = f.live_pages;
            assert_int_equal(sliced_pool_release_empty(&p, &src), empty);
            assert_int_equal(f.live_pages, live_before - empty);
            for (uint32_t k = 0; k < f.count; k++)
                if (f.pages[k]->live) assert_int_equal(f.pages[k]->pool, 1);
            gap = check_model(&p, &f, v, n);
        }
    }
    while (n) {
        assert_true(sliced_pool_free(&p, v[n - 1].s.slot, v[n - 1].s.page, v[n - 1].s.offset,
                                     v[n - 1].size));
        n--;
    }
    check_model(&p, &f, v, 0);
    uint32_t pages = f.live_pages;
    assert_int_equal(sliced_pool_release_empty(&p, &src), pages);
    assert_int_equal(f.live_pages, 0);
    sliced_pool_destroy(&p, &src);
    free(v);
    fake_destroy(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts),
        cmocka_unit_test(test_carve_sequential_and_padding),
        cmocka_unit_test(test_coalescing),
        cmocka_unit_test(test_reuse_and_stale_free),
        cmocka_unit_test(test_release_empty_exact),
        cmocka_unit_test(test_add_page_failure_changes_nothing),
        cmocka_unit_test(test_random_against_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
