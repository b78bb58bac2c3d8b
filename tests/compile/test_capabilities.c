/* Device capabilities (issue 14, outcome 3): what cubec_device_get_info reports agrees with
 * cubec_device_peek, and kernels that need a capability the device lacks or the configuration
 * turned off are refused with CUBEC_UNSUPPORTED naming it, before any Vulkan object is made
 * (the validation layer stays silent), on lavapipe as on a GPU.
 *
 * Before this change cubec enabled neither buffer device address nor cooperative matrices: the
 * kernels below were refused as needing "a Vulkan feature or extension that cubec does not
 * enable on any device", a KHR cooperative-matrix module was refused as invalid SPIR-V by the
 * validator (which predates it), and the info had no subgroup size range or matrix shapes. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cubec_device_info peek_of(const cubec_device_info *opened)
{
    uint32_t count = 0;
    ASSERT_OK(cubec_device_count(&count));
    cubec_device_info peeked;
    for (uint32_t i = 0; i < count; i++) {
        ASSERT_OK(cubec_device_peek(i, &peeked));
        if (strcmp(peeked.name, opened->name) == 0) return peeked;
    }
    fail_msg("device '%s' is not among the %u peeked", opened->name, count);
    return peeked;
}

/* The query: what the open device enabled is what peek says it has (nothing is disabled here),
 * the subgroup size lies in its range, every feature bit has a name, and each matrix shape
 * belongs to an enabled extension. */
static void test_info_matches_peek(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_device_info peeked = peek_of(&info);
    assert_int_equal(info.features, peeked.features);
    assert_int_equal(info.min_subgroup_size, peeked.min_subgroup_size);
    assert_int_equal(info.max_subgroup_size, peeked.max_subgroup_size);
    assert_true(info.min_subgroup_size >= 1);
    assert_true(info.min_subgroup_size <= info.subgroup_size);
    assert_true(info.subgroup_size <= info.max_subgroup_size);
    assert_int_equal(info.matrix_shape_count, peeked.matrix_shape_count);
    assert_true(info.matrix_shape_count <= CUBEC_MAX_MATRIX_SHAPES);
    assert_memory_equal(info.matrix_shapes, peeked.matrix_shapes,
                        info.matrix_shape_count * sizeof info.matrix_shapes[0]);
    for (uint32_t bit = 1; bit; bit <<= 1)
        if (info.features & bit)
            assert_string_not_equal(cubec_feature_name((cubec_feature)bit), "unknown");
    for (uint32_t i = 0; i < info.matrix_shape_count; i++) {
        const cubec_matrix_shape *s = &info.matrix_shapes[i];
        uint32_t needs =
            s->nv ? CUBEC_FEATURE_COOPERATIVE_MATRIX_NV : CUBEC_FEATURE_COOPERATIVE_MATRIX;
        assert_true(info.features & needs);
        assert_true(s->m > 0 && s->n > 0 && s->k > 0);
    }
    /* Where the device has subgroup size control, the range comes from it: lavapipe's is 8..8,
     * a GPU's wider; without it, the range is the one size. */
    if (!(info.features & CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL)) {
        assert_int_equal(info.min_subgroup_size, info.subgroup_size);
        assert_int_equal(info.max_subgroup_size, info.subgroup_size);
    }
    test_device_close(d);
}

/* Words of a module: header, then instructions appended with emit / emit_string. */
typedef struct words {
    uint32_t w[128];
    size_t n;
} words;

static void emit(words *m, uint32_t opcode, const uint32_t *ops, uint32_t count)
{
    m->w[m->n++] = ((count + 1) << 16) | opcode;
    for (uint32_t i = 0; i < count; i++)
        m->w[m->n++] = ops[i];
}

/* An instruction whose operands are `before` then a nul-terminated string. */
static void emit_string(words *m, uint32_t opcode, const uint32_t *before, uint32_t count,
                        const char *s)
{
    uint32_t ops[32] = {0};
    if (count) memcpy(ops, before, count * sizeof *ops);
    size_t len = strlen(s) + 1;
    memcpy(ops + count, s, len);
    emit(m, opcode, ops, count + (uint32_t)((len + 3) / 4));
}

/* The smallest compute kernel that declares CooperativeMatrixKHR (6022): the capability alone
 * decides. glslang and SPIRV-Tools of Debian 12 know neither the capability nor
 * GL_KHR_cooperative_matrix, so the words are written here. */
static words khr_cooperative_matrix_module(void)
{
    enum { VOID = 1, FN, MAIN, LABEL, BOUND };
    words m = {{0x07230203u, 0x00010500u, 0, BOUND, 0}, 5};
    emit(&m, 17, (uint32_t[]){1}, 1);    /* OpCapability Shader */
    emit(&m, 17, (uint32_t[]){6022}, 1); /* OpCapability CooperativeMatrixKHR */
    emit(&m, 17, (uint32_t[]){5345}, 1); /* OpCapability VulkanMemoryModel */
    emit_string(&m, 10, NULL, 0, "SPV_KHR_cooperative_matrix");
    emit(&m, 14, (uint32_t[]){0, 3}, 2);                   /* OpMemoryModel Logical Vulkan */
    emit_string(&m, 15, (uint32_t[]){5, MAIN}, 2, "main"); /* OpEntryPoint GLCompute */
    emit(&m, 16, (uint32_t[]){MAIN, 17, 32, 1, 1}, 5);     /* OpExecutionMode LocalSize */
    emit(&m, 19, (uint32_t[]){VOID}, 1);                   /* OpTypeVoid */
    emit(&m, 33, (uint32_t[]){FN, VOID}, 2);               /* OpTypeFunction */
    emit(&m, 54, (uint32_t[]){VOID, MAIN, 0, FN}, 4);      /* OpFunction */
    emit(&m, 248, (uint32_t[]){LABEL}, 1);                 /* OpLabel */
    emit(&m, 253, NULL, 0);                                /* OpReturn */
    emit(&m, 56, NULL, 0);                                 /* OpFunctionEnd */
    return m;
}

static const char nv_src[] =
    "#version 450\n"
    "#extension GL_NV_cooperative_matrix : require\n"
    "#extension GL_KHR_memory_scope_semantics : require\n"
    "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
    "layout(local_size_x = 32) in;\n"
    "layout(std430, binding = 0) readonly buffer A { float16_t a[]; };\n"
    "layout(std430, binding = 1) writeonly buffer C { float c[]; };\n"
    "void main() {\n"
    "  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> m;\n"
    "  coopMatLoadNV(m, a, 0, 16, false);\n"
    "  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc =\n"
    "      fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);\n"
    "  acc = coopMatMulAddNV(m, m, acc);\n"
    "  coopMatStoreNV(acc, c, 0, 16, false);\n"
    "}\n";

static const char bda_src[] = "#version 450\n"
                              "#extension GL_EXT_buffer_reference : require\n"
                              "layout(local_size_x = 64) in;\n"
                              "layout(buffer_reference, std430) buffer P { uint v[]; };\n"
                              "layout(std430, binding = 0) buffer A { P p; uint a[]; };\n"
                              "void main() { a[0] = p.v[0]; }\n";

/* Cooperative matrices, KHR (SPIR-V words) and NV (GLSL): refused naming the capability and the
 * feature where the device lacks them, as lavapipe does. */
static void test_cooperative_matrix(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info;
    ASSERT_OK(cubec_device_get_info(d, &info));
    words m = khr_cooperative_matrix_module();
    cubec_kernel_desc kd = {.name = "coop", .spirv = m.w, .spirv_words = m.n};
    cubec_kernel k = {0};
    char want[512];
    if (info.features & CUBEC_FEATURE_COOPERATIVE_MATRIX) {
        /* The capability passes; the validator of Debian 12 then refuses what it does not know
         * (docs/kernels.md, "Cooperative matrices"). */
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_SPIRV,
                     "SPIR-V validation failed");
    } else {
        snprintf(want, sizeof want,
                 "kernel 'coop' needs SPIR-V capability CooperativeMatrixKHR, which needs the "
                 "device feature cooperative_matrix (Vulkan VK_KHR_cooperative_matrix "
                 "cooperativeMatrix): device '%s' lacks it",
                 info.name);
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED, want);
    }
    assert_int_equal(k.id, 0);

    cubec_kernel_desc nv = {.name = "coop_nv", .glsl = nv_src};
    if (info.features & CUBEC_FEATURE_COOPERATIVE_MATRIX_NV) {
        ASSERT_OK(cubec_kernel_create(d, &nv, &k));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    } else {
        snprintf(want, sizeof want,
                 "kernel 'coop_nv' needs SPIR-V capability CooperativeMatrixNV, which needs the "
                 "device feature cooperative_matrix_nv (Vulkan VK_NV_cooperative_matrix "
                 "cooperativeMatrix): device '%s' lacks it",
                 info.name);
        ASSERT_ERROR(cubec_kernel_create(d, &nv, &k), CUBEC_UNSUPPORTED, want);
        assert_int_equal(k.id, 0);
    }
    test_device_close(d);
}

/* CUBEC_DISABLE_FEATURES turns the new features off like the old ones: they leave the info
 * (the matrix shapes of a disabled extension too), and a kernel needing one is refused saying
 * it was turned off. Where the device has buffer device address (lavapipe does), the kernel is
 * accepted with it on. */
static void test_disabled_by_config(void **state)
{
    (void)state;
    const uint32_t off = CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS | CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL |
                         CUBEC_FEATURE_INTEGER_DOT_PRODUCT | CUBEC_FEATURE_COOPERATIVE_MATRIX |
                         CUBEC_FEATURE_COOPERATIVE_MATRIX_NV | CUBEC_FEATURE_BFLOAT16;
    setenv("CUBEC_DISABLE_FEATURES",
           "buffer_device_address, subgroup_size_control, integer_dot_product, "
           "cooperative_matrix, cooperative_matrix_nv, bfloat16",
           1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_DISABLE_FEATURES");
    cubec_device_info info;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_device_info peeked = peek_of(&info);
    uint32_t gone = off | CUBEC_FEATURE_BFLOAT16_DOT_PRODUCT |
                    CUBEC_FEATURE_BFLOAT16_COOPERATIVE_MATRIX; /* they need bfloat16 */
    assert_int_equal(info.features & gone, 0);
    assert_int_equal(info.features, peeked.features & ~gone);
    assert_int_equal(info.matrix_shape_count, 0);

    cubec_kernel k = {0};
    cubec_kernel_desc kd = {.name = "bda", .glsl = bda_src};
    char want[512];
    if (peeked.features & CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS) {
        snprintf(want, sizeof want,
                 "kernel 'bda' needs SPIR-V capability PhysicalStorageBufferAddresses, which "
                 "needs the device feature buffer_device_address (Vulkan bufferDeviceAddress): "
                 "it is turned off on device '%s' by [device] disable_features",
                 info.name);
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED, want);
    } else {
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED, "lacks it");
    }
    assert_int_equal(k.id, 0);
    test_device_close(d);

    d = test_device_open();
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (info.features & CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS) {
        ASSERT_OK(cubec_kernel_create(d, &kd, &k));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info_matches_peek),
        cmocka_unit_test(test_cooperative_matrix),
        cmocka_unit_test(test_disabled_by_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
