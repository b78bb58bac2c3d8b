/* The cuda-interop path of cubec_copy_peer (docs/multi-device-paths.md): between exportable
 * buffers of two opens of one GPU, CUDA copies on the GPU, ordered after the source's writers and
 * before the destination's later work, with kernels on both sides and results checked against
 * the CPU; a later writer of the source does not reach the copy (the source's queue waits for
 * CUDA's read); a failure on the source lands on the destination range and a later good copy
 * clears it; buffers that are not exportable go host-staged. Where CUDA cannot copy between the
 * devices (lavapipe: no exportable timeline, no libcuda) the pair's path says why and the GPU
 * tests report themselves skipped by name. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WORDS = (5 << 20) / 4 + 37 };

typedef struct fixture {
    cubec_device *a, *b;
    cubec_kernel produce[2], consume[2], step[2];
    int cuda; /* the pair's path is cuda-interop */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->a = test_device_open();
    f->b = test_device_open();
    uint_kernels_create(f->a, &f->produce[0], &f->consume[0], &f->step[0]);
    uint_kernels_create(f->b, &f->produce[1], &f->consume[1], &f->step[1]);
    cubec_path_info pi = CUBEC_PATH_INFO_INIT;
    ASSERT_OK(cubec_device_get_path(f->a, f->b, &pi));
    f->cuda = pi.path == CUBEC_PATH_CUDA_INTEROP;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    uint_kernels_destroy(f->a, f->produce[0], f->consume[0], f->step[0]);
    uint_kernels_destroy(f->b, f->produce[1], f->consume[1], f->step[1]);
    test_device_close(f->b);
    test_device_close(f->a);
    free(f);
    return 0;
}

static int need_cuda(const fixture *f, const char *test)
{
    if (f->cuda) return 1;
    cubec_path_info pi = CUBEC_PATH_INFO_INIT;
    ASSERT_OK(cubec_device_get_path(f->a, f->b, &pi));
    print_message("%s skipped: the pair's path is %s (%s)\n", test, cubec_path_name(pi.path),
                  pi.reason);
    return 0;
}

/* The path names CUDA's verdict either way. */
static void test_path_says_why(void **state)
{
    fixture *f = *state;
    cubec_path_info pi = CUBEC_PATH_INFO_INIT;
    ASSERT_OK(cubec_device_get_path(f->a, f->b, &pi));
    if (f->cuda) {
        assert_int_equal(pi.link, CUBEC_LINK_SAME_PHYSICAL_DEVICE);
        assert_non_null(strstr(pi.reason, "go host-staged"));
    } else {
        assert_int_equal(pi.path, CUBEC_PATH_HOST_STAGED);
        assert_non_null(strstr(pi.reason, "cuda-interop: not available: "));
    }
}

/* produce on one device into an exportable buffer, copy at offsets to the other, consume there. */
static void round_trip(fixture *f, int from)
{
    cubec_device *src = from ? f->b : f->a, *dst = from ? f->a : f->b;
    int si = from, di = !from;
    cubec_stream ss = new_stream(src), ds = new_stream(dst);
    enum { N = WORDS - 64 };
    cubec_buffer x, y, z;
    ASSERT_OK(cubec_buffer_create_exportable(src, ss, WORDS * 4u, &x));
    ASSERT_OK(cubec_buffer_create_exportable(dst, ds, WORDS * 4u, &y));
    ASSERT_OK(cubec_buffer_create(dst, ds, WORDS * 4u, &z));
    ASSERT_OK(uint_launch(src, ss, f->produce[si], x, NONE, WORDS, 3, 7 + (uint32_t)from));
    ASSERT_OK(cubec_copy_peer(src, ss, x, 16 * 4, dst, ds, y, 32 * 4, (uint64_t)N * 4));
    /* The source's next writer must not reach what CUDA still reads. */
    ASSERT_OK(uint_launch(src, ss, f->produce[si], x, NONE, WORDS, 5, 1));
    ASSERT_OK(uint_launch(dst, ds, f->consume[di], y, z, WORDS, 2, 1));
    uint32_t *want = malloc(WORDS * 4u), *got = malloc(WORDS * 4u);
    cpu_produce(want, WORDS, 3, 7 + (uint32_t)from);
    /* y[32 + i] = x[16 + i]; z = consume(y) */
    memmove(want + 32, want + 16, (size_t)N * 4);
    cpu_consume(want + 32, got, N, 2, 1);
    expect_range_in(dst, ds, z, WORDS, 32, N, got, "consume(copy) on the destination");
    cpu_produce(want, WORDS, 5, 1);
    expect_range_in(src, ss, x, WORDS, 0, WORDS, want, "the source's later writer");
    free(want);
    free(got);
    ASSERT_OK(cubec_buffer_release(src, x));
    ASSERT_OK(cubec_buffer_release(dst, y));
    ASSERT_OK(cubec_buffer_release(dst, z));
}

static void test_cuda_copies_both_ways(void **state)
{
    fixture *f = *state;
    if (!need_cuda(f, "test_cuda_copies_both_ways")) skip();
    round_trip(f, 0);
    round_trip(f, 1);
}

/* A failure on the source lands on the destination range; a later good copy clears it. */
static void test_cuda_failure_crosses(void **state)
{
    fixture *f = *state;
    if (!need_cuda(f, "test_cuda_failure_crosses")) skip();
    cubec_stream ss = new_stream(f->a), ds = new_stream(f->b);
    enum { N = 4096 };
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_create_exportable(f->a, ss, N * 4u, &x));
    ASSERT_OK(cubec_buffer_create_exportable(f->b, ds, (N + 16) * 4u, &y));
    ASSERT_OK(cubec_fill(f->b, ds, y, 0, (N + 16) * 4u, 9));
    taint_by_lost_submission(f->a, ss, f->produce[0], x, N, 1, 0);
    ASSERT_OK(cubec_copy_peer(f->a, ss, x, 0, f->b, ds, y, 64, N * 4u));
    uint32_t got[16], nine[16];
    ASSERT_ERROR(cubec_read(f->b, ds, y, 64, got, sizeof got), CUBEC_INTERNAL,
                 "a peer copy from buffer");
    for (int i = 0; i < 16; i++)
        nine[i] = 9;
    expect_range_in(f->b, ds, y, N + 16, 0, 16, nine, "before the tainted range");
    ASSERT_OK(uint_launch(f->a, ss, f->produce[0], x, NONE, N, 2, 1));
    ASSERT_OK(cubec_copy_peer(f->a, ss, x, 0, f->b, ds, y, 64, N * 4u));
    uint32_t *want = malloc(N * 4u);
    cpu_produce(want, N, 2, 1);
    expect_range_in(f->b, ds, y, N + 16, 16, N, want, "copied after the source was written again");
    free(want);
    const cubec_buffer one[1] = {y};
    ASSERT_OK(cubec_check(f->b, one, 1));
    ASSERT_OK(cubec_buffer_release(f->a, x));
    ASSERT_OK(cubec_buffer_release(f->b, y));
}

/* Buffers that are not exportable take the host-staged path on a cuda-interop pair. */
static void test_cuda_pair_not_exportable_goes_host_staged(void **state)
{
    fixture *f = *state;
    if (!need_cuda(f, "test_cuda_pair_not_exportable_goes_host_staged")) skip();
    cubec_stream ss = new_stream(f->a), ds = new_stream(f->b);
    enum { N = 70000 };
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_create(f->a, ss, N * 4u, &x));
    ASSERT_OK(cubec_buffer_create_exportable(f->b, ds, N * 4u, &y));
    ASSERT_OK(uint_launch(f->a, ss, f->produce[0], x, NONE, N, 11, 4));
    ASSERT_OK(cubec_copy_peer(f->a, ss, x, 0, f->b, ds, y, 0, N * 4u));
    uint32_t *want = malloc(N * 4u);
    cpu_produce(want, N, 11, 4);
    expect_range_in(f->b, ds, y, N, 0, N, want, "host-staged on a cuda-interop pair");
    free(want);
    ASSERT_OK(cubec_buffer_release(f->a, x));
    ASSERT_OK(cubec_buffer_release(f->b, y));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_says_why),
        cmocka_unit_test(test_cuda_copies_both_ways),
        cmocka_unit_test(test_cuda_failure_crosses),
        cmocka_unit_test(test_cuda_pair_not_exportable_goes_host_staged),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
