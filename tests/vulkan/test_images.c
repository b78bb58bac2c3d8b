/* Storage images end to end on the default device with validation on (docs/images.md): images
 * created, uploaded, processed by kernels that declare image2D/image3D, downloaded, and every
 * texel compared with a reference computed here; the refusals of bad arguments. */
#include "launch_util.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Inverts an rgba8 image into another (the colour channels; alpha kept), as an image filter
 * does: imageLoad of unorm texels gives floats in [0, 1]. */
static const char invert_src[] = "#version 450\n"
                                 "layout(local_size_x = 8, local_size_y = 8) in;\n"
                                 "layout(binding = 0, rgba8) uniform readonly image2D src;\n"
                                 "layout(binding = 1, rgba8) uniform writeonly image2D dst;\n"
                                 "void main() {\n"
                                 "  ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"
                                 "  if (any(greaterThanEqual(p, imageSize(src)))) return;\n"
                                 "  vec4 c = imageLoad(src, p);\n"
                                 "  imageStore(dst, p, vec4(1.0 - c.rgb, c.a));\n"
                                 "}\n";

/* A 3x3 box blur of an r32f image, clamped at the edges, with a storage buffer beside the images
 * (binding 0) that receives the sum of each row, and the size in metadata. */
static const char blur_src[] =
    "#version 450\n"
    "layout(local_size_x = 8, local_size_y = 8) in;\n"
    "layout(std430, binding = 0) buffer Rows { float row_sum[]; };\n"
    "layout(binding = 1, r32f) uniform readonly image2D src;\n"
    "layout(binding = 2, r32f) uniform image2D dst;\n"
    "CUBEC_INFO(int w; int h;)\n"
    "void main() {\n"
    "  ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"
    "  if (p.x >= info.w || p.y >= info.h) return;\n"
    "  float s = 0.0;\n"
    "  for (int dy = -1; dy <= 1; dy++)\n"
    "    for (int dx = -1; dx <= 1; dx++)\n"
    "      s += imageLoad(src, clamp(p + ivec2(dx, dy), ivec2(0), ivec2(info.w - 1, info.h - "
    "1))).r;\n"
    "  imageStore(dst, p, vec4(s / 9.0));\n"
    "  if (p.x == 0) {\n"
    "    float r = 0.0;\n"
    "    for (int x = 0; x < info.w; x++) r += imageLoad(src, ivec2(x, p.y)).r;\n"
    "    row_sum[p.y] = r;\n"
    "  }\n"
    "}\n";

/* Doubles every texel of an r32ui 3D image in place. */
static const char double3d_src[] =
    "#version 450\n"
    "layout(local_size_x = 4, local_size_y = 4, local_size_z = 4) in;\n"
    "layout(binding = 0, r32ui) uniform uimage3D img;\n"
    "void main() {\n"
    "  ivec3 p = ivec3(gl_GlobalInvocationID);\n"
    "  if (any(greaterThanEqual(p, imageSize(img)))) return;\n"
    "  imageStore(img, p, imageLoad(img, p) * 2u);\n"
    "}\n";

/* Adds `add` to every texel of an r32ui 2D image `a` (read-write) and writes 3x the old texel
 * into `b` (write-only). */
static const char step2d_src[] = "#version 450\n"
                                 "layout(local_size_x = 8, local_size_y = 8) in;\n"
                                 "layout(binding = 0, r32ui) uniform uimage2D a;\n"
                                 "layout(binding = 1, r32ui) uniform writeonly uimage2D b;\n"
                                 "CUBEC_INFO(uint add;)\n"
                                 "void main() {\n"
                                 "  ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"
                                 "  if (any(greaterThanEqual(p, imageSize(a)))) return;\n"
                                 "  uint v = imageLoad(a, p).r;\n"
                                 "  imageStore(a, p, uvec4(v + info.add));\n"
                                 "  imageStore(b, p, uvec4(v * 3u));\n"
                                 "}\n";

static cubec_image make_image(cubec_device *d, cubec_image_format f, uint32_t w, uint32_t h,
                              uint32_t depth)
{
    cubec_image_desc id = CUBEC_IMAGE_DESC_INIT;
    id.format = f;
    id.width = w;
    id.height = h;
    id.depth = depth;
    cubec_image im;
    ASSERT_OK(cubec_image_create(d, 0, &id, &im));
    return im;
}

static void test_invert_rgba8(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    enum { W = 37, H = 21 }; /* not multiples of the workgroup: the edge is checked */
    size_t bytes = (size_t)W * H * 4;
    unsigned char *in = malloc(bytes), *out = malloc(bytes);
    uint32_t seed = 7;
    for (size_t i = 0; i < bytes; i++)
        in[i] = (unsigned char)(test_randf(&seed) * 255.0f);
    cubec_image a = make_image(d, CUBEC_IMAGE_FORMAT_RGBA8_UNORM, W, H, 1);
    cubec_image b = make_image(d, CUBEC_IMAGE_FORMAT_RGBA8_UNORM, W, H, 1);
    ASSERT_OK(cubec_image_write(d, 0, a, in, bytes));
    /* The upload reads back unchanged. */
    ASSERT_OK(cubec_image_read(d, 0, a, out, bytes));
    assert_memory_equal(in, out, bytes);
    cubec_kernel k = make_kernel(d, "invert", invert_src);
    cubec_resource res[2] = {
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 1, .image = b},
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 0, .image = a},
    };
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.resources = res;
    ld.resource_count = 2;
    ld.groups[0] = (W + 7) / 8;
    ld.groups[1] = (H + 7) / 8;
    ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_image_read(d, 0, b, out, bytes));
    for (size_t i = 0; i < bytes; i++) {
        unsigned want = i % 4 == 3 ? in[i] : 255u - in[i];
        if (abs((int)out[i] - (int)want) > 1)
            fail_msg("texel byte %zu: %u, want %u (from %u)", i, out[i], want, in[i]);
    }
    /* Back again: inverting twice gives the input (the image written by a launch is read by the
     * next one on the same stream: ordered by the hazard tracker). */
    res[0].image = a;
    res[1].image = b;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_image_read(d, 0, a, out, bytes));
    for (size_t i = 0; i < bytes; i++)
        if (abs((int)out[i] - (int)in[i]) > 1)
            fail_msg("round trip byte %zu: %u, want %u", i, out[i], in[i]);
    ASSERT_OK(cubec_image_release(d, a));
    ASSERT_OK(cubec_image_release(d, b));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    free(in);
    free(out);
    test_device_close(d);
}

static void test_blur_r32f_with_buffer(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    enum { W = 50, H = 30 };
    float *in = malloc(W * H * sizeof *in), *out = malloc(W * H * sizeof *out);
    float rows[H];
    uint32_t seed = 3;
    for (int i = 0; i < W * H; i++)
        in[i] = test_randf(&seed);
    cubec_image src = make_image(d, CUBEC_IMAGE_FORMAT_R32_SFLOAT, W, H, 0);
    cubec_image dst = make_image(d, CUBEC_IMAGE_FORMAT_R32_SFLOAT, W, H, 1);
    ASSERT_OK(cubec_image_write(d, 0, src, in, W * H * sizeof *in));
    cubec_buffer rb;
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof rows, &rb));
    cubec_kernel k = make_kernel(d, "blur", blur_src);
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.binding_count, 1);
    cubec_resource res[2] = {
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 1, .image = src},
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 2, .image = dst},
    };
    int32_t info[2] = {W, H};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = &rb;
    ld.buffer_count = 1;
    ld.info = info;
    ld.info_size = sizeof info;
    ld.resources = res;
    ld.resource_count = 2;
    ld.groups[0] = (W + 7) / 8;
    ld.groups[1] = (H + 7) / 8;
    ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_image_read(d, 0, dst, out, W * H * sizeof *out));
    ASSERT_OK(cubec_read(d, 0, rb, 0, rows, sizeof rows));
    for (int y = 0; y < H; y++) {
        float rs = 0;
        for (int x = 0; x < W; x++) {
            float s = 0;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int xx = x + dx < 0 ? 0 : x + dx >= W ? W - 1 : x + dx;
                    int yy = y + dy < 0 ? 0 : y + dy >= H ? H - 1 : y + dy;
                    s += in[yy * W + xx];
                }
            assert_float_equal(out[y * W + x], s / 9.0f, 1e-5f);
            rs += in[y * W + x];
        }
        assert_float_equal(rows[y], rs, 1e-4f);
    }
    ASSERT_OK(cubec_buffer_release(d, rb));
    ASSERT_OK(cubec_image_release(d, src));
    ASSERT_OK(cubec_image_release(d, dst));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    free(in);
    free(out);
    test_device_close(d);
}

static void test_3d_r32ui(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    enum { X = 9, Y = 5, Z = 6, N = X * Y * Z };
    uint32_t in[N], out[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = i * 7u + 1u;
    cubec_image im = make_image(d, CUBEC_IMAGE_FORMAT_R32_UINT, X, Y, Z);
    ASSERT_OK(cubec_image_write(d, 0, im, in, sizeof in));
    cubec_kernel k = make_kernel(d, "double3d", double3d_src);
    cubec_resource res = {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 0, .image = im};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.resources = &res;
    ld.resource_count = 1;
    ld.groups[0] = (X + 3) / 4;
    ld.groups[1] = (Y + 3) / 4;
    ld.groups[2] = (Z + 3) / 4;
    for (int r = 0; r < 3; r++)
        ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_image_read(d, 0, im, out, sizeof out));
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(out[i], in[i] * 8u);
    /* A 2D image where the kernel declares an image3D is refused, naming both. */
    cubec_image flat = make_image(d, CUBEC_IMAGE_FORMAT_R32_UINT, X, Y, 1);
    res.image = flat;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT, "is a 2D image but 'img'");
    ASSERT_OK(cubec_image_release(d, flat));
    ASSERT_OK(cubec_image_release(d, im));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

static void test_refusals(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_image_desc id = CUBEC_IMAGE_DESC_INIT;
    cubec_image im = {0};
    id.format = (cubec_image_format)99;
    id.width = id.height = 4;
    ASSERT_ERROR(cubec_image_create(d, 0, &id, &im), CUBEC_INVALID_ARGUMENT,
                 "desc->format 99 is not a cubec_image_format");
    assert_true(im.id == 0);
    id.format = CUBEC_IMAGE_FORMAT_R8_UNORM;
    id.height = 0;
    ASSERT_ERROR(cubec_image_create(d, 0, &id, &im), CUBEC_INVALID_ARGUMENT, "desc->height 0");
    cubec_image_desc zero = {0};
    ASSERT_ERROR(cubec_image_create(d, 0, &zero, &im), CUBEC_INVALID_ARGUMENT, "struct_size");
    id.height = 4;
    id.width = 1u << 30;
    ASSERT_ERROR(cubec_image_create(d, 0, &id, &im), CUBEC_INVALID_ARGUMENT, "largest");
    id.width = 4;
    ASSERT_OK(cubec_image_create(d, 0, &id, &im));
    unsigned char bytes[16] = {0};
    ASSERT_ERROR(cubec_image_write(d, 0, im, bytes, 15), CUBEC_INVALID_ARGUMENT,
                 "size 15 is not the 4x4x1 image's 16 bytes");
    ASSERT_ERROR(cubec_image_read(d, 0, im, bytes, 17), CUBEC_INVALID_ARGUMENT, "size 17");
    assert_int_equal(cubec_image_format_size(CUBEC_IMAGE_FORMAT_RGBA16_SFLOAT), 8);
    assert_int_equal(cubec_image_format_size((cubec_image_format)42), 0);
    /* Launch bindings: the count, the kind, the binding and a released image. */
    cubec_kernel k = make_kernel(d, "invert", invert_src);
    cubec_image other;
    id.format = CUBEC_IMAGE_FORMAT_RGBA8_UNORM;
    ASSERT_OK(cubec_image_create(d, 0, &id, &other));
    cubec_resource res[2] = {
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 0, .image = other},
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 1, .image = other},
    };
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.resources = res;
    ld.resource_count = 1;
    ld.groups[0] = ld.groups[1] = ld.groups[2] = 1;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->resource_count is 1 but kernel 'invert' declares 2");
    ld.resource_count = 2;
    res[1].binding = 5;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->resources[1] names set 0 binding 5");
    res[1].binding = 0;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT, "a second time");
    res[1].binding = 1;
    res[1].kind = CUBEC_RESOURCE_SAMPLED_IMAGE;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "names set 0 binding 1, where kernel 'invert' declares no sampled image");
    res[1].kind = CUBEC_RESOURCE_STORAGE_IMAGE;
    /* A filter on a storage image, two address modes at once, an unknown bit. */
    static const uint32_t bad_filters[] = {CUBEC_FILTER_LINEAR, CUBEC_ADDRESS_REPEAT,
                                           CUBEC_ADDRESS_REPEAT | CUBEC_ADDRESS_MIRRORED_REPEAT,
                                           0x40u};
    static const char *const bad_needles[] = {
        "desc->resources[1].filter 0x1", "desc->resources[1].filter 0x10",
        "desc->resources[1].filter 0x30", "desc->resources[1].filter 0x40"};
    for (int b = 0; b < 4; b++) {
        res[1].filter = bad_filters[b];
        ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT, bad_needles[b]);
    }
    res[1].filter = 0;
    res[1].kind = CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "where kernel 'invert' declares no uniform texel buffer");
    res[1].kind = (cubec_resource_kind)7;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->resources[1].kind 7 is not a cubec_resource_kind");
    res[1].kind = CUBEC_RESOURCE_STORAGE_IMAGE;
    ASSERT_OK(cubec_image_release(d, im));
    res[1].image = im;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT, "desc->resources[1].image");
    ASSERT_ERROR(cubec_image_release(d, im), CUBEC_INVALID_ARGUMENT, "cubec_image_release: image");
    ASSERT_OK(cubec_image_release(d, other));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

enum { SW = 19, SH = 11, SN = SW * SH };

static void step_launch(cubec_device *d, cubec_stream s, cubec_kernel k, cubec_image a,
                        cubec_image b, uint32_t add)
{
    cubec_resource res[2] = {
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 0, .image = a},
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 1, .image = b},
    };
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.resources = res;
    ld.resource_count = 2;
    ld.info = &add;
    ld.info_size = sizeof add;
    ld.groups[0] = (SW + 7) / 8;
    ld.groups[1] = (SH + 7) / 8;
    ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, s, &ld));
}

static void expect_texels(cubec_device *d, cubec_stream s, cubec_image im, const uint32_t *want,
                          const char *what)
{
    uint32_t got[SN];
    ASSERT_OK(cubec_image_read(d, s, im, got, sizeof got));
    for (int i = 0; i < SN; i++)
        if (got[i] != want[i]) fail_msg("%s: texel %d is %u, want %u", what, i, got[i], want[i]);
}

/* Images are ordered, tainted and captured as buffers are: a launch on another stream reads
 * what a write queued on the first wrote; a lost submission taints the image it would have
 * written, a launch reading it is skipped and taints its output image, a write clears it; a
 * captured launch on images replays. */
static void test_order_taint_graph(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = make_kernel(d, "step2d", step2d_src);
    cubec_stream s1, s2;
    ASSERT_OK(cubec_stream_new(d, &s1));
    ASSERT_OK(cubec_stream_new(d, &s2));
    cubec_image a = make_image(d, CUBEC_IMAGE_FORMAT_R32_UINT, SW, SH, 1);
    cubec_image b = make_image(d, CUBEC_IMAGE_FORMAT_R32_UINT, SW, SH, 1);
    uint32_t x[SN], want_a[SN], want_b[SN];
    for (uint32_t i = 0; i < SN; i++)
        x[i] = i * 13u + 5u;

    /* Across streams: written on s1 (not synced), launched on s2. */
    ASSERT_OK(cubec_image_write(d, s1, a, x, sizeof x));
    step_launch(d, s2, k, a, b, 4);
    for (int i = 0; i < SN; i++) {
        want_a[i] = x[i] + 4u;
        want_b[i] = x[i] * 3u;
    }
    expect_texels(d, s2, a, want_a, "a after the launch on another stream");
    expect_texels(d, s2, b, want_b, "b after the launch on another stream");

    /* Taint: the batch holding the write and a launch is lost. */
    ASSERT_OK(cubec_image_write(d, s1, a, x, sizeof x));
    step_launch(d, s1, k, a, b, 1);
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_ERROR(cubec_flush(d, s1), CUBEC_INTERNAL, "injected fault: submit");
    uint32_t got[SN];
    ASSERT_ERROR(cubec_image_read(d, s1, a, got, sizeof got), CUBEC_INTERNAL, "injected fault");
    /* A launch reading the tainted image is skipped: its output image takes the failure. */
    step_launch(d, s1, k, a, b, 1);
    ASSERT_ERROR(cubec_image_read(d, s1, b, got, sizeof got), CUBEC_INTERNAL, "was skipped");
    /* Written again: good, and the launch runs. */
    ASSERT_OK(cubec_image_write(d, s1, a, x, sizeof x));
    step_launch(d, s1, k, a, b, 2);
    for (int i = 0; i < SN; i++) {
        want_a[i] = x[i] + 2u;
        want_b[i] = x[i] * 3u;
    }
    expect_texels(d, s1, a, want_a, "a written again");
    expect_texels(d, s1, b, want_b, "b after the launch from a written again");

    /* A graph of two launches on images, replayed three times. */
    ASSERT_OK(cubec_graph_prepare(d, s1));
    cubec_image c;
    cubec_image_desc id = CUBEC_IMAGE_DESC_INIT;
    id.format = CUBEC_IMAGE_FORMAT_R32_UINT;
    id.width = SW;
    id.height = SH;
    ASSERT_OK(cubec_graph_begin(d, s1));
    ASSERT_ERROR(cubec_image_create(d, s1, &id, &c), CUBEC_GRAPH_STATE, "cubec_image_create");
    step_launch(d, s1, k, a, b, 10);
    step_launch(d, s1, k, b, a, 0); /* a = 3 * b's old texels: reads what the first wrote */
    cubec_graph g;
    ASSERT_OK(cubec_graph_end(d, s1, &g));
    for (int r = 0; r < 3; r++)
        ASSERT_OK(cubec_graph_replay(d, s1, g));
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < SN; i++) {
            uint32_t b1 = want_a[i] * 3u; /* first launch: b = 3a, a += 10 */
            want_a[i] = b1 * 3u;          /* second: a = 3b (b += 0) */
            want_b[i] = b1;
        }
    expect_texels(d, s1, a, want_a, "a after three replays");
    expect_texels(d, s1, b, want_b, "b after three replays");
    ASSERT_OK(cubec_graph_destroy(d, s1, g));
    ASSERT_OK(cubec_image_release(d, a));
    ASSERT_OK(cubec_image_release(d, b));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

/* Samples an image at given coordinates (normalized, clamped to the edge) into a buffer. */
static const char sample_src[] = "#version 450\n"
                                 "layout(local_size_x = 64) in;\n"
                                 "layout(std430, binding = 0) readonly buffer UV { vec2 uv[]; };\n"
                                 "layout(std430, binding = 1) writeonly buffer Out { vec4 o[]; };\n"
                                 "layout(binding = 2) uniform sampler2D tex;\n"
                                 "CUBEC_INFO(uint n;)\n"
                                 "void main() {\n"
                                 "  uint i = gl_GlobalInvocationID.x;\n"
                                 "  if (i < info.n) o[i] = textureLod(tex, uv[i], 0.0);\n"
                                 "}\n";

/* The same through a texture and a separate sampler (in set 1), as HLSL-style shaders write
 * it. */
static const char sample_separate_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer UV { vec2 uv[]; };\n"
    "layout(std430, binding = 1) writeonly buffer Out { vec4 o[]; };\n"
    "layout(binding = 2) uniform texture2D tex;\n"
    "layout(set = 1, binding = 0) uniform sampler smp;\n"
    "CUBEC_INFO(uint n;)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < info.n) o[i] = textureLod(sampler2D(tex, smp), uv[i], 0.0);\n"
    "}\n";

static int clampi(int v, int hi)
{
    return v < 0 ? 0 : v > hi ? hi : v;
}

/* Texel index i of a row of n as Vulkan's address modes place it (the spec's "Wrapping
 * Operation" on integer texel coordinates). */
static int wrapi(int i, int n, uint32_t address)
{
    if (address == CUBEC_ADDRESS_REPEAT) return ((i % n) + n) % n;
    if (address == CUBEC_ADDRESS_MIRRORED_REPEAT) {
        int m = ((i % (2 * n)) + 2 * n) % (2 * n) - n; /* (i mod 2n) - n */
        return (n - 1) - (m >= 0 ? m : -(1 + m));
    }
    return clampi(i, n - 1);
}

/* An rgba8 image sampled with nearest and linear filtering, in each address mode (clamp to edge,
 * repeat, mirrored repeat), checked against CPU references (texel centres at half-integers).
 * Nearest points keep a quarter texel from the edges between texels, where rounding may pick
 * either, and reach a whole image past each side; linear results carry the device's subtexel
 * precision (Vulkan requires 4 bits; 0.02 covers it for values in [0, 1]). */
static void check_sampling(int separate)
{
    cubec_device *d = test_device_open();
    enum { W = 7, H = 5, N = 256 };
    unsigned char px[W * H * 4];
    uint32_t seed = 11;
    for (int i = 0; i < W * H * 4; i++)
        px[i] = (unsigned char)(test_randf(&seed) * 255.0f);
    cubec_image im = make_image(d, CUBEC_IMAGE_FORMAT_RGBA8_UNORM, W, H, 1);
    ASSERT_OK(cubec_image_write(d, 0, im, px, sizeof px));
    cubec_kernel k = make_kernel(d, "sample", separate ? sample_separate_src : sample_src);
    float uv[N * 2], out[N * 4];
    cubec_buffer buv, bout;
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof uv, &buv));
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof out, &bout));
    static const uint32_t modes[3] = {CUBEC_ADDRESS_CLAMP_TO_EDGE, CUBEC_ADDRESS_REPEAT,
                                      CUBEC_ADDRESS_MIRRORED_REPEAT};
    for (uint32_t run = 0; run < 6; run++) {
        uint32_t filter = run % 2, address = modes[run / 2];
        for (int i = 0; i < N; i++) {
            if (filter == 0) { /* a texel (many outside the image), away from its edges */
                int tx = (int)(test_randf(&seed) * (3 * W)) - W;
                int ty = (int)(test_randf(&seed) * (3 * H)) - H;
                uv[2 * i] = ((float)tx + 0.25f + 0.5f * test_randf(&seed)) / W;
                uv[2 * i + 1] = ((float)ty + 0.25f + 0.5f * test_randf(&seed)) / H;
            } else {
                uv[2 * i] = test_randf(&seed) * 1.4f - 0.2f;
                uv[2 * i + 1] = test_randf(&seed) * 1.4f - 0.2f;
            }
        }
        ASSERT_OK(cubec_write(d, 0, buv, 0, uv, sizeof uv));
        cubec_buffer bufs[2] = {buv, bout};
        cubec_resource res[2] = {
            {.kind = CUBEC_RESOURCE_SAMPLED_IMAGE,
             .binding = 2,
             .filter = filter | address,
             .image = im},
            {.kind = CUBEC_RESOURCE_SAMPLER, .set = 1, .binding = 0, .filter = filter | address},
        };
        if (separate) {
            res[0].kind = CUBEC_RESOURCE_SAMPLED_TEXTURE;
            res[0].filter = 0;
        }
        uint32_t n = N;
        cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
        ld.kernel = k;
        ld.buffers = bufs;
        ld.buffer_count = 2;
        ld.info = &n;
        ld.info_size = sizeof n;
        ld.resources = res;
        ld.resource_count = separate ? 2 : 1;
        ld.groups[0] = N / 64;
        ld.groups[1] = ld.groups[2] = 1;
        ASSERT_OK(cubec_launch(d, 0, &ld));
        ASSERT_OK(cubec_read(d, 0, bout, 0, out, sizeof out));
        for (int i = 0; i < N; i++) {
            float want[4];
            float x = uv[2 * i] * W, y = uv[2 * i + 1] * H;
            if (filter == 0) {
                int tx = wrapi((int)floorf(x), W, address), ty = wrapi((int)floorf(y), H, address);
                for (int c = 0; c < 4; c++)
                    want[c] = px[(ty * W + tx) * 4 + c] / 255.0f;
            } else {
                float fx = x - 0.5f, fy = y - 0.5f;
                int x0 = (int)floorf(fx), y0 = (int)floorf(fy);
                float ax = fx - (float)x0, ay = fy - (float)y0;
                int xa = wrapi(x0, W, address), xb = wrapi(x0 + 1, W, address);
                int ya = wrapi(y0, H, address), yb = wrapi(y0 + 1, H, address);
                for (int c = 0; c < 4; c++) {
                    float t00 = px[(ya * W + xa) * 4 + c] / 255.0f;
                    float t10 = px[(ya * W + xb) * 4 + c] / 255.0f;
                    float t01 = px[(yb * W + xa) * 4 + c] / 255.0f;
                    float t11 = px[(yb * W + xb) * 4 + c] / 255.0f;
                    want[c] =
                        (1 - ay) * ((1 - ax) * t00 + ax * t10) + ay * ((1 - ax) * t01 + ax * t11);
                }
            }
            for (int c = 0; c < 4; c++)
                if (fabsf(out[4 * i + c] - want[c]) > (filter ? 0.02f : 1e-6f))
                    fail_msg("%s (address %#x) sample %d at (%f, %f) channel %d: %f, want %f",
                             filter ? "linear" : "nearest", address, i, uv[2 * i], uv[2 * i + 1], c,
                             out[4 * i + c], want[c]);
        }
    }
    ASSERT_OK(cubec_buffer_release(d, buv));
    ASSERT_OK(cubec_buffer_release(d, bout));
    ASSERT_OK(cubec_image_release(d, im));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

static void test_sampled_nearest_linear(void **state)
{
    (void)state;
    check_sampling(0);
}

/* A texture2D sampled through a separate sampler (sampler2D(t, s)), both filters. */
static void test_separate_sampler(void **state)
{
    (void)state;
    check_sampling(1);
}

/* Reads an r32ui image through a combined sampler (binding 1) and through a texture with a
 * separate sampler (bindings 2 and 3), nearest, at texel centres. */
static const char sample_uint_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) writeonly buffer Out { uint o[]; };\n"
    "layout(binding = 1) uniform usampler2D a;\n"
    "layout(binding = 2) uniform utexture2D t;\n"
    "layout(binding = 3) uniform sampler s;\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i >= 16u) return;\n"
    "  vec2 uv = (vec2(i % 4u, i / 4u) + 0.5) / 4.0;\n"
    "  o[i] = textureLod(a, uv, 0.0).r + 1000u * textureLod(usampler2D(t, s), uv, 0.0).r;\n"
    "}\n";

/* Linear filtering of a format the device cannot filter (r32ui never is) is refused by name at
 * launch, for a combined sampler and for a separate sampler of a texture, before the validation
 * layer would see it; nearest sampling of it runs and is checked. */
static void test_linear_refused(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    uint32_t px[16], px2[16];
    for (uint32_t i = 0; i < 16; i++) {
        px[i] = i * 7u + 1u;
        px2[i] = 100u - i;
    }
    cubec_image a = make_image(d, CUBEC_IMAGE_FORMAT_R32_UINT, 4, 4, 1);
    cubec_image t = make_image(d, CUBEC_IMAGE_FORMAT_R32_UINT, 4, 4, 1);
    ASSERT_OK(cubec_image_write(d, 0, a, px, sizeof px));
    ASSERT_OK(cubec_image_write(d, 0, t, px2, sizeof px2));
    const char *backend = getenv("CUBEC_BACKEND");
    if (backend && strcmp(backend, "webgpu") == 0) {
        /* WebGPU samples only float textures, and naga refuses the kernel (docs/device.md): the
         * refusal is what is checked there. */
        cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
        kd.name = "sample_uint";
        kd.glsl = sample_uint_src;
        cubec_kernel refused;
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &refused), CUBEC_INVALID_SPIRV,
                     "Shader validation error");
        ASSERT_OK(cubec_image_release(d, a));
        ASSERT_OK(cubec_image_release(d, t));
        test_device_close(d);
        return;
    }
    cubec_kernel k = make_kernel(d, "sample_uint", sample_uint_src);
    cubec_buffer out;
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof px, &out));
    cubec_resource res[3] = {
        {.kind = CUBEC_RESOURCE_SAMPLED_IMAGE, .binding = 1, .filter = 1, .image = a},
        {.kind = CUBEC_RESOURCE_SAMPLED_TEXTURE, .binding = 2, .image = t},
        {.kind = CUBEC_RESOURCE_SAMPLER, .binding = 3},
    };
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = &out;
    ld.buffer_count = 1;
    ld.resources = res;
    ld.resource_count = 3;
    ld.groups[0] = ld.groups[1] = ld.groups[2] = 1;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_UNSUPPORTED,
                 "set 0 binding 1 is filtered linearly (filter 1), but the device cannot filter "
                 "format r32ui of 'a' at binding 1 linearly");
    res[0].filter = 0;
    res[2].filter = 1;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_UNSUPPORTED,
                 "set 0 binding 3 is filtered linearly (filter 1), but the device cannot filter "
                 "format r32ui of 't' at binding 2 linearly");
    res[2].filter = 0;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    uint32_t got[16];
    ASSERT_OK(cubec_read(d, 0, out, 0, got, sizeof got));
    for (uint32_t i = 0; i < 16; i++)
        if (got[i] != px[i] + 1000u * px2[i])
            fail_msg("texel %u: %u, want %u", i, got[i], px[i] + 1000u * px2[i]);
    /* A texture of a float format bound to a kernel that reads unsigned integers. */
    cubec_image f = make_image(d, CUBEC_IMAGE_FORMAT_R32_SFLOAT, 4, 4, 1);
    res[1].image = f;
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->resources[1].image has format r32f (float texels) but 't' at binding 2 "
                 "reads unsigned integer texels");
    ASSERT_OK(cubec_image_release(d, f));
    ASSERT_OK(cubec_buffer_release(d, out));
    ASSERT_OK(cubec_image_release(d, a));
    ASSERT_OK(cubec_image_release(d, t));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invert_rgba8),      cmocka_unit_test(test_blur_r32f_with_buffer),
        cmocka_unit_test(test_3d_r32ui),          cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_order_taint_graph), cmocka_unit_test(test_sampled_nearest_linear),
        cmocka_unit_test(test_separate_sampler),  cmocka_unit_test(test_linear_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
