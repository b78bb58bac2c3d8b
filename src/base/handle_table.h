/* Generation-counted handles. A handle id packs (device tag:16, generation:16, index:32); the
 * generation of a slot changes every time it is freed, so a released handle, a handle of another
 * device and a made-up number are all detected and refused instead of being dereferenced, and the
 * refusal says which of them it was. Not thread-safe: the owner (the device) holds its lock.
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

typedef struct handle_slot {
    void *object; /* NULL when free */
    uint32_t next_free;
    uint16_t generation;
    uint8_t wrapped; /* the generation wrapped: every generation may have been issued */
} handle_slot;

typedef struct handle_table {
    handle_slot *slots;
    uint32_t count, capacity;
    uint32_t free_head; /* UINT32_MAX when none */
    uint32_t live;
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
void handle_table_remove(handle_table *t, uint64_t id);

#endif
