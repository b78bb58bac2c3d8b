/* SPIR-V validation (SPIRV-Tools) and reflection (SPIRV-Cross C API); see reflect.h.
 *
 * The validator runs first so that SPIRV-Cross, which assumes well-formed input, only ever sees
 * modules a Vulkan driver would also accept. Resources are taken from the whole module, not just
 * those the entry point uses, because a launch binds every declared binding: a buffer the code
 * happens not to touch still occupies its slot in the buffer list. */
#include "kernel/reflect.h"

#include "kernel/info_layout.h"
#include "kernel/reflect_compat.h"
#include "kernel/reflect_resources.h"
#include "kernel/workgroup_memory.h"

/* libspirv.h defines (not declares) a const kDefaultMaxIdBound at file scope, which in C is an
 * external definition: two C files including it would clash at link time. A per-file name
 * avoids that. */
#define kDefaultMaxIdBound reflect_spirv_tools_max_id_bound_
#include <spirv-tools/libspirv.h>
#undef kDefaultMaxIdBound
#include <spirv_cross/spirv_cross_c.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPIRV_MAGIC 0x07230203u
#define SPIRV_HEADER_WORDS 5u

static uint32_t byte_swap32(uint32_t v)
{
    return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

static cubec_status check_header(const uint32_t *words, size_t word_count)
{
    if (word_count == 0)
        return status_make(CUBEC_INVALID_SPIRV, "SPIR-V module is empty (0 words)");
    if (words[0] != SPIRV_MAGIC) {
        if (words[0] == byte_swap32(SPIRV_MAGIC))
            return status_make(CUBEC_INVALID_SPIRV,
                               "SPIR-V module is byte-swapped (magic 0x%08x): words must be in "
                               "host byte order",
                               words[0]);
        return status_make(CUBEC_INVALID_SPIRV,
                           "not a SPIR-V module: first word is 0x%08x, not the magic 0x%08x",
                           words[0], SPIRV_MAGIC);
    }
    if (word_count < SPIRV_HEADER_WORDS)
        return status_make(CUBEC_INVALID_SPIRV,
                           "SPIR-V module is truncated: %zu words, shorter than the %u-word header",
                           word_count, SPIRV_HEADER_WORDS);
    return NULL;
}

/* The validator's environment for a Vulkan version: the SPIR-V versions and the rules that a
 * driver of that version accepts. Versions past 1.3 are checked as 1.3, the newest this
 * SPIRV-Tools knows. */
static spv_target_env target_env(uint32_t vulkan_version, unsigned *out_minor)
{
    unsigned major = vulkan_version >> 22, minor = (vulkan_version >> 12) & 0x3ffu;
    if (major > 1 || minor >= 3) {
        *out_minor = 3;
        return SPV_ENV_VULKAN_1_3;
    }
    *out_minor = minor;
    switch (minor) {
    case 0: return SPV_ENV_VULKAN_1_0;
    case 1: return SPV_ENV_VULKAN_1_1;
    default: return SPV_ENV_VULKAN_1_2;
    }
}

static cubec_status validate(const uint32_t *words, size_t word_count, uint32_t vulkan_version)
{
    unsigned minor = 0;
    spv_context ctx = spvContextCreate(target_env(vulkan_version, &minor));
    if (!ctx) return status_make(CUBEC_OUT_OF_MEMORY, "SPIR-V validation: spvContextCreate failed");
    spv_validator_options options = spvValidatorOptionsCreate();
    if (!options) {
        spvContextDestroy(ctx);
        return status_make(CUBEC_OUT_OF_MEMORY, "SPIR-V validation: out of host memory");
    }
    /* std430 offsets in uniform blocks: the metadata block of [kernel] metadata = uniform, which
     * cubec compiles only for devices with scalarBlockLayout (server_kernels_configure). */
    spvValidatorOptionsSetUniformBufferStandardLayout(options, true);
    spv_const_binary_t binary = {words, word_count};
    spv_diagnostic diag = NULL;
    spv_result_t r = spvValidateWithOptions(ctx, options, &binary, &diag);
    spvValidatorOptionsDestroy(options);
    cubec_status status = NULL;
    if (r != SPV_SUCCESS) {
        if (diag && diag->error && diag->position.index > 0)
            status = status_make(CUBEC_INVALID_SPIRV,
                                 "SPIR-V validation failed (Vulkan 1.%u, at instruction %zu): %s",
                                 minor, diag->position.index, diag->error);
        else if (diag && diag->error)
            status = status_make(CUBEC_INVALID_SPIRV, "SPIR-V validation failed (Vulkan 1.%u): %s",
                                 minor, diag->error);
        else
            status = status_make(CUBEC_INVALID_SPIRV,
                                 "SPIR-V validation failed (Vulkan 1.%u): spv_result_t %d", minor,
                                 (int)r);
    }
    spvDiagnosticDestroy(diag);
    spvContextDestroy(ctx);
    return status;
}

static const char *resource_type_name(spvc_resource_type type)
{
    switch (type) {
    case SPVC_RESOURCE_TYPE_UNIFORM_BUFFER: return "uniform buffer";
    case SPVC_RESOURCE_TYPE_STORAGE_BUFFER: return "storage buffer";
    case SPVC_RESOURCE_TYPE_STAGE_INPUT: return "stage input";
    case SPVC_RESOURCE_TYPE_STAGE_OUTPUT: return "stage output";
    case SPVC_RESOURCE_TYPE_SUBPASS_INPUT: return "subpass input";
    case SPVC_RESOURCE_TYPE_STORAGE_IMAGE: return "storage image";
    case SPVC_RESOURCE_TYPE_SAMPLED_IMAGE: return "sampled image";
    case SPVC_RESOURCE_TYPE_ATOMIC_COUNTER: return "atomic counter";
    case SPVC_RESOURCE_TYPE_PUSH_CONSTANT: return "push-constant block";
    case SPVC_RESOURCE_TYPE_SEPARATE_IMAGE: return "separate image";
    case SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS: return "sampler";
    case SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE: return "acceleration structure";
    case SPVC_RESOURCE_TYPE_RAY_QUERY: return "ray query";
    case SPVC_RESOURCE_TYPE_SHADER_RECORD_BUFFER: return "shader record buffer";
    default: return "resource";
    }
}

static const char *resource_name(const spvc_reflected_resource *res)
{
    return res->name && res->name[0] ? res->name : "(unnamed)";
}

/* A reflection session: the SPIRV-Cross context owns every object made from it. */
typedef struct reflector {
    spvc_context ctx;
    spvc_compiler compiler;
    spvc_resources resources;
    /* The base type of the block that holds the metadata (the info buffer's or the push-constant
     * block's), 0 if none: its members are the kernel's info layout. */
    spvc_type_id info_type;
} reflector;

static cubec_status spvc_failure(reflector *rf, const char *what, spvc_result r)
{
    const char *last = spvc_context_get_last_error_string(rf->ctx);
    if (r == SPVC_ERROR_OUT_OF_MEMORY)
        return status_make(CUBEC_OUT_OF_MEMORY, "SPIR-V reflection: %s: out of host memory", what);
    return status_make(CUBEC_INVALID_SPIRV, "SPIR-V reflection: %s failed: %s", what,
                       last && last[0] ? last : "no message");
}

static cubec_status open_reflector(reflector *rf, const uint32_t *words, size_t word_count)
{
    spvc_result r = spvc_context_create(&rf->ctx);
    if (r != SPVC_SUCCESS)
        return status_make(CUBEC_OUT_OF_MEMORY, "SPIR-V reflection: spvc_context_create failed");
    spvc_parsed_ir ir = NULL;
    r = spvc_context_parse_spirv(rf->ctx, words, word_count, &ir);
    if (r != SPVC_SUCCESS) return spvc_failure(rf, "parsing", r);
    r = spvc_context_create_compiler(rf->ctx, SPVC_BACKEND_NONE, ir,
                                     SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &rf->compiler);
    if (r != SPVC_SUCCESS) return spvc_failure(rf, "creating the reflection compiler", r);
    return NULL;
}

static cubec_status select_entry_point(reflector *rf, const char *entry_point)
{
    const spvc_entry_point *eps = NULL;
    size_t n = 0;
    spvc_result r = spvc_compiler_get_entry_points(rf->compiler, &eps, &n);
    if (r != SPVC_SUCCESS) return spvc_failure(rf, "listing entry points", r);
    for (size_t i = 0; i < n; i++) {
        if (eps[i].execution_model == SpvExecutionModelGLCompute &&
            strcmp(eps[i].name, entry_point) == 0) {
            r = spvc_compiler_set_entry_point(rf->compiler, entry_point,
                                              SpvExecutionModelGLCompute);
            if (r != SPVC_SUCCESS) return spvc_failure(rf, "selecting the entry point", r);
            return NULL;
        }
    }
    /* Name what is there: the usual mistakes are a wrong name or a non-compute stage. */
    char found[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < n && used < sizeof found; i++) {
        int w = snprintf(found + used, sizeof found - used, "%s'%s'%s", i ? ", " : "", eps[i].name,
                         eps[i].execution_model == SpvExecutionModelGLCompute ? ""
                                                                              : " (not GLCompute)");
        if (w < 0) break;
        used += (size_t)w;
    }
    return status_make(CUBEC_INVALID_SPIRV,
                       "SPIR-V module has no GLCompute entry point named '%s' (entry points: %s)",
                       entry_point, n ? found : "none");
}

/* Everything a kernel may declare is a storage or uniform buffer, a push-constant block, or a
 * storage or sampled image (kernel/reflect_resources.c); any other kind would need a descriptor
 * type the launch path never creates. */
static cubec_status reject_other_resources(reflector *rf)
{
    static const spvc_resource_type refused[] = {
        SPVC_RESOURCE_TYPE_STAGE_INPUT,
        SPVC_RESOURCE_TYPE_STAGE_OUTPUT,
        SPVC_RESOURCE_TYPE_SUBPASS_INPUT,
        SPVC_RESOURCE_TYPE_ATOMIC_COUNTER,
        SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE,
        SPVC_RESOURCE_TYPE_SHADER_RECORD_BUFFER,
    };
    for (size_t t = 0; t < sizeof refused / sizeof refused[0]; t++) {
        const spvc_reflected_resource *list = NULL;
        size_t n = 0;
        spvc_result r =
            spvc_resources_get_resource_list_for_type(rf->resources, refused[t], &list, &n);
        if (r != SPVC_SUCCESS) return spvc_failure(rf, "listing resources", r);
        if (n > 0) {
            unsigned set =
                spvc_compiler_get_decoration(rf->compiler, list[0].id, SpvDecorationDescriptorSet);
            unsigned binding =
                spvc_compiler_get_decoration(rf->compiler, list[0].id, SpvDecorationBinding);
            return status_make(CUBEC_INVALID_SPIRV,
                               "kernel declares a %s '%s' (set %u, binding %u): cubec kernels may "
                               "use only storage and uniform buffers, images, texel buffers, "
                               "samplers and one push-constant block",
                               resource_type_name(refused[t]), resource_name(&list[0]), set,
                               binding);
        }
    }
    return NULL;
}

/* Decorations such as NonWritable may sit on the variable, on the block type, or (as glslang
 * writes `readonly buffer`) on each member; the whole buffer has the property only if every
 * member does. */
static int buffer_has(reflector *rf, const spvc_reflected_resource *res, SpvDecoration dec)
{
    if (spvc_compiler_has_decoration(rf->compiler, res->id, dec)) return 1;
    if (spvc_compiler_has_decoration(rf->compiler, res->base_type_id, dec)) return 1;
    spvc_type block = spvc_compiler_get_type_handle(rf->compiler, res->base_type_id);
    unsigned members = spvc_type_get_num_member_types(block);
    if (members == 0) return 0;
    for (unsigned i = 0; i < members; i++)
        if (!spvc_compiler_has_member_decoration(rf->compiler, res->base_type_id, i, dec)) return 0;
    return 1;
}

static cubec_access buffer_access(reflector *rf, const spvc_reflected_resource *res)
{
    if (buffer_has(rf, res, SpvDecorationNonWritable)) return CUBEC_ACCESS_READ;
    if (buffer_has(rf, res, SpvDecorationNonReadable)) return CUBEC_ACCESS_WRITE;
    return CUBEC_ACCESS_READ_WRITE;
}

static int has_runtime_array_member(spvc_compiler compiler, spvc_type block)
{
    unsigned members = spvc_type_get_num_member_types(block);
    for (unsigned i = 0; i < members; i++) {
        spvc_type mt = spvc_compiler_get_type_handle(compiler, spvc_type_get_member_type(block, i));
        unsigned dims = spvc_type_get_num_array_dimensions(mt);
        for (unsigned d = 0; d < dims; d++)
            if (spvc_type_array_dimension_is_literal(mt, d) &&
                spvc_type_get_array_dimension(mt, d) == 0)
                return 1;
    }
    return 0;
}

static cubec_status block_size(reflector *rf, const spvc_reflected_resource *res,
                               uint32_t *out_size)
{
    spvc_type block = spvc_compiler_get_type_handle(rf->compiler, res->base_type_id);
    size_t size = 0;
    spvc_result r = spvc_compiler_get_declared_struct_size(rf->compiler, block, &size);
    if (r != SPVC_SUCCESS) return spvc_failure(rf, "measuring a block", r);
    if (size > UINT32_MAX)
        return status_make(CUBEC_INVALID_SPIRV, "block '%s' is %zu B, over 4 GiB",
                           resource_name(res), size);
    *out_size = (uint32_t)size;
    return NULL;
}

static cubec_status reflect_info_buffer(reflector *rf, const spvc_reflected_resource *res,
                                        kernel_reflection *out)
{
    if (out->has_info_buffer)
        return status_make(CUBEC_INVALID_SPIRV,
                           "more than one block at the info binding %u ('%s' is one)",
                           CUBEC_INFO_BINDING, resource_name(res));
    spvc_type block = spvc_compiler_get_type_handle(rf->compiler, res->base_type_id);
    /* The launch copies exactly the declared size; a runtime array has no size to copy. */
    if (has_runtime_array_member(rf->compiler, block))
        return status_make(CUBEC_INVALID_SPIRV,
                           "info buffer '%s' at binding %u is runtime-sized: the info block must "
                           "have a fixed size",
                           resource_name(res), CUBEC_INFO_BINDING);
    /* Info bytes live in a cache shared by launches; a kernel writing them would corrupt it. */
    if (!buffer_has(rf, res, SpvDecorationNonWritable))
        return status_make(CUBEC_INVALID_SPIRV,
                           "info buffer '%s' at binding %u is writable: it must be readonly",
                           resource_name(res), CUBEC_INFO_BINDING);
    RETURN_IF_ERROR(block_size(rf, res, &out->info_buffer_size));
    out->has_info_buffer = 1;
    rf->info_type = res->base_type_id;
    return NULL;
}

static cubec_status reflect_spec_constants(reflector *rf, kernel_reflection *out)
{
    const spvc_specialization_constant *list = NULL;
    size_t n = 0;
    spvc_result r = spvc_compiler_get_specialization_constants(rf->compiler, &list, &n);
    if (r != SPVC_SUCCESS) return spvc_failure(rf, "listing specialization constants", r);
    if (n > KERNEL_MAX_SPEC_CONSTANTS)
        return status_make(CUBEC_INVALID_SPIRV,
                           "kernel declares %zu specialization constants, more than %d", n,
                           KERNEL_MAX_SPEC_CONSTANTS);
    for (size_t i = 0; i < n; i++) {
        spvc_constant c = spvc_compiler_get_constant_handle(rf->compiler, list[i].id);
        spvc_type t = spvc_compiler_get_type_handle(rf->compiler, spvc_constant_get_type(c));
        out->spec_ids[i] = list[i].constant_id;
        out->spec_wide[i] = spvc_type_get_bit_width(t) > 32;
    }
    out->spec_count = (uint32_t)n;
    return NULL;
}

static void set_and_binding(const reflector *rf, const spvc_reflected_resource *res,
                            unsigned *out_set, unsigned *out_binding)
{
    *out_set = spvc_compiler_get_decoration(rf->compiler, res->id, SpvDecorationDescriptorSet);
    *out_binding = spvc_compiler_get_decoration(rf->compiler, res->id, SpvDecorationBinding);
}

/* One declared buffer of the module's layout, before the slots are numbered. */
typedef struct layout_entry {
    unsigned set, binding;
    int uniform;
    unsigned access;
    uint32_t block_size;
} layout_entry;

/* The metadata block (CUBEC_INFO) at set 0 binding CUBEC_INFO_BINDING, as a uniform buffer
 * ([kernel] metadata = uniform): uniform blocks are read-only, so only its size is needed. */
static cubec_status reflect_uniform_info(reflector *rf, const spvc_reflected_resource *res,
                                         kernel_reflection *out)
{
    spvc_type t = spvc_compiler_get_type_handle(rf->compiler, res->type_id);
    if (out->has_info_buffer || spvc_type_get_num_array_dimensions(t) > 0)
        return status_make(CUBEC_INVALID_SPIRV,
                           "more than one block at the info binding %u ('%s' is one)",
                           CUBEC_INFO_BINDING, resource_name(res));
    RETURN_IF_ERROR(block_size(rf, res, &out->info_buffer_size));
    out->has_info_buffer = 1;
    out->info_uniform = 1;
    rf->info_type = res->base_type_id;
    return NULL;
}

/* Adds the storage (uniform = 0) or uniform buffers of the module to `entries`; the info block
 * is taken out here. Variables that alias one binding are combined later. */
static cubec_status collect_buffers(reflector *rf, int uniform, layout_entry *entries,
                                    uint32_t *count, kernel_reflection *out)
{
    const spvc_reflected_resource *list = NULL;
    size_t n = 0;
    spvc_result r = spvc_resources_get_resource_list_for_type(
        rf->resources,
        uniform ? SPVC_RESOURCE_TYPE_UNIFORM_BUFFER : SPVC_RESOURCE_TYPE_STORAGE_BUFFER, &list, &n);
    if (r != SPVC_SUCCESS) return spvc_failure(rf, "listing buffers", r);
    const char *kind = uniform ? "uniform buffer" : "storage buffer";
    for (size_t i = 0; i < n; i++) {
        const spvc_reflected_resource *res = &list[i];
        unsigned set, binding;
        set_and_binding(rf, res, &set, &binding);
        if (set == 0 && binding == CUBEC_INFO_BINDING) {
            RETURN_IF_ERROR(uniform ? reflect_uniform_info(rf, res, out)
                                    : reflect_info_buffer(rf, res, out));
            continue;
        }
        if (set >= KERNEL_MAX_SETS)
            return status_make(CUBEC_INVALID_SPIRV,
                               "%s '%s' is in descriptor set %u: cubec binds sets 0..%u (Vulkan "
                               "guarantees %u bound sets)",
                               kind, resource_name(res), set, KERNEL_MAX_SETS - 1, KERNEL_MAX_SETS);
        if (binding >= KERNEL_MAX_SLOTS)
            return status_make(CUBEC_INVALID_SPIRV,
                               "%s '%s' is at set %u binding %u: a launch binds at most %u "
                               "buffers, so bindings must be below %u",
                               kind, resource_name(res), set, binding, KERNEL_MAX_SLOTS,
                               KERNEL_MAX_SLOTS);
        spvc_type t = spvc_compiler_get_type_handle(rf->compiler, res->type_id);
        if (spvc_type_get_num_array_dimensions(t) > 0)
            return status_make(CUBEC_INVALID_SPIRV,
                               "%s '%s' at set %u binding %u is an array of buffers: cubec "
                               "binds one buffer per binding",
                               kind, resource_name(res), set, binding);
        layout_entry *e = &entries[(*count)++];
        *e = (layout_entry){set, binding, uniform, CUBEC_ACCESS_READ, 0};
        if (uniform)
            RETURN_IF_ERROR(block_size(rf, res, &e->block_size));
        else
            e->access = (unsigned)buffer_access(rf, res);
    }
    return NULL;
}

/* Numbers the launch's buffer slots from the module's layout: set 0's bindings first (slot i is
 * binding i), then each further set that has buffers, its binding b at the slot after the
 * previous set's highest binding plus b. Gaps stay gaps (an unused slot), so a module an
 * optimizer stripped of a binding takes the buffers its source's layout took. */
static cubec_status number_slots(const layout_entry *entries, uint32_t count,
                                 kernel_reflection *out)
{
    int highest[KERNEL_MAX_SETS];
    for (unsigned s = 0; s < KERNEL_MAX_SETS; s++)
        highest[s] = -1;
    for (uint32_t i = 0; i < count; i++)
        if ((int)entries[i].binding > highest[entries[i].set])
            highest[entries[i].set] = (int)entries[i].binding;
    uint32_t base[KERNEL_MAX_SETS], next = 0;
    out->set_count = 1;
    for (unsigned s = 0; s < KERNEL_MAX_SETS; s++) {
        base[s] = next;
        if (highest[s] < 0) continue;
        next += (uint32_t)highest[s] + 1;
        out->set_count = s + 1;
    }
    if (next > KERNEL_MAX_SLOTS)
        return status_make(CUBEC_INVALID_SPIRV,
                           "the module's descriptor layout takes %u buffer slots (each set up to "
                           "its highest binding, docs/kernels.md): a launch binds at most %u",
                           next, KERNEL_MAX_SLOTS);
    unsigned bits[KERNEL_MAX_SLOTS] = {0};
    for (uint32_t i = 0; i < count; i++) {
        const layout_entry *e = &entries[i];
        uint32_t at = base[e->set] + e->binding;
        kernel_slot *slot = &out->slots[at];
        uint8_t kind = e->uniform ? KERNEL_SLOT_UNIFORM : KERNEL_SLOT_STORAGE;
        if (slot->kind != KERNEL_SLOT_UNUSED && slot->kind != kind)
            return status_make(CUBEC_INVALID_SPIRV,
                               "set %u binding %u is declared both as a storage and as a uniform "
                               "buffer: a binding has one descriptor type",
                               e->set, e->binding);
        slot->kind = kind;
        slot->set = (uint8_t)e->set;
        slot->binding = (uint8_t)e->binding;
        if (e->block_size > slot->block_size) slot->block_size = e->block_size;
        bits[at] |= e->access;
    }
    for (uint32_t i = 0; i < next; i++)
        out->access[i] = (cubec_access)bits[i];
    out->binding_count = next;
    return NULL;
}

static cubec_status reflect_buffers(reflector *rf, kernel_reflection *out)
{
    size_t storage = 0, uniform = 0;
    const spvc_reflected_resource *list = NULL;
    spvc_result r = spvc_resources_get_resource_list_for_type(
        rf->resources, SPVC_RESOURCE_TYPE_STORAGE_BUFFER, &list, &storage);
    if (r == SPVC_SUCCESS)
        r = spvc_resources_get_resource_list_for_type(
            rf->resources, SPVC_RESOURCE_TYPE_UNIFORM_BUFFER, &list, &uniform);
    if (r != SPVC_SUCCESS) return spvc_failure(rf, "listing buffers", r);
    layout_entry *entries = calloc(storage + uniform + 1, sizeof *entries);
    if (!entries) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (reflection)");
    uint32_t count = 0;
    cubec_status err = collect_buffers(rf, 1, entries, &count, out);
    if (!err) err = collect_buffers(rf, 0, entries, &count, out);
    if (!err) err = number_slots(entries, count, out);
    free(entries);
    return err;
}

static cubec_status reflect_push_constants(reflector *rf, kernel_reflection *out)
{
    const spvc_reflected_resource *list = NULL;
    size_t n = 0;
    spvc_result r = spvc_resources_get_resource_list_for_type(
        rf->resources, SPVC_RESOURCE_TYPE_PUSH_CONSTANT, &list, &n);
    if (r != SPVC_SUCCESS) return spvc_failure(rf, "listing push constants", r);
    if (n == 0) return NULL;
    if (n > 1)
        return status_make(CUBEC_INVALID_SPIRV,
                           "kernel declares %zu push-constant blocks ('%s', '%s'...): at most one "
                           "is allowed",
                           n, resource_name(&list[0]), resource_name(&list[1]));
    RETURN_IF_ERROR(block_size(rf, &list[0], &out->push_constant_size));
    rf->info_type = list[0].base_type_id;
    return NULL;
}

/* The WorkgroupSize built-in overrides LocalSize when present; it is read explicitly rather than
 * relying on SPIRV-Cross to mirror it into LocalSize. (LocalSizeId needs Vulkan 1.3's
 * maintenance4, which cubec does not enable: the validator, run without allowing it, has already
 * refused it.) A dimension that comes from a specialization constant (local_size_x_id) is noted
 * with the constant's id: its value is the pipeline's, evaluated by kernel_reflect_specialize
 * (the defaults here). */
static cubec_status reflect_workgroup_size(reflector *rf, kernel_reflection *out)
{
    spvc_specialization_constant sc[3];
    memset(sc, 0, sizeof sc);
    spvc_constant_id builtin = spvc_compiler_get_work_group_size_specialization_constants(
        rf->compiler, &sc[0], &sc[1], &sc[2]);
    static const char axis[3] = {'x', 'y', 'z'};
    for (unsigned i = 0; i < 3; i++) {
        if (sc[i].id != 0) {
            out->workgroup_size_ids[i] = sc[i].id;
            if (spvc_compiler_has_decoration(rf->compiler, sc[i].id, SpvDecorationSpecId))
                out->workgroup_size_spec[i] = sc[i].constant_id + 1u;
            continue;
        }
        uint32_t v = builtin != 0
                         ? spvc_constant_get_scalar_u32(
                               spvc_compiler_get_constant_handle(rf->compiler, builtin), 0, i)
                         : spvc_compiler_get_execution_mode_argument_by_index(
                               rf->compiler, SpvExecutionModeLocalSize, i);
        /* The validator requires a size for GLCompute; this guards what it might let through. */
        if (v == 0)
            return status_make(CUBEC_INVALID_SPIRV,
                               "entry point has no workgroup size (%c is 0): declare "
                               "layout(local_size_x = ...) in;",
                               axis[i]);
        out->workgroup_size[i] = v;
    }
    return NULL;
}

/* kernel_reflect_specialize; `strict`: a shape these values leave invalid (a shared array whose
 * length cannot be evaluated, a length below 1) is an error. Reflection with the defaults is not
 * strict: the values the pipeline gets may fix what the defaults break. */
static cubec_status specialize(const uint32_t *words, size_t word_count,
                               const cubec_spec_constant *spec, uint32_t spec_count, int strict,
                               kernel_reflection *r)
{
    workgroup_memory shared;
    RETURN_IF_ERROR(
        workgroup_memory_scan_specialized(words, word_count, spec, spec_count, &shared));
    if (strict) RETURN_IF_ERROR(workgroup_memory_problem(&shared));
    uint32_t ids[3], axes[3], n = 0;
    for (uint32_t i = 0; i < 3; i++)
        if (r->workgroup_size_ids[i]) {
            axes[n] = i;
            ids[n++] = r->workgroup_size_ids[i];
        }
    uint64_t values[3] = {0, 0, 0};
    if (n) {
        cubec_status err =
            workgroup_memory_constants(words, word_count, spec, spec_count, ids, n, values);
        if (err) return status_annotate(err, "the workgroup size");
    }
    static const char axis[3] = {'x', 'y', 'z'};
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = axes[k];
        /* 0 (or a value past 32 bits) is no workgroup: the driver's behaviour is undefined. */
        if (values[k] == 0 || values[k] > UINT32_MAX) {
            if (r->workgroup_size_spec[i])
                return status_make(CUBEC_INVALID_ARGUMENT,
                                   "workgroup size %c is specialization constant %u = %" PRIu64
                                   ": a workgroup size must be at least 1",
                                   axis[i], r->workgroup_size_spec[i] - 1u, values[k]);
            return status_make(CUBEC_INVALID_SPIRV,
                               "workgroup size %c evaluates to %" PRIu64
                               ": a workgroup size must be at least 1",
                               axis[i], values[k]);
        }
        r->workgroup_size[i] = (uint32_t)values[k];
    }
    r->shared_memory_size = shared.bytes;
    r->shared_int64_atomics = shared.int64_atomics;
    return NULL;
}

cubec_status kernel_reflect_specialize(const uint32_t *words, size_t word_count,
                                       const cubec_spec_constant *spec, uint32_t spec_count,
                                       kernel_reflection *r)
{
    return specialize(words, word_count, spec, spec_count, 1, r);
}

/* What the module declares, whatever the entry point uses: the driver gets the whole module. */
static cubec_status reflect_capabilities(reflector *rf, kernel_reflection *out)
{
    const SpvCapability *caps = NULL;
    size_t n = 0;
    spvc_result r = spvc_compiler_get_declared_capabilities(rf->compiler, &caps, &n);
    if (r != SPVC_SUCCESS) return spvc_failure(rf, "listing capabilities", r);
    if (n > KERNEL_MAX_CAPABILITIES)
        return status_make(CUBEC_UNSUPPORTED,
                           "SPIR-V module declares %zu capabilities: cubec checks at most %u", n,
                           KERNEL_MAX_CAPABILITIES);
    for (size_t i = 0; i < n; i++)
        out->capabilities[i] = (uint32_t)caps[i];
    out->capability_count = (uint32_t)n;
    return NULL;
}

static cubec_status reflect_module(reflector *rf, const char *entry_point, kernel_reflection *out)
{
    RETURN_IF_ERROR(select_entry_point(rf, entry_point));
    RETURN_IF_ERROR(reflect_capabilities(rf, out));
    spvc_result r = spvc_compiler_create_shader_resources(rf->compiler, &rf->resources);
    if (r != SPVC_SUCCESS) return spvc_failure(rf, "collecting resources", r);
    RETURN_IF_ERROR(reject_other_resources(rf));
    RETURN_IF_ERROR(reflect_buffers(rf, out));
    RETURN_IF_ERROR(kernel_reflect_resources(rf->compiler, rf->resources, out));
    RETURN_IF_ERROR(reflect_push_constants(rf, out));
    /* With both, a launch's info bytes would have two possible destinations. */
    if (out->has_info_buffer && out->push_constant_size > 0)
        return status_make(CUBEC_INVALID_SPIRV,
                           "kernel declares both a push-constant block and an info buffer at "
                           "binding %u: info goes in one or the other",
                           CUBEC_INFO_BINDING);
    RETURN_IF_ERROR(reflect_spec_constants(rf, out));
    return reflect_workgroup_size(rf, out);
}

cubec_status kernel_reflect(const uint32_t *words, size_t word_count, const char *entry_point,
                            uint32_t vulkan_version, kernel_reflection *out)
{
    return kernel_reflect_trusted(words, word_count, entry_point, vulkan_version, 0, out);
}

cubec_status kernel_reflect_trusted(const uint32_t *words, size_t word_count,
                                    const char *entry_point, uint32_t vulkan_version, int validated,
                                    kernel_reflection *out)
{
    return kernel_reflect_layout(words, word_count, entry_point, vulkan_version, validated, out,
                                 NULL);
}

cubec_status kernel_reflect_layout(const uint32_t *words, size_t word_count,
                                   const char *entry_point, uint32_t vulkan_version, int validated,
                                   kernel_reflection *out, kernel_info_layout **out_layout)
{
    if (out_layout) *out_layout = NULL;
    if (!out) return INVALID_ARG("kernel_reflect: out is NULL");
    memset(out, 0, sizeof *out);
    if (!words && word_count > 0)
        return INVALID_ARG("kernel_reflect: words is NULL but word_count is %zu", word_count);
    if (!entry_point || !entry_point[0]) entry_point = "main";
    RETURN_IF_ERROR(check_header(words, word_count));
    if (vulkan_version == 0) vulkan_version = KERNEL_VULKAN_DEFAULT;
    if (!validated) RETURN_IF_ERROR(validate(words, word_count, vulkan_version));

    reflector rf = {0};
    kernel_reflection result;
    memset(&result, 0, sizeof result);
    /* Modules with cooperative matrices are reflected from a copy SPIRV-Cross can parse. */
    uint32_t *compat = NULL;
    size_t compat_count = 0;
    cubec_status status = reflect_compat_copy(words, word_count, &compat, &compat_count);
    if (!status)
        status = compat ? open_reflector(&rf, compat, compat_count)
                        : open_reflector(&rf, words, word_count);
    if (!status) status = reflect_module(&rf, entry_point, &result);
    /* Shared memory and a workgroup size from specialization constants, with the defaults. */
    if (!status) status = specialize(words, word_count, NULL, 0, 0, &result);
    kernel_info_layout *layout = NULL;
    if (!status && out_layout && rf.info_type)
        status = kernel_info_layout_build(rf.compiler, rf.info_type, &layout);
    if (rf.ctx) spvc_context_destroy(rf.ctx);
    free(compat);
    if (!status) {
        *out = result;
        if (out_layout) *out_layout = layout;
    }
    return status;
}
