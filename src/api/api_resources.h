/* The resources of a launch (cubec_launch_desc.resources): each binding the kernel declares
 * besides storage buffers matched to what the caller gives for it (api/api_resources.c). */
#ifndef CUBEC_API_API_RESOURCES_H
#define CUBEC_API_API_RESOURCES_H

#include "server/buffers.h"
#include "server/kernels.h"

/* Fills out[k] with the memory of the image given for the kernel's resource k (the order of
 * e->refl.resources), for every resource the kernel declares; *out_count is their number,
 * bit k of *out_linear says resource k is sampled with linear filtering.
 * Refused, naming the element and value: a kind not supported yet, a set or binding the kernel
 * does not declare as that kind, a binding given twice or not at all, a released image, an
 * image of another dimension. */
MUST_USE cubec_status api_launch_resources(cubec_device *d, const cubec_launch_desc *desc,
                                           const pipeline_entry *e, buffer_obj **out,
                                           uint32_t *out_count, uint32_t *out_linear);

#endif
