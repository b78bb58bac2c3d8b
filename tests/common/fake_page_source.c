#include "fake_page_source.h"

#include "base/status.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

cubec_status fake_alloc(void *user, uint64_t size, uint32_t flags, void **out_page)
{
    fake_source *f = user;
    f->alloc_calls++;
    f->last_size = size;
    f->last_flags = flags;
    if (f->fail_at && f->alloc_calls >= f->fail_at && f->alloc_calls - f->fail_at < f->fail_count)
        return status_make(f->fail_code, "fake driver refused call %llu",
                           (unsigned long long)f->alloc_calls);
    if (f->capacity && (size > f->capacity || f->live_bytes > f->capacity - size))
        return status_make(CUBEC_OUT_OF_MEMORY, "fake heap full (%llu of %llu bytes used)",
                           (unsigned long long)f->live_bytes, (unsigned long long)f->capacity);
    if (f->count == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 64;
        f->pages = realloc(f->pages, f->cap * sizeof *f->pages);
        assert_non_null(f->pages);
    }
    fake_page *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->size = size;
    p->id = f->count;
    p->live = 1;
    p->pool = -1;
    f->pages[f->count++] = p;
    f->live_bytes += size;
    f->live_pages++;
    *out_page = p;
    return NULL;
}

void fake_free(void *user, void *page)
{
    fake_source *f = user;
    fake_page *p = page;
    assert_non_null(p);
    assert_true(p->id < f->count && f->pages[p->id] == p);
    assert_true(p->live); /* never freed twice */
    p->live = 0;
    f->free_calls++;
    f->live_bytes -= p->size;
    f->live_pages--;
}

page_source fake_page_source(fake_source *f)
{
    page_source s = {f, fake_alloc, fake_free};
    return s;
}

void fake_destroy(fake_source *f)
{
    for (uint32_t i = 0; i < f->count; i++)
        free(f->pages[i]);
    free(f->pages);
    memset(f, 0, sizeof *f);
}

uint64_t rng_state = 0x9E3779B97F4A7C15ull;

uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

uint64_t rng_range(uint64_t lo, uint64_t hi)
{
    return lo + rng_next() % (hi - lo + 1);
}

void ok(cubec_status s)
{
    if (s) fail_msg("unexpected error: %s", cubec_status_message(s));
}

uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}
