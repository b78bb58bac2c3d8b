/* Reflection of storage and sampled images (kernel/reflect_resources.h). */
#include "kernel/reflect_resources.h"

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

/* The resources SPIRV-Cross lists as `type`, as `kind` (`what` names them in messages). */
static cubec_status reflect_type(spvc_compiler compiler, spvc_resources resources,
                                 spvc_resource_type type, cubec_resource_kind kind,
                                 const char *what, kernel_reflection *out)
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
                               "%s '%s' at binding %u is an array of images: cubec binds one "
                               "image per binding",
                               what, name, binding);
        SpvDim dim = spvc_type_get_image_dimension(t);
        if ((dim != SpvDim2D && dim != SpvDim3D) || spvc_type_get_image_arrayed(t))
            return status_make(CUBEC_INVALID_SPIRV, "%s '%s' at binding %u is not 2D or 3D", what,
                               name, binding);
        for (uint32_t k = 0; k < out->resource_count; k++)
            if (out->resources[k].set == set && out->resources[k].binding == binding)
                return status_make(CUBEC_INVALID_SPIRV,
                                   "images '%s' and '%s' share set %u binding %u", name,
                                   out->resources[k].name, set, binding);
        if (out->resource_count == KERNEL_MAX_RESOURCES)
            return status_make(CUBEC_INVALID_SPIRV,
                               "kernel declares more than %u images ('%s' at binding %u)",
                               KERNEL_MAX_RESOURCES, name, binding);
        /* glslang writes `readonly` and `writeonly` on the variable; sampling only reads. */
        unsigned access = CUBEC_ACCESS_READ;
        if (kind == CUBEC_RESOURCE_STORAGE_IMAGE) {
            int no_write =
                spvc_compiler_has_decoration(compiler, res->id, SpvDecorationNonWritable);
            int no_read = spvc_compiler_has_decoration(compiler, res->id, SpvDecorationNonReadable);
            access = (no_write ? 0u : (unsigned)CUBEC_ACCESS_WRITE) |
                     (no_read ? 0u : (unsigned)CUBEC_ACCESS_READ);
        }
        kernel_resource *r = &out->resources[out->resource_count++];
        r->set = set;
        r->binding = binding;
        r->kind = kind;
        r->access = access ? (cubec_access)access : CUBEC_ACCESS_READ_WRITE;
        r->dims = dim == SpvDim3D ? 3 : 2;
        if (set + 1 > out->set_count) out->set_count = set + 1;
        snprintf(r->name, sizeof r->name, "%s", name);
    }
    return NULL;
}

cubec_status kernel_reflect_resources(spvc_compiler compiler, spvc_resources resources,
                                      kernel_reflection *out)
{
    RETURN_IF_ERROR(reflect_type(compiler, resources, SPVC_RESOURCE_TYPE_STORAGE_IMAGE,
                                 CUBEC_RESOURCE_STORAGE_IMAGE, "storage image", out));
    return reflect_type(compiler, resources, SPVC_RESOURCE_TYPE_SAMPLED_IMAGE,
                        CUBEC_RESOURCE_SAMPLED_IMAGE, "sampled image", out);
}
