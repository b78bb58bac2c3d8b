/* The WebGPU backend's bind-group cache: a bind group is an object WebGPU validates when it is
 * made (wgpu spends most of a launch's host time there, gfx-rs/wgpu#9738), while the server
 * binds the same few (pipeline, buffers, offsets) over and over. Groups are kept in a
 * direct-mapped table keyed by the pipeline's and buffers' identities (never reused, so a
 * freed buffer's address taken again cannot hit a stale group); a collision replaces the slot.
 * A group that a submitted command buffer uses is kept alive by the implementation's reference,
 * so replacing it here is safe at any time. Used under wg_gpu.queue_lock only. */
#include "gpu/webgpu/wg_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct wg_bind_key_entry {
    uint64_t id, offset, size;
    uint32_t binding, pad;
} wg_bind_key_entry;

struct wg_bind_entry {
    WGPUBindGroup group; /* NULL: an empty slot */
    uint64_t pipeline_id;
    uint32_t set, count;
    wg_bind_key_entry b[GPU_MAX_BINDINGS + 2 * GPU_MAX_RESOURCES]; /* buffers, then images */
};

static uint64_t key_hash(uint64_t pipeline_id, uint32_t set, const wg_bind_key_entry *b,
                         uint32_t count)
{
    uint64_t h = 1469598103934665603ull ^ pipeline_id ^ ((uint64_t)set << 56);
    const unsigned char *bytes = (const unsigned char *)b;
    for (size_t i = 0; i < count * sizeof *b; i++)
        h = (h ^ bytes[i]) * 1099511628211ull;
    return h;
}

cubec_status wg_bind_group(wg_gpu *w, const gpu_pipeline *pl, uint32_t set,
                           const WGPUBindGroupEntry *entries, uint32_t count,
                           const uint64_t *mem_ids, WGPUBindGroup *out)
{
    if (!w->bind_cache) {
        w->bind_cache = calloc(WG_BIND_CACHE_SLOTS, sizeof *w->bind_cache);
        if (!w->bind_cache)
            return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (bind-group cache)");
    }
    wg_bind_key_entry key[GPU_MAX_BINDINGS + 2 * GPU_MAX_RESOURCES];
    memset(key, 0, sizeof key);
    for (uint32_t i = 0; i < count; i++)
        key[i] = (wg_bind_key_entry){.id = mem_ids[i],
                                     .offset = entries[i].offset,
                                     .size = entries[i].size,
                                     .binding = entries[i].binding};
    wg_bind_entry *slot = &w->bind_cache[key_hash(pl->id, set, key, count) % WG_BIND_CACHE_SLOTS];
    if (slot->group && slot->pipeline_id == pl->id && slot->set == set && slot->count == count &&
        !memcmp(slot->b, key, count * sizeof key[0])) {
        *out = slot->group;
        return NULL;
    }
    WGPUBindGroupDescriptor d = {
        .layout = pl->groups[set], .entryCount = count, .entries = entries};
    WGPUBindGroup group = w->p->DeviceCreateBindGroup(w->device, &d);
    if (!group) return status_make(CUBEC_INTERNAL, "wgpuDeviceCreateBindGroup returned NULL");
    if (slot->group) w->p->BindGroupRelease(slot->group);
    slot->group = group;
    slot->pipeline_id = pl->id;
    slot->set = set;
    slot->count = count;
    memcpy(slot->b, key, count * sizeof key[0]);
    *out = group;
    return NULL;
}

void wg_bind_cache_free(wg_gpu *w)
{
    if (!w->bind_cache) return;
    for (uint32_t i = 0; i < WG_BIND_CACHE_SLOTS; i++)
        if (w->bind_cache[i].group) w->p->BindGroupRelease(w->bind_cache[i].group);
    free(w->bind_cache);
    w->bind_cache = NULL;
}
