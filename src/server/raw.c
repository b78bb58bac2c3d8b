/* Raw resources, host mappings and their page guards (spec 3.9 "get_resource" and "guard").
 *
 * A guard is a reference on the allocation (it stays alive however the program releases its
 * handles) and a page guard on its page (server_alloc_guard: relocation never moves it, and
 * the page never goes back). The raw resource is taken after every queued and running use of
 * the bytes finished: the program's code runs outside cubec's queue, so ordering is not enough;
 * after that, ordering the program's work with cubec's is the program's (cubec_sync).
 *
 * A host mapping (cubec_buffer_map) is the same guard over the bytes' host address where the
 * page is host-visible and coherent: the host reads and writes them itself, as a raw resource's
 * program does, but without a device address, so transfers need not wait for the stream's last
 * work as they do for a raw guard (raw_guards counts only raw ones). */
#include "server/raw.h"

#include "server/buffers.h"
#include "server/device.h"
#include "server/failures.h"
#include "server/graph.h"
#include "server/relocate.h"
#include "server/run_mode.h"
#include "server/streams.h"
#include "server/submission.h"

#include <inttypes.h>
#include <stdlib.h>

typedef struct guard_obj {
    alloc_obj *alloc;
    int raw; /* taken by cubec_buffer_raw (counted in alloc->raw_guards), not by a map */
} guard_obj;

cubec_status server_buffer_raw(cubec_device *d, stream_ref s, buffer_obj *b, cubec_raw_buffer *out,
                               cubec_guard *out_guard)
{
    RETURN_IF_ERROR(server_graph_refuse(d, s, "cubec_buffer_raw"));
    /* The program's own code will use the memory: a dry run's page gets it now. */
    RETURN_IF_ERROR(server_back_buffers(d, &b, 1, NULL));
    guard_obj *g = calloc(1, sizeof *g);
    if (!g) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (guard)");
    alloc_obj *a = b->alloc;
    uint64_t view_offset = b->offset, view_size = b->size; /* `b` may go during the wait */
    /* Pinned before the wait, which may let other threads in: nothing moves it meanwhile. */
    server_alloc_pin(d, a);
    cubec_status err = server_drain_for_host(d, s.slot, a, 1);
    if (!err) err = sub_wait(d, a->last_use);
    if (!err) err = handle_table_insert(&d->buffers->guards, g, &out_guard->id);
    if (err) {
        server_alloc_unpin(d, a);
        free(g);
        return err;
    }
    g->alloc = a;
    g->raw = 1;
    a->raw_guards++;
    uint64_t handle = 0, address = 0;
    if (a->mem.size) d->gpu->ops->mem_raw(d->gpu, (gpu_mem *)a->mem.page, &handle, &address);
    out->buffer = handle;
    out->offset = a->mem.offset + view_offset;
    out->size = view_size;
    out->device_address = address ? address + out->offset : 0;
    return NULL;
}

/* Why the bytes of `b` have no host address the program may keep: NULL when they have one. */
static cubec_status map_refusal(const cubec_device *d, const buffer_obj *b, uint64_t id)
{
    const gpu_mem *page = buffer_page(b);
    if (!page->mapped)
        return status_make(CUBEC_UNSUPPORTED,
                           "cubec_buffer_map: buffer %" PRIu64
                           "'s memory is not host-visible on this device (%s): read it with "
                           "cubec_read",
                           id, d->gpu->caps.unified ? "a page without a mapping" : "device-local");
    /* A long-lived pointer into non-coherent memory would need a flush after every host write
     * and an invalidate before every host read, which a numpy view cannot make: refused. */
    if (page->noncoherent)
        return status_make(CUBEC_UNSUPPORTED,
                           "cubec_buffer_map: buffer %" PRIu64
                           "'s memory is host-visible but not coherent on this device: read it "
                           "with cubec_read",
                           id);
    return NULL;
}

cubec_status server_buffer_map(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t id,
                               void **out_ptr, cubec_guard *out_guard)
{
    RETURN_IF_ERROR(server_graph_refuse(d, s, "cubec_buffer_map"));
    RETURN_IF_ERROR(server_back_buffers(d, &b, 1, NULL));
    alloc_obj *a = b->alloc;
    uint64_t at = buffer_device_offset(b), size = b->size; /* `b` may go during the wait */
    if (size) RETURN_IF_ERROR(map_refusal(d, b, id));
    unsigned char *base = size ? buffer_page(b)->mapped : NULL;
    guard_obj *g = calloc(1, sizeof *g);
    if (!g) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (guard)");
    server_alloc_pin(d, a);
    /* The host may write through the pointer at once: every queued or running use of the bytes
     * finishes first, and what the GPU wrote is made visible to the host. A raw guard's program
     * may have written them through the device address: then the stream's last work too. */
    uint64_t stream_last = a->raw_guards ? d->streams->slots[s.slot].last_value : 0;
    cubec_status err = server_drain_for_host(d, s.slot, a, 1);
    if (!err) err = sub_wait_for_host(d, a->last_write > stream_last ? a->last_write : stream_last);
    if (!err) err = sub_wait(d, a->last_use > stream_last ? a->last_use : stream_last);
    /* Never the bytes of a failed result (spec 5: they are an error, not stale data). */
    failure *f = !err && size ? server_failure_of(a, at, size) : NULL;
    if (f) err = server_failure_status(a, f, "map");
    if (!err) err = handle_table_insert(&d->buffers->guards, g, &out_guard->id);
    if (err) {
        server_alloc_unpin(d, a);
        free(g);
        return err;
    }
    g->alloc = a;
    /* Relocation skips a guarded page, so the address stays right until the guard goes. */
    *out_ptr = base ? base + at : NULL;
    return NULL;
}

cubec_status server_guard_release(cubec_device *d, uint64_t id)
{
    guard_obj *g = handle_table_get(&d->buffers->guards, id);
    if (!g && id >> HANDLE_TAG_SHIFT != d->tag) {
        /* Another device's guard (or a made-up value): ignoring it would leave that device's
         * bytes pinned and the program's mistake unreported. */
        char why[192];
        return INVALID_ARG("cubec_guard_release: guard: %s",
                           handle_table_explain(&d->buffers->guards, id, why, sizeof why));
    }
    if (!g) return NULL;
    handle_table_remove(&d->buffers->guards, id);
    if (g->raw) g->alloc->raw_guards--;
    server_alloc_unpin(d, g->alloc);
    free(g);
    return NULL;
}

void server_guards_destroy(cubec_device *d)
{
    for (uint32_t i = 0; i < d->buffers->guards.count; i++) {
        guard_obj *g = d->buffers->guards.slots[i].object;
        if (!g) continue;
        server_alloc_unpin(d, g->alloc);
        free(g);
    }
    handle_table_free(&d->buffers->guards);
}
