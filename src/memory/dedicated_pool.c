/* Dedicated allocations (see dedicated_pool.h). */
#include "memory/dedicated_pool.h"

#include "base/array.h"

#include <stdlib.h>
#include <string.h>

void dedicated_pool_init(dedicated_pool *p, uint64_t alignment)
{
    memset(p, 0, sizeof *p);
    p->alignment = alignment;
    p->unused = DEDICATED_NIL;
}

void dedicated_pool_destroy(dedicated_pool *p, const page_source *source)
{
    for (uint32_t i = 0; i < p->page_count; i++)
        if (p->pages[i].page) source->free(source->user, p->pages[i].page);
    free(p->pages);
    dedicated_pool_init(p, p->alignment);
}

/* Files `page` (`bytes` of it, `size` asked for) in a slot of the pool. */
static cubec_status file_page(dedicated_pool *p, void *page, uint64_t bytes, uint64_t size,
                              pool_slice *out)
{
    uint32_t slot;
    if (p->unused != DEDICATED_NIL) {
        slot = p->unused;
        p->unused = p->pages[slot].next;
    } else {
        slot = p->page_count++;
    }
    p->pages[slot] = (dedicated_page){page, bytes, size, DEDICATED_NIL};
    p->bytes_in_use += size;
    p->bytes_padding += bytes - size;
    p->bytes_reserved += bytes;
    if (++p->pages_live > p->pages_peak) p->pages_peak = p->pages_live;
    out->page = page;
    out->offset = 0;
    out->slot = slot;
    return NULL;
}

/* Room for one more slot, before a page is made (so that filing it cannot fail). */
static cubec_status room(dedicated_pool *p)
{
    if (p->unused == DEDICATED_NIL &&
        array_grow((void **)&p->pages, &p->page_cap, (uint64_t)p->page_count + 1,
                   sizeof *p->pages) != 0)
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (dedicated allocations)");
    return NULL;
}

cubec_status dedicated_pool_alloc(dedicated_pool *p, const page_source *source, uint64_t size,
                                  pool_slice *out)
{
    uint64_t bytes =
        size <= UINT64_MAX - (p->alignment - 1) ? mem_align_up(size, p->alignment) : size;
    RETURN_IF_ERROR(room(p));
    void *page = NULL;
    RETURN_IF_ERROR(source->alloc(source->user, bytes, source->flags, &page));
    return file_page(p, page, bytes, size, out);
}

cubec_status dedicated_pool_adopt(dedicated_pool *p, void *page, uint64_t size, pool_slice *out)
{
    RETURN_IF_ERROR(room(p));
    return file_page(p, page, size, size, out);
}

int dedicated_pool_free(dedicated_pool *p, const page_source *source, uint32_t slot,
                        const void *page, uint64_t size)
{
    if (slot >= p->page_count) return 0;
    dedicated_page *d = &p->pages[slot];
    if (!d->page || d->page != page || d->requested != size) return 0;
    source->free(source->user, d->page);
    p->bytes_in_use -= size;
    p->bytes_padding -= d->size - size;
    p->bytes_reserved -= d->size;
    p->pages_live--;
    *d = (dedicated_page){NULL, 0, 0, p->unused};
    p->unused = slot;
    return 1;
}

void dedicated_pool_report(const dedicated_pool *p, cubec_pool_report *out)
{
    memset(out, 0, sizeof *out);
    strcpy(out->kind, "dedicated");
    for (uint32_t i = 0; i < p->page_count; i++)
        if (p->pages[i].size > out->page_size) out->page_size = p->pages[i].size;
    out->max_slice_size = out->page_size;
    out->pages = p->pages_live;
    out->pages_peak = p->pages_peak;
    out->allocations = p->pages_live;
    out->bytes_in_use = p->bytes_in_use;
    out->bytes_padding = p->bytes_padding;
    out->bytes_reserved = p->bytes_reserved;
}
