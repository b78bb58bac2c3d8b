/* Kernels whose SPIR-V declares a capability the device has not enabled are refused by
 * cubec_kernel_create with CUBEC_UNSUPPORTED naming the capability, before any Vulkan object is
 * made from them (the validation layer stays silent), and the device goes on working. Three ways
 * to lack one: the device lacks the feature (lavapipe has no clustered subgroup operations), cubec
 * never enables it (float atomics), or the configuration turned it off (CUBEC_DISABLE_FEATURES). */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char clustered_src[] = "#version 450\n"
                                    "#extension GL_KHR_shader_subgroup_clustered : require\n"
                                    "layout(local_size_x = 64) in;\n"
                                    "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                                    "void main() {\n"
                                    "  uint i = gl_GlobalInvocationID.x;\n"
                                    "  a[i] = subgroupClusteredAdd(a[i], 4);\n"
                                    "}\n";

static const char atomic_float_src[] = "#version 450\n"
                                       "#extension GL_EXT_shader_atomic_float : require\n"
                                       "layout(local_size_x = 64) in;\n"
                                       "layout(std430, binding = 0) buffer A { float a[]; };\n"
                                       "void main() { atomicAdd(a[0], 1.0); }\n";

static const char float16_storage_src[] =
    "#version 450\n"
    "#extension GL_EXT_shader_16bit_storage : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) buffer A { float16_t a[]; };\n"
    "void main() { a[gl_GlobalInvocationID.x] = float16_t(1.0); }\n";

static const char float64_src[] = "#version 450\n"
                                  "layout(local_size_x = 64) in;\n"
                                  "layout(std430, binding = 0) buffer A { double a[]; };\n"
                                  "void main() { a[gl_GlobalInvocationID.x] *= 2.0; }\n";

static const char uint8_src[] =
    "#version 450\n"
    "#extension GL_EXT_shader_8bit_storage : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) buffer A { uint8_t a[]; };\n"
    "void main() { uint i = gl_GlobalInvocationID.x; a[i] = uint8_t(uint(a[i]) + 1u); }\n";

static cubec_status create(cubec_device *d, const char *name, const char *glsl, cubec_kernel *k)
{
    cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc), .name = name, .glsl = glsl};
    return cubec_kernel_create(d, &kd, k);
}

/* The refusal left the device as it was: a kernel it can run still runs, and gives the right
 * answer (64 bytes incremented). */
static void expect_device_works(cubec_device *d)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (!(info.features & CUBEC_FEATURE_STORAGE_BUFFER_8BIT)) return;
    uint8_t bytes[64];
    for (int i = 0; i < 64; i++)
        bytes[i] = (uint8_t)(i * 3);
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(d, 0, bytes, sizeof bytes, &b));
    cubec_kernel k;
    ASSERT_OK(create(d, "uint8", uint8_src, &k));
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = &b,
                            .buffer_count = 1,
                            .groups = {1, 1, 1}};
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, b, 0, bytes, sizeof bytes));
    for (int i = 0; i < 64; i++)
        assert_int_equal(bytes[i], (uint8_t)(i * 3 + 1));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_buffer_release(d, b));
}

/* A feature the device does not have. */
static void test_device_lacks_feature(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_kernel k = {0};
    if (info.features & CUBEC_FEATURE_SUBGROUP_CLUSTERED) {
        print_message("the device has clustered subgroup operations: the kernel is accepted\n");
        ASSERT_OK(create(d, "clustered", clustered_src, &k));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    } else {
        char want[512];
        snprintf(want, sizeof want,
                 "kernel 'clustered' needs SPIR-V capability GroupNonUniformClustered, which needs "
                 "the device feature subgroup_clustered (Vulkan subgroup operations CLUSTERED): "
                 "device '%s' lacks it",
                 info.name);
        ASSERT_ERROR(create(d, "clustered", clustered_src, &k), CUBEC_UNSUPPORTED, want);
        assert_int_equal(k.id, 0);
    }
    expect_device_works(d);
    test_device_close(d);
}

/* A capability that needs an extension cubec does not enable is refused on every device. */
static void test_never_enabled(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = {0};
    ASSERT_ERROR(create(d, "atomic_float", atomic_float_src, &k), CUBEC_UNSUPPORTED,
                 "kernel 'atomic_float' needs SPIR-V capability AtomicFloat32AddEXT, which needs a "
                 "Vulkan feature or extension that cubec does not enable on any device");
    assert_int_equal(k.id, 0);
    /* Refused again (a refused kernel is not cached as if it were made). */
    ASSERT_ERROR(create(d, "atomic_float", atomic_float_src, &k), CUBEC_UNSUPPORTED,
                 "AtomicFloat32AddEXT");
    expect_device_works(d);
    test_device_close(d);
}

/* CUBEC_DISABLE_FEATURES turns features off at device open: they leave cubec_device_info, the
 * features that need them go too, and kernels needing them are refused, saying why. */
static void test_disabled_by_config(void **state)
{
    (void)state;
    setenv("CUBEC_DISABLE_FEATURES", "storage_buffer_16bit, float64", 1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_DISABLE_FEATURES");
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT, peeked = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    uint32_t count = 0;
    ASSERT_OK(cubec_device_get_count(&count));
    for (uint32_t i = 0; i < count; i++) {
        ASSERT_OK(cubec_device_peek(i, &peeked));
        if (strcmp(peeked.name, info.name) == 0) break;
    }
    assert_int_equal(info.features & CUBEC_FEATURE_STORAGE_BUFFER_16BIT, 0);
    assert_int_equal(info.features & CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_16BIT, 0);
    assert_int_equal(info.features & CUBEC_FEATURE_FLOAT64, 0);
    const uint32_t off = CUBEC_FEATURE_STORAGE_BUFFER_16BIT |
                         CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_16BIT | CUBEC_FEATURE_FLOAT64;
    assert_int_equal(info.features, peeked.features & ~off); /* the rest stays on */

    cubec_kernel k = {0};
    char want[512];
    if (peeked.features & CUBEC_FEATURE_STORAGE_BUFFER_16BIT) {
        snprintf(want, sizeof want,
                 "kernel 'f16' needs SPIR-V capability StorageBuffer16BitAccess, which needs the "
                 "device feature storage_buffer_16bit (Vulkan storageBuffer16BitAccess): it is "
                 "turned off on device '%s' by [device] disable_features "
                 "(CUBEC_DISABLE_FEATURES)",
                 info.name);
        ASSERT_ERROR(create(d, "f16", float16_storage_src, &k), CUBEC_UNSUPPORTED, want);
    }
    ASSERT_ERROR(create(d, "f64", float64_src, &k), CUBEC_UNSUPPORTED,
                 "kernel 'f64' needs SPIR-V capability Float64, which needs the device feature "
                 "float64 (Vulkan shaderFloat64)");
    assert_int_equal(k.id, 0);
    expect_device_works(d);
    test_device_close(d);

    /* The next device, opened without the variable, has them again. */
    d = test_device_open();
    ASSERT_OK(cubec_device_get_info(d, &info));
    assert_int_equal(info.features, peeked.features);
    if (info.features & CUBEC_FEATURE_FLOAT64) {
        ASSERT_OK(create(d, "f64", float64_src, &k));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    test_device_close(d);
}

/* A malformed list fails the open, naming the entry. */
static void test_bad_feature_name(void **state)
{
    (void)state;
    setenv("CUBEC_DISABLE_FEATURES", "float64,half", 1);
    cubec_device *d = NULL;
    ASSERT_ERROR(cubec_device_open(NULL, &d), CUBEC_INVALID_ARGUMENT,
                 "entry 'half' is not a feature name");
    unsetenv("CUBEC_DISABLE_FEATURES");
    assert_null(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_lacks_feature),
        cmocka_unit_test(test_never_enabled),
        cmocka_unit_test(test_disabled_by_config),
        cmocka_unit_test(test_bad_feature_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
