/* Failures on memory (cubec.h "Failures on memory", spec section 5), one test per rule, on the
 * default device with the validation layer on:
 *  (a) a launch whose input (a binding it reads, or the buffer of its indirect count, or the
 *      source of a copy) carries a failure is skipped, not run, and its outputs take the failure
 *      with a link naming the launch, its stream and the input;
 *  (b) a write whose destination cannot be written taints it; a successful host write clears the
 *      failure of exactly the range it wrote;
 *  (c) cubec_read, cubec_check and cubec_sync_check of a tainted range return the error, whose
 *      message names the root cause and the chain that led to the buffer;
 *  (d) a failure on one stream never blocks unrelated buffers or streams;
 *  (e) a lost submission taints everything it would have written; a lost device (an injected
 *      wait failure) makes every later call fail fast with CUBEC_DEVICE_LOST;
 *  (f) the fault injection API and CUBEC_FAULT.
 * Failures are made with cubec's fault injection. Every expected value and every expected message
 * is computed here (buffer numbers follow the order of creation on a fresh device, stream numbers
 * are the low 48 bits of the stream ids); every error checked is printed (docs/errors.md quotes
 * them). The device's internal counters (server_stats_get) prove that a skipped launch was not
 * recorded. Three tests guard what these tests found: test_successful_relaunch_clears_failure
 * (spec 5.3: a launch that runs releases the failure of what it writes),
 * test_page_fault_fails_buffer_creation (a single injected page fault is absorbed by the
 * out-of-memory retry, or fails the creation naming it) and
 * test_fault_environment_refuses_negative_numbers. Three guard what a review found about fills and
 * copies of a range below the storage offset alignment
 * (test_unaligned_write_keeps_failure_before_it, test_lost_unaligned_write_taints_only_its_bytes,
 * test_copy_not_skipped_for_failure_before_its_source). */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include "base/clock.h"
#include "server/device.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL_HEAD UINT_KERNEL_HEAD
#define KERNEL_INFO UINT_KERNEL_INFO

/* y[i] = max(int(x[i] * mul + add), 0): a ReLU over the consume step (a distinct kernel, so that
 * messages name it). */
static const char relu_src[] = KERNEL_HEAD
    "layout(std430, binding = 0) readonly buffer X { uint x[]; };\n"
    "layout(std430, binding = 1) writeonly buffer Y { uint y[]; };\n" KERNEL_INFO "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < info.n) y[i] = uint(max(int(x[i] * info.mul + info.add), 0));\n"
    "}\n";

#define N 256 /* words per buffer */
#define BYTES ((uint64_t)N * 4)
/* The busy kernel (uint_kernels.h) keeps the device busy for a while, so that a wait that follows
 * really waits. */
#define BUSY_STEPS 60000u
#define BUSY_WORDS 2048u /* 32 groups: some 50 ms on lavapipe */

typedef struct kernels {
    cubec_kernel produce, consume, relu, step, busy;
} kernels;

static kernels kernels_create(cubec_device *d)
{
    kernels k;
    uint_kernels_create(d, &k.produce, &k.consume, &k.step);
    k.relu = make_kernel(d, "relu", relu_src);
    k.busy = make_kernel(d, "busy", busy_src);
    return k;
}

static void kernels_destroy(cubec_device *d, kernels k)
{
    uint_kernels_destroy(d, k.produce, k.consume, k.step);
    ASSERT_OK(cubec_kernel_destroy(d, k.relu));
    ASSERT_OK(cubec_kernel_destroy(d, k.busy));
}

/* Keeps the GPU busy on `scratch` (BUSY_WORDS words). */
static cubec_status launch_busy(cubec_device *d, cubec_stream s, const kernels *k,
                                cubec_buffer scratch)
{
    return busy_launch(d, s, k->busy, scratch, BUSY_WORDS, BUSY_STEPS);
}

/* A buffer of N words, numbered (launch_util.h). */
static tbuf make_buffer(cubec_device *d, cubec_stream s, const uint32_t *data)
{
    return make_numbered_buffer(d, s, data, BYTES);
}

static uint64_t fault_count(cubec_device *d, cubec_fault_kind kind)
{
    uint64_t c[CUBEC_FAULT_KIND_COUNT];
    ASSERT_OK(cubec_fault_get_counts(d, c));
    return c[kind];
}

/* Arms a fault on the next call of `kind`; returns that call's number (as messages name it). */
static uint64_t arm_next(cubec_device *d, cubec_fault_kind kind)
{
    uint64_t n = fault_count(d, kind) + 1;
    ASSERT_OK(cubec_fault_inject(d, kind, 1));
    return n;
}

/* BUSY_STEPS steps of the LCG on each word: one affine map s -> a * s + c, composed once. */
static void cpu_busy(uint32_t *v)
{
    uint32_t a = 1, c = 0;
    for (uint32_t k = 0; k < BUSY_STEPS; k++) {
        a *= LCG_MUL;
        c = c * LCG_MUL + LCG_ADD;
    }
    for (uint32_t i = 0; i < BUSY_WORDS; i++)
        v[i] = v[i] * a + c;
}

/* All N words of `b` (a buffer of N words). */
static void expect_words(cubec_device *d, cubec_stream s, cubec_buffer b, const uint32_t *want,
                         const char *what)
{
    expect_range_in(d, s, b, N, 0, N, want, what);
}

/* ASSERT_ERROR that also prints the message (docs/errors.md quotes these lines). */
static void show_error(cubec_status st, cubec_code code, const char *needle, const char *expr,
                       int line)
{
    if (st)
        printf("    %s\n      -> %s: %s\n", expr, cubec_code_name(cubec_status_code(st)),
               cubec_status_message(st));
    test_assert_error(st, code, needle, expr, __FILE__, line);
}
#undef ASSERT_ERROR
#define ASSERT_ERROR(expr, code, needle) show_error((expr), (code), (needle), #expr, __LINE__)

/* Asserts that `st` is an error with `code` and exactly the message `want`. */
static void expect_message(cubec_status st, cubec_code code, const char *want, const char *what)
{
    if (!st) fail_msg("%s succeeded; expected the error \"%s\"", what, want);
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
    cubec_code got = cubec_status_code(st);
    cubec_status_free(st);
    if (got != code)
        fail_msg("%s gave %s (%s); expected %s", what, cubec_code_name(got), msg,
                 cubec_code_name(code));
    if (strcmp(msg, want)) fail_msg("%s:\n  message  \"%s\"\n  expected \"%s\"", what, msg, want);
    printf("    %s\n      -> %s: %s\n", what, cubec_code_name(got), msg);
}

static double now_s(void)
{
    return (double)clock_now_ns() * 1e-9;
}

/* The link of the chain a lost submission starts. */
static void lost_root(char *out, size_t size, uint64_t submit_call)
{
    snprintf(out, size, "the submission of its work failed: injected fault: submit call #%" PRIu64,
             submit_call);
}

/* (a) ---------------------------------------------------------------------------------------- */

/* produce -> h is lost with its submission; consume(h -> y) is then skipped, not recorded, and y
 * (which held host-written data) takes h's failure with a link naming the launch; launches whose
 * inputs are fine still run, on the same stream and after the skip. */
static void test_launch_skipped_when_input_failed(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t xs[N], old[N], want[N];
    cpu_produce(xs, N, 3, 1);
    cpu_produce(old, N, 0, 77);
    tbuf x = make_buffer(d, s, xs);
    tbuf h = make_buffer(d, s, NULL);
    tbuf y = make_buffer(d, s, old); /* written: it carries nothing before the skip */
    tbuf z = make_buffer(d, s, NULL);
    ASSERT_OK(cubec_check(d, &y.h, 1));

    ASSERT_OK(uint_launch(d, s, k.produce, h.h, NONE, N, 2, 5));
    uint64_t call = arm_next(d, CUBEC_FAULT_SUBMIT);
    ASSERT_ERROR(cubec_flush(d, s), CUBEC_INTERNAL, "injected fault: submit call #");

    uint64_t tasks = server_stats_get(d).tasks, skipped = server_stats_get(d).skipped;
    ASSERT_OK(uint_launch(d, s, k.consume, h.h, y.h, N, 7, 1));
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, z.h, N, 5, 2)); /* good input: runs */
    ASSERT_OK(cubec_sync(d, s));
    assert_int_equal(server_stats_get(d).skipped, skipped + 1);
    assert_int_equal(server_stats_get(d).tasks, tasks + 1); /* only the launch on x was recorded */

    char root[256], want_msg[1024];
    lost_root(root, sizeof root, call);
    snprintf(want_msg, sizeof want_msg,
             "read of buffer #%" PRIu64 ": not written: launch \"consume\" on stream %" PRIu64
             " was skipped because its input buffer #%" PRIu64 " was not written: %s",
             y.number, stream_number(s), h.number, root);
    uint32_t got[N];
    expect_message(cubec_read(d, s, y.h, 0, got, BYTES), CUBEC_INTERNAL, want_msg, "read of y");
    cpu_consume(xs, want, N, 5, 2);
    expect_words(d, s, z.h, want, "z (its input was fine)");
    expect_words(d, s, x.h, xs, "x (only read by the launch)");

    /* A read-write binding that carries a failure is an input too. */
    skipped = server_stats_get(d).skipped;
    ASSERT_OK(uint_launch(d, s, k.step, h.h, NONE, N, 3, 3));
    ASSERT_ERROR(cubec_check(d, &h.h, 1), CUBEC_INTERNAL, "launch \"step\" on stream");
    assert_int_equal(server_stats_get(d).skipped, skipped + 1);

    ASSERT_OK(cubec_buffer_release(d, x.h));
    ASSERT_OK(cubec_buffer_release(d, h.h));
    ASSERT_OK(cubec_buffer_release(d, y.h));
    ASSERT_OK(cubec_buffer_release(d, z.h));
    kernels_destroy(d, k);
    test_device_close(d);
}

/* The buffer of an indirect count is an input: a launch whose counts come from a buffer that was
 * not written is skipped (garbage counts must never run); its inputs are not tainted. The same
 * launch with a written count buffer runs. */
static void test_launch_skipped_when_indirect_count_failed(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t xs[N], want[N];
    cpu_produce(xs, N, 1, 9);
    tbuf x = make_buffer(d, s, xs);
    tbuf counts = make_buffer(d, s, NULL);
    tbuf y = make_buffer(d, s, NULL);

    /* counts = {4, 4, 4, ...}: with 64-wide groups, groups (4, 4, 4) would cover the buffer. The
     * producing launch is lost. */
    ASSERT_OK(uint_launch(d, s, k.produce, counts.h, NONE, 3, 0, 4));
    uint64_t call = arm_next(d, CUBEC_FAULT_SUBMIT);
    ASSERT_ERROR(cubec_flush(d, s), CUBEC_INTERNAL, "injected fault: submit call #");

    uint64_t tasks = server_stats_get(d).tasks, skipped = server_stats_get(d).skipped;
    ASSERT_OK(uint_launch_indirect(d, s, k.consume, x.h, y.h, N, 2, 1, counts.h));
    ASSERT_OK(cubec_sync(d, s));
    assert_int_equal(server_stats_get(d).skipped, skipped + 1);
    assert_int_equal(server_stats_get(d).tasks, tasks);

    char root[256], want_msg[1024];
    lost_root(root, sizeof root, call);
    snprintf(want_msg, sizeof want_msg,
             "check of buffer #%" PRIu64 ": not written: launch \"consume\" on stream %" PRIu64
             " was skipped because its indirect-count buffer #%" PRIu64 " was not written: %s",
             y.number, stream_number(s), counts.number, root);
    expect_message(cubec_check(d, &y.h, 1), CUBEC_INTERNAL, want_msg, "check of y");
    expect_words(d, s, x.h, xs, "x (an input of the skipped launch)");

    /* Rewritten by the host, the count buffer is fine again: the same launch runs (one group). */
    uint32_t one[N] = {1, 1, 1};
    ASSERT_OK(cubec_write(d, s, counts.h, 0, one, 12));
    tbuf z = make_buffer(d, s, NULL);
    ASSERT_OK(uint_launch_indirect(d, s, k.consume, x.h, z.h, 64, 2, 1, counts.h));
    cpu_consume(xs, want, 64, 2, 1);
    expect_range_in(d, s, z.h, N, 0, 64, want, "z (indirect launch of one group)");

    ASSERT_OK(cubec_buffer_release(d, x.h));
    ASSERT_OK(cubec_buffer_release(d, counts.h));
    ASSERT_OK(cubec_buffer_release(d, y.h));
    ASSERT_OK(cubec_buffer_release(d, z.h));
    kernels_destroy(d, k);
    test_device_close(d);
}

/* A copy whose source carries a failure is skipped; its destination takes the failure. */
static void test_copy_skipped_when_source_failed(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t old[N];
    cpu_produce(old, N, 0, 5);
    tbuf src = make_buffer(d, s, NULL);
    tbuf dst = make_buffer(d, s, old);
    ASSERT_OK(uint_launch(d, s, k.produce, src.h, NONE, N, 1, 1));
    uint64_t call = arm_next(d, CUBEC_FAULT_SUBMIT);
    ASSERT_ERROR(cubec_sync(d, s), CUBEC_INTERNAL, "injected fault: submit call #");
    ASSERT_OK(cubec_copy(d, s, src.h, 0, dst.h, 0, BYTES));
    char root[256], want_msg[1024];
    lost_root(root, sizeof root, call);
    snprintf(want_msg, sizeof want_msg,
             " on stream %" PRIu64 " was skipped because its input buffer #%" PRIu64
             " was not written: %s",
             stream_number(s), src.number, root);
    uint32_t got[N];
    cubec_status st = cubec_read(d, s, dst.h, 0, got, BYTES);
    assert_non_null(st);
    const char *msg = cubec_status_message(st);
    char head[128];
    snprintf(head, sizeof head, "read of buffer #%" PRIu64 ": not written: launch \"cubec.copy",
             dst.number);
    if (strncmp(msg, head, strlen(head)) || !strstr(msg, want_msg))
        fail_msg("read of the copy's destination: \"%s\"; expected \"%s...%s\"", msg, head,
                 want_msg);
    cubec_status_free(st);
    ASSERT_OK(cubec_buffer_release(d, src.h));
    ASSERT_OK(cubec_buffer_release(d, dst.h));
    kernels_destroy(d, k);
    test_device_close(d);
}

/* A binding the kernel only writes is not an input: a launch whose write-only binding carries a
 * failure runs (it is recorded, not skipped). */
static void test_failed_output_is_not_an_input(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t xs[N];
    cpu_produce(xs, N, 2, 2);
    tbuf x = make_buffer(d, s, xs);
    tbuf y = make_buffer(d, s, NULL);
    ASSERT_OK(uint_launch(d, s, k.produce, y.h, NONE, N, 1, 1));
    arm_next(d, CUBEC_FAULT_SUBMIT);
    ASSERT_ERROR(cubec_sync(d, s), CUBEC_INTERNAL, "injected fault: submit call #");
    uint64_t tasks = server_stats_get(d).tasks, skipped = server_stats_get(d).skipped;
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, y.h, N, 3, 4));
    ASSERT_OK(cubec_sync(d, s));
    assert_int_equal(server_stats_get(d).skipped, skipped);
    assert_int_equal(server_stats_get(d).tasks, tasks + 1);
    ASSERT_OK(cubec_buffer_release(d, x.h));
    ASSERT_OK(cubec_buffer_release(d, y.h));
    kernels_destroy(d, k);
    test_device_close(d);
}

/* Spec 5.3: a launch that runs releases the claims on what it writes ("success -> written(write
 * set)"); spec 5.4 rule 6: "recovery by re-uploading is equivalent to relaunching". After a lost
 * submission, relaunching the producer from good inputs must make its output readable again;
 * otherwise a buffer that only kernels write (hidden activations) stays poisoned forever after one
 * transient failure, and so does everything computed from it. */
static void test_successful_relaunch_clears_failure(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t xs[N], hw[N], yw[N];
    cpu_produce(xs, N, 2, 2);
    tbuf x = make_buffer(d, s, xs);
    tbuf h = make_buffer(d, s, NULL);
    tbuf y = make_buffer(d, s, NULL);
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, h.h, N, 3, 4));
    arm_next(d, CUBEC_FAULT_SUBMIT);
    ASSERT_ERROR(cubec_sync(d, s), CUBEC_INTERNAL, "injected fault: submit call #");
    ASSERT_ERROR(cubec_check(d, &h.h, 1), CUBEC_INTERNAL, "injected fault");
    /* The same forward pass again, from the same (good) input. */
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, h.h, N, 3, 4));
    ASSERT_OK(uint_launch(d, s, k.consume, h.h, y.h, N, 5, 6));
    cpu_consume(xs, hw, N, 3, 4);
    cpu_consume(hw, yw, N, 5, 6);
    cubec_status st = cubec_sync_check(d, s, (cubec_buffer[]){h.h, y.h}, 2);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
        cubec_status_free(st);
        tbuf all[] = {x, h, y};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            ASSERT_OK(cubec_buffer_release(d, all[i].h));
        kernels_destroy(d, k);
        test_device_close(d);
        fail_msg("BUG: the relaunched producer ran from good inputs, yet: %s", msg);
    }
    expect_words(d, s, h.h, hw, "h (relaunched)");
    expect_words(d, s, y.h, yw, "y (computed from the relaunched h)");
    ASSERT_OK(cubec_buffer_release(d, x.h));
    ASSERT_OK(cubec_buffer_release(d, h.h));
    ASSERT_OK(cubec_buffer_release(d, y.h));
    kernels_destroy(d, k);
    test_device_close(d);
}

/* (b) ---------------------------------------------------------------------------------------- */

/* Through staging (CUBEC_FORCE_STAGING=1, the path of discrete GPUs), a write is a submitted copy:
 * when its submission fails, the call returns the error and the destination range carries it,
 * and only that range. A successful write of part of it clears that part only. */
static void test_failed_write_taints_destination(void **state)
{
    (void)state;
    setenv("CUBEC_FORCE_STAGING", "1", 1);
    cubec_device *d = open_device();
    unsetenv("CUBEC_FORCE_STAGING");
    cubec_stream s = new_stream(d);
    uint32_t a[N], b[N];
    cpu_produce(a, N, 1, 100);
    cpu_produce(b, N, 3, 7);
    tbuf dst = make_buffer(d, s, a);
    tbuf other = make_buffer(d, s, a);

    /* Bytes [256, 768) are written; the submission of the copy fails. */
    uint64_t call = arm_next(d, CUBEC_FAULT_SUBMIT);
    char want[512];
    snprintf(want, sizeof want, "injected fault: submit call #%" PRIu64, call);
    ASSERT_ERROR(cubec_write(d, s, dst.h, 256, b, 512), CUBEC_INTERNAL, want);
    snprintf(want, sizeof want,
             "read of buffer #%" PRIu64 ": not written: a write failed: injected fault: submit "
             "call #%" PRIu64,
             dst.number, call);
    uint32_t got[N];
    expect_message(cubec_read(d, s, dst.h, 256, got, 512), CUBEC_INTERNAL, want,
                   "read of the failed range");
    expect_message(cubec_read(d, s, dst.h, 0, got, BYTES), CUBEC_INTERNAL, want,
                   "read of the whole buffer");
    expect_range_in(d, s, dst.h, N, 0, 64, a, "bytes before the failed range");
    expect_range_in(d, s, dst.h, N, 192, 64, a + 192, "bytes after the failed range");
    expect_words(d, s, other.h, a, "another buffer");

    /* Half of the range is written again: only that half is clear. */
    ASSERT_OK(cubec_write(d, s, dst.h, 256, b, 256));
    expect_range_in(d, s, dst.h, N, 64, 64, b, "the rewritten half");
    snprintf(want, sizeof want, "injected fault: submit call #%" PRIu64, call);
    ASSERT_ERROR(cubec_read(d, s, dst.h, 512, got, 256), CUBEC_INTERNAL, want);
    ASSERT_ERROR(cubec_check(d, &dst.h, 1), CUBEC_INTERNAL, want);
    ASSERT_OK(cubec_write(d, s, dst.h, 512, b + 64, 256));
    ASSERT_OK(cubec_check(d, &dst.h, 1));
    uint32_t full[N];
    memcpy(full, a, sizeof full);
    memcpy(full + 64, b, 512);
    expect_words(d, s, dst.h, full, "after both halves were rewritten");
    ASSERT_OK(cubec_buffer_release(d, dst.h));
    ASSERT_OK(cubec_buffer_release(d, other.h));
    test_device_close(d);
}

/* On unified memory: a launch output lost with its submission; host writes clear exactly the
 * ranges they write (views of the buffer are judged on their own range). */
static void test_host_write_clears_only_its_range(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    tbuf y = make_buffer(d, s, NULL);
    ASSERT_OK(uint_launch(d, s, k.produce, y.h, NONE, N, 1, 1));
    uint64_t call = arm_next(d, CUBEC_FAULT_SUBMIT);
    ASSERT_ERROR(cubec_sync(d, s), CUBEC_INTERNAL, "injected fault: submit call #");
    char want[256];
    snprintf(want, sizeof want, "injected fault: submit call #%" PRIu64, call);

    uint32_t fresh[N], got[N];
    cpu_produce(fresh, N, 9, 3);
    ASSERT_OK(cubec_write(d, s, y.h, 256, fresh + 64, 256)); /* words [64, 128) */
    expect_range_in(d, s, y.h, N, 64, 64, fresh + 64, "the rewritten range");
    ASSERT_ERROR(cubec_read(d, s, y.h, 0, got, 256), CUBEC_INTERNAL, want);
    ASSERT_ERROR(cubec_read(d, s, y.h, 512, got, 512), CUBEC_INTERNAL, want);
    ASSERT_ERROR(cubec_read(d, s, y.h, 252, got, 8), CUBEC_INTERNAL, want); /* straddles */
    ASSERT_ERROR(cubec_check(d, &y.h, 1), CUBEC_INTERNAL, want);
    if (256 % info.storage_offset_alignment == 0) {
        cubec_buffer view = {0}, tail = {0};
        ASSERT_OK(cubec_buffer_view(d, y.h, 256, 256, &view));
        ASSERT_OK(cubec_buffer_view(d, y.h, 512, 512, &tail));
        ASSERT_OK(cubec_check(d, &view, 1));
        ASSERT_ERROR(cubec_check(d, &tail, 1), CUBEC_INTERNAL, want);
        ASSERT_OK(cubec_buffer_release(d, view));
        ASSERT_OK(cubec_buffer_release(d, tail));
    }
    ASSERT_OK(cubec_write(d, s, y.h, 0, fresh, 256));
    ASSERT_ERROR(cubec_check(d, &y.h, 1), CUBEC_INTERNAL, want);
    ASSERT_OK(cubec_write(d, s, y.h, 512, fresh + 128, 512));
    ASSERT_OK(cubec_check(d, &y.h, 1));
    expect_words(d, s, y.h, fresh, "y after every range was rewritten");
    ASSERT_OK(cubec_buffer_release(d, y.h));
    kernels_destroy(d, k);
    test_device_close(d);
}

/* Found in review: fills and copies of a range that does not start on the storage offset
 * alignment (bytes [8, 16) here; the alignment is at least 16) bind their builtin kernel from the
 * aligned offset below the range. Only the bytes they access may be tainted, cleared or checked
 * (spec 5.3): a write of [8, 16) must not clear the failure of [0, 8), a lost write of [8, 16)
 * must not taint [0, 8), and a failure on [0, 8) of a copy's source must not skip a copy of
 * [8, 16). Each is checked for a fill, for cubec_copy, and for the builtin copy kernel: on a CPU
 * device cubec_copy is a transfer, so OP_COPY_KERNEL presents the device as another type for the
 * call and takes the path of GPUs. */
typedef enum range_op { OP_FILL, OP_COPY, OP_COPY_KERNEL, OP_COUNT } range_op;
static const char *const range_op_names[OP_COUNT] = {"cubec_fill", "cubec_copy",
                                                     "cubec_copy (builtin kernel)"};
#define RANGE_AT 8u    /* bytes [RANGE_AT, RANGE_AT + RANGE_BYTES) are written */
#define RANGE_BYTES 8u /* words 2 and 3 */
#define RANGE_PATTERN 0x22222222u

/* Writes bytes [RANGE_AT, +RANGE_BYTES) of `dst` with `op`: a fill of RANGE_PATTERN, or a copy
 * of the same bytes of `src`. */
static cubec_status write_range(cubec_device *d, cubec_stream s, range_op op, cubec_buffer src,
                                cubec_buffer dst)
{
    if (op == OP_FILL) return cubec_fill(d, s, dst, RANGE_AT, RANGE_BYTES, RANGE_PATTERN);
    cubec_device_type type = d->info.type;
    if (op == OP_COPY_KERNEL) d->info.type = CUBEC_DEVICE_TYPE_OTHER;
    cubec_status st = cubec_copy(d, s, src, RANGE_AT, dst, RANGE_AT, RANGE_BYTES);
    d->info.type = type;
    return st;
}

/* The model of write_range: `ref` (N words) with the range written from `src` (N words). */
static void model_range(range_op op, const uint32_t *src, uint32_t *ref)
{
    for (uint32_t i = RANGE_AT / 4; i < (RANGE_AT + RANGE_BYTES) / 4; i++)
        ref[i] = op == OP_FILL ? RANGE_PATTERN : src[i];
}

/* Loses the submission of a fill of bytes [0, RANGE_AT) of `b`, so that they carry a failure;
 * returns the root of its chain. */
static void lose_fill_of_head(cubec_device *d, cubec_stream s, cubec_buffer b, char *root,
                              size_t size)
{
    ASSERT_OK(cubec_sync(d, s));
    uint64_t call = arm_next(d, CUBEC_FAULT_SUBMIT);
    ASSERT_OK(cubec_fill(d, s, b, 0, RANGE_AT, 0x11111111u));
    ASSERT_ERROR(cubec_sync(d, s), CUBEC_INTERNAL, "injected fault: submit call #");
    lost_root(root, size, call);
    uint32_t got[RANGE_AT / 4];
    ASSERT_ERROR(cubec_read(d, s, b, 0, got, RANGE_AT), CUBEC_INTERNAL, root);
}

/* A fill or copy of [8, 16) leaves the failure of [0, 8) where it is. */
static void test_unaligned_write_keeps_failure_before_it(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    cubec_stream s = new_stream(d);
    uint32_t base[N], src_words[N], ref[N], got[N];
    cpu_produce(base, N, 7, 3);
    cpu_produce(src_words, N, 5, 11);
    tbuf src = make_buffer(d, s, src_words);
    for (int op = 0; op < OP_COUNT; op++) {
        printf("  %s of bytes [8, 16)\n", range_op_names[op]);
        tbuf b = make_buffer(d, s, base);
        char root[256], what[128];
        lose_fill_of_head(d, s, b.h, root, sizeof root);
        ASSERT_OK(write_range(d, s, op, src.h, b.h));
        ASSERT_OK(cubec_sync(d, s));
        memcpy(ref, base, sizeof ref);
        model_range(op, src_words, ref);
        /* Bytes [0, 8) were not written: they still fail, and so does the whole buffer. */
        char want[512];
        snprintf(want, sizeof want, "read of buffer #%" PRIu64 ": not written: %s", b.number, root);
        snprintf(what, sizeof what, "read of bytes [0, 8) after the %s of [8, 16)",
                 range_op_names[op]);
        expect_message(cubec_read(d, s, b.h, 0, got, RANGE_AT), CUBEC_INTERNAL, want, what);
        ASSERT_ERROR(cubec_read(d, s, b.h, 0, got, BYTES), CUBEC_INTERNAL, root);
        ASSERT_ERROR(cubec_check(d, &b.h, 1), CUBEC_INTERNAL, root);
        snprintf(what, sizeof what, "bytes [8, %u) after the %s", (unsigned)BYTES,
                 range_op_names[op]);
        expect_range_in(d, s, b.h, N, RANGE_AT / 4, N - RANGE_AT / 4, ref + RANGE_AT / 4, what);
        /* A host write of [0, 8) clears the failure: the buffer is what the model says. */
        ASSERT_OK(cubec_write(d, s, b.h, 0, base, RANGE_AT));
        ASSERT_OK(cubec_check(d, &b.h, 1));
        snprintf(what, sizeof what, "the buffer after the %s and a write of [0, 8)",
                 range_op_names[op]);
        expect_words(d, s, b.h, ref, what);
        ASSERT_OK(cubec_buffer_release(d, b.h));
    }
    expect_words(d, s, src.h, src_words, "the copies' source");
    ASSERT_OK(cubec_buffer_release(d, src.h));
    test_device_close(d);
}

/* A fill or copy of [8, 16) that is lost with its submission taints [8, 16) only. */
static void test_lost_unaligned_write_taints_only_its_bytes(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    cubec_stream s = new_stream(d);
    uint32_t base[N], src_words[N], ref[N], got[N];
    cpu_produce(base, N, 3, 9);
    cpu_produce(src_words, N, 11, 5);
    tbuf src = make_buffer(d, s, src_words);
    for (int op = 0; op < OP_COUNT; op++) {
        printf("  lost %s of bytes [8, 16)\n", range_op_names[op]);
        tbuf b = make_buffer(d, s, base);
        char root[256], what[128];
        ASSERT_OK(cubec_sync(d, s));
        uint64_t call = arm_next(d, CUBEC_FAULT_SUBMIT);
        ASSERT_OK(write_range(d, s, op, src.h, b.h));
        ASSERT_ERROR(cubec_sync(d, s), CUBEC_INTERNAL, "injected fault: submit call #");
        lost_root(root, sizeof root, call);
        char want[512];
        snprintf(want, sizeof want, "read of buffer #%" PRIu64 ": not written: %s", b.number, root);
        snprintf(what, sizeof what, "read of bytes [8, 16) after a lost %s", range_op_names[op]);
        expect_message(cubec_read(d, s, b.h, RANGE_AT, got, RANGE_BYTES), CUBEC_INTERNAL, want,
                       what);
        ASSERT_ERROR(cubec_check(d, &b.h, 1), CUBEC_INTERNAL, root);
        /* The bytes around the lost range keep what they held. */
        snprintf(what, sizeof what, "bytes [0, 8) before a lost %s", range_op_names[op]);
        expect_range_in(d, s, b.h, N, 0, RANGE_AT / 4, base, what);
        const uint32_t after = (RANGE_AT + RANGE_BYTES) / 4;
        snprintf(what, sizeof what, "bytes after a lost %s", range_op_names[op]);
        expect_range_in(d, s, b.h, N, after, N - after, base + after, what);
        /* Done again, it clears the failure. */
        ASSERT_OK(write_range(d, s, op, src.h, b.h));
        ASSERT_OK(cubec_sync_check(d, s, &b.h, 1));
        memcpy(ref, base, sizeof ref);
        model_range(op, src_words, ref);
        snprintf(what, sizeof what, "the buffer after the %s was done again", range_op_names[op]);
        expect_words(d, s, b.h, ref, what);
        ASSERT_OK(cubec_buffer_release(d, b.h));
    }
    expect_words(d, s, src.h, src_words, "the copies' source (only read)");
    ASSERT_OK(cubec_buffer_release(d, src.h));
    test_device_close(d);
}

/* A copy of source bytes [8, 16) runs when the source's bytes [0, 8) carry a failure: its input
 * is fine. */
static void test_copy_not_skipped_for_failure_before_its_source(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    cubec_stream s = new_stream(d);
    uint32_t base[N], src_words[N], ref[N], got[N];
    cpu_produce(base, N, 13, 1);
    cpu_produce(src_words, N, 17, 2);
    for (int op = OP_COPY; op <= OP_COPY_KERNEL; op++) {
        printf("  %s of source bytes [8, 16)\n", range_op_names[op]);
        tbuf src = make_buffer(d, s, src_words);
        tbuf dst = make_buffer(d, s, base);
        char root[256], what[128];
        lose_fill_of_head(d, s, src.h, root, sizeof root);
        uint64_t skipped = server_stats_get(d).skipped;
        ASSERT_OK(write_range(d, s, op, src.h, dst.h));
        ASSERT_OK(cubec_sync(d, s));
        assert_int_equal(server_stats_get(d).skipped, skipped);
        ASSERT_OK(cubec_check(d, &dst.h, 1));
        memcpy(ref, base, sizeof ref);
        model_range(op, src_words, ref);
        snprintf(what, sizeof what, "the destination of the %s", range_op_names[op]);
        expect_words(d, s, dst.h, ref, what);
        /* The source keeps its failure before the range, and its words from the range on. */
        ASSERT_ERROR(cubec_read(d, s, src.h, 0, got, RANGE_AT), CUBEC_INTERNAL, root);
        expect_range_in(d, s, src.h, N, RANGE_AT / 4, N - RANGE_AT / 4, src_words + RANGE_AT / 4,
                        "the source from byte 8 on");
        ASSERT_OK(cubec_buffer_release(d, src.h));
        ASSERT_OK(cubec_buffer_release(d, dst.h));
    }
    test_device_close(d);
}

/* (c) ---------------------------------------------------------------------------------------- */

/* produce -> h1 (lost) -> consume -> h2 (skipped) -> relu on another stream -> h3 (skipped):
 * cubec_read, cubec_check, cubec_sync_check and cubec_read_async of h3 name the chain and the
 * root cause, with the root cause's code. */
static void test_errors_name_root_cause_and_chain(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s1 = new_stream(d), s2 = new_stream(d);
    uint32_t xs[N];
    cpu_produce(xs, N, 1, 0);
    tbuf good = make_buffer(d, s1, xs);
    tbuf h1 = make_buffer(d, s1, NULL);
    tbuf h2 = make_buffer(d, s1, NULL);
    tbuf h3 = make_buffer(d, s2, NULL);
    ASSERT_OK(uint_launch(d, s1, k.produce, h1.h, NONE, N, 4, 4));
    uint64_t call = arm_next(d, CUBEC_FAULT_SUBMIT);
    ASSERT_ERROR(cubec_flush(d, s1), CUBEC_INTERNAL, "injected fault: submit call #");
    ASSERT_OK(uint_launch(d, s1, k.consume, h1.h, h2.h, N, 2, 0));
    ASSERT_OK(uint_launch(d, s2, k.relu, h2.h, h3.h, N, 1, 0));

    char chain[1024], want[1280];
    snprintf(chain, sizeof chain,
             "not written: launch \"relu\" on stream %" PRIu64
             " was skipped because its input buffer #%" PRIu64
             " was not written: launch \"consume\" on stream %" PRIu64
             " was skipped because its input buffer #%" PRIu64
             " was not written: the submission of its work failed: injected fault: submit call "
             "#%" PRIu64,
             stream_number(s2), h2.number, stream_number(s1), h1.number, call);
    uint32_t got[N];
    snprintf(want, sizeof want, "read of buffer #%" PRIu64 ": %s", h3.number, chain);
    expect_message(cubec_read(d, s2, h3.h, 0, got, BYTES), CUBEC_INTERNAL, want, "read of h3");
    cubec_event *ev = (cubec_event *)1;
    expect_message(cubec_read_async(d, s2, h3.h, 0, got, BYTES, &ev), CUBEC_INTERNAL, want,
                   "cubec_read_async of h3");
    assert_null(ev);
    snprintf(want, sizeof want, "check of buffer #%" PRIu64 ": %s", h3.number, chain);
    expect_message(cubec_check(d, &h3.h, 1), CUBEC_INTERNAL, want, "cubec_check of h3");
    cubec_buffer list[3] = {good.h, h3.h, h2.h}; /* the first that carries a failure */
    expect_message(cubec_check(d, list, 3), CUBEC_INTERNAL, want, "cubec_check of a list");
    expect_message(cubec_sync_check(d, s2, list, 3), CUBEC_INTERNAL, want,
                   "cubec_sync_check of a list");
    /* The middle of the chain names its own part. */
    snprintf(want, sizeof want,
             "check of buffer #%" PRIu64 ": not written: launch \"consume\" on stream %" PRIu64
             " was skipped because its input buffer #%" PRIu64
             " was not written: the submission of its work failed: injected fault: submit call "
             "#%" PRIu64,
             h2.number, stream_number(s1), h1.number, call);
    expect_message(cubec_sync_check(d, s1, &h2.h, 1), CUBEC_INTERNAL, want, "check of h2");
    /* Checks of clean buffers pass; a clean read of the same device still works. */
    ASSERT_OK(cubec_check(d, &good.h, 1));
    ASSERT_OK(cubec_sync_check(d, s2, &good.h, 1));
    ASSERT_OK(cubec_check(d, NULL, 0));
    expect_words(d, s2, good.h, xs, "a clean buffer");
    /* Errors are read, never taken: asking again gives the same answer. */
    ASSERT_ERROR(cubec_check(d, &h3.h, 1), CUBEC_INTERNAL, "injected fault: submit call #");

    ASSERT_OK(cubec_buffer_release(d, good.h));
    ASSERT_OK(cubec_buffer_release(d, h1.h));
    ASSERT_OK(cubec_buffer_release(d, h2.h));
    ASSERT_OK(cubec_buffer_release(d, h3.h));
    kernels_destroy(d, k);
    test_device_close(d);
}

/* (d) ---------------------------------------------------------------------------------------- */

/* Stream A loses a submission. Stream B, with work queued before and after the failure, reads
 * correct data and syncs cleanly; buffers of A the lost work did not touch read correctly; A
 * itself keeps working; a consumer on B of A's failed buffer fails alone. */
static void test_failure_does_not_block_other_streams(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream a = new_stream(d), b = new_stream(d);
    uint32_t xs[N], w1[N], w2[N], w3[N], w4[N], lost_w[N];
    cpu_produce(xs, N, 5, 3);
    tbuf x = make_buffer(d, a, xs); /* A, read by the lost batch */
    tbuf lost = make_buffer(d, a, NULL);
    tbuf ua = make_buffer(d, a, NULL); /* A, written before the failure */
    tbuf b1 = make_buffer(d, b, NULL);
    tbuf b2 = make_buffer(d, b, NULL);
    tbuf cross = make_buffer(d, b, NULL);
    tbuf a2 = make_buffer(d, a, NULL);

    ASSERT_OK(uint_launch(d, a, k.consume, x.h, ua.h, N, 2, 2));
    ASSERT_OK(cubec_flush(d, a));
    ASSERT_OK(uint_launch(d, b, k.consume, x.h, b1.h, N, 3, 1)); /* B uses A's x: queued on B */
    ASSERT_OK(uint_launch(d, a, k.consume, x.h, lost.h, N, 7, 7));
    uint64_t call = arm_next(d, CUBEC_FAULT_SUBMIT);
    ASSERT_ERROR(cubec_flush(d, a), CUBEC_INTERNAL, "injected fault: submit call #");
    ASSERT_OK(uint_launch(d, b, k.consume, b1.h, b2.h, N, 1, 9));
    ASSERT_OK(uint_launch(d, b, k.consume, lost.h, cross.h, N, 1, 1)); /* B reads A's lost buffer */
    ASSERT_OK(uint_launch(d, a, k.consume, x.h, a2.h, N, 4, 0));       /* A goes on */
    ASSERT_OK(cubec_sync(d, b));
    ASSERT_OK(cubec_sync(d, a));

    cpu_consume(xs, w1, N, 2, 2);
    cpu_consume(xs, w2, N, 3, 1);
    cpu_consume(w2, w3, N, 1, 9);
    cpu_consume(xs, w4, N, 4, 0);
    expect_words(d, b, b1.h, w2, "B's first buffer");
    expect_words(d, b, b2.h, w3, "B's second buffer");
    expect_words(d, a, ua.h, w1, "A's buffer written before the failure");
    expect_words(d, a, x.h, xs, "A's input of the lost work");
    expect_words(d, a, a2.h, w4, "A's buffer written after the failure");
    expect_words(d, b, x.h, xs, "A's input read from B");
    char want[256];
    snprintf(want, sizeof want, "injected fault: submit call #%" PRIu64, call);
    uint32_t got[N];
    ASSERT_ERROR(cubec_read(d, a, lost.h, 0, got, BYTES), CUBEC_INTERNAL, want);
    ASSERT_ERROR(cubec_read(d, b, cross.h, 0, got, BYTES), CUBEC_INTERNAL, want);
    ASSERT_OK(cubec_sync_check(d, b, (cubec_buffer[]){b1.h, b2.h}, 2));
    ASSERT_OK(cubec_sync_check(d, a, (cubec_buffer[]){x.h, ua.h, a2.h}, 3));
    /* Both streams still work: a fresh chain on each. */
    cpu_consume(w3, lost_w, N, 2, 3);
    ASSERT_OK(uint_launch(d, b, k.consume, b2.h, b1.h, N, 2, 3));
    expect_words(d, b, b1.h, lost_w, "B after the failure");
    ASSERT_OK(uint_launch(d, a, k.consume, ua.h, a2.h, N, 1, 1));
    cpu_consume(w1, w4, N, 1, 1);
    expect_words(d, a, a2.h, w4, "A after the failure");

    tbuf all[] = {x, lost, ua, b1, b2, cross, a2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        ASSERT_OK(cubec_buffer_release(d, all[i].h));
    kernels_destroy(d, k);
    test_device_close(d);
}

/* (e) ---------------------------------------------------------------------------------------- */

/* One batch of several launches (write-only, read-write, read-only bindings) is lost: each range
 * it would have written carries the failure; what it only read does not; the call that submitted
 * it (here a cubec_launch that reached tasks_max and drained the stream) returns the error. */
static void test_lost_submission_taints_its_writes(void **state)
{
    (void)state;
    setenv("CUBEC_TASKS_MAX", "4", 1);
    cubec_device *d = open_device();
    unsetenv("CUBEC_TASKS_MAX");
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t xs[N], vs[N];
    cpu_produce(xs, N, 3, 3);
    cpu_produce(vs, N, 1, 2);
    tbuf x = make_buffer(d, s, xs);
    tbuf v = make_buffer(d, s, vs);
    tbuf big = make_buffer(d, s, NULL); /* only its first half is written */
    tbuf o1 = make_buffer(d, s, NULL);
    tbuf o2 = make_buffer(d, s, NULL);
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    assert_int_equal(info.tasks_max, 4);
    cubec_buffer half = {0};
    ASSERT_OK(cubec_buffer_view(d, big.h, 0, BYTES / 2, &half));
    uint32_t fill[N];
    cpu_produce(fill, N, 0, 42);
    ASSERT_OK(cubec_write(d, s, big.h, 0, fill, BYTES));

    uint64_t call = fault_count(d, CUBEC_FAULT_SUBMIT) + 1;
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, o1.h, N, 1, 1));
    ASSERT_OK(uint_launch(d, s, k.step, v.h, NONE, N, 2, 2));
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, half, N / 2, 3, 3));
    char want[256];
    snprintf(want, sizeof want,
             "the submission of its work failed: injected fault: submit call #%" PRIu64, call);
    /* The fourth launch fills the queue: it drains, and the submission fails. */
    ASSERT_ERROR(uint_launch(d, s, k.consume, o1.h, o2.h, N, 1, 0), CUBEC_INTERNAL,
                 "injected fault: submit call #");
    uint32_t got[N];
    cubec_buffer written[] = {o1.h, v.h, half, o2.h};
    for (size_t i = 0; i < sizeof written / sizeof written[0]; i++) {
        ASSERT_ERROR(cubec_read(d, s, written[i], 0, got, N / 2 * 4), CUBEC_INTERNAL, want);
        ASSERT_ERROR(cubec_check(d, &written[i], 1), CUBEC_INTERNAL, want);
    }
    expect_words(d, s, x.h, xs, "x (only read by the lost batch)");
    expect_range_in(d, s, big.h, N, N / 2, N / 2, fill + N / 2, "the half no launch wrote");
    ASSERT_OK(cubec_buffer_release(d, half));
    tbuf all[] = {x, v, big, o1, o2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        ASSERT_OK(cubec_buffer_release(d, all[i].h));
    kernels_destroy(d, k);
    test_device_close(d);
}

/* An injected failure of a wait is a lost device: the call returns CUBEC_DEVICE_LOST naming the
 * injected fault; every later call that uses the device fails at once the same way; closing does
 * not hang. */
static void test_device_lost_fails_fast(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    kernels k = kernels_create(d);
    cubec_stream s = new_stream(d);
    uint32_t xs[N], v[BUSY_WORDS], got_v[BUSY_WORDS];
    cpu_produce(xs, N, 1, 1);
    cpu_produce(v, BUSY_WORDS, 7, 1);
    tbuf x = make_buffer(d, s, xs);
    tbuf y = make_buffer(d, s, NULL);
    cubec_buffer scratch = {0};
    ASSERT_OK(cubec_buffer_from(d, s, v, sizeof v, &scratch));
    /* A clean wait first: the busy launch really takes a while, so the sync waits. */
    ASSERT_OK(launch_busy(d, s, &k, scratch));
    uint64_t waits = fault_count(d, CUBEC_FAULT_WAIT);
    ASSERT_OK(cubec_sync(d, s));
    assert_int_equal(fault_count(d, CUBEC_FAULT_WAIT), waits + 1);
    cpu_busy(v);
    ASSERT_OK(cubec_read(d, s, scratch, 0, got_v, sizeof got_v));
    assert_memory_equal(got_v, v, sizeof v);

    ASSERT_OK(launch_busy(d, s, &k, scratch));
    ASSERT_OK(uint_launch(d, s, k.consume, x.h, y.h, N, 1, 1));
    uint64_t call = arm_next(d, CUBEC_FAULT_WAIT);
    char want[256];
    snprintf(want, sizeof want, "injected fault: wait call #%" PRIu64, call);
    double t0 = now_s();
    ASSERT_ERROR(cubec_sync(d, s), CUBEC_DEVICE_LOST, want);

    /* Every later call fails fast. */
    uint32_t got[N];
    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    cubec_buffer nb = {0};
    cubec_kernel nk = {0};
    cubec_stream ns = 0;
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "late", .glsl = produce_src};
    const char *lost = "lost";
    ASSERT_ERROR(cubec_read(d, s, x.h, 0, got, BYTES), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_read(d, s, y.h, 0, got, BYTES), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_write(d, s, x.h, 0, xs, BYTES), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(uint_launch(d, s, k.consume, x.h, y.h, N, 1, 1), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_flush(d, s), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_sync(d, s), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_check(d, &x.h, 1), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_sync_check(d, s, &x.h, 1), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_copy(d, s, x.h, 0, y.h, 0, BYTES), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_fill(d, s, y.h, 0, BYTES, 7), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_buffer_create(d, s, BYTES, &nb), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_buffer_from(d, s, xs, BYTES, &nb), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &nk), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_stream_new(d, &ns), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_fault_get_counts(d, counts), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_memory_cleanup(d, s), CUBEC_DEVICE_LOST, lost);
    ASSERT_ERROR(cubec_buffer_release(d, x.h), CUBEC_DEVICE_LOST, lost);
    assert_int_equal(nb.id, 0);
    assert_int_equal(nk.id, 0);
    double elapsed = now_s() - t0;
    if (elapsed > 2.0) fail_msg("the calls after the loss took %.2f s", elapsed);
    t0 = now_s();
    test_device_close(d); /* frees what could not be released */
    elapsed = now_s() - t0;
    if (elapsed > 10.0) fail_msg("closing a lost device took %.2f s", elapsed);
}

/* (f) ---------------------------------------------------------------------------------------- */

static unsigned open_messages;

static void count_message(void *user, const char *message)
{
    (void)user;
    open_messages++;
    fprintf(stderr, "VALIDATION: %s\n", message);
}

/* cubec_device_open with CUBEC_FAULT set to `spec` (validation on; messages fail the test). */
static cubec_status open_with_faults(const char *spec, cubec_device **out)
{
    setenv("CUBEC_FAULT", spec, 1);
    cubec_device_desc desc = {
        .struct_size = sizeof(cubec_device_desc), .validation = 1, .on_validation = count_message};
    const char *v = getenv("CUBEC_TEST_VALIDATION");
    if (v && v[0] == '0') desc.validation = 0;
    cubec_status st = cubec_device_open(&desc, out);
    unsetenv("CUBEC_FAULT");
    return st;
}

static void close_checked(cubec_device *d)
{
    cubec_device_close(d);
    if (open_messages) fail_msg("the validation layer reported %u message(s)", open_messages);
}

/* Counting, arming, disarming, one-shot faults, and the codes each kind fails with. */
static void test_fault_injection_api(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    uint64_t c0[CUBEC_FAULT_KIND_COUNT], c1[CUBEC_FAULT_KIND_COUNT];
    ASSERT_OK(cubec_fault_get_counts(d, c0));
    ASSERT_ERROR(cubec_fault_get_counts(d, NULL), CUBEC_INVALID_ARGUMENT, "out_counts");
    ASSERT_ERROR(cubec_fault_get_counts(NULL, c1), CUBEC_INVALID_ARGUMENT, "device");
    char past[32];
    snprintf(past, sizeof past, "kind %d", (int)CUBEC_FAULT_KIND_COUNT);
    ASSERT_ERROR(cubec_fault_inject(d, CUBEC_FAULT_KIND_COUNT, 1), CUBEC_INVALID_ARGUMENT, past);
    ASSERT_ERROR(cubec_fault_inject(d, (cubec_fault_kind)-1, 1), CUBEC_INVALID_ARGUMENT, "kind -1");
    ASSERT_ERROR(cubec_fault_inject(NULL, CUBEC_FAULT_PAGE, 1), CUBEC_INVALID_ARGUMENT, "device");
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (info.unified_memory) assert_true(c0[CUBEC_FAULT_MAP] >= 1); /* the metadata ring */
    assert_int_equal(c0[CUBEC_FAULT_PAGE], 0);
    assert_int_equal(c0[CUBEC_FAULT_COMPILE], 0);
    assert_int_equal(c0[CUBEC_FAULT_SUBMIT], 0);

    /* A kernel: one compilation and one pipeline; the same kernel again is cached (no calls). */
    cubec_kernel k1 = {0}, k2 = {0}, k3 = {0};
    cubec_kernel_desc p = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "produce", .glsl = produce_src};
    cubec_kernel_desc c = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "consume", .glsl = consume_src};
    cubec_kernel_desc r = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "relu", .glsl = relu_src};
    ASSERT_OK(cubec_kernel_create(d, &p, &k1));
    ASSERT_OK(cubec_fault_get_counts(d, c1));
    assert_int_equal(c1[CUBEC_FAULT_COMPILE], c0[CUBEC_FAULT_COMPILE] + 1);
    assert_int_equal(c1[CUBEC_FAULT_PIPELINE], c0[CUBEC_FAULT_PIPELINE] + 1);
    cubec_kernel again = {0};
    ASSERT_OK(cubec_kernel_create(d, &p, &again));
    assert_int_equal(fault_count(d, CUBEC_FAULT_COMPILE), c1[CUBEC_FAULT_COMPILE]);
    ASSERT_OK(cubec_kernel_destroy(d, again));

    /* compile:1 fails the next compilation with CUBEC_COMPILE_FAILED, once. */
    char want[128];
    snprintf(want, sizeof want, "injected fault: compile call #%" PRIu64,
             c1[CUBEC_FAULT_COMPILE] + 1);
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_COMPILE, 1));
    k2.id = 99;
    ASSERT_ERROR(cubec_kernel_create(d, &c, &k2), CUBEC_COMPILE_FAILED, want);
    assert_int_equal(k2.id, 0);
    ASSERT_OK(cubec_kernel_create(d, &c, &k2));
    /* pipeline:2 skips one pipeline creation and fails the second (CUBEC_INTERNAL). */
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_PIPELINE, 2));
    ASSERT_OK(cubec_kernel_create(d, &r, &k3));
    cubec_kernel k4 = {0};
    cubec_kernel_desc st = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "step", .glsl = step_src};
    ASSERT_ERROR(cubec_kernel_create(d, &st, &k4), CUBEC_INTERNAL, "injected fault: pipeline call");
    assert_int_equal(k4.id, 0);
    ASSERT_OK(cubec_kernel_create(d, &st, &k4)); /* one-shot: the retry works */
    /* 0 disarms. */
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_COMPILE, 1));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_COMPILE, 0));
    cubec_kernel k5 = {0};
    cubec_kernel_desc bz = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "busy", .glsl = busy_src};
    ASSERT_OK(cubec_kernel_create(d, &bz, &k5));

    /* page: a stream's first buffer needs a page (one page call); a second small one fits it. */
    cubec_stream s1 = new_stream(d);
    uint64_t pages = fault_count(d, CUBEC_FAULT_PAGE);
    cubec_buffer b = {0}, b2 = {0};
    ASSERT_OK(cubec_buffer_create(d, s1, BYTES, &b));
    assert_int_equal(fault_count(d, CUBEC_FAULT_PAGE), pages + 1);
    ASSERT_OK(cubec_buffer_create(d, s1, BYTES, &b2));
    assert_int_equal(fault_count(d, CUBEC_FAULT_PAGE), pages + 1);
    /* map: on unified memory a page is mapped when it is allocated. */
    if (info.unified_memory) {
        cubec_stream s2 = new_stream(d);
        uint64_t maps = fault_count(d, CUBEC_FAULT_MAP);
        snprintf(want, sizeof want, "injected fault: map call #%" PRIu64, maps + 1);
        ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_MAP, 1));
        cubec_buffer b3 = {0};
        uint32_t data[N] = {1, 2, 3};
        ASSERT_ERROR(cubec_buffer_from(d, s2, data, BYTES, &b3), CUBEC_INTERNAL, want);
        assert_int_equal(b3.id, 0);
        ASSERT_OK(cubec_buffer_from(d, s2, data, BYTES, &b3));
        ASSERT_OK(cubec_buffer_release(d, b3));
    }
    /* submit:2: the second submission fails, whatever stream it carries. */
    uint32_t ones[N];
    cpu_produce(ones, N, 0, 1);
    ASSERT_OK(cubec_write(d, s1, b, 0, ones, BYTES));
    uint64_t submits = fault_count(d, CUBEC_FAULT_SUBMIT);
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 2));
    ASSERT_OK(uint_launch(d, s1, k1, b2, NONE, N, 1, 0));
    ASSERT_OK(cubec_flush(d, s1));
    ASSERT_OK(uint_launch(d, s1, k2, b2, b, N, 1, 0));
    snprintf(want, sizeof want, "injected fault: submit call #%" PRIu64, submits + 2);
    ASSERT_ERROR(cubec_flush(d, s1), CUBEC_INTERNAL, want);
    ASSERT_ERROR(cubec_check(d, &b, 1), CUBEC_INTERNAL, want);
    ASSERT_OK(cubec_check(d, &b2, 1));
    ASSERT_OK(cubec_fault_get_counts(d, c1));
    assert_int_equal(c1[CUBEC_FAULT_SUBMIT], submits + 2);

    ASSERT_OK(cubec_buffer_release(d, b));
    ASSERT_OK(cubec_buffer_release(d, b2));
    ASSERT_OK(cubec_kernel_destroy(d, k1));
    ASSERT_OK(cubec_kernel_destroy(d, k2));
    ASSERT_OK(cubec_kernel_destroy(d, k3));
    ASSERT_OK(cubec_kernel_destroy(d, k4));
    ASSERT_OK(cubec_kernel_destroy(d, k5));
    test_device_close(d);
}

/* An injected page fault is absorbed by the out-of-memory retry (one more page call, and the
 * buffer works), or fails the buffer creation that needed the page with CUBEC_OUT_OF_MEMORY naming
 * the fault, and creates nothing. */
static void test_page_fault_fails_buffer_creation(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    cubec_stream s = new_stream(d);
    uint64_t pages = fault_count(d, CUBEC_FAULT_PAGE);
    char want[128];
    snprintf(want, sizeof want, "injected fault: page call #%" PRIu64, pages + 1);
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_PAGE, 1));
    cubec_buffer b = {77};
    cubec_status st = cubec_buffer_create(d, s, BYTES, &b);
    uint64_t after = fault_count(d, CUBEC_FAULT_PAGE);
    if (!st) {
        /* The memory manager treats the refusal like a driver out-of-memory: it returns empty
         * pages and asks once more (docs/errors.md). Then exactly one more page call was made,
         * and the buffer must work. */
        assert_int_equal(after - pages, 2);
        uint32_t in[4] = {1, 2, 3, 4}, out[4] = {0};
        ASSERT_OK(cubec_write(d, s, b, 0, in, sizeof in));
        ASSERT_OK(cubec_read(d, s, b, 0, out, sizeof out));
        assert_memory_equal(in, out, sizeof in);
        ASSERT_OK(cubec_buffer_release(d, b));
        test_device_close(d);
        return;
    }
    ASSERT_ERROR(st, CUBEC_OUT_OF_MEMORY, want);
    assert_int_equal(b.id, 0);
    ASSERT_OK(cubec_buffer_create(d, s, BYTES, &b));
    ASSERT_OK(cubec_buffer_release(d, b));
    test_device_close(d);
}

/* CUBEC_FAULT=kind:n[,kind:n...] arms faults counted from the device's opening: faults during
 * opening fail cubec_device_open; later ones fail the call that makes the n-th call of the kind. */
static void test_fault_environment(void **state)
{
    (void)state;
    cubec_device *d = test_device_open(); /* keeps the drivers loaded for LeakSanitizer */
    test_device_close(d);

    d = NULL;
    open_messages = 0;
    ASSERT_ERROR(open_with_faults("map:1", &d), CUBEC_INTERNAL, "injected fault: map call #1");
    assert_null(d);

    ASSERT_OK(open_with_faults("compile:2,submit:1", &d));
    assert_non_null(d);
    cubec_kernel k1 = {0}, k2 = {0};
    cubec_kernel_desc p = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "produce", .glsl = produce_src};
    cubec_kernel_desc c = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "consume", .glsl = consume_src};
    ASSERT_OK(cubec_kernel_create(d, &p, &k1));
    ASSERT_ERROR(cubec_kernel_create(d, &c, &k2), CUBEC_COMPILE_FAILED,
                 "injected fault: compile call #2");
    cubec_buffer b = {0};
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, BYTES, &b));
    ASSERT_OK(uint_launch(d, CUBEC_STREAM_CURRENT, k1, b, NONE, N, 1, 1));
    ASSERT_ERROR(cubec_sync(d, CUBEC_STREAM_CURRENT), CUBEC_INTERNAL,
                 "injected fault: submit call #1");
    ASSERT_ERROR(cubec_check(d, &b, 1), CUBEC_INTERNAL,
                 "the submission of its work failed: injected fault: submit call #1");
    ASSERT_OK(cubec_buffer_release(d, b));
    ASSERT_OK(cubec_kernel_destroy(d, k1));
    close_checked(d);

    /* Bad specs are refused, naming what was wrong; nothing is opened. */
    static const struct {
        const char *spec, *needle;
    } bad[] = {
        {"bogus:1", "unknown kind 'bogus'"},
        {"page", "'page' is not kind:n"},
        {"page:0", "'page:0' needs a call number >= 1 after 'page:'"},
        {"page:x", "'page:x' needs a call number"},
        {"page:", "'page:' needs a call number"},
        {"page:2x", "'page:2x' needs a call number"},
        {"page:1,wait", "'wait' is not kind:n"},
        {"submit:1,,", "',' is not kind:n"},
        {":3", "unknown kind ''"},
        {"Page:1", "unknown kind 'Page'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        d = NULL;
        cubec_status st = open_with_faults(bad[i].spec, &d);
        if (!st) {
            cubec_device_close(d);
            fail_msg("CUBEC_FAULT=%s was accepted", bad[i].spec);
        }
        char msg[512];
        snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
        cubec_code code = cubec_status_code(st);
        cubec_status_free(st);
        assert_null(d);
        printf("    CUBEC_FAULT=%s\n      -> %s: %s\n", bad[i].spec, cubec_code_name(code), msg);
        if (code != CUBEC_INVALID_ARGUMENT || !strstr(msg, "CUBEC_FAULT") ||
            !strstr(msg, bad[i].needle))
            fail_msg("CUBEC_FAULT=%s: %s \"%s\"; expected CUBEC_INVALID_ARGUMENT naming \"%s\"",
                     bad[i].spec, cubec_code_name(code), msg, bad[i].needle);
    }
}

/* A negative call number is not a call number: "page:-1" must be refused like "page:0" (strtoull
 * accepts a minus sign and negates: "-1" reads as 2^64-1, a fault that silently never fires). */
static void test_fault_environment_refuses_negative_numbers(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    test_device_close(d);
    static const char *const specs[] = {"page:-1", "submit:-5"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        d = NULL;
        open_messages = 0;
        cubec_status st = open_with_faults(specs[i], &d);
        if (!st) {
            close_checked(d);
            fail_msg("BUG: CUBEC_FAULT=%s was accepted (expected CUBEC_INVALID_ARGUMENT)",
                     specs[i]);
        }
        assert_int_equal(cubec_status_code(st), CUBEC_INVALID_ARGUMENT);
        if (!strstr(cubec_status_message(st), specs[i]))
            fail_msg("CUBEC_FAULT=%s: \"%s\" does not name the spec", specs[i],
                     cubec_status_message(st));
        cubec_status_free(st);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* (a) */
        cmocka_unit_test(test_launch_skipped_when_input_failed),
        cmocka_unit_test(test_launch_skipped_when_indirect_count_failed),
        cmocka_unit_test(test_copy_skipped_when_source_failed),
        cmocka_unit_test(test_failed_output_is_not_an_input),
        cmocka_unit_test(test_successful_relaunch_clears_failure),
        /* (b) */
        cmocka_unit_test(test_failed_write_taints_destination),
        cmocka_unit_test(test_host_write_clears_only_its_range),
        cmocka_unit_test(test_unaligned_write_keeps_failure_before_it),
        cmocka_unit_test(test_lost_unaligned_write_taints_only_its_bytes),
        cmocka_unit_test(test_copy_not_skipped_for_failure_before_its_source),
        /* (c) */
        cmocka_unit_test(test_errors_name_root_cause_and_chain),
        /* (d) */
        cmocka_unit_test(test_failure_does_not_block_other_streams),
        /* (e) */
        cmocka_unit_test(test_lost_submission_taints_its_writes),
        cmocka_unit_test(test_device_lost_fails_fast),
        /* (f) */
        cmocka_unit_test(test_fault_injection_api),
        cmocka_unit_test(test_page_fault_fails_buffer_creation),
        cmocka_unit_test(test_fault_environment),
        cmocka_unit_test(test_fault_environment_refuses_negative_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
