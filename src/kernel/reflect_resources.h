/* Reflection of the bindings a kernel declares besides buffers: storage images, combined image
 * samplers, textures (separate images), texel buffers (images of dimension Buffer) and separate
 * samplers (docs/images.md). Kept apart from reflect.c, which owns the buffer model, so each
 * grows on its own. */
#ifndef CUBEC_KERNEL_REFLECT_RESOURCES_H
#define CUBEC_KERNEL_REFLECT_RESOURCES_H

#include "base/status.h"
#include "kernel/reflect.h"

#include <spirv_cross/spirv_cross_c.h>

/* Fills out->resources from the module's images, texel buffers and samplers: those with memory
 * first (out->memory_resource_count), then the samplers with the textures each samples. Refused
 * (CUBEC_INVALID_SPIRV, naming the variable): an array of them, a set past KERNEL_MAX_SETS, a
 * binding a buffer or the metadata block uses, a dimension other than 2D, 3D or Buffer, more
 * than KERNEL_MAX_RESOURCES. Call after the storage buffers were reflected (out->binding_count).
 */
MUST_USE cubec_status kernel_reflect_resources(spvc_compiler compiler, spvc_resources resources,
                                               kernel_reflection *out);

#endif
