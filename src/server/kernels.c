/* Kernels and their pipelines. A kernel's identity is a hash of what defines it (source or SPIR-V
 * words, defines, entry point, optimization, specialization constants, required subgroup size);
 * creating the same kernel twice costs one hash and a lookup. Building a pipeline runs without
 * the device lock, which is held only to look the identity up and to publish the result
 * (docs/ARCHITECTURE.md, "Locking model"). GLSL kernels are compiled with their metadata in push
 * constants first; when the block is larger than the device allows they are compiled again with
 * the metadata in a storage buffer (the "metadata layout" variant of the pipeline). */
#include "server/kernels.h"
#include "base/array.h"
#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "kernel/capabilities.h"
#include "kernel/limits.h"
#include "kernel/push_to_buffer.h"
#include "kernel/wgsl_reflect.h"
#include "server/device.h"
#include "server/health.h"
#include "server/kernel_disk.h"
#include "server/launch_timing.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now_ms(void)
{
    return (double)clock_now_ns() / 1e6;
}

static void hash_add(void *ctx, const void *bytes, size_t n)
{
    uint64_t *h = ctx;
    *h = hash_bytes(*h, bytes, n);
}

uint64_t server_kernel_identity(const cubec_kernel_desc *desc, const glsl_sources *includes,
                                int robust)
{
    uint64_t h = HASH_SEED;
    if (desc->glsl) {
        h = hash_str(h, "glsl");
        h = hash_str(h, desc->glsl);
    } else if (desc->wgsl) {
        h = hash_str(h, "wgsl");
        h = hash_str(h, desc->wgsl);
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
    h = hash_u64(h, desc->spec_constant_count);
    for (uint32_t i = 0; i < desc->spec_constant_count; i++)
        h = hash_u64(h, (uint64_t)desc->spec_constants[i].id << 32 | desc->spec_constants[i].value);
    /* Hashed only when set, so that the identities of kernels without it stay what they were. */
    if (desc->required_subgroup_size) {
        h = hash_str(h, "required_subgroup_size");
        h = hash_u64(h, desc->required_subgroup_size);
    }
    /* What a GLSL kernel brings of its project: hashed only when set, as above. The included
     * files' bytes are part of the identity, so an edited include is compiled again. */
    if (desc->glsl && desc->glsl_path) {
        h = hash_str(h, "glsl_path");
        h = hash_str(h, desc->glsl_path);
    }
    if (desc->glsl && desc->include_dir_count) {
        h = hash_str(h, "include_dirs");
        h = hash_u64(h, desc->include_dir_count);
        for (uint32_t i = 0; i < desc->include_dir_count; i++)
            h = hash_str(h, desc->include_dirs[i]);
    }
    if (desc->glsl && desc->preamble && desc->preamble[0]) {
        h = hash_str(h, "preamble");
        h = hash_str(h, desc->preamble);
    }
    if (desc->glsl && glsl_sources_any(includes)) {
        h = hash_str(h, "includes");
        glsl_sources_digest(includes, hash_add, &h);
    }
    /* The driver compiles the bounds checks into the pipeline; hashed only when on, as above. */
    if (robust) {
        h = hash_str(h, "robust");
        h = hash_u64(h, (uint64_t)robust);
    }
    return h;
}

static void destroy_entry(cubec_device *d, pipeline_entry *e)
{
    if (!e) return;
    for (uint32_t i = 0; i < e->name_count; i++)
        free(e->names[i]);
    free(e->names);
    kernel_info_layout_free(e->layout);
    if (e->pipeline) d->gpu->ops->pipeline_destroy(d->gpu, e->pipeline);
    free(e);
}

/* What a build reads of the device, copied under the device lock so that the build itself needs
 * none. The compiler is shared: shaderc documents compilation on one compiler object from several
 * threads at once as safe (it takes the compiler as const), and it is created under the lock. */
typedef struct build_ctx {
    cubec_device *d;
    int locked; /* the caller keeps the device lock throughout (built-in kernels) */
    cubec_device_info info;
    feature_set features;
    glsl_compiler *compiler;
    glsl_sources *includes; /* the build's own (the creating call's, or its queued job's) */
    server_compile_hook hook;
    void *hook_user;
    double t0;
    uint64_t trace_t0;
} build_ctx;

/* Counts a fallible call in the device's fault plan, which the device lock guards: a build that
 * runs without the lock takes it for the count alone, so injected faults keep their order. */
static cubec_status count_fault(const build_ctx *b, cubec_fault_kind kind, cubec_code code)
{
    if (!b->locked) pthread_mutex_lock(&b->d->lock);
    cubec_status err = gpu_fault(b->d->gpu, kind, code);
    if (!b->locked) pthread_mutex_unlock(&b->d->lock);
    return err;
}

/* What cubec validates SPIR-V for: the Vulkan version it uses on this device, the lower of the
 * instance's and the device's (encoded versions order as the versions do). */
static uint32_t vulkan_version(const cubec_device_info *info)
{
    _Static_assert(GPU_VULKAN_API_VERSION == KERNEL_VULKAN_DEFAULT,
                   "reflect.h's default environment is the instance's version");
    return info->api_version != 0 && info->api_version < GPU_VULKAN_API_VERSION
               ? info->api_version
               : GPU_VULKAN_API_VERSION;
}

/* The driver's pipeline. The backends keep no state of their own across pipeline creations (the
 * Vulkan VkPipelineCache is internally synchronized), so this runs without the device lock. */
_Static_assert(sizeof(gpu_spec_constant) == sizeof(cubec_spec_constant) &&
                   offsetof(gpu_spec_constant, value) == offsetof(cubec_spec_constant, value) &&
                   GPU_MAX_SPEC_CONSTANTS == CUBEC_MAX_SPEC_CONSTANTS,
               "the GPU seam passes cubec_spec_constant arrays as they are");

/* The subgroup size the pipeline asks for: the description's where the device can require one
 * (the API checked it against the device's range); without subgroup size control the API let
 * through only the device's one size, which every pipeline has anyway. Immutable after open:
 * read without the lock. */
static uint32_t pipeline_subgroup_size(const build_ctx *b, const cubec_kernel_desc *desc)
{
    return b->d->gpu->caps.required_subgroup_size ? desc->required_subgroup_size : 0;
}

/* gpu_resource_type takes cubec_resource_kind's values: a kernel's kinds pass through. */
_Static_assert((int)GPU_RESOURCE_STORAGE_IMAGE == (int)CUBEC_RESOURCE_STORAGE_IMAGE &&
                   (int)GPU_RESOURCE_SAMPLED_IMAGE == (int)CUBEC_RESOURCE_SAMPLED_IMAGE &&
                   (int)GPU_RESOURCE_UNIFORM_TEXEL_BUFFER ==
                       (int)CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER &&
                   (int)GPU_RESOURCE_STORAGE_TEXEL_BUFFER ==
                       (int)CUBEC_RESOURCE_STORAGE_TEXEL_BUFFER &&
                   (int)GPU_RESOURCE_SAMPLED_TEXTURE == (int)CUBEC_RESOURCE_SAMPLED_TEXTURE &&
                   (int)GPU_RESOURCE_SAMPLER == (int)CUBEC_RESOURCE_SAMPLER,
               "gpu_resource_type and cubec_resource_kind differ");

static cubec_status build_pipeline(const build_ctx *b, pipeline_entry *e, const uint32_t *words,
                                   size_t word_count, const char *wgsl, const char *entry_point,
                                   const cubec_kernel_desc *desc)
{
    RETURN_IF_ERROR(count_fault(b, CUBEC_FAULT_PIPELINE, CUBEC_INTERNAL));
    gpu_resource_slot images[KERNEL_MAX_RESOURCES];
    for (uint32_t i = 0; i < e->refl.resource_count; i++) {
        const kernel_resource *r = &e->refl.resources[i];
        images[i] = (gpu_resource_slot){.set = r->set,
                                        .binding = r->binding,
                                        .type = (uint32_t)r->kind,
                                        .access = (uint32_t)r->access,
                                        .dims = r->dims,
                                        .format = r->format,
                                        .numeric = r->numeric,
                                        .name = r->name};
    }
    gpu_slot slots[KERNEL_MAX_SLOTS];
    for (uint32_t i = 0; i < e->refl.binding_count; i++)
        slots[i] =
            (gpu_slot){e->refl.slots[i].kind, e->refl.slots[i].set, e->refl.slots[i].binding};
    gpu_pipeline_desc pd = {.spirv = words,
                            .resources = images,
                            .resource_count = e->refl.resource_count,
                            .spec = (const gpu_spec_constant *)desc->spec_constants,
                            .spec_count = desc->spec_constant_count,
                            .required_subgroup_size = pipeline_subgroup_size(b, desc),
                            .words = word_count,
                            .entry_point = entry_point,
                            .binding_count = e->refl.binding_count,
                            .slots = slots,
                            .set_count = e->refl.set_count,
                            .info_buffer = e->refl.has_info_buffer,
                            .info_uniform = e->refl.info_uniform,
                            .push_size = e->refl.push_constant_size,
                            .name = e->name,
                            .wgsl = wgsl};
    const double t0 = now_ms();
    cubec_status err = gpu_pipeline_create(b->d->gpu, &pd, &e->pipeline);
    e->pipeline_ms = now_ms() - t0;
    return err;
}

/* The SPIR-V of a GLSL kernel: from the disk cache, else compiled (build_entry stores it there
 * once it passed validation). Only a compilation counts as one for fault injection. */
static cubec_status compile_glsl(const build_ctx *b, const cubec_kernel_desc *desc,
                                 const char *name, glsl_info_form form, uint32_t **words,
                                 size_t *count, int *from_disk)
{
    *from_disk = kernel_disk_load_spirv(b->d, desc, b->includes, (int)form, words, count);
    if (*from_disk) return NULL;
    RETURN_IF_ERROR(count_fault(b, CUBEC_FAULT_COMPILE, CUBEC_COMPILE_FAILED));
    glsl_source_options more = {
        .preamble = desc->preamble, .file_name = desc->glsl_path, .includes = b->includes};
    RETURN_IF_ERROR(glsl_compile_with(b->compiler, name, desc->glsl, &more, desc->defines,
                                      desc->define_count, desc->entry_point, desc->optimize, form,
                                      words, count));
    return NULL;
}

/* Reflects what compile_glsl gave. SPIR-V from the disk cache was validated before it was
 * stored, and the entry's checksums and key prove it unchanged, so it is not validated again
 * (~0.3 ms of a cached kernel's 0.7-1.2 ms first launch); compiled SPIR-V is validated, then
 * stored. */
static cubec_status reflect_glsl(const build_ctx *b, const cubec_kernel_desc *desc,
                                 glsl_info_form form, const uint32_t *words, size_t count,
                                 const char *entry_point, pipeline_entry *e)
{
    uint32_t version = vulkan_version(&b->info);
    /* A second reflection (the metadata moved to a storage buffer) replaces the first's. */
    kernel_info_layout_free(e->layout);
    e->layout = NULL;
    RETURN_IF_ERROR(kernel_reflect_layout(words, count, entry_point, version, e->spirv_from_disk,
                                          &e->refl, &e->layout));
    if (!e->spirv_from_disk)
        kernel_disk_store_spirv(b->d, desc, b->includes, (int)form, words, count);
    return NULL;
}

/* The description's specialization constants against what the module declares. */
static cubec_status check_spec_constants(const char *name, const kernel_reflection *r,
                                         const cubec_kernel_desc *desc)
{
    for (uint32_t i = 0; i < desc->spec_constant_count; i++) {
        uint32_t id = desc->spec_constants[i].id, k = 0;
        while (k < r->spec_count && r->spec_ids[k] != id)
            k++;
        if (k == r->spec_count) {
            uint32_t sorted[KERNEL_MAX_SPEC_CONSTANTS];
            for (uint32_t j = 0; j < r->spec_count; j++) {
                uint32_t v = r->spec_ids[j], m = j;
                for (; m > 0 && sorted[m - 1] > v; m--)
                    sorted[m] = sorted[m - 1];
                sorted[m] = v;
            }
            char ids[160] = "";
            size_t at = 0;
            for (uint32_t j = 0; j < r->spec_count && at + 12 < sizeof ids; j++)
                at += (size_t)snprintf(ids + at, sizeof ids - at, "%s%u", j ? ", " : "", sorted[j]);
            return status_make(CUBEC_INVALID_ARGUMENT,
                               "kernel '%s': desc->spec_constants[%u].id %u is not a "
                               "specialization constant of the module (its ids: %s)",
                               name, i, id, r->spec_count ? ids : "none");
        }
        if (r->spec_wide[k])
            return status_make(CUBEC_UNSUPPORTED,
                               "kernel '%s': specialization constant %u is 64-bit; "
                               "cubec_spec_constant values are 32-bit",
                               name, id);
    }
    return NULL;
}

/* Reflection measured the workgroup size and shared arrays that specialization constants set
 * with their defaults; the pipeline gets the values of `desc`, and so do the driver and the
 * validation layer (VUID-RuntimeSpirv-Workgroup-06530): the limits are checked against those, and
 * cubec_kernel_get_info reports them. Run without values too: the defaults can leave an array
 * of length 0 that reflection does not refuse (kernel_reflect_specialize). */
static cubec_status specialize_shapes(const char *name, const uint32_t *words, size_t count,
                                      const cubec_kernel_desc *desc, kernel_reflection *r)
{
    cubec_status err =
        kernel_reflect_specialize(words, count, desc->spec_constants, desc->spec_constant_count, r);
    if (err) return status_annotate(err, "kernel '%s'", name);
    return NULL;
}

/* A uniform block is bound with a range of at most maxUniformBufferRange: a larger block would
 * read past it (undefined in Vulkan), so it is refused here, naming it. */
static cubec_status check_uniform_blocks(const char *name, const kernel_reflection *r,
                                         uint64_t max_uniform_range)
{
    for (uint32_t i = 0; i < r->binding_count; i++) {
        const kernel_slot *s = &r->slots[i];
        if (s->kind == KERNEL_SLOT_UNIFORM && s->block_size > max_uniform_range)
            return status_make(CUBEC_UNSUPPORTED,
                               "kernel '%s': the uniform block at set %u binding %u is %u bytes, "
                               "more than the device's maxUniformBufferRange of %" PRIu64
                               " bytes; declare it as a readonly buffer",
                               name, s->set, s->binding, s->block_size, max_uniform_range);
    }
    return NULL;
}

/* A push-constant block larger than the device's maxPushConstantsSize: the module is rewritten so
 * that the block is a read-only storage buffer at the metadata binding (kernel/push_to_buffer.h),
 * and reflected again (validated: the rewrite must give a module the driver accepts). The
 * launch's info bytes then go through the metadata ring like a CUBEC_INFO block in a buffer. */
static cubec_status move_push_block(const char *name, const uint32_t *words, size_t count,
                                    const char *entry_point, uint32_t version, pipeline_entry *e,
                                    uint32_t **moved, size_t *moved_count)
{
    uint32_t size = e->refl.push_constant_size;
    cubec_status err = kernel_push_to_buffer(words, count, moved, moved_count);
    if (!err) {
        kernel_info_layout_free(e->layout);
        e->layout = NULL;
        err = kernel_reflect_layout(*moved, *moved_count, entry_point, version, 0, &e->refl,
                                    &e->layout);
    }
    if (err)
        return status_annotate(err,
                               "kernel '%s': moving its push-constant block of %u bytes to a "
                               "buffer",
                               name, size);
    return NULL;
}

/* Compiles, reflects, checks and creates the pipeline of `desc` into a new entry that only this
 * thread sees until it is published. Errors come back unannotated by the device (publish notes
 * them). */
static cubec_status build_entry(const build_ctx *b, const cubec_kernel_desc *desc, uint64_t key,
                                pipeline_entry **out)
{
    *out = NULL;
    const char *name = desc->name ? desc->name : "kernel";
    const char *entry_point =
        desc->entry_point && desc->entry_point[0] ? desc->entry_point : "main";
    if (b->hook) b->hook(b->hook_user, SERVER_HOOK_BUILD, name);
    pipeline_entry *e = calloc(1, sizeof *e);
    if (!e) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (kernel)");
    e->key = key;
    snprintf(e->name, sizeof e->name, "%s", name);
    uint32_t *words = NULL;
    size_t count = 0;
    char *wgsl_module = NULL; /* a WGSL kernel's source as the backend compiles it */
    cubec_status err = NULL;
    uint32_t version = vulkan_version(&b->info);
    if (desc->glsl) {
        /* Metadata where [kernel] metadata put it at open (server_kernels_configure; immutable
         * after open, so it is read without the lock). */
        glsl_info_form form = (glsl_info_form)b->d->kernels->info_form;
        err = compile_glsl(b, desc, name, form, &words, &count, &e->spirv_from_disk);
        if (!err) err = reflect_glsl(b, desc, form, words, count, entry_point, e);
        int too_big = form == GLSL_INFO_PUSH
                          ? e->refl.push_constant_size > b->info.max_push_constants_size
                          : e->refl.info_uniform &&
                                e->refl.info_buffer_size > b->d->gpu->caps.max_uniform_range;
        if (!err && too_big) {
            /* The metadata does not fit push constants (or a uniform buffer) here: move it to a
             * storage buffer. A push-constant block of the source's own stays, and the limits
             * refuse it below. */
            free(words);
            words = NULL;
            err =
                compile_glsl(b, desc, name, GLSL_INFO_STORAGE, &words, &count, &e->spirv_from_disk);
            if (!err) err = reflect_glsl(b, desc, GLSL_INFO_STORAGE, words, count, entry_point, e);
        }
        /* Compilation errors name the kernel already; reflection's do not. */
        if (err && cubec_status_code(err) != CUBEC_COMPILE_FAILED)
            err = status_annotate(err, "kernel '%s'", name);
    } else if (desc->wgsl) {
        /* WGSL goes to the backend as it is (the read-only storage declared read_write): only
         * the webgpu backend compiles it. */
        if (!b->d->gpu->caps.wgsl)
            err = status_make(CUBEC_UNSUPPORTED,
                              "kernel '%s': WGSL kernels need the webgpu backend (device '%s' is "
                              "on the %s backend)",
                              name, b->info.name, b->d->gpu->ops->name);
        if (!err) err = wgsl_reflect(name, desc->wgsl, entry_point, &e->refl, &wgsl_module);
        if (!err && e->refl.push_constant_size > b->info.max_push_constants_size)
            err = status_make(CUBEC_UNSUPPORTED,
                              "kernel '%s': %" PRIu32 " bytes of WGSL immediates; device '%s' "
                              "takes %" PRIu32,
                              name, e->refl.push_constant_size, b->info.name,
                              b->info.max_push_constants_size);
    } else {
        /* Capabilities first: one newer than the validator is refused by it as invalid, where
         * the device's lack of it is the answer (capabilities.h). */
        err =
            capabilities_precheck(name, b->info.name, desc->spirv, desc->spirv_words, &b->features);
        if (!err)
            err = kernel_reflect_layout(desc->spirv, desc->spirv_words, entry_point, version, 0,
                                        &e->refl, &e->layout);
        if (err && cubec_status_code(err) != CUBEC_UNSUPPORTED)
            err = status_annotate(err, "kernel '%s'", name);
    }
    uint32_t *moved = NULL;
    size_t moved_count = 0;
    if (!err && !desc->wgsl && e->refl.push_constant_size > b->info.max_push_constants_size &&
        !e->refl.has_info_buffer)
        err = move_push_block(name, desc->glsl ? words : desc->spirv,
                              desc->glsl ? count : desc->spirv_words, entry_point, version, e,
                              &moved, &moved_count);
    /* The module the pipeline is made of: the rewritten one, the compiled GLSL or the caller's. */
    const uint32_t *module = moved ? moved : desc->glsl ? words : desc->spirv;
    size_t module_words = moved ? moved_count : desc->glsl ? count : desc->spirv_words;
    /* A WGSL kernel's override constants are the implementation's to check (by @id). */
    if (!err && !desc->wgsl) err = check_spec_constants(name, &e->refl, desc);
    if (!err && !desc->wgsl) err = specialize_shapes(name, module, module_words, desc, &e->refl);
    if (!err)
        err = capabilities_check(name, b->info.name, e->refl.capabilities, e->refl.capability_count,
                                 &b->features);
    if (!err) {
        kernel_limits limits = kernel_limits_of(&b->info);
        limits.required_subgroup_size = pipeline_subgroup_size(b, desc);
        limits.max_workgroup_subgroups = b->d->gpu->caps.max_workgroup_subgroups;
        err = kernel_limits_check(name, &e->refl, &limits);
        if (!err) err = check_uniform_blocks(name, &e->refl, b->d->gpu->caps.max_uniform_range);
    }
    if (!err) {
        e->info_in_push = e->refl.push_constant_size > 0;
        /* A GLSL source that names CUBEC_INFO has its metadata block in cubec's hands (the name
         * of its block, CubecInfo, is gone from optimized modules); SPIR-V's is its own. */
        e->push_block_own = e->info_in_push && (!desc->glsl || !strstr(desc->glsl, "CUBEC_INFO"));
        e->info_size = e->info_in_push ? e->refl.push_constant_size : e->refl.info_buffer_size;
        err = build_pipeline(b, e, module, module_words, wgsl_module, entry_point, desc);
        if (err) err = status_annotate(err, "kernel '%s'", name);
    }
    free(moved);
    free(words);
    free(wgsl_module);
    if (err) {
        destroy_entry(b->d, e);
        return err;
    }
    *out = e;
    return NULL;
}

static pipeline_entry *lookup(cubec_device *d, uint64_t key)
{
    for (pipeline_entry *e = d->kernels->pipelines[key & 255]; e; e = e->next)
        if (e->key == key) return e;
    return NULL;
}

pipeline_entry *server_kernel_find(cubec_device *d, uint64_t key)
{
    return lookup(d, key);
}

static int in_flight(const cubec_device *d, uint64_t key)
{
    for (const kernel_build *b = d->kernels->building; b; b = b->next)
        if (b->key == key) return 1;
    return 0;
}

/* Under the device lock: what the build needs of the device. */
static cubec_status build_begin(cubec_device *d, const cubec_kernel_desc *desc,
                                glsl_sources *includes, int locked, build_ctx *out)
{
    kernel_disk_begin(d);
    if (desc->glsl && !d->kernels->compiler)
        RETURN_IF_ERROR(glsl_compiler_create(&d->kernels->compiler));
    *out = (build_ctx){.d = d,
                       .locked = locked,
                       .info = d->info,
                       .features = d->gpu->features,
                       .compiler = d->kernels->compiler,
                       .includes = includes,
                       .hook = d->kernels->hook,
                       .hook_user = d->kernels->hook_user,
                       .t0 = now_ms(),
                       .trace_t0 = clock_now_ns()};
    return NULL;
}

/* An entry built but not published keeps its driver objects until the device closes: on a lost
 * device, close decides whether the driver may still be called (a GPU that never finished is
 * abandoned, not called), and a driver may hand an object's destruction to its queue's thread. */
static void drop_entry(cubec_device *d, pipeline_entry *e)
{
    if (!e) return;
    e->next = d->kernels->dropped;
    d->kernels->dropped = e;
}

/* Under the device lock again: the build's result goes into the table, unless the device was lost
 * meanwhile (on another thread: the entry is dropped and the call fails as any later call does)
 * or another build of the same identity was published first (a built-in kernel's, which cannot
 * wait for builds in flight: the first entry stays and this one is dropped). */
static cubec_status publish(cubec_device *d, const build_ctx *b, const cubec_kernel_desc *desc,
                            uint64_t key, pipeline_entry *e, cubec_status err, pipeline_entry **out)
{
    cubec_status lost = server_check_alive(d);
    if (lost) {
        drop_entry(d, e);
        cubec_status_free(err);
        return lost;
    }
    /* build_entry's success always has an entry; the analyzer cannot tell. */
    if (!err && !e) err = status_make(CUBEC_INTERNAL, "kernel build returned no entry");
    if (err || !e) return server_note_error(d, err);
    pipeline_entry *first = lookup(d, key);
    if (first) {
        drop_entry(d, e);
        *out = first;
        return NULL;
    }
    pipeline_entry **bucket = &d->kernels->pipelines[key & 255];
    e->next = *bucket;
    *bucket = e;
    d->kernels->compiles++;
    d->kernels->disk_spirv_hits += e->spirv_from_disk ? 1 : 0;
    LOG(LOG_INFO, LOG_SYS_COMPILE,
        "compiled kernel '%s' (%016" PRIx64 ", %u buffers, %u info bytes in %s%s) in %.2f ms "
        "(the driver's pipeline %.2f ms)",
        e->name, key, e->refl.binding_count, e->info_size,
        e->info_in_push ? "push constants" : (e->info_size ? "a buffer" : "nothing"),
        e->spirv_from_disk ? ", SPIR-V from the disk cache" : "", now_ms() - b->t0, e->pipeline_ms);
    if (d->timing->trace) {
        char args[96];
        snprintf(args, sizeof args, "\"identity\":\"%016" PRIx64 "\",\"source\":\"%s\"", key,
                 desc->glsl   ? "glsl"
                 : desc->wgsl ? "wgsl"
                              : "spirv");
        timing_host(d, e->name, "compile", b->trace_t0, TIMING_NO_STREAM, args);
    }
    *out = e;
    return NULL;
}

cubec_status server_kernel_create(cubec_device *d, const cubec_kernel_desc *desc,
                                  glsl_sources *includes, uint64_t key, pipeline_entry **out)
{
    for (;;) {
        pipeline_entry *e = lookup(d, key);
        if (e) {
            *out = e;
            return NULL;
        }
        if (!in_flight(d, key)) break;
        /* Another thread is building this kernel: one build per identity. Should it fail, the
         * waiters find no entry and build it themselves (a fault or a lost device may have been
         * that build's alone). */
        d->kernels->build_waits++;
        if (d->kernels->hook)
            d->kernels->hook(d->kernels->hook_user, SERVER_HOOK_WAIT,
                             desc->name ? desc->name : "kernel");
        pthread_cond_wait(&d->kernels->built, &d->lock);
        RETURN_IF_ERROR(server_check_alive(d));
    }
    build_ctx b;
    RETURN_IF_ERROR(build_begin(d, desc, includes, 0, &b));
    kernel_build mark = {.key = key, .next = d->kernels->building};
    d->kernels->building = &mark;
    /* Compiling may take minutes (a macro bomb within the source limit does): other threads'
     * launches, reads and syncs go on meanwhile. */
    pthread_mutex_unlock(&d->lock);
    pipeline_entry *e = NULL;
    cubec_status err = build_entry(&b, desc, key, &e);
    pthread_mutex_lock(&d->lock);
    for (kernel_build **p = &d->kernels->building; *p; p = &(*p)->next)
        if (*p == &mark) {
            *p = mark.next;
            break;
        }
    pthread_cond_broadcast(&d->kernels->built);
    return publish(d, &b, desc, key, e, err, out);
}

cubec_status server_kernel_create_locked(cubec_device *d, const cubec_kernel_desc *desc,
                                         pipeline_entry **out)
{
    uint64_t key = server_kernel_identity(desc, NULL, d->info.robust);
    pipeline_entry *e = lookup(d, key);
    if (e) {
        *out = e;
        return NULL;
    }
    build_ctx b;
    RETURN_IF_ERROR(build_begin(d, desc, NULL, 1, &b));
    cubec_status err = build_entry(&b, desc, key, &e);
    return publish(d, &b, desc, key, e, err, out);
}

void server_kernel_set_compile_hook(cubec_device *d, server_compile_hook hook, void *user)
{
    pthread_mutex_lock(&d->lock);
    d->kernels->hook = hook;
    d->kernels->hook_user = user;
    pthread_mutex_unlock(&d->lock);
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
    /* (array_grow leaves a non-NULL array when it succeeds; the analyzer cannot tell.) */
    if (array_grow((void **)&e->names, &e->name_cap, (uint64_t)e->name_count + 1, sizeof(char *)) !=
            0 ||
        !e->names || !(e->names[e->name_count] = strdup(cut)))
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (kernel name)");
    *out = e->names[e->name_count++];
    return NULL;
}

void server_kernels_configure(cubec_device *d)
{
    const gpu_caps *caps = &d->gpu->caps;
    glsl_info_form form = GLSL_INFO_PUSH;
    switch (d->config.info_mode) {
    case CONFIG_INFO_PUSH: form = GLSL_INFO_PUSH; break;
    case CONFIG_INFO_BUFFER: form = GLSL_INFO_STORAGE; break;
    case CONFIG_INFO_UNIFORM:
        form = caps->uniform_info ? GLSL_INFO_UNIFORM : GLSL_INFO_STORAGE;
        if (!caps->uniform_info)
            LOG(LOG_WARN, LOG_SYS_COMPILE,
                "[kernel] metadata = uniform: device '%s' lacks scalarBlockLayout (std430 uniform "
                "blocks); metadata goes in a storage buffer",
                d->info.name);
        break;
    default:
        /* auto: a push-constant range alone costs an H200 ~0.3 us per dependent launch, while
         * a uniform block read from device memory costs nothing; in host memory it would cost
         * a PCIe read per launch, so only where the metadata ring sits in device memory. */
        form =
            caps->uniform_info && caps->metadata_device_local ? GLSL_INFO_UNIFORM : GLSL_INFO_PUSH;
        break;
    }
    d->kernels->info_form = (int)form;
    static const char *const names[] = {"a storage buffer", "push constants", "a uniform buffer"};
    LOG(LOG_INFO, LOG_SYS_COMPILE, "kernel metadata (CUBEC_INFO) goes in %s", names[form]);
}

void server_kernels_destroy(cubec_device *d)
{
    kernel_disk_end(d);
    for (int i = 0; i < 256; i++) {
        pipeline_entry *e = d->kernels->pipelines[i];
        while (e) {
            pipeline_entry *next = e->next;
            destroy_entry(d, e);
            e = next;
        }
        d->kernels->pipelines[i] = NULL;
    }
    while (d->kernels->dropped) {
        pipeline_entry *next = d->kernels->dropped->next;
        destroy_entry(d, d->kernels->dropped);
        d->kernels->dropped = next;
    }
    glsl_compiler_destroy(d->kernels->compiler);
    d->kernels->compiler = NULL;
}

void server_kernel_destroy(cubec_device *d, uint64_t id, kernel_obj *k)
{
    handle_table_remove(&d->kernels->handles, id);
    free(k);
}
