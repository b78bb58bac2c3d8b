/* Texel buffers on the default device with validation on (docs/images.md, "Texel buffers"):
 * cubec buffers bound as uniform texel buffers (samplerBuffer, usamplerBuffer, isamplerBuffer,
 * textureBuffer, read with texelFetch) and storage texel buffers (imageBuffer with imageLoad and
 * imageStore), every texel compared with a reference computed here; ordering, failures and
 * graphs treating a texel buffer as the buffer it is; the refusals of bad formats. */
#include "launch_util.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Reads three uniform texel buffers of three texel types and writes an rgba32f storage texel
 * buffer from them. */
static const char mix_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(binding = 0) uniform usamplerBuffer u;\n"
    "layout(binding = 1) uniform samplerBuffer c;\n"
    "layout(set = 1, binding = 0) uniform isamplerBuffer s;\n"
    "layout(binding = 3, rgba32f) uniform writeonly imageBuffer o;\n"
    "CUBEC_INFO(uint n;)\n"
    "void main() {\n"
    "  int i = int(gl_GlobalInvocationID.x);\n"
    "  if (i >= int(info.n)) return;\n"
    "  uint a = texelFetch(u, i).r;\n"
    "  vec4 col = texelFetch(c, i);\n"
    "  int b = texelFetch(s, i).r;\n"
    "  imageStore(o, i, vec4(float(a) + col.r, col.g * 2.0, float(b), col.a));\n"
    "}\n";

/* x = 2x + info.add in place, through imageLoad/imageStore of an r32f imageBuffer; y (a
 * textureBuffer, read-only) adds its texel. */
static const char axpy_src[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(binding = 0, r32f) uniform imageBuffer x;\n"
                               "layout(binding = 1) uniform textureBuffer y;\n"
                               "CUBEC_INFO(float add; uint n;)\n"
                               "void main() {\n"
                               "  int i = int(gl_GlobalInvocationID.x);\n"
                               "  if (i >= int(info.n)) return;\n"
                               "  float v = imageLoad(x, i).r * 2.0 + info.add + "
                               "texelFetch(y, i).r;\n"
                               "  imageStore(x, i, vec4(v));\n"
                               "}\n";

enum { N = 300 }; /* not a multiple of the workgroup: the edge is checked */

static void test_uniform_and_storage_texel_buffers(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    uint32_t u[N];
    unsigned char c[N * 4];
    int32_t s[N];
    uint32_t seed = 5;
    for (int i = 0; i < N; i++) {
        u[i] = test_rand(&seed) % 100000u;
        s[i] = (int32_t)(test_rand(&seed) % 20001u) - 10000;
    }
    for (int i = 0; i < N * 4; i++)
        c[i] = (unsigned char)(test_rand(&seed) & 255u);
    cubec_buffer bu, bc, bs, bo;
    ASSERT_OK(cubec_buffer_from(d, 0, u, sizeof u, &bu));
    ASSERT_OK(cubec_buffer_from(d, 0, c, sizeof c, &bc));
    ASSERT_OK(cubec_buffer_from(d, 0, s, sizeof s, &bs));
    ASSERT_OK(cubec_buffer_create(d, 0, (uint64_t)N * 16, &bo));
    cubec_kernel k = make_kernel(d, "mix", mix_src);
    cubec_resource res[4] = {
        {.kind = CUBEC_RESOURCE_STORAGE_TEXEL_BUFFER, .binding = 3, .buffer = bo}, /* declared */
        {.kind = CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER,
         .binding = 0,
         .format = CUBEC_IMAGE_FORMAT_R32_UINT,
         .buffer = bu},
        {.kind = CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER,
         .binding = 1,
         .format = CUBEC_IMAGE_FORMAT_RGBA8_UNORM,
         .buffer = bc},
        {.kind = CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER,
         .set = 1,
         .binding = 0,
         .format = CUBEC_IMAGE_FORMAT_R32_SINT,
         .buffer = bs},
    };
    uint32_t n = N;
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.resources = res;
    ld.resource_count = 4;
    ld.info = &n;
    ld.info_size = sizeof n;
    ld.groups[0] = (N + 63) / 64;
    ld.groups[1] = ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    float out[N * 4];
    ASSERT_OK(cubec_read(d, 0, bo, 0, out, sizeof out));
    for (int i = 0; i < N; i++) {
        float want[4] = {(float)u[i] + c[4 * i] / 255.0f, c[4 * i + 1] / 255.0f * 2.0f, (float)s[i],
                         c[4 * i + 3] / 255.0f};
        for (int ch = 0; ch < 4; ch++)
            if (fabsf(out[4 * i + ch] - want[ch]) > 1e-5f * (1.0f + fabsf(want[ch])))
                fail_msg("texel %d channel %d: %f, want %f", i, ch, out[4 * i + ch], want[ch]);
    }

    /* Refusals, each naming the element and value. */
    res[1].format = 0;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->resources[1].format 0, and 'u' at binding 0 declares no format");
    res[1].format = CUBEC_IMAGE_FORMAT_RGBA8_UNORM;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "has format rgba8 (float texels) but 'u' at binding 0 reads unsigned integer");
    res[1].format = 42;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->resources[1].format 42 is not a cubec_image_format");
    res[1].format = CUBEC_IMAGE_FORMAT_R32_UINT;
    res[0].format = CUBEC_IMAGE_FORMAT_R32_SFLOAT;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->resources[0].format r32f, but 'o' at binding 3 declares rgba32f");
    res[0].format = 0;
    res[0].kind = CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "names set 0 binding 3, where kernel 'mix' declares no uniform texel buffer");
    res[0].kind = CUBEC_RESOURCE_STORAGE_TEXEL_BUFFER;
    res[3].binding = 7;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->resources[3] names set 1 binding 7");
    res[3].binding = 0;
    cubec_buffer tiny;
    ASSERT_OK(cubec_buffer_create(d, 0, 3, &tiny));
    res[2].buffer = tiny;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->resources[2].buffer holds 0 texels of rgba8");
    ASSERT_OK(cubec_buffer_release(d, tiny));
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT, "desc->resources[2].buffer");
    ASSERT_OK(cubec_buffer_release(d, bu));
    ASSERT_OK(cubec_buffer_release(d, bc));
    ASSERT_OK(cubec_buffer_release(d, bs));
    ASSERT_OK(cubec_buffer_release(d, bo));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

static void axpy_launch(cubec_device *d, cubec_stream st, cubec_kernel k, cubec_buffer x,
                        cubec_buffer y, float add)
{
    cubec_resource res[2] = {
        {.kind = CUBEC_RESOURCE_STORAGE_TEXEL_BUFFER, .binding = 0, .buffer = x},
        {.kind = CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER,
         .binding = 1,
         .format = CUBEC_IMAGE_FORMAT_R32_SFLOAT,
         .buffer = y},
    };
    struct {
        float add;
        uint32_t n;
    } info = {add, N};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.resources = res;
    ld.resource_count = 2;
    ld.info = &info;
    ld.info_size = sizeof info;
    ld.groups[0] = (N + 63) / 64;
    ld.groups[1] = ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, st, &ld));
}

static void expect_floats(cubec_device *d, cubec_stream st, cubec_buffer b, const float *want,
                          const char *what)
{
    float got[N];
    ASSERT_OK(cubec_read(d, st, b, 0, got, sizeof got));
    for (int i = 0; i < N; i++)
        if (fabsf(got[i] - want[i]) > 1e-4f * (1.0f + fabsf(want[i])))
            fail_msg("%s: element %d is %f, want %f", what, i, got[i], want[i]);
}

/* A texel buffer is the buffer it is: a launch on another stream reads what a write queued on
 * the first wrote; a lost submission taints the range the launch would have written, a launch
 * reading it is skipped, a write clears it; launches captured in a graph replay in order; the
 * texel buffer may be a view into a larger buffer, which is read back as bytes. */
static void test_order_taint_graph(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = make_kernel(d, "axpy", axpy_src);
    cubec_stream s1, s2;
    ASSERT_OK(cubec_stream_new(d, &s1));
    ASSERT_OK(cubec_stream_new(d, &s2));
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    /* x is a view at an aligned offset into a larger buffer: the texels start there. */
    uint64_t at = info.storage_offset_alignment > 64 ? info.storage_offset_alignment : 64;
    cubec_buffer whole, x, y;
    ASSERT_OK(cubec_buffer_create(d, s1, at + sizeof(float) * N, &whole));
    ASSERT_OK(cubec_buffer_view(d, whole, at, sizeof(float) * N, &x));
    float x0[N], y0[N], want[N];
    uint32_t seed = 3;
    for (int i = 0; i < N; i++) {
        x0[i] = test_randf(&seed) * 10.0f;
        y0[i] = test_randf(&seed);
    }
    ASSERT_OK(cubec_buffer_from(d, s1, y0, sizeof y0, &y));

    /* Across streams: written on s1 (not synced), launched on s2. */
    ASSERT_OK(cubec_write(d, s1, x, 0, x0, sizeof x0));
    axpy_launch(d, s2, k, x, y, 1.0f);
    for (int i = 0; i < N; i++)
        want[i] = x0[i] * 2.0f + 1.0f + y0[i];
    expect_floats(d, s2, x, want, "x after the launch on another stream");
    float through_whole[N];
    ASSERT_OK(cubec_read(d, s2, whole, at, through_whole, sizeof through_whole));
    for (int i = 0; i < N; i++)
        if (fabsf(through_whole[i] - want[i]) > 1e-4f * (1.0f + fabsf(want[i])))
            fail_msg("the whole buffer at the view's offset, element %d: %f, want %f", i,
                     through_whole[i], want[i]);

    /* Taint: the batch holding the launch is lost, so x, which it writes, carries the
     * failure. */
    axpy_launch(d, s1, k, x, y, 1.0f);
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_ERROR(cubec_flush(d, s1), CUBEC_INTERNAL, "injected fault: submit");
    float got[N];
    ASSERT_ERROR(cubec_read(d, s1, x, 0, got, sizeof got), CUBEC_INTERNAL, "injected fault");
    /* A launch reading x through a uniform texel buffer is skipped, and z, which it would have
     * written, takes the failure. */
    cubec_buffer z;
    ASSERT_OK(cubec_buffer_from(d, s1, x0, sizeof x0, &z));
    axpy_launch(d, s1, k, z, x, 1.0f);
    ASSERT_ERROR(cubec_read(d, s1, z, 0, got, sizeof got), CUBEC_INTERNAL, "was skipped");
    ASSERT_OK(cubec_buffer_release(d, z));
    /* Written again: good, and the launch runs. */
    ASSERT_OK(cubec_write(d, s1, x, 0, x0, sizeof x0));
    axpy_launch(d, s1, k, x, y, 2.0f);
    for (int i = 0; i < N; i++)
        want[i] = x0[i] * 2.0f + 2.0f + y0[i];
    expect_floats(d, s1, x, want, "x written again");

    /* A graph of two launches, replayed three times: each reads what the one before wrote. */
    ASSERT_OK(cubec_graph_prepare(d, s1));
    ASSERT_OK(cubec_graph_begin(d, s1));
    axpy_launch(d, s1, k, x, y, 0.5f);
    axpy_launch(d, s1, k, x, y, -1.0f);
    cubec_graph g;
    ASSERT_OK(cubec_graph_end(d, s1, &g));
    for (int r = 0; r < 3; r++)
        ASSERT_OK(cubec_graph_replay(d, s1, g));
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < N; i++) {
            want[i] = want[i] * 2.0f + 0.5f + y0[i];
            want[i] = want[i] * 2.0f - 1.0f + y0[i];
        }
    expect_floats(d, s1, x, want, "x after three replays");
    ASSERT_OK(cubec_graph_destroy(d, s1, g));
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, whole));
    ASSERT_OK(cubec_buffer_release(d, y));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_and_storage_texel_buffers),
        cmocka_unit_test(test_order_taint_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
