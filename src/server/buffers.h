/* Buffers: handles over pool allocations, their reference counts and the frees that wait for
 * the GPU (server/buffers.c). The allocation is the unit failures and hazards are tracked on. */
#ifndef CUBEC_SERVER_BUFFERS_H
#define CUBEC_SERVER_BUFFERS_H

#include "base/handle_table.h"
#include "failure/failure.h"
#include "gpu/gpu.h"
#include "memory/memory_manager.h"
#include "server/streams.h"

/* A live allocation shared by a buffer and its views. Freed into the pool only when the last
 * reference is gone and the GPU has passed `last_use`. */
typedef struct alloc_obj {
    mem_alloc mem;          /* page, offset, size; size 0 = no memory */
    uint32_t refs;          /* handles, views, queued tasks and events that use it */
    uint32_t slot;          /* owner: the slot of the stream that created it (its pools hold it) */
    uint32_t queued_writer; /* slot of the last queued task that writes it, or NO_SLOT */
    /* Slots (bit slot % 64) that queued a task reading it: a later writer on another slot submits
     * them first, so a write never overtakes a read issued before it (write-after-read). A bit
     * may outlive its task: draining a slot with nothing queued costs nothing. */
    uint64_t queued_readers;
    uint64_t last_use; /* timeline value of the last batch that reads or writes it */
    uint64_t last_write;
    /* Guards a program holds (cubec_buffer_raw): any launch may then reach the bytes through
     * their device address without binding them, so host transfers order after all earlier work
     * on the stream (server/transfer.c, transfer_after). */
    uint32_t raw_guards;
    /* An external page handed to the other APIs of the GPU (released to VK_QUEUE_FAMILY_EXTERNAL
     * by cubec_cuda_wait_stream) and not taken back yet (cubec_stream_wait_cuda acquires it). */
    uint32_t handed_out;
    uint64_t number; /* "buffer #n" in failure messages */
    taint_map taint; /* byte ranges that carry a failure (offsets within the allocation) */
    /* The image bound to this memory (server/images.c), or NULL: destroyed with the memory, once
     * no batch uses it. */
    gpu_image *image;
} alloc_obj;

#define NO_SLOT UINT32_MAX

typedef struct buffer_obj {
    alloc_obj *alloc;
    uint64_t offset; /* within the allocation */
    uint64_t size;
    uint32_t refs;
} buffer_obj;

typedef struct deferred_free {
    mem_alloc mem;
    uint32_t slot;    /* whose pools get it back */
    uint64_t after;   /* free once the timeline reaches this */
    gpu_image *image; /* bound to the memory: destroyed first (NULL: none) */
} deferred_free;

/* Backend memory of its own (an async read's staging) that the GPU may still use. */
typedef struct retired_mem {
    gpu_mem *mem;
    uint64_t after; /* free once the timeline reaches this, or at close after the queue idles */
} retired_mem;

/* Buffers and their memory (server/buffers.c). Guarded by the device lock. */
typedef struct buffer_store {
    handle_table handles; /* buffer_obj per live handle or view */
    handle_table guards;  /* page guards a program holds (server/raw.c) */
    memory_config memory_cfg;
    int arena_layout;        /* the layout has an arena: relocation's checks and owners apply */
    uint64_t numbers;        /* counter behind "buffer #n" */
    deferred_free *deferred; /* frees waiting for the GPU to pass their last use */
    uint32_t deferred_count, deferred_cap;
    retired_mem *retired; /* the same for backend memory outside the pools */
    uint32_t retired_count, retired_cap;
    uint64_t page_bytes; /* bytes of the pages every slot's pools hold ([memory] max_bytes) */
    uint32_t pages;      /* and how many they are */
} buffer_store;

MUST_USE cubec_status server_buffer_view(cubec_device *d, buffer_obj *parent, uint64_t offset,
                                         uint64_t size, cubec_buffer *out);
void server_buffer_release(cubec_device *d, uint64_t id, buffer_obj *b);
void server_alloc_release(cubec_device *d, alloc_obj *a);
void server_run_deferred_frees(cubec_device *d);
/* Frees `m` once the timeline reaches `after` (at once if it has): memory the GPU may still write
 * must never be freed under it, even after a failed wait (the device may still be running). */
void server_retire_mem(cubec_device *d, gpu_mem *m, uint64_t after);
MUST_USE cubec_status server_memory_init(cubec_device *d);
/* The device's memory budget and use (cubec_memory_report's budget fields). */
typedef struct server_budget {
    uint64_t budget, used;
    uint64_t returning; /* pages handed back to the driver, not freed yet */
    char source[24];
} server_budget;
void server_memory_budget(cubec_device *d, server_budget *out);
void server_memory_destroy(cubec_device *d);
/* The client side of an arena allocation's identity: the pool learns which alloc_obj a slice
 * belongs to (NULL: not movable, e.g. a free that waits on the GPU). */
void server_alloc_owner(cubec_device *d, alloc_obj *a, alloc_obj *owner);
static inline gpu_mem *buffer_page(const buffer_obj *b)
{
    return (gpu_mem *)b->alloc->mem.page;
}
static inline uint64_t buffer_device_offset(const buffer_obj *b)
{
    return b->alloc->mem.offset + b->offset;
}

#endif
