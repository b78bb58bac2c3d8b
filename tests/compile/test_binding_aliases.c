/* One buffer declared at its binding as several views: floats, vec4s and vec2s (GLSL's idiom for
 * wider loads and stores of one buffer, which ggml's shaders use). Vulkan binds the buffer to
 * every view; WebGPU allows one variable per binding, and the webgpu backend merges the vector
 * views into the scalar one (src/gpu/webgpu/wg_spirv_aliases.h). Either way each access must
 * reach the same bytes: vector loads with unsigned and signed indices, a vector store, a
 * component loaded and one stored through a vector view, and each view's length, checked against
 * values computed here. Runs on every backend that computes (test_binding_aliases_webgpu too). */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char aliases_src[] =
    "#version 450\n"
    "layout(local_size_x = 4) in;\n"
    "layout(std430, binding = 0) readonly buffer B { float data_b[]; };\n"
    "layout(std430, binding = 0) readonly buffer BV4 { vec4 data_b_v4[]; };\n"
    "layout(std430, binding = 0) readonly buffer BV2 { vec2 data_b_v2[]; };\n"
    "layout(std430, binding = 1) buffer D { float data_d[]; };\n"
    "layout(std430, binding = 1) buffer DV4 { vec4 data_d_v4[]; };\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  vec4 v = data_b_v4[i];\n"
    "  vec2 u = data_b_v2[int(i) * 2 + 1];\n"
    "  data_d_v4[i] = v * 2.0 + vec4(data_b[i]);\n"
    "  data_d_v4[i + 8u].y = u.x + data_b_v4[i].z * 4.0 + u.y * 16.0;\n"
    "  if (i == 0u) {\n"
    "    data_d[72] = float(data_b_v4.length());\n"
    "    data_d[73] = float(data_b_v2.length());\n"
    "    data_d[74] = float(data_b.length());\n"
    "    data_d[75] = float(data_d_v4.length());\n"
    "  }\n"
    "}\n";

enum { N = 8, B_FLOATS = 4 * N, D_FLOATS = 80 };

static void test_views_of_one_binding(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = "aliases";
    kd.glsl = aliases_src;
    cubec_kernel k;
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));

    float b[B_FLOATS], out[D_FLOATS];
    for (int i = 0; i < B_FLOATS; i++)
        b[i] = (float)(i * 3 % 17) - 5.0f; /* small integers: every result below is exact */
    cubec_buffer bufs[2];
    ASSERT_OK(cubec_buffer_from(d, 0, b, sizeof b, &bufs[0]));
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof out, &bufs[1]));
    ASSERT_OK(cubec_fill(d, 0, bufs[1], 0, sizeof out, 0));
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = bufs;
    ld.buffer_count = 2;
    ld.groups[0] = N / 4;
    ld.groups[1] = 1;
    ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, bufs[1], 0, out, sizeof out));

    float want[D_FLOATS];
    memset(want, 0, sizeof want);
    for (int i = 0; i < N; i++) {
        for (int c = 0; c < 4; c++)
            want[4 * i + c] = b[4 * i + c] * 2.0f + b[i];
        want[4 * (i + 8) + 1] = b[4 * i + 2] + b[4 * i + 2] * 4.0f + b[4 * i + 3] * 16.0f;
    }
    for (int i = 0; i < 72; i++)
        if (out[i] != want[i]) fail_msg("data_d[%d]: %g, expected %g", i, out[i], want[i]);
    /* Each view's length is the bound bytes over its element's size: the backend may bind more
     * than the buffer (a pool's page), never less. */
    float scalars = out[74];
    if (scalars < (float)B_FLOATS || out[72] != floorf(scalars / 4) ||
        out[73] != floorf(scalars / 2))
        fail_msg("lengths: %g vec4s, %g vec2s, %g floats", out[72], out[73], scalars);
    if (out[75] < (float)(D_FLOATS / 4)) fail_msg("data_d_v4.length(): %g", out[75]);
    for (int i = 0; i < 2; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_views_of_one_binding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
