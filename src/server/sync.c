/* The stream-wide host operations: cubec_flush (submit what a stream queued), cubec_sync (wait
 * until it finished) and cubec_check of a buffer. They sit above streams, graphs and failures
 * and are called by api/ only, so the components below never call up into them. */
#include "server/sync.h"
#include "base/clock.h"
#include "server/buffers.h"
#include "server/device.h"
#include "server/failures.h"
#include "server/graph.h"
#include "server/launch_timing.h"
#include "server/streams.h"
#include "server/submission.h"

cubec_status server_flush(cubec_device *d, stream_ref s)
{
    RETURN_IF_ERROR(server_drain(d, &s.slot, 1, 0));
    return sub_flush(d, 0); /* transfers recorded outside the queues */
}

cubec_status server_sync(cubec_device *d, stream_ref s)
{
    RETURN_IF_ERROR(server_graph_refuse(d, s, "cubec_sync"));
    /* After a sync the host may read what the stream wrote (mapped memory, events): the batch
     * that carries the stream's last work ends with a host barrier. */
    uint64_t t0 = d->timing->trace ? clock_now_ns() : 0;
    RETURN_IF_ERROR(server_drain(d, &s.slot, 1, DRAIN_FOR_HOST));
    RETURN_IF_ERROR(sub_wait_for_host(d, d->streams->slots[s.slot].last_value));
    timing_host(d, "sync", "sync", t0, s.number, NULL);
    timing_summary_tick(d, 0);
    return NULL;
}

cubec_status server_check_buffer(cubec_device *d, const buffer_obj *b)
{
    /* Whatever is queued for it must have been recorded (and so judged) first. */
    RETURN_IF_ERROR(server_drain_for_host(d, b->alloc->slot, b->alloc, 0));
    failure *f = server_failure_of(b->alloc, buffer_device_offset(b), b->size);
    return f ? server_failure_status(b->alloc, f, "check") : NULL;
}
