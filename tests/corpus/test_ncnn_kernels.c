/* ncnn's own buffer compute shaders run through cubec as ncnn runs them (issue 24, "Bring your
 * own shaders"): the sources vendored unchanged in tests/corpus/ncnn (relu, the four passes of
 * softmax, binaryop, innerproduct with the vulkan_activation.comp it includes), compiled with the
 * macros and extension lines ncnn's compile_spirv_module (src/gpu.cpp) puts right after
 * `#version`, specialized with the constants its layers' create_pipeline gives (the shape
 * constants too: ncnn specializes on the blob shapes it inferred), launched with the push
 * constants, bindings and grids of their forward functions and of record_pipeline
 * (src/command.cpp: groups = ceil(dispatcher extent / local size) per axis), and checked against
 * a CPU reference. Each runs in fp32, in ncnn's fp16 packed variant (halves in uint words,
 * fp32 arithmetic: what ncnn uses where the device lacks 16-bit storage) and, where the device
 * has fp16 storage and arithmetic, in ncnn's fp16 storage + arithmetic variant of the same
 * source. */
#include "corpus_files.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ncnn's storage and arithmetic choices (Option: use_fp16_packed, use_fp16_storage,
 * use_fp16_arithmetic); both 16-bit ones store halves, so the buffers' bytes are the same. */
typedef enum ncnn_precision { NCNN_FP32, NCNN_FP16, NCNN_FP16_PACKED } ncnn_precision;

/* The macros compile_spirv_module defines (custom_defines, gpu.cpp) that these shaders use, for
 * ncnn's default options (no fp16 anything): the `else` branch of each choice there. ncnn also
 * defines a macro per device extension, feature and limit (ncnn_<name>); of those these shaders
 * read only ncnn_driverID (binaryop's atan2 work-around, op types 10 and 11, not run here),
 * which `#if` reads as 0 when undefined. */
static const cubec_define ncnn_fp32_defines[] = {
    {"sfp", "float"},
    {"sfpvec2", "vec2"},
    {"sfpvec4", "vec4"},
    {"sfpmat4", "mat4"},
    {"afp", "float"},
    {"afpvec2", "vec2"},
    {"afpvec4", "vec4"},
    {"afpmat4", "mat4"},
    {"buffer_ld1(buf,i)", "buf[i]"},
    {"buffer_st1(buf,i,v)", "{buf[i]=v;}"},
    {"buffer_ld4(buf,i)", "buf[i]"},
    {"buffer_st4(buf,i,v)", "{buf[i]=v;}"},
    {"psc(x)", "(x==0?p.x:x)"},
    {"ncnn_glsl_version", "1"},
};

/* The same for opt.use_fp16_storage and opt.use_fp16_arithmetic (ncnn's choice where the device
 * has both): 16-bit buffers and float16_t arithmetic. */
static const cubec_define ncnn_fp16_defines[] = {
    {"sfp", "float16_t"},
    {"sfpvec2", "f16vec2"},
    {"sfpvec4", "f16vec4"},
    {"sfpmat4", "f16mat4"},
    {"afp", "float16_t"},
    {"afpvec2", "f16vec2"},
    {"afpvec4", "f16vec4"},
    {"afpmat4", "f16mat4"},
    {"buffer_ld1(buf,i)", "buf[i]"},
    {"buffer_st1(buf,i,v)", "{buf[i]=v;}"},
    {"buffer_ld4(buf,i)", "buf[i]"},
    {"buffer_st4(buf,i,v)", "{buf[i]=v;}"},
    {"psc(x)", "(x==0?p.x:x)"},
    {"NCNN_fp16_storage", "1"},
    {"NCNN_fp16_arithmetic", "1"},
    {"ncnn_glsl_version", "1"},
};

/* The same for opt.use_fp16_packed alone: halves packed two to a uint (four to a uvec2), unpacked
 * to float for arithmetic; a single half is stored by a compare-and-swap loop on its word. */
static const cubec_define ncnn_fp16_packed_defines[] = {
    {"sfp", "uint"},
    {"sfpvec2", "uint"},
    {"sfpvec4", "uvec2"},
    {"afp", "float"},
    {"afpvec2", "vec2"},
    {"afpvec4", "vec4"},
    {"afpmat4", "mat4"},
    {"buffer_ld1(buf,i)", "unpackHalf2x16(buf[(i)/2])[(i)%2]"},
    {"buffer_st1(buf,i,v)",
     "{uint _i=uint(i);uint _id2=_i/2;uint _im2=_i%2;float _vs=float(v);uint _old_v, _new_v;do{"
     "_old_v=atomicCompSwap(buf[_id2],0,0);vec2 _v=unpackHalf2x16(_old_v);_v[_im2]=_vs;_new_v="
     "packHalf2x16(_v);} while(atomicCompSwap(buf[_id2],_old_v,_new_v)!=_old_v);}"},
    {"buffer_ld4(buf,i)", "vec4(unpackHalf2x16(buf[i].x),unpackHalf2x16(buf[i].y))"},
    {"buffer_st4(buf,i,v)", "{buf[i]=uvec2(packHalf2x16(v.rg),packHalf2x16(v.ba));}"},
    {"psc(x)", "(x==0?p.x:x)"},
    {"NCNN_fp16_packed", "1"},
    {"ncnn_glsl_version", "1"},
};

/* 1 where the device runs ncnn's fp16 storage + arithmetic path (else the test says so). */
static int has_fp16(cubec_device *d)
{
    const uint32_t need = CUBEC_FEATURE_FLOAT16 | CUBEC_FEATURE_STORAGE_BUFFER_16BIT;
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if ((info.features & need) == need) return 1;
    print_message("skipped the fp16 variant: the device lacks fp16 storage or arithmetic\n");
    return 0;
}

/* Creates `shader` (a file of tests/corpus/ncnn/shader) as ncnn compiles it for `prec`, with the
 * specialization constants 0..spec_count-1 that ncnn's create_pipeline gives and the workgroup
 * size its set_optimal_local_size_xyz chose.
 *
 * The preamble is ncnn's custom_exts (gpu.cpp): the int64/int16 arithmetic lines where the
 * device has them, the 16-bit storage and fp16 arithmetic lines for the fp16 path. ncnn's
 * sources declare no workgroup size: ncnn rewrites the module's LocalSize execution mode when it
 * creates the pipeline (inject_local_size_xyz, gpu.cpp), which also strips the size set through
 * the specialization constants 233, 234 and 235 that its older shaders declared. cubec takes a
 * module as it is, so the preamble declares those constants (`local_size_x_id = 233` ...) and
 * the sizes go in as their values: the same module, the same sizes. */
static cubec_status ncnn_kernel_try(cubec_device *d, ncnn_precision prec, const char *shader,
                                    const uint32_t *spec, uint32_t spec_count, uint32_t lx,
                                    uint32_t ly, uint32_t lz, cubec_kernel *out)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    char preamble[1024] = "";
    if (info.features & CUBEC_FEATURE_INT64)
        strcat(preamble, "#extension GL_EXT_shader_explicit_arithmetic_types_int64: require\n");
    if (info.features & CUBEC_FEATURE_INT16)
        strcat(preamble, "#extension GL_EXT_shader_explicit_arithmetic_types_int16: require\n");
    if (prec == NCNN_FP16) {
        strcat(preamble, "#extension GL_EXT_shader_16bit_storage: require\n");
        strcat(preamble, "#extension GL_EXT_shader_explicit_arithmetic_types_float16: require\n");
    }
    strcat(preamble,
           "layout(local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;\n");

    cubec_spec_constant sc[32];
    assert_true(spec_count + 3 <= 32);
    for (uint32_t i = 0; i < spec_count; i++)
        sc[i] = (cubec_spec_constant){i, spec[i]};
    sc[spec_count] = (cubec_spec_constant){233, lx};
    sc[spec_count + 1] = (cubec_spec_constant){234, ly};
    sc[spec_count + 2] = (cubec_spec_constant){235, lz};

    char relative[256], path[1024];
    snprintf(relative, sizeof relative, "ncnn/shader/%s", shader);
    corpus_path(path, sizeof path, relative);
    char *glsl = corpus_read_text(relative);
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = shader;
    kd.glsl = glsl;
    kd.glsl_path = path; /* innerproduct's #include "vulkan_activation.comp" is found beside it */
    kd.preamble = preamble;
    if (prec == NCNN_FP16) {
        kd.defines = ncnn_fp16_defines;
        kd.define_count = sizeof ncnn_fp16_defines / sizeof ncnn_fp16_defines[0];
    } else if (prec == NCNN_FP16_PACKED) {
        kd.defines = ncnn_fp16_packed_defines;
        kd.define_count = sizeof ncnn_fp16_packed_defines / sizeof ncnn_fp16_packed_defines[0];
    } else {
        kd.defines = ncnn_fp32_defines;
        kd.define_count = sizeof ncnn_fp32_defines / sizeof ncnn_fp32_defines[0];
    }
    kd.spec_constants = sc;
    kd.spec_constant_count = spec_count + 3;
    cubec_status st = cubec_kernel_create(d, &kd, out);
    free(glsl);
    return st;
}

/* ncnn_kernel_try, which must succeed and give the workgroup size asked for. */
static cubec_kernel ncnn_kernel(cubec_device *d, ncnn_precision prec, const char *shader,
                                const uint32_t *spec, uint32_t spec_count, uint32_t lx, uint32_t ly,
                                uint32_t lz)
{
    cubec_kernel k;
    ASSERT_OK(ncnn_kernel_try(d, prec, shader, spec, spec_count, lx, ly, lz, &k));
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.workgroup_size[0], lx);
    assert_int_equal(ki.workgroup_size[1], ly);
    assert_int_equal(ki.workgroup_size[2], lz);
    return k;
}

/* 1 where the shader's fp16-packed variant cannot run here: on the webgpu backend, ncnn's store of
 * a single packed half (buffer_st1: a compare-and-swap loop on its word) uses what
 * atomicCompSwap returns, which naga 29's SPIR-V front end cannot translate (docs/device.md, "The
 * WebGPU backend"). The refusal is checked instead: CUBEC_UNSUPPORTED naming the kernel and the
 * construct. relu.comp stores whole vec4s and runs. */
static int packed_store_refused(cubec_device *d, ncnn_precision prec, const char *shader,
                                const uint32_t *spec, uint32_t spec_count, uint32_t lx, uint32_t ly,
                                uint32_t lz)
{
    const char *backend = getenv("CUBEC_BACKEND");
    if (prec != NCNN_FP16_PACKED || !backend || strcmp(backend, "webgpu") != 0) return 0;
    cubec_kernel k;
    cubec_status st = ncnn_kernel_try(d, prec, shader, spec, spec_count, lx, ly, lz, &k);
    if (!st) fail_msg("%s (fp16 packed) was expected to be refused on webgpu", shader);
    char kernel[128];
    snprintf(kernel, sizeof kernel, "kernel '%s'", shader);
    const char *msg = cubec_status_message(st);
    if (cubec_status_code(st) != CUBEC_UNSUPPORTED || !strstr(msg, kernel) ||
        !strstr(msg, "OpAtomicCompareExchange") || !strstr(msg, "naga said"))
        fail_msg("%s: an unexpected refusal: %s", shader, msg);
    cubec_status_free(st);
    return 1;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ncnn's Mat::cstep: a channel's elements, rounded up to 16 bytes (mat.h, Mat::create). */
static uint32_t ncnn_cstep(uint32_t elements, uint32_t elemsize)
{
    return (elements * elemsize + 15u) / 16u * 16u / elemsize;
}

static uint32_t ceil_div(uint32_t a, uint32_t b)
{
    return (a + b - 1) / b;
}

/* Host values <-> the buffer's element type. Test values are chosen so that the fp16 path holds
 * them and the results the tests compare exactly. */
static void *to_device(ncnn_precision prec, const float *v, size_t n)
{
    size_t es = prec == NCNN_FP32 ? 4 : 2;
    unsigned char *out = malloc(n * es);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
        if (prec != NCNN_FP32) {
            unsigned short h = corpus_float_to_half(v[i]);
            memcpy(out + i * 2, &h, 2);
        } else {
            memcpy(out + i * 4, &v[i], 4);
        }
    }
    return out;
}

static float from_device(ncnn_precision prec, const void *bytes, size_t i)
{
    if (prec != NCNN_FP32) {
        unsigned short h;
        memcpy(&h, (const unsigned char *)bytes + i * 2, 2);
        return corpus_half_to_float(h);
    }
    float f;
    memcpy(&f, (const unsigned char *)bytes + i * 4, 4);
    return f;
}

static cubec_buffer upload(cubec_device *d, ncnn_precision prec, const float *v, size_t n)
{
    void *bytes = to_device(prec, v, n);
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(d, 0, bytes, n * (prec == NCNN_FP32 ? 4 : 2), &b));
    free(bytes);
    return b;
}

static float *download(cubec_device *d, ncnn_precision prec, cubec_buffer b, size_t n)
{
    size_t es = prec == NCNN_FP32 ? 4 : 2;
    void *bytes = malloc(n * es);
    float *out = malloc(n * sizeof *out);
    assert_true(bytes && out);
    ASSERT_OK(cubec_read(d, 0, b, 0, bytes, n * es));
    for (size_t i = 0; i < n; i++)
        out[i] = from_device(prec, bytes, i);
    free(bytes);
    return out;
}

static void launch(cubec_device *d, cubec_kernel k, cubec_buffer *bindings, uint32_t count,
                   const void *pc, uint32_t pc_size, uint32_t gx, uint32_t gy, uint32_t gz)
{
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = bindings;
    ld.buffer_count = count;
    ld.info = pc;
    ld.info_size = pc_size;
    ld.groups[0] = gx;
    ld.groups[1] = gy;
    ld.groups[2] = gz;
    ASSERT_OK(cubec_launch(d, 0, &ld));
}

/* ReLU_vulkan: in place on a blob of n vec4s, specializations {slope, n} (n = 0 when ncnn has
 * no shape hint: then psc(n) reads the push constant), local size {subgroup size, 1, 1}, push
 * constants {n}, dispatcher {n, 1, 1}. */
static void run_relu(ncnn_precision prec)
{
    cubec_device *d = test_device_open();
    if (prec == NCNN_FP16 && !has_fp16(d)) {
        test_device_close(d);
        return;
    }
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    const uint32_t n = 1000, lx = info.subgroup_size;
    float *v = malloc(4 * n * sizeof *v);
    assert_non_null(v);
    for (uint32_t i = 0; i < 4 * n; i++)
        v[i] = (float)(i % 97) * 0.25f - 12.0f; /* halves hold these and their eighths */

    const float slopes[2] = {0.0f, 0.125f};
    for (int s = 0; s < 2; s++) {
        /* ReLU with the shape as a constant; leaky ReLU without it (the push-constant path). */
        const uint32_t spec[2] = {f32_bits(slopes[s]), s == 0 ? n : 0};
        cubec_kernel k = ncnn_kernel(d, prec, "relu.comp", spec, 2, lx, 1, 1);
        cubec_buffer b = upload(d, prec, v, 4 * n);
        const uint32_t pc[1] = {n};
        launch(d, k, &b, 1, pc, sizeof pc, ceil_div(n, lx), 1, 1);
        float *out = download(d, prec, b, 4 * n);
        for (uint32_t i = 0; i < 4 * n; i++) {
            float want = v[i] < 0 ? v[i] * slopes[s] : v[i];
            if (out[i] != want)
                fail_msg("relu (slope %g) [%u]: %g, expected %g", (double)slopes[s], i,
                         (double)out[i], (double)want);
        }
        free(out);
        ASSERT_OK(cubec_buffer_release(d, b));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    free(v);
    test_device_close(d);
}

static void test_relu_fp32(void **state)
{
    (void)state;
    run_relu(NCNN_FP32);
}

static void test_relu_fp16(void **state)
{
    (void)state;
    run_relu(NCNN_FP16);
}

static void test_relu_fp16_packed(void **state)
{
    (void)state;
    run_relu(NCNN_FP16_PACKED);
}

/* Softmax_vulkan on a 2-D blob (w columns, h rows) along axis 1, each row: its four pipelines in
 * the order forward_inplace records them (reduce max, exp(v - max), reduce sum, divide), all
 * with the specializations {axis, the blob's dims w h d c cstep, the workspace's}, the push
 * constants of the same twelve values, bindings {blob, workspace}. The workspace is a 1-D blob
 * of h; the reductions run over it (local size min(4, w), min(4, h * d), min(4, c) of the
 * workspace), the element-wise passes over the blob (min(8, w), min(8, h), 1). */
static void run_softmax(ncnn_precision prec)
{
    cubec_device *d = test_device_open();
    if (prec == NCNN_FP16 && !has_fp16(d)) {
        test_device_close(d);
        return;
    }
    const uint32_t w = 37, h = 6, es = prec == NCNN_FP32 ? 4 : 2;
    const uint32_t cstep = ncnn_cstep(w * h, es), ws_w = h, ws_cstep = ncnn_cstep(ws_w, es);
    const int32_t shape[13] = {1, /* axis */
                               2, (int32_t)w,    (int32_t)h, 1, 1, (int32_t)cstep,
                               1, (int32_t)ws_w, 1,          1, 1, (int32_t)ws_cstep};
    uint32_t spec[13];
    memcpy(spec, shape, sizeof spec);
    const int32_t *pc = shape + 1; /* the push constants: everything but the axis */
    const uint32_t lr = ws_w < 4 ? ws_w : 4, lw = w < 8 ? w : 8, lh = h < 8 ? h : 8;

    /* All four passes store single halves. */
    if (packed_store_refused(d, prec, "softmax_reduce_max.comp", spec, 13, lr, 1, 1)) {
        assert_true(packed_store_refused(d, prec, "softmax_exp_sub_max.comp", spec, 13, lw, lh, 1));
        assert_true(packed_store_refused(d, prec, "softmax_reduce_sum.comp", spec, 13, lr, 1, 1));
        assert_true(packed_store_refused(d, prec, "softmax_div_sum.comp", spec, 13, lw, lh, 1));
        test_device_close(d);
        return;
    }
    cubec_kernel reduce_max = ncnn_kernel(d, prec, "softmax_reduce_max.comp", spec, 13, lr, 1, 1);
    cubec_kernel exp_sub_max =
        ncnn_kernel(d, prec, "softmax_exp_sub_max.comp", spec, 13, lw, lh, 1);
    cubec_kernel reduce_sum = ncnn_kernel(d, prec, "softmax_reduce_sum.comp", spec, 13, lr, 1, 1);
    cubec_kernel div_sum = ncnn_kernel(d, prec, "softmax_div_sum.comp", spec, 13, lw, lh, 1);

    float *x = calloc(cstep, sizeof *x);
    assert_non_null(x);
    uint32_t seed = 5;
    for (uint32_t i = 0; i < w * h; i++)
        x[i] = prec != NCNN_FP32 ? (float)(int)(test_randf(&seed) * 16.0f) * 0.125f
                                 : 3.0f * test_randf(&seed);
    cubec_buffer blob = upload(d, prec, x, cstep);
    cubec_buffer max_ws, sum_ws;
    ASSERT_OK(cubec_buffer_create(d, 0, (size_t)ws_cstep * es, &max_ws));
    ASSERT_OK(cubec_buffer_create(d, 0, (size_t)ws_cstep * es, &sum_ws));

    const uint32_t pc_size = 12 * sizeof(int32_t);
    cubec_buffer with_max[2] = {blob, max_ws}, with_sum[2] = {blob, sum_ws};
    launch(d, reduce_max, with_max, 2, pc, pc_size, ceil_div(ws_w, lr), 1, 1);
    launch(d, exp_sub_max, with_max, 2, pc, pc_size, ceil_div(w, lw), ceil_div(h, lh), 1);
    launch(d, reduce_sum, with_sum, 2, pc, pc_size, ceil_div(ws_w, lr), 1, 1);
    launch(d, div_sum, with_sum, 2, pc, pc_size, ceil_div(w, lw), ceil_div(h, lh), 1);
    float *out = download(d, prec, blob, w * h);

    /* fp16 keeps 11 bits: exp and the division each round, the sum of 37 halves rounds 37 times. */
    const double tol = prec != NCNN_FP32 ? 4e-3 : 2e-6;
    for (uint32_t r = 0; r < h; r++) {
        double mx = -INFINITY, sum = 0;
        for (uint32_t c = 0; c < w; c++)
            mx = fmax(mx, (double)x[r * w + c]);
        for (uint32_t c = 0; c < w; c++)
            sum += exp((double)x[r * w + c] - mx);
        for (uint32_t c = 0; c < w; c++) {
            double want = exp((double)x[r * w + c] - mx) / sum, got = out[r * w + c];
            if (fabs(got - want) > tol * want + tol * 0.01)
                fail_msg("softmax row %u col %u: %g, expected %g", r, c, got, want);
        }
    }
    free(out);
    free(x);
    ASSERT_OK(cubec_buffer_release(d, blob));
    ASSERT_OK(cubec_buffer_release(d, max_ws));
    ASSERT_OK(cubec_buffer_release(d, sum_ws));
    ASSERT_OK(cubec_kernel_destroy(d, reduce_max));
    ASSERT_OK(cubec_kernel_destroy(d, exp_sub_max));
    ASSERT_OK(cubec_kernel_destroy(d, reduce_sum));
    ASSERT_OK(cubec_kernel_destroy(d, div_sum));
    test_device_close(d);
}

static void test_softmax_fp32(void **state)
{
    (void)state;
    run_softmax(NCNN_FP32);
}

static void test_softmax_fp16(void **state)
{
    (void)state;
    run_softmax(NCNN_FP16);
}

static void test_softmax_fp16_packed(void **state)
{
    (void)state;
    run_softmax(NCNN_FP16_PACKED);
}

/* BinaryOp_vulkan for two 3-D blobs of one shape (pack1, no broadcast): specializations
 * {op_type, with_scalar, b, then dims w h*d c cstep of A, B and the output}, local size
 * min(4, w), min(4, h), min(4, c) of the output, push constants the same fifteen shape values,
 * bindings {A, B, top}, dispatcher the output. with_scalar = 1 is BinaryOp with a scalar b
 * (the spec constant const_b), B then unused but still bound, as ncnn binds it. */
static void run_binaryop(ncnn_precision prec)
{
    cubec_device *d = test_device_open();
    if (prec == NCNN_FP16 && !has_fp16(d)) {
        test_device_close(d);
        return;
    }
    const uint32_t w = 5, h = 3, c = 4, es = prec == NCNN_FP32 ? 4 : 2;
    const uint32_t cstep = ncnn_cstep(w * h, es), total = cstep * c;
    float *a = calloc(total, sizeof *a), *b = calloc(total, sizeof *b);
    assert_true(a && b);
    for (uint32_t q = 0; q < c; q++)
        for (uint32_t i = 0; i < w * h; i++) {
            uint32_t e = q * w * h + i;
            a[q * cstep + i] = (float)((int)(e % 13) - 6) * 0.5f;
            b[q * cstep + i] = (float)(e % 7 + 1) * 0.25f;
        }
    const int32_t shape[15] = {3, (int32_t)w, (int32_t)h, (int32_t)c, (int32_t)cstep,
                               3, (int32_t)w, (int32_t)h, (int32_t)c, (int32_t)cstep,
                               3, (int32_t)w, (int32_t)h, (int32_t)c, (int32_t)cstep};
    /* op types of binaryop.comp: 0 add, 2 mul, 3 div, 4 max, 7 rsub; then mul by a scalar. */
    const struct {
        int32_t op, with_scalar;
        float scalar;
    } cases[] = {{0, 0, 0}, {2, 0, 0}, {3, 0, 0}, {4, 0, 0}, {7, 0, 0}, {2, 1, 2.5f}};
    const uint32_t lx = w < 4 ? w : 4, ly = h < 4 ? h : 4, lz = c < 4 ? c : 4;
    uint32_t first_spec[18] = {0, 0, 0};
    memcpy(first_spec + 3, shape, sizeof shape);
    if (packed_store_refused(d, prec, "binaryop.comp", first_spec, 18, lx, ly, lz)) {
        free(a);
        free(b);
        test_device_close(d);
        return;
    }

    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        uint32_t spec[18];
        spec[0] = (uint32_t)cases[t].op;
        spec[1] = (uint32_t)cases[t].with_scalar;
        spec[2] = f32_bits(cases[t].scalar);
        memcpy(spec + 3, shape, sizeof shape);
        cubec_kernel k = ncnn_kernel(d, prec, "binaryop.comp", spec, 18, lx, ly, lz);
        cubec_buffer bufs[3];
        bufs[0] = upload(d, prec, a, total);
        bufs[1] = upload(d, prec, b, total);
        ASSERT_OK(cubec_buffer_create(d, 0, (size_t)total * es, &bufs[2]));
        launch(d, k, bufs, 3, shape, sizeof shape, ceil_div(w, lx), ceil_div(h, ly),
               ceil_div(c, lz));
        float *out = download(d, prec, bufs[2], total);
        for (uint32_t q = 0; q < c; q++)
            for (uint32_t i = 0; i < w * h; i++) {
                uint32_t at = q * cstep + i;
                float x = a[at], y = cases[t].with_scalar ? cases[t].scalar : b[at], want = 0;
                switch (cases[t].op) {
                case 0: want = x + y; break;
                case 2: want = x * y; break;
                case 3: want = x / y; break;
                case 4: want = x > y ? x : y; break;
                default: want = y - x; break;
                }
                /* Every result but a quotient is exact in both precisions; a quotient is
                 * rounded once (fp16: to 11 bits; fp32: within the 2.5 ulp Vulkan allows). */
                double tol = cases[t].op != 3 ? 0 : prec != NCNN_FP32 ? 1e-3 : 1e-6;
                if (prec != NCNN_FP32) want = corpus_half_to_float(corpus_float_to_half(want));
                if (fabs((double)out[at] - (double)want) > tol * fabs((double)want))
                    fail_msg("binaryop op %d (scalar %d) channel %u [%u]: %g, expected %g",
                             cases[t].op, cases[t].with_scalar, q, i, (double)out[at],
                             (double)want);
            }
        free(out);
        for (int i = 0; i < 3; i++)
            ASSERT_OK(cubec_buffer_release(d, bufs[i]));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    free(a);
    free(b);
    test_device_close(d);
}

static void test_binaryop_fp32(void **state)
{
    (void)state;
    run_binaryop(NCNN_FP32);
}

static void test_binaryop_fp16(void **state)
{
    (void)state;
    run_binaryop(NCNN_FP16);
}

static void test_binaryop_fp16_packed(void **state)
{
    (void)state;
    run_binaryop(NCNN_FP16_PACKED);
}

/* InnerProduct_vulkan's pipeline for pack1 blobs with fewer than 32 inputs (num_input and
 * num_output not multiples of 4): innerproduct.comp, specializations {bias_term,
 * activation_type, activation_params[0], [1], then dims w h c cstep of the flattened input and
 * of the output}, local size {min(64, out w), 1, 1}, bindings {bottom, top, weight, bias}, push
 * constants the ten shape values, dispatcher the output. Leaky ReLU (activation 2) with slope
 * 0.1 after the bias, from vulkan_activation.comp, included as innerproduct.comp includes it.
 * All three precisions. */
static void run_innerproduct(ncnn_precision prec)
{
    cubec_device *d = test_device_open();
    if (prec == NCNN_FP16 && !has_fp16(d)) {
        test_device_close(d);
        return;
    }
    const uint32_t num_input = 27, num_output = 13, es = prec == NCNN_FP32 ? 4 : 2;
    const uint32_t in_cstep = ncnn_cstep(num_input, es), out_cstep = ncnn_cstep(num_output, es);
    const int32_t shape[10] = {1, (int32_t)num_input,  1, 1, (int32_t)in_cstep,
                               1, (int32_t)num_output, 1, 1, (int32_t)out_cstep};
    uint32_t spec[14] = {1, 2, f32_bits(0.1f), f32_bits(0.0f)};
    memcpy(spec + 4, shape, sizeof shape);
    const uint32_t lx = num_output < 64 ? num_output : 64;
    if (packed_store_refused(d, prec, "innerproduct.comp", spec, 14, lx, 1, 1)) {
        test_device_close(d);
        return;
    }
    cubec_kernel k = ncnn_kernel(d, prec, "innerproduct.comp", spec, 14, lx, 1, 1);

    /* Inputs rounded to what the buffers hold, so that the reference starts from the same. */
    float x[27], weight[13 * 27], bias[13];
    uint32_t seed = 3;
    for (uint32_t i = 0; i < num_input; i++)
        x[i] = test_randf(&seed);
    for (uint32_t i = 0; i < num_input * num_output; i++)
        weight[i] = test_randf(&seed); /* row q: output q's weights (weight_data_packed) */
    for (uint32_t i = 0; i < num_output; i++)
        bias[i] = test_randf(&seed);
    if (prec != NCNN_FP32) {
        for (uint32_t i = 0; i < num_input; i++)
            x[i] = corpus_half_to_float(corpus_float_to_half(x[i]));
        for (uint32_t i = 0; i < num_input * num_output; i++)
            weight[i] = corpus_half_to_float(corpus_float_to_half(weight[i]));
        for (uint32_t i = 0; i < num_output; i++)
            bias[i] = corpus_half_to_float(corpus_float_to_half(bias[i]));
    }
    /* Each blob as ncnn allocates it: its cstep, a multiple of 16 bytes. That matters for fp16
     * packed, which reads halves two to a uint: 27 halves end inside their 14th word. */
    const uint32_t weight_cstep = ncnn_cstep(num_input * num_output, es);
    const uint32_t bias_cstep = ncnn_cstep(num_output, es);
    float x_blob[32] = {0}, weight_blob[13 * 27 + 16] = {0}, bias_blob[16] = {0};
    assert_true(in_cstep <= 32 && weight_cstep <= 13 * 27 + 16 && bias_cstep <= 16);
    memcpy(x_blob, x, sizeof x);
    memcpy(weight_blob, weight, sizeof weight);
    memcpy(bias_blob, bias, sizeof bias);
    cubec_buffer bufs[4];
    bufs[0] = upload(d, prec, x_blob, in_cstep);
    ASSERT_OK(cubec_buffer_create(d, 0, (size_t)out_cstep * es, &bufs[1]));
    bufs[2] = upload(d, prec, weight_blob, weight_cstep);
    bufs[3] = upload(d, prec, bias_blob, bias_cstep);
    launch(d, k, bufs, 4, shape, sizeof shape, ceil_div(num_output, lx), 1, 1);
    float *out = download(d, prec, bufs[1], num_output);
    /* fp32 sums 27 products; fp16 arithmetic rounds each of the 27 steps to 11 bits (at most
     * 27 x 2^-11 of the terms' magnitudes); fp16 packed sums in fp32 and rounds the store. */
    const double tol_mag = prec == NCNN_FP16 ? 2e-2 : 1e-6;
    const double tol_rel = prec == NCNN_FP32 ? 0 : 1e-3;
    for (uint32_t q = 0; q < num_output; q++) {
        double sum = bias[q], mag = fabs(bias[q]);
        for (uint32_t i = 0; i < num_input; i++) {
            sum += (double)weight[q * num_input + i] * (double)x[i];
            mag += fabs((double)weight[q * num_input + i] * (double)x[i]);
        }
        double want = sum < 0 ? sum * (double)0.1f : sum;
        if (fabs((double)out[q] - want) > tol_mag * mag + tol_rel * fabs(want))
            fail_msg("innerproduct output %u: %g, expected %g", q, (double)out[q], want);
    }
    free(out);
    for (int i = 0; i < 4; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

static void test_innerproduct_fp32(void **state)
{
    (void)state;
    run_innerproduct(NCNN_FP32);
}

static void test_innerproduct_fp16(void **state)
{
    (void)state;
    run_innerproduct(NCNN_FP16);
}

static void test_innerproduct_fp16_packed(void **state)
{
    (void)state;
    run_innerproduct(NCNN_FP16_PACKED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relu_fp32),
        cmocka_unit_test(test_relu_fp16),
        cmocka_unit_test(test_relu_fp16_packed),
        cmocka_unit_test(test_softmax_fp32),
        cmocka_unit_test(test_softmax_fp16),
        cmocka_unit_test(test_softmax_fp16_packed),
        cmocka_unit_test(test_binaryop_fp32),
        cmocka_unit_test(test_binaryop_fp16),
        cmocka_unit_test(test_binaryop_fp16_packed),
        cmocka_unit_test(test_innerproduct_fp32),
        cmocka_unit_test(test_innerproduct_fp16),
        cmocka_unit_test(test_innerproduct_fp16_packed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
