/* A pool of threads that share large memcpys. On a discrete GPU every transfer from or to
 * ordinary (pageable) memory goes through a staging ring, and one core's memcpy (6-8 GB/s on the
 * H200's host) is then the whole transfer's speed; several cores copying disjoint parts of each
 * chunk, while the DMA of the previous chunk runs, lift it towards the bus's. */
#ifndef CUBEC_BASE_COPY_POOL_H
#define CUBEC_BASE_COPY_POOL_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct copy_pool copy_pool;

/* Copies below this size are done by the caller alone: waking helpers costs more. */
#define COPY_POOL_MIN_SPLIT (1u << 20)

/* A pool with `helpers` threads besides the caller (0: none; copies are plain memcpys). */
MUST_USE cubec_status copy_pool_create(uint32_t helpers, copy_pool **out);
/* NULL is accepted. Waits for nothing: no copy may be running. */
void copy_pool_destroy(copy_pool *p);
/* memcpy(dst, src, n), split between the caller and the helpers when n is large. The regions
 * must not overlap. One copy at a time per pool (the caller holds the device lock). */
void copy_pool_memcpy(copy_pool *p, void *dst, const void *src, size_t n);
/* The helpers' count (0 for NULL). */
uint32_t copy_pool_helpers(const copy_pool *p);

#endif
