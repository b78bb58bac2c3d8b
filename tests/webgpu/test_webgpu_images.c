/* Images on the WebGPU backend (src/gpu/webgpu/wg_image.c, docs/device.md "The WebGPU backend")
 * through the public API, on the implementation tests/webgpu/CMakeLists.txt points
 * CUBEC_WEBGPU_LIBRARY at (wgpu-native on lavapipe here): images written and read back (rows
 * that are and are not 256-byte multiples, WebGPU's copy pitch), storage-image kernels in GLSL
 * (through naga) and WGSL, a read_write 3D storage texture, a sampled texture with a sampler at
 * both filters in WGSL and as a GLSL combined image sampler (split in two by the backend), each
 * against a CPU reference; image writes as queue writes of the texture, in stream order; and
 * what WebGPU has no twin of refused by name.
 * Skipped, by name, where the library does not load. */
#include "launch_util.h"
#include "test_util.h"
#include "webgpu_open.h"

#include "server/device.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static cubec_kernel make_wgsl(cubec_device *d, const char *name, const char *wgsl)
{
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = name;
    kd.wgsl = wgsl;
    cubec_kernel k;
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    return k;
}

static cubec_launch_desc launch_2d(cubec_kernel k, const cubec_resource *res, uint32_t n,
                                   uint32_t w, uint32_t h)
{
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.resources = res;
    ld.resource_count = n;
    ld.groups[0] = (w + 7) / 8;
    ld.groups[1] = (h + 7) / 8;
    ld.groups[2] = 1;
    return ld;
}

static unsigned char *random_bytes(size_t n, uint32_t seed)
{
    unsigned char *b = malloc(n);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(test_rand(&seed) >> 8);
    return b;
}

/* An image written and read back unchanged: rows of `w` texels of `texel` bytes, which are
 * copied one by one unless they are a multiple of 256 bytes. */
static void expect_round_trip(cubec_device *d, cubec_image_format f, uint32_t texel, uint32_t w,
                              uint32_t h, uint32_t depth)
{
    size_t bytes = (size_t)w * h * (depth ? depth : 1) * texel;
    unsigned char *in = random_bytes(bytes, w * 31u + h), *out = calloc(bytes, 1);
    assert_non_null(out);
    cubec_image im = make_image(d, f, w, h, depth);
    ASSERT_OK(cubec_image_write(d, 0, im, in, bytes));
    ASSERT_OK(cubec_image_read(d, 0, im, out, bytes));
    for (size_t i = 0; i < bytes; i++)
        if (in[i] != out[i])
            fail_msg("%ux%ux%u image of %u-byte texels: byte %zu reads %u, wrote %u", w, h, depth,
                     texel, i, out[i], in[i]);
    ASSERT_OK(cubec_image_release(d, im));
    free(in);
    free(out);
}

static void test_write_read_round_trip(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    expect_round_trip(d, CUBEC_IMAGE_FORMAT_RGBA8_UNORM, 4, 64, 9, 1);  /* 256-byte rows */
    expect_round_trip(d, CUBEC_IMAGE_FORMAT_RGBA8_UNORM, 4, 37, 21, 1); /* row by row */
    expect_round_trip(d, CUBEC_IMAGE_FORMAT_R8_UNORM, 1, 13, 5, 1);     /* odd bytes a row */
    expect_round_trip(d, CUBEC_IMAGE_FORMAT_R16_SFLOAT, 2, 7, 3, 1);
    expect_round_trip(d, CUBEC_IMAGE_FORMAT_RGBA32_UINT, 16, 5, 4, 3); /* 3D, row by row */
    expect_round_trip(d, CUBEC_IMAGE_FORMAT_R32_SFLOAT, 4, 64, 2, 4);  /* 3D, whole slices */
    cubec_device_close(d);
}

/* Inverts an rgba8 image's colour into another (alpha kept): readonly and writeonly image2D
 * through naga's SPIR-V front end. */
static const char invert_glsl[] = "#version 450\n"
                                  "layout(local_size_x = 8, local_size_y = 8) in;\n"
                                  "layout(binding = 0, rgba8) uniform readonly image2D src;\n"
                                  "layout(binding = 1, rgba8) uniform writeonly image2D dst;\n"
                                  "void main() {\n"
                                  "  ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"
                                  "  if (any(greaterThanEqual(p, imageSize(src)))) return;\n"
                                  "  vec4 c = imageLoad(src, p);\n"
                                  "  imageStore(dst, p, vec4(1.0 - c.rgb, c.a));\n"
                                  "}\n";

static void check_invert(cubec_device *d, cubec_kernel k, uint32_t w, uint32_t h)
{
    size_t bytes = (size_t)w * h * 4;
    unsigned char *in = random_bytes(bytes, 7u + w), *out = malloc(bytes);
    assert_non_null(out);
    cubec_image a = make_image(d, CUBEC_IMAGE_FORMAT_RGBA8_UNORM, w, h, 1);
    cubec_image b = make_image(d, CUBEC_IMAGE_FORMAT_RGBA8_UNORM, w, h, 1);
    ASSERT_OK(cubec_image_write(d, 0, a, in, bytes));
    cubec_resource res[2] = {
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 1, .image = b},
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 0, .image = a},
    };
    cubec_launch_desc ld = launch_2d(k, res, 2, w, h);
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_image_read(d, 0, b, out, bytes));
    for (size_t i = 0; i < bytes; i++) {
        unsigned want = i % 4 == 3 ? in[i] : 255u - in[i];
        if (abs((int)out[i] - (int)want) > 1)
            fail_msg("%ux%u: texel byte %zu is %u, want %u (from %u)", w, h, i, out[i], want,
                     in[i]);
    }
    ASSERT_OK(cubec_image_release(d, a));
    ASSERT_OK(cubec_image_release(d, b));
    free(in);
    free(out);
}

static void test_glsl_storage_images(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    cubec_kernel k = make_kernel(d, "invert", invert_glsl);
    check_invert(d, k, 37, 21); /* not multiples of the workgroup, rows copied one by one */
    check_invert(d, k, 64, 16); /* 256-byte rows: one copy */
    ASSERT_OK(cubec_kernel_destroy(d, k));
    cubec_device_close(d);
}

/* Emboss in WGSL: 0.5 + the difference of the lower-right and upper-left neighbours (clamped to
 * the image), per colour channel, alpha 1; a read-only and a write-only storage texture. */
static const char emboss_wgsl[] =
    "@group(0) @binding(0) var src: texture_storage_2d<rgba8unorm, read>;\n"
    "@group(0) @binding(1) var dst: texture_storage_2d<rgba8unorm, write>;\n"
    "@compute @workgroup_size(8, 8)\n"
    "fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n"
    "    let size = vec2<i32>(textureDimensions(src));\n"
    "    let p = vec2<i32>(id.xy);\n"
    "    if (p.x >= size.x || p.y >= size.y) { return; }\n"
    "    let a = textureLoad(src, clamp(p - vec2<i32>(1), vec2<i32>(0), size - 1));\n"
    "    let b = textureLoad(src, clamp(p + vec2<i32>(1), vec2<i32>(0), size - 1));\n"
    "    let e = clamp(vec3<f32>(0.5) + b.rgb - a.rgb, vec3<f32>(0.0), vec3<f32>(1.0));\n"
    "    textureStore(dst, p, vec4<f32>(e, 1.0));\n"
    "}\n";

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void test_wgsl_emboss(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    enum { W = 45, H = 19 };
    size_t bytes = (size_t)W * H * 4;
    unsigned char *in = random_bytes(bytes, 99), *out = malloc(bytes);
    assert_non_null(out);
    cubec_image a = make_image(d, CUBEC_IMAGE_FORMAT_RGBA8_UNORM, W, H, 1);
    cubec_image b = make_image(d, CUBEC_IMAGE_FORMAT_RGBA8_UNORM, W, H, 1);
    ASSERT_OK(cubec_image_write(d, 0, a, in, bytes));
    cubec_kernel k = make_wgsl(d, "emboss_wgsl", emboss_wgsl);
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.binding_count, 0);
    cubec_resource res[2] = {
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 0, .image = a},
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 1, .image = b},
    };
    cubec_launch_desc ld = launch_2d(k, res, 2, W, H);
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_image_read(d, 0, b, out, bytes));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 4; c++) {
                size_t i = ((size_t)y * W + (size_t)x) * 4 + (size_t)c;
                int want = 255;
                if (c < 3) {
                    size_t ia =
                        ((size_t)clampi(y - 1, 0, H - 1) * W + (size_t)clampi(x - 1, 0, W - 1)) *
                            4 +
                        (size_t)c;
                    size_t ib =
                        ((size_t)clampi(y + 1, 0, H - 1) * W + (size_t)clampi(x + 1, 0, W - 1)) *
                            4 +
                        (size_t)c;
                    float e = 0.5f + (float)((int)in[ib] - (int)in[ia]) / 255.0f;
                    e = e < 0 ? 0 : e > 1 ? 1 : e;
                    want = (int)lrintf(e * 255.0f);
                }
                if (abs((int)out[i] - want) > 1)
                    fail_msg("emboss (%d, %d) channel %d: %u, want %d", x, y, c, out[i], want);
            }
    ASSERT_OK(cubec_image_release(d, a));
    ASSERT_OK(cubec_image_release(d, b));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    free(in);
    free(out);
    cubec_device_close(d);
}

/* Adds `add` (immediates) to every texel of a 3D r32uint storage texture read and written in
 * place (read_write: WebGPU core allows it for r32 formats). */
static const char add3d_wgsl[] =
    "struct Info { add: u32 }\n"
    "var<immediate> info: Info;\n"
    "@group(0) @binding(0) var img: texture_storage_3d<r32uint, read_write>;\n"
    "@compute @workgroup_size(4, 4, 4)\n"
    "fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n"
    "    if (any(id >= textureDimensions(img))) { return; }\n"
    "    let v = textureLoad(img, id).r;\n"
    "    textureStore(img, id, vec4<u32>(v + info.add, 0u, 0u, 1u));\n"
    "}\n";

static void test_wgsl_read_write_3d(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    enum { W = 6, H = 5, D = 7, N = W * H * D };
    uint32_t in[N], out[N];
    uint32_t seed = 3;
    for (uint32_t i = 0; i < N; i++)
        in[i] = test_rand(&seed);
    cubec_image im = make_image(d, CUBEC_IMAGE_FORMAT_R32_UINT, W, H, D);
    ASSERT_OK(cubec_image_write(d, 0, im, in, sizeof in));
    cubec_kernel k = make_wgsl(d, "add3d", add3d_wgsl);
    cubec_resource res = {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .image = im};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.resources = &res;
    ld.resource_count = 1;
    ld.groups[0] = ld.groups[1] = 2;
    ld.groups[2] = 2;
    uint32_t add = 12345;
    ld.info = &add;
    ld.info_size = sizeof add;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_launch(d, 0, &ld)); /* twice: the second reads what the first wrote */
    ASSERT_OK(cubec_image_read(d, 0, im, out, sizeof out));
    for (uint32_t i = 0; i < N; i++)
        if (out[i] != in[i] + 2u * add)
            fail_msg("texel %u: %u, want %u", i, out[i], in[i] + 2u * add);
    ASSERT_OK(cubec_image_release(d, im));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    cubec_device_close(d);
}

/* Samples a 4x4 r32float texture at 16 points through a sampler (the launch's filter) into a
 * buffer. */
static const char sample_wgsl[] =
    "@group(0) @binding(0) var<storage, read_write> o: array<f32>;\n"
    "@group(0) @binding(1) var tex: texture_2d<f32>;\n"
    "@group(1) @binding(0) var smp: sampler;\n"
    "@compute @workgroup_size(16)\n"
    "fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n"
    "    let i = id.x;\n"
    "    let uv = (vec2<f32>(f32(i % 4u), f32(i / 4u)) * 1.25 + 0.3) / 4.0;\n"
    "    o[i] = textureSampleLevel(tex, smp, uv, 0.0).r;\n"
    "}\n";

/* The texel at (x, y) of a 4x4 image, clamped to its edge. */
static float texel_at(const float *t, int x, int y)
{
    return t[clampi(y, 0, 3) * 4 + clampi(x, 0, 3)];
}

static float sample_ref(const float *t, float u, float v, int linear)
{
    float x = u * 4.0f, y = v * 4.0f;
    if (!linear) return texel_at(t, (int)floorf(x), (int)floorf(y));
    x -= 0.5f;
    y -= 0.5f;
    int x0 = (int)floorf(x), y0 = (int)floorf(y);
    float fx = x - (float)x0, fy = y - (float)y0;
    float top = texel_at(t, x0, y0) * (1 - fx) + texel_at(t, x0 + 1, y0) * fx;
    float bottom = texel_at(t, x0, y0 + 1) * (1 - fx) + texel_at(t, x0 + 1, y0 + 1) * fx;
    return top * (1 - fy) + bottom * fy;
}

/* The same in GLSL through a combined image sampler (sampler2D), which WebGPU has no twin of:
 * the backend splits it into a texture and a sampler (wg_spirv_split.c). */
static const char sample_glsl[] =
    "#version 450\n"
    "layout(local_size_x = 16) in;\n"
    "layout(std430, binding = 0) writeonly buffer O { float o[]; };\n"
    "layout(binding = 1) uniform sampler2D tex;\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  vec2 uv = (vec2(float(i % 4u), float(i / 4u)) * 1.25 + 0.3) / 4.0;\n"
    "  o[i] = textureLod(tex, uv, 0.0).r;\n"
    "}\n";

static void check_sampling(cubec_device *d, cubec_kernel k, int combined)
{
    float px[16], got[16];
    for (int i = 0; i < 16; i++)
        px[i] = (float)((i * 7) % 16) / 4.0f;
    cubec_image im = make_image(d, CUBEC_IMAGE_FORMAT_R32_SFLOAT, 4, 4, 1);
    ASSERT_OK(cubec_image_write(d, 0, im, px, sizeof px));
    cubec_buffer out;
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof got, &out));
    for (int linear = 0; linear <= 1; linear++) {
        cubec_resource res[2] = {
            {.kind = CUBEC_RESOURCE_SAMPLED_TEXTURE, .binding = 1, .image = im},
            {.kind = CUBEC_RESOURCE_SAMPLER, .set = 1, .filter = (uint32_t)linear},
        };
        if (combined) {
            res[0].kind = CUBEC_RESOURCE_SAMPLED_IMAGE;
            res[0].filter = (uint32_t)linear;
        }
        cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
        ld.kernel = k;
        ld.buffers = &out;
        ld.buffer_count = 1;
        ld.resources = res;
        ld.resource_count = combined ? 1 : 2;
        ld.groups[0] = ld.groups[1] = ld.groups[2] = 1;
        ASSERT_OK(cubec_launch(d, 0, &ld));
        ASSERT_OK(cubec_read(d, 0, out, 0, got, sizeof got));
        for (int i = 0; i < 16; i++) {
            int row = i / 4;
            float u = ((float)(i % 4) * 1.25f + 0.3f) / 4.0f;
            float v = ((float)row * 1.25f + 0.3f) / 4.0f;
            float want = sample_ref(px, u, v, linear);
            /* Linear filtering runs at the device's subtexel precision (8 bits at least). */
            if (fabsf(got[i] - want) > (linear ? 0.02f : 0.0f))
                fail_msg("%s %s sample %d at (%g, %g): %g, want %g",
                         combined ? "combined" : "separate", linear ? "linear" : "nearest", i,
                         (double)u, (double)v, (double)got[i], (double)want);
        }
    }
    ASSERT_OK(cubec_buffer_release(d, out));
    ASSERT_OK(cubec_image_release(d, im));
}

static void test_sampled_textures(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    cubec_kernel k = make_wgsl(d, "sample_wgsl", sample_wgsl);
    check_sampling(d, k, 0);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    k = make_kernel(d, "sample_glsl", sample_glsl);
    check_sampling(d, k, 1);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    cubec_device_close(d);
}

/* What WebGPU has no twin of is refused by name when the kernel is made. */
static void expect_kernel_refused(cubec_device *d, const char *glsl, const char *wgsl,
                                  const char *message)
{
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = "refused";
    kd.glsl = glsl;
    kd.wgsl = wgsl;
    cubec_kernel k;
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED, message);
}

static void test_refusals_by_name(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    expect_kernel_refused(
        d,
        "#version 450\n"
        "layout(local_size_x = 64) in;\n"
        "layout(binding = 0, r32f) uniform imageBuffer tb;\n"
        "void main() { imageStore(tb, int(gl_GlobalInvocationID.x), vec4(1)); }\n",
        NULL, "'tb' at set 0 binding 0 is a texel buffer, which WebGPU has no twin of");
    /* A combined image sampler passed to a function (the backend splits only loads of it). */
    expect_kernel_refused(d,
                          "#version 450\n"
                          "layout(local_size_x = 1) in;\n"
                          "layout(std430, binding = 0) buffer O { vec4 o; };\n"
                          "layout(binding = 1) uniform sampler2D tex;\n"
                          "vec4 f(sampler2D s) { return textureLod(s, vec2(0.5), 0.0); }\n"
                          "void main() { o = f(tex); }\n",
                          NULL, "combined image sampler 'tex' is used other than by loading it");
    /* A storage format cubec names no image format for (Vulkan binds it; WebGPU's layout must
     * name one). */
    expect_kernel_refused(d,
                          "#version 450\n"
                          "layout(local_size_x = 1) in;\n"
                          "layout(binding = 0, rgba8ui) uniform writeonly uimage2D img;\n"
                          "void main() { imageStore(img, ivec2(0), uvec4(1)); }\n",
                          NULL, "storage image 'img' at set 0 binding 0 declares no format");
    expect_kernel_refused(d, NULL,
                          "@group(0) @binding(0) var t: texture_storage_2d<rg32float, write>;\n"
                          "@compute @workgroup_size(1) fn main() {}\n",
                          "storage texture 't' has format rg32float");
    expect_kernel_refused(d, NULL,
                          "@group(0) @binding(0) var t: texture_2d_array<f32>;\n"
                          "@compute @workgroup_size(1) fn main() {}\n",
                          "('t') is a texture_2d_array");
    /* A storage image bound in another format than the kernel declares. */
    cubec_kernel k = make_kernel(d, "invert", invert_glsl);
    cubec_image a = make_image(d, CUBEC_IMAGE_FORMAT_RGBA8_UNORM, 4, 4, 1);
    cubec_image f = make_image(d, CUBEC_IMAGE_FORMAT_RGBA32_SFLOAT, 4, 4, 1);
    cubec_resource res[2] = {
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 0, .image = a},
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 1, .image = f},
    };
    cubec_launch_desc ld = launch_2d(k, res, 2, 4, 4);
    cubec_status st = cubec_launch(d, 0, &ld);
    if (!st) st = cubec_sync(d, 0);
    ASSERT_ERROR(st, CUBEC_INVALID_ARGUMENT,
                 "binding 1 has format rgba32f, but the kernel declares rgba8 there");
    ASSERT_OK(cubec_image_release(d, a));
    ASSERT_OK(cubec_image_release(d, f));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    cubec_device_close(d);
}

/* --- Copies of rows that are not 256-byte multiples, every way the backend has ------------------
 *
 * wg_image.c moves such rows through aligned scratch rows (by a kernel, or by a buffer copy per
 * row) or copies texture rows one by one, each device its cheapest way;
 * CUBEC_WEBGPU_IMAGE_COPIES forces one, so each runs here. A round trip alone would pass a layout
 * that writes and reads wrong in the same way, so each direction is checked against the CPU on its
 * own: a write by a kernel that loads every texel into a buffer, a read of texels a kernel stored
 * from their coordinates. (Program writes are queue writes of the texture now, whatever the way:
 * the ways move reads only, and the write checks check the queue write's layout.) */

typedef struct texel_format {
    cubec_image_format format;
    const char *wgsl;   /* its WGSL storage format */
    uint32_t bytes;     /* a texel's */
    uint32_t words;     /* the dump kernel writes these words per texel */
    const char *sample; /* the dump kernel's texel type: f32 or u32 */
    const char *dump;   /* WGSL storing texel v of index i into o */
} texel_format;

static const texel_format texel_formats[] = {
    {CUBEC_IMAGE_FORMAT_R8_UNORM, "r8unorm", 1, 1, "f32", "o[i] = u32(round(v.r * 255.0));"},
    {CUBEC_IMAGE_FORMAT_R16_SFLOAT, "r16float", 2, 1, "f32",
     "o[i] = pack2x16float(vec2<f32>(v.r, 0.0)) & 0xffffu;"},
    {CUBEC_IMAGE_FORMAT_RGBA8_UNORM, "rgba8unorm", 4, 1, "f32", "o[i] = pack4x8unorm(v);"},
    {CUBEC_IMAGE_FORMAT_RGBA16_SFLOAT, "rgba16float", 8, 2, "f32",
     "o[2u * i] = pack2x16float(v.xy); o[2u * i + 1u] = pack2x16float(v.zw);"},
    {CUBEC_IMAGE_FORMAT_R32_UINT, "r32uint", 4, 1, "u32", "o[i] = v.r;"},
    {CUBEC_IMAGE_FORMAT_RGBA32_UINT, "rgba32uint", 16, 4, "u32",
     "for (var k = 0u; k < 4u; k = k + 1u) { o[4u * i + k] = v[k]; }"},
};

static uint32_t depth_of(uint32_t depth)
{
    return depth > 1 ? depth : 1;
}

/* One invocation per column, each walking the column's texels of every slice: a few workgroups
 * whatever the image (llvmpipe allocates memory per workgroup, which ASan's quarantine keeps: a
 * workgroup per 4 x 4 x 4 texels took a 1023 x 8200 image's test to 5.9 GB there). */
static cubec_launch_desc launch_columns(cubec_kernel k, uint32_t w)
{
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.groups[0] = (w + 63) / 64;
    ld.groups[1] = ld.groups[2] = 1;
    return ld;
}

/* The walk: texel c (its coordinates) of index i at column id.x, row y, slice z; `body` in it. */
static const char *column_loop(uint32_t depth)
{
    return depth > 1 ? "    let size = textureDimensions(t);\n"
                       "    if (id.x >= size.x) { return; }\n"
                       "    for (var z = 0u; z < size.z; z = z + 1u) {\n"
                       "    for (var y = 0u; y < size.y; y = y + 1u) {\n"
                       "    let c = vec3<u32>(id.x, y, z);\n"
                       "    let i = (z * size.y + y) * size.x + id.x;\n"
                     : "    let size = vec3<u32>(textureDimensions(t), 1u);\n"
                       "    if (id.x >= size.x) { return; }\n"
                       "    for (var z = 0u; z < 1u; z = z + 1u) {\n"
                       "    for (var y = 0u; y < size.y; y = y + 1u) {\n"
                       "    let c = vec2<u32>(id.x, y);\n"
                       "    let i = y * size.x + id.x;\n";
}

/* Random texels; 16-bit floats finite and normal (exponent 1..30), so that they pass through a
 * kernel's f32 unchanged. */
static unsigned char *random_texels(const texel_format *tf, size_t bytes, uint32_t seed)
{
    unsigned char *b = random_bytes(bytes, seed);
    if (tf->format == CUBEC_IMAGE_FORMAT_R16_SFLOAT ||
        tf->format == CUBEC_IMAGE_FORMAT_RGBA16_SFLOAT)
        for (size_t i = 0; i + 1 < bytes; i += 2) {
            uint32_t e = 1u + test_rand(&seed) % 30u;
            b[i + 1] = (unsigned char)((b[i + 1] & 0x83u) | (e << 2));
        }
    return b;
}

/* A kernel that loads every texel of a `depth` image of `tf` into a buffer of words. */
static cubec_kernel make_dump(cubec_device *d, const texel_format *tf, uint32_t depth)
{
    char src[1024];
    snprintf(src, sizeof src,
             "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
             "@group(0) @binding(1) var t: texture_%s<%s>;\n"
             "@compute @workgroup_size(64)\n"
             "fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n"
             "%s"
             "    let v = textureLoad(t, c, 0);\n"
             "    %s\n"
             "    } }\n"
             "}\n",
             depth > 1 ? "3d" : "2d", tf->sample, column_loop(depth), tf->dump);
    return make_wgsl(d, "dump", src);
}

static void launch_dump(cubec_device *d, cubec_kernel k, cubec_image im, cubec_buffer o, uint32_t w)
{
    cubec_resource res = {.kind = CUBEC_RESOURCE_SAMPLED_TEXTURE, .binding = 1, .image = im};
    cubec_launch_desc ld = launch_columns(k, w);
    ld.buffers = &o;
    ld.buffer_count = 1;
    ld.resources = &res;
    ld.resource_count = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
}

/* What a dump into `o` loaded is the texels `in`, each at its coordinates (`what` says which). */
static void expect_dumped(cubec_device *d, const texel_format *tf, cubec_buffer o,
                          const unsigned char *in, uint32_t w, uint32_t h, uint32_t depth,
                          const char *what)
{
    size_t texels = (size_t)w * h * depth_of(depth);
    uint32_t *out = calloc(texels * tf->words, sizeof *out);
    assert_non_null(out);
    ASSERT_OK(cubec_read(d, 0, o, 0, out, texels * tf->words * 4));
    for (size_t i = 0; i < texels; i++)
        for (uint32_t k2 = 0; k2 < tf->words; k2++) {
            uint32_t want = 0, n = tf->bytes < 4 ? tf->bytes : 4;
            for (uint32_t b = 0; b < n; b++)
                want |= (uint32_t)in[i * tf->bytes + (size_t)k2 * 4 + b] << (8 * b);
            if (out[i * tf->words + k2] != want)
                fail_msg("%s %ux%ux%u %s: texel %zu word %u loads 0x%08x, wrote 0x%08x", tf->wgsl,
                         w, h, depth, what, i, k2, out[i * tf->words + k2], want);
        }
    free(out);
}

/* Writes random texels and checks, through a kernel that loads each into a buffer, that each
 * landed at its coordinates. */
static void expect_write(cubec_device *d, const texel_format *tf, uint32_t w, uint32_t h,
                         uint32_t depth)
{
    size_t texels = (size_t)w * h * depth_of(depth), bytes = texels * tf->bytes;
    unsigned char *in = random_texels(tf, bytes, w * 7u + h * 13u + tf->bytes);
    cubec_image im = make_image(d, tf->format, w, h, depth);
    ASSERT_OK(cubec_image_write(d, 0, im, in, bytes));
    cubec_kernel k = make_dump(d, tf, depth);
    cubec_buffer o;
    ASSERT_OK(cubec_buffer_create(d, 0, texels * tf->words * 4, &o));
    launch_dump(d, k, im, o, w);
    expect_dumped(d, tf, o, in, w, h, depth, "written");
    ASSERT_OK(cubec_buffer_release(d, o));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_image_release(d, im));
    free(in);
}

/* The value a kernel stores at texel `i` (x, y, z): a hash of the coordinates. */
static uint32_t texel_value(uint32_t x, uint32_t y, uint32_t z)
{
    return (x * 2654435761u) ^ (y * 40503u + 0x5bd1e995u) ^ (z * 97u);
}

/* A kernel that stores texel_value at every texel of a `depth` image of `tf`. Formats of 1, 4
 * and 16 bytes (those a WGSL kernel can store exactly on every device that has them). */
static cubec_kernel make_store(cubec_device *d, const texel_format *tf, uint32_t depth)
{
    const char *value = tf->format == CUBEC_IMAGE_FORMAT_R8_UNORM
                            ? "vec4<f32>(f32(u & 255u) / 255.0, 0.0, 0.0, 1.0)"
                        : tf->format == CUBEC_IMAGE_FORMAT_RGBA8_UNORM ? "unpack4x8unorm(u)"
                        : tf->format == CUBEC_IMAGE_FORMAT_R32_UINT    ? "vec4<u32>(u, 0u, 0u, 1u)"
                                                                    : "vec4<u32>(u, ~u, u * 3u, i)";
    char src[1024];
    snprintf(src, sizeof src,
             "@group(0) @binding(0) var t: texture_storage_%s<%s, write>;\n"
             "@compute @workgroup_size(64)\n"
             "fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n"
             "%s"
             "    let u = (id.x * 2654435761u) ^ (y * 40503u + 0x5bd1e995u) ^ (z * 97u);\n"
             "    textureStore(t, c, %s);\n"
             "    } }\n"
             "}\n",
             depth > 1 ? "3d" : "2d", tf->wgsl, column_loop(depth), value);
    return make_wgsl(d, "store", src);
}

static void launch_store(cubec_device *d, cubec_kernel k, cubec_image im, uint32_t w)
{
    cubec_resource res = {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .image = im};
    cubec_launch_desc ld = launch_columns(k, w);
    ld.resources = &res;
    ld.resource_count = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
}

/* Texels a kernel stores from their coordinates, read back and checked against the CPU. */
static void expect_read(cubec_device *d, const texel_format *tf, uint32_t w, uint32_t h,
                        uint32_t depth)
{
    size_t texels = (size_t)w * h * depth_of(depth), bytes = texels * tf->bytes;
    unsigned char *out = malloc(bytes);
    assert_non_null(out);
    cubec_image im = make_image(d, tf->format, w, h, depth);
    cubec_kernel k = make_store(d, tf, depth);
    launch_store(d, k, im, w);
    ASSERT_OK(cubec_image_read(d, 0, im, out, bytes));
    for (uint32_t z = 0, i = 0; z < depth_of(depth); z++)
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++, i++) {
                uint32_t u = texel_value(x, y, z);
                uint32_t want[4] = {u, ~u, u * 3u, i};
                const unsigned char *got = out + (size_t)i * tf->bytes;
                for (uint32_t b = 0; b < tf->bytes; b++) {
                    unsigned wb =
                        tf->bytes == 1 ? (u & 255u) : (want[b / 4] >> (8 * (b % 4))) & 255u;
                    if (got[b] != wb)
                        fail_msg("%s %ux%ux%u read: texel (%u, %u, %u) byte %u is %u, want %u",
                                 tf->wgsl, w, h, depth, x, y, z, b, got[b], wb);
                }
            }
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_image_release(d, im));
    free(out);
}

static const char *const copy_ways[] = {"kernel", "buffer-rows", "texture-rows"};

/* A device whose image copies go `way` (CUBEC_WEBGPU_IMAGE_COPIES is read when it opens). */
static cubec_device *open_copies(const char *way)
{
    assert_int_equal(setenv("CUBEC_WEBGPU_IMAGE_COPIES", way, 1), 0);
    cubec_device *d = open_webgpu();
    unsetenv("CUBEC_WEBGPU_IMAGE_COPIES");
    return d;
}

static void test_copies_every_way(void **state)
{
    (void)state;
    for (size_t wi = 0; wi < sizeof copy_ways / sizeof *copy_ways; wi++) {
        cubec_device *d = open_copies(copy_ways[wi]);
        if (!d) skip();
        printf("CUBEC_WEBGPU_IMAGE_COPIES=%s\n", copy_ways[wi]);
        /* Buffers kept alive between the cases, so that each case's staging bytes start at
         * another offset of a pooled page. */
        cubec_buffer fillers[16];
        uint32_t nf = 0;
        for (size_t f = 0; f < sizeof texel_formats / sizeof *texel_formats; f++) {
            const texel_format *tf = &texel_formats[f];
            /* Odd widths (rows not a multiple of 256, nor of 4 for 1 and 2 bytes), 256-byte
             * rows, and 3D. */
            static const uint32_t shapes[][3] = {{13, 5, 1}, {37, 21, 1}, {65, 3, 1}, {5, 4, 3}};
            for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++) {
                uint32_t w = shapes[sh][0], h = shapes[sh][1], depth = shapes[sh][2];
                expect_round_trip(d, tf->format, tf->bytes, w, h, depth);
                if (depth == 1 || !strcmp(tf->sample, "u32")) expect_write(d, tf, w, h, depth);
                if (tf->bytes != 2 && tf->bytes != 8) expect_read(d, tf, w, h, depth);
                if (nf < 16) {
                    ASSERT_OK(cubec_buffer_create(d, 0, 100u * (nf + 1) + 4, &fillers[nf]));
                    nf++;
                }
            }
            expect_round_trip(d, tf->format, tf->bytes, 256 / tf->bytes, 3, 1); /* one copy */
        }
        for (uint32_t i = 0; i < nf; i++)
            ASSERT_OK(cubec_buffer_release(d, fillers[i]));
        cubec_device_close(d);
    }
}

/* Images larger than one pass through the scratch buffer (32 MiB of aligned rows): whole slices
 * a pass (a 3D image), and rows of a slice a pass (a 2D image taller than a pass). */
static void test_copies_in_passes(void **state)
{
    (void)state;
    for (size_t wi = 0; wi < 2; wi++) {
        cubec_device *d = open_copies(copy_ways[wi]);
        if (!d) skip();
        const texel_format *r32 = &texel_formats[4], *rgba32 = &texel_formats[5];
        assert_int_equal(r32->format, CUBEC_IMAGE_FORMAT_R32_UINT);
        /* Slices of 700 rows of 16128 bytes aligned: two a pass, three passes. */
        expect_write(d, rgba32, 1000, 700, 5);
        expect_read(d, rgba32, 1000, 700, 5);
        /* Rows of 4096 bytes aligned, 8200 of them: 33.6 MB, two passes. */
        expect_write(d, r32, 1023, 8200, 1);
        expect_read(d, r32, 1023, 8200, 1);
        cubec_device_close(d);
    }
}

/* A way that is not one is refused by name when the device opens. */
static void test_copies_unknown_way(void **state)
{
    (void)state;
    assert_int_equal(setenv("CUBEC_WEBGPU_IMAGE_COPIES", "sideways", 1), 0);
    cubec_device_desc desc = CUBEC_DEVICE_DESC_INIT;
    desc.backend = "webgpu";
    cubec_device *d = NULL;
    cubec_status st = cubec_device_open(&desc, &d);
    unsetenv("CUBEC_WEBGPU_IMAGE_COPIES");
    if (st && cubec_status_code(st) == CUBEC_NOT_FOUND) {
        cubec_status_free(st);
        skip();
    }
    ASSERT_ERROR(st, CUBEC_INVALID_ARGUMENT,
                 "CUBEC_WEBGPU_IMAGE_COPIES: 'sideways' is not one of kernel, buffer-rows");
}

/* --- Writes straight into the texture (gpu_ops.image_write: wgpuQueueWriteTexture) -----------
 *
 * A program's image write is a queue write of the texture, with no staging buffer and no copy
 * task (server/images.c): ordered after the launches before it on the stream, and before those
 * after it. So without a sync in between, a launch before a write loads the old texels, one
 * after loads the new, and a write after a launch that stores into the image replaces what it
 * stored; and the writes record no task of their own (the staged path's copy was one), which the
 * task count tells. Every texel size, odd widths, 3D, and images of more than one of the
 * backend's write chunks (whole slices a write, and rows of one slice a write). */

/* One shape and format: writes and launches in turn, checked against the CPU. */
static void expect_ordered_writes(cubec_device *d, const texel_format *tf, uint32_t w, uint32_t h,
                                  uint32_t depth)
{
    size_t texels = (size_t)w * h * depth_of(depth), bytes = texels * tf->bytes;
    size_t dumped = texels * tf->words * 4;
    int storable = tf->bytes != 2 && tf->bytes != 8; /* make_store's formats */
    unsigned char *in[3];
    for (uint32_t i = 0; i < 3; i++)
        in[i] = random_texels(tf, bytes, w * 5u + h * 3u + depth + tf->bytes * 11u + i * 101u);
    cubec_image im = make_image(d, tf->format, w, h, depth);
    cubec_kernel dump = make_dump(d, tf, depth);
    cubec_kernel store = storable ? make_store(d, tf, depth) : (cubec_kernel){0};
    cubec_buffer o[3];
    for (uint32_t i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_create(d, 0, dumped, &o[i]));
    ASSERT_OK(cubec_sync(d, 0)); /* the image's creation recorded: only what follows counts */
    const uint64_t tasks = server_stats_get(d).tasks;
    uint64_t launches = 0;
    ASSERT_OK(cubec_image_write(d, 0, im, in[0], bytes));
    launch_dump(d, dump, im, o[0], w);
    launches++;
    ASSERT_OK(cubec_image_write(d, 0, im, in[1], bytes));
    launch_dump(d, dump, im, o[1], w);
    launches++;
    if (storable) {
        launch_store(d, store, im, w);
        ASSERT_OK(cubec_image_write(d, 0, im, in[2], bytes));
        launch_dump(d, dump, im, o[2], w);
        launches += 2;
    }
    ASSERT_OK(cubec_sync(d, 0));
    if (server_stats_get(d).tasks - tasks != launches)
        fail_msg("%s %ux%ux%u: %" PRIu64 " tasks recorded for %" PRIu64
                 " launches: the writes went through a staged copy",
                 tf->wgsl, w, h, depth, server_stats_get(d).tasks - tasks, launches);
    expect_dumped(d, tf, o[0], in[0], w, h, depth, "first write, then a launch");
    expect_dumped(d, tf, o[1], in[1], w, h, depth, "second write after that launch");
    if (storable) expect_dumped(d, tf, o[2], in[2], w, h, depth, "write after a store");
    for (uint32_t i = 0; i < 3; i++) {
        ASSERT_OK(cubec_buffer_release(d, o[i]));
        free(in[i]);
    }
    ASSERT_OK(cubec_kernel_destroy(d, dump));
    if (storable) ASSERT_OK(cubec_kernel_destroy(d, store));
    ASSERT_OK(cubec_image_release(d, im));
}

static void test_direct_writes_in_stream_order(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    for (size_t f = 0; f < sizeof texel_formats / sizeof *texel_formats; f++) {
        const texel_format *tf = &texel_formats[f];
        expect_ordered_writes(d, tf, 13, 5, 1);
        expect_ordered_writes(d, tf, 37, 21, 1);
        expect_ordered_writes(d, tf, 256 / tf->bytes, 3, 1);                   /* 256-byte rows */
        if (!strcmp(tf->sample, "u32")) expect_ordered_writes(d, tf, 5, 4, 3); /* 3D */
    }
    /* More than one of the backend's write chunks (8 MiB): 20 slices of 1.44 MB, five a write;
     * rows of one 9.2 MB slice, 998 a write. */
    expect_ordered_writes(d, &texel_formats[5], 300, 300, 20);
    expect_ordered_writes(d, &texel_formats[4], 2100, 1100, 1);
    cubec_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_read_round_trip),
        cmocka_unit_test(test_glsl_storage_images),
        cmocka_unit_test(test_wgsl_emboss),
        cmocka_unit_test(test_wgsl_read_write_3d),
        cmocka_unit_test(test_sampled_textures),
        cmocka_unit_test(test_refusals_by_name),
        cmocka_unit_test(test_copies_every_way),
        cmocka_unit_test(test_copies_in_passes),
        cmocka_unit_test(test_copies_unknown_way),
        cmocka_unit_test(test_direct_writes_in_stream_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
