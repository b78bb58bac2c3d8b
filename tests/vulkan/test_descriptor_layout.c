/* Kernels run with their descriptor layout as written (issue 24, point 2; docs/kernels.md,
 * "Bringing existing shaders"): a gap in the bindings, more buffers than the module uses, a
 * uniform block between storage buffers, two descriptor sets, a push-constant block beside a
 * uniform block; a graph of one replayed, and a failure carried into a launch through a
 * uniform-bound buffer. Each runs a real kernel on the device and checks its output against the
 * CPU. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define N 256u

static cubec_buffer words_buffer(cubec_device *d, const uint32_t *words, uint32_t count)
{
    cubec_buffer b = {0};
    ASSERT_OK(cubec_buffer_from(d, 0, words, count * 4ull, &b));
    return b;
}

static void fill_words(uint32_t *w, uint32_t n, uint32_t seed)
{
    for (uint32_t i = 0; i < n; i++)
        w[i] = test_rand(&seed) % 100000u;
}

/* Words [0, n) of `b` against want (launch_util's comparison). */
static void expect_words(cubec_device *d, cubec_buffer b, const uint32_t *want, uint32_t n,
                         const char *what)
{
    expect_range_in(d, 0, b, n, 0, n, want, what);
}

static cubec_status launch(cubec_device *d, cubec_kernel k, const cubec_buffer *bufs,
                           uint32_t count, const void *info, uint32_t info_size)
{
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = bufs;
    ld.buffer_count = count;
    ld.info = info;
    ld.info_size = info_size;
    ld.groups[0] = N / 64;
    ld.groups[1] = ld.groups[2] = 1;
    return cubec_launch(d, 0, &ld);
}

/* Bindings 0 and 2: binding 1 is the gap spirv-opt leaves when a variant does not use it (ggml's
 * argsort, soft_max_large1/3). Buffer i goes to binding i; the buffer at the gap is not bound. */
static const char gap_src[] = "#version 450\n"
                              "layout(local_size_x = 64) in;\n"
                              "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
                              "layout(std430, binding = 2) writeonly buffer C { uint c[]; };\n"
                              "layout(push_constant) uniform P { uint mul; uint add; } pc;\n"
                              "void main() {\n"
                              "    uint i = gl_GlobalInvocationID.x;\n"
                              "    c[i] = a[i] * pc.mul + pc.add;\n"
                              "}\n";

static void test_binding_gap(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = make_kernel(d, "gap", gap_src);
    cubec_kernel_info info = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &info));
    assert_int_equal(info.binding_count, 3);
    assert_int_equal(info.access[0], CUBEC_ACCESS_READ);
    assert_int_equal(info.access[1], 0); /* the gap */
    assert_int_equal(info.access[2], CUBEC_ACCESS_WRITE);
    uint32_t a[N], untouched[N], want[N];
    fill_words(a, N, 1);
    fill_words(untouched, N, 2);
    for (uint32_t i = 0; i < N; i++)
        want[i] = a[i] * 7u + 3u;
    cubec_buffer bufs[3] = {words_buffer(d, a, N), words_buffer(d, untouched, N),
                            words_buffer(d, untouched, N)};
    const uint32_t pc[2] = {7, 3};
    ASSERT_OK(launch(d, k, bufs, 3, pc, sizeof pc));
    expect_words(d, bufs[2], want, N, "c (binding 2)");
    expect_words(d, bufs[1], untouched, N, "the buffer at the gap");
    /* The gap still takes a buffer: two are too few. */
    ASSERT_ERROR(launch(d, k, bufs, 2, pc, sizeof pc), CUBEC_INVALID_ARGUMENT, "takes 3 buffers");
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

/* ggml binds its own count of buffers, a superset of what the optimizer left: the ones past the
 * module's last binding are not bound, not ordered and not written. */
static void test_more_buffers_than_bindings(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = make_kernel(d, "gap", gap_src);
    uint32_t a[N], untouched[N], want[N];
    fill_words(a, N, 3);
    fill_words(untouched, N, 4);
    cubec_buffer bufs[6];
    for (int i = 0; i < 6; i++)
        bufs[i] = words_buffer(d, i == 0 ? a : untouched, N);
    /* Twice, so that the second launch reuses the pushed descriptors of the first. */
    for (uint32_t round = 0; round < 2; round++) {
        for (uint32_t i = 0; i < N; i++)
            want[i] = a[i] * (5u + round) + 1u;
        const uint32_t pc[2] = {5u + round, 1};
        ASSERT_OK(launch(d, k, bufs, 6, pc, sizeof pc));
        expect_words(d, bufs[2], want, N, "c (binding 2)");
    }
    for (int i = 3; i < 6; i++)
        expect_words(d, bufs[i], untouched, N, "a buffer past the module's bindings");
    for (int i = 0; i < 6; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

/* Sascha Willems' computecullandlod: a uniform block at binding 2 between storage buffers. The
 * module says the binding is uniform; the caller binds a plain cubec buffer there. */
static const char uniform_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
    "layout(std430, binding = 1) writeonly buffer B { uint b[]; };\n"
    "layout(std140, binding = 2) uniform UBO { uvec4 coef; uint n; } ubo;\n"
    "layout(std430, binding = 3) writeonly buffer C { uint c[]; };\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i >= ubo.n) return;\n"
    "    b[i] = a[i] * ubo.coef.x + ubo.coef.y;\n"
    "    c[i] = a[i] * ubo.coef.z + ubo.coef.w;\n"
    "}\n";

/* The std140 block: a uvec4 and a uint, 20 bytes declared (padded here to 32). */
typedef struct ubo_words {
    uint32_t coef[4];
    uint32_t n;
    uint32_t pad[3];
} ubo_words;

static void cpu_uniform(const uint32_t *a, const ubo_words *u, uint32_t *b, uint32_t *c)
{
    for (uint32_t i = 0; i < N; i++) {
        b[i] = i < u->n ? a[i] * u->coef[0] + u->coef[1] : 0;
        c[i] = i < u->n ? a[i] * u->coef[2] + u->coef[3] : 0;
    }
}

static void test_uniform_between_storage(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = make_kernel(d, "uniform_at_2", uniform_src);
    cubec_kernel_info info = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &info));
    assert_int_equal(info.binding_count, 4);
    assert_int_equal(info.access[2], CUBEC_ACCESS_READ);
    uint32_t a[N], zero[N], want_b[N], want_c[N];
    fill_words(a, N, 5);
    memset(zero, 0, sizeof zero);
    ubo_words u = {{3, 11, 5, 13}, N - 40, {0, 0, 0}};
    cubec_buffer ubuf = {0};
    ASSERT_OK(cubec_buffer_from(d, 0, &u, sizeof u, &ubuf));
    cubec_buffer bufs[4] = {words_buffer(d, a, N), words_buffer(d, zero, N), ubuf,
                            words_buffer(d, zero, N)};
    ASSERT_OK(launch(d, k, bufs, 4, NULL, 0));
    cpu_uniform(a, &u, want_b, want_c);
    expect_words(d, bufs[1], want_b, N, "b");
    expect_words(d, bufs[3], want_c, N, "c");
    /* New uniform contents reach the next launch (the write is ordered before it). */
    u.coef[0] = 9;
    u.n = N;
    ASSERT_OK(cubec_write(d, 0, ubuf, 0, &u, sizeof u));
    ASSERT_OK(launch(d, k, bufs, 4, NULL, 0));
    cpu_uniform(a, &u, want_b, want_c);
    expect_words(d, bufs[1], want_b, N, "b after the uniform changed");
    /* A buffer smaller than the block is refused, naming the argument and the sizes. */
    cubec_buffer small = {0};
    ASSERT_OK(cubec_buffer_create(d, 0, 16, &small));
    cubec_buffer bad[4] = {bufs[0], bufs[1], small, bufs[3]};
    ASSERT_ERROR(launch(d, k, bad, 4, NULL, 0), CUBEC_INVALID_ARGUMENT,
                 "desc->buffers[2] is 16 bytes, smaller than the uniform block of 20 bytes");
    ASSERT_OK(cubec_buffer_release(d, small));
    for (int i = 0; i < 4; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

/* Two sets: set 0 binding 0, then set 1's bindings follow set 0's highest (slot 1 = set 1
 * binding 0, slot 2 = set 1 binding 1). */
static const char two_sets_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };\n"
    "layout(std430, set = 1, binding = 0) writeonly buffer O { uint o[]; };\n"
    "layout(std430, set = 1, binding = 1) readonly buffer B { uint b[]; };\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    o[i] = a[i] * 3u + b[i];\n"
    "}\n";

static void test_two_descriptor_sets(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = make_kernel(d, "two_sets", two_sets_src);
    uint32_t a[N], b[N], zero[N], want[N];
    fill_words(a, N, 6);
    fill_words(b, N, 7);
    memset(zero, 0, sizeof zero);
    for (uint32_t i = 0; i < N; i++)
        want[i] = a[i] * 3u + b[i];
    cubec_buffer bufs[3] = {words_buffer(d, a, N), words_buffer(d, zero, N), words_buffer(d, b, N)};
    ASSERT_OK(launch(d, k, bufs, 3, NULL, 0));
    expect_words(d, bufs[1], want, N, "o (set 1 binding 0)");
    /* Swapped inputs: the sets are written again, not kept from the launch before. */
    cubec_buffer swapped[3] = {bufs[2], bufs[1], bufs[0]};
    for (uint32_t i = 0; i < N; i++)
        want[i] = b[i] * 3u + a[i];
    ASSERT_OK(launch(d, k, swapped, 3, NULL, 0));
    expect_words(d, bufs[1], want, N, "o after swapping the inputs");
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

/* Kompute's and Sascha's cloth: a push-constant block beside a uniform block. The launch's info
 * bytes are the push block; the uniform block is a buffer. */
static const char push_and_uniform_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) buffer V { uint v[]; };\n"
    "layout(std140, binding = 1) uniform Params { uint mul; uint add; } params;\n"
    "layout(push_constant) uniform Push { uint n; uint extra; } pc;\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i < pc.n) v[i] = v[i] * params.mul + params.add + pc.extra;\n"
    "}\n";

static void test_push_block_beside_uniform_block(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = make_kernel(d, "push_and_uniform", push_and_uniform_src);
    uint32_t v[N], want[N];
    fill_words(v, N, 8);
    const uint32_t params[4] = {5, 2, 0, 0};
    const uint32_t pc[2] = {N - 10, 100};
    for (uint32_t i = 0; i < N; i++)
        want[i] = i < pc[0] ? v[i] * params[0] + params[1] + pc[1] : v[i];
    cubec_buffer bufs[2] = {words_buffer(d, v, N), words_buffer(d, params, 4)};
    ASSERT_OK(launch(d, k, bufs, 2, pc, sizeof pc));
    expect_words(d, bufs[0], want, N, "v");
    for (int i = 0; i < 2; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

/* A graph of the uniform-block kernel: the replay reads the uniform buffer's contents of its own
 * time (written between replays). */
static void test_graph_of_uniform_kernel(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_stream s = new_stream(d);
    cubec_kernel k = make_kernel(d, "uniform_at_2", uniform_src);
    uint32_t a[N], zero[N], want_b[N], want_c[N];
    fill_words(a, N, 9);
    memset(zero, 0, sizeof zero);
    ubo_words u = {{2, 1, 4, 6}, N, {0, 0, 0}};
    cubec_buffer ubuf = {0};
    ASSERT_OK(cubec_buffer_from(d, s, &u, sizeof u, &ubuf));
    cubec_buffer bufs[4] = {words_buffer(d, a, N), words_buffer(d, zero, N), ubuf,
                            words_buffer(d, zero, N)};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = bufs;
    ld.buffer_count = 4;
    ld.groups[0] = N / 64;
    ld.groups[1] = ld.groups[2] = 1;
    ASSERT_OK(cubec_sync(d, 0));
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(cubec_launch(d, s, &ld));
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(cubec_launch(d, s, &ld));
    cubec_graph g = {0};
    ASSERT_OK(cubec_graph_end(d, s, &g));
    for (uint32_t round = 0; round < 3; round++) {
        u.coef[0] = 10 + round;
        u.coef[3] = round;
        u.n = N - round * 7;
        ASSERT_OK(cubec_write(d, s, bufs[1], 0, zero, sizeof zero));
        ASSERT_OK(cubec_write(d, s, ubuf, 0, &u, sizeof u));
        ASSERT_OK(cubec_graph_replay(d, s, g));
        ASSERT_OK(cubec_sync(d, s));
        cpu_uniform(a, &u, want_b, want_c);
        char what[48];
        snprintf(what, sizeof what, "b after replay %u", round);
        uint32_t got[N];
        ASSERT_OK(cubec_read(d, s, bufs[1], 0, got, sizeof got));
        for (uint32_t i = 0; i < N; i++)
            if (got[i] != want_b[i])
                fail_msg("%s: word %u is %u, want %u", what, i, got[i], want_b[i]);
    }
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    for (int i = 0; i < 4; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

/* A uniform-bound buffer that carries a failure is an input like a storage one: the launch is
 * skipped and its outputs carry the failure (spec section 5); the outputs are untouched. */
static void test_failure_through_uniform_buffer(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    cubec_stream s = new_stream(d);
    cubec_kernel produce = make_kernel(d, "produce", produce_src);
    cubec_kernel k = make_kernel(d, "uniform_at_2", uniform_src);
    uint32_t a[N], zero[N];
    fill_words(a, N, 10);
    memset(zero, 0, sizeof zero);
    tbuf ubuf = make_numbered_buffer(d, s, zero, 64);
    tbuf in = make_numbered_buffer(d, s, a, sizeof a);
    tbuf out_b = make_numbered_buffer(d, s, zero, sizeof zero);
    tbuf out_c = make_numbered_buffer(d, s, zero, sizeof zero);
    /* 16 words of ubuf: coef = (0, 1, 2, 3), n = 4 if the launch had run. */
    taint_by_lost_submission(d, s, produce, ubuf.h, 16, 1, 0);
    cubec_buffer bufs[4] = {in.h, out_b.h, ubuf.h, out_c.h};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = bufs;
    ld.buffer_count = 4;
    ld.groups[0] = N / 64;
    ld.groups[1] = ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, s, &ld));
    char want[256];
    snprintf(want, sizeof want,
             "launch \"uniform_at_2\" on stream %" PRIu64
             " was skipped because its input buffer #%" PRIu64
             " was not written: the submission of its work failed: injected fault",
             stream_number(s), ubuf.number);
    ASSERT_ERROR(cubec_sync_check(d, s, &out_b.h, 1), CUBEC_INTERNAL, want);
    ASSERT_ERROR(cubec_check(d, &out_c.h, 1), CUBEC_INTERNAL, want);
    ASSERT_OK(cubec_check(d, &in.h, 1));
    ASSERT_OK(cubec_buffer_release(d, ubuf.h));
    ASSERT_OK(cubec_buffer_release(d, in.h));
    ASSERT_OK(cubec_buffer_release(d, out_b.h));
    ASSERT_OK(cubec_buffer_release(d, out_c.h));
    ASSERT_OK(cubec_kernel_destroy(d, produce));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

/* A buffer that carries a failure at a slot the module leaves unbound (the gap, or past the last
 * binding) is not an input: the launch runs and its output is good. */
static void test_failure_in_unbound_buffer_is_not_an_input(void **state)
{
    (void)state;
    cubec_device *d = open_device();
    cubec_stream s = new_stream(d);
    cubec_kernel produce = make_kernel(d, "produce", produce_src);
    cubec_kernel k = make_kernel(d, "gap", gap_src);
    uint32_t a[N], zero[N], want[N];
    fill_words(a, N, 11);
    memset(zero, 0, sizeof zero);
    tbuf bad = make_numbered_buffer(d, s, zero, sizeof zero);
    tbuf in = make_numbered_buffer(d, s, a, sizeof a);
    tbuf out = make_numbered_buffer(d, s, zero, sizeof zero);
    taint_by_lost_submission(d, s, produce, bad.h, N, 1, 0);
    cubec_buffer bufs[4] = {in.h, bad.h, out.h, bad.h};
    const uint32_t pc[2] = {4, 9};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = bufs;
    ld.buffer_count = 4;
    ld.info = pc;
    ld.info_size = sizeof pc;
    ld.groups[0] = N / 64;
    ld.groups[1] = ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, s, &ld));
    ASSERT_OK(cubec_sync_check(d, s, &out.h, 1));
    for (uint32_t i = 0; i < N; i++)
        want[i] = a[i] * 4u + 9u;
    expect_range_in(d, s, out.h, N, 0, N, want, "c of the launch beside a failed buffer");
    ASSERT_OK(cubec_buffer_release(d, bad.h));
    ASSERT_OK(cubec_buffer_release(d, in.h));
    ASSERT_OK(cubec_buffer_release(d, out.h));
    ASSERT_OK(cubec_kernel_destroy(d, produce));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binding_gap),
        cmocka_unit_test(test_more_buffers_than_bindings),
        cmocka_unit_test(test_uniform_between_storage),
        cmocka_unit_test(test_two_descriptor_sets),
        cmocka_unit_test(test_push_block_beside_uniform_block),
        cmocka_unit_test(test_graph_of_uniform_kernel),
        cmocka_unit_test(test_failure_through_uniform_buffer),
        cmocka_unit_test(test_failure_in_unbound_buffer_is_not_an_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
