/* Arena pool: a sliced pool whose page size grows with the requests (spec 3.9's pool arena,
 * without relocation).
 *
 * The arena holds up to ARENA_MAX_PAGE_SIZES sliced pools, one per page size it grew through.
 * Only the *current* one serves new requests. A request that does not fit its page size grows
 * the arena: the new page size is the request plus 1 MiB, rounded up to 1 MiB and to the
 * alignment, clamped to [min_page, max_page]. The new pool becomes current only once the source
 * granted its first page (a refused growth leaves the old size current). The old pool is then
 * *outdated*: it serves nothing new, returns each of its pages as soon as the page empties, and
 * frees its slot when it holds no page. Live slices are never moved (no relocation): an outdated
 * page stays until the program frees what it holds. Growing with all slots taken by outdated
 * pools that still hold live slices fails with CUBEC_OUT_OF_MEMORY. */
#ifndef CUBEC_MEMORY_ARENA_POOL_H
#define CUBEC_MEMORY_ARENA_POOL_H

#include "memory/pool_list.h"
#include "memory/sliced_pool.h"

#include <stdint.h>

#define ARENA_NIL UINT32_MAX

typedef struct arena_pool {
    uint64_t min_page, max_page; /* multiples of the alignment */
    uint64_t alignment;
    sliced_pool *slots[ARENA_MAX_PAGE_SIZES]; /* NULL: free slot */
    uint32_t current;                         /* slot of the current pool, or ARENA_NIL */
    uint32_t pages_live;                      /* over every slot */
    uint32_t pages_peak;
} arena_pool;

void arena_pool_init(arena_pool *a, uint64_t min_page, uint64_t max_page, uint64_t alignment);
/* Frees every page through the source, live slices or not. */
void arena_pool_destroy(arena_pool *a, const page_source *source);

static inline int arena_pool_accepts(const arena_pool *a, uint64_t size)
{
    return size <= a->max_page;
}

/* Reserves in the current pool's pages; *out_found 0 when there is no room (or no current
 * pool, or the request needs a larger page). *out_part names the slot for arena_pool_free. */
MUST_USE cubec_status arena_pool_try_reserve(arena_pool *a, uint64_t size, int *out_found,
                                             pool_slice *out, uint32_t *out_part);
/* Adds a page to the current pool, growing the arena first when the request does not fit its
 * page size. *out_page_bytes is the page size asked for. On error nothing changed. */
MUST_USE cubec_status arena_pool_add_page(arena_pool *a, const page_source *source, uint64_t size,
                                          pool_slice *out, uint32_t *out_part,
                                          uint64_t *out_page_bytes);
/* Frees a live slice (0 for a stale or double free, changing nothing). A page of an outdated
 * pool that empties goes back to the source at once. */
int arena_pool_free(arena_pool *a, const page_source *source, uint32_t part, uint32_t slot,
                    const void *page, uint64_t offset, uint64_t size);
/* Returns every page with no live slice; returns how many. */
uint32_t arena_pool_release_empty(arena_pool *a, const page_source *source);
/* One entry for the whole arena: kind "arena", page_size the current page size (min_page before
 * the first page), max_slice_size max_page, outdated_pages those of outdated pools. */
void arena_pool_report(const arena_pool *a, cubec_pool_report *out);

#endif
