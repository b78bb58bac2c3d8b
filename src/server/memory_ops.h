/* Memory operations (server/memory_ops.c): buffer creation, relief of memory pressure, the
 * slots' pools and their page source, the memory report and cleanup. */
#ifndef CUBEC_SERVER_MEMORY_OPS_H
#define CUBEC_SERVER_MEMORY_OPS_H

#include "server/buffers.h"
#include "server/streams.h"

/* cubec_buffer_create on `s`'s slot. `flags`: MEMORY_LAZY_PAGE when pages it adds need no memory
 * yet (a dry run's buffer), else 0. */
MUST_USE cubec_status server_buffer_create(cubec_device *d, stream_ref s, uint64_t size,
                                           uint32_t flags, cubec_buffer *out);
/* A buffer of `s` over [offset, +size) of `page` (imported memory), which becomes one allocation
 * of the slot's external pages: freed through the pools' page source with its last reference.
 * On error the page is still the caller's. */
MUST_USE cubec_status server_buffer_adopt(cubec_device *d, stream_ref s, gpu_mem *page,
                                          uint64_t offset, uint64_t size, cubec_buffer *out);
/* cubec_memory_report_get: the pools of `s`'s slot and the device's rings. */
void server_memory_report(cubec_device *d, stream_ref s, cubec_memory_report *out);
/* The device's rings as pool entries (at most `room`; rings it lacks are left out). */
uint32_t server_rings_report(const cubec_device *d, cubec_pool_report *out, uint32_t room);
/* Calls `each` with the report of every slot that has allocated memory (after running the frees
 * whose GPU work finished); stops at the first error. */
MUST_USE cubec_status server_memory_each_slot(cubec_device *d,
                                              cubec_status (*each)(void *user, uint32_t slot,
                                                                   const cubec_memory_report *r),
                                              void *user);
/* cubec_memory_cleanup: frees waiting on the GPU first, then the stream's empty pages. */
MUST_USE cubec_status server_memory_cleanup(cubec_device *d, stream_ref s);
/* The pools of a slot, created on its first use. */
MUST_USE cubec_status server_slot_memory(cubec_device *d, uint32_t slot, memory_manager **out);
/* Relieves memory pressure, the one place that does (docs/memory.md "Out of memory"): with
 * wait_for_gpu, waits for the submitted work first; runs the frees whose GPU work finished;
 * returns every empty page of every slot's pools (and the persistent pools' free slices); and,
 * with wait_for_gpu, relocates (spec 3.9 MemoryPressure). *out_released: the pages returned,
 * those the relocation emptied included. Fails only on a failed wait or relocation. */
MUST_USE cubec_status server_memory_relieve(cubec_device *d, int wait_for_gpu,
                                            uint32_t *out_released);

#endif
