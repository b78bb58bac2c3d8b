/* Several devices in one process (two or three opens of the one lavapipe device act as that
 * many): each runs its own chains of kernels from its own threads at the same time as the
 * others, with every result checked against the CPU's, and a handle of one device given to
 * another (buffer, view, kernel, stream, graph, image, profile, guard) is refused naming the
 * argument, changing nothing. Events carry their device and take none, so they cannot be mixed. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DEVICES = 3, THREADS_PER_DEVICE = 2, ROUNDS = 6, N = 4096 };

typedef struct device_set {
    cubec_device *d[DEVICES];
    cubec_kernel produce[DEVICES], consume[DEVICES], step[DEVICES];
} device_set;

typedef struct worker {
    device_set *set;
    int device, index;
    char error[256]; /* empty: every result was right */
} worker;

static void set_open(device_set *s)
{
    for (int i = 0; i < DEVICES; i++) {
        s->d[i] = test_device_open();
        uint_kernels_create(s->d[i], &s->produce[i], &s->consume[i], &s->step[i]);
    }
}

static void set_close(device_set *s)
{
    for (int i = DEVICES - 1; i >= 0; i--) {
        uint_kernels_destroy(s->d[i], s->produce[i], s->consume[i], s->step[i]);
        test_device_close(s->d[i]);
    }
}

/* A chain produce -> consume -> step on the worker's own stream, ROUNDS times with different
 * constants, each checked. Runs on a thread of its own: no cmocka assertion here. */
static void *chains(void *arg)
{
    worker *w = arg;
    int i = w->device;
    cubec_device *d = w->set->d[i];
    cubec_stream s;
    cubec_buffer x = {0}, y = {0};
    uint32_t *got = malloc(N * 4u), *want = malloc(N * 4u), *mid = malloc(N * 4u);
    cubec_status err = cubec_stream_new(d, &s);
    if (!err) err = cubec_buffer_create(d, s, N * 4u, &x);
    if (!err) err = cubec_buffer_create(d, s, N * 4u, &y);
    for (uint32_t r = 0; r < ROUNDS && !err && !w->error[0]; r++) {
        uint32_t mul = 3 + r + (uint32_t)w->index * 7, add = (uint32_t)i * 1000 + r;
        err = uint_launch(d, s, w->set->produce[i], x, NONE, N, mul, add);
        if (!err) err = uint_launch(d, s, w->set->consume[i], x, y, N, 5, (uint32_t)i);
        if (!err) err = uint_launch(d, s, w->set->step[i], y, NONE, N, 2, 1);
        if (!err) err = cubec_read(d, s, y, 0, got, N * 4u);
        if (err) break;
        cpu_produce(mid, N, mul, add);
        cpu_consume(mid, want, N, 5, (uint32_t)i);
        cpu_consume(want, want, N, 2, 1);
        for (uint32_t k = 0; k < N; k++)
            if (got[k] != want[k]) {
                snprintf(w->error, sizeof w->error,
                         "device %d, thread %d, round %u: word %u is %u, want %u", i, w->index, r,
                         k, got[k], want[k]);
                break;
            }
    }
    if (err) {
        snprintf(w->error, sizeof w->error, "device %d, thread %d: %s", i, w->index,
                 cubec_status_message(err));
        cubec_status_free(err);
    }
    if (x.id) cubec_status_free(cubec_buffer_release(d, x));
    if (y.id) cubec_status_free(cubec_buffer_release(d, y));
    free(got);
    free(want);
    free(mid);
    return NULL;
}

static void test_three_devices_from_six_threads(void **state)
{
    (void)state;
    device_set set;
    set_open(&set);
    worker w[DEVICES * THREADS_PER_DEVICE];
    pthread_t t[DEVICES * THREADS_PER_DEVICE];
    for (int k = 0; k < DEVICES * THREADS_PER_DEVICE; k++) {
        w[k] = (worker){&set, k % DEVICES, k / DEVICES, ""};
        assert_int_equal(pthread_create(&t[k], NULL, chains, &w[k]), 0);
    }
    for (int k = 0; k < DEVICES * THREADS_PER_DEVICE; k++)
        pthread_join(t[k], NULL);
    for (int k = 0; k < DEVICES * THREADS_PER_DEVICE; k++)
        if (w[k].error[0]) fail_msg("%s", w[k].error);
    set_close(&set);
}

/* Closing one device while the others work leaves them working. */
static void test_close_one_while_others_run(void **state)
{
    (void)state;
    device_set set;
    set_open(&set);
    worker w[2] = {{&set, 0, 0, ""}, {&set, 2, 0, ""}};
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_create(&t[k], NULL, chains, &w[k]), 0);
    uint_kernels_destroy(set.d[1], set.produce[1], set.consume[1], set.step[1]);
    test_device_close(set.d[1]);
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    for (int k = 0; k < 2; k++)
        if (w[k].error[0]) fail_msg("%s", w[k].error);
    for (int i = 0; i < DEVICES; i += 2) {
        uint_kernels_destroy(set.d[i], set.produce[i], set.consume[i], set.step[i]);
        test_device_close(set.d[i]);
    }
}

/* Every kind of handle of device b given to device a: refused by name, nothing changed. */
static void test_handles_of_another_device(void **state)
{
    (void)state;
    cubec_device *a = test_device_open(), *b = test_device_open();
    cubec_kernel pa, ca, sa, pb, cb, sb;
    uint_kernels_create(a, &pa, &ca, &sa);
    uint_kernels_create(b, &pb, &cb, &sb);
    cubec_stream s_a = new_stream(a), s_b = new_stream(b);
    uint32_t words[64];
    for (int i = 0; i < 64; i++)
        words[i] = 100u + (uint32_t)i;
    cubec_buffer xa, xb, view_b;
    ASSERT_OK(cubec_buffer_from(a, s_a, words, sizeof words, &xa));
    ASSERT_OK(cubec_buffer_from(b, s_b, words, sizeof words, &xb));
    ASSERT_OK(cubec_buffer_view(b, xb, 0, 64, &view_b));

    /* Buffers and views. */
    uint32_t got[64];
    ASSERT_ERROR(cubec_read(a, s_a, xb, 0, got, sizeof got), CUBEC_INVALID_ARGUMENT,
                 "belongs to another device");
    ASSERT_ERROR(cubec_write(a, s_a, view_b, 0, got, 16), CUBEC_INVALID_ARGUMENT,
                 "cubec_write: dst: buffer handle");
    ASSERT_ERROR(cubec_copy(a, s_a, xa, 0, xb, 0, 64), CUBEC_INVALID_ARGUMENT,
                 "cubec_copy: dst: buffer handle");
    ASSERT_ERROR(cubec_buffer_release(a, xb), CUBEC_INVALID_ARGUMENT, "belongs to another device");
    ASSERT_ERROR(uint_launch(a, s_a, pa, xb, NONE, 64, 1, 0), CUBEC_INVALID_ARGUMENT,
                 "belongs to another device");
    /* Kernels. */
    ASSERT_ERROR(uint_launch(a, s_a, pb, xa, NONE, 64, 1, 0), CUBEC_INVALID_ARGUMENT,
                 "cubec_launch: desc->kernel: kernel handle");
    ASSERT_ERROR(cubec_kernel_destroy(a, pb), CUBEC_INVALID_ARGUMENT, "belongs to another device");
    /* Streams. */
    ASSERT_ERROR(cubec_flush(a, s_b), CUBEC_INVALID_ARGUMENT, "cubec_flush");
    ASSERT_ERROR(cubec_read(a, s_b, xa, 0, got, sizeof got), CUBEC_INVALID_ARGUMENT, "cubec_read");
    ASSERT_ERROR(cubec_buffer_create(a, s_b, 64, &(cubec_buffer){0}), CUBEC_INVALID_ARGUMENT,
                 "cubec_buffer_create");
    /* Graphs. */
    cubec_graph gb;
    ASSERT_OK(cubec_graph_prepare(b, s_b));
    ASSERT_OK(uint_launch(b, s_b, sb, xb, NONE, 64, 1, 1));
    ASSERT_OK(cubec_graph_begin(b, s_b));
    ASSERT_OK(uint_launch(b, s_b, sb, xb, NONE, 64, 1, 1));
    ASSERT_OK(cubec_graph_end(b, s_b, &gb));
    /* Graph handles that name no graph of the device are CUBEC_GRAPH_STATE (docs/graphs.md). */
    ASSERT_ERROR(cubec_graph_replay(a, s_a, gb), CUBEC_GRAPH_STATE,
                 "cubec_graph_replay: graph handle");
    ASSERT_ERROR(cubec_graph_replay(a, s_a, gb), CUBEC_GRAPH_STATE, "belongs to another device");
    ASSERT_ERROR(cubec_graph_destroy(a, s_a, gb), CUBEC_GRAPH_STATE, "belongs to another device");
    /* Images. */
    cubec_image_desc id = CUBEC_IMAGE_DESC_INIT;
    id.format = CUBEC_IMAGE_FORMAT_R32_UINT;
    id.width = 8;
    id.height = 8;
    cubec_image ib;
    ASSERT_OK(cubec_image_create(b, s_b, &id, &ib));
    ASSERT_ERROR(cubec_image_write(a, s_a, ib, got, 256), CUBEC_INVALID_ARGUMENT,
                 "belongs to another device");
    ASSERT_ERROR(cubec_image_release(a, ib), CUBEC_INVALID_ARGUMENT, "belongs to another device");
    /* Profiles. */
    cubec_profile prb;
    ASSERT_OK(cubec_profile_begin(b, s_b, &prb));
    ASSERT_ERROR(cubec_profile_abandon(a, s_a, prb), CUBEC_INVALID_ARGUMENT,
                 "belongs to another device");
    /* Guards. */
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    cubec_guard guard_b;
    ASSERT_OK(cubec_buffer_raw(b, s_b, xb, &raw, &guard_b));
    ASSERT_ERROR(cubec_guard_release(a, guard_b), CUBEC_INVALID_ARGUMENT,
                 "belongs to another device");

    /* Nothing changed: both devices' buffers and objects still work. */
    ASSERT_OK(cubec_guard_release(b, guard_b));
    ASSERT_OK(cubec_profile_abandon(b, s_b, prb));
    ASSERT_OK(cubec_image_release(b, ib));
    ASSERT_OK(cubec_graph_replay(b, s_b, gb));
    ASSERT_OK(cubec_graph_destroy(b, s_b, gb));
    ASSERT_OK(cubec_read(a, s_a, xa, 0, got, sizeof got));
    assert_memory_equal(got, words, sizeof got);
    uint32_t want[64]; /* the warm-up's step and the replay's (the captured one only recorded) */
    cpu_consume(words, want, 64, 1, 1);
    cpu_consume(want, want, 64, 1, 1);
    ASSERT_OK(cubec_read(b, s_b, xb, 0, got, sizeof got));
    assert_memory_equal(got, want, sizeof got);
    ASSERT_OK(cubec_buffer_release(b, view_b));
    ASSERT_OK(cubec_buffer_release(a, xa));
    ASSERT_OK(cubec_buffer_release(b, xb));
    uint_kernels_destroy(a, pa, ca, sa);
    uint_kernels_destroy(b, pb, cb, sb);
    test_device_close(b);
    test_device_close(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_devices_from_six_threads),
        cmocka_unit_test(test_close_one_while_others_run),
        cmocka_unit_test(test_handles_of_another_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
