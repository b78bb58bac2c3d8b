/* A host-visible ring buffer split in chunks. Each chunk remembers the last batch that used it,
 * so moving onto a chunk waits only when the GPU still reads it. Used for metadata that does not
 * fit push constants (created at open: no allocation on the launch path) and for staging on
 * discrete GPUs (created at the first staged transfer: many devices never stage). */
#include "server/host_ring.h"
#include "server/device.h"
#include "server/submission.h"

#include <inttypes.h>
#include <stdlib.h>

void host_ring_plan(host_ring *r, const char *name, uint64_t size, uint32_t chunks,
                    gpu_mem_kind kind)
{
    r->name = name;
    r->kind = kind;
    r->size = size;
    r->chunks = chunks;
    r->chunk_size = size / chunks;
    r->head = 0;
}

cubec_status host_ring_create(cubec_device *d, host_ring *r)
{
    if (r->mem) return NULL;
    r->chunk_use = calloc(r->chunks, sizeof *r->chunk_use);
    if (!r->chunk_use)
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (the %s ring's chunks)",
                           r->name);
    cubec_status err = gpu_mem_alloc(d->gpu, r->kind, r->size, &r->mem);
    if (err) {
        free(r->chunk_use);
        r->chunk_use = NULL;
        r->mem = NULL;
        return status_annotate(err, "creating the %s ring (%" PRIu64 " bytes)", r->name, r->size);
    }
    r->mapped = r->mem->mapped;
    r->head = 0;
    return NULL;
}

cubec_status host_rings_staging(cubec_device *d, host_ring *r)
{
    if (r->mem) return NULL;
    if (!d->rings->copies)
        RETURN_IF_ERROR(status_annotate(copy_pool_create(d->rings->copy_helpers, &d->rings->copies),
                                        "creating the %s ring's copy threads", r->name));
    return host_ring_create(d, r);
}

void host_ring_destroy(cubec_device *d, host_ring *r)
{
    gpu_mem_free(d->gpu, r->mem);
    free(r->chunk_use);
    r->chunk_use = NULL;
    r->mem = NULL;
    r->mapped = NULL;
}

cubec_status host_ring_alloc(cubec_device *d, host_ring *r, uint64_t size, uint64_t align,
                             uint64_t *out_offset)
{
    if (size > r->chunk_size)
        return status_make(CUBEC_INTERNAL, "ring request of %" PRIu64 " bytes > chunk %" PRIu64,
                           size, r->chunk_size);
    uint64_t at = (r->head + align - 1) / align * align;
    uint32_t chunk = (uint32_t)(r->head / r->chunk_size) % r->chunks;
    /* A chunk is entered when the head sits on its start (the previous request ended exactly
     * on the boundary, or the ring wrapped) or when this request does not fit in the rest of the
     * current one. Entering a chunk waits until the GPU is done with what it held before. */
    int entering = r->head % r->chunk_size == 0;
    if (!entering && at + size > (uint64_t)(chunk + 1) * r->chunk_size) {
        chunk = (chunk + 1) % r->chunks;
        entering = 1;
    }
    if (entering) {
        if (r->chunk_use[chunk] > d->sub->completed_value) sub_poll(d);
        if (r->chunk_use[chunk] > d->sub->completed_value)
            RETURN_IF_ERROR(sub_wait_flags(d, r->chunk_use[chunk], WAIT_KEEP_LOCK));
        at = (uint64_t)chunk * r->chunk_size;
    }
    r->chunk_use[chunk] = d->sub->next_value;
    r->head = at + size;
    if (r->head >= r->size) r->head = 0;
    *out_offset = at;
    return NULL;
}
