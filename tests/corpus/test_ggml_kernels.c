/* Two of ggml's own kernels run through cubec as ggml runs them (issue 24, "Measured and
 * tested"): the modules are the ones ggml's generator builds from the pinned sources
 * (tests/corpus/ggml, first variant: mul_mat_vec_f32_f32_f32 and soft_max_f32), created with the
 * specialization constants ggml-vulkan.cpp gives their pipelines, launched with ggml's
 * push-constant structs (vk_mat_vec_push_constants, vk_op_soft_max_push_constants, copied here as
 * ggml declares them), its binding lists (a buffer standing in for an unused operand, as ggml
 * binds it) and its grids, and checked against a CPU reference of the same operation. */
#include "corpus_files.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CUBEC_GGML_SPV_DIR
#error "CUBEC_GGML_SPV_DIR: the directory of the modules tests/corpus/CMakeLists.txt builds"
#endif

/* ggml-vulkan.cpp's struct vk_mat_vec_push_constants, member for member. */
typedef struct ggml_mat_vec_push_constants {
    uint32_t ncols;
    uint32_t stride_a;
    uint32_t stride_b;
    uint32_t stride_d;
    uint32_t batch_stride_a;
    uint32_t batch_stride_b;
    uint32_t batch_stride_d;
    uint32_t fusion_flags;
    uint32_t base_work_group_y;
    uint32_t ne02;
    uint32_t ne12;
    uint32_t broadcast2;
    uint32_t broadcast3;
} ggml_mat_vec_push_constants;

/* ggml-vulkan.cpp's struct vk_op_soft_max_push_constants, member for member. */
typedef struct ggml_soft_max_push_constants {
    uint32_t KX;
    uint32_t KY;
    uint32_t ne00;
    uint32_t ne01;
    uint32_t ne02;
    uint32_t ne12;
    uint32_t ne13;
    uint32_t nb11;
    uint32_t nb12;
    uint32_t nb13;
    float scale;
    float max_bias;
    float m0;
    float m1;
    uint32_t n_head_log2;
    uint32_t nrows_x;
    uint32_t has_sinks;
} ggml_soft_max_push_constants;

/* The module the build compiled (`name`.spv), through corpus_read_spirv. */
static uint32_t *load_module(const char *name, size_t *out_words)
{
    return corpus_read_spirv(CUBEC_GGML_SPV_DIR, name, "ggml_corpus_tools", out_words);
}

static cubec_kernel create_ggml_kernel(cubec_device *d, const char *name,
                                       const cubec_spec_constant *spec, uint32_t spec_count)
{
    size_t words = 0;
    uint32_t *spirv = load_module(name, &words);
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = name;
    kd.spirv = spirv;
    kd.spirv_words = words;
    kd.spec_constants = spec;
    kd.spec_constant_count = spec_count;
    cubec_kernel k;
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    free(spirv);
    return k;
}

/* ggml_vk_mul_mat_vec_q_f16 for f32 x f32 -> f32: dst[i12][r] = sum_c A[i02][r][c] * B[i12][c]
 * over ne12 batches of B, A broadcast over ne12 / ne02 of them (ggml's r2). */
static void run_mat_vec(cubec_device *d, cubec_kernel k, uint32_t ne00, uint32_t ne01,
                        uint32_t ne02, uint32_t ne12)
{
    const uint32_t ne10 = ne00, ne11 = 1, ne20 = ne01, ne21 = 1;
    size_t na = (size_t)ne00 * ne01 * ne02, nb = (size_t)ne10 * ne11 * ne12;
    size_t nd = (size_t)ne20 * ne21 * ne12;
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *out = malloc(nd * sizeof *out);
    assert_true(a && b && out);
    uint32_t seed = ne00 * 31u + ne02;
    for (size_t i = 0; i < na; i++)
        a[i] = test_randf(&seed);
    for (size_t i = 0; i < nb; i++)
        b[i] = test_randf(&seed);

    cubec_buffer buf[3];
    ASSERT_OK(cubec_buffer_from(d, 0, a, na * sizeof *a, &buf[0]));
    ASSERT_OK(cubec_buffer_from(d, 0, b, nb * sizeof *b, &buf[1]));
    ASSERT_OK(cubec_buffer_create(d, 0, nd * sizeof *out, &buf[2]));
    /* ggml's pc, as ggml_vk_mul_mat_vec_q_f16 fills it for contiguous tensors, no fusion. */
    ggml_mat_vec_push_constants pc = {
        .ncols = ne00,
        .stride_a = ne10,
        .stride_b = ne10,
        .stride_d = ne01,
        .batch_stride_a = ne00 * ne01,
        .batch_stride_b = ne10 * ne11,
        .batch_stride_d = ne20 * ne21,
        .fusion_flags = 0,
        .base_work_group_y = 0,
        .ne02 = ne02,
        .ne12 = ne12,
        .broadcast2 = ne12 / ne02,
        .broadcast3 = 1,
    };
    /* ggml binds {X, Y, D, F0, F1}; without fusion F0 and F1 are D itself. */
    cubec_buffer bindings[5] = {buf[0], buf[1], buf[2], buf[2], buf[2]};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = bindings;
    ld.buffer_count = 5;
    ld.info = &pc;
    ld.info_size = sizeof pc;
    ld.groups[0] = ne01; /* wg_denoms {1, 1, 1}: one row per workgroup */
    ld.groups[1] = ne12;
    ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, buf[2], 0, out, nd * sizeof *out));

    for (uint32_t i12 = 0; i12 < ne12; i12++) {
        uint32_t i02 = i12 / (ne12 / ne02);
        for (uint32_t r = 0; r < ne01; r++) {
            double sum = 0, mag = 0;
            for (uint32_t c = 0; c < ne00; c++) {
                double p = (double)a[((size_t)i02 * ne01 + r) * ne00 + c] *
                           (double)b[(size_t)i12 * ne10 + c];
                sum += p;
                mag += fabs(p);
            }
            float got = out[(size_t)i12 * ne01 + r];
            if (fabs(got - sum) > 1e-5 * mag + 1e-6)
                fail_msg("mul_mat_vec %ux%u batch %u row %u: %g, expected %g", ne01, ne00, i12, r,
                         (double)got, sum);
        }
    }
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_release(d, buf[i]));
    free(a);
    free(b);
    free(out);
}

static void test_mul_mat_vec_f32(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    /* ggml's spec constants for mul_mat_vec_f32_f32_f32 without subgroup reduction
     * (DMMV_WG_SIZE_LARGE): {BLOCK_SIZE = subgroup_size * 4, NUM_ROWS = 1, NUM_COLS = 1}. */
    const cubec_spec_constant spec[] = {{0, info.subgroup_size * 4}, {1, 1}, {2, 1}};
    cubec_kernel k = create_ggml_kernel(d, "mul_mat_vec_f32_f32_f32", spec, 3);
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.workgroup_size[0], info.subgroup_size * 4);
    run_mat_vec(d, k, 256, 37, 2, 2); /* aligned columns: the vec4 path */
    run_mat_vec(d, k, 259, 37, 1, 2); /* odd columns (the last iteration's bounds), A broadcast */
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

/* ggml_vk_soft_max with a mask and ALiBi (max_bias > 0), no sinks: dst = softmax(x * scale +
 * slope(head) * mask) along each row of ne00 columns, over ne01 rows and ne02 heads. */
static void test_soft_max_f32(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    /* ggml: pipeline_soft_max_f32 with the spec constants { device->subgroup_size }. */
    const cubec_spec_constant spec[] = {{0, info.subgroup_size}};
    cubec_kernel k = create_ggml_kernel(d, "soft_max_f32", spec, 1);

    const uint32_t ne00 = 100, ne01 = 6, ne02 = 5, nrows = ne01 * ne02;
    const float scale = 0.5f, max_bias = 8.0f;
    size_t nx = (size_t)ne00 * nrows, nm = (size_t)ne00 * ne01;
    float *x = malloc(nx * sizeof *x), *mask = malloc(nm * sizeof *mask);
    float *out = malloc(nx * sizeof *out);
    assert_true(x && mask && out);
    uint32_t seed = 11;
    for (size_t i = 0; i < nx; i++)
        x[i] = 4.0f * test_randf(&seed);
    for (size_t i = 0; i < nm; i++)
        mask[i] = (i % 7 == 3) ? -INFINITY : test_randf(&seed);

    /* ggml_vk_soft_max's pc for src0 [ne00, ne01, ne02, 1] and a mask src1 [ne00, ne01, 1, 1]. */
    const uint32_t n_head_log2 = 1u << (uint32_t)floorf(log2f((float)ne02));
    ggml_soft_max_push_constants pc = {
        .KX = ne00,
        .KY = ne01,
        .ne00 = ne00,
        .ne01 = ne01,
        .ne02 = ne02,
        .ne12 = 1,
        .ne13 = 1,
        .nb11 = ne00,
        .nb12 = ne00 * ne01,
        .nb13 = ne00 * ne01,
        .scale = scale,
        .max_bias = max_bias,
        .m0 = powf(2.0f, -max_bias / (float)n_head_log2),
        .m1 = powf(2.0f, -(max_bias / 2.0f) / (float)n_head_log2),
        .n_head_log2 = n_head_log2,
        .nrows_x = nrows,
        .has_sinks = 0,
    };
    cubec_buffer bx, bm, bd;
    ASSERT_OK(cubec_buffer_from(d, 0, x, nx * sizeof *x, &bx));
    ASSERT_OK(cubec_buffer_from(d, 0, mask, nm * sizeof *mask, &bm));
    ASSERT_OK(cubec_buffer_create(d, 0, nx * sizeof *out, &bd));
    /* ggml binds {src0, src1, src2, dst}; without sinks src2 is src0 itself. */
    cubec_buffer bindings[4] = {bx, bm, bx, bd};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = bindings;
    ld.buffer_count = 4;
    ld.info = &pc;
    ld.info_size = sizeof pc;
    ld.groups[0] = nrows; /* ggml_vk_op_f32: {nrows, 1, 1} up to 512 rows, wg_denoms {1, 1, 1} */
    ld.groups[1] = 1;
    ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, bd, 0, out, nx * sizeof *out));

    for (uint32_t row = 0; row < nrows; row++) {
        uint32_t i01 = row % ne01, h = row / ne01;
        double base = h < n_head_log2 ? pc.m0 : pc.m1;
        double ex = h < n_head_log2 ? h + 1 : 2 * (h - n_head_log2) + 1;
        double slope = pow(base, ex);
        double v[100], mx = -INFINITY, sum = 0;
        for (uint32_t c = 0; c < ne00; c++) {
            v[c] = (double)x[(size_t)row * ne00 + c] * scale +
                   slope * (double)mask[(size_t)i01 * ne00 + c];
            if (v[c] > mx) mx = v[c];
        }
        for (uint32_t c = 0; c < ne00; c++)
            sum += exp(v[c] - mx);
        for (uint32_t c = 0; c < ne00; c++) {
            double want = exp(v[c] - mx) / sum;
            float got = out[(size_t)row * ne00 + c];
            if (fabs(got - want) > 1e-5 + 1e-4 * want)
                fail_msg("soft_max row %u col %u: %g, expected %g", row, c, (double)got, want);
        }
    }
    ASSERT_OK(cubec_buffer_release(d, bx));
    ASSERT_OK(cubec_buffer_release(d, bm));
    ASSERT_OK(cubec_buffer_release(d, bd));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    free(x);
    free(mask);
    free(out);
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mul_mat_vec_f32),
        cmocka_unit_test(test_soft_max_f32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
