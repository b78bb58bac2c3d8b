/* Where the memory pools get their pages. The pools are pure offset arithmetic: they never touch
 * Vulkan, so they can be tested with a fake source and reused for any kind of memory (device,
 * staging, uniforms). A "page" is whatever the source returns: the pools only pass it back. */
#ifndef CUBEC_MEMORY_PAGE_SOURCE_H
#define CUBEC_MEMORY_PAGE_SOURCE_H

#include "base/status.h"

#include <stdint.h>

/* A page flag (page_source.alloc's `flags`, memory_alloc_flags'): the page need not have memory
 * yet (a dry run's buffer; the owner backs it at its first real use). */
#define MEMORY_LAZY_PAGE 2u
/* A page flag: the page's memory may be exported to another device or API (docs/multi-device.md);
 * such a page holds one buffer only, in the manager's external allocations. */
#define MEMORY_EXPORTABLE_PAGE 4u

typedef struct page_source {
    void *user;
    /* Allocates one page of `size` bytes; returns an opaque page pointer. `flags`:
       MEMORY_LAZY_PAGE, MEMORY_EXPORTABLE_PAGE or 0, as the allocation that needs the page asked.
       Errors are passed up (CUBEC_OUT_OF_MEMORY means "the driver refused"). */
    cubec_status (*alloc)(void *user, uint64_t size, uint32_t flags, void **out_page);
    void (*free)(void *user, void *page);
    /* Optional (NULL: none). Called when `alloc` refused a page with CUBEC_OUT_OF_MEMORY, before
       the one retry: the owner returns the empty pages it may return elsewhere (other pools that
       share the driver's heap, e.g. other streams' pools) and says how many. It may free into
       the calling pool's manager (memory_free) but must not allocate from it. */
    uint32_t (*reclaim)(void *user);
    /* The page flags of the allocation being served, handed to `alloc`: the manager sets them on
       its own copy of the source for one call, so they never outlive the call. */
    uint32_t flags;
} page_source;

/* One reserved range, as a pool hands it to the memory manager. `slot` is the pool's own index
 * of the range, so that freeing it needs no search. */
typedef struct pool_slice {
    void *page;
    uint64_t offset;
    uint32_t slot;
} pool_slice;

/* Rounds up to a power-of-two alignment. The callers check `value <= UINT64_MAX - (align - 1)`
 * first, so this never wraps. */
static inline uint64_t mem_align_up(uint64_t value, uint64_t align)
{
    return (value + (align - 1)) & ~(align - 1);
}

static inline uint64_t mem_align_down(uint64_t value, uint64_t align)
{
    return value & ~(align - 1);
}

#endif
