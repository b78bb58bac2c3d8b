/* Reflection of the bindings a kernel declares besides storage buffers: storage images and
 * combined image samplers now, separate samplers and texel buffers as they land
 * (docs/images.md). Kept apart from reflect.c, which owns the buffer model, so each grows on its
 * own. */
#ifndef CUBEC_KERNEL_REFLECT_RESOURCES_H
#define CUBEC_KERNEL_REFLECT_RESOURCES_H

#include "base/status.h"
#include "kernel/reflect.h"

#include <spirv_cross/spirv_cross_c.h>

/* Fills out->resources from the module's storage and sampled images. Refused
 * (CUBEC_INVALID_SPIRV, naming the variable): an array of images, a set other than 0, a binding a
 * storage buffer or the metadata block uses, a dimension other than 2D or 3D, more than
 * KERNEL_MAX_RESOURCES. Call after the storage buffers were reflected (out->binding_count). */
MUST_USE cubec_status kernel_reflect_resources(spvc_compiler compiler, spvc_resources resources,
                                               kernel_reflection *out);

#endif
