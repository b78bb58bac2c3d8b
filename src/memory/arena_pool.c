/* Arena pool (see arena_pool.h for the policy). */
#include "memory/arena_pool.h"

#include "base/array.h"
#include "base/status.h"

#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024ull)

void arena_pool_init(arena_pool *a, uint64_t min_page, uint64_t max_page, uint64_t alignment)
{
    memset(a, 0, sizeof *a);
    a->min_page = min_page;
    a->max_page = max_page;
    a->alignment = alignment;
    a->current = ARENA_NIL;
}

static void drop_slot(arena_pool *a, uint32_t i, const page_source *source)
{
    a->pages_live -= a->slots[i]->pages_live;
    sliced_pool_destroy(a->slots[i], source);
    free(a->slots[i]);
    a->slots[i] = NULL;
    a->slots_used--;
}

void arena_pool_destroy(arena_pool *a, const page_source *source)
{
    for (uint32_t i = 0; i < ARENA_MAX_PAGE_SIZES; i++)
        if (a->slots[i]) drop_slot(a, i, source);
    uint64_t relocations = a->relocations, bytes = a->relocated_bytes;
    arena_pool_init(a, a->min_page, a->max_page, a->alignment);
    a->relocations = relocations;
    a->relocated_bytes = bytes;
}

cubec_status arena_pool_try_reserve(arena_pool *a, uint64_t size, int *out_found, pool_slice *out,
                                    uint32_t *out_part)
{
    *out_found = 0;
    if (a->current == ARENA_NIL) return NULL;
    *out_part = a->current;
    /* try_reserve finds nothing for a request larger than the page. */
    return sliced_pool_try_reserve(a->slots[a->current], size, out_found, out);
}

/* The page size a request grows the arena to: size + 1 MiB, rounded up to 1 MiB and to the
 * alignment, clamped to [min_page, max_page]. Never below the padded request. */
static uint64_t grown_page(const arena_pool *a, uint64_t size)
{
    uint64_t page = a->max_page;
    if (size <= a->max_page - (a->max_page < MIB ? a->max_page : MIB)) {
        page = ((size + MIB + MIB - 1) / MIB) * MIB;
        page = mem_align_up(page, a->alignment);
    }
    if (page < a->min_page) page = a->min_page;
    if (page > a->max_page) page = a->max_page;
    uint64_t eff = mem_align_up(size, a->alignment);
    return page < eff ? eff : page;
}

/* Returns every empty page of outdated slot `i`, and the slot itself once it holds none. */
static uint32_t drain_outdated(arena_pool *a, uint32_t i, const page_source *source)
{
    uint32_t released = sliced_pool_release_empty(a->slots[i], source);
    a->pages_live -= released;
    if (a->slots[i]->pages_live == 0) drop_slot(a, i, source);
    return released;
}

cubec_status arena_pool_add_page(arena_pool *a, const page_source *source, uint64_t size,
                                 pool_slice *out, uint32_t *out_part, uint64_t *out_page_bytes)
{
    sliced_pool *cur = a->current == ARENA_NIL ? NULL : a->slots[a->current];
    uint64_t eff = mem_align_up(size, a->alignment);
    if (cur && eff <= cur->page_size) {
        *out_page_bytes = cur->page_size;
        RETURN_IF_ERROR(sliced_pool_add_page(cur, source, size, out));
        *out_part = a->current;
        if (++a->pages_live > a->pages_peak) a->pages_peak = a->pages_live;
        return NULL;
    }

    uint64_t page = grown_page(a, size);
    *out_page_bytes = page;
    uint32_t slot = 0;
    while (slot < ARENA_MAX_PAGE_SIZES && a->slots[slot])
        slot++;
    if (slot == ARENA_MAX_PAGE_SIZES)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "the arena pool cannot grow to %llu-byte pages: all %u page sizes are "
                           "taken by outdated pages that still hold live buffers",
                           (unsigned long long)page, ARENA_MAX_PAGE_SIZES);
    sliced_pool *next = malloc(sizeof *next);
    if (!next) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory growing the arena pool");
    sliced_pool_init(next, page, page, a->alignment);
    next->fill_rule = 0;
    cubec_status err = sliced_pool_add_page(next, source, size, out);
    if (err) {
        /* A refused growth leaves the old page size current. */
        sliced_pool_destroy(next, source);
        free(next);
        return err;
    }
    a->slots[slot] = next;
    a->slots_used++;
    if (++a->pages_live > a->pages_peak) a->pages_peak = a->pages_live;
    uint32_t old = a->current;
    a->current = slot;
    *out_part = slot;
    if (old != ARENA_NIL) drain_outdated(a, old, source);
    return NULL;
}

int arena_pool_free(arena_pool *a, const page_source *source, uint32_t part, uint32_t slot,
                    const void *page, uint64_t offset, uint64_t size)
{
    if (part >= ARENA_MAX_PAGE_SIZES || !a->slots[part]) return 0;
    sliced_pool *p = a->slots[part];
    if (slot >= p->slice_count) return 0;
    uint32_t pg = p->slices[slot].page;
    if (!sliced_pool_free(p, slot, page, offset, size)) return 0;
    if (part != a->current && p->pages[pg].live == 0) drain_outdated(a, part, source);
    return 1;
}

uint32_t arena_pool_release_empty(arena_pool *a, const page_source *source)
{
    uint32_t released = 0;
    for (uint32_t i = 0; i < ARENA_MAX_PAGE_SIZES; i++) {
        if (!a->slots[i]) continue;
        if (i == a->current) {
            uint32_t n = sliced_pool_release_empty(a->slots[i], source);
            a->pages_live -= n;
            released += n;
        } else {
            released += drain_outdated(a, i, source);
        }
    }
    return released;
}

/* ---- relocation planning (spec 3.9) ------------------------------------------------------ */

static sliced_slice *live_slice(const arena_pool *a, uint32_t part, uint32_t slot)
{
    if (part >= ARENA_MAX_PAGE_SIZES || !a->slots[part]) return NULL;
    sliced_pool *p = a->slots[part];
    return sliced_pool_page_of(p, slot) == SLICED_NIL ? NULL : &p->slices[slot];
}

void arena_pool_set_owner(arena_pool *a, uint32_t part, uint32_t slot, void *owner)
{
    sliced_slice *s = live_slice(a, part, slot);
    if (s) s->owner = owner;
}

void arena_pool_guard(arena_pool *a, uint32_t part, uint32_t slot, int delta)
{
    sliced_slice *s = live_slice(a, part, slot);
    if (!s) return;
    sliced_page *pg = &a->slots[part]->pages[s->page];
    if (delta > 0)
        pg->guards++;
    else if (pg->guards > 0)
        pg->guards--;
}

static arena_shape shape_of(const arena_pool *a)
{
    arena_shape sh = {0};
    for (uint32_t i = 0; i < ARENA_MAX_PAGE_SIZES; i++) {
        const sliced_pool *p = a->slots[i];
        if (!p) continue;
        if (i == a->current) {
            sh.current_pages = p->pages_live;
            continue;
        }
        sh.outdated_pools++;
        sh.outdated_pages += p->pages_live;
        sh.guarded_outdated += sliced_pool_guarded_pages(p);
    }
    return sh;
}

int arena_pool_wants_relocation(const arena_pool *a, int may_add)
{
    if (a->current == ARENA_NIL || a->slots_used < 2) return 0; /* no outdated pool */
    if (!a->futile_valid || (may_add && !a->futile_may_add)) return 1;
    arena_shape sh = shape_of(a);
    return memcmp(&sh, &a->futile, sizeof sh) != 0;
}

/* A target for `size` bytes in the current pool: held room first, then (may_add) a new page.
 * Returns 1 with *out filled, 0 when there is none; a source refusal clears *may_add. */
static int find_target(arena_pool *a, const page_source *source, uint64_t size, int *may_add,
                       pool_slice *out, cubec_status *err)
{
    sliced_pool *cur = a->slots[a->current];
    int found = 0;
    *err = sliced_pool_try_reserve(cur, size, &found, out);
    if (*err || found) return found;
    if (!*may_add) return 0;
    cubec_status s = sliced_pool_add_page(cur, source, size, out);
    if (s) {
        /* The driver is out of pages: the rest must fit the room already held. */
        if (cubec_status_code(s) == CUBEC_OUT_OF_MEMORY) {
            cubec_status_free(s);
            *may_add = 0;
            return 0;
        }
        *err = s;
        return 0;
    }
    if (++a->pages_live > a->pages_peak) a->pages_peak = a->pages_live;
    return 1;
}

void arena_pool_unplan(arena_pool *a, const page_source *source, const arena_move *m)
{
    (void)source;
    sliced_pool *cur = a->slots[m->to_part];
    if (cur) sliced_pool_free(cur, m->to_slot, m->to_page, m->to_offset, m->size);
    arena_pool_set_owner(a, m->from_part, m->from_slot, m->owner);
}

/* Plans the moves of every live slice of page `pg` of outdated slot `part`, or none. */
static cubec_status plan_page(arena_pool *a, const page_source *source, uint32_t part, uint32_t pg,
                              int *may_add, arena_move **moves, uint32_t *count, uint32_t *cap)
{
    sliced_pool *p = a->slots[part];
    const sliced_page *page = &p->pages[pg];
    if (!page->in_use || page->live == 0 || page->guards) return NULL;
    for (uint32_t i = page->first; i != SLICED_NIL; i = p->slices[i].next)
        if (p->slices[i].state == SLICED_SLOT_LIVE && !p->slices[i].owner) return NULL;
    if (array_grow((void **)moves, cap, (uint64_t)*count + page->live, sizeof **moves))
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory planning a relocation");
    uint32_t first = *count;
    cubec_status err = NULL;
    for (uint32_t i = page->first; i != SLICED_NIL; i = p->slices[i].next) {
        const sliced_slice *s = &p->slices[i];
        if (s->state != SLICED_SLOT_LIVE) continue;
        pool_slice t;
        if (!find_target(a, source, s->requested, may_add, &t, &err)) {
            /* The page stays: every target reserved for it goes back. */
            while (*count > first)
                arena_pool_unplan(a, source, &(*moves)[--*count]);
            return err;
        }
        (*moves)[(*count)++] = (arena_move){.owner = s->owner,
                                            .size = s->requested,
                                            .from_part = part,
                                            .from_slot = i,
                                            .from_page = page->handle,
                                            .from_offset = s->offset,
                                            .to_part = a->current,
                                            .to_slot = t.slot,
                                            .to_page = t.page,
                                            .to_offset = t.offset};
    }
    for (uint32_t k = first; k < *count; k++) {
        arena_move *m = &(*moves)[k];
        a->slots[a->current]->slices[m->to_slot].owner = m->owner;
        p->slices[m->from_slot].owner = NULL;
    }
    return NULL;
}

cubec_status arena_pool_plan(arena_pool *a, const page_source *source, int may_add_pages,
                             arena_move **moves, uint32_t *count, uint32_t *cap)
{
    if (a->current == ARENA_NIL) return NULL;
    int may_add = may_add_pages;
    for (uint32_t i = 0; i < ARENA_MAX_PAGE_SIZES; i++) {
        if (i == a->current || !a->slots[i]) continue;
        for (uint32_t pg = 0; pg < a->slots[i]->page_count; pg++)
            RETURN_IF_ERROR(plan_page(a, source, i, pg, &may_add, moves, count, cap));
    }
    return NULL;
}

void arena_pool_note_relocation(arena_pool *a, uint32_t moved, uint64_t bytes, int may_add)
{
    a->relocations += moved;
    a->relocated_bytes += bytes;
    a->futile_valid = moved == 0;
    a->futile_may_add = may_add;
    if (!moved) a->futile = shape_of(a);
}

void arena_pool_report(const arena_pool *a, cubec_pool_report *out)
{
    memset(out, 0, sizeof *out);
    strcpy(out->kind, "arena");
    out->page_size = a->current == ARENA_NIL ? a->min_page : a->slots[a->current]->page_size;
    out->max_slice_size = a->max_page;
    out->pages = a->pages_live;
    out->pages_peak = a->pages_peak;
    for (uint32_t i = 0; i < ARENA_MAX_PAGE_SIZES; i++) {
        const sliced_pool *p = a->slots[i];
        if (!p) continue;
        out->allocations += p->allocations;
        out->bytes_in_use += p->bytes_in_use;
        out->bytes_padding += p->bytes_padding;
        out->bytes_reserved += (uint64_t)p->pages_live * p->page_size;
        if (i != a->current) out->outdated_pages += p->pages_live;
        out->guarded_pages += sliced_pool_guarded_pages(p);
    }
    out->relocations = a->relocations;
    out->relocated_bytes = a->relocated_bytes;
}
