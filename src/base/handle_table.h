/* Generation-counted handles. A handle id packs (device tag:16, generation:16, index:32); the
 * generation of a slot changes every time it is freed, so a released handle, a handle of another
 * device and a made-up number are all detected and refused instead of being dereferenced.
 * Not thread-safe: the owner (the device) holds its lock. */
#ifndef CUBEC_BASE_HANDLE_TABLE_H
#define CUBEC_BASE_HANDLE_TABLE_H

#include "base/status.h"

#include <stdint.h>

typedef struct handle_slot {
    void *object; /* NULL when free */
    uint32_t next_free;
    uint16_t generation;
} handle_slot;

typedef struct handle_table {
    handle_slot *slots;
    uint32_t count, capacity;
    uint32_t free_head; /* UINT32_MAX when none */
    uint32_t live;
    uint16_t tag;     /* device tag stamped into every id */
    const char *kind; /* "buffer", "kernel": used in error messages */
} handle_table;

void handle_table_init(handle_table *t, uint16_t tag, const char *kind);
void handle_table_free(handle_table *t);
MUST_USE cubec_status handle_table_insert(handle_table *t, void *object, uint64_t *out_id);
/* The object of a live id, or NULL. */
void *handle_table_get(const handle_table *t, uint64_t id);
/* Like get, but explains a refusal: argument name, value and why (zero, other device, stale). */
MUST_USE cubec_status handle_table_lookup(const handle_table *t, uint64_t id, const char *arg,
                                          void **out);
void handle_table_remove(handle_table *t, uint64_t id);

#endif
