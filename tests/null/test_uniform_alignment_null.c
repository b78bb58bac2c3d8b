/* Small buffers can be bound as uniform blocks wherever the device's uniform-buffer offset
 * alignment is larger than its storage alignment (NVIDIA: 64 against 16). The null backend
 * declares exactly that (storage 16, uniform 64), so buffers sub-allocated one after another
 * from a page land at multiples of 16 unless the pools keep the larger alignment. Each small
 * buffer below is bound as the kernel's uniform block; a view at an offset that is not a
 * multiple of 64 is still refused by name (the check stays, the pools just never trip it). */
#include "test_util.h"

#include <stdint.h>
#include <string.h>

static const char uniform_src[] = "#version 450\n"
                                  "layout(local_size_x = 1) in;\n"
                                  "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                                  "layout(std140, binding = 1) uniform U { uint mul; } u;\n"
                                  "void main() { a[0] *= u.mul; }\n";

static cubec_status launch_with(cubec_device *d, cubec_kernel k, cubec_buffer out,
                                cubec_buffer uniform)
{
    cubec_buffer bufs[2] = {out, uniform};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.groups[0] = ld.groups[1] = ld.groups[2] = 1;
    ld.buffers = bufs;
    ld.buffer_count = 2;
    return cubec_launch(d, 0, &ld);
}

static void test_small_buffers_bind_as_uniform(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    /* The premise of the test: storage alignment below 64 (the null backend's 16). */
    assert_true(info.storage_offset_alignment < 64);
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = "uniform_mul";
    kd.glsl = uniform_src;
    cubec_kernel k = {0};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    cubec_buffer out = {0};
    uint32_t one = 1;
    ASSERT_OK(cubec_buffer_from(d, 0, &one, sizeof one, &out));
    /* Sizes that are multiples of 16, not of 64: each next one starts at the page's next
     * aligned offset. */
    static const uint64_t sizes[] = {16, 16, 48, 16, 80, 16};
    enum { COUNT = sizeof sizes / sizeof sizes[0] };
    cubec_buffer u[COUNT];
    for (int i = 0; i < COUNT; i++) {
        uint32_t words[20] = {0};
        words[0] = (uint32_t)i + 2;
        ASSERT_OK(cubec_buffer_from(d, 0, words, sizes[i], &u[i]));
    }
    for (int i = 0; i < COUNT; i++)
        ASSERT_OK(launch_with(d, k, out, u[i]));
    /* A view 16 bytes into a buffer: refused, naming the offset and the alignment. */
    cubec_buffer big = {0}, view = {0};
    ASSERT_OK(cubec_buffer_create(d, 0, 256, &big));
    ASSERT_OK(cubec_buffer_view(d, big, 16, 64, &view));
    ASSERT_ERROR(launch_with(d, k, out, view), CUBEC_INVALID_ARGUMENT,
                 "not a multiple of the device's uniform-buffer offset alignment 64");
    ASSERT_OK(cubec_buffer_release(d, view));
    ASSERT_OK(cubec_buffer_release(d, big));
    for (int i = 0; i < COUNT; i++)
        ASSERT_OK(cubec_buffer_release(d, u[i]));
    ASSERT_OK(cubec_buffer_release(d, out));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_buffers_bind_as_uniform),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
