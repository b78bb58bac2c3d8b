/* The rules every collective within a process keeps, beyond its arithmetic (which
 * test_collectives_sweep.c checks): ordered on each rank's stream after a kernel that writes the
 * input and before one that reads the result, with no sync between, while other streams of the
 * same devices run their own work; a failure of one rank's input reaching every output computed
 * from it; the same bits on every rank for sums whose order matters; the communicator's info and
 * shard rule; and every refused argument named, changing nothing. Two and three opens of the
 * lavapipe device stand for the devices. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RANKS = 3 };

typedef struct fixture {
    cubec_device *d[RANKS];
    cubec_kernel produce[RANKS], consume[RANKS], step[RANKS];
    cubec_comm *comm[RANKS + 1]; /* comm[n]: over d[0 .. n-1] */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    for (int r = 0; r < RANKS; r++) {
        f->d[r] = test_device_open();
        uint_kernels_create(f->d[r], &f->produce[r], &f->consume[r], &f->step[r]);
    }
    for (uint32_t n = 1; n <= RANKS; n++)
        ASSERT_OK(cubec_comm_create(f->d, n, &f->comm[n]));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    for (int n = 1; n <= RANKS; n++)
        cubec_comm_destroy(f->comm[n]);
    for (int r = RANKS - 1; r >= 0; r--) {
        uint_kernels_destroy(f->d[r], f->produce[r], f->consume[r], f->step[r]);
        test_device_close(f->d[r]);
    }
    free(f);
    return 0;
}

static void shard(uint32_t n, uint64_t total, uint32_t r, uint64_t *off, uint64_t *cnt)
{
    uint64_t base = total / n, extra = total % n;
    *cnt = base + (r < extra ? 1 : 0);
    *off = r * base + (r < extra ? r : extra);
}

/* Each rank: produce(x) -> reduce-scatter(x -> y) -> all-gather(y -> z) -> consume(z -> w), and
 * on the root produce(v) -> broadcast(v) -> step(v), all queued with no sync, while a second
 * stream of every device runs produce/step/consume chains of its own on other buffers. w must be
 * consume(sum of the ranks' produce), v the root's produce stepped, the side chains their own. */
static void test_chained_and_concurrent(void **state)
{
    fixture *f = *state;
    enum { N = 50003, SIDE = 40000 };
    const uint32_t root = 1;
    cubec_stream s[RANKS], side[RANKS];
    cubec_buffer x[RANKS], y[RANKS], z[RANKS], w[RANKS], v[RANKS], sa[RANKS], sb[RANKS];
    for (uint32_t r = 0; r < RANKS; r++) {
        uint64_t off, cnt;
        shard(RANKS, N, r, &off, &cnt);
        s[r] = new_stream(f->d[r]);
        side[r] = new_stream(f->d[r]);
        ASSERT_OK(cubec_buffer_create(f->d[r], s[r], N * 4u, &x[r]));
        ASSERT_OK(cubec_buffer_create(f->d[r], s[r], cnt * 4u, &y[r]));
        ASSERT_OK(cubec_buffer_create(f->d[r], s[r], N * 4u, &z[r]));
        ASSERT_OK(cubec_buffer_create(f->d[r], s[r], N * 4u, &w[r]));
        ASSERT_OK(cubec_buffer_create(f->d[r], s[r], N * 4u, &v[r]));
        ASSERT_OK(cubec_buffer_create(f->d[r], side[r], SIDE * 4u, &sa[r]));
        ASSERT_OK(cubec_buffer_create(f->d[r], side[r], SIDE * 4u, &sb[r]));
        ASSERT_OK(cubec_fill(f->d[r], s[r], v[r], 0, N * 4u, 0xdeadbeef));
    }
    for (uint32_t r = 0; r < RANKS; r++) {
        ASSERT_OK(uint_launch(f->d[r], s[r], f->produce[r], x[r], NONE, N, 3 + r, 11 * r));
        ASSERT_OK(uint_launch(f->d[r], side[r], f->produce[r], sa[r], NONE, SIDE, 7, r));
    }
    ASSERT_OK(uint_launch(f->d[root], s[root], f->produce[root], v[root], NONE, N, 5, 2));
    cubec_comm *c = f->comm[RANKS];
    ASSERT_OK(cubec_comm_reduce_scatter(c, x, y, s, N, CUBEC_DTYPE_I32, CUBEC_REDUCE_SUM));
    for (uint32_t r = 0; r < RANKS; r++)
        ASSERT_OK(uint_launch(f->d[r], side[r], f->step[r], sa[r], NONE, SIDE, 3, 1));
    ASSERT_OK(cubec_comm_all_gather(c, y, z, s, N, CUBEC_DTYPE_I32));
    ASSERT_OK(cubec_comm_broadcast(c, v, s, N, CUBEC_DTYPE_I32, root));
    for (uint32_t r = 0; r < RANKS; r++) {
        ASSERT_OK(uint_launch(f->d[r], s[r], f->consume[r], z[r], w[r], N, 5, 1 + r));
        ASSERT_OK(uint_launch(f->d[r], s[r], f->step[r], v[r], NONE, N, 9, r));
        ASSERT_OK(uint_launch(f->d[r], side[r], f->consume[r], sa[r], sb[r], SIDE, 2, r));
    }
    uint32_t *sum = calloc(N, 4), *part = malloc(N * 4u), *want = malloc(N * 4u);
    uint32_t *got = malloc(N * 4u), *bc = malloc(N * 4u);
    for (uint32_t r = 0; r < RANKS; r++) {
        cpu_produce(part, N, 3 + r, 11 * r);
        for (uint32_t i = 0; i < N; i++)
            sum[i] += part[i];
    }
    cpu_produce(bc, N, 5, 2);
    for (uint32_t r = 0; r < RANKS; r++) {
        cpu_consume(sum, want, N, 5, 1 + r);
        ASSERT_OK(cubec_read(f->d[r], s[r], w[r], 0, got, N * 4u));
        for (uint32_t i = 0; i < N; i++)
            if (got[i] != want[i])
                fail_msg("rank %u: w word %u is %u, want %u", r, i, got[i], want[i]);
        cpu_consume(bc, want, N, 9, r);
        ASSERT_OK(cubec_read(f->d[r], s[r], v[r], 0, got, N * 4u));
        for (uint32_t i = 0; i < N; i++)
            if (got[i] != want[i])
                fail_msg("rank %u: broadcast word %u is %u, want %u", r, i, got[i], want[i]);
        cpu_produce(part, SIDE, 7, r);
        cpu_consume(part, part, SIDE, 3, 1);
        cpu_consume(part, want, SIDE, 2, r);
        ASSERT_OK(cubec_read(f->d[r], side[r], sb[r], 0, got, SIDE * 4u));
        for (uint32_t i = 0; i < SIDE; i++)
            if (got[i] != want[i])
                fail_msg("rank %u: side word %u is %u, want %u", r, i, got[i], want[i]);
        cubec_buffer all[] = {x[r], y[r], z[r], w[r], v[r], sa[r], sb[r]};
        for (size_t b = 0; b < sizeof all / sizeof all[0]; b++)
            ASSERT_OK(cubec_buffer_release(f->d[r], all[b]));
    }
    free(sum);
    free(part);
    free(want);
    free(got);
    free(bc);
}

/* One rank's input is made to carry a failure (its writer's submission lost); every output that
 * the collective computes from it carries a failure naming the cause: every rank's for
 * all-reduce, all-gather and reduce-scatter, and for a broadcast from that rank; a broadcast from
 * a good root leaves every rank readable. f16 with an odd count: the element kernels' path. */
static void test_failure_crosses_ranks(void **state)
{
    fixture *f = *state;
    enum { N = 1001 };
    cubec_comm *c = f->comm[RANKS];
    for (int kind = 0; kind < 5; kind++)
        for (uint32_t bad = 0; bad < RANKS; bad++) {
            cubec_buffer in[RANKS], out[RANKS];
            cubec_stream s[RANKS];
            for (uint32_t r = 0; r < RANKS; r++) {
                s[r] = new_stream(f->d[r]);
                ASSERT_OK(cubec_buffer_create(f->d[r], s[r], N * 4u, &in[r]));
                ASSERT_OK(cubec_buffer_create(f->d[r], s[r], N * 4u, &out[r]));
                ASSERT_OK(uint_launch(f->d[r], s[r], f->produce[r], in[r], NONE, N, 1, r));
                ASSERT_OK(cubec_fill(f->d[r], s[r], out[r], 0, N * 4u, 0));
            }
            taint_by_lost_submission(f->d[bad], s[bad], f->produce[bad], in[bad], N, 1, 0);
            int reaches_all = 1;
            switch (kind) {
            case 0:
                ASSERT_OK(cubec_comm_all_reduce(c, in, s, N, CUBEC_DTYPE_F16, CUBEC_REDUCE_MAX));
                break;
            case 1: ASSERT_OK(cubec_comm_all_gather(c, in, out, s, N, CUBEC_DTYPE_F16)); break;
            case 2:
                ASSERT_OK(
                    cubec_comm_reduce_scatter(c, in, out, s, N, CUBEC_DTYPE_F16, CUBEC_REDUCE_SUM));
                break;
            case 3: ASSERT_OK(cubec_comm_broadcast(c, in, s, N, CUBEC_DTYPE_F16, bad)); break;
            case 4:
                /* From a good root: every rank's buffer is overwritten by good bytes. */
                ASSERT_OK(
                    cubec_comm_broadcast(c, in, s, N / 2 * 2, CUBEC_DTYPE_I32, (bad + 1) % RANKS));
                reaches_all = 0;
                break;
            }
            /* All-gather: the failure lands on the bad rank's shard of every out (read a word
             * within it); the rest reads where the whole result came from every input. */
            uint64_t at = 0, off, cnt;
            shard(RANKS, N, bad, &off, &cnt);
            if (kind == 1) at = (off * 2 + 3) / 4 * 4;
            for (uint32_t r = 0; r < RANKS; r++) {
                cubec_buffer result = kind == 1 || kind == 2 ? out[r] : in[r];
                uint32_t got[1];
                if (reaches_all) {
                    cubec_status st = cubec_read(f->d[r], s[r], result, at, got, sizeof got);
                    if (!st)
                        fail_msg("collective %d with rank %u's input failed: rank %u's result "
                                 "reads as good",
                                 kind, bad, r);
                    ASSERT_ERROR(st, CUBEC_INTERNAL, "injected fault: submit");
                } else {
                    ASSERT_OK(cubec_read(f->d[r], s[r], result, 0, got, sizeof got));
                }
                ASSERT_OK(cubec_buffer_release(f->d[r], in[r]));
                ASSERT_OK(cubec_buffer_release(f->d[r], out[r]));
            }
        }
}

/* Sums of random values, whose bits depend on the order of summation: every rank gets the same
 * bits, close to the exact sum (f32 within 1e-5, f16 within 2^-7 for three values of [-1, 1]). */
static void test_same_bits_on_every_rank(void **state)
{
    fixture *f = *state;
    enum { N = 30001 };
    cubec_comm *c = f->comm[RANKS];
    for (int half = 0; half < 2; half++) {
        const cubec_dtype t = half ? CUBEC_DTYPE_F16 : CUBEC_DTYPE_F32;
        const uint64_t bytes = half ? (N * 2u + 3) / 4 * 4 : N * 4u;
        cubec_buffer b[RANKS];
        cubec_stream s[RANKS];
        double *exact = calloc(N, sizeof(double));
        unsigned char *host = malloc(bytes), *first = malloc(bytes), *got = malloc(bytes);
        srand(25);
        for (uint32_t r = 0; r < RANKS; r++) {
            s[r] = new_stream(f->d[r]);
            memset(host, 0, bytes);
            for (uint32_t i = 0; i < N; i++) {
                /* f16: a random binary16 of [-1, 1] (exponent 5 .. 14 or zero, random mantissa),
                 * its value decoded for the exact sum; f32: a random float of [-1, 1]. */
                if (half) {
                    uint16_t e = (uint16_t)(5 + rand() % 10), m = (uint16_t)(rand() & 0x3ff);
                    uint16_t h = (uint16_t)((rand() & 1) << 15 | e << 10 | m);
                    memcpy(host + 2 * i, &h, 2);
                    double val = ldexp(1.0 + m / 1024.0, e - 15) * ((h >> 15) ? -1 : 1);
                    exact[i] += val;
                } else {
                    float val = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
                    memcpy(host + 4 * i, &val, 4);
                    exact[i] += val;
                }
            }
            ASSERT_OK(cubec_buffer_from(f->d[r], s[r], host, bytes, &b[r]));
        }
        ASSERT_OK(cubec_comm_all_reduce(c, b, s, N, t, CUBEC_REDUCE_SUM));
        for (uint32_t r = 0; r < RANKS; r++) {
            ASSERT_OK(cubec_read(f->d[r], s[r], b[r], 0, r ? got : first, bytes));
            if (r && memcmp(got, first, bytes) != 0)
                fail_msg("dtype %d: rank %u's sums differ from rank 0's", (int)t, r);
            ASSERT_OK(cubec_buffer_release(f->d[r], b[r]));
        }
        for (uint32_t i = 0; i < N; i++) {
            double v;
            if (half) {
                uint16_t h;
                memcpy(&h, first + 2 * i, 2);
                int e = (h >> 10) & 0x1f, m = h & 0x3ff;
                v = (e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp(m / 1024.0, -14)) *
                    ((h >> 15) ? -1 : 1);
            } else {
                float x;
                memcpy(&x, first + 4 * i, 4);
                v = x;
            }
            if (fabs(v - exact[i]) > (half ? 1.0 / 128 : 1e-5))
                fail_msg("dtype %d: element %u is %.8f, the exact sum %.8f", (int)t, i, v,
                         exact[i]);
        }
        free(exact);
        free(host);
        free(first);
        free(got);
    }
}

static void test_info_and_shards(void **state)
{
    fixture *f = *state;
    for (uint32_t n = 1; n <= RANKS; n++) {
        cubec_comm_info info = CUBEC_COMM_INFO_INIT;
        ASSERT_OK(cubec_comm_get_info(f->comm[n], &info));
        assert_int_equal(info.n, n);
        assert_string_equal(info.transport, "ring");
        /* Shards tile the total in rank order, sizes differing by at most one. */
        const uint64_t totals[] = {0, 1, 2, 7, 1000001};
        for (int t = 0; t < 5; t++) {
            uint64_t next = 0;
            for (uint32_t r = 0; r < n; r++) {
                uint64_t off = 99, cnt = 99, want_off, want_cnt;
                ASSERT_OK(cubec_comm_shard(f->comm[n], totals[t], r, &off, &cnt));
                shard(n, totals[t], r, &want_off, &want_cnt);
                assert_int_equal(off, next);
                assert_int_equal(off, want_off);
                assert_int_equal(cnt, want_cnt);
                next += cnt;
            }
            assert_int_equal(next, totals[t]);
        }
    }
    /* A struct declared smaller (an older header) is written only as far as declared. */
    struct {
        cubec_comm_info info;
        uint32_t canary;
    } small = {{.struct_size = 8}, 0};
    memset(small.info.transport, 0x5a, sizeof small.info.transport);
    ASSERT_OK(cubec_comm_get_info(f->comm[2], &small.info));
    assert_int_equal(small.info.n, 2);
    assert_int_equal((unsigned char)small.info.transport[0], 0x5a);
    uint64_t off, cnt;
    cubec_comm_info info = CUBEC_COMM_INFO_INIT;
    ASSERT_ERROR(cubec_comm_get_info(NULL, &info), CUBEC_INVALID_ARGUMENT, "comm is NULL");
    ASSERT_ERROR(cubec_comm_get_info(f->comm[2], NULL), CUBEC_INVALID_ARGUMENT, "out_info is NULL");
    info.struct_size = 0;
    ASSERT_ERROR(cubec_comm_get_info(f->comm[2], &info), CUBEC_INVALID_ARGUMENT, "struct_size");
    info.struct_size = sizeof info + 4;
    ASSERT_ERROR(cubec_comm_get_info(f->comm[2], &info), CUBEC_INVALID_ARGUMENT, "struct_size");
    ASSERT_ERROR(cubec_comm_shard(NULL, 10, 0, &off, &cnt), CUBEC_INVALID_ARGUMENT, "comm is NULL");
    ASSERT_ERROR(cubec_comm_shard(f->comm[2], 10, 2, &off, &cnt), CUBEC_INVALID_ARGUMENT,
                 "rank 2 is not a rank of the communicator (n 2)");
    ASSERT_ERROR(cubec_comm_shard(f->comm[2], 10, 0, NULL, &cnt), CUBEC_INVALID_ARGUMENT,
                 "out_offset is NULL");
    ASSERT_ERROR(cubec_comm_shard(f->comm[2], 10, 0, &off, NULL), CUBEC_INVALID_ARGUMENT,
                 "out_count is NULL");
}

/* Each refusal names its argument and value, and leaves every rank's buffers as they were. */
static void test_refusals_change_nothing(void **state)
{
    fixture *f = *state;
    enum { N = 100 };
    cubec_comm *c = f->comm[RANKS];
    cubec_buffer in[RANKS], out[RANKS], small[RANKS];
    cubec_stream s[RANKS];
    uint32_t data[RANKS][N], got[N];
    for (uint32_t r = 0; r < RANKS; r++) {
        s[r] = new_stream(f->d[r]);
        for (uint32_t i = 0; i < N; i++)
            data[r][i] = i * 7u + r;
        ASSERT_OK(cubec_buffer_from(f->d[r], s[r], data[r], sizeof data[r], &in[r]));
        ASSERT_OK(cubec_buffer_from(f->d[r], s[r], data[r], sizeof data[r], &out[r]));
        ASSERT_OK(cubec_buffer_from(f->d[r], s[r], data[r], 6, &small[r]));
    }
    const cubec_dtype F32 = CUBEC_DTYPE_F32, F16 = CUBEC_DTYPE_F16;
    const cubec_reduce_op SUM = CUBEC_REDUCE_SUM;
    /* NULLs. */
    ASSERT_ERROR(cubec_comm_broadcast(NULL, in, s, N, F32, 0), CUBEC_INVALID_ARGUMENT,
                 "cubec_comm_broadcast: comm is NULL");
    ASSERT_ERROR(cubec_comm_broadcast(c, NULL, s, N, F32, 0), CUBEC_INVALID_ARGUMENT,
                 "buffers is NULL");
    ASSERT_ERROR(cubec_comm_broadcast(c, in, NULL, N, F32, 0), CUBEC_INVALID_ARGUMENT,
                 "streams is NULL");
    ASSERT_ERROR(cubec_comm_all_gather(NULL, in, out, s, N, F32), CUBEC_INVALID_ARGUMENT,
                 "cubec_comm_all_gather: comm is NULL");
    ASSERT_ERROR(cubec_comm_all_gather(c, NULL, out, s, N, F32), CUBEC_INVALID_ARGUMENT,
                 "in is NULL");
    ASSERT_ERROR(cubec_comm_all_gather(c, in, NULL, s, N, F32), CUBEC_INVALID_ARGUMENT,
                 "out is NULL");
    ASSERT_ERROR(cubec_comm_reduce_scatter(c, in, out, NULL, N, F32, SUM), CUBEC_INVALID_ARGUMENT,
                 "cubec_comm_reduce_scatter: streams is NULL");
    ASSERT_ERROR(cubec_comm_reduce_scatter(c, in, NULL, s, N, F32, SUM), CUBEC_INVALID_ARGUMENT,
                 "out is NULL");
    /* dtype, op, root, counts past the limit. */
    ASSERT_ERROR(cubec_comm_broadcast(c, in, s, N, (cubec_dtype)0, 0), CUBEC_INVALID_ARGUMENT,
                 "dtype 0 is not");
    ASSERT_ERROR(cubec_comm_all_gather(c, in, out, s, N, (cubec_dtype)4), CUBEC_INVALID_ARGUMENT,
                 "dtype 4 is not");
    ASSERT_ERROR(cubec_comm_reduce_scatter(c, in, out, s, N, F32, (cubec_reduce_op)0),
                 CUBEC_INVALID_ARGUMENT, "op 0 is not");
    ASSERT_ERROR(cubec_comm_all_reduce(c, in, s, N, F16, (cubec_reduce_op)3),
                 CUBEC_INVALID_ARGUMENT, "op 3 is not");
    ASSERT_ERROR(cubec_comm_broadcast(c, in, s, N, F32, RANKS), CUBEC_INVALID_ARGUMENT,
                 "root 3 is not a rank of the communicator (n 3)");
    ASSERT_ERROR(cubec_comm_all_reduce(c, in, s, (UINT64_C(1) << 31) + 1, F32, SUM),
                 CUBEC_INVALID_ARGUMENT, "count 2147483649 is past");
    ASSERT_ERROR(cubec_comm_all_gather(c, in, out, s, UINT64_MAX, F32), CUBEC_INVALID_ARGUMENT,
                 "total 18446744073709551615 is past");
    /* Short buffers: a rank's whole buffer, an f16 count whose last word the buffer lacks, the
     * shard of all-gather's in and reduce-scatter's out, reduce-scatter's in. */
    ASSERT_ERROR(cubec_comm_broadcast(c, in, s, N + 1, F32, 0), CUBEC_INVALID_ARGUMENT,
                 "buffers[0] holds 400 bytes, fewer than the 404");
    ASSERT_ERROR(cubec_comm_all_reduce(c, small, s, 3, F16, SUM), CUBEC_INVALID_ARGUMENT,
                 "buffers[0] holds 6 bytes, fewer than the 8 that 3 elements of dtype 2 need");
    cubec_buffer short_in[RANKS] = {in[0], in[1], small[2]};
    /* Shards of 3 * N: N elements each; rank 2's in holds one and a half. */
    ASSERT_ERROR(cubec_comm_all_gather(c, short_in, out, s, 3 * N, F32), CUBEC_INVALID_ARGUMENT,
                 "out[0] holds 400 bytes, fewer than the 1200");
    cubec_buffer big_out[RANKS];
    for (uint32_t r = 0; r < RANKS; r++)
        ASSERT_OK(cubec_buffer_create(f->d[r], s[r], 3 * N * 4u, &big_out[r]));
    ASSERT_ERROR(cubec_comm_all_gather(c, short_in, big_out, s, 3 * N, F32), CUBEC_INVALID_ARGUMENT,
                 "in[2] holds 6 bytes, fewer than the 400");
    cubec_buffer short_out[RANKS] = {out[0], small[1], out[2]};
    ASSERT_ERROR(cubec_comm_reduce_scatter(c, in, short_out, s, 6, F32, SUM),
                 CUBEC_INVALID_ARGUMENT, "out[1] holds 6 bytes, fewer than the 8");
    ASSERT_ERROR(cubec_comm_reduce_scatter(c, in, out, s, N + 1, F32, SUM), CUBEC_INVALID_ARGUMENT,
                 "in[0] holds 400 bytes, fewer than the 404");
    /* A rank's buffer or stream of another device; in and out one buffer. */
    cubec_buffer swapped[RANKS] = {in[0], in[2], in[1]};
    ASSERT_ERROR(cubec_comm_broadcast(c, swapped, s, N, F32, 0), CUBEC_INVALID_ARGUMENT,
                 "buffers[1]");
    cubec_buffer swapped_out[RANKS] = {out[0], out[2], out[1]};
    ASSERT_ERROR(cubec_comm_all_gather(c, in, swapped_out, s, N, F32), CUBEC_INVALID_ARGUMENT,
                 "out[1]");
    cubec_stream swapped_s[RANKS] = {s[0], s[2], s[1]};
    ASSERT_ERROR(cubec_comm_reduce_scatter(c, in, out, swapped_s, N, F32, SUM),
                 CUBEC_INVALID_ARGUMENT, "streams[1]");
    ASSERT_ERROR(cubec_comm_all_gather(c, in, in, s, N, F32), CUBEC_INVALID_ARGUMENT,
                 "in[0] and out[0] are one buffer");
    ASSERT_ERROR(cubec_comm_reduce_scatter(c, big_out, big_out, s, N, F16, SUM),
                 CUBEC_INVALID_ARGUMENT, "in[0] and out[0] are one buffer");
    /* A stream recording a graph: a capture cannot hold another device's copies. */
    ASSERT_OK(cubec_graph_prepare(f->d[1], s[1]));
    ASSERT_OK(cubec_graph_begin(f->d[1], s[1]));
    ASSERT_ERROR(cubec_comm_all_reduce(c, in, s, N, F32, SUM), CUBEC_GRAPH_STATE, "streams[1]");
    ASSERT_ERROR(cubec_comm_all_gather(c, in, out, s, N, F32), CUBEC_GRAPH_STATE, "streams[1]");
    cubec_graph g;
    ASSERT_OK(cubec_graph_end(f->d[1], s[1], &g));
    ASSERT_OK(cubec_graph_destroy(f->d[1], s[1], g));
    for (uint32_t r = 0; r < RANKS; r++) {
        ASSERT_OK(cubec_read(f->d[r], s[r], in[r], 0, got, sizeof got));
        assert_memory_equal(got, data[r], sizeof got);
        ASSERT_OK(cubec_read(f->d[r], s[r], out[r], 0, got, sizeof got));
        assert_memory_equal(got, data[r], sizeof got);
        ASSERT_OK(cubec_buffer_release(f->d[r], in[r]));
        ASSERT_OK(cubec_buffer_release(f->d[r], out[r]));
        ASSERT_OK(cubec_buffer_release(f->d[r], small[r]));
        ASSERT_OK(cubec_buffer_release(f->d[r], big_out[r]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chained_and_concurrent),
        cmocka_unit_test(test_failure_crosses_ranks),
        cmocka_unit_test(test_same_bits_on_every_rank),
        cmocka_unit_test(test_info_and_shards),
        cmocka_unit_test(test_refusals_change_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
