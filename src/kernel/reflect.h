/* SPIR-V validation and reflection of compute kernels.
 *
 * cubec's launch model: a launch's buffers fill the module's descriptor layout as written
 * (docs/kernels.md, "Bringing existing shaders"): set 0 first, buffer i at binding i; each
 * further set the module uses follows the previous one's highest binding. A binding the module
 * does not declare (a gap an optimizer left) takes a buffer that is not bound, as do buffers past
 * the last one; storage and uniform buffers may sit at any binding. Besides those, an optional
 * metadata ("info") block in push constants or in a read-only buffer at set 0 binding
 * CUBEC_INFO_BINDING. This module checks that a module fits that model and reports what the
 * launch path and hazard tracking need: the buffer slots (set, binding, kind), each one's access
 * (from NonWritable / NonReadable), the info block's size and the workgroup size. Anything that
 * does not fit is refused here, with a message, so later layers can trust it. */
#ifndef CUBEC_KERNEL_REFLECT_H
#define CUBEC_KERNEL_REFLECT_H

#include "cubec/cubec.h"

#include "base/status.h"
#include "kernel/info_layout.h"

#include <stddef.h>
#include <stdint.h>

/* The binding of the info block when it is a storage buffer; user buffers use 0..30. */
#define CUBEC_INFO_BINDING 31
/* The most SPIR-V capabilities a module may declare (real kernels declare a handful). */
#define KERNEL_MAX_CAPABILITIES 64
/* The most specialization constants a module may declare (kernels declare a few). */
#define KERNEL_MAX_SPEC_CONSTANTS 128

/* The most descriptor sets a module may use: Vulkan guarantees maxBoundDescriptorSets >= 4. */
#define KERNEL_MAX_SETS 4
/* The most buffer slots of a launch (cubec_launch_desc.buffer_count's limit). */
#define KERNEL_MAX_SLOTS 32

/* What a launch buffer at one slot is bound as. */
typedef enum kernel_slot_kind {
    KERNEL_SLOT_UNUSED = 0, /* no binding: a gap the module left (the buffer is not bound) */
    KERNEL_SLOT_STORAGE,    /* a storage buffer */
    KERNEL_SLOT_UNIFORM,    /* a uniform buffer (read-only) */
} kernel_slot_kind;

/* A launch buffer's place in the module's layout. */
typedef struct kernel_slot {
    uint8_t kind; /* kernel_slot_kind */
    uint8_t set;
    uint8_t binding;
    uint32_t block_size; /* a uniform block's declared size: the buffer must hold it */
} kernel_slot;

/* The most images (and other resources besides storage buffers) a kernel binds. */
#define KERNEL_MAX_RESOURCES 8

/* A binding other than a storage buffer (kernel/reflect_resources.c). */
typedef struct kernel_resource {
    uint32_t set, binding;
    cubec_resource_kind kind; /* what a launch must bind there */
    cubec_access access;      /* NonWritable -> READ, NonReadable -> WRITE, else READ_WRITE */
    uint32_t dims;            /* 2 or 3 (image2D, image3D); 1 for a texel buffer; 0: sampler */
    uint32_t format;          /* the declared format qualifier as a cubec_image_format, 0: none */
    uint32_t numeric;         /* what it reads: KERNEL_NUMERIC_FLOAT, _UINT or _SINT */
    /* A sampler: bit k, it samples resource k (sampler2D(t, s) pairs); all ones where the pairs
     * could not be worked out. */
    uint32_t samples;
    char name[48]; /* the variable's name, for messages */
} kernel_resource;

/* The texel type a resource reads or writes: a float (and unorm) format, or an integer one. */
#define KERNEL_NUMERIC_FLOAT 0
#define KERNEL_NUMERIC_UINT 1
#define KERNEL_NUMERIC_SINT 2

typedef struct kernel_reflection {
    /* The buffers a launch passes at least: one past the module's last slot. Slot i is
     * slots[i]; buffers past binding_count are not bound. */
    uint32_t binding_count;
    kernel_slot slots[KERNEL_MAX_SLOTS];
    uint32_t set_count;          /* one past the highest set used (1 when none is) */
    cubec_access access[32];     /* per slot: NonWritable -> READ, NonReadable -> WRITE,
                                    else READ_WRITE (on the variable, the block or every member);
                                    READ for a uniform block, 0 for an unused slot */
    uint32_t push_constant_size; /* declared size of the push-constant block, 0 if none */
    int has_info_buffer;         /* a metadata block at binding CUBEC_INFO_BINDING */
    int info_uniform;            /* ... which is a uniform buffer (else a storage buffer) */
    uint32_t info_buffer_size;   /* its declared size */
    uint32_t workgroup_size[3];  /* LocalSize of the entry point, specialized */
    /* Per dimension, the SPIR-V id of the specialization constant (or expression) that gives it
     * (local_size_x_id ...), 0 for a literal; and its SpecId + 1 (0: none), for messages. */
    uint32_t workgroup_size_ids[3];
    uint32_t workgroup_size_spec[3];
    uint64_t shared_memory_size; /* bytes of Workgroup variables (kernel/workgroup_memory.h),
                                    specialized */
    int shared_int64_atomics;    /* a 64-bit integer atomic on Workgroup memory */
    /* Specialization constants: their ids and which are 64-bit (at most
     * KERNEL_MAX_SPEC_CONSTANTS). */
    uint32_t spec_count;
    uint32_t spec_ids[KERNEL_MAX_SPEC_CONSTANTS];
    unsigned char spec_wide[KERNEL_MAX_SPEC_CONSTANTS];
    uint32_t capability_count; /* OpCapability declarations, as SpvCapability values, */
    uint32_t capabilities[KERNEL_MAX_CAPABILITIES]; /* checked against the device by
                                                       kernel/capabilities.h */
    /* Images, texel buffers and samplers (at most KERNEL_MAX_RESOURCES): first those with
     * memory (memory_resource_count of them), then the separate samplers. */
    uint32_t resource_count;
    uint32_t memory_resource_count;
    kernel_resource resources[KERNEL_MAX_RESOURCES];
} kernel_reflection;

/* The Vulkan version kernel_reflect validates for when it is given 0: the version cubec's
 * instance asks for (gpu.h GPU_VULKAN_API_VERSION), in VK_MAKE_API_VERSION's encoding. */
#define KERNEL_VULKAN_DEFAULT ((1u << 22) | (2u << 12))

/* Validates `words` with SPIRV-Tools for the environment of `vulkan_version` (the Vulkan version
 * cubec uses on the device, VK_MAKE_API_VERSION-encoded: 1.0, 1.1, 1.2, or 1.3 and later; 0 means
 * KERNEL_VULKAN_DEFAULT), measures its Workgroup memory (kernel/workgroup_memory.h) and reflects
 * the GLCompute entry point named `entry_point` (NULL: "main") with SPIRV-Cross. *out is cleared
 * on entry and filled on success.
 *
 * Errors: CUBEC_INVALID_ARGUMENT for NULL `out` (or NULL `words` with a non-zero count);
 * CUBEC_INVALID_SPIRV for an empty module or one without the SPIR-V magic, a module the validator
 * refuses (its message is included), no such GLCompute entry point, resources other than
 * storage and uniform buffers and one push-constant block, a set past KERNEL_MAX_SETS, arrays of
 * buffers, a layout of more than KERNEL_MAX_SLOTS slots, a storage and a uniform buffer at one
 * binding, a runtime-sized or writable info buffer, and both an info buffer and push constants.
 * CUBEC_UNSUPPORTED for a module declaring more than KERNEL_MAX_CAPABILITIES capabilities, or a
 * workgroup size given by a specialization-constant expression that cannot be evaluated
 * (kernel/workgroup_memory.h). The workgroup size and shared memory are those of the
 * specialization constants' defaults; shapes the defaults leave invalid are refused by
 * kernel_reflect_specialize, not here. Validation messages read "SPIR-V validation failed
 * (Vulkan 1.2, at instruction N): <the validator's message>". */
MUST_USE cubec_status kernel_reflect(const uint32_t *words, size_t word_count,
                                     const char *entry_point, uint32_t vulkan_version,
                                     kernel_reflection *out);
/* The same for a module that passed kernel_reflect's validation before and is known unchanged
 * (`validated`: the disk cache's checked entries): the SPIR-V validator is not run again. */
MUST_USE cubec_status kernel_reflect_trusted(const uint32_t *words, size_t word_count,
                                             const char *entry_point, uint32_t vulkan_version,
                                             int validated, kernel_reflection *out);
/* kernel_reflect_trusted that also lists the metadata block's members (kernel/info_layout.h)
 * into *out_layout (NULL: not asked; set to NULL when the kernel has no metadata block). The
 * caller frees the layout with kernel_info_layout_free. */
MUST_USE cubec_status kernel_reflect_layout(const uint32_t *words, size_t word_count,
                                            const char *entry_point, uint32_t vulkan_version,
                                            int validated, kernel_reflection *out,
                                            kernel_info_layout **out_layout);

/* Specializes `r` (from kernel_reflect of the same `words`) to the values `spec` gives (by SpecId;
 * a constant not given keeps its default): the workgroup size where specialization constants set
 * it, and the shared memory, as the driver and the validation layer will see them
 * (VUID-RuntimeSpirv-Workgroup-06530). A dimension specialized to 0 is CUBEC_INVALID_ARGUMENT
 * naming the constant and the value; a shared array whose length these values leave unknown, or
 * an array of length below 1, is refused as workgroup_memory_problem says. kernel_reflect does
 * not refuse those for the defaults: run this, with the pipeline's values (none: the defaults),
 * before a module goes to the driver. */
MUST_USE cubec_status kernel_reflect_specialize(const uint32_t *words, size_t word_count,
                                                const cubec_spec_constant *spec,
                                                uint32_t spec_count, kernel_reflection *r);

#endif
