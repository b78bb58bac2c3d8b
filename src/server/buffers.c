/* The buffer store: handles over pool allocations, their release and deferred frees, and the
 * device's memory budget. It calls only the submission below it; creating buffers and relieving
 * memory (which call graphs and relocation) are memory_ops.c's. An
 * allocation returns to its pool only when its last handle is released and the GPU has finished
 * the last batch that used it, so queued work never sees its memory reused. */
#include "server/buffers.h"
#include "base/array.h"
#include "base/assert.h"
#include "base/log.h"
#include "server/device.h"
#include "server/streams.h"
#include "server/submission.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cubec_status server_memory_init(cubec_device *d)
{
    uint64_t range = d->info.max_storage_buffer_range;
    uint64_t max_alloc = d->info.max_allocation_size ? d->info.max_allocation_size : range;
    uint64_t max_page = range < max_alloc ? range : max_alloc;
    /* Round the page down to a power of two so the pool ladder divides evenly. */
    uint64_t p2 = 1;
    while (p2 * 2 <= max_page)
        p2 *= 2;
    uint64_t align = d->info.storage_offset_alignment;
    if (align < 16) align = 16; /* room for uvec4 copies at any allocation start */
    /* Any buffer may be bound as a module's uniform block (docs/kernels.md), whose offset the
     * device may want more aligned than storage (NVIDIA: 64 against 16). */
    if (d->gpu->caps.uniform_offset_alignment > align)
        align = d->gpu->caps.uniform_offset_alignment;
    memory_config *mc = &d->buffers->memory_cfg;
    *mc = (memory_config){.max_page_size = p2, .max_alloc_size = max_alloc, .alignment = align};
    mc->preset = (memory_preset)d->config.memory_preset;
    /* Where the implementation tracks hazards per buffer object (webgpu), allocations sharing a
     * page would put a barrier between independent kernels: each gets a page of its own, at
     * the cost of the exclusive pools' padding (docs/memory.md, "Presets"). */
    _Static_assert(MEMORY_PRESET_AUTO == 4, "[memory] preset's choices in base/config.c");
    if (mc->preset == MEMORY_PRESET_AUTO)
        mc->preset =
            d->gpu->caps.hazards_per_buffer ? MEMORY_PRESET_EXCLUSIVE : MEMORY_PRESET_LADDER;
    mc->persistent_memory = (persistent_memory)d->config.persistent_memory;
    /* The layout is checked here, so that a bad one fails the open rather than the first
     * allocation of each stream. */
    char what[2800];
    if (mc->preset == MEMORY_PRESET_CUSTOM) {
        config_describe(&d->config, "CUBEC_MEMORY_POOLS", what, sizeof what);
        RETURN_IF_ERROR(
            status_annotate(pool_list_parse(d->config.memory_pools, &mc->custom), "%s", what));
    } else {
        config_describe(&d->config, "CUBEC_MEMORY_PRESET", what, sizeof what);
    }
    pool_limits limits = {p2, max_alloc, align};
    pool_list built;
    RETURN_IF_ERROR(
        status_annotate(pool_list_build(mc->preset, &mc->custom, &limits, &built), "%s", what));
    /* Only an arena relocates: other layouts skip relocation's work on every allocation. */
    for (uint32_t i = 0; i < built.count; i++)
        if (built.pools[i].kind == POOL_SPEC_ARENA) d->buffers->arena_layout = 1;
    return NULL;
}

static void free_into_slot(cubec_device *d, uint32_t slot, const mem_alloc *m)
{
    memory_free(d->streams->slots[slot].memory, m);
}

/* A deferred free: the image bound to the memory goes before the memory. */
static void free_deferred(cubec_device *d, const deferred_free *f)
{
    gpu_image_free(d->gpu, f->image);
    free_into_slot(d, f->slot, &f->mem);
}

void server_memory_destroy(cubec_device *d)
{
    /* Called after the queue went idle (or the device was abandoned). */
    for (uint32_t i = 0; i < d->buffers->retired_count; i++)
        gpu_mem_free(d->gpu, d->buffers->retired[i].mem);
    d->buffers->retired_count = 0;
    free(d->buffers->retired);
    d->buffers->retired = NULL;
    for (uint32_t i = 0; i < d->buffers->deferred_count; i++)
        free_deferred(d, &d->buffers->deferred[i]);
    d->buffers->deferred_count = 0;
    free(d->buffers->deferred);
    d->buffers->deferred = NULL;
    for (uint32_t i = 0; d->streams->slots && i < d->streams->max_streams; i++) {
        if (d->streams->slots[i].memory) memory_manager_destroy(d->streams->slots[i].memory);
        d->streams->slots[i].memory = NULL;
    }
}

static void on_progress(cubec_device *d)
{
    if (d->buffers->deferred_count || d->buffers->retired_count) server_run_deferred_frees(d);
}

const sub_listener buffers_listener = {.name = "buffers", .progress = on_progress};

void server_run_deferred_frees(cubec_device *d)
{
    uint32_t keep = 0;
    for (uint32_t i = 0; i < d->buffers->deferred_count; i++) {
        if (d->buffers->deferred[i].after <= d->sub->completed_value)
            free_deferred(d, &d->buffers->deferred[i]);
        else
            d->buffers->deferred[keep++] = d->buffers->deferred[i];
    }
    d->buffers->deferred_count = keep;
    keep = 0;
    for (uint32_t i = 0; i < d->buffers->retired_count; i++) {
        if (d->buffers->retired[i].after <= d->sub->completed_value)
            gpu_mem_free(d->gpu, d->buffers->retired[i].mem);
        else
            d->buffers->retired[keep++] = d->buffers->retired[i];
    }
    d->buffers->retired_count = keep;
}

void server_retire_mem(cubec_device *d, gpu_mem *m, uint64_t after)
{
    if (!m) return;
    if (after <= d->sub->completed_value) {
        gpu_mem_free(d->gpu, m);
        return;
    }
    if (array_grow((void **)&d->buffers->retired, &d->buffers->retired_cap,
                   (uint64_t)d->buffers->retired_count + 1, sizeof(retired_mem)) != 0) {
        /* Freeing it under the GPU could crash the driver: keep it until close instead. */
        LOG(LOG_WARN, LOG_SYS_MEMORY,
            "host out of memory: %" PRIu64 " bytes of staging are kept until the device closes",
            m->size);
        return;
    }
    d->buffers->retired[d->buffers->retired_count++] = (retired_mem){m, after};
}

void server_alloc_release(cubec_device *d, alloc_obj *a)
{
    CUBEC_ASSERT(a->refs > 0); /* every release matches a reference: handles, tasks, holds */
    if (--a->refs) return;
    taint_free(&a->taint);
    if (a->mem.size) {
        if (a->last_use > d->sub->completed_value) {
            /* The record goes now, the slice later: relocation must not move it meanwhile. */
            if (d->buffers->arena_layout) server_alloc_owner(d, a, NULL);
            if (array_grow((void **)&d->buffers->deferred, &d->buffers->deferred_cap,
                           (uint64_t)d->buffers->deferred_count + 1, sizeof(deferred_free)) != 0) {
                /* Cannot defer: wait for the GPU (keeping the lock) instead of leaking or
                 * racing it. */
                cubec_status e = sub_wait_flags(d, a->last_use, WAIT_KEEP_LOCK);
                cubec_status_free(e);
                gpu_image_free(d->gpu, a->image);
                free_into_slot(d, a->slot, &a->mem);
                free(a);
                return;
            }
            d->buffers->deferred[d->buffers->deferred_count++] =
                (deferred_free){a->mem, a->slot, a->last_use, a->image};
        } else {
            gpu_image_free(d->gpu, a->image);
            free_into_slot(d, a->slot, &a->mem);
        }
    } else {
        gpu_image_free(d->gpu, a->image);
    }
    free(a);
}

cubec_status server_buffer_view(cubec_device *d, buffer_obj *parent, uint64_t offset, uint64_t size,
                                cubec_buffer *out)
{
    buffer_obj *b = calloc(1, sizeof *b);
    if (!b) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (view record)");
    b->alloc = parent->alloc;
    b->offset = parent->offset + offset;
    b->size = size;
    b->refs = 1;
    cubec_status err = handle_table_insert(&d->buffers->handles, b, &out->id);
    if (err) {
        free(b);
        return err;
    }
    b->alloc->refs++;
    return NULL;
}

void server_buffer_release(cubec_device *d, uint64_t id, buffer_obj *b)
{
    CUBEC_ASSERT(b->refs > 0);
    if (--b->refs) return;
    handle_table_remove(&d->buffers->handles, id);
    server_alloc_release(d, b->alloc);
    free(b);
}

void server_memory_budget(cubec_device *d, server_budget *out)
{
    gpu_budget b = {0};
    if (d->gpu->ops->memory_budget) d->gpu->ops->memory_budget(d->gpu, &b);
    if (!b.source) {
        /* No budget from the backend: the heap buffers live in, as the device reports it. */
        b.budget = d->info.device_local_heap_size;
        b.source = "heap size";
    }
    uint64_t cap = (uint64_t)d->config.memory_max_bytes;
    if (cap && (b.budget == 0 || cap < b.budget)) {
        /* The cap is the budget cubec keeps to; its use is the pools' pages. */
        b.budget = cap;
        b.usage_known = 0;
        b.source = "max_bytes";
    }
    out->budget = b.budget;
    out->used = b.usage_known ? b.usage : d->buffers->page_bytes;
    out->returning = b.returning;
    snprintf(out->source, sizeof out->source, "%s", b.source);
}

void server_alloc_owner(cubec_device *d, alloc_obj *a, alloc_obj *owner)
{
    if (a->mem.size) memory_set_owner(d->streams->slots[a->slot].memory, &a->mem, owner);
}
