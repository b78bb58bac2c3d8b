/* cubec_copy_peer between two devices (two opens of the one lavapipe device act as two): both
 * directions with kernels running on both devices, sizes that are not a multiple of the chunk,
 * offsets, a failure on the source landing on the destination, the same device, the path forced
 * through the host on one device, two threads copying in opposite directions, and refused
 * arguments that change nothing. Every result is checked against the CPU's. The chunk is set small
 * ([multi] chunk_bytes = 64 KiB) so that a few hundred KiB cross several chunks and both slots. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { CHUNK = 64 << 10, WORDS = (3 * CHUNK + 12) / 4 + 64 };

typedef struct fixture {
    cubec_device *a, *b;
    cubec_kernel produce[2], consume[2], step[2], busy[2];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->a = test_device_open();
    f->b = test_device_open();
    uint_kernels_create(f->a, &f->produce[0], &f->consume[0], &f->step[0]);
    uint_kernels_create(f->b, &f->produce[1], &f->consume[1], &f->step[1]);
    f->busy[0] = make_kernel(f->a, "busy", busy_src);
    f->busy[1] = make_kernel(f->b, "busy", busy_src);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < 2; i++) {
        cubec_device *d = i ? f->b : f->a;
        uint_kernels_destroy(d, f->produce[i], f->consume[i], f->step[i]);
        ASSERT_OK(cubec_kernel_destroy(d, f->busy[i]));
    }
    test_device_close(f->b);
    test_device_close(f->a);
    free(f);
    return 0;
}

static void expect_words(cubec_device *d, cubec_stream s, cubec_buffer buf, uint32_t at, uint32_t n,
                         const uint32_t *want, const char *what)
{
    uint32_t *got = malloc(n * 4u);
    ASSERT_OK(cubec_read(d, s, buf, (uint64_t)at * 4, got, (uint64_t)n * 4));
    for (uint32_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            uint32_t g = got[i];
            free(got);
            fail_msg("%s: word %u is %u, want %u", what, at + i, g, want[i]);
        }
    free(got);
}

/* produce on `from` (with busy work on `to` meanwhile), copy to `to`, consume there: the result
 * is consume(produce(i)) on the CPU. */
static void round_trip(fixture *f, int from)
{
    cubec_device *src = from ? f->b : f->a, *dst = from ? f->a : f->b;
    int si = from, di = !from;
    cubec_stream ss = new_stream(src), ds = new_stream(dst);
    cubec_buffer x, y, z, noise;
    ASSERT_OK(cubec_buffer_create(src, ss, WORDS * 4u, &x));
    ASSERT_OK(cubec_buffer_create(dst, ds, WORDS * 4u, &y));
    ASSERT_OK(cubec_buffer_create(dst, ds, WORDS * 4u, &z));
    ASSERT_OK(cubec_buffer_create(dst, ds, 4096 * 4u, &noise));
    ASSERT_OK(cubec_fill(dst, ds, noise, 0, 4096 * 4u, 1));
    ASSERT_OK(busy_launch(dst, ds, f->busy[di], noise, 4096, 64));
    ASSERT_OK(uint_launch(src, ss, f->produce[si], x, NONE, WORDS, 3, 7 + (uint32_t)from));
    ASSERT_OK(cubec_copy_peer(src, ss, x, 0, dst, ds, y, 0, WORDS * 4u));
    ASSERT_OK(uint_launch(dst, ds, f->consume[di], y, z, WORDS, 5, 1));
    /* The source is overwritten after the copy was queued: the copy saw the bytes before. */
    ASSERT_OK(uint_launch(src, ss, f->produce[si], x, NONE, WORDS, 11, 0));
    uint32_t *want = malloc(WORDS * 4u), *mid = malloc(WORDS * 4u);
    cpu_produce(mid, WORDS, 3, 7 + (uint32_t)from);
    cpu_consume(mid, want, WORDS, 5, 1);
    expect_words(dst, ds, z, 0, WORDS, want, "consumed after the peer copy");
    expect_words(dst, ds, y, 0, WORDS, mid, "copied");
    cpu_produce(want, WORDS, 11, 0);
    expect_words(src, ss, x, 0, WORDS, want, "source overwritten after the copy");
    free(want);
    free(mid);
    ASSERT_OK(cubec_buffer_release(src, x));
    ASSERT_OK(cubec_buffer_release(dst, y));
    ASSERT_OK(cubec_buffer_release(dst, z));
    ASSERT_OK(cubec_buffer_release(dst, noise));
}

static void test_both_directions(void **state)
{
    fixture *f = *state;
    round_trip(f, 0);
    round_trip(f, 1);
    round_trip(f, 0);
}

/* A range not a multiple of the chunk, at offsets; the bytes around it stay as they were. */
static void test_offsets_and_odd_sizes(void **state)
{
    fixture *f = *state;
    cubec_stream ss = new_stream(f->a), ds = new_stream(f->b);
    const uint32_t sizes[] = {4, 1020, CHUNK, CHUNK + 4, 2 * CHUNK, 3 * CHUNK + 12};
    uint32_t *src = malloc(WORDS * 4u), *dst = malloc(WORDS * 4u);
    for (uint32_t i = 0; i < WORDS; i++) {
        src[i] = 0x10000000u + i;
        dst[i] = 0xdead0000u + i;
    }
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_from(f->a, ss, src, WORDS * 4u, &x));
    ASSERT_OK(cubec_buffer_create(f->b, ds, WORDS * 4u, &y));
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint32_t so = (uint32_t)(k * 3 % 17), dof = (uint32_t)(k * 5 % 23), n = sizes[k] / 4;
        if (so + n > WORDS) so = 0;
        if (dof + n > WORDS) dof = WORDS - n;
        ASSERT_OK(cubec_write(f->b, ds, y, 0, dst, WORDS * 4u));
        ASSERT_OK(cubec_copy_peer(f->a, ss, x, so * 4u, f->b, ds, y, dof * 4u, n * 4u));
        uint32_t *want = malloc(WORDS * 4u);
        memcpy(want, dst, WORDS * 4u);
        memcpy(want + dof, src + so, n * 4u);
        char what[96];
        snprintf(what, sizeof what, "%u bytes from word %u to word %u", n * 4u, so, dof);
        expect_words(f->b, ds, y, 0, WORDS, want, what);
        free(want);
    }
    /* Size 0 copies nothing and succeeds. */
    ASSERT_OK(cubec_copy_peer(f->a, ss, x, 0, f->b, ds, y, 0, 0));
    free(src);
    free(dst);
    ASSERT_OK(cubec_buffer_release(f->a, x));
    ASSERT_OK(cubec_buffer_release(f->b, y));
}

/* A source whose writer's submission was lost: the destination range carries the failure, the
 * rest of the destination is intact, and a later good copy clears it. */
static void test_failure_crosses_devices(void **state)
{
    fixture *f = *state;
    cubec_stream ss = new_stream(f->a), ds = new_stream(f->b);
    enum { N = 2 * CHUNK / 4 + 100 };
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_create(f->a, ss, N * 4u, &x));
    ASSERT_OK(cubec_buffer_create(f->b, ds, (N + 16) * 4u, &y));
    ASSERT_OK(cubec_fill(f->b, ds, y, 0, (N + 16) * 4u, 9));
    taint_by_lost_submission(f->a, ss, f->produce[0], x, N, 1, 0);
    ASSERT_OK(cubec_copy_peer(f->a, ss, x, 0, f->b, ds, y, 64, N * 4u));
    uint32_t got[16];
    ASSERT_ERROR(cubec_read(f->b, ds, y, 64, got, sizeof got), CUBEC_INTERNAL,
                 "a peer copy from buffer");
    ASSERT_ERROR(cubec_read(f->b, ds, y, (uint64_t)N * 4 - 64, got, sizeof got), CUBEC_INTERNAL,
                 "injected fault: submit");
    const cubec_buffer one[1] = {y};
    ASSERT_ERROR(cubec_check(f->b, one, 1), CUBEC_INTERNAL, "was not written");
    uint32_t nine[16];
    for (int i = 0; i < 16; i++)
        nine[i] = 9;
    expect_words(f->b, ds, y, 0, 16, nine, "before the tainted range");
    /* Written again on the source, copied again: the failure is gone. */
    ASSERT_OK(uint_launch(f->a, ss, f->produce[0], x, NONE, N, 2, 1));
    ASSERT_OK(cubec_copy_peer(f->a, ss, x, 0, f->b, ds, y, 64, N * 4u));
    uint32_t *want = malloc(N * 4u);
    cpu_produce(want, N, 2, 1);
    expect_words(f->b, ds, y, 16, N, want, "copied after the source was written again");
    free(want);
    ASSERT_OK(cubec_check(f->b, one, 1));
    ASSERT_OK(cubec_buffer_release(f->a, x));
    ASSERT_OK(cubec_buffer_release(f->b, y));
}

/* One device: the path is same-device and the copy is cubec_copy's. */
static void test_same_device(void **state)
{
    fixture *f = *state;
    cubec_path_info pi = CUBEC_PATH_INFO_INIT;
    ASSERT_OK(cubec_device_get_path(f->a, f->a, &pi));
    assert_int_equal(pi.path, CUBEC_PATH_SAME_DEVICE);
    assert_int_equal(pi.link, CUBEC_LINK_SAME_DEVICE);
    cubec_stream s1 = new_stream(f->a), s2 = new_stream(f->a);
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_create(f->a, s1, 4096, &x));
    ASSERT_OK(cubec_buffer_create(f->a, s2, 4096, &y));
    ASSERT_OK(uint_launch(f->a, s1, f->produce[0], x, NONE, 1024, 7, 3));
    ASSERT_OK(cubec_copy_peer(f->a, s1, x, 0, f->a, s2, y, 0, 4096));
    uint32_t want[1024];
    cpu_produce(want, 1024, 7, 3);
    expect_words(f->a, s2, y, 0, 1024, want, "same-device copy");
    ASSERT_ERROR(cubec_copy_peer(f->a, s1, x, 0, f->a, s2, x, 64, 128), CUBEC_INVALID_ARGUMENT,
                 "overlap");
    ASSERT_OK(cubec_buffer_release(f->a, x));
    ASSERT_OK(cubec_buffer_release(f->a, y));
}

/* The pair's path over two opens of one physical device: host-staged with CUDA's absence named,
 * or cuda-interop where CUDA can copy (tests/multi/test_cuda_copy_peer.c). */
static void test_path_of_two_devices(void **state)
{
    fixture *f = *state;
    cubec_path_info pi = CUBEC_PATH_INFO_INIT;
    ASSERT_OK(cubec_device_get_path(f->a, f->b, &pi));
    assert_int_equal(pi.link, CUBEC_LINK_SAME_PHYSICAL_DEVICE);
    if (pi.path == CUBEC_PATH_CUDA_INTEROP) {
        assert_non_null(strstr(pi.reason, "go host-staged"));
        assert_string_equal(cubec_path_name(pi.path), "cuda-interop");
    } else {
        assert_int_equal(pi.path, CUBEC_PATH_HOST_STAGED);
        assert_non_null(strstr(pi.reason, "cuda-interop: not available"));
        assert_string_equal(cubec_path_name(pi.path), "host-staged");
    }
    assert_string_equal(cubec_link_class_name(pi.link), "same-physical-device");
    assert_string_equal(cubec_path_name((cubec_path)99), "unknown");
    assert_string_equal(cubec_link_class_name((cubec_link_class)99), "unknown");
    ASSERT_OK(cubec_device_measure_path(f->a, f->b, 1 << 20, &pi));
    assert_true(pi.bandwidth_gbs > 0);
    cubec_path_info again = CUBEC_PATH_INFO_INIT;
    ASSERT_OK(cubec_device_get_path(f->a, f->b, &again));
    assert_true(again.bandwidth_gbs == pi.bandwidth_gbs);
    ASSERT_ERROR(cubec_device_get_path(f->a, f->b, NULL), CUBEC_INVALID_ARGUMENT, "out_info");
    cubec_path_info zero = {0};
    ASSERT_ERROR(cubec_device_get_path(f->a, f->b, &zero), CUBEC_INVALID_ARGUMENT, "struct_size");
    ASSERT_ERROR(cubec_device_get_path(NULL, f->b, &pi), CUBEC_INVALID_ARGUMENT, "src_device");
    ASSERT_ERROR(cubec_device_measure_path(f->a, f->b, 6, &pi), CUBEC_INVALID_ARGUMENT,
                 "bytes = 6");
}

/* [multi] path = host-staged on one device: its copies to itself go through the host. */
static void test_forced_host_staged_on_one_device(void **state)
{
    (void)state;
    setenv("CUBEC_MULTI_PATH", "host-staged", 1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_MULTI_PATH");
    cubec_path_info pi = CUBEC_PATH_INFO_INIT;
    ASSERT_OK(cubec_device_get_path(d, d, &pi));
    assert_int_equal(pi.path, CUBEC_PATH_HOST_STAGED);
    assert_non_null(strstr(pi.reason, "[multi] path = host-staged"));
    cubec_kernel produce, consume, step;
    uint_kernels_create(d, &produce, &consume, &step);
    cubec_stream s = new_stream(d);
    enum { N = (CHUNK * 5 / 2) / 4 };
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_create(d, s, N * 4u, &x));
    ASSERT_OK(cubec_buffer_create(d, s, N * 4u, &y));
    ASSERT_OK(uint_launch(d, s, produce, x, NONE, N, 13, 5));
    ASSERT_OK(cubec_copy_peer(d, s, x, 0, d, s, y, 0, N * 4u));
    ASSERT_OK(uint_launch(d, s, step, y, NONE, N, 2, 0));
    uint32_t *want = malloc(N * 4u);
    cpu_produce(want, N, 13, 5);
    cpu_consume(want, want, N, 2, 0);
    expect_words(d, s, y, 0, N, want, "copied through the host on one device");
    free(want);
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, y));
    uint_kernels_destroy(d, produce, consume, step);
    test_device_close(d);
    setenv("CUBEC_MULTI_PATH", "cuda-interop", 1);
    d = test_device_open();
    unsetenv("CUBEC_MULTI_PATH");
    ASSERT_OK(cubec_device_get_path(d, d, &pi));
    ASSERT_OK(cubec_buffer_create(d, 0, 64, &x));
    if (pi.path == CUBEC_PATH_CUDA_INTEROP) {
        /* CUDA can copy here (the H200): a buffer that is not exportable goes host-staged. */
        assert_non_null(strstr(pi.reason, "go host-staged"));
        ASSERT_OK(cubec_copy_peer(d, 0, x, 0, d, 0, x, 32, 32));
    } else {
        assert_int_equal(pi.path, CUBEC_PATH_NONE);
        ASSERT_ERROR(cubec_copy_peer(d, 0, x, 0, d, 0, x, 32, 32), CUBEC_UNSUPPORTED,
                     "cuda-interop: not available");
    }
    ASSERT_OK(cubec_buffer_release(d, x));
    test_device_close(d);
}

/* Refused arguments name what is wrong, and the destination keeps its bytes. */
static void test_refusals_change_nothing(void **state)
{
    fixture *f = *state;
    cubec_stream ss = new_stream(f->a), ds = new_stream(f->b);
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_create(f->a, ss, 1024, &x));
    ASSERT_OK(cubec_buffer_create(f->b, ds, 1024, &y));
    ASSERT_OK(cubec_fill(f->a, ss, x, 0, 1024, 1));
    ASSERT_OK(cubec_fill(f->b, ds, y, 0, 1024, 2));
    ASSERT_ERROR(cubec_copy_peer(f->a, ss, x, 0, f->b, ds, y, 0, 6), CUBEC_INVALID_ARGUMENT,
                 "size = 6");
    ASSERT_ERROR(cubec_copy_peer(f->a, ss, x, 2, f->b, ds, y, 0, 4), CUBEC_INVALID_ARGUMENT,
                 "src_offset = 2");
    ASSERT_ERROR(cubec_copy_peer(f->a, ss, x, 0, f->b, ds, y, 6, 4), CUBEC_INVALID_ARGUMENT,
                 "dst_offset = 6");
    ASSERT_ERROR(cubec_copy_peer(f->a, ss, x, 512, f->b, ds, y, 0, 1024), CUBEC_INVALID_ARGUMENT,
                 "src range offset 512 + size 1024");
    ASSERT_ERROR(cubec_copy_peer(f->a, ss, x, 0, f->b, ds, y, 4, 1024), CUBEC_INVALID_ARGUMENT,
                 "dst range offset 4 + size 1024");
    /* Handles of the wrong device: buffers and streams. */
    ASSERT_ERROR(cubec_copy_peer(f->a, ss, y, 0, f->b, ds, y, 0, 4), CUBEC_INVALID_ARGUMENT,
                 "cubec_copy_peer: src: buffer handle");
    ASSERT_ERROR(cubec_copy_peer(f->a, ss, x, 0, f->b, ds, x, 0, 4), CUBEC_INVALID_ARGUMENT,
                 "belongs to another device");
    ASSERT_ERROR(cubec_copy_peer(f->a, ds, x, 0, f->b, ds, y, 0, 4), CUBEC_INVALID_ARGUMENT,
                 "src_stream");
    ASSERT_ERROR(cubec_copy_peer(f->a, ss, x, 0, f->b, ss, y, 0, 4), CUBEC_INVALID_ARGUMENT,
                 "dst_stream");
    ASSERT_ERROR(cubec_copy_peer(NULL, ss, x, 0, f->b, ds, y, 0, 4), CUBEC_INVALID_ARGUMENT,
                 "src_device");
    /* A closed device. */
    cubec_device *gone = test_device_open();
    test_device_close(gone);
    ASSERT_ERROR(cubec_copy_peer(f->a, ss, x, 0, gone, ds, y, 0, 4), CUBEC_INVALID_ARGUMENT,
                 "dst_device");
    ASSERT_ERROR(cubec_copy_peer(gone, ss, x, 0, f->b, ds, y, 0, 4), CUBEC_INVALID_ARGUMENT,
                 "not an open device");
    uint32_t want[256];
    for (int i = 0; i < 256; i++)
        want[i] = 2;
    expect_words(f->b, ds, y, 0, 256, want, "destination after refusals");
    for (int i = 0; i < 256; i++)
        want[i] = 1;
    expect_words(f->a, ss, x, 0, 256, want, "source after refusals");
    ASSERT_OK(cubec_buffer_release(f->a, x));
    ASSERT_OK(cubec_buffer_release(f->b, y));
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The call returns while the source's writer still runs: it queues, it does not wait. A busy
 * kernel of ~0.1 s or more writes the source; the call must take well under half of it, and the
 * copy still lands after the kernel (the destination holds what the kernel wrote). */
static void test_the_caller_does_not_wait(void **state)
{
    fixture *f = *state;
    cubec_stream ss = new_stream(f->a), ds = new_stream(f->b);
    enum { W = 64 * 1024 };
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_create(f->a, ss, W * 4u, &x));
    ASSERT_OK(cubec_buffer_create(f->b, ds, W * 4u, &y));
    uint32_t steps = 256;
    double busy = 0;
    /* Grows the kernel until it runs long enough to tell a wait from none. */
    for (;;) {
        ASSERT_OK(cubec_fill(f->a, ss, x, 0, W * 4u, 1));
        ASSERT_OK(cubec_sync(f->a, ss));
        double t0 = now_s();
        ASSERT_OK(busy_launch(f->a, ss, f->busy[0], x, W, steps));
        ASSERT_OK(cubec_sync(f->a, ss));
        busy = now_s() - t0;
        if (busy >= 0.1 || steps >= (1u << 20)) break;
        steps *= 4;
    }
    uint32_t *want = malloc(W * 4u), *got = malloc(W * 4u);
    ASSERT_OK(cubec_read(f->a, ss, x, 0, want, W * 4u));
    ASSERT_OK(cubec_fill(f->a, ss, x, 0, W * 4u, 1));
    ASSERT_OK(busy_launch(f->a, ss, f->busy[0], x, W, steps));
    ASSERT_OK(cubec_flush(f->a, ss));
    double t0 = now_s();
    ASSERT_OK(cubec_copy_peer(f->a, ss, x, 0, f->b, ds, y, 0, W * 4u));
    double call = now_s() - t0;
    print_message("the source's writer ran %.3f s; cubec_copy_peer returned after %.6f s\n", busy,
                  call);
    ASSERT_OK(cubec_read(f->b, ds, y, 0, got, W * 4u));
    assert_memory_equal(got, want, W * 4u);
    if (busy >= 0.1 && call >= busy / 2)
        fail_msg("cubec_copy_peer took %.3f s while the source's writer ran %.3f s: it waited",
                 call, busy);
    free(want);
    free(got);
    ASSERT_OK(cubec_buffer_release(f->a, x));
    ASSERT_OK(cubec_buffer_release(f->b, y));
}

/* A device closed right after a copy from or to it was queued: closing waits for the other
 * device's submission thread to be past its wait on this device's timeline, so nothing is used
 * after it is freed (ASan builds check that), and the copy that had a source lands. */
static void test_close_right_after_a_copy(void **state)
{
    fixture *f = *state;
    enum { N = (3 * CHUNK) / 4 + 8 };
    uint32_t *want = malloc(N * 4u), *got = malloc(N * 4u);
    cpu_produce(want, N, 17, 4);
    /* The source closes first: the destination still reads the bytes. */
    cubec_device *src = test_device_open();
    cubec_kernel produce, consume, step;
    uint_kernels_create(src, &produce, &consume, &step);
    cubec_stream ss = new_stream(src), ds = new_stream(f->b);
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_create(src, ss, N * 4u, &x));
    ASSERT_OK(cubec_buffer_create(f->b, ds, N * 4u, &y));
    ASSERT_OK(uint_launch(src, ss, produce, x, NONE, N, 17, 4));
    ASSERT_OK(cubec_copy_peer(src, ss, x, 0, f->b, ds, y, 0, N * 4u));
    ASSERT_OK(cubec_buffer_release(src, x));
    uint_kernels_destroy(src, produce, consume, step);
    test_device_close(src);
    ASSERT_OK(cubec_read(f->b, ds, y, 0, got, N * 4u));
    assert_memory_equal(got, want, N * 4u);
    /* The destination closes first: its queued copy is done or dropped, the source goes on. */
    cubec_device *dst = test_device_open();
    cubec_stream s2 = new_stream(dst);
    cubec_buffer z;
    ASSERT_OK(cubec_buffer_create(dst, s2, N * 4u, &z));
    ASSERT_OK(cubec_copy_peer(f->b, ds, y, 0, dst, s2, z, 0, N * 4u));
    ASSERT_OK(cubec_buffer_release(dst, z));
    test_device_close(dst);
    ASSERT_OK(cubec_read(f->b, ds, y, 0, got, N * 4u));
    assert_memory_equal(got, want, N * 4u);
    ASSERT_OK(cubec_buffer_release(f->b, y));
    free(want);
    free(got);
}

typedef struct direction {
    fixture *f;
    int from;
    int rounds;
} direction;

static void *copy_rounds(void *arg)
{
    direction *w = arg;
    for (int i = 0; i < w->rounds; i++)
        round_trip(w->f, w->from);
    return NULL;
}

/* Two threads copying in opposite directions at once: neither waits for the other forever, and
 * every result is right. */
static void test_opposite_directions_from_two_threads(void **state)
{
    fixture *f = *state;
    direction w[2] = {{f, 0, 3}, {f, 1, 3}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, copy_rounds, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
}

int main(void)
{
    char chunk[32];
    snprintf(chunk, sizeof chunk, "%d", CHUNK);
    setenv("CUBEC_MULTI_CHUNK_BYTES", chunk, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_directions),
        cmocka_unit_test(test_offsets_and_odd_sizes),
        cmocka_unit_test(test_failure_crosses_devices),
        cmocka_unit_test(test_same_device),
        cmocka_unit_test(test_path_of_two_devices),
        cmocka_unit_test(test_forced_host_staged_on_one_device),
        cmocka_unit_test(test_refusals_change_nothing),
        cmocka_unit_test(test_opposite_directions_from_two_threads),
        cmocka_unit_test(test_the_caller_does_not_wait),
        cmocka_unit_test(test_close_right_after_a_copy),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
