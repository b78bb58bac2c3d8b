/* Bad stream arguments: a stream id of another device (open or closed), a made-up id, and a
 * released buffer used on another stream than the one that created it. Each call is refused with
 * CUBEC_INVALID_ARGUMENT naming the function and the stream (or the released handle), queues
 * nothing, and leaves data already written intact (read back after every refusal, on both
 * streams, with work still queued on them). */
#include "test_util.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* b[i] = b[i] * 3 + add: a launch that would change the data if it were queued. */
static const char step_src[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) buffer B { uint b[]; };\n"
                               "CUBEC_INFO(uint add;)\n"
                               "void main() {\n"
                               "  uint i = gl_GlobalInvocationID.x;\n"
                               "  b[i] = b[i] * 3u + info.add;\n"
                               "}\n";

/* y[i] = x[i] + add */
static const char copy_add_src[] = "#version 450\n"
                                   "layout(local_size_x = 64) in;\n"
                                   "layout(std430, binding = 0) readonly buffer X { uint x[]; };\n"
                                   "layout(std430, binding = 1) writeonly buffer Y { uint y[]; };\n"
                                   "CUBEC_INFO(uint add;)\n"
                                   "void main() {\n"
                                   "  uint i = gl_GlobalInvocationID.x;\n"
                                   "  y[i] = x[i] + info.add;\n"
                                   "}\n";

enum { WORDS = 256 };

typedef struct fixture {
    cubec_device *d, *other;
    cubec_stream a, b;    /* streams of d */
    cubec_stream foreign; /* a stream of `other` */
    cubec_buffer x, y;    /* x owned by a, y by b */
    cubec_kernel step, copy_add;
    uint32_t want_x[WORDS]; /* what x and y hold */
    uint32_t want_y[WORDS];
} fixture;

static cubec_launch_desc step_desc(fixture *f, const cubec_buffer *buf, const uint32_t *add)
{
    return (cubec_launch_desc){.struct_size = sizeof(cubec_launch_desc),
                               .kernel = f->step,
                               .buffers = buf,
                               .buffer_count = 1,
                               .info = add,
                               .info_size = 4,
                               .groups = {WORDS / 64, 1, 1}};
}

static void cpu_step(uint32_t *v, uint32_t add)
{
    for (uint32_t i = 0; i < WORDS; i++)
        v[i] = v[i] * 3u + add;
}

/* Queues one step on x (stream a) and one on y (stream b), so that refusals happen with work
 * pending on both streams. */
static void queue_work(fixture *f, uint32_t add)
{
    cubec_launch_desc ld = step_desc(f, &f->x, &add);
    ASSERT_OK(cubec_launch(f->d, f->a, &ld));
    cpu_step(f->want_x, add);
    ld.buffers = &f->y;
    ASSERT_OK(cubec_launch(f->d, f->b, &ld));
    cpu_step(f->want_y, add);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->d = test_device_open();
    f->other = test_device_open();
    ASSERT_OK(cubec_stream_new(f->d, &f->a));
    ASSERT_OK(cubec_stream_new(f->d, &f->b));
    ASSERT_OK(cubec_stream_new(f->other, &f->foreign));
    for (uint32_t i = 0; i < WORDS; i++) {
        f->want_x[i] = i * 7 + 3;
        f->want_y[i] = i ^ 0x5555u;
    }
    ASSERT_OK(cubec_buffer_from(f->d, f->a, f->want_x, sizeof f->want_x, &f->x));
    ASSERT_OK(cubec_buffer_from(f->d, f->b, f->want_y, sizeof f->want_y, &f->y));
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "step", .glsl = step_src};
    ASSERT_OK(cubec_kernel_create(f->d, &kd, &f->step));
    cubec_kernel_desc kc = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "copy_add", .glsl = copy_add_src};
    ASSERT_OK(cubec_kernel_create(f->d, &kc, &f->copy_add));
    queue_work(f, 1);
    *state = f;
    return 0;
}

/* x and y hold what the accepted calls made of them; read on both streams and on the other's. */
static void assert_intact(fixture *f)
{
    uint32_t got[WORDS];
    cubec_stream on[] = {f->a, f->b, CUBEC_STREAM_CURRENT};
    for (uint32_t i = 0; i < 3; i++) {
        ASSERT_OK(cubec_read(f->d, on[i], f->x, 0, got, sizeof got));
        assert_memory_equal(got, f->want_x, sizeof got);
        ASSERT_OK(cubec_read(f->d, on[i], f->y, 0, got, sizeof got));
        assert_memory_equal(got, f->want_y, sizeof got);
    }
}

static int teardown(void **state)
{
    fixture *f = *state;
    assert_intact(f);
    ASSERT_OK(cubec_buffer_release(f->d, f->x));
    ASSERT_OK(cubec_buffer_release(f->d, f->y));
    ASSERT_OK(cubec_kernel_destroy(f->d, f->step));
    ASSERT_OK(cubec_kernel_destroy(f->d, f->copy_add));
    test_device_close(f->other);
    test_device_close(f->d);
    free(f);
    return 0;
}

/* Every call that takes a stream, given `s` on f->d, is refused naming the function and `s`,
 * followed by `why` when it is not NULL. */
static void expect_stream_refused_why(fixture *f, cubec_stream s, const char *why)
{
    char id[32];
    snprintf(id, sizeof id, "0x%016" PRIx64, s);
    char needle[160];
    uint32_t host[WORDS];
    memset(host, 0xab, sizeof host);
    uint32_t add = 1000;
    cubec_launch_desc ld = step_desc(f, &f->x, &add);
#define REFUSED(call, fn)                                                                          \
    do {                                                                                           \
        snprintf(needle, sizeof needle, "%s: stream %s%s", fn, id, why ? why : "");                \
        ASSERT_ERROR(call, CUBEC_INVALID_ARGUMENT, needle);                                        \
    } while (0)
    REFUSED(cubec_launch(f->d, s, &ld), "cubec_launch");
    REFUSED(cubec_write(f->d, s, f->x, 0, host, sizeof host), "cubec_write");
    REFUSED(cubec_read(f->d, s, f->x, 0, host, sizeof host), "cubec_read");
    REFUSED(cubec_fill(f->d, s, f->y, 0, sizeof host, 0xdeadbeefu), "cubec_fill");
    REFUSED(cubec_copy(f->d, s, f->x, 0, f->y, 0, sizeof host), "cubec_copy");
    cubec_event *e = (cubec_event *)&add; /* cleared on entry */
    REFUSED(cubec_read_async(f->d, s, f->x, 0, host, sizeof host, &e), "cubec_read_async");
    assert_null(e);
    cubec_buffer out = {0x77};
    REFUSED(cubec_buffer_create(f->d, s, 64, &out), "cubec_buffer_create");
    assert_int_equal(out.id, 0);
    out.id = 0x77;
    REFUSED(cubec_buffer_from(f->d, s, host, sizeof host, &out), "cubec_buffer_from");
    assert_int_equal(out.id, 0);
    REFUSED(cubec_sync(f->d, s), "cubec_sync");
    REFUSED(cubec_flush(f->d, s), "cubec_flush");
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    REFUSED(cubec_memory_report_get(f->d, s, &r), "cubec_memory_report_get");
    REFUSED(cubec_memory_cleanup(f->d, s), "cubec_memory_cleanup");
#undef REFUSED
    /* The host buffer a refused read would have filled is untouched. */
    for (uint32_t i = 0; i < WORDS; i++)
        assert_int_equal(host[i], 0xabababab);
    assert_intact(f);
}

static void expect_stream_refused(fixture *f, cubec_stream s)
{
    expect_stream_refused_why(f, s, NULL);
}

static void test_stream_of_another_device(void **state)
{
    fixture *f = *state;
    expect_stream_refused(f, f->foreign);
    /* The other device's current stream too (its id carries that device's tag). */
    cubec_stream other_current;
    ASSERT_OK(cubec_stream_get_current(f->other, &other_current));
    expect_stream_refused(f, other_current);
    /* And the stream is fine on its own device. */
    cubec_buffer t;
    ASSERT_OK(cubec_buffer_create(f->other, f->foreign, 64, &t));
    ASSERT_OK(cubec_sync(f->other, f->foreign));
    ASSERT_OK(cubec_buffer_release(f->other, t));
    queue_work(f, 2);
    assert_intact(f);
}

/* A device that was closed: its streams are not valid on a device opened later. */
static void test_stream_of_a_closed_device(void **state)
{
    fixture *f = *state;
    cubec_device *gone = test_device_open();
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(gone, &s));
    test_device_close(gone);
    expect_stream_refused(f, s);
}

static void test_made_up_stream(void **state)
{
    fixture *f = *state;
    expect_stream_refused(f, 12345);
    expect_stream_refused(f, UINT64_MAX);
    /* A real id with its device tag changed. */
    expect_stream_refused(f, f->a ^ (1ull << 60));
    /* Issue 11: this device's tag over numbers it never handed out: they used to fold onto a slot
     * and be accepted. A number far beyond any stream made yet, one that folds onto a's slot, the
     * number of the other device's stream, and the largest number. */
    const char *not_made = " was not created by cubec_stream_new on this device";
    const uint64_t tag = f->a & 0xffff000000000000ull, numbers = 0xffffffffffffull;
    expect_stream_refused_why(f, tag | ((f->b & numbers) + 100000), not_made);
    expect_stream_refused_why(f, tag | ((f->a & numbers) + 128ull * 1000), not_made);
    expect_stream_refused_why(f, tag | (f->foreign & numbers), not_made);
    expect_stream_refused_why(f, tag | numbers, not_made);
    queue_work(f, 3);
    assert_intact(f);
}

typedef struct current_of_thread {
    cubec_device *d;
    cubec_stream id;
    cubec_status st;
} current_of_thread;

static void *ask_current(void *arg)
{
    current_of_thread *c = arg;
    c->st = cubec_stream_get_current(c->d, &c->id);
    return NULL;
}

/* The ids cubec hands out stay accepted: a stream of cubec_stream_new, the calling thread's
 * current stream by its id, and another thread's current stream by the id that thread got. */
static void test_streams_handed_out_are_accepted(void **state)
{
    fixture *f = *state;
    current_of_thread c = {.d = f->d};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, ask_current, &c), 0);
    pthread_join(t, NULL);
    ASSERT_OK(c.st);
    cubec_stream mine;
    ASSERT_OK(cubec_stream_get_current(f->d, &mine));
    assert_true(mine != c.id);
    cubec_stream on[] = {f->a, f->b, mine, c.id};
    for (uint32_t i = 0; i < 4; i++) {
        uint32_t add = 10 + i;
        cubec_launch_desc ld = step_desc(f, &f->x, &add);
        ASSERT_OK(cubec_launch(f->d, on[i], &ld));
        cpu_step(f->want_x, add);
        ASSERT_OK(cubec_sync(f->d, on[i]));
        assert_intact(f);
    }
}

/* A buffer created on stream a and released there is refused on stream b, even while queued
 * work still holds its memory; that work still produces its result. */
static void test_released_buffer_on_another_stream(void **state)
{
    fixture *f = *state;
    uint32_t data[WORDS], got[WORDS], want[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        data[i] = 0x1000u + i;
    cubec_buffer t, out;
    ASSERT_OK(cubec_buffer_from(f->d, f->a, data, sizeof data, &t));
    ASSERT_OK(cubec_buffer_create(f->d, f->b, sizeof data, &out));
    /* b queues a kernel reading t; a releases t while it is queued. */
    uint32_t add = 5;
    cubec_buffer io[2] = {t, out};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = f->copy_add,
                            .buffers = io,
                            .buffer_count = 2,
                            .info = &add,
                            .info_size = 4,
                            .groups = {WORDS / 64, 1, 1}};
    ASSERT_OK(cubec_launch(f->d, f->b, &ld));
    for (uint32_t i = 0; i < WORDS; i++)
        want[i] = data[i] + 5;
    ASSERT_OK(cubec_buffer_release(f->d, t));

    char id[32];
    snprintf(id, sizeof id, "0x%016" PRIx64, t.id);
    cubec_stream on[] = {f->b, f->a};
    for (uint32_t k = 0; k < 2; k++) {
        cubec_stream s = on[k];
        cubec_launch_desc sd = step_desc(f, &t, &add);
        ASSERT_ERROR(cubec_launch(f->d, s, &sd), CUBEC_INVALID_ARGUMENT, "released");
        ASSERT_ERROR(cubec_launch(f->d, s, &ld), CUBEC_INVALID_ARGUMENT, "desc->buffers[0]");
        ASSERT_ERROR(cubec_read(f->d, s, t, 0, got, sizeof got), CUBEC_INVALID_ARGUMENT, id);
        ASSERT_ERROR(cubec_write(f->d, s, t, 0, got, sizeof got), CUBEC_INVALID_ARGUMENT,
                     "released");
        ASSERT_ERROR(cubec_fill(f->d, s, t, 0, sizeof got, 0), CUBEC_INVALID_ARGUMENT, "released");
        ASSERT_ERROR(cubec_copy(f->d, s, t, 0, f->y, 0, sizeof got), CUBEC_INVALID_ARGUMENT,
                     "released");
        ASSERT_ERROR(cubec_copy(f->d, s, f->x, 0, t, 0, sizeof got), CUBEC_INVALID_ARGUMENT,
                     "released");
        cubec_event *e = NULL;
        ASSERT_ERROR(cubec_read_async(f->d, s, t, 0, got, sizeof got, &e), CUBEC_INVALID_ARGUMENT,
                     "released");
        assert_null(e);
        assert_intact(f);
    }
    cubec_buffer v;
    ASSERT_ERROR(cubec_buffer_view(f->d, t, 0, 64, &v), CUBEC_INVALID_ARGUMENT, "released");
    ASSERT_ERROR(cubec_buffer_retain(f->d, t), CUBEC_INVALID_ARGUMENT, "released");
    ASSERT_ERROR(cubec_buffer_release(f->d, t), CUBEC_INVALID_ARGUMENT, "released");
    /* The queued kernel ran on what t held. */
    ASSERT_OK(cubec_read(f->d, f->a, out, 0, got, sizeof got));
    assert_memory_equal(got, want, sizeof got);
    ASSERT_OK(cubec_buffer_release(f->d, out));
    /* A buffer of the other device on a stream of this one: refused as a foreign handle. */
    cubec_buffer foreign;
    ASSERT_OK(cubec_buffer_create(f->other, f->foreign, 64, &foreign));
    ASSERT_ERROR(cubec_read(f->d, f->a, foreign, 0, got, 64), CUBEC_INVALID_ARGUMENT,
                 "another device");
    ASSERT_OK(cubec_buffer_release(f->other, foreign));
    queue_work(f, 4);
    assert_intact(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stream_of_another_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_of_a_closed_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_made_up_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streams_handed_out_are_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_released_buffer_on_another_stream, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
