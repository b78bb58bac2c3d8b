/* The WebGPU features behind cubec_feature bits, probed and requested (see wg_features.h). */
#include "gpu/webgpu/wg_features.h"

/* wgpu-native's native features (its wgpu.h, WGPUNativeFeature), restated: cubec compiles
 * against the core webgpu.h only. */
enum {
    WG_NATIVE_SHADER_F64 = 0x0003001D,
    WG_NATIVE_SUBGROUP = 0x00030021,
    WG_NATIVE_SHADER_INT64 = 0x00030026,
    WG_NATIVE_SHADER_INT64_ATOMIC_ALL_OPS = 0x0003002D,
};

typedef struct wg_feature_rule {
    WGPUFeatureName feature;
    uint32_t bits; /* the cubec_feature bits it carries */
    /* Another rule giving the same bits, tried only when this one is absent (0: none). */
    WGPUFeatureName instead;
} wg_feature_rule;

/* What each feature lets naga and the driver take (wgpu-hal's Vulkan adapter: ShaderF16 needs
 * shaderFloat16 with 16-bit storage and uniform access; Subgroup the five operation classes of
 * WG_SUBGROUP_BITS, not clustered or quad; ShaderInt64AtomicAllOps the buffer and shared 64-bit
 * atomics). ShaderI16 is left out: naga takes no 16-bit integers (wgpu.h says so), so a kernel
 * declaring Int16 would fail in the translation rather than be refused by name. */
static const wg_feature_rule rules[] = {
    {WGPUFeatureName_ShaderF16,
     CUBEC_FEATURE_FLOAT16 | CUBEC_FEATURE_STORAGE_BUFFER_16BIT |
         CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_16BIT,
     0},
    /* The standard feature where the implementation lists it (Dawn); wgpu-native 29 lists its
     * native one only. */
    {WGPUFeatureName_Subgroups, WG_SUBGROUP_BITS, (WGPUFeatureName)WG_NATIVE_SUBGROUP},
    {(WGPUFeatureName)WG_NATIVE_SHADER_F64, CUBEC_FEATURE_FLOAT64, 0},
    {(WGPUFeatureName)WG_NATIVE_SHADER_INT64, CUBEC_FEATURE_INT64, 0},
    {(WGPUFeatureName)WG_NATIVE_SHADER_INT64_ATOMIC_ALL_OPS, CUBEC_FEATURE_INT64_ATOMICS, 0},
};

_Static_assert(sizeof rules / sizeof rules[0] <= WG_FEATURE_MAX, "WG_FEATURE_MAX is too small");

void wg_features_probe(wg_has_feature_fn has, void *user, uint32_t disabled, WGPUFeatureName *out,
                       size_t *count, feature_set *out_set)
{
    uint32_t supported = 0, enabled = 0;
    WGPUFeatureName found[sizeof rules / sizeof rules[0]] = {0};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        if (has(user, rules[i].feature))
            found[i] = rules[i].feature;
        else if (rules[i].instead && has(user, rules[i].instead))
            found[i] = rules[i].instead;
        if (found[i]) supported |= rules[i].bits;
    }
    enabled = supported & ~disabled;
    /* What needs another bit goes with it, as on Vulkan (vk_features_mask): 16-bit uniform
     * access is storage access and more; 64-bit atomics are on 64-bit integers. */
    if (!(enabled & CUBEC_FEATURE_STORAGE_BUFFER_16BIT))
        enabled &= ~(uint32_t)CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_16BIT;
    if (!(enabled & CUBEC_FEATURE_INT64)) enabled &= ~(uint32_t)CUBEC_FEATURE_INT64_ATOMICS;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (found[i] && (enabled & rules[i].bits)) out[(*count)++] = found[i];
    out_set->enabled = enabled;
    out_set->disabled = supported & ~enabled;
}
