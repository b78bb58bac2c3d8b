/* Sliced pool (see sliced_pool.h for the design). */
#include "memory/sliced_pool.h"

#include "base/array.h"
#include "base/assert.h"
#include "base/status.h"

#include <stdlib.h>
#include <string.h>

/* ---- size classes ------------------------------------------------------------------------- */

/* Class of a size: the power of two below it, then which eighth of that octave. Sizes below 8
 * have one class per power of two. Classes are ordered by size, so every member of a class is
 * smaller than the lower bound of the next one. */
static inline uint32_t bin_of(uint64_t size)
{
    uint32_t fl = 63u - (uint32_t)__builtin_clzll(size);
    if (fl < SLICED_POOL_SL_BITS) return fl << SLICED_POOL_SL_BITS;
    uint32_t sl =
        (uint32_t)(size >> (fl - SLICED_POOL_SL_BITS)) & ((1u << SLICED_POOL_SL_BITS) - 1);
    return (fl << SLICED_POOL_SL_BITS) | sl;
}

static inline uint64_t bin_lower(uint32_t bin)
{
    uint32_t fl = bin >> SLICED_POOL_SL_BITS;
    uint64_t sl = bin & ((1u << SLICED_POOL_SL_BITS) - 1);
    if (fl < SLICED_POOL_SL_BITS) return 1ull << fl;
    return (1ull << fl) | (sl << (fl - SLICED_POOL_SL_BITS));
}

static void bin_insert(sliced_pool *p, uint32_t slot)
{
    sliced_slice *s = &p->slices[slot];
    uint32_t b = bin_of(s->size);
    s->bin_prev = SLICED_NIL;
    s->bin_next = p->bin_head[b];
    if (s->bin_next != SLICED_NIL) p->slices[s->bin_next].bin_prev = slot;
    p->bin_head[b] = slot;
    p->bin_bitmap[b >> 6] |= 1ull << (b & 63);
}

static void bin_remove(sliced_pool *p, uint32_t slot)
{
    sliced_slice *s = &p->slices[slot];
    if (s->bin_prev != SLICED_NIL) {
        p->slices[s->bin_prev].bin_next = s->bin_next;
    } else {
        uint32_t b = bin_of(s->size);
        p->bin_head[b] = s->bin_next;
        if (s->bin_next == SLICED_NIL) p->bin_bitmap[b >> 6] &= ~(1ull << (b & 63));
    }
    if (s->bin_next != SLICED_NIL) p->slices[s->bin_next].bin_prev = s->bin_prev;
}

/* The first non-empty class at or above `start`, or SLICED_NIL. */
static uint32_t bin_find_from(const sliced_pool *p, uint32_t start)
{
    if (start >= SLICED_POOL_BINS) return SLICED_NIL;
    uint32_t word = start >> 6;
    uint64_t bits = p->bin_bitmap[word] & (~0ull << (start & 63));
    for (;;) {
        if (bits) return (word << 6) + (uint32_t)__builtin_ctzll(bits);
        if (++word == SLICED_POOL_BINS / 64) return SLICED_NIL;
        bits = p->bin_bitmap[word];
    }
}

/* ---- slot arrays -------------------------------------------------------------------------- */

/* Grows a slot array so that `need` more slots can be taken without failing. Done before any
 * change, so that a host allocation failure leaves the pool as it was. Returns 0 on success. */
static int grow(void **array, uint32_t *cap, uint32_t count, uint32_t unused, uint32_t need,
                size_t elem)
{
    if ((uint64_t)unused + (*cap - count) >= need) return 0;
    /* SLICED_NIL is not a slot number. */
    return array_grow_ex(array, cap, (uint64_t)count + need, elem, 64, SLICED_NIL - 1, realloc);
}

static cubec_status reserve_slots(sliced_pool *p, uint32_t slices, uint32_t pages)
{
    if (grow((void **)&p->slices, &p->slice_cap, p->slice_count, p->slice_unused_count, slices,
             sizeof *p->slices) ||
        grow((void **)&p->pages, &p->page_cap, p->page_count, p->page_unused_count, pages,
             sizeof *p->pages))
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "host out of memory growing the slice table of the %llu-byte-page pool",
                           (unsigned long long)p->page_size);
    return NULL;
}

static uint32_t take_slice(sliced_pool *p)
{
    uint32_t slot = p->slice_unused;
    if (slot != SLICED_NIL) {
        p->slice_unused = p->slices[slot].next;
        p->slice_unused_count--;
    } else {
        slot = p->slice_count++;
    }
    return slot;
}

static void put_slice(sliced_pool *p, uint32_t slot)
{
    sliced_slice *s = &p->slices[slot];
    s->state = SLICED_SLOT_UNUSED;
    s->requested = 0;
    s->next = p->slice_unused;
    p->slice_unused = slot;
    p->slice_unused_count++;
}

static uint32_t take_page(sliced_pool *p)
{
    uint32_t slot = p->page_unused;
    if (slot != SLICED_NIL) {
        p->page_unused = p->pages[slot].first;
        p->page_unused_count--;
    } else {
        slot = p->page_count++;
    }
    return slot;
}

static void put_page(sliced_pool *p, uint32_t slot)
{
    sliced_page *pg = &p->pages[slot];
    pg->in_use = 0;
    pg->handle = NULL;
    pg->live = 0;
    pg->guards = 0;
    pg->first = p->page_unused;
    p->page_unused = slot;
    p->page_unused_count++;
}

/* ---- pool --------------------------------------------------------------------------------- */

void sliced_pool_init(sliced_pool *p, uint64_t page_size, uint64_t max_slice, uint64_t alignment)
{
    memset(p, 0, sizeof *p);
    p->page_size = page_size;
    p->max_slice = max_slice;
    p->alignment = alignment;
    p->fill_rule = 1;
    p->slice_unused = SLICED_NIL;
    p->page_unused = SLICED_NIL;
    for (uint32_t i = 0; i < SLICED_POOL_BINS; i++)
        p->bin_head[i] = SLICED_NIL;
}

void sliced_pool_destroy(sliced_pool *p, const page_source *source)
{
    for (uint32_t i = 0; i < p->page_count; i++)
        if (p->pages[i].in_use) source->free(source->user, p->pages[i].handle);
    free(p->slices);
    free(p->pages);
    uint32_t max_pages = p->max_pages;
    int fill_rule = p->fill_rule;
    sliced_pool_init(p, p->page_size, p->max_slice, p->alignment);
    p->max_pages = max_pages;
    p->fill_rule = fill_rule;
}

/* Makes free slice `slot` live with `size` bytes (padded to `eff`), splitting off the rest as a
 * new free slice. The caller made sure a slot is available for the split. */
static void carve(sliced_pool *p, uint32_t slot, uint64_t size, uint64_t eff, pool_slice *out)
{
    bin_remove(p, slot);
    if (p->slices[slot].size > eff) {
        uint32_t rest = take_slice(p);
        sliced_slice *s = &p->slices[slot];
        sliced_slice *r = &p->slices[rest];
        r->offset = s->offset + eff;
        r->size = s->size - eff;
        r->requested = 0;
        r->page = s->page;
        r->prev = slot;
        r->next = s->next;
        r->state = SLICED_SLOT_FREE;
        if (s->next != SLICED_NIL) p->slices[s->next].prev = rest;
        s->next = rest;
        s->size = eff;
        bin_insert(p, rest);
    }
    sliced_slice *s = &p->slices[slot];
    CUBEC_ASSERT(s->state == SLICED_SLOT_FREE && s->size >= eff && eff >= size);
    s->state = SLICED_SLOT_LIVE;
    s->requested = size;
    s->owner = NULL;
    sliced_page *pg = &p->pages[s->page];
    pg->live++;
    p->allocations++;
    p->bytes_in_use += size;
    p->bytes_padding += eff - size;
    out->page = pg->handle;
    out->offset = s->offset;
    out->slot = slot;
}

cubec_status sliced_pool_try_reserve(sliced_pool *p, uint64_t size, int *out_found, pool_slice *out)
{
    *out_found = 0;
    if (size == 0 || size > p->page_size) return NULL;
    uint64_t eff = mem_align_up(size, p->alignment);
    uint32_t b = bin_of(eff);
    /* Every member of a class above the request's own is large enough; the request's own class
     * qualifies as a whole only when the request is exactly its lower bound. */
    uint32_t found = bin_find_from(p, bin_lower(b) == eff ? b : b + 1);
    uint32_t slot = found != SLICED_NIL ? p->bin_head[found] : SLICED_NIL;
    if (slot == SLICED_NIL) {
        /* Last resort before a new page: a member of the request's class that happens to fit. */
        for (uint32_t i = p->bin_head[b]; i != SLICED_NIL; i = p->slices[i].bin_next) {
            if (p->slices[i].size >= eff) {
                slot = i;
                break;
            }
        }
        if (slot == SLICED_NIL) return NULL;
    }
    if (p->slices[slot].size > eff) RETURN_IF_ERROR(reserve_slots(p, 1, 0));
    carve(p, slot, size, eff, out);
    *out_found = 1;
    return NULL;
}

cubec_status sliced_pool_add_page(sliced_pool *p, const page_source *source, uint64_t size,
                                  pool_slice *out)
{
    if (size == 0 || size > p->page_size)
        return status_make(CUBEC_INTERNAL, "a %llu-byte request does not fit a %llu-byte page",
                           (unsigned long long)size, (unsigned long long)p->page_size);
    if (sliced_pool_full(p))
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "the pool of %llu-byte pages is at its cap of %u pages",
                           (unsigned long long)p->page_size, p->max_pages);
    RETURN_IF_ERROR(reserve_slots(p, 2, 1));
    void *handle = NULL;
    RETURN_IF_ERROR(source->alloc(source->user, p->page_size, source->flags, &handle));

    uint32_t ps = take_page(p);
    uint32_t slot = take_slice(p);
    sliced_page *pg = &p->pages[ps];
    pg->handle = handle;
    pg->first = slot;
    pg->live = 0;
    pg->guards = 0;
    pg->in_use = 1;
    sliced_slice *s = &p->slices[slot];
    s->offset = 0;
    s->size = p->page_size;
    s->requested = 0;
    s->page = ps;
    s->prev = SLICED_NIL;
    s->next = SLICED_NIL;
    s->state = SLICED_SLOT_FREE;
    bin_insert(p, slot);
    if (++p->pages_live > p->pages_peak) p->pages_peak = p->pages_live;
    carve(p, slot, size, mem_align_up(size, p->alignment), out);
    return NULL;
}

int sliced_pool_free(sliced_pool *p, uint32_t slot, const void *page, uint64_t offset,
                     uint64_t size)
{
    if (slot >= p->slice_count) return 0;
    sliced_slice *s = &p->slices[slot];
    if (s->state != SLICED_SLOT_LIVE || s->offset != offset || s->requested != size ||
        p->pages[s->page].handle != page)
        return 0;

    /* A live slice is counted in its page and in the pool's totals. */
    CUBEC_ASSERT(p->pages[s->page].live > 0 && p->allocations > 0 && p->bytes_in_use >= size &&
                 p->bytes_padding >= s->size - size);
    p->pages[s->page].live--;
    p->allocations--;
    p->bytes_in_use -= size;
    p->bytes_padding -= s->size - size;
    s->state = SLICED_SLOT_FREE;
    s->requested = 0;

    /* Merge with the free neighbours now, so that free room is always one slice per gap. */
    uint32_t n = s->next;
    if (n != SLICED_NIL && p->slices[n].state == SLICED_SLOT_FREE) {
        sliced_slice *ns = &p->slices[n];
        bin_remove(p, n);
        s->size += ns->size;
        s->next = ns->next;
        if (ns->next != SLICED_NIL) p->slices[ns->next].prev = slot;
        put_slice(p, n);
    }
    uint32_t pv = s->prev;
    if (pv != SLICED_NIL && p->slices[pv].state == SLICED_SLOT_FREE) {
        sliced_slice *ps = &p->slices[pv];
        bin_remove(p, pv);
        ps->size += s->size;
        ps->next = s->next;
        if (s->next != SLICED_NIL) p->slices[s->next].prev = pv;
        put_slice(p, slot);
        slot = pv;
    }
    bin_insert(p, slot);
    return 1;
}

uint32_t sliced_pool_release_empty(sliced_pool *p, const page_source *source)
{
    uint32_t released = 0;
    for (uint32_t i = 0; i < p->page_count; i++) {
        sliced_page *pg = &p->pages[i];
        /* A guard holds a live allocation, but the page must stay even if that ever lapses. */
        if (!pg->in_use || pg->live != 0 || pg->guards != 0) continue;
        uint32_t slot = pg->first;
        /* With no live slice the merges leave a single free slice covering the page. */
        CUBEC_ASSERT(p->slices[slot].size == p->page_size &&
                     p->slices[slot].state == SLICED_SLOT_FREE);
        if (p->slices[slot].size != p->page_size) continue;
        CUBEC_ASSERT(p->pages_live > 0);
        bin_remove(p, slot);
        put_slice(p, slot);
        source->free(source->user, pg->handle);
        put_page(p, i);
        p->pages_live--;
        released++;
    }
    return released;
}

uint32_t sliced_pool_page_of(const sliced_pool *p, uint32_t slot)
{
    if (slot >= p->slice_count || p->slices[slot].state != SLICED_SLOT_LIVE) return SLICED_NIL;
    return p->slices[slot].page;
}

uint32_t sliced_pool_guarded_pages(const sliced_pool *p)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->page_count; i++)
        n += p->pages[i].in_use && p->pages[i].guards > 0;
    return n;
}

void sliced_pool_report(const sliced_pool *p, cubec_pool_report *out)
{
    memset(out, 0, sizeof *out);
    strcpy(out->kind, "sliced");
    out->page_size = p->page_size;
    out->max_slice_size = p->max_slice;
    out->cap = (uint64_t)p->max_pages * p->page_size;
    out->pages = p->pages_live;
    out->pages_peak = p->pages_peak;
    out->allocations = p->allocations;
    out->bytes_in_use = p->bytes_in_use;
    out->bytes_padding = p->bytes_padding;
    out->bytes_reserved = (uint64_t)p->pages_live * p->page_size;
    out->guarded_pages = sliced_pool_guarded_pages(p);
}
