/* Unit tests of gpu/webgpu/wg_spirv_nonfinite: infinite and NaN float constants, which naga
 * refuses ("Float literal is infinite"), computed in each function that uses them. Modules are
 * assembled here from SPIR-V text, rewritten, validated (SPIRV-Tools, Vulkan 1.2 rules) and
 * followed from each use back to the bits it computes, which must be the literal's bits the
 * source wrote. No device is needed. */
#include "gpu/webgpu/wg_spirv_nonfinite.h"
#include "kernel_test_util.h"

/* cmocka.h needs these headers before it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define kDefaultMaxIdBound test_wg_spirv_nonfinite_max_id_bound_
#include <spirv-tools/libspirv.h>
#undef kDefaultMaxIdBound

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OP_NAME = 5,
    OP_TYPE_INT = 21,
    OP_TYPE_FLOAT = 22,
    OP_CONSTANT = 43,
    OP_FUNCTION = 54,
    OP_FUNCTION_END = 56,
    OP_VARIABLE = 59,
    OP_STORE = 62,
    OP_COMPOSITE_CONSTRUCT = 80,
    OP_FCONVERT = 115,
    OP_BITCAST = 124,
    OP_RETURN_VALUE = 254,
};

static const char head[] = "OpCapability Shader\n"
                           "OpMemoryModel Logical GLSL450\n"
                           "OpEntryPoint GLCompute %main \"main\" %buf\n"
                           "OpExecutionMode %main LocalSize 1 1 1\n";

/* The storage buffer of floats every module writes (binding 0), and its types. */
static const char buffer_decl[] = "OpDecorate %arr ArrayStride 4\n"
                                  "OpDecorate %blk Block\n"
                                  "OpMemberDecorate %blk 0 Offset 0\n"
                                  "OpDecorate %buf DescriptorSet 0\n"
                                  "OpDecorate %buf Binding 0\n";
static const char buffer_types[] = "%void = OpTypeVoid\n"
                                   "%fn = OpTypeFunction %void\n"
                                   "%float = OpTypeFloat 32\n"
                                   "%int = OpTypeInt 32 1\n"
                                   "%arr = OpTypeRuntimeArray %float\n"
                                   "%blk = OpTypeStruct %arr\n"
                                   "%pblk = OpTypePointer StorageBuffer %blk\n"
                                   "%pf = OpTypePointer StorageBuffer %float\n"
                                   "%buf = OpVariable %pblk StorageBuffer\n"
                                   "%i0 = OpConstant %int 0\n"
                                   "%i1 = OpConstant %int 1\n"
                                   "%i2 = OpConstant %int 2\n"
                                   "%i3 = OpConstant %int 3\n"
                                   "%one = OpConstant %float 1\n";

static uint32_t *assemble(const char *text, size_t *n)
{
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    assert_non_null(ctx);
    spv_binary bin = NULL;
    spv_diagnostic diag = NULL;
    spv_result_t res = spvTextToBinary(ctx, text, strlen(text), &bin, &diag);
    if (res != SPV_SUCCESS) fail_msg("assembly: %s", diag ? diag->error : "?");
    uint32_t *words = malloc(bin->wordCount * sizeof *words);
    assert_non_null(words);
    memcpy(words, bin->code, bin->wordCount * sizeof *words);
    *n = bin->wordCount;
    spvBinaryDestroy(bin);
    spvContextDestroy(ctx);
    return words;
}

/* The rewritten module, read back: where each id is defined (word index), and the checks every
 * rewrite must pass. */
typedef struct module {
    const uint32_t *w;
    size_t n;
    size_t *def; /* by id */
} module;

static module read_module(const uint32_t *w, size_t n)
{
    module m = {w, n, calloc(w[3], sizeof(size_t))};
    assert_non_null(m.def);
    /* Instructions whose result id is their second word (a result type first). */
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        assert_true(len > 0 && i + len <= n);
        if (op == OP_TYPE_INT || op == OP_TYPE_FLOAT) m.def[w[i + 1]] = i;
        if ((op == OP_CONSTANT || op == OP_BITCAST || op == OP_FCONVERT ||
             op == OP_COMPOSITE_CONSTRUCT || op == OP_VARIABLE) &&
            len >= 3 && w[i + 2] < w[3])
            m.def[w[i + 2]] = i;
        i += len;
    }
    return m;
}

static uint32_t op_of(const module *m, uint32_t id)
{
    return m->def[id] ? m->w[m->def[id]] & 0xffffu : 0;
}

/* The 32 bits that `id` computes: an OpBitcast of a 32-bit integer constant; through an
 * OpFConvert when `converted` (set to the width of the float converted to). */
static uint32_t bits_of(const module *m, uint32_t id, uint32_t *converted)
{
    *converted = 0;
    if (op_of(m, id) == OP_FCONVERT) {
        const uint32_t *fc = &m->w[m->def[id]];
        *converted = m->w[m->def[fc[1]] + 2];
        id = fc[3];
    }
    assert_int_equal(op_of(m, id), OP_BITCAST);
    uint32_t source = m->w[m->def[id] + 3];
    assert_int_equal(op_of(m, source), OP_CONSTANT);
    const uint32_t *c = &m->w[m->def[source]];
    const uint32_t *type = &m->w[m->def[c[1]]];
    assert_int_equal(type[0] & 0xffffu, OP_TYPE_INT);
    assert_int_equal(type[2], 32);
    return c[3];
}

/* No float OpConstant of an infinite or NaN value, and no OpName of `gone`. */
static void expect_no_nonfinite(const module *m, const char *gone)
{
    for (size_t i = 5; i < m->n;) {
        uint32_t op = m->w[i] & 0xffffu, len = m->w[i] >> 16;
        if (op == OP_CONSTANT && op_of(m, m->w[i + 1]) == OP_TYPE_FLOAT) {
            uint32_t width = m->w[m->def[m->w[i + 1]] + 2];
            uint32_t hi = m->w[i + len - 1];
            uint32_t exp = width == 16 ? 0x7c00u : width == 32 ? 0x7f800000u : 0x7ff00000u;
            if ((hi & exp) == exp) fail_msg("an infinite or NaN constant is left at word %zu", i);
        }
        if (op == OP_NAME && gone && strcmp((const char *)&m->w[i + 2], gone) == 0)
            fail_msg("the name of a constant that left the module is left: %s", gone);
        i += len;
    }
}

/* The values of the OpStore (or OpReturnValue) instructions of the function named by its
 * position (0 first), in order. */
static uint32_t stored_values(const module *m, uint32_t function, uint32_t opcode, uint32_t *out,
                              uint32_t max)
{
    uint32_t count = 0, f = 0;
    int in = 0;
    for (size_t i = 5; i < m->n;) {
        uint32_t op = m->w[i] & 0xffffu, len = m->w[i] >> 16;
        if (op == OP_FUNCTION) in = f++ == function;
        if (op == OP_FUNCTION_END) in = 0;
        if (in && op == opcode && count < max)
            out[count++] = opcode == OP_STORE ? m->w[i + 2] : m->w[i + 1];
        i += len;
    }
    return count;
}

static void rewrite(const char *text, uint32_t **out, size_t *out_n)
{
    size_t n = 0;
    uint32_t *w = assemble(text, &n);
    cubec_status err = wg_spirv_nonfinite(w, n, out, out_n);
    if (err) fail_msg("wg_spirv_nonfinite: %s", cubec_status_message(err));
    free(w);
}

/* +inf, -inf and a NaN with a payload, used by two functions: each function computes its own,
 * the integer type the module lacked is added, and every use reads the literal's bits. */
static void test_scalars_become_bitcasts_per_function(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof text,
             "%s"
             "OpName %%pinf \"pinf\"\n"
             "%s%s"
             "%%ffn = OpTypeFunction %%float\n"
             "%%pinf = OpConstant %%float 0x1p+128\n"
             "%%ninf = OpConstant %%float -0x1p+128\n"
             "%%nan = OpConstant %%float 0x1.800246p+128\n"
             "%%helper = OpFunction %%float None %%ffn\n"
             "%%hl = OpLabel\n"
             "OpReturnValue %%ninf\n"
             "OpFunctionEnd\n"
             "%%main = OpFunction %%void None %%fn\n"
             "%%ml = OpLabel\n"
             "%%p0 = OpAccessChain %%pf %%buf %%i0 %%i0\n"
             "OpStore %%p0 %%pinf\n"
             "%%p1 = OpAccessChain %%pf %%buf %%i0 %%i1\n"
             "OpStore %%p1 %%ninf\n"
             "%%p2 = OpAccessChain %%pf %%buf %%i0 %%i2\n"
             "OpStore %%p2 %%nan\n"
             "%%h = OpFunctionCall %%float %%helper\n"
             "%%s = OpFAdd %%float %%h %%one\n"
             "%%p3 = OpAccessChain %%pf %%buf %%i0 %%i3\n"
             "OpStore %%p3 %%s\n"
             "OpReturn\n"
             "OpFunctionEnd\n",
             head, buffer_decl, buffer_types);
    uint32_t *out = NULL;
    size_t n = 0;
    rewrite(text, &out, &n);
    assert_non_null(out);
    expect_valid_spirv(out, n, "the rewritten module");
    module m = read_module(out, n);
    expect_no_nonfinite(&m, "pinf");

    uint32_t values[8] = {0}, conv = 0;
    assert_int_equal(stored_values(&m, 0, OP_RETURN_VALUE, values, 8), 1);
    assert_int_equal(bits_of(&m, values[0], &conv), 0xff800000u);
    assert_int_equal(stored_values(&m, 1, OP_STORE, values, 8), 4);
    const uint32_t want[3] = {0x7f800000u, 0xff800000u, 0x7fc00123u};
    for (int i = 0; i < 3; i++)
        assert_int_equal(bits_of(&m, values[i], &conv), want[i]);
    /* Each function has its own value: the helper's -inf is not main's. */
    uint32_t ret[1] = {0};
    stored_values(&m, 0, OP_RETURN_VALUE, ret, 1);
    assert_int_not_equal(ret[0], values[1]);
    free(m.def);
    free(out);
}

/* A vector constant holding infinities: rebuilt where it is used, its finite parts the module's
 * constants. */
static void test_composite_rebuilt(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof text,
             "%s"
             "OpDecorate %%arr4 ArrayStride 16\n"
             "OpDecorate %%blk4 Block\n"
             "OpMemberDecorate %%blk4 0 Offset 0\n"
             "OpDecorate %%buf4 DescriptorSet 0\n"
             "OpDecorate %%buf4 Binding 1\n"
             "%s%s"
             "%%v4 = OpTypeVector %%float 4\n"
             "%%arr4 = OpTypeRuntimeArray %%v4\n"
             "%%blk4 = OpTypeStruct %%arr4\n"
             "%%pblk4 = OpTypePointer StorageBuffer %%blk4\n"
             "%%pv4 = OpTypePointer StorageBuffer %%v4\n"
             "%%buf4 = OpVariable %%pblk4 StorageBuffer\n"
             "%%uint = OpTypeInt 32 0\n"
             "%%pinf = OpConstant %%float 0x1p+128\n"
             "%%ninf = OpConstant %%float -0x1p+128\n"
             "%%vec = OpConstantComposite %%v4 %%one %%pinf %%ninf %%one\n"
             "%%main = OpFunction %%void None %%fn\n"
             "%%ml = OpLabel\n"
             "%%p = OpAccessChain %%pv4 %%buf4 %%i0 %%i0\n"
             "OpStore %%p %%vec\n"
             "OpReturn\n"
             "OpFunctionEnd\n",
             head, buffer_decl, buffer_types);
    /* The entry point's interface names both buffers. */
    char *iface = strstr(text, "%buf\n");
    assert_non_null(iface);
    memmove(iface + 11, iface + 5, strlen(iface + 5) + 1);
    memcpy(iface, "%buf %buf4\n", 11);
    uint32_t *out = NULL;
    size_t n = 0;
    rewrite(text, &out, &n);
    assert_non_null(out);
    expect_valid_spirv(out, n, "the rewritten module");
    module m = read_module(out, n);
    expect_no_nonfinite(&m, NULL);
    uint32_t values[2] = {0}, conv = 0;
    assert_int_equal(stored_values(&m, 0, OP_STORE, values, 2), 1);
    assert_int_equal(op_of(&m, values[0]), OP_COMPOSITE_CONSTRUCT);
    const uint32_t *cc = &m.w[m.def[values[0]]];
    assert_int_equal(cc[0] >> 16, 7);
    assert_int_equal(op_of(&m, cc[3]), OP_CONSTANT);
    assert_int_equal(m.w[m.def[cc[3]] + 3], 0x3f800000u); /* 1.0 */
    assert_int_equal(bits_of(&m, cc[4], &conv), 0x7f800000u);
    assert_int_equal(bits_of(&m, cc[5], &conv), 0xff800000u);
    assert_int_equal(cc[6], cc[3]);
    free(m.def);
    free(out);
}

/* A function variable initialised from -inf: declared without it and stored to. */
static void test_function_variable_initializer_stored(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof text,
             "%s%s%s"
             "%%pff = OpTypePointer Function %%float\n"
             "%%ninf = OpConstant %%float -0x1p+128\n"
             "%%main = OpFunction %%void None %%fn\n"
             "%%ml = OpLabel\n"
             "%%v = OpVariable %%pff Function %%ninf\n"
             "%%l = OpLoad %%float %%v\n"
             "%%p = OpAccessChain %%pf %%buf %%i0 %%i0\n"
             "OpStore %%p %%l\n"
             "OpReturn\n"
             "OpFunctionEnd\n",
             head, buffer_decl, buffer_types);
    uint32_t *out = NULL;
    size_t n = 0;
    rewrite(text, &out, &n);
    assert_non_null(out);
    expect_valid_spirv(out, n, "the rewritten module");
    module m = read_module(out, n);
    expect_no_nonfinite(&m, NULL);
    uint32_t values[2] = {0}, conv = 0;
    /* The first store is the initialisation, to the variable, before the load's store. */
    assert_int_equal(stored_values(&m, 0, OP_STORE, values, 2), 2);
    assert_int_equal(bits_of(&m, values[0], &conv), 0xff800000u);
    for (size_t i = 5; i < n;) {
        uint32_t op = out[i] & 0xffffu, len = out[i] >> 16;
        if (op == OP_VARIABLE && out[i + 3] == 7 /* Function */) assert_int_equal(len, 4);
        i += len;
    }
    free(m.def);
    free(out);
}

/* A half -inf and a double NaN: the 32-bit float of the same class, converted. */
static void test_half_and_double_converted(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof text,
             "OpCapability Float16\nOpCapability Float64\n%s%s%s"
             "%%half = OpTypeFloat 16\n"
             "%%double = OpTypeFloat 64\n"
             "%%hinf = OpConstant %%half -0x1p+16\n"
             "%%dnan = OpConstant %%double 0x1.8p+1024\n"
             "%%main = OpFunction %%void None %%fn\n"
             "%%ml = OpLabel\n"
             "%%h = OpFConvert %%float %%hinf\n"
             "%%d = OpFConvert %%float %%dnan\n"
             "%%p0 = OpAccessChain %%pf %%buf %%i0 %%i0\n"
             "OpStore %%p0 %%h\n"
             "%%p1 = OpAccessChain %%pf %%buf %%i0 %%i1\n"
             "OpStore %%p1 %%d\n"
             "OpReturn\n"
             "OpFunctionEnd\n",
             head, buffer_decl, buffer_types);
    uint32_t *out = NULL;
    size_t n = 0;
    rewrite(text, &out, &n);
    assert_non_null(out);
    expect_valid_spirv(out, n, "the rewritten module");
    module m = read_module(out, n);
    expect_no_nonfinite(&m, NULL);
    uint32_t values[2] = {0}, conv = 0;
    assert_int_equal(stored_values(&m, 0, OP_STORE, values, 2), 2);
    /* Each stored value is the kernel's own conversion of the rebuilt constant. */
    const uint32_t want[2] = {0xff800000u, 0x7fc00000u}, width[2] = {16, 64};
    for (int i = 0; i < 2; i++) {
        const uint32_t *kernel_conv = &m.w[m.def[values[i]]];
        assert_int_equal(kernel_conv[0] & 0xffffu, OP_FCONVERT);
        assert_int_equal(bits_of(&m, kernel_conv[3], &conv), want[i]);
        assert_int_equal(conv, width[i]);
    }
    free(m.def);
    free(out);
}

/* A module-scope variable initialised from +inf cannot take a computed value: the module is left
 * as it is, for naga to refuse by its own message. So is a module without such constants. */
static void test_left_alone(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof text,
             "%s%s%s"
             "%%ppf = OpTypePointer Private %%float\n"
             "%%pinf = OpConstant %%float 0x1p+128\n"
             "%%g = OpVariable %%ppf Private %%pinf\n"
             "%%main = OpFunction %%void None %%fn\n"
             "%%ml = OpLabel\n"
             "%%l = OpLoad %%float %%g\n"
             "%%p = OpAccessChain %%pf %%buf %%i0 %%i0\n"
             "OpStore %%p %%l\n"
             "OpReturn\n"
             "OpFunctionEnd\n",
             head, buffer_decl, buffer_types);
    uint32_t *out = (uint32_t *)&out;
    size_t n = 1;
    rewrite(text, &out, &n);
    assert_null(out);
    assert_int_equal(n, 0);

    char *pinf = strstr(text, "0x1p+128");
    memcpy(pinf, "0x1p+100", 8);
    out = (uint32_t *)&out;
    rewrite(text, &out, &n);
    assert_null(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars_become_bitcasts_per_function),
        cmocka_unit_test(test_composite_rebuilt),
        cmocka_unit_test(test_function_variable_initializer_stored),
        cmocka_unit_test(test_half_and_double_converted),
        cmocka_unit_test(test_left_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
