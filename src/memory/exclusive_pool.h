/* Exclusive pool: one allocation per page (spec 3.3), for requests too large to share a page.
 *
 * New pages are sized to the larger of the request and a running average of request sizes, so
 * that a free page is likely to fit the next request. A free page is reused by the request it
 * fits with the lowest "free count"; reuse lowers the count, and each periodic check raises it
 * on every free page and returns the pages that reach EXCLUSIVE_POOL_IDLE_CHECKS. Pages that keep
 * being reused therefore survive, pages that sit idle go back to the driver after a few checks.
 *
 * Pages live in an array of stable slots; free pages are also listed separately, so that a
 * reservation looks only at the free ones. */
#ifndef CUBEC_MEMORY_EXCLUSIVE_POOL_H
#define CUBEC_MEMORY_EXCLUSIVE_POOL_H

#include "memory/page_source.h"

#include <stdint.h>

/* A free page is returned when its free count reaches this; a new page starts one below it. */
#define EXCLUSIVE_POOL_IDLE_CHECKS 5u
/* Weight of each request in the running average of request sizes. */
#define EXCLUSIVE_POOL_AVG_DECAY 0.01

typedef struct exclusive_page {
    void *handle;
    uint64_t size;      /* bytes of the page */
    uint64_t requested; /* bytes asked for while live; 0 while free */
    uint32_t free_count;
    uint32_t state; /* EXCLUSIVE_SLOT_UNUSED / _FREE / _LIVE */
    uint32_t link;  /* free: index in `free_list`; unused: next unused slot */
} exclusive_page;

typedef struct exclusive_pool {
    uint64_t max_alloc;      /* the largest request accepted; no page is larger */
    uint64_t alignment;      /* power of two */
    uint64_t dealloc_period; /* reservations between full idle-page sweeps (checks every 1/5) */
    uint64_t last_check;     /* reservation count at the last check */
    double avg_size;

    exclusive_page *pages;
    uint32_t page_count; /* slots ever used */
    uint32_t page_cap;
    uint32_t unused;
    uint32_t unused_count;
    uint32_t *free_list; /* slots of the free pages */
    uint32_t free_len;
    uint32_t free_cap;

    uint32_t pages_live;
    uint32_t pages_peak;
    uint64_t allocations;
    uint64_t bytes_in_use;
    uint64_t bytes_padding;
    uint64_t bytes_reserved;
} exclusive_pool;

#define EXCLUSIVE_NIL UINT32_MAX
enum { EXCLUSIVE_SLOT_UNUSED = 0, EXCLUSIVE_SLOT_FREE = 1, EXCLUSIVE_SLOT_LIVE = 2 };

/* `alignment` is a power of two; `dealloc_period` 0 means "check at every cleanup". */
void exclusive_pool_init(exclusive_pool *p, uint64_t max_alloc, uint64_t alignment,
                         uint64_t dealloc_period);
/* Frees every page through the source, live or not. */
void exclusive_pool_destroy(exclusive_pool *p, const page_source *source);

static inline int exclusive_pool_accepts(const exclusive_pool *p, uint64_t size)
{
    return size <= p->max_alloc;
}

/* Reuses a free page for `size` bytes (0 < size <= max_alloc); returns 0 when none fits. Every
 * call feeds the running average that sizes new pages. */
int exclusive_pool_try_reserve(exclusive_pool *p, uint64_t size, pool_slice *out);
/* The size a new page for `size` bytes would have: max(average, size) aligned, never above
 * max_alloc (nor below `size`). */
uint64_t exclusive_pool_page_size(const exclusive_pool *p, uint64_t size);
/* Adds a page of `page_bytes` (>= size, e.g. from exclusive_pool_page_size) holding `size`
 * bytes. On error nothing changed. */
MUST_USE cubec_status exclusive_pool_add_page(exclusive_pool *p, const page_source *source,
                                              uint64_t size, uint64_t page_bytes, pool_slice *out);
/* Frees the page's allocation; it stays held for reuse. Returns 0 (changing nothing) for a stale
 * or double free. */
int exclusive_pool_free(exclusive_pool *p, uint32_t slot, const void *page, uint64_t size);
/* Explicit: returns every free page. Periodic (`explicit_cleanup` 0): acts only once
 * dealloc_period/5 reservations passed since the last check (`reservations` is the caller's
 * running count), then ages the free pages and returns the idle ones. Returns pages freed. */
uint32_t exclusive_pool_cleanup(exclusive_pool *p, const page_source *source, uint64_t reservations,
                                int explicit_cleanup);
/* page_size and max_slice_size are both max_alloc. */
void exclusive_pool_report(const exclusive_pool *p, cubec_pool_report *out);

#endif
