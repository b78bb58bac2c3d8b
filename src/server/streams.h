/* Logical streams and their slots (server/streams.c): the stream a call acts for, what a slot
 * owns besides its scheduler queue, draining and cross-stream alignment. */
#ifndef CUBEC_SERVER_STREAMS_H
#define CUBEC_SERVER_STREAMS_H

#include "base/range_set.h"
#include "base/status.h"
#include "memory/memory_manager.h"
#include "stream/scheduler.h"

/* Defined in server/graph.h and server/buffers.h; slots and alignment only point at them. */
typedef struct graph_obj graph_obj;
typedef struct alloc_obj alloc_obj;

/* The stream a call acts for: its slot, and its number for messages and ownership. Passed as an
 * argument to every server call that needs it, so that a wait that lets other threads in cannot
 * change it underneath. */
typedef struct stream_ref {
    uint32_t slot;
    uint64_t number;
} stream_ref;

/* How a drain submits what it recorded. */
#define DRAIN_FOR_HOST                                                                             \
    1u /* the batch ends with a barrier that makes writes visible to the host                      \
        */

#define DRAIN_KEEP_OPEN 2u /* the batch stays open: a replay submits it together with the graph */

typedef enum capture_state {
    CAPTURE_NONE = 0,
    CAPTURE_PREPARED = 1,  /* cubec_graph_prepare: warm-up runs, the slot is isolated */
    CAPTURE_RECORDING = 2, /* cubec_graph_begin: the owner's launches are recorded into `graph` */
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
    /* Timeline value of the stream's last batch that waits on the inbound timeline
     * (cubec_stream_wait_cuda; 0: none): the stream's host transfers come after it, since what
     * the other API wrote is in no range cubec tracks. */
    uint64_t inbound_after;
    /* Work recorded for the slot's streams: tasks (timestamps aside), transfers' copies and graph
     * replays. An unchanged count between a profile's two timestamps means nothing of its stream
     * ran in the window, whatever other streams recorded meanwhile. */
    uint64_t recorded;
} slot_state;

/* Logical streams folded onto slots, and the scheduler of their queues (server/streams.c).
 * Device lock. */
typedef struct stream_slots {
    slot_state *slots; /* max_streams of them */
    /* Scratch for the slots a use must wait for (max_streams entries: a slot appears once), so
     * aligning allocates nothing; used by one call at a time, never across a wait. */
    uint32_t *align_slots;
    uint32_t max_streams;
    int single; /* policy `single`: every thread's current stream is the same */
    /* The numbers of the stream ids this device handed out (cubec_stream_new,
     * cubec_stream_get_current): an explicit id must name one of them. */
    range_set issued;
    scheduler sched;
} stream_slots;

/* `be` records, submits and discards queued tasks of `task_size` bytes (server/task.c). */
MUST_USE cubec_status server_streams_init(cubec_device *d, sched_backend be, size_t task_size);
void server_streams_destroy(cubec_device *d);
/* The slot of a stream id (0: the calling thread's stream). An explicit id must be one this
 * device handed out: ids of other devices and made-up numbers under this device's tag are
 * refused (CUBEC_INVALID_ARGUMENT naming `fn` and the id). */
MUST_USE cubec_status server_stream_resolve(cubec_device *d, cubec_stream stream, const char *fn,
                                            stream_ref *out);
/* The id of the calling thread's current stream, remembered as handed out. */
MUST_USE cubec_status server_stream_current(cubec_device *d, cubec_stream *out);
/* A new stream's id, remembered as handed out. */
MUST_USE cubec_status server_stream_new(cubec_device *d, cubec_stream *out);
/* Records and submits the queues of `slots`; `mode`: DRAIN_* flags. */
MUST_USE cubec_status server_drain(cubec_device *d, const uint32_t *slots, uint32_t n,
                                   uint32_t mode);
MUST_USE cubec_status server_drain_all(cubec_device *d, uint32_t mode);
MUST_USE cubec_status server_commit_task(cubec_device *d, uint32_t slot);
/* Adds to `slots` the slots whose queued work on `a` must be submitted before `slot` uses it:
 * its owner's, its last queued writer's, and, when this use writes it, its queued readers'.
 * `slots` has room for n + 2 + (write ? max_streams : 0) entries at most; returns the count. */
uint32_t server_align_slots(cubec_device *d, uint32_t slot, const alloc_obj *a, int write,
                            uint32_t *slots, uint32_t n, uint32_t room);
/* Everything a host access (a write when `write`) of `a` from `slot` must come after. */
MUST_USE cubec_status server_drain_for_host(cubec_device *d, uint32_t slot, const alloc_obj *a,
                                            int write);

#endif
