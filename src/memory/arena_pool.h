/* Arena pool: a sliced pool whose page size grows with the requests (spec 3.9's pool arena and
 * the planning half of its relocation).
 *
 * The arena holds up to ARENA_MAX_PAGE_SIZES sliced pools, one per page size it grew through.
 * Only the *current* one serves new requests. A request that does not fit its page size grows
 * the arena: the new page size is the request plus 1 MiB, rounded up to 1 MiB and to the
 * alignment, clamped to [min_page, max_page]. The new pool becomes current only once the source
 * granted its first page (a refused growth leaves the old size current). The old pool is then
 * *outdated*: it serves nothing new, returns each of its pages as soon as the page empties, and
 * frees its slot when it holds no page. Growing with all slots taken by outdated pools that still
 * hold live slices fails with CUBEC_OUT_OF_MEMORY.
 *
 * Relocation (spec 3.9) moves the live slices of outdated pages into the current pool so those
 * pages can go back. The arena only plans it: arena_pool_plan reserves a target for every live
 * slice of each outdated page it can empty (all of the page's slices, or none of them; a
 * guarded page, or one holding a slice without an owner, is never chosen) and hands the moves
 * to its caller, which copies the bytes, points each owner at its target and then frees the
 * sources like any other slice (the emptied pages then go back on their own). */
#ifndef CUBEC_MEMORY_ARENA_POOL_H
#define CUBEC_MEMORY_ARENA_POOL_H

#include "memory/pool_list.h"
#include "memory/sliced_pool.h"

#include <stdint.h>

#define ARENA_NIL UINT32_MAX

/* What relocation_need compares (spec 3.9): a relocation that moved nothing is not tried again
 * until one of these changed. */
typedef struct arena_shape {
    uint32_t current_pages, outdated_pools, outdated_pages, guarded_outdated;
} arena_shape;

/* One live slice to move off an outdated page. */
typedef struct arena_move {
    void *owner;
    uint64_t size; /* bytes requested */
    uint32_t from_part, from_slot;
    void *from_page;
    uint64_t from_offset;
    uint32_t to_part, to_slot;
    void *to_page;
    uint64_t to_offset;
} arena_move;

typedef struct arena_pool {
    uint64_t min_page, max_page; /* multiples of the alignment */
    uint64_t alignment;
    sliced_pool *slots[ARENA_MAX_PAGE_SIZES]; /* NULL: free slot */
    uint32_t current;                         /* slot of the current pool, or ARENA_NIL */
    uint32_t pages_live;                      /* over every slot */
    uint32_t pages_peak;
    uint32_t slots_used;
    uint64_t relocations, relocated_bytes; /* moves committed so far (the report's) */
    arena_shape futile;                    /* the shape of the last relocation that moved nothing */
    int futile_valid;
    int futile_may_add; /* ... and whether it could add pages */
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
/* Sets the owner of a live slice (NULL: not movable). */
void arena_pool_set_owner(arena_pool *a, uint32_t part, uint32_t slot, void *owner);
/* Adds (delta +1) or drops (-1) a guard on the page of a live slice. */
void arena_pool_guard(arena_pool *a, uint32_t part, uint32_t slot, int delta);
/* Every slot holds a page size: the arena cannot grow (spec 3.9's ArenaFull). */
static inline int arena_pool_full(const arena_pool *a)
{
    return a->slots_used == ARENA_MAX_PAGE_SIZES;
}
/* Whether a relocation (one that may add pages when `may_add`) may move something: there is an
 * outdated page, and the shape differs from that of the last relocation that moved nothing,
 * unless that one could not add pages and this one can. */
int arena_pool_wants_relocation(const arena_pool *a, int may_add);
/* Plans the moves off outdated pages into the current pool: targets are reserved in room the
 * current pool holds and, when `may_add_pages`, in pages added to it (a page the source refuses
 * ends the adding). Moves are appended to *moves (grown with array_grow); each source slice
 * loses its owner and each target gets it, so a second plan never moves a slice twice. Fails
 * only when the host is out of memory, planning nothing more (the moves appended stay valid). */
MUST_USE cubec_status arena_pool_plan(arena_pool *a, const page_source *source, int may_add_pages,
                                      arena_move **moves, uint32_t *count, uint32_t *cap);
/* Undoes a planned move that will not be copied: frees the target, gives the source back its
 * owner. */
void arena_pool_unplan(arena_pool *a, const page_source *source, const arena_move *m);
/* Counts committed moves; a relocation that moved nothing remembers the shape. */
void arena_pool_note_relocation(arena_pool *a, uint32_t moved, uint64_t bytes, int may_add);
/* One entry for the whole arena: kind "arena", page_size the current page size (min_page before
 * the first page), max_slice_size max_page, outdated_pages those of outdated pools. */
void arena_pool_report(const arena_pool *a, cubec_pool_report *out);

#endif
