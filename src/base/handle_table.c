/* Generation-counted handle table and the device tag registry (see handle_table.h). Generation 0
 * is never issued so that a zeroed handle is always invalid. A slot has issued generations 1 ..
 * generation - 1 (and, while live, its current one); generations only grow, and a slot that
 * reaches generation_limit is retired rather than wrapped, so an id is issued at most once. */
#include "base/handle_table.h"

#include "base/array.h"
#include "base/assert.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_FREE UINT32_MAX

/* One bit per tag: set while an open device holds it. Acquiring takes the lock (device opens are
 * rare); explaining a refusal reads a bit without it. */
static pthread_mutex_t tags_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint live_tags[65536 / 32];
static uint16_t last_tag;

static int tag_is_live(uint16_t tag)
{
    return (int)((atomic_load(&live_tags[tag / 32]) >> (tag % 32)) & 1u);
}

uint16_t handle_tag_acquire(void)
{
    pthread_mutex_lock(&tags_lock);
    uint16_t tag = 0;
    for (uint32_t tries = 0; tries < 65535 && !tag; tries++) {
        last_tag = (uint16_t)(last_tag == 65535 ? 1 : last_tag + 1);
        if (!tag_is_live(last_tag)) tag = last_tag;
    }
    if (!tag) tag = last_tag; /* every tag is held: share one (see the header) */
    atomic_fetch_or(&live_tags[tag / 32], 1u << (tag % 32));
    pthread_mutex_unlock(&tags_lock);
    return tag;
}

void handle_tag_release(uint16_t tag)
{
    if (tag) atomic_fetch_and(&live_tags[tag / 32], ~(1u << (tag % 32)));
}

void handle_table_init(handle_table *t, uint16_t tag, const char *kind)
{
    memset(t, 0, sizeof *t);
    t->free_head = NO_FREE;
    t->index_limit = HANDLE_INDEX_LIMIT;
    t->generation_limit = HANDLE_GENERATION_LIMIT;
    t->tag = tag;
    t->kind = kind;
}

void handle_table_free(handle_table *t)
{
    free(t->slots);
    t->slots = NULL;
    t->count = t->capacity = t->live = t->retired = 0;
    t->free_head = NO_FREE;
}

static uint32_t id_index(uint64_t id)
{
    return (uint32_t)id & HANDLE_INDEX_MASK;
}

static uint32_t id_generation(uint64_t id)
{
    return (uint32_t)(id >> HANDLE_GENERATION_SHIFT) & HANDLE_GENERATION_MASK;
}

static uint16_t id_tag(uint64_t id)
{
    return (uint16_t)(id >> HANDLE_TAG_SHIFT);
}

cubec_status handle_table_insert(handle_table *t, void *object, uint64_t *out_id)
{
    uint32_t index;
    if (t->free_head != NO_FREE) {
        index = t->free_head;
        t->free_head = t->slots[index].next_free;
    } else {
        if (t->count >= t->index_limit) {
            if (t->retired)
                return status_make(CUBEC_OUT_OF_MEMORY,
                                   "too many %ss: %u are live and %u %s handle slots were retired "
                                   "after issuing %u handles each; a device holds at most %u %s "
                                   "handles",
                                   t->kind, t->live, t->retired, t->kind, t->generation_limit - 1,
                                   t->index_limit, t->kind);
            return status_make(CUBEC_OUT_OF_MEMORY,
                               "too many %ss: a device holds at most %u live %s handles (release "
                               "some first)",
                               t->kind, t->index_limit, t->kind);
        }
        if (array_grow_ex((void **)&t->slots, &t->capacity, (uint64_t)t->count + 1,
                          sizeof *t->slots, 64, t->index_limit, realloc))
            return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory growing the %s table",
                               t->kind);
        index = t->count++;
        t->slots[index].generation = 1;
    }
    t->slots[index].object = object;
    t->slots[index].next_free = NO_FREE;
    t->live++;
    *out_id = handle_id_make(t->tag, t->slots[index].generation, index);
    return NULL;
}

void *handle_table_get(const handle_table *t, uint64_t id)
{
    uint32_t index = id_index(id);
    if (id_tag(id) != t->tag || index >= t->count) return NULL;
    const handle_slot *s = &t->slots[index];
    if (s->generation != id_generation(id)) return NULL;
    return s->object;
}

/* What it means for an object of this kind to be gone, as the API says it. */
static const char *gone(const char *kind)
{
    if (!strcmp(kind, "kernel") || !strcmp(kind, "graph")) return "destroyed";
    if (!strcmp(kind, "profile")) return "ended or abandoned";
    return "released";
}

const char *handle_table_explain(const handle_table *t, uint64_t id, char *buf, size_t cap)
{
    uint16_t tag = id_tag(id);
    uint32_t generation = id_generation(id), index = id_index(id);
    if (id == 0) {
        snprintf(buf, cap, "the %s handle is zero (not created)", t->kind);
    } else if (tag == t->tag) {
        /* A slot has issued generations 1 .. its current one; the current one is not live here
         * (get failed), so it was never issued. */
        const handle_slot *s = index < t->count ? &t->slots[index] : NULL;
        int issued = s && generation != 0 && generation < s->generation;
        if (issued)
            snprintf(buf, cap, "%s handle 0x%016" PRIx64 " is stale: that %s was %s", t->kind, id,
                     t->kind, gone(t->kind));
        else
            snprintf(buf, cap, "%s handle 0x%016" PRIx64 " is unknown: this device never issued it",
                     t->kind, id);
    } else if (tag != 0 && tag_is_live(tag)) {
        snprintf(buf, cap,
                 "%s handle 0x%016" PRIx64 " belongs to another device (tag %u; this device's tag "
                 "is %u)",
                 t->kind, id, tag, t->tag);
    } else {
        snprintf(buf, cap,
                 "%s handle 0x%016" PRIx64 " is unknown: no open device issued it (a made-up "
                 "value, or a handle of a device that was closed)",
                 t->kind, id);
    }
    return buf;
}

cubec_status handle_table_lookup(const handle_table *t, uint64_t id, const char *arg, void **out)
{
    void *o = handle_table_get(t, id);
    if (o) {
        *out = o;
        return NULL;
    }
    char why[192];
    return INVALID_ARG("%s: %s", arg, handle_table_explain(t, id, why, sizeof why));
}

void handle_table_remove(handle_table *t, uint64_t id)
{
    uint32_t index = id_index(id);
    if (!handle_table_get(t, id)) return;
    handle_slot *s = &t->slots[index];
    s->object = NULL;
    CUBEC_ASSERT(t->live > 0); /* the id was live */
    t->live--;
    /* Wrapping would issue generation 1 again while its old handles may still be held: the slot
     * is retired instead (it keeps generation_limit, which no id can carry). */
    if (++s->generation >= t->generation_limit) {
        s->generation = t->generation_limit;
        t->retired++;
        return;
    }
    s->next_free = t->free_head;
    t->free_head = index;
}
