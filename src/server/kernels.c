/* Kernels and their pipelines. A kernel's identity is a hash of what defines it (source or SPIR-V
 * words, defines, entry point, optimization); creating the same kernel twice costs one hash and a
 * lookup. GLSL kernels are compiled with their metadata in push constants first; when the block
 * is larger than the device allows they are compiled again with the metadata in a storage buffer
 * (the "metadata layout" variant of the pipeline). */
#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "kernel/capabilities.h"
#include "kernel/limits.h"
#include "server/device.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now_ms(void)
{
    return (double)clock_now_ns() / 1e6;
}

static uint64_t kernel_identity(const cubec_kernel_desc *desc)
{
    uint64_t h = HASH_SEED;
    if (desc->glsl) {
        h = hash_str(h, "glsl");
        h = hash_str(h, desc->glsl);
    } else {
        h = hash_str(h, "spirv");
        h = hash_bytes(h, desc->spirv, desc->spirv_words * sizeof(uint32_t));
    }
    h = hash_u64(h, desc->define_count);
    for (uint32_t i = 0; i < desc->define_count; i++) {
        h = hash_str(h, desc->defines[i].name);
        h = hash_str(h, desc->defines[i].value);
    }
    h = hash_str(h, desc->entry_point ? desc->entry_point : "main");
    h = hash_u64(h, desc->optimize ? 1 : 0);
    return h;
}

static void destroy_entry(cubec_device *d, pipeline_entry *e)
{
    for (uint32_t i = 0; i < e->name_count; i++)
        free(e->names[i]);
    free(e->names);
    if (e->pipeline) d->gpu->ops->pipeline_destroy(d->gpu, e->pipeline);
    free(e);
}

/* What cubec validates SPIR-V for: the Vulkan version it uses on this device, the lower of the
 * instance's and the device's (encoded versions order as the versions do). */
static uint32_t vulkan_version(const cubec_device *d)
{
    _Static_assert(GPU_VULKAN_API_VERSION == KERNEL_VULKAN_DEFAULT,
                   "reflect.h's default environment is the instance's version");
    return d->info.api_version != 0 && d->info.api_version < GPU_VULKAN_API_VERSION
               ? d->info.api_version
               : GPU_VULKAN_API_VERSION;
}

static cubec_status build_pipeline(cubec_device *d, pipeline_entry *e, const uint32_t *words,
                                   size_t word_count, const char *entry_point)
{
    gpu_pipeline_desc pd = {.spirv = words,
                            .words = word_count,
                            .entry_point = entry_point,
                            .binding_count = e->refl.binding_count,
                            .info_buffer = e->refl.has_info_buffer,
                            .push_size = e->refl.push_constant_size,
                            .name = e->name};
    return gpu_pipeline_create(d->gpu, &pd, &e->pipeline);
}

static cubec_status compile_glsl(cubec_device *d, const cubec_kernel_desc *desc, const char *name,
                                 int push, uint32_t **words, size_t *count)
{
    if (!d->kernels.compiler) RETURN_IF_ERROR(glsl_compiler_create(&d->kernels.compiler));
    if (fault_hit(&d->faults, CUBEC_FAULT_COMPILE))
        return fault_status(&d->faults, CUBEC_FAULT_COMPILE, CUBEC_COMPILE_FAILED);
    return glsl_compile(d->kernels.compiler, name, desc->glsl, desc->defines, desc->define_count,
                        desc->entry_point, desc->optimize, push, words, count);
}

cubec_status server_kernel_create(cubec_device *d, const cubec_kernel_desc *desc,
                                  pipeline_entry **out)
{
    uint64_t key = kernel_identity(desc);
    pipeline_entry **bucket = &d->kernels.pipelines[key & 255];
    for (pipeline_entry *e = *bucket; e; e = e->next)
        if (e->key == key) {
            *out = e;
            return NULL;
        }
    const char *name = desc->name ? desc->name : "kernel";
    const char *entry_point =
        desc->entry_point && desc->entry_point[0] ? desc->entry_point : "main";
    double t0 = now_ms();
    uint64_t trace_t0 = clock_now_ns();
    pipeline_entry *e = calloc(1, sizeof *e);
    if (!e) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (kernel)");
    e->key = key;
    snprintf(e->name, sizeof e->name, "%s", name);
    uint32_t *words = NULL;
    size_t count = 0;
    cubec_status err = NULL;
    uint32_t version = vulkan_version(d);
    if (desc->glsl) {
        /* Metadata in push constants unless configured otherwise ([kernel] metadata). */
        int push = !d->config.info_in_buffer;
        err = compile_glsl(d, desc, name, push, &words, &count);
        if (!err) err = kernel_reflect(words, count, entry_point, version, &e->refl);
        if (!err && push && e->refl.push_constant_size > d->info.max_push_constants_size) {
            /* The metadata does not fit push constants here: move it to a storage buffer. A
             * push-constant block of the source's own stays, and the limits refuse it below. */
            free(words);
            words = NULL;
            err = compile_glsl(d, desc, name, 0, &words, &count);
            if (!err) err = kernel_reflect(words, count, entry_point, version, &e->refl);
        }
        /* Compilation errors name the kernel already; reflection's do not. */
        if (err && cubec_status_code(err) != CUBEC_COMPILE_FAILED)
            err = status_annotate(err, "kernel '%s'", name);
    } else {
        err = kernel_reflect(desc->spirv, desc->spirv_words, entry_point, version, &e->refl);
        if (err) err = status_annotate(err, "kernel '%s'", name);
    }
    if (!err)
        err = capabilities_check(name, d->info.name, e->refl.capabilities, e->refl.capability_count,
                                 &d->gpu->features);
    if (!err) {
        kernel_limits limits = kernel_limits_of(&d->info);
        err = kernel_limits_check(name, &e->refl, &limits);
    }
    if (!err) {
        e->info_in_push = e->refl.push_constant_size > 0;
        e->info_size = e->info_in_push ? e->refl.push_constant_size : e->refl.info_buffer_size;
        err = build_pipeline(d, e, desc->glsl ? words : desc->spirv,
                             desc->glsl ? count : desc->spirv_words, entry_point);
        if (err) err = status_annotate(err, "kernel '%s'", name);
    }
    free(words);
    if (err) {
        destroy_entry(d, e);
        return server_note_error(d, err);
    }
    e->next = *bucket;
    *bucket = e;
    LOG(LOG_INFO, LOG_SYS_COMPILE,
        "compiled kernel '%s' (%016" PRIx64 ", %u buffers, %u info bytes in %s) in %.2f ms", name,
        key, e->refl.binding_count, e->info_size,
        e->info_in_push ? "push constants" : (e->info_size ? "a buffer" : "nothing"),
        now_ms() - t0);
    if (d->timing.trace) {
        char args[96];
        snprintf(args, sizeof args, "\"identity\":\"%016" PRIx64 "\",\"source\":\"%s\"", key,
                 desc->glsl ? "glsl" : "spirv");
        timing_host(d, name, "compile", trace_t0, 0, args);
    }
    *out = e;
    return NULL;
}

cubec_status server_kernel_name(pipeline_entry *e, const char *name, const char **out)
{
    char cut[32];
    snprintf(cut, sizeof cut, "%.31s", name ? name : e->name);
    for (uint32_t i = 0; i < e->name_count; i++)
        if (!strcmp(e->names[i], cut)) {
            *out = e->names[i];
            return NULL;
        }
    char **grown = realloc(e->names, (e->name_count + 1) * sizeof *grown);
    if (!grown) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (kernel name)");
    e->names = grown;
    if (!(grown[e->name_count] = strdup(cut)))
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (kernel name)");
    *out = grown[e->name_count++];
    return NULL;
}

void server_kernels_destroy(cubec_device *d)
{
    for (int i = 0; i < 256; i++) {
        pipeline_entry *e = d->kernels.pipelines[i];
        while (e) {
            pipeline_entry *next = e->next;
            destroy_entry(d, e);
            e = next;
        }
        d->kernels.pipelines[i] = NULL;
    }
    glsl_compiler_destroy(d->kernels.compiler);
    d->kernels.compiler = NULL;
}
