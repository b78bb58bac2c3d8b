/* Pool lists: the custom list's parser and the presets (see pool_list.h, docs/memory.md). */
#include "memory/pool_list.h"

#include "memory/page_source.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)
/* The ladder of sliced pools stops once pages would drop below a quarter of this. */
#define LADDER_MIN (32ull * MIB)
/* Reservations between full sweeps of idle exclusive pages, per GiB of pool size (spec 3.4). */
#define DEALLOC_PERIOD_UNIT 5000ull
/* The exclusive preset: this many pools, log-spaced from EXCLUSIVE_MIN to the page limit. */
#define EXCLUSIVE_PRESET_POOLS 24u
#define EXCLUSIVE_MIN (32ull * KIB)
/* The adaptive preset (the seed's test sizes): the small-allocation pool's page and the
 * arena's smallest page; the small pool takes slices up to an eighth of its page. */
#define ADAPTIVE_SMALL_PAGE (8ull * MIB)
#define ADAPTIVE_ARENA_MIN (2ull * MIB)
/* The largest dealloc_period a custom entry may ask for. */
#define DEALLOC_PERIOD_MAX 1000000000000ull

const char *memory_preset_name(memory_preset preset)
{
    switch (preset) {
    case MEMORY_PRESET_LADDER: return "ladder";
    case MEMORY_PRESET_EXCLUSIVE: return "exclusive";
    case MEMORY_PRESET_CUSTOM: return "custom";
    case MEMORY_PRESET_ADAPTIVE: return "adaptive";
    case MEMORY_PRESET_AUTO: return "auto";
    }
    return "?";
}

/* ---- parsing ------------------------------------------------------------------------------ */

/* `n` bytes at `p` without the blanks around them. */
static const char *trim(const char *p, size_t *n)
{
    while (*n && (*p == ' ' || *p == '\t'))
        p++, (*n)--;
    while (*n && (p[*n - 1] == ' ' || p[*n - 1] == '\t'))
        (*n)--;
    return p;
}

/* Decimal digits with an optional unit B, KiB, MiB, GiB or TiB (case-insensitive); nothing else.
 * Returns 0 on anything else or on overflow. */
static int parse_size(const char *p, size_t n, uint64_t *out)
{
    static const struct {
        const char *unit;
        uint64_t scale;
    } units[] = {{"", 1}, {"b", 1}, {"kib", KIB}, {"mib", MIB}, {"gib", GIB}, {"tib", 1024 * GIB}};
    size_t digits = 0;
    uint64_t v = 0;
    while (digits < n && p[digits] >= '0' && p[digits] <= '9') {
        uint64_t d = (uint64_t)(p[digits] - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
        digits++;
    }
    if (digits == 0) return 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t ul = strlen(units[i].unit);
        if (n - digits != ul || strncasecmp(p + digits, units[i].unit, ul) != 0) continue;
        if (v > UINT64_MAX / units[i].scale) return 0;
        *out = v * units[i].scale;
        return 1;
    }
    return 0;
}

typedef struct field_def {
    const char *name;
    int is_count; /* a plain number (dealloc_period), not a size */
} field_def;

static const field_def sliced_fields[] = {{"page", 0}, {"max_slice", 0}, {"cap", 0}};
static const field_def exclusive_fields[] = {{"max", 0}, {"dealloc_period", 1}};
static const field_def arena_fields[] = {{"min_page", 0}, {"max_page", 0}};

/* One "kind:field=value,..." entry (trimmed, non-empty) into *out; on error, why in `why`. */
static int parse_entry(const char *p, size_t n, pool_spec *out, char *why, size_t why_cap)
{
    memset(out, 0, sizeof *out);
    snprintf(out->entry, sizeof out->entry, "%.*s", (int)n, p);
    const char *colon = memchr(p, ':', n);
    size_t kn = colon ? (size_t)(colon - p) : n;
    const char *kind = trim(p, &kn);
    const field_def *defs;
    size_t ndefs;
    if (kn == 6 && !strncasecmp(kind, "sliced", 6)) {
        out->kind = POOL_SPEC_SLICED;
        defs = sliced_fields, ndefs = 3;
    } else if (kn == 9 && !strncasecmp(kind, "exclusive", 9)) {
        out->kind = POOL_SPEC_EXCLUSIVE;
        defs = exclusive_fields, ndefs = 2;
    } else if (kn == 5 && !strncasecmp(kind, "arena", 5)) {
        out->kind = POOL_SPEC_ARENA;
        defs = arena_fields, ndefs = 2;
    } else {
        snprintf(why, why_cap, "'%.*s' is not a pool kind of sliced|exclusive|arena", (int)kn,
                 kind);
        return 0;
    }
    uint64_t values[3] = {0, 0, 0};
    int given[3] = {0, 0, 0};
    const char *f = colon ? colon + 1 : p + n;
    const char *end = p + n;
    while (colon && f <= end) {
        const char *comma = memchr(f, ',', (size_t)(end - f));
        size_t fn = comma ? (size_t)(comma - f) : (size_t)(end - f);
        const char *field = trim(f, &fn);
        const char *eq = memchr(field, '=', fn);
        if (!eq) {
            snprintf(why, why_cap, "'%.*s' is not field=value", (int)fn, field);
            return 0;
        }
        size_t nn = (size_t)(eq - field), vn = fn - nn - 1;
        const char *name = trim(field, &nn);
        const char *value = trim(eq + 1, &vn);
        size_t d = 0;
        while (d < ndefs && !(strlen(defs[d].name) == nn && !strncmp(defs[d].name, name, nn)))
            d++;
        if (d == ndefs) {
            char list[64] = "";
            for (size_t i = 0; i < ndefs; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? "|" : "",
                         defs[i].name);
            snprintf(why, why_cap, "'%.*s' is not a field of %.*s (%s)", (int)nn, name, (int)kn,
                     kind, list);
            return 0;
        }
        if (given[d]) {
            snprintf(why, why_cap, "%s is given twice", defs[d].name);
            return 0;
        }
        int ok = parse_size(value, vn, &values[d]);
        if (ok && defs[d].is_count && values[d] > DEALLOC_PERIOD_MAX) ok = 0;
        if (!ok) {
            snprintf(why, why_cap,
                     defs[d].is_count ? "%s = '%.*s' is not a count in 0..1000000000000"
                                      : "%s = '%.*s' is not a size (digits, then B, KiB, MiB, "
                                        "GiB or TiB)",
                     defs[d].name, (int)vn, value);
            return 0;
        }
        if (!defs[d].is_count && values[d] == 0) {
            snprintf(why, why_cap, "%s is zero", defs[d].name);
            return 0;
        }
        given[d] = 1;
        if (!comma) break;
        f = comma + 1;
    }

    switch (out->kind) {
    case POOL_SPEC_SLICED:
        if (!given[0]) {
            snprintf(why, why_cap, "a sliced pool needs page=<size>");
            return 0;
        }
        out->page = values[0];
        out->max = given[1] ? values[1] : values[0];
        out->cap = values[2];
        if (out->max > out->page) {
            snprintf(why, why_cap, "max_slice %llu is larger than page %llu",
                     (unsigned long long)out->max, (unsigned long long)out->page);
            return 0;
        }
        if (given[2] && out->cap < out->page) {
            snprintf(why, why_cap, "cap %llu is smaller than one page (%llu)",
                     (unsigned long long)out->cap, (unsigned long long)out->page);
            return 0;
        }
        if (given[2] && out->cap / out->page > POOL_MAX_PAGES) {
            snprintf(why, why_cap, "cap %llu holds %llu pages of %llu bytes, more than %u",
                     (unsigned long long)out->cap, (unsigned long long)(out->cap / out->page),
                     (unsigned long long)out->page, POOL_MAX_PAGES);
            return 0;
        }
        out->fill_rule = !given[2];
        break;
    case POOL_SPEC_EXCLUSIVE:
        out->max = values[0];
        out->dealloc_period = given[1] ? values[1] : UINT64_MAX;
        break;
    case POOL_SPEC_ARENA:
        out->page = given[0] ? values[0] : ADAPTIVE_ARENA_MIN;
        out->max = values[1];
        if (given[1] && out->page > out->max) {
            snprintf(why, why_cap, "min_page %llu is larger than max_page %llu",
                     (unsigned long long)out->page, (unsigned long long)out->max);
            return 0;
        }
        break;
    }
    return 1;
}

cubec_status pool_list_parse(const char *text, pool_list *list)
{
    pool_list next = *list;
    const char *p = text;
    size_t blank = strspn(p, " \t");
    if (!p[blank]) return NULL;
    for (;;) {
        const char *semi = strchr(p, ';');
        size_t n = semi ? (size_t)(semi - p) : strlen(p);
        const char *e = trim(p, &n);
        if (n == 0) return INVALID_ARG("an empty entry (two ';' in a row, or one at an end)");
        if (next.count == MEMORY_MAX_POOLS)
            return INVALID_ARG("entry '%.*s': too many pools (at most %u)", (int)n, e,
                               MEMORY_MAX_POOLS);
        char why[200];
        if (!parse_entry(e, n, &next.pools[next.count], why, sizeof why))
            return INVALID_ARG("entry '%.*s': %s", (int)n, e, why);
        next.count++;
        if (!semi) break;
        p = semi + 1;
    }
    *list = next;
    return NULL;
}

/* ---- presets ------------------------------------------------------------------------------ */

/* dealloc_period = 5000 * round(1 + size / 1 GiB), computed without overflow. */
static uint64_t dealloc_period_for(uint64_t size)
{
    uint64_t gib = size / GIB + (size % GIB >= GIB / 2);
    return DEALLOC_PERIOD_UNIT * (1 + gib);
}

static pool_spec sliced(uint64_t page, uint64_t max_slice, int fill_rule)
{
    pool_spec s = {
        .kind = POOL_SPEC_SLICED, .page = page, .max = max_slice, .fill_rule = fill_rule};
    snprintf(s.entry, sizeof s.entry, "sliced:page=%llu,max_slice=%llu", (unsigned long long)page,
             (unsigned long long)max_slice);
    return s;
}

static pool_spec exclusive(uint64_t max, uint64_t period)
{
    pool_spec s = {.kind = POOL_SPEC_EXCLUSIVE, .max = max, .dealloc_period = period};
    snprintf(s.entry, sizeof s.entry, "exclusive:max=%llu,dealloc_period=%llu",
             (unsigned long long)max, (unsigned long long)period);
    return s;
}

/* The sub-slice ladder: starting from the page limit, while the current size is at least
 * 32 MiB, divide it by 4 (aligned up) and record pages of that size with slices of at most
 * size / 2^k, k = 1, 2, ...; small pages first. An empty ladder (a limit below 32 MiB) becomes one
 * pool of pages of the limit, slices up to half of it: one driver allocation per buffer runs into
 * Vulkan's allocation count limit. Then the exclusive pool for anything up to max_alloc. */
static void build_ladder(uint64_t page_limit, const pool_limits *l, pool_list *out)
{
    pool_spec steps[64];
    uint32_t n = 0;
    uint64_t cur = page_limit;
    for (uint32_t k = 1; cur >= LADDER_MIN && n < 64; k++) {
        uint64_t next = mem_align_up(cur / 4, l->alignment);
        /* A huge alignment could keep the size from shrinking: stop rather than loop. */
        if (next >= cur) break;
        cur = next;
        steps[n++] = sliced(cur, k < 64 ? cur >> k : 0, 1);
    }
    if (n == 0 && page_limit >= l->alignment * 2)
        steps[n++] = sliced(page_limit, mem_align_down(page_limit / 2, l->alignment), 1);
    /* Recorded large to small; keep the smallest that fit, small first. */
    uint32_t kept = n < MEMORY_MAX_POOLS - 1 ? n : MEMORY_MAX_POOLS - 1;
    out->count = 0;
    for (uint32_t i = 0; i < kept; i++)
        out->pools[out->count++] = steps[n - 1 - i];
    out->pools[out->count++] = exclusive(l->max_alloc_size, dealloc_period_for(page_limit));
}

/* Exclusive pools only: largest allocations log-spaced from 32 KiB to the page limit (aligned,
 * duplicates dropped); the last takes anything up to the largest allocation. */
static void build_exclusive(uint64_t page_limit, const pool_limits *l, pool_list *out)
{
    out->count = 0;
    double lo = (double)EXCLUSIVE_MIN, hi = (double)page_limit;
    for (uint32_t i = 0; i < EXCLUSIVE_PRESET_POOLS && hi > lo; i++) {
        double x = lo * pow(hi / lo, (double)i / (double)(EXCLUSIVE_PRESET_POOLS - 1));
        uint64_t max = mem_align_up((uint64_t)x, l->alignment);
        if (max > page_limit) max = page_limit;
        if (out->count && out->pools[out->count - 1].max >= max) continue;
        out->pools[out->count++] = exclusive(max, dealloc_period_for(max));
    }
    if (out->count == 0) out->pools[out->count++] = exclusive(page_limit, 0);
    pool_spec *last = &out->pools[out->count - 1];
    *last = exclusive(l->max_alloc_size, dealloc_period_for(l->max_alloc_size));
}

static void build_adaptive(uint64_t page_limit, const pool_limits *l, pool_list *out)
{
    uint64_t small = ADAPTIVE_SMALL_PAGE < page_limit ? ADAPTIVE_SMALL_PAGE : page_limit;
    uint64_t slice = mem_align_down(small / 8, l->alignment);
    if (slice == 0) slice = small;
    out->count = 0;
    /* Requests near the small pool's page go to the arena (spec 3.4): no 80 % rule. */
    out->pools[out->count++] = sliced(small, slice, 0);
    uint64_t min = ADAPTIVE_ARENA_MIN < page_limit ? ADAPTIVE_ARENA_MIN : page_limit;
    pool_spec a = {.kind = POOL_SPEC_ARENA, .page = min, .max = page_limit};
    snprintf(a.entry, sizeof a.entry, "arena:min_page=%llu,max_page=%llu", (unsigned long long)min,
             (unsigned long long)page_limit);
    out->pools[out->count++] = a;
}

/* Fills the defaults of a parsed entry and checks it against the device. */
static cubec_status resolve(pool_spec *s, uint64_t page_limit, const pool_limits *l)
{
    switch (s->kind) {
    case POOL_SPEC_SLICED:
        if (s->page > page_limit)
            return INVALID_ARG("entry '%s': page %llu is larger than the device's page limit %llu",
                               s->entry, (unsigned long long)s->page,
                               (unsigned long long)page_limit);
        /* Pages hold whole aligned slices; the page limit is aligned, so this stays within it. */
        s->page = mem_align_up(s->page, l->alignment);
        if (s->max > s->page) s->max = s->page;
        break;
    case POOL_SPEC_EXCLUSIVE:
        if (s->max == 0) s->max = l->max_alloc_size;
        if (s->max > l->max_alloc_size)
            return INVALID_ARG("entry '%s': max %llu is larger than the device's largest "
                               "allocation %llu",
                               s->entry, (unsigned long long)s->max,
                               (unsigned long long)l->max_alloc_size);
        if (s->dealloc_period == UINT64_MAX) s->dealloc_period = dealloc_period_for(s->max);
        break;
    case POOL_SPEC_ARENA:
        if (s->max == 0) s->max = page_limit;
        if (s->max > page_limit || s->page > page_limit)
            return INVALID_ARG("entry '%s': a page of %llu is larger than the device's page "
                               "limit %llu",
                               s->entry, (unsigned long long)(s->max > s->page ? s->max : s->page),
                               (unsigned long long)page_limit);
        s->page = mem_align_up(s->page, l->alignment);
        s->max = mem_align_down(s->max, l->alignment);
        if (s->page > s->max) s->page = s->max;
        break;
    }
    return NULL;
}

cubec_status pool_list_build(memory_preset preset, const pool_list *custom,
                             const pool_limits *limits, pool_list *out)
{
    out->count = 0;
    /* No page may exceed what one allocation can be, and pages hold whole aligned slices. */
    uint64_t page_limit = limits->max_page_size < limits->max_alloc_size ? limits->max_page_size
                                                                         : limits->max_alloc_size;
    page_limit = mem_align_down(page_limit, limits->alignment);
    switch (preset) {
    case MEMORY_PRESET_LADDER: build_ladder(page_limit, limits, out); return NULL;
    case MEMORY_PRESET_EXCLUSIVE: build_exclusive(page_limit, limits, out); return NULL;
    case MEMORY_PRESET_ADAPTIVE:
        if (page_limit < limits->alignment)
            return INVALID_ARG("the adaptive preset needs pages of at least %llu bytes; the "
                               "device's page limit is %llu",
                               (unsigned long long)limits->alignment,
                               (unsigned long long)page_limit);
        build_adaptive(page_limit, limits, out);
        return NULL;
    case MEMORY_PRESET_CUSTOM: break;
    default:
        return INVALID_ARG("memory preset %d is not one of %s", (int)preset, MEMORY_PRESET_CHOICES);
    }
    if (!custom || custom->count == 0)
        return INVALID_ARG("the custom pool list is empty: give at least one pool");
    pool_list list = *custom;
    for (uint32_t i = 0; i < list.count; i++)
        RETURN_IF_ERROR(resolve(&list.pools[i], page_limit, limits));
    *out = list;
    return NULL;
}
