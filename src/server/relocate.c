/* Relocation (spec 3.9): plan in the pools, copy on the GPU, commit in the allocation records.
 *
 * The plan (memory/arena_pool.c) reserves a target in the current page size for every live
 * allocation of each outdated page it can empty. Before the first copy every stream's queued
 * work is recorded, submitted and finished, with the device lock kept throughout (a drain's
 * waits keep it): queued tasks name page offsets, and a host transfer that dropped the lock
 * holds a guard (server_alloc_pin), so nothing can use an old place after the copy. Then one
 * command buffer copies every move, each alloc_obj (shared by a buffer and its views, holding
 * the failure map in allocation offsets) takes its new mem in place, and once the copy finished
 * the old slices are freed, which returns the emptied outdated pages. */
#include "server/relocate.h"

#include "base/clock.h"
#include "base/log.h"
#include "server/buffers.h"
#include "server/copy_fill.h"
#include "server/device.h"
#include "server/failures.h"
#include "server/graph.h"
#include "server/run_mode.h"
#include "server/streams.h"
#include "server/submission.h"

#include <inttypes.h>
#include <stdlib.h>

void server_alloc_guard(cubec_device *d, alloc_obj *a, int delta)
{
    if (a->mem.size) memory_guard(d->streams->slots[a->slot].memory, &a->mem, delta);
}

void server_alloc_pin(cubec_device *d, alloc_obj *a)
{
    a->refs++;
    server_alloc_guard(d, a, +1);
}

void server_alloc_unpin(cubec_device *d, alloc_obj *a)
{
    server_alloc_guard(d, a, -1);
    server_alloc_release(d, a);
}

static int any_recording(const cubec_device *d)
{
    for (uint32_t i = 0; d->graphs->captures && i < d->streams->max_streams; i++)
        if (d->streams->slots[i].capture == CAPTURE_RECORDING) return 1;
    return 0;
}

int server_relocation_blocked(const cubec_device *d)
{
    return any_recording(d);
}

typedef struct slot_moves {
    mem_move *moves;
    uint32_t count, cap;
} slot_moves;

/* The moves of one slot: copied in `cmd` (by the copy kernel on GPUs: an H200's copy engine
 * moves 0.8 TB/s, the kernel ~4), committed in the records. A recording error leaves every
 * record committed all the same: the caller treats it as a copy that did not run. */
static uint64_t record_moves(cubec_device *d, gpu_cmd *cmd, const slot_moves *sm, cubec_status *err)
{
    uint64_t bytes = 0;
    for (uint32_t k = 0; k < sm->count; k++) {
        const mem_move *mv = &sm->moves[k];
        alloc_obj *a = mv->owner;
        /* A dry run's page that never got memory holds no bytes to move (spec 3.9: unmapped
         * sources are skipped); the allocation lands on a backed page all the same. */
        if (!*err && !((const gpu_mem *)mv->from.page)->unbacked)
            *err = server_record_move(d, cmd, mv->from.page, mv->from.offset, mv->to.page,
                                      mv->to.offset, mv->from.size);
        /* The identity stays: the record every handle and view points at takes the new place. */
        a->mem = mv->to;
        a->last_use = a->last_write = d->sub->next_value;
        a->queued_writer = NO_SLOT;
        a->queued_readers = 0;
        bytes += mv->from.size;
    }
    return bytes;
}

static cubec_status relocate_locked(cubec_device *d, uint32_t first, uint32_t end,
                                    memory_relocation_reason reason, slot_moves *sm,
                                    uint32_t *out_moved)
{
    /* Every stream's queued and running work first: queued tasks hold page offsets. */
    uint64_t t0 = clock_now_ns();
    RETURN_IF_ERROR(server_drain_all(d, 0));
    RETURN_IF_ERROR(sub_wait_flags(d, d->sub->next_value - 1, WAIT_KEEP_LOCK));
    server_run_deferred_frees(d);

    uint32_t total = 0;
    cubec_status err = NULL;
    for (uint32_t i = first; i < end && !err; i++) {
        memory_manager *m = d->streams->slots[i].memory;
        if (m && memory_relocation_wanted(m, reason))
            err = memory_relocation_plan(m, reason, &sm[i].moves, &sm[i].count, &sm[i].cap);
        total += sm[i].count;
    }
    /* A target may be a page a dry run made, with no memory yet: the copy would write through
     * nothing. Backed here, before any record moves. */
    for (uint32_t i = first; i < end && !err && d->runs->unbacked_pages; i++)
        for (uint32_t k = 0; k < sm[i].count && !err; k++)
            err = server_run_back_page(d, (gpu_mem *)sm[i].moves[k].to.page);
    gpu_cmd *cmd = NULL;
    if (!err && total && server_copies_by_kernel(d)) err = server_builtin_kernels(d);
    if (!err && total) err = sub_begin(d, &cmd);
    if (err || !total) {
        for (uint32_t i = first; i < end; i++) {
            memory_manager *m = d->streams->slots[i].memory;
            for (uint32_t k = 0; k < sm[i].count; k++)
                memory_relocation_unplan(m, &sm[i].moves[k]);
            sm[i].count = 0;
            if (m && !err) memory_relocation_done(m, reason, NULL, 0);
        }
        return err;
    }

    uint64_t bytes = 0, value = d->sub->next_value, t1 = clock_now_ns();
    for (uint32_t i = first; i < end; i++)
        bytes += record_moves(d, cmd, &sm[i], &err);
    /* Submitted even after a recording error: the batch may hold other work's commands. */
    cubec_status flushed = sub_flush(d, 0);
    if (!err)
        err = flushed;
    else
        cubec_status_free(flushed);
    if (!err) err = sub_wait_flags(d, value, WAIT_KEEP_LOCK);
    uint64_t t2 = clock_now_ns();
    if (err) {
        /* The copy may not have run: the moved bytes are lost, and say so when read. */
        failure *f = failure_new(cubec_status_code(err), "relocating this buffer failed: %s",
                                 cubec_status_message(err));
        for (uint32_t i = first; i < end; i++)
            for (uint32_t k = 0; k < sm[i].count; k++) {
                alloc_obj *a = sm[i].moves[k].owner;
                server_taint(a, a->mem.offset, a->mem.size, f);
            }
        failure_release(f);
    }
    for (uint32_t i = first; i < end; i++) {
        memory_manager *m = d->streams->slots[i].memory;
        if (!sm[i].count) continue;
        /* Without a finished copy the old places stay held (the pages go at close). */
        for (uint32_t k = 0; !err && k < sm[i].count; k++)
            memory_free(m, &sm[i].moves[k].from);
        memory_relocation_done(m, reason, sm[i].moves, sm[i].count);
    }
    *out_moved = total;
    /* The phases, for whoever tunes this: waiting for earlier work, the copies, and returning
     * the emptied pages (the driver's frees). */
    uint64_t t3 = clock_now_ns();
    LOG(LOG_INFO, LOG_SYS_MEMORY,
        "relocation (%s): moved %u allocations, %" PRIu64
        " bytes, off outdated arena pages (drain and plan %.3f ms, copy %.3f ms, pages returned "
        "in %.3f ms)",
        memory_relocation_reason_name(reason), total, bytes, (double)(t1 - t0) / 1e6,
        (double)(t2 - t1) / 1e6, (double)(t3 - t2) / 1e6);
    return err;
}

cubec_status server_memory_relocate(cubec_device *d, uint32_t slot, memory_relocation_reason reason,
                                    uint32_t *out_moved)
{
    uint32_t moved = 0;
    if (out_moved) *out_moved = 0;
    /* A recording names pages in its command buffers (and the spec forbids it outright). */
    if (any_recording(d)) return NULL;
    uint32_t first = slot == NO_SLOT ? 0 : slot,
             end = slot == NO_SLOT ? d->streams->max_streams : slot + 1;
    int wanted = 0;
    for (uint32_t i = first; i < end && !wanted; i++)
        wanted = memory_relocation_wanted(d->streams->slots[i].memory, reason);
    if (!wanted) return NULL;
    slot_moves *sm = calloc(d->streams->max_streams, sizeof *sm);
    if (!sm) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (relocation)");
    /* Its waits keep the lock (WAIT_KEEP_LOCK, and the drains'): no other thread may queue work
     * on an old place meanwhile. */
    /* Targets are backed pages: the plan's page source asks without MEMORY_LAZY_PAGE, even when
     * a dry run's buffer creation asked for this. */
    cubec_status err = relocate_locked(d, first, end, reason, sm, &moved);
    for (uint32_t i = 0; i < d->streams->max_streams; i++)
        free(sm[i].moves);
    free(sm);
    if (out_moved) *out_moved = moved;
    return err ? status_annotate(err, "relocation (%s)", memory_relocation_reason_name(reason))
               : NULL;
}

cubec_status server_relocate_when_wanted(cubec_device *d, uint32_t slot)
{
    memory_manager *m = d->streams->slots[slot].memory;
    /* The cheap test first: the most a relocation could want (one that may add pages). */
    if (!m || !memory_relocation_wanted(m, MEMORY_RELOCATE_ARENA_FULL) || any_recording(d))
        return NULL;
    /* The capacity is the budget (spec 3.9 UnderPressure): the driver's estimate of what this
     * process may use where it has one (other processes' use lowers it), [memory] max_bytes when
     * lower; what is allocated, the larger of the pages every stream's pools hold (kept in
     * page_bytes) and the driver's count. So a relocation moves buffers while a copy target can
     * still be had, not after a refusal. */
    server_budget b;
    server_memory_budget(d, &b);
    const uint64_t allocated = b.used > d->buffers->page_bytes ? b.used : d->buffers->page_bytes;
    memory_relocation_reason reason;
    if (!memory_relocation_need(m, b.budget, allocated, &reason)) return NULL;
    return server_memory_relocate(d, slot, reason, NULL);
}
