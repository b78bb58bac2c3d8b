/* Infinite and NaN float constants made at run time for WebGPU: a rewrite of a SPIR-V module in
 * which every OpConstant of a float type whose value is an infinity or a NaN is computed instead
 * at the top of each function that uses it, as an OpBitcast of a 32-bit integer constant holding
 * its bits. naga (wgpu-native's translator) makes every OpConstant a WGSL literal, and WGSL has no
 * infinite or NaN literal: naga refuses the module ("Float literal is infinite"). glslang folds
 * `-1.0 / 0.0` and `uintBitsToFloat(0xff800000u)` into such a constant, and kernels start running
 * maxima from it (ggml's soft_max). Kept apart from the pipeline code: it is a pass over the
 * module's words. */
#ifndef CUBEC_GPU_WEBGPU_WG_SPIRV_NONFINITE_H
#define CUBEC_GPU_WEBGPU_WG_SPIRV_NONFINITE_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

/* The module `words` (n of them) with its infinite and NaN float constants computed in each
 * function that uses them: *out (malloc'ed, *out_n words) or, where it has none, *out NULL.
 *
 * A 32-bit float is the OpBitcast of its bits, so a NaN keeps its payload. A 16- or 64-bit one is
 * the OpFConvert of the 32-bit float of the same class and sign: exact for an infinity; a NaN
 * stays a NaN, its payload is not kept (naga takes no 16- or 64-bit integer constant without
 * features a device may lack). An OpConstantComposite built of them is rebuilt there as well
 * (OpCompositeConstruct), and a function variable initialised from one is stored to after the
 * function's variables instead. The constants themselves, and their names and decorations, leave
 * the module. Where one is used outside functions other than by another composite (a module-scope
 * variable's initializer, an OpSpecConstantOp), or the module cannot be parsed, it is left as it
 * is (*out NULL): naga then refuses it with its own message. CUBEC_OUT_OF_MEMORY only. */
MUST_USE cubec_status wg_spirv_nonfinite(const uint32_t *words, size_t n, uint32_t **out,
                                         size_t *out_n);

#endif
