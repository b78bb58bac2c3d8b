/* Host-visible rings (server/host_ring.c): metadata beyond push constants, and staging on
 * discrete GPUs. */
#ifndef CUBEC_SERVER_HOST_RING_H
#define CUBEC_SERVER_HOST_RING_H

#include "base/copy_pool.h"
#include "gpu/gpu.h"

/* Host-visible buffer used as a ring for metadata that does not fit push constants, and on
 * discrete GPUs for staging. */
typedef struct host_ring {
    gpu_mem *mem;
    unsigned char *mapped;
    uint64_t size, head;
    uint64_t *chunk_use; /* per chunk: last timeline value using it */
    uint64_t chunk_size;
    uint32_t chunks;
} host_ring;

/* Host-visible rings (server/host_ring.c). Device lock. */
typedef struct host_rings {
    host_ring info;     /* metadata beyond push constants */
    host_ring upload;   /* discrete only */
    host_ring readback; /* discrete only */
    copy_pool *copies;  /* discrete only: threads sharing the staging memcpys */
} host_rings;

MUST_USE cubec_status host_ring_init(cubec_device *d, host_ring *r, uint64_t size, uint32_t chunks,
                                     gpu_mem_kind kind);
void host_ring_destroy(cubec_device *d, host_ring *r);
/* Reserves `size` bytes (size <= chunk) aligned to `align`; waits if the GPU still uses them,
 * keeping the device lock (its callers are inside a drain or a staged transfer: the ring holds
 * their bytes, or the scheduler their tasks). */
MUST_USE cubec_status host_ring_alloc(cubec_device *d, host_ring *r, uint64_t size, uint64_t align,
                                      uint64_t *out_offset);

#endif
