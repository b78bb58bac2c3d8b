/* Specialization constants frozen into a SPIR-V module before the implementation translates it:
 * naga (wgpu-native's translator) takes a SPIR-V specialization constant as a WGSL override,
 * and refuses an override in what WGSL requires to be a const-expression: a workgroup size from
 * `local_size_x_id`, an array length (`shared uint s[N]`), a composite of them, and it has no
 * OpSpecConstantOp at all (gfx-rs/wgpu#4324). cubec knows every value when it creates the
 * pipeline, so the module gets them as plain constants instead. */
#ifndef CUBEC_GPU_WEBGPU_WG_SPEC_FREEZE_H
#define CUBEC_GPU_WEBGPU_WG_SPEC_FREEZE_H

#include "base/status.h"
#include "gpu/gpu.h"

#include <stddef.h>
#include <stdint.h>

/* A malloc'ed copy of the module (`n` words) in which every OpSpecConstant, OpSpecConstantTrue
 * and OpSpecConstantFalse is a constant of the value `spec` gives its SpecId (its default where
 * none), its SpecId decoration is dropped, every OpSpecConstantOp on integers and booleans that
 * kernel/workgroup_memory.h evaluates (arithmetic, bit, logical and comparison operations,
 * conversions, Select, CompositeExtract) is its constant, every OpSpecConstantComposite of
 * constants an OpConstantComposite, and the LocalSize execution mode holds the workgroup size
 * that a BuiltIn WorkgroupSize constant (or LocalSizeId) gives. What is not evaluated (floats,
 * vector operations, a division by zero) is left as it was: the translator then refuses it with
 * its own message. A module without specialization constants comes back unchanged.
 * CUBEC_OUT_OF_MEMORY only. */
MUST_USE cubec_status wg_spec_freeze(const uint32_t *words, size_t n, const gpu_spec_constant *spec,
                                     uint32_t spec_count, uint32_t **out, size_t *out_n);

#endif
