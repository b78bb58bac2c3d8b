/* Persistent pool (see persistent_pool.h). */
#include "memory/persistent_pool.h"

#include "base/array.h"

#include <stdlib.h>
#include <string.h>

void persistent_pool_init(persistent_pool *p, uint64_t alignment)
{
    memset(p, 0, sizeof *p);
    p->alignment = alignment;
    p->unused = PERSISTENT_NIL;
}

void persistent_pool_destroy(persistent_pool *p, const page_source *source)
{
    for (uint32_t i = 0; i < p->slice_count; i++)
        if (p->slices[i].page) source->free(source->user, p->slices[i].page);
    free(p->slices);
    free(p->buckets);
    persistent_pool_init(p, p->alignment);
}

static uint64_t effective(const persistent_pool *p, uint64_t size)
{
    return size <= UINT64_MAX - (p->alignment - 1) ? mem_align_up(size, p->alignment) : size;
}

/* The index of the first bucket whose size is >= `size` (bucket_count when none). */
static uint32_t lower_bound(const persistent_pool *p, uint64_t size)
{
    uint32_t lo = 0, hi = p->bucket_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->buckets[mid].size < size)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static persistent_bucket *find_bucket(const persistent_pool *p, uint64_t eff)
{
    uint32_t i = lower_bound(p, eff);
    return i < p->bucket_count && p->buckets[i].size == eff ? &p->buckets[i] : NULL;
}

int persistent_pool_has_size(const persistent_pool *p, uint64_t size)
{
    return find_bucket(p, effective(p, size)) != NULL;
}

static void take(persistent_pool *p, uint32_t slot, uint64_t size, pool_slice *out)
{
    persistent_slice *s = &p->slices[slot];
    s->requested = size;
    s->next = PERSISTENT_NIL;
    p->allocations++;
    p->bytes_in_use += size;
    p->bytes_padding += s->size - size;
    out->page = s->page;
    out->offset = 0;
    out->slot = slot;
}

int persistent_pool_try_reserve(persistent_pool *p, uint64_t size, pool_slice *out)
{
    persistent_bucket *b = find_bucket(p, effective(p, size));
    if (!b || b->free_head == PERSISTENT_NIL) return 0;
    uint32_t slot = b->free_head;
    b->free_head = p->slices[slot].next;
    take(p, slot, size, out);
    return 1;
}

cubec_status persistent_pool_add_page(persistent_pool *p, const page_source *source, uint64_t size,
                                      pool_slice *out)
{
    uint64_t eff = effective(p, size);
    /* Room first, so that nothing fails once the page is held. */
    if (p->unused == PERSISTENT_NIL &&
        array_grow((void **)&p->slices, &p->slice_cap, (uint64_t)p->slice_count + 1,
                   sizeof *p->slices) != 0)
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (persistent pool)");
    uint32_t at = lower_bound(p, eff);
    int new_bucket = at == p->bucket_count || p->buckets[at].size != eff;
    if (new_bucket && array_grow((void **)&p->buckets, &p->bucket_cap,
                                 (uint64_t)p->bucket_count + 1, sizeof *p->buckets) != 0)
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (persistent pool)");
    void *page = NULL;
    RETURN_IF_ERROR(source->alloc(source->user, eff, source->flags, &page));

    uint32_t slot;
    if (p->unused != PERSISTENT_NIL) {
        slot = p->unused;
        p->unused = p->slices[slot].next;
    } else {
        slot = p->slice_count++;
    }
    if (new_bucket) {
        memmove(&p->buckets[at + 1], &p->buckets[at], (p->bucket_count - at) * sizeof *p->buckets);
        p->buckets[at] = (persistent_bucket){eff, PERSISTENT_NIL, 0};
        p->bucket_count++;
    }
    p->buckets[at].slices++;
    p->slices[slot] = (persistent_slice){page, eff, 0, PERSISTENT_NIL};
    p->bytes_reserved += eff;
    if (++p->pages_live > p->pages_peak) p->pages_peak = p->pages_live;
    take(p, slot, size, out);
    return NULL;
}

int persistent_pool_free(persistent_pool *p, uint32_t slot, const void *page, uint64_t size)
{
    if (slot >= p->slice_count) return 0;
    persistent_slice *s = &p->slices[slot];
    if (!s->page || s->page != page || s->requested != size || size == 0) return 0;
    persistent_bucket *b = find_bucket(p, s->size);
    if (!b) return 0;
    s->requested = 0;
    s->next = b->free_head;
    b->free_head = slot;
    p->allocations--;
    p->bytes_in_use -= size;
    p->bytes_padding -= s->size - size;
    return 1;
}

uint32_t persistent_pool_release_free(persistent_pool *p, const page_source *source)
{
    uint32_t released = 0, kept = 0;
    for (uint32_t i = 0; i < p->bucket_count; i++) {
        persistent_bucket *b = &p->buckets[i];
        while (b->free_head != PERSISTENT_NIL) {
            uint32_t slot = b->free_head;
            persistent_slice *s = &p->slices[slot];
            b->free_head = s->next;
            source->free(source->user, s->page);
            p->bytes_reserved -= s->size;
            p->pages_live--;
            b->slices--;
            released++;
            *s = (persistent_slice){NULL, 0, 0, p->unused};
            p->unused = slot;
        }
        if (b->slices) p->buckets[kept++] = *b;
    }
    p->bucket_count = kept;
    return released;
}

void persistent_pool_report(const persistent_pool *p, cubec_pool_report *out)
{
    memset(out, 0, sizeof *out);
    strcpy(out->kind, "persistent");
    if (p->bucket_count)
        out->page_size = out->max_slice_size = p->buckets[p->bucket_count - 1].size;
    out->pages = p->pages_live;
    out->pages_peak = p->pages_peak;
    out->allocations = p->allocations;
    out->bytes_in_use = p->bytes_in_use;
    out->bytes_padding = p->bytes_padding;
    out->bytes_reserved = p->bytes_reserved;
}
