/* Raw resources and page guards (spec 3.9 "get_resource" and "guard").
 *
 * A guard is a reference on the allocation (it stays alive however the program releases its
 * handles) and a page guard on its page (server_alloc_guard: relocation never moves it, and
 * the page never goes back). The raw resource is taken after every queued and running use of
 * the bytes finished: the program's code runs outside cubec's queue, so ordering is not enough;
 * after that, ordering the program's work with cubec's is the program's (cubec_sync). */
#include "server/raw.h"

#include "server/buffers.h"
#include "server/device.h"
#include "server/graph.h"
#include "server/relocate.h"
#include "server/run_mode.h"
#include "server/streams.h"
#include "server/submission.h"

#include <stdlib.h>

typedef struct guard_obj {
    alloc_obj *alloc;
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
    uint64_t handle = 0, address = 0;
    if (a->mem.size) d->gpu->ops->mem_raw(d->gpu, (gpu_mem *)a->mem.page, &handle, &address);
    out->buffer = handle;
    out->offset = a->mem.offset + view_offset;
    out->size = view_size;
    out->device_address = address ? address + out->offset : 0;
    return NULL;
}

void server_guard_release(cubec_device *d, uint64_t id)
{
    guard_obj *g = handle_table_get(&d->buffers->guards, id);
    if (!g) return;
    handle_table_remove(&d->buffers->guards, id);
    server_alloc_unpin(d, g->alloc);
    free(g);
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
