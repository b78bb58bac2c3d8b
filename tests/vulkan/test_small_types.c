/* Kernels with 8- and 16-bit types in storage buffers and push constants, and with float16
 * arithmetic: they must run with the validation layer silent (the features they need are enabled
 * at device open) and agree with a CPU reference. A device without a feature skips the kernels
 * that need it; lavapipe has them all. */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

/* IEEE half <-> float, enough for the test's values: normal numbers and zero. */
static uint16_t half_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if ((x & 0x7fffffffu) == 0) return (uint16_t)sign;
    assert_true(exp > 0 && exp < 31);    /* normal halves only */
    assert_int_equal(mant & 0x1fffu, 0); /* exactly representable */
    return (uint16_t)(sign | ((uint32_t)exp << 10) | (mant >> 13));
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
    uint32_t x = sign;
    if (exp != 0)
        x |= ((exp - 15 + 127) << 23) | (mant << 13);
    else
        assert_int_equal(mant, 0); /* no subnormals among the test's values */
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static int has(cubec_device *d, uint32_t features)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if ((info.features & features) == features) return 1;
    print_message("skipped: the device lacks features 0x%llx\n",
                  (unsigned long long)(features & ~info.features));
    return 0;
}

enum { N = 1000 };

/* Values a half holds exactly, and whose doubles and halves (plus small integers) it holds too. */
static float test_value(int i)
{
    return (float)(i % 97) * 0.25f - 12.0f;
}

/* float16_t buffers read and written, and a uint16_t in the push constants: 16-bit storage only
 * (GL_EXT_shader_16bit_storage), the arithmetic is in float. */
static const char storage16_src[] =
    "#version 450\n"
    "#extension GL_EXT_shader_16bit_storage : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer A { float16_t a[]; };\n"
    "layout(std430, binding = 1) writeonly buffer H { float16_t h[]; };\n"
    "layout(std430, binding = 2) writeonly buffer F { float f[]; };\n"
    "CUBEC_INFO(uint n; uint16_t add; uint16_t unused;)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i >= info.n) return;\n"
    "  float x = float(a[i]);\n"
    "  f[i] = x * 2.0 + float(uint(info.add));\n"
    "  h[i] = float16_t(x * 0.5);\n"
    "}\n";

typedef struct storage16_info {
    uint32_t n;
    uint16_t add, unused;
} storage16_info;

static void test_float16_storage(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    if (!has(d, CUBEC_FEATURE_STORAGE_BUFFER_16BIT | CUBEC_FEATURE_PUSH_CONSTANT_16BIT)) {
        test_device_close(d);
        return;
    }
    uint16_t *a = malloc(N * sizeof *a), *h = malloc(N * sizeof *h);
    float *f = malloc(N * sizeof *f);
    for (int i = 0; i < N; i++)
        a[i] = half_from_float(test_value(i));
    cubec_buffer ba, bh, bf;
    ASSERT_OK(cubec_buffer_from(d, 0, a, N * sizeof *a, &ba));
    ASSERT_OK(cubec_buffer_create(d, 0, N * sizeof *h, &bh));
    ASSERT_OK(cubec_buffer_create(d, 0, N * sizeof *f, &bf));
    cubec_kernel k;
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "storage16", .glsl = storage16_src};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.info_size, sizeof(storage16_info));
    assert_int_equal(ki.info_in_push_constants, 1);
    storage16_info info = {N, 7, 0};
    cubec_buffer bufs[3] = {ba, bh, bf};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = bufs,
                            .buffer_count = 3,
                            .info = &info,
                            .info_size = sizeof info,
                            .groups = {(N + 63) / 64, 1, 1}};
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, bh, 0, h, N * sizeof *h));
    ASSERT_OK(cubec_read(d, 0, bf, 0, f, N * sizeof *f));
    for (int i = 0; i < N; i++) {
        float x = test_value(i);
        assert_float_equal(f[i], x * 2.0f + 7.0f, 0.0f);
        assert_int_equal(h[i], half_from_float(x * 0.5f));
    }
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_buffer_release(d, ba));
    ASSERT_OK(cubec_buffer_release(d, bh));
    ASSERT_OK(cubec_buffer_release(d, bf));
    free(a);
    free(h);
    free(f);
    test_device_close(d);
}

/* Arithmetic in float16 (GL_EXT_shader_explicit_arithmetic_types_float16): the Float16
 * capability, on top of 16-bit storage. */
static const char arith16_src[] =
    "#version 450\n"
    "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
    "#extension GL_EXT_shader_16bit_storage : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) buffer A { float16_t a[]; };\n"
    "CUBEC_INFO(uint n;)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < info.n) a[i] = a[i] * float16_t(2.0) - float16_t(1.5);\n"
    "}\n";

static void test_float16_arithmetic(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    if (!has(d, CUBEC_FEATURE_FLOAT16 | CUBEC_FEATURE_STORAGE_BUFFER_16BIT)) {
        test_device_close(d);
        return;
    }
    uint16_t a[N];
    for (int i = 0; i < N; i++)
        a[i] = half_from_float(test_value(i));
    cubec_buffer ba;
    ASSERT_OK(cubec_buffer_from(d, 0, a, sizeof a, &ba));
    cubec_kernel k;
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "arith16", .glsl = arith16_src};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    uint32_t n = N;
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = &ba,
                            .buffer_count = 1,
                            .info = &n,
                            .info_size = sizeof n,
                            .groups = {(N + 63) / 64, 1, 1}};
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, ba, 0, a, sizeof a));
    for (int i = 0; i < N; i++)
        assert_float_equal(half_to_float(a[i]), test_value(i) * 2.0f - 1.5f, 0.0f);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_buffer_release(d, ba));
    test_device_close(d);
}

/* uint8_t and int8_t buffers (GL_EXT_shader_8bit_storage) and an int8_t in the push constants:
 * widened, computed in 32 bits, narrowed again. */
static const char storage8_src[] =
    "#version 450\n"
    "#extension GL_EXT_shader_8bit_storage : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer U { uint8_t u[]; };\n"
    "layout(std430, binding = 1) readonly buffer S { int8_t s[]; };\n"
    "layout(std430, binding = 2) writeonly buffer W { int w[]; };\n"
    "layout(std430, binding = 3) writeonly buffer B { uint8_t b[]; };\n"
    "CUBEC_INFO(uint n; int8_t k; int8_t pad0; int8_t pad1; int8_t pad2;)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i >= info.n) return;\n"
    "  w[i] = int(uint(u[i])) * int(s[i]) + int(info.k);\n"
    "  b[i] = uint8_t(uint(u[i]) + 3u);\n"
    "}\n";

typedef struct storage8_info {
    uint32_t n;
    int8_t k, pad[3];
} storage8_info;

static void test_int8_storage(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    if (!has(d, CUBEC_FEATURE_STORAGE_BUFFER_8BIT | CUBEC_FEATURE_PUSH_CONSTANT_8BIT)) {
        test_device_close(d);
        return;
    }
    uint8_t u[N], b[N];
    int8_t s[N];
    int32_t w[N];
    uint32_t seed = 8;
    for (int i = 0; i < N; i++) {
        u[i] = (uint8_t)test_rand(&seed);
        s[i] = (int8_t)test_rand(&seed);
    }
    cubec_buffer bu, bs, bw, bb;
    ASSERT_OK(cubec_buffer_from(d, 0, u, sizeof u, &bu));
    ASSERT_OK(cubec_buffer_from(d, 0, s, sizeof s, &bs));
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof w, &bw));
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof b, &bb));
    cubec_kernel k;
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "storage8", .glsl = storage8_src};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    storage8_info info = {N, -5, {0, 0, 0}};
    cubec_buffer bufs[4] = {bu, bs, bw, bb};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = bufs,
                            .buffer_count = 4,
                            .info = &info,
                            .info_size = sizeof info,
                            .groups = {(N + 63) / 64, 1, 1}};
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, bw, 0, w, sizeof w));
    ASSERT_OK(cubec_read(d, 0, bb, 0, b, sizeof b));
    for (int i = 0; i < N; i++) {
        assert_int_equal(w[i], (int32_t)u[i] * s[i] - 5);
        assert_int_equal(b[i], (uint8_t)(u[i] + 3));
    }
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_buffer_release(d, bu));
    ASSERT_OK(cubec_buffer_release(d, bs));
    ASSERT_OK(cubec_buffer_release(d, bw));
    ASSERT_OK(cubec_buffer_release(d, bb));
    test_device_close(d);
}

/* With no configuration in the way, the device enables every feature it has: the info of the
 * open device equals what cubec_device_peek reports, and each bit has a name. */
static void test_features_reported(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info opened = CUBEC_DEVICE_INFO_INIT, peeked = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &opened));
    uint32_t count = 0;
    ASSERT_OK(cubec_device_get_count(&count));
    int found = 0;
    for (uint32_t i = 0; i < count && !found; i++) {
        ASSERT_OK(cubec_device_peek(i, &peeked));
        found = strcmp(peeked.name, opened.name) == 0 && peeked.device_id == opened.device_id;
    }
    assert_true(found);
    assert_int_equal(opened.features, peeked.features);
    for (uint32_t bit = 1; bit; bit <<= 1)
        if (opened.features & bit)
            assert_string_not_equal(cubec_feature_name((cubec_feature)bit), "unknown");
    assert_string_equal(cubec_feature_name(CUBEC_FEATURE_FLOAT16), "float16");
    assert_string_equal(cubec_feature_name(CUBEC_FEATURE_STORAGE_BUFFER_16BIT),
                        "storage_buffer_16bit");
    assert_string_equal(cubec_feature_name((cubec_feature)0), "unknown");
    assert_string_equal(
        cubec_feature_name((cubec_feature)(CUBEC_FEATURE_INT8 | CUBEC_FEATURE_INT16)), "unknown");
    print_message("device features: 0x%llx\n", (unsigned long long)opened.features);
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float16_storage),
        cmocka_unit_test(test_float16_arithmetic),
        cmocka_unit_test(test_int8_storage),
        cmocka_unit_test(test_features_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
