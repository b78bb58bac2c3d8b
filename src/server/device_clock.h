/* The device clock (server/device_clock.c): device timestamp ticks in host CLOCK_MONOTONIC
 * nanoseconds, calibrated with VK_EXT_calibrated_timestamps when the device has it. */
#ifndef CUBEC_SERVER_DEVICE_CLOCK_H
#define CUBEC_SERVER_DEVICE_CLOCK_H

#include "base/clock_bounds.h"

#include <stdint.h>

typedef struct cubec_device_s cubec_device;

/* Device lock. Device ticks to host ns: host = ticks * period + offset_ns. */
typedef struct device_clock {
    double offset_ns;
    int known;
    uint64_t checked_ns; /* when the clocks were last sampled together */
    clock_bounds bounds; /* without calibration: host times around device events */
} device_clock;

/* Samples the device counter and the host clock together (when the device can). */
void server_clock_calibrate(cubec_device *d);
/* Host CLOCK_MONOTONIC ns of a device timestamp, just read back. */
uint64_t server_device_time_ns(cubec_device *d, uint64_t ticks);
/* A device timestamp that was written after host time `host_ns` (its work was submitted then):
 * bounds the offset from below where the clocks are not calibrated. */
void server_clock_after(cubec_device *d, uint64_t ticks, uint64_t host_ns);

#endif
