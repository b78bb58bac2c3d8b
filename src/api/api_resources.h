/* The resources of a launch (cubec_launch_desc.resources): each binding the kernel declares
 * besides storage buffers matched to what the caller gives for it (api/api_resources.c). */
#ifndef CUBEC_API_API_RESOURCES_H
#define CUBEC_API_API_RESOURCES_H

#include "server/buffers.h"
#include "server/kernels.h"
#include "server/launch.h"

/* Fills out[k] with the memory of the image or texel buffer given for the kernel's resource k
 * (the order of e->refl.resources), for every one of them with memory, and in `a`:
 * resource_count (their number), sampler_bits (filter and address mode per resource) and
 * texel_formats (4 bits per resource k: a texel buffer's format).
 * Refused, naming the element and value: a kind that is not one, a set or binding the kernel
 * does not declare as that kind, a binding given twice or not at all, a released image or
 * buffer, an image of another dimension, a format whose texels are not of the type the kernel
 * reads, a texel buffer without a format, of a format the device cannot use in texel buffers,
 * misaligned or past maxTexelBufferElements, a linear filter of a format the device cannot
 * filter linearly, a sampled image of a format it cannot sample. */
MUST_USE cubec_status api_launch_resources(cubec_device *d, const cubec_launch_desc *desc,
                                           const pipeline_entry *e, buffer_obj **out,
                                           launch_args *a);

#endif
