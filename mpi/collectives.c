/* The collectives of cubec_mpi (cubec_mpi.h): the arguments checked on every rank and agreed
 * between the ranks, then one pipeline that moves the data in chunks through the staging slots
 * (comm.h):
 *
 *     step t:  read chunk t from the device      (cubec_read_async into slot t % 3)
 *              start chunk t-1 in MPI            (its reads waited for, f16 widened, I-collective
 *                                                 posted with the chunk's taint flag)
 *              finish chunk t-2                  (MPI waited for, f16 narrowed, cubec_write)
 *
 * so the device's copies of two chunks run while MPI moves a third. Each chunk carries a flag,
 * reduced with MPI_MIN: rank << 6 | code of a rank whose input could not be read, INT_MAX when
 * every rank's could. Any such flag makes every rank write a failure over its whole output at the
 * end instead of leaving partial results that look valid. */
#include "comm.h"
#include "half.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum kind { K_ALLREDUCE, K_BROADCAST, K_ALLGATHER, K_REDUCE_SCATTER } kind;

#define NO_FAILURE INT_MAX
#define FLAG_CODE_BITS 6

/* One call of a collective. */
typedef struct plan {
    cubec_mpi_comm *m;
    cubec_stream stream;
    const char *fn;
    kind kind;
    cubec_buffer in, out; /* broadcast: both the buffer */
    uint64_t count;       /* allreduce, broadcast: elements; allgather, reduce-scatter: total */
    cubec_mpi_dtype dtype;
    cubec_mpi_op op;
    int root;
    uint32_t esize;     /* bytes of an element on the device */
    uint64_t per_chunk; /* elements of one rank's data in a chunk */
    uint64_t chunks;
    int wide;                        /* f16 reduced as f32 */
    MPI_Datatype reduce_type;        /* what MPI reduces (MPI_FLOAT for wide f16) */
    MPI_Datatype move_type;          /* what MPI moves without reducing */
    MPI_Op mpi_op;                   /* the reduction */
    uint64_t *shard_off, *shard_cnt; /* per rank, in elements */
    int *counts[MPI_STAGE_SLOTS];    /* per rank, the chunk's elements (v-collectives) */
    int *displs[MPI_STAGE_SLOTS];    /* per rank, where they land in dev_out */
    int failed;                      /* the lowest flag seen */
    cubec_code local_code;           /* this rank's input failure, if any */
    char *local_message;
    cubec_status error; /* the first MPI or device error */
} plan;

static void note_error(plan *p, cubec_status err)
{
    if (!err) return;
    if (!p->error)
        p->error = err;
    else
        cubec_status_free(err);
}

/* This rank's input could not be read: the first cause is kept for the failure's message. */
static void note_local_failure(plan *p, cubec_status err)
{
    if (!p->local_message) {
        p->local_code = cubec_status_code(err);
        const char *text = cubec_status_message(err);
        p->local_message = malloc(strlen(text) + 1);
        if (p->local_message) strcpy(p->local_message, text);
    }
    cubec_status_free(err);
}

/* Elements of rank r's data in chunk c. */
static uint64_t chunk_elems(const plan *p, int r, uint64_t c)
{
    const uint64_t have = p->shard_cnt[r], start = c * p->per_chunk;
    if (have <= start) return 0;
    return have - start < p->per_chunk ? have - start : p->per_chunk;
}

static void read_piece(plan *p, mpi_stage *st, uint64_t elem, uint64_t n, void *dst)
{
    cubec_event *e = NULL;
    cubec_status err =
        cubec_read_async(p->m->device, p->stream, p->in, elem * p->esize, dst, n * p->esize, &e);
    if (err)
        note_local_failure(p, err);
    else
        st->events[st->event_count++] = e;
}

static void stage_read(plan *p, uint64_t c)
{
    mpi_stage *st = &p->m->stages[c % MPI_STAGE_SLOTS];
    const int me = p->m->rank;
    const uint64_t at = c * p->per_chunk;
    st->event_count = 0;
    switch (p->kind) {
    case K_BROADCAST:
    case K_ALLREDUCE:
    case K_ALLGATHER: {
        /* Allgather's input holds this rank's shard alone, from its first byte; of a broadcast's
         * ranks only the root reads. */
        const uint64_t n = chunk_elems(p, me, c);
        if (n && (p->kind != K_BROADCAST || me == p->root)) read_piece(p, st, at, n, st->dev_in);
        break;
    }
    case K_REDUCE_SCATTER: {
        /* Every rank's part of the chunk, packed in rank order as MPI_Ireduce_scatter takes it. */
        uint64_t packed = 0;
        for (int r = 0; r < p->m->size; r++) {
            const uint64_t n = chunk_elems(p, r, c);
            if (n)
                read_piece(p, st, p->shard_off[r] + at, n, (char *)st->dev_in + packed * p->esize);
            packed += n;
        }
        break;
    }
    }
}

static void post(plan *p, int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char where[96];
        snprintf(where, sizeof where, "%s: %s", p->fn, what);
        note_error(p, mpi_status(rc, where));
    }
}

static void stage_start(plan *p, uint64_t c)
{
    const int slot = (int)(c % MPI_STAGE_SLOTS);
    mpi_stage *st = &p->m->stages[slot];
    const int me = p->m->rank, size = p->m->size;
    for (uint32_t i = 0; i < st->event_count; i++) {
        cubec_status err = cubec_event_wait(st->events[i]);
        if (err) note_local_failure(p, err);
        cubec_event_free(st->events[i]);
    }
    st->event_count = 0;
    /* A failure read in this chunk or an earlier one: a rank whose input failed anywhere flags
     * every chunk from there on. */
    st->flag_in = p->local_message ? (me << FLAG_CODE_BITS) | (int)p->local_code : NO_FAILURE;
    st->requests[0] = st->requests[1] = MPI_REQUEST_NULL;
    st->flag_out = NO_FAILURE; /* what a flag request that could not be posted leaves */
    MPI_Comm comm = p->m->comm;
    int total = 0;
    for (int r = 0; r < size; r++) {
        p->counts[slot][r] = (int)chunk_elems(p, r, c);
        p->displs[slot][r] = (int)((uint64_t)r * p->per_chunk);
        total += p->counts[slot][r];
    }
    const int mine = p->counts[slot][me];
    switch (p->kind) {
    case K_ALLREDUCE:
        if (p->wide) {
            mpi_half_widen(st->dev_in, st->wide_in, (size_t)mine);
            post(p,
                 MPI_Iallreduce(st->wide_in, st->wide_out, mine, MPI_FLOAT, p->mpi_op, comm,
                                &st->requests[0]),
                 "MPI_Iallreduce");
        } else {
            post(p,
                 MPI_Iallreduce(st->dev_in, st->dev_out, mine, p->reduce_type, p->mpi_op, comm,
                                &st->requests[0]),
                 "MPI_Iallreduce");
        }
        break;
    case K_BROADCAST:
        post(p, MPI_Ibcast(st->dev_in, mine, p->move_type, p->root, comm, &st->requests[0]),
             "MPI_Ibcast");
        break;
    case K_ALLGATHER:
        post(p,
             MPI_Iallgatherv(st->dev_in, mine, p->move_type, st->dev_out, p->counts[slot],
                             p->displs[slot], p->move_type, comm, &st->requests[0]),
             "MPI_Iallgatherv");
        break;
    case K_REDUCE_SCATTER:
        if (p->wide) {
            mpi_half_widen(st->dev_in, st->wide_in, (size_t)total);
            post(p,
                 MPI_Ireduce_scatter(st->wide_in, st->wide_out, p->counts[slot], MPI_FLOAT,
                                     p->mpi_op, comm, &st->requests[0]),
                 "MPI_Ireduce_scatter");
        } else {
            post(p,
                 MPI_Ireduce_scatter(st->dev_in, st->dev_out, p->counts[slot], p->reduce_type,
                                     p->mpi_op, comm, &st->requests[0]),
                 "MPI_Ireduce_scatter");
        }
        break;
    }
    post(p,
         MPI_Iallreduce(&st->flag_in, &st->flag_out, 1, MPI_INT, MPI_MIN, comm, &st->requests[1]),
         "MPI_Iallreduce of the failure flag");
}

static void write_piece(plan *p, uint64_t elem, uint64_t n, const void *src)
{
    note_error(p, cubec_write(p->m->device, p->stream, p->out, elem * p->esize, src, n * p->esize));
}

static void stage_finish(plan *p, uint64_t c)
{
    const int slot = (int)(c % MPI_STAGE_SLOTS);
    mpi_stage *st = &p->m->stages[slot];
    const int me = p->m->rank;
    const uint64_t at = c * p->per_chunk;
    /* stage_start posted both requests (the analyzer does not follow them across functions). */
    // NOLINTNEXTLINE(clang-analyzer-optin.mpi.MPI-Checker)
    const int rc = MPI_Waitall(2, st->requests, MPI_STATUSES_IGNORE);
    post(p, rc, "MPI_Waitall");
    if (st->flag_out < p->failed) p->failed = st->flag_out;
    /* A failed chunk is not written: the output takes the failure at the end. */
    if (p->failed != NO_FAILURE || p->error) return;
    const uint64_t mine = chunk_elems(p, me, c);
    switch (p->kind) {
    case K_ALLREDUCE:
    case K_REDUCE_SCATTER:
        if (!mine) break;
        if (p->wide) mpi_half_narrow(st->wide_out, st->dev_out, (size_t)mine);
        write_piece(p, at, mine, st->dev_out);
        break;
    case K_BROADCAST:
        if (me != p->root && mine) write_piece(p, at, mine, st->dev_in);
        break;
    case K_ALLGATHER:
        for (int r = 0; r < p->m->size; r++) {
            const uint64_t n = chunk_elems(p, r, c);
            if (n)
                write_piece(p, p->shard_off[r] + at, n,
                            (char *)st->dev_out + (size_t)r * p->per_chunk * p->esize);
        }
        break;
    }
}

/* Bytes this rank's output holds after the call. */
static uint64_t output_bytes(const plan *p)
{
    switch (p->kind) {
    case K_ALLREDUCE:
    case K_BROADCAST:
    case K_ALLGATHER: return p->count * p->esize;
    case K_REDUCE_SCATTER: return p->shard_cnt[p->m->rank] * p->esize;
    }
    return 0;
}

static void run_pipeline(plan *p)
{
    for (uint64_t t = 0; t < p->chunks + 2; t++) {
        if (t < p->chunks) stage_read(p, t);
        if (t >= 1 && t - 1 < p->chunks) stage_start(p, t - 1);
        if (t >= 2) stage_finish(p, t - 2);
        /* Open MPI moves a non-blocking collective on only inside MPI calls: a test of the chunk
         * in flight lets it progress before the next step's reads and writes block. */
        if (t >= 1 && t - 1 < p->chunks) {
            int done = 0;
            mpi_stage *st = &p->m->stages[(t - 1) % MPI_STAGE_SLOTS];
            post(p, MPI_Testall(2, st->requests, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
        }
    }
    const uint64_t bytes = output_bytes(p);
    if (p->failed != NO_FAILURE && bytes) {
        const int rank = p->failed >> FLAG_CODE_BITS;
        const cubec_code code = (cubec_code)(p->failed & ((1 << FLAG_CODE_BITS) - 1));
        char *message = NULL;
        const char *local = rank == p->m->rank && p->local_message ? p->local_message : NULL;
        const size_t len = strlen(p->fn) + 96 + (local ? strlen(local) : 0);
        message = malloc(len);
        if (message)
            snprintf(message, len, "%s: rank %d's input carried a failure%s%s", p->fn, rank,
                     local ? ": " : " (that rank's output names it)", local ? local : "");
        note_error(p, cubec_write_failure(p->m->device, p->stream, p->out, 0, bytes, code,
                                          message ? message : p->fn));
        free(message);
    } else if (p->error && bytes) {
        /* MPI or the device failed: what was written so far is no result. */
        cubec_status_free(cubec_write_failure(p->m->device, p->stream, p->out, 0, bytes,
                                              cubec_status_code(p->error),
                                              cubec_status_message(p->error)));
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Arguments: each rank checks its own, then the ranks agree, so that a refusal on one rank is a
 * refusal on all and none waits in MPI for a peer that returned. */

/* `buffer` (named `arg`) exists on the device and holds `elems` elements. */
static cubec_status check_buffer(const plan *p, const char *arg, cubec_buffer buffer,
                                 uint64_t elems)
{
    uint64_t size = 0;
    cubec_status err = cubec_buffer_get_size(p->m->device, buffer, &size);
    if (err) {
        cubec_status out = cubec_status_new(cubec_status_code(err), "%s: %s: %s", p->fn, arg,
                                            cubec_status_message(err));
        cubec_status_free(err);
        return out;
    }
    if (size < elems * p->esize)
        return cubec_status_new(CUBEC_INVALID_ARGUMENT,
                                "%s: %s holds %" PRIu64 " bytes: %" PRIu64
                                " elements of %u bytes need %" PRIu64,
                                p->fn, arg, size, elems, p->esize, elems * p->esize);
    /* A read of no bytes checks the stream (and refuses a graph capture) without moving any. */
    char byte;
    err = cubec_read(p->m->device, p->stream, buffer, 0, &byte, 0);
    if (err) {
        cubec_status out =
            cubec_status_new(cubec_status_code(err), "%s: %s", p->fn, cubec_status_message(err));
        cubec_status_free(err);
        return out;
    }
    return NULL;
}

static cubec_status check_local(plan *p)
{
    const int size = p->m->size, me = p->m->rank;
    p->esize = cubec_mpi_dtype_size(p->dtype);
    if (!p->esize)
        return cubec_status_new(CUBEC_INVALID_ARGUMENT, "%s: dtype = %d is not a cubec_mpi_dtype",
                                p->fn, (int)p->dtype);
    if ((p->kind == K_ALLREDUCE || p->kind == K_REDUCE_SCATTER) && p->op != CUBEC_MPI_SUM &&
        p->op != CUBEC_MPI_MAX)
        return cubec_status_new(CUBEC_INVALID_ARGUMENT, "%s: op = %d is not a cubec_mpi_op", p->fn,
                                (int)p->op);
    if (p->kind == K_BROADCAST && (p->root < 0 || p->root >= size))
        return cubec_status_new(CUBEC_INVALID_ARGUMENT,
                                "%s: root = %d is not a rank of the communicator (size %d)", p->fn,
                                p->root, size);
    if (p->count > (UINT64_MAX >> 3) / (uint64_t)size)
        return cubec_status_new(CUBEC_INVALID_ARGUMENT, "%s: count = %" PRIu64 " is too large",
                                p->fn, p->count);
    /* Shards: everything on every rank for allreduce and broadcast. */
    for (int r = 0; r < size; r++) {
        if (p->kind == K_ALLGATHER || p->kind == K_REDUCE_SCATTER) {
            cubec_status err =
                cubec_mpi_shard(p->m, p->count, r, &p->shard_off[r], &p->shard_cnt[r]);
            if (err) return err;
        } else {
            p->shard_off[r] = 0;
            p->shard_cnt[r] = p->count;
        }
    }
    switch (p->kind) {
    case K_ALLREDUCE: {
        cubec_status err = check_buffer(p, "in", p->in, p->count);
        return err ? err : check_buffer(p, "out", p->out, p->count);
    }
    case K_BROADCAST: return check_buffer(p, "buffer", p->in, p->count);
    case K_ALLGATHER: {
        cubec_status err = check_buffer(p, "in", p->in, p->shard_cnt[me]);
        return err ? err : check_buffer(p, "out", p->out, p->count);
    }
    case K_REDUCE_SCATTER: {
        cubec_status err = check_buffer(p, "in", p->in, p->count);
        return err ? err : check_buffer(p, "out", p->out, p->shard_cnt[me]);
    }
    }
    return NULL;
}

static cubec_status agree(plan *p, cubec_status local)
{
    const int size = p->m->size;
    /* Pairs (v, -v) under MPI_MAX give each value's largest and smallest over the ranks; the last
     * entry is size - rank of the lowest rank that refused its arguments. */
    const int64_t values[4] = {(int64_t)p->count, (int64_t)p->dtype, (int64_t)p->op, p->root};
    static const char *const names[4] = {"count", "dtype", "op", "root"};
    int64_t v[9];
    for (size_t i = 0; i < 4; i++) {
        v[2 * i] = values[i];
        v[2 * i + 1] = -values[i];
    }
    v[8] = local ? size - p->m->rank : 0;
    int rc = MPI_Allreduce(MPI_IN_PLACE, v, 9, MPI_INT64_T, MPI_MAX, p->m->comm);
    if (rc != MPI_SUCCESS) {
        cubec_status_free(local);
        char where[96];
        snprintf(where, sizeof where, "%s: MPI_Allreduce of the arguments", p->fn);
        return mpi_status(rc, where);
    }
    if (local) return local;
    if (v[8])
        return cubec_status_new(CUBEC_INVALID_ARGUMENT,
                                "%s: rank %d refused its arguments (its own error names them)",
                                p->fn, size - (int)v[8]);
    for (size_t i = 0; i < 4; i++) {
        if (v[2 * i] != -v[2 * i + 1])
            return cubec_status_new(CUBEC_INVALID_ARGUMENT,
                                    "%s: %s differs between the ranks: %" PRId64
                                    " here, from %" PRId64 " to %" PRId64 " over the ranks",
                                    p->fn, names[i], values[i], -v[2 * i + 1], v[2 * i]);
    }
    return NULL;
}

static cubec_status plan_alloc(plan *p)
{
    const size_t size = (size_t)p->m->size;
    p->shard_off = calloc(size, sizeof *p->shard_off);
    p->shard_cnt = calloc(size, sizeof *p->shard_cnt);
    int ok = p->shard_off && p->shard_cnt;
    for (int i = 0; i < MPI_STAGE_SLOTS; i++) {
        p->counts[i] = calloc(size, sizeof(int));
        p->displs[i] = calloc(size, sizeof(int));
        ok = ok && p->counts[i] && p->displs[i];
    }
    return ok ? NULL : cubec_status_new(CUBEC_OUT_OF_MEMORY, "%s: host out of memory", p->fn);
}

static void plan_free(plan *p)
{
    free(p->shard_off);
    free(p->shard_cnt);
    for (int i = 0; i < MPI_STAGE_SLOTS; i++) {
        free(p->counts[i]);
        free(p->displs[i]);
    }
    free(p->local_message);
}

static cubec_status run(plan *p)
{
    if (!p->m) return cubec_status_new(CUBEC_INVALID_ARGUMENT, "%s: comm is NULL", p->fn);
    p->failed = NO_FAILURE;
    /* Out of memory here is this rank's refusal: the others still learn of it in agree(). */
    cubec_status local = plan_alloc(p);
    if (!local) local = check_local(p);
    if (!local && p->wide) local = mpi_comm_wide(p->m);
    cubec_status err = agree(p, local);
    if (err) {
        plan_free(p);
        return err;
    }
    p->per_chunk = p->m->chunk_bytes / p->esize;
    uint64_t most = 0;
    for (int r = 0; r < p->m->size; r++)
        if (p->shard_cnt[r] > most) most = p->shard_cnt[r];
    p->chunks = (most + p->per_chunk - 1) / p->per_chunk;
    p->reduce_type = p->dtype == CUBEC_MPI_I32 ? MPI_INT32_T : MPI_FLOAT;
    p->move_type = p->esize == 2 ? MPI_UINT16_T : MPI_UINT32_T;
    p->mpi_op = p->op == CUBEC_MPI_MAX ? MPI_MAX : MPI_SUM;
    run_pipeline(p);
    err = p->error;
    plan_free(p);
    return err;
}

cubec_status cubec_mpi_allreduce(cubec_mpi_comm *comm, cubec_stream stream, cubec_buffer in,
                                 cubec_buffer out, uint64_t count, cubec_mpi_dtype dtype,
                                 cubec_mpi_op op)
{
    plan p = {.m = comm,
              .stream = stream,
              .fn = "cubec_mpi_allreduce",
              .kind = K_ALLREDUCE,
              .in = in,
              .out = out,
              .count = count,
              .dtype = dtype,
              .op = op,
              .wide = dtype == CUBEC_MPI_F16};
    return run(&p);
}

cubec_status cubec_mpi_broadcast(cubec_mpi_comm *comm, cubec_stream stream, cubec_buffer buffer,
                                 uint64_t count, cubec_mpi_dtype dtype, int root)
{
    plan p = {.m = comm,
              .stream = stream,
              .fn = "cubec_mpi_broadcast",
              .kind = K_BROADCAST,
              .in = buffer,
              .out = buffer,
              .count = count,
              .dtype = dtype,
              .op = CUBEC_MPI_SUM,
              .root = root};
    return run(&p);
}

cubec_status cubec_mpi_allgather(cubec_mpi_comm *comm, cubec_stream stream, cubec_buffer in,
                                 cubec_buffer out, uint64_t total, cubec_mpi_dtype dtype)
{
    plan p = {.m = comm,
              .stream = stream,
              .fn = "cubec_mpi_allgather",
              .kind = K_ALLGATHER,
              .in = in,
              .out = out,
              .count = total,
              .dtype = dtype,
              .op = CUBEC_MPI_SUM};
    return run(&p);
}

cubec_status cubec_mpi_reduce_scatter(cubec_mpi_comm *comm, cubec_stream stream, cubec_buffer in,
                                      cubec_buffer out, uint64_t total, cubec_mpi_dtype dtype,
                                      cubec_mpi_op op)
{
    plan p = {.m = comm,
              .stream = stream,
              .fn = "cubec_mpi_reduce_scatter",
              .kind = K_REDUCE_SCATTER,
              .in = in,
              .out = out,
              .count = total,
              .dtype = dtype,
              .op = op,
              .wide = dtype == CUBEC_MPI_F16};
    return run(&p);
}
