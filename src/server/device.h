/* The device: everything one cubec_device owns, and the server operations on it. All server_*
 * functions expect the device lock to be held by the caller (the api/ layer takes it). */
#ifndef CUBEC_SERVER_DEVICE_H
#define CUBEC_SERVER_DEVICE_H

#include "base/config.h"
#include "base/fault.h"
#include "base/handle_table.h"
#include "base/status.h"
#include "failure/failure.h"
#include "gpu/gpu.h"
#include "kernel/glsl_compiler.h"
#include "kernel/reflect.h"
#include "memory/memory_manager.h"
#include "server/hazards.h"
#include "stream/scheduler.h"

#include <pthread.h>
#include <stdatomic.h>

/* A live allocation shared by a buffer and its views. Freed into the pool only when the last
 * reference is gone and the GPU has passed `last_use`. */
typedef struct alloc_obj {
    mem_alloc mem;          /* page, offset, size; size 0 = no memory */
    uint32_t refs;          /* handles, views, queued tasks and events that use it */
    uint32_t slot;          /* owner: the slot of the stream that created it (its pools hold it) */
    uint32_t queued_writer; /* slot of the last queued task that writes it, or NO_SLOT */
    /* Slots (bit slot % 64) that queued a task reading it: a later writer on another slot submits
     * them first, so a write never overtakes a read issued before it (write-after-read). A bit
     * may outlive its task: draining a slot with nothing queued costs nothing. */
    uint64_t queued_readers;
    uint64_t last_use; /* timeline value of the last batch that reads or writes it */
    uint64_t last_write;
    uint64_t number; /* "buffer #n" in failure messages */
    taint_map taint; /* byte ranges that carry a failure (offsets within the allocation) */
} alloc_obj;

#define NO_SLOT UINT32_MAX

/* The stream a call acts for: its slot, and its number for messages and ownership. Passed as an
 * argument to every server call that needs it, so that a wait that lets other threads in cannot
 * change it underneath. */
typedef struct stream_ref {
    uint32_t slot;
    uint64_t number;
} stream_ref;

/* How a drain submits what it recorded. */
#define DRAIN_FOR_HOST                                                                             \
    1u                     /* the batch ends with a barrier that makes writes visible to the host  \
                            */
#define DRAIN_KEEP_OPEN 2u /* the batch stays open: a replay submits it together with the graph */

typedef struct buffer_obj {
    alloc_obj *alloc;
    uint64_t offset; /* within the allocation */
    uint64_t size;
    uint32_t refs;
} buffer_obj;

/* A compiled pipeline for one (kernel identity, metadata layout). Shared by every kernel handle
 * created from the same definition; lives until the device closes. */
typedef struct pipeline_entry {
    uint64_t key;
    char name[64];
    kernel_reflection refl;
    int info_in_push;
    uint32_t info_size;
    gpu_pipeline *pipeline;
    /* The names kernel handles of this definition go by (at most 31 characters each): they
     * live as long as the entry, so a queued task points at its name instead of copying it. */
    char **names;
    uint32_t name_count;
    struct pipeline_entry *next; /* hash chain */
} pipeline_entry;

typedef struct kernel_obj {
    pipeline_entry *entry; /* shared by kernels with the same definition */
    const char *name;      /* this handle's name, for failure messages (in entry->names) */
} kernel_obj;

/* A range a recorded task holds until its batch is submitted: if the submission fails, what it
 * would have written carries the failure. */
typedef struct held_range {
    struct alloc_obj *alloc;
    uint64_t offset, size; /* in the page */
    int write;
} held_range;

/* A recorded-but-not-yet-finished command buffer. */
typedef struct batch {
    held_range *held;
    uint32_t held_count, held_cap;
    gpu_cmd *cmd;
    uint64_t value; /* timeline value signalled when it completes; 0 = free */
    /* Launch timing (server/timeline.c, on while tracing or summarising): two queries per
     * recorded launch, read back when the batch has finished. */
    gpu_queries *queries;
    struct launch_stamp *stamps;
    uint32_t stamp_count, stamp_cap;
    uint64_t submit_ns; /* host time of the submission */
} batch;

typedef struct deferred_free {
    mem_alloc mem;
    uint32_t slot;  /* whose pools get it back */
    uint64_t after; /* free once the timeline reaches this */
} deferred_free;

/* A bound range: what a queued task holds of a buffer (a reference on the allocation, so the
 * memory outlives the handle until the task has run). */
typedef struct bound_range {
    alloc_obj *alloc;
    uint64_t offset; /* in the page */
    uint64_t size;
    /* Leading bytes that are bound but not accessed: the builtin copy and fill kernels bind from
     * an aligned offset below the range they write. Hazards, failures and holds use the accessed
     * bytes only (bound_start/bound_bytes). */
    uint32_t lead;
} bound_range;

static inline uint64_t bound_start(const bound_range *r)
{
    return r->offset + r->lead;
}
static inline uint64_t bound_bytes(const bound_range *r)
{
    return r->size - r->lead;
}

/* A task keeps this much metadata and this many bindings in its own record; more go to its
 * slot's arena. Small records keep the slot's queue in a few cache lines (1.4 KB each before). */
#define TASK_INLINE_INFO 128
#define TASK_INLINE_BINDINGS 4

typedef enum task_kind {
    TASK_LAUNCH,        /* a dispatch */
    TASK_TRANSFER_COPY, /* a copy command b[0] -> b[1] (CPU devices; server/copy_fill.c) */
    TASK_TRANSFER_FILL, /* a fill command of b[0] with `pattern` (CPU devices; copy_fill.c) */
    TASK_TIMESTAMP,     /* a profile's begin or end timestamp (server/profile.c) */
    TASK_KIND_COUNT
} task_kind;

/* What the server needs to know of a task kind, in one table (server/launch.c): code that
 * handles every task (skipping, tainting, graphs, the trace) asks it instead of branching on
 * the kind, so a new kind is one row. */
typedef struct task_kind_info {
    const char *name;   /* its name in messages and traces; NULL: the kernel's */
    uint32_t bindings;  /* ranges it holds; 0: t->count (a launch) */
    uint32_t read_mask; /* binding i is read when bit i is set; 0 with bindings 0: reflection */
} task_kind_info;
extern const task_kind_info task_kinds[TASK_KIND_COUNT];

/* A queued unit of work: filled in place in the slot's queue by the launch path, recorded into a
 * command buffer when the scheduler drains the slot. */
typedef struct task {
    task_kind kind;
    uint32_t slot;    /* whose queue (and metadata arena) it came from */
    uint64_t stream;  /* the stream's number, for failure messages */
    const char *name; /* the kernel's name, for failure messages (lives until close) */
    uint32_t count;   /* bindings */
    const struct pipeline_entry *entry;
    uint32_t groups[3];
    uint32_t info_size;
    uint32_t info_at;     /* offset in the slot's info arena when info_size > TASK_INLINE_INFO */
    bound_range indirect; /* alloc NULL when the counts are static */
    uint32_t write_mask;  /* bit i: binding i is written */
    uint32_t bind_at;     /* offset in the slot's arena when count > TASK_INLINE_BINDINGS */
    bound_range b[TASK_INLINE_BINDINGS];
    uint64_t profile; /* TASK_TIMESTAMP: the profile's id */
    int profile_end;  /* TASK_TIMESTAMP: 1 for the end timestamp */
    uint32_t pattern; /* TASK_TRANSFER_FILL: the 32-bit word written */
    unsigned char info[TASK_INLINE_INFO];
} task;

/* A profile token (server/profile.c). */
typedef struct profile_obj {
    uint64_t stream; /* number of the stream it measures */
    uint32_t slot;
    uint64_t number;    /* "profile #n" in messages */
    int opened, closed; /* its begin / end timestamp is recorded (System: begin / end synced) */
    uint32_t query;     /* first of its two queries (Device timing) */
    uint64_t end_value; /* batch that carries the end timestamp */
    uint64_t begin_ns;  /* System timing: host time after the begin sync */
    failure *poison;    /* the first failure on its stream while it was open */
} profile_obj;

/* What one timed launch was, until its batch's timestamps are read (server/timeline.c). */
typedef struct launch_stamp {
    char name[32];
    uint64_t stream;
    uint32_t slot;
    uint32_t groups[3];
    int indirect;
    uint64_t record_ns; /* host time it was recorded (the fallback without timestamps) */
} launch_stamp;

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

/* The replay submitter (server/submitter.c): a thread that submits graph replays. */
#define SUBMITTER_RING 64
typedef struct submit_item {
    gpu_cmd *cmd;
    uint64_t value; /* the timeline value it signals */
    uint64_t graph; /* the graph's number, for a failure */
    gpu_cmd *batch; /* a batch submitted just before it, in the same call (or NULL) */
    uint64_t batch_value;
} submit_item;

typedef struct submitter {
    int started, stop, busy;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t work, idle;
    submit_item ring[SUBMITTER_RING];
    uint32_t head, count;
    atomic_uint pushed; /* bumped by every push: the thread polls it before sleeping */
    uint64_t submit_ns, submissions;
    /* Failed submissions not yet reported to the device (a ring; more than fit are counted). */
    struct {
        cubec_status result;
        uint64_t graph, value;
        int had_batch; /* eager work went with it: its outputs are unknown */
    } failures[16];
    uint32_t failure_count, failures_dropped;
} submitter;

/* A range a graph binds: its replays read or write it (server/graph.c). */
typedef struct graph_use {
    alloc_obj *alloc;      /* the graph holds a reference */
    uint64_t offset, size; /* in the page */
    int write;
    int input; /* read before the graph writes it: a failure on it skips the replay */
} graph_use;

/* Host-visible memory holding recorded launch metadata that does not fit push constants. */
typedef struct graph_chunk {
    gpu_mem *mem;
    uint64_t used;
} graph_chunk;

#define GRAPH_COPIES 2

/* A captured graph: reusable command buffers (server/graph.c). */
typedef struct graph_obj {
    uint64_t number; /* "graph #n" in messages */
    uint32_t slot;
    uint64_t owner; /* number of the stream that captured it */
    /* GRAPH_COPIES identical command buffers, replayed in turn: a command buffer may not be
     * resubmitted while pending without SIMULTANEOUS_USE, which costs an NVIDIA driver ~40 us
     * per submission of 1000 launches. */
    gpu_cmd *cmd[GRAPH_COPIES];
    uint64_t copy_value[GRAPH_COPIES]; /* timeline value of each copy's latest replay */
    uint32_t next_copy;
    bind_cache bound[GRAPH_COPIES];
    hazard_tracker hazards[GRAPH_COPIES];
    graph_use *uses;
    uint32_t use_count, use_cap;
    graph_chunk *chunks;
    uint32_t chunk_count;
    uint32_t launches;
    uint64_t last_value; /* timeline value of its latest replay */
    /* Launch timing (only when tracing or summarising at capture, with host query reset): per
     * copy, two queries per launch, read when the copy is replayed again, destroyed or closed. */
    gpu_queries *queries[GRAPH_COPIES];
    int unread[GRAPH_COPIES]; /* the copy's last replay has not been read yet */
    launch_stamp *stamps;
    uint32_t stamp_count, stamp_cap;
    cubec_code doom_code; /* the first failure inside the capture window (0: none) */
    char *doom;
} graph_obj;

typedef enum capture_state {
    CAPTURE_NONE = 0,
    CAPTURE_PREPARED = 1,  /* cubec_graph_prepare: warm-up runs, the slot is isolated */
    CAPTURE_RECORDING = 2, /* cubec_graph_begin: launches are recorded into `graph` */
} capture_state;

/* What a slot owns besides its queue (which the scheduler keeps). */
typedef struct slot_state {
    capture_state capture;
    uint64_t capture_owner; /* number of the stream that prepared the capture */
    graph_obj *graph;       /* the graph being recorded */
    memory_manager *memory; /* created on the slot's first allocation */
    unsigned char *arena;   /* metadata too large to sit inline in a task */
    uint32_t arena_used, arena_cap;
    uint64_t last_value; /* timeline value of the last batch that recorded its work */
} slot_state;

/* Host-visible buffer used as a ring for metadata that does not fit push constants, and on
 * discrete GPUs for staging. */
typedef struct host_ring {
    gpu_mem *mem;
    unsigned char *mapped;
    uint64_t size, head;
    uint64_t *chunk_use; /* per chunk: last timeline value using it */
    uint64_t chunk_size;
    uint32_t chunks;
} host_ring;

/* Buffers and their memory (server/buffers.c). Guarded by the device lock. */
typedef struct buffer_store {
    handle_table handles; /* buffer_obj per live handle or view */
    memory_config memory_cfg;
    uint64_t numbers;        /* counter behind "buffer #n" */
    deferred_free *deferred; /* frees waiting for the GPU to pass their last use */
    uint32_t deferred_count, deferred_cap;
} buffer_store;

/* Kernels and pipelines (server/kernels.c, built-ins in copy_fill.c). Device lock. */
typedef struct kernel_cache {
    handle_table handles;                /* kernel_obj per handle */
    glsl_compiler *compiler;             /* created on the first GLSL kernel */
    pipeline_entry *pipelines[256];      /* by identity hash; entries live until close */
    pipeline_entry *copy, *copy4, *fill; /* the built-in kernels, compiled on first use */
} kernel_cache;

/* Logical streams folded onto slots, and the scheduler of their queues (server/streams.c).
 * Device lock. */
typedef struct stream_slots {
    slot_state *slots; /* max_streams of them */
    /* Scratch for the slots a use must wait for (max_streams entries: a slot appears once), so
     * aligning allocates nothing; used by one call at a time, never across a wait. */
    uint32_t *align_slots;
    uint32_t max_streams;
    int single; /* policy `single`: every thread's current stream is the same */
    scheduler sched;
    int draining; /* a drain is recording: waits must keep the lock */
} stream_slots;

/* Batching, the timeline and waits (server/submission.c). Device lock; waits drop it only
 * around the backend's timeline wait, which touches none of this. */
typedef struct submission {
    uint64_t next_value;         /* the value the open batch will signal */
    uint64_t completed_value;    /* last observed counter value */
    uint64_t host_visible_value; /* the latest submitted batch that ended with a host barrier */
    batch *batches;
    uint32_t batch_count, batch_cap;
    batch *open; /* NULL when nothing is recorded */
    uint32_t tasks;
    uint32_t tasks_max;      /* a slot's queue is drained at this many tasks */
    uint32_t batch_task_cap; /* tasks one command buffer may hold (drains interleave slots) */
    uint32_t max_batches;    /* in flight; beyond it the host waits for the oldest */
    bind_cache bound;        /* what the open command buffer has bound */
    int spin_us;
    hazard_tracker hazards;
    const sub_listener *listeners[SUB_MAX_LISTENERS]; /* immutable after open */
    uint32_t listener_count;
    struct {
        uint64_t barriers, submissions, tasks, skipped;
        uint64_t submit_ns; /* host time spent submitting */
    } stats; /* logged at close (info level): how well batching and barrier sharing work */
} submission;

/* Host-visible rings (server/host_ring.c). Device lock. */
typedef struct host_rings {
    host_ring info;     /* metadata beyond push constants */
    host_ring upload;   /* discrete only */
    host_ring readback; /* discrete only */
} host_rings;

/* Profile tokens (server/profile.c). Device lock. */
typedef struct profile_table {
    handle_table handles; /* profile_obj per open profile */
    cubec_timing timing;
    gpu_queries *queries; /* pairs of queries, one pair per open profile */
    uint32_t *free_pairs;
    uint32_t free_pair_count, pair_count;
    uint64_t numbers; /* counter behind "profile #n" */
    /* Device ticks to host CLOCK_MONOTONIC ns: host = ticks * period + clock_offset_ns. */
    double clock_offset_ns;
    int clock_known;
    uint64_t clock_checked_ns;
} profile_table;

/* Graphs (server/graph.c). Device lock. */
typedef struct graph_table {
    handle_table handles; /* graph_obj per captured graph */
    uint32_t captures;    /* slots preparing or recording a capture */
    uint64_t numbers;     /* counter behind "graph #n" */
} graph_table;

/* Launch timing (server/launch_timing.c): timestamps feed the trace and the summary. Device
 * lock (the trace has its own for the process-wide copy). */
typedef struct launch_timing {
    int on; /* tracing or summarising: launches are timed */
    struct trace *trace;
    struct kernel_stats *kernel_stats;
    uint64_t summary_ns; /* when the last profiling summary was logged */
} launch_timing;

/* A device composes its components; the comment says which lock guards each member. */
struct cubec_device_s {
    pthread_mutex_t lock;   /* orders every public call (api/ takes it) */
    cubec_config config;    /* immutable after open */
    gpu *gpu;               /* the backend; immutable after open (its objects: device lock) */
    cubec_device_info info; /* device lock (get_info copies it under it) */
    uint16_t tag;           /* immutable: the high bits of every handle of this device */
    int lost;               /* device lock: a device-lost error was seen; every later call fails */
    fault_plan faults;      /* device lock: counted by the gpu seam */

    buffer_store buffers;   /* device lock */
    kernel_cache kernels;   /* device lock */
    stream_slots streams;   /* device lock */
    submission sub;         /* device lock (waits drop it, see submission) */
    host_rings rings;       /* device lock */
    profile_table profiles; /* device lock */
    graph_table graphs;     /* device lock */
    submitter submitter;    /* its own lock (submitter.lock), shared with its thread */
    launch_timing timing;   /* device lock */
};

/* Binding i of a task: in the record, or in its slot's arena when it has more than fit. */
static inline bound_range *task_b(const cubec_device *d, const task *t, uint32_t i)
{
    if (t->count <= TASK_INLINE_BINDINGS || t->kind != TASK_LAUNCH) return (bound_range *)&t->b[i];
    return (bound_range *)(void *)(d->streams.slots[t->slot].arena + t->bind_at) + i;
}

/* server/device.c */
cubec_status server_open(const cubec_device_desc *desc, cubec_device **out);
void server_close(cubec_device *d);
cubec_status server_check_alive(cubec_device *d);
/* Marks the device lost when `err` says so; returns err. */
cubec_status server_note_error(cubec_device *d, cubec_status err);

/* server/submission.c */
/* The open command buffer, beginning one when needed. */
cubec_status sub_begin(cubec_device *d, gpu_cmd **out_cmd);
/* Submits the open batch (if any). With for_host, ends it with a barrier that makes device
 * writes visible to host reads. */
cubec_status sub_flush(cubec_device *d, int for_host);
/* The open batch made ready for the submission thread instead of submitted (its bookkeeping is
 * done as if it had been): a replay submits it together with the graph, in one vkQueueSubmit,
 * so the GPU does not idle between them. */
typedef struct sub_handoff {
    gpu_cmd *cmd; /* NULL: nothing was open */
    uint64_t value;
} sub_handoff;
cubec_status sub_flush_to(cubec_device *d, int for_host, sub_handoff *handoff);
/* Counts one recorded task; submits a command buffer that reached batch_task_cap tasks. */
cubec_status sub_task_done(cubec_device *d);
/* Waits until the timeline reaches `value` (submitting first when `value` is the open batch).
 * Releases the device lock while blocked unless a drain is recording (d->draining): callers
 * must not rely on state that another thread may change meanwhile (hold references). */
cubec_status sub_wait(cubec_device *d, uint64_t value);
/* Waits until work up to `value` finished and device writes are visible to the host. */
cubec_status sub_wait_for_host(cubec_device *d, uint64_t value);
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
void sub_destroy(cubec_device *d);
cubec_status sub_init(cubec_device *d);
/* Adds a listener (at open, before any batch). */
void sub_listen(cubec_device *d, const sub_listener *l);
/* The listeners of the components, in the order device.c registers them. */
extern const sub_listener failures_listener, profiles_listener, timing_listener, buffers_listener,
    graphs_listener;

/* server/buffers.c */
cubec_status server_buffer_create(cubec_device *d, stream_ref s, uint64_t size, cubec_buffer *out);
/* cubec_memory_cleanup: frees waiting on the GPU first, then the stream's empty pages. */
cubec_status server_memory_cleanup(cubec_device *d, stream_ref s);
void server_memory_cleanup_all(cubec_device *d, int explicit_cleanup);
cubec_status server_buffer_view(cubec_device *d, buffer_obj *parent, uint64_t offset, uint64_t size,
                                cubec_buffer *out);
void server_buffer_release(cubec_device *d, uint64_t id, buffer_obj *b);
void server_alloc_release(cubec_device *d, alloc_obj *a);
void server_run_deferred_frees(cubec_device *d);
cubec_status server_memory_init(cubec_device *d);
void server_memory_destroy(cubec_device *d);
static inline gpu_mem *buffer_page(const buffer_obj *b)
{
    return (gpu_mem *)b->alloc->mem.page;
}
static inline uint64_t buffer_device_offset(const buffer_obj *b)
{
    return b->alloc->mem.offset + b->offset;
}

/* server/host_ring.c */
cubec_status host_ring_init(cubec_device *d, host_ring *r, uint64_t size, uint32_t chunks,
                            gpu_mem_kind kind);
void host_ring_destroy(cubec_device *d, host_ring *r);
/* Reserves `size` bytes (size <= chunk) aligned to `align`; waits if the GPU still uses them. */
cubec_status host_ring_alloc(cubec_device *d, host_ring *r, uint64_t size, uint64_t align,
                             uint64_t *out_offset);

/* server/transfer.c */
/* Host transfers on `slot`: they first submit the caller's queue and the queues whose work on
 * the buffer must come first. */
cubec_status server_write(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t offset,
                          const void *src, uint64_t size);
cubec_status server_read(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t offset, void *dst,
                         uint64_t size);
cubec_status server_read_async(cubec_device *d, stream_ref s, buffer_obj *b, uint64_t offset,
                               void *dst, uint64_t size, cubec_event **out);

/* server/kernels.c */
cubec_status server_kernel_create(cubec_device *d, const cubec_kernel_desc *desc,
                                  pipeline_entry **out);
void server_kernels_destroy(cubec_device *d);
/* A kernel handle's name, kept with its pipeline until the device closes. */
cubec_status server_kernel_name(pipeline_entry *e, const char *name, const char **out);

/* server/launch.c */
typedef struct launch_args {
    const pipeline_entry *entry;
    const char *name; /* the kernel handle's name (NULL: the pipeline's) */
    buffer_obj *const *buffers;
    uint32_t buffer_count;
    const void *info;
    uint32_t groups[3];
    buffer_obj *indirect;
    uint64_t indirect_offset;
    const uint32_t *leads; /* per buffer: bytes bound but not accessed (NULL: none) */
} launch_args;
/* Queues a launch on `slot` (arguments were checked by api/). */
cubec_status server_launch(cubec_device *d, stream_ref s, const launch_args *a);
/* server/copy_fill.c */
cubec_status server_copy(cubec_device *d, stream_ref s, buffer_obj *src, uint64_t src_offset,
                         buffer_obj *dst, uint64_t dst_offset, uint64_t size);
cubec_status server_fill(cubec_device *d, stream_ref s, buffer_obj *dst, uint64_t offset,
                         uint64_t size, uint32_t pattern);
/* The built-in copy and fill pipelines, compiled on first use. */
cubec_status server_builtin_kernels(cubec_device *d);
/* Where a task's commands go: the open batch, or a graph being captured. */
typedef struct recorder {
    gpu_cmd *cmd;
    bind_cache *bound; /* what is bound already is not bound again */
    hazard_tracker *hazards;
} recorder;
/* Records a task's barrier, bindings and dispatch (or copy). `info_buffer` holds its metadata
 * when the kernel reads it from a buffer; with `timed_in`, the launch is timed in that batch. */
cubec_status server_emit_task(cubec_device *d, const recorder *rec, const task *t,
                              const gpu_binding *info_buffer, batch *timed_in);
/* The metadata bytes of a task. */
const unsigned char *server_task_info(const cubec_device *d, const task *t);
/* The failure a task's outputs take when one of its inputs carries one (caller releases), or
 * NULL. */
failure *server_task_input_failure(const cubec_device *d, const task *t);
/* The task kind table's answers: a task's name, its bindings, whether binding i is read. */
const char *task_name(const task *t);
uint32_t task_bindings(const task *t);
int task_reads(const task *t, uint32_t i);
/* Queues a filled task on its slot, or records it into the graph the slot is capturing. */
cubec_status server_queue_task(cubec_device *d, uint32_t slot, task *t);
/* Submits the queues of other slots whose work on these buffers must come first. */
cubec_status server_align(cubec_device *d, uint32_t slot, buffer_obj *const *bufs, uint32_t n,
                          uint32_t write_mask, const buffer_obj *indirect);
/* The scheduler's side: record a queued task, or drop what it holds. */
cubec_status server_record_task(cubec_device *d, task *t);
void server_discard_task(cubec_device *d, task *t);
/* Drops a queued task without recording it: what it would have written carries a failure. */
void server_drop_task(cubec_device *d, task *t);

/* server/streams.c */
cubec_status server_streams_init(cubec_device *d);
void server_streams_destroy(cubec_device *d);
/* The slot of a stream id (0: the calling thread's stream); refuses ids of other devices. */
cubec_status server_stream_resolve(cubec_device *d, cubec_stream stream, const char *fn,
                                   stream_ref *out);
cubec_stream server_stream_current(cubec_device *d);
cubec_stream server_stream_new(cubec_device *d);
/* Records and submits the queues of `slots`; `mode`: DRAIN_* flags. */
cubec_status server_drain(cubec_device *d, const uint32_t *slots, uint32_t n, uint32_t mode);
cubec_status server_drain_all(cubec_device *d, uint32_t mode);
/* cubec_flush: the stream's queue and whatever transfers recorded, submitted. */
cubec_status server_flush(cubec_device *d, stream_ref s);
/* cubec_sync: the stream's work submitted and finished, its writes visible to the host. */
cubec_status server_sync(cubec_device *d, stream_ref s);
cubec_status server_commit_task(cubec_device *d, uint32_t slot);
/* Adds to `slots` the slots whose queued work on `a` must be submitted before `slot` uses it:
 * its owner's, its last queued writer's, and, when this use writes it, its queued readers'.
 * `slots` has room for n + 2 + (write ? max_streams : 0) entries at most; returns the count. */
uint32_t server_align_slots(cubec_device *d, uint32_t slot, const alloc_obj *a, int write,
                            uint32_t *slots, uint32_t n, uint32_t room);
/* Everything a host access (a write when `write`) of `a` from `slot` must come after. */
cubec_status server_drain_for_host(cubec_device *d, uint32_t slot, const alloc_obj *a, int write);

/* server/failures.c */
/* Offset of a buffer range within its allocation, for the taint map. */
static inline uint64_t alloc_offset(const alloc_obj *a, uint64_t page_offset)
{
    return page_offset - a->mem.offset;
}
/* The failure carried by [page_offset, +size) of `a`, or NULL. */
failure *server_failure_of(const alloc_obj *a, uint64_t page_offset, uint64_t size);
void server_taint(alloc_obj *a, uint64_t page_offset, uint64_t size, failure *f);
void server_untaint(alloc_obj *a, uint64_t page_offset, uint64_t size);
/* An error for a host access of a buffer that carries a failure: "<what> of buffer #n: not
 * written: <chain>", with the root cause's code. */
cubec_status server_failure_status(const alloc_obj *a, const failure *f, const char *what);
/* Holds a recorded task's range in the open batch until it is submitted. */
cubec_status server_hold(cubec_device *d, batch *b, alloc_obj *a, uint64_t offset, uint64_t size,
                         int write);

/* server/profile.c */
cubec_status server_profiles_init(cubec_device *d);
void server_profiles_destroy(cubec_device *d);
cubec_status server_profile_begin(cubec_device *d, stream_ref s, uint64_t *out_id);
cubec_status server_profile_end(cubec_device *d, stream_ref s, uint64_t id,
                                cubec_profile_result *out);
cubec_status server_profile_abandon(cubec_device *d, stream_ref s, uint64_t id);
/* Records a profile's timestamp task. */
cubec_status server_record_timestamp(cubec_device *d, task *t);
/* A failure on `slot` (a launch skipped or failed): every profile open there is invalid. With
 * slot NO_SLOT, every open profile (a lost submission). */
void server_profiles_poison(cubec_device *d, uint32_t slot, failure *f);
/* A profile's timestamp task was dropped unrecorded: the profile carries `f`. */
void server_profile_timestamp_dropped(cubec_device *d, const task *t, failure *f);
/* Host CLOCK_MONOTONIC ns of a device timestamp. */
uint64_t server_device_time_ns(cubec_device *d, uint64_t ticks);
uint64_t server_now_ns(void);

/* server/graph.c */
void server_graphs_init(cubec_device *d);
/* Aborts captures and destroys every graph (device close; the GPU is idle). */
void server_graphs_destroy(cubec_device *d);
cubec_status server_graph_prepare(cubec_device *d, stream_ref s);
cubec_status server_graph_begin(cubec_device *d, stream_ref s);
cubec_status server_graph_end(cubec_device *d, stream_ref s, uint64_t *out_id);
cubec_status server_graph_replay(cubec_device *d, stream_ref s, uint64_t id);
cubec_status server_graph_destroy(cubec_device *d, stream_ref s, uint64_t id);
/* Records a launch of the capturing slot into its graph (the task's references stay the
 * caller's). */
cubec_status server_graph_record(cubec_device *d, uint32_t slot, task *t);
/* An error naming `what` when `slot` is recording a graph (reads, syncs, profiles...). */
cubec_status server_graph_refuse(cubec_device *d, uint32_t slot, const char *what);
/* A host write of [offset, +size) of `a` from `slot` while it records: refused lazily, the
 * range carries the refusal and, from the capture's owner, the capture is doomed. Returns 1
 * when the write was refused. */
int server_graph_refuse_write(cubec_device *d, stream_ref s, alloc_obj *a, uint64_t offset,
                              uint64_t size);
/* Dooms the capture of `slot` (the first reason wins). */
void server_graph_doom(cubec_device *d, uint32_t slot, cubec_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* server/submitter.c */
/* Hands a replay's command buffer to the submission thread (started on first use), after the
 * handed-off batch `before` when it holds one. */
cubec_status submitter_push(cubec_device *d, gpu_cmd *cmd, uint64_t value, uint64_t graph,
                            const sub_handoff *before);
/* Starts the thread if it is not running (a replay does it before handing a batch over). */
cubec_status submitter_start(cubec_device *d);
/* Returns once everything pushed is submitted: call before any other vkQueueSubmit. */
void submitter_quiesce(cubec_device *d);
/* A replay submission that failed and was not reported yet (its graph's number and timeline
 * value), or NULL. */
cubec_status submitter_take_failure(cubec_device *d, uint64_t *out_graph, uint64_t *out_value);
/* Submits what is left and joins the thread. */
void submitter_stop(cubec_device *d);
/* Reads the launch timestamps of finished replays (before the trace is written at close). */
void server_graphs_read_timing(cubec_device *d);
/* The replay of graph #number that would have signalled `value` was not submitted: its outputs
 * carry `err`, except what later work wrote again. Consumes `err`. */
void server_graph_replay_lost(cubec_device *d, uint64_t number, uint64_t value, cubec_status err);

/* server/timeline.c */
cubec_status timeline_init(cubec_device *d);
/* Reads what is left, logs the last summary and writes the trace. */
void timeline_close(cubec_device *d);
/* Appends what launch `t` is to a stamp array of `count` entries (grown as needed); NULL when
 * out of memory (the launch then goes untimed). */
launch_stamp *timeline_stamp_add(launch_stamp **stamps, uint32_t *cap, uint32_t count,
                                 const task *t);
/* Around a recorded launch (only when d->time_launches); end only if begin returned 1. */
int timeline_launch_begin(cubec_device *d, batch *b, const task *t);
void timeline_launch_end(cubec_device *d, batch *b);
/* A graph copy's replay finished: its launches (two queries each in `pool`) go to the trace and
 * the summary, and the queries are reset for the next replay. */
void timeline_graph_harvest(cubec_device *d, gpu_queries *pool, const launch_stamp *stamps,
                            uint32_t n, uint64_t graph);
/* A batch begins recording: its queries are reset. */
void timeline_batch_begin(cubec_device *d, batch *b);
/* The batch finished: its launches go to the trace and the summary. */
void timeline_harvest(cubec_device *d, batch *b);
/* A host event on the host track (a write, read, compilation, submission, sync). */
void timeline_host(cubec_device *d, const char *name, const char *category, uint64_t begin_ns,
                   uint64_t stream, const char *args_json);
/* Logs the kernel summary now if one is due (at most once a second, from syncs). */
void timeline_summary_tick(cubec_device *d, int force);

/* server/transfer.c: events (device lock held) */
cubec_status server_event_progress(cubec_event *e, int block);
void server_event_free(cubec_event *e);
cubec_device *server_event_device(cubec_event *e);
#endif
