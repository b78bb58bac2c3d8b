/* What a SPIR-V module does with Workgroup ("shared") memory, from a walk of its words.
 *
 * SPIRV-Cross's C API lists resources, not Workgroup variables, and cannot tell which atomics
 * touch which storage class; both matter to the device. The sum of the sizes of the Workgroup
 * variables must not exceed maxComputeSharedMemorySize (VUID-RuntimeSpirv-Workgroup-06530), and a
 * 64-bit integer atomic on Workgroup memory needs shaderSharedInt64Atomics, which cubec does not
 * enable (VUID-RuntimeSpirv-None-06279). A driver given either runs into undefined behaviour
 * (lavapipe ran a kernel declaring 256 MiB of shared memory), so cubec_kernel_create measures
 * them here and refuses the kernel (kernel/limits.h) before any Vulkan object is made.
 *
 * Sizes are counted as the Khronos validation layer counts them: every Workgroup variable of the
 * module (used or not: the driver gets the whole module), each the plain sum of its parts with no
 * padding (bool 4 bytes, vec3 12, a struct the sum of its members, an array its length times its
 * element). Pure: no Vulkan, unit-tested on hand-written modules. */
#ifndef CUBEC_KERNEL_WORKGROUP_MEMORY_H
#define CUBEC_KERNEL_WORKGROUP_MEMORY_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct workgroup_memory {
    uint64_t bytes;     /* total size of the Workgroup variables (UINT64_MAX if it overflows) */
    uint32_t variables; /* how many Workgroup variables the module declares */
    int int64_atomics;  /* an atomic instruction on a 64-bit integer in Workgroup memory */
} workgroup_memory;

/* Walks a module that the SPIR-V validator accepted. *out is cleared on entry and filled on
 * success.
 *
 * Errors: CUBEC_INVALID_ARGUMENT for NULL `words` or `out`; CUBEC_INVALID_SPIRV for words that do
 * not walk as instructions (a module the validator refused); CUBEC_UNSUPPORTED for a Workgroup
 * variable whose array length is a specialization-constant expression (an OpSpecConstantOp: its
 * value is not computed here, so its size is unknown); CUBEC_OUT_OF_MEMORY. A length that is a
 * specialization constant itself counts with its default value. */
MUST_USE cubec_status workgroup_memory_scan(const uint32_t *words, size_t word_count,
                                            workgroup_memory *out);
/* The same, with the values the pipeline's specialization constants get (`spec`, by SpecId; a
 * constant not given keeps its default): the sizes the driver and the validation layer see. */
MUST_USE cubec_status workgroup_memory_scan_specialized(const uint32_t *words, size_t word_count,
                                                        const cubec_spec_constant *spec,
                                                        uint32_t spec_count, workgroup_memory *out);

#endif
