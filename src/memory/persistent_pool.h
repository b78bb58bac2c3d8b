/* Persistent pool (spec 3.3): exact-fit slices for weights and other long-lived buffers.
 *
 * Every slice is its own page of exactly the request's effective size (the size rounded up to
 * the alignment), so it wastes nothing but the alignment. Slices are bucketed by effective size,
 * and a freed slice is reused only by a request of the same effective size: a training loop that
 * frees and reallocates its weights (or, under `size-match`, recurring activation shapes) finds
 * its slices again. The periodic cleanup leaves the pool alone; an explicit one (and relief from
 * memory pressure) returns every free slice and drops the buckets left empty. */
#ifndef CUBEC_MEMORY_PERSISTENT_POOL_H
#define CUBEC_MEMORY_PERSISTENT_POOL_H

#include "memory/page_source.h"

#include <stdint.h>

#define PERSISTENT_NIL UINT32_MAX

typedef struct persistent_slice {
    void *page;         /* NULL: the slot is unused */
    uint64_t size;      /* effective size: the page's bytes */
    uint64_t requested; /* bytes asked for while live; 0 while free */
    uint32_t next;      /* free: the next free slice of its bucket; unused: the next unused slot */
} persistent_slice;

typedef struct persistent_bucket {
    uint64_t size;      /* effective size */
    uint32_t free_head; /* a free slice of this size, or PERSISTENT_NIL */
    uint32_t slices;    /* slices of this size held, live or free */
} persistent_bucket;

typedef struct persistent_pool {
    uint64_t alignment; /* power of two */
    persistent_slice *slices;
    uint32_t slice_count, slice_cap; /* slots ever used; room */
    uint32_t unused;                 /* head of the unused slots, or PERSISTENT_NIL */
    persistent_bucket *buckets;      /* sorted by size */
    uint32_t bucket_count, bucket_cap;

    uint32_t pages_live, pages_peak;
    uint64_t allocations;
    uint64_t bytes_in_use;
    uint64_t bytes_padding;
    uint64_t bytes_reserved;
} persistent_pool;

void persistent_pool_init(persistent_pool *p, uint64_t alignment);
/* Frees every page through the source, live or not, and the pool's arrays. */
void persistent_pool_destroy(persistent_pool *p, const page_source *source);
/* 1 when the pool holds a slice (live or free) of the effective size of `size` (size-match). */
int persistent_pool_has_size(const persistent_pool *p, uint64_t size);
/* Reuses a free slice of the same effective size; 0 when there is none. */
int persistent_pool_try_reserve(persistent_pool *p, uint64_t size, pool_slice *out);
/* A new page of the effective size of `size`. On error nothing changed. */
MUST_USE cubec_status persistent_pool_add_page(persistent_pool *p, const page_source *source,
                                               uint64_t size, pool_slice *out);
/* The slice becomes free (kept for reuse). 0, changing nothing, for a stale or double free. */
int persistent_pool_free(persistent_pool *p, uint32_t slot, const void *page, uint64_t size);
/* Returns every free slice to the source and drops empty buckets; returns how many. */
uint32_t persistent_pool_release_free(persistent_pool *p, const page_source *source);
/* kind "persistent"; page_size and max_slice_size the largest slice held. */
void persistent_pool_report(const persistent_pool *p, cubec_pool_report *out);

#endif
