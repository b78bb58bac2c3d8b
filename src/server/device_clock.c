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
         * bounds it from above. The offset is the tightest such bound so far, so times are late
         * by the shortest completion latency seen; the first bound alone left every later
         * profile late by the first read's latency, past the host's clock when a later read
         * was quicker (webgpu, whose queries are read through a submission). */
        double bound = (double)clock_now_ns() - (double)ticks * d->info.timestamp_period_ns;
        if (!d->clock->known || bound < d->clock->offset_ns) d->clock->offset_ns = bound;
        d->clock->known = 1;
    }
    double ns = (double)ticks * d->info.timestamp_period_ns + d->clock->offset_ns;
    return ns > 0 ? (uint64_t)llround(ns) : 0;
}
