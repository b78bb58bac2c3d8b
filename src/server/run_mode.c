/* Dry-run windows and the lazy backing of the pages made under them (run_mode.h). */
#include "server/run_mode.h"

#include "base/log.h"
#include "server/buffers.h"
#include "server/device.h"
#include "server/streams.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Process-wide: spec 9's DryRun guard covers every client of the process. */
static _Atomic uint32_t process_dry_depth;

uint32_t run_process_dry_depth(void)
{
    return atomic_load_explicit(&process_dry_depth, memory_order_acquire);
}

cubec_status cubec_dry_run_begin(void)
{
    uint32_t depth = atomic_load(&process_dry_depth);
    do {
        if (depth == UINT32_MAX)
            return INVALID_ARG("cubec_dry_run_begin: %" PRIu32 " dry runs are already open", depth);
    } while (!atomic_compare_exchange_weak(&process_dry_depth, &depth, depth + 1));
    return NULL;
}

cubec_status cubec_dry_run_end(void)
{
    uint32_t depth = atomic_load(&process_dry_depth);
    do {
        if (depth == 0)
            return INVALID_ARG("cubec_dry_run_end: no process-wide dry run is open (each end "
                               "closes one cubec_dry_run_begin)");
    } while (!atomic_compare_exchange_weak(&process_dry_depth, &depth, depth - 1));
    return NULL;
}

static run_window_stack *find_stack(const run_modes *r, uint64_t stream)
{
    for (uint32_t i = 0; i < r->count; i++)
        if (r->stacks[i].stream == stream) return &r->stacks[i];
    return NULL;
}

int server_run_dry(const cubec_device *d, stream_ref s)
{
    const run_modes *r = d->runs;
    if (r->count) {
        const run_window_stack *w = find_stack(r, s.number);
        if (w) return (int)((w->dry >> (w->depth - 1)) & 1u);
    }
    return run_process_dry_depth() != 0;
}

cubec_status server_run_window_begin(cubec_device *d, stream_ref s, cubec_run_mode mode)
{
    if (mode != CUBEC_RUN_DRY && mode != CUBEC_RUN_REAL)
        return INVALID_ARG("cubec_run_window_begin: mode %d is not CUBEC_RUN_DRY (1) or "
                           "CUBEC_RUN_REAL (2)",
                           (int)mode);
    run_modes *r = d->runs;
    run_window_stack *w = find_stack(r, s.number);
    if (!w) {
        if (r->count == r->cap) {
            uint32_t cap = r->cap ? r->cap * 2 : 4;
            run_window_stack *n = realloc(r->stacks, cap * sizeof *n);
            if (!n) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (run windows)");
            r->stacks = n;
            r->cap = cap;
        }
        w = &r->stacks[r->count++];
        *w = (run_window_stack){.stream = s.number};
    }
    if (w->depth == RUN_MAX_DEPTH)
        return INVALID_ARG("cubec_run_window_begin: stream %" PRIu64 " already has %u windows "
                           "open, the most they nest",
                           s.number, RUN_MAX_DEPTH);
    uint64_t bit = 1ull << w->depth;
    w->dry = mode == CUBEC_RUN_DRY ? w->dry | bit : w->dry & ~bit;
    w->depth++;
    return NULL;
}

cubec_status server_run_window_end(cubec_device *d, stream_ref s)
{
    run_modes *r = d->runs;
    run_window_stack *w = find_stack(r, s.number);
    if (!w)
        return INVALID_ARG("cubec_run_window_end: stream %" PRIu64 " has no run window open",
                           s.number);
    if (--w->depth == 0) *w = r->stacks[--r->count]; /* the last stack takes its place */
    return NULL;
}

void server_run_modes_destroy(cubec_device *d)
{
    free(d->runs->stacks);
    d->runs->stacks = NULL;
    d->runs->count = d->runs->cap = 0;
}

/* Ready: backed, and mapped where every page of device memory is (unified memory). A page
 * whose map failed after its memory was bound is not ready yet: the next use maps it. */
static int page_ready(const cubec_device *d, const gpu_mem *page)
{
    return !page->unbacked && (page->mapped || !d->gpu->caps.unified);
}

cubec_status server_run_back_page(cubec_device *d, gpu_mem *page)
{
    if (page_ready(d, page)) return NULL;
    cubec_status err = gpu_mem_back(d->gpu, page);
    if (err)
        return status_annotate(err,
                               "backing a page of %" PRIu64 " bytes made under a dry run, at "
                               "its first real use",
                               page->size);
    d->runs->unbacked_pages--;
    LOG(LOG_INFO, LOG_SYS_MEMORY, "backed a page of %" PRIu64 " bytes made under a dry run",
        page->size);
    return NULL;
}

cubec_status server_run_page_create(cubec_device *d, uint64_t size, uint32_t flags, gpu_mem **out)
{
    if (!(flags & MEMORY_LAZY_PAGE)) return gpu_mem_alloc(d->gpu, GPU_MEM_DEVICE, size, out);
    RETURN_IF_ERROR(gpu_mem_alloc_unbacked(d->gpu, size, out));
    d->runs->unbacked_pages++;
    return NULL;
}

void server_run_page_destroyed(cubec_device *d, const gpu_mem *page)
{
    if (!page_ready(d, page)) d->runs->unbacked_pages--;
}

cubec_status server_back_buffers(cubec_device *d, buffer_obj *const *bufs, uint32_t n,
                                 const buffer_obj *extra)
{
    if (!d->runs->unbacked_pages) return NULL;
    for (uint32_t i = 0; i < n; i++)
        if (bufs[i]->alloc->mem.size)
            RETURN_IF_ERROR(server_run_back_page(d, buffer_page(bufs[i])));
    if (extra && extra->alloc->mem.size)
        RETURN_IF_ERROR(server_run_back_page(d, buffer_page(extra)));
    return NULL;
}

void server_run_drop_launch(cubec_device *d)
{
    d->runs->dry_launches++;
}
