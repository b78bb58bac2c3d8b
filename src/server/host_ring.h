/* Host-visible rings (server/host_ring.c): metadata beyond push constants, and staging on
 * discrete GPUs (created at their first use). */
#ifndef CUBEC_SERVER_HOST_RING_H
#define CUBEC_SERVER_HOST_RING_H

#include "base/copy_pool.h"
#include "gpu/gpu.h"

/* Host-visible buffer used as a ring for metadata that does not fit push constants, and on
 * discrete GPUs for staging. */
typedef struct host_ring {
    const char *name; /* "metadata", "upload", "readback": for errors */
    gpu_mem_kind kind;
    gpu_mem *mem; /* NULL until created */
    unsigned char *mapped;
    uint64_t size, head;
    uint64_t *chunk_use; /* per chunk: last timeline value using it */
    uint64_t chunk_size;
    uint32_t chunks;
} host_ring;

/* Host-visible rings (server/host_ring.c). Device lock. */
typedef struct host_rings {
    host_ring info;        /* metadata beyond push constants */
    host_ring upload;      /* discrete only; created at its first use */
    host_ring readback;    /* discrete only; created at its first use */
    copy_pool *copies;     /* with the first staging ring: threads sharing the staging memcpys */
    uint32_t copy_helpers; /* the copy pool's threads, chosen at open */
} host_rings;

/* Names the ring and sets its size; allocates nothing (host_ring_create does). */
void host_ring_plan(host_ring *r, const char *name, uint64_t size, uint32_t chunks,
                    gpu_mem_kind kind);
/* Allocates a planned ring; nothing when it exists. A failure names the ring and its size and
 * leaves it as planned, so a later call tries again. */
MUST_USE cubec_status host_ring_create(cubec_device *d, host_ring *r);
/* A staging ring (upload or readback) ready for host_ring_alloc: created, with the copy pool,
 * at the first transfer that needs it, so that a device whose transfers all take the direct
 * paths (unified memory, WebGPU's queue writes and mapped reads) never holds its memory. */
MUST_USE cubec_status host_rings_staging(cubec_device *d, host_ring *r);
void host_ring_destroy(cubec_device *d, host_ring *r);
/* Reserves `size` bytes (size <= chunk) aligned to `align`; waits if the GPU still uses them,
 * keeping the device lock (its callers are inside a drain or a staged transfer: the ring holds
 * their bytes, or the scheduler their tasks). */
MUST_USE cubec_status host_ring_alloc(cubec_device *d, host_ring *r, uint64_t size, uint64_t align,
                                      uint64_t *out_offset);

#endif
