/* The WebGPU backend where no implementation loads (CUBEC_WEBGPU_LIBRARY names a missing file,
 * set by tests/webgpu/CMakeLists.txt): cubec runs, the backend has no devices, and opening one
 * is refused with CUBEC_NOT_FOUND naming the library tried. Runs everywhere, with or without the
 * fetched library. */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

static void test_no_library_no_devices(void **state)
{
    (void)state;
    const char *lib = getenv("CUBEC_WEBGPU_LIBRARY");
    assert_non_null(lib);
    setenv("CUBEC_BACKEND", "webgpu", 1);
    uint32_t count = 99;
    ASSERT_OK(cubec_device_get_count(&count));
    assert_int_equal(count, 0);
    cubec_device_desc desc = CUBEC_DEVICE_DESC_INIT;
    desc.backend = "webgpu";
    cubec_device *d = NULL;
    ASSERT_ERROR(cubec_device_open(&desc, &d), CUBEC_NOT_FOUND, lib);
    assert_null(d);
    /* The other backends are untouched by it; they take no WGSL kernels, and say so. */
    desc.backend = "null";
    ASSERT_OK(cubec_device_open(&desc, &d));
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.wgsl = "@compute @workgroup_size(1) fn main() {}\n";
    cubec_kernel k;
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED, "webgpu backend");
    kd.glsl = "#version 450\nvoid main() {}\n";
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_ARGUMENT,
                 "exactly one of glsl, spirv and wgsl");
    cubec_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_library_no_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
