/* Failure objects and per-allocation taint maps (see failure.h). The maps are small unsorted
 * arrays: ranges never overlap, and setting or clearing a range trims, drops or splits the ranges
 * it cuts. Only a split takes a slot, and the slot is reserved before anything changes: when the
 * host is out of memory the map degrades by tainting too much, never by losing a failure. */
#include "failure/failure.h"

#include "base/array.h"
#include "base/assert.h"
#include "base/strfmt.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static failure oom_failure = {1u << 30, CUBEC_OUT_OF_MEMORY,
                              (char *)"host out of memory while recording a failure"};

failure *failure_oom(void)
{
    return &oom_failure;
}

static failure *make(cubec_code code, char *message)
{
    if (!message) return failure_oom();
    failure *f = malloc(sizeof *f);
    if (!f) {
        free(message);
        return failure_oom();
    }
    f->refs = 1;
    f->code = code;
    f->message = message;
    return f;
}

failure *failure_newv(cubec_code code, const char *fmt, va_list ap)
{
    return make(code, strfmtv(fmt, ap));
}

failure *failure_new(cubec_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failure *f = failure_newv(code, fmt, ap);
    va_end(ap);
    return f;
}

/* Chains longer than this keep their newest links and the root cause. */
#define CHAIN_LIMIT 4096

failure *failure_chain(const failure *cause, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *prefix = strfmtv(fmt, ap);
    va_end(ap);
    if (!prefix) return failure_oom();
    const char *rest = cause->message;
    size_t len = strlen(rest);
    const char *elide = "";
    if (len > CHAIN_LIMIT) {
        /* Keep the last part: it holds the root cause. */
        rest += len - CHAIN_LIMIT;
        elide = "...";
    }
    char *m = strfmt("%s: %s%s", prefix, elide, rest);
    free(prefix);
    return make(cause->code, m);
}

failure *failure_retain(failure *f)
{
    /* A failure with no reference left was freed: retaining it is a use after free. */
    CUBEC_ASSERT(f->refs > 0);
    f->refs++;
    return f;
}

void failure_release(failure *f)
{
    if (!f || f == &oom_failure) return;
    CUBEC_ASSERT(f->refs > 0); /* released more often than retained */
    if (--f->refs) return;
    free(f->message);
    free(f);
}

/* ---- taint maps -------------------------------------------------------------------------- */

/* The reallocation the maps grow with; tests replace it (taint_set_realloc_hook). */
static array_realloc_fn taint_realloc = realloc;

void taint_set_realloc_hook(void *(*reallocate)(void *ptr, size_t size))
{
    taint_realloc = reallocate ? reallocate : realloc;
}

static taint_range *range_at(taint_map *m, uint32_t i)
{
    return i ? &m->more[i - 1] : &m->first;
}

static const taint_range *const_range_at(const taint_map *m, uint32_t i)
{
    return i ? &m->more[i - 1] : &m->first;
}

static uint32_t slots(const taint_map *m)
{
    return m->cap + 1;
}

/* Room for `need` ranges in all. Returns 0, or -1 (nothing changed) when the host is out of
 * memory. */
static int reserve(taint_map *m, uint64_t need)
{
    if (need <= slots(m)) return 0;
    return array_grow_ex((void **)&m->more, &m->cap, need - 1, sizeof *m->more,
                         ARRAY_FIRST_CAPACITY, UINT32_MAX - 1, taint_realloc);
}

/* Appends a range; the caller made room. */
static void append(taint_map *m, uint64_t offset, uint64_t size, failure *f)
{
    *range_at(m, m->count++) = (taint_range){offset, size, failure_retain(f)};
}

/* Drops range i: the last range takes its place. */
static void remove_at(taint_map *m, uint32_t i)
{
    failure *gone = range_at(m, i)->failure;
    m->count--;
    if (i != m->count) *range_at(m, i) = *range_at(m, m->count);
    /* Each range holds a reference of its own, so this never frees another range's failure; the
     * analyzer cannot see the count and takes two ranges' failures for one freed object. */
    failure_release(gone); // NOLINT(clang-analyzer-unix.Malloc)
}

failure *taint_find(const taint_map *m, uint64_t offset, uint64_t size)
{
    for (uint32_t i = 0; i < m->count; i++) {
        const taint_range *r = const_range_at(m, i);
        if (r->offset < offset + size && offset < r->offset + r->size) return r->failure;
    }
    return NULL;
}

/* Cuts [offset, end) out of every range: a range inside it goes, a range across one of its
 * edges is trimmed, both in place. A range across both edges is split in two, which takes one
 * more slot while `keep` slots stay free for the caller; without it the range is left whole and
 * its index is returned through *out_whole (ranges do not overlap, so there is at most one).
 * Returns 0 when every cut was made, -1 otherwise. */
static int cut(taint_map *m, uint64_t offset, uint64_t end, uint32_t keep, uint32_t *out_whole)
{
    int rc = 0;
    *out_whole = UINT32_MAX;
    for (uint32_t i = 0; i < m->count;) {
        taint_range *r = range_at(m, i);
        uint64_t r_end = r->offset + r->size;
        if (!(r->offset < end && offset < r_end)) {
            i++;
            continue;
        }
        int before = r->offset < offset; /* part of r lies before the cut */
        int after = r_end > end;         /* and part after it */
        if (before && after) {
            if (reserve(m, (uint64_t)m->count + 1 + keep)) {
                /* Not split: the range keeps its failure on the bytes being cut too. */
                *out_whole = i;
                rc = -1;
                i++;
                continue;
            }
            r = range_at(m, i); /* the reservation may have moved `more` */
            /* r holds a reference: its failure is alive (see remove_at for the analyzer). */
            append(m, end, r_end - end, r->failure); // NOLINT(clang-analyzer-unix.Malloc)
            r = range_at(m, i);
            r->size = offset - r->offset;
        } else if (before) {
            r->size = offset - r->offset;
        } else if (after) {
            r->size = r_end - end;
            r->offset = end;
        } else {
            remove_at(m, i);
            continue; /* the last range moved to i */
        }
        i++;
    }
    return rc;
}

/* The map's invariant: no empty range, no two ranges overlapping. Quadratic, so only checked in
 * debug builds (CUBEC_ASSERT): maps hold a few ranges. Release builds name it only inside the
 * unevaluated sizeof of CUBEC_ASSERT, hence `unused`. */
__attribute__((unused)) static int taint_valid(const taint_map *m)
{
    if (m->count > slots(m)) return 0;
    for (uint32_t i = 0; i < m->count; i++) {
        const taint_range *a = const_range_at(m, i);
        if (a->size == 0 || a->offset + a->size < a->offset || !a->failure) return 0;
        for (uint32_t j = i + 1; j < m->count; j++) {
            const taint_range *b = const_range_at(m, j);
            if (a->offset < b->offset + b->size && b->offset < a->offset + a->size) return 0;
        }
    }
    return 1;
}

int taint_clear(taint_map *m, uint64_t offset, uint64_t size)
{
    if (size == 0 || m->count == 0) return 0;
    uint32_t whole;
    int rc = cut(m, offset, offset + size, 0, &whole);
    if (m->count == 0) taint_free(m);
    CUBEC_ASSERT(taint_valid(m));
    return rc;
}

/* No slot is free and none can be had: the bytes [offset, end), which no range covers now, join
 * the nearest range, with its failure. The bytes between them join too; no range lies there,
 * since that one would be nearer. */
static void merge_into_nearest(taint_map *m, uint64_t offset, uint64_t end)
{
    uint32_t best = 0;
    uint64_t best_gap = UINT64_MAX;
    for (uint32_t i = 0; i < m->count; i++) {
        const taint_range *r = range_at(m, i);
        uint64_t gap = r->offset >= end ? r->offset - end : offset - (r->offset + r->size);
        if (gap < best_gap) {
            best_gap = gap;
            best = i;
        }
    }
    taint_range *r = range_at(m, best);
    if (r->offset >= end) {
        r->size = r->offset + r->size - offset;
        r->offset = offset;
    } else {
        r->size = end - r->offset;
    }
}

int taint_set(taint_map *m, uint64_t offset, uint64_t size, failure *f)
{
    if (size == 0) return 0;
    uint64_t end = offset + size;
    /* A slot for the new range first, so that the cuts cannot take it. */
    int have_slot = reserve(m, (uint64_t)m->count + 1) == 0;
    uint32_t whole;
    int rc = cut(m, offset, end, have_slot, &whole);
    /* Cutting out ranges inside [offset, end) may have freed a slot. */
    have_slot = m->count < slots(m);
    if (whole != UINT32_MAX) {
        /* A range across both edges could not be split: its bytes before `offset` stay its own.
         * With a slot, the new range takes over from `offset` to the range's end (the tail past
         * `end` carries the new failure too); without one, the range stays whole and its failure
         * covers the new bytes. */
        if (have_slot) {
            taint_range *r = range_at(m, whole);
            uint64_t r_end = r->offset + r->size;
            r->size = offset - r->offset;
            append(m, offset, r_end - offset, f);
        }
        CUBEC_ASSERT(taint_valid(m));
        return -1;
    }
    if (have_slot) {
        append(m, offset, size, f);
        CUBEC_ASSERT(taint_valid(m));
        return rc;
    }
    /* No slot (so the map is not empty: the inline slot is taken). */
    CUBEC_ASSERT(m->count > 0);
    merge_into_nearest(m, offset, end);
    CUBEC_ASSERT(taint_valid(m));
    return -1;
}

void taint_free(taint_map *m)
{
    for (uint32_t i = 0; i < m->count; i++)
        failure_release(range_at(m, i)->failure);
    free(m->more);
    m->more = NULL;
    m->count = m->cap = 0;
}
