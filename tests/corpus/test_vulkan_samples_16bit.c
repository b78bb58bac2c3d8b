/* The compute shaders of Khronos Vulkan-Samples' "16bit_arithmetic" sample run through cubec as
 * the sample runs them (issue 24, "Bring your own shaders"): the sources vendored unchanged in
 * tests/corpus/vulkan-samples-16bit, compute_buffer.comp (fp16 storage, fp32 arithmetic) and
 * compute_buffer_fp16.comp (fp16 arithmetic and 16-bit push constants), with the sample's host
 * code copied (samples/performance/16bit_arithmetic/16bit_arithmetic.cpp): its specialization
 * constants {0: Width, 1: Height}, its push-constant structs (push32, push16) and values, its
 * blob buffer of 4 x fp16 per blob at binding 0, its rgba16f storage image at binding 1 and its
 * grid {Width / 8, Height / 8, 1}. The image is 64 x 64 rather than the sample's 1024 x 1024
 * (the size is the specialization constants' to choose) so that lavapipe and the CPU reference
 * finish in moments; every texel is checked against the reference. */
#include "corpus_files.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WIDTH = 64, HEIGHT = 64, NUM_BLOBS = 16, RANGE_X = 2, RANGE_Y = 1 };

/* The sample's push constants, member for member. */
typedef struct push32 {
    uint32_t num_blobs;
    float fp32_seed;
    int32_t range_x, range_y;
} push32;
typedef struct push16 {
    uint16_t num_blobs;
    uint16_t fp16_seed;
    int16_t range_x, range_y;
} push16;

/* The sample's seed for a frame: 0.5 sin(2 pi frame / 512); frame 100 here. */
static float sample_seed(void)
{
    return 0.5f * sinf(2.0f * 3.14159265358979f * (100.0f / 512.0f));
}

/* float -> nearest half -> float: one fp16 rounding. */
static float h(float x)
{
    return corpus_half_to_float(corpus_float_to_half(x));
}

/* The blobs as the sample makes them (position ~ N(0, 0.1), intensity in [0.4, 0.8), falloff in
 * [50, 100)), from the tests' own generator rather than std::normal_distribution, packed to
 * halves as the sample packs them; `out` gets the halves' values. */
static void make_blobs(unsigned short packed[NUM_BLOBS * 4], float out[NUM_BLOBS * 4])
{
    uint32_t seed = 42;
    for (int i = 0; i < NUM_BLOBS; i++) {
        float v[4] = {0.1f * test_randf(&seed), 0.1f * test_randf(&seed),
                      0.6f + 0.2f * test_randf(&seed), 75.0f + 25.0f * test_randf(&seed)};
        for (int c = 0; c < 4; c++) {
            packed[i * 4 + c] = corpus_float_to_half(v[c]);
            out[i * 4 + c] = corpus_half_to_float(packed[i * 4 + c]);
        }
    }
}

/* compute_buffer.comp's compute_blob and main, in float as the shader computes them. */
static void blob32(const float pos[2], const float blob[4], float seed, float out[4])
{
    float off[2] = {pos[0] - blob[0], pos[1] - blob[1]};
    float s[2] = {off[0] * (1.1f + seed), off[1] * (1.1f + seed)};
    float r[2] = {off[0] * 0.95f, off[1] * 0.95f}, b[2] = {off[0] * 1.05f, off[1] * 1.05f};
    float dots[4] = {r[0] * r[0] + r[1] * r[1], off[0] * off[0] + off[1] * off[1],
                     b[0] * b[0] + b[1] * b[1], s[0] * s[0] + s[1] * s[1]};
    for (int c = 0; c < 4; c++) {
        dots[c] *= blob[3];
        for (int k = 0; k < 6; k++)
            dots[c] = dots[c] * dots[c] + dots[c];
    }
    const float top[4] = {1.0f, 1.0f, 1.0f, 0.9f};
    float p[4];
    for (int c = 0; c < 4; c++)
        p[c] = fmaxf(top[c] - dots[c], 0.0f);
    float pw = p[3];
    for (int c = 0; c < 4; c++)
        out[c] = fmaxf(p[c] - pw, 0.0f);
}

static void texel32(uint32_t gx, uint32_t gy, const float *blobs, float seed, float out[4])
{
    float pos[2] = {(float)gx / (float)WIDTH - 0.5f, (float)gy / (float)HEIGHT - 0.5f};
    float stride = seed * 0.3f;
    out[0] = out[1] = out[2] = out[3] = 0;
    for (int i = 0; i < NUM_BLOBS; i++)
        for (int y = -RANGE_Y; y <= RANGE_Y; y++)
            for (int x = -RANGE_X; x <= RANGE_X; x++) {
                float p[2] = {pos[0] + stride * (float)x, pos[1] + stride * (float)y}, c[4];
                blob32(p, blobs + 4 * i, seed, c);
                for (int k = 0; k < 4; k++)
                    out[k] += c[k];
            }
}

/* Runs `file` with the sample's bindings and grid; returns the image's texels as floats. */
static float *run_sample(cubec_device *d, const char *file, const void *pc, uint32_t pc_size,
                         const unsigned short *packed)
{
    char relative[256], path[1024];
    snprintf(relative, sizeof relative, "vulkan-samples-16bit/%s", file);
    corpus_path(path, sizeof path, relative);
    char *glsl = corpus_read_text(relative);
    const cubec_spec_constant spec[2] = {{0, WIDTH}, {1, HEIGHT}};
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = file;
    kd.glsl = glsl;
    kd.glsl_path = path;
    kd.spec_constants = spec;
    kd.spec_constant_count = 2;
    cubec_kernel k;
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    free(glsl);

    cubec_buffer blob_buffer;
    ASSERT_OK(cubec_buffer_from(d, 0, packed, NUM_BLOBS * 4 * sizeof *packed, &blob_buffer));
    cubec_image_desc id = CUBEC_IMAGE_DESC_INIT;
    id.format = CUBEC_IMAGE_FORMAT_RGBA16_SFLOAT;
    id.width = WIDTH;
    id.height = HEIGHT;
    cubec_image image;
    ASSERT_OK(cubec_image_create(d, 0, &id, &image));
    cubec_resource res = {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .binding = 1, .image = image};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = &blob_buffer;
    ld.buffer_count = 1;
    ld.resources = &res;
    ld.resource_count = 1;
    ld.info = pc;
    ld.info_size = pc_size;
    ld.groups[0] = WIDTH / 8;
    ld.groups[1] = HEIGHT / 8;
    ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));

    unsigned short *texels = malloc(WIDTH * HEIGHT * 4 * sizeof *texels);
    float *out = malloc(WIDTH * HEIGHT * 4 * sizeof *out);
    assert_true(texels && out);
    ASSERT_OK(cubec_image_read(d, 0, image, texels, WIDTH * HEIGHT * 4 * sizeof *texels));
    for (int i = 0; i < WIDTH * HEIGHT * 4; i++)
        out[i] = corpus_half_to_float(texels[i]);
    free(texels);
    ASSERT_OK(cubec_image_release(d, image));
    ASSERT_OK(cubec_buffer_release(d, blob_buffer));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    return out;
}

/* Compares the image with the fp32 reference texel by texel (within `abs_tol` + `rel` of the
 * value) and on average (the mean difference at most `mean_tol`); `lit` counts the values the
 * blobs light, so that an image of zeros cannot pass against a dark reference. */
static void check_image(const char *what, const float *got, const float *blobs, float seed,
                        double rel, double abs_tol, double mean_tol)
{
    int lit = 0;
    double sum = 0;
    for (uint32_t y = 0; y < HEIGHT; y++)
        for (uint32_t x = 0; x < WIDTH; x++) {
            float want[4];
            texel32(x, y, blobs, seed, want);
            for (int c = 0; c < 4; c++) {
                double g = got[(y * WIDTH + x) * 4 + c], w = h(want[c]);
                if (fabs(g - w) > rel * fabs(w) + abs_tol)
                    fail_msg("%s texel (%u, %u) channel %d: %g, expected %g", what, x, y, c, g, w);
                sum += fabs(g - w);
                lit += w > 0.05;
            }
        }
    if (sum / (WIDTH * HEIGHT * 4) > mean_tol)
        fail_msg("%s: mean difference %g from the reference, more than %g", what,
                 sum / (WIDTH * HEIGHT * 4), mean_tol);
    assert_true(lit > WIDTH * HEIGHT / 16);
}

static void test_compute_buffer_fp32_arithmetic(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    unsigned short packed[NUM_BLOBS * 4];
    float blobs[NUM_BLOBS * 4];
    make_blobs(packed, blobs);
    const push32 pc = {NUM_BLOBS, sample_seed(), RANGE_X, RANGE_Y};
    float *got = run_sample(d, "compute_buffer.comp", &pc, sizeof pc, packed);
    /* fp32 arithmetic, stored as halves: the store rounds to 11 bits. */
    check_image("compute_buffer.comp", got, blobs, pc.fp32_seed, 2e-3, 1e-3, 1e-3);
    free(got);
    test_device_close(d);
}

/* The sample's fp16 path runs where the device has fp16 arithmetic and 16-bit push constants
 * (khr_16bit_arith_enabled && supports_push_constant16); it uses its fallback shader
 * otherwise, not vendored here. */
static void test_compute_buffer_fp16_arithmetic(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    const uint32_t need = CUBEC_FEATURE_FLOAT16 | CUBEC_FEATURE_STORAGE_BUFFER_16BIT |
                          CUBEC_FEATURE_PUSH_CONSTANT_16BIT;
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if ((info.features & need) != need) {
        print_message("skipped: the device lacks fp16 arithmetic or 16-bit push constants\n");
        test_device_close(d);
        return;
    }
    unsigned short packed[NUM_BLOBS * 4];
    float blobs[NUM_BLOBS * 4];
    make_blobs(packed, blobs);
    const push16 pc = {NUM_BLOBS, corpus_float_to_half(sample_seed()), RANGE_X, RANGE_Y};
    float *got = run_sample(d, "compute_buffer_fp16.comp", &pc, sizeof pc, packed);
    /* fp16 arithmetic approximates the fp32 result: each of the 16 x 15 blob evaluations per
     * texel rounds its offsets to 11 bits, six squarings amplify that about fourfold near the
     * lit edge, and the sum of 240 terms rounds at each step (0.002 at 2.0). On lavapipe the
     * largest difference is 0.078 and the mean 0.0034, for a mean value of 0.63; a reference
     * that rounds every operation to a half is no closer (a driver may keep an intermediate in
     * fp32 or fuse a multiply-add), so the check is the fp32 arithmetic on the same halves. */
    check_image("compute_buffer_fp16.comp", got, blobs, corpus_half_to_float(pc.fp16_seed), 0.05,
                0.15, 0.01);
    free(got);
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compute_buffer_fp32_arithmetic),
        cmocka_unit_test(test_compute_buffer_fp16_arithmetic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
