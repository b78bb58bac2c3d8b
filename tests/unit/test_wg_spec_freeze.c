/* Unit tests of gpu/webgpu/wg_spec_freeze: specialization constants frozen into SPIR-V for the
 * WebGPU backend's translator (naga refuses them in workgroup sizes, array lengths and
 * expressions). GLSL compiled here, frozen, and each module checked word by word against the
 * values computed here, then validated and reflected (kernel/reflect: the SPIR-V validator), so
 * the module a translator gets is valid SPIR-V with the right shape. No device is needed. */
#include "gpu/webgpu/wg_spec_freeze.h"
#include "kernel/glsl_compiler.h"
#include "kernel/reflect.h"
#include "kernel_test_util.h"

/* cmocka.h needs these headers before it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

/* The workgroup size, a shared array and expressions of integers and booleans from
 * specialization constants, a float one, and a division that a value can make one by zero. */
static const char shapes_src[] =
    "#version 450\n"
    "layout(local_size_x_id = 0) in;\n"
    "layout(constant_id = 0) const uint BLOCK = 32u;\n"
    "layout(constant_id = 1) const int K = 3;\n"
    "layout(constant_id = 2) const bool FLIP = false;\n"
    "layout(constant_id = 3) const float SCALE = 1.5;\n"
    "const uint M = BLOCK * 7u + 3u;\n"
    "const int Q = -K / 2;\n"
    "const uint S = BLOCK << 4u;\n"
    "const bool B = FLIP || (BLOCK > 40u);\n"
    "const uint D = 960u / (BLOCK - 48u);\n"
    "shared uint s[M];\n"
    "layout(std430, binding = 0) buffer Y { uint y[]; };\n"
    "void main() {\n"
    "  uint i = gl_LocalInvocationID.x;\n"
    "  s[i] = i;\n"
    "  barrier();\n"
    "  y[i] = s[(i + 1u) % gl_WorkGroupSize.x] + S + uint(Q) + (B ? 1u : 0u) + D +\n"
    "         uint(float(i) * SCALE);\n"
    "}\n";

enum {
    OP_EXECUTION_MODE = 16,
    OP_TYPE_INT = 21,
    OP_TYPE_FLOAT = 22,
    OP_CONSTANT = 43,
    OP_SPEC_CONSTANT_TRUE = 48,
    OP_SPEC_CONSTANT_OP = 52,
    OP_DECORATE = 71,
    OP_UDIV = 134,
    MODE_LOCAL_SIZE = 17,
    DECORATION_SPEC_ID = 1,
};

static void compile(void **state, const char *src, uint32_t **words, size_t *n)
{
    expect_ok(glsl_compile(*state, "freeze", src, NULL, 0, NULL, 0, GLSL_INFO_PUSH, words, n));
}

/* What the frozen module holds: counts of what must be gone, the LocalSize, and whether each of
 * `want` (32-bit integer constants) and a float constant of `float_bits` are there. */
typedef struct seen {
    uint32_t spec_instructions; /* OpSpecConstant* (48..52) */
    uint32_t spec_ops;          /* of them, OpSpecConstantOp */
    uint32_t spec_udiv;         /* ... of UDiv */
    uint32_t spec_ids;          /* OpDecorate SpecId */
    uint32_t local_size[3];
    int found[8];
    int float_found;
} seen;

static void look(const uint32_t *w, size_t n, const uint32_t *want, int want_count,
                 uint32_t float_bits, seen *out)
{
    memset(out, 0, sizeof *out);
    uint32_t ints[64], floats[8], ni = 0, nf = 0;
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        assert_true(len > 0 && i + len <= n);
        if (op == OP_TYPE_INT && w[i + 2] == 32 && ni < 64) ints[ni++] = w[i + 1];
        if (op == OP_TYPE_FLOAT && w[i + 2] == 32 && nf < 8) floats[nf++] = w[i + 1];
        if (op >= OP_SPEC_CONSTANT_TRUE && op <= OP_SPEC_CONSTANT_OP) out->spec_instructions++;
        if (op == OP_SPEC_CONSTANT_OP) {
            out->spec_ops++;
            if (w[i + 3] == OP_UDIV) out->spec_udiv++;
        }
        if (op == OP_DECORATE && w[i + 2] == DECORATION_SPEC_ID) out->spec_ids++;
        if (op == OP_EXECUTION_MODE && w[i + 2] == MODE_LOCAL_SIZE)
            memcpy(out->local_size, &w[i + 3], sizeof out->local_size);
        if (op == OP_CONSTANT && len == 4) {
            for (uint32_t t = 0; t < ni; t++)
                if (w[i + 1] == ints[t])
                    for (int k = 0; k < want_count; k++)
                        if (w[i + 3] == want[k]) out->found[k] = 1;
            for (uint32_t t = 0; t < nf; t++)
                if (w[i + 1] == floats[t] && w[i + 3] == float_bits) out->float_found = 1;
        }
        i += len;
    }
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Values given for every constant: all of them frozen, the expressions folded to the values
 * computed here, the workgroup size in LocalSize, and a module the validator accepts whose
 * reflection has no specialization constant left and the specialized sizes. */
static void test_given_values_frozen_and_folded(void **state)
{
    uint32_t *words = NULL, *out = NULL;
    size_t n = 0, out_n = 0;
    compile(state, shapes_src, &words, &n);
    const uint32_t block = 56;
    const int32_t k = 5;
    const gpu_spec_constant spec[] = {{0, block}, {1, (uint32_t)k}, {2, 0}, {3, bits_of(2.5f)}};
    expect_ok(wg_spec_freeze(words, n, spec, 4, &out, &out_n));
    const uint32_t want[] = {block * 7u + 3u, block << 4u, (uint32_t)(-k / 2),
                             960u / (block - 48u)};
    seen s;
    look(out, out_n, want, 4, bits_of(2.5f), &s);
    assert_int_equal(s.spec_instructions, 0);
    assert_int_equal(s.spec_ids, 0);
    assert_int_equal(s.local_size[0], block);
    assert_int_equal(s.local_size[1], 1);
    assert_int_equal(s.local_size[2], 1);
    for (int i = 0; i < 4; i++)
        if (!s.found[i]) fail_msg("no constant of value %u (expression %d)", want[i], i);
    assert_true(s.float_found);
    kernel_reflection r;
    expect_ok(kernel_reflect(out, out_n, NULL, 0, &r));
    assert_int_equal(r.spec_count, 0);
    assert_int_equal(r.workgroup_size[0], block);
    assert_int_equal(r.shared_memory_size, (block * 7u + 3u) * 4u);
    free(out);
    free(words);
}

/* No values given: the defaults frozen. glslang gives local_size_x_id = 0 a constant of its own
 * (SpecId 0 as BLOCK, default 1 where no local_size_x is given): the workgroup size is 1 with the
 * defaults, as the original module's reflection says too. */
static void test_defaults_frozen(void **state)
{
    uint32_t *words = NULL, *out = NULL;
    size_t n = 0, out_n = 0;
    compile(state, shapes_src, &words, &n);
    expect_ok(wg_spec_freeze(words, n, NULL, 0, &out, &out_n));
    const uint32_t want[] = {32u * 7u + 3u, 32u << 4u, (uint32_t)(-3 / 2)};
    seen s;
    look(out, out_n, want, 3, bits_of(1.5f), &s);
    assert_int_equal(s.spec_instructions, 0);
    assert_int_equal(s.local_size[0], 1);
    for (int i = 0; i < 3; i++)
        if (!s.found[i]) fail_msg("no constant of value %u (expression %d)", want[i], i);
    assert_true(s.float_found);
    kernel_reflection r, before;
    expect_ok(kernel_reflect(words, n, NULL, 0, &before));
    expect_ok(kernel_reflect(out, out_n, NULL, 0, &r));
    assert_int_equal(r.spec_count, 0);
    assert_int_equal(before.workgroup_size[0], 1);
    assert_int_equal(r.workgroup_size[0], 1);
    assert_int_equal(r.shared_memory_size, before.shared_memory_size);
    free(out);
    free(words);
}

/* A value that makes a division one by zero (undefined in SPIR-V): that expression stays for the
 * translator to refuse; every other constant is frozen all the same. */
static void test_division_by_zero_left_alone(void **state)
{
    uint32_t *words = NULL, *out = NULL;
    size_t n = 0, out_n = 0;
    compile(state, shapes_src, &words, &n);
    const gpu_spec_constant spec[] = {{0, 48}};
    expect_ok(wg_spec_freeze(words, n, spec, 1, &out, &out_n));
    const uint32_t want[] = {48u * 7u + 3u};
    seen s;
    look(out, out_n, want, 1, bits_of(1.5f), &s);
    assert_int_equal(s.spec_ops, 1);
    assert_int_equal(s.spec_udiv, 1);
    assert_int_equal(s.spec_instructions, 1);
    assert_int_equal(s.spec_ids, 0);
    assert_int_equal(s.local_size[0], 48);
    assert_true(s.found[0]);
    free(out);
    free(words);
}

/* A half made from a float specialization constant (ncnn's afp(slope) in its fp16 path):
 * glslang emits OpSpecConstantOp FConvert, which naga refuses; it is folded, rounded to nearest
 * even, into an OpConstant of the half type. */
static void test_float_conversion_folded(void **state)
{
    static const char half_src[] =
        "#version 450\n"
        "#extension GL_EXT_shader_explicit_arithmetic_types_float16: require\n"
        "#extension GL_EXT_shader_16bit_storage: require\n"
        "layout(local_size_x = 1) in;\n"
        "layout(constant_id = 0) const float SLOPE = 0.5;\n"
        "const float16_t H = float16_t(SLOPE);\n"
        "layout(std430, binding = 0) buffer Y { float16_t y[]; };\n"
        "void main() { y[gl_GlobalInvocationID.x] *= H; }\n";
    uint32_t *words = NULL, *out = NULL;
    size_t n = 0, out_n = 0;
    compile(state, half_src, &words, &n);
    /* 1/3 lies between two halves (0x3555 and 0x3556): nearer the first. 65520 ties between
     * the largest half and infinity: even goes up, to infinity. */
    const float given[] = {1.0f / 3.0f, 2.5f, 65520.0f, 1e-7f};
    const uint32_t want[] = {0x3555u, 0x4100u, 0x7c00u, 0x0002u};
    for (int g = 0; g < 4; g++) {
        const gpu_spec_constant spec[] = {{0, bits_of(given[g])}};
        expect_ok(wg_spec_freeze(words, n, spec, 1, &out, &out_n));
        seen s;
        look(out, out_n, NULL, 0, 0, &s);
        assert_int_equal(s.spec_instructions, 0);
        uint32_t half_type = 0;
        int found = 0;
        for (size_t i = 5; i < out_n;) {
            uint32_t op = out[i] & 0xffffu, len = out[i] >> 16;
            if (op == OP_TYPE_FLOAT && out[i + 2] == 16) half_type = out[i + 1];
            if (op == OP_CONSTANT && half_type && out[i + 1] == half_type && len == 4 &&
                out[i + 3] == want[g])
                found = 1;
            i += len;
        }
        if (!found) fail_msg("no half constant 0x%04x for %g", want[g], (double)given[g]);
        kernel_reflection r;
        expect_ok(kernel_reflect(out, out_n, NULL, 0, &r));
        assert_int_equal(r.spec_count, 0);
        free(out);
    }
    free(words);
}

/* A module without specialization constants comes back word for word. */
static void test_plain_module_unchanged(void **state)
{
    static const char plain_src[] = "#version 450\n"
                                    "layout(local_size_x = 64) in;\n"
                                    "layout(std430, binding = 0) buffer Y { uint y[]; };\n"
                                    "void main() { y[gl_GlobalInvocationID.x] *= 3u; }\n";
    uint32_t *words = NULL, *out = NULL;
    size_t n = 0, out_n = 0;
    compile(state, plain_src, &words, &n);
    const gpu_spec_constant spec[] = {{0, 7}};
    expect_ok(wg_spec_freeze(words, n, spec, 1, &out, &out_n));
    assert_int_equal(out_n, n);
    assert_memory_equal(out, words, n * sizeof *words);
    free(out);
    free(words);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_given_values_frozen_and_folded),
        cmocka_unit_test(test_defaults_frozen),
        cmocka_unit_test(test_division_by_zero_left_alone),
        cmocka_unit_test(test_float_conversion_folded),
        cmocka_unit_test(test_plain_module_unchanged),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
