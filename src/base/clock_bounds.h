/* The offset between two clocks that cannot be sampled together (a device's timestamp counter
 * and the host's CLOCK_MONOTONIC, where the device has no calibrated timestamps), from host times
 * on either side of device events: host = device + offset.
 *
 * A device event happens after the host handed its work over (a lower bound on the offset:
 * host_before - device) and before the host read its timestamp back (an upper bound:
 * host_after - device). The true offset lies between the tightest of each; the middle of that
 * window is at most half its width away from it, where the upper bound alone is late by the
 * whole width. Clocks drift apart by parts per million, so two bounds can come to contradict each
 * other on a long run: the newer one is kept and the other dropped until a new one comes. */
#ifndef CUBEC_BASE_CLOCK_BOUNDS_H
#define CUBEC_BASE_CLOCK_BOUNDS_H

typedef struct clock_bounds {
    double lower, upper;
    int has_lower, has_upper;
} clock_bounds;

/* An event of device time `device_ns` came after host time `host_ns`. */
static inline void clock_bounds_after(clock_bounds *b, double host_ns, double device_ns)
{
    double lower = host_ns - device_ns;
    if (b->has_lower && lower <= b->lower) return;
    b->lower = lower;
    b->has_lower = 1;
    if (b->has_upper && b->upper < lower) b->has_upper = 0;
}

/* An event of device time `device_ns` came before host time `host_ns`. */
static inline void clock_bounds_before(clock_bounds *b, double host_ns, double device_ns)
{
    double upper = host_ns - device_ns;
    if (b->has_upper && upper >= b->upper) return;
    b->upper = upper;
    b->has_upper = 1;
    if (b->has_lower && b->lower > upper) b->has_lower = 0;
}

/* The offset to use: the window's middle, or the one bound known (0 with none). */
static inline double clock_bounds_offset(const clock_bounds *b)
{
    if (b->has_lower && b->has_upper) return b->lower + (b->upper - b->lower) / 2;
    if (b->has_upper) return b->upper;
    return b->has_lower ? b->lower : 0;
}

#endif
