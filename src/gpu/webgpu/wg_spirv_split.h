/* Combined image samplers split for WebGPU: a rewrite of a SPIR-V module in which every
 * `sampler2D`/`sampler3D` variable (OpTypeSampledImage) becomes a texture at its binding and a
 * sampler at its binding + WG_SPLIT_SAMPLER_BINDING in the same set, each load of it a load of
 * both and an OpSampledImage. WebGPU has no combined binding (gpuweb#770), and naga's SPIR-V
 * front end refuses one; the backend's layout and bind groups put the sampler there
 * (wg_image.c). Kept apart from the pipeline code: it is a pass over the module's words. */
#ifndef CUBEC_GPU_WEBGPU_WG_SPIRV_SPLIT_H
#define CUBEC_GPU_WEBGPU_WG_SPIRV_SPLIT_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

/* Where the sampler half of a combined image sampler at binding b goes: b + this. */
#define WG_SPLIT_SAMPLER_BINDING 512u

/* The module `words` (n of them) with its combined image samplers split: *out (malloc'ed, *out_n
 * words) or, where it has none, *out NULL. CUBEC_UNSUPPORTED naming the variable where one is
 * used other than by loading it (passed to a function, say), CUBEC_OUT_OF_MEMORY. */
MUST_USE cubec_status wg_spirv_split_samplers(const uint32_t *words, size_t n, uint32_t **out,
                                              size_t *out_n);

#endif
