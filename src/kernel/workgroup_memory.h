/* What a SPIR-V module does with Workgroup ("shared") memory, from a walk of its words, under
 * the values its specialization constants get (cubec_kernel_desc.spec_constants, else their
 * defaults): integer constants, specialization constants and OpSpecConstantOp expressions are
 * evaluated as the driver evaluates them, so a shared array sized by BLOCK_SIZE * 2 is measured
 * with the BLOCK_SIZE the pipeline gets. The same values give the workgroup size when it comes
 * from specialization constants (workgroup_memory_constants; reflect.c asks for them).
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

/* What a module's values can leave it without a valid shape (workgroup_memory.problem). */
enum {
    WORKGROUP_SHAPE_OK = 0,
    WORKGROUP_LENGTH_UNKNOWN,   /* a Workgroup array's length that cannot be evaluated */
    WORKGROUP_LENGTH_BELOW_ONE, /* an array's length below 1, which Vulkan forbids */
};

typedef struct workgroup_memory {
    uint64_t bytes;     /* total size of the Workgroup variables (UINT64_MAX if it overflows) */
    uint32_t variables; /* how many Workgroup variables the module declares */
    int int64_atomics;  /* an atomic instruction on a 64-bit integer in Workgroup memory */
    /* The first problem of the module under these values: a WORKGROUP_* value, the length (for
     * LENGTH_BELOW_ONE), and the variable it makes unusable ("'tmp'", or "array type %12" when
     * no variable has the type), a Workgroup one when what_shared. A problem is recorded, not
     * returned: the defaults may have one that the pipeline's values fix (ggml's flash_attn
     * has a length of 0 with its defaults); workgroup_memory_problem turns it into the
     * refusal for the values the pipeline gets. */
    int problem;
    int what_shared;
    int64_t length;
    char what[96];
} workgroup_memory;

/* Walks a module that the SPIR-V validator accepted. *out is cleared on entry and filled on
 * success.
 *
 * Errors: CUBEC_INVALID_ARGUMENT for NULL `words` or `out`; CUBEC_INVALID_SPIRV for words that do
 * not walk as instructions (a module the validator refused); CUBEC_OUT_OF_MEMORY. A Workgroup
 * variable whose array length cannot be evaluated (an OpSpecConstantOp on floats, an opcode other
 * than integer arithmetic, bit, logical and comparison operations, conversions, Select and
 * CompositeExtract, or a division by zero: SPIR-V leaves it undefined), or an array of length
 * below 1, is recorded in out->problem. Specialization constants count with their defaults. */
MUST_USE cubec_status workgroup_memory_scan(const uint32_t *words, size_t word_count,
                                            workgroup_memory *out);
/* The same, with the values the pipeline's specialization constants get (`spec`, by SpecId; a
 * constant not given keeps its default): the sizes the driver and the validation layer see. */
MUST_USE cubec_status workgroup_memory_scan_specialized(const uint32_t *words, size_t word_count,
                                                        const cubec_spec_constant *spec,
                                                        uint32_t spec_count, workgroup_memory *out);

/* The refusal for wm->problem under the values it was measured with: CUBEC_UNSUPPORTED naming
 * the Workgroup variable whose length cannot be evaluated, CUBEC_INVALID_SPIRV naming the
 * variable (or array type) whose length is below 1 and the length; NULL when there is none. */
MUST_USE cubec_status workgroup_memory_problem(const workgroup_memory *wm);
/* The values, under `spec` as above, of the integer or bool constants whose result ids are `ids`
 * (OpConstant, OpSpecConstant, OpSpecConstantOp...) into `values`: the workgroup size of
 * local_size_x_id and its kin. CUBEC_UNSUPPORTED names an id that is not such a constant or whose
 * value cannot be evaluated. */
MUST_USE cubec_status workgroup_memory_constants(const uint32_t *words, size_t word_count,
                                                 const cubec_spec_constant *spec,
                                                 uint32_t spec_count, const uint32_t *ids,
                                                 uint32_t id_count, uint64_t *values);
/* The same, each id on its own: known[k] says whether values[k] was evaluated (0: not an integer
 * or bool constant, or one whose value cannot be evaluated), without an error for it. The
 * webgpu backend folds specialization-constant expressions with it (gpu/webgpu/wg_spec_freeze.h).
 */
MUST_USE cubec_status workgroup_memory_constants_known(const uint32_t *words, size_t word_count,
                                                       const cubec_spec_constant *spec,
                                                       uint32_t spec_count, const uint32_t *ids,
                                                       uint32_t id_count, uint64_t *values,
                                                       unsigned char *known);

#endif
