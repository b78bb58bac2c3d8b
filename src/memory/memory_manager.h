/* The memory manager: routes each allocation to one of a list of pools (spec 3.4) and handles
 * driver out-of-memory by returning empty pages and retrying.
 *
 * It works on offsets only: pages come from a page_source, so nothing here knows Vulkan. It is
 * not thread-safe: the device lock orders every call. Freeing is immediate; the runtime defers
 * memory_free until the GPU no longer uses the range, so a page with no live slice is never in
 * use by the GPU and may be returned to the source at any cleanup.
 *
 * The pools come from a preset or a custom list (pool_list.h, docs/memory.md). The default, the
 * ladder, for a page limit P (max_page_size, aligned down) and alignment A (at least 4):
 *  - sliced pools: starting from P, while the current size is at least 32 MiB, divide it by 4
 *    (rounded up to A) and record a pool with pages of that size and slices of at most
 *    size / 2^k, k = 1, 2, ...; the ladder is then ordered small pages first. For
 *    P = 128 MiB that is pages of 8 MiB (slices <= 2 MiB) and 32 MiB (slices <= 16 MiB). An
 *    uncapped sliced pool also takes a request that would fill at least 80 % of one of its pages.
 *    When P < 32 MiB the ladder would be empty; one sliced pool with pages of P (slices <= P/2)
 *    is used instead, because one driver allocation per buffer runs into Vulkan's allocation
 *    count limit (maxMemoryAllocationCount may be as low as 4096).
 *  - last, an exclusive pool (one allocation per page) for anything up to max_alloc_size.
 *
 * Routing: the first pool, in order, that accepts the size and has room in a page it holds
 * (exclusive pages are reused only by the first pool that accepts the size: a large free
 * exclusive page would otherwise be pinned by a small buffer); else a new page in the first
 * accepting pool that may add one. A capped sliced pool at its cap *spills* to the next accepting
 * pool (a warning logged once per pool); if no later pool accepts, the request fails with
 * CUBEC_OUT_OF_MEMORY naming the cap. If the source refuses the page with CUBEC_OUT_OF_MEMORY,
 * every empty page is returned (the source's reclaim hook first, for pages held outside this
 * manager) and the page is tried once more; if it still fails and the last pool is exclusive and
 * also accepts the size, an exclusive page of just the (padded) size is tried. */
#ifndef CUBEC_MEMORY_MEMORY_MANAGER_H
#define CUBEC_MEMORY_MEMORY_MANAGER_H

#include "memory/memory_modes.h"
#include "memory/page_source.h"
#include "memory/pool_list.h"

#include <stdint.h>

typedef struct memory_config {
    /* largest page (e.g. min(maxStorageBufferRange, maxMemoryAllocationSize)); 128 MiB on
     * lavapipe, 4 GiB-1 rounded down on an H200 */
    uint64_t max_page_size;
    /* largest single allocation (maxMemoryAllocationSize / heap limits) */
    uint64_t max_alloc_size;
    /* offset alignment of every slice (power of two, e.g. minStorageBufferOffsetAlignment);
     * values below 4 are raised to 4 */
    uint64_t alignment;
    /* the layout (0: the ladder); `custom` is read for MEMORY_PRESET_CUSTOM */
    memory_preset preset;
    pool_list custom;
    /* [memory] persistent_memory (memory_modes.h); 0: enabled */
    persistent_memory persistent_memory;
} memory_config;

typedef struct mem_alloc {
    void *page;      /* from page_source.alloc */
    uint64_t offset; /* byte offset in the page, aligned */
    uint64_t size;   /* requested size */
    /* 16 bits each, so that the record (kept in every buffer) stays 32 bytes */
    uint16_t pool; /* pool index (as in the report), or MEMORY_POOL_PERSISTENT / _DEDICATED */
    uint16_t part; /* arena: the page size's slot; 0 otherwise */
    uint32_t slot; /* the pool's index of the slice: memory_free finds it in O(1) */
} mem_alloc;

typedef struct memory_manager memory_manager;

/* Fails with CUBEC_INVALID_ARGUMENT for a NULL config/out/source callback, an alignment that is
 * not a power of two, a zero max_page_size / max_alloc_size, or a layout pool_list_build refuses;
 * CUBEC_OUT_OF_MEMORY when the host is. Allocates no page. */
MUST_USE cubec_status memory_manager_create(const memory_config *config, page_source source,
                                            memory_manager **out);
/* Frees every page through the source, live allocations or not. NULL is accepted. */
void memory_manager_destroy(memory_manager *m);

/* Reserves `size` bytes. Errors: size 0 → CUBEC_INVALID_ARGUMENT; size > max_alloc_size →
 * CUBEC_OUT_OF_MEMORY "requested N bytes, larger than the device's largest allocation M"; the
 * source refusing pages even after a cleanup → CUBEC_OUT_OF_MEMORY naming the requested size,
 * the page sizes tried and the bytes reserved / in use here; any other source error is passed up
 * with context. On error nothing is reserved.
 * Each call also runs the periodic cleanup's cheap check (spec 3.6: a reservation may return idle
 * exclusive pages), so page_source.free may be called from here. */
MUST_USE cubec_status memory_alloc(memory_manager *m, uint64_t size, mem_alloc *out);
/* memory_alloc with flags. MEMORY_NO_NEW_PAGE: only pages already allocated may serve the request
 * (a stream recording a graph may not change its pages, spec 3.9); without room the result is
 * CUBEC_OUT_OF_MEMORY and the caller names the rule. */
#define MEMORY_NO_NEW_PAGE 1u
MUST_USE cubec_status memory_alloc_flags(memory_manager *m, uint64_t size, uint32_t flags,
                                         mem_alloc *out);
/* MEMORY_EXPORTABLE_PAGE (page_source.h) in `flags`: a page of its own, made exportable, among
 * the external allocations (no window routes there). */
/* Files a page made outside the manager (memory imported from an fd) of `size` bytes among the
 * external allocations, as one allocation of all of it; memory_free returns it through the
 * source like the others. On error the page is still the caller's. */
MUST_USE cubec_status memory_adopt(memory_manager *m, void *page, uint64_t size, mem_alloc *out);
/* The range becomes reusable at once. A stale or repeated free (the slot no longer holds this
 * page/offset/size) is ignored. */
void memory_free(memory_manager *m, const mem_alloc *a);
/* explicit_cleanup != 0: returns every page that holds no live allocation. 0 (periodic, e.g.
 * once per flush): each pool's own policy — the exclusive pool ages its free pages every
 * dealloc_period/5 reservations and returns those idle for 5 checks; sliced pools keep theirs. */
void memory_cleanup(memory_manager *m, int explicit_cleanup);
/* memory_cleanup(m, 1) that says how many pages it returned. */
uint32_t memory_release_empty(memory_manager *m);
/* The slot's allocation windows and the persistent and dedicated allocations they route to
 * (memory_modes.h): memory_alloc follows them. */
memory_modes *memory_manager_modes(memory_manager *m);
/* --- Owners, guards and relocation (spec 3.1, 3.9) -------------------------------------- */

/* The client record of a live arena allocation: relocation hands it back with the move (NULL:
 * the allocation is not movable, e.g. a free that waits on the GPU). Other pools ignore it. */
void memory_set_owner(memory_manager *m, const mem_alloc *a, void *owner);
/* A page guard (+1) or its release (-1) on the page of a live allocation: a guarded page is never
 * relocated nor returned. Counted on sliced and arena pages (the report's guarded_pages);
 * exclusive pages never move, so guards on them count nothing. */
void memory_guard(memory_manager *m, const mem_alloc *a, int delta);

/* Why a relocation runs (spec 3.9); decides where its targets may come from. */
typedef enum memory_relocation_reason {
    MEMORY_RELOCATE_EXPLICIT = 0, /* cubec_memory_cleanup: room already held only */
    MEMORY_RELOCATE_PRESSURE,     /* the device's memory runs out: room already held only */
    MEMORY_RELOCATE_ARENA_FULL,   /* every page size slot is taken: may add pages */
    MEMORY_RELOCATE_CAPTURE,      /* cubec_graph_prepare: may add pages */
} memory_relocation_reason;
const char *memory_relocation_reason_name(memory_relocation_reason r);

/* One allocation to move: its owner, where it is, where it goes. */
typedef struct mem_move {
    void *owner;
    mem_alloc from, to;
} mem_move;

/* Spec 3.9's relocation_need for the manager's arenas: 1 with *out_reason set when a relocation
 * is wanted before a reservation: an arena with every page size slot taken (ARENA_FULL), or,
 * when `capacity` is non-zero, `allocated + page > capacity - page` for the current page size
 * of an arena (PRESSURE: the last moment a copy target can still be added). 0 when no arena has
 * an outdated page worth a try (see arena_pool_wants_relocation). */
int memory_relocation_need(const memory_manager *m, uint64_t capacity, uint64_t allocated,
                           memory_relocation_reason *out_reason);
/* Whether any arena has outdated pages a relocation for `reason` could try to empty. */
int memory_relocation_wanted(const memory_manager *m, memory_relocation_reason reason);
/* Plans the moves of every arena (arena_pool_plan): targets in held room, and in new pages for
 * ARENA_FULL and CAPTURE. Moves are appended to *moves (count/cap as array_grow keeps them). */
MUST_USE cubec_status memory_relocation_plan(memory_manager *m, memory_relocation_reason reason,
                                             mem_move **moves, uint32_t *count, uint32_t *cap);
/* Undoes a planned move that will not be copied (frees its target). */
void memory_relocation_unplan(memory_manager *m, const mem_move *move);
/* After the copies: counts `moved` moves of `bytes` on each arena (the report's relocations);
 * moved 0 remembers the arenas' shapes, so the same relocation is not tried again unchanged. */
void memory_relocation_done(memory_manager *m, memory_relocation_reason reason,
                            const mem_move *moves, uint32_t moved);

/* Overwrites *out: the preset's name, one entry per pool ("sliced" / "exclusive" / "arena", page
 * size (exclusive: largest allocation; arena: the current one), max slice, cap, dealloc period,
 * pages, pages_peak, outdated pages, live allocations, bytes in use / padding / reserved), the
 * persistent pool and the dedicated allocations (out->persistent, out->dedicated), the totals
 * over all of those, and the windows (mode and depth) and persistent_memory setting of `m`. A
 * caller adding pools adds to pool_count and the totals. */
void memory_report_fill(const memory_manager *m, cubec_memory_report *out);

#endif
