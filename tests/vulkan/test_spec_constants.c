/* Specialization constants in the kernel description (cubec_kernel_desc.spec_constants): each
 * set of values is a kernel of its own, runs with those values (checked against the CPU), and
 * bad descriptions are refused naming the argument and the id. The sets of one source share one
 * SPIR-V entry of the disk cache (docs/kernels.md, docs/kernel-cache.md): the values go to the
 * pipeline, not to the compiler. */
#include "test_util.h"

#include "server/kernel_disk.h"

#include <stdlib.h>
#include <string.h>

static const char spec_src[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(constant_id = 0) const uint ADD = 1u;\n"
                               "layout(constant_id = 1) const float SCALE = 1.0;\n"
                               "layout(constant_id = 2) const bool NEGATE = false;\n"
                               "layout(std430, binding = 0) readonly buffer X { float x[]; };\n"
                               "layout(std430, binding = 1) writeonly buffer Y { float y[]; };\n"
                               "void main() {\n"
                               "  uint i = gl_GlobalInvocationID.x;\n"
                               "  float v = x[i] * SCALE + float(ADD);\n"
                               "  y[i] = NEGATE ? -v : v;\n"
                               "}\n";

enum { N = 256 };

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Creates the kernel with `spec`, runs it over x and checks y against add/scale/negate. */
static uint64_t run_case(cubec_device *d, const cubec_spec_constant *spec, uint32_t count,
                         uint32_t add, float scale, int negate, const float *x, cubec_buffer *b)
{
    cubec_kernel k;
    cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc),
                            .name = "spec",
                            .glsl = spec_src,
                            .spec_constants = spec,
                            .spec_constant_count = count};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = b,
                            .buffer_count = 2,
                            .groups = {N / 64, 1, 1}};
    ASSERT_OK(cubec_launch(d, 0, &ld));
    float y[N];
    ASSERT_OK(cubec_read(d, 0, b[1], 0, y, sizeof y));
    for (int i = 0; i < N; i++) {
        float v = x[i] * scale + (float)add;
        assert_float_equal(y[i], negate ? -v : v, 1e-5f);
    }
    return ki.hash;
}

static void test_values_reach_the_kernel(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    float x[N];
    uint32_t seed = 3;
    for (int i = 0; i < N; i++)
        x[i] = test_randf(&seed);
    cubec_buffer b[2];
    ASSERT_OK(cubec_buffer_from(d, 0, x, sizeof x, &b[0]));
    ASSERT_OK(cubec_buffer_create(d, 0, N * sizeof(float), &b[1]));
    uint64_t h0 = run_case(d, NULL, 0, 1, 1.0f, 0, x, b); /* the defaults */
    const cubec_spec_constant a[] = {{0, 7}, {1, float_bits(2.5f)}};
    uint64_t h1 = run_case(d, a, 2, 7, 2.5f, 0, x, b);
    const cubec_spec_constant c[] = {{2, 1}, {0, 3}};
    uint64_t h2 = run_case(d, c, 2, 3, 1.0f, 1, x, b);
    /* The same values again: the same kernel. */
    uint64_t h1b = run_case(d, a, 2, 7, 2.5f, 0, x, b);
    assert_true(h0 != h1 && h1 != h2 && h0 != h2);
    assert_true(h1 == h1b);
    ASSERT_OK(cubec_buffer_release(d, b[0]));
    ASSERT_OK(cubec_buffer_release(d, b[1]));
    test_device_close(d);
}

static kernel_disk_stats disk_stats(cubec_device *d)
{
    kernel_disk_stats s;
    kernel_disk_get_stats(d, &s);
    return s;
}

/* Two sets of values of one source on a device with a cache directory of its own: the first is
 * compiled and its SPIR-V stored, the second finds that entry (a hit, nothing written) and still
 * runs with its own values; the directory holds one SPIR-V entry. A second device with a third
 * set compiles nothing either. Had the values been part of the entry's key, each set would have
 * missed and written an entry of its own. */
static void test_sets_share_one_spirv_entry(void **state)
{
    (void)state;
    char dir[128];
    test_temp_dir(dir, sizeof dir, "cubec_test_spec_constants");
    setenv("CUBEC_CACHE_DIR", dir, 1);
    cubec_device *d = test_device_open();
    float x[N];
    uint32_t seed = 5;
    for (int i = 0; i < N; i++)
        x[i] = test_randf(&seed);
    cubec_buffer b[2];
    ASSERT_OK(cubec_buffer_from(d, 0, x, sizeof x, &b[0]));
    ASSERT_OK(cubec_buffer_create(d, 0, N * sizeof(float), &b[1]));
    const cubec_spec_constant a[] = {{0, 4}, {1, float_bits(0.5f)}};
    uint64_t ha = run_case(d, a, 2, 4, 0.5f, 0, x, b);
    kernel_disk_stats s = disk_stats(d);
    assert_true(s.enabled);
    assert_int_equal(s.spirv_hits, 0);
    assert_int_equal(s.files.writes, 1);
    assert_int_equal(test_count_entries(dir, "spirv"), 1);
    const cubec_spec_constant c[] = {{0, 9}, {2, 1}};
    uint64_t hc = run_case(d, c, 2, 9, 1.0f, 1, x, b);
    assert_true(ha != hc); /* two kernels (pipelines) ... */
    s = disk_stats(d);
    assert_int_equal(s.spirv_hits, 1); /* ... of one SPIR-V entry */
    assert_int_equal(s.files.writes, 1);
    assert_int_equal(test_count_entries(dir, "spirv"), 1);
    ASSERT_OK(cubec_buffer_release(d, b[0]));
    ASSERT_OK(cubec_buffer_release(d, b[1]));
    test_device_close(d);

    d = test_device_open();
    ASSERT_OK(cubec_buffer_from(d, 0, x, sizeof x, &b[0]));
    ASSERT_OK(cubec_buffer_create(d, 0, N * sizeof(float), &b[1]));
    const cubec_spec_constant e[] = {{1, float_bits(-3.0f)}};
    (void)run_case(d, e, 1, 1, -3.0f, 0, x, b);
    s = disk_stats(d);
    assert_int_equal(s.spirv_hits, 1);
    assert_int_equal(s.files.writes, 0);
    assert_int_equal(test_count_entries(dir, "spirv"), 1);
    ASSERT_OK(cubec_buffer_release(d, b[0]));
    ASSERT_OK(cubec_buffer_release(d, b[1]));
    test_device_close(d);
    setenv("CUBEC_CACHE_DIR", "none", 1);
    test_remove_tree(dir);
}

static void test_bad_descriptions(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k;
    cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc),
                            .name = "spec",
                            .glsl = spec_src,
                            .spec_constant_count = 1};
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_ARGUMENT,
                 "desc->spec_constants is NULL with spec_constant_count 1");
    const cubec_spec_constant dup[] = {{1, 0}, {1, 2}};
    kd.spec_constants = dup;
    kd.spec_constant_count = 2;
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_ARGUMENT,
                 "desc->spec_constants[0] and [1] both set id 1");
    const cubec_spec_constant missing[] = {{9, 0}};
    kd.spec_constants = missing;
    kd.spec_constant_count = 1;
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_ARGUMENT,
                 "desc->spec_constants[0].id 9 is not a specialization constant of the module "
                 "(its ids: 0, 1, 2)");
    kd.spec_constant_count = CUBEC_MAX_SPEC_CONSTANTS + 1;
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_ARGUMENT,
                 "spec_constant_count is 65, more than 64");
    static const char wg_src[] = "#version 450\n"
                                 "layout(local_size_x_id = 0) in;\n"
                                 "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                                 "void main() { a[gl_GlobalInvocationID.x] = 1u; }\n";
    const cubec_spec_constant wg[] = {{0, 32}};
    cubec_kernel_desc kw = {.struct_size = sizeof(cubec_kernel_desc),
                            .name = "wg",
                            .glsl = wg_src,
                            .spec_constants = wg,
                            .spec_constant_count = 1};
    /* A workgroup size from a specialization constant takes the value given
     * (test_spec_shapes runs such kernels). */
    ASSERT_OK(cubec_kernel_create(d, &kw, &k));
    cubec_kernel_info wi = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &wi));
    assert_int_equal(wi.workgroup_size[0], 32);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    static const char wide_src[] = "#version 450\n"
                                   "layout(local_size_x = 1) in;\n"
                                   "layout(constant_id = 4) const double D = 1.0;\n"
                                   "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                                   "void main() { a[0] = uint(D); }\n";
    const cubec_spec_constant wide[] = {{4, 2}};
    cubec_kernel_desc kd64 = {.struct_size = sizeof(cubec_kernel_desc),
                              .name = "wide",
                              .glsl = wide_src,
                              .spec_constants = wide,
                              .spec_constant_count = 1};
    ASSERT_ERROR(cubec_kernel_create(d, &kd64, &k), CUBEC_UNSUPPORTED,
                 "specialization constant 4 is 64-bit");
    /* The device still works: a good description after the refusals. */
    kd.spec_constants = NULL;
    kd.spec_constant_count = 0;
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_reach_the_kernel),
        cmocka_unit_test(test_bad_descriptions),
        cmocka_unit_test(test_sets_share_one_spirv_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
