/* Allocation modes and their windows (spec 3.5), and the two places outside the layout's pools
 * they route to: the persistent pool and dedicated allocations.
 *
 * A stream slot's memory keeps a stack of windows. cubec_memory_window_begin opens one (Auto,
 * Persistent or Dedicated), cubec_memory_window_end closes the innermost; the innermost decides how
 * the slot's next buffers are allocated (no window: Auto). [memory] persistent_memory bends the
 * rule for the persistent pool:
 *   enabled     Persistent windows route to the persistent pool (the default);
 *   size-match  that, and an Auto allocation whose effective size the persistent pool already
 *               holds goes there too (recurring shapes find their exact slices);
 *   disabled    Persistent windows are ignored (their buffers go to the layout's pools);
 *   enforced    every allocation is persistent, whatever the windows say.
 * Dedicated windows are honoured under every setting: they are how a program keeps a buffer out
 * of every pool. */
#ifndef CUBEC_MEMORY_MEMORY_MODES_H
#define CUBEC_MEMORY_MEMORY_MODES_H

#include "memory/dedicated_pool.h"
#include "memory/persistent_pool.h"

#include <stdint.h>

/* The values of cubec_memory_mode. */
typedef enum memory_mode {
    MEMORY_MODE_AUTO = 0,
    MEMORY_MODE_PERSISTENT = 1,
    MEMORY_MODE_DEDICATED = 2,
} memory_mode;

/* In the order of the [memory] persistent_memory choices. */
typedef enum persistent_memory {
    PERSISTENT_MEMORY_ENABLED,
    PERSISTENT_MEMORY_SIZE_MATCH,
    PERSISTENT_MEMORY_DISABLED,
    PERSISTENT_MEMORY_ENFORCED,
} persistent_memory;
#define PERSISTENT_MEMORY_CHOICES "enabled|size-match|disabled|enforced"

/* How deep windows nest: deeper is a program that pushes without popping. */
#define MEMORY_MODE_MAX_DEPTH 64u

/* mem_alloc.pool of what these route to (the layout's pools are numbered from 0, fewer than
 * MEMORY_MAX_POOLS; spec 3.1 keeps sentinels at the top of the pool numbers likewise). */
#define MEMORY_POOL_PERSISTENT 0xFFFEu
#define MEMORY_POOL_DEDICATED 0xFFFDu
/* Exportable pages and imported memory: one buffer per page, never reused for another nor moved,
 * apart from every window (docs/multi-device.md). */
#define MEMORY_POOL_EXTERNAL 0xFFFCu

typedef struct memory_modes {
    persistent_pool persistent;
    dedicated_pool dedicated;
    dedicated_pool external; /* MEMORY_POOL_EXTERNAL's pages */
    persistent_memory setting;
    uint32_t depth;
    uint8_t windows[MEMORY_MODE_MAX_DEPTH]; /* memory_mode values, outermost first */
} memory_modes;

void memory_modes_init(memory_modes *mm, persistent_memory setting, uint64_t alignment);
void memory_modes_destroy(memory_modes *mm, const page_source *source);

/* Opens a window. CUBEC_INVALID_ARGUMENT for a value that is not a memory_mode, or when
 * MEMORY_MODE_MAX_DEPTH windows are open (the caller adds its name). */
MUST_USE cubec_status memory_modes_push(memory_modes *mm, uint32_t mode);
/* Closes the innermost window; CUBEC_INVALID_ARGUMENT when none is open. */
MUST_USE cubec_status memory_modes_pop(memory_modes *mm);
/* The innermost window's mode (Auto when none is open). */
static inline memory_mode memory_modes_window(const memory_modes *mm)
{
    return mm->depth ? (memory_mode)mm->windows[mm->depth - 1] : MEMORY_MODE_AUTO;
}
/* 1 when every allocation goes to the layout's pools without looking further: no window is open
 * and the setting routes nothing by itself (the common case, kept to one test). */
static inline int memory_modes_idle(const memory_modes *mm)
{
    return mm->depth == 0 && mm->setting != PERSISTENT_MEMORY_ENFORCED &&
           (mm->setting != PERSISTENT_MEMORY_SIZE_MATCH || mm->persistent.bucket_count == 0);
}
/* Where an allocation of `size` bytes goes now (MEMORY_POOL_EXTERNAL is asked for by a flag,
 * never routed to): MEMORY_POOL_PERSISTENT, MEMORY_POOL_DEDICATED,
 * or 0 for the layout's pools. */
uint32_t memory_modes_route(const memory_modes *mm, uint64_t size);

/* Reserves `size` bytes where `route` says (reusing a free persistent slice first); `new_page`
 * 0 allows only reuse (a free persistent slice of the same size), and then *out_found is 0 when
 * there is none. Errors come from the source, as they are. */
MUST_USE cubec_status memory_modes_alloc(memory_modes *mm, const page_source *source,
                                         uint32_t route, uint64_t size, int new_page,
                                         int *out_found, pool_slice *out);
/* Frees what memory_modes_alloc gave (`pool` its route). 0 for a stale or double free. */
int memory_modes_free(memory_modes *mm, const page_source *source, uint32_t pool, uint32_t slot,
                      const void *page, uint64_t size);
/* Explicit cleanup: the persistent pool's free slices go back; returns how many pages. */
uint32_t memory_modes_release(memory_modes *mm, const page_source *source);
/* "enabled", "size-match", "disabled", "enforced": the setting's [memory] persistent_memory
 * value (the report's). */
const char *persistent_memory_name(persistent_memory setting);
/* "persistent pool" / "dedicated allocations": for messages. */
const char *memory_modes_route_name(uint32_t route);

#endif
