/* Handles that name nothing, of every kind (buffers, kernels, graphs, profiles), and what the
 * refusal says about them: a made-up value is "unknown" (it was reported as "belongs to another
 * device"), a value with this device's tag that it never issued is "unknown" too, a released one
 * is "stale", and only a handle whose tag is another open device's "belongs to another device".
 * Each refusal changes nothing: the buffer written at the start still reads back intact. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include "base/handle_table.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { N = 64 };

#define TAG_BITS 0xffff000000000000ull

typedef struct fixture {
    cubec_device *d;
    cubec_stream s;
    cubec_kernel produce, consume, step;
    cubec_buffer x, y;
    uint32_t xs[N];
} fixture;

/* A value no device issued: its tag is one no device holds (a test opens a handful). */
static uint64_t made_up(void)
{
    return 0x7abc000012345678ull;
}

/* This device's tag over an index and generation it never issued. */
static uint64_t never_issued(uint64_t a_real_id)
{
    return (a_real_id & TAG_BITS) | handle_id_make(0, 7, 4242);
}

static void expect_intact(fixture *f)
{
    uint32_t got[N];
    ASSERT_OK(cubec_read(f->d, f->s, f->x, 0, got, sizeof got));
    assert_memory_equal(got, f->xs, sizeof got);
}

/* `st` is refused with `code`, says `needle` and never claims another device. */
static void expect_unknown(cubec_status st, cubec_code code, const char *needle)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", st ? cubec_status_message(st) : "(success)");
    if (st && strstr(msg, "another device")) {
        cubec_status_free(st);
        fail_msg("message \"%s\" claims another device", msg);
    }
    test_assert_error(st, code, needle, msg, __FILE__, __LINE__);
}

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    f.d = test_device_open();
    f.s = new_stream(f.d);
    uint_kernels_create(f.d, &f.produce, &f.consume, &f.step);
    for (uint32_t i = 0; i < N; i++)
        f.xs[i] = i * 5 + 1;
    ASSERT_OK(cubec_buffer_from(f.d, f.s, f.xs, sizeof f.xs, &f.x));
    ASSERT_OK(cubec_buffer_create(f.d, f.s, sizeof f.xs, &f.y));
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    expect_intact(f);
    ASSERT_OK(cubec_buffer_release(f->d, f->x));
    ASSERT_OK(cubec_buffer_release(f->d, f->y));
    uint_kernels_destroy(f->d, f->produce, f->consume, f->step);
    test_device_close(f->d);
    return 0;
}

/* The case: a launch of a kernel handle that was never created. */
static void test_launch_of_made_up_kernel(void **state)
{
    fixture *f = *state;
    expect_unknown(uint_launch(f->d, f->s, (cubec_kernel){made_up()}, f->x, f->y, N, 1, 0),
                   CUBEC_INVALID_ARGUMENT,
                   "cubec_launch: desc->kernel: kernel handle 0x7abc000012345678 is unknown: no "
                   "open device issued it");
    expect_unknown(uint_launch(f->d, f->s, (cubec_kernel){0x1234567}, f->x, f->y, N, 1, 0),
                   CUBEC_INVALID_ARGUMENT, "is unknown: no open device issued it");
    expect_unknown(
        uint_launch(f->d, f->s, (cubec_kernel){never_issued(f->consume.id)}, f->x, f->y, N, 1, 0),
        CUBEC_INVALID_ARGUMENT, "is unknown: this device never issued it");
    /* A made-up buffer in the launch. */
    expect_unknown(uint_launch(f->d, f->s, f->consume, f->x, (cubec_buffer){made_up()}, N, 1, 0),
                   CUBEC_INVALID_ARGUMENT,
                   "desc->buffers[1]: buffer handle 0x7abc000012345678 is unknown");
    expect_intact(f);
}

static void test_buffers(void **state)
{
    fixture *f = *state;
    uint32_t got[N];
    expect_unknown(cubec_read(f->d, f->s, (cubec_buffer){made_up()}, 0, got, sizeof got),
                   CUBEC_INVALID_ARGUMENT, "cubec_read: src: buffer handle");
    expect_unknown(cubec_buffer_retain(f->d, (cubec_buffer){never_issued(f->x.id)}),
                   CUBEC_INVALID_ARGUMENT, "is unknown: this device never issued it");
    cubec_buffer tmp;
    ASSERT_OK(cubec_buffer_create(f->d, f->s, 64, &tmp));
    ASSERT_OK(cubec_buffer_release(f->d, tmp));
    expect_unknown(cubec_write(f->d, f->s, tmp, 0, got, 64), CUBEC_INVALID_ARGUMENT,
                   "is stale: that buffer was released");
    /* The same slot's next generation, not issued yet: unknown, not stale. */
    expect_unknown(
        cubec_buffer_retain(f->d, (cubec_buffer){tmp.id + (1ull << HANDLE_GENERATION_SHIFT)}),
        CUBEC_INVALID_ARGUMENT, "is unknown: this device never issued it");
    expect_intact(f);
}

static void test_kernels(void **state)
{
    fixture *f = *state;
    cubec_kernel_info info = CUBEC_KERNEL_INFO_INIT;
    expect_unknown(cubec_kernel_get_info(f->d, (cubec_kernel){made_up()}, &info),
                   CUBEC_INVALID_ARGUMENT, "cubec_kernel_get_info: kernel: kernel handle");
    expect_unknown(cubec_kernel_destroy(f->d, (cubec_kernel){never_issued(f->step.id)}),
                   CUBEC_INVALID_ARGUMENT, "is unknown: this device never issued it");
    cubec_kernel k = make_kernel(f->d, "step again", step_src);
    ASSERT_OK(cubec_kernel_destroy(f->d, k));
    expect_unknown(uint_launch(f->d, f->s, k, f->x, NONE, N, 1, 0), CUBEC_INVALID_ARGUMENT,
                   "is stale: that kernel was destroyed");
    expect_intact(f);
}

static void test_graphs(void **state)
{
    fixture *f = *state;
    expect_unknown(cubec_graph_replay(f->d, f->s, (cubec_graph){made_up()}), CUBEC_GRAPH_STATE,
                   "cubec_graph_replay: graph handle 0x7abc000012345678 is unknown: no open "
                   "device issued it");
    /* A real graph: its tag tells a forged index, and once destroyed it is stale. */
    ASSERT_OK(cubec_graph_prepare(f->d, f->s));
    ASSERT_OK(uint_launch(f->d, f->s, f->consume, f->x, f->y, N, 2, 1));
    ASSERT_OK(cubec_graph_begin(f->d, f->s));
    ASSERT_OK(uint_launch(f->d, f->s, f->consume, f->x, f->y, N, 2, 1));
    cubec_graph g;
    ASSERT_OK(cubec_graph_end(f->d, f->s, &g));
    expect_unknown(cubec_graph_replay(f->d, f->s, (cubec_graph){never_issued(g.id)}),
                   CUBEC_GRAPH_STATE, "is unknown: this device never issued it");
    ASSERT_OK(cubec_graph_replay(f->d, f->s, g));
    ASSERT_OK(cubec_graph_destroy(f->d, f->s, g));
    expect_unknown(cubec_graph_replay(f->d, f->s, g), CUBEC_GRAPH_STATE,
                   "is stale: that graph was destroyed");
    expect_intact(f);
}

static void test_profiles(void **state)
{
    fixture *f = *state;
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    expect_unknown(cubec_profile_end(f->d, f->s, (cubec_profile){made_up()}, &r),
                   CUBEC_INVALID_ARGUMENT,
                   "cubec_profile_end: profile: profile handle 0x7abc000012345678 is unknown: no "
                   "open device issued it");
    cubec_profile p;
    ASSERT_OK(cubec_profile_begin(f->d, f->s, &p));
    expect_unknown(cubec_profile_abandon(f->d, f->s, (cubec_profile){never_issued(p.id)}),
                   CUBEC_INVALID_ARGUMENT, "is unknown: this device never issued it");
    ASSERT_OK(cubec_profile_abandon(f->d, f->s, p));
    expect_unknown(cubec_profile_end(f->d, f->s, p, &r), CUBEC_INVALID_ARGUMENT,
                   "is stale: that profile was ended or abandoned");
    expect_intact(f);
}

/* Only a handle whose tag is another open device's is called that device's; once that device is
 * closed, its handles are unknown. */
static void test_other_device_open_and_closed(void **state)
{
    fixture *f = *state;
    cubec_device *third = test_device_open();
    cubec_buffer foreign;
    ASSERT_OK(cubec_buffer_create(third, 0, 64, &foreign));
    cubec_kernel foreign_k = make_kernel(third, "foreign step", step_src);
    uint32_t got[16];
    ASSERT_ERROR(cubec_read(f->d, f->s, foreign, 0, got, sizeof got), CUBEC_INVALID_ARGUMENT,
                 "belongs to another device");
    ASSERT_ERROR(uint_launch(f->d, f->s, foreign_k, f->x, NONE, N, 1, 0), CUBEC_INVALID_ARGUMENT,
                 "cubec_launch: desc->kernel: kernel handle");
    ASSERT_ERROR(uint_launch(f->d, f->s, foreign_k, f->x, NONE, N, 1, 0), CUBEC_INVALID_ARGUMENT,
                 "belongs to another device");
    test_device_close(third);
    expect_unknown(cubec_read(f->d, f->s, foreign, 0, got, sizeof got), CUBEC_INVALID_ARGUMENT,
                   "is unknown: no open device issued it");
    expect_unknown(uint_launch(f->d, f->s, foreign_k, f->x, NONE, N, 1, 0), CUBEC_INVALID_ARGUMENT,
                   "is unknown: no open device issued it");
    /* A device opened after it gets another tag: the closed device's handles stay unknown. */
    cubec_device *fourth = test_device_open();
    expect_unknown(cubec_read(f->d, f->s, foreign, 0, got, sizeof got), CUBEC_INVALID_ARGUMENT,
                   "is unknown: no open device issued it");
    expect_unknown(cubec_buffer_retain(fourth, foreign), CUBEC_INVALID_ARGUMENT, "is unknown");
    test_device_close(fourth);
    expect_intact(f);
}

/* Issue 11: a released buffer handle and a destroyed kernel handle, then 70 000 create/release
 * cycles of each handle's slot on the null backend: past the 65 535 generations a handle id used
 * to have. Neither id is ever issued again, and afterwards both are still refused as released
 * while new objects hold their slots: a read of the stale buffer never returns the live buffer's
 * bytes. */
static void test_released_handles_never_alias(void **state)
{
    (void)state;
    cubec_device *d = NULL;
    ASSERT_OK(cubec_device_open(
        &(cubec_device_desc){.struct_size = sizeof(cubec_device_desc), .backend = "null"}, &d));
    cubec_stream s = new_stream(d);
    uint32_t old_words[N], new_words[N], got[N];
    for (uint32_t i = 0; i < N; i++) {
        old_words[i] = 0xdead0000u + i;
        new_words[i] = 0x0b0b0000u + i * 3;
    }
    cubec_buffer stale;
    ASSERT_OK(cubec_buffer_from(d, s, old_words, sizeof old_words, &stale));
    ASSERT_OK(cubec_buffer_release(d, stale));
    cubec_kernel stale_k = make_kernel(d, "step", step_src);
    ASSERT_OK(cubec_kernel_destroy(d, stale_k));
    enum { CYCLES = 70000 };
    for (uint32_t i = 0; i < CYCLES; i++) {
        cubec_buffer b;
        ASSERT_OK(cubec_buffer_create(d, s, sizeof got, &b));
        cubec_kernel k = make_kernel(d, "step", step_src);
        if (b.id == stale.id || k.id == stale_k.id)
            fail_msg("cycle %u: a released handle was issued again (buffer 0x%016llx, kernel "
                     "0x%016llx)",
                     i, (unsigned long long)b.id, (unsigned long long)k.id);
        ASSERT_OK(cubec_buffer_release(d, b));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    /* New objects hold the slots now. */
    cubec_buffer live;
    ASSERT_OK(cubec_buffer_from(d, s, new_words, sizeof new_words, &live));
    cubec_kernel live_k = make_kernel(d, "step", step_src);
    memset(got, 0xab, sizeof got);
    char needle[128];
    snprintf(needle, sizeof needle,
             "cubec_read: src: buffer handle 0x%016llx is stale: that buffer was released",
             (unsigned long long)stale.id);
    expect_unknown(cubec_read(d, s, stale, 0, got, sizeof got), CUBEC_INVALID_ARGUMENT, needle);
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(got[i], 0xababababu); /* nothing was read */
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    expect_unknown(cubec_kernel_get_info(d, stale_k, &ki), CUBEC_INVALID_ARGUMENT,
                   "is stale: that kernel was destroyed");
    expect_unknown(cubec_buffer_release(d, stale), CUBEC_INVALID_ARGUMENT,
                   "is stale: that buffer was released");
    /* The live objects are untouched by the refusals. */
    ASSERT_OK(cubec_read(d, s, live, 0, got, sizeof got));
    assert_memory_equal(got, new_words, sizeof got);
    ASSERT_OK(cubec_kernel_get_info(d, live_k, &ki));
    ASSERT_OK(cubec_buffer_release(d, live));
    ASSERT_OK(cubec_kernel_destroy(d, live_k));
    cubec_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launch_of_made_up_kernel),
        cmocka_unit_test(test_buffers),
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_graphs),
        cmocka_unit_test(test_profiles),
        cmocka_unit_test(test_other_device_open_and_closed),
        cmocka_unit_test(test_released_handles_never_alias),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
