/* kernel/capabilities: SPIR-V capabilities against a device's feature set, without a device. */
#include "test_util.h"

#include "kernel/capabilities.h"

#include <spirv_cross/spirv.h>
#include <stdio.h>
#include <string.h>

#define ALL_FEATURES 0x1fffffffu /* every cubec_feature bit (29 of them) */

static const feature_set everything = {ALL_FEATURES, 0};
static const feature_set nothing = {0, 0};

static cubec_status check(const uint32_t *caps, uint32_t n, const feature_set *f)
{
    return capabilities_check("k", "Test GPU", caps, n, f);
}

/* Capabilities of every Vulkan 1.2 compute device need no feature at all. */
static void test_any_device(void **state)
{
    (void)state;
    const uint32_t caps[] = {SpvCapabilityShader, SpvCapabilityMatrix, SpvCapabilityGroupNonUniform,
                             SpvCapabilityShaderNonUniform,
                             SpvCapabilityStorageImageExtendedFormats};
    ASSERT_OK(check(caps, sizeof caps / sizeof caps[0], &nothing));
    ASSERT_OK(check(NULL, 0, &nothing));
    assert_string_equal(capability_name(SpvCapabilityShader), "Shader");
}

/* Each capability that needs one feature: accepted with that feature alone, refused without it,
 * naming the capability, the feature, its Vulkan name and the device. */
static void test_each_feature(void **state)
{
    (void)state;
    static const struct {
        uint32_t cap;
        uint32_t feature;
        const char *cap_name, *feature_name, *vulkan;
    } rows[] = {
        {SpvCapabilityFloat16, CUBEC_FEATURE_FLOAT16, "Float16", "float16", "shaderFloat16"},
        {SpvCapabilityFloat64, CUBEC_FEATURE_FLOAT64, "Float64", "float64", "shaderFloat64"},
        {SpvCapabilityInt8, CUBEC_FEATURE_INT8, "Int8", "int8", "shaderInt8"},
        {SpvCapabilityInt16, CUBEC_FEATURE_INT16, "Int16", "int16", "shaderInt16"},
        {SpvCapabilityInt64, CUBEC_FEATURE_INT64, "Int64", "int64", "shaderInt64"},
        {SpvCapabilityStorageBuffer16BitAccess, CUBEC_FEATURE_STORAGE_BUFFER_16BIT,
         "StorageBuffer16BitAccess", "storage_buffer_16bit", "storageBuffer16BitAccess"},
        {SpvCapabilityUniformAndStorageBuffer16BitAccess,
         CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_16BIT, "UniformAndStorageBuffer16BitAccess",
         "uniform_and_storage_buffer_16bit", "uniformAndStorageBuffer16BitAccess"},
        {SpvCapabilityStoragePushConstant16, CUBEC_FEATURE_PUSH_CONSTANT_16BIT,
         "StoragePushConstant16", "push_constant_16bit", "storagePushConstant16"},
        {SpvCapabilityStorageBuffer8BitAccess, CUBEC_FEATURE_STORAGE_BUFFER_8BIT,
         "StorageBuffer8BitAccess", "storage_buffer_8bit", "storageBuffer8BitAccess"},
        {SpvCapabilityUniformAndStorageBuffer8BitAccess,
         CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_8BIT, "UniformAndStorageBuffer8BitAccess",
         "uniform_and_storage_buffer_8bit", "uniformAndStorageBuffer8BitAccess"},
        {SpvCapabilityStoragePushConstant8, CUBEC_FEATURE_PUSH_CONSTANT_8BIT,
         "StoragePushConstant8", "push_constant_8bit", "storagePushConstant8"},
        {SpvCapabilityInt64Atomics, CUBEC_FEATURE_INT64_ATOMICS, "Int64Atomics", "int64_atomics",
         "shaderBufferInt64Atomics"},
        {SpvCapabilityVulkanMemoryModel, CUBEC_FEATURE_VULKAN_MEMORY_MODEL, "VulkanMemoryModel",
         "vulkan_memory_model", "vulkanMemoryModel"},
        {SpvCapabilityVulkanMemoryModelDeviceScope, CUBEC_FEATURE_VULKAN_MEMORY_MODEL_DEVICE_SCOPE,
         "VulkanMemoryModelDeviceScope", "vulkan_memory_model_device_scope",
         "vulkanMemoryModelDeviceScope"},
        {SpvCapabilityGroupNonUniformVote, CUBEC_FEATURE_SUBGROUP_VOTE, "GroupNonUniformVote",
         "subgroup_vote", "VOTE"},
        {SpvCapabilityGroupNonUniformArithmetic, CUBEC_FEATURE_SUBGROUP_ARITHMETIC,
         "GroupNonUniformArithmetic", "subgroup_arithmetic", "ARITHMETIC"},
        {SpvCapabilityGroupNonUniformBallot, CUBEC_FEATURE_SUBGROUP_BALLOT, "GroupNonUniformBallot",
         "subgroup_ballot", "BALLOT"},
        {SpvCapabilityGroupNonUniformShuffle, CUBEC_FEATURE_SUBGROUP_SHUFFLE,
         "GroupNonUniformShuffle", "subgroup_shuffle", "SHUFFLE"},
        {SpvCapabilityGroupNonUniformShuffleRelative, CUBEC_FEATURE_SUBGROUP_SHUFFLE_RELATIVE,
         "GroupNonUniformShuffleRelative", "subgroup_shuffle_relative", "SHUFFLE_RELATIVE"},
        {SpvCapabilityGroupNonUniformClustered, CUBEC_FEATURE_SUBGROUP_CLUSTERED,
         "GroupNonUniformClustered", "subgroup_clustered", "CLUSTERED"},
        {SpvCapabilityGroupNonUniformQuad, CUBEC_FEATURE_SUBGROUP_QUAD, "GroupNonUniformQuad",
         "subgroup_quad", "QUAD"},
        {SpvCapabilityPhysicalStorageBufferAddresses, CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS,
         "PhysicalStorageBufferAddresses", "buffer_device_address", "bufferDeviceAddress"},
        {SpvCapabilityDotProduct, CUBEC_FEATURE_INTEGER_DOT_PRODUCT, "DotProduct",
         "integer_dot_product", "shaderIntegerDotProduct"},
        {SpvCapabilityDotProductInputAll, CUBEC_FEATURE_INTEGER_DOT_PRODUCT, "DotProductInputAll",
         "integer_dot_product", "shaderIntegerDotProduct"},
        {SpvCapabilityDotProductInput4x8Bit, CUBEC_FEATURE_INTEGER_DOT_PRODUCT,
         "DotProductInput4x8Bit", "integer_dot_product", "shaderIntegerDotProduct"},
        {SpvCapabilityDotProductInput4x8BitPacked, CUBEC_FEATURE_INTEGER_DOT_PRODUCT,
         "DotProductInput4x8BitPacked", "integer_dot_product", "shaderIntegerDotProduct"},
        {SpvCapabilityCooperativeMatrixNV, CUBEC_FEATURE_COOPERATIVE_MATRIX_NV,
         "CooperativeMatrixNV", "cooperative_matrix_nv", "VK_NV_cooperative_matrix"},
        /* Newer than the SPIR-V header: by their registered numbers. */
        {6022, CUBEC_FEATURE_COOPERATIVE_MATRIX, "CooperativeMatrixKHR", "cooperative_matrix",
         "VK_KHR_cooperative_matrix cooperativeMatrix"},
        {5116, CUBEC_FEATURE_BFLOAT16, "BFloat16TypeKHR", "bfloat16", "shaderBFloat16Type"},
        {5117, CUBEC_FEATURE_BFLOAT16_DOT_PRODUCT, "BFloat16DotProductKHR", "bfloat16_dot_product",
         "shaderBFloat16DotProduct"},
        {5118, CUBEC_FEATURE_BFLOAT16_COOPERATIVE_MATRIX, "BFloat16CooperativeMatrixKHR",
         "bfloat16_cooperative_matrix", "shaderBFloat16CooperativeMatrix"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        uint32_t caps[2] = {SpvCapabilityShader, rows[i].cap};
        feature_set only = {rows[i].feature, 0};
        ASSERT_OK(check(caps, 2, &only));
        ASSERT_OK(check(caps, 2, &everything));
        feature_set all_but = {ALL_FEATURES & ~rows[i].feature, 0};
        char want[256];
        snprintf(want, sizeof want,
                 "kernel 'k' needs SPIR-V capability %s, which needs the device feature %s "
                 "(Vulkan ",
                 rows[i].cap_name, rows[i].feature_name);
        cubec_status st = check(caps, 2, &all_but);
        const char *msg = cubec_status_message(st);
        assert_int_equal(cubec_status_code(st), CUBEC_UNSUPPORTED);
        if (!strstr(msg, want) || !strstr(msg, rows[i].vulkan) ||
            !strstr(msg, "device 'Test GPU' lacks it"))
            fail_msg("row %zu: \"%s\"", i, msg);
        cubec_status_free(st);
        assert_string_equal(capability_name(rows[i].cap), rows[i].cap_name);
    }
}

/* A feature the device has but the configuration turned off is reported as such. */
static void test_disabled_by_config(void **state)
{
    (void)state;
    const uint32_t caps[] = {SpvCapabilityShader, SpvCapabilityFloat64};
    feature_set masked = {ALL_FEATURES & ~(uint32_t)CUBEC_FEATURE_FLOAT64, CUBEC_FEATURE_FLOAT64};
    ASSERT_ERROR(check(caps, 2, &masked), CUBEC_UNSUPPORTED,
                 "capability Float64, which needs the device feature float64 (Vulkan "
                 "shaderFloat64): it is turned off on device 'Test GPU' by [device] "
                 "disable_features (CUBEC_DISABLE_FEATURES)");
}

/* Capabilities that need what cubec never enables, and unknown ones, are refused everywhere. */
static void test_never_and_unknown(void **state)
{
    (void)state;
    const uint32_t atomic_float[] = {SpvCapabilityShader, SpvCapabilityAtomicFloat32AddEXT};
    ASSERT_ERROR(check(atomic_float, 2, &everything), CUBEC_UNSUPPORTED,
                 "kernel 'k' needs SPIR-V capability AtomicFloat32AddEXT, which needs a Vulkan "
                 "feature or extension that cubec does not enable on any device");
    const uint32_t pointers[] = {SpvCapabilityVariablePointers};
    ASSERT_ERROR(check(pointers, 1, &everything), CUBEC_UNSUPPORTED, "VariablePointers");
    const uint32_t unknown[] = {SpvCapabilityShader, 987654};
    ASSERT_ERROR(check(unknown, 2, &everything), CUBEC_UNSUPPORTED,
                 "kernel 'k' needs SPIR-V capability 987654 (a capability cubec does not know), "
                 "which cubec does not enable on any device");
    assert_null(capability_name(987654));
}

/* Compute capabilities of extensions cubec does not enable are named, not numbered, in the
 * refusal: the table knows them. */
static void test_never_named(void **state)
{
    (void)state;
    static const struct {
        uint32_t cap;
        const char *name;
    } rows[] = {
        {SpvCapabilityWorkgroupMemoryExplicitLayoutKHR, "WorkgroupMemoryExplicitLayoutKHR"},
        {SpvCapabilityWorkgroupMemoryExplicitLayout8BitAccessKHR,
         "WorkgroupMemoryExplicitLayout8BitAccessKHR"},
        {SpvCapabilityWorkgroupMemoryExplicitLayout16BitAccessKHR,
         "WorkgroupMemoryExplicitLayout16BitAccessKHR"},
        {SpvCapabilityGroupNonUniformRotateKHR, "GroupNonUniformRotateKHR"},
        {SpvCapabilityGroupNonUniformPartitionedNV, "GroupNonUniformPartitionedNV"},
        {SpvCapabilityShaderSMBuiltinsNV, "ShaderSMBuiltinsNV"},
        {SpvCapabilityIntegerFunctions2INTEL, "IntegerFunctions2INTEL"},
        {SpvCapabilityAtomicFloat32MinMaxEXT, "AtomicFloat32MinMaxEXT"},
        {SpvCapabilityAtomicFloat64AddEXT, "AtomicFloat64AddEXT"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char want[256];
        snprintf(want, sizeof want,
                 "kernel 'k' needs SPIR-V capability %s, which needs a Vulkan feature or "
                 "extension that cubec does not enable on any device",
                 rows[i].name);
        ASSERT_ERROR(check(&rows[i].cap, 1, &everything), CUBEC_UNSUPPORTED, want);
        assert_string_equal(capability_name(rows[i].cap), rows[i].name);
    }
}

/* Several refusals: the first is explained, the others are named after it. */
static void test_several_refused(void **state)
{
    (void)state;
    const uint32_t caps[] = {SpvCapabilityShader, SpvCapabilityFloat64, SpvCapabilityInt64,
                             SpvCapabilityFloat16, 4242};
    feature_set some = {CUBEC_FEATURE_FLOAT16, 0};
    ASSERT_ERROR(check(caps, 5, &some), CUBEC_UNSUPPORTED,
                 "capability Float64, which needs the device feature float64");
    ASSERT_ERROR(check(caps, 5, &some), CUBEC_UNSUPPORTED, "(also refused: Int64, 4242)");
}

/* A module's capabilities read from its words, before validation: only those that need a
 * feature are checked there (the validator judges the rest), and words that are not a module
 * yield nothing. */
static void test_scan_and_precheck(void **state)
{
    (void)state;
    enum { CAP = 17, EXT = 10, MEMORY_MODEL = 14 };
    const uint32_t module[] = {0x07230203u,
                               0x00010300u,
                               0,
                               100,
                               0, /* header */
                               (2u << 16) | CAP,
                               SpvCapabilityShader, /* */
                               (2u << 16) | CAP,
                               6022, /* CooperativeMatrixKHR */
                               (2u << 16) | CAP,
                               SpvCapabilityKernel, /* Vulkan forbids it: the validator says so */
                               (2u << 16) | EXT,
                               0, /* a 0-byte name, for the scan to step over */
                               (3u << 16) | MEMORY_MODEL,
                               0,
                               1, /* */
                               (2u << 16) | CAP,
                               SpvCapabilityFloat64}; /* after the memory model: not read */
    uint32_t caps[8];
    assert_int_equal(capabilities_scan(module, sizeof module / 4, caps, 8), 3);
    assert_int_equal(caps[1], 6022);
    assert_int_equal(capabilities_scan(module, sizeof module / 4, caps, 1), 1);
    assert_int_equal(capabilities_scan(module + 1, sizeof module / 4 - 1, caps, 8), 0);
    assert_int_equal(capabilities_scan(NULL, 0, caps, 8), 0);

    ASSERT_ERROR(capabilities_precheck("k", "Test GPU", module, sizeof module / 4, &nothing),
                 CUBEC_UNSUPPORTED,
                 "kernel 'k' needs SPIR-V capability CooperativeMatrixKHR, which needs the device "
                 "feature cooperative_matrix (Vulkan VK_KHR_cooperative_matrix cooperativeMatrix): "
                 "device 'Test GPU' lacks it");
    feature_set coop = {CUBEC_FEATURE_COOPERATIVE_MATRIX, 0};
    ASSERT_OK(capabilities_precheck("k", "Test GPU", module, sizeof module / 4, &coop));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_any_device),         cmocka_unit_test(test_each_feature),
        cmocka_unit_test(test_disabled_by_config), cmocka_unit_test(test_never_and_unknown),
        cmocka_unit_test(test_several_refused),    cmocka_unit_test(test_never_named),
        cmocka_unit_test(test_scan_and_precheck),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
