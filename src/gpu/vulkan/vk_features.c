/* Optional device features (see vk_features.h). One table ties each cubec_feature bit to the
 * VkBool32 that reports and enables it, so querying and enabling cannot drift apart. */
#include "gpu/vulkan/vk_features.h"

#include "cubec/cubec.h"

#include <stddef.h>
#include <string.h>

enum { CORE, V11, V12 };

/* A feature bit and where its VkBool32 lies in the chain: which struct, at which offset. */
typedef struct feature_field {
    uint32_t bit;
    int in;
    size_t offset;
} feature_field;

#define CORE_FIELD(bit, f)                                                                         \
    {                                                                                              \
        bit, CORE, offsetof(VkPhysicalDeviceFeatures, f)                                           \
    }
#define V11_FIELD(bit, f)                                                                          \
    {                                                                                              \
        bit, V11, offsetof(VkPhysicalDeviceVulkan11Features, f)                                    \
    }
#define V12_FIELD(bit, f)                                                                          \
    {                                                                                              \
        bit, V12, offsetof(VkPhysicalDeviceVulkan12Features, f)                                    \
    }

static const feature_field fields[] = {
    CORE_FIELD(CUBEC_FEATURE_INT16, shaderInt16),
    CORE_FIELD(CUBEC_FEATURE_INT64, shaderInt64),
    CORE_FIELD(CUBEC_FEATURE_FLOAT64, shaderFloat64),
    V11_FIELD(CUBEC_FEATURE_STORAGE_BUFFER_16BIT, storageBuffer16BitAccess),
    V11_FIELD(CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_16BIT, uniformAndStorageBuffer16BitAccess),
    V11_FIELD(CUBEC_FEATURE_PUSH_CONSTANT_16BIT, storagePushConstant16),
    V12_FIELD(CUBEC_FEATURE_INT8, shaderInt8),
    V12_FIELD(CUBEC_FEATURE_FLOAT16, shaderFloat16),
    V12_FIELD(CUBEC_FEATURE_STORAGE_BUFFER_8BIT, storageBuffer8BitAccess),
    V12_FIELD(CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_8BIT, uniformAndStorageBuffer8BitAccess),
    V12_FIELD(CUBEC_FEATURE_PUSH_CONSTANT_8BIT, storagePushConstant8),
    V12_FIELD(CUBEC_FEATURE_INT64_ATOMICS, shaderBufferInt64Atomics),
    V12_FIELD(CUBEC_FEATURE_VULKAN_MEMORY_MODEL, vulkanMemoryModel),
    V12_FIELD(CUBEC_FEATURE_VULKAN_MEMORY_MODEL_DEVICE_SCOPE, vulkanMemoryModelDeviceScope),
};

/* Subgroup operations are properties: nothing to enable, only to know. */
static const struct {
    uint32_t bit;
    VkSubgroupFeatureFlags flag;
} subgroup_ops[] = {
    {CUBEC_FEATURE_SUBGROUP_VOTE, VK_SUBGROUP_FEATURE_VOTE_BIT},
    {CUBEC_FEATURE_SUBGROUP_ARITHMETIC, VK_SUBGROUP_FEATURE_ARITHMETIC_BIT},
    {CUBEC_FEATURE_SUBGROUP_BALLOT, VK_SUBGROUP_FEATURE_BALLOT_BIT},
    {CUBEC_FEATURE_SUBGROUP_SHUFFLE, VK_SUBGROUP_FEATURE_SHUFFLE_BIT},
    {CUBEC_FEATURE_SUBGROUP_SHUFFLE_RELATIVE, VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT},
    {CUBEC_FEATURE_SUBGROUP_CLUSTERED, VK_SUBGROUP_FEATURE_CLUSTERED_BIT},
    {CUBEC_FEATURE_SUBGROUP_QUAD, VK_SUBGROUP_FEATURE_QUAD_BIT},
};

static void chain_init(vk_feature_chain *c)
{
    memset(c, 0, sizeof *c);
    c->core.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    c->core.pNext = &c->v11;
    c->v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    c->v11.pNext = &c->v12;
    c->v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
}

static VkBool32 *field_of(vk_feature_chain *c, const feature_field *f)
{
    char *base = f->in == CORE  ? (char *)&c->core.features
                 : f->in == V11 ? (char *)&c->v11
                                : (char *)&c->v12;
    return (VkBool32 *)(base + f->offset);
}

uint32_t vk_features_query(VkPhysicalDevice physical, vk_feature_chain *have)
{
    chain_init(have);
    vkGetPhysicalDeviceFeatures2(physical, &have->core);
    uint32_t bits = 0;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (*field_of(have, &fields[i])) bits |= fields[i].bit;
    VkPhysicalDeviceSubgroupProperties sub = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sub};
    vkGetPhysicalDeviceProperties2(physical, &p2);
    if (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT)
        for (size_t i = 0; i < sizeof subgroup_ops / sizeof subgroup_ops[0]; i++)
            if (sub.supportedOperations & subgroup_ops[i].flag) bits |= subgroup_ops[i].bit;
    return bits;
}

uint32_t vk_features_mask(uint32_t bits, uint32_t disabled)
{
    bits &= ~disabled;
    if (!(bits & CUBEC_FEATURE_STORAGE_BUFFER_8BIT))
        bits &= ~(uint32_t)CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_8BIT;
    if (!(bits & CUBEC_FEATURE_STORAGE_BUFFER_16BIT))
        bits &= ~(uint32_t)CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_16BIT;
    if (!(bits & CUBEC_FEATURE_VULKAN_MEMORY_MODEL))
        bits &= ~(uint32_t)CUBEC_FEATURE_VULKAN_MEMORY_MODEL_DEVICE_SCOPE;
    return bits;
}

void vk_features_want(uint32_t bits, vk_feature_chain *want)
{
    chain_init(want);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (bits & fields[i].bit) *field_of(want, &fields[i]) = VK_TRUE;
}
