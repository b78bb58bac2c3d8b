/* Resolving a launch's resources (api/api_resources.h). Kept apart from the launch's buffer
 * checks (api_kernel.c), which the binding model's rework changes, so each moves on its own. */
#include "api/api_resources.h"
#include "api/api_common.h"
#include "base/image_formats.h"
#include "server/images.h"

static const char fn[] = "cubec_launch";

static const char *kind_name(cubec_resource_kind kind)
{
    switch (kind) {
    case CUBEC_RESOURCE_STORAGE_IMAGE: return "storage image";
    case CUBEC_RESOURCE_SAMPLED_IMAGE: return "sampled image";
    case CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER: return "uniform texel buffer";
    case CUBEC_RESOURCE_STORAGE_TEXEL_BUFFER: return "storage texel buffer";
    case CUBEC_RESOURCE_SAMPLED_TEXTURE: return "texture";
    case CUBEC_RESOURCE_SAMPLER: return "sampler";
    case CUBEC_RESOURCE_NONE: break;
    }
    return "?";
}

static const char *numeric_name(uint32_t numeric)
{
    return numeric == KERNEL_NUMERIC_UINT   ? "unsigned integer"
           : numeric == KERNEL_NUMERIC_SINT ? "signed integer"
                                            : "float";
}

/* The texel type of `format` is the one the kernel's variable reads (a usampler reads r32ui,
 * not rgba8): Vulkan leaves a mismatch undefined and the validation layer reports it. */
static cubec_status check_numeric(uint32_t i, const char *what, uint32_t format,
                                  const kernel_resource *k)
{
    if (image_format_numeric(format) != k->numeric)
        return INVALID_ARG("%s: desc->resources[%u].%s has format %s (%s texels) but '%s' at "
                           "binding %u reads %s texels",
                           fn, i, what, image_format_name(format),
                           numeric_name(image_format_numeric(format)), k->name, k->binding,
                           numeric_name(k->numeric));
    return NULL;
}

/* An image for resource k: its memory, dimension and texel type. */
static cubec_status resolve_image(cubec_device *d, uint32_t i, const cubec_resource *x,
                                  const kernel_resource *k, buffer_obj **out, uint32_t *format)
{
    char arg[64];
    snprintf(arg, sizeof arg, "%s: desc->resources[%u].image", fn, i);
    void *o;
    RETURN_IF_ERROR(handle_table_lookup(&d->images->handles, x->image.id, arg, &o));
    const image_obj *im = o;
    uint32_t dims = im->desc.depth > 1 ? 3 : 2;
    if (dims != k->dims)
        return INVALID_ARG("%s: desc->resources[%u].image is a %uD image but '%s' at binding "
                           "%u is %uD",
                           fn, i, dims, k->name, x->binding, k->dims);
    RETURN_IF_ERROR(check_numeric(i, "image", im->desc.format, k));
    const gpu_caps *caps = &d->gpu->caps;
    if (x->kind != CUBEC_RESOURCE_STORAGE_IMAGE && !(caps->sampled_formats >> im->desc.format & 1))
        return status_make(CUBEC_UNSUPPORTED,
                           "%s: desc->resources[%u].image has format %s, which the device cannot "
                           "sample",
                           fn, i, image_format_name(im->desc.format));
    *out = im->buffer;
    *format = im->desc.format;
    return NULL;
}

/* A texel buffer for resource k: its memory and format, within the device's texel-buffer
 * limits (the backend makes a view of exactly this range and format). */
static cubec_status resolve_texel_buffer(cubec_device *d, uint32_t i, const cubec_resource *x,
                                         const kernel_resource *k, buffer_obj **out,
                                         uint32_t *format)
{
    char arg[64];
    snprintf(arg, sizeof arg, "%s: desc->resources[%u].buffer", fn, i);
    buffer_obj *b;
    RETURN_IF_ERROR(api_buffer(d, x->buffer, arg, &b));
    uint32_t f = x->format ? x->format : k->format;
    if (!f)
        return INVALID_ARG("%s: desc->resources[%u].format 0, and '%s' at binding %u declares no "
                           "format (a uniform texel buffer never does): give one",
                           fn, i, k->name, x->binding);
    if (!image_format_bytes(f))
        return INVALID_ARG("%s: desc->resources[%u].format %u is not a cubec_image_format", fn, i,
                           f);
    if (k->format && f != k->format)
        return INVALID_ARG("%s: desc->resources[%u].format %s, but '%s' at binding %u declares "
                           "%s",
                           fn, i, image_format_name(f), k->name, x->binding,
                           image_format_name(k->format));
    RETURN_IF_ERROR(check_numeric(i, "format", f, k));
    const gpu_caps *caps = &d->gpu->caps;
    if (!(caps->texel_formats >> f & 1))
        return status_make(CUBEC_UNSUPPORTED,
                           "%s: desc->resources[%u].format %s: the device cannot use it in "
                           "uniform and storage texel buffers",
                           fn, i, image_format_name(f));
    uint64_t offset = buffer_device_offset(b), texel = image_format_bytes(f);
    if (caps->texel_offset_alignment && offset % caps->texel_offset_alignment)
        return INVALID_ARG("%s: desc->resources[%u].buffer starts at byte %" PRIu64
                           " of its memory, not a multiple of the device's texel buffer offset "
                           "alignment %" PRIu64,
                           fn, i, offset, caps->texel_offset_alignment);
    if (b->size < texel || b->size / texel > caps->max_texel_elements)
        return INVALID_ARG("%s: desc->resources[%u].buffer holds %" PRIu64 " texels of %s: a "
                           "texel buffer holds 1 to %u (the device's maxTexelBufferElements)",
                           fn, i, b->size / texel, image_format_name(f), caps->max_texel_elements);
    *out = b;
    *format = f;
    return NULL;
}

cubec_status api_launch_resources(cubec_device *d, const cubec_launch_desc *desc,
                                  const pipeline_entry *e, buffer_obj **out, launch_args *res)
{
    res->resource_count = 0;
    res->sampler_bits = 0;
    res->texel_formats = 0;
    const kernel_reflection *r = &e->refl;
    if (!desc->resource_count && !r->resource_count) return NULL; /* the common launch */
    if (desc->resource_count && !desc->resources)
        return INVALID_ARG("%s: desc->resources is NULL with resource_count %u", fn,
                           desc->resource_count);
    if (desc->resource_count != r->resource_count)
        return INVALID_ARG("%s: desc->resource_count is %u but kernel '%s' declares %u images, "
                           "texel buffers and samplers",
                           fn, desc->resource_count, e->name, r->resource_count);
    /* A task's write mask has a bit per range: buffers, those reached by address, images and
     * texel buffers. */
    uint32_t nmem = r->memory_resource_count;
    if (desc->buffer_count + desc->address_buffer_count + nmem > 32)
        return INVALID_ARG("%s: desc->buffer_count %u, desc->address_buffer_count %u and kernel "
                           "'%s''s %u images and texel buffers are more than 32",
                           fn, desc->buffer_count, desc->address_buffer_count, e->name, nmem);
    uint32_t given = 0; /* bit k: the kernel's resource k was given */
    uint32_t formats[KERNEL_MAX_RESOURCES] = {0};
    for (uint32_t i = 0; i < desc->resource_count; i++) {
        const cubec_resource *x = &desc->resources[i];
        if (x->kind <= CUBEC_RESOURCE_NONE || x->kind > CUBEC_RESOURCE_SAMPLER)
            return INVALID_ARG("%s: desc->resources[%u].kind %d is not a cubec_resource_kind", fn,
                               i, (int)x->kind);
        int filtered = x->kind == CUBEC_RESOURCE_SAMPLED_IMAGE || x->kind == CUBEC_RESOURCE_SAMPLER;
        uint32_t address = (x->filter & 0x30u) >> 4;
        if ((x->filter & ~0x31u) || address == 3 || (x->filter && !filtered))
            return INVALID_ARG("%s: desc->resources[%u].filter %#x: CUBEC_FILTER_NEAREST or "
                               "CUBEC_FILTER_LINEAR, or'ed with at most one CUBEC_ADDRESS_* mode, "
                               "and non-zero only for a sampled image or a sampler",
                               fn, i, x->filter);
        uint32_t k = 0;
        while (k < r->resource_count &&
               (r->resources[k].set != x->set || r->resources[k].binding != x->binding ||
                r->resources[k].kind != x->kind))
            k++;
        if (k == r->resource_count)
            return INVALID_ARG("%s: desc->resources[%u] names set %u binding %u, where kernel "
                               "'%s' declares no %s",
                               fn, i, x->set, x->binding, e->name, kind_name(x->kind));
        if (given & (1u << k))
            return INVALID_ARG("%s: desc->resources[%u] binds set %u binding %u a second time", fn,
                               i, x->set, x->binding);
        given |= 1u << k;
        const kernel_resource *kr = &r->resources[k];
        if (x->kind == CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER ||
            x->kind == CUBEC_RESOURCE_STORAGE_TEXEL_BUFFER) {
            RETURN_IF_ERROR(resolve_texel_buffer(d, i, x, kr, &out[k], &formats[k]));
            res->texel_formats |= formats[k] << (4 * k);
        } else if (x->kind != CUBEC_RESOURCE_SAMPLER) {
            RETURN_IF_ERROR(resolve_image(d, i, x, kr, &out[k], &formats[k]));
        }
        res->sampler_bits |= (x->filter & 1u) << k | address << (8 + 2 * k);
    }
    /* Linear filtering of a format the device cannot filter is undefined in Vulkan: refused
     * here rather than left to the validation layer. A sampled image is filtered by its own
     * sampler, a texture by each separate sampler that samples it. */
    const uint32_t linear_formats = d->gpu->caps.linear_formats;
    uint32_t linear = res->sampler_bits & 0xffu;
    for (uint32_t k = 0; linear >> k; k++) {
        if (!(linear >> k & 1)) continue;
        uint32_t filtered = r->resources[k].kind == CUBEC_RESOURCE_SAMPLER
                                ? r->resources[k].samples & ((1u << nmem) - 1u)
                                : 1u << k;
        for (uint32_t j = 0; j < nmem; j++)
            if ((filtered >> j & 1) && r->resources[j].kind != CUBEC_RESOURCE_STORAGE_IMAGE &&
                !(linear_formats >> formats[j] & 1))
                return status_make(CUBEC_UNSUPPORTED,
                                   "%s: set %u binding %u is filtered linearly (filter 1), but the "
                                   "device cannot filter format %s of '%s' at binding %u linearly "
                                   "(use filter 0)",
                                   fn, r->resources[k].set, r->resources[k].binding,
                                   image_format_name(formats[j]), r->resources[j].name,
                                   r->resources[j].binding);
    }
    res->resource_count = nmem;
    return NULL;
}
