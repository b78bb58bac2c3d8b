/* kernel.gemm_f16: C (float32) = A (float16) * B (float16), N x N x N (4096 on a GPU), on
 * cooperative matrices: examples/gemm_f16_kernel.h's kernel with its default tiling, in TFLOP/s.
 * Its baseline is cubec itself running a plain 16 x 16 shared-memory tiled multiply of the same
 * data (cubec_scalar): what the matrix units bring over the ordinary cores. A device without
 * cooperative_matrix_nv skips the figure (bench_main.c). PyTorch's torch.matmul on the same GPU is
 * its peer in bench/h200_side_by_side.sh (bench/torch_matmul_peer.py). */
#include "bench_figure.h"
#include "gemm_f16_kernel.h"

#include <cubec/cubec.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CU_TRY(call) BENCH_TRY(bench_from_status((call), #call))

/* Launches per repetition: one multiply at 4096^3 is ~0.7 ms on an H200, so five keep the sync's
 * few microseconds out of the figure. */
#define GEMM_LAUNCHES 5
/* Elements of C checked against the CPU (each a K-term dot product in double). */
#define GEMM_CHECKED 256

static const char scalar_glsl[] =
    "#version 450\n"
    "#extension GL_EXT_shader_16bit_storage : require\n"
    "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
    "layout(local_size_x = 16, local_size_y = 16) in;\n"
    "layout(std430, binding = 0) readonly buffer A { float16_t a[]; };\n"
    "layout(std430, binding = 1) readonly buffer B { float16_t b[]; };\n"
    "layout(std430, binding = 2) writeonly buffer C { float c[]; };\n"
    "CUBEC_INFO(uint m; uint n; uint k;)\n"
    "shared float as[16][17], bs[16][17];\n"
    "void main() {\n"
    "  const uint x = gl_LocalInvocationID.x, y = gl_LocalInvocationID.y;\n"
    "  const uint row = gl_WorkGroupID.y * 16 + y, col = gl_WorkGroupID.x * 16 + x;\n"
    "  float sum = 0.0;\n"
    "  for (uint k0 = 0; k0 < info.k; k0 += 16) {\n"
    "    as[y][x] = float(a[row * info.k + k0 + x]);\n"
    "    bs[y][x] = float(b[(k0 + y) * info.n + col]);\n"
    "    barrier();\n"
    "    for (uint p = 0; p < 16; p++) sum += as[y][p] * bs[p][x];\n"
    "    barrier();\n"
    "  }\n"
    "  c[row * info.n + col] = sum;\n"
    "}\n";

typedef struct gemm_fig {
    cubec_device *dev;
    uint32_t n;
    cubec_kernel kernel;
    cubec_buffer buf[3];
    uint16_t *a, *b;
    uint32_t groups[2];
} gemm_fig;

/* float16 bits of k / 8 for k in -16..15: exact, so every sum of products is exact in float32 for
 * K <= 16384 and the check can be exact. */
static uint16_t eighths_to_half(int k)
{
    if (k == 0) return 0;
    uint16_t sign = k < 0 ? 0x8000u : 0;
    unsigned v = (unsigned)(k < 0 ? -k : k); /* 1..16: value v / 8 = v * 2^-3 */
    int e = 0;
    while ((v >> (e + 1)) != 0)
        e++;                                       /* v = 2^e * (1 + f) */
    unsigned mantissa = ((v << 10) >> e) & 0x3ffu; /* f * 1024 */
    return (uint16_t)(sign | (unsigned)(e - 3 + 15) << 10 | mantissa);
}

static double half_value(uint16_t h)
{
    int exponent = (h >> 10) & 0x1f;
    double v = ldexp(1.0 + (h & 0x3ff) / 1024.0, exponent - 15);
    return h == 0 ? 0.0 : (h & 0x8000u ? -v : v);
}

static bench_err setup(void *dev, const bench_params *params, void **out_state, int scalar)
{
    gemm_fig *f = calloc(1, sizeof *f);
    *out_state = f;
    if (!f) return bench_errorf("out of host memory");
    f->dev = dev;
    f->n = params->gemm_n;
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    CU_TRY(cubec_device_get_info(f->dev, &info));
    const gemm_f16_config cfg = GEMM_F16_DEFAULT;
    cubec_matrix_shape shape;
    if (!scalar && !gemm_f16_pick_shape(&info, cfg.shape_n, &shape))
        return bench_errorf("the device has no float16 cooperative-matrix shape");
    const char *why = scalar ? NULL : gemm_f16_check_config(&cfg, &shape, info.subgroup_size);
    if (!why) why = gemm_f16_check_shape(&cfg, f->n, f->n, f->n);
    if (why) return bench_errorf("%u^3: %s", f->n, why);
    static char source[GEMM_F16_SOURCE_SIZE];
    gemm_f16_defines defines;
    if (!scalar) gemm_f16_make_defines(&defines, &shape, &cfg, info.subgroup_size);
    const cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc),
        .name = scalar ? "bench_gemm_scalar" : "bench_gemm_f16",
        .glsl = scalar ? scalar_glsl : gemm_f16_source(source, sizeof source),
        .defines = scalar ? NULL : defines.list,
        .define_count = scalar ? 0 : sizeof defines.list / sizeof defines.list[0]};
    CU_TRY(cubec_kernel_create(f->dev, &kd, &f->kernel));
    f->groups[0] = scalar ? f->n / 16 : f->n / cfg.tile_n;
    f->groups[1] = scalar ? f->n / 16 : f->n / cfg.tile_m;

    const size_t count = (size_t)f->n * f->n;
    f->a = malloc(count * 2);
    f->b = malloc(count * 2);
    if (!f->a || !f->b) return bench_errorf("out of host memory");
    uint32_t seed = 2024;
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        f->a[i] = eighths_to_half((int)(seed >> 27) - 16);
        seed = seed * 1664525u + 1013904223u;
        f->b[i] = eighths_to_half((int)(seed >> 27) - 16);
    }
    CU_TRY(cubec_buffer_from(f->dev, CUBEC_STREAM_CURRENT, f->a, count * 2, &f->buf[0]));
    CU_TRY(cubec_buffer_from(f->dev, CUBEC_STREAM_CURRENT, f->b, count * 2, &f->buf[1]));
    CU_TRY(cubec_buffer_create(f->dev, CUBEC_STREAM_CURRENT, count * 4, &f->buf[2]));
    return NULL;
}

static bench_err coopmat_setup(void *dev, const bench_params *params, void **out_state)
{
    return setup(dev, params, out_state, 0);
}

static bench_err scalar_setup(void *dev, const bench_params *params, void **out_state)
{
    return setup(dev, params, out_state, 1);
}

static bench_err run(void *state, bench_sample *out)
{
    gemm_fig *f = state;
    const uint32_t dims[3] = {f->n, f->n, f->n};
    const cubec_launch_desc desc = {.struct_size = sizeof(cubec_launch_desc),
                                    .kernel = f->kernel,
                                    .buffers = f->buf,
                                    .buffer_count = 3,
                                    .info = dims,
                                    .info_size = sizeof dims,
                                    .groups = {f->groups[0], f->groups[1], 1}};
    const double tflop = 2.0 * (double)f->n * f->n * f->n * GEMM_LAUNCHES * 1e-12;
    cubec_profile prof;
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    double t0 = bench_now();
    CU_TRY(cubec_profile_begin(f->dev, CUBEC_STREAM_CURRENT, &prof));
    for (int i = 0; i < GEMM_LAUNCHES; i++)
        CU_TRY(cubec_launch(f->dev, CUBEC_STREAM_CURRENT, &desc));
    CU_TRY(cubec_profile_end(f->dev, CUBEC_STREAM_CURRENT, prof, &r));
    double t1 = bench_now();
    out->value = tflop / (t1 - t0);
    out->device_value = r.method == CUBEC_TIMING_DEVICE && r.duration_ns
                            ? tflop / ((double)r.duration_ns * 1e-9)
                            : NAN;
    return NULL;
}

/* GEMM_CHECKED elements spread over C against the CPU's exact sums. */
static bench_err verify(void *state)
{
    gemm_fig *f = state;
    const uint32_t n = f->n;
    float *c = malloc((size_t)n * n * 4);
    if (!c) return bench_errorf("out of host memory");
    bench_err err = bench_from_status(
        cubec_read(f->dev, CUBEC_STREAM_CURRENT, f->buf[2], 0, c, (uint64_t)n * n * 4),
        "cubec_read");
    for (uint32_t s = 0; !err && s < GEMM_CHECKED; s++) {
        uint64_t e = ((uint64_t)s * 2654435761u) % ((uint64_t)n * n);
        uint32_t i = (uint32_t)(e / n), j = (uint32_t)(e % n);
        double want = 0;
        for (uint32_t p = 0; p < n; p++)
            want += half_value(f->a[(size_t)i * n + p]) * half_value(f->b[(size_t)p * n + j]);
        if ((double)c[e] != want)
            err = bench_errorf("C[%u][%u] = %.6f, the CPU says %.6f", i, j, c[e], want);
    }
    free(c);
    return err;
}

static void teardown(void *state)
{
    gemm_fig *f = state;
    if (!f) return;
    cubec_status_free(cubec_sync(f->dev, CUBEC_STREAM_CURRENT));
    cubec_status_free(cubec_kernel_destroy(f->dev, f->kernel));
    for (int i = 0; i < 3; i++)
        cubec_status_free(cubec_buffer_release(f->dev, f->buf[i]));
    free(f->a);
    free(f->b);
    free(f);
}

const bench_impl bench_gemm_f16_impl = {coopmat_setup, run, verify, teardown};
const bench_impl bench_gemm_f16_scalar_impl = {scalar_setup, run, verify, teardown};
