/* Resolving a launch's resources (api/api_resources.h). Kept apart from the launch's buffer
 * checks (api_kernel.c), which the binding model's rework changes, so each moves on its own. */
#include "api/api_resources.h"
#include "api/api_common.h"
#include "server/images.h"

static const char fn[] = "cubec_launch";

cubec_status api_launch_resources(cubec_device *d, const cubec_launch_desc *desc,
                                  const pipeline_entry *e, buffer_obj **out, uint32_t *out_count,
                                  uint32_t *out_linear)
{
    *out_count = 0;
    *out_linear = 0;
    const kernel_reflection *r = &e->refl;
    if (desc->resource_count && !desc->resources)
        return INVALID_ARG("%s: desc->resources is NULL with resource_count %u", fn,
                           desc->resource_count);
    if (desc->resource_count != r->resource_count)
        return INVALID_ARG("%s: desc->resource_count is %u but kernel '%s' declares %u storage "
                           "and sampled images",
                           fn, desc->resource_count, e->name, r->resource_count);
    /* A task's write mask has a bit per range: buffers, those reached by address and images. */
    if (desc->buffer_count + desc->address_buffer_count + r->resource_count > 32)
        return INVALID_ARG("%s: desc->buffer_count %u, desc->address_buffer_count %u and kernel "
                           "'%s''s %u images are more than 32",
                           fn, desc->buffer_count, desc->address_buffer_count, e->name,
                           r->resource_count);
    uint32_t given = 0; /* bit k: the kernel's resource k was given */
    for (uint32_t i = 0; i < desc->resource_count; i++) {
        const cubec_resource *x = &desc->resources[i];
        if (x->kind != CUBEC_RESOURCE_STORAGE_IMAGE && x->kind != CUBEC_RESOURCE_SAMPLED_IMAGE)
            return status_make(x->kind >= CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER &&
                                       x->kind <= CUBEC_RESOURCE_STORAGE_TEXEL_BUFFER
                                   ? CUBEC_UNSUPPORTED
                                   : CUBEC_INVALID_ARGUMENT,
                               "%s: desc->resources[%u].kind %d: only storage and sampled images "
                               "are bound so far",
                               fn, i, (int)x->kind);
        if (x->filter > 1 || (x->filter && x->kind != CUBEC_RESOURCE_SAMPLED_IMAGE))
            return INVALID_ARG("%s: desc->resources[%u].filter %u: 0 (nearest) or 1 (linear), "
                               "and 1 only for a sampled image",
                               fn, i, x->filter);
        uint32_t k = 0;
        while (k < r->resource_count &&
               (r->resources[k].set != x->set || r->resources[k].binding != x->binding ||
                r->resources[k].kind != x->kind))
            k++;
        if (k == r->resource_count)
            return INVALID_ARG("%s: desc->resources[%u] names set %u binding %u, where kernel "
                               "'%s' declares no %s image",
                               fn, i, x->set, x->binding, e->name,
                               x->kind == CUBEC_RESOURCE_SAMPLED_IMAGE ? "sampled" : "storage");
        if (given & (1u << k))
            return INVALID_ARG("%s: desc->resources[%u] binds set %u binding %u a second time", fn,
                               i, x->set, x->binding);
        given |= 1u << k;
        char arg[64];
        snprintf(arg, sizeof arg, "%s: desc->resources[%u].image", fn, i);
        void *o;
        RETURN_IF_ERROR(handle_table_lookup(&d->images->handles, x->image.id, arg, &o));
        const image_obj *im = o;
        uint32_t dims = im->desc.depth > 1 ? 3 : 2;
        if (dims != r->resources[k].dims)
            return INVALID_ARG("%s: desc->resources[%u].image is a %uD image but '%s' at binding "
                               "%u is image%uD",
                               fn, i, dims, r->resources[k].name, x->binding, r->resources[k].dims);
        out[k] = im->buffer;
        if (x->filter) *out_linear |= 1u << k;
    }
    *out_count = r->resource_count;
    return NULL;
}
