/* Dry runs (spec 9, docs/dry-runs.md): windows in which launches are checked, their kernels
 * built and cached, and then dropped, so a program can warm every cache (and size its memory)
 * without running anything.
 *
 * Two scopes. A process-wide dry run covers every device and stream. A stream's own windows
 * (dry or real) nest on a stack of up to RUN_MAX_DEPTH; the innermost decides for that stream,
 * and a stream with no window of its own follows the process-wide state. A real window inside a
 * dry run is how a tuner measures candidates while the program around it dry-runs.
 *
 * What a dry run changes: launches and graph replays are validated and then dropped (no task,
 * no taint, nothing recorded into a capture); pages that buffer creation adds get no device
 * memory until their first real use (a write, read, copy, fill, real launch), which backs them
 * (server_back_*). Writes, reads, copies and fills still run: they are the program's own data
 * movement, and a read after dropped launches returns whatever the buffer held. */
#ifndef CUBEC_SERVER_RUN_MODE_H
#define CUBEC_SERVER_RUN_MODE_H

#include "base/status.h"
#include "cubec/cubec.h"
#include "server/buffers.h"
#include "server/streams.h"

#include <stdint.h>

#define RUN_MAX_DEPTH 64u

/* One stream with windows open. */
typedef struct run_window_stack {
    uint64_t stream; /* its number (stream_ref.number) */
    uint64_t dry;    /* bit i: the window at depth i is dry */
    uint32_t depth;  /* windows open, 1..RUN_MAX_DEPTH */
} run_window_stack;

/* Device lock. */
typedef struct run_modes {
    run_window_stack *stacks; /* streams with at least one window open */
    uint32_t count, cap;
    uint64_t unbacked_pages; /* pages made under a dry run, not yet backed (and mapped) */
    uint64_t dry_launches;   /* launches and replays dropped */
} run_modes;

void server_run_modes_destroy(cubec_device *d);
/* Non-zero when work on `s` is dry now. Constant time when no window is open anywhere. */
int server_run_dry(const cubec_device *d, stream_ref s);
/* Counts a launch (or replay) that a dry run dropped (server_stats.dry_launches). */
void server_run_drop_launch(cubec_device *d);
/* cubec_run_window_begin / _end on a stream. */
MUST_USE cubec_status server_run_window_begin(cubec_device *d, stream_ref s, cubec_run_mode mode);
MUST_USE cubec_status server_run_window_end(cubec_device *d, stream_ref s);
/* The process-wide depth (any thread, any device). */
uint32_t run_process_dry_depth(void);

/* The page source's allocation (server/memory_ops.c): an unbacked page when `flags` has
 * MEMORY_LAZY_PAGE (a dry run's buffer asked for it). */
MUST_USE cubec_status server_run_page_create(cubec_device *d, uint64_t size, uint32_t flags,
                                             gpu_mem **out);
/* The page source's free: forgets an unbacked page. */
void server_run_page_destroyed(cubec_device *d, const gpu_mem *page);

/* Gives device memory to one page made under a dry run (and maps it where pages are mapped);
 * nothing when it has both. Relocation backs its targets with it. Errors: CUBEC_OUT_OF_MEMORY
 * naming the page. */
MUST_USE cubec_status server_run_back_page(cubec_device *d, gpu_mem *page);
/* Gives device memory to the pages of `bufs` (and `extra`, may be NULL) made under a dry run;
 * nothing to do (one branch) when there are none. Errors: CUBEC_OUT_OF_MEMORY naming the page. */
MUST_USE cubec_status server_back_buffers(cubec_device *d, buffer_obj *const *bufs, uint32_t n,
                                          const buffer_obj *extra);

#endif
