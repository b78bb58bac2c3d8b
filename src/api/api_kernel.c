/* Public entry points: kernels and launches. Launch checks every argument against the kernel's
 * reflected interface and the device limits before anything is recorded. */
#include "api/api_common.h"
#include "api/api_resources.h"
#include "api/api_struct.h"
#include "server/buffers.h"
#include "server/compile_queue.h"
#include "server/kernels.h"
#include "server/launch.h"
#include "server/run_mode.h"
#include "server/streams.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* desc->required_subgroup_size against the device (docs/kernels.md, "Subgroup size"). The
 * backend's info, capabilities and features are set at open and immutable after: read without
 * the lock. */
static cubec_status check_subgroup_size(const char *fn, const cubec_device *device,
                                        const cubec_kernel_desc *desc)
{
    uint32_t size = desc->required_subgroup_size;
    if (!size) return NULL;
    const gpu *g = device->gpu;
    const cubec_device_info *info = &g->info;
    const char *name = desc->name ? desc->name : "kernel";
    if (size & (size - 1))
        return INVALID_ARG("%s: kernel '%s': desc->required_subgroup_size is %u, not a power of "
                           "two (device '%s' runs compute kernels with subgroup sizes %u to %u)",
                           fn, name, size, info->name, info->min_subgroup_size,
                           info->max_subgroup_size);
    if (!g->caps.required_subgroup_size) {
        /* Every kernel has the device's one size: asking for it needs nothing. */
        if (size == info->subgroup_size) return NULL;
        const uint32_t bit = CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL;
        char why[sizeof info->name + 128];
        if (g->features.disabled & bit)
            snprintf(why, sizeof why,
                     "it is turned off on device '%s' by [device] disable_features "
                     "(CUBEC_DISABLE_FEATURES)",
                     info->name);
        else if (g->features.enabled & bit)
            snprintf(why, sizeof why,
                     "device '%s' has it, but not for compute shaders (requiredSubgroupSizeStages)",
                     info->name);
        else
            snprintf(why, sizeof why, "device '%s' lacks it", info->name);
        return status_make(CUBEC_UNSUPPORTED,
                           "%s: kernel '%s': desc->required_subgroup_size is %u, which needs the "
                           "device feature %s (Vulkan %s): %s; without it the only subgroup size "
                           "is %u",
                           fn, name, size, cubec_feature_name((cubec_feature)bit),
                           feature_vulkan_name(bit), why, info->subgroup_size);
    }
    if (size < info->min_subgroup_size || size > info->max_subgroup_size)
        return INVALID_ARG("%s: kernel '%s': desc->required_subgroup_size is %u, outside the range "
                           "of device '%s', %u to %u (min_subgroup_size to max_subgroup_size)",
                           fn, name, size, info->name, info->min_subgroup_size,
                           info->max_subgroup_size);
    return NULL;
}

/* The checks every kernel description goes through, queued or not. */
static cubec_status check_desc(const char *fn, cubec_device *device, const cubec_kernel_desc *desc)
{
    if (!desc) return INVALID_ARG("%s: desc is NULL", fn);
    if ((desc->glsl ? 1 : 0) + (desc->spirv ? 1 : 0) + (desc->wgsl ? 1 : 0) != 1)
        return INVALID_ARG("%s: desc must set exactly one of glsl, spirv and wgsl (glsl %s, spirv "
                           "%s, wgsl %s)",
                           fn, desc->glsl ? "set" : "NULL", desc->spirv ? "set" : "NULL",
                           desc->wgsl ? "set" : "NULL");
    if (desc->spirv && desc->spirv_words == 0) return INVALID_ARG("%s: desc->spirv_words is 0", fn);
    /* Sources are bounded before they are hashed or compiled: glslang and the validator take time
     * and memory in proportion to them. The check reads at most limit + 1 bytes of the GLSL; only
     * a refused source is measured in full, for the message. The limit is the device's
     * configuration ([kernel] max_source_bytes), immutable after open: read without the lock. */
    RETURN_IF_ERROR(api_device(device, fn));
    uint64_t limit = (uint64_t)device->config.max_source_bytes;
    if (desc->spirv && desc->spirv_words > limit / 4)
        return INVALID_ARG("%s: desc->spirv_words is %zu, more than the limit of %" PRIu64
                           " words (%" PRIu64 " bytes: [kernel] max_source_bytes, "
                           "CUBEC_MAX_SOURCE_BYTES)",
                           fn, desc->spirv_words, limit / 4, limit);
    if (desc->wgsl && strnlen(desc->wgsl, (size_t)limit + 1) > limit)
        return INVALID_ARG("%s: desc->wgsl is %zu bytes long, more than the limit of %" PRIu64
                           " bytes ([kernel] max_source_bytes, CUBEC_MAX_SOURCE_BYTES)",
                           fn, strlen(desc->wgsl), limit);
    if (desc->wgsl &&
        (desc->define_count || desc->glsl_path || desc->include_dir_count || desc->preamble))
        return INVALID_ARG("%s: desc->%s is set for a WGSL kernel; defines, glsl_path, "
                           "include_dirs and preamble apply to GLSL",
                           fn,
                           desc->define_count        ? "defines"
                           : desc->glsl_path         ? "glsl_path"
                           : desc->include_dir_count ? "include_dirs"
                                                     : "preamble");
    if (desc->glsl && strnlen(desc->glsl, (size_t)limit + 1) > limit)
        return INVALID_ARG("%s: desc->glsl is %zu bytes long, more than the limit of %" PRIu64
                           " bytes ([kernel] max_source_bytes, CUBEC_MAX_SOURCE_BYTES)",
                           fn, strlen(desc->glsl), limit);
    if (desc->define_count && !desc->defines)
        return INVALID_ARG("%s: desc->defines is NULL with define_count %u", fn,
                           desc->define_count);
    for (uint32_t i = 0; i < desc->define_count; i++)
        if (!desc->defines[i].name || !desc->defines[i].name[0])
            return INVALID_ARG("%s: desc->defines[%u].name is empty", fn, i);
    /* What GLSL brings of its project means nothing to SPIR-V: silently ignoring it would hide a
     * caller's mistake. */
    if (desc->spirv && (desc->glsl_path || desc->include_dir_count || desc->preamble))
        return INVALID_ARG("%s: desc->%s is set for a SPIR-V kernel; glsl_path, include_dirs and "
                           "preamble apply to GLSL",
                           fn,
                           desc->glsl_path           ? "glsl_path"
                           : desc->include_dir_count ? "include_dirs"
                                                     : "preamble");
    if (desc->include_dir_count && !desc->include_dirs)
        return INVALID_ARG("%s: desc->include_dirs is NULL with include_dir_count %u", fn,
                           desc->include_dir_count);
    for (uint32_t i = 0; i < desc->include_dir_count; i++)
        if (!desc->include_dirs[i] || !desc->include_dirs[i][0])
            return INVALID_ARG("%s: desc->include_dirs[%u] is %s", fn, i,
                               desc->include_dirs[i] ? "empty" : "NULL");
    if (desc->glsl_path && !desc->glsl_path[0])
        return INVALID_ARG("%s: desc->glsl_path is empty (NULL: the source came from no file)", fn);
    if (desc->preamble && strnlen(desc->preamble, (size_t)limit + 1) > limit)
        return INVALID_ARG("%s: desc->preamble is %zu bytes long, more than the limit of %" PRIu64
                           " bytes ([kernel] max_source_bytes, CUBEC_MAX_SOURCE_BYTES)",
                           fn, strlen(desc->preamble), limit);
    if (desc->spec_constant_count && !desc->spec_constants)
        return INVALID_ARG("%s: desc->spec_constants is NULL with spec_constant_count %u", fn,
                           desc->spec_constant_count);
    if (desc->spec_constant_count > CUBEC_MAX_SPEC_CONSTANTS)
        return INVALID_ARG("%s: desc->spec_constant_count is %u, more than %d", fn,
                           desc->spec_constant_count, CUBEC_MAX_SPEC_CONSTANTS);
    for (uint32_t i = 0; i < desc->spec_constant_count; i++)
        for (uint32_t j = 0; j < i; j++)
            if (desc->spec_constants[i].id == desc->spec_constants[j].id)
                return INVALID_ARG("%s: desc->spec_constants[%u] and [%u] both set id %u", fn, j, i,
                                   desc->spec_constants[i].id);
    return check_subgroup_size(fn, device, desc);
}

/* A new handle of `desc`: compiled before this returns, or (`queue`) handed to the compile
 * queue. */
enum { CREATE_NOW, CREATE_QUEUED, CREATE_AS_CONFIGURED };

static cubec_status create(const char *fn, cubec_device *device, const cubec_kernel_desc *user,
                           int mode, cubec_kernel *out_kernel)
{
    if (!out_kernel) return INVALID_ARG("%s: out_kernel is NULL", fn);
    out_kernel->id = 0;
    /* The caller's declared bytes, as a whole desc of this library's size. */
    if (!user) return INVALID_ARG("%s: desc is NULL", fn);
    RETURN_IF_ERROR(API_STRUCT_CHECK(user, cubec_kernel_desc, CUBEC_KERNEL_DESC_INIT, fn, "desc"));
    cubec_kernel_desc whole;
    api_struct_read(user, &whole, sizeof whole);
    const cubec_kernel_desc *desc = &whole;
    RETURN_IF_ERROR(check_desc(fn, device, desc));
    if (!device) return INVALID_ARG("%s: device is NULL", fn); /* check_desc refused it already */
    /* [compile] async_create is immutable after open: read without the lock. */
    int queue = mode == CREATE_AS_CONFIGURED ? device->config.compile_async : mode == CREATE_QUEUED;
    /* The identity is hashed before the lock, and the build releases it (server/kernels.h):
     * nothing is resolved before the build, so nothing can change underneath. */
    /* The files a GLSL kernel includes are read now, once: their bytes are part of the identity,
     * and the build compiles this snapshot of them. */
    glsl_sources *includes = NULL;
    if (desc->glsl)
        RETURN_IF_ERROR(glsl_sources_gather(fn, desc->glsl, desc->preamble, desc->glsl_path,
                                            desc->include_dirs, desc->include_dir_count,
                                            (uint64_t)device->config.max_source_bytes, &includes));
    uint64_t key = server_kernel_identity(desc, includes, device->info.robust);
    cubec_status err = api_lock(device, fn);
    if (err) {
        glsl_sources_free(includes);
        return err;
    }
    kernel_obj *k = calloc(1, sizeof *k);
    if (!k) {
        glsl_sources_free(includes);
        return api_unlock(device, status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (kernel)"));
    }
    if (queue) {
        err = compile_queue_add(device, desc, &includes, key, k);
    } else {
        pipeline_entry *e;
        err = server_kernel_create(device, desc, includes, key, &e);
        if (!err) {
            k->entry = e;
            err = server_kernel_name(e, desc->name, &k->name);
        }
    }
    if (!err) err = handle_table_insert(&device->kernels->handles, k, &out_kernel->id);
    if (err) {
        compile_queue_drop_handle(device, k);
        free(k);
    }
    /* A queued job took the snapshot; otherwise the build is over. Freed under the lock: a
     * queued kernel's job frees its own there too. */
    glsl_sources_free(includes);
    return api_unlock(device, err);
}

cubec_status cubec_kernel_create(cubec_device *device, const cubec_kernel_desc *desc,
                                 cubec_kernel *out_kernel)
{
    return create("cubec_kernel_create", device, desc, CREATE_AS_CONFIGURED, out_kernel);
}

cubec_status cubec_kernel_queue(cubec_device *device, const cubec_kernel_desc *desc,
                                cubec_kernel *out_kernel)
{
    return create("cubec_kernel_queue", device, desc, CREATE_QUEUED, out_kernel);
}

cubec_status cubec_kernel_wait(cubec_device *device, cubec_kernel kernel)
{
    static const char fn[] = "cubec_kernel_wait";
    RETURN_IF_ERROR(api_lock(device, fn));
    kernel_obj *k;
    cubec_status err = compile_queue_resolve(device, kernel.id, "cubec_kernel_wait: kernel", &k);
    if (!err && k->job) err = status_annotate(status_clone(k->job->err), "%s", fn);
    return api_unlock(device, err);
}

cubec_status cubec_kernel_compile_queued(cubec_device *device)
{
    static const char fn[] = "cubec_kernel_compile_queued";
    RETURN_IF_ERROR(api_lock(device, fn));
    cubec_status err = status_annotate(compile_queue_wait_all(device), "%s", fn);
    return api_unlock(device, err);
}

cubec_status cubec_kernel_get_info(cubec_device *device, cubec_kernel kernel,
                                   cubec_kernel_info *out_info)
{
    if (!out_info) return INVALID_ARG("cubec_kernel_get_info: out_info is NULL");
    RETURN_IF_ERROR(API_STRUCT_CHECK(out_info, cubec_kernel_info, CUBEC_KERNEL_INFO_INIT,
                                     "cubec_kernel_get_info", "out_info"));
    api_struct_clear(out_info);
    RETURN_IF_ERROR(api_lock(device, "cubec_kernel_get_info"));
    kernel_obj *k;
    cubec_status err =
        compile_queue_resolve(device, kernel.id, "cubec_kernel_get_info: kernel", &k);
    if (!err && k->job) err = status_annotate(status_clone(k->job->err), "cubec_kernel_get_info");
    if (!err) {
        const pipeline_entry *e = k->entry;
        cubec_kernel_info info = CUBEC_KERNEL_INFO_INIT;
        info.hash = e->key;
        info.binding_count = e->refl.binding_count;
        memcpy(info.access, e->refl.access, sizeof info.access);
        info.info_size = e->info_size;
        info.info_in_push_constants = e->info_in_push;
        memcpy(info.workgroup_size, e->refl.workgroup_size, sizeof info.workgroup_size);
        info.info_field_count = e->layout ? e->layout->count : 0;
        info.shared_memory_size = e->refl.shared_memory_size;
        api_struct_write(out_info, &info);
    }
    return api_unlock(device, err);
}

/* Writes field `f` into the caller's struct, as far as its struct_size declares. */
static void copy_field(const kernel_info_field *f, cubec_info_field *out)
{
    const cubec_info_field whole = {.struct_size = sizeof whole,
                                    .name = f->name,
                                    .offset = f->offset,
                                    .size = f->size,
                                    .type = f->type,
                                    .vector_size = f->vector_size,
                                    .columns = f->columns,
                                    .array_length = f->array_length,
                                    .array_stride = f->array_stride,
                                    .matrix_stride = f->matrix_stride};
    api_struct_write(out, &whole);
}

/* The layout of a kernel that compiled; a queued kernel is waited for (its error returned). */
static cubec_status kernel_layout(cubec_device *device, cubec_kernel kernel, const char *fn,
                                  const pipeline_entry **out_entry)
{
    char arg[64];
    snprintf(arg, sizeof arg, "%s: kernel", fn);
    kernel_obj *k;
    RETURN_IF_ERROR(compile_queue_resolve(device, kernel.id, arg, &k));
    if (k->job) return status_annotate(status_clone(k->job->err), "%s", fn);
    *out_entry = k->entry;
    return NULL;
}

cubec_status cubec_kernel_get_info_field(cubec_device *device, cubec_kernel kernel, uint32_t index,
                                         cubec_info_field *out_field)
{
    static const char fn[] = "cubec_kernel_get_info_field";
    if (!out_field) return INVALID_ARG("%s: out_field is NULL", fn);
    RETURN_IF_ERROR(
        API_STRUCT_CHECK(out_field, cubec_info_field, CUBEC_INFO_FIELD_INIT, fn, "out_field"));
    api_struct_clear(out_field);
    RETURN_IF_ERROR(api_lock(device, fn));
    const pipeline_entry *e = NULL;
    cubec_status err = kernel_layout(device, kernel, fn, &e);
    if (!err && e) {
        uint32_t count = e->layout ? e->layout->count : 0;
        if (index >= count)
            err = INVALID_ARG("%s: index %u is past the %u metadata fields of kernel '%s'", fn,
                              index, count, e->name);
        else
            copy_field(&e->layout->fields[index], out_field);
    }
    return api_unlock(device, err);
}

cubec_status cubec_kernel_find_info_field(cubec_device *device, cubec_kernel kernel,
                                          const char *name, cubec_info_field *out_field)
{
    static const char fn[] = "cubec_kernel_find_info_field";
    if (!out_field) return INVALID_ARG("%s: out_field is NULL", fn);
    RETURN_IF_ERROR(
        API_STRUCT_CHECK(out_field, cubec_info_field, CUBEC_INFO_FIELD_INIT, fn, "out_field"));
    api_struct_clear(out_field);
    if (!name) return INVALID_ARG("%s: name is NULL", fn);
    RETURN_IF_ERROR(api_lock(device, fn));
    const pipeline_entry *e = NULL;
    cubec_status err = kernel_layout(device, kernel, fn, &e);
    if (!err && e) {
        const kernel_info_field *f = kernel_info_layout_find(e->layout, name);
        if (f) {
            copy_field(f, out_field);
        } else {
            char fields[512];
            kernel_info_layout_describe(e->layout, fields, sizeof fields);
            err = INVALID_ARG("%s: kernel '%s' has no metadata field '%s' (its fields: %s)", fn,
                              e->name, name, fields);
        }
    }
    return api_unlock(device, err);
}

cubec_status cubec_kernel_destroy(cubec_device *device, cubec_kernel kernel)
{
    if (kernel.id == 0) return NULL;
    RETURN_IF_ERROR(api_lock(device, "cubec_kernel_destroy"));
    void *o;
    cubec_status err = handle_table_lookup(&device->kernels->handles, kernel.id,
                                           "cubec_kernel_destroy: kernel", &o);
    if (!err) {
        compile_queue_drop_handle(device, o);
        server_kernel_destroy(device, kernel.id, o);
    }
    return api_unlock(device, err);
}

/* The size of a C struct that mirrors the block member by member: the block's own size ends at
 * its last member, where C pads the struct to its alignment, the widest scalar's (a double +
 * float block is 12 bytes, its struct 16). The launch accepts it too, passing the block's bytes
 * only: the padding is never read. */
static uint32_t padded_info_size(const pipeline_entry *e)
{
    uint32_t align = e->layout && e->layout->scalar_align ? e->layout->scalar_align : 1;
    return (e->info_size + align - 1) / align * align;
}

/* A module's own push-constant block (not CUBEC_INFO's) takes any info_size from its declared
 * size up to the device's maxPushConstantsSize, as a Vulkan push range may be larger than the
 * block: a C struct pads at its end (issue 24). Only the block's bytes are pushed; the rest is
 * never read. CUBEC_INFO blocks keep the exact sizes, which catch a struct that went astray. */
static int push_range_fits(const cubec_device *d, const pipeline_entry *e, uint32_t size)
{
    return e->info_in_push && e->push_block_own && size > e->info_size &&
           size <= d->info.max_push_constants_size;
}

/* A wrong size names the block's members and offsets, so that the caller sees which member of
 * the C struct went astray (a vec3 at 16, not at 4). */
static cubec_status info_size_mismatch(const cubec_device *d, const char *fn, uint32_t given,
                                       const pipeline_entry *e)
{
    char fields[640];
    kernel_info_layout_describe(e->layout, fields, sizeof fields);
    uint32_t padded = padded_info_size(e);
    char also[96] = "";
    if (push_range_fits(d, e, e->info_size + 1))
        snprintf(also, sizeof also, " (or up to maxPushConstantsSize %u)",
                 d->info.max_push_constants_size);
    else if (padded != e->info_size)
        snprintf(also, sizeof also, " (or %u, padded as in C)", padded);
    return INVALID_ARG("%s: desc->info_size is %u but kernel '%s' declares %u bytes of metadata%s: "
                       "%s (std430 offsets, docs/kernels.md)",
                       fn, given, e->name, e->info_size, also, fields);
}

/* A buffer bound as a uniform block: it must hold the block and start where the device allows
 * a uniform buffer to (minUniformBufferOffsetAlignment, which on some devices is larger than the
 * storage alignment that buffers' allocations keep: docs/kernels.md). Past the device's
 * maxUniformBufferRange only the start is bound, which holds the block. */
static cubec_status check_uniform_buffer(cubec_device *d, const char *fn, uint32_t i,
                                         const buffer_obj *b, const pipeline_entry *e)
{
    const kernel_slot *s = &e->refl.slots[i];
    if (b->size < s->block_size)
        return INVALID_ARG("%s: desc->buffers[%u] is %" PRIu64 " bytes, smaller than the uniform "
                           "block of %u bytes that kernel '%s' reads at set %u binding %u",
                           fn, i, b->size, s->block_size, e->name, s->set, s->binding);
    uint64_t align = d->gpu->caps.uniform_offset_alignment;
    uint64_t offset = buffer_device_offset(b);
    if (align && offset % align)
        return INVALID_ARG("%s: desc->buffers[%u] starts at byte %" PRIu64 " of its memory, not a "
                           "multiple of the device's uniform-buffer offset alignment %" PRIu64
                           ": kernel '%s' binds it as the uniform block at set %u binding %u "
                           "(bind a view at an aligned offset)",
                           fn, i, offset, align, e->name, s->set, s->binding);
    return NULL;
}

/* The buffers a launch reaches through device addresses: handles of this device, and writes
 * only among them (cubec_launch checked that they fit beside the bound ones). They are not
 * bound, so neither size limit of a binding applies. */
static cubec_status check_address_buffers(cubec_device *d, const cubec_launch_desc *desc,
                                          buffer_obj **out)
{
    static const char fn[] = "cubec_launch";
    uint32_t n = desc->address_buffer_count;
    if (n && !desc->address_buffers)
        return INVALID_ARG("%s: desc->address_buffers is NULL with address_buffer_count %u", fn, n);
    /* 64-bit shifts: n may be 32. */
    const int reads_past = ((uint64_t)desc->address_reads >> n) != 0;
    if (reads_past || (uint64_t)desc->address_writes >> n)
        return INVALID_ARG("%s: desc->address_%s is 0x%x, which names buffers past "
                           "address_buffer_count %u",
                           fn, reads_past ? "reads" : "writes",
                           reads_past ? desc->address_reads : desc->address_writes, n);
    for (uint32_t i = 0; i < n; i++) {
        out[i] = handle_table_get(&d->buffers->handles, desc->address_buffers[i].id);
        if (!out[i]) { /* only now spend time on the message */
            char arg[64];
            snprintf(arg, sizeof arg, "cubec_launch: desc->address_buffers[%u]", i);
            return api_buffer(d, desc->address_buffers[i], arg, &out[i]);
        }
        if (!(((desc->address_reads | desc->address_writes) >> i) & 1))
            return INVALID_ARG("%s: desc->address_buffers[%u] is neither read nor written: set "
                               "bit %u of desc->address_reads or desc->address_writes",
                               fn, i, i);
    }
    return NULL;
}

/* `k` has its entry, or (entry NULL) did not compile in the queue: then only the buffers are
 * checked, the interface being unknown. */
static cubec_status check_launch(cubec_device *d, const cubec_launch_desc *desc,
                                 const kernel_obj *k, launch_args *a, buffer_obj **bufs)
{
    static const char fn[] = "cubec_launch";
    const pipeline_entry *e = k->entry;
    a->entry = e;
    a->name = k->name;
    /* More buffers than the module's layout takes are fine: they are not bound (a caller's
     * layout may be a superset of what an optimizer left, docs/kernels.md). */
    if (e && desc->buffer_count < e->refl.binding_count)
        return INVALID_ARG("%s: desc->buffer_count is %u but kernel '%s' takes %u buffers (its "
                           "bindings, gaps included, docs/kernels.md \"Bringing existing "
                           "shaders\")",
                           fn, desc->buffer_count, e->name, e->refl.binding_count);
    if (desc->buffer_count && !desc->buffers)
        return INVALID_ARG("%s: desc->buffers is NULL with buffer_count %u", fn,
                           desc->buffer_count);
    if ((uint64_t)desc->declared_outputs >> desc->buffer_count)
        return INVALID_ARG("%s: desc->declared_outputs is 0x%x, which names buffers past "
                           "buffer_count %u",
                           fn, desc->declared_outputs, desc->buffer_count);
    if (e && desc->info_size != e->info_size && desc->info_size != padded_info_size(e) &&
        !push_range_fits(d, e, desc->info_size))
        return info_size_mismatch(d, fn, desc->info_size, e);
    if (desc->info_size && !desc->info)
        return INVALID_ARG("%s: desc->info is NULL with info_size %u", fn, desc->info_size);
    for (uint32_t i = 0; i < desc->buffer_count; i++) {
        bufs[i] = handle_table_get(&d->buffers->handles, desc->buffers[i].id);
        if (!bufs[i]) { /* only now spend time on the message */
            char arg[64];
            snprintf(arg, sizeof arg, "cubec_launch: desc->buffers[%u]", i);
            return api_buffer(d, desc->buffers[i], arg, &bufs[i]);
        }
        if (bufs[i]->size == 0)
            return INVALID_ARG("%s: desc->buffers[%u] has size 0 and cannot be bound", fn, i);
        if (e && i < e->refl.binding_count && e->refl.slots[i].kind == KERNEL_SLOT_UNIFORM) {
            RETURN_IF_ERROR(check_uniform_buffer(d, fn, i, bufs[i], e));
            continue;
        }
        if (bufs[i]->size > d->info.max_storage_buffer_range)
            return INVALID_ARG("%s: desc->buffers[%u] is %" PRIu64
                               " bytes, more than the device's max_storage_buffer_range %" PRIu64
                               " (bind views of it)",
                               fn, i, bufs[i]->size, d->info.max_storage_buffer_range);
    }
    RETURN_IF_ERROR(check_address_buffers(d, desc, bufs + desc->buffer_count));
    /* Images after the buffers reached by address: a task's last ranges are its images. */
    if (e)
        RETURN_IF_ERROR(api_launch_resources(
            d, desc, e, bufs + desc->buffer_count + desc->address_buffer_count, a));
    a->buffers = bufs;
    a->buffer_count = desc->buffer_count;
    a->address_count = desc->address_buffer_count;
    a->address_reads = desc->address_reads;
    a->address_writes = desc->address_writes;
    a->info = desc->info;
    if (desc->indirect.id) {
        RETURN_IF_ERROR(
            api_buffer(d, desc->indirect, "cubec_launch: desc->indirect", &a->indirect));
        if (desc->indirect_offset % 4)
            return INVALID_ARG("%s: desc->indirect_offset %" PRIu64 " is not a multiple of 4", fn,
                               desc->indirect_offset);
        RETURN_IF_ERROR(
            api_range(fn, "desc->indirect", desc->indirect_offset, 12, a->indirect->size));
        a->indirect_offset = desc->indirect_offset;
    } else {
        for (int i = 0; i < 3; i++) {
            if (desc->groups[i] > d->info.max_workgroup_count[i])
                return INVALID_ARG("%s: desc->groups[%d] = %u exceeds the device limit %u", fn, i,
                                   desc->groups[i], d->info.max_workgroup_count[i]);
            a->groups[i] = desc->groups[i];
        }
    }
    return NULL;
}

cubec_status cubec_launch(cubec_device *device, cubec_stream stream, const cubec_launch_desc *user)
{
    if (!user) return INVALID_ARG("cubec_launch: desc is NULL");
    /* The hot path: a desc of this library's size is read where it is; an older caller's is
     * copied into a whole one first. */
    const cubec_launch_desc *desc = user;
    cubec_launch_desc whole;
    if (user->struct_size != sizeof whole) {
        RETURN_IF_ERROR(API_STRUCT_CHECK(user, cubec_launch_desc, CUBEC_LAUNCH_DESC_INIT,
                                         "cubec_launch", "desc"));
        api_struct_read(user, &whole, sizeof whole);
        desc = &whole;
    }
    if (desc->buffer_count > 32)
        return INVALID_ARG("cubec_launch: desc->buffer_count %u is more than 32",
                           desc->buffer_count);
    /* One task holds both kinds, and its masks have 32 bits. */
    if (desc->address_buffer_count > 32 - desc->buffer_count)
        return INVALID_ARG("cubec_launch: desc->buffer_count %u plus desc->address_buffer_count "
                           "%u is more than 32",
                           desc->buffer_count, desc->address_buffer_count);
    RETURN_IF_ERROR(api_lock(device, "cubec_launch"));
    buffer_obj *bufs[32 + KERNEL_MAX_RESOURCES];
    launch_args a = {0};
    stream_ref s;
    /* The kernel first: a queued one still compiling is waited for (the device lock is released
     * meanwhile), before anything else is resolved. */
    kernel_obj *k;
    cubec_status err =
        compile_queue_resolve(device, desc->kernel.id, "cubec_launch: desc->kernel", &k);
    if (!err) err = api_slot(device, stream, "cubec_launch", &s);
    if (!err) err = check_launch(device, desc, k, &a, bufs);
    if (!err && server_run_dry(device, s)) {
        /* Checked, its kernel built: dropped. A kernel that did not build taints nothing in a
         * dry run, so its error comes back here rather than being lost. */
        server_run_drop_launch(device);
        if (!k->entry) err = compile_queue_fail_launch(device, s, k, bufs, desc->buffer_count, 0);
        return api_unlock(device, err);
    }
    if (!err && k->entry) err = server_launch(device, s, &a);
    /* The address buffers it writes are declared outputs too: they follow the bound ones. */
    if (!err && !k->entry)
        err = compile_queue_fail_launch(
            device, s, k, bufs, desc->buffer_count + desc->address_buffer_count,
            desc->declared_outputs |
                (uint32_t)((uint64_t)desc->address_writes << desc->buffer_count));
    return api_unlock(device, err);
}
