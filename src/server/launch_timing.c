/* Launch timing: what the device did and when, for the Chrome trace (CUBEC_TRACE) and the kernel
 * summary of the profiling logger (CUBEC_LOG=profiling=summary).
 *
 * While either is on, every recorded launch is bracketed by two timestamps in its batch's own
 * query pool: one at the top of the pipe when the GPU reaches the launch, one at the bottom when
 * everything before it has finished. Launches that run concurrently therefore overlap in the
 * trace, as they do on the GPU, and a launch's end is never earlier than the end of the work
 * before it. When the batch has finished its queries are read back (in sub_poll, or before the
 * batch is reused) and turned into trace events and summary entries. Off, none of this costs
 * anything but a branch per launch. Host-side work (writes, reads, compilations, submissions,
 * syncs) goes to the host track with host times. */
#include "server/launch_timing.h"
#include "base/array.h"
#include "base/clock.h"
#include "base/log.h"
#include "profiling/kernel_stats.h"
#include "profiling/trace.h"
#include "server/device.h"
#include "server/device_clock.h"
#include "server/submission.h"
#include "server/task.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One trace per process and path: devices opened one after the other (cubec bench opens one per
 * figure and side) add to the same timeline, which is rewritten whole each time a device closes.
 * It is freed at exit. A device tracing to another path while the first is in use gets its own. */
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static trace *shared_trace;
static char shared_path[512];
static int shared_users;

/* The shared trace is written by every device that closes (trace_done) and no device adds to it
 * once the last has closed, so it is freed unwritten: writing it again at exit or when a device
 * traces to another path would bring back a file the program removed since (tests that remove
 * their trace files found them recreated). */
static void shared_trace_free(void)
{
    pthread_mutex_lock(&shared_lock);
    trace_discard(shared_trace);
    shared_trace = NULL;
    pthread_mutex_unlock(&shared_lock);
}

static trace *trace_for(const char *path, char **why)
{
    pthread_mutex_lock(&shared_lock);
    trace *t = NULL;
    if (shared_trace && strcmp(shared_path, path) == 0) {
        t = shared_trace;
        shared_users++;
    } else if (!shared_trace || shared_users == 0) {
        static int registered;
        trace_discard(shared_trace); /* no user left: written when the last one closed */
        shared_trace = t = trace_open(path, why);
        snprintf(shared_path, sizeof shared_path, "%s", path);
        shared_users = t != NULL;
        if (t && !registered) registered = atexit(shared_trace_free) == 0;
    } else {
        t = trace_open(path, why);
    }
    pthread_mutex_unlock(&shared_lock);
    return t;
}

/* Writes what the trace holds; frees it unless it is the shared one. */
static int trace_done(trace *t, char **why)
{
    pthread_mutex_lock(&shared_lock);
    int shared = t == shared_trace;
    if (shared) shared_users--;
    pthread_mutex_unlock(&shared_lock);
    return shared ? trace_write(t, why) : trace_close(t, why);
}

cubec_status timing_init(cubec_device *d)
{
    if (d->config.trace_file[0]) {
        char *why = NULL;
        d->timing->trace = trace_for(d->config.trace_file, &why);
        if (!d->timing->trace) {
            char what[1400];
            cubec_status err =
                INVALID_ARG("%s: %s", config_describe(&d->config, "CUBEC_TRACE", what, sizeof what),
                            why ? why : "cannot open the trace file");
            free(why);
            return err;
        }
        char name[320];
        snprintf(name, sizeof name, "cubec: %s (device %u)", d->info.name,
                 d->gpu->caps.physical_index);
        trace_set_process_name(d->timing->trace, name);
    }
    if (log_enabled(LOG_INFO, LOG_SYS_PROFILING)) {
        d->timing->kernel_stats = kernel_stats_new();
        if (!d->timing->kernel_stats)
            return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (kernel statistics)");
    }
    d->timing->on = d->timing->trace || d->timing->kernel_stats;
    d->timing->summary_ns = clock_now_ns();
    return NULL;
}

void timing_close(cubec_device *d)
{
    for (uint32_t i = 0; i < d->sub->batch_count; i++)
        timing_harvest(d, &d->sub->batches[i]);
    timing_summary_tick(d, 1);
    kernel_stats_free(d->timing->kernel_stats);
    d->timing->kernel_stats = NULL;
    if (d->timing->trace) {
        char *why = NULL;
        if (trace_done(d->timing->trace, &why) != 0)
            LOG(LOG_ERROR, LOG_SYS_PROFILING, "the trace was not written: %s",
                why ? why : d->config.trace_file);
        else
            LOG(LOG_INFO, LOG_SYS_PROFILING, "trace written to %s", d->config.trace_file);
        free(why);
        d->timing->trace = NULL;
    }
    d->timing->on = 0;
}

static uint32_t queries_per_batch(const cubec_device *d)
{
    return 2 * d->sub->batch_task_cap;
}

void timing_batch_begin(cubec_device *d, batch *b)
{
    b->stamp_count = 0;
    if (!d->gpu->caps.timestamps) return; /* launches keep their host recording time */
    if (!b->queries) {
        cubec_status err = d->gpu->ops->queries_create(d->gpu, queries_per_batch(d), &b->queries);
        if (err) {
            LOG(LOG_WARN, LOG_SYS_PROFILING,
                "no query pool for launch timing (%s): host times used", cubec_status_message(err));
            cubec_status_free(err);
            b->queries = NULL;
            return;
        }
    }
    gpu_cmd_reset_queries(b->cmd, b->queries, 0, queries_per_batch(d));
}

launch_stamp *timing_stamp_add(launch_stamp **stamps, uint32_t *cap, uint32_t count, const task *t)
{
    if (array_grow((void **)stamps, cap, (uint64_t)count + 1, sizeof(launch_stamp)) != 0)
        return NULL; /* this launch goes untimed */
    launch_stamp *s = &(*stamps)[count];
    snprintf(s->name, sizeof s->name, "%s", task_name(t));
    s->stream = t->stream;
    s->slot = t->slot;
    memcpy(s->groups, t->groups, sizeof s->groups);
    s->indirect = t->indirect.alloc != NULL;
    /* A transfer command has no grid; a builtin copy or fill kernel's grid (a grid-stride loop)
     * says nothing of its size. Both carry the bytes they write: the last binding's accessed
     * bytes (the builtins have at most two bindings, held in the task). */
    s->transfer = t->kind == TASK_TRANSFER_COPY || t->kind == TASK_TRANSFER_FILL;
    int builtin = t->kind == TASK_LAUNCH && strncmp(s->name, "cubec.", 6) == 0 && t->count &&
                  t->count <= TASK_INLINE_BINDINGS;
    s->bytes = s->transfer || builtin ? bound_bytes(&t->b[t->count - 1]) : 0;
    s->record_ns = clock_now_ns();
    return s;
}

int timing_launch_begin(cubec_device *d, batch *b, const task *t)
{
    if (2 * b->stamp_count + 2 > queries_per_batch(d) ||
        !timing_stamp_add(&b->stamps, &b->stamp_cap, b->stamp_count, t))
        return 0;
    if (b->queries) gpu_cmd_timestamp(b->cmd, b->queries, 2 * b->stamp_count, GPU_STAGE_TOP);
    return 1;
}

void timing_launch_end(cubec_device *d, batch *b)
{
    (void)d; /* kept in the signature: the timing calls all take the device */
    if (b->queries) gpu_cmd_timestamp(b->cmd, b->queries, 2 * b->stamp_count + 1, GPU_STAGE_BOTTOM);
    b->stamp_count++;
}

/* Turns launches' timestamp pairs (`ticks`: 2 per launch, NULL without timestamps) into trace
 * events and summary entries. `replay`: the graph they were replayed from (0: none).
 * `submitted_ns`: when their work was handed over for submission (0: not known). */
static void emit_launches(cubec_device *d, const launch_stamp *stamps, uint32_t n,
                          const uint64_t *ticks, uint64_t replay, uint64_t submitted_ns)
{
    uint32_t bits = d->gpu->caps.timestamp_bits;
    uint64_t mask = bits >= 64 || !bits ? UINT64_MAX : (1ull << bits) - 1;
    if (ticks && n) {
        /* Without a calibrated clock, host times bracket the clocks' offset: the hand-over
         * (when known) is before the earliest timestamp, and "now" after the latest, which is
         * converted first so that no launch ends in the host's future (a counter that wrapped
         * within the batch is left as it was). The lower bound goes first: where the two
         * contradict, the newer one, "now", is kept. */
        uint64_t first = ticks[0] & mask, last = ticks[1] & mask;
        for (uint32_t i = 1; i < n; i++) {
            uint64_t top = ticks[2 * (size_t)i] & mask, bottom = ticks[2 * (size_t)i + 1] & mask;
            if (top < first) first = top;
            if (bottom > last) last = bottom;
        }
        if (submitted_ns) server_clock_after(d, first, submitted_ns);
        (void)server_device_time_ns(d, last);
    }
    for (uint32_t i = 0; i < n; i++) {
        const launch_stamp *s = &stamps[i];
        uint64_t begin = s->record_ns, dur = 0;
        if (ticks) {
            begin = server_device_time_ns(d, ticks[2 * (size_t)i] & mask);
            uint64_t delta = ((ticks[2 * (size_t)i + 1] - ticks[2 * (size_t)i]) & mask);
            /* A counter that wrapped, or a bottom stamp latched before the top one on drivers
             * that write both at once, reads as a huge delta: show it as instantaneous. */
            if (delta > (mask >> 1)) delta = 0;
            dur = (uint64_t)((double)delta * d->info.timestamp_period_ns);
        }
        if (d->timing->trace) {
            char grid[96], from[48] = "";
            if (s->transfer)
                snprintf(grid, sizeof grid, "\"command\":\"transfer\",\"bytes\":%" PRIu64,
                         s->bytes);
            else if (s->indirect)
                snprintf(grid, sizeof grid, "\"grid\":\"indirect\"");
            else
                snprintf(grid, sizeof grid, "\"grid\":[%u,%u,%u]", s->groups[0], s->groups[1],
                         s->groups[2]);
            if (!s->transfer && s->bytes)
                snprintf(grid + strlen(grid), sizeof grid - strlen(grid), ",\"bytes\":%" PRIu64,
                         s->bytes);
            if (replay) snprintf(from, sizeof from, ",\"graph\":%" PRIu64, replay);
            char args[256];
            snprintf(args, sizeof args, "\"stream\":%" PRIu64 ",\"slot\":%u,%s%s%s", s->stream,
                     s->slot, grid, from, ticks ? "" : ",\"time\":\"host, at recording\"");
            trace_track(d->timing->trace, s->stream, s->slot);
            trace_complete(d->timing->trace, s->stream, s->name, "launch", begin, dur, args);
        }
        if (d->timing->kernel_stats) kernel_stats_add(d->timing->kernel_stats, s->name, dur);
        LOG(LOG_DEBUG, LOG_SYS_PROFILING, "| %10.3f us | %s (stream %" PRIu64 ")",
            (double)dur / 1e3, s->name, s->stream);
    }
}

/* The timestamps of `n` launches in `pool`, or NULL (logged) when they cannot be read. */
static uint64_t *read_ticks(cubec_device *d, gpu_queries *pool, uint32_t n)
{
    uint64_t *ticks = malloc(2 * (size_t)n * sizeof *ticks);
    cubec_status err = ticks ? d->gpu->ops->queries_read(d->gpu, pool, 0, 2 * n, ticks)
                             : status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (ticks)");
    if (err) {
        LOG(LOG_WARN, LOG_SYS_PROFILING, "launch timestamps could not be read: %s",
            cubec_status_message(err));
        cubec_status_free(err);
        free(ticks);
        return NULL;
    }
    return ticks;
}

void timing_harvest(cubec_device *d, batch *b)
{
    uint32_t n = b->stamp_count;
    b->stamp_count = 0;
    /* A batch whose submission was lost never wrote its queries. */
    if (!n || !b->value || b->value > d->sub->completed_value) return;
    uint64_t *ticks = NULL;
    if (b->queries && !(ticks = read_ticks(d, b->queries, n))) return;
    emit_launches(d, b->stamps, n, ticks, 0, b->submit_ns);
    free(ticks);
}

void timing_graph_harvest(cubec_device *d, gpu_queries *pool, const launch_stamp *stamps,
                          uint32_t n, uint64_t graph, uint64_t replayed_ns)
{
    if (!n) return;
    uint64_t *ticks = read_ticks(d, pool, n);
    if (ticks) emit_launches(d, stamps, n, ticks, graph, replayed_ns);
    free(ticks);
    /* Ready for the copy's next replay (hostQueryReset: no command needed). */
    d->gpu->ops->queries_host_reset(d->gpu, pool, 0, 2 * n);
}

/* --- Submission's listener ------------------------------------------------------------------ */

static void on_begun(cubec_device *d, batch *b)
{
    if (d->timing->on) timing_batch_begin(d, b);
}

static void on_settled(cubec_device *d, batch *b, cubec_status err, uint64_t submit_ns)
{
    if (err) {
        b->stamp_count = 0; /* its timestamps will never be written */
        return;
    }
    b->submit_ns = submit_ns;
    if (d->timing->trace) {
        /* "stream": the first stream whose work it carries; with more than one, "streams"
         * lists them (the first BATCH_STREAMS_NAMED) and "stream_count" counts them. */
        char args[320];
        int n = snprintf(args, sizeof args, "\"tasks\":%u,\"timeline_value\":%llu", d->sub->tasks,
                         (unsigned long long)b->value);
        if (b->stream_count > 1) {
            uint32_t named =
                b->stream_count < BATCH_STREAMS_NAMED ? b->stream_count : BATCH_STREAMS_NAMED;
            n += snprintf(args + n, sizeof args - (size_t)n, ",\"stream_count\":%u,\"streams\":[",
                          b->stream_count);
            for (uint32_t i = 0; i < named; i++)
                n += snprintf(args + n, sizeof args - (size_t)n, "%s%" PRIu64, i ? "," : "",
                              b->streams[i]);
            snprintf(args + n, sizeof args - (size_t)n, "]");
        }
        /* A batch of no stream's work (a host barrier alone): "stream": null. */
        timing_host(d, "submit", "submit", submit_ns,
                    b->stream_count ? b->streams[0] : TIMING_NO_STREAM, args);
    }
}

static void on_finished(cubec_device *d, batch *b)
{
    timing_harvest(d, b);
}

const sub_listener timing_listener = {
    .name = "launch timing", .begun = on_begun, .settled = on_settled, .finished = on_finished};

void timing_host(cubec_device *d, const char *name, const char *category, uint64_t begin_ns,
                 uint64_t stream, const char *args_json)
{
    if (!d->timing->trace) return;
    char args[384]; /* a submit's arguments (320) and the stream */
    char number[24] = "null";
    if (stream != TIMING_NO_STREAM) snprintf(number, sizeof number, "%" PRIu64, stream);
    snprintf(args, sizeof args, "\"stream\":%s%s%s", number, args_json ? "," : "",
             args_json ? args_json : "");
    uint64_t now = clock_now_ns();
    trace_complete(d->timing->trace, TRACE_HOST, name, category, begin_ns, now - begin_ns, args);
}

void timing_summary_tick(cubec_device *d, int force)
{
    if (!d->timing->kernel_stats || kernel_stats_empty(d->timing->kernel_stats)) return;
    uint64_t now = clock_now_ns();
    if (!force && now - d->timing->summary_ns < 1000000000ull) return;
    char text[8192];
    kernel_stats_format(d->timing->kernel_stats, text, sizeof text);
    LOG(LOG_INFO, LOG_SYS_PROFILING, "kernel summary (device time per launch):\n%s", text);
    kernel_stats_reset(d->timing->kernel_stats);
    d->timing->summary_ns = now;
}
