/* Launch timing (server/launch_timing.c): timestamps around launches for the Chrome trace and
 * the kernel summary, and host events of the trace. */
#ifndef CUBEC_SERVER_LAUNCH_TIMING_H
#define CUBEC_SERVER_LAUNCH_TIMING_H

#include "gpu/gpu.h"
#include "server/launch.h"
#include "server/submission.h"

/* What one timed launch was, until its batch's timestamps are read (server/launch_timing.c). */
typedef struct launch_stamp {
    char name[32];
    uint64_t stream;
    uint32_t slot;
    uint32_t groups[3];
    int indirect;
    /* A copy or fill: a transfer command (CPU devices) or a builtin kernel ("cubec.fill",
     * "cubec.copy"), and the bytes it writes; bytes 0 for every other launch. */
    int transfer;
    uint64_t bytes;
    uint64_t record_ns; /* host time it was recorded (the fallback without timestamps) */
} launch_stamp;

/* Launch timing (server/launch_timing.c): timestamps feed the trace and the summary. Device
 * lock (the trace has its own for the process-wide copy). */
typedef struct launch_timing {
    int on; /* tracing or summarising: launches are timed */
    struct trace *trace;
    struct kernel_stats *kernel_stats;
    uint64_t summary_ns; /* when the last profiling summary was logged */
} launch_timing;

MUST_USE cubec_status timing_init(cubec_device *d);
/* Reads what is left, logs the last summary and writes the trace. */
void timing_close(cubec_device *d);
/* Appends what launch `t` is to a stamp array of `count` entries (grown as needed); NULL when
 * out of memory (the launch then goes untimed). */
launch_stamp *timing_stamp_add(launch_stamp **stamps, uint32_t *cap, uint32_t count, const task *t);
/* Around a recorded launch (only when d->time_launches); end only if begin returned 1. */
int timing_launch_begin(cubec_device *d, batch *b, const task *t);
void timing_launch_end(cubec_device *d, batch *b);
/* A graph copy's replay, handed over at host time `replayed_ns`, finished: its launches (two
 * queries each in `pool`) go to the trace and the summary, and the queries are reset for the
 * next replay. */
void timing_graph_harvest(cubec_device *d, gpu_queries *pool, const launch_stamp *stamps,
                          uint32_t n, uint64_t graph, uint64_t replayed_ns);
/* A batch begins recording: its queries are reset. */
void timing_batch_begin(cubec_device *d, batch *b);
/* The batch finished: its launches go to the trace and the summary. */
void timing_harvest(cubec_device *d, batch *b);
/* A host event on the host track (a write, read, compilation, submission, sync), with its
 * stream's number in args.stream (TIMING_NO_STREAM: null). */
#define TIMING_NO_STREAM UINT64_MAX
void timing_host(cubec_device *d, const char *name, const char *category, uint64_t begin_ns,
                 uint64_t stream, const char *args_json);
/* Logs the kernel summary now if one is due (at most once a second, from syncs). */
void timing_summary_tick(cubec_device *d, int force);

#endif
