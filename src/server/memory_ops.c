/* The memory operations above the buffer store: creating a buffer (with relief and relocation
 * when memory runs out), relieving memory pressure, the pools' page source, the memory report
 * and cleanup. They call graphs, relocation and the queues; the buffer store (buffers.c) below
 * them calls none of those. */
#include "server/memory_ops.h"
#include "base/log.h"
#include "server/buffers.h"
#include "server/device.h"
#include "server/graph.h"
#include "server/host_ring.h"
#include "server/relocate.h"
#include "server/run_mode.h"
#include "server/streams.h"
#include "server/submission.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cubec_status page_alloc(void *user, uint64_t size, uint32_t flags, void **out_page)
{
    cubec_device *d = user;
    /* [memory] max_bytes is a heap of the configured size: a page past it is refused the way a
     * driver refuses one, so that the out-of-memory path runs (docs/memory.md). */
    uint64_t cap = (uint64_t)d->config.memory_max_bytes;
    if (cap && (size > cap || d->buffers->page_bytes > cap - size))
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "a page of %" PRIu64 " bytes would take the pools of every stream past "
                           "[memory] max_bytes = %" PRIu64 " (%" PRIu64 " bytes of pages held)",
                           size, cap, d->buffers->page_bytes);
    gpu_mem *p = NULL;
    cubec_status err = flags & MEMORY_EXPORTABLE_PAGE ? gpu_mem_alloc_exportable(d->gpu, size, &p)
                                                      : server_run_page_create(d, size, flags, &p);
    if (err) return status_annotate(err, "a page of %" PRIu64 " bytes", size);
    LOG(LOG_INFO, LOG_SYS_MEMORY, "allocated a page of %" PRIu64 " bytes%s", size,
        p->unbacked ? " (no memory yet: a dry run's)" : "");
    d->buffers->page_bytes += p->size;
    d->buffers->pages++;
    *out_page = p;
    return NULL;
}

static void page_free(void *user, void *page)
{
    cubec_device *d = user;
    gpu_mem *p = page;
    LOG(LOG_INFO, LOG_SYS_MEMORY, "freed a page of %" PRIu64 " bytes", p->size);
    server_run_page_destroyed(d, p);
    d->buffers->page_bytes -= p->size;
    d->buffers->pages--;
    gpu_mem_free(d->gpu, p);
}

/* Returns every empty page of every slot's pools. A page with no live allocation holds nothing
 * the GPU still uses: an allocation goes back to its pool only once the timeline passed its last
 * use (deferred frees), and a graph, recording or recorded, holds a reference on every
 * allocation it binds. So a slot that records a graph is included: its empty pages are none of
 * the capture's. Returns how many pages went back. */
static uint32_t reclaim_every_slot(cubec_device *d)
{
    uint32_t released = 0;
    for (uint32_t i = 0; i < d->streams->max_streams; i++)
        if (d->streams->slots[i].memory)
            released += memory_release_empty(d->streams->slots[i].memory);
    return released;
}

cubec_status server_memory_relieve(cubec_device *d, int wait_for_gpu, uint32_t *out_released)
{
    *out_released = 0;
    /* 1. Frees still waiting on the GPU: with wait_for_gpu, for all the work submitted. */
    if (wait_for_gpu &&
        (d->buffers->deferred_count || d->sub->next_value > d->sub->completed_value + 1))
        RETURN_IF_ERROR(sub_wait(d, d->sub->next_value - 1));
    if (d->buffers->deferred_count) server_run_deferred_frees(d);
    /* 2. Cleanup: every page of every slot that holds nothing live goes back (the persistent
     *    pool's free slices too: under pressure they are worth less than the request). */
    uint32_t released = reclaim_every_slot(d);
    /* 3. Relocation (spec 3.9, reason MemoryPressure): live buffers on outdated arena pages
     *    move into room already held, and the pages they leave go back. Only where wait_for_gpu
     *    is set: without it this runs inside a slot's memory_alloc (the page source's reclaim
     *    hook), which must not allocate from that slot's pools. */
    if (wait_for_gpu && d->buffers->arena_layout) {
        /* An outdated page goes back as soon as its last slice moves off it (inside the
         * relocation, not in the reclaim after it): those pages count too, or the caller would
         * see nothing returned and not try again. A pressure relocation adds no page. */
        uint32_t moved = 0, held = d->buffers->pages;
        RETURN_IF_ERROR(server_memory_relocate(d, NO_SLOT, MEMORY_RELOCATE_PRESSURE, &moved));
        if (d->buffers->pages < held) released += held - d->buffers->pages;
        if (moved) released += reclaim_every_slot(d);
    }
    if (released)
        LOG(LOG_INFO, LOG_SYS_MEMORY,
            "out of device memory: returned %u empty pages of every stream's pools to retry",
            released);
    *out_released = released;
    return NULL;
}

/* The page source's reclaim hook: a slot's page was refused for lack of device memory, and the
 * heap is shared by every slot. No wait here: server_buffer_create relieves again, waiting for
 * work in flight, if this was not enough. */
static uint32_t page_reclaim(void *user)
{
    uint32_t released = 0;
    cubec_status_free(server_memory_relieve(user, 0, &released)); /* cannot fail without a wait */
    return released;
}

cubec_status server_slot_memory(cubec_device *d, uint32_t slot, memory_manager **out)
{
    slot_state *s = &d->streams->slots[slot];
    if (!s->memory) {
        page_source src = {
            .user = d, .alloc = page_alloc, .free = page_free, .reclaim = page_reclaim};
        RETURN_IF_ERROR(memory_manager_create(&d->buffers->memory_cfg, src, &s->memory));
    }
    *out = s->memory;
    return NULL;
}

/* The rings the server keeps for itself (spec 3.8's auxiliary memory), as pool entries; returns
 * how many were written, at most `room`. Rings a device does not have (staging on unified
 * memory) are left out. */
uint32_t server_rings_report(const cubec_device *device, cubec_pool_report *out, uint32_t room)
{
    const struct {
        const char *kind;
        const host_ring *ring;
    } aux[] = {{"metadata", &device->rings->info},
               {"upload", &device->rings->upload},
               {"readback", &device->rings->readback}};
    uint32_t n = 0;
    for (size_t i = 0; i < sizeof aux / sizeof aux[0]; i++) {
        if (!aux[i].ring->mem || n >= room) continue;
        cubec_pool_report *p = &out[n++];
        memset(p, 0, sizeof *p);
        snprintf(p->kind, sizeof p->kind, "%s", aux[i].kind);
        p->page_size = aux[i].ring->size;
        p->max_slice_size = aux[i].ring->chunk_size;
        p->pages = p->pages_peak = 1;
        p->bytes_reserved = aux[i].ring->size;
    }
    return n;
}

void server_memory_report(cubec_device *d, stream_ref s, cubec_memory_report *out)
{
    sub_poll(d); /* frees whose GPU work finished are not counted as in use */
    /* The stream's own pools (spec 3.8: a report is per stream), then the device's rings. */
    if (d->streams->slots[s.slot].memory) memory_report_fill(d->streams->slots[s.slot].memory, out);
    out->pool_count +=
        server_rings_report(d, &out->pools[out->pool_count], CUBEC_MAX_POOLS - out->pool_count);
    server_budget b;
    server_memory_budget(d, &b);
    out->budget_bytes = b.budget;
    out->budget_used_bytes = b.used;
    out->budget_returning_bytes = b.returning;
    memcpy(out->budget_source, b.source, sizeof out->budget_source);
    /* The device's setting, also for a slot that has no pools yet (no window opened on it). */
    snprintf(out->persistent_memory, sizeof out->persistent_memory, "%s",
             persistent_memory_name((persistent_memory)d->config.persistent_memory));
}

cubec_status server_memory_each_slot(cubec_device *d,
                                     cubec_status (*each)(void *user, uint32_t slot,
                                                          const cubec_memory_report *r),
                                     void *user)
{
    sub_poll(d);
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    for (uint32_t i = 0; i < d->streams->max_streams; i++) {
        if (!d->streams->slots[i].memory) continue;
        memset(&r, 0, sizeof r);
        memory_report_fill(d->streams->slots[i].memory, &r);
        RETURN_IF_ERROR(each(user, i, &r));
    }
    return NULL;
}

cubec_status server_memory_cleanup(cubec_device *d, stream_ref s)
{
    RETURN_IF_ERROR(server_graph_refuse_any(d, "cubec_memory_cleanup"));
    /* Frees that wait on the GPU are part of what the caller wants returned: submit the queued
     * work that pins memory, wait for it, then return every empty page of the stream's pools. */
    RETURN_IF_ERROR(server_drain_all(d, 0));
    if (d->buffers->deferred_count) RETURN_IF_ERROR(sub_wait(d, d->sub->next_value - 1));
    server_run_deferred_frees(d);
    /* Then what the stream's outdated arena pages still hold moves to current pages, so that
     * those pages go back too (spec 3.9's Explicit relocation: room already held only). */
    RETURN_IF_ERROR(server_memory_relocate(d, s.slot, MEMORY_RELOCATE_EXPLICIT, NULL));
    if (d->streams->slots[s.slot].memory) memory_cleanup(d->streams->slots[s.slot].memory, 1);
    return NULL;
}

/* Bytes reserved and in use in the pools of every slot. */
static void device_memory_totals(const cubec_device *d, uint64_t *reserved, uint64_t *in_use)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    for (uint32_t i = 0; i < d->streams->max_streams; i++) {
        if (!d->streams->slots[i].memory) continue;
        memory_report_fill(d->streams->slots[i].memory, &r);
        *reserved += r.bytes_reserved;
        *in_use += r.bytes_in_use;
    }
}

cubec_status server_buffer_create(cubec_device *d, stream_ref s, uint64_t size, uint32_t flags,
                                  cubec_buffer *out)
{
    uint32_t slot = s.slot;
    alloc_obj *a = calloc(1, sizeof *a);
    buffer_obj *b = calloc(1, sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (buffer record)");
    }
    a->slot = slot;
    a->queued_writer = NO_SLOT;
    a->number = ++d->buffers->numbers;
    if (size) {
        memory_manager *m = NULL;
        cubec_status err = server_slot_memory(d, slot, &m);
        /* Memory freed by finished work can be reused now. */
        if (!err && d->buffers->deferred_count) sub_poll(d);
        /* Spec 3.9 "relocate when wanted": a full arena, or pages close to the device's
         * memory (never while a stream records a graph). */
        if (!err && d->buffers->arena_layout) err = server_relocate_when_wanted(d, slot);
        /* Spec 3.9's AddOnly permission while the stream records a graph: pages may be added
         * (nothing recorded names them) but none moves, and a reservation that cannot be
         * served dooms the capture (below). */
        int recording = server_graph_recording(d, s);
        if (!err) err = memory_alloc_flags(m, size, flags, &a->mem);
        if (err && m && cubec_status_code(err) == CUBEC_OUT_OF_MEMORY) {
            /* The pools already returned what they could without waiting: relieve the pressure
             * for real (frees waiting on the GPU, cleanup, relocation) and retry once. */
            uint32_t released = 0;
            int waits =
                d->buffers->deferred_count || d->sub->next_value > d->sub->completed_value + 1;
            cubec_status relief = server_memory_relieve(d, 1, &released);
            if (relief || waits || released) {
                cubec_status_free(err);
                err = relief ? relief : memory_alloc_flags(m, size, flags, &a->mem);
            }
        }
        if (err && recording)
            server_graph_doom(d, slot, cubec_status_code(err),
                              "creating a buffer of %" PRIu64 " bytes failed: %s", size,
                              cubec_status_message(err));
        if (err) {
            free(a);
            free(b);
            if (cubec_status_code(err) != CUBEC_OUT_OF_MEMORY)
                return status_annotate(err, "creating a buffer of %" PRIu64 " bytes", size);
            /* The pools' message counts the slot's own pages; the heap is every slot's. */
            uint64_t reserved = 0, in_use = 0;
            device_memory_totals(d, &reserved, &in_use);
            /* Relocation could have made room but may not run now: say so, or the caller
             * cannot tell why the same creation succeeds after the capture. */
            const char *held =
                d->buffers->arena_layout && server_relocation_blocked(d)
                    ? "; no buffer was relocated to make room, since a stream records a graph"
                    : "";
            return status_annotate(err,
                                   "creating a buffer of %" PRIu64 " bytes (stream %" PRIu64
                                   "; the pools of every stream hold %" PRIu64
                                   " bytes reserved, %" PRIu64
                                   " bytes in use, after returning their empty pages%s)",
                                   size, s.number, reserved, in_use, held);
        }
    }
    if (size && d->buffers->arena_layout) server_alloc_owner(d, a, a);
    a->refs = 1;
    b->alloc = a;
    b->size = size;
    b->refs = 1;
    cubec_status err = handle_table_insert(&d->buffers->handles, b, &out->id);
    if (err) {
        if (size) memory_free(d->streams->slots[slot].memory, &a->mem);
        free(a);
        free(b);
    }
    return err;
}

cubec_status server_buffer_adopt(cubec_device *d, stream_ref s, gpu_mem *page, uint64_t offset,
                                 uint64_t size, cubec_buffer *out)
{
    memory_manager *m = NULL;
    RETURN_IF_ERROR(server_slot_memory(d, s.slot, &m));
    alloc_obj *a = calloc(1, sizeof *a);
    buffer_obj *b = calloc(1, sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (buffer record)");
    }
    cubec_status err = memory_adopt(m, page, page->size, &a->mem);
    if (err) {
        free(a);
        free(b);
        return err;
    }
    /* From here the page is the pools': page_free returns it (and counts it out again). */
    d->buffers->page_bytes += page->size;
    d->buffers->pages++;
    a->slot = s.slot;
    a->queued_writer = NO_SLOT;
    a->number = ++d->buffers->numbers;
    a->refs = 1;
    b->alloc = a;
    b->offset = offset;
    b->size = size;
    b->refs = 1;
    err = handle_table_insert(&d->buffers->handles, b, &out->id);
    if (err) {
        memory_free(m, &a->mem);
        free(a);
        free(b);
    }
    return err;
}
