/* cubec_mpi's collectives (include/cubec/cubec_mpi.h, docs/mpi.md), run by ctest under
 * `mpirun -np 2` and `-np 4` on lavapipe with the validation layer on, one device per rank.
 *
 * Every rank's input is a known function of (rank, index), so each rank computes the CPU
 * reference of every collective itself and compares its output with it, element by element:
 *  - every collective, dtype (f32, f16, i32) and op (sum, max), at sizes of 1 element, fewer
 *    elements than ranks, a count not divisible by the rank count, and one spanning many chunks
 *    (a communicator with 256-byte chunks) and several default 1 MiB chunks;
 *  - f16 sums that fall between two f16 values, some exactly halfway: rounded once, to nearest
 *    even;
 *  - ordering: the collective reads a fill queued on its stream before it, and a copy queued
 *    after it sees its result;
 *  - failures: a failure written into one rank's input makes every rank's output carry a failure
 *    naming that rank; a clean call afterwards gives clean results again;
 *  - bad arguments, on one rank or on all (count, dtype, op, root, a buffer too small), refused on
 *    every rank by name, after which the ranks are still in step. */
#include "test_util.h"

#include <cubec/cubec_mpi.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cubec_device *g_dev;
static cubec_mpi_comm *g_small; /* 256-byte chunks: sizes span many chunks */
static cubec_mpi_comm *g_large; /* the default chunk (1 MiB) */
static int g_rank, g_size;

#define SMALL_CHUNK 256u

static const cubec_mpi_dtype DTYPES[3] = {CUBEC_MPI_F32, CUBEC_MPI_F16, CUBEC_MPI_I32};
static const char *const DTYPE_NAMES[4] = {"", "f32", "f16", "i32"};

/* f16 of small integers is exact (|v| <= 2048), so every reference below is exact too. */
static uint16_t half_of_int(int v)
{
    if (v == 0) return 0;
    uint16_t sign = v < 0 ? 0x8000u : 0;
    unsigned a = (unsigned)(v < 0 ? -v : v);
    int e = 0;
    while ((a >> e) > 1)
        e++;
    unsigned mant = (a << (10 - e)) & 0x3ffu; /* exact for a < 2048 */
    return (uint16_t)(sign | ((unsigned)(e + 15) << 10) | mant);
}

/* The input value of `rank` at index i: small integers that differ by rank and index, some
 * negative, so that sum and max each depend on every rank. */
static int input_value(int rank, uint64_t i)
{
    return (int)((i * 7u + (uint64_t)rank * 13u + (i % 5u) * (uint64_t)rank) % 61u) - 30;
}

static uint32_t esize(cubec_mpi_dtype t)
{
    return cubec_mpi_dtype_size(t);
}

/* Element i of `dtype` holding the integer v, into dst. */
static void store(void *dst, cubec_mpi_dtype t, uint64_t i, int v)
{
    if (t == CUBEC_MPI_F32) ((float *)dst)[i] = (float)v;
    if (t == CUBEC_MPI_F16) ((uint16_t *)dst)[i] = half_of_int(v);
    if (t == CUBEC_MPI_I32) ((int32_t *)dst)[i] = v;
}

/* A rank's input: `n` elements starting at index `first`. */
static void *make_input(int rank, cubec_mpi_dtype t, uint64_t first, uint64_t n)
{
    unsigned char *p = malloc(n * esize(t) + 4);
    assert_non_null(p);
    for (uint64_t i = 0; i < n; i++)
        store(p, t, i, input_value(rank, first + i));
    return p;
}

static int reduce_ref(cubec_mpi_op op, uint64_t i)
{
    int acc = input_value(0, i);
    for (int r = 1; r < g_size; r++) {
        const int v = input_value(r, i);
        acc = op == CUBEC_MPI_SUM ? acc + v : (v > acc ? v : acc);
    }
    return acc;
}

static cubec_buffer buffer_with(const void *data, uint64_t bytes)
{
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_create(g_dev, CUBEC_STREAM_CURRENT, bytes, &b));
    if (bytes) ASSERT_OK(cubec_write(g_dev, CUBEC_STREAM_CURRENT, b, 0, data, bytes));
    return b;
}

/* Reads `n` elements of `b` and compares them with the expected integers (ref(i)). */
static void expect_elems(cubec_buffer b, cubec_mpi_dtype t, uint64_t n, const int *ref,
                         const char *what)
{
    unsigned char *got = malloc(n * esize(t) + 4), *want = malloc(n * esize(t) + 4);
    assert_non_null(got);
    assert_non_null(want);
    if (n) ASSERT_OK(cubec_read(g_dev, CUBEC_STREAM_CURRENT, b, 0, got, n * esize(t)));
    for (uint64_t i = 0; i < n; i++)
        store(want, t, i, ref[i]);
    for (uint64_t i = 0; i < n; i++) {
        if (memcmp(got + i * esize(t), want + i * esize(t), esize(t)) != 0)
            fail_msg("rank %d: %s (%s, %" PRIu64 " elements): element %" PRIu64
                     " differs from the CPU reference %d",
                     g_rank, what, DTYPE_NAMES[t], n, i, ref[i]);
    }
    free(got);
    free(want);
}

/* Sizes: one element, fewer than the ranks, not divisible by them, many small chunks. */
static const uint64_t SIZES[] = {1, 3, 7, 1001};

static void allreduce_case(cubec_mpi_comm *comm, cubec_mpi_dtype t, cubec_mpi_op op, uint64_t n,
                           int in_place)
{
    void *host = make_input(g_rank, t, 0, n);
    cubec_buffer in = buffer_with(host, n * esize(t)), out = in;
    if (!in_place) ASSERT_OK(cubec_buffer_create(g_dev, CUBEC_STREAM_CURRENT, n * esize(t), &out));
    ASSERT_OK(cubec_mpi_allreduce(comm, CUBEC_STREAM_CURRENT, in, out, n, t, op));
    int *ref = malloc(n * sizeof *ref);
    assert_non_null(ref);
    for (uint64_t i = 0; i < n; i++)
        ref[i] = reduce_ref(op, i);
    char what[64];
    snprintf(what, sizeof what, "allreduce %s%s", op == CUBEC_MPI_SUM ? "sum" : "max",
             in_place ? " in place" : "");
    expect_elems(out, t, n, ref, what);
    free(ref);
    free(host);
    if (!in_place) ASSERT_OK(cubec_buffer_release(g_dev, out));
    ASSERT_OK(cubec_buffer_release(g_dev, in));
}

static void test_allreduce(void **state)
{
    (void)state;
    for (int d = 0; d < 3; d++)
        for (int op = CUBEC_MPI_SUM; op <= CUBEC_MPI_MAX; op++)
            for (size_t s = 0; s < sizeof SIZES / sizeof *SIZES; s++)
                allreduce_case(g_small, DTYPES[d], (cubec_mpi_op)op, SIZES[s], (int)s == 2);
}

/* 600000 f32 elements: three of the default 1 MiB chunks, the last one partial. */
static void test_allreduce_default_chunks(void **state)
{
    (void)state;
    allreduce_case(g_large, CUBEC_MPI_F32, CUBEC_MPI_SUM, 600000, 0);
    allreduce_case(g_large, CUBEC_MPI_F16, CUBEC_MPI_MAX, 600000, 1);
}

static void test_broadcast(void **state)
{
    (void)state;
    const int root = g_size - 1;
    for (int d = 0; d < 3; d++) {
        for (size_t s = 0; s < sizeof SIZES / sizeof *SIZES; s++) {
            const cubec_mpi_dtype t = DTYPES[d];
            const uint64_t n = SIZES[s];
            /* Every rank starts from its own values; the root's must win. */
            void *host = make_input(g_rank, t, 0, n);
            cubec_buffer b = buffer_with(host, n * esize(t));
            ASSERT_OK(cubec_mpi_broadcast(g_small, CUBEC_STREAM_CURRENT, b, n, t, root));
            int *ref = malloc(n * sizeof *ref);
            assert_non_null(ref);
            for (uint64_t i = 0; i < n; i++)
                ref[i] = input_value(root, i);
            expect_elems(b, t, n, ref, "broadcast");
            free(ref);
            free(host);
            ASSERT_OK(cubec_buffer_release(g_dev, b));
        }
    }
}

static void test_allgather(void **state)
{
    (void)state;
    for (int d = 0; d < 3; d++) {
        for (size_t s = 0; s < sizeof SIZES / sizeof *SIZES; s++) {
            const cubec_mpi_dtype t = DTYPES[d];
            const uint64_t total = SIZES[s];
            uint64_t off, cnt;
            ASSERT_OK(cubec_mpi_shard(g_small, total, g_rank, &off, &cnt));
            /* Rank r's shard holds r's values at their global indices. */
            void *host = make_input(g_rank, t, off, cnt);
            cubec_buffer in = buffer_with(host, cnt * esize(t)), out;
            ASSERT_OK(cubec_buffer_create(g_dev, CUBEC_STREAM_CURRENT, total * esize(t), &out));
            ASSERT_OK(cubec_mpi_allgather(g_small, CUBEC_STREAM_CURRENT, in, out, total, t));
            int *ref = malloc(total * sizeof *ref);
            assert_non_null(ref);
            for (int r = 0; r < g_size; r++) {
                uint64_t ro, rc;
                ASSERT_OK(cubec_mpi_shard(g_small, total, r, &ro, &rc));
                for (uint64_t i = 0; i < rc; i++)
                    ref[ro + i] = input_value(r, ro + i);
            }
            expect_elems(out, t, total, ref, "allgather");
            free(ref);
            free(host);
            ASSERT_OK(cubec_buffer_release(g_dev, out));
            ASSERT_OK(cubec_buffer_release(g_dev, in));
        }
    }
}

static void test_reduce_scatter(void **state)
{
    (void)state;
    for (int d = 0; d < 3; d++) {
        for (int op = CUBEC_MPI_SUM; op <= CUBEC_MPI_MAX; op++) {
            for (size_t s = 0; s < sizeof SIZES / sizeof *SIZES; s++) {
                const cubec_mpi_dtype t = DTYPES[d];
                const uint64_t total = SIZES[s];
                uint64_t off, cnt;
                ASSERT_OK(cubec_mpi_shard(g_small, total, g_rank, &off, &cnt));
                void *host = make_input(g_rank, t, 0, total);
                cubec_buffer in = buffer_with(host, total * esize(t)), out;
                ASSERT_OK(cubec_buffer_create(g_dev, CUBEC_STREAM_CURRENT, cnt * esize(t), &out));
                ASSERT_OK(cubec_mpi_reduce_scatter(g_small, CUBEC_STREAM_CURRENT, in, out, total, t,
                                                   (cubec_mpi_op)op));
                int *ref = malloc((cnt + 1) * sizeof *ref);
                assert_non_null(ref);
                for (uint64_t i = 0; i < cnt; i++)
                    ref[i] = reduce_ref((cubec_mpi_op)op, off + i);
                expect_elems(out, t, cnt, ref, "reduce_scatter");
                free(ref);
                free(host);
                ASSERT_OK(cubec_buffer_release(g_dev, out));
                ASSERT_OK(cubec_buffer_release(g_dev, in));
            }
        }
    }
}

/* f16 sums that need rounding: rank r's element i is 1 + m / 1024 with m = (i * 37 + r * 11) % 1024
 * (exact in f16), so the sum lies in [size, 2 * size) where f16's step is 2^-9 (2 ranks) or 2^-8
 * (4 ranks): many sums fall between two f16 values, some exactly halfway. cubec_mpi sums in f32
 * (exact here) and rounds once, to nearest, ties to even; the reference does the same in double
 * with nearbyint (the default rounding mode rounds ties to even). */
static float half_value(uint16_t h)
{
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff; /* normal numbers only, all this test makes */
    return ldexpf(1.0f + (float)m / 1024.0f, e - 15) * ((h & 0x8000) ? -1.0f : 1.0f);
}

static void test_f16_sum_rounds_once_to_nearest_even(void **state)
{
    (void)state;
    const uint64_t n = 4096;
    uint16_t *host = malloc(n * 2), *got = malloc(n * 2);
    assert_non_null(host);
    assert_non_null(got);
    for (uint64_t i = 0; i < n; i++)
        host[i] = (uint16_t)((15u << 10) | ((i * 37u + (uint64_t)g_rank * 11u) % 1024u));
    cubec_buffer b = buffer_with(host, n * 2);
    ASSERT_OK(
        cubec_mpi_allreduce(g_small, CUBEC_STREAM_CURRENT, b, b, n, CUBEC_MPI_F16, CUBEC_MPI_SUM));
    ASSERT_OK(cubec_read(g_dev, CUBEC_STREAM_CURRENT, b, 0, got, n * 2));
    int ties = 0;
    for (uint64_t i = 0; i < n; i++) {
        double sum = 0.0;
        for (int r = 0; r < g_size; r++)
            sum += 1.0 + (double)((i * 37u + (uint64_t)r * 11u) % 1024u) / 1024.0;
        int e = 0;
        (void)frexp(sum, &e); /* sum = f * 2^e, f in [0.5, 1): the f16 step is 2^(e - 11) */
        const double units = sum / ldexp(1.0, e - 11);
        if (units - floor(units) == 0.5) ties++;
        const double want = nearbyint(units) * ldexp(1.0, e - 11);
        if ((double)half_value(got[i]) != want)
            fail_msg("rank %d: f16 sum %" PRIu64 " is %.6f, the nearest f16 (ties to even) of "
                     "%.6f is %.6f",
                     g_rank, i, (double)half_value(got[i]), sum, want);
    }
    /* The sizes chosen make some sums exact ties, so ties to even is really tested. */
    assert_true(ties > 0);
    free(host);
    free(got);
    ASSERT_OK(cubec_buffer_release(g_dev, b));
}

/* The collective reads what was queued before it on its stream (a fill of rank+1 in every i32)
 * and work queued after it (a copy) sees its result. */
static void test_ordering_on_the_stream(void **state)
{
    (void)state;
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(g_dev, &s));
    const uint64_t n = 777;
    cubec_buffer in, out, after;
    ASSERT_OK(cubec_buffer_create(g_dev, s, n * 4, &in));
    ASSERT_OK(cubec_buffer_create(g_dev, s, n * 4, &out));
    ASSERT_OK(cubec_buffer_create(g_dev, s, n * 4, &after));
    ASSERT_OK(cubec_fill(g_dev, s, in, 0, n * 4, (uint32_t)(g_rank + 1)));
    ASSERT_OK(cubec_mpi_allreduce(g_small, s, in, out, n, CUBEC_MPI_I32, CUBEC_MPI_SUM));
    ASSERT_OK(cubec_copy(g_dev, s, out, 0, after, 0, n * 4));
    int32_t *got = malloc(n * 4);
    assert_non_null(got);
    ASSERT_OK(cubec_read(g_dev, s, after, 0, got, n * 4));
    const int32_t want = g_size * (g_size + 1) / 2;
    for (uint64_t i = 0; i < n; i++)
        if (got[i] != want)
            fail_msg("rank %d: element %" PRIu64 " after the allreduce is %d, not %d", g_rank, i,
                     got[i], want);
    free(got);
    ASSERT_OK(cubec_buffer_release(g_dev, after));
    ASSERT_OK(cubec_buffer_release(g_dev, out));
    ASSERT_OK(cubec_buffer_release(g_dev, in));
}

/* A failure on the last rank's input reaches every rank's output of each collective. */
static void test_failure_reaches_every_rank(void **state)
{
    (void)state;
    const int bad = g_size - 1;
    const uint64_t n = 301;
    char needle[64];
    snprintf(needle, sizeof needle, "rank %d's input carried a failure", bad);
    void *host = make_input(g_rank, CUBEC_MPI_F32, 0, n);
    cubec_buffer in = buffer_with(host, n * 4), out;
    ASSERT_OK(cubec_buffer_create(g_dev, CUBEC_STREAM_CURRENT, n * 4, &out));
    /* The failure covers only a later chunk of the input: the whole output still fails. */
    if (g_rank == bad)
        ASSERT_OK(cubec_write_failure(g_dev, CUBEC_STREAM_CURRENT, in, 1000, 8, CUBEC_INTERNAL,
                                      "the producer of this input failed"));
    float junk = 0;
    ASSERT_OK(cubec_mpi_allreduce(g_small, CUBEC_STREAM_CURRENT, in, out, n, CUBEC_MPI_F32,
                                  CUBEC_MPI_SUM));
    ASSERT_ERROR(cubec_read(g_dev, CUBEC_STREAM_CURRENT, out, 0, &junk, 4), CUBEC_INTERNAL, needle);
    if (g_rank == bad)
        ASSERT_ERROR(cubec_read(g_dev, CUBEC_STREAM_CURRENT, out, 0, &junk, 4), CUBEC_INTERNAL,
                     "the producer of this input failed");

    ASSERT_OK(cubec_mpi_allgather(g_small, CUBEC_STREAM_CURRENT, in, out, (uint64_t)g_size,
                                  CUBEC_MPI_F32));
    if (g_rank == bad) /* the shard of allgather is element `rank`: clean; fail its start */
        ASSERT_OK(cubec_write_failure(g_dev, CUBEC_STREAM_CURRENT, in, 0, 4, CUBEC_INTERNAL,
                                      "the producer of this input failed"));
    ASSERT_OK(cubec_mpi_allgather(g_small, CUBEC_STREAM_CURRENT, in, out, (uint64_t)g_size,
                                  CUBEC_MPI_F32));
    ASSERT_ERROR(cubec_read(g_dev, CUBEC_STREAM_CURRENT, out, 0, &junk, 4), CUBEC_INTERNAL, needle);

    /* Broadcast: only the root's input counts. */
    ASSERT_OK(cubec_mpi_broadcast(g_small, CUBEC_STREAM_CURRENT, in, n, CUBEC_MPI_F32, bad));
    ASSERT_ERROR(cubec_read(g_dev, CUBEC_STREAM_CURRENT, in, 0, &junk, 4), CUBEC_INTERNAL,
                 g_rank == bad ? "the producer" : needle);

    /* Written again, the input gives a clean result on every rank. */
    ASSERT_OK(cubec_write(g_dev, CUBEC_STREAM_CURRENT, in, 0, host, n * 4));
    ASSERT_OK(cubec_mpi_reduce_scatter(g_small, CUBEC_STREAM_CURRENT, in, out, n, CUBEC_MPI_F32,
                                       CUBEC_MPI_MAX));
    uint64_t off, cnt;
    ASSERT_OK(cubec_mpi_shard(g_small, n, g_rank, &off, &cnt));
    int *ref = malloc(n * sizeof *ref);
    assert_non_null(ref);
    for (uint64_t i = 0; i < cnt; i++)
        ref[i] = reduce_ref(CUBEC_MPI_MAX, off + i);
    expect_elems(out, CUBEC_MPI_F32, cnt, ref, "reduce_scatter after the failure");
    free(ref);
    free(host);
    ASSERT_OK(cubec_buffer_release(g_dev, out));
    ASSERT_OK(cubec_buffer_release(g_dev, in));
}

static void test_bad_arguments_refused_on_every_rank(void **state)
{
    (void)state;
    const uint64_t n = 64;
    float host[64];
    for (int i = 0; i < 64; i++)
        host[i] = (float)(i + g_rank);
    cubec_buffer in = buffer_with(host, sizeof host), small;
    ASSERT_OK(cubec_buffer_create(g_dev, CUBEC_STREAM_CURRENT, 16, &small));
    const cubec_stream s = CUBEC_STREAM_CURRENT;

    /* Rank 0 passes another count: every rank refuses, naming the count. */
    ASSERT_ERROR(cubec_mpi_allreduce(g_small, s, in, in, g_rank == 0 ? n - 1 : n, CUBEC_MPI_F32,
                                     CUBEC_MPI_SUM),
                 CUBEC_INVALID_ARGUMENT, "count differs between the ranks");
    ASSERT_ERROR(cubec_mpi_allreduce(g_small, s, in, in, n, (cubec_mpi_dtype)9, CUBEC_MPI_SUM),
                 CUBEC_INVALID_ARGUMENT, "dtype = 9 is not a cubec_mpi_dtype");
    ASSERT_ERROR(cubec_mpi_reduce_scatter(g_small, s, in, in, n, CUBEC_MPI_F32, (cubec_mpi_op)7),
                 CUBEC_INVALID_ARGUMENT, "op = 7 is not a cubec_mpi_op");
    ASSERT_ERROR(cubec_mpi_broadcast(g_small, s, in, n, CUBEC_MPI_F32, g_size),
                 CUBEC_INVALID_ARGUMENT, "root");
    /* The last rank's output is too small: it names the buffer, the others name that rank. */
    char other[64];
    snprintf(other, sizeof other, "rank %d refused its arguments", g_size - 1);
    ASSERT_ERROR(cubec_mpi_allreduce(g_small, s, in, g_rank == g_size - 1 ? small : in, n,
                                     CUBEC_MPI_F32, CUBEC_MPI_SUM),
                 CUBEC_INVALID_ARGUMENT, g_rank == g_size - 1 ? "out holds 16 bytes" : other);
    ASSERT_ERROR(cubec_mpi_allreduce(g_small, s, (cubec_buffer){0x1234}, in, n, CUBEC_MPI_F32,
                                     CUBEC_MPI_SUM),
                 CUBEC_INVALID_ARGUMENT, "cubec_mpi_allreduce: in");
    ASSERT_ERROR(cubec_mpi_allreduce(NULL, s, in, in, n, CUBEC_MPI_F32, CUBEC_MPI_SUM),
                 CUBEC_INVALID_ARGUMENT, "comm is NULL");
    cubec_mpi_comm_desc desc = CUBEC_MPI_COMM_DESC_INIT;
    desc.chunk_bytes = 6;
    cubec_mpi_comm *c = NULL;
    ASSERT_ERROR(cubec_mpi_comm_create(g_dev, MPI_COMM_WORLD, &desc, &c), CUBEC_INVALID_ARGUMENT,
                 "chunk_bytes = 6");
    assert_null(c);

    /* Nothing was written, and the ranks are still in step: a real call works. */
    float got[64];
    ASSERT_OK(cubec_read(g_dev, s, in, 0, got, sizeof got));
    assert_memory_equal(got, host, sizeof got);
    ASSERT_OK(cubec_mpi_allreduce(g_small, s, in, in, n, CUBEC_MPI_F32, CUBEC_MPI_SUM));
    ASSERT_OK(cubec_read(g_dev, s, in, 0, got, sizeof got));
    for (int i = 0; i < 64; i++) {
        const float want = (float)(g_size * i + g_size * (g_size - 1) / 2);
        if (got[i] != want) fail_msg("rank %d: element %d is %g, not %g", g_rank, i, got[i], want);
    }
    ASSERT_OK(cubec_buffer_release(g_dev, small));
    ASSERT_OK(cubec_buffer_release(g_dev, in));
}

static void test_info(void **state)
{
    (void)state;
    cubec_mpi_comm_info info = CUBEC_MPI_COMM_INFO_INIT;
    ASSERT_OK(cubec_mpi_comm_get_info(g_small, &info));
    assert_int_equal(info.rank, g_rank);
    assert_int_equal(info.size, g_size);
    assert_int_equal(info.chunk_bytes, SMALL_CHUNK);
    assert_true(info.cuda_aware >= -1 && info.cuda_aware <= 1);
    /* Three slots, pinned in and out, each a chunk per rank. */
    assert_int_equal(info.staging_bytes, 3ull * 2 * SMALL_CHUNK * (uint64_t)g_size);
    if (g_rank == 0)
        printf("cubec_mpi: %d ranks, MPIX_Query_cuda_support() = %d (-1: no such query)\n", g_size,
               info.cuda_aware);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    g_dev = test_device_open();
    cubec_mpi_comm_desc desc = CUBEC_MPI_COMM_DESC_INIT;
    desc.chunk_bytes = SMALL_CHUNK;
    cubec_status st = cubec_mpi_comm_create(g_dev, MPI_COMM_WORLD, &desc, &g_small);
    if (!st) st = cubec_mpi_comm_create(g_dev, MPI_COMM_WORLD, NULL, &g_large);
    if (st) {
        fprintf(stderr, "rank %d: %s\n", g_rank, cubec_status_message(st));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_allreduce),
        cmocka_unit_test(test_allreduce_default_chunks),
        cmocka_unit_test(test_broadcast),
        cmocka_unit_test(test_allgather),
        cmocka_unit_test(test_reduce_scatter),
        cmocka_unit_test(test_f16_sum_rounds_once_to_nearest_even),
        cmocka_unit_test(test_ordering_on_the_stream),
        cmocka_unit_test(test_failure_reaches_every_rank),
        cmocka_unit_test(test_bad_arguments_refused_on_every_rank),
    };
    /* Only rank 0 prints cmocka's report; every rank runs and checks every test. */
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    cubec_mpi_comm_destroy(g_large);
    cubec_mpi_comm_destroy(g_small);
    test_device_close(g_dev);
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
