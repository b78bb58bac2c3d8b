/* cubec_comm_all_reduce over two and three opens of the one lavapipe device (each open acts as a
 * device of its own): sum and max of f32 and i32 for counts that are not multiples of the rank
 * count or of a workgroup, checked against a CPU reduction of each rank's known input; ordering
 * after a kernel that writes each rank's input and before one that reads the result, on each
 * rank's stream, with no sync between; a failure of one rank's input reaching every rank; and
 * refused arguments that change nothing. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* Rank r's input word i: small integers for f32 (sums exact in any order), words over the whole
 * range for i32 (sums wrap as the GPU's do, max sees negatives). */
static uint32_t input_word(cubec_dtype dtype, uint32_t r, uint32_t i)
{
    if (dtype == CUBEC_DTYPE_F32) {
        float v = (float)((int)((i * 7u + r * 13u) % 101u) - 50);
        uint32_t w;
        memcpy(&w, &v, 4);
        return w;
    }
    return i * 2654435761u + r * 0x9e3779b9u;
}

static uint32_t reduce_word(cubec_dtype dtype, cubec_reduce_op op, uint32_t a, uint32_t b)
{
    if (dtype == CUBEC_DTYPE_F32) {
        float x, y;
        memcpy(&x, &a, 4);
        memcpy(&y, &b, 4);
        float z = op == CUBEC_REDUCE_SUM ? x + y : (x > y ? x : y);
        uint32_t w;
        memcpy(&w, &z, 4);
        return w;
    }
    if (op == CUBEC_REDUCE_SUM) return a + b;
    return (int32_t)a > (int32_t)b ? a : b;
}

static void all_reduce_case(fixture *f, uint32_t n, uint32_t count, cubec_dtype dtype,
                            cubec_reduce_op op)
{
    cubec_buffer buf[RANKS];
    cubec_stream s[RANKS];
    uint32_t *in = malloc((size_t)count * 4), *want = malloc((size_t)count * 4);
    uint32_t *got = malloc((size_t)count * 4);
    for (uint32_t r = 0; r < n; r++) {
        s[r] = new_stream(f->d[r]);
        for (uint32_t i = 0; i < count; i++) {
            in[i] = input_word(dtype, r, i);
            want[i] = r ? reduce_word(dtype, op, want[i], in[i]) : in[i];
        }
        ASSERT_OK(cubec_buffer_from(f->d[r], s[r], in, (uint64_t)count * 4, &buf[r]));
    }
    ASSERT_OK(cubec_comm_all_reduce(f->comm[n], buf, s, count, dtype, op));
    for (uint32_t r = 0; r < n; r++) {
        ASSERT_OK(cubec_read(f->d[r], s[r], buf[r], 0, got, (uint64_t)count * 4));
        for (uint32_t i = 0; i < count; i++)
            if (got[i] != want[i])
                fail_msg("%u ranks, count %u, dtype %d, op %d: rank %u word %u is 0x%08x, want "
                         "0x%08x",
                         n, count, (int)dtype, (int)op, r, i, got[i], want[i]);
        ASSERT_OK(cubec_buffer_release(f->d[r], buf[r]));
    }
    free(in);
    free(want);
    free(got);
}

static void sweep(fixture *f, uint32_t n)
{
    static const uint32_t counts[] = {1, 7, 1000, 65537};
    static const cubec_dtype dtypes[] = {CUBEC_DTYPE_F32, CUBEC_DTYPE_I32};
    static const cubec_reduce_op ops[] = {CUBEC_REDUCE_SUM, CUBEC_REDUCE_MAX};
    for (int c = 0; c < 4; c++)
        for (int t = 0; t < 2; t++)
            for (int o = 0; o < 2; o++)
                all_reduce_case(f, n, counts[c], dtypes[t], ops[o]);
}

static void test_two_ranks(void **state)
{
    sweep(*state, 2);
}
static void test_three_ranks(void **state)
{
    sweep(*state, 3);
}

/* One rank: the buffer is its own reduction. */
static void test_one_rank_leaves_the_buffer(void **state)
{
    fixture *f = *state;
    all_reduce_case(f, 1, 1000, CUBEC_DTYPE_I32, CUBEC_REDUCE_SUM);
}

/* A kernel writes each rank's input just before, another reads the result just after, on each
 * rank's stream with no sync between: the result is consume(sum over ranks of produce). */
static void test_ordered_on_the_streams(void **state)
{
    fixture *f = *state;
    enum { N = 70001 };
    cubec_buffer x[RANKS], y[RANKS];
    cubec_stream s[RANKS];
    for (uint32_t r = 0; r < RANKS; r++) {
        s[r] = new_stream(f->d[r]);
        ASSERT_OK(cubec_buffer_create(f->d[r], s[r], N * 4u, &x[r]));
        ASSERT_OK(cubec_buffer_create(f->d[r], s[r], N * 4u, &y[r]));
        ASSERT_OK(cubec_fill(f->d[r], s[r], x[r], 0, N * 4u, 0xdeadbeef));
        ASSERT_OK(uint_launch(f->d[r], s[r], f->produce[r], x[r], NONE, N, 3 + r, 11 * r));
    }
    ASSERT_OK(cubec_comm_all_reduce(f->comm[RANKS], x, s, N, CUBEC_DTYPE_I32, CUBEC_REDUCE_SUM));
    for (uint32_t r = 0; r < RANKS; r++)
        ASSERT_OK(uint_launch(f->d[r], s[r], f->consume[r], x[r], y[r], N, 5, 1 + r));
    uint32_t *sum = calloc(N, 4), *part = malloc(N * 4u), *want = malloc(N * 4u);
    uint32_t *got = malloc(N * 4u);
    for (uint32_t r = 0; r < RANKS; r++) {
        cpu_produce(part, N, 3 + r, 11 * r);
        for (uint32_t i = 0; i < N; i++)
            sum[i] += part[i];
    }
    for (uint32_t r = 0; r < RANKS; r++) {
        cpu_consume(sum, want, N, 5, 1 + r);
        ASSERT_OK(cubec_read(f->d[r], s[r], y[r], 0, got, N * 4u));
        for (uint32_t i = 0; i < N; i++)
            if (got[i] != want[i])
                fail_msg("rank %u word %u is %u, want %u", r, i, got[i], want[i]);
        ASSERT_OK(cubec_buffer_release(f->d[r], x[r]));
        ASSERT_OK(cubec_buffer_release(f->d[r], y[r]));
    }
    free(sum);
    free(part);
    free(want);
    free(got);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* While a long kernel writes rank 1's input, the all-reduce returns at once (it queues, never
 * waits), and the results are still right. */
static void test_the_caller_does_not_wait(void **state)
{
    fixture *f = *state;
    enum { W = 64 * 1024 };
    cubec_kernel busy = make_kernel(f->d[1], "busy", busy_src);
    cubec_stream s[2] = {new_stream(f->d[0]), new_stream(f->d[1])};
    cubec_buffer x[2];
    ASSERT_OK(cubec_buffer_create(f->d[0], s[0], (uint64_t)W * 4, &x[0]));
    ASSERT_OK(cubec_buffer_create(f->d[1], s[1], (uint64_t)W * 4, &x[1]));
    uint32_t steps = 256;
    double busy_s = 0;
    /* Grows the kernel until it runs long enough to tell a wait from none. */
    for (;;) {
        ASSERT_OK(cubec_fill(f->d[1], s[1], x[1], 0, (uint64_t)W * 4, 1));
        ASSERT_OK(cubec_sync(f->d[1], s[1]));
        double t0 = now_s();
        ASSERT_OK(busy_launch(f->d[1], s[1], busy, x[1], W, steps));
        ASSERT_OK(cubec_sync(f->d[1], s[1]));
        busy_s = now_s() - t0;
        if (busy_s >= 0.1 || steps >= (1u << 20)) break;
        steps *= 4;
    }
    uint32_t *want = malloc((size_t)W * 4), *got = malloc((size_t)W * 4);
    ASSERT_OK(cubec_read(f->d[1], s[1], x[1], 0, want, (uint64_t)W * 4));
    for (uint32_t i = 0; i < W; i++)
        want[i] += 2;
    ASSERT_OK(cubec_fill(f->d[0], s[0], x[0], 0, (uint64_t)W * 4, 2));
    ASSERT_OK(cubec_fill(f->d[1], s[1], x[1], 0, (uint64_t)W * 4, 1));
    ASSERT_OK(busy_launch(f->d[1], s[1], busy, x[1], W, steps));
    ASSERT_OK(cubec_flush(f->d[1], s[1]));
    double t0 = now_s();
    ASSERT_OK(cubec_comm_all_reduce(f->comm[2], x, s, W, CUBEC_DTYPE_I32, CUBEC_REDUCE_SUM));
    double call = now_s() - t0;
    print_message("rank 1's writer ran %.3f s; cubec_comm_all_reduce returned after %.6f s\n",
                  busy_s, call);
    for (int r = 0; r < 2; r++) {
        ASSERT_OK(cubec_read(f->d[r], s[r], x[r], 0, got, (uint64_t)W * 4));
        assert_memory_equal(got, want, (size_t)W * 4);
        ASSERT_OK(cubec_buffer_release(f->d[r], x[r]));
    }
    if (busy_s >= 0.1 && call >= busy_s / 2)
        fail_msg("cubec_comm_all_reduce took %.3f s while rank 1's writer ran %.3f s: it waited",
                 call, busy_s);
    free(want);
    free(got);
    ASSERT_OK(cubec_kernel_destroy(f->d[1], busy));
}

/* Rank 1's input was not written (its submission was lost), and then rank 0's: every rank's
 * result carries the failure, naming its cause. */
static void test_failure_of_one_rank_reaches_all(void **state)
{
    fixture *f = *state;
    enum { N = 1000 };
    for (uint32_t bad = 0; bad < 2; bad++) {
        cubec_buffer x[RANKS];
        cubec_stream s[RANKS];
        for (uint32_t r = 0; r < RANKS; r++) {
            s[r] = new_stream(f->d[r]);
            ASSERT_OK(cubec_buffer_create(f->d[r], s[r], N * 4u, &x[r]));
            ASSERT_OK(uint_launch(f->d[r], s[r], f->produce[r], x[r], NONE, N, 1, r));
        }
        uint32_t b = bad ? 0 : 1;
        taint_by_lost_submission(f->d[b], s[b], f->produce[b], x[b], N, 1, 0);
        ASSERT_OK(
            cubec_comm_all_reduce(f->comm[RANKS], x, s, N, CUBEC_DTYPE_I32, CUBEC_REDUCE_MAX));
        for (uint32_t r = 0; r < RANKS; r++) {
            uint32_t got[4];
            ASSERT_ERROR(cubec_read(f->d[r], s[r], x[r], 0, got, sizeof got), CUBEC_INTERNAL,
                         "injected fault: submit");
            ASSERT_OK(cubec_buffer_release(f->d[r], x[r]));
        }
    }
}

/* Each refusal names its argument and leaves every rank's buffer as it was. */
static void test_refusals_change_nothing(void **state)
{
    fixture *f = *state;
    enum { N = 100 };
    cubec_buffer x[RANKS], other[2];
    cubec_stream s[RANKS];
    uint32_t in[RANKS][N], got[N];
    for (uint32_t r = 0; r < RANKS; r++) {
        s[r] = new_stream(f->d[r]);
        for (uint32_t i = 0; i < N; i++)
            in[r][i] = input_word(CUBEC_DTYPE_I32, r, i);
        ASSERT_OK(cubec_buffer_from(f->d[r], s[r], in[r], sizeof in[r], &x[r]));
    }
    cubec_comm *c = f->comm[RANKS];
    ASSERT_ERROR(cubec_comm_all_reduce(c, x, s, N + 1, CUBEC_DTYPE_I32, CUBEC_REDUCE_SUM),
                 CUBEC_INVALID_ARGUMENT, "buffers[0] holds 400 bytes");
    ASSERT_ERROR(cubec_comm_all_reduce(NULL, x, s, N, CUBEC_DTYPE_I32, CUBEC_REDUCE_SUM),
                 CUBEC_INVALID_ARGUMENT, "comm is NULL");
    ASSERT_ERROR(cubec_comm_all_reduce(c, NULL, s, N, CUBEC_DTYPE_I32, CUBEC_REDUCE_SUM),
                 CUBEC_INVALID_ARGUMENT, "buffers is NULL");
    ASSERT_ERROR(cubec_comm_all_reduce(c, x, NULL, N, CUBEC_DTYPE_I32, CUBEC_REDUCE_SUM),
                 CUBEC_INVALID_ARGUMENT, "streams is NULL");
    ASSERT_ERROR(cubec_comm_all_reduce(c, x, s, N, (cubec_dtype)7, CUBEC_REDUCE_SUM),
                 CUBEC_INVALID_ARGUMENT, "dtype 7");
    ASSERT_ERROR(cubec_comm_all_reduce(c, x, s, N, CUBEC_DTYPE_I32, (cubec_reduce_op)9),
                 CUBEC_INVALID_ARGUMENT, "op 9");
    /* Rank 2's buffer and stream swapped with rank 1's: each belongs to another device. */
    other[0] = x[1];
    other[1] = x[2];
    cubec_buffer swapped[RANKS] = {x[0], other[1], other[0]};
    ASSERT_ERROR(cubec_comm_all_reduce(c, swapped, s, N, CUBEC_DTYPE_I32, CUBEC_REDUCE_SUM),
                 CUBEC_INVALID_ARGUMENT, "buffers[1]");
    cubec_stream swapped_s[RANKS] = {s[0], s[2], s[1]};
    ASSERT_ERROR(cubec_comm_all_reduce(c, x, swapped_s, N, CUBEC_DTYPE_I32, CUBEC_REDUCE_SUM),
                 CUBEC_INVALID_ARGUMENT, "streams[1]");
    /* Creation: NULL, n < 1, a device twice, a device not open. */
    cubec_comm *made = (cubec_comm *)&made;
    ASSERT_ERROR(cubec_comm_create(NULL, 2, &made), CUBEC_INVALID_ARGUMENT, "devices is NULL");
    assert_null(made);
    ASSERT_ERROR(cubec_comm_create(f->d, 0, &made), CUBEC_INVALID_ARGUMENT, "n is 0");
    ASSERT_ERROR(cubec_comm_create(f->d, 2, NULL), CUBEC_INVALID_ARGUMENT, "out_comm is NULL");
    cubec_device *twice[2] = {f->d[1], f->d[1]};
    ASSERT_ERROR(cubec_comm_create(twice, 2, &made), CUBEC_INVALID_ARGUMENT,
                 "devices[1] is devices[0]");
    cubec_device *with_null[2] = {f->d[0], NULL};
    ASSERT_ERROR(cubec_comm_create(with_null, 2, &made), CUBEC_INVALID_ARGUMENT,
                 "devices[1]: cubec_comm_create: device is NULL");
    assert_null(made);
    for (uint32_t r = 0; r < RANKS; r++) {
        ASSERT_OK(cubec_read(f->d[r], s[r], x[r], 0, got, sizeof got));
        assert_memory_equal(got, in[r], sizeof got);
        ASSERT_OK(cubec_buffer_release(f->d[r], x[r]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_ranks),
        cmocka_unit_test(test_three_ranks),
        cmocka_unit_test(test_one_rank_leaves_the_buffer),
        cmocka_unit_test(test_ordered_on_the_streams),
        cmocka_unit_test(test_the_caller_does_not_wait),
        cmocka_unit_test(test_failure_of_one_rank_reaches_all),
        cmocka_unit_test(test_refusals_change_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
