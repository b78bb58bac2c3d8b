/* The WebGPU backend's bind-group cache: a bind group is an object WebGPU validates when it is
 * made (wgpu spends most of a launch's host time there, gfx-rs/wgpu#9738), while the server
 * binds the same (pipeline, buffers, offsets) over and over. Groups are keyed by the pipeline's
 * and buffers' identities (never reused, so a freed buffer's address taken again cannot hit a
 * stale group) in a set-associative table, least recently used first out within a set.
 *
 * Why associative: a direct-mapped table of 1024 slots made 638 of 1000 groups again on every
 * round of 1000 launches over 1000 buffers (test_bind_cache_keeps_a_round), as keys that
 * collide evict each other each time. With WG_BIND_CACHE_WAYS ways a set overflows only when
 * more of the working set hash into it than it has ways; 512 sets of 8 keep that round whole.
 *
 * A group that a submitted command buffer uses is kept alive by the implementation's reference,
 * so evicting it here is safe at any time. Used under wg_gpu.queue_lock only. */
#include "gpu/webgpu/wg_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct wg_bind_key_entry {
    uint64_t id, offset, size;
    uint32_t binding, pad;
} wg_bind_key_entry;

struct wg_bind_entry {
    WGPUBindGroup group; /* NULL: an empty way */
    uint64_t pipeline_id;
    uint64_t used; /* wg_gpu.bind_tick at the last hit */
    uint32_t set, count;
    wg_bind_key_entry *b; /* `count` of them (malloc'ed): buffers, then images */
};

static uint64_t key_hash(uint64_t pipeline_id, uint32_t set, const wg_bind_key_entry *b,
                         uint32_t count)
{
    /* FNV-1a over the keys' words (every lookup pays it: words, not bytes). */
    uint64_t h = 1469598103934665603ull ^ pipeline_id ^ ((uint64_t)set << 56);
    for (uint32_t i = 0; i < count; i++) {
        const uint64_t words[4] = {b[i].id, b[i].offset, b[i].size, b[i].binding};
        for (int k = 0; k < 4; k++)
            h = (h ^ words[k]) * 1099511628211ull;
    }
    return h ^ (h >> 29); /* the set index takes low bits: fold the high ones in */
}

static int matches(const wg_bind_entry *e, uint64_t pipeline_id, uint32_t set,
                   const wg_bind_key_entry *key, uint32_t count)
{
    return e->group && e->pipeline_id == pipeline_id && e->set == set && e->count == count &&
           !memcmp(e->b, key, count * sizeof key[0]);
}

cubec_status wg_bind_group(wg_gpu *w, const gpu_pipeline *pl, uint32_t set,
                           const WGPUBindGroupEntry *entries, uint32_t count,
                           const uint64_t *mem_ids, WGPUBindGroup *out)
{
    if (!w->bind_cache) {
        w->bind_cache =
            calloc((size_t)WG_BIND_CACHE_SETS * WG_BIND_CACHE_WAYS, sizeof *w->bind_cache);
        if (!w->bind_cache)
            return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (bind-group cache)");
    }
    wg_bind_key_entry key[GPU_MAX_BINDINGS + 2 * GPU_MAX_RESOURCES];
    for (uint32_t i = 0; i < count; i++)
        key[i] = (wg_bind_key_entry){.id = mem_ids[i],
                                     .offset = entries[i].offset,
                                     .size = entries[i].size,
                                     .binding = entries[i].binding};
    uint64_t h = key_hash(pl->id, set, key, count);
    wg_bind_entry *ways = &w->bind_cache[(h % WG_BIND_CACHE_SETS) * WG_BIND_CACHE_WAYS];
    wg_bind_entry *victim = &ways[0];
    w->bind_tick++;
    for (uint32_t i = 0; i < WG_BIND_CACHE_WAYS; i++) {
        wg_bind_entry *e = &ways[i];
        if (matches(e, pl->id, set, key, count)) {
            e->used = w->bind_tick;
            *out = e->group;
            return NULL;
        }
        /* An empty way first, else the least recently used. */
        if (victim->group && (!e->group || e->used < victim->used)) victim = e;
    }
    wg_bind_key_entry *kept = malloc((count ? count : 1) * sizeof *kept);
    if (!kept) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (bind-group cache)");
    WGPUBindGroupDescriptor d = {
        .layout = pl->groups[set], .entryCount = count, .entries = entries};
    WGPUBindGroup group = w->p->DeviceCreateBindGroup(w->device, &d);
    if (!group) {
        free(kept);
        return status_make(CUBEC_INTERNAL, "wgpuDeviceCreateBindGroup returned NULL");
    }
    w->bind_groups_made++;
    if (victim->group) w->p->BindGroupRelease(victim->group);
    free(victim->b);
    victim->b = kept;
    victim->group = group;
    victim->pipeline_id = pl->id;
    victim->used = w->bind_tick;
    victim->set = set;
    victim->count = count;
    memcpy(victim->b, key, count * sizeof key[0]);
    *out = group;
    return NULL;
}

void wg_bind_cache_free(wg_gpu *w)
{
    if (!w->bind_cache) return;
    for (uint32_t i = 0; i < WG_BIND_CACHE_SETS * WG_BIND_CACHE_WAYS; i++)
        if (w->bind_cache[i].group) {
            w->p->BindGroupRelease(w->bind_cache[i].group);
            free(w->bind_cache[i].b);
        }
    free(w->bind_cache);
    w->bind_cache = NULL;
}
