/* Failures on memory, the server's side (spec 5): tainting ranges, skipped launches, submissions
 * that are lost, and the errors host accesses return. The failure objects and maps are in
 * failure/. */
#include "server/failures.h"
#include "base/array.h"
#include "base/assert.h"
#include "server/buffers.h"
#include "server/device.h"
#include "server/submission.h"

#include <inttypes.h>
#include <stdlib.h>

failure *server_failure_of(const alloc_obj *a, uint64_t page_offset, uint64_t size)
{
    /* No byte, no failure: an empty range inside a failed one holds nothing unwritten. */
    if (!a->taint.count || size == 0) return NULL;
    return taint_find(&a->taint, alloc_offset(a, page_offset), size);
}

void server_taint(alloc_obj *a, uint64_t page_offset, uint64_t size, failure *f)
{
    taint_set(&a->taint, alloc_offset(a, page_offset), size, f);
}

void server_untaint(alloc_obj *a, uint64_t page_offset, uint64_t size)
{
    if (a->taint.count) taint_clear(&a->taint, alloc_offset(a, page_offset), size);
}

cubec_status server_failure_status(const alloc_obj *a, const failure *f, const char *what)
{
    return status_make(f->code, "%s of buffer #%" PRIu64 ": not written: %s", what, a->number,
                       f->message);
}

cubec_status server_hold(cubec_device *d, batch *b, alloc_obj *a, uint64_t offset, uint64_t size,
                         int write)
{
    (void)d;
    if (array_grow((void **)&b->held, &b->held_cap, (uint64_t)b->held_count + 1,
                   sizeof(held_range)) != 0)
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (batch ranges)");
    a->refs++;
    b->held[b->held_count++] = (held_range){a, offset, size, write};
    return NULL;
}

/* A batch settled: release its holds; on error, what it would have written carries it. */
static void batch_settled(cubec_device *d, batch *b, cubec_status err, uint64_t submit_ns)
{
    (void)submit_ns;
    failure *f = NULL;
    if (err)
        f = failure_new(cubec_status_code(err), "the submission of its work failed: %s",
                        cubec_status_message(err));
    /* A lost batch never runs: the value it would have signalled goes to the next batch, so a
     * use it recorded must not keep memory (a deferred free, a host access) waiting for that. */
    uint64_t lost_value = err ? d->sub->next_value : 0;
    for (uint32_t i = 0; i < b->held_count; i++) {
        held_range *h = &b->held[i];
        CUBEC_ASSERT(h->alloc->refs > 0); /* a hold is released exactly once, here */
        if (lost_value && h->alloc->last_use >= lost_value) h->alloc->last_use = lost_value - 1;
        if (lost_value && h->alloc->last_write >= lost_value) h->alloc->last_write = lost_value - 1;
        if (f && h->write) server_taint(h->alloc, h->offset, h->size, f);
        server_alloc_release(d, h->alloc);
    }
    b->held_count = 0;
    failure_release(f);
}

const sub_listener failures_listener = {.name = "failures", .settled = batch_settled};
