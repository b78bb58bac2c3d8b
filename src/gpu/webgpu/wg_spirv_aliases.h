/* Buffer bindings declared more than once, merged for WebGPU: a rewrite of a SPIR-V module in
 * which storage buffers that share a set and binding as views of one scalar type and of vectors
 * of it (ggml's `data_b[]` and `data_b_v4[]`, GLSL's idiom for wider loads of one buffer) become
 * the scalar view alone: an element of a vector view is its components, read or written one by
 * one at `index * stride + component` of the scalar view. WGSL allows one variable per binding and
 * naga refuses the module ("Bindings for [n] conflict with other resource"); a vector's loads and
 * stores are not one access in SPIR-V's memory model either, so the rewrite keeps the kernel's
 * meaning. Kept apart from the pipeline code: it is a pass over the module's words. */
#ifndef CUBEC_GPU_WEBGPU_WG_SPIRV_ALIASES_H
#define CUBEC_GPU_WEBGPU_WG_SPIRV_ALIASES_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

/* The module `words` (n of them) with its aliased bindings merged: *out (malloc'ed, *out_n words)
 * or, where no binding is declared twice, *out NULL. Each view merged is a storage buffer block of
 * one runtime array at offset 0, of scalars or vectors of the one scalar type, of a stride that is
 * a whole number of scalars, and one of them is the scalars themselves; the vector views are used
 * only through access chains of an element or one component (loads, stores, further component
 * access) and OpArrayLength. Anything else declared twice is refused with CUBEC_UNSUPPORTED naming
 * the set, the binding and the blocks' members (the server names the kernel in front), rather
 * than left to naga's message. CUBEC_OUT_OF_MEMORY. */
MUST_USE cubec_status wg_spirv_merge_aliases(const uint32_t *words, size_t n, uint32_t **out,
                                             size_t *out_n);

#endif
