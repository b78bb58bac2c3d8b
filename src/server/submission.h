/* Submission (server/submission.c): batches recorded into command buffers, the timeline they
 * signal, waits, hazards between commands, and the listener table through which submission
 * reports batches begun, settled and finished to the components above it. */
#ifndef CUBEC_SERVER_SUBMISSION_H
#define CUBEC_SERVER_SUBMISSION_H

#include "gpu/gpu.h"
#include "server/buffers.h"
#include "server/hazards.h"

/* A range a recorded task holds until its batch is submitted: if the submission fails, what it
 * would have written carries the failure. */
typedef struct held_range {
    struct alloc_obj *alloc;
    uint64_t offset, size; /* in the page */
    int write;
} held_range;

/* A recorded-but-not-yet-finished command buffer. */
#define BATCH_STREAMS_NAMED 8

typedef struct batch {
    held_range *held;
    uint32_t held_count, held_cap;
    gpu_cmd *cmd;
    uint64_t value; /* timeline value signalled when it completes; 0 = free */
    /* Launch timing (server/launch_timing.c, on while tracing or summarising): two queries per
     * recorded launch, read back when the batch has finished. */
    gpu_queries *queries;
    struct launch_stamp *stamps;
    uint32_t stamp_count, stamp_cap;
    uint64_t submit_ns; /* host time of the submission */
    /* The last task recorded into it (an interned name) and its stream: what a wait that
     * times out names. */
    const char *last_task;
    uint64_t last_stream;
    /* The distinct streams whose tasks it holds, in the order they came (the first
     * BATCH_STREAMS_NAMED; stream_count counts them all): the trace's submit event names them. */
    uint64_t streams[BATCH_STREAMS_NAMED];
    uint32_t stream_count;
} batch;

/* Notes that a task of `stream` was recorded into `b`. */
static inline void batch_note_stream(batch *b, uint64_t stream)
{
    uint32_t named = b->stream_count < BATCH_STREAMS_NAMED ? b->stream_count : BATCH_STREAMS_NAMED;
    for (uint32_t i = 0; i < named; i++)
        if (b->streams[i] == stream) return;
    if (b->stream_count < BATCH_STREAMS_NAMED) b->streams[b->stream_count] = stream;
    b->stream_count++;
}

/* What a command buffer has bound so far: a launch skips what is already there. Launches of one
 * kernel on the same buffers with the same metadata (a loop, a graph of steps) then record a
 * dispatch and nothing else, which makes recording, submitting (drivers walk the command
 * buffer) and the GPU's front end cheaper. Reset when a command buffer begins. */
typedef struct bind_cache {
    const gpu_pipeline *pipeline;
    const gpu_pipeline *descriptors_for; /* layout of the pushed descriptors (NULL: none) */
    uint32_t descriptor_count;
    gpu_binding descriptors[GPU_MAX_BINDINGS];
    const gpu_pipeline *push_for; /* layout of the push constants (NULL: none pushed) */
    uint32_t push_size;
    unsigned char push[256];
    /* The last metadata slice written for the open batch (or the one about to open) and its
     * bytes: a launch with the same metadata reads that slice, so its descriptors stay bound
     * (info_size 0: none; cleared when a batch is closed). */
    gpu_binding info;
    uint32_t info_size;
    unsigned char info_bytes[256];
} bind_cache;

/* What submission reports to the components above it, through a table registered at open
 * (server/device.c) and called in registration order, so that submission.c calls none of them
 * (docs/ARCHITECTURE.md, "The chain"). Any entry may be NULL. */
typedef struct sub_listener {
    const char *name;
    /* A batch begins recording (its command buffer is open). */
    void (*begun)(struct cubec_device_s *d, batch *b);
    /* The batch was submitted (err NULL) or lost (err): what it holds is released; `submit_ns`
     * is the host time the submission began. */
    void (*settled)(struct cubec_device_s *d, batch *b, cubec_status err, uint64_t submit_ns);
    /* The GPU finished a batch (called before it is reused, and from polls). */
    void (*finished)(struct cubec_device_s *d, batch *b);
    /* The completed timeline value was refreshed. */
    void (*progress)(struct cubec_device_s *d);
} sub_listener;

#define SUB_MAX_LISTENERS 8

/* Batching, the timeline and waits (server/submission.c). Device lock; waits drop it only
 * around the backend's timeline wait, which touches none of this. */
typedef struct submission {
    uint64_t next_value;         /* the value the open batch will signal */
    uint64_t completed_value;    /* last observed counter value */
    uint64_t host_visible_value; /* the latest submitted batch that ended with a host barrier */
    /* The stream of the host transfer (server/transfer.c) recording now, 0 outside one: its
     * copies are no tasks, so the batches they open note it for the trace (batch.streams). For
     * the trace only: a transfer that waits with the lock dropped may let another thread's
     * batch note it, or lose it for its later chunks. */
    uint64_t transfer_stream;
    batch *batches;
    uint32_t batch_count, batch_cap;
    batch *open; /* NULL when nothing is recorded */
    uint32_t tasks;
    uint32_t tasks_max;      /* a slot's queue is drained at this many tasks */
    uint32_t batch_task_cap; /* tasks one command buffer may hold (drains interleave slots) */
    uint32_t max_batches;    /* in flight; beyond it the host waits for the oldest */
    bind_cache bound;        /* what the open command buffer has bound */
    int spin_us;
    uint64_t wait_timeout_ns; /* a wait longer than this loses the device (0: no limit) */
    hazard_tracker hazards;
    const sub_listener *listeners[SUB_MAX_LISTENERS]; /* immutable after open */
    uint32_t listener_count;
    struct {
        uint64_t barriers, submissions, tasks, skipped;
        uint64_t submit_ns; /* host time spent submitting */
    } stats; /* logged at close (info level): how well batching and barrier sharing work */
} submission;

/* The open command buffer, beginning one when needed. */
MUST_USE cubec_status sub_begin(cubec_device *d, gpu_cmd **out_cmd);
/* Submits the open batch (if any). With for_host, ends it with a barrier that makes device
 * writes visible to host reads. */
MUST_USE cubec_status sub_flush(cubec_device *d, int for_host);
/* The open batch made ready for the submission thread instead of submitted (its bookkeeping is
 * done as if it had been): a replay submits it together with the graph, in one vkQueueSubmit,
 * so the GPU does not idle between them. */
typedef struct sub_handoff {
    gpu_cmd *cmd; /* NULL: nothing was open */
    uint64_t value;
} sub_handoff;
MUST_USE cubec_status sub_flush_to(cubec_device *d, int for_host, sub_handoff *handoff);
/* Submits the open batch, ended with a host barrier, through the submission thread once
 * `gate`'s timeline reached `gate_value` (a peer copy's chunk: server/peer.c). The caller does
 * not wait; later batches of this device are submitted after it. */
MUST_USE cubec_status sub_flush_gated(cubec_device *d, cubec_device *gate, uint64_t gate_value);
/* Submits the open batch (one is opened when none is) through the submission thread with a
 * GPU wait for the inbound timeline to reach `inbound_wait`: its commands and every later
 * batch's run after it (cubec_stream_wait_cuda). The caller does not wait; *out_value is the
 * timeline value the batch signals. */
MUST_USE cubec_status sub_flush_inbound(cubec_device *d, uint64_t inbound_wait,
                                        uint64_t *out_value);
/* Counts one recorded task; submits a command buffer that reached batch_task_cap tasks. */
MUST_USE cubec_status sub_task_done(cubec_device *d);
/* Waits until the timeline reaches `value` (submitting first when `value` is the open batch).
 * Releases the device lock while blocked: callers must not rely on state that another thread
 * may change meanwhile (hold references). */
MUST_USE cubec_status sub_wait(cubec_device *d, uint64_t value);
/* A wait flag: keep the device lock while blocked. For waits inside a drain (the scheduler holds
 * tasks it took off the queues), a relocation (no thread may queue work on an old place), a
 * staged transfer (the shared rings hold its bytes) and the like. */
#define WAIT_KEEP_LOCK 1u
/* sub_wait with WAIT_* flags. */
MUST_USE cubec_status sub_wait_flags(cubec_device *d, uint64_t value, uint32_t flags);
/* sub_wait for work expected to take about `expected_us`: with polling on ([device]
 * poll_spin_us > 0) it polls that long (at most SUB_MAX_POLL_US) before blocking. */
#define SUB_MAX_POLL_US 20000
MUST_USE cubec_status sub_wait_polling(cubec_device *d, uint64_t value, uint64_t expected_us);
/* Waits until work up to `value` finished and device writes are visible to the host. */
MUST_USE cubec_status sub_wait_for_host(cubec_device *d, uint64_t value);
/* Refreshes completed_value, runs deferred frees, recycles batches. */
void sub_poll(cubec_device *d);
/* What a command is, for the barrier in front of it. */
typedef enum sub_command {
    SUB_COMPUTE,          /* a dispatch */
    SUB_COMPUTE_INDIRECT, /* a dispatch whose counts come from a buffer */
    SUB_TRANSFER,         /* vkCmdCopyBuffer */
} sub_command;
/* Records the barrier a command touching these ranges needs (only on a real hazard, and only
 * between the stages involved), then notes the ranges. */
void sub_hazards(cubec_device *d, gpu_cmd *cmd, const hazard_range *ranges, uint32_t n,
                 sub_command kind);
/* The same with another tracker (a graph's command buffer has its own). */
void sub_hazards_in(cubec_device *d, hazard_tracker *t, gpu_cmd *cmd, const hazard_range *ranges,
                    uint32_t n, sub_command kind);
/* Records a barrier after every earlier command of the tracker's command buffer, whatever it
 * touched, and forgets what the tracker noted: for commands that may reach memory no hazard range
 * names (a guarded buffer, through its device address). */
void sub_barrier_all_in(cubec_device *d, hazard_tracker *t, gpu_cmd *cmd);
void sub_destroy(cubec_device *d);
MUST_USE cubec_status sub_init(cubec_device *d);
/* Adds a listener (at open, before any batch). */
void sub_listen(cubec_device *d, const sub_listener *l);
/* The listeners of the components, in the order device.c registers them. */
extern const sub_listener failures_listener, profiles_listener, timing_listener, buffers_listener,
    graphs_listener;

#endif
