/* Dedicated allocations (the seed's Dedicated mode, spec 3.5): one page per buffer, outside every
 * pool. Nothing is reused: freeing a buffer returns its page to the source at once. The runtime
 * calls memory_free only once the GPU passed the buffer's last use (at the first progress check
 * after the release: the next flush, sync or cleanup), so that is the "next tick" of the spec.
 * For buffers a program wants out of every pool: huge one-off buffers, or memory whose return to
 * the driver must not wait for a cleanup. */
#ifndef CUBEC_MEMORY_DEDICATED_POOL_H
#define CUBEC_MEMORY_DEDICATED_POOL_H

#include "memory/page_source.h"

#include <stdint.h>

#define DEDICATED_NIL UINT32_MAX

typedef struct dedicated_page {
    void *page;         /* NULL: the slot is unused */
    uint64_t size;      /* bytes of the page */
    uint64_t requested; /* bytes asked for */
    uint32_t next;      /* unused: the next unused slot */
} dedicated_page;

typedef struct dedicated_pool {
    uint64_t alignment; /* power of two */
    dedicated_page *pages;
    uint32_t page_count, page_cap; /* slots ever used; room */
    uint32_t unused;               /* head of the unused slots, or DEDICATED_NIL */

    uint32_t pages_live, pages_peak;
    uint64_t bytes_in_use;
    uint64_t bytes_padding;
    uint64_t bytes_reserved;
} dedicated_pool;

void dedicated_pool_init(dedicated_pool *p, uint64_t alignment);
/* Frees every page through the source and the pool's array. */
void dedicated_pool_destroy(dedicated_pool *p, const page_source *source);
/* A page of `size` rounded up to the alignment. On error nothing changed. */
MUST_USE cubec_status dedicated_pool_alloc(dedicated_pool *p, const page_source *source,
                                           uint64_t size, pool_slice *out);
/* Files a page made elsewhere (memory imported from another device), of `size` bytes: freed
 * through the source like the others. On error nothing changed and the page is the caller's. */
MUST_USE cubec_status dedicated_pool_adopt(dedicated_pool *p, void *page, uint64_t size,
                                           pool_slice *out);
/* Returns the page to the source. 0, changing nothing, for a stale or double free. */
int dedicated_pool_free(dedicated_pool *p, const page_source *source, uint32_t slot,
                        const void *page, uint64_t size);
/* kind "dedicated"; page_size and max_slice_size the largest page held. */
void dedicated_pool_report(const dedicated_pool *p, cubec_pool_report *out);

#endif
