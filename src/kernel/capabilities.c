/* SPIR-V capabilities against device features (see capabilities.h). One table: each row is a
 * capability (its SpvCapability value and name, both from one token) and what it needs. */
#include "kernel/capabilities.h"

#include <spirv_cross/spirv.h>

#include <stdio.h>
#include <string.h>

/* What a capability needs: nothing, one cubec_feature bit, or what cubec never enables. */
#define ANY_DEVICE 0u
#define NEVER UINT32_MAX

typedef struct capability_rule {
    const char *name;
    uint32_t capability;
    uint32_t needs;
} capability_rule;

#define CAP(name, needs)                                                                           \
    {                                                                                              \
#name, (uint32_t)SpvCapability##name, needs                                                \
    }

/* Capabilities newer than the SPIR-V header cubec is built with (Debian 12's), by their
 * registered numbers. */
#define CAP_NUMBER(name, number, needs)                                                            \
    {                                                                                              \
#name, number, needs                                                                       \
    }

static const capability_rule rules[] = {
    /* Every Vulkan 1.2 device: core capabilities without a feature (Vulkan spec, appendix
     * "SPIR-V Environment", capabilities table). GroupNonUniform needs the BASIC subgroup
     * operations, which every device supports in compute shaders. */
    CAP(Matrix, ANY_DEVICE),
    CAP(Shader, ANY_DEVICE),
    CAP(Sampled1D, ANY_DEVICE),
    CAP(Image1D, ANY_DEVICE),
    CAP(SampledBuffer, ANY_DEVICE),
    CAP(ImageBuffer, ANY_DEVICE),
    CAP(ImageQuery, ANY_DEVICE),
    CAP(StorageImageExtendedFormats, ANY_DEVICE),
    CAP(DeviceGroup, ANY_DEVICE),
    CAP(ShaderNonUniform, ANY_DEVICE),
    CAP(GroupNonUniform, ANY_DEVICE),
    /* One optional feature each (enabled at device open when the device has it). */
    CAP(Int8, CUBEC_FEATURE_INT8),
    CAP(Int16, CUBEC_FEATURE_INT16),
    CAP(Int64, CUBEC_FEATURE_INT64),
    CAP(Float16, CUBEC_FEATURE_FLOAT16),
    CAP(Float64, CUBEC_FEATURE_FLOAT64),
    CAP(StorageBuffer8BitAccess, CUBEC_FEATURE_STORAGE_BUFFER_8BIT),
    CAP(UniformAndStorageBuffer8BitAccess, CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_8BIT),
    CAP(StoragePushConstant8, CUBEC_FEATURE_PUSH_CONSTANT_8BIT),
    CAP(StorageBuffer16BitAccess, CUBEC_FEATURE_STORAGE_BUFFER_16BIT),
    CAP(UniformAndStorageBuffer16BitAccess, CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_16BIT),
    CAP(StoragePushConstant16, CUBEC_FEATURE_PUSH_CONSTANT_16BIT),
    /* On buffers (shaderBufferInt64Atomics). On shared memory it needs shaderSharedInt64Atomics,
     * which cubec does not enable: kernel/limits.c refuses those uses, which the declared
     * capability alone cannot tell apart. */
    CAP(Int64Atomics, CUBEC_FEATURE_INT64_ATOMICS),
    CAP(VulkanMemoryModel, CUBEC_FEATURE_VULKAN_MEMORY_MODEL),
    CAP(VulkanMemoryModelDeviceScope, CUBEC_FEATURE_VULKAN_MEMORY_MODEL_DEVICE_SCOPE),
    CAP(GroupNonUniformVote, CUBEC_FEATURE_SUBGROUP_VOTE),
    CAP(GroupNonUniformArithmetic, CUBEC_FEATURE_SUBGROUP_ARITHMETIC),
    CAP(GroupNonUniformBallot, CUBEC_FEATURE_SUBGROUP_BALLOT),
    CAP(GroupNonUniformShuffle, CUBEC_FEATURE_SUBGROUP_SHUFFLE),
    CAP(GroupNonUniformShuffleRelative, CUBEC_FEATURE_SUBGROUP_SHUFFLE_RELATIVE),
    CAP(GroupNonUniformClustered, CUBEC_FEATURE_SUBGROUP_CLUSTERED),
    CAP(GroupNonUniformQuad, CUBEC_FEATURE_SUBGROUP_QUAD),
    CAP(PhysicalStorageBufferAddresses, CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS),
    CAP(DotProduct, CUBEC_FEATURE_INTEGER_DOT_PRODUCT),
    CAP(DotProductInputAll, CUBEC_FEATURE_INTEGER_DOT_PRODUCT),
    CAP(DotProductInput4x8Bit, CUBEC_FEATURE_INTEGER_DOT_PRODUCT),
    CAP(DotProductInput4x8BitPacked, CUBEC_FEATURE_INTEGER_DOT_PRODUCT),
    CAP(CooperativeMatrixNV, CUBEC_FEATURE_COOPERATIVE_MATRIX_NV),
    CAP_NUMBER(CooperativeMatrixKHR, 6022u, CUBEC_FEATURE_COOPERATIVE_MATRIX),
    CAP_NUMBER(BFloat16TypeKHR, 5116u, CUBEC_FEATURE_BFLOAT16),
    CAP_NUMBER(BFloat16DotProductKHR, 5117u, CUBEC_FEATURE_BFLOAT16_DOT_PRODUCT),
    CAP_NUMBER(BFloat16CooperativeMatrixKHR, 5118u, CUBEC_FEATURE_BFLOAT16_COOPERATIVE_MATRIX),
    /* Known, and needing a feature or extension cubec does not enable: named in the refusal. */
    CAP(StorageInputOutput16, NEVER),
    CAP(AtomicFloat16AddEXT, NEVER),
    CAP(AtomicFloat32AddEXT, NEVER),
    CAP(AtomicFloat64AddEXT, NEVER),
    CAP(AtomicFloat16MinMaxEXT, NEVER),
    CAP(AtomicFloat32MinMaxEXT, NEVER),
    CAP(AtomicFloat64MinMaxEXT, NEVER),
    CAP(WorkgroupMemoryExplicitLayoutKHR, NEVER),
    CAP(WorkgroupMemoryExplicitLayout8BitAccessKHR, NEVER),
    CAP(WorkgroupMemoryExplicitLayout16BitAccessKHR, NEVER),
    CAP(GroupNonUniformRotateKHR, NEVER),
    CAP(GroupNonUniformPartitionedNV, NEVER),
    CAP(ShaderSMBuiltinsNV, NEVER),
    CAP(IntegerFunctions2INTEL, NEVER),
    CAP(VariablePointers, NEVER),
    CAP(VariablePointersStorageBuffer, NEVER),
    CAP(SubgroupBallotKHR, NEVER),
    CAP(SubgroupVoteKHR, NEVER),
    CAP(ShaderClockKHR, NEVER),
    CAP(DenormPreserve, NEVER),
    CAP(DenormFlushToZero, NEVER),
    CAP(SignedZeroInfNanPreserve, NEVER),
    CAP(RoundingModeRTE, NEVER),
    CAP(RoundingModeRTZ, NEVER),
    CAP(Int64ImageEXT, NEVER),
    CAP(Float16ImageAMD, NEVER),
    CAP(RuntimeDescriptorArray, NEVER),
    CAP(StorageBufferArrayDynamicIndexing, NEVER),
    CAP(StorageBufferArrayNonUniformIndexing, NEVER),
    CAP(MultiView, NEVER),
    CAP(DrawParameters, NEVER),
    CAP(Geometry, NEVER),
    CAP(Tessellation, NEVER),
    CAP(Addresses, NEVER),
    CAP(Linkage, NEVER),
    CAP(Kernel, NEVER),
};

static const capability_rule *find_rule(uint32_t capability)
{
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].capability == capability) return &rules[i];
    return NULL;
}

const char *capability_name(uint32_t capability)
{
    const capability_rule *r = find_rule(capability);
    return r ? r->name : NULL;
}

static int allowed(uint32_t capability, const feature_set *features)
{
    const capability_rule *r = find_rule(capability);
    if (!r || r->needs == NEVER) return 0;
    return (features->enabled & r->needs) == r->needs;
}

/* "Float16" or, for a capability without a name here, its number. */
static const char *spell(uint32_t capability, char *buf, size_t cap)
{
    const char *name = capability_name(capability);
    if (name) return name;
    snprintf(buf, cap, "%u", capability);
    return buf;
}

cubec_status capabilities_check(const char *kernel, const char *device, const uint32_t *caps,
                                uint32_t count, const feature_set *features)
{
    uint32_t first = UINT32_MAX;
    char others[256] = "";
    size_t used = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (allowed(caps[i], features)) continue;
        if (first == UINT32_MAX) {
            first = i;
            continue;
        }
        char num[16];
        int w = snprintf(others + used, sizeof others - used, "%s%s", used ? ", " : "",
                         spell(caps[i], num, sizeof num));
        if (w > 0 && (size_t)w < sizeof others - used) used += (size_t)w;
    }
    if (first == UINT32_MAX) return NULL;

    uint32_t c = caps[first];
    const capability_rule *r = find_rule(c);
    char num[16], why[512];
    if (!r)
        snprintf(why, sizeof why,
                 " (a capability cubec does not know), which cubec does not enable on any "
                 "device");
    else if (r->needs == NEVER)
        snprintf(why, sizeof why,
                 ", which needs a Vulkan feature or extension that cubec does not enable on any "
                 "device");
    else if (features->disabled & r->needs)
        snprintf(why, sizeof why,
                 ", which needs the device feature %s (Vulkan %s): it is turned off on device "
                 "'%s' by [device] disable_features (CUBEC_DISABLE_FEATURES)",
                 cubec_feature_name((cubec_feature)r->needs), feature_vulkan_name(r->needs),
                 device);
    else
        snprintf(why, sizeof why,
                 ", which needs the device feature %s (Vulkan %s): device '%s' lacks it",
                 cubec_feature_name((cubec_feature)r->needs), feature_vulkan_name(r->needs),
                 device);
    return status_make(CUBEC_UNSUPPORTED, "kernel '%s' needs SPIR-V capability %s%s%s%s%s", kernel,
                       spell(c, num, sizeof num), why, used ? " (also refused: " : "", others,
                       used ? ")" : "");
}

uint32_t capabilities_scan(const uint32_t *words, size_t word_count, uint32_t *caps, uint32_t max)
{
    enum { HEADER_WORDS = 5, OP_CAPABILITY = 17, OP_MEMORY_MODEL = 14 };
    if (!words || word_count < HEADER_WORDS || words[0] != 0x07230203u) return 0;
    uint32_t n = 0;
    size_t i = HEADER_WORDS;
    while (i < word_count && n < max) {
        uint32_t count = words[i] >> 16, opcode = words[i] & 0xffffu;
        if (count == 0 || count > word_count - i) break;
        /* Capabilities come first in a module; OpMemoryModel follows them all. */
        if (opcode == OP_MEMORY_MODEL) break;
        if (opcode == OP_CAPABILITY && count == 2) caps[n++] = words[i + 1];
        i += count;
    }
    return n;
}

cubec_status capabilities_precheck(const char *kernel, const char *device, const uint32_t *words,
                                   size_t word_count, const feature_set *features)
{
    uint32_t caps[64], feature_caps[64], n = 0;
    uint32_t count = capabilities_scan(words, word_count, caps, 64);
    for (uint32_t i = 0; i < count; i++) {
        const capability_rule *r = find_rule(caps[i]);
        if (r && r->needs != NEVER && r->needs != ANY_DEVICE) feature_caps[n++] = caps[i];
    }
    return capabilities_check(kernel, device, feature_caps, n, features);
}
