/* Optional device features (see vk_features.h). One table ties each cubec_feature bit to the
 * VkBool32 that reports and enables it, so querying and enabling cannot drift apart. */
#include "gpu/vulkan/vk_features.h"

#include "cubec/cubec.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum { CORE, V11, V12, SIZE_CONTROL, DOT_PRODUCT, COOPMAT, COOPMAT_NV, BFLOAT16 };

/* A feature bit and where its VkBool32 lies in the chain: which struct, at which offset. */
typedef struct feature_field {
    uint32_t bit;
    int in;
    size_t offset;
} feature_field;

#define FIELD(bit, in, type, f)                                                                    \
    {                                                                                              \
        bit, in, offsetof(type, f)                                                                 \
    }
#define CORE_FIELD(bit, f) FIELD(bit, CORE, VkPhysicalDeviceFeatures, f)
#define V11_FIELD(bit, f) FIELD(bit, V11, VkPhysicalDeviceVulkan11Features, f)
#define V12_FIELD(bit, f) FIELD(bit, V12, VkPhysicalDeviceVulkan12Features, f)

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
    V12_FIELD(CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS, bufferDeviceAddress),
    FIELD(CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL, SIZE_CONTROL,
          VkPhysicalDeviceSubgroupSizeControlFeaturesEXT, subgroupSizeControl),
    FIELD(CUBEC_FEATURE_INTEGER_DOT_PRODUCT, DOT_PRODUCT,
          VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR, shaderIntegerDotProduct),
    FIELD(CUBEC_FEATURE_COOPERATIVE_MATRIX, COOPMAT, VkPhysicalDeviceCooperativeMatrixFeaturesKHR,
          cooperativeMatrix),
    FIELD(CUBEC_FEATURE_COOPERATIVE_MATRIX_NV, COOPMAT_NV,
          VkPhysicalDeviceCooperativeMatrixFeaturesNV, cooperativeMatrix),
    FIELD(CUBEC_FEATURE_BFLOAT16, BFLOAT16, VkPhysicalDeviceShaderBfloat16FeaturesKHR,
          shaderBFloat16Type),
    FIELD(CUBEC_FEATURE_BFLOAT16_DOT_PRODUCT, BFLOAT16, VkPhysicalDeviceShaderBfloat16FeaturesKHR,
          shaderBFloat16DotProduct),
    FIELD(CUBEC_FEATURE_BFLOAT16_COOPERATIVE_MATRIX, BFLOAT16,
          VkPhysicalDeviceShaderBfloat16FeaturesKHR, shaderBFloat16CooperativeMatrix),
};

/* The extensions, in the order of the VK_FEATURE_EXT_* bits, and the struct of each. */
static const struct {
    const char *name;
    int in;
} extensions[VK_FEATURE_EXT_COUNT] = {
    {VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME, SIZE_CONTROL},
    {VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME, DOT_PRODUCT},
    {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME, COOPMAT},
    {VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME, COOPMAT_NV},
    {VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME, BFLOAT16},
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

static void *struct_of(vk_feature_chain *c, int in)
{
    switch (in) {
    case CORE: return &c->core.features;
    case V11: return &c->v11;
    case V12: return &c->v12;
    case SIZE_CONTROL: return &c->size_control;
    case DOT_PRODUCT: return &c->dot_product;
    case COOPMAT: return &c->cooperative_matrix;
    case COOPMAT_NV: return &c->cooperative_matrix_nv;
    default: return &c->bfloat16;
    }
}

/* Every extension struct starts with sType and pNext, as VkBaseOutStructure. */
static void chain_init(vk_feature_chain *c, uint32_t exts)
{
    memset(c, 0, sizeof *c);
    c->core.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    c->core.pNext = &c->v11;
    c->v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    c->v11.pNext = &c->v12;
    c->v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    c->size_control.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT;
    c->dot_product.sType =
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR;
    c->cooperative_matrix.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR;
    c->cooperative_matrix_nv.sType =
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
    c->bfloat16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR;
    c->extensions = exts;
    VkBaseOutStructure *last = (VkBaseOutStructure *)&c->v12;
    for (int i = 0; i < VK_FEATURE_EXT_COUNT; i++) {
        if (!(exts & (1u << i))) continue;
        VkBaseOutStructure *s = struct_of(c, extensions[i].in);
        last->pNext = s;
        last = s;
    }
}

static VkBool32 *field_of(vk_feature_chain *c, const feature_field *f)
{
    return (VkBool32 *)((char *)struct_of(c, f->in) + f->offset);
}

uint32_t vk_features_extensions(VkPhysicalDevice physical)
{
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(physical, NULL, &n, NULL);
    VkExtensionProperties *p = calloc(n ? n : 1, sizeof *p);
    if (!p) return 0;
    vkEnumerateDeviceExtensionProperties(physical, NULL, &n, p);
    uint32_t exts = 0;
    for (uint32_t i = 0; i < n; i++)
        for (int e = 0; e < VK_FEATURE_EXT_COUNT; e++)
            if (strcmp(p[i].extensionName, extensions[e].name) == 0) exts |= 1u << e;
    free(p);
    return exts;
}

uint32_t vk_features_query(VkPhysicalDevice physical, vk_feature_chain *have)
{
    chain_init(have, vk_features_extensions(physical));
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
    if (!(bits & CUBEC_FEATURE_BFLOAT16))
        bits &= ~(uint32_t)(CUBEC_FEATURE_BFLOAT16_DOT_PRODUCT |
                            CUBEC_FEATURE_BFLOAT16_COOPERATIVE_MATRIX);
    if (!(bits & CUBEC_FEATURE_COOPERATIVE_MATRIX))
        bits &= ~(uint32_t)CUBEC_FEATURE_BFLOAT16_COOPERATIVE_MATRIX;
    return bits;
}

void vk_features_want(uint32_t bits, vk_feature_chain *want)
{
    /* The extensions of the wanted bits: each is enabled at vkCreateDevice with its struct. */
    uint32_t exts = 0;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (bits & fields[i].bit)
            for (int e = 0; e < VK_FEATURE_EXT_COUNT; e++)
                if (extensions[e].in == fields[i].in) exts |= 1u << e;
    chain_init(want, exts);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (bits & fields[i].bit) *field_of(want, &fields[i]) = VK_TRUE;
}

uint32_t vk_features_extension_names(const vk_feature_chain *want, const char **names, uint32_t max)
{
    uint32_t n = 0;
    for (int e = 0; e < VK_FEATURE_EXT_COUNT && n < max; e++)
        if (want->extensions & (1u << e)) names[n++] = extensions[e].name;
    return n;
}
