/* Sliced pool: pages of one fixed size, each carved into slices (spec 3.3).
 *
 * Every page is covered by a chain of slices in address order, each free or live. Adjacent free
 * slices are merged as soon as one of them is freed, so a page with no live slice is exactly one
 * free slice and can be returned by an explicit cleanup at once.
 *
 * Finding room is O(1): free slices sit in segregated lists (a two-level size class: power of two,
 * then eighths of it) with a bitmap of the non-empty lists, so a reservation takes the head of the
 * first list whose every member is large enough. Only when no such list exists is the list of the
 * request's own size class searched (its members may or may not fit), so a new page is added only
 * when no free slice of the pool can hold the request. This replaces the reference's "first fit,
 * page by page", which costs a walk over every slice of every page per reservation.
 *
 * Slices and pages live in arrays indexed by stable slot numbers (recycled through free lists),
 * so a live slice is named by its slot for an O(1) free, and nothing is renumbered. */
#ifndef CUBEC_MEMORY_SLICED_POOL_H
#define CUBEC_MEMORY_SLICED_POOL_H

#include "memory/page_source.h"

#include <stdint.h>

#define SLICED_POOL_SL_BITS 3u
#define SLICED_POOL_BINS (64u << SLICED_POOL_SL_BITS)

typedef struct sliced_slice {
    uint64_t offset;    /* in the page */
    uint64_t size;      /* extent in the page: a multiple of the alignment */
    uint64_t requested; /* bytes asked for while live; 0 while free */
    uint32_t page;      /* page slot */
    uint32_t prev;      /* neighbours in address order in the same page (SLICED_NIL at the ends); */
    uint32_t next;      /* `next` links the unused slots while the slot is unused */
    uint32_t bin_prev;  /* free-list links while free */
    uint32_t bin_next;
    uint32_t state; /* SLICED_SLOT_UNUSED / _FREE / _LIVE */
    /* The client record a live slice belongs to (NULL: none, or not movable): what relocation
     * hands back so the client can point its handle at the new place (spec 3.1's identity).
     * Meaningful only while live (carving clears it). */
    void *owner;
} sliced_slice;

typedef struct sliced_page {
    void *handle;    /* from the page source; meaningful only while `in_use` */
    uint32_t first;  /* slot of the slice at offset 0 (stable: merging keeps the lower slice) */
    uint32_t live;   /* live slices in the page */
    uint32_t in_use; /* 0: the slot is unused, `first` links the unused page slots */
    uint32_t guards; /* page guards (spec 3.9): a guarded page is never relocated */
} sliced_page;

typedef struct sliced_pool {
    uint64_t page_size; /* a multiple of `alignment` */
    uint64_t max_slice; /* the largest request the pool takes without the 20 % rule */
    uint64_t alignment; /* power of two */
    uint32_t max_pages; /* the cap in pages (0: none): a full pool adds no page */
    int fill_rule;      /* also take a request filling >= 80 % of a page (uncapped pools) */

    sliced_slice *slices;
    uint32_t slice_count; /* slots ever used (the array's high-water mark) */
    uint32_t slice_cap;
    uint32_t slice_unused; /* head of the unused slot list */
    uint32_t slice_unused_count;

    sliced_page *pages;
    uint32_t page_count; /* page slots ever used */
    uint32_t page_cap;
    uint32_t page_unused;
    uint32_t page_unused_count;

    uint32_t bin_head[SLICED_POOL_BINS];
    uint64_t bin_bitmap[SLICED_POOL_BINS / 64];

    /* Accounting for the report. */
    uint32_t pages_live;
    uint32_t pages_peak;
    uint64_t allocations;
    uint64_t bytes_in_use;
    uint64_t bytes_padding;
} sliced_pool;

#define SLICED_NIL UINT32_MAX
enum { SLICED_SLOT_UNUSED = 0, SLICED_SLOT_FREE = 1, SLICED_SLOT_LIVE = 2 };

/* `alignment` is a power of two and `page_size` a non-zero multiple of it, max_slice <= page.
 * The pool starts uncapped, with the 80 % rule; a caller may set max_pages and fill_rule next. */
void sliced_pool_init(sliced_pool *p, uint64_t page_size, uint64_t max_slice, uint64_t alignment);
/* Frees every page through the source, live slices or not. */
void sliced_pool_destroy(sliced_pool *p, const page_source *source);

/* Whether the pool takes requests of `size` bytes: up to max_slice, or (fill_rule) anything that
 * fills at least 80 % of a page (one page then serves it with little waste). */
static inline int sliced_pool_accepts(const sliced_pool *p, uint64_t size)
{
    if (size <= p->max_slice) return 1;
    if (!p->fill_rule) return 0;
    /* A request this close to a page would waste less than a fifth of it. */
    return size <= p->page_size && p->page_size - size < p->page_size / 5;
}
/* Whether the pool is at its cap: it may add no page. */
static inline int sliced_pool_full(const sliced_pool *p)
{
    return p->max_pages && p->pages_live >= p->max_pages;
}

/* Reserves `size` bytes (0 < size <= page_size) in a page already held. Sets *out_found to 1 and
 * fills *out when there was room, to 0 when there was none. Fails only when the host is out of
 * memory. */
MUST_USE cubec_status sliced_pool_try_reserve(sliced_pool *p, uint64_t size, int *out_found,
                                              pool_slice *out);
/* Adds a page from the source and reserves `size` bytes at its start. On error nothing changed;
 * a full pool (sliced_pool_full) refuses with CUBEC_OUT_OF_MEMORY. */
MUST_USE cubec_status sliced_pool_add_page(sliced_pool *p, const page_source *source, uint64_t size,
                                           pool_slice *out);
/* Frees a live slice. Returns 0 (and changes nothing) when `slot` does not name a live slice of
 * `page` at `offset` holding `size` bytes: a stale or double free. */
int sliced_pool_free(sliced_pool *p, uint32_t slot, const void *page, uint64_t offset,
                     uint64_t size);
/* Returns every page with no live slice to the source; returns how many. */
uint32_t sliced_pool_release_empty(sliced_pool *p, const page_source *source);
/* The page slot of live slice `slot`, or SLICED_NIL when `slot` names no live slice. */
uint32_t sliced_pool_page_of(const sliced_pool *p, uint32_t slot);
/* Pages holding at least one guard. */
uint32_t sliced_pool_guarded_pages(const sliced_pool *p);
/* Fills kind, sizes, cap, pages and usage; bytes_reserved is pages * page_size. */
void sliced_pool_report(const sliced_pool *p, cubec_pool_report *out);

#endif
