/* Moving a module's push-constant block to a buffer: the SPIR-V rewrite that lets a kernel whose
 * push block is larger than the device's maxPushConstantsSize run (ggml's multi_add declares 212
 * bytes; lavapipe allows 128). The caller still passes the block's bytes as the launch's info;
 * they go to the metadata ring and are bound at set 0 binding CUBEC_INFO_BINDING, as a CUBEC_INFO
 * block in a buffer already is.
 *
 * The block becomes a read-only storage buffer (StorageBuffer storage class, Block decoration
 * kept), not a uniform buffer: a push block's Offset decorations follow the std430-like rules
 * that storage buffers share, where a uniform block would need std140 (or the
 * uniformBufferStandardLayout feature) and arrays of scalars would be misplaced. The rewrite is
 * word-level: every PushConstant pointer type and the variable change storage class, the variable
 * gets DescriptorSet 0, Binding CUBEC_INFO_BINDING and NonWritable, and modules older than SPIR-V
 * 1.3 get the SPV_KHR_storage_buffer_storage_class extension (core in Vulkan 1.1). A block with
 * 16- or 8-bit members needs StorageBuffer16BitAccess / StorageBuffer8BitAccess once moved: the
 * StoragePushConstant16 / StoragePushConstant8 capability is replaced by it (dropped where the
 * module declares it already). The extension that declares them (SPV_KHR_16bit_storage,
 * SPV_KHR_8bit_storage) is the one the push-constant form needed, so the module has it already.
 * The caller checks the new capabilities against the device's features. Pure. */
#ifndef CUBEC_KERNEL_PUSH_TO_BUFFER_H
#define CUBEC_KERNEL_PUSH_TO_BUFFER_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

/* Writes the rewritten module into a new array *out_words (*out_count words; the caller frees
 * it). The module must have passed kernel_reflect with one push-constant block and no metadata
 * block at CUBEC_INFO_BINDING. Errors: CUBEC_INVALID_SPIRV for a module that is truncated or has
 * no push-constant variable, or more than one; CUBEC_OUT_OF_MEMORY. */
MUST_USE cubec_status kernel_push_to_buffer(const uint32_t *words, size_t count,
                                            uint32_t **out_words, size_t *out_count);

#endif
