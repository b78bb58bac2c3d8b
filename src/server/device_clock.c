/* The device clock: device timestamp ticks converted to host CLOCK_MONOTONIC nanoseconds, for
 * profiles (profile.c) and launch timing (launch_timing.c) alike. It calls nothing in the
 * server, so both read it from below. */
#include "server/device_clock.h"
#include "base/clock.h"
#include "server/device.h"

#include <math.h>

/* Samples the device counter and the host clock together (VK_EXT_calibrated_timestamps). Without
 * the extension the offset comes from the timestamps read back (see below). */
void server_clock_calibrate(cubec_device *d)
{
    if (!d->gpu->caps.calibrated_clock) return;
    uint64_t stamps[2];
    if (!d->gpu->ops->calibrate(d->gpu, &stamps[0], &stamps[1])) return;
    d->clock->offset_ns = (double)stamps[1] - (double)stamps[0] * d->info.timestamp_period_ns;
    d->clock->known = 1;
    d->clock->checked_ns = clock_now_ns();
}

uint64_t server_device_time_ns(cubec_device *d, uint64_t ticks)
{
    /* The clocks drift apart by parts per million: re-sample them every second. */
    if (d->gpu->caps.calibrated_clock && clock_now_ns() - d->clock->checked_ns > 1000000000ull)
        server_clock_calibrate(d);
    if (!d->clock->known || !d->gpu->caps.calibrated_clock) {
        /* No calibration: the timestamp was just read back after its batch finished, so "now"
         * bounds it from above; submissions bound the timestamps from below
         * (server_clock_after). The offset is the middle of the tightest window so far
         * (base/clock_bounds.h). The upper bound alone left times late by the shortest
         * completion latency seen (webgpu reads its queries through a submission); the first
         * bound alone left later times past the host's clock when a later read was quicker. */
        clock_bounds_before(&d->clock->bounds, (double)clock_now_ns(),
                            (double)ticks * d->info.timestamp_period_ns);
        d->clock->offset_ns = clock_bounds_offset(&d->clock->bounds);
        d->clock->known = 1;
    }
    double ns = (double)ticks * d->info.timestamp_period_ns + d->clock->offset_ns;
    return ns > 0 ? (uint64_t)llround(ns) : 0;
}

void server_clock_after(cubec_device *d, uint64_t ticks, uint64_t host_ns)
{
    if (d->gpu->caps.calibrated_clock) return;
    clock_bounds_after(&d->clock->bounds, (double)host_ns,
                       (double)ticks * d->info.timestamp_period_ns);
    /* Taken up by the next conversion, which first bounds the offset from above. */
}
