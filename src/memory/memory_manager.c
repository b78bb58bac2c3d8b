/* The memory manager (see memory_manager.h for the layout and routing rules). */
#include "memory/memory_manager.h"

#include "base/array.h"
#include "base/log.h"
#include "base/status.h"
#include "memory/arena_pool.h"
#include "memory/exclusive_pool.h"
#include "memory/sliced_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(MEMORY_MAX_POOLS <= UINT16_MAX && ARENA_MAX_PAGE_SIZES <= UINT16_MAX,
               "mem_alloc names pools and arena slots in 16 bits");

typedef enum pool_kind { POOL_SLICED, POOL_EXCLUSIVE, POOL_ARENA } pool_kind;

typedef struct pool {
    pool_kind kind;
    int spill_logged; /* the warning that this capped pool spilled was logged */
    union {
        sliced_pool sliced;
        exclusive_pool exclusive;
        arena_pool arena;
    } u;
} pool;

struct memory_manager {
    memory_config config;
    page_source source;
    uint64_t reservations; /* memory_alloc calls: the clock of the periodic cleanup */
    uint32_t pool_count;
    uint32_t exclusive_count; /* indexes of the exclusive pools, for the periodic check */
    uint8_t exclusive[MEMORY_MAX_POOLS];
    uint64_t next_check; /* the reservation count at which an exclusive pool checks next */
    memory_modes modes;  /* windows, persistent pool, dedicated allocations */
    uint32_t arenas;     /* arena pools: without one, relocation checks cost one test */
    pool pools[MEMORY_MAX_POOLS];
};

cubec_status memory_manager_create(const memory_config *config, page_source source,
                                   memory_manager **out)
{
    if (out) *out = NULL;
    if (!config || !out) return INVALID_ARG("memory_manager_create: config and out are required");
    if (!source.alloc || !source.free)
        return INVALID_ARG("memory_manager_create: the page source needs alloc and free");
    if (config->alignment == 0 || (config->alignment & (config->alignment - 1)) != 0)
        return INVALID_ARG("memory_manager_create: alignment %llu is not a power of two",
                           (unsigned long long)config->alignment);
    if (config->max_page_size == 0 || config->max_alloc_size == 0)
        return INVALID_ARG("memory_manager_create: max_page_size %llu and max_alloc_size %llu "
                           "must be non-zero",
                           (unsigned long long)config->max_page_size,
                           (unsigned long long)config->max_alloc_size);
    pool_limits limits = {config->max_page_size, config->max_alloc_size,
                          config->alignment < 4 ? 4 : config->alignment};
    pool_list list;
    RETURN_IF_ERROR(
        status_annotate(pool_list_build(config->preset, &config->custom, &limits, &list),
                        "memory preset %s", memory_preset_name(config->preset)));

    memory_manager *m = calloc(1, sizeof *m);
    if (!m) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory creating memory pools");
    m->config = *config;
    m->config.alignment = limits.alignment;
    m->source = source;
    for (uint32_t i = 0; i < list.count; i++) {
        const pool_spec *ps = &list.pools[i];
        pool *p = &m->pools[i];
        switch (ps->kind) {
        case POOL_SPEC_SLICED:
            p->kind = POOL_SLICED;
            sliced_pool_init(&p->u.sliced, ps->page, ps->max, limits.alignment);
            p->u.sliced.max_pages = (uint32_t)(ps->cap / ps->page);
            p->u.sliced.fill_rule = ps->fill_rule;
            break;
        case POOL_SPEC_EXCLUSIVE:
            p->kind = POOL_EXCLUSIVE;
            exclusive_pool_init(&p->u.exclusive, ps->max, limits.alignment, ps->dealloc_period);
            m->exclusive[m->exclusive_count++] = (uint8_t)i;
            break;
        case POOL_SPEC_ARENA:
            p->kind = POOL_ARENA;
            arena_pool_init(&p->u.arena, ps->page, ps->max, limits.alignment);
            m->arenas++;
            break;
        }
    }
    m->pool_count = list.count;
    memory_modes_init(&m->modes, config->persistent_memory, limits.alignment);
    *out = m;
    return NULL;
}

void memory_manager_destroy(memory_manager *m)
{
    if (!m) return;
    for (uint32_t i = 0; i < m->pool_count; i++) {
        pool *p = &m->pools[i];
        if (p->kind == POOL_SLICED)
            sliced_pool_destroy(&p->u.sliced, &m->source);
        else if (p->kind == POOL_EXCLUSIVE)
            exclusive_pool_destroy(&p->u.exclusive, &m->source);
        else
            arena_pool_destroy(&p->u.arena, &m->source);
    }
    memory_modes_destroy(&m->modes, &m->source);
    free(m);
}

static int pool_accepts(const pool *p, uint64_t size)
{
    switch (p->kind) {
    case POOL_SLICED: return sliced_pool_accepts(&p->u.sliced, size);
    case POOL_EXCLUSIVE: return exclusive_pool_accepts(&p->u.exclusive, size);
    case POOL_ARENA: return arena_pool_accepts(&p->u.arena, size);
    }
    return 0;
}

static const char *kind_name(pool_kind kind)
{
    return kind == POOL_SLICED ? "sliced" : kind == POOL_EXCLUSIVE ? "exclusive" : "arena";
}

/* Returns the number of pages given back. */
static uint32_t cleanup(memory_manager *m, int explicit_cleanup)
{
    uint32_t released = explicit_cleanup ? memory_modes_release(&m->modes, &m->source) : 0;
    for (uint32_t i = 0; i < m->pool_count; i++) {
        pool *p = &m->pools[i];
        if (p->kind == POOL_EXCLUSIVE)
            released += exclusive_pool_cleanup(&p->u.exclusive, &m->source, m->reservations,
                                               explicit_cleanup);
        else if (!explicit_cleanup) /* sliced pools keep their pages; arenas drain on free */
            continue;
        else if (p->kind == POOL_SLICED)
            released += sliced_pool_release_empty(&p->u.sliced, &m->source);
        else
            released += arena_pool_release_empty(&p->u.arena, &m->source);
    }
    return released;
}

/* The page source for one call: the manager's own (flags 0), or, for a call whose pages need no
 * memory yet, a copy in *lazy carrying MEMORY_LAZY_PAGE, so that the flag never outlives the call
 * and the common path copies nothing. */
static const page_source *call_source(const memory_manager *m, uint32_t flags, page_source *lazy)
{
    const uint32_t page_flags = flags & (MEMORY_LAZY_PAGE | MEMORY_EXPORTABLE_PAGE);
    if (!page_flags) return &m->source;
    *lazy = m->source;
    lazy->flags = page_flags;
    return lazy;
}

/* Adds a page to pool `index`; `minimal` asks an exclusive page for just the padded size. The
 * page size asked for is left in *out_page_bytes, an arena's slot in *out_part. */
static cubec_status add_page(memory_manager *m, uint32_t index, uint64_t size, int minimal,
                             uint32_t flags, pool_slice *out, uint32_t *out_part,
                             uint64_t *out_page_bytes)
{
    pool *p = &m->pools[index];
    page_source lazy;
    const page_source *source = call_source(m, flags, &lazy);
    *out_part = 0;
    if (p->kind == POOL_SLICED) {
        *out_page_bytes = p->u.sliced.page_size;
        return sliced_pool_add_page(&p->u.sliced, source, size, out);
    }
    if (p->kind == POOL_ARENA)
        return arena_pool_add_page(&p->u.arena, source, size, out, out_part, out_page_bytes);
    exclusive_pool *e = &p->u.exclusive;
    uint64_t bytes = exclusive_pool_page_size(e, size);
    if (minimal) {
        uint64_t eff =
            size <= UINT64_MAX - (e->alignment - 1) ? mem_align_up(size, e->alignment) : size;
        bytes = eff <= e->max_alloc ? eff : size;
    }
    *out_page_bytes = bytes;
    return exclusive_pool_add_page(e, source, size, bytes, out);
}

static void totals(const memory_manager *m, uint64_t *reserved, uint64_t *in_use, uint64_t *count)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    memory_report_fill(m, &r);
    *reserved = r.bytes_reserved;
    *in_use = r.bytes_in_use;
    *count = r.allocations;
}

/* Builds the out-of-memory error once every attempt failed; takes ownership of `cause`. */
static cubec_status oom_error(const memory_manager *m, uint64_t size, uint32_t index,
                              uint64_t page_bytes, uint32_t released, int tried_exclusive,
                              uint64_t exclusive_bytes, cubec_status cause)
{
    uint64_t reserved, in_use, count;
    totals(m, &reserved, &in_use, &count);
    char also[96] = "";
    if (tried_exclusive)
        snprintf(also, sizeof also, ", nor a %llu-byte exclusive page",
                 (unsigned long long)exclusive_bytes);
    cubec_status s = status_make(
        CUBEC_OUT_OF_MEMORY,
        "out of device memory: requested %llu bytes; the driver refused a %llu-byte page for "
        "%s pool %u even after %u empty pages were returned%s; %llu bytes reserved, %llu bytes in "
        "use in %llu allocations in these pools: %s",
        (unsigned long long)size, (unsigned long long)page_bytes, kind_name(m->pools[index].kind),
        index, released, also, (unsigned long long)reserved, (unsigned long long)in_use,
        (unsigned long long)count, cubec_status_message(cause));
    cubec_status_free(cause);
    return s;
}

/* No pool may add a page for the request: none accepts it, or every accepting one is a capped
 * pool at its cap (`spilled`: the first of those, or UINT32_MAX). */
static cubec_status refusal(const memory_manager *m, uint64_t size, uint32_t spilled)
{
    if (spilled == UINT32_MAX)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "requested %llu bytes: no pool of the %s memory layout takes a buffer "
                           "of that size (docs/memory.md)",
                           (unsigned long long)size, memory_preset_name(m->config.preset));
    const sliced_pool *p = &m->pools[spilled].u.sliced;
    return status_make(CUBEC_OUT_OF_MEMORY,
                       "requested %llu bytes: sliced pool %u (pages of %llu bytes) is at its cap "
                       "of %llu bytes with %llu bytes in use, and no later pool of the %s memory "
                       "layout takes a buffer of that size",
                       (unsigned long long)size, spilled, (unsigned long long)p->page_size,
                       (unsigned long long)p->max_pages * p->page_size,
                       (unsigned long long)p->bytes_in_use, memory_preset_name(m->config.preset));
}

static void fill_out(mem_alloc *out, const pool_slice *slice, uint64_t size, uint32_t pool_index,
                     uint32_t part)
{
    out->page = slice->page;
    out->offset = slice->offset;
    out->size = size;
    out->pool = (uint16_t)pool_index; /* < MEMORY_MAX_POOLS */
    out->slot = slice->slot;
    out->part = (uint16_t)part; /* < ARENA_MAX_PAGE_SIZES */
}

cubec_status memory_alloc(memory_manager *m, uint64_t size, mem_alloc *out)
{
    return memory_alloc_flags(m, size, 0, out);
}

/* Runs the periodic check of each exclusive pool that is due, and notes when the next is. */
static void periodic_checks(memory_manager *m)
{
    m->next_check = UINT64_MAX;
    for (uint32_t k = 0; k < m->exclusive_count; k++) {
        exclusive_pool *ex = &m->pools[m->exclusive[k]].u.exclusive;
        uint64_t every = ex->dealloc_period / EXCLUSIVE_POOL_IDLE_CHECKS;
        if (m->reservations - ex->last_check >= every)
            exclusive_pool_cleanup(ex, &m->source, m->reservations, 0);
        uint64_t due = ex->last_check + every;
        if (due < m->next_check) m->next_check = due;
    }
}

/* The first accepting pool from `from` that may add a page; logs (once per pool) each capped
 * pool that is full and spills. Sets *spilled to the first of those. UINT32_MAX: none. */
static uint32_t page_target(memory_manager *m, uint32_t from, uint64_t size, uint32_t *spilled)
{
    *spilled = UINT32_MAX;
    for (uint32_t i = from; i < m->pool_count; i++) {
        pool *p = &m->pools[i];
        if (!pool_accepts(p, size)) continue;
        if (p->kind != POOL_SLICED || !sliced_pool_full(&p->u.sliced)) return i;
        if (*spilled == UINT32_MAX) *spilled = i;
        if (!p->spill_logged) {
            p->spill_logged = 1;
            LOG(LOG_WARN, LOG_SYS_MEMORY,
                "sliced pool %u (pages of %llu bytes) reached its cap of %u pages: requests it "
                "takes go to the next pool that takes them (logged once per pool)",
                i, (unsigned long long)p->u.sliced.page_size, p->u.sliced.max_pages);
        }
    }
    return UINT32_MAX;
}

/* An allocation a window (or [memory] persistent_memory) routes out of the layout's pools: the
 * same out-of-memory path as a pool's page (return every empty page, try once more). */
/* Kept out of line: the plain path of memory_alloc_flags stays as small as it was. */
__attribute__((noinline)) static cubec_status
mode_alloc(memory_manager *m, uint32_t route, uint64_t size, uint32_t flags, mem_alloc *out)
{
    pool_slice slice;
    int found = 0, new_page = !(flags & MEMORY_NO_NEW_PAGE);
    page_source lazy;
    const page_source *source = call_source(m, flags, &lazy);
    const char *where = memory_modes_route_name(route);
    cubec_status s = memory_modes_alloc(&m->modes, source, route, size, new_page, &found, &slice);
    uint32_t released = 0;
    if (s && cubec_status_code(s) == CUBEC_OUT_OF_MEMORY) {
        cubec_status_free(s);
        released = m->source.reclaim ? m->source.reclaim(m->source.user) : 0;
        released += cleanup(m, 1);
        s = memory_modes_alloc(&m->modes, source, route, size, new_page, &found, &slice);
        if (s && cubec_status_code(s) == CUBEC_OUT_OF_MEMORY) {
            uint64_t reserved, in_use, count;
            totals(m, &reserved, &in_use, &count);
            cubec_status e = status_make(
                CUBEC_OUT_OF_MEMORY,
                "out of device memory: requested %llu bytes; the driver refused a page for the %s "
                "even after %u empty pages were returned; %llu bytes reserved, %llu bytes in use "
                "in %llu allocations in these pools: %s",
                (unsigned long long)size, where, released, (unsigned long long)reserved,
                (unsigned long long)in_use, (unsigned long long)count, cubec_status_message(s));
            cubec_status_free(s);
            return e;
        }
    }
    if (s)
        return status_annotate(s, "while allocating a page for a %llu-byte buffer in the %s",
                               (unsigned long long)size, where);
    if (!found)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "no room for %llu bytes in the pages already allocated (the %s), and "
                           "no new page may be added",
                           (unsigned long long)size, where);
    fill_out(out, &slice, size, route, 0);
    return NULL;
}

cubec_status memory_alloc_flags(memory_manager *m, uint64_t size, uint32_t flags, mem_alloc *out)
{
    if (out) memset(out, 0, sizeof *out);
    if (!m || !out) return INVALID_ARG("memory_alloc: manager and out are required");
    if (size == 0) return INVALID_ARG("memory_alloc: size 0 holds no memory");
    if (size > m->config.max_alloc_size)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "requested %llu bytes, larger than the device's largest allocation %llu",
                           (unsigned long long)size, (unsigned long long)m->config.max_alloc_size);

    if (++m->reservations >= m->next_check) periodic_checks(m);
    /* An exportable page holds one buffer: the whole allocation is what an importer sees. */
    if (flags & MEMORY_EXPORTABLE_PAGE)
        return mode_alloc(m, MEMORY_POOL_EXTERNAL, size, flags, out);
    if (!memory_modes_idle(&m->modes)) {
        uint32_t route = memory_modes_route(&m->modes, size);
        if (route) return mode_alloc(m, route, size, flags, out);
    }

    pool_slice slice;
    uint32_t part = 0;
    uint32_t first = UINT32_MAX;
    for (uint32_t i = 0; i < m->pool_count; i++) {
        pool *p = &m->pools[i];
        if (!pool_accepts(p, size)) continue;
        if (first == UINT32_MAX) first = i;
        int found = 0;
        if (p->kind == POOL_SLICED)
            RETURN_IF_ERROR(sliced_pool_try_reserve(&p->u.sliced, size, &found, &slice));
        else if (p->kind == POOL_ARENA)
            RETURN_IF_ERROR(arena_pool_try_reserve(&p->u.arena, size, &found, &slice, &part));
        else if (i == first)
            found = exclusive_pool_try_reserve(&p->u.exclusive, size, &slice);
        if (found) {
            fill_out(out, &slice, size, i, p->kind == POOL_ARENA ? part : 0);
            return NULL;
        }
    }
    if (flags & MEMORY_NO_NEW_PAGE)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "no room for %llu bytes in the pages already allocated, and no new "
                           "page may be added",
                           (unsigned long long)size);
    uint32_t spilled;
    uint32_t target = first == UINT32_MAX ? UINT32_MAX : page_target(m, first, size, &spilled);
    if (target == UINT32_MAX) return refusal(m, size, first == UINT32_MAX ? UINT32_MAX : spilled);

    uint64_t page_bytes = 0;
    cubec_status s = add_page(m, target, size, 0, flags, &slice, &part, &page_bytes);
    if (!s) {
        fill_out(out, &slice, size, target, part);
        return NULL;
    }
    if (cubec_status_code(s) != CUBEC_OUT_OF_MEMORY)
        return status_annotate(s, "while allocating a %llu-byte page for a %llu-byte buffer",
                               (unsigned long long)page_bytes, (unsigned long long)size);

    /* The driver is out of memory: give back every empty page, here and wherever the source's
     * owner has some (the heap is shared), and try once more. The owner goes first: what it
     * frees into this manager empties pages that the cleanup here then returns. */
    cubec_status_free(s);
    uint32_t released = m->source.reclaim ? m->source.reclaim(m->source.user) : 0;
    released += cleanup(m, 1);
    s = add_page(m, target, size, 1, flags, &slice, &part, &page_bytes);
    if (!s) {
        fill_out(out, &slice, size, target, part);
        return NULL;
    }
    if (cubec_status_code(s) != CUBEC_OUT_OF_MEMORY)
        return status_annotate(s, "while allocating a %llu-byte page for a %llu-byte buffer",
                               (unsigned long long)page_bytes, (unsigned long long)size);

    /* A sliced page may be much larger than the request: an exact-size page may still fit. */
    uint32_t last = m->pool_count - 1;
    if (target != last && m->pools[last].kind == POOL_EXCLUSIVE &&
        exclusive_pool_accepts(&m->pools[last].u.exclusive, size)) {
        uint64_t ex_bytes = 0;
        cubec_status s2 = add_page(m, last, size, 1, flags, &slice, &part, &ex_bytes);
        if (!s2) {
            cubec_status_free(s);
            fill_out(out, &slice, size, last, 0);
            return NULL;
        }
        if (cubec_status_code(s2) != CUBEC_OUT_OF_MEMORY) {
            cubec_status_free(s);
            return status_annotate(s2, "while allocating a %llu-byte page for a %llu-byte buffer",
                                   (unsigned long long)ex_bytes, (unsigned long long)size);
        }
        cubec_status_free(s2);
        return oom_error(m, size, target, page_bytes, released, 1, ex_bytes, s);
    }
    return oom_error(m, size, target, page_bytes, released, 0, 0, s);
}

void memory_free(memory_manager *m, const mem_alloc *a)
{
    if (m && a && a->pool >= MEMORY_POOL_EXTERNAL) {
        memory_modes_free(&m->modes, &m->source, a->pool, a->slot, a->page, a->size);
        return;
    }
    if (!m || !a || a->pool >= m->pool_count) return;
    pool *p = &m->pools[a->pool];
    if (p->kind == POOL_SLICED)
        sliced_pool_free(&p->u.sliced, a->slot, a->page, a->offset, a->size);
    else if (p->kind == POOL_ARENA)
        arena_pool_free(&p->u.arena, &m->source, a->part, a->slot, a->page, a->offset, a->size);
    else if (a->offset == 0)
        exclusive_pool_free(&p->u.exclusive, a->slot, a->page, a->size);
}

void memory_cleanup(memory_manager *m, int explicit_cleanup)
{
    if (m) cleanup(m, explicit_cleanup);
}

uint32_t memory_release_empty(memory_manager *m)
{
    return m ? cleanup(m, 1) : 0;
}

void memory_report_fill(const memory_manager *m, cubec_memory_report *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!m) return;
    snprintf(out->preset, sizeof out->preset, "%s", memory_preset_name(m->config.preset));
    for (uint32_t i = 0; i < m->pool_count; i++) {
        cubec_pool_report *r = &out->pools[i];
        const pool *p = &m->pools[i];
        if (p->kind == POOL_SLICED)
            sliced_pool_report(&p->u.sliced, r);
        else if (p->kind == POOL_EXCLUSIVE)
            exclusive_pool_report(&p->u.exclusive, r);
        else
            arena_pool_report(&p->u.arena, r);
        out->bytes_in_use += r->bytes_in_use;
        out->bytes_reserved += r->bytes_reserved;
        out->allocations += r->allocations;
        out->pages += r->pages;
    }
    out->pool_count = m->pool_count;
    /* The slot's windows and its setting (the device's, copied at the slot's creation). */
    out->window_mode = (cubec_memory_mode)memory_modes_window(&m->modes);
    out->window_depth = m->modes.depth;
    snprintf(out->persistent_memory, sizeof out->persistent_memory, "%s",
             persistent_memory_name(m->modes.setting));
    persistent_pool_report(&m->modes.persistent, &out->persistent);
    dedicated_pool_report(&m->modes.dedicated, &out->dedicated);
    /* The external pages have no entry of their own in the report (its struct is fixed): they
     * count in the totals, where the device's memory is. */
    cubec_pool_report external;
    dedicated_pool_report(&m->modes.external, &external);
    const cubec_pool_report *extra[] = {&out->persistent, &out->dedicated, &external};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
        out->bytes_in_use += extra[i]->bytes_in_use;
        out->bytes_reserved += extra[i]->bytes_reserved;
        out->allocations += extra[i]->allocations;
        out->pages += extra[i]->pages;
    }
}

cubec_status memory_adopt(memory_manager *m, void *page, uint64_t size, mem_alloc *out)
{
    memset(out, 0, sizeof *out);
    pool_slice slice;
    RETURN_IF_ERROR(dedicated_pool_adopt(&m->modes.external, page, size, &slice));
    fill_out(out, &slice, size, MEMORY_POOL_EXTERNAL, 0);
    return NULL;
}

memory_modes *memory_manager_modes(memory_manager *m)
{
    return &m->modes;
}

/* --- Owners, guards and relocation (spec 3.1, 3.9) ------------------------------------------- */

static arena_pool *arena_of(memory_manager *m, const mem_alloc *a)
{
    if (!m || !m->arenas || !a || a->pool >= m->pool_count || m->pools[a->pool].kind != POOL_ARENA)
        return NULL;
    return &m->pools[a->pool].u.arena;
}

void memory_set_owner(memory_manager *m, const mem_alloc *a, void *owner)
{
    arena_pool *ar = arena_of(m, a);
    if (ar) arena_pool_set_owner(ar, a->part, a->slot, owner);
}

void memory_guard(memory_manager *m, const mem_alloc *a, int delta)
{
    if (!m || !a || a->pool >= m->pool_count || a->size == 0) return;
    pool *p = &m->pools[a->pool];
    if (p->kind == POOL_ARENA) {
        arena_pool_guard(&p->u.arena, a->part, a->slot, delta);
    } else if (p->kind == POOL_SLICED) {
        uint32_t pg = sliced_pool_page_of(&p->u.sliced, a->slot);
        if (pg == SLICED_NIL) return;
        uint32_t *g = &p->u.sliced.pages[pg].guards;
        if (delta > 0)
            (*g)++;
        else if (*g > 0)
            (*g)--;
    }
}

const char *memory_relocation_reason_name(memory_relocation_reason r)
{
    switch (r) {
    case MEMORY_RELOCATE_EXPLICIT: return "explicit cleanup";
    case MEMORY_RELOCATE_PRESSURE: return "memory pressure";
    case MEMORY_RELOCATE_ARENA_FULL: return "arena full";
    case MEMORY_RELOCATE_CAPTURE: return "graph preparation";
    }
    return "?";
}

static int may_add_pages(memory_relocation_reason reason)
{
    return reason == MEMORY_RELOCATE_ARENA_FULL || reason == MEMORY_RELOCATE_CAPTURE;
}

int memory_relocation_wanted(const memory_manager *m, memory_relocation_reason reason)
{
    if (!m || !m->arenas) return 0;
    for (uint32_t i = 0; m && i < m->pool_count; i++)
        if (m->pools[i].kind == POOL_ARENA &&
            arena_pool_wants_relocation(&m->pools[i].u.arena, may_add_pages(reason)))
            return 1;
    return 0;
}

int memory_relocation_need(const memory_manager *m, uint64_t capacity, uint64_t allocated,
                           memory_relocation_reason *out_reason)
{
    for (uint32_t i = 0; m && i < m->pool_count; i++) {
        const arena_pool *a = &m->pools[i].u.arena;
        /* A full arena's relocation may add pages; a pressure one may not. */
        if (m->pools[i].kind != POOL_ARENA || !arena_pool_wants_relocation(a, arena_pool_full(a)))
            continue;
        if (arena_pool_full(a)) {
            *out_reason = MEMORY_RELOCATE_ARENA_FULL;
            return 1;
        }
        uint64_t page = a->slots[a->current]->page_size;
        if (capacity && (page >= capacity / 2 || allocated + page > capacity - page)) {
            *out_reason = MEMORY_RELOCATE_PRESSURE;
            return 1;
        }
    }
    return 0;
}

cubec_status memory_relocation_plan(memory_manager *m, memory_relocation_reason reason,
                                    mem_move **moves, uint32_t *count, uint32_t *cap)
{
    int may_add = may_add_pages(reason);
    arena_move *am = NULL;
    uint32_t n = 0, acap = 0;
    cubec_status err = NULL;
    for (uint32_t i = 0; i < m->pool_count && !err; i++) {
        if (m->pools[i].kind != POOL_ARENA) continue;
        uint32_t before = n;
        err = arena_pool_plan(&m->pools[i].u.arena, &m->source, may_add, &am, &n, &acap);
        if (!err && n > before &&
            array_grow((void **)moves, cap, (uint64_t)*count + (n - before), sizeof **moves))
            err = status_make(CUBEC_OUT_OF_MEMORY, "host out of memory planning a relocation");
        if (err) {
            /* Nothing of this arena is handed over: its planned moves are undone. */
            while (n > before)
                arena_pool_unplan(&m->pools[i].u.arena, &m->source, &am[--n]);
            break;
        }
        for (uint32_t k = before; k < n; k++) {
            const arena_move *a = &am[k];
            mem_move *mv = &(*moves)[(*count)++];
            mv->owner = a->owner;
            mv->from = (mem_alloc){.page = a->from_page,
                                   .offset = a->from_offset,
                                   .size = a->size,
                                   .pool = (uint16_t)i,
                                   .part = (uint16_t)a->from_part,
                                   .slot = a->from_slot};
            mv->to = (mem_alloc){.page = a->to_page,
                                 .offset = a->to_offset,
                                 .size = a->size,
                                 .pool = (uint16_t)i,
                                 .part = (uint16_t)a->to_part,
                                 .slot = a->to_slot};
        }
    }
    free(am);
    return err;
}

void memory_relocation_unplan(memory_manager *m, const mem_move *mv)
{
    arena_pool *ar = arena_of(m, &mv->to);
    if (!ar) return;
    arena_move am = {.owner = mv->owner,
                     .size = mv->from.size,
                     .from_part = mv->from.part,
                     .from_slot = mv->from.slot,
                     .from_page = mv->from.page,
                     .from_offset = mv->from.offset,
                     .to_part = mv->to.part,
                     .to_slot = mv->to.slot,
                     .to_page = mv->to.page,
                     .to_offset = mv->to.offset};
    arena_pool_unplan(ar, &m->source, &am);
}

void memory_relocation_done(memory_manager *m, memory_relocation_reason reason,
                            const mem_move *moves, uint32_t moved)
{
    for (uint32_t i = 0; m && i < m->pool_count; i++) {
        if (m->pools[i].kind != POOL_ARENA) continue;
        uint32_t n = 0;
        uint64_t bytes = 0;
        for (uint32_t k = 0; k < moved; k++)
            if (moves[k].to.pool == i) {
                n++;
                bytes += moves[k].to.size;
            }
        arena_pool_note_relocation(&m->pools[i].u.arena, n, bytes, may_add_pages(reason));
    }
}
