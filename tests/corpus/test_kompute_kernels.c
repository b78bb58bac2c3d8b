/* Kompute's own compute shaders run through cubec as Kompute runs them (issue 24, "Bring your
 * own shaders"): the sources vendored unchanged in tests/corpus/kompute (the array
 * multiplication example, the logistic regression and workgroup test shaders), created with the
 * specialization constants Kompute's callers give (kp::Manager::algorithm: constant ids 0..n-1 of
 * one type), launched with Kompute's binding model (src/Algorithm.cpp: one storage buffer per
 * tensor, tensor i at binding i of set 0) and its workgroups (kp::Workgroup, the group count;
 * {size of the first tensor, 1, 1} when none is given), checked against the results Kompute's
 * own programs compute or expect. Kompute takes SPIR-V its build compiled with glslc; cubec
 * compiles the same GLSL with shaderc. */
#include "corpus_files.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CUBEC_KOMPUTE_SPV_DIR
#error "CUBEC_KOMPUTE_SPV_DIR: the modules tests/corpus/CMakeLists.txt compiles"
#endif

enum { FROM_SPIRV, FROM_GLSL, ROUTES };

/* The module the build compiled (`stem`.spv), through corpus_read_spirv. */
static uint32_t *load_module(const char *stem, size_t *out_words)
{
    return corpus_read_spirv(CUBEC_KOMPUTE_SPV_DIR, stem, "kompute_spv", out_words);
}

/* The shader at `relative` under tests/corpus, whose module is `stem`.spv, by `route`. */
static cubec_kernel kompute_kernel(cubec_device *d, int route, const char *relative,
                                   const char *stem, const cubec_spec_constant *spec,
                                   uint32_t spec_count)
{
    char path[1024];
    corpus_path(path, sizeof path, relative);
    char *glsl = NULL;
    uint32_t *spirv = NULL;
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = stem;
    if (route == FROM_SPIRV) {
        spirv = load_module(stem, &kd.spirv_words);
        kd.spirv = spirv;
    } else {
        glsl = corpus_read_text(relative);
        kd.glsl = glsl;
        kd.glsl_path = path;
    }
    kd.spec_constants = spec;
    kd.spec_constant_count = spec_count;
    cubec_kernel k;
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    free(glsl);
    free(spirv);
    return k;
}

static void launch(cubec_device *d, cubec_kernel k, cubec_buffer *tensors, uint32_t count,
                   uint32_t gx, uint32_t gy, uint32_t gz)
{
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = tensors;
    ld.buffer_count = count;
    ld.groups[0] = gx;
    ld.groups[1] = gy;
    ld.groups[2] = gz;
    ASSERT_OK(cubec_launch(d, 0, &ld));
}

/* examples/array_multiplication: mgr.algorithm({inA, inB, out}, shader) with no workgroup, so
 * one group per element of the first tensor; the example checks {0, 4, 12}. Also a longer
 * array against the CPU. */
static void test_array_multiplication(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    enum { N = 1000 };
    static float a[N], b[N], out[N];
    a[0] = 2, a[1] = 4, a[2] = 6; /* the example's tensors, then more */
    b[0] = 0, b[1] = 1, b[2] = 2;
    uint32_t seed = 9;
    for (int i = 3; i < N; i++) {
        a[i] = test_randf(&seed);
        b[i] = test_randf(&seed);
    }
    for (int route = 0; route < ROUTES; route++) {
        cubec_kernel k =
            kompute_kernel(d, route, "kompute/examples/array_multiplication/shader/my_shader.comp",
                           "my_shader", NULL, 0);
        cubec_buffer t[3];
        ASSERT_OK(cubec_buffer_from(d, 0, a, sizeof a, &t[0]));
        ASSERT_OK(cubec_buffer_from(d, 0, b, sizeof b, &t[1]));
        ASSERT_OK(cubec_buffer_create(d, 0, sizeof out, &t[2]));
        launch(d, k, t, 3, N, 1, 1);
        ASSERT_OK(cubec_read(d, 0, t[2], 0, out, sizeof out));
        assert_true(out[0] == 0 && out[1] == 4 && out[2] == 12);
        for (int i = 0; i < N; i++)
            if (out[i] != a[i] * b[i])
                fail_msg("route %d: out[%d] = %g, expected %g", route, i, (double)out[i],
                         (double)(a[i] * b[i]));
        for (int i = 0; i < 3; i++)
            ASSERT_OK(cubec_buffer_release(d, t[i]));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    test_device_close(d);
}

/* test/TestWorkgroup.cpp: two tensors of 16 * 8, kp::Workgroup {16, 8, 1}; the shader indexes
 * by gl_WorkGroupID and gl_NumWorkGroups, so the grid must reach it as given. */
static void test_workgroup(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    enum { X = 16, Y = 8 };
    for (int route = 0; route < ROUTES; route++) {
        cubec_kernel k =
            kompute_kernel(d, route, "kompute/test/shaders/glsl/test_workgroup_shader.comp",
                           "test_workgroup_shader", NULL, 0);
        cubec_buffer t[2];
        ASSERT_OK(cubec_buffer_create(d, 0, X * Y * sizeof(float), &t[0]));
        ASSERT_OK(cubec_buffer_create(d, 0, X * Y * sizeof(float), &t[1]));
        launch(d, k, t, 2, X, Y, 1);
        float gx[X * Y], gy[X * Y];
        ASSERT_OK(cubec_read(d, 0, t[0], 0, gx, sizeof gx));
        ASSERT_OK(cubec_read(d, 0, t[1], 0, gy, sizeof gy));
        /* TestWorkgroup's expectedA and expectedB: entry x * 8 + y holds x and y. */
        for (int i = 0; i < X * Y; i++)
            if (gx[i] != (float)(i / Y) || gy[i] != (float)(i % Y))
                fail_msg("route %d: [%d] = (%g, %g), expected (%d, %d)", route, i, (double)gx[i],
                         (double)gy[i], i / Y, i % Y);
        ASSERT_OK(cubec_buffer_release(d, t[0]));
        ASSERT_OK(cubec_buffer_release(d, t[1]));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    test_device_close(d);
}

/* test/TestLogisticRegression.cpp (TestMainLogisticRegression): nine tensors {xI, xJ, y, wIn,
 * wOutI, wOutJ, bIn, bOut, lOut}, kp::Workgroup {5}, the float constant m = 5 (constant_id 0);
 * 100 iterations of the shader followed by the host's gradient step with learning rate 0.1.
 * Each iteration's gradients and losses are checked against the CPU, then Kompute's own
 * expectations of the trained model (wIn[0] < 0.01, wIn[1] > 1, b < 0). */
static void test_logistic_regression(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    const float m = 5.0f;
    uint32_t m_bits;
    memcpy(&m_bits, &m, 4);
    const cubec_spec_constant spec[1] = {{0, m_bits}};
    for (int route = 0; route < ROUTES; route++) {
        cubec_kernel k = kompute_kernel(
            d, route, "kompute/test/shaders/glsl/test_logistic_regression_shader.comp",
            "test_logistic_regression_shader", spec, 1);

        enum { N = 5, ITERATIONS = 100 };
        const float xi[N] = {0, 1, 1, 1, 1}, xj[N] = {0, 0, 0, 1, 1}, y[N] = {0, 0, 0, 1, 1};
        float w_in[2] = {0.001f, 0.001f}, b_in[1] = {0};
        const float zeros[N] = {0};
        cubec_buffer t[9];
        ASSERT_OK(cubec_buffer_from(d, 0, xi, sizeof xi, &t[0]));
        ASSERT_OK(cubec_buffer_from(d, 0, xj, sizeof xj, &t[1]));
        ASSERT_OK(cubec_buffer_from(d, 0, y, sizeof y, &t[2]));
        ASSERT_OK(cubec_buffer_from(d, 0, w_in, sizeof w_in, &t[3]));
        ASSERT_OK(cubec_buffer_from(d, 0, zeros, sizeof zeros, &t[4]));
        ASSERT_OK(cubec_buffer_from(d, 0, zeros, sizeof zeros, &t[5]));
        ASSERT_OK(cubec_buffer_from(d, 0, b_in, sizeof b_in, &t[6]));
        ASSERT_OK(cubec_buffer_from(d, 0, zeros, sizeof zeros, &t[7]));
        ASSERT_OK(cubec_buffer_from(d, 0, zeros, sizeof zeros, &t[8]));

        const float learning_rate = 0.1f;
        for (int it = 0; it < ITERATIONS; it++) {
            /* The sequence: OpSyncDevice {wIn, bIn}, OpAlgoDispatch, OpSyncLocal {outputs}. */
            ASSERT_OK(cubec_write(d, 0, t[3], 0, w_in, sizeof w_in));
            ASSERT_OK(cubec_write(d, 0, t[6], 0, b_in, sizeof b_in));
            launch(d, k, t, 9, N, 1, 1);
            float dwi[N], dwj[N], db[N], loss[N];
            ASSERT_OK(cubec_read(d, 0, t[4], 0, dwi, sizeof dwi));
            ASSERT_OK(cubec_read(d, 0, t[5], 0, dwj, sizeof dwj));
            ASSERT_OK(cubec_read(d, 0, t[7], 0, db, sizeof db));
            ASSERT_OK(cubec_read(d, 0, t[8], 0, loss, sizeof loss));
            for (int i = 0; i < N; i++) {
                double z = (double)w_in[0] * xi[i] + (double)w_in[1] * xj[i] + b_in[0];
                double y_hat = 1.0 / (1.0 + exp(-z)), dz = y_hat - y[i];
                double want[4] = {xi[i] * dz / m, xj[i] * dz / m, dz / m,
                                  -(y[i] * log(y_hat) + (1.0 - y[i]) * log(1.0 - y_hat))};
                const float got[4] = {dwi[i], dwj[i], db[i], loss[i]};
                for (int o = 0; o < 4; o++)
                    if (fabs((double)got[o] - want[o]) > 1e-5 * fabs(want[o]) + 1e-6)
                        fail_msg("route %d, iteration %d, element %d, output %d: %g, expected %g",
                                 route, it, i, o, (double)got[o], want[o]);
            }
            for (int j = 0; j < N; j++) { /* the test's host update, from the shader's outputs */
                w_in[0] -= learning_rate * dwi[j];
                w_in[1] -= learning_rate * dwj[j];
                b_in[0] -= learning_rate * db[j];
            }
        }
        assert_true(w_in[0] < 0.01f);
        assert_true(w_in[1] > 1.0f);
        assert_true(b_in[0] < 0.0f);

        for (int i = 0; i < 9; i++)
            ASSERT_OK(cubec_buffer_release(d, t[i]));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_array_multiplication),
        cmocka_unit_test(test_workgroup),
        cmocka_unit_test(test_logistic_regression),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
