/* The WebGPU backend's optional shader features: which WebGPU feature (core webgpu.h, or one of
 * wgpu-native's native extensions of wgpu.h) carries which cubec_feature bits, probed on the
 * adapter at run time and requested at device creation (docs/device.md, "The WebGPU backend").
 *
 * A WebGPU feature enables a group of cubec bits at once (wgpu's ShaderF16 on Vulkan needs
 * shaderFloat16 and 16-bit storage; its Subgroup needs the basic, vote, arithmetic, ballot,
 * shuffle and relative shuffle operations): it is requested when any bit of its group is left
 * on by [device] disable_features, and the bits turned off stay refused by cubec's own checks
 * (kernel/capabilities.h). Pure but for the AdapterHasFeature call: the mask is unit-tested. */
#ifndef CUBEC_GPU_WEBGPU_WG_FEATURES_H
#define CUBEC_GPU_WEBGPU_WG_FEATURES_H

#include "base/features.h"
#include "gpu/webgpu/wg_loader.h"

#include <stddef.h>
#include <stdint.h>

/* The bits of the subgroup operations WebGPU's subgroup feature carries. */
#define WG_SUBGROUP_BITS                                                                           \
    (CUBEC_FEATURE_SUBGROUP_VOTE | CUBEC_FEATURE_SUBGROUP_ARITHMETIC |                             \
     CUBEC_FEATURE_SUBGROUP_BALLOT | CUBEC_FEATURE_SUBGROUP_SHUFFLE |                              \
     CUBEC_FEATURE_SUBGROUP_SHUFFLE_RELATIVE)

/* The most WebGPU features wg_features_probe appends. */
#define WG_FEATURE_MAX 8u

/* Does the adapter have WebGPU feature `f`? (AdapterHasFeature; a parameter for tests.) */
typedef int (*wg_has_feature_fn)(void *user, WGPUFeatureName f);

/* The cubec bits of the adapter's features, and the WebGPU features to request for those of them
 * not in `disabled` (appended at out[*count]; out has room for WG_FEATURE_MAX more).
 * out_set->enabled: the bits the device will have; out_set->disabled: those the adapter has that
 * `disabled` turned off. */
void wg_features_probe(wg_has_feature_fn has, void *user, uint32_t disabled, WGPUFeatureName *out,
                       size_t *count, feature_set *out_set);

#endif
