/* Profile tokens (server/profile.c). */
#ifndef CUBEC_SERVER_PROFILE_H
#define CUBEC_SERVER_PROFILE_H

#include "base/handle_table.h"
#include "failure/failure.h"
#include "gpu/gpu.h"
#include "server/launch.h"
#include "server/streams.h"

/* A profile token (server/profile.c). */
typedef struct profile_obj {
    uint64_t stream; /* number of the stream it measures */
    uint32_t slot;
    uint64_t number;      /* "profile #n" in messages */
    int opened, closed;   /* its begin / end timestamp is recorded (System: begin / end synced) */
    uint32_t query;       /* first of its two queries (Device timing) */
    uint64_t end_value;   /* batch that carries the end timestamp */
    uint64_t begin_ns;    /* host time of the begin (System timing: after its sync) */
    uint64_t recorded_at; /* its slot's `recorded` count when its begin timestamp was recorded */
    int empty;            /* nothing was recorded between its timestamps: it measures 0 */
    failure *poison;      /* the first failure on its stream while it was open */
} profile_obj;

/* Profile tokens (server/profile.c). Device lock. */
typedef struct profile_table {
    handle_table handles; /* profile_obj per open profile */
    cubec_timing timing;
    gpu_queries *queries; /* pairs of queries, one pair per open profile */
    uint32_t *free_pairs;
    uint32_t free_pair_count, pair_count;
    uint64_t numbers; /* counter behind "profile #n" */
    /* Per slot (made on the first empty window): the instant given to the empty windows of the
     * gap between two pieces of its work that `recorded` names (profile.c, empty_instant). */
    struct empty_instant {
        uint64_t recorded, ns;
    } * empty_at;
} profile_table;

MUST_USE cubec_status server_profiles_init(cubec_device *d);
void server_profiles_destroy(cubec_device *d);
MUST_USE cubec_status server_profile_begin(cubec_device *d, stream_ref s, uint64_t *out_id);
MUST_USE cubec_status server_profile_end(cubec_device *d, stream_ref s, uint64_t id,
                                         cubec_profile_result *out);
MUST_USE cubec_status server_profile_abandon(cubec_device *d, stream_ref s, uint64_t id);
/* Records a profile's timestamp task. */
MUST_USE cubec_status server_record_timestamp(cubec_device *d, task *t);
/* A failure on `slot` (a launch skipped or failed): every profile open there is invalid. With
 * slot NO_SLOT, every open profile (a lost submission). */
void server_profiles_poison(cubec_device *d, uint32_t slot, failure *f);
/* A profile's timestamp task was dropped unrecorded: the profile carries `f`. */
void server_profile_timestamp_dropped(cubec_device *d, const task *t, failure *f);

#endif
