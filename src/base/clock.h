/* Time on the host: one monotonic clock in nanoseconds, the time base of traces, profiles and
 * every interval cubec measures; and the wall clock, for the log lines' timestamps only (they are
 * read beside other programs' logs). */
#ifndef CUBEC_BASE_CLOCK_H
#define CUBEC_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns_of(const struct timespec *ts)
{
    return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* CLOCK_MONOTONIC in nanoseconds: never goes back, not moved by clock changes. */
static inline uint64_t clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return clock_ns_of(&ts);
}

/* CLOCK_REALTIME in nanoseconds since the epoch: for log timestamps, not for intervals. */
static inline uint64_t clock_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return clock_ns_of(&ts);
}

#endif
