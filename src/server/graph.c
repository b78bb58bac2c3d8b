/* Graph capture and replay (spec section 6), on real recorded command buffers.
 *
 * Where CubeCL's wgpu server keeps a software list of launches and re-encodes it on every replay
 * (WebGPU cannot resubmit a command buffer), cubec records the captured launches once, with
 * their barriers, bindings (push descriptors) and metadata (push constants, or a graph-owned
 * buffer), into a reusable command buffer; a replay is one vkQueueSubmit. The command buffer
 * starts with a barrier after everything submitted before it and ends with one before everything
 * submitted after it, so a replay is ordered like any other work of the stream, and the graph's
 * own launches need barriers only where they depend on each other.
 *
 * Per slot: NONE -> prepare -> PREPARED (warm-up runs normally; the scheduler isolates the slot)
 * -> begin -> RECORDING (launches of the capturing stream are recorded, not queued) -> end ->
 * NONE. The window belongs to the stream that prepared it (capture_owner), not to its slot: work
 * of other streams that share the slot is queued and runs as usual, and their graph calls find
 * no capture of their own (the spec shares the window between them; a made-up or unrelated
 * stream's launch then landed in the graph, issue 11). One slot holds one capture at a time.
 * A failure inside the window dooms the capture: end then fails naming the first reason, and
 * what the recorded launches would have written carries that failure (they never ran).
 *
 * A graph holds a reference and a page guard (spec 3.9) on every allocation it binds, so their
 * memory is neither freed nor reused, their pages neither returned nor relocated, while it
 * lives; graph_prepare relocates first (server/relocate.c), so that what the warm-up and the
 * recording touch sits on current pages. Deviation from the seed: the seed leaves captured
 * buffers' lifetime to the caller (unsafe replay); cubec keeps them, so a released buffer cannot
 * have its memory handed to another while a replay still writes it. */
#include "server/graph.h"
#include "base/array.h"
#include "base/clock.h"
#include "base/log.h"
#include "server/buffers.h"
#include "server/device.h"
#include "server/failures.h"
#include "server/hazards.h"
#include "server/health.h"
#include "server/launch_timing.h"
#include "server/profile.h"
#include "server/relocate.h"
#include "server/run_mode.h"
#include "server/streams.h"
#include "server/submission.h"
#include "server/submitter.h"
#include "server/task.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRAPH_SETS_PER_POOL 256   /* without push descriptors: sets per descriptor pool */
#define GRAPH_TIMED_LAUNCHES 4096 /* launches of a graph timed in traces; later ones are not */
#define GRAPH_CHUNK_BYTES (64u << 10)

void server_graphs_init(cubec_device *d)
{
    handle_table_init(&d->graphs->handles, d->tag, "graph");
    d->tasks->capture = server_graph_record;
}

static void graph_free(cubec_device *d, graph_obj *g)
{
    for (uint32_t i = 0; i < g->use_count; i++) {
        server_alloc_guard(d, g->uses[i].alloc, -1);
        server_alloc_release(d, g->uses[i].alloc);
    }
    free(g->uses);
    for (uint32_t i = 0; i < g->chunk_count; i++)
        gpu_mem_free(d->gpu, g->chunks[i].mem);
    free(g->chunks);
    for (int c = 0; c < GRAPH_COPIES; c++)
        if (g->queries[c]) d->gpu->ops->queries_destroy(d->gpu, g->queries[c]);
    free(g->stamps);
    for (int c = 0; c < GRAPH_COPIES; c++)
        if (g->cmd[c]) d->gpu->ops->cmd_destroy(d->gpu, g->cmd[c]);
    failure_release(g->doom);
    free(g);
}

/* The slot goes back to normal: no capture, no isolation. */
static void capture_reset(cubec_device *d, uint32_t slot)
{
    slot_state *ss = &d->streams->slots[slot];
    if (ss->capture != CAPTURE_NONE) d->graphs->captures--;
    ss->capture = CAPTURE_NONE;
    ss->graph = NULL;
    d->streams->sched.queues[slot].requires_isolation = 0;
}

void server_graphs_destroy(cubec_device *d)
{
    for (uint32_t i = 0; d->streams->slots && i < d->streams->max_streams; i++)
        if (d->streams->slots[i].graph) {
            graph_free(d, d->streams->slots[i].graph);
            capture_reset(d, i);
        }
    for (uint32_t i = 0; i < d->graphs->handles.count; i++)
        if (d->graphs->handles.slots[i].object) graph_free(d, d->graphs->handles.slots[i].object);
    handle_table_free(&d->graphs->handles);
}

void server_graph_doom(cubec_device *d, uint32_t slot, cubec_code code, const char *fmt, ...)
{
    graph_obj *g = d->streams->slots[slot].graph;
    if (!g || g->doom) return;
    /* The whole reason, as a failure: it is often a failure's chain, whose root cause is at its
     * end (chains are bounded by failure_chain); a 1024-byte copy cut it off once a capture had
     * been discarded a few times in a row. */
    va_list ap;
    va_start(ap, fmt);
    g->doom = failure_newv(code, fmt, ap);
    va_end(ap);
    LOG(LOG_INFO, LOG_SYS_STREAMS, "the capture of graph #%" PRIu64 " is doomed: %s", g->number,
        g->doom->message);
}

int server_graph_recording(const cubec_device *d, stream_ref s)
{
    const slot_state *ss = &d->streams->slots[s.slot];
    return ss->capture == CAPTURE_RECORDING && ss->capture_owner == s.number;
}

static cubec_status refused(const char *what, uint64_t owner)
{
    return status_make(CUBEC_GRAPH_STATE,
                       "%s: refused while stream %" PRIu64
                       " records a graph (a capture window records launches only; end the "
                       "capture first)",
                       what, owner);
}

cubec_status server_graph_refuse(cubec_device *d, stream_ref s, const char *what)
{
    return server_graph_recording(d, s) ? refused(what, s.number) : NULL;
}

cubec_status server_graph_refuse_any(cubec_device *d, const char *what)
{
    for (uint32_t i = 0; d->graphs->captures && i < d->streams->max_streams; i++) {
        const slot_state *ss = &d->streams->slots[i];
        if (ss->capture == CAPTURE_RECORDING) return refused(what, ss->capture_owner);
    }
    return NULL;
}

int server_graph_refuse_write(cubec_device *d, stream_ref s, alloc_obj *a, uint64_t offset,
                              uint64_t size)
{
    if (!server_graph_recording(d, s)) return 0;
    failure *f = failure_new(CUBEC_GRAPH_STATE,
                             "a write from stream %" PRIu64 " was refused: stream %" PRIu64
                             " records a graph",
                             s.number, s.number);
    server_taint(a, offset, size, f);
    failure_release(f);
    server_graph_doom(d, s.slot, CUBEC_GRAPH_STATE,
                      "a write of buffer #%" PRIu64 " inside the capture window was refused",
                      a->number);
    return 1;
}

/* Refuses a capture call of `s` when its slot holds another stream's capture: one slot holds
 * one capture at a time. */
static cubec_status refuse_neighbour(cubec_device *d, stream_ref s, const char *fn)
{
    const slot_state *ss = &d->streams->slots[s.slot];
    if (ss->capture == CAPTURE_NONE || ss->capture_owner == s.number) return NULL;
    return status_make(CUBEC_GRAPH_STATE,
                       "%s: stream %" PRIu64 " shares its slot (%u: stream numbers modulo "
                       "streaming.max_streams = %u) with stream %" PRIu64
                       ", which %s a graph, and a slot holds one capture at a time; capture on "
                       "a stream of another slot (cubec_stream_new) or end that capture first",
                       fn, s.number, s.slot, d->streams->max_streams, ss->capture_owner,
                       ss->capture == CAPTURE_PREPARED ? "prepared" : "records");
}

cubec_status server_graph_prepare(cubec_device *d, stream_ref s)
{
    uint32_t slot = s.slot;
    slot_state *ss = &d->streams->slots[slot];
    uint64_t stream = s.number;
    RETURN_IF_ERROR(refuse_neighbour(d, s, "cubec_graph_prepare"));
    if (ss->capture == CAPTURE_PREPARED)
        return status_make(CUBEC_GRAPH_STATE,
                           "cubec_graph_prepare: stream %" PRIu64 " already prepared a capture",
                           ss->capture_owner);
    if (ss->capture == CAPTURE_RECORDING)
        return status_make(CUBEC_GRAPH_STATE,
                           "cubec_graph_prepare: stream %" PRIu64 " is already recording a graph",
                           ss->capture_owner);
    RETURN_IF_ERROR(server_drain(d, &slot, 1, 0));
    /* Spec 6.2: every stream's outdated pages are emptied now, while they still can be: the
     * graph will guard every page it touches. */
    RETURN_IF_ERROR(server_memory_relocate(d, NO_SLOT, MEMORY_RELOCATE_CAPTURE, NULL));
    ss->capture = CAPTURE_PREPARED;
    ss->capture_owner = stream;
    d->graphs->captures++;
    /* No interleaving onto or off the slot while it prepares and records (spec 6.5). */
    d->streams->sched.queues[slot].requires_isolation = 1;
    return NULL;
}

static cubec_status graph_create(cubec_device *d, uint32_t slot, graph_obj **out)
{
    graph_obj *g = calloc(1, sizeof *g);
    if (!g) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (graph)");
    g->slot = slot;
    g->owner = d->streams->slots[slot].capture_owner;
    g->number = ++d->graphs->numbers;
    /* A command buffer (and pool) per copy: copies recorded side by side from one pool would
     * interleave their memory, and a driver walks every chunk of a command buffer when it is
     * submitted. */
    cubec_status err = NULL;
    const gpu_ops *ops = d->gpu->ops;
    for (int c = 0; c < GRAPH_COPIES && !err; c++) {
        err = ops->cmd_create(d->gpu, GPU_CMD_REUSABLE, GRAPH_SETS_PER_POOL, &g->cmd[c]);
        if (!err) err = ops->cmd_begin(d->gpu, g->cmd[c]);
    }
    if (err) {
        graph_free(d, g);
        return err;
    }
    /* Traces and the summary time each launch of a replay, from queries the host resets. */
    if (d->timing->on && d->gpu->caps.timestamps && d->gpu->caps.host_query_reset) {
        for (int c = 0; c < GRAPH_COPIES; c++) {
            cubec_status qe = ops->queries_create(d->gpu, 2 * GRAPH_TIMED_LAUNCHES, &g->queries[c]);
            if (qe) {
                cubec_status_free(qe);
                g->queries[c] = NULL;
                LOG(LOG_WARN, LOG_SYS_PROFILING, "no query pool: graph launches go untimed");
                break;
            }
            ops->queries_host_reset(d->gpu, g->queries[c], 0, 2 * GRAPH_TIMED_LAUNCHES);
        }
        if (!g->queries[GRAPH_COPIES - 1])
            for (int c = 0; c < GRAPH_COPIES; c++)
                if (g->queries[c]) {
                    ops->queries_destroy(d->gpu, g->queries[c]);
                    g->queries[c] = NULL;
                }
    }
    /* After everything submitted before the replay, with its writes visible. */
    for (int c = 0; c < GRAPH_COPIES; c++)
        gpu_cmd_barrier(g->cmd[c], GPU_STAGE_ALL,
                        GPU_ACCESS_SHADER_WRITE | GPU_ACCESS_TRANSFER_WRITE | GPU_ACCESS_HOST_WRITE,
                        GPU_STAGES_USED, GPU_ACCESS_USED);
    *out = g;
    return NULL;
}

cubec_status server_graph_begin(cubec_device *d, stream_ref s)
{
    uint32_t slot = s.slot;
    slot_state *ss = &d->streams->slots[slot];
    if (ss->capture == CAPTURE_NONE)
        return status_make(CUBEC_GRAPH_STATE,
                           "cubec_graph_begin: call cubec_graph_prepare on stream %" PRIu64
                           " before beginning a capture",
                           s.number);
    RETURN_IF_ERROR(refuse_neighbour(d, s, "cubec_graph_begin"));
    if (ss->capture == CAPTURE_RECORDING)
        return status_make(CUBEC_GRAPH_STATE,
                           "cubec_graph_begin: stream %" PRIu64 " is already recording a graph",
                           ss->capture_owner);
    /* The warm-up's failures are reported here, before the window opens: they belong to it. */
    cubec_status err = server_drain(d, &slot, 1, 0);
    if (!err) err = sub_flush(d, 0);
    graph_obj *g = NULL;
    if (!err) err = graph_create(d, slot, &g);
    if (err) {
        capture_reset(d, slot); /* usable, and capturable again from prepare */
        return status_annotate(err, "cubec_graph_begin: the warm-up failed");
    }
    ss->graph = g;
    ss->capture = CAPTURE_RECORDING;
    /* A profile open on the slot would measure launches that are recorded, not run. */
    failure *f = failure_new(CUBEC_GRAPH_STATE,
                             "stream %" PRIu64
                             " began recording a graph: the launches of its capture window do not "
                             "run",
                             ss->capture_owner);
    server_profiles_poison(d, slot, f);
    failure_release(f);
    return NULL;
}

/* 1 when earlier launches of the graph (the first `limit` uses) wrote all of [offset, +size) of
 * `a`, in one range or several: a read of it then sees the graph's own data, not an input. */
static int written_before(const graph_obj *g, uint32_t limit, const alloc_obj *a, uint64_t offset,
                          uint64_t size)
{
    uint64_t at = offset, end = offset + size;
    while (at < end) {
        uint64_t reach = at;
        for (uint32_t i = 0; i < limit; i++) {
            const graph_use *u = &g->uses[i];
            if (u->alloc == a && u->write && u->offset <= at && u->offset + u->size > reach)
                reach = u->offset + u->size;
        }
        if (reach == at) return 0; /* a byte no earlier write covers */
        at = reach;
    }
    return 1;
}

static cubec_status add_use(cubec_device *d, graph_obj *g, alloc_obj *a, uint64_t offset,
                            uint64_t size, int write, int input)
{
    /* Launches of one graph bind the same ranges again and again: one entry per range. */
    for (uint32_t i = g->use_count; i-- > 0;) {
        graph_use *u = &g->uses[i];
        if (u->alloc == a && u->offset == offset && u->size == size) {
            u->input |= input;
            u->write |= write;
            return NULL;
        }
    }
    if (array_grow((void **)&g->uses, &g->use_cap, (uint64_t)g->use_count + 1, sizeof(graph_use)) !=
        0)
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (graph)");
    if (!a) return status_make(CUBEC_INTERNAL, "a graph use without memory");
    a->refs++;
    /* The recorded commands name the page: it must not move while the graph lives. */
    server_alloc_guard(d, a, +1);
    g->uses[g->use_count++] = (graph_use){a, offset, size, write, input};
    return NULL;
}

/* Room for `size` bytes of metadata in graph-owned memory, which lives as long as the graph. */
static cubec_status chunk_alloc(cubec_device *d, graph_obj *g, uint32_t size, gpu_binding *out,
                                unsigned char **out_ptr)
{
    uint64_t align = d->gpu->caps.metadata_alignment;
    graph_chunk *c = g->chunk_count ? &g->chunks[g->chunk_count - 1] : NULL;
    uint64_t at = c ? (c->used + align - 1) / align * align : 0;
    if (!c || at + size > c->mem->size) {
        /* (array_grow leaves a non-NULL array when it succeeds; the analyzer cannot tell.) */
        if (array_grow((void **)&g->chunks, &g->chunk_cap, (uint64_t)g->chunk_count + 1,
                       sizeof(graph_chunk)) != 0 ||
            !g->chunks)
            return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (graph)");
        c = &g->chunks[g->chunk_count];
        memset(c, 0, sizeof *c);
        uint64_t bytes = size > GRAPH_CHUNK_BYTES ? size : GRAPH_CHUNK_BYTES;
        cubec_status err = gpu_mem_alloc(d->gpu, GPU_MEM_METADATA, bytes, &c->mem);
        if (err) return status_annotate(err, "graph metadata");
        g->chunk_count++;
        at = 0;
    }
    c->used = at + size;
    *out = (gpu_binding){c->mem, at, size};
    *out_ptr = c->mem->mapped + at;
    return NULL;
}

/* The ranges a task reads and writes become the graph's. A range the task reads is an input
 * when no earlier launch of the graph wrote it (the task's own bindings do not count: a launch
 * reads its inputs before it writes); a failure on an input skips a replay. */
static cubec_status note_uses(cubec_device *d, graph_obj *g, const task *t)
{
    uint32_t n = task_bindings(t);
    uint32_t before = g->use_count;
    int input[33];
    for (uint32_t i = 0; i <= n; i++) {
        const bound_range *r = i < n ? task_b(d->streams->slots, t, i) : &t->indirect;
        int read = i == n ? r->alloc != NULL : task_reads(t, i);
        input[i] = read && r->alloc &&
                   !written_before(g, before, r->alloc, bound_start(r), bound_bytes(r));
    }
    for (uint32_t i = 0; i < n; i++)
        RETURN_IF_ERROR(add_use(d, g, task_b(d->streams->slots, t, i)->alloc,
                                bound_start(task_b(d->streams->slots, t, i)),
                                bound_bytes(task_b(d->streams->slots, t, i)),
                                (t->write_mask >> i) & 1, input[i]));
    if (t->indirect.alloc)
        RETURN_IF_ERROR(add_use(d, g, t->indirect.alloc, t->indirect.offset, 12, 0, input[n]));
    return NULL;
}

/* The launches of the copy's finished replay go to the trace and the summary. */
static void read_copy(cubec_device *d, graph_obj *g, int c)
{
    if (!g->unread[c] || g->copy_value[c] > d->sub->completed_value) return;
    g->unread[c] = 0;
    timing_graph_harvest(d, g->queries[c], g->stamps, g->stamp_count, g->number, g->replayed_ns[c]);
}

void server_graphs_read_timing(cubec_device *d)
{
    for (uint32_t i = 0; i < d->graphs->handles.count; i++) {
        graph_obj *g = d->graphs->handles.slots[i].object;
        for (int c = 0; g && c < GRAPH_COPIES; c++)
            read_copy(d, g, c);
    }
}

cubec_status server_graph_record(cubec_device *d, uint32_t slot, task *t)
{
    graph_obj *g = d->streams->slots[slot].graph;
    /* Spec 5.4 rule 4: a launch that would be skipped dooms the capture rather than sealing a
     * graph with a hole; what it would have written is part of the graph's outputs, so it
     * carries the failure when end discards the capture. */
    failure *cause = server_task_input_failure(d, t);
    if (cause) {
        server_graph_doom(d, slot, cause->code, "%s", cause->message);
        failure_release(cause);
        return note_uses(d, g, t);
    }
    if (g->doom) return note_uses(d, g, t); /* nothing recorded after the capture is doomed */
    gpu_binding info_buffer = {0};
    cubec_status err = NULL;
    if (t->kind == TASK_LAUNCH && t->entry->refl.has_info_buffer) {
        /* A launch with the previous one's metadata reads its slice (graph metadata lives as
         * long as the graph), so the replay keeps its descriptors bound (launch.c). */
        const void *bytes = server_task_info(d, t);
        uint32_t size = t->entry->info_size;
        if (!server_metadata_reuse(&g->bound[0], bytes, size, &info_buffer)) {
            unsigned char *dst = NULL;
            err = chunk_alloc(d, g, size, &info_buffer, &dst);
            if (!err && dst) {
                memcpy(dst, bytes, size);
                gpu_mem_flush(d->gpu, info_buffer.mem, info_buffer.offset, size);
            }
            if (!err) server_metadata_remember(&g->bound[0], &info_buffer, bytes, size);
        }
    }
    int timed = !err && g->queries[0] && g->stamp_count < GRAPH_TIMED_LAUNCHES &&
                timing_stamp_add(&g->stamps, &g->stamp_cap, g->stamp_count, t) != NULL;
    for (int c = 0; c < GRAPH_COPIES && !err; c++) {
        recorder rec = {g->cmd[c], &g->bound[c], &g->hazards[c]};
        if (timed) gpu_cmd_timestamp(g->cmd[c], g->queries[c], 2 * g->stamp_count, GPU_STAGE_TOP);
        err = server_emit_task(d, &rec, t, &info_buffer, NULL);
        if (timed)
            gpu_cmd_timestamp(g->cmd[c], g->queries[c], 2 * g->stamp_count + 1, GPU_STAGE_BOTTOM);
    }
    if (timed) g->stamp_count++;
    if (!err) err = note_uses(d, g, t);
    if (err) {
        server_graph_doom(d, slot, cubec_status_code(err),
                          "launch \"%s\" on stream %" PRIu64 " could not be recorded: %s",
                          task_name(t), t->stream, cubec_status_message(err));
        return err;
    }
    g->launches++;
    return NULL;
}

/* What a discarded capture's launches would have written carries `f`: they never ran. */
static void taint_writes(graph_obj *g, failure *f)
{
    for (uint32_t i = 0; i < g->use_count; i++)
        if (g->uses[i].write) server_taint(g->uses[i].alloc, g->uses[i].offset, g->uses[i].size, f);
}

cubec_status server_graph_end(cubec_device *d, stream_ref s, uint64_t *out_id)
{
    uint32_t slot = s.slot;
    slot_state *ss = &d->streams->slots[slot];
    uint64_t caller = s.number;
    if (ss->capture == CAPTURE_NONE || ss->capture_owner != caller) {
        /* Another stream's capture on the slot is its own: this stream has none to end. */
        if (ss->capture != CAPTURE_NONE)
            return status_make(CUBEC_GRAPH_STATE,
                               "cubec_graph_end: no graph capture is recording on stream %" PRIu64
                               " (stream %" PRIu64
                               ", which shares its slot, %s one; only that stream ends it)",
                               caller, ss->capture_owner,
                               ss->capture == CAPTURE_PREPARED ? "prepared" : "records");
        return status_make(CUBEC_GRAPH_STATE,
                           "cubec_graph_end: no graph capture is recording on stream %" PRIu64,
                           caller);
    }
    if (ss->capture == CAPTURE_PREPARED) {
        /* A prepared capture that never began would hold the slot isolated forever. */
        capture_reset(d, slot);
        return status_make(CUBEC_GRAPH_STATE,
                           "cubec_graph_end: no graph capture is recording on stream %" PRIu64
                           " (it was prepared, never begun: the preparation is dropped)",
                           caller);
    }
    graph_obj *g = ss->graph;
    uint64_t owner = caller;
    capture_reset(d, slot);
    /* Before everything submitted after a replay, with the graph's writes visible to it. */
    cubec_status ended = NULL;
    for (int c = 0; c < GRAPH_COPIES; c++) {
        gpu_cmd_barrier(g->cmd[c], GPU_STAGES_USED,
                        GPU_ACCESS_SHADER_WRITE | GPU_ACCESS_TRANSFER_WRITE, GPU_STAGES_USED,
                        GPU_ACCESS_USED);
        cubec_status e = d->gpu->ops->cmd_end(d->gpu, g->cmd[c]);
        if (e && !ended)
            ended = e;
        else
            cubec_status_free(e);
    }
    if (ended && !g->doom)
        server_graph_doom(d, slot, cubec_status_code(ended), "%s", cubec_status_message(ended));
    cubec_status_free(ended);
    cubec_status err = NULL;
    if (g->doom)
        err = status_make(CUBEC_GRAPH_STATE,
                          "cubec_graph_end: an operation inside the capture window of stream "
                          "%" PRIu64 " failed, so the graph would miss it: %s",
                          owner, g->doom->message);
    if (err) {
        failure *f =
            failure_chain(g->doom, "graph capture on stream %" PRIu64 " was discarded", owner);
        taint_writes(g, f);
        failure_release(f);
        graph_free(d, g);
        return err;
    }
    uint64_t id;
    err = handle_table_insert(&d->graphs->handles, g, &id);
    if (err) {
        graph_free(d, g);
        return err;
    }
    LOG(LOG_INFO, LOG_SYS_STREAMS,
        "graph #%" PRIu64 " captured on stream %" PRIu64 ": %u launches, %u ranges", g->number,
        owner, g->launches, g->use_count);
    *out_id = id;
    return NULL;
}

static cubec_status lookup(cubec_device *d, uint64_t id, const char *fn, graph_obj **out)
{
    *out = handle_table_get(&d->graphs->handles, id);
    if (*out) return NULL;
    char why[192];
    return status_make(CUBEC_GRAPH_STATE, "%s: %s", fn,
                       handle_table_explain(&d->graphs->handles, id, why, sizeof why));
}

/* Spec 5.4 rule 3 for a whole graph: an input it reads before writing carries a failure. */
static failure *replay_input_failure(const graph_obj *g, uint64_t stream)
{
    for (uint32_t i = 0; i < g->use_count; i++) {
        const graph_use *u = &g->uses[i];
        if (!u->input) continue;
        failure *cause = server_failure_of(u->alloc, u->offset, u->size);
        if (cause)
            return failure_chain(cause,
                                 "replay of graph #%" PRIu64 " on stream %" PRIu64
                                 " was skipped because its input buffer #%" PRIu64
                                 " was not written",
                                 g->number, stream, u->alloc->number);
    }
    return NULL;
}

cubec_status server_graph_replay(cubec_device *d, stream_ref s, uint64_t id)
{
    uint32_t slot = s.slot;
    uint64_t stream = s.number;
    /* Bound how far replays run ahead of the GPU, like batches (max_inflight_tasks). Before the
     * lookup: the wait may let other threads in. */
    if (d->sub->next_value > d->sub->completed_value + d->sub->max_batches) {
        sub_poll(d);
        if (d->sub->next_value > d->sub->completed_value + d->sub->max_batches)
            RETURN_IF_ERROR(sub_wait(d, d->sub->next_value - d->sub->max_batches));
    }
    graph_obj *g;
    RETURN_IF_ERROR(lookup(d, id, "cubec_graph_replay", &g));
    RETURN_IF_ERROR(server_graph_refuse(d, s, "cubec_graph_replay"));
    if (server_run_dry(d, s)) {
        server_run_drop_launch(d); /* a dry run drops replays like launches */
        return NULL;
    }
    uint32_t copy = g->next_copy;
    if (g->copy_value[copy] > d->sub->completed_value) sub_poll(d);
    while (g->copy_value[copy] > d->sub->completed_value) {
        /* Every copy is still running (replays queued back to back): wait for this one. The
         * wait may let other threads in: look the graph up again after it. */
        RETURN_IF_ERROR(sub_wait(d, g->copy_value[copy]));
        RETURN_IF_ERROR(lookup(d, id, "cubec_graph_replay", &g));
        copy = g->next_copy;
    }
    /* A capture may have begun on the slot while this thread waited. */
    RETURN_IF_ERROR(server_graph_refuse(d, s, "cubec_graph_replay"));
    uint64_t t0 = d->timing->trace ? clock_now_ns() : 0;
    /* Ordered after the stream's queued work and after queued writers of what it binds. */
    uint32_t *slots = d->streams->align_slots;
    slots[0] = slot;
    uint32_t n = 1;
    cubec_status err = NULL;
    for (uint32_t i = 0; i < g->use_count; i++)
        n = server_align_slots(d, slot, g->uses[i].alloc, g->uses[i].write, slots, n,
                               d->streams->max_streams);
    /* The last drain leaves its batch open: it goes to the GPU with the graph, in one
     * submission (a profile's begin timestamp, the stream's last launches). */
    if (!err) err = submitter_start(d);
    if (!err) err = server_drain(d, slots, n, DRAIN_KEEP_OPEN);
    failure *skip = err ? NULL : replay_input_failure(g, stream);
    sub_handoff before = {0};
    cubec_status lost = NULL; /* the replay's submission failed: it will not run */
    if (!err && skip) {
        err = sub_flush(d, 0);
    } else if (!err) {
        /* The open batch and the replay go to the GPU in one submission, counted once by the
         * fault plan here, under the device lock (the submission thread submits without it): in
         * sub_flush_to when a batch is handed over, else for the replay alone. If that
         * submission fails, the batch's outputs carry the failure (sub_flush_to) and so do the
         * replay's (below): neither ran. */
        lost = sub_flush_to(d, 0, &before);
        if (!lost && !before.cmd) lost = gpu_fault(d->gpu, CUBEC_FAULT_SUBMIT, CUBEC_INTERNAL);
    }
    if (err) {
        failure_release(skip);
        return err;
    }
    if (skip) {
        taint_writes(g, skip);
        server_profiles_poison(d, slot, skip);
        failure_release(skip);
        d->sub->stats.skipped++;
        return NULL;
    }
    read_copy(d, g, (int)copy);         /* before its queries are written again */
    d->streams->slots[slot].recorded++; /* a profile window around the replay is not empty */
    uint64_t value = d->sub->next_value;
    /* Its timestamps come after this: a bound for an uncalibrated clock (launch_timing.c). */
    if (g->queries[copy]) g->replayed_ns[copy] = clock_now_ns();
    err = lost ? lost
               : submitter_push(d, g->cmd[copy], value, g->number, before.cmd ? &before : NULL);
    if (err) {
        /* Spec 5.4 rule 8: a failed replay's outputs carry the failure until one succeeds. */
        failure *f = failure_new(cubec_status_code(err),
                                 "replay of graph #%" PRIu64 " on stream %" PRIu64 " failed: %s",
                                 g->number, stream, cubec_status_message(err));
        taint_writes(g, f);
        server_profiles_poison(d, slot, f);
        failure_release(f);
        return err;
    }
    for (uint32_t i = 0; i < g->use_count; i++) {
        graph_use *u = &g->uses[i];
        u->alloc->last_use = value;
        if (u->write) {
            u->alloc->last_write = value;
            u->alloc->queued_writer = NO_SLOT;
            server_untaint(u->alloc, u->offset, u->size);
        }
    }
    g->last_value = value;
    g->copy_value[copy] = value;
    g->unread[copy] = g->queries[copy] != NULL && g->stamp_count > 0;
    g->next_copy = (copy + 1) % GRAPH_COPIES;
    d->sub->next_value++;
    d->sub->stats.tasks += g->launches;
    d->streams->slots[slot].last_value = value;
    /* The graph ends with a full barrier: nothing recorded later conflicts with earlier work. */
    hazard_reset(&d->sub->hazards);
    if (d->timing->trace) {
        char args[96];
        snprintf(args, sizeof args, "\"graph\":%" PRIu64 ",\"launches\":%u", g->number,
                 g->launches);
        timing_host(d, "replay", "submit", t0, stream, args);
    }
    return NULL;
}

/* Replays whose submission failed on the submission thread are reported here. */
static void on_progress(cubec_device *d)
{
    if (!d->submitter->started) return;
    uint64_t graph = 0, value = 0;
    cubec_status lost;
    while ((lost = submitter_take_failure(d, &graph, &value)) != NULL)
        server_graph_replay_lost(d, graph, value, lost);
}

const sub_listener graphs_listener = {.name = "graphs", .progress = on_progress};

void server_graph_replay_lost(cubec_device *d, uint64_t number, uint64_t value, cubec_status err)
{
    /* Number 0: an eager batch failed on the submission thread (the device is lost). */
    if (number)
        LOG(LOG_ERROR, LOG_SYS_STREAMS, "graph #%" PRIu64 ": %s", number,
            cubec_status_message(err));
    failure *f =
        number ? failure_new(cubec_status_code(err), "replay of graph #%" PRIu64 " failed: %s",
                             number, cubec_status_message(err))
               : failure_new(cubec_status_code(err), "%s", cubec_status_message(err));
    for (uint32_t i = 0; number && i < d->graphs->handles.count; i++) {
        graph_obj *g = d->graphs->handles.slots[i].object;
        if (!g || g->number != number) continue;
        /* What later work wrote again (a later replay, a write) is not this replay's loss. */
        for (uint32_t u = 0; u < g->use_count; u++)
            if (g->uses[u].write && g->uses[u].alloc->last_write <= value)
                server_taint(g->uses[u].alloc, g->uses[u].offset, g->uses[u].size, f);
    }
    server_profiles_poison(d, NO_SLOT, f);
    failure_release(f);
    cubec_status_free(server_note_error(d, err));
}

cubec_status server_graph_destroy(cubec_device *d, stream_ref s, uint64_t id)
{
    (void)s;
    graph_obj *g = handle_table_get(&d->graphs->handles, id);
    if (!g && id >> HANDLE_TAG_SHIFT != d->tag) {
        /* Not this device's: another device's graph (or a made-up value) would otherwise be
         * "destroyed" here and live on there, the program's mistake unreported. */
        char why[192];
        return status_make(CUBEC_GRAPH_STATE, "cubec_graph_destroy: %s",
                           handle_table_explain(&d->graphs->handles, id, why, sizeof why));
    }
    if (!g) return NULL; /* destroying twice is harmless (spec 6.2) */
    handle_table_remove(&d->graphs->handles, id);
    /* The command buffer and its metadata must outlive the replays still running. The wait may
     * let other threads in; the graph is no longer reachable by them. */
    cubec_status err = sub_wait(d, g->last_value);
    /* The submission thread must have let go of this graph's command buffers (and, when the
     * device is lost and nothing runs any more, of the queue). */
    submitter_quiesce(d);
    if (err) {
        d->gpu->ops->queue_idle(d->gpu);
    } else {
        for (int c = 0; c < GRAPH_COPIES; c++)
            read_copy(d, g, c);
    }
    graph_free(d, g);
    return err;
}
