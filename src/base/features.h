/* The optional device features of cubec_feature: one list that gives each bit its short name
 * (what `cubec info`, `[device] disable_features` and kernel errors say) and the Vulkan feature
 * behind it, and the feature set a device records at open. Pure: no Vulkan calls. */
#ifndef CUBEC_BASE_FEATURES_H
#define CUBEC_BASE_FEATURES_H

#include "cubec/cubec.h"

#include <stddef.h>
#include <stdint.h>

/* X(bit, short name, Vulkan feature). The short name is the enumerator's suffix in lower case. */
#define FEATURE_LIST(X)                                                                            \
    X(CUBEC_FEATURE_INT8, "int8", "shaderInt8")                                                    \
    X(CUBEC_FEATURE_INT16, "int16", "shaderInt16")                                                 \
    X(CUBEC_FEATURE_INT64, "int64", "shaderInt64")                                                 \
    X(CUBEC_FEATURE_FLOAT16, "float16", "shaderFloat16")                                           \
    X(CUBEC_FEATURE_FLOAT64, "float64", "shaderFloat64")                                           \
    X(CUBEC_FEATURE_STORAGE_BUFFER_8BIT, "storage_buffer_8bit", "storageBuffer8BitAccess")         \
    X(CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_8BIT, "uniform_and_storage_buffer_8bit",            \
      "uniformAndStorageBuffer8BitAccess")                                                         \
    X(CUBEC_FEATURE_PUSH_CONSTANT_8BIT, "push_constant_8bit", "storagePushConstant8")              \
    X(CUBEC_FEATURE_STORAGE_BUFFER_16BIT, "storage_buffer_16bit", "storageBuffer16BitAccess")      \
    X(CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_16BIT, "uniform_and_storage_buffer_16bit",          \
      "uniformAndStorageBuffer16BitAccess")                                                        \
    X(CUBEC_FEATURE_PUSH_CONSTANT_16BIT, "push_constant_16bit", "storagePushConstant16")           \
    X(CUBEC_FEATURE_INT64_ATOMICS, "int64_atomics", "shaderBufferInt64Atomics")                    \
    X(CUBEC_FEATURE_VULKAN_MEMORY_MODEL, "vulkan_memory_model", "vulkanMemoryModel")               \
    X(CUBEC_FEATURE_VULKAN_MEMORY_MODEL_DEVICE_SCOPE, "vulkan_memory_model_device_scope",          \
      "vulkanMemoryModelDeviceScope")                                                              \
    X(CUBEC_FEATURE_SUBGROUP_VOTE, "subgroup_vote", "subgroup operations VOTE")                    \
    X(CUBEC_FEATURE_SUBGROUP_ARITHMETIC, "subgroup_arithmetic", "subgroup operations ARITHMETIC")  \
    X(CUBEC_FEATURE_SUBGROUP_BALLOT, "subgroup_ballot", "subgroup operations BALLOT")              \
    X(CUBEC_FEATURE_SUBGROUP_SHUFFLE, "subgroup_shuffle", "subgroup operations SHUFFLE")           \
    X(CUBEC_FEATURE_SUBGROUP_SHUFFLE_RELATIVE, "subgroup_shuffle_relative",                        \
      "subgroup operations SHUFFLE_RELATIVE")                                                      \
    X(CUBEC_FEATURE_SUBGROUP_CLUSTERED, "subgroup_clustered", "subgroup operations CLUSTERED")     \
    X(CUBEC_FEATURE_SUBGROUP_QUAD, "subgroup_quad", "subgroup operations QUAD")                    \
    X(CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS, "buffer_device_address", "bufferDeviceAddress")         \
    X(CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL, "subgroup_size_control",                                \
      "VK_EXT_subgroup_size_control subgroupSizeControl")                                          \
    X(CUBEC_FEATURE_INTEGER_DOT_PRODUCT, "integer_dot_product",                                    \
      "VK_KHR_shader_integer_dot_product shaderIntegerDotProduct")                                 \
    X(CUBEC_FEATURE_COOPERATIVE_MATRIX, "cooperative_matrix",                                      \
      "VK_KHR_cooperative_matrix cooperativeMatrix")                                               \
    X(CUBEC_FEATURE_COOPERATIVE_MATRIX_NV, "cooperative_matrix_nv",                                \
      "VK_NV_cooperative_matrix cooperativeMatrix")                                                \
    X(CUBEC_FEATURE_BFLOAT16, "bfloat16", "VK_KHR_shader_bfloat16 shaderBFloat16Type")             \
    X(CUBEC_FEATURE_BFLOAT16_DOT_PRODUCT, "bfloat16_dot_product",                                  \
      "VK_KHR_shader_bfloat16 shaderBFloat16DotProduct")                                           \
    X(CUBEC_FEATURE_BFLOAT16_COOPERATIVE_MATRIX, "bfloat16_cooperative_matrix",                    \
      "VK_KHR_shader_bfloat16 shaderBFloat16CooperativeMatrix")

/* What a device enabled at open, and what it has but the configuration turned off: kernel
 * errors tell "the device lacks it" from "it was disabled". */
typedef struct feature_set {
    uint32_t enabled;  /* cubec_feature bits */
    uint32_t disabled; /* cubec_feature bits the device has, left off by disable_features */
} feature_set;

/* The Vulkan feature behind one bit ("shaderFloat16"), or NULL when `bit` is not one feature. */
const char *feature_vulkan_name(uint32_t bit);
/* Every bit FEATURE_LIST names: what a backend that accepts any kernel (null) enables, so that
 * no bit without a name is reported. */
#define FEATURE_ALL_BITS(bit, name, vulkan) | (uint32_t)(bit)
#define FEATURES_ALL (0u FEATURE_LIST(FEATURE_ALL_BITS))
/* The bit of a short name (case-insensitive, `len` bytes of `name`), or 0. */
uint32_t feature_from_name(const char *name, size_t len);

#endif
