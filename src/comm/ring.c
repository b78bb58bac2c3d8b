/* The ring transport of the collectives within a process (docs/multi-device-paths.md,
 * "Collectives"): rank r sends only to rank r + 1 (mod n), so at every step each device's link to
 * its neighbour carries one chunk and all the links work at once, where a gather on one rank
 * would queue every byte behind that rank's copies.
 *
 * The data is cut into n chunks, chunk k of ch.cnt[k] elements at ch.off[k].
 *   reduce phase (n - 1 steps): at step s rank r sends chunk (r - s - 1) mod n to rank r + 1,
 *     which reduces it with its own elements of that chunk; after the last step rank q holds the
 *     whole reduction of chunk q. Chunk k is thus reduced as x[k+1] op x[k+2] op ... op x[k]
 *     (ranks mod n), left to right, each element once and on one rank.
 *   gather phase (n - 1 steps): at step s rank r sends chunk (r - s) mod n to rank r + 1, which
 *     keeps it: every rank ends with every chunk's bits, copied, never recomputed.
 * all-reduce = reduce phase + gather phase in the buffers themselves; reduce-scatter = the reduce
 * phase into scratch partials and each rank's out; all-gather = each rank's shard into its out,
 * then the gather phase; broadcast = the root's chunk k sent to rank k, then the gather phase
 * (bringing nothing back to the root). Every step is a comm_move, ordered by the streams: the
 * step reading a chunk is queued after the step that wrote it, on the same rank's stream. */
#include "comm/ring.h"
#include "comm/comm_move.h"

#include "base/status.h"

#include <stdlib.h>
#include <string.h>

typedef struct chunks {
    uint64_t *off, *cnt;
} chunks;

/* 0 when out of memory. The shard rule over the elements; for f16 collectives that do not fix the
 * shards (all-reduce, broadcast) over pairs of elements, so that chunk edges fall between words and
 * the gather phase moves whole words by peer copies alone. */
static int chunks_make(const cubec_comm *c, const comm_call *call, chunks *ch)
{
    ch->off = malloc(c->n * sizeof *ch->off);
    ch->cnt = malloc(c->n * sizeof *ch->cnt);
    if (!ch->off || !ch->cnt) {
        free(ch->off);
        free(ch->cnt);
        return 0;
    }
    const int paired = call->dtype == CUBEC_DTYPE_F16 &&
                       (call->kind == COMM_ALL_REDUCE || call->kind == COMM_BROADCAST);
    const uint64_t unit = paired ? 2 : 1, units = (call->count + unit - 1) / unit;
    for (uint32_t k = 0; k < c->n; k++) {
        uint64_t off, cnt;
        comm_shard(c->n, units, k, &off, &cnt);
        off *= unit;
        cnt *= unit;
        if (off > call->count) off = call->count;
        if (cnt > call->count - off) cnt = call->count - off;
        ch->off[k] = off;
        ch->cnt[k] = cnt;
    }
    return 1;
}

static void chunks_free(chunks *ch)
{
    free(ch->off);
    free(ch->cnt);
}

static comm_end end(uint32_t rank, cubec_buffer buf, uint64_t elem)
{
    comm_end e = {rank, buf, elem};
    return e;
}

static void release_all(cubec_comm *c, cubec_buffer *bufs)
{
    for (uint32_t r = 0; r < c->n; r++)
        if (bufs[r].id) cubec_status_free(cubec_buffer_release(c->devices[r], bufs[r]));
}

/* The reduce phase. In place (all-reduce: in == out): partials and results in the buffers at the
 * chunk's offset. Otherwise partials in scratch of one chunk, each rank's result in out[q] from
 * its first element. */
static cubec_status reduce_phase(cubec_comm *c, const comm_call *call, const chunks *ch)
{
    const uint32_t n = c->n;
    const int in_place = call->kind == COMM_ALL_REDUCE;
    cubec_buffer *prev = calloc(n, sizeof *prev), *next = calloc(n, sizeof *next);
    if (!prev || !next) {
        free(prev);
        free(next);
        return status_make(CUBEC_OUT_OF_MEMORY, "the ring's partials");
    }
    cubec_status err = NULL;
    for (uint32_t s = 0; s + 1 < n && !err; s++) {
        const int last = s + 2 == n;
        for (uint32_t r = 0; r < n && !err; r++) {
            const uint32_t q = (r + 1) % n, k = (r + 2 * n - s - 1) % n;
            const uint64_t cnt = ch->cnt[k], off = ch->off[k];
            if (!cnt) continue;
            comm_end src = s == 0 || in_place ? end(r, call->in[r], off) : end(r, prev[r], 0);
            comm_end dst;
            if (in_place)
                dst = end(q, call->out[q], off);
            else if (last)
                dst = end(q, call->out[q], 0);
            else {
                err = cubec_buffer_create(c->devices[q], call->streams[q],
                                          comm_bytes_for(call->dtype, cnt), &next[q]);
                dst = end(q, next[q], 0);
            }
            if (!err) err = comm_move(c, call, src, dst, cnt, call->op, end(q, call->in[q], off));
        }
        /* Queued work holds the partials it reads until it has run. */
        release_all(c, prev);
        cubec_buffer *t = prev;
        prev = next;
        next = t;
        memset(next, 0, n * sizeof *next);
    }
    release_all(c, prev);
    free(prev);
    free(next);
    return err;
}

/* The gather phase over `bufs` (each rank's copy of chunk r in bufs[r] at its offset). A
 * broadcast brings nothing back to its root, which has every chunk. */
static cubec_status gather_phase(cubec_comm *c, const comm_call *call, const chunks *ch,
                                 const cubec_buffer *bufs)
{
    const uint32_t n = c->n;
    const int skip_root = call->kind == COMM_BROADCAST;
    cubec_status err = NULL;
    for (uint32_t s = 0; s + 1 < n && !err; s++)
        for (uint32_t r = 0; r < n && !err; r++) {
            const uint32_t q = (r + 1) % n, k = (r + n - s) % n;
            if (!ch->cnt[k] || (skip_root && q == call->root)) continue;
            err = comm_move(c, call, end(r, bufs[r], ch->off[k]), end(q, bufs[q], ch->off[k]),
                            ch->cnt[k], 0, end(q, bufs[q], ch->off[k]));
        }
    return err;
}

static cubec_status ring_run(cubec_comm *c, void *state, const comm_call *call)
{
    (void)state;
    const uint32_t n = c->n;
    if (call->count == 0) return NULL;
    if (n == 1) {
        /* One rank: all-reduce and broadcast leave the buffer; the others copy in to out. */
        if (call->kind == COMM_ALL_REDUCE || call->kind == COMM_BROADCAST) return NULL;
        return comm_move(c, call, end(0, call->in[0], 0), end(0, call->out[0], 0), call->count, 0,
                         end(0, call->out[0], 0));
    }
    chunks ch;
    if (!chunks_make(c, call, &ch))
        return status_make(CUBEC_OUT_OF_MEMORY, "the ring's %u chunks", n);
    cubec_status err = NULL;
    switch (call->kind) {
    case COMM_ALL_REDUCE:
        err = reduce_phase(c, call, &ch);
        if (!err) err = gather_phase(c, call, &ch, call->out);
        break;
    case COMM_REDUCE_SCATTER: err = reduce_phase(c, call, &ch); break;
    case COMM_ALL_GATHER:
        for (uint32_t r = 0; r < n && !err; r++)
            err = comm_move(c, call, end(r, call->in[r], 0), end(r, call->out[r], ch.off[r]),
                            ch.cnt[r], 0, end(r, call->out[r], ch.off[r]));
        if (!err) err = gather_phase(c, call, &ch, call->out);
        break;
    case COMM_BROADCAST:
        for (uint32_t k = 0; k < n && !err; k++)
            if (k != call->root)
                err = comm_move(c, call, end(call->root, call->in[call->root], ch.off[k]),
                                end(k, call->out[k], ch.off[k]), ch.cnt[k], 0,
                                end(k, call->out[k], ch.off[k]));
        if (!err) err = gather_phase(c, call, &ch, call->out);
        break;
    }
    chunks_free(&ch);
    return err;
}

/* The ring serves devices every ordered pair of which has a path (a broadcast's root sends to
 * every rank, not only its neighbour): refused here, the collectives cannot fail half-way for
 * want of one. */
static cubec_status ring_open(cubec_comm *comm, void **out_state)
{
    *out_state = NULL;
    for (uint32_t p = 0; p < comm->n; p++)
        for (uint32_t q = 0; q < comm->n; q++) {
            if (p == q) continue;
            cubec_path_info info = CUBEC_PATH_INFO_INIT;
            RETURN_IF_ERROR(cubec_device_get_path(comm->devices[p], comm->devices[q], &info));
            if (info.path == CUBEC_PATH_NONE)
                return status_make(CUBEC_UNSUPPORTED,
                                   "ring: no path from devices[%u] to devices[%u]: %s", p, q,
                                   info.reason);
        }
    return NULL;
}

static void ring_close(cubec_comm *comm, void *state)
{
    (void)comm;
    (void)state;
}

const comm_transport comm_ring_transport = {"ring", ring_open, ring_close, ring_run};
