/* kernel/reflect_compat: modules with cooperative matrices (GL_NV_cooperative_matrix, compiled by
 * the glslang cubec is built with) are reflected like any other kernel, though the SPIRV-Cross
 * cubec is built with cannot parse their bodies: bindings, access, metadata, workgroup size,
 * specialization constants and capabilities all come out. Before reflect_compat, reflecting
 * such a module failed with "parsing failed: Currently no block to insert opcode". */
#include "kernel/glsl_compiler.h"
#include "kernel/reflect.h"
#include "kernel/reflect_compat.h"
#include "kernel_test_util.h"

/* cmocka.h needs these headers before it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

/* A tile of C = A * B + C with arrays of matrices, a matrix-typed function parameter, a constant
 * matrix, a global (Private) array of them and a specialization constant: the declarations the copy
 * must drop or keep. */
static const char coopmat_src[] =
    "#version 450\n"
    "#extension GL_NV_cooperative_matrix : require\n"
    "#extension GL_KHR_memory_scope_semantics : require\n"
    "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
    "layout(local_size_x = 32, local_size_y = 2) in;\n"
    "layout(constant_id = 7) const uint TILES = 2;\n"
    "layout(std430, binding = 0) readonly buffer A { float16_t a[]; };\n"
    "layout(std430, binding = 1) readonly buffer B { float16_t b[]; };\n"
    "layout(std430, binding = 2) writeonly buffer C { float c[]; };\n"
    "CUBEC_INFO(uint k; uint stride;)\n"
    "fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc[TILES]; /* a global: in the entry's interface */\n"
    "fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> twice(fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> m) {\n"
    "  return m + m;\n"
    "}\n"
    "void main() {\n"
    "  for (uint t = 0; t < TILES; t++) acc[t] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);\n"
    "  for (uint k = 0; k < info.k; k += 16) {\n"
    "    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> ma;\n"
    "    fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> mb;\n"
    "    coopMatLoadNV(ma, a, k, info.stride, false);\n"
    "    coopMatLoadNV(mb, b, k * info.stride, info.stride, false);\n"
    "    for (uint t = 0; t < TILES; t++) acc[t] = coopMatMulAddNV(ma, mb, acc[t]);\n"
    "  }\n"
    "  for (uint t = 0; t < TILES; t++)\n"
    "    coopMatStoreNV(twice(acc[t]), c, t * 8u, info.stride, false);\n"
    "}\n";

static void test_cooperative_matrix_module(void **state)
{
    uint32_t *words = NULL;
    size_t count = 0;
    expect_ok(glsl_compile(*state, "k", coopmat_src, NULL, 0, "main", 0, 1, &words, &count));
    kernel_reflection r;
    expect_ok(kernel_reflect(words, count, "main", 0, &r));
    assert_int_equal(r.binding_count, 3);
    assert_int_equal(r.access[0], CUBEC_ACCESS_READ);
    assert_int_equal(r.access[1], CUBEC_ACCESS_READ);
    assert_int_equal(r.access[2], CUBEC_ACCESS_WRITE);
    assert_int_equal(r.push_constant_size, 2 * sizeof(uint32_t));
    assert_int_equal(r.workgroup_size[0], 32);
    assert_int_equal(r.workgroup_size[1], 2);
    assert_int_equal(r.spec_count, 1);
    assert_int_equal(r.spec_ids[0], 7);
    int coop = 0;
    for (uint32_t i = 0; i < r.capability_count; i++)
        coop |= r.capabilities[i] == 5357; /* CooperativeMatrixNV */
    assert_true(coop);

    /* The copy is smaller and free of matrix types; the module itself is left as it was. */
    uint32_t *copy = NULL;
    size_t copy_count = 0;
    uint32_t *before = malloc(count * sizeof *before);
    assert_non_null(before);
    memcpy(before, words, count * sizeof *before);
    expect_ok(reflect_compat_copy(words, count, &copy, &copy_count));
    assert_non_null(copy);
    assert_true(copy_count < count);
    for (size_t i = 5; i < copy_count; i += copy[i] >> 16) {
        assert_true(copy[i] >> 16 > 0);
        assert_int_not_equal(copy[i] & 0xffffu, 5358); /* OpTypeCooperativeMatrixNV */
    }
    assert_memory_equal(before, words, count * sizeof *before);
    /* The entry point lists the module's globals (SPIR-V 1.5): in the copy, all but the matrix
     * array (3 buffers and the metadata block remain). */
    uint32_t entry_words[2] = {0, 0};
    for (size_t i = 5; i < count; i += words[i] >> 16)
        if ((words[i] & 0xffffu) == 15) entry_words[0] = words[i] >> 16;
    for (size_t i = 5; i < copy_count; i += copy[i] >> 16)
        if ((copy[i] & 0xffffu) == 15) entry_words[1] = copy[i] >> 16;
    assert_int_equal(entry_words[0], 3 + 2 + 5); /* opcode, model, function, "main\0", 5 ids */
    assert_int_equal(entry_words[1], entry_words[0] - 1);
    free(copy);
    free(before);
    free(words);
}

/* A module without cooperative matrices needs no copy. */
static void test_plain_module(void **state)
{
    static const char src[] = "#version 450\n"
                              "layout(local_size_x = 64) in;\n"
                              "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                              "void main() { a[gl_GlobalInvocationID.x] += 1u; }\n";
    uint32_t *words = NULL, *copy = (uint32_t *)&words;
    size_t count = 0, copy_count = 1;
    expect_ok(glsl_compile(*state, "k", src, NULL, 0, "main", 0, 1, &words, &count));
    expect_ok(reflect_compat_copy(words, count, &copy, &copy_count));
    assert_null(copy);
    assert_int_equal(copy_count, 0);
    free(words);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cooperative_matrix_module),
        cmocka_unit_test(test_plain_module),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
