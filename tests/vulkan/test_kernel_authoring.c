/* Kernel files (docs/kernels.md): examples/kernels/scale_offset.comp compiles with plain shaderc
 * (as glslc would: no cubec macros, its guarded CUBEC_INFO default) and through cubec in every
 * metadata form, with the std430 block size of the C struct that mirrors it, and runs on the
 * device with results checked against the CPU. */
#include "test_util.h"

#include "base/file.h"
#include "kernel/glsl_compiler.h"
#include "kernel/reflect.h"

#include <shaderc/shaderc.h>
#include <stdlib.h>
#include <string.h>

typedef struct scale_offset_info {
    uint32_t n;
    float scale;
    float offset[2];
    uint32_t lanes[3];
} scale_offset_info;

static char *read_kernel_file(void)
{
    char *text = NULL;
    size_t size = 0;
    ASSERT_OK(file_read_regular(CUBEC_SOURCE_DIR "/examples/kernels/scale_offset.comp", 1 << 16,
                                &text, &size));
    assert_true(size > 0);
    return text;
}

/* What glslc does with the file: no predefined macros. */
static void test_plain_glslc_compile(void **state)
{
    (void)state;
    char *src = read_kernel_file();
    shaderc_compiler_t c = shaderc_compiler_initialize();
    shaderc_compile_options_t o = shaderc_compile_options_initialize();
    shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan,
                                           shaderc_env_version_vulkan_1_2);
    shaderc_compilation_result_t r = shaderc_compile_into_spv(
        c, src, strlen(src), shaderc_compute_shader, "scale_offset.comp", "main", o);
    if (shaderc_result_get_compilation_status(r) != shaderc_compilation_status_success)
        fail_msg("plain compile failed: %s", shaderc_result_get_error_message(r));
    kernel_reflection refl;
    ASSERT_OK(kernel_reflect((const uint32_t *)shaderc_result_get_bytes(r),
                             shaderc_result_get_length(r) / 4, "main", 0, &refl));
    assert_int_equal(refl.push_constant_size, sizeof(scale_offset_info));
    assert_int_equal(refl.binding_count, 2);
    shaderc_result_release(r);
    shaderc_compile_options_release(o);
    shaderc_compiler_release(c);
    free(src);
}

/* cubec's CUBEC_INFO wins over the file's default, in every form, with the same block size. */
static void test_cubec_forms(void **state)
{
    (void)state;
    char *src = read_kernel_file();
    glsl_compiler *c = NULL;
    ASSERT_OK(glsl_compiler_create(&c));
    const glsl_info_form forms[] = {GLSL_INFO_PUSH, GLSL_INFO_STORAGE, GLSL_INFO_UNIFORM};
    for (int f = 0; f < 3; f++) {
        uint32_t *words = NULL;
        size_t count = 0;
        ASSERT_OK(
            glsl_compile(c, "scale_offset", src, NULL, 0, "main", 0, forms[f], &words, &count));
        kernel_reflection refl;
        ASSERT_OK(kernel_reflect(words, count, "main", 0, &refl));
        if (forms[f] == GLSL_INFO_PUSH) {
            assert_int_equal(refl.push_constant_size, sizeof(scale_offset_info));
            assert_false(refl.has_info_buffer);
        } else {
            assert_int_equal(refl.push_constant_size, 0);
            assert_true(refl.has_info_buffer);
            assert_int_equal(refl.info_uniform, forms[f] == GLSL_INFO_UNIFORM);
            assert_int_equal(refl.info_buffer_size, sizeof(scale_offset_info));
        }
        free(words);
    }
    glsl_compiler_destroy(c);
    free(src);
}

/* The file as a cubec kernel on the device, against the CPU. */
static void test_runs_on_device(void **state)
{
    (void)state;
    char *src = read_kernel_file();
    cubec_device *d = test_device_open();
    cubec_kernel k;
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "scale_offset.comp", .glsl = src};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    enum { N = 1000 };
    float x[N], y[N], ref[N];
    uint32_t seed = 7;
    for (int i = 0; i < N; i++)
        x[i] = test_randf(&seed);
    const scale_offset_info info = {N - 3, 1.5f, {0.25f, -2.0f}, {1, 2, 3}};
    for (int i = 0; i < N; i++)
        ref[i] = i < (int)info.n ? x[i] * info.scale + info.offset[i % 2] + (float)info.lanes[i % 3]
                                 : 0.0f;
    cubec_buffer b[2];
    ASSERT_OK(cubec_buffer_from(d, 0, x, sizeof x, &b[0]));
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof y, &b[1]));
    ASSERT_OK(cubec_fill(d, 0, b[1], 0, sizeof y, 0));
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = b,
                            .buffer_count = 2,
                            .info = &info,
                            .info_size = sizeof info,
                            .groups = {(N + 63) / 64, 1, 1}};
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, b[1], 0, y, sizeof y));
    for (int i = 0; i < N; i++)
        assert_float_equal(y[i], ref[i], 1e-5f);
    ASSERT_OK(cubec_buffer_release(d, b[0]));
    ASSERT_OK(cubec_buffer_release(d, b[1]));
    test_device_close(d);
    free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_glslc_compile),
        cmocka_unit_test(test_cubec_forms),
        cmocka_unit_test(test_runs_on_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
