/* Reflection of a WGSL compute kernel (cubec_kernel_desc.wgsl) into the kernel_reflection the
 * server uses for every kernel: which buffers a launch binds where, the metadata's immediates,
 * the workgroup size. WGSL is taken by the webgpu backend only; no WGSL front end is linked, so
 * this reads the few declarations cubec needs and leaves everything else to the implementation's
 * compiler (whose errors name the kernel at pipeline creation).
 *
 * What a WGSL kernel may declare (docs/kernels.md, "WGSL kernels"): storage and uniform buffers
 * of @group(0) at @binding(0..31), buffer i of a launch at binding i (gaps are unused slots); at
 * most one var<immediate> (or var<push_constant>) of a struct of 32-bit scalars and vectors,
 * which receives the launch's info bytes; @compute @workgroup_size of integer literals on the
 * entry point; texture_storage_2d/3d (of a format cubec names, any access), texture_2d/3d and
 * sampler at @group(0..3) and any binding no buffer takes (docs/images.md: a launch binds them as
 * storage images, sampled textures and samplers; a sampler is taken to sample every texture).
 * Other textures, buffers of other groups and override-sized workgroups are refused with
 * CUBEC_UNSUPPORTED naming them; a source without the entry point, with CUBEC_COMPILE_FAILED.
 * The optional features it uses (enable f16, the i64/u64/f64 types, 64-bit atomics, the subgroup
 * built-ins) become the SPIR-V capabilities of kernel_reflection.capabilities, so the server
 * checks them against the device's features as it does a SPIR-V module's. */
#ifndef CUBEC_KERNEL_WGSL_REFLECT_H
#define CUBEC_KERNEL_WGSL_REFLECT_H

#include "base/status.h"
#include "kernel/reflect.h"

/* Fills *out (cleared first) from `source`, and *out_module with the source the backend compiles
 * (malloc'ed): the same text with every `var<storage, read>` declared read_write, as the WebGPU
 * backend's layouts declare every storage binding (two tensors of one pooled page, one read and
 * one written by a dispatch, would otherwise break WebGPU's usage rule). */
MUST_USE cubec_status wgsl_reflect(const char *name, const char *source, const char *entry_point,
                                   kernel_reflection *out, char **out_module);

#endif
