/* Unit tests of gpu/webgpu/wg_spirv_aliases: storage buffers declared more than once at one
 * binding, which WGSL forbids, merged into the scalar view for the WebGPU backend, or refused by
 * name where they are not views of one scalar type. GLSL compiled here, rewritten, validated
 * (SPIRV-Tools, Vulkan 1.2 rules) and checked for one variable per binding. What the merged
 * kernel computes is checked on a device by test_binding_aliases_webgpu. No device is needed. */
#include "gpu/webgpu/wg_spirv_aliases.h"
#include "kernel/glsl_compiler.h"
#include "kernel_test_util.h"

/* cmocka.h needs these headers before it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

enum { OP_VARIABLE = 59, OP_DECORATE = 71 };
enum { DEC_BINDING = 33, STORAGE_BUFFER = 12 };

static void compile(void **state, const char *src, uint32_t **words, size_t *n)
{
    expect_ok(glsl_compile(*state, "aliases", src, NULL, 0, NULL, 0, GLSL_INFO_PUSH, words, n));
}

static cubec_status merge(void **state, const char *src, uint32_t **out, size_t *out_n)
{
    uint32_t *w = NULL;
    size_t n = 0;
    compile(state, src, &w, &n);
    cubec_status st = wg_spirv_merge_aliases(w, n, out, out_n);
    free(w);
    return st;
}

/* The views of ggml's idiom and more: vec4 and vec2 views of a float buffer read, a vec4 view of
 * another written, a component read and one written through a vector view, their lengths. */
static const char views_src[] =
    "#version 450\n"
    "layout(local_size_x = 4) in;\n"
    "layout(std430, binding = 0) readonly buffer B { float data_b[]; };\n"
    "layout(std430, binding = 0) readonly buffer BV4 { vec4 data_b_v4[]; };\n"
    "layout(std430, binding = 0) readonly buffer BV2 { vec2 data_b_v2[]; };\n"
    "layout(std430, binding = 1) buffer D { float data_d[]; };\n"
    "layout(std430, binding = 1) buffer DV4 { vec4 data_d_v4[]; };\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  vec2 u = data_b_v2[int(i) * 2 + 1];\n"
    "  data_d_v4[i] = data_b_v4[i] * 2.0 + vec4(data_b[i]);\n"
    "  data_d_v4[i + 8u].y = u.x + data_b_v4[i].z;\n"
    "  data_d[72] = float(data_b_v4.length() + data_d_v4.length());\n"
    "}\n";

static void test_vector_views_merged(void **state)
{
    uint32_t *out = NULL;
    size_t n = 0;
    expect_ok(merge(state, views_src, &out, &n));
    assert_non_null(out);

    expect_valid_spirv(out, n, "the merged module");

    /* One storage buffer variable per binding. */
    uint32_t bound = out[3], per_binding[2] = {0, 0};
    uint32_t *binding = calloc(bound, sizeof *binding);
    assert_non_null(binding);
    for (size_t i = 5; i < n;) {
        uint32_t op = out[i] & 0xffffu, len = out[i] >> 16;
        if (op == OP_DECORATE && out[i + 2] == DEC_BINDING) binding[out[i + 1]] = out[i + 3] + 1;
        if (op == OP_VARIABLE && out[i + 3] == STORAGE_BUFFER) {
            uint32_t b = binding[out[i + 2]];
            assert_true(b == 1 || b == 2);
            per_binding[b - 1]++;
        }
        i += len;
    }
    assert_int_equal(per_binding[0], 1);
    assert_int_equal(per_binding[1], 1);
    free(binding);
    free(out);
}

static void expect_refused(void **state, const char *src, const char *why)
{
    uint32_t *out = NULL;
    size_t n = 0;
    cubec_status st = merge(state, src, &out, &n);
    assert_null(out);
    assert_non_null(st);
    assert_int_equal(cubec_status_code(st), CUBEC_UNSUPPORTED);
    expect_contains(cubec_status_message(st), "set 0 binding 0 is declared more than once");
    expect_contains(cubec_status_message(st), "'data_x'");
    expect_contains(cubec_status_message(st), why);
    cubec_status_free(st);
}

/* Views that are not of one scalar type: named, not left to naga's "Bindings conflict". */
static void test_other_aliases_refused(void **state)
{
    expect_refused(state,
                   "#version 450\n"
                   "layout(std430, binding = 0) buffer X { float data_x[]; };\n"
                   "layout(std430, binding = 0) buffer U { uint data_u[]; };\n"
                   "void main() { data_x[0] = float(data_u[1]); }\n",
                   "different scalar types");
    expect_refused(state,
                   "#version 450\n"
                   "struct S { float a; uint b; };\n"
                   "layout(std430, binding = 0) buffer X { float data_x[]; };\n"
                   "layout(std430, binding = 0) buffer T { S data_s[]; };\n"
                   "void main() { data_x[0] = data_s[1].a; }\n",
                   "not a block of one runtime array");
    expect_refused(state,
                   "#version 450\n"
                   "layout(std430, binding = 0) buffer X { vec2 data_x[]; };\n"
                   "layout(std430, binding = 0) buffer V { vec4 data_v[]; };\n"
                   "void main() { data_x[0] = data_v[1].xy; }\n",
                   "none of them is an array of the scalars");
}

/* A module without two variables at one binding comes back unchanged (*out NULL). */
static void test_single_views_unchanged(void **state)
{
    uint32_t *out = (uint32_t *)&out;
    size_t n = 1;
    expect_ok(merge(state,
                    "#version 450\n"
                    "layout(std430, binding = 0) buffer X { float data_x[]; };\n"
                    "layout(std430, binding = 1) buffer V { vec4 data_v[]; };\n"
                    "void main() { data_x[0] = data_v[1].y; }\n",
                    &out, &n));
    assert_null(out);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vector_views_merged),
        cmocka_unit_test(test_other_aliases_refused),
        cmocka_unit_test(test_single_views_unchanged),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
