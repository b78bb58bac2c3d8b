/* Reflection of images, texel buffers and samplers (kernel/reflect_resources.h). */
#include "kernel/reflect_resources.h"
#include "base/image_formats.h"

#include <stdio.h>

static const char *name_of(const spvc_reflected_resource *res)
{
    return res->name && res->name[0] ? res->name : "(unnamed)";
}

/* Whether a buffer of the module's layout (kernel/reflect.c's slots) is at set/binding. */
static int buffer_at(const kernel_reflection *out, unsigned set, unsigned binding)
{
    for (uint32_t i = 0; i < out->binding_count; i++)
        if (out->slots[i].kind != KERNEL_SLOT_UNUSED && out->slots[i].set == set &&
            out->slots[i].binding == binding)
            return 1;
    return 0;
}

/* The cubec_image_format of a GLSL format qualifier; 0 for none or one cubec does not name. */
static uint32_t format_of(SpvImageFormat f)
{
    switch (f) {
    case SpvImageFormatR8: return CUBEC_IMAGE_FORMAT_R8_UNORM;
    case SpvImageFormatRgba8: return CUBEC_IMAGE_FORMAT_RGBA8_UNORM;
    case SpvImageFormatR16f: return CUBEC_IMAGE_FORMAT_R16_SFLOAT;
    case SpvImageFormatRgba16f: return CUBEC_IMAGE_FORMAT_RGBA16_SFLOAT;
    case SpvImageFormatR32f: return CUBEC_IMAGE_FORMAT_R32_SFLOAT;
    case SpvImageFormatRgba32f: return CUBEC_IMAGE_FORMAT_RGBA32_SFLOAT;
    case SpvImageFormatR32ui: return CUBEC_IMAGE_FORMAT_R32_UINT;
    case SpvImageFormatRgba32ui: return CUBEC_IMAGE_FORMAT_RGBA32_UINT;
    case SpvImageFormatR32i: return CUBEC_IMAGE_FORMAT_R32_SINT;
    default: return 0;
    }
}

/* What a texel of the image type reads as: its sampled type's base type. */
static uint32_t numeric_of(spvc_compiler compiler, spvc_type t)
{
    spvc_type s = spvc_compiler_get_type_handle(compiler, spvc_type_get_image_sampled_type(t));
    switch (spvc_type_get_basetype(s)) {
    case SPVC_BASETYPE_UINT32: return KERNEL_NUMERIC_UINT;
    case SPVC_BASETYPE_INT32: return KERNEL_NUMERIC_SINT;
    default: return KERNEL_NUMERIC_FLOAT;
    }
}

/* The resources SPIRV-Cross lists as `type`: `kind` for 2D/3D images, `buffer_kind` for those of
 * dimension Buffer (texel buffers; CUBEC_RESOURCE_NONE: refused), and every one as `kind` for
 * samplers (`what` names them in messages). */
static cubec_status reflect_type(spvc_compiler compiler, spvc_resources resources,
                                 spvc_resource_type type, cubec_resource_kind kind,
                                 cubec_resource_kind buffer_kind, const char *what,
                                 kernel_reflection *out)
{
    const spvc_reflected_resource *list = NULL;
    size_t n = 0;
    if (spvc_resources_get_resource_list_for_type(resources, type, &list, &n) != SPVC_SUCCESS)
        return status_make(CUBEC_INVALID_SPIRV, "SPIR-V reflection: listing %ss failed", what);
    for (size_t i = 0; i < n; i++) {
        const spvc_reflected_resource *res = &list[i];
        const char *name = name_of(res);
        unsigned set = spvc_compiler_get_decoration(compiler, res->id, SpvDecorationDescriptorSet);
        unsigned binding = spvc_compiler_get_decoration(compiler, res->id, SpvDecorationBinding);
        if (set >= KERNEL_MAX_SETS)
            return status_make(CUBEC_INVALID_SPIRV,
                               "%s '%s' is in descriptor set %u: cubec binds sets 0..%u (Vulkan "
                               "guarantees %u bound sets)",
                               what, name, set, KERNEL_MAX_SETS - 1, KERNEL_MAX_SETS);
        if (binding == CUBEC_INFO_BINDING || buffer_at(out, set, binding))
            return status_make(CUBEC_INVALID_SPIRV,
                               "%s '%s' is at set %u binding %u, which a %s also declares", what,
                               name, set, binding,
                               binding == CUBEC_INFO_BINDING ? "metadata block" : "buffer");
        spvc_type t = spvc_compiler_get_type_handle(compiler, res->type_id);
        if (spvc_type_get_num_array_dimensions(t) > 0)
            return status_make(CUBEC_INVALID_SPIRV,
                               "%s '%s' at binding %u is an array of images or samplers: cubec "
                               "binds one per binding",
                               what, name, binding);
        cubec_resource_kind k = kind;
        uint32_t dims = 0;
        if (kind != CUBEC_RESOURCE_SAMPLER) {
            SpvDim dim = spvc_type_get_image_dimension(t);
            if (dim == SpvDimBuffer && buffer_kind != CUBEC_RESOURCE_NONE) {
                k = buffer_kind;
                dims = 1;
            } else if ((dim != SpvDim2D && dim != SpvDim3D) || spvc_type_get_image_arrayed(t)) {
                return status_make(CUBEC_INVALID_SPIRV,
                                   "%s '%s' at binding %u is not 2D, 3D or a texel buffer", what,
                                   name, binding);
            } else {
                dims = dim == SpvDim3D ? 3 : 2;
            }
        }
        for (uint32_t j = 0; j < out->resource_count; j++)
            if (out->resources[j].set == set && out->resources[j].binding == binding)
                return status_make(CUBEC_INVALID_SPIRV, "'%s' and '%s' share set %u binding %u",
                                   name, out->resources[j].name, set, binding);
        if (out->resource_count == KERNEL_MAX_RESOURCES)
            return status_make(CUBEC_INVALID_SPIRV,
                               "kernel declares more than %u images, texel buffers and samplers "
                               "('%s' at binding %u)",
                               KERNEL_MAX_RESOURCES, name, binding);
        /* glslang writes `readonly` and `writeonly` on the variable; sampling and texelFetch
         * only read. */
        unsigned access = CUBEC_ACCESS_READ;
        if (k == CUBEC_RESOURCE_STORAGE_IMAGE || k == CUBEC_RESOURCE_STORAGE_TEXEL_BUFFER) {
            int no_write =
                spvc_compiler_has_decoration(compiler, res->id, SpvDecorationNonWritable);
            int no_read = spvc_compiler_has_decoration(compiler, res->id, SpvDecorationNonReadable);
            access = (no_write ? 0u : (unsigned)CUBEC_ACCESS_WRITE) |
                     (no_read ? 0u : (unsigned)CUBEC_ACCESS_READ);
        }
        kernel_resource *r = &out->resources[out->resource_count++];
        r->set = set;
        r->binding = binding;
        r->kind = k;
        r->access = access ? (cubec_access)access : CUBEC_ACCESS_READ_WRITE;
        r->dims = dims;
        r->format =
            k == CUBEC_RESOURCE_SAMPLER ? 0 : format_of(spvc_type_get_image_storage_format(t));
        r->numeric = k == CUBEC_RESOURCE_SAMPLER ? 0 : numeric_of(compiler, t);
        r->samples = 0;
        if (set + 1 > out->set_count) out->set_count = set + 1;
        snprintf(r->name, sizeof r->name, "%s", name);
    }
    return NULL;
}

/* Which textures each separate sampler samples (sampler2D(t, s)), from SPIRV-Cross's analysis
 * of the combinations; a sampler it cannot place samples every texture, so a linear filter is
 * checked against each of them (the launch refuses rather than reach the validation layer). */
static void pair_samplers(spvc_compiler compiler, spvc_resources resources, kernel_reflection *out)
{
    uint32_t textures = 0;
    for (uint32_t k = 0; k < out->resource_count; k++)
        if (out->resources[k].kind == CUBEC_RESOURCE_SAMPLED_TEXTURE) textures |= 1u << k;
    const spvc_reflected_resource *images = NULL, *samplers = NULL;
    size_t ni = 0, ns = 0;
    const spvc_combined_image_sampler *pairs = NULL;
    size_t np = 0;
    int known =
        spvc_resources_get_resource_list_for_type(resources, SPVC_RESOURCE_TYPE_SEPARATE_IMAGE,
                                                  &images, &ni) == SPVC_SUCCESS &&
        spvc_resources_get_resource_list_for_type(resources, SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS,
                                                  &samplers, &ns) == SPVC_SUCCESS &&
        spvc_compiler_build_combined_image_samplers(compiler) == SPVC_SUCCESS &&
        spvc_compiler_get_combined_image_samplers(compiler, &pairs, &np) == SPVC_SUCCESS;
    for (uint32_t k = out->memory_resource_count; k < out->resource_count; k++) {
        kernel_resource *s = &out->resources[k];
        s->samples = known ? 0 : textures;
        for (size_t p = 0; known && p < np; p++) {
            /* Variables are matched by their set and binding, which are unique here. */
            spvc_variable_id sid = pairs[p].sampler_id, iid = pairs[p].image_id;
            if (spvc_compiler_get_decoration(compiler, sid, SpvDecorationDescriptorSet) != s->set ||
                spvc_compiler_get_decoration(compiler, sid, SpvDecorationBinding) != s->binding)
                continue;
            unsigned iset = spvc_compiler_get_decoration(compiler, iid, SpvDecorationDescriptorSet);
            unsigned ibinding = spvc_compiler_get_decoration(compiler, iid, SpvDecorationBinding);
            for (uint32_t j = 0; j < out->memory_resource_count; j++)
                if (out->resources[j].set == iset && out->resources[j].binding == ibinding)
                    s->samples |= 1u << j;
        }
    }
}

cubec_status kernel_reflect_resources(spvc_compiler compiler, spvc_resources resources,
                                      kernel_reflection *out)
{
    /* Those with memory first (a launch's task holds their ranges in this order), then the
     * samplers. */
    RETURN_IF_ERROR(reflect_type(compiler, resources, SPVC_RESOURCE_TYPE_STORAGE_IMAGE,
                                 CUBEC_RESOURCE_STORAGE_IMAGE, CUBEC_RESOURCE_STORAGE_TEXEL_BUFFER,
                                 "storage image", out));
    RETURN_IF_ERROR(reflect_type(compiler, resources, SPVC_RESOURCE_TYPE_SAMPLED_IMAGE,
                                 CUBEC_RESOURCE_SAMPLED_IMAGE, CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER,
                                 "sampled image", out));
    RETURN_IF_ERROR(reflect_type(compiler, resources, SPVC_RESOURCE_TYPE_SEPARATE_IMAGE,
                                 CUBEC_RESOURCE_SAMPLED_TEXTURE,
                                 CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER, "texture", out));
    out->memory_resource_count = out->resource_count;
    RETURN_IF_ERROR(reflect_type(compiler, resources, SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS,
                                 CUBEC_RESOURCE_SAMPLER, CUBEC_RESOURCE_NONE, "sampler", out));
    if (out->resource_count > out->memory_resource_count) pair_samplers(compiler, resources, out);
    return NULL;
}
