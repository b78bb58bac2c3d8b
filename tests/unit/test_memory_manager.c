/* Unit tests of the memory manager: pool layout, routing, out-of-memory handling, cleanup and
 * reports, against a fake page source and a model of the live allocations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/status.h"
#include "fake_page_source.h"
#include "memory/memory_manager.h"

#define KiB (1024ull)
#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

static void expect_error(cubec_status s, cubec_code code, const char *const *parts)
{
    assert_non_null(s);
    if (cubec_status_code(s) != code)
        fail_msg("expected %s, got %s: %s", cubec_code_name(code),
                 cubec_code_name(cubec_status_code(s)), cubec_status_message(s));
    for (; *parts; parts++)
        if (!strstr(cubec_status_message(s), *parts))
            fail_msg("message lacks \"%s\": %s", *parts, cubec_status_message(s));
    cubec_status_free(s);
}

static const memory_config LAVAPIPE = {128 * MiB, 2 * GiB, 256};

static memory_manager *make(const memory_config *c, fake_source *f)
{
    memory_manager *m = NULL;
    ok(memory_manager_create(c, fake_page_source(f), &m));
    assert_non_null(m);
    return m;
}

static mem_alloc alloc_ok(memory_manager *m, uint64_t size)
{
    mem_alloc a;
    ok(memory_alloc(m, size, &a));
    assert_int_equal(a.size, size);
    return a;
}

static void expect_layout(const memory_config *c, const uint64_t (*sliced)[2], uint32_t n)
{
    fake_source f = {0};
    memory_manager *m = make(c, &f);
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &r);
    assert_int_equal(r.pool_count, n + 1);
    for (uint32_t i = 0; i < n; i++) {
        assert_string_equal(r.pools[i].kind, "sliced");
        assert_int_equal(r.pools[i].page_size, sliced[i][0]);
        assert_int_equal(r.pools[i].max_slice_size, sliced[i][1]);
    }
    assert_string_equal(r.pools[n].kind, "exclusive");
    assert_int_equal(r.pools[n].page_size, c->max_alloc_size);
    assert_int_equal(r.pages, 0);
    assert_int_equal(f.alloc_calls, 0); /* creating allocates no page */
    memory_manager_destroy(m);
    fake_destroy(&f);
}

/* ---- layout ------------------------------------------------------------------------------- */

static void test_layout(void **state)
{
    (void)state;
    /* lavapipe: 128 MiB → 32 MiB (slices ≤ 16 MiB) → 8 MiB (≤ 2 MiB), small first. */
    const uint64_t lvp[][2] = {{8 * MiB, 2 * MiB}, {32 * MiB, 16 * MiB}};
    expect_layout(&LAVAPIPE, lvp, 2);

    /* H200: 4 GiB - 1 rounded down to the alignment. */
    const memory_config h200 = {4 * GiB - 64, 40 * GiB, 64};
    const uint64_t h[][2] = {
        {16 * MiB, 1 * MiB}, {64 * MiB, 8 * MiB}, {256 * MiB, 64 * MiB}, {1 * GiB, 512 * MiB}};
    expect_layout(&h200, h, 4);

    /* Below 32 MiB the ladder is empty: one sliced pool of the whole limit instead. */
    const memory_config small = {16 * MiB, 16 * MiB, 16};
    const uint64_t s[][2] = {{16 * MiB, 8 * MiB}};
    expect_layout(&small, s, 1);

    /* A page limit below two alignments: only the exclusive pool. Alignment 1 is raised to 4. */
    const memory_config tiny = {4, 1 * MiB, 1};
    expect_layout(&tiny, NULL, 0);

    /* max_page_size above max_alloc_size: pages never exceed the allocation limit. */
    const memory_config capped = {1 * GiB, 128 * MiB, 256};
    expect_layout(&capped, lvp, 2);

    /* A huge limit: the whole ladder (16 MiB up to 2^62, every fourfold step) still leaves the
     * report room for the runtime's three rings. */
    fake_source f = {0};
    const memory_config huge = {UINT64_MAX, UINT64_MAX, 4};
    memory_manager *m = make(&huge, &f);
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &r);
    assert_true(r.pool_count <= MEMORY_MAX_POOLS);
    assert_true(r.pool_count <= CUBEC_MAX_POOLS - 3);
    assert_int_equal(r.pools[0].page_size, 16 * MiB);
    for (uint32_t i = 1; i + 1 < r.pool_count; i++)
        assert_int_equal(r.pools[i].page_size, r.pools[i - 1].page_size * 4);
    assert_int_equal(r.pools[r.pool_count - 2].page_size, 1ull << 62);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

static void test_bad_config(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_manager *m = (memory_manager *)&f;
    const char *none[] = {NULL};
    memory_config c = {128 * MiB, 1 * GiB, 24};
    const char *align[] = {"alignment 24", NULL};
    expect_error(memory_manager_create(&c, fake_page_source(&f), &m), CUBEC_INVALID_ARGUMENT,
                 align);
    assert_null(m);
    c.alignment = 0;
    expect_error(memory_manager_create(&c, fake_page_source(&f), &m), CUBEC_INVALID_ARGUMENT, none);
    c.alignment = 256;
    c.max_page_size = 0;
    expect_error(memory_manager_create(&c, fake_page_source(&f), &m), CUBEC_INVALID_ARGUMENT, none);
    c.max_page_size = 1 * MiB;
    c.max_alloc_size = 0;
    expect_error(memory_manager_create(&c, fake_page_source(&f), &m), CUBEC_INVALID_ARGUMENT, none);
    c.max_alloc_size = 1 * MiB;
    page_source no_free = {&f, fake_alloc, NULL};
    expect_error(memory_manager_create(&c, no_free, &m), CUBEC_INVALID_ARGUMENT, none);
    expect_error(memory_manager_create(NULL, fake_page_source(&f), &m), CUBEC_INVALID_ARGUMENT,
                 none);
    expect_error(memory_manager_create(&c, fake_page_source(&f), NULL), CUBEC_INVALID_ARGUMENT,
                 none);
    memory_manager_destroy(NULL);
    memory_cleanup(NULL, 1);
    memory_free(NULL, NULL);
}

/* ---- routing ------------------------------------------------------------------------------ */

static void test_routing(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_manager *m = make(&LAVAPIPE, &f);

    mem_alloc a = alloc_ok(m, 256);
    assert_int_equal(a.pool, 0);
    assert_int_equal(f.last_size, 8 * MiB);
    mem_alloc b = alloc_ok(m, 3 * MiB);
    assert_int_equal(b.pool, 1);
    assert_int_equal(f.last_size, 32 * MiB);
    mem_alloc c = alloc_ok(m, 7 * MiB); /* over 2 MiB but fills 80 % of an 8 MiB page */
    assert_int_equal(c.pool, 0);
    assert_ptr_equal(c.page, a.page);
    mem_alloc d = alloc_ok(m, 20 * MiB); /* neither sliced pool takes it */
    assert_int_equal(d.pool, 2);
    assert_int_equal(d.offset, 0);
    mem_alloc e = alloc_ok(m, 27 * MiB); /* fills 80 % of a 32 MiB page: the one holding b */
    assert_int_equal(e.pool, 1);
    assert_ptr_equal(e.page, b.page);
    mem_alloc g = alloc_ok(m, 2 * GiB); /* the largest allocation */
    assert_int_equal(g.pool, 2);
    assert_int_equal(f.last_size, 2 * GiB);
    assert_int_equal(f.alloc_calls, 4);
    const mem_alloc *all[] = {&a, &b, &c, &d, &e, &g};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(all[i]->offset % 256, 0);
        assert_true(all[i]->offset + all[i]->size <= ((fake_page *)all[i]->page)->size);
        memory_free(m, all[i]);
    }
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &r);
    assert_int_equal(r.allocations, 0);
    assert_int_equal(r.bytes_in_use, 0);
    assert_int_equal(r.pages, 4); /* freed pages stay held until a cleanup */
    memory_manager_destroy(m);
    assert_int_equal(f.live_pages, 0);
    fake_destroy(&f);
}

/* Room already held in any accepting sliced pool is used before a page is added; a free
 * exclusive page is not handed to a request a sliced pool takes. */
static void test_room_before_new_page(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_manager *m = make(&LAVAPIPE, &f);
    mem_alloc a = alloc_ok(m, 7 * MiB); /* pool 0, 1 MiB left in its page */
    mem_alloc b = alloc_ok(m, 3 * MiB); /* pool 1 */
    mem_alloc c = alloc_ok(m, 2 * MiB); /* pool 0 is full: pool 1's page has room */
    assert_int_equal(c.pool, 1);
    assert_ptr_equal(c.page, b.page);
    assert_int_equal(f.alloc_calls, 2);

    mem_alloc d = alloc_ok(m, 20 * MiB);
    memory_free(m, &d);
    mem_alloc e = alloc_ok(m, 1 * MiB); /* fits pool 0's 1 MiB rest exactly */
    assert_int_equal(e.pool, 0);
    assert_ptr_equal(e.page, a.page);
    mem_alloc s = alloc_ok(m, 256); /* pool 1 still has room */
    assert_int_equal(s.pool, 1);
    mem_alloc big = alloc_ok(m, 21 * MiB); /* the free 20 MiB exclusive page is too small */
    assert_int_equal(big.pool, 2);
    assert_ptr_not_equal(big.page, d.page);
    memory_free(m, &big);
    mem_alloc again = alloc_ok(m, 21 * MiB); /* reused */
    assert_ptr_equal(again.page, big.page);
    assert_int_equal(f.alloc_calls, 4);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

/* A page's flags are the allocation's that needs it, and travel with that call only: a dry run's
 * lazy page is asked for as such, and the next plain allocation's page is not (the flag was
 * device state before, which another thread could flip while the lock was dropped). */
static void test_page_flags_travel_with_the_call(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_manager *m = make(&LAVAPIPE, &f);
    mem_alloc a;
    ok(memory_alloc_flags(m, 7 * MiB, MEMORY_LAZY_PAGE, &a));
    assert_int_equal(f.alloc_calls, 1);
    assert_int_equal(f.last_flags, MEMORY_LAZY_PAGE);
    mem_alloc b = alloc_ok(m, 40 * MiB); /* a page of another pool: asked for without the flag */
    assert_int_equal(f.alloc_calls, 2);
    assert_int_equal(f.last_flags, 0);
    mem_alloc c;
    ok(memory_alloc_flags(m, 300 * MiB, MEMORY_LAZY_PAGE, &c)); /* an exclusive page */
    assert_int_equal(f.alloc_calls, 3);
    assert_int_equal(f.last_flags, MEMORY_LAZY_PAGE);
    memory_free(m, &a);
    memory_free(m, &b);
    memory_free(m, &c);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

static void test_too_big_and_bad_sizes(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_manager *m = make(&LAVAPIPE, &f);
    mem_alloc a;
    const char *msg[] = {"requested 2147483649 bytes, larger than the device's largest "
                         "allocation 2147483648",
                         NULL};
    expect_error(memory_alloc(m, 2 * GiB + 1, &a), CUBEC_OUT_OF_MEMORY, msg);
    const char *msg2[] = {"requested 18446744073709551615 bytes", NULL};
    expect_error(memory_alloc(m, UINT64_MAX, &a), CUBEC_OUT_OF_MEMORY, msg2);
    expect_error(memory_alloc(m, UINT64_MAX - 100, &a), CUBEC_OUT_OF_MEMORY, msg2 + 1);
    const char *zero[] = {"size 0", NULL};
    expect_error(memory_alloc(m, 0, &a), CUBEC_INVALID_ARGUMENT, zero);
    assert_null(a.page);
    expect_error(memory_alloc(m, 16, NULL), CUBEC_INVALID_ARGUMENT, msg2 + 1);
    expect_error(memory_alloc(NULL, 16, &a), CUBEC_INVALID_ARGUMENT, msg2 + 1);
    assert_int_equal(f.alloc_calls, 0);
    memory_manager_destroy(m);

    /* With no allocation limit, sizes near UINT64_MAX must not wrap when padded. */
    const memory_config unlimited = {128 * MiB, UINT64_MAX, 256};
    m = make(&unlimited, &f);
    uint64_t sizes[] = {UINT64_MAX, UINT64_MAX - 1, UINT64_MAX - 255, UINT64_MAX - 256};
    for (int i = 0; i < 4; i++) {
        a = alloc_ok(m, sizes[i]);
        assert_int_equal(a.pool, 2);
        assert_int_equal(a.offset, 0);
        assert_true(((fake_page *)a.page)->size >= sizes[i]);
        cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
        memory_report_fill(m, &r);
        assert_int_equal(r.pools[2].bytes_in_use, sizes[i]);
        assert_true(r.pools[2].bytes_padding < 256);
        memory_free(m, &a);
        memory_cleanup(m, 1);
    }
    assert_int_equal(f.live_pages, 0);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

/* ---- out of memory ------------------------------------------------------------------------ */

static void test_oom_cleanup_then_retry(void **state)
{
    (void)state;
    fake_source f = {0};
    f.capacity = 40 * MiB;
    memory_manager *m = make(&LAVAPIPE, &f);
    mem_alloc x = alloc_ok(m, 3 * MiB); /* a 32 MiB page */
    fake_page *held = x.page;
    memory_free(m, &x);
    /* 32 + 20 MiB exceed the heap: the empty 32 MiB page goes back, then the retry fits. */
    mem_alloc y = alloc_ok(m, 20 * MiB);
    assert_int_equal(y.pool, 2);
    assert_int_equal(f.alloc_calls, 3);
    assert_int_equal(f.free_calls, 1);
    assert_false(held->live);
    assert_int_equal(f.live_bytes, 20 * MiB);
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &r);
    assert_int_equal(r.pages, 1);
    assert_int_equal(r.bytes_reserved, 20 * MiB);
    assert_int_equal(r.pools[1].pages, 0);
    assert_int_equal(r.pools[1].pages_peak, 1);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

/* Two managers on one heap, as two stream slots are: the hook returns the other's empty pages. */
typedef struct shared_heap {
    memory_manager *other;
    uint32_t calls;
} shared_heap;

static shared_heap *heap_of_hook;

static uint32_t reclaim_other(void *user)
{
    (void)user;
    heap_of_hook->calls++;
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    uint32_t released = memory_release_empty(heap_of_hook->other);
    memory_report_fill(heap_of_hook->other, &r);
    assert_int_equal(r.pages, 0);
    return released;
}

/* A page refused for lack of memory calls the source's reclaim hook, once, before the retry: the
 * empty pages another manager holds on the same heap go back, and the retry fits. The error
 * after a hook that returns nothing counts the pages it returned (none) and names the size. */
static void test_oom_reclaim_hook_frees_elsewhere(void **state)
{
    (void)state;
    fake_source f = {0};
    f.capacity = 40 * MiB;
    page_source src = fake_page_source(&f);
    memory_manager *first = make(&LAVAPIPE, &f);
    mem_alloc x = alloc_ok(first, 3 * MiB); /* a 32 MiB page */
    memory_free(first, &x);                 /* kept: the sliced pools keep empty pages */
    shared_heap h = {.other = first};
    heap_of_hook = &h;
    src.reclaim = reclaim_other;
    memory_manager *second = NULL;
    ok(memory_manager_create(&LAVAPIPE, src, &second));
    /* 32 + 20 MiB exceed the heap: only the first manager's empty page makes room. */
    mem_alloc y = alloc_ok(second, 20 * MiB);
    assert_int_equal(h.calls, 1);
    assert_int_equal(f.free_calls, 1);
    assert_int_equal(f.live_bytes, 20 * MiB);
    /* Nothing left to return: the retry fails as well, and the error says so. */
    mem_alloc z;
    expect_error(memory_alloc(second, 30 * MiB, &z), CUBEC_OUT_OF_MEMORY,
                 (const char *const[]){"requested 31457280 bytes", "after 0 empty pages", NULL});
    assert_int_equal(h.calls, 2);
    memory_free(second, &y);
    memory_manager_destroy(second);
    memory_manager_destroy(first);
    fake_destroy(&f);
}

static void test_oom_once_then_retry_succeeds(void **state)
{
    (void)state;
    fake_source f = {0};
    f.fail_at = 2;
    f.fail_count = 1;
    f.fail_code = CUBEC_OUT_OF_MEMORY;
    memory_manager *m = make(&LAVAPIPE, &f);
    mem_alloc a = alloc_ok(m, 256);
    mem_alloc b = alloc_ok(m, 3 * MiB);
    assert_int_equal(b.pool, 1);
    assert_int_equal(f.alloc_calls, 3);
    assert_int_equal(f.free_calls, 0); /* a's page holds a: nothing to give back */
    assert_true(((fake_page *)a.page)->live);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

static void test_oom_persistent_error(void **state)
{
    (void)state;
    fake_source f = {0};
    f.capacity = 36 * MiB;
    memory_manager *m = make(&LAVAPIPE, &f);
    mem_alloc a = alloc_ok(m, 3 * MiB);
    cubec_memory_report before = CUBEC_MEMORY_REPORT_INIT, after = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &before);
    mem_alloc b;
    /* requested size, the page tried (padded to 256), bytes reserved, bytes in use, the cause */
    const char *parts[] = {"requested 20971521 bytes", "20971776-byte page",
                           "33554432 bytes reserved",  "3145728 bytes in use",
                           "fake heap full",           NULL};
    expect_error(memory_alloc(m, 20 * MiB + 1, &b), CUBEC_OUT_OF_MEMORY, parts);
    assert_null(b.page);
    assert_int_equal(f.alloc_calls, 3); /* first try, the retry after cleanup */
    memory_report_fill(m, &after);
    assert_memory_equal(&before, &after, sizeof before);
    memory_free(m, &a);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

static void test_oom_falls_back_to_exact_page(void **state)
{
    (void)state;
    fake_source f = {0};
    f.capacity = 4 * MiB;
    memory_manager *m = make(&LAVAPIPE, &f);
    /* An 8 MiB sliced page cannot be had, a page of just the request can. */
    mem_alloc a = alloc_ok(m, 1000);
    assert_int_equal(a.pool, 2);
    assert_int_equal(f.last_size, 1024);
    assert_int_equal(f.alloc_calls, 3);
    memory_free(m, &a);

    f.capacity = 512;
    mem_alloc b;
    const char *parts[] = {"requested 1000 bytes",           "8388608-byte page", "sliced pool 0",
                           "nor a 1024-byte exclusive page", "1 empty pages",     NULL};
    expect_error(memory_alloc(m, 1000, &b), CUBEC_OUT_OF_MEMORY, parts);
    assert_int_equal(f.live_pages, 0);
    memory_manager_destroy(m);

    /* Exclusive pages are sized to the running average of requests (here ~43 MiB after 200
     * requests of 50 MiB); when that is refused the retry asks for just the request. */
    f.capacity = 75 * MiB;
    m = make(&LAVAPIPE, &f);
    uint64_t calls0 = f.alloc_calls;
    mem_alloc big;
    for (int i = 0; i < 200; i++) {
        big = alloc_ok(m, 50 * MiB);
        if (i < 199) memory_free(m, &big);
    }
    assert_int_equal(f.alloc_calls - calls0, 1);
    mem_alloc c = alloc_ok(m, 20 * MiB);
    assert_int_equal(c.pool, 2);
    assert_true(f.last_size == 20 * MiB);
    assert_int_equal(f.alloc_calls - calls0, 3);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

static void test_other_source_errors_pass_up(void **state)
{
    (void)state;
    fake_source f = {0};
    f.fail_at = 1;
    f.fail_count = 1;
    f.fail_code = CUBEC_INTERNAL;
    memory_manager *m = make(&LAVAPIPE, &f);
    mem_alloc a;
    const char *parts[] = {"while allocating a 8388608-byte page for a 256-byte buffer",
                           "fake driver refused call 1", NULL};
    expect_error(memory_alloc(m, 256, &a), CUBEC_INTERNAL, parts);
    assert_int_equal(f.alloc_calls, 1); /* no retry for anything but out-of-memory */
    a = alloc_ok(m, 256);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

/* ---- cleanup ------------------------------------------------------------------------------ */

static void test_periodic_cleanup(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_manager *m = make(&LAVAPIPE, &f); /* dealloc period 5000: a check per 1000 */
    mem_alloc big = alloc_ok(m, 20 * MiB);   /* reservation 1 */
    fake_page *page = big.page;
    memory_free(m, &big);
    for (int i = 2; i < 1000; i++) {
        mem_alloc s = alloc_ok(m, 256);
        memory_free(m, &s);
        memory_cleanup(m, 0); /* as the runtime does per flush: too early, a no-op */
    }
    assert_true(page->live);
    mem_alloc s = alloc_ok(m, 256); /* reservation 1000: the check returns the idle page */
    assert_false(page->live);
    memory_free(m, &s);
    memory_cleanup(m, 0);
    /* Sliced pages are returned only by an explicit cleanup. */
    assert_int_equal(f.live_pages, 1);
    memory_cleanup(m, 1);
    assert_int_equal(f.live_pages, 0);
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &r);
    assert_int_equal(r.pages, 0);
    assert_int_equal(r.bytes_reserved, 0);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

static void test_stale_free_ignored(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_manager *m = make(&LAVAPIPE, &f);
    mem_alloc a = alloc_ok(m, 1000), b = alloc_ok(m, 20 * MiB), c = alloc_ok(m, 1000);
    memory_free(m, &a);
    memory_free(m, &b);
    cubec_memory_report before = CUBEC_MEMORY_REPORT_INIT, after = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &before);
    memory_free(m, &a);
    memory_free(m, &b);
    mem_alloc bad = c;
    bad.pool = 99;
    memory_free(m, &bad);
    bad = c;
    bad.offset += 256;
    memory_free(m, &bad);
    memory_report_fill(m, &after);
    assert_memory_equal(&before, &after, sizeof before);
    assert_int_equal(after.allocations, 1);
    memory_manager_destroy(m);
    assert_int_equal(f.live_pages, 0);
    fake_destroy(&f);
}

/* ---- random sequences against a model ----------------------------------------------------- */

typedef struct model {
    mem_alloc *v;
    uint32_t n;
} model;

static int cmp_alloc(const void *a, const void *b)
{
    const mem_alloc *x = a, *y = b;
    if (x->page != y->page) return x->page < y->page ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Extent a live allocation covers in its page: exclusive allocations own the page. */
static uint64_t extent(const cubec_memory_report *r, const mem_alloc *a, uint64_t align)
{
    if (strcmp(r->pools[a->pool].kind, "exclusive") == 0) return ((fake_page *)a->page)->size;
    return align_up(a->size, align);
}

static void check_model(const memory_manager *m, const fake_source *f, const model *md,
                        uint64_t align)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &r);
    mem_alloc *s = malloc((md->n ? md->n : 1) * sizeof *s);
    assert_non_null(s);
    memcpy(s, md->v, md->n * sizeof *s);
    qsort(s, md->n, sizeof *s, cmp_alloc);

    uint64_t allocs[CUBEC_MAX_POOLS] = {0}, in_use[CUBEC_MAX_POOLS] = {0},
             pad[CUBEC_MAX_POOLS] = {0}, reserved[CUBEC_MAX_POOLS] = {0};
    uint32_t pages[CUBEC_MAX_POOLS] = {0};
    for (uint32_t i = 0; i < md->n; i++) {
        fake_page *pg = s[i].page;
        assert_true(s[i].pool < r.pool_count);
        assert_true(pg->live);
        assert_int_equal(pg->pool, (int)s[i].pool);
        assert_int_equal(s[i].offset % align, 0);
        uint64_t ext = extent(&r, &s[i], align);
        assert_true(s[i].offset + ext <= pg->size && s[i].offset + ext >= s[i].offset);
        if (i > 0 && s[i - 1].page == s[i].page)
            assert_true(s[i - 1].offset + extent(&r, &s[i - 1], align) <= s[i].offset);
        allocs[s[i].pool]++;
        in_use[s[i].pool] += s[i].size;
        uint64_t eff = align_up(s[i].size, align);
        pad[s[i].pool] += (eff < pg->size ? eff : pg->size) - s[i].size;
    }
    for (uint32_t k = 0; k < f->count; k++) {
        const fake_page *pg = f->pages[k];
        if (!pg->live) continue;
        assert_true(pg->pool >= 0); /* every page the manager holds served an allocation */
        pages[pg->pool]++;
        reserved[pg->pool] += pg->size;
    }
    uint64_t t_alloc = 0, t_use = 0, t_res = 0, t_pages = 0;
    for (uint32_t p = 0; p < r.pool_count; p++) {
        assert_int_equal(r.pools[p].allocations, allocs[p]);
        assert_int_equal(r.pools[p].bytes_in_use, in_use[p]);
        assert_int_equal(r.pools[p].bytes_padding, pad[p]);
        assert_int_equal(r.pools[p].pages, pages[p]);
        assert_int_equal(r.pools[p].bytes_reserved, reserved[p]);
        assert_true(r.pools[p].pages_peak >= r.pools[p].pages);
        t_alloc += allocs[p];
        t_use += in_use[p];
        t_res += reserved[p];
        t_pages += pages[p];
    }
    assert_int_equal(r.allocations, t_alloc);
    assert_int_equal(r.bytes_in_use, t_use);
    assert_int_equal(r.bytes_reserved, t_res);
    assert_int_equal(r.pages, t_pages);
    free(s);
}

/* The pages an explicit cleanup must return: held, and holding nothing the model has live. */
static void check_explicit_cleanup(memory_manager *m, fake_source *f, const model *md)
{
    uint32_t n_pages = f->count;
    int *expect_freed = calloc(n_pages ? n_pages : 1, sizeof *expect_freed);
    assert_non_null(expect_freed);
    uint32_t expected = 0;
    for (uint32_t k = 0; k < n_pages; k++) {
        if (!f->pages[k]->live) continue;
        int used = 0;
        for (uint32_t i = 0; i < md->n && !used; i++)
            used = md->v[i].page == f->pages[k];
        expect_freed[k] = !used;
        expected += !used;
    }
    uint64_t frees = f->free_calls;
    memory_cleanup(m, 1);
    assert_int_equal(f->free_calls - frees, expected);
    for (uint32_t k = 0; k < n_pages; k++)
        if (expect_freed[k]) assert_false(f->pages[k]->live);
    free(expect_freed);
}

static void random_run(const memory_config *c, uint64_t seed, int ops, uint64_t max_size)
{
    rng_state = seed;
    fake_source f = {0};
    memory_manager *m = make(c, &f);
    uint64_t align = c->alignment < 4 ? 4 : c->alignment;
    enum { MAXLIVE = 300 };
    model md = {calloc(MAXLIVE, sizeof(mem_alloc)), 0};
    assert_non_null(md.v);
    int log2max = 63 - __builtin_clzll(max_size);
    for (int op = 0; op < ops; op++) {
        uint64_t r = rng_next() % 1000;
        if (md.n == 0 || (md.n < MAXLIVE && r < 520)) {
            uint64_t hi = 1ull << rng_range(0, (uint64_t)log2max);
            uint64_t size = rng_range(1, hi < max_size ? hi : max_size);
            mem_alloc a;
            ok(memory_alloc(m, size, &a));
            assert_int_equal(a.size, size);
            fake_page *pg = a.page;
            if (pg->pool < 0) pg->pool = (int)a.pool; /* a fresh page: tag it with its pool */
            md.v[md.n++] = a;
        } else if (r < 995) {
            uint32_t i = (uint32_t)(rng_next() % md.n);
            memory_free(m, &md.v[i]);
            md.v[i] = md.v[--md.n];
        } else if (r < 998) {
            memory_cleanup(m, 0);
        } else {
            check_explicit_cleanup(m, &f, &md);
        }
        check_model(m, &f, &md, align);
    }
    check_explicit_cleanup(m, &f, &md);
    check_model(m, &f, &md, align);
    while (md.n)
        memory_free(m, &md.v[--md.n]);
    check_model(m, &f, &md, align);
    memory_cleanup(m, 1);
    assert_int_equal(f.live_pages, 0);
    memory_manager_destroy(m);
    free(md.v);
    fake_destroy(&f);
}

static void test_random_against_model(void **state)
{
    (void)state;
    random_run(&LAVAPIPE, 0x5eed0001ull, 20000, 48 * MiB);
    const memory_config h200 = {4 * GiB - 64, 40 * GiB, 64};
    random_run(&h200, 0x5eed0002ull, 10000, 2 * GiB);
    /* Odd sizes: a limit that is no multiple of the alignment, alignment below 4. */
    const memory_config odd = {40 * MiB + 12345, 100 * MiB + 3, 2};
    random_run(&odd, 0x5eed0003ull, 10000, 100 * MiB + 3);
}

static void test_destroy_frees_live_pages(void **state)
{
    (void)state;
    fake_source f = {0};
    memory_manager *m = make(&LAVAPIPE, &f);
    alloc_ok(m, 100);
    alloc_ok(m, 5 * MiB);
    alloc_ok(m, 50 * MiB);
    assert_int_equal(f.live_pages, 3);
    memory_manager_destroy(m);
    assert_int_equal(f.live_pages, 0);
    assert_int_equal(f.free_calls, 3);
    fake_destroy(&f);
}

/* ---- warm path ---------------------------------------------------------------------------- */

/* Sizes cycling 256 B .. 16 MiB: once warm, no page is added, whether each allocation is freed
 * at once or a window of 32 stays live. Prints the cost per alloc+free pair. */
static void warm_run(const char *name, const memory_config *c, uint32_t window)
{
    fake_source f = {0};
    memory_manager *m = make(c, &f);
    enum { SIZES = 17, MAXWIN = 64 };
    mem_alloc ring[MAXWIN];
    uint32_t live = 0, head = 0;
    const int warm = 20 * SIZES, pairs = 400000;
    uint64_t calls = 0;
    double t0 = 0;
    for (int i = 0; i < warm + pairs; i++) {
        if (i == warm) {
            calls = f.alloc_calls;
            t0 = (double)clock_now_ns();
        }
        uint64_t size = 256ull << (i % SIZES);
        if (live == window) {
            memory_free(m, &ring[head]);
            live--;
        }
        ok(memory_alloc(m, size, &ring[head]));
        live++;
        head = window ? (head + 1) % window : 0;
        if (window == 0) {
            memory_free(m, &ring[0]);
            live = 0;
        }
    }
    double ns = ((double)clock_now_ns() - t0) / pairs;
    assert_int_equal(f.alloc_calls, calls);
    print_message("%s, window %u: %.1f ns per alloc+free, %u pages\n", name, window, ns,
                  f.live_pages);
    memory_manager_destroy(m);
    fake_destroy(&f);
}

static void test_warm_path(void **state)
{
    (void)state;
    const memory_config h200 = {4 * GiB - 64, 40 * GiB, 64};
    warm_run("lavapipe", &LAVAPIPE, 0);
    warm_run("lavapipe", &LAVAPIPE, 32);
    warm_run("h200", &h200, 0);
    warm_run("h200", &h200, 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_routing),
        cmocka_unit_test(test_room_before_new_page),
        cmocka_unit_test(test_page_flags_travel_with_the_call),
        cmocka_unit_test(test_too_big_and_bad_sizes),
        cmocka_unit_test(test_oom_cleanup_then_retry),
        cmocka_unit_test(test_oom_reclaim_hook_frees_elsewhere),
        cmocka_unit_test(test_oom_once_then_retry_succeeds),
        cmocka_unit_test(test_oom_persistent_error),
        cmocka_unit_test(test_oom_falls_back_to_exact_page),
        cmocka_unit_test(test_other_source_errors_pass_up),
        cmocka_unit_test(test_periodic_cleanup),
        cmocka_unit_test(test_stale_free_ignored),
        cmocka_unit_test(test_random_against_model),
        cmocka_unit_test(test_destroy_frees_live_pages),
        cmocka_unit_test(test_warm_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
