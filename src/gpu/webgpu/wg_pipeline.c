/* The WebGPU backend's pipelines: bind-group layouts per set, immediates for push constants,
 * SPIR-V with its access decorations dropped (docs/device.md, "read_write") and its
 * specialization constants frozen in (wg_spec_freeze.h) and its infinite and NaN constants
 * computed (wg_spirv_nonfinite.h), override constants for WGSL's. */
#include "gpu/webgpu/wg_image.h"
#include "gpu/webgpu/wg_internal.h"
#include "gpu/webgpu/wg_naga_refusals.h"
#include "gpu/webgpu/wg_spec_freeze.h"
#include "gpu/webgpu/wg_spirv_aliases.h"
#include "gpu/webgpu/wg_spirv_nonfinite.h"
#include "gpu/webgpu/wg_spirv_split.h"

#include "base/log.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* --- Pipelines ----------------------------------------------------------------------------- */

static uint64_t next_pipeline_id(wg_gpu *w)
{
    pthread_mutex_lock(&w->lock);
    uint64_t id = ++w->next_mem_id;
    pthread_mutex_unlock(&w->lock);
    return id;
}

void wg_pipeline_destroy(gpu *g, gpu_pipeline *pl)
{
    const wg_procs *p = wg_of(g)->p;
    if (!pl) return;
    if (pl->pipeline) p->ComputePipelineRelease(pl->pipeline);
    if (pl->layout) p->PipelineLayoutRelease(pl->layout);
    for (uint32_t i = 0; i < GPU_MAX_SETS; i++)
        if (pl->groups[i]) p->BindGroupLayoutRelease(pl->groups[i]);
    free(pl);
}

static cubec_status build_layouts(wg_gpu *w, const gpu_pipeline_desc *desc, gpu_pipeline *pl)
{
    const wg_procs *p = w->p;
    pl->set_count = desc->slots ? desc->set_count : 1;
    if (pl->set_count == 0) pl->set_count = 1;
    if (pl->set_count > GPU_MAX_SETS || desc->binding_count > GPU_MAX_BINDINGS)
        return status_make(CUBEC_INTERNAL, "webgpu: %" PRIu32 " sets, %" PRIu32 " bindings",
                           pl->set_count, desc->binding_count);
    pl->slot_count = desc->binding_count;
    for (uint32_t i = 0; i < desc->binding_count; i++)
        pl->slots[i] = desc->slots ? desc->slots[i]
                                   : (gpu_slot){.kind = GPU_SLOT_STORAGE, .binding = (uint8_t)i};
    if (desc->resource_count > GPU_MAX_RESOURCES)
        return status_make(CUBEC_INTERNAL, "webgpu: %" PRIu32 " images", desc->resource_count);
    pl->resource_count = desc->resource_count;
    for (uint32_t i = 0; i < desc->resource_count; i++) {
        const gpu_resource_slot *r = &desc->resources[i];
        pl->resources[i].set = r->set;
        pl->resources[i].binding = r->binding;
        pl->resources[i].format = r->type == GPU_RESOURCE_STORAGE_IMAGE ? r->format : 0;
    }
    for (uint32_t set = 0; set < pl->set_count; set++) {
        WGPUBindGroupLayoutEntry e[GPU_MAX_BINDINGS + 2 * GPU_MAX_RESOURCES];
        uint32_t n = 0;
        for (uint32_t i = 0; i < pl->slot_count; i++) {
            const gpu_slot *s = &pl->slots[i];
            if (s->kind == GPU_SLOT_UNUSED || s->set != set) continue;
            /* read_write for every storage binding: see wg_gpu.h. */
            e[n++] = (WGPUBindGroupLayoutEntry){
                .binding = s->binding,
                .visibility = WGPUShaderStage_Compute,
                .buffer = {.type = s->kind == GPU_SLOT_UNIFORM ? WGPUBufferBindingType_Uniform
                                                               : WGPUBufferBindingType_Storage}};
        }
        if (set == 0 && desc->info_buffer)
            e[n++] = (WGPUBindGroupLayoutEntry){
                .binding = GPU_INFO_BINDING,
                .visibility = WGPUShaderStage_Compute,
                .buffer = {.type = desc->info_uniform ? WGPUBufferBindingType_Uniform
                                                      : WGPUBufferBindingType_Storage}};
        /* Images, textures and samplers (wg_image.c says how each maps, or why it cannot). */
        for (uint32_t i = 0; i < desc->resource_count; i++)
            if (desc->resources[i].set == set) {
                uint32_t added = 0;
                RETURN_IF_ERROR(wg_image_layout_entry(w, &desc->resources[i], &e[n], &added));
                n += added;
            }
        WGPUBindGroupLayoutDescriptor d = {.entryCount = n, .entries = e};
        pl->groups[set] = p->DeviceCreateBindGroupLayout(w->device, &d);
        cubec_status err = wg_take_error(w, "the pipeline's layout");
        if (err && desc->resource_count) {
            /* A storage texture's format or access the device refused (the server names the
             * kernel). */
            cubec_status named = status_make(CUBEC_UNSUPPORTED, "the images of set %" PRIu32 ": %s",
                                             set, cubec_status_message(err));
            cubec_status_free(err);
            return named;
        }
        RETURN_IF_ERROR(err);
        if (!pl->groups[set]) return status_make(CUBEC_INTERNAL, "wgpuDeviceCreateBindGroupLayout");
    }
    WGPUPipelineLayoutDescriptor ld = {.bindGroupLayoutCount = pl->set_count,
                                       .bindGroupLayouts = pl->groups,
                                       .immediateSize = desc->push_size};
    pl->layout = p->DeviceCreatePipelineLayout(w->device, &ld);
    if (!pl->layout) return status_make(CUBEC_INTERNAL, "wgpuDeviceCreatePipelineLayout");
    return wg_take_error(w, "the pipeline's layout");
}

/* Creates the module and the pipeline of `source` (a chained WGSL or SPIR-V source). */
cubec_status wg_build_pipeline(wg_gpu *w, WGPUChainedStruct *source, const char *name,
                               const char *entry, const gpu_spec_constant *spec,
                               const double *spec_values, uint32_t spec_count,
                               WGPUPipelineLayout layout, WGPUComputePipeline *out)
{
    const wg_procs *p = w->p;
    WGPUShaderModuleDescriptor md = {.nextInChain = source, .label = wg_str(name)};
    WGPUShaderModule module = p->DeviceCreateShaderModule(w->device, &md);
    cubec_status err = wg_take_error(w, "creating the shader module");
    if (!err && !module) err = status_make(CUBEC_INTERNAL, "wgpuDeviceCreateShaderModule");
    if (err) {
        if (module) p->ShaderModuleRelease(module);
        /* The server names the kernel in front of this. */
        cubec_status named = status_make(CUBEC_INVALID_SPIRV, "%s", cubec_status_message(err));
        cubec_status_free(err);
        return named;
    }
    /* Specialization constants are WGSL override constants, keyed by their id. */
    WGPUConstantEntry constants[GPU_MAX_SPEC_CONSTANTS];
    char keys[GPU_MAX_SPEC_CONSTANTS][12];
    for (uint32_t i = 0; i < spec_count && i < GPU_MAX_SPEC_CONSTANTS; i++) {
        snprintf(keys[i], sizeof keys[i], "%" PRIu32, spec[i].id);
        constants[i] = (WGPUConstantEntry){.key = wg_str(keys[i]), .value = spec_values[i]};
    }
    WGPUComputePipelineDescriptor pd = {.label = wg_str(name),
                                        .layout = layout,
                                        .compute = {.module = module,
                                                    .entryPoint = wg_str(entry),
                                                    .constantCount = spec_count,
                                                    .constants = constants}};
    *out = p->DeviceCreateComputePipeline(w->device, &pd);
    p->ShaderModuleRelease(module);
    err = wg_take_error(w, "creating the compute pipeline");
    if (!err && !*out) err = status_make(CUBEC_INTERNAL, "wgpuDeviceCreateComputePipeline");
    if (err) {
        if (*out) p->ComputePipelineRelease(*out);
        *out = NULL;
        /* The server names the kernel in front of this. */
        cubec_status named = status_make(CUBEC_INVALID_SPIRV, "%s", cubec_status_message(err));
        cubec_status_free(err);
        return named;
    }
    return NULL;
}

/* How a specialization constant's 32 bits read as the override constant WebGPU takes (a
 * double): its SPIR-V type, found by a walk of the module's words (OpDecorate SpecId, then the
 * OpSpecConstant* of that id and its OpTypeFloat / OpTypeInt / OpTypeBool). */
enum { SPEC_UINT, SPEC_INT, SPEC_FLOAT, SPEC_BOOL };

static int spec_kind(const uint32_t *w, size_t n, uint32_t spec_id)
{
    enum { DECORATE = 71, SPEC_ID = 1, TYPE_BOOL = 20, TYPE_INT = 21, TYPE_FLOAT = 22 };
    enum { SPEC_TRUE = 48, SPEC_FALSE = 49, SPEC_CONSTANT = 50 };
    uint32_t target = 0, type = 0;
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 5; i < n;) {
            uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
            if (!len || i + len > n) return SPEC_UINT;
            if (pass == 0 && op == DECORATE && len >= 4 && w[i + 2] == SPEC_ID &&
                w[i + 3] == spec_id)
                target = w[i + 1];
            if (pass == 1 && target && (op == SPEC_TRUE || op == SPEC_FALSE) && len >= 3 &&
                w[i + 2] == target)
                return SPEC_BOOL;
            if (pass == 1 && target && op == SPEC_CONSTANT && len >= 4 && w[i + 2] == target)
                type = w[i + 1];
            if (pass == 2 && type && w[i + 1] == type && len >= 3) {
                if (op == TYPE_FLOAT) return SPEC_FLOAT;
                if (op == TYPE_INT) return len >= 4 && w[i + 3] ? SPEC_INT : SPEC_UINT;
                if (op == TYPE_BOOL) return SPEC_BOOL;
            }
            i += len;
        }
    return SPEC_UINT;
}

/* Which ids of the module are variables of image type (bits by id; NULL-safe for the caller:
 * calloc'ed, `bound` bits): the one place access decorations must stay (below). */
static unsigned char *image_variables(const uint32_t *w, size_t n, uint32_t *out_bound)
{
    enum { TYPE_IMAGE = 25, TYPE_POINTER = 32, VARIABLE = 59 };
    uint32_t bound = n >= 5 ? w[3] : 0;
    if (bound > (1u << 22)) bound = 1u << 22;    /* malformed: naga refuses it */
    unsigned char *kind = calloc(bound + 1u, 1); /* 1 image type, 2 pointer to one, 3 variable */
    if (!kind) return NULL;
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        if (!len || i + len > n) break;
        if (op == TYPE_IMAGE && len >= 2 && w[i + 1] < bound) kind[w[i + 1]] = 1;
        if (op == TYPE_POINTER && len >= 4 && w[i + 1] < bound && w[i + 3] < bound &&
            kind[w[i + 3]] == 1)
            kind[w[i + 1]] = 2;
        if (op == VARIABLE && len >= 3 && w[i + 1] < bound && w[i + 2] < bound &&
            kind[w[i + 1]] == 2)
            kind[w[i + 2]] = 3;
        i += len;
    }
    *out_bound = bound;
    return kind;
}

/* The module with every NonWritable and NonReadable decoration of a buffer left out, so that the
 * implementation's translation declares every storage buffer read_write as the layout does
 * (wgpu requires the two to match, and WebGPU refuses one buffer bound both read-only and
 * writable in one dispatch: two tensors of one pooled page would be). Those of storage images
 * stay: they are the storage texture's access, which the layout names as the kernel declares
 * it (wg_image.c). A malloc'ed copy. */
static uint32_t *strip_access(const uint32_t *w, size_t n, size_t *out_n)
{
    enum { DECORATE = 71, MEMBER_DECORATE = 72, NON_WRITABLE = 24, NON_READABLE = 25 };
    uint32_t bound = 0;
    unsigned char *kind = image_variables(w, n, &bound);
    uint32_t *out = kind ? malloc(n * sizeof *out) : NULL;
    if (!out) {
        free(kind);
        return NULL;
    }
    size_t at = n < 5 ? n : 5;
    memcpy(out, w, at * sizeof *out);
    for (size_t i = at; i < n;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        if (!len || i + len > n) len = (uint32_t)(n - i); /* malformed: kept, naga refuses it */
        uint32_t decoration = op == DECORATE && len >= 3          ? w[i + 2]
                              : op == MEMBER_DECORATE && len >= 4 ? w[i + 3]
                                                                  : 0;
        int image = op == DECORATE && len >= 3 && w[i + 1] < bound && kind[w[i + 1]] == 3;
        if ((op == DECORATE || op == MEMBER_DECORATE) && !image &&
            (decoration == NON_WRITABLE || decoration == NON_READABLE)) {
            i += len;
            continue;
        }
        memcpy(out + at, w + i, len * sizeof *out);
        at += len;
        i += len;
    }
    free(kind);
    *out_n = at;
    return out;
}

static double spec_value(const gpu_pipeline_desc *desc, const gpu_spec_constant *c)
{
    if (!desc->spirv) return (double)c->value;
    switch (spec_kind(desc->spirv, desc->words, c->id)) {
    case SPEC_FLOAT: {
        float f;
        memcpy(&f, &c->value, sizeof f);
        return (double)f;
    }
    case SPEC_INT: return (double)(int32_t)c->value;
    case SPEC_BOOL: return c->value ? 1.0 : 0.0;
    default: return (double)c->value;
    }
}

/* The WGSL as wgpu-native's naga takes it: WGSL's `enable subgroups;` (which the standard and
 * Dawn require before the subgroup built-ins) is refused by naga 29 as "not yet supported",
 * while it takes the built-ins with the device's Subgroup feature and no directive. The name is
 * dropped from each enable directive (a directive left empty is blanked), in place with spaces,
 * so the lines of naga's messages stay the source's. A malloc'ed copy, or NULL. */
static char *wgsl_for_naga(const char *src)
{
    size_t n = strlen(src);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    memcpy(out, src, n + 1);
    static const char name[] = "subgroups";
    const size_t len = sizeof name - 1;
    for (char *e = strstr(out, "enable"); e; e = strstr(e + 6, "enable")) {
        if ((e > out && (isalnum((unsigned char)e[-1]) || e[-1] == '_')) ||
            isalnum((unsigned char)e[6]) || e[6] == '_')
            continue;
        char *end = strchr(e + 6, ';');
        if (!end) break;
        /* The names, rewritten left to right without `subgroups`, then spaces to the `;`. */
        char *w = e + 6, *r = e + 6;
        int kept = 0;
        while (r < end) {
            while (r < end && (isspace((unsigned char)*r) || *r == ','))
                r++;
            char *start = r;
            while (r < end && !isspace((unsigned char)*r) && *r != ',')
                r++;
            size_t l = (size_t)(r - start);
            if (!l || (l == len && memcmp(start, name, len) == 0)) continue;
            *w++ = kept ? ',' : ' ';
            if (kept) *w++ = ' ';
            memmove(w, start, l);
            w += l;
            kept++;
        }
        if (!kept) {
            memset(e, ' ', (size_t)(end - e + 1));
        } else {
            memset(w, ' ', (size_t)(end - w));
        }
        e = end - 5; /* continue after the directive */
    }
    return out;
}

cubec_status wg_pipeline_create(gpu *g, const gpu_pipeline_desc *desc, gpu_pipeline **out)
{
    wg_gpu *w = wg_of(g);
    if (desc->required_subgroup_size)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': the webgpu backend cannot require a subgroup size",
                           desc->name ? desc->name : "?");
    if (desc->push_size && (!w->immediates || desc->push_size > w->limits.maxImmediateSize))
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': %" PRIu32 " bytes of push constants; the device takes "
                           "%" PRIu32 " bytes of immediates",
                           desc->name ? desc->name : "?", desc->push_size,
                           w->immediates ? w->limits.maxImmediateSize : 0);
    gpu_pipeline *pl = calloc(1, sizeof *pl);
    if (!pl) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (pipeline)");
    pl->info_uniform = desc->info_uniform;
    pl->push_size = desc->push_size;
    pl->id = next_pipeline_id(w);
    cubec_status err = build_layouts(w, desc, pl);
    if (!err) {
        /* WGSL's specialization constants are override constants; SPIR-V's are frozen into the
         * module before the implementation's translation (naga), wg_spec_freeze.h. */
        double values[GPU_MAX_SPEC_CONSTANTS];
        uint32_t spec_count = 0;
        if (desc->wgsl)
            spec_count = desc->spec_count < GPU_MAX_SPEC_CONSTANTS ? desc->spec_count
                                                                   : GPU_MAX_SPEC_CONSTANTS;
        for (uint32_t i = 0; i < spec_count; i++)
            values[i] = spec_value(desc, &desc->spec[i]);
        /* WGSL as it is; SPIR-V through the implementation's translation (naga). */
        char *naga = desc->wgsl && w->p->DevicePoll ? wgsl_for_naga(desc->wgsl) : NULL;
        if (desc->wgsl && w->p->DevicePoll && !naga)
            err = status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (module)");
        WGPUShaderSourceWGSL wgsl = {.chain = {.sType = WGPUSType_ShaderSourceWGSL},
                                     .code = wg_str(naga ? naga : desc->wgsl)};
        size_t words = 0, frozen_words = 0;
        uint32_t *frozen = NULL, *code = NULL;
        if (!err && !desc->wgsl) {
            err = wg_spec_freeze(desc->spirv, desc->words, desc->spec, desc->spec_count, &frozen,
                                 &frozen_words);
            if (!err) code = strip_access(frozen, frozen_words, &words);
            free(frozen);
            if (!err && !code)
                err = status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (module)");
        }
        /* Combined image samplers become a texture and a sampler (the layout has both). */
        uint32_t *split = NULL;
        size_t split_words = 0;
        if (!err && code) err = wg_spirv_split_samplers(code, words, &split, &split_words);
        if (split) {
            free(code);
            code = split;
            words = split_words;
        }
        /* Infinite and NaN float constants, which WGSL has no literal for, computed instead;
         * vector views of a scalar buffer at its binding, which WGSL forbids, merged into it. */
        uint32_t *finite = NULL, *merged = NULL;
        if (!err && code) err = wg_spirv_nonfinite(code, words, &finite, &split_words);
        if (finite) {
            free(code);
            code = finite;
            words = split_words;
        }
        if (!err && code) err = wg_spirv_merge_aliases(code, words, &merged, &split_words);
        if (merged) {
            free(code);
            code = merged;
            words = split_words;
        }
        WGPUShaderSourceSPIRV spirv = {.chain = {.sType = WGPUSType_ShaderSourceSPIRV},
                                       .codeSize = (uint32_t)words,
                                       .code = code};
        if (!err)
            err = wg_build_pipeline(w, desc->wgsl ? &wgsl.chain : &spirv.chain, desc->name,
                                    desc->entry_point ? desc->entry_point : "main", desc->spec,
                                    values, spec_count, pl->layout, &pl->pipeline);
        /* naga's refusals of a known limit of its own, said in words (wg_naga_refusals.h). */
        if (err && !desc->wgsl) err = wg_naga_explain(code, words, err);
        free(code);
        free(naga);
    }
    if (err) {
        wg_pipeline_destroy(g, pl);
        return err;
    }
    *out = pl;
    return NULL;
}
