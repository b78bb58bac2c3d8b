/* The cooperative-matrix matrix multiply of examples/gemm_f16_kernel.h (issue 14, outcome 7): on
 * a device with cooperative_matrix_nv, C = A * B at 256 x 256 x 384 for each tiling the example
 * offers (one and two shared stages, shapes 16x8x16 and 16x16x16) equals the CPU's exact sums; on
 * a device without (lavapipe) the kernel is refused with CUBEC_UNSUPPORTED naming the capability
 * and the feature, the device keeps working, and nothing reaches the validation layer. */
#include "test_util.h"

#include "gemm_f16_kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { M = 256, N = 256, K = 384 };

/* float16 bits of v / 8 for v in -16..16, exact (frexp gives the exponent). */
static uint16_t eighths(int v)
{
    if (v == 0) return 0;
    int e;
    double m = frexp(fabs(v / 8.0), &e); /* |x| = m * 2^e, m in [0.5, 1) */
    uint16_t mantissa = (uint16_t)((m * 2.0 - 1.0) * 1024.0);
    return (uint16_t)((v < 0 ? 0x8000u : 0) | (unsigned)(e - 1 + 15) << 10 | mantissa);
}

static double value(uint16_t h)
{
    if (h == 0) return 0.0;
    double v = ldexp(1.0 + (h & 0x3ff) / 1024.0, ((h >> 10) & 0x1f) - 15);
    return h & 0x8000u ? -v : v;
}

static cubec_status create(cubec_device *d, const cubec_device_info *info,
                           const gemm_f16_config *cfg, cubec_kernel *k)
{
    cubec_matrix_shape shape;
    gemm_f16_pick_shape(info, cfg->shape_n, &shape);
    gemm_f16_defines defines;
    gemm_f16_make_defines(&defines, &shape, cfg, info->subgroup_size ? info->subgroup_size : 32);
    static char source[GEMM_F16_SOURCE_SIZE];
    const cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc),
                                  .name = "gemm_f16",
                                  .glsl = gemm_f16_source(source, sizeof source),
                                  .defines = defines.list,
                                  .define_count = 10};
    return cubec_kernel_create(d, &kd, k);
}

static void run_and_check(cubec_device *d, const cubec_device_info *info,
                          const gemm_f16_config *cfg)
{
    cubec_matrix_shape shape;
    assert_true(gemm_f16_pick_shape(info, cfg->shape_n, &shape));
    assert_null(gemm_f16_check_config(cfg, &shape, info->subgroup_size));
    assert_null(gemm_f16_check_shape(cfg, M, N, K));
    cubec_kernel k;
    ASSERT_OK(create(d, info, cfg, &k));
    uint16_t *a = malloc(sizeof(uint16_t) * M * K), *b = malloc(sizeof(uint16_t) * K * N);
    float *c = malloc(sizeof(float) * M * N);
    assert_true(a && b && c);
    uint32_t seed = 99;
    for (int i = 0; i < M * K; i++)
        a[i] = eighths((int)(test_rand(&seed) % 33) - 16);
    for (int i = 0; i < K * N; i++)
        b[i] = eighths((int)(test_rand(&seed) % 33) - 16);
    cubec_buffer bufs[3];
    ASSERT_OK(cubec_buffer_from(d, 0, a, sizeof(uint16_t) * M * K, &bufs[0]));
    ASSERT_OK(cubec_buffer_from(d, 0, b, sizeof(uint16_t) * K * N, &bufs[1]));
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof(float) * M * N, &bufs[2]));
    const uint32_t dims[3] = {M, N, K};
    const cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                                  .kernel = k,
                                  .buffers = bufs,
                                  .buffer_count = 3,
                                  .info = dims,
                                  .info_size = sizeof dims,
                                  .groups = {N / cfg->tile_n, M / cfg->tile_m, 1}};
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, bufs[2], 0, c, sizeof(float) * M * N));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0;
            for (int p = 0; p < K; p++)
                want += value(a[i * K + p]) * value(b[p * N + j]);
            if ((double)c[i * N + j] != want)
                fail_msg("tiling %ux%ux%u stages %u shape n %u: C[%d][%d] = %g, the CPU says %g",
                         cfg->tile_m, cfg->tile_n, cfg->tile_k, cfg->stages, cfg->shape_n, i, j,
                         c[i * N + j], want);
        }
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    free(a);
    free(b);
    free(c);
}

static void test_gemm(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    const gemm_f16_config configs[] = {
        GEMM_F16_DEFAULT,
        {128, 128, 32, 2, 4, 2, 16},
        {128, 128, 32, 2, 2, 2, 8},
    };
    if (!(info.features & CUBEC_FEATURE_COOPERATIVE_MATRIX_NV)) {
        char want[512];
        snprintf(want, sizeof want,
                 "kernel 'gemm_f16' needs SPIR-V capability CooperativeMatrixNV, which needs the "
                 "device feature cooperative_matrix_nv (Vulkan VK_NV_cooperative_matrix "
                 "cooperativeMatrix): device '%s' lacks it",
                 info.name);
        for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
            cubec_kernel k = {0};
            ASSERT_ERROR(create(d, &info, &configs[i], &k), CUBEC_UNSUPPORTED, want);
            assert_int_equal(k.id, 0);
        }
        /* The refusal changed nothing: a plain kernel still runs. */
        static const char plus_one[] = "#version 450\n"
                                       "layout(local_size_x = 64) in;\n"
                                       "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                                       "void main() { a[gl_GlobalInvocationID.x] += 1u; }\n";
        uint32_t v[64] = {0};
        cubec_buffer b;
        ASSERT_OK(cubec_buffer_from(d, 0, v, sizeof v, &b));
        cubec_kernel k;
        ASSERT_OK(cubec_kernel_create(d,
                                      &(cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc),
                                                           .name = "p",
                                                           .glsl = plus_one},
                                      &k));
        ASSERT_OK(cubec_launch(d, 0,
                               &(cubec_launch_desc){.struct_size = sizeof(cubec_launch_desc),
                                                    .kernel = k,
                                                    .buffers = &b,
                                                    .buffer_count = 1,
                                                    .groups = {1, 1, 1}}));
        ASSERT_OK(cubec_read(d, 0, b, 0, v, sizeof v));
        for (int i = 0; i < 64; i++)
            assert_int_equal(v[i], 1);
        ASSERT_OK(cubec_kernel_destroy(d, k));
        ASSERT_OK(cubec_buffer_release(d, b));
    } else {
        for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
            run_and_check(d, &info, &configs[i]);
    }
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gemm)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
