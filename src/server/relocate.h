/* Relocation (server/relocate.c): live allocations move off outdated arena pages into the
 * current page size with a device-to-device copy, so those pages go back to the driver
 * (spec 3.9, docs/memory.md "Relocation and guards"). */
#ifndef CUBEC_SERVER_RELOCATE_H
#define CUBEC_SERVER_RELOCATE_H

#include "memory/memory_manager.h"
#include "server/buffers.h"
#include "server/streams.h"

/* Moves what it can off the outdated arena pages of `slot`'s pools (NO_SLOT: every slot's):
 * every stream's queued work is submitted and finished first, the bytes are copied on the GPU,
 * each moved allocation (shared by its buffer and views, with its failures) then names its new
 * place, and the emptied pages go back. Moves nothing while any stream records a graph, nor off
 * a guarded page, nor when the arenas' shape is unchanged since a relocation that moved nothing.
 * *out_moved (may be NULL): allocations moved. Errors are those of the drain, the wait and the
 * copy's submission; a failed copy leaves the moved allocations carrying its failure. */
MUST_USE cubec_status server_memory_relocate(cubec_device *d, uint32_t slot,
                                             memory_relocation_reason reason, uint32_t *out_moved);
/* Before a reservation on `slot` (spec 3.9 "relocate when wanted"): relocates when an arena of
 * its pools is full, or when the device's pages come within one page of its memory. */
MUST_USE cubec_status server_relocate_when_wanted(cubec_device *d, uint32_t slot);
/* Whether relocation is held off now: a stream records a graph (its command buffers name pages). */
int server_relocation_blocked(const cubec_device *d);
/* A page guard on the page of `a` (+1) or its release (-1); the caller also holds a reference
 * on `a` for as long as the guard. */
void server_alloc_guard(cubec_device *d, alloc_obj *a, int delta);
/* A reference and a guard, for work that keeps a location across a wait that drops the device
 * lock (a host transfer); unpin releases both. */
void server_alloc_pin(cubec_device *d, alloc_obj *a);
void server_alloc_unpin(cubec_device *d, alloc_obj *a);

#endif
