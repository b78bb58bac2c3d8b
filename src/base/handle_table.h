/* Generation-counted handles. A handle id packs (device tag:16, generation:24, index:24); the
 * generation of a slot changes every time it is freed, so a released handle, a handle of another
 * device and a made-up number are all detected and refused instead of being dereferenced, and the
 * refusal says which of them it was. Not thread-safe: the owner (the device) holds its lock.
 *
 * No id is issued twice by one table: a slot whose generation would wrap (after 16 777 215 uses)
 * is retired, never used again, so a released handle can never name a later object. The price is
 * a limit of 16 777 216 live handles of one kind per device, refused with CUBEC_OUT_OF_MEMORY
 * naming the limit (and the index space running out, which takes 2^48 creations).
 *
 * Device tags come from a process-wide registry (documented global state, next to the config and
 * the logger): every open device holds a distinct non-zero tag, so a handle whose tag is another
 * open device's can be told from a made-up one, and tags are not reused until the 16-bit space
 * wraps, so a handle of a closed device is not mistaken for one of a later device. */
#ifndef CUBEC_BASE_HANDLE_TABLE_H
#define CUBEC_BASE_HANDLE_TABLE_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

#define HANDLE_TAG_SHIFT 48
#define HANDLE_GENERATION_SHIFT 24
#define HANDLE_INDEX_MASK 0xffffffu
#define HANDLE_GENERATION_MASK 0xffffffu
/* Indexes are 0 .. HANDLE_INDEX_LIMIT - 1: the most live handles of one table. */
#define HANDLE_INDEX_LIMIT (1u << 24)
/* Generations are 1 .. HANDLE_GENERATION_LIMIT - 1; a slot that has issued the last is retired. */
#define HANDLE_GENERATION_LIMIT (1u << 24)

/* The id of (tag, generation, index); for tests that make ids up. */
static inline uint64_t handle_id_make(uint16_t tag, uint32_t generation, uint32_t index)
{
    return ((uint64_t)tag << HANDLE_TAG_SHIFT) |
           ((uint64_t)(generation & HANDLE_GENERATION_MASK) << HANDLE_GENERATION_SHIFT) |
           (index & HANDLE_INDEX_MASK);
}

typedef struct handle_slot {
    void *object;        /* NULL when free */
    uint32_t next_free;  /* the free list's next index */
    uint32_t generation; /* of the live id, or the next to issue; generation_limit: retired */
} handle_slot;

typedef struct handle_table {
    handle_slot *slots;
    uint32_t count, capacity;
    uint32_t free_head; /* UINT32_MAX when none */
    uint32_t live;
    uint32_t retired; /* slots that issued their last generation: never used again */
    /* HANDLE_INDEX_LIMIT and HANDLE_GENERATION_LIMIT; tests lower them to reach the limits fast. */
    uint32_t index_limit, generation_limit;
    uint16_t tag;     /* device tag stamped into every id */
    const char *kind; /* "buffer", "kernel", "graph", "profile": used in error messages */
} handle_table;

/* A tag no open device holds (the next one after the last issued), now held until released. When
 * all 65535 are held (each is an open Vulkan device: not in practice) a held one is shared, which
 * only makes a refusal's explanation less precise. */
uint16_t handle_tag_acquire(void);
/* Gives a tag back; 0 is ignored. */
void handle_tag_release(uint16_t tag);

void handle_table_init(handle_table *t, uint16_t tag, const char *kind);
void handle_table_free(handle_table *t);
/* A new id for `object`, never issued before by this table. CUBEC_OUT_OF_MEMORY naming the limit
 * when index_limit handles are live (or every index was retired). */
MUST_USE cubec_status handle_table_insert(handle_table *t, void *object, uint64_t *out_id);
/* The object of a live id, or NULL. */
void *handle_table_get(const handle_table *t, uint64_t id);
/* Like get, but explains a refusal: CUBEC_INVALID_ARGUMENT "<arg>: <handle_table_explain>". */
MUST_USE cubec_status handle_table_lookup(const handle_table *t, uint64_t id, const char *arg,
                                          void **out);
/* Why `id` names no live object of `t`, into buf (returned): the handle is zero; stale (its object
 * was released); unknown, never issued by this device (its tag is this device's); belongs to
 * another device (its tag is another open device's); or unknown, issued by no open device. */
const char *handle_table_explain(const handle_table *t, uint64_t id, char *buf, size_t cap);
/* Frees the slot of a live id (a dead one is ignored); the slot's next id has a new generation, or
 * the slot is retired when it has issued its last. */
void handle_table_remove(handle_table *t, uint64_t id);

#endif
