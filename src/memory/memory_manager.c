/* The memory manager (see memory_manager.h for the layout and routing rules). */
#include "memory/memory_manager.h"

#include "base/status.h"
#include "memory/exclusive_pool.h"
#include "memory/sliced_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024ull)
#define GIB (1024ull * MIB)
/* The ladder of sliced pools stops once pages would drop below a quarter of this. */
#define LADDER_MIN (32ull * MIB)
/* Reservations between full sweeps of idle exclusive pages, per GiB of page limit (spec 3.4). */
#define DEALLOC_PERIOD_UNIT 5000ull

typedef enum pool_kind { POOL_SLICED, POOL_EXCLUSIVE } pool_kind;

typedef struct pool {
    pool_kind kind;
    union {
        sliced_pool sliced;
        exclusive_pool exclusive;
    } u;
} pool;

struct memory_manager {
    memory_config config;
    page_source source;
    uint64_t reservations; /* memory_alloc calls: the clock of the periodic cleanup */
    uint32_t pool_count;   /* the exclusive pool is the last */
    pool pools[MEMORY_MAX_POOLS];
};

typedef struct ladder_step {
    uint64_t page;
    uint64_t max_slice;
} ladder_step;

/* The sliced pools for a page limit, small pages first; returns how many (at most `cap`). */
static uint32_t build_ladder(uint64_t page_limit, uint64_t align, ladder_step *out, uint32_t cap)
{
    ladder_step steps[64];
    uint32_t n = 0;
    uint64_t cur = page_limit;
    for (uint32_t k = 1; cur >= LADDER_MIN && n < 64; k++) {
        uint64_t next = mem_align_up(cur / 4, align);
        /* A huge alignment could keep the size from shrinking: stop rather than loop. */
        if (next >= cur) break;
        cur = next;
        steps[n].page = cur;
        steps[n].max_slice = k < 64 ? cur >> k : 0;
        n++;
    }
    if (n == 0 && page_limit >= align * 2) {
        steps[0].page = page_limit;
        steps[0].max_slice = mem_align_down(page_limit / 2, align);
        n = 1;
    }
    /* Recorded large to small; keep the smallest `cap`, small first. */
    uint32_t kept = n < cap ? n : cap;
    for (uint32_t i = 0; i < kept; i++)
        out[i] = steps[n - 1 - i];
    return kept;
}

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

    memory_manager *m = calloc(1, sizeof *m);
    if (!m) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory creating memory pools");
    m->config = *config;
    if (m->config.alignment < 4) m->config.alignment = 4;
    m->source = source;

    uint64_t align = m->config.alignment;
    /* No page may exceed what one allocation can be, and pages hold whole aligned slices. */
    uint64_t page_limit = config->max_page_size < config->max_alloc_size ? config->max_page_size
                                                                         : config->max_alloc_size;
    page_limit = mem_align_down(page_limit, align);

    ladder_step ladder[MEMORY_MAX_POOLS - 1];
    uint32_t n = build_ladder(page_limit, align, ladder, MEMORY_MAX_POOLS - 1);
    for (uint32_t i = 0; i < n; i++) {
        m->pools[i].kind = POOL_SLICED;
        sliced_pool_init(&m->pools[i].u.sliced, ladder[i].page, ladder[i].max_slice, align);
    }
    /* dealloc_period = 5000 * round(1 + limit / 1 GiB), computed without overflow. */
    uint64_t gib = page_limit / GIB + (page_limit % GIB >= GIB / 2);
    m->pools[n].kind = POOL_EXCLUSIVE;
    exclusive_pool_init(&m->pools[n].u.exclusive, config->max_alloc_size, align,
                        DEALLOC_PERIOD_UNIT * (1 + gib));
    m->pool_count = n + 1;
    *out = m;
    return NULL;
}

void memory_manager_destroy(memory_manager *m)
{
    if (!m) return;
    for (uint32_t i = 0; i < m->pool_count; i++) {
        if (m->pools[i].kind == POOL_SLICED)
            sliced_pool_destroy(&m->pools[i].u.sliced, &m->source);
        else
            exclusive_pool_destroy(&m->pools[i].u.exclusive, &m->source);
    }
    free(m);
}

static exclusive_pool *exclusive_of(memory_manager *m)
{
    return &m->pools[m->pool_count - 1].u.exclusive;
}

static int pool_accepts(const pool *p, uint64_t size)
{
    return p->kind == POOL_SLICED ? sliced_pool_accepts(&p->u.sliced, size)
                                  : exclusive_pool_accepts(&p->u.exclusive, size);
}

/* Returns the number of pages given back. */
static uint32_t cleanup(memory_manager *m, int explicit_cleanup)
{
    uint32_t released = 0;
    for (uint32_t i = 0; i < m->pool_count; i++) {
        pool *p = &m->pools[i];
        if (p->kind == POOL_EXCLUSIVE)
            released += exclusive_pool_cleanup(&p->u.exclusive, &m->source, m->reservations,
                                               explicit_cleanup);
        else if (explicit_cleanup)
            released += sliced_pool_release_empty(&p->u.sliced, &m->source);
    }
    return released;
}

/* Adds a page to pool `index`; `minimal` asks an exclusive page for just the padded size. The
 * page size asked for is left in *out_page_bytes. */
static cubec_status add_page(memory_manager *m, uint32_t index, uint64_t size, int minimal,
                             pool_slice *out, uint64_t *out_page_bytes)
{
    pool *p = &m->pools[index];
    if (p->kind == POOL_SLICED) {
        *out_page_bytes = p->u.sliced.page_size;
        return sliced_pool_add_page(&p->u.sliced, &m->source, size, out);
    }
    exclusive_pool *e = &p->u.exclusive;
    uint64_t bytes = exclusive_pool_page_size(e, size);
    if (minimal) {
        uint64_t eff =
            size <= UINT64_MAX - (e->alignment - 1) ? mem_align_up(size, e->alignment) : size;
        bytes = eff <= e->max_alloc ? eff : size;
    }
    *out_page_bytes = bytes;
    return exclusive_pool_add_page(e, &m->source, size, bytes, out);
}

static void totals(const memory_manager *m, uint64_t *reserved, uint64_t *in_use, uint64_t *count)
{
    cubec_memory_report r;
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
        (unsigned long long)size, (unsigned long long)page_bytes,
        m->pools[index].kind == POOL_SLICED ? "sliced" : "exclusive", index, released, also,
        (unsigned long long)reserved, (unsigned long long)in_use, (unsigned long long)count,
        cubec_status_message(cause));
    cubec_status_free(cause);
    return s;
}

static void fill_out(mem_alloc *out, const pool_slice *slice, uint64_t size, uint32_t pool_index)
{
    out->page = slice->page;
    out->offset = slice->offset;
    out->size = size;
    out->pool = pool_index;
    out->slot = slice->slot;
}

cubec_status memory_alloc(memory_manager *m, uint64_t size, mem_alloc *out)
{
    return memory_alloc_flags(m, size, 0, out);
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

    m->reservations++;
    exclusive_pool *ex = exclusive_of(m);
    if (m->reservations - ex->last_check >= ex->dealloc_period / EXCLUSIVE_POOL_IDLE_CHECKS)
        exclusive_pool_cleanup(ex, &m->source, m->reservations, 0);

    pool_slice slice;
    uint32_t first = UINT32_MAX;
    for (uint32_t i = 0; i < m->pool_count; i++) {
        pool *p = &m->pools[i];
        if (!pool_accepts(p, size)) continue;
        if (first == UINT32_MAX) first = i;
        if (p->kind == POOL_SLICED) {
            int found = 0;
            RETURN_IF_ERROR(sliced_pool_try_reserve(&p->u.sliced, size, &found, &slice));
            if (found) {
                fill_out(out, &slice, size, i);
                return NULL;
            }
        } else if (i == first && exclusive_pool_try_reserve(&p->u.exclusive, size, &slice)) {
            fill_out(out, &slice, size, i);
            return NULL;
        }
    }
    if (flags & MEMORY_NO_NEW_PAGE)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "no room for %llu bytes in the pages already allocated, and no new "
                           "page may be added",
                           (unsigned long long)size);
    /* The exclusive pool takes anything up to max_alloc_size, so `first` is set. */

    uint64_t page_bytes = 0;
    cubec_status s = add_page(m, first, size, 0, &slice, &page_bytes);
    if (!s) {
        fill_out(out, &slice, size, first);
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
    s = add_page(m, first, size, 1, &slice, &page_bytes);
    if (!s) {
        fill_out(out, &slice, size, first);
        return NULL;
    }
    if (cubec_status_code(s) != CUBEC_OUT_OF_MEMORY)
        return status_annotate(s, "while allocating a %llu-byte page for a %llu-byte buffer",
                               (unsigned long long)page_bytes, (unsigned long long)size);

    /* A sliced page may be much larger than the request: an exact-size page may still fit. */
    uint32_t last = m->pool_count - 1;
    if (first != last && exclusive_pool_accepts(ex, size)) {
        uint64_t ex_bytes = 0;
        cubec_status s2 = add_page(m, last, size, 1, &slice, &ex_bytes);
        if (!s2) {
            cubec_status_free(s);
            fill_out(out, &slice, size, last);
            return NULL;
        }
        if (cubec_status_code(s2) != CUBEC_OUT_OF_MEMORY) {
            cubec_status_free(s);
            return status_annotate(s2, "while allocating a %llu-byte page for a %llu-byte buffer",
                                   (unsigned long long)ex_bytes, (unsigned long long)size);
        }
        cubec_status_free(s2);
        return oom_error(m, size, first, page_bytes, released, 1, ex_bytes, s);
    }
    return oom_error(m, size, first, page_bytes, released, 0, 0, s);
}

void memory_free(memory_manager *m, const mem_alloc *a)
{
    if (!m || !a || a->pool >= m->pool_count) return;
    pool *p = &m->pools[a->pool];
    if (p->kind == POOL_SLICED)
        sliced_pool_free(&p->u.sliced, a->slot, a->page, a->offset, a->size);
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
    for (uint32_t i = 0; i < m->pool_count; i++) {
        cubec_pool_report *r = &out->pools[i];
        if (m->pools[i].kind == POOL_SLICED)
            sliced_pool_report(&m->pools[i].u.sliced, r);
        else
            exclusive_pool_report(&m->pools[i].u.exclusive, r);
        out->bytes_in_use += r->bytes_in_use;
        out->bytes_reserved += r->bytes_reserved;
        out->allocations += r->allocations;
        out->pages += r->pages;
    }
    out->pool_count = m->pool_count;
}
