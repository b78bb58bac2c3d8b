/* Tasks (server/task.c): the queued record of a launch, copy, fill or timestamp, the task-kind
 * table, queueing on a slot (or into the graph the slot captures) and recording into a command
 * buffer. What a kind needs from a component above the task machinery (a timestamp's recording,
 * a profile told of a failed task, a graph capturing the slot) reaches it through task_hooks,
 * set once at open. */
#ifndef CUBEC_SERVER_TASK_H
#define CUBEC_SERVER_TASK_H

#include "failure/failure.h"
#include "server/device.h"
#include "server/hazards.h"
#include "server/kernels.h"
#include "server/streams.h"
#include "server/submission.h"

#include <stddef.h>
#include <string.h>

typedef struct cubec_device_s cubec_device;

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
    TASK_IMAGE_INIT,    /* an image's one layout transition, b[0] its memory (server/images.c) */
    TASK_IMAGE_COPY,    /* packed texels b[0] -> b[1], one of them an image's memory
                           (`pattern` 1: into the image) (server/images.c) */
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
    /* A launch: the last `addressed` of its `count` ranges are reached by device address
     * (cubec_launch_desc.address_buffers): held, ordered and tainted, never bound. Bit i of
     * address_reads: range i is one of them that the launch reads (reflection says it for the
     * bound ones). */
    uint32_t addressed;
    uint32_t address_reads;
    const struct pipeline_entry *entry;
    uint32_t groups[3];
    uint32_t info_size;
    uint32_t info_at;     /* offset in the slot's info arena when info_size > TASK_INLINE_INFO */
    bound_range indirect; /* alloc NULL when the counts are static */
    uint32_t write_mask;  /* bit i: binding i is written */
    uint32_t bind_at;     /* offset in the slot's arena when count > TASK_INLINE_BINDINGS */
    /* TASK_LAUNCH: the last `resources` bindings are the memory of the images and texel buffers
     * the kernel declares, in the order of entry->refl.resources (api/api_resources.c); its
     * samplers follow them there and hold no memory. */
    uint32_t resources;
    uint32_t sampler_bits;  /* launch_args.sampler_bits: filter and address mode per resource */
    uint32_t texel_formats; /* 4 bits per resource k: a texel buffer's cubec_image_format */
    bound_range b[TASK_INLINE_BINDINGS];
    uint64_t profile; /* TASK_TIMESTAMP: the profile's id */
    int profile_end;  /* TASK_TIMESTAMP: 1 for the end timestamp */
    uint32_t pattern; /* TASK_TRANSFER_FILL: the 32-bit word written */
    unsigned char info[TASK_INLINE_INFO];
} task;

/* Binding i of a task: in the record, or in its slot's arena when it has more than fit. */
static inline bound_range *task_b(const slot_state *slots, const task *t, uint32_t i)
{
    if (t->count <= TASK_INLINE_BINDINGS || t->kind != TASK_LAUNCH) return (bound_range *)&t->b[i];
    return (bound_range *)(void *)(slots[t->slot].arena + t->bind_at) + i;
}

/* What components above the task machinery do with its tasks, set once at open by the component
 * that owns the behaviour, so the task machinery calls nothing above it. NULL: nothing to do. */
typedef struct task_hooks {
    /* Records a task of this kind instead of the generic path (TASK_TIMESTAMP: profile.c). */
    cubec_status (*record[TASK_KIND_COUNT])(cubec_device *d, task *t);
    /* A queued task of this kind was dropped with `f` (a timestamp's profile takes it). */
    void (*dropped[TASK_KIND_COUNT])(cubec_device *d, const task *t, failure *f);
    /* A task of `slot` failed or was skipped with `f` (the profiles open on the slot take it). */
    void (*failed)(cubec_device *d, uint32_t slot, failure *f);
    /* The slot's capturing stream queued `t`: record it into the graph (graph.c; set whenever a
     * slot can capture, since only graph.c puts a slot in CAPTURE_RECORDING). */
    cubec_status (*capture)(cubec_device *d, uint32_t slot, task *t);
} task_hooks;

/* Where a task's commands go: the open batch, or a graph being captured. */
typedef struct recorder {
    gpu_cmd *cmd;
    bind_cache *bound; /* what is bound already is not bound again */
    hazard_tracker *hazards;
} recorder;
/* Launches with equal metadata read one slice of it: reuse gives the slice remembered in `bc`
 * when `bytes` equal its bytes; remember notes a new slice (blocks over 256 bytes are not). */
int server_metadata_reuse(const bind_cache *bc, const void *bytes, uint32_t size, gpu_binding *out);
void server_metadata_remember(bind_cache *bc, const gpu_binding *slice, const void *bytes,
                              uint32_t size);
/* Binds a pipeline, its buffers and its push constants for a dispatch, skipping what `rec`
 * has bound already (`info_buffer`: the metadata slice of kernels that read one). */
MUST_USE cubec_status server_record_dispatch(cubec_device *d, const recorder *rec,
                                             const pipeline_entry *e, const gpu_binding *bindings,
                                             uint32_t n, const gpu_binding *info_buffer,
                                             const void *push_data);
/* server_record_dispatch with `ni` images bound beside the buffers (their descriptors are
 * written every time: the bind cache keeps buffers only). */
MUST_USE cubec_status server_record_dispatch_images(cubec_device *d, const recorder *rec,
                                                    const pipeline_entry *e,
                                                    const gpu_binding *bindings, uint32_t n,
                                                    const gpu_binding *info_buffer,
                                                    const void *push_data,
                                                    const gpu_image_binding *images, uint32_t ni);
/* Records a task's barrier, bindings and dispatch (or copy). `info_buffer` holds its metadata
 * when the kernel reads it from a buffer; with `timed_in`, the launch is timed in that batch. */
MUST_USE cubec_status server_emit_task(cubec_device *d, const recorder *rec, const task *t,
                                       const gpu_binding *info_buffer, batch *timed_in);
/* The metadata bytes of a task. */
const unsigned char *server_task_info(const cubec_device *d, const task *t);
/* The failure a task's outputs take when one of its inputs carries one (caller releases), or
 * NULL. */
failure *server_task_input_failure(const cubec_device *d, const task *t);
/* Queues a filled task on its slot, or records it into the graph the slot is capturing. */
MUST_USE cubec_status server_queue_task(cubec_device *d, uint32_t slot, task *t);
/* Submits the queues of other slots whose work on these buffers must come first. */
MUST_USE cubec_status server_align(cubec_device *d, uint32_t slot, buffer_obj *const *bufs,
                                   uint32_t n, uint32_t write_mask, const buffer_obj *indirect);
/* The scheduler's side: record a queued task. */
MUST_USE cubec_status server_record_task(cubec_device *d, task *t);
/* The scheduler's backend: records, submits and drops the tasks it takes off the slot queues. */
sched_backend server_task_backend(cubec_device *d);
/* Drops a queued task without recording it: what it would have written carries a failure. */
void server_drop_task(cubec_device *d, task *t, cubec_status cause);

/* Room for a task of `kind` at the end of the stream's slot queue, its header cleared and its
 * kind, slot and stream set; the caller fills the rest, then queues it (server_queue_task).
 * Inline: every launch, copy and fill starts here (a call cost the launch path ~25
 * instructions). */
MUST_USE static inline cubec_status server_reserve_task(cubec_device *d, stream_ref s,
                                                        task_kind kind, task **out)
{
    task *t;
    RETURN_IF_ERROR(sched_reserve(&d->streams->sched, s.slot, (void **)&t));
    memset(t, 0, offsetof(task, b));
    t->kind = kind;
    t->slot = s.slot;
    t->stream = s.number;
    *out = t;
    return NULL;
}

/* The task kind table's answers: a task's name, its bindings, whether binding i is read. Inline:
 * they are table lookups on every recorded task. */
static inline const char *task_name(const task *t)
{
    const char *n = task_kinds[t->kind].name;
    return n ? n : t->name;
}

static inline uint32_t task_bindings(const task *t)
{
    uint32_t n = task_kinds[t->kind].bindings;
    return n || t->kind != TASK_LAUNCH ? n : t->count;
}

static inline int task_reads(const task *t, uint32_t i)
{
    if (t->kind == TASK_LAUNCH) {
        /* Ranges: bound buffers, then those reached by address, then images. */
        uint32_t images = t->count - t->resources, bound = images - t->addressed;
        if (i < bound) return (t->entry->refl.access[i] & CUBEC_ACCESS_READ) != 0;
        if (i < images) return (int)((t->address_reads >> i) & 1);
        return (t->entry->refl.resources[i - images].access & CUBEC_ACCESS_READ) != 0;
    }
    return (int)((task_kinds[t->kind].read_mask >> i) & 1);
}

#endif
