/* naga's refusals that cubec recognises after the fact and says in words: where naga (wgpu-native's
 * translator) refused a SPIR-V module, and the module holds a construct that a known limit of
 * naga's SPIR-V front end refuses whatever the kernel does with it, the refusal becomes
 * CUBEC_UNSUPPORTED with a message that names the construct and the limit, naga's own words
 * after it. Only after naga refused: an implementation without the limit takes the module.
 * docs/device.md ("The WebGPU backend") lists them. */
#ifndef CUBEC_GPU_WEBGPU_WG_NAGA_REFUSALS_H
#define CUBEC_GPU_WEBGPU_WG_NAGA_REFUSALS_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

/* `refusal` (naga's, taken) as it is, or explained for the module `w` (n words) naga refused.
 * Known: the result of an OpAtomicCompareExchange (GLSL's atomicCompSwap) used at all: naga 29
 * never emits the old value it reads back ("Used by a statement before it was introduced into
 * the scope"; gfx-rs/wgpu#9621, fixed after naga 29). */
MUST_USE cubec_status wg_naga_explain(const uint32_t *w, size_t n, cubec_status refusal);

#endif
