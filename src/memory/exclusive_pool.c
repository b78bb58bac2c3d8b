/* Exclusive pool (see exclusive_pool.h for the policy). */
#include "memory/exclusive_pool.h"

#include "base/array.h"
#include "base/assert.h"
#include "base/status.h"

#include <stdlib.h>
#include <string.h>

void exclusive_pool_init(exclusive_pool *p, uint64_t max_alloc, uint64_t alignment,
                         uint64_t dealloc_period)
{
    memset(p, 0, sizeof *p);
    p->max_alloc = max_alloc;
    p->alignment = alignment;
    p->dealloc_period = dealloc_period;
    p->unused = EXCLUSIVE_NIL;
}

void exclusive_pool_destroy(exclusive_pool *p, const page_source *source)
{
    for (uint32_t i = 0; i < p->page_count; i++)
        if (p->pages[i].state != EXCLUSIVE_SLOT_UNUSED)
            source->free(source->user, p->pages[i].handle);
    free(p->pages);
    free(p->free_list);
    exclusive_pool_init(p, p->max_alloc, p->alignment, p->dealloc_period);
}

/* Padded size of a request, without wrapping near UINT64_MAX. */
static uint64_t padded(const exclusive_pool *p, uint64_t size)
{
    return size <= UINT64_MAX - (p->alignment - 1) ? mem_align_up(size, p->alignment) : size;
}

static void unlist_free(exclusive_pool *p, uint32_t slot)
{
    uint32_t at = p->pages[slot].link;
    uint32_t last = p->free_list[--p->free_len];
    p->free_list[at] = last;
    p->pages[last].link = at;
}

static void mark_live(exclusive_pool *p, uint32_t slot, uint64_t size, pool_slice *out)
{
    exclusive_page *pg = &p->pages[slot];
    uint64_t eff = padded(p, size);
    pg->state = EXCLUSIVE_SLOT_LIVE;
    pg->requested = size;
    p->allocations++;
    p->bytes_in_use += size;
    p->bytes_padding += (eff < pg->size ? eff : pg->size) - size;
    out->page = pg->handle;
    out->offset = 0;
    out->slot = slot;
}

int exclusive_pool_try_reserve(exclusive_pool *p, uint64_t size, pool_slice *out)
{
    p->avg_size =
        p->avg_size * (1.0 - EXCLUSIVE_POOL_AVG_DECAY) + (double)size * EXCLUSIVE_POOL_AVG_DECAY;
    uint32_t best = EXCLUSIVE_NIL;
    for (uint32_t i = 0; i < p->free_len; i++) {
        const exclusive_page *pg = &p->pages[p->free_list[i]];
        if (pg->size >= size &&
            (best == EXCLUSIVE_NIL || pg->free_count < p->pages[best].free_count))
            best = p->free_list[i];
    }
    if (best == EXCLUSIVE_NIL) return 0;
    unlist_free(p, best);
    if (p->pages[best].free_count) p->pages[best].free_count--;
    mark_live(p, best, size, out);
    return 1;
}

uint64_t exclusive_pool_page_size(const exclusive_pool *p, uint64_t size)
{
    /* The double may exceed what a uint64_t holds only in theory; clamp before converting. */
    uint64_t avg = p->avg_size >= (double)p->max_alloc ? p->max_alloc : (uint64_t)p->avg_size;
    uint64_t page = avg > size ? avg : size;
    page = padded(p, page);
    if (page > p->max_alloc) page = p->max_alloc;
    return page < size ? size : page;
}

/* Grows a table of slot numbers; EXCLUSIVE_NIL is not a slot number. */
static int grow_u32(void **array, uint32_t *cap, uint64_t want, size_t elem)
{
    return array_grow_ex(array, cap, want, elem, 16, EXCLUSIVE_NIL - 1, realloc);
}

cubec_status exclusive_pool_add_page(exclusive_pool *p, const page_source *source, uint64_t size,
                                     uint64_t page_bytes, pool_slice *out)
{
    if (size == 0 || size > p->max_alloc || page_bytes < size)
        return status_make(CUBEC_INTERNAL,
                           "a %llu-byte request does not fit a %llu-byte exclusive page",
                           (unsigned long long)size, (unsigned long long)page_bytes);
    /* The free list gets room for every page now, so that freeing never has to allocate. */
    uint64_t slot_need = p->unused_count ? p->page_count : (uint64_t)p->page_count + 1;
    if (grow_u32((void **)&p->pages, &p->page_cap, slot_need, sizeof *p->pages) ||
        grow_u32((void **)&p->free_list, &p->free_cap, (uint64_t)p->pages_live + 1,
                 sizeof *p->free_list))
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "host out of memory growing the page table of the exclusive pool");
    void *handle = NULL;
    RETURN_IF_ERROR(source->alloc(source->user, page_bytes, source->flags, &handle));

    uint32_t slot = p->unused;
    if (slot != EXCLUSIVE_NIL) {
        p->unused = p->pages[slot].link;
        p->unused_count--;
    } else {
        slot = p->page_count++;
    }
    exclusive_page *pg = &p->pages[slot];
    pg->handle = handle;
    pg->size = page_bytes;
    pg->free_count = EXCLUSIVE_POOL_IDLE_CHECKS - 1;
    p->bytes_reserved += page_bytes;
    if (++p->pages_live > p->pages_peak) p->pages_peak = p->pages_live;
    mark_live(p, slot, size, out);
    return NULL;
}

int exclusive_pool_free(exclusive_pool *p, uint32_t slot, const void *page, uint64_t size)
{
    if (slot >= p->page_count) return 0;
    exclusive_page *pg = &p->pages[slot];
    if (pg->state != EXCLUSIVE_SLOT_LIVE || pg->handle != page || pg->requested != size) return 0;
    uint64_t eff = padded(p, size);
    /* A live page is counted in the pool's totals, and the free list has room for every page. */
    CUBEC_ASSERT(p->allocations > 0 && p->bytes_in_use >= size && p->free_len < p->free_cap);
    p->allocations--;
    p->bytes_in_use -= size;
    p->bytes_padding -= (eff < pg->size ? eff : pg->size) - size;
    pg->state = EXCLUSIVE_SLOT_FREE;
    pg->requested = 0;
    pg->link = p->free_len;
    p->free_list[p->free_len++] = slot;
    return 1;
}

uint32_t exclusive_pool_cleanup(exclusive_pool *p, const page_source *source, uint64_t reservations,
                                int explicit_cleanup)
{
    if (!explicit_cleanup &&
        reservations - p->last_check < p->dealloc_period / EXCLUSIVE_POOL_IDLE_CHECKS)
        return 0;
    p->last_check = reservations;
    uint32_t released = 0;
    for (uint32_t i = 0; i < p->free_len;) {
        uint32_t slot = p->free_list[i];
        exclusive_page *pg = &p->pages[slot];
        if (!explicit_cleanup && ++pg->free_count < EXCLUSIVE_POOL_IDLE_CHECKS) {
            i++;
            continue;
        }
        /* The last entry moves into position i, which is looked at next. */
        unlist_free(p, slot);
        CUBEC_ASSERT(pg->state == EXCLUSIVE_SLOT_FREE && p->pages_live > 0 &&
                     p->bytes_reserved >= pg->size);
        source->free(source->user, pg->handle);
        p->bytes_reserved -= pg->size;
        p->pages_live--;
        pg->state = EXCLUSIVE_SLOT_UNUSED;
        pg->handle = NULL;
        pg->size = 0;
        pg->link = p->unused;
        p->unused = slot;
        p->unused_count++;
        released++;
    }
    return released;
}

void exclusive_pool_report(const exclusive_pool *p, cubec_pool_report *out)
{
    memset(out, 0, sizeof *out);
    strcpy(out->kind, "exclusive");
    out->page_size = p->max_alloc;
    out->max_slice_size = p->max_alloc;
    out->dealloc_period = p->dealloc_period;
    out->pages = p->pages_live;
    out->pages_peak = p->pages_peak;
    out->allocations = p->allocations;
    out->bytes_in_use = p->bytes_in_use;
    out->bytes_padding = p->bytes_padding;
    out->bytes_reserved = p->bytes_reserved;
}
