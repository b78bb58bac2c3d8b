/* Recording launches. The warm path allocates nothing: storage buffers are bound with push
 * descriptors, metadata goes in push constants (or in the metadata ring when it does not fit),
 * a barrier is recorded only when the hazard tracker sees a conflict, and the command buffer is
 * submitted every tasks_max launches. Arguments were checked by api/. */
#include "server/launch.h"
#include "base/log.h"
#include "server/buffers.h"
#include "server/device.h"
#include "server/kernels.h"
#include "server/streams.h"
#include "server/task.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void hold(bound_range *r, alloc_obj *a, uint64_t offset, uint64_t size)
{
    r->alloc = a;
    r->offset = offset;
    r->size = size;
    r->lead = 0;
    a->refs++;
}

cubec_status server_launch(cubec_device *d, stream_ref s, const launch_args *a)
{
    uint32_t slot = s.slot;
    const pipeline_entry *e = a->entry;
    if (!a->indirect && (a->groups[0] == 0 || a->groups[1] == 0 || a->groups[2] == 0))
        return NULL; /* an empty grid launches nothing, like a zero cube count in CubeCL */
    /* The ranges the task holds: the bound buffers, then those reached by address, which are
     * ordered, held and tainted alike and only left out of the descriptors. */
    uint32_t count = a->buffer_count + a->address_count;
    uint32_t writes = a->address_count ? a->address_writes << a->buffer_count : 0;
    uint32_t address_reads = a->address_count ? a->address_reads << a->buffer_count : 0;
    for (uint32_t i = 0; i < a->buffer_count; i++)
        if (e->refl.access[i] & CUBEC_ACCESS_WRITE) writes |= 1u << i;
    /* Images and texel buffers last: their write bits follow the buffers reached by address. */
    for (uint32_t k = 0; k < a->resource_count; k++)
        if (e->refl.resources[k].access & CUBEC_ACCESS_WRITE) writes |= 1u << (count + k);
    count += a->resource_count;
    RETURN_IF_ERROR(server_align(d, slot, a->buffers, count, writes, a->indirect));
    slot_state *ss = &d->streams->slots[slot];
    /* What does not fit the task record goes to the slot's arena until recording: metadata
     * beyond TASK_INLINE_INFO bytes, bindings beyond TASK_INLINE_BINDINGS (8-byte aligned). */
    uint32_t info_bytes = e->info_size > TASK_INLINE_INFO ? e->info_size : 0;
    uint32_t bind_bytes = count > TASK_INLINE_BINDINGS ? count * (uint32_t)sizeof(bound_range) : 0;
    uint32_t info_at = ss->arena_used, bind_at = (info_at + info_bytes + 7u) & ~7u;
    if (info_bytes + bind_bytes) {
        uint32_t need = bind_at + bind_bytes;
        if (need > ss->arena_cap) {
            uint32_t cap = ss->arena_cap ? ss->arena_cap * 2 : 64u << 10;
            while (cap < need)
                cap *= 2;
            unsigned char *na = realloc(ss->arena, cap);
            if (!na) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (metadata)");
            ss->arena = na;
            ss->arena_cap = cap;
        }
    }
    task *t;
    RETURN_IF_ERROR(server_reserve_task(d, s, TASK_LAUNCH, &t));
    t->name = a->name ? a->name : e->name;
    t->entry = e;
    t->count = count;
    t->addressed = a->address_count;
    t->address_reads = address_reads;
    t->resources = a->resource_count;
    t->sampler_bits = a->sampler_bits;
    t->texel_formats = a->texel_formats;
    t->write_mask = writes;
    t->bind_at = bind_at;
    for (uint32_t i = 0; i < count; i++) {
        const buffer_obj *b = a->buffers[i];
        bound_range *r = task_b(d->streams->slots, t, i);
        hold(r, b->alloc, buffer_device_offset(b), b->size);
        if (a->leads && i < a->buffer_count) r->lead = a->leads[i];
    }
    t->indirect.alloc = NULL;
    if (a->indirect)
        hold(&t->indirect, a->indirect->alloc,
             buffer_device_offset(a->indirect) + a->indirect_offset, 12);
    memcpy(t->groups, a->groups, sizeof t->groups);
    t->info_size = e->info_size;
    if (info_bytes) {
        memcpy(ss->arena + info_at, a->info, e->info_size);
        t->info_at = info_at;
    } else if (e->info_size) {
        memcpy(t->info, a->info, e->info_size);
    }
    if (info_bytes + bind_bytes) ss->arena_used = bind_at + bind_bytes;
    return server_queue_task(d, slot, t);
}
