/* Per-kernel launch times for the profiling summary: count, total, min and max per kernel name,
 * and a text table sorted by total time. Not thread-safe: callers hold the device lock. */
#ifndef CUBEC_PROFILING_KERNEL_STATS_H
#define CUBEC_PROFILING_KERNEL_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Longer names are cut to this many characters, so names that differ only after it share a row. */
#define KERNEL_STATS_NAME_MAX 63

typedef struct kernel_stats kernel_stats;

typedef struct kernel_stat {
    uint64_t count;
    uint64_t total_ns;
    uint64_t min_ns;
    uint64_t max_ns;
} kernel_stat;

/* NULL when the host is out of memory. */
kernel_stats *kernel_stats_new(void);
void kernel_stats_free(kernel_stats *stats); /* accepts NULL */
/* A NULL name counts as "?". If the table cannot grow the sample is dropped, and the table
 * says how many were. */
void kernel_stats_add(kernel_stats *stats, const char *name, uint64_t ns);
/* Writes the table (kernel, count, total ms, mean us, share %, then a total row) into buf, cut to
 * cap - 1 characters and terminated when cap > 0; returns the full length, as snprintf does.
 * Empty statistics give "". */
size_t kernel_stats_format(const kernel_stats *stats, char *buf, size_t cap);
/* Forgets every kernel; keeps the table's memory for the next period. */
void kernel_stats_reset(kernel_stats *stats);
int kernel_stats_empty(const kernel_stats *stats);
/* The totals of one kernel; 0 when it has none. */
int kernel_stats_get(const kernel_stats *stats, const char *name, kernel_stat *out);

#endif
