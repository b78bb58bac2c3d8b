/* A kernel that requires a subgroup size (cubec_kernel_desc.required_subgroup_size): each power of
 * two of the device's [min_subgroup_size, max_subgroup_size] is the gl_SubgroupSize every
 * invocation sees; each size is a kernel of its own (its identity) sharing one SPIR-V entry of the
 * disk cache; a size that is not a power of two or lies outside the range is refused naming the
 * value and the range, as is a workgroup larger than the size's subgroups can hold
 * (maxComputeWorkgroupSubgroups); with subgroup_size_control turned off only the device's one size
 * is accepted. lavapipe's range is 8..8: the one size runs, the others are refused, and 8 x 32
 * subgroups make 256 invocations the largest workgroup with it (1024 without). Runs on lavapipe
 * with validation (any message fails it) and (test_subgroup_size_null) on the null backend, where
 * kernels compute nothing: the checks are the same, the bytes are not compared.
 *
 * Before this change cubec_kernel_desc had no such field: a kernel ran with the driver's size. */
#include "test_util.h"

#include "server/device.h"
#include "server/kernel_disk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every invocation writes the subgroup size it runs with. */
static const char size_src[] = "#version 450\n"
                               "#extension GL_KHR_shader_subgroup_basic : require\n"
                               "layout(local_size_x = LOCAL) in;\n"
                               "layout(std430, binding = 0) writeonly buffer O { uint o[]; };\n"
                               "void main() { o[gl_GlobalInvocationID.x] = gl_SubgroupSize; }\n";

enum { GROUPS = 2 };

static int null_backend(void)
{
    const char *backend = getenv("CUBEC_BACKEND");
    return backend && strcmp(backend, "null") == 0;
}

static cubec_kernel_desc desc_of(const cubec_define *local, uint32_t size)
{
    return (cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc),
                               .name = "sg",
                               .glsl = size_src,
                               .defines = local,
                               .define_count = 1,
                               .required_subgroup_size = size};
}

/* Runs the kernel (workgroups of `local` invocations) and checks that every invocation saw
 * `want`; returns its identity. */
static uint64_t run_size(cubec_device *d, uint32_t local, uint32_t size, uint32_t want)
{
    char value[16];
    snprintf(value, sizeof value, "%u", local);
    const cubec_define def = {"LOCAL", value};
    cubec_kernel_desc kd = desc_of(&def, size);
    cubec_kernel k;
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.workgroup_size[0], local);
    uint32_t n = local * GROUPS;
    uint32_t *got = calloc(n, sizeof *got);
    assert_non_null(got);
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_create(d, 0, n * sizeof *got, &b));
    ASSERT_OK(cubec_fill(d, 0, b, 0, n * sizeof *got, 0xdeadbeefu));
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = &b,
                            .buffer_count = 1,
                            .groups = {GROUPS, 1, 1}};
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, b, 0, got, n * sizeof *got));
    if (!null_backend())
        for (uint32_t i = 0; i < n; i++)
            if (got[i] != want)
                fail_msg("required size %u, workgroup %u: invocation %u saw gl_SubgroupSize %u, "
                         "not %u",
                         size, local, i, got[i], want);
    free(got);
    ASSERT_OK(cubec_buffer_release(d, b));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    return ki.hash;
}

/* Each size of the range runs with that size; 0 runs with the driver's (subgroup_size, for a
 * module of SPIR-V before 1.6 without the varying-size flag). Each size is its own kernel, and
 * the SPIR-V is compiled once for all of them (the disk cache's entry is shared). */
static void test_each_size(void **state)
{
    (void)state;
    char dir[4096];
    test_temp_dir(dir, sizeof dir, "cubec_subgroup");
    setenv("CUBEC_CACHE_DIR", dir, 1);
    cubec_device *d = test_device_open();
    setenv("CUBEC_CACHE_DIR", "none", 1);
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    print_message("device '%s': subgroup size %u, range %u..%u, size control %s\n", info.name,
                  info.subgroup_size, info.min_subgroup_size, info.max_subgroup_size,
                  info.features & CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL ? "on" : "off");
    assert_true(info.min_subgroup_size <= info.subgroup_size);
    assert_true(info.subgroup_size <= info.max_subgroup_size);
    uint64_t driver = run_size(d, 64, 0, info.subgroup_size);
    uint64_t seen[32];
    uint32_t count = 0;
    for (uint32_t s = info.min_subgroup_size; s && s <= info.max_subgroup_size; s *= 2) {
        if (s & (s - 1)) continue; /* the range's ends are powers of two; be safe */
        uint64_t h = run_size(d, 64, s, s);
        assert_true(h != driver);
        for (uint32_t i = 0; i < count; i++)
            assert_true(h != seen[i]);
        assert_true(count < 32);
        seen[count++] = h;
        /* The same size again: the same kernel. */
        assert_true(run_size(d, 64, s, s) == h);
    }
    assert_true(count >= 1);
    kernel_disk_stats st;
    kernel_disk_get_stats(d, &st);
    assert_true(st.enabled);
    /* One compilation, the other sizes' SPIR-V from the disk cache. */
    assert_int_equal(st.spirv_hits, count);
    test_device_close(d);
    test_remove_tree(dir);
}

/* Refusals, on create and queue alike, before anything is compiled: 3 (not a power of two), a
 * size past either end of the range, and a workgroup larger than the size's subgroups can hold;
 * 0 is the driver's choice. The device works on after them. */
static void test_refusals(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    const gpu_caps *caps = &d->gpu->caps;
    const cubec_define def = {"LOCAL", "64"};
    cubec_kernel k = {0};
    char want[1024];

    cubec_kernel_desc kd = desc_of(&def, 3);
    snprintf(want, sizeof want,
             "cubec_kernel_create: kernel 'sg': desc->required_subgroup_size is 3, not a power of "
             "two (device '%s' runs compute kernels with subgroup sizes %u to %u)",
             info.name, info.min_subgroup_size, info.max_subgroup_size);
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_ARGUMENT, want);
    assert_int_equal(k.id, 0);
    ASSERT_ERROR(cubec_kernel_queue(d, &kd, &k), CUBEC_INVALID_ARGUMENT,
                 "cubec_kernel_queue: kernel 'sg': desc->required_subgroup_size is 3");
    assert_int_equal(k.id, 0);

    uint32_t above = info.max_subgroup_size * 2;
    kd = desc_of(&def, above);
    if (caps->required_subgroup_size)
        snprintf(want, sizeof want,
                 "cubec_kernel_create: kernel 'sg': desc->required_subgroup_size is %u, outside "
                 "the range of device '%s', %u to %u (min_subgroup_size to max_subgroup_size)",
                 above, info.name, info.min_subgroup_size, info.max_subgroup_size);
    else
        snprintf(want, sizeof want,
                 "desc->required_subgroup_size is %u, which needs the device feature "
                 "subgroup_size_control",
                 above);
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k),
                 caps->required_subgroup_size ? CUBEC_INVALID_ARGUMENT : CUBEC_UNSUPPORTED, want);
    assert_int_equal(k.id, 0);
    if (info.min_subgroup_size > 1) {
        kd = desc_of(&def, info.min_subgroup_size / 2);
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k),
                     caps->required_subgroup_size ? CUBEC_INVALID_ARGUMENT : CUBEC_UNSUPPORTED,
                     "desc->required_subgroup_size is");
        assert_int_equal(k.id, 0);
    }

    /* The workgroup against maxComputeWorkgroupSubgroups subgroups of the smallest size: at the
     * limit it runs with that size, one workgroup size past it is refused (with no size asked,
     * the same workgroup runs). lavapipe: 8 x 32 = 256, of 1024 invocations. */
    uint64_t hold = (uint64_t)info.min_subgroup_size * caps->max_workgroup_subgroups;
    if (caps->required_subgroup_size && hold && hold * 2 <= info.max_workgroup_invocations &&
        hold * 2 <= info.max_workgroup_size[0]) {
        run_size(d, (uint32_t)hold, info.min_subgroup_size, info.min_subgroup_size);
        char past[16];
        snprintf(past, sizeof past, "%u", (uint32_t)hold * 2);
        const cubec_define wide = {"LOCAL", past};
        kd = desc_of(&wide, info.min_subgroup_size);
        snprintf(want, sizeof want,
                 "kernel 'sg': a workgroup of %u x 1 x 1 = %u invocations exceeds the device "
                 "limit of %u with desc->required_subgroup_size %u (maxComputeWorkgroupSubgroups: "
                 "%u subgroups a workgroup)",
                 (uint32_t)hold * 2, (uint32_t)hold * 2, (uint32_t)hold, info.min_subgroup_size,
                 caps->max_workgroup_subgroups);
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED, want);
        assert_int_equal(k.id, 0);
        run_size(d, (uint32_t)hold * 2, 0, info.subgroup_size);
    } else {
        print_message("workgroup limit not reachable here (%u x %u subgroups)\n",
                      info.min_subgroup_size, caps->max_workgroup_subgroups);
    }

    /* 0: the driver's choice, accepted everywhere; the device works on. */
    run_size(d, 64, 0, info.subgroup_size);
    test_device_close(d);
}

/* subgroup_size_control turned off ([device] disable_features): the range is the one size, which
 * is accepted (every kernel runs with it); any other power of two is refused naming the feature,
 * and 3 is still not a power of two. */
static void test_disabled(void **state)
{
    (void)state;
    setenv("CUBEC_DISABLE_FEATURES", "subgroup_size_control", 1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_DISABLE_FEATURES");
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    assert_int_equal(info.features & CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL, 0);
    assert_int_equal(info.min_subgroup_size, info.subgroup_size);
    assert_int_equal(info.max_subgroup_size, info.subgroup_size);
    assert_false(d->gpu->caps.required_subgroup_size);
    uint32_t count = 0;
    ASSERT_OK(cubec_device_get_count(&count));
    cubec_device_info peeked = CUBEC_DEVICE_INFO_INIT;
    for (uint32_t i = 0; i < count; i++) {
        ASSERT_OK(cubec_device_peek(i, &peeked));
        if (strcmp(peeked.name, info.name) == 0) break;
    }
    if (null_backend()) peeked.features = UINT32_MAX; /* it has every feature */

    const cubec_define def = {"LOCAL", "64"};
    run_size(d, 64, info.subgroup_size, info.subgroup_size);
    cubec_kernel k = {0};
    char want[1024];
    uint32_t others[2] = {info.subgroup_size * 2, info.subgroup_size / 2};
    for (int i = 0; i < 2; i++) {
        if (others[i] == 0) continue;
        cubec_kernel_desc kd = desc_of(&def, others[i]);
        if (peeked.features & CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL)
            snprintf(want, sizeof want,
                     "cubec_kernel_create: kernel 'sg': desc->required_subgroup_size is %u, which "
                     "needs the device feature subgroup_size_control (Vulkan "
                     "VK_EXT_subgroup_size_control subgroupSizeControl): it is turned off on "
                     "device '%s' by [device] disable_features (CUBEC_DISABLE_FEATURES); without "
                     "it the only subgroup size is %u",
                     others[i], info.name, info.subgroup_size);
        else
            snprintf(want, sizeof want, "device '%s' lacks it", info.name);
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED, want);
        assert_int_equal(k.id, 0);
    }
    cubec_kernel_desc kd = desc_of(&def, 3);
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_ARGUMENT,
                 "desc->required_subgroup_size is 3, not a power of two");
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_size),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_disabled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
