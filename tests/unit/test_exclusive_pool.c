/* Unit tests of the exclusive pool, against a fake page source. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/status.h"
#include "fake_page_source.h"
#include "memory/exclusive_pool.h"

/* Reserves like the manager does: a free page first, else a new page sized by the pool. */
static int reserve(exclusive_pool *p, const page_source *src, uint64_t size, pool_slice *out)
{
    if (exclusive_pool_try_reserve(p, size, out)) return 1;
    ok(exclusive_pool_add_page(p, src, size, exclusive_pool_page_size(p, size), out));
    return 0;
}

static void test_accepts_and_page_size(void **state)
{
    (void)state;
    exclusive_pool p;
    exclusive_pool_init(&p, 1000000, 256, 5000);
    assert_true(exclusive_pool_accepts(&p, 1));
    assert_true(exclusive_pool_accepts(&p, 1000000));
    assert_false(exclusive_pool_accepts(&p, 1000001));
    assert_false(exclusive_pool_accepts(&p, UINT64_MAX));

    /* No request seen: the page is the padded size; clamped to max_alloc, never below size. */
    assert_int_equal(exclusive_pool_page_size(&p, 1), 256);
    assert_int_equal(exclusive_pool_page_size(&p, 256), 256);
    assert_int_equal(exclusive_pool_page_size(&p, 999999), 1000000);
    assert_int_equal(exclusive_pool_page_size(&p, 1000000), 1000000);

    /* The running average: each request moves it 1 % of the way. */
    double avg = 0;
    pool_slice s;
    for (int i = 0; i < 300; i++) {
        assert_false(exclusive_pool_try_reserve(&p, 500000, &s)); /* no page held */
        avg = avg * 0.99 + 500000 * 0.01;
    }
    uint64_t expect = ((uint64_t)avg + 255) / 256 * 256;
    assert_int_equal(exclusive_pool_page_size(&p, 1000), expect);
    assert_int_equal(exclusive_pool_page_size(&p, 600000), 600064);

    /* No wrap near UINT64_MAX. */
    exclusive_pool q;
    exclusive_pool_init(&q, UINT64_MAX, 256, 5000);
    assert_int_equal(exclusive_pool_page_size(&q, UINT64_MAX), UINT64_MAX);
    assert_int_equal(exclusive_pool_page_size(&q, UINT64_MAX - 300), UINT64_MAX - 255);
}

static void test_one_allocation_per_page_and_reuse(void **state)
{
    (void)state;
    fake_source f = {0};
    page_source src = fake_page_source(&f);
    exclusive_pool p;
    exclusive_pool_init(&p, 1 << 30, 64, 0);

    pool_slice a, b, c;
    assert_false(reserve(&p, &src, 1000, &a));
    assert_false(reserve(&p, &src, 1000, &b));
    assert_ptr_not_equal(a.page, b.page);
    assert_int_equal(a.offset, 0);
    assert_int_equal(f.alloc_calls, 2);

    cubec_pool_report r;
    exclusive_pool_report(&p, &r);
    assert_string_equal(r.kind, "exclusive");
    assert_int_equal(r.page_size, 1 << 30);
    assert_int_equal(r.allocations, 2);
    assert_int_equal(r.bytes_in_use, 2000);
    assert_int_equal(r.bytes_padding, 2 * 24);
    assert_int_equal(r.bytes_reserved, f.live_bytes);
    assert_int_equal(r.pages, 2);

    /* Reuse after free; a page too small is never chosen. */
    assert_true(exclusive_pool_free(&p, a.slot, a.page, 1000));
    assert_false(exclusive_pool_free(&p, a.slot, a.page, 1000)); /* double free ignored */
    assert_false(exclusive_pool_free(&p, b.slot, a.page, 1000)); /* wrong page */
    assert_false(exclusive_pool_free(&p, b.slot, b.page, 999));  /* wrong size */
    assert_false(exclusive_pool_free(&p, 12345, b.page, 1000));
    uint64_t a_size = ((fake_page *)a.page)->size;
    assert_false(reserve(&p, &src, a_size + 1, &c));
    assert_ptr_not_equal(c.page, a.page);
    assert_true(reserve(&p, &src, a_size, &c));
    assert_ptr_equal(c.page, a.page);
    assert_int_equal(f.alloc_calls, 3);

    exclusive_pool_destroy(&p, &src);
    assert_int_equal(f.live_pages, 0);
    fake_destroy(&f);
}

/* Among free pages that fit, the one reused most (lowest free count) wins. */
static void test_prefers_lowest_free_count(void **state)
{
    (void)state;
    fake_source f = {0};
    page_source src = fake_page_source(&f);
    exclusive_pool p;
    exclusive_pool_init(&p, 1 << 30, 64, 0);

    pool_slice a, b, s;
    reserve(&p, &src, 4096, &a); /* free count 4 */
    reserve(&p, &src, 4096, &b); /* free count 4 */
    /* Reuse a twice (4 -> 3 -> 2) while b stays live. */
    for (int i = 0; i < 2; i++) {
        assert_true(exclusive_pool_free(&p, a.slot, a.page, 4096));
        assert_true(reserve(&p, &src, 4096, &a));
    }
    assert_int_equal(p.pages[a.slot].free_count, 2);
    /* b is freed first, so it is first in the free list, yet a is chosen. */
    assert_true(exclusive_pool_free(&p, b.slot, b.page, 4096));
    assert_true(exclusive_pool_free(&p, a.slot, a.page, 4096));
    assert_true(reserve(&p, &src, 100, &s));
    assert_ptr_equal(s.page, a.page);
    assert_true(reserve(&p, &src, 100, &s));
    assert_ptr_equal(s.page, b.page);
    assert_int_equal(f.alloc_calls, 2);
    exclusive_pool_destroy(&p, &src);
    fake_destroy(&f);
}

/* Periodic cleanup: a check every dealloc_period / 5 reservations ages every free page; a page
 * goes back when its count reaches 5. Explicit cleanup returns every free page. */
static void test_periodic_and_explicit_cleanup(void **state)
{
    (void)state;
    fake_source f = {0};
    page_source src = fake_page_source(&f);
    exclusive_pool p;
    exclusive_pool_init(&p, 1 << 30, 64, 50); /* a check every 10 reservations */

    pool_slice fresh, reused, held;
    reserve(&p, &src, 1000, &fresh);  /* count 4 */
    reserve(&p, &src, 2000, &reused); /* count 4, then reused twice: 2 */
    for (int i = 0; i < 2; i++) {
        assert_true(exclusive_pool_free(&p, reused.slot, reused.page, 2000));
        assert_true(reserve(&p, &src, 2000, &reused));
    }
    reserve(&p, &src, 3000, &held); /* stays live: never returned */
    assert_true(exclusive_pool_free(&p, fresh.slot, fresh.page, 1000));
    assert_true(exclusive_pool_free(&p, reused.slot, reused.page, 2000));

    /* Not yet 10 reservations since the last check (at 0): nothing happens. */
    assert_int_equal(exclusive_pool_cleanup(&p, &src, 9, 0), 0);
    assert_int_equal(p.pages[fresh.slot].free_count, 4);
    /* Check 1: fresh 4 -> 5, returned; reused 2 -> 3. */
    assert_int_equal(exclusive_pool_cleanup(&p, &src, 10, 0), 1);
    assert_false(((fake_page *)fresh.page)->live);
    assert_true(((fake_page *)reused.page)->live);
    /* Too soon again. */
    assert_int_equal(exclusive_pool_cleanup(&p, &src, 19, 0), 0);
    /* Checks 2 and 3: reused reaches 5 at the second of them. */
    assert_int_equal(exclusive_pool_cleanup(&p, &src, 20, 0), 0);
    assert_int_equal(exclusive_pool_cleanup(&p, &src, 30, 0), 1);
    assert_false(((fake_page *)reused.page)->live);
    assert_true(((fake_page *)held.page)->live);
    assert_int_equal(f.live_pages, 1);

    cubec_pool_report r;
    exclusive_pool_report(&p, &r);
    assert_int_equal(r.pages, 1);
    assert_int_equal(r.pages_peak, 3);
    assert_int_equal(r.bytes_reserved, f.live_bytes);
    assert_int_equal(r.allocations, 1);
    assert_int_equal(r.bytes_in_use, 3000);

    /* Explicit: every free page at once, whatever its count, and never a live one. */
    pool_slice x, y;
    reserve(&p, &src, 5000, &x);
    reserve(&p, &src, 6000, &y);
    assert_true(exclusive_pool_free(&p, x.slot, x.page, 5000));
    assert_true(exclusive_pool_free(&p, y.slot, y.page, 6000));
    assert_int_equal(exclusive_pool_cleanup(&p, &src, 31, 1), 2);
    assert_int_equal(f.live_pages, 1);
    assert_true(((fake_page *)held.page)->live);
    /* The slots of returned pages are recycled. */
    reserve(&p, &src, 7000, &x);
    assert_true(x.slot < 3);

    exclusive_pool_destroy(&p, &src);
    assert_int_equal(f.live_pages, 0);
    fake_destroy(&f);
}

static void test_add_page_failure_changes_nothing(void **state)
{
    (void)state;
    fake_source f = {0};
    f.fail_at = 1;
    f.fail_count = 1;
    f.fail_code = CUBEC_DEVICE_LOST;
    page_source src = fake_page_source(&f);
    exclusive_pool p;
    exclusive_pool_init(&p, 1 << 20, 64, 0);
    pool_slice s;
    cubec_status st = exclusive_pool_add_page(&p, &src, 100, 128, &s);
    assert_int_equal(cubec_status_code(st), CUBEC_DEVICE_LOST);
    cubec_status_free(st);
    cubec_pool_report r;
    exclusive_pool_report(&p, &r);
    assert_int_equal(r.pages, 0);
    assert_int_equal(r.allocations, 0);
    assert_int_equal(r.bytes_reserved, 0);
    /* A page smaller than the request, or a request above max_alloc, is refused. */
    st = exclusive_pool_add_page(&p, &src, 100, 64, &s);
    assert_non_null(st);
    cubec_status_free(st);
    st = exclusive_pool_add_page(&p, &src, (1 << 20) + 1, (1 << 20) + 64, &s);
    assert_non_null(st);
    cubec_status_free(st);
    ok(exclusive_pool_add_page(&p, &src, 100, 128, &s));
    exclusive_pool_report(&p, &r);
    assert_int_equal(r.bytes_reserved, 128);
    assert_int_equal(r.bytes_padding, 28);

    /* A limit that is no multiple of the alignment: the page stops at the limit, and so does
     * the padding counted for the allocation. */
    exclusive_pool q;
    exclusive_pool_init(&q, 1000, 256, 0);
    assert_int_equal(exclusive_pool_page_size(&q, 900), 1000);
    ok(exclusive_pool_add_page(&q, &src, 900, exclusive_pool_page_size(&q, 900), &s));
    exclusive_pool_report(&q, &r);
    assert_int_equal(r.bytes_reserved, 1000);
    assert_int_equal(r.bytes_padding, 100);
    assert_true(exclusive_pool_free(&q, s.slot, s.page, 900));
    exclusive_pool_report(&q, &r);
    assert_int_equal(r.bytes_padding, 0);
    exclusive_pool_destroy(&q, &src);
    exclusive_pool_destroy(&p, &src);
    fake_destroy(&f);
}

/* Random reservations, frees and cleanups; every live allocation owns its page alone, and the
 * report matches the fake source's ledger. */
static void test_random_against_model(void **state)
{
    (void)state;
    rng_state = 0xfeedbeefull;
    fake_source f = {0};
    page_source src = fake_page_source(&f);
    exclusive_pool p;
    exclusive_pool_init(&p, 1 << 24, 256, 100);

    enum { MAXLIVE = 64 };
    pool_slice v[MAXLIVE];
    uint64_t sz[MAXLIVE];
    uint32_t n = 0;
    uint64_t reservations = 0;
    for (int op = 0; op < 5000; op++) {
        uint64_t r = rng_next() % 100;
        if (n == 0 || (n < MAXLIVE && r < 50)) {
            uint64_t size = rng_range(1, 1 << rng_range(1, 24));
            reserve(&p, &src, size, &v[n]);
            sz[n++] = size;
            reservations++;
            fake_page *pg = v[n - 1].page;
            assert_true(pg->live);
            assert_true(pg->size >= size);
            assert_int_equal(v[n - 1].offset, 0);
        } else if (r < 95) {
            uint32_t i = (uint32_t)(rng_next() % n);
            assert_true(exclusive_pool_free(&p, v[i].slot, v[i].page, sz[i]));
            v[i] = v[--n];
            sz[i] = sz[n];
        } else {
            exclusive_pool_cleanup(&p, &src, reservations, r == 99);
        }
        /* No two live allocations share a page. */
        uint64_t in_use = 0, padding = 0;
        for (uint32_t i = 0; i < n; i++) {
            for (uint32_t j = i + 1; j < n; j++)
                assert_ptr_not_equal(v[i].page, v[j].page);
            in_use += sz[i];
            uint64_t eff = (sz[i] + 255) / 256 * 256;
            uint64_t psz = ((fake_page *)v[i].page)->size;
            padding += (eff < psz ? eff : psz) - sz[i];
        }
        cubec_pool_report rep;
        exclusive_pool_report(&p, &rep);
        assert_int_equal(rep.allocations, n);
        assert_int_equal(rep.bytes_in_use, in_use);
        assert_int_equal(rep.bytes_padding, padding);
        assert_int_equal(rep.pages, f.live_pages);
        assert_int_equal(rep.bytes_reserved, f.live_bytes);
        assert_true(rep.pages_peak >= rep.pages);
    }
    /* Explicit cleanup leaves exactly the pages with a live allocation. */
    exclusive_pool_cleanup(&p, &src, reservations, 1);
    assert_int_equal(f.live_pages, n);
    exclusive_pool_destroy(&p, &src);
    assert_int_equal(f.live_pages, 0);
    fake_destroy(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts_and_page_size),
        cmocka_unit_test(test_one_allocation_per_page_and_reuse),
        cmocka_unit_test(test_prefers_lowest_free_count),
        cmocka_unit_test(test_periodic_and_explicit_cleanup),
        cmocka_unit_test(test_add_page_failure_changes_nothing),
        cmocka_unit_test(test_random_against_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
