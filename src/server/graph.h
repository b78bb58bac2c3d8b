/* Graphs (server/graph.c): capture into reusable command buffers, replay, destroy. */
#ifndef CUBEC_SERVER_GRAPH_H
#define CUBEC_SERVER_GRAPH_H

#include "base/handle_table.h"
#include "gpu/gpu.h"
#include "server/buffers.h"
#include "server/hazards.h"
#include "server/launch.h"
#include "server/launch_timing.h"
#include "server/streams.h"
#include "server/submission.h"

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
    uint32_t chunk_count, chunk_cap;
    uint32_t launches;
    uint64_t last_value; /* timeline value of its latest replay */
    /* Launch timing (only when tracing or summarising at capture, with host query reset): per
     * copy, two queries per launch, read when the copy is replayed again, destroyed or closed. */
    gpu_queries *queries[GRAPH_COPIES];
    int unread[GRAPH_COPIES];           /* the copy's last replay has not been read yet */
    uint64_t replayed_ns[GRAPH_COPIES]; /* host time its last replay was handed over */
    launch_stamp *stamps;
    uint32_t stamp_count, stamp_cap;
    /* The first failure inside the capture window (NULL: none), kept whole: its message ends
     * with the root cause, which a fixed-size copy would cut off. */
    failure *doom;
} graph_obj;

/* Graphs (server/graph.c). Device lock. */
typedef struct graph_table {
    handle_table handles; /* graph_obj per captured graph */
    uint32_t captures;    /* slots preparing or recording a capture */
    uint64_t numbers;     /* counter behind "graph #n" */
} graph_table;

void server_graphs_init(cubec_device *d);
/* Aborts captures and destroys every graph (device close; the GPU is idle). */
void server_graphs_destroy(cubec_device *d);
MUST_USE cubec_status server_graph_prepare(cubec_device *d, stream_ref s);
MUST_USE cubec_status server_graph_begin(cubec_device *d, stream_ref s);
MUST_USE cubec_status server_graph_end(cubec_device *d, stream_ref s, uint64_t *out_id);
MUST_USE cubec_status server_graph_replay(cubec_device *d, stream_ref s, uint64_t id);
MUST_USE cubec_status server_graph_destroy(cubec_device *d, stream_ref s, uint64_t id);
/* Records a launch of the capturing stream into its graph (the task's references stay the
 * caller's). */
MUST_USE cubec_status server_graph_record(cubec_device *d, uint32_t slot, task *t);
/* 1 when `s` is the stream recording a graph on its slot. A capture window belongs to the stream
 * that began it: other streams sharing its slot are outside it (their work runs). */
int server_graph_recording(const cubec_device *d, stream_ref s);
/* An error naming `what` when `s` is recording a graph (reads, syncs, profiles...). */
MUST_USE cubec_status server_graph_refuse(cubec_device *d, stream_ref s, const char *what);
/* The same when any stream of the device records one (memory cleanup). */
MUST_USE cubec_status server_graph_refuse_any(cubec_device *d, const char *what);
/* A host write of [offset, +size) of `a` from `s` while it records: refused lazily, the range
 * carries the refusal and the capture is doomed. Returns 1 when the write was refused. */
int server_graph_refuse_write(cubec_device *d, stream_ref s, alloc_obj *a, uint64_t offset,
                              uint64_t size);
/* Dooms the capture of `slot` (the first reason wins). */
void server_graph_doom(cubec_device *d, uint32_t slot, cubec_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reads the launch timestamps of finished replays (before the trace is written at close). */
void server_graphs_read_timing(cubec_device *d);

/* The replay of graph #number that would have signalled `value` was not submitted: its outputs
 * carry `err`, except what later work wrote again. Consumes `err`. */
void server_graph_replay_lost(cubec_device *d, uint64_t number, uint64_t value, cubec_status err);

#endif
