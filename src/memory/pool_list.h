/* The list of pools a memory manager is built from (spec 3.4): a preset, or a custom list read
 * from the configuration ([memory] pools / CUBEC_MEMORY_POOLS, docs/memory.md).
 *
 * Two steps, so that every mistake is reported when the device opens:
 *  - pool_list_parse reads the text of a custom list and checks what needs no device: the
 *    syntax, zero sizes, a slice larger than its page, a cap below one page or of more than
 *    POOL_MAX_PAGES pages, more than MEMORY_MAX_POOLS pools;
 *  - pool_list_build turns a preset (or the custom list) into concrete pools for a device's
 *    limits (page limit, largest allocation, alignment), checking the custom list against them. */
#ifndef CUBEC_MEMORY_POOL_LIST_H
#define CUBEC_MEMORY_POOL_LIST_H

#include "base/status.h"

#include <stdint.h>

/* The most pools one manager uses, leaving room in a cubec_memory_report for the runtime's rings
 * (metadata, upload, readback). */
#define MEMORY_MAX_POOLS (CUBEC_MAX_POOLS - 3)
/* The most pages a capped sliced pool may hold (spec 3.4: page numbers are 16 bits). */
#define POOL_MAX_PAGES 65535u
/* The most page sizes an arena grows through (spec 3.9). */
#define ARENA_MAX_PAGE_SIZES 64u

/* In the order of the [memory] preset choices. */
typedef enum memory_preset {
    MEMORY_PRESET_LADDER,    /* sub-slice ladder + exclusive tail (spec SubSlices) */
    MEMORY_PRESET_EXCLUSIVE, /* exclusive pools only (spec ExclusivePages) */
    MEMORY_PRESET_CUSTOM,    /* the configured list */
    MEMORY_PRESET_ADAPTIVE,  /* a small-allocation sliced pool + a growing arena (seed) */
    /* The configuration's default: the device chooses ladder or exclusive (server/buffers.c);
     * pool_list_build takes only the four above. */
    MEMORY_PRESET_AUTO,
} memory_preset;
#define MEMORY_PRESET_CHOICES "ladder|exclusive|custom|adaptive"

typedef enum pool_spec_kind {
    POOL_SPEC_SLICED,
    POOL_SPEC_EXCLUSIVE,
    POOL_SPEC_ARENA
} pool_spec_kind;

typedef struct pool_spec {
    /* sliced: page size; arena: smallest page size */
    uint64_t page;
    /* sliced: largest slice (0 in a parsed entry: the page); arena: largest page (0: the
     * device's page limit); exclusive: largest allocation (0: the device's) */
    uint64_t max;
    uint64_t cap;            /* sliced: most bytes of pages (0: no cap) */
    uint64_t dealloc_period; /* exclusive (UINT64_MAX in a parsed entry: spec 3.4's formula) */
    pool_spec_kind kind;
    int fill_rule;  /* sliced: also takes a request that fills >= 80 % of a page (spec 3.3) */
    char entry[64]; /* the entry as written (cut at 63 bytes), for messages */
} pool_spec;

typedef struct pool_list {
    uint32_t count;
    pool_spec pools[MEMORY_MAX_POOLS];
} pool_list;

/* Appends the pools of `text` ("kind:field=value,...; kind:...", docs/memory.md) to `list`. On a
 * bad entry returns CUBEC_INVALID_ARGUMENT "entry '<entry>': <why>" (the caller adds the key and
 * value) and leaves `list` as it was. An empty or blank text adds nothing. */
MUST_USE cubec_status pool_list_parse(const char *text, pool_list *list);

/* The limits pool_list_build needs from a device. */
typedef struct pool_limits {
    uint64_t max_page_size;  /* the largest page */
    uint64_t max_alloc_size; /* the largest single allocation */
    uint64_t alignment;      /* power of two, at least 4 */
} pool_limits;

/* The pools of `preset` for `limits` (`custom` is read for MEMORY_PRESET_CUSTOM only), with every
 * default filled in and sizes aligned. Errors (CUBEC_INVALID_ARGUMENT): an empty custom list; an
 * entry whose page or largest allocation exceeds the device's (naming the entry and the limit);
 * a preset that is not one of memory_preset. */
MUST_USE cubec_status pool_list_build(memory_preset preset, const pool_list *custom,
                                      const pool_limits *limits, pool_list *out);

/* "ladder", "exclusive", "custom", "adaptive", "auto" ("?" for anything else). */
const char *memory_preset_name(memory_preset preset);

#endif
