/* Generation-counted handle table (see handle_table.h). Generation 0 is never issued so that a
 * zeroed handle is always invalid. */
#include "base/handle_table.h"

#include "base/array.h"
#include "base/assert.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NO_FREE UINT32_MAX

void handle_table_init(handle_table *t, uint16_t tag, const char *kind)
{
    memset(t, 0, sizeof *t);
    t->free_head = NO_FREE;
    t->tag = tag;
    t->kind = kind;
}

void handle_table_free(handle_table *t)
{
    free(t->slots);
    t->slots = NULL;
    t->count = t->capacity = t->live = 0;
    t->free_head = NO_FREE;
}

static uint64_t make_id(uint16_t tag, uint16_t gen, uint32_t index)
{
    return ((uint64_t)tag << 48) | ((uint64_t)gen << 32) | index;
}

cubec_status handle_table_insert(handle_table *t, void *object, uint64_t *out_id)
{
    uint32_t index;
    if (t->free_head != NO_FREE) {
        index = t->free_head;
        t->free_head = t->slots[index].next_free;
    } else {
        /* NO_FREE is not an index. */
        if (t->count == NO_FREE) return status_make(CUBEC_OUT_OF_MEMORY, "too many %ss", t->kind);
        if (array_grow_ex((void **)&t->slots, &t->capacity, (uint64_t)t->count + 1,
                          sizeof *t->slots, 64, NO_FREE, realloc))
            return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory growing the %s table",
                               t->kind);
        index = t->count++;
        t->slots[index].generation = 1;
    }
    t->slots[index].object = object;
    t->slots[index].next_free = NO_FREE;
    t->live++;
    *out_id = make_id(t->tag, t->slots[index].generation, index);
    return NULL;
}

void *handle_table_get(const handle_table *t, uint64_t id)
{
    uint32_t index = (uint32_t)id;
    if ((uint16_t)(id >> 48) != t->tag || index >= t->count) return NULL;
    const handle_slot *s = &t->slots[index];
    if (s->generation != (uint16_t)(id >> 32)) return NULL;
    return s->object;
}

cubec_status handle_table_lookup(const handle_table *t, uint64_t id, const char *arg, void **out)
{
    void *o = handle_table_get(t, id);
    if (o) {
        *out = o;
        return NULL;
    }
    if (id == 0) return INVALID_ARG("%s: the %s handle is zero (not created)", arg, t->kind);
    if ((uint16_t)(id >> 48) != t->tag)
        return INVALID_ARG("%s: %s handle 0x%016" PRIx64 " belongs to another device", arg, t->kind,
                           id);
    return INVALID_ARG("%s: %s handle 0x%016" PRIx64 " was released or never existed", arg, t->kind,
                       id);
}

void handle_table_remove(handle_table *t, uint64_t id)
{
    uint32_t index = (uint32_t)id;
    if (!handle_table_get(t, id)) return;
    handle_slot *s = &t->slots[index];
    s->object = NULL;
    s->generation = (uint16_t)(s->generation + 1 ? s->generation + 1 : 1);
    if (s->generation == 0) s->generation = 1;
    s->next_free = t->free_head;
    t->free_head = index;
    CUBEC_ASSERT(t->live > 0); /* the id was live */
    t->live--;
}
