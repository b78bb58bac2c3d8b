/* Real projects' image compute shaders run as their projects wrote them (issue 24, "Bring your own
 * shaders"): the vendored sources in tests/corpus/sascha-vulkan (Sascha Willems' emboss, sharpen
 * and edge detection filters) and tests/corpus/vulkan-samples (Khronos' game of life), read from
 * their files unchanged, created through cubec's GLSL compiler, bound at the sets and bindings the
 * files declare and dispatched as the projects dispatch them; every texel is compared with a CPU
 * reference of the same formula computed here. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CUBEC_CORPUS_DIR
#error "CUBEC_CORPUS_DIR must name tests/corpus (tests/CMakeLists.txt)"
#endif

/* The whole file at CUBEC_CORPUS_DIR/<rel>, NUL-terminated; its path in `path`. */
static char *read_source(const char *rel, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", CUBEC_CORPUS_DIR, rel);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* The kernel of the vendored file `rel`, as written: the file's text with its path. */
static cubec_kernel project_kernel(cubec_device *d, const char *rel)
{
    char path[1024];
    char *src = read_source(rel, path, sizeof path);
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = rel;
    kd.glsl = src;
    kd.glsl_path = path;
    cubec_kernel k;
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    free(src);
    return k;
}

static cubec_image rgba8_image(cubec_device *d, uint32_t w, uint32_t h)
{
    cubec_image_desc id = CUBEC_IMAGE_DESC_INIT;
    id.format = CUBEC_IMAGE_FORMAT_RGBA8_UNORM;
    id.width = w;
    id.height = h;
    cubec_image im;
    ASSERT_OK(cubec_image_create(d, 0, &id, &im));
    return im;
}

/* A float in [0, 1] stored to an rgba8 (unorm) texel: round to nearest. */
static int unorm8(float v)
{
    v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    return (int)lrintf(v * 255.0f);
}

/* An rgba8 byte compared with the reference's float. The device converts the shader's float to
 * unorm with its own rounding (Vulkan allows a conversion within 0.6 ULP of the unorm value) and
 * does its float arithmetic in its own order; either moves a value that lies near a rounding
 * boundary by one step, so one LSB is allowed, never more. */
static void expect_unorm8(int got, float want, const char *what, int x, int y, int c)
{
    if (abs(got - unorm8(want)) > 1)
        fail_msg("%s texel (%d, %d) channel %d: %d, want %d (%f)", what, x, y, c, got, unorm8(want),
                 (double)want);
}

/* ---- Sascha Willems' filters (tests/corpus/sascha-vulkan) -------------------------------- */

/* One filter as its file computes it: the 3x3 neighbourhood in the order of its loops (n counts
 * x - 1..x + 1 outside, y - 1..y + 1 inside), `conv` with its kernel, denominator and offset,
 * on the average of r, g and b (emboss, edge detection) or on each channel (sharpen). */
typedef struct filter {
    const char *file;
    float kernel[9];
    float denom, offset;
    int per_channel;
} filter;

static const filter filters[] = {
    {"sascha-vulkan/emboss.comp", {-1, 0, 0, 0, -1, 0, 0, 0, 2}, 1.0f, 0.5f, 0},
    {"sascha-vulkan/sharpen.comp", {-1, -1, -1, -1, 9, -1, -1, -1, -1}, 1.0f, 0.0f, 1},
    {"sascha-vulkan/edgedetect.comp",
     {-1.0f / 8, -1.0f / 8, -1.0f / 8, -1.0f / 8, 1.0f, -1.0f / 8, -1.0f / 8, -1.0f / 8, -1.0f / 8},
     0.1f,
     0.0f,
     0},
};

/* The file's conv(): the sum in its order, divided, offset and clamped to [0, 1]. */
static float conv(const float *kernel, const float *data, float denom, float offset)
{
    float res = 0.0f;
    for (int i = 0; i < 9; i++)
        res += kernel[i] * data[i];
    res = res / denom + offset;
    return res < 0.0f ? 0.0f : res > 1.0f ? 1.0f : res;
}

/* Each filter on a random 48 x 32 image, bound as the example binds it (the input at binding 0,
 * the output at binding 1, both rgba8 storage images) and dispatched as it dispatches it (width /
 * 16 x height / 16: the example's texture is a multiple of 16, and the shader has no bounds
 * check). The border texels read one texel outside the image: without robustImageAccess (which
 * cubec does not enable) Vulkan leaves that value undefined, so there only alpha (always 1.0) is
 * checked; every other texel is compared with the reference. */
static void test_sascha_filters(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    enum { W = 48, H = 32 };
    size_t bytes = (size_t)W * H * 4;
    unsigned char *in = malloc(bytes), *out = malloc(bytes);
    uint32_t seed = 24;
    for (size_t i = 0; i < bytes; i++)
        in[i] = (unsigned char)(test_rand(&seed) >> 24);
    cubec_image src = rgba8_image(d, W, H), dst = rgba8_image(d, W, H);
    ASSERT_OK(cubec_image_write(d, 0, src, in, bytes));
    for (size_t f = 0; f < sizeof filters / sizeof filters[0]; f++) {
        const filter *fl = &filters[f];
        cubec_kernel k = project_kernel(d, fl->file);
        cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
        ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
        assert_int_equal(ki.workgroup_size[0], 16);
        assert_int_equal(ki.workgroup_size[1], 16);
        cubec_resource res[2] = {
            {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .set = 0, .binding = 0, .image = src},
            {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .set = 0, .binding = 1, .image = dst},
        };
        cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
        ld.kernel = k;
        ld.resources = res;
        ld.resource_count = 2;
        ld.groups[0] = W / 16;
        ld.groups[1] = H / 16;
        ld.groups[2] = 1;
        ASSERT_OK(cubec_launch(d, 0, &ld));
        ASSERT_OK(cubec_image_read(d, 0, dst, out, bytes));
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                const unsigned char *o = out + ((size_t)y * W + x) * 4;
                if (o[3] != 255) fail_msg("%s texel (%d, %d) alpha %d", fl->file, x, y, o[3]);
                if (x == 0 || y == 0 || x == W - 1 || y == H - 1) continue;
                float data[4][9];
                int n = 0;
                for (int i = -1; i < 2; i++)
                    for (int j = -1; j < 2; j++, n++) {
                        const unsigned char *t = in + ((size_t)(y + j) * W + (x + i)) * 4;
                        float r = t[0] / 255.0f, g = t[1] / 255.0f, b = t[2] / 255.0f;
                        data[0][n] = r;
                        data[1][n] = g;
                        data[2][n] = b;
                        data[3][n] = (r + g + b) / 3.0f;
                    }
                for (int c = 0; c < 3; c++) {
                    float want =
                        conv(fl->kernel, data[fl->per_channel ? c : 3], fl->denom, fl->offset);
                    expect_unorm8(o[c], want, fl->file, x, y, c);
                }
            }
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    ASSERT_OK(cubec_image_release(d, src));
    ASSERT_OK(cubec_image_release(d, dst));
    free(in);
    free(out);
    test_device_close(d);
}

/* ---- Khronos Vulkan-Samples' game of life (tests/corpus/vulkan-samples) ------------------- */

enum { GW = 64, GH = 64 }; /* the sample's grid_width and grid_height */

/* game_of_life_init.comp: the pattern it writes at (x, y). */
static int init_alive(int x, int y)
{
    int mx = (x & 16) ? 7 : 3, my = (y & 16) ? 7 : 3;
    int wx = x & mx, wy = y & my;
    return (wx == 1 && wy == 0) || (wx == 2 && wy == 1) || (wx == 0 && wy == 2) ||
           (wx == 1 && wy == 2) || (wx == 2 && wy == 2);
}

/* The texel a nearest sample at (x, y) reads. cubec's samplers clamp to the edge; the sample's
 * own sampler repeats (VK_SAMPLER_ADDRESS_MODE_REPEAT), which cubec_resource cannot ask for, so
 * the cells of the outer rows and columns see their edge neighbours again instead of the far
 * side's (docs/kernels.md, "Bringing existing shaders"). */
static const unsigned char *cell(const unsigned char *grid, int x, int y)
{
    x = x < 0 ? 0 : x >= GW ? GW - 1 : x;
    y = y < 0 ? 0 : y >= GH ? GH - 1 : y;
    return grid + ((size_t)y * GW + x) * 4;
}

static int rgb_nonzero(const unsigned char *t)
{
    return t[0] || t[1] || t[2];
}

/* game_of_life_update.comp at (x, y) of `prev`, in its float arithmetic and order: rgb of the
 * new cell (its alpha is 0). */
static void update_cell(const unsigned char *prev, int x, int y, float out[3])
{
    float u = ((float)x + 0.5f) / (float)GW, v = ((float)y + 0.5f) / (float)GH;
    const unsigned char *self = cell(prev, x, y);
    int alive = rgb_nonzero(self), neighbors = 0;
    float total[3];
    for (int c = 0; c < 3; c++)
        total[c] = self[c] / 255.0f;
    static const int off[8][2] = {{-1, -1}, {0, -1}, {1, -1}, {-1, 0},
                                  {1, 0},   {-1, 1}, {0, 1},  {1, 1}};
    for (int i = 0; i < 8; i++) {
        const unsigned char *t = cell(prev, x + off[i][0], y + off[i][1]);
        if (rgb_nonzero(t)) {
            neighbors++;
            for (int c = 0; c < 3; c++)
                total[c] += t[c] / 255.0f;
        }
    }
    if (alive) {
        alive = neighbors == 2 || neighbors == 3;
        for (int c = 0; c < 3; c++)
            out[c] = alive ? total[c] / (float)neighbors : 0.0f;
    } else if (neighbors == 3) {
        out[0] = u;
        out[1] = v;
        out[2] = 1.0f - u - v;
    } else {
        out[0] = out[1] = out[2] = 0.0f;
    }
}

/* One launch of a game-of-life kernel as the sample binds it: the output storage image at set 0
 * binding 0 and, for update and mutate, the previous generation as a combined image sampler at
 * set 1 binding 0 (nearest); the grid in 8 x 8 workgroups. */
static void life_launch(cubec_device *d, cubec_kernel k, cubec_image out, const cubec_image *prev,
                        const float *counter)
{
    cubec_resource res[2] = {
        {.kind = CUBEC_RESOURCE_STORAGE_IMAGE, .set = 0, .binding = 0, .image = out},
        {.kind = CUBEC_RESOURCE_SAMPLED_IMAGE, .set = 1, .binding = 0, .filter = 0},
    };
    if (prev) res[1].image = *prev;
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.resources = res;
    ld.resource_count = prev ? 2 : 1;
    if (counter) { /* the mutate pipeline's push constant: `float counter`, sizeof(float) */
        ld.info = counter;
        ld.info_size = sizeof *counter;
    }
    ld.groups[0] = GW / 8;
    ld.groups[1] = GH / 8;
    ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
}

/* The sample's compute work: init writes the first generation (checked exactly: every value is
 * 0.0 or 1.0); update runs four generations, ping-ponging between two images as the sample's
 * frames do, each checked against the rule applied to the generation the device produced before
 * it (so that a one-LSB difference cannot grow into a different pattern); mutate ages the living
 * cells with the push constant and is checked the same way. The generations must stay alive:
 * the check would prove little on an empty grid. */
static void test_game_of_life(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    size_t bytes = (size_t)GW * GH * 4;
    unsigned char *cur = malloc(bytes), *next = malloc(bytes);
    cubec_kernel init = project_kernel(d, "vulkan-samples/game_of_life_init.comp");
    cubec_kernel update = project_kernel(d, "vulkan-samples/game_of_life_update.comp");
    cubec_kernel mutate = project_kernel(d, "vulkan-samples/game_of_life_mutate.comp");
    cubec_image img[2] = {rgba8_image(d, GW, GH), rgba8_image(d, GW, GH)};

    life_launch(d, init, img[0], NULL, NULL);
    ASSERT_OK(cubec_image_read(d, 0, img[0], cur, bytes));
    int alive = 0;
    for (int y = 0; y < GH; y++)
        for (int x = 0; x < GW; x++) {
            const unsigned char *t = cur + ((size_t)y * GW + x) * 4;
            unsigned want = init_alive(x, y) ? 255u : 0u;
            alive += init_alive(x, y);
            if (t[0] != want || t[1] != want || t[2] != want || t[3] != 0)
                fail_msg("init texel (%d, %d): %u %u %u %u, want %u %u %u 0", x, y, t[0], t[1],
                         t[2], t[3], want, want, want);
        }
    assert_true(alive > GW * GH / 8);

    int from = 0;
    for (int gen = 1; gen <= 4; gen++, from ^= 1) {
        life_launch(d, update, img[from ^ 1], &img[from], NULL);
        ASSERT_OK(cubec_image_read(d, 0, img[from ^ 1], next, bytes));
        alive = 0;
        for (int y = 0; y < GH; y++)
            for (int x = 0; x < GW; x++) {
                float want[3];
                update_cell(cur, x, y, want);
                const unsigned char *t = next + ((size_t)y * GW + x) * 4;
                for (int c = 0; c < 3; c++)
                    expect_unorm8(t[c], want[c], "update", x, y, c);
                if (t[3] != 0) fail_msg("update texel (%d, %d) alpha %u", x, y, t[3]);
                alive += rgb_nonzero(t);
            }
        if (alive < 64) fail_msg("generation %d has %d living cells", gen, alive);
        memcpy(cur, next, bytes);
    }

    const float counter = 0.6f;
    life_launch(d, mutate, img[from ^ 1], &img[from], &counter);
    ASSERT_OK(cubec_image_read(d, 0, img[from ^ 1], next, bytes));
    for (size_t i = 0; i < (size_t)GW * GH; i++) {
        const unsigned char *p = cur + i * 4, *t = next + i * 4;
        int x = (int)(i % GW), y = (int)(i / GW);
        /* texelFetch returns the texel; the store converts it back to the same byte. */
        for (int c = 0; c < 3; c++)
            expect_unorm8(t[c], p[c] / 255.0f, "mutate", x, y, c);
        float a = p[3] / 255.0f;
        expect_unorm8(t[3], rgb_nonzero(p) ? (a > counter ? a : counter) : 0.0f, "mutate", x, y, 3);
    }

    ASSERT_OK(cubec_image_release(d, img[0]));
    ASSERT_OK(cubec_image_release(d, img[1]));
    ASSERT_OK(cubec_kernel_destroy(d, init));
    ASSERT_OK(cubec_kernel_destroy(d, update));
    ASSERT_OK(cubec_kernel_destroy(d, mutate));
    free(cur);
    free(next);
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sascha_filters),
        cmocka_unit_test(test_game_of_life),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
