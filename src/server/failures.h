/* Failures on memory, the server's side (server/failures.c): tainting allocations and the
 * errors host accesses return. */
#ifndef CUBEC_SERVER_FAILURES_H
#define CUBEC_SERVER_FAILURES_H

#include "failure/failure.h"
#include "server/buffers.h"
#include "server/submission.h"

/* Offset of a buffer range within its allocation, for the taint map. */
static inline uint64_t alloc_offset(const alloc_obj *a, uint64_t page_offset)
{
    return page_offset - a->mem.offset;
}
/* The failure carried by [page_offset, +size) of `a`, or NULL. */
failure *server_failure_of(const alloc_obj *a, uint64_t page_offset, uint64_t size);
void server_taint(alloc_obj *a, uint64_t page_offset, uint64_t size, failure *f);
void server_untaint(alloc_obj *a, uint64_t page_offset, uint64_t size);
/* An error for a host access of a buffer that carries a failure: "<what> of buffer #n: not
 * written: <chain>", with the root cause's code. */
MUST_USE cubec_status server_failure_status(const alloc_obj *a, const failure *f, const char *what);
/* Holds a recorded task's range in the open batch until it is submitted. */
MUST_USE cubec_status server_hold(cubec_device *d, batch *b, alloc_obj *a, uint64_t offset,
                                  uint64_t size, int write);

#endif
