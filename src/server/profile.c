/* Profiles (spec 4.9): the GPU time of the work queued on a stream between two points.
 *
 * Device timing queues a timestamp task at begin and one at end, in the stream's slot queue, so
 * they are recorded exactly around the stream's work in between, whatever the scheduler
 * interleaves. The begin timestamp is written at the bottom of the pipe (when all earlier work
 * has finished) and followed by an execution barrier, so the profiled work cannot start before
 * it; the end timestamp is written when all earlier work has finished. On an idle GPU the begin
 * goes at the top of the pipe without a barrier. A window in which nothing was recorded gets no
 * end timestamp and measures 0 without a read, as in the seed (docs/profiling.md). Each open
 * profile owns a pair of queries of one pool; profiles nest and overlap because they share
 * nothing else.
 *
 * System timing (no timestamps on the queue, or CUBEC_TIMING=system) syncs the stream at begin
 * and at end and reads the host clock.
 *
 * A profile is open from the recording of its begin to the recording of its end. A launch of
 * its slot that fails or is skipped meanwhile poisons it (seed: profile_failure): end then
 * returns CUBEC_PROFILE_INVALID naming that failure, so an autotuner never picks a candidate
 * that did not run. */
#include "server/profile.h"
#include "base/clock.h"
#include "base/log.h"
#include "server/buffers.h"
#include "server/device.h"
#include "server/device_clock.h"
#include "server/streams.h"
#include "server/submission.h"
#include "server/task.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Open profiles at once with Device timing (a query pair each). */
#define PROFILE_PAIRS 1024

cubec_status server_profiles_init(cubec_device *d)
{
    handle_table_init(&d->profiles->handles, d->tag, "profile");
    d->tasks->record[TASK_TIMESTAMP] = server_record_timestamp;
    d->tasks->dropped[TASK_TIMESTAMP] = server_profile_timestamp_dropped;
    d->tasks->failed = server_profiles_poison;
    d->profiles->timing = d->gpu->caps.timestamps && !d->config.timing_system ? CUBEC_TIMING_DEVICE
                                                                              : CUBEC_TIMING_SYSTEM;
    if (d->profiles->timing == CUBEC_TIMING_DEVICE) server_clock_calibrate(d);
    return NULL;
}

void server_profiles_destroy(cubec_device *d)
{
    for (uint32_t i = 0; i < d->profiles->handles.count; i++) {
        profile_obj *p = d->profiles->handles.slots[i].object;
        if (!p) continue;
        failure_release(p->poison);
        free(p);
    }
    handle_table_free(&d->profiles->handles);
    free(d->profiles->empty_at);
    if (d->profiles->queries) d->gpu->ops->queries_destroy(d->gpu, d->profiles->queries);
    free(d->profiles->free_pairs);
}

/* A free pair of queries, creating the pool on first use. */
static cubec_status take_pair(cubec_device *d, uint32_t *out_query)
{
    if (!d->profiles->queries) {
        RETURN_IF_ERROR(
            d->gpu->ops->queries_create(d->gpu, 2 * PROFILE_PAIRS, &d->profiles->queries));
        d->profiles->free_pairs = malloc(PROFILE_PAIRS * sizeof *d->profiles->free_pairs);
        if (!d->profiles->free_pairs) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory");
        for (uint32_t i = 0; i < PROFILE_PAIRS; i++)
            d->profiles->free_pairs[i] = PROFILE_PAIRS - 1 - i;
        d->profiles->free_pair_count = PROFILE_PAIRS;
    }
    if (!d->profiles->free_pair_count)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "cubec_profile_begin: %u profiles are open already (the limit); end or "
                           "abandon some",
                           PROFILE_PAIRS);
    *out_query = 2 * d->profiles->free_pairs[--d->profiles->free_pair_count];
    return NULL;
}

/* The pair goes back at once even if the GPU has yet to write it: queries of one pool execute in
 * submission order, so a later user's reset and writes come after these. */
static void drop_profile(cubec_device *d, uint64_t id, profile_obj *p)
{
    if (!p) return;
    if (d->profiles->timing == CUBEC_TIMING_DEVICE)
        d->profiles->free_pairs[d->profiles->free_pair_count++] = p->query / 2;
    failure_release(p->poison);
    free(p);
    handle_table_remove(&d->profiles->handles, id);
}

/* Work of the slot is submitted and finished: System timing's sync. */
static cubec_status sync_slot(cubec_device *d, uint32_t slot)
{
    RETURN_IF_ERROR(server_drain(d, &slot, 1, 0));
    RETURN_IF_ERROR(sub_flush(d, 0));
    return sub_wait(d, d->streams->slots[slot].last_value);
}

static cubec_status queue_timestamp(cubec_device *d, stream_ref s, uint64_t id, int end)
{
    uint32_t slot = s.slot;
    task *t;
    RETURN_IF_ERROR(server_reserve_task(d, s, TASK_TIMESTAMP, &t));
    t->profile = id;
    t->profile_end = end;
    return server_commit_task(d, slot);
}

/* The instant of an empty window (its begin_ns and end_ns). The empty windows of one gap between
 * two pieces of a stream's work, nested or overlapping, share one instant, so that they still nest
 * and overlap as their calls did: the host clock at the first of their ends. A window that began
 * after that instant (a later one in the same gap) takes the clock at its own end, so that every
 * instant lies between its window's calls. */
static uint64_t empty_instant(cubec_device *d, const profile_obj *p)
{
    profile_table *t = d->profiles;
    uint64_t now = clock_now_ns();
    if (!t->empty_at) t->empty_at = calloc(d->streams->max_streams, sizeof *t->empty_at);
    if (!t->empty_at) return now; /* out of host memory: only the shared instant is lost */
    struct empty_instant *e = &t->empty_at[p->slot];
    if (e->ns && e->recorded == p->recorded_at && e->ns >= p->begin_ns) return e->ns;
    *e = (struct empty_instant){p->recorded_at, now};
    return now;
}

cubec_status server_profile_begin(cubec_device *d, stream_ref s, uint64_t *out_id)
{
    uint32_t slot = s.slot;
    uint64_t stream = s.number;
    profile_obj *p = calloc(1, sizeof *p);
    if (!p) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (profile)");
    p->stream = stream;
    p->slot = slot;
    p->number = ++d->profiles->numbers;
    cubec_status err = NULL;
    if (d->profiles->timing == CUBEC_TIMING_DEVICE) err = take_pair(d, &p->query);
    if (err) {
        free(p);
        return err;
    }
    uint64_t id = 0;
    err = handle_table_insert(&d->profiles->handles, p, &id);
    if (err) {
        if (d->profiles->timing == CUBEC_TIMING_DEVICE)
            d->profiles->free_pairs[d->profiles->free_pair_count++] = p->query / 2;
        free(p);
        return err;
    }
    if (d->profiles->timing == CUBEC_TIMING_DEVICE) {
        p->begin_ns = clock_now_ns();
        err = queue_timestamp(d, s, id, 0);
    } else {
        /* Open before the sync: a failure recorded by it belongs to earlier work, but the
         * profile must not miss one recorded after begin returns either; earlier work was
         * submitted by the sync, so only its outcome can still arrive, and a lost submission of
         * it would make the measurement meaningless anyway. */
        err = sync_slot(d, slot);
        p->opened = 1;
        p->begin_ns = clock_now_ns();
    }
    if (err) {
        drop_profile(d, id, p);
        return err;
    }
    LOG(LOG_DEBUG, LOG_SYS_PROFILING, "profile #%" PRIu64 " begins on stream %" PRIu64, p->number,
        stream);
    *out_id = id;
    return NULL;
}

static cubec_status lookup(cubec_device *d, stream_ref s, uint64_t id, const char *fn,
                           profile_obj **out)
{
    char arg[64];
    snprintf(arg, sizeof arg, "%s: profile", fn);
    void *o;
    RETURN_IF_ERROR(handle_table_lookup(&d->profiles->handles, id, arg, &o));
    profile_obj *p = o;
    if (!p) return status_make(CUBEC_INTERNAL, "%s: the profile table holds no object", fn);
    if (p->slot != s.slot || p->stream != s.number)
        return INVALID_ARG("%s: profile #%" PRIu64 " began on stream %" PRIu64
                           ", not on stream %" PRIu64,
                           fn, p->number, p->stream, s.number);
    *out = p;
    return NULL;
}

/* An error of the profile's own flush or sync: the profiled work did not all run, which is a
 * failure inside the profile (CUBEC_PROFILE_INVALID), unless the device is lost. */
static cubec_status invalid_after(const profile_obj *p, cubec_status err)
{
    if (!p || cubec_status_code(err) == CUBEC_DEVICE_LOST) return err;
    cubec_status invalid = status_make(CUBEC_PROFILE_INVALID,
                                       "profile #%" PRIu64 " on stream %" PRIu64
                                       " measured work that did not all run: %s",
                                       p->number, p->stream, cubec_status_message(err));
    cubec_status_free(err);
    return invalid;
}

void server_profile_timestamp_dropped(cubec_device *d, const task *t, failure *f)
{
    profile_obj *p = handle_table_get(&d->profiles->handles, t->profile);
    if (!p || p->poison) return;
    /* A dropped begin leaves the profile's queries unwritten: it can never be read. */
    p->poison = failure_retain(f);
    p->opened = 1;
}

static cubec_status poisoned(const profile_obj *p)
{
    return status_make(CUBEC_PROFILE_INVALID,
                       "profile #%" PRIu64 " on stream %" PRIu64
                       " measured work that did not all run: %s",
                       p->number, p->stream, p->poison->message);
}

cubec_status server_profile_end(cubec_device *d, stream_ref s, uint64_t id,
                                cubec_profile_result *out)
{
    uint32_t slot = s.slot;
    profile_obj *p = NULL;
    RETURN_IF_ERROR(lookup(d, s, id, "cubec_profile_end", &p));
    if (!p) return status_make(CUBEC_INTERNAL, "cubec_profile_end: no profile object");
    cubec_status err = NULL;
    cubec_profile_result r = {.struct_size = sizeof(cubec_profile_result),
                              .method = d->profiles->timing};
    if (d->profiles->timing == CUBEC_TIMING_SYSTEM) {
        uint64_t begin_ns = p->begin_ns;
        err = sync_slot(d, slot);
        /* The wait may let other threads in (an abandon of this profile among them). */
        p = handle_table_get(&d->profiles->handles, id);
        if (!p)
            return err ? err
                       : INVALID_ARG("cubec_profile_end: the profile was abandoned by "
                                     "another thread while it ended");
        if (err) err = invalid_after(p, err);
        r.begin_ns = begin_ns;
        r.end_ns = clock_now_ns();
    } else {
        err = queue_timestamp(d, s, id, 1);
        if (!err) {
            /* A lost submission of the profiled work is a failure inside the profile. */
            err = server_drain(d, &slot, 1, 0);
            if (err) err = invalid_after(p, err);
        }
        if (!err && !p->closed)
            err = status_make(CUBEC_INTERNAL, "profile #%" PRIu64 ": its end was not recorded",
                              p->number);
        /* The wait may let other threads in: hold on to the values, not to `p`. */
        uint64_t value = p->end_value;
        uint32_t query = p->query;
        int empty = p->empty;
        if (!err && !p->poison && !empty) err = sub_wait(d, value);
        p = handle_table_get(&d->profiles->handles, id);
        if (!p)
            return err ? err
                       : INVALID_ARG("cubec_profile_end: the profile was abandoned by "
                                     "another thread while it ended");
        uint64_t ticks[2] = {0, 0};
        if (!err && !p->poison && empty) {
            /* Nothing ran in the window: no device instant to convert, the host's stands in. */
            r.begin_ns = r.end_ns = empty_instant(d, p);
        } else if (!err && !p->poison) {
            err = d->gpu->ops->queries_read(d->gpu, d->profiles->queries, query, 2, ticks);
        }
        if (!err && !p->poison && !empty) {
            uint64_t mask = d->gpu->caps.timestamp_bits >= 64
                                ? UINT64_MAX
                                : (1ull << d->gpu->caps.timestamp_bits) - 1;
            uint64_t delta = (ticks[1] - ticks[0]) & mask;
            /* A timestamp read as earlier than the other would wrap to a huge duration. */
            if (delta > mask / 2) delta = 0;
            /* From the end back: without a calibrated clock a conversion bounds the offset by
             * "now", which bounds only the later timestamp (converting the begin first put the
             * first profile's end in the host's future by its duration). */
            uint64_t duration = (uint64_t)llround((double)delta * d->info.timestamp_period_ns);
            r.end_ns = server_device_time_ns(d, (delta ? ticks[1] : ticks[0]) & mask);
            r.begin_ns = r.end_ns > duration ? r.end_ns - duration : 0;
        }
    }
    r.duration_ns = r.end_ns - r.begin_ns;
    if (!err && p->poison) err = poisoned(p);
    if (!err) {
        *out = r;
        LOG(LOG_DEBUG, LOG_SYS_PROFILING,
            "profile #%" PRIu64 " on stream %" PRIu64 ": %.3f us (%s timing)", p->number, p->stream,
            (double)r.duration_ns / 1e3,
            d->profiles->timing == CUBEC_TIMING_DEVICE ? "device" : "system");
    }
    drop_profile(d, id, p);
    return err;
}

cubec_status server_profile_abandon(cubec_device *d, stream_ref s, uint64_t id)
{
    profile_obj *p = NULL;
    RETURN_IF_ERROR(lookup(d, s, id, "cubec_profile_abandon", &p));
    /* A begin still queued finds no profile when it is recorded and writes nothing. */
    drop_profile(d, id, p);
    return NULL;
}

cubec_status server_record_timestamp(cubec_device *d, task *t)
{
    profile_obj *p = handle_table_get(&d->profiles->handles, t->profile);
    if (!p) return NULL; /* abandoned */
    /* Nothing can run before the begin timestamp when it opens a new command buffer and the GPU
     * has finished everything submitted before: checked before the batch is begun. */
    int fresh = d->sub->open == NULL;
    /* An end with nothing of its stream recorded or replayed since its begin closes an empty
     * window, whether or not the begin's batch was submitted since, and whatever other streams
     * recorded meanwhile (their work is not the stream's). */
    const uint64_t recorded = d->streams->slots[t->slot].recorded;
    int empty = p->opened && recorded == p->recorded_at;
    gpu_cmd *cmd;
    RETURN_IF_ERROR(sub_begin(d, &cmd));
    const gpu_ops *ops = d->gpu->ops;
    if (!t->profile_end) {
        if (fresh) sub_poll(d);
        /* On an idle GPU the timestamp is written where the profiled work begins, with no
         * barrier, so that a short candidate of an autotuner is not charged a barrier (30+ us
         * on lavapipe); its pair is reset from the host where it can be (its last use has
         * finished). Otherwise it waits for the earlier work, and the profiled work starts
         * after it, not alongside that work. */
        int idle = fresh && d->sub->completed_value + 1 >= d->sub->next_value;
        if (idle && d->gpu->caps.host_query_reset)
            ops->queries_host_reset(d->gpu, d->profiles->queries, p->query, 2);
        else
            gpu_cmd_reset_queries(cmd, d->profiles->queries, p->query, 2);
        gpu_cmd_timestamp(cmd, d->profiles->queries, p->query,
                          idle ? GPU_STAGE_TOP : GPU_STAGE_BOTTOM);
        if (!idle) gpu_cmd_barrier(cmd, GPU_STAGE_ALL, 0, GPU_STAGE_ALL, 0);
        p->opened = 1;
        p->recorded_at = recorded;
    } else {
        /* An empty window gets no end timestamp: cubec_profile_end reports 0 without reading
         * its queries, as the seed reports 0 for a window in which nothing ran (two timestamps
         * around nothing measured 70 ns to 19 us on lavapipe). A poisoned profile is never read;
         * its begin may have been lost with a submission, leaving the queries unreset. */
        if (!empty && !p->poison)
            gpu_cmd_timestamp(cmd, d->profiles->queries, p->query + 1, GPU_STAGE_BOTTOM);
        p->empty = empty;
        p->closed = 1;
        p->end_value = d->sub->next_value;
    }
    return NULL;
}

/* A lost submission may hold any stream's work: every open profile is invalid. */
static void batch_settled(cubec_device *d, batch *b, cubec_status err, uint64_t submit_ns)
{
    (void)b;
    (void)submit_ns;
    if (!err || !d->profiles->handles.live) return;
    failure *f = failure_new(cubec_status_code(err), "the submission of its work failed: %s",
                             cubec_status_message(err));
    if (f) server_profiles_poison(d, NO_SLOT, f);
    failure_release(f);
}

const sub_listener profiles_listener = {.name = "profiles", .settled = batch_settled};

void server_profiles_poison(cubec_device *d, uint32_t slot, failure *f)
{
    if (!d->profiles->handles.live) return;
    for (uint32_t i = 0; i < d->profiles->handles.count; i++) {
        profile_obj *p = d->profiles->handles.slots[i].object;
        if (!p || !p->opened || p->closed || p->poison) continue;
        if (slot != NO_SLOT && p->slot != slot) continue;
        p->poison = failure_retain(f);
        LOG(LOG_INFO, LOG_SYS_PROFILING, "profile #%" PRIu64 " is invalid: %s", p->number,
            f->message);
    }
}
