/* Shapes from specialization constants (issue 24, point 1): a workgroup size given by
 * local_size_x_id and shared arrays sized by specialization-constant expressions take the values
 * of cubec_kernel_desc.spec_constants (the module's defaults when none are given). Each kernel
 * runs on the device and its output is checked against a CPU reference computed here; grids are
 * sized from cubec_kernel_get_info's workgroup_size, so a size reported wrong fails the check.
 * The device limits (workgroup size, invocations, shared memory) are read from the device and
 * checked on the specialized values, in both directions. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 1024 };

/* Each invocation writes where it stands: which invocation of which workgroup, and the workgroup
 * size the kernel sees. The default size is the literal 32 (glslang takes local_size_x as the
 * default of local_size_x_id's constant). */
static const char where_src[] =
    "#version 450\n"
    "layout(local_size_x = 32, local_size_x_id = 0) in;\n"
    "layout(std430, binding = 0) writeonly buffer Y { uint y[]; };\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  y[i] = gl_LocalInvocationID.x + 1000u * gl_WorkGroupID.x + 1000000u * gl_WorkGroupSize.x;\n"
    "}\n";

/* Written like ggml's reductions (sum_rows, soft_max): the workgroup size and the shared array
 * both come from BLOCK_SIZE. Each workgroup sums 2 * BLOCK_SIZE inputs (BLOCK_SIZE a power of
 * two) into one output. */
static const char ggml_style_src[] =
    "#version 450\n"
    "layout(local_size_x_id = 0, local_size_y = 1) in;\n"
    "layout(constant_id = 0) const uint BLOCK_SIZE = 32;\n"
    "layout(std430, binding = 0) readonly buffer X { float x[]; };\n"
    "layout(std430, binding = 1) writeonly buffer Y { float y[]; };\n"
    "shared float tmp[BLOCK_SIZE * 2];\n"
    "void main() {\n"
    "  uint t = gl_LocalInvocationID.x, base = gl_WorkGroupID.x * 2u * BLOCK_SIZE;\n"
    "  tmp[t] = x[base + t];\n"
    "  tmp[t + BLOCK_SIZE] = x[base + BLOCK_SIZE + t];\n"
    "  barrier();\n"
    "  for (uint s = BLOCK_SIZE; s > 0u; s >>= 1u) {\n"
    "    if (t < s) tmp[t] += tmp[t + s];\n"
    "    barrier();\n"
    "  }\n"
    "  if (t == 0u) y[gl_WorkGroupID.x] = tmp[0];\n"
    "}\n";

static cubec_kernel create(cubec_device *d, const char *name, const char *src,
                           const cubec_spec_constant *spec, uint32_t count)
{
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = name;
    kd.glsl = src;
    kd.spec_constants = spec;
    kd.spec_constant_count = count;
    cubec_kernel k;
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    return k;
}

static cubec_status try_create(cubec_device *d, const char *name, const char *src,
                               const cubec_spec_constant *spec, uint32_t count)
{
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = name;
    kd.glsl = src;
    kd.spec_constants = spec;
    kd.spec_constant_count = count;
    cubec_kernel k = {0};
    cubec_status err = cubec_kernel_create(d, &kd, &k);
    if (!err) ASSERT_OK(cubec_kernel_destroy(d, k));
    return err;
}

/* Runs where_src's kernel over N invocations, grid from the reported workgroup size, and checks
 * every output against `want_wg` (what the specialization asked for). */
static void run_where(cubec_device *d, cubec_buffer y, const cubec_spec_constant *spec,
                      uint32_t count, uint32_t want_wg)
{
    cubec_kernel k = create(d, "where", where_src, spec, count);
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.workgroup_size[0], want_wg);
    assert_int_equal(ki.workgroup_size[1], 1);
    assert_int_equal(ki.workgroup_size[2], 1);
    ASSERT_OK(cubec_fill(d, 0, y, 0, N * sizeof(uint32_t), 0xffffffffu));
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = &y;
    ld.buffer_count = 1;
    ld.groups[0] = N / ki.workgroup_size[0];
    ld.groups[1] = ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    static uint32_t out[N];
    ASSERT_OK(cubec_read(d, 0, y, 0, out, sizeof out));
    for (uint32_t i = 0; i < N; i++) {
        uint32_t want = i % want_wg + 1000u * (i / want_wg) + 1000000u * want_wg;
        if (out[i] != want)
            fail_msg("workgroup size %u: y[%u] = %u, want %u", want_wg, i, out[i], want);
    }
    ASSERT_OK(cubec_kernel_destroy(d, k));
}

/* The default (32) and two specializations (64, 256): the invocations each workgroup has decide
 * every output, and the grid comes from cubec_kernel_get_info. */
static void test_workgroup_size_from_spec_constant(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_buffer y;
    ASSERT_OK(cubec_buffer_create(d, 0, N * sizeof(uint32_t), &y));
    run_where(d, y, NULL, 0, 32);
    const cubec_spec_constant s64 = {0, 64}, s256 = {0, 256};
    run_where(d, y, &s64, 1, 64);
    run_where(d, y, &s256, 1, 256);
    ASSERT_OK(cubec_buffer_release(d, y));
    test_device_close(d);
}

/* Creates ggml_style_src's kernel with BLOCK_SIZE = `block`, checks the workgroup size and shared
 * memory cubec_kernel_get_info reports, runs it on a grid sized from them over x (b[0]) and checks
 * each workgroup's sum (b[1]) against the CPU's. */
static void run_reduction(cubec_device *d, uint32_t block, const float *x, const cubec_buffer *b)
{
    const uint32_t per_group = 2 * block, groups = N / per_group;
    const cubec_spec_constant spec = {0, block};
    cubec_kernel k = create(d, "ggml_reduce", ggml_style_src, &spec, 1);
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.workgroup_size[0], block);
    assert_int_equal(ki.shared_memory_size, block * 2 * sizeof(float));
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = b;
    ld.buffer_count = 2;
    ld.groups[0] = N / (2 * ki.workgroup_size[0]);
    ld.groups[1] = ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    static float y[N];
    ASSERT_OK(cubec_read(d, 0, b[1], 0, y, groups * sizeof(float)));
    for (uint32_t g = 0; g < groups; g++) {
        double want = 0;
        for (uint32_t i = 0; i < per_group; i++)
            want += x[g * per_group + i];
        if (y[g] < want - 1e-3 || y[g] > want + 1e-3)
            fail_msg("BLOCK_SIZE %u: group %u sums to %f, want %f", block, g, (double)y[g], want);
    }
    ASSERT_OK(cubec_kernel_destroy(d, k));
}

static void make_input(cubec_device *d, float *x, cubec_buffer *b)
{
    uint32_t seed = 11;
    for (int i = 0; i < N; i++)
        x[i] = test_randf(&seed);
    ASSERT_OK(cubec_buffer_from(d, 0, x, N * sizeof(float), &b[0]));
    ASSERT_OK(cubec_buffer_create(d, 0, N * sizeof(float), &b[1]));
}

/* ggml's pattern at two BLOCK_SIZEs: the workgroup and tmp[BLOCK_SIZE * 2] follow the value
 * given (cubec_kernel_get_info reports both), and the sums match the CPU's. Without a value the
 * workgroup is 1 x 1 x 1: glslang gives local_size_x_id's constant a default of its own (1), not
 * BLOCK_SIZE's 32, and cubec reports what the driver will run. */
static void test_ggml_style_reduction(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    static float x[N];
    cubec_buffer b[2];
    make_input(d, x, b);
    cubec_kernel k = create(d, "ggml_default", ggml_style_src, NULL, 0);
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.workgroup_size[0], 1);
    assert_int_equal(ki.shared_memory_size, 32 * 2 * sizeof(float));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    run_reduction(d, 16, x, b);
    run_reduction(d, 128, x, b);
    ASSERT_OK(cubec_buffer_release(d, b[0]));
    ASSERT_OK(cubec_buffer_release(d, b[1]));
    test_device_close(d);
}

/* The disk cache keeps the SPIR-V of a GLSL source once for all its specializations (the values go
 * to the pipeline, docs/kernel-cache.md); each specialization is measured from it with its own
 * values. A second device, whose SPIR-V comes from the cache, gets the sizes of the values it
 * gives, not those of the first device's kernels. */
static void test_disk_cache_keeps_specializations_apart(void **state)
{
    (void)state;
    char dir[128];
    test_temp_dir(dir, sizeof dir, "cubec_test_spec_shapes");
    setenv("CUBEC_CACHE_DIR", dir, 1);
    static float x[N];
    cubec_buffer b[2];
    cubec_device *d = test_device_open();
    make_input(d, x, b);
    run_reduction(d, 16, x, b);
    ASSERT_OK(cubec_buffer_release(d, b[0]));
    ASSERT_OK(cubec_buffer_release(d, b[1]));
    test_device_close(d);
    assert_int_equal(test_count_entries(dir, "spirv"), 1);

    d = test_device_open();
    make_input(d, x, b);
    run_reduction(d, 64, x, b);
    run_reduction(d, 16, x, b);
    ASSERT_OK(cubec_buffer_release(d, b[0]));
    ASSERT_OK(cubec_buffer_release(d, b[1]));
    test_device_close(d);
    assert_int_equal(test_count_entries(dir, "spirv"), 1);
    setenv("CUBEC_CACHE_DIR", "none", 1);
    test_remove_tree(dir);
}

/* A shared array of WORDS * 2 floats plus a counter (the length an OpSpecConstantOp). Every
 * invocation fills its part and the first sums them: out[0] = WORDS * 2 * 3. */
static void shared_src(char *out, size_t cap, uint32_t default_words)
{
    snprintf(out, cap,
             "#version 450\n"
             "layout(local_size_x = 64) in;\n"
             "layout(constant_id = 1) const uint WORDS = %uu;\n"
             "layout(std430, binding = 0) writeonly buffer Y { float y[]; };\n"
             "shared float tmp[WORDS * 2u];\n"
             "void main() {\n"
             "  for (uint i = gl_LocalInvocationID.x; i < WORDS * 2u; i += 64u) tmp[i] = 3.0;\n"
             "  barrier();\n"
             "  if (gl_LocalInvocationID.x == 0u) {\n"
             "    float s = 0.0;\n"
             "    for (uint i = 0u; i < WORDS * 2u; i++) s += tmp[i];\n"
             "    y[0] = s;\n"
             "  }\n"
             "}\n",
             default_words);
}

/* The shared-memory limit on the specialized size, in both directions (lavapipe runs a kernel
 * past it into undefined behaviour, so the check matters): a default that fits specialized past
 * the limit is refused naming the size and the limit; a default past the limit specialized to
 * 256 bytes is accepted and runs. */
static void test_shared_limit_on_specialized_size(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    const uint32_t limit = info.max_shared_memory_size;
    char src[1400], want[200];

    /* 256 B by default; 2 x the limit with WORDS = limit / 4. */
    shared_src(src, sizeof src, 32);
    const cubec_spec_constant big = {1, limit / 4u};
    snprintf(want, sizeof want,
             "kernel 'shared_big': %u bytes of shared (Workgroup) memory exceed the device limit "
             "of %u bytes (maxComputeSharedMemorySize)",
             2u * limit, limit);
    ASSERT_ERROR(try_create(d, "shared_big", src, &big, 1), CUBEC_UNSUPPORTED, want);

    /* 2 x the limit by default (refused as it is), 256 B as specialized: accepted and run. */
    shared_src(src, sizeof src, limit / 4u);
    snprintf(want, sizeof want, "%u bytes of shared (Workgroup) memory exceed", 2u * limit);
    ASSERT_ERROR(try_create(d, "shared_default_big", src, NULL, 0), CUBEC_UNSUPPORTED, want);
    const cubec_spec_constant small = {1, 32};
    cubec_kernel k = create(d, "shared_small", src, &small, 1);
    cubec_buffer y;
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof(float), &y));
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = &y;
    ld.buffer_count = 1;
    ld.groups[0] = ld.groups[1] = ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    float sum = 0;
    ASSERT_OK(cubec_read(d, 0, y, 0, &sum, sizeof sum));
    assert_float_equal(sum, 32.0f * 2.0f * 3.0f, 0.0f);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_buffer_release(d, y));
    test_device_close(d);
}

/* Workgroup sizes past the device's limits through specialization values are refused naming the
 * constant and its value: one dimension past maxComputeWorkGroupSize, a product past
 * maxComputeWorkGroupInvocations, and 0 (no workgroup at all). */
static void test_workgroup_limits_on_specialized_size(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    static const char xy_src[] = "#version 450\n"
                                 "layout(local_size_x_id = 0, local_size_y_id = 1) in;\n"
                                 "layout(std430, binding = 0) writeonly buffer Y { uint y[]; };\n"
                                 "void main() { y[gl_LocalInvocationIndex] = 1u; }\n";
    char want[240];

    const uint32_t past_x = info.max_workgroup_size[0] + 1u;
    const cubec_spec_constant wide[] = {{0, past_x}};
    snprintf(want, sizeof want,
             "workgroup size x = %u exceeds the device limit of %u (maxComputeWorkGroupSize[0]); "
             "x is specialization constant 0 = %u",
             past_x, info.max_workgroup_size[0], past_x);
    ASSERT_ERROR(try_create(d, "wide", xy_src, wide, 1), CUBEC_UNSUPPORTED, want);

    /* Each dimension within its limit, the product past the invocations'. */
    uint32_t x = info.max_workgroup_size[0] < info.max_workgroup_invocations
                     ? info.max_workgroup_size[0]
                     : info.max_workgroup_invocations;
    uint32_t y = info.max_workgroup_invocations / x + 1u;
    if (y <= info.max_workgroup_size[1]) {
        const cubec_spec_constant many[] = {{1, y}, {0, x}};
        snprintf(want, sizeof want,
                 "a workgroup of %u x %u x 1 = %llu invocations exceeds the device limit of %u "
                 "(maxComputeWorkGroupInvocations); x is specialization constant 0 = %u, y is "
                 "specialization constant 1 = %u",
                 x, y, (unsigned long long)x * y, info.max_workgroup_invocations, x, y);
        ASSERT_ERROR(try_create(d, "many", xy_src, many, 2), CUBEC_UNSUPPORTED, want);
    } else {
        print_message("skipped the invocations case: the device's per-dimension limits hold "
                      "no more than its invocations\n");
    }

    const cubec_spec_constant zero[] = {{1, 0}};
    ASSERT_ERROR(try_create(d, "zero", xy_src, zero, 1), CUBEC_INVALID_ARGUMENT,
                 "kernel 'zero': workgroup size y is specialization constant 1 = 0: a workgroup "
                 "size must be at least 1");

    /* Within the limits: accepted, and the device still works after the refusals. */
    const cubec_spec_constant fits[] = {{0, 8}, {1, 4}};
    cubec_kernel k = create(d, "fits", xy_src, fits, 2);
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    const uint32_t want_wg[3] = {8, 4, 1};
    assert_memory_equal(ki.workgroup_size, want_wg, sizeof want_wg);
    cubec_buffer out;
    ASSERT_OK(cubec_buffer_create(d, 0, 64 * sizeof(uint32_t), &out));
    ASSERT_OK(cubec_fill(d, 0, out, 0, 64 * sizeof(uint32_t), 0));
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = &out;
    ld.buffer_count = 1;
    ld.groups[0] = ld.groups[1] = ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    uint32_t got[64];
    ASSERT_OK(cubec_read(d, 0, out, 0, got, sizeof got));
    for (uint32_t i = 0; i < 64; i++)
        assert_int_equal(got[i], i < 32 ? 1u : 0u); /* 8 x 4 invocations wrote */
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_buffer_release(d, out));
    test_device_close(d);
}

/* Per-subgroup partial sums as ggml writes them (partial[BLOCK_SIZE / SUBGROUP_SIZE]): with
 * the defaults (16 / 32) the array has length 0, which Vulkan forbids once specialized (the
 * validation layer reports VUID-VkPipelineShaderStageCreateInfo-pSpecializationInfo-06719; before
 * the check cubec handed it to the driver). Refused naming the variable and the length; with
 * values that make it 4 the kernel runs and sums 1 + 2 + 3 + 4. */
static void test_array_length_below_one(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    static const char src[] =
        "#version 450\n"
        "layout(local_size_x_id = 0) in;\n"
        "layout(constant_id = 0) const uint BLOCK_SIZE = 16;\n"
        "layout(constant_id = 1) const uint SUBGROUP_SIZE = 32;\n"
        "layout(std430, binding = 0) writeonly buffer Y { float y[]; };\n"
        "shared float partial[BLOCK_SIZE / SUBGROUP_SIZE];\n"
        "void main() {\n"
        "  uint t = gl_LocalInvocationID.x;\n"
        "  if (t < BLOCK_SIZE / SUBGROUP_SIZE) partial[t] = float(t + 1u);\n"
        "  barrier();\n"
        "  if (t == 0u) {\n"
        "    float s = 0.0;\n"
        "    for (uint i = 0u; i < BLOCK_SIZE / SUBGROUP_SIZE; i++) s += partial[i];\n"
        "    y[0] = s;\n"
        "  }\n"
        "}\n";
    ASSERT_ERROR(try_create(d, "partial", src, NULL, 0), CUBEC_INVALID_SPIRV,
                 "kernel 'partial': Workgroup (shared) variable 'partial' has an array length of "
                 "0 with these specialization values: Vulkan requires every length to be at least "
                 "1 once specialized");
    const cubec_spec_constant still_zero[] = {{0, 16}};
    ASSERT_ERROR(try_create(d, "partial", src, still_zero, 1), CUBEC_INVALID_SPIRV,
                 "array length of 0");
    const cubec_spec_constant fits[] = {{0, 128}, {1, 32}};
    cubec_kernel k = create(d, "partial", src, fits, 2);
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.workgroup_size[0], 128);
    assert_int_equal(ki.shared_memory_size, 4 * sizeof(float));
    cubec_buffer y;
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof(float), &y));
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = &y;
    ld.buffer_count = 1;
    ld.groups[0] = ld.groups[1] = ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    float sum = 0;
    ASSERT_OK(cubec_read(d, 0, y, 0, &sum, sizeof sum));
    assert_float_equal(sum, 1.0f + 2.0f + 3.0f + 4.0f, 0.0f);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_buffer_release(d, y));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workgroup_size_from_spec_constant),
        cmocka_unit_test(test_ggml_style_reduction),
        cmocka_unit_test(test_disk_cache_keeps_specializations_apart),
        cmocka_unit_test(test_shared_limit_on_specialized_size),
        cmocka_unit_test(test_workgroup_limits_on_specialized_size),
        cmocka_unit_test(test_array_length_below_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
