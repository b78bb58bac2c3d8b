/* gemm_f16: a matrix multiply on the GPU's matrix units with cooperative matrices.
 *
 *     C (M x N, float32) = A (M x K, float16) * B (K x N, float16)
 *
 * What this example adds over mlp:
 *  - asking the device what it can do before choosing a kernel: cubec_device_info.features says
 *    whether cooperative matrices are enabled, and matrix_shapes lists the M x N x K pieces a
 *    subgroup can multiply at once (cubec info prints them);
 *  - a kernel built for that shape with defines (examples/gemm_f16_kernel.h explains the
 *    tiling), float16 data in buffers of uvec4 for 16-byte loads;
 *  - what happens on a device without them: cubec_kernel_create refuses the kernel with
 *    CUBEC_UNSUPPORTED naming the SPIR-V capability (CooperativeMatrixNV) and the device feature,
 *    which the program prints: on lavapipe that is the expected outcome, and the program checks
 *    that it is that refusal and not another error;
 *  - timing with a profile, reported in TFLOP/s (2 * M * N * K floating-point operations).
 *
 * The inputs are multiples of 1/8 in [-2, 2], exact in float16; every product is then a multiple
 * of 1/64 and every partial sum of up to 2^14 of them is exact in float32, so the GPU's result
 * must equal the CPU's whatever order it adds in. Up to M * N * K = 2^30 every element is checked,
 * above that 4096 elements spread over C.
 *
 *     example_gemm_f16 [M N K [REPS [TILE_M TILE_N TILE_K WG_ROWS WG_COLS [STAGES [SHAPE_N]]]]]
 *
 * (default 512 512 512 3 128 256 32 2 4 1 8: try other tilings there). */
#include "gemm_f16_kernel.h"

#include <cubec/cubec.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* float16 bits of a float that float16 represents exactly (the inputs here: multiples of 1/8
 * with |x| <= 2), and back. */
static uint16_t to_half(float x)
{
    if (x == 0.0f) return 0;
    uint16_t sign = x < 0 ? 0x8000u : 0;
    int e;
    float m = frexpf(fabsf(x), &e); /* |x| = m * 2^e, m in [0.5, 1) */
    uint16_t exponent = (uint16_t)(e - 1 + 15);
    uint16_t mantissa = (uint16_t)((m * 2.0f - 1.0f) * 1024.0f);
    return (uint16_t)(sign | exponent << 10 | mantissa);
}

static float from_half(uint16_t h)
{
    int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    float v = exponent ? ldexpf(1.0f + (float)mantissa / 1024.0f, exponent - 15)
                       : ldexpf((float)mantissa / 1024.0f, -14);
    return h & 0x8000u ? -v : v;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* C[i][j] from the float16 inputs, in double (exact here). */
static double reference(const uint16_t *a, const uint16_t *b, uint32_t n, uint32_t k, uint32_t i,
                        uint32_t j)
{
    double sum = 0;
    for (uint32_t p = 0; p < k; p++)
        sum += (double)from_half(a[(size_t)i * k + p]) * (double)from_half(b[(size_t)p * n + j]);
    return sum;
}

/* Every element, or 4096 spread over C; the number of mismatches. */
static uint64_t check(const uint16_t *a, const uint16_t *b, const float *c, uint32_t m, uint32_t n,
                      uint32_t k)
{
    uint64_t bad = 0, total = (uint64_t)m * n;
    int all = total * k <= (1ull << 30);
    uint64_t count = all ? total : 4096;
    for (uint64_t s = 0; s < count; s++) {
        uint64_t e = all ? s : (s * 2654435761u) % total;
        uint32_t i = (uint32_t)(e / n), j = (uint32_t)(e % n);
        double want = reference(a, b, n, k, i, j);
        if ((double)c[e] != want) {
            if (bad < 5)
                fprintf(stderr, "gemm_f16: C[%u][%u] = %.6f, the CPU says %.6f\n", i, j, c[e],
                        want);
            bad++;
        }
    }
    return bad;
}

int main(int argc, char **argv)
{
    uint32_t m = 512, n = 512, k = 512, reps = 3;
    if (argc >= 4) {
        m = (uint32_t)strtoul(argv[1], NULL, 10);
        n = (uint32_t)strtoul(argv[2], NULL, 10);
        k = (uint32_t)strtoul(argv[3], NULL, 10);
    }
    if (argc >= 5) reps = (uint32_t)strtoul(argv[4], NULL, 10);
    gemm_f16_config cfg = GEMM_F16_DEFAULT;
    if (argc >= 10) {
        cfg.tile_m = (unsigned)strtoul(argv[5], NULL, 10);
        cfg.tile_n = (unsigned)strtoul(argv[6], NULL, 10);
        cfg.tile_k = (unsigned)strtoul(argv[7], NULL, 10);
        cfg.wg_rows = (unsigned)strtoul(argv[8], NULL, 10);
        cfg.wg_cols = (unsigned)strtoul(argv[9], NULL, 10);
    }
    if (argc >= 11) cfg.stages = (unsigned)strtoul(argv[10], NULL, 10);
    if (argc >= 12) cfg.shape_n = (unsigned)strtoul(argv[11], NULL, 10);
    const char *bad_shape = gemm_f16_check_shape(&cfg, m, n, k);
    if (bad_shape || reps == 0 || k > 16384) {
        fprintf(stderr,
                "gemm_f16: %u x %u x %u, %u repetitions: %s (tiles are %u x %u x %u; K at most "
                "16384 keeps the check exact; REPS at least 1)\n",
                m, n, k, reps, bad_shape ? bad_shape : "out of range", cfg.tile_m, cfg.tile_n,
                cfg.tile_k);
        return 2;
    }

    cubec_device *device = NULL;
    CUBEC_CHECK(cubec_device_open(NULL, &device));
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    CUBEC_CHECK(cubec_device_get_info(device, &info));
    cubec_matrix_shape shape;
    int has_shape = gemm_f16_pick_shape(&info, cfg.shape_n, &shape);
    printf("device: %s; cooperative matrices: %s, shape %ux%ux%u\n", info.name,
           has_shape ? "yes" : "none of float16 * float16 + float32", shape.m, shape.n, shape.k);

    const char *bad_config = gemm_f16_check_config(&cfg, &shape, info.subgroup_size);
    if (has_shape && bad_config) {
        fprintf(stderr, "gemm_f16: tiling %u x %u x %u over %u x %u subgroups of %u: %s\n",
                cfg.tile_m, cfg.tile_n, cfg.tile_k, cfg.wg_rows, cfg.wg_cols, info.subgroup_size,
                bad_config);
        return 2;
    }
    /* The kernel for this device's shape and subgroup size. */
    gemm_f16_defines defines;
    gemm_f16_make_defines(&defines, &shape, &cfg, info.subgroup_size);
    static char source[GEMM_F16_SOURCE_SIZE];
    const cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc),
                                  .name = "gemm_f16",
                                  .glsl = gemm_f16_source(source, sizeof source),
                                  .defines = defines.list,
                                  .define_count = 10};
    cubec_kernel kernel;
    cubec_status status = cubec_kernel_create(device, &kd, &kernel);
    if (status && !(info.features & CUBEC_FEATURE_COOPERATIVE_MATRIX_NV)) {
        /* The expected answer of a device without them: the refusal names what is missing. */
        const char *msg = cubec_status_message(status);
        int expected = cubec_status_code(status) == CUBEC_UNSUPPORTED &&
                       strstr(msg, "needs SPIR-V capability CooperativeMatrixNV") &&
                       strstr(msg, "cooperative_matrix_nv");
        printf("gemm_f16: this device cannot run it: %s: %s\n",
               cubec_code_name(cubec_status_code(status)), msg);
        cubec_status_free(status);
        cubec_device_close(device);
        if (!expected) fprintf(stderr, "gemm_f16: that is not the refusal expected here\n");
        return expected ? 0 : 1;
    }
    CUBEC_CHECK(status);

    /* Inputs: multiples of 1/8 in [-2, 2] from a fixed-seed generator. */
    size_t a_count = (size_t)m * k, b_count = (size_t)k * n, c_count = (size_t)m * n;
    uint16_t *a = malloc(a_count * 2), *b = malloc(b_count * 2);
    float *c = malloc(c_count * 4);
    if (!a || !b || !c) {
        fprintf(stderr, "gemm_f16: out of host memory\n");
        return 1;
    }
    uint32_t seed = 12345;
    for (size_t i = 0; i < a_count; i++) {
        seed = seed * 1664525u + 1013904223u;
        a[i] = to_half((float)((int)(seed >> 27) - 16) / 8.0f);
    }
    for (size_t i = 0; i < b_count; i++) {
        seed = seed * 1664525u + 1013904223u;
        b[i] = to_half((float)((int)(seed >> 27) - 16) / 8.0f);
    }

    cubec_buffer buffers[3];
    CUBEC_CHECK(cubec_buffer_from(device, 0, a, a_count * 2, &buffers[0]));
    CUBEC_CHECK(cubec_buffer_from(device, 0, b, b_count * 2, &buffers[1]));
    CUBEC_CHECK(cubec_buffer_create(device, 0, c_count * 4, &buffers[2]));
    const uint32_t dims[3] = {m, n, k};
    const cubec_launch_desc launch = {
        .struct_size = sizeof(cubec_launch_desc),
        .kernel = kernel,
        .buffers = buffers,
        .buffer_count = 3,
        .info = dims,
        .info_size = sizeof dims,
        .groups = {n / cfg.tile_n, m / cfg.tile_m, 1},
    };

    /* Once for the check (and to warm up), then `reps` times inside a profile. */
    CUBEC_CHECK(cubec_launch(device, 0, &launch));
    CUBEC_CHECK(cubec_read(device, 0, buffers[2], 0, c, c_count * 4));
    uint64_t bad = check(a, b, c, m, n, k);
    cubec_profile profile;
    cubec_profile_result result = CUBEC_PROFILE_RESULT_INIT;
    double t0 = now();
    CUBEC_CHECK(cubec_profile_begin(device, 0, &profile));
    for (uint32_t r = 0; r < reps; r++)
        CUBEC_CHECK(cubec_launch(device, 0, &launch));
    CUBEC_CHECK(cubec_profile_end(device, 0, profile, &result));
    double wall = now() - t0;
    double flops = 2.0 * m * n * (double)k * reps;
    printf("%u x %u x %u: %s (%s), %.2f TFLOP/s on the GPU (%.3f ms per multiply), %.2f TFLOP/s "
           "wall\n",
           m, n, k, bad ? "MISMATCH" : "matches the CPU",
           (uint64_t)c_count * k <= (1ull << 30) ? "every element" : "4096 elements",
           flops / (double)result.duration_ns * 1e-3, (double)result.duration_ns * 1e-6 / reps,
           flops / wall * 1e-12);

    for (int i = 0; i < 3; i++)
        cubec_status_free(cubec_buffer_release(device, buffers[i]));
    cubec_status_free(cubec_kernel_destroy(device, kernel));
    cubec_device_close(device);
    free(a);
    free(b);
    free(c);
    return bad ? 1 : 0;
}
