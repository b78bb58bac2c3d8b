/* The Vulkan backend of the GPU seam (gpu/gpu.h): memory, pipelines, command buffers, queries and
 * submission on one timeline semaphore. Instance and device choice are in vk_context.c, the
 * encoding of the seam's command list in vk_command_list.c and vk_record.c. This directory is the
 * only place in src/ that calls Vulkan.
 */
#include "gpu/vulkan/vk_gpu.h"

#include "base/log.h"
#include "gpu/vulkan/vk_device_fault.h"
#include "gpu/vulkan/vk_external.h"
#include "gpu/vulkan/vk_matrix_shapes.h"
#include "gpu/vulkan/vk_pipeline_cache.h"
#include "gpu/vulkan/vk_result.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- Memory ------------------------------------------------------------------------------- */

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static uint32_t memory_type(const vk_gpu *v, gpu_mem_kind kind)
{
    switch (kind) {
    case GPU_MEM_DEVICE: return v->vk.device_memory_type;
    case GPU_MEM_UPLOAD: return v->vk.upload_memory_type;
    case GPU_MEM_READBACK: return v->vk.readback_memory_type;
    case GPU_MEM_HOST: return v->vk.host_memory_type;
    case GPU_MEM_METADATA: return v->vk.metadata_memory_type;
    case GPU_MEM_IMPORTED: break; /* chosen per pointer (vk_mem_import_host) */
    }
    return v->vk.upload_memory_type;
}

/* The VkBuffer of a page, without memory: a dry run's page has an identity (and a place in its
 * pool) before any device memory is spent on it (vk_mem_back). */
static cubec_status vk_mem_create_unbacked_kind(gpu *g, gpu_mem_kind kind, uint64_t size,
                                                gpu_mem **out)
{
    vk_gpu *v = vk_gpu_of(g);
    vk_mem *m = calloc(1, sizeof *m);
    if (!m) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (memory record)");
    m->base.size = size;
    m->base.kind = kind;
    m->base.unbacked = 1;
    /* Pages have a device address where the device offers one (cubec_buffer_raw). */
    int device_address = kind == GPU_MEM_DEVICE && v->vk.buffer_device_address;
    /* Device pages may be bound as uniform buffers too: a module's uniform block takes a launch
     * buffer like a storage block does (docs/kernels.md, "Bringing existing shaders"). */
    VkBufferUsageFlags usage = kind == GPU_MEM_DEVICE ? vk_page_usage(device_address)
                               : kind == GPU_MEM_METADATA
                                   ? vk_page_usage(0)
                                   : vk_page_usage(0) & ~VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT;
    /* Any buffer may be bound as a texel buffer (docs/images.md) where the device has a format
     * for it: a view's format then needs the features of both usages (vk_images_init).
     * Exported and imported pages (vk_external.c) keep vk_page_usage alone. */
    m->texel_usage = v->base.caps.texel_formats != 0;
    if (m->texel_usage)
        usage |=
            VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = usage,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    cubec_status err =
        vk_status(vkCreateBuffer(v->vk.device, &bci, NULL, &m->buffer), "vkCreateBuffer");
    if (err) {
        free(m);
        return err;
    }
    *out = &m->base;
    return NULL;
}

static cubec_status vk_mem_create_unbacked(gpu *g, uint64_t size, gpu_mem **out)
{
    return vk_mem_create_unbacked_kind(g, GPU_MEM_DEVICE, size, out);
}

/* Allocates and binds the memory of a buffer made by vk_mem_create_unbacked_kind. On error the
 * buffer stays unbacked and usable for another try. */
static cubec_status vk_mem_back(gpu *g, gpu_mem *gm)
{
    if (!gm) return INVALID_ARG("vk mem_back: mem is NULL");
    vk_gpu *v = vk_gpu_of(g);
    VkDevice dev = v->vk.device;
    vk_mem *m = (vk_mem *)gm;
    uint32_t type = memory_type(v, gm->kind);
    m->coherent =
        (v->vk.memory.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    VkMemoryRequirements req = {0};
    vkGetBufferMemoryRequirements(dev, m->buffer, &req);
    if (!(req.memoryTypeBits & (1u << type)))
        return status_make(CUBEC_UNSUPPORTED, "memory type %u not allowed for buffers", type);
    int device_address = gm->kind == GPU_MEM_DEVICE && v->vk.buffer_device_address;
    VkMemoryAllocateFlagsInfo flags = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                       .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .pNext = device_address ? &flags : NULL,
                                .allocationSize = req.size,
                                .memoryTypeIndex = type};
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkResult r = vkAllocateMemory(dev, &mai, NULL, &memory);
    if ((r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) &&
        vk_reaper_pending(&v->reaper)) {
        /* Pages on their way back hold memory the driver still counts: wait for them. */
        vk_reaper_drain(&v->reaper);
        r = vkAllocateMemory(dev, &mai, NULL, &memory);
    }
    if (r != VK_SUCCESS)
        return status_make(r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
                               ? CUBEC_OUT_OF_MEMORY
                               : CUBEC_INTERNAL,
                           "vkAllocateMemory of %" PRIu64 " bytes: %s", gm->size,
                           vk_result_name(r));
    cubec_status err =
        vk_status(vkBindBufferMemory(dev, m->buffer, memory, 0), "vkBindBufferMemory");
    if (err) {
        vkFreeMemory(dev, memory, NULL);
        return err;
    }
    m->memory = memory;
    m->memory_type = type;
    gm->unbacked = 0;
    return NULL;
}

static cubec_status vk_mem_create(gpu *g, gpu_mem_kind kind, uint64_t size, gpu_mem **out)
{
    gpu_mem *m = NULL;
    RETURN_IF_ERROR(vk_mem_create_unbacked_kind(g, kind, size, &m));
    if (!m) return status_make(CUBEC_INTERNAL, "vk mem_create: no buffer record");
    cubec_status err = vk_mem_back(g, m);
    if (err) {
        vkDestroyBuffer(vk_gpu_of(g)->vk.device, ((vk_mem *)m)->buffer, NULL);
        free(m);
        return err;
    }
    *out = m;
    return NULL;
}

static void vk_mem_raw(gpu *g, gpu_mem *gm, uint64_t *out_handle, uint64_t *out_address)
{
    vk_mem *m = (vk_mem *)gm;
    vk_gpu *v = vk_gpu_of(g);
    *out_handle = (uint64_t)m->buffer;
    *out_address = 0;
    if (v->vk.buffer_device_address && gm->kind == GPU_MEM_DEVICE) {
        VkBufferDeviceAddressInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
                                          .buffer = m->buffer};
        *out_address = vkGetBufferDeviceAddress(v->vk.device, &info);
    }
}

static cubec_status vk_mem_map(gpu *g, gpu_mem *gm)
{
    vk_mem *m = (vk_mem *)gm;
    if (gm->mapped) return NULL;
    void *p = NULL;
    VK_RETURN_IF_ERROR(vkMapMemory(vk_gpu_of(g)->vk.device, m->memory, 0, VK_WHOLE_SIZE, 0, &p),
                       "vkMapMemory");
    gm->mapped = p;
    gm->noncoherent = !m->coherent;
    return NULL;
}

/* [offset, +size) widened to whole nonCoherentAtomSize units, as vkFlush/InvalidateMappedMemory-
 * Ranges require; VK_WHOLE_SIZE when the widened end passes the buffer (the allocation may be
 * larger than the buffer, never smaller). */
static VkMappedMemoryRange atom_range(const vk_gpu *v, const vk_mem *m, uint64_t offset,
                                      uint64_t size)
{
    uint64_t atom =
        v->vk.props.limits.nonCoherentAtomSize ? v->vk.props.limits.nonCoherentAtomSize : 1;
    uint64_t begin = offset / atom * atom;
    uint64_t end = (offset + size + atom - 1) / atom * atom;
    return (VkMappedMemoryRange){.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                 .memory = m->memory,
                                 .offset = begin,
                                 .size = end > m->base.size ? VK_WHOLE_SIZE : end - begin};
}

/* Only for memory that is not HOST_COHERENT (gpu_mem_flush tests mem->noncoherent first). */
static void vk_mem_flush(gpu *g, gpu_mem *gm, uint64_t offset, uint64_t size)
{
    vk_gpu *v = vk_gpu_of(g);
    VkMappedMemoryRange range = atom_range(v, (vk_mem *)gm, offset, size);
    /* Void: a flush fails only when the host is out of memory, and then the bytes the device
     * reads are what a failed flush left, as with any lost write. */
    (void)vkFlushMappedMemoryRanges(v->vk.device, 1, &range);
}

static void vk_mem_invalidate(gpu *g, gpu_mem *gm, uint64_t offset, uint64_t size)
{
    vk_gpu *v = vk_gpu_of(g);
    VkMappedMemoryRange range = atom_range(v, (vk_mem *)gm, offset, size);
    (void)vkInvalidateMappedMemoryRanges(v->vk.device, 1, &range);
}

static void vk_mem_destroy(gpu *g, gpu_mem *gm)
{
    vk_mem *m = (vk_mem *)gm;
    VkDevice dev = vk_gpu_of(g)->vk.device;
    vk_texel_views_destroy(vk_gpu_of(g), m); /* before the buffer they view */
    if (vk_gpu_of(g)->abandoned) {
        free(m);
        return;
    }
    /* A large device page goes back on the reaper's thread: its caller (a relocation, a
     * release) need not wait the driver's ~20 ms per GiB (vk_reaper.h). */
    int mapped = gm->mapped && !m->imported;
    if (m->memory && !m->imported && gm->kind == GPU_MEM_DEVICE &&
        gm->size >= VK_REAPER_MIN_BYTES &&
        vk_reaper_take(&vk_gpu_of(g)->reaper, m->buffer, m->memory, mapped, gm->size)) {
        free(m);
        return;
    }
    vkDestroyBuffer(dev, m->buffer, NULL);
    if (mapped) vkUnmapMemory(dev, m->memory);
    vkFreeMemory(dev, m->memory, NULL);
    free(m);
}

/* The program's memory as a transfer buffer (VK_EXT_external_memory_host). The memory type must
 * be host-coherent: the program reads and writes those bytes through its own pointer, with no
 * flush or invalidate cubec could issue. */
static cubec_status vk_mem_import_host(gpu *g, void *ptr, uint64_t size, gpu_mem **out)
{
    vk_gpu *v = vk_gpu_of(g);
    VkDevice dev = v->vk.device;
    const VkExternalMemoryHandleTypeFlagBits handle =
        VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    VkMemoryHostPointerPropertiesEXT hp = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
    VK_RETURN_IF_ERROR(v->vk.get_host_pointer_properties(dev, handle, ptr, &hp),
                       "vkGetMemoryHostPointerPropertiesEXT");
    vk_mem *m = calloc(1, sizeof *m);
    if (!m) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (memory record)");
    m->base.size = size;
    m->base.kind = GPU_MEM_IMPORTED;
    m->imported = 1;
    m->coherent = 1;
    VkExternalMemoryBufferCreateInfo ebci = {
        .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO, .handleTypes = handle};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .pNext = &ebci,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    cubec_status err = vk_status(vkCreateBuffer(dev, &bci, NULL, &m->buffer), "vkCreateBuffer");
    uint32_t type = UINT32_MAX;
    if (!err) {
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(dev, m->buffer, &req);
        type = vk_find_memory_type(&v->vk, hp.memoryTypeBits & req.memoryTypeBits,
                                   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                   VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
        if (type == UINT32_MAX)
            err = status_make(CUBEC_UNSUPPORTED,
                              "the device imports host memory only as non-coherent memory "
                              "(memory type bits 0x%x)",
                              hp.memoryTypeBits);
    }
    if (!err) {
        VkImportMemoryHostPointerInfoEXT import = {
            .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
            .handleType = handle,
            .pHostPointer = ptr};
        VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                    .pNext = &import,
                                    .allocationSize = size,
                                    .memoryTypeIndex = type};
        err = vk_status(vkAllocateMemory(dev, &mai, NULL, &m->memory),
                        "vkAllocateMemory (importing host memory)");
    }
    if (!err)
        err = vk_status(vkBindBufferMemory(dev, m->buffer, m->memory, 0), "vkBindBufferMemory");
    if (err) {
        if (m->buffer) vkDestroyBuffer(dev, m->buffer, NULL);
        if (m->memory) vkFreeMemory(dev, m->memory, NULL);
        free(m);
        return err;
    }
    m->base.mapped = ptr;
    *out = &m->base;
    return NULL;
}

/* --- Pipelines ---------------------------------------------------------------------------- */

static void vk_pipeline_destroy(gpu *g, gpu_pipeline *p)
{
    if (!p) return;
    VkDevice dev = vk_gpu_of(g)->vk.device;
    if (vk_gpu_of(g)->abandoned) {
        free(p);
        return;
    }
    if (p->pipeline) vkDestroyPipeline(dev, p->pipeline, NULL);
    if (p->layout) vkDestroyPipelineLayout(dev, p->layout, NULL);
    for (uint32_t i = 0; i < GPU_MAX_SETS; i++)
        if (p->set_layouts[i]) vkDestroyDescriptorSetLayout(dev, p->set_layouts[i], NULL);
    if (p->module) vkDestroyShaderModule(dev, p->module, NULL);
    free(p);
}

/* The bind positions of `desc`: its slots, or storage buffers at set 0 bindings 0..n-1. */
static cubec_status pipeline_slots(const gpu_pipeline_desc *desc, gpu_pipeline *p)
{
    if (desc->binding_count > GPU_MAX_BINDINGS - 1 || desc->set_count > GPU_MAX_SETS)
        return status_make(CUBEC_INTERNAL,
                           "kernel '%s': %u bindings in %u sets, more than %d in %d",
                           desc->name ? desc->name : "(unnamed)", desc->binding_count,
                           desc->set_count, GPU_MAX_BINDINGS - 1, GPU_MAX_SETS);
    p->slot_count = desc->binding_count;
    p->set_count = desc->set_count ? desc->set_count : 1;
    for (uint32_t i = 0; i < desc->binding_count; i++)
        p->slots[i] = desc->slots ? desc->slots[i] : (gpu_slot){GPU_SLOT_STORAGE, 0, (uint8_t)i};
    return NULL;
}

/* The descriptor set layouts and the pipeline layout: the module's bindings as written. */
static cubec_status build_layout(vk_gpu *v, const gpu_pipeline_desc *desc, gpu_pipeline *p)
{
    VkDevice dev = v->vk.device;
    RETURN_IF_ERROR(pipeline_slots(desc, p));
    p->info_uniform = desc->info_buffer && desc->info_uniform;
    for (uint32_t set = 0; set < p->set_count; set++) {
        VkDescriptorSetLayoutBinding b[GPU_MAX_BINDINGS + GPU_MAX_RESOURCES];
        uint32_t n = 0;
        for (uint32_t i = 0; i < p->slot_count; i++) {
            const gpu_slot *s = &p->slots[i];
            if (s->kind == GPU_SLOT_UNUSED || s->set != set) continue;
            b[n++] = (VkDescriptorSetLayoutBinding){
                .binding = s->binding,
                .descriptorType = s->kind == GPU_SLOT_UNIFORM ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                                              : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                .descriptorCount = 1,
                .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
        }
        for (uint32_t i = 0; i < desc->resource_count && i < GPU_MAX_RESOURCES; i++)
            if (desc->resources[i].set == set)
                b[n++] = (VkDescriptorSetLayoutBinding){
                    .binding = desc->resources[i].binding,
                    .descriptorType = vk_descriptor_type(desc->resources[i].type),
                    .descriptorCount = 1,
                    .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
        if (set == 0 && desc->info_buffer)
            b[n++] = (VkDescriptorSetLayoutBinding){
                .binding = GPU_INFO_BINDING,
                .descriptorType = p->info_uniform ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                                  : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                .descriptorCount = 1,
                .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
        VkDescriptorSetLayoutCreateInfo dslci = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
            .flags = set == 0 && v->base.caps.push_descriptors
                         ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR
                         : 0,
            .bindingCount = n,
            .pBindings = b};
        VK_RETURN_IF_ERROR(vkCreateDescriptorSetLayout(dev, &dslci, NULL, &p->set_layouts[set]),
                           "vkCreateDescriptorSetLayout");
    }
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, desc->push_size};
    VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                       .setLayoutCount = p->set_count,
                                       .pSetLayouts = p->set_layouts,
                                       .pushConstantRangeCount = pcr.size ? 1 : 0,
                                       .pPushConstantRanges = &pcr};
    VK_RETURN_IF_ERROR(vkCreatePipelineLayout(dev, &plci, NULL, &p->layout),
                       "vkCreatePipelineLayout");
    return NULL;
}

static cubec_status build_pipeline(vk_gpu *v, const gpu_pipeline_desc *desc, gpu_pipeline *p)
{
    VkDevice dev = v->vk.device;
    /* The server asks for a subgroup size only where caps.required_subgroup_size says it can. */
    if (desc->required_subgroup_size && !v->vk.required_subgroup_size)
        return status_make(CUBEC_INTERNAL,
                           "kernel '%s': a required subgroup size of %u on a device without "
                           "subgroup size control for compute shaders",
                           desc->name ? desc->name : "(unnamed)", desc->required_subgroup_size);
    VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                     .codeSize = desc->words * 4,
                                     .pCode = desc->spirv};
    VK_RETURN_IF_ERROR(vkCreateShaderModule(dev, &smci, NULL, &p->module), "vkCreateShaderModule");
    RETURN_IF_ERROR(build_layout(v, desc, p));
    VkSpecializationMapEntry entries[GPU_MAX_SPEC_CONSTANTS];
    uint32_t values[GPU_MAX_SPEC_CONSTANTS];
    uint32_t spec_count =
        desc->spec_count < GPU_MAX_SPEC_CONSTANTS ? desc->spec_count : GPU_MAX_SPEC_CONSTANTS;
    for (uint32_t i = 0; i < spec_count; i++) {
        entries[i] = (VkSpecializationMapEntry){desc->spec[i].id, i * 4u, 4};
        values[i] = desc->spec[i].value;
    }
    VkSpecializationInfo spec = {spec_count, entries, (size_t)spec_count * sizeof values[0],
                                 values};
    /* A required subgroup size, without REQUIRE_FULL_SUBGROUPS: the workgroup size need not be a
     * multiple of it (the server checked it against the device's range and
     * maxComputeWorkgroupSubgroups). */
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfoEXT required = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO_EXT,
        .requiredSubgroupSize = desc->required_subgroup_size};
    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .pNext = desc->required_subgroup_size ? &required : NULL,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = p->module,
                  .pName = desc->entry_point,
                  .pSpecializationInfo = spec_count ? &spec : NULL},
        .layout = p->layout};
    VkPipelineCache cache = vk_pipeline_cache_take(v);
    VkResult r = vkCreateComputePipelines(dev, cache, 1, &cpci, NULL, &p->pipeline);
    vk_pipeline_cache_give(v, cache);
    VK_RETURN_IF_ERROR(r, "vkCreateComputePipelines");
    return NULL;
}

static cubec_status vk_pipeline_create(gpu *g, const gpu_pipeline_desc *desc, gpu_pipeline **out)
{
    gpu_pipeline *p = calloc(1, sizeof *p);
    if (!p) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (pipeline)");
    cubec_status err = build_pipeline(vk_gpu_of(g), desc, p);
    if (err) {
        vk_pipeline_destroy(g, p);
        return err;
    }
    *out = p;
    return NULL;
}

/* --- Command buffers ---------------------------------------------------------------------- */

static void vk_cmd_destroy(gpu *g, gpu_cmd *cmd)
{
    if (!cmd) return;
    vk_cmd *c = (vk_cmd *)cmd;
    VkDevice dev = vk_gpu_of(g)->vk.device;
    int keep = vk_gpu_of(g)->abandoned;
    for (uint32_t i = 0; !keep && i < c->descriptor_pool_count; i++)
        vkDestroyDescriptorPool(dev, c->descriptor_pools[i], NULL);
    free(c->descriptor_pools);
    gpu_cmd_list_free(&c->base);
    if (c->pool && !keep) vkDestroyCommandPool(dev, c->pool, NULL);
    free(c);
}

static cubec_status vk_cmd_create(gpu *g, gpu_cmd_use use, uint32_t sets, gpu_cmd **out)
{
    vk_gpu *v = vk_gpu_of(g);
    vk_cmd *c = calloc(1, sizeof *c);
    if (!c) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (command buffer)");
    c->g = v;
    c->sets = sets ? sets : 256;
    /* A pool per command buffer: reusing a batch resets the whole pool at once, which drivers make
     * cheaper than resetting command buffers one by one; a graph's copies recorded side by side
     * from one pool would interleave their memory, and a driver walks every chunk of a command
     * buffer when it is submitted. */
    VkCommandPoolCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = use == GPU_CMD_ONCE ? VK_COMMAND_POOL_CREATE_TRANSIENT_BIT : 0,
        .queueFamilyIndex = v->vk.queue_family};
    cubec_status err =
        vk_status(vkCreateCommandPool(v->vk.device, &pci, NULL, &c->pool), "vkCreateCommandPool");
    if (!err) {
        VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = c->pool,
                                          .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          .commandBufferCount = 1};
        err = vk_status(vkAllocateCommandBuffers(v->vk.device, &ai, &c->cmd),
                        "vkAllocateCommandBuffers");
    }
    if (err) {
        vk_cmd_destroy(g, &c->base);
        return err;
    }
    c->once = use == GPU_CMD_ONCE;
    *out = &c->base;
    return NULL;
}

/* Beginning and ending record nothing into Vulkan: the list is encoded when a batch is submitted
 * (vk_submit) or when a graph's recording ends. */
static cubec_status vk_cmd_begin(gpu *g, gpu_cmd *c)
{
    (void)g;
    gpu_cmd_list_reset(c);
    ((vk_cmd *)c)->encoded = 0;
    return NULL;
}

static cubec_status vk_cmd_end(gpu *g, gpu_cmd *c)
{
    (void)g;
    RETURN_IF_ERROR(gpu_cmd_list_status(c));
    vk_cmd *v = (vk_cmd *)c;
    return v->once ? NULL : vk_list_encode(v);
}

/* Resets a finished recording's pool while the host waits anyway, so that encoding the next batch
 * finds a clean pool (a reset frees every command the driver recorded: 6-8 us on lavapipe, as
 * much as recording the 32 launches of a batch). */
static void vk_cmd_recycle(gpu *g, gpu_cmd *cmd)
{
    vk_cmd *c = (vk_cmd *)cmd;
    if (c->recorded && vkResetCommandPool(vk_gpu_of(g)->vk.device, c->pool, 0) == VK_SUCCESS)
        c->recorded = 0;
}

/* --- Queries ------------------------------------------------------------------------------ */

static cubec_status vk_queries_create(gpu *g, uint32_t count, gpu_queries **out)
{
    gpu_queries *q = calloc(1, sizeof *q);
    if (!q) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (queries)");
    VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                 .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                 .queryCount = count};
    VkResult r = vkCreateQueryPool(vk_gpu_of(g)->vk.device, &qci, NULL, &q->pool);
    if (r != VK_SUCCESS) {
        free(q);
        return vk_status(r, "vkCreateQueryPool");
    }
    *out = q;
    return NULL;
}

static void vk_queries_destroy(gpu *g, gpu_queries *q)
{
    if (!q) return;
    if (!vk_gpu_of(g)->abandoned) vkDestroyQueryPool(vk_gpu_of(g)->vk.device, q->pool, NULL);
    free(q);
}

static void vk_queries_host_reset(gpu *g, gpu_queries *q, uint32_t first, uint32_t count)
{
    vkResetQueryPool(vk_gpu_of(g)->vk.device, q->pool, first, count);
}

static cubec_status vk_queries_read(gpu *g, gpu_queries *q, uint32_t first, uint32_t count,
                                    uint64_t *out_ticks)
{
    VK_RETURN_IF_ERROR(vkGetQueryPoolResults(vk_gpu_of(g)->vk.device, q->pool, first, count,
                                             count * sizeof *out_ticks, out_ticks,
                                             sizeof *out_ticks, VK_QUERY_RESULT_64_BIT),
                       "vkGetQueryPoolResults");
    return NULL;
}

/* --- Submission and the timeline ---------------------------------------------------------- */

/* The status of a submit or wait: a lost device's carries the driver's fault report. */
static cubec_status lost_or(vk_gpu *v, VkResult r, const char *what)
{
    return vk_device_fault_annotate(v->vk.device, v->vk.get_device_fault_info, vk_status(r, what));
}

static cubec_status vk_submit(gpu *g, const gpu_submit_item *items, uint32_t n)
{
    vk_gpu *v = vk_gpu_of(g);
    VkTimelineSemaphoreSubmitInfo ts[GPU_SUBMIT_MAX_ITEMS];
    VkSubmitInfo si[GPU_SUBMIT_MAX_ITEMS];
    if (n > GPU_SUBMIT_MAX_ITEMS)
        return status_make(CUBEC_INTERNAL, "%u command buffers in one submission", n);
    /* A batch is encoded here, on the thread that submits it; nothing is submitted if one fails. */
    for (uint32_t i = 0; i < n; i++)
        RETURN_IF_ERROR(vk_list_encode((vk_cmd *)items[i].cmd));
    /* A wait on the inbound timeline holds this batch's commands and, by submission order,
     * every later batch's (a semaphore wait's second scope), at every stage cubec records. */
    static const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    for (uint32_t i = 0; i < n; i++) {
        int waits = items[i].inbound_wait != 0;
        ts[i] = (VkTimelineSemaphoreSubmitInfo){
            .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
            .waitSemaphoreValueCount = waits ? 1 : 0,
            .pWaitSemaphoreValues = waits ? &items[i].inbound_wait : NULL,
            .signalSemaphoreValueCount = 1,
            .pSignalSemaphoreValues = &items[i].signal};
        si[i] = (VkSubmitInfo){.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                               .pNext = &ts[i],
                               .waitSemaphoreCount = waits ? 1 : 0,
                               .pWaitSemaphores = waits ? &v->inbound : NULL,
                               .pWaitDstStageMask = waits ? &wait_stage : NULL,
                               .commandBufferCount = 1,
                               .pCommandBuffers = &((vk_cmd *)items[i].cmd)->cmd,
                               .signalSemaphoreCount = 1,
                               .pSignalSemaphores = &v->timeline};
    }
    return lost_or(v, vkQueueSubmit(v->vk.queue, n, si, VK_NULL_HANDLE), "vkQueueSubmit");
}

static cubec_status vk_timeline_value(gpu *g, uint64_t *out)
{
    vk_gpu *v = vk_gpu_of(g);
    return lost_or(v, vkGetSemaphoreCounterValue(v->vk.device, v->timeline, out),
                   "vkGetSemaphoreCounterValue");
}

static cubec_status vk_timeline_wait(gpu *g, uint64_t value, uint64_t timeout_ns)
{
    vk_gpu *v = vk_gpu_of(g);
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1,
                              .pSemaphores = &v->timeline,
                              .pValues = &value};
    VkResult r = vkWaitSemaphores(v->vk.device, &wi, timeout_ns ? timeout_ns : UINT64_MAX);
    if (r == VK_TIMEOUT)
        return status_make(CUBEC_TIMEOUT, "vkWaitSemaphores: value %" PRIu64 " not reached", value);
    return lost_or(v, r, "vkWaitSemaphores");
}

static cubec_status vk_timeline_signal(gpu *g, uint64_t value)
{
    vk_gpu *v = vk_gpu_of(g);
    /* Through the queue, as every other value is signalled: a host signal racing a wait or a
     * poll on another thread made Debian 12's validation layer stall 10 s and report
     * UNASSIGNED-VkSemaphore-state-timeout (a layer bug, Vulkan-ValidationLayers 4649 / 8519),
     * seen in the fault sweeps after a batch failed on the submission thread. The host signals
     * only when the queue takes nothing more (a lost device). */
    VkTimelineSemaphoreSubmitInfo ts = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                        .signalSemaphoreValueCount = 1,
                                        .pSignalSemaphoreValues = &value};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .pNext = &ts,
                       .signalSemaphoreCount = 1,
                       .pSignalSemaphores = &v->timeline};
    if (!v->abandoned && vkQueueSubmit(v->vk.queue, 1, &si, VK_NULL_HANDLE) == VK_SUCCESS)
        return NULL;
    VkSemaphoreSignalInfo sig = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = v->timeline, .value = value};
    VK_RETURN_IF_ERROR(vkSignalSemaphore(v->vk.device, &sig), "vkSignalSemaphore");
    return NULL;
}

static cubec_status vk_inbound_signal(gpu *g, uint64_t value)
{
    vk_gpu *v = vk_gpu_of(g);
    VkSemaphoreSignalInfo sig = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = v->inbound, .value = value};
    VK_RETURN_IF_ERROR(vkSignalSemaphore(v->vk.device, &sig), "vkSignalSemaphore(inbound)");
    return NULL;
}

static void vk_queue_idle(gpu *g)
{
    if (!vk_gpu_of(g)->abandoned) vkQueueWaitIdle(vk_gpu_of(g)->vk.queue);
}

static void vk_abandon(gpu *g)
{
    vk_gpu_of(g)->abandoned = 1;
}

static int vk_calibrate(gpu *g, uint64_t *out_ticks, uint64_t *out_host_ns)
{
    vk_gpu *v = vk_gpu_of(g);
    if (!v->vk.get_calibrated_timestamps) return 0;
    VkCalibratedTimestampInfoEXT info[2] = {
        {.sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT,
         .timeDomain = VK_TIME_DOMAIN_DEVICE_EXT},
        {.sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT,
         .timeDomain = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT}};
    uint64_t stamps[2], deviation;
    if (v->vk.get_calibrated_timestamps(v->vk.device, 2, info, stamps, &deviation) != VK_SUCCESS)
        return 0;
    *out_ticks = stamps[0];
    *out_host_ns = stamps[1];
    return 1;
}

/* --- The device --------------------------------------------------------------------------- */

static void vk_gpu_destroy(gpu *g)
{
    vk_gpu *v = vk_gpu_of(g);
    /* Pages handed to the reaper were finished with: they go back even from an abandoned
     * device, and the thread must be gone before its record is. */
    vk_reaper_destroy(&v->reaper);
    if (v->abandoned) {
        /* The device, its queue and the instance stay alive for the GPU that may still run. */
        vk_pipeline_cache_abandon(v);
        free(v);
        return;
    }
    if (v->vk.device) {
        vkDeviceWaitIdle(v->vk.device);
        vk_pipeline_cache_destroy(v);
        if (v->timeline) vkDestroySemaphore(v->vk.device, v->timeline, NULL);
        if (v->inbound) vkDestroySemaphore(v->vk.device, v->inbound, NULL);
        for (int i = 0; i < 6; i++)
            if (v->samplers[i]) vkDestroySampler(v->vk.device, v->samplers[i], NULL);
    }
    if (v->views_lock_ready) pthread_mutex_destroy(&v->views_lock);
    vk_context_destroy(&v->vk);
    free(v);
}

static void vk_memory_budget(gpu *g, gpu_budget *out)
{
    vk_gpu *v = (vk_gpu *)g;
    const vk_context *ctx = &v->vk;
    memset(out, 0, sizeof *out);
    uint32_t heap = ctx->device_memory_type < ctx->memory.memoryTypeCount
                        ? ctx->memory.memoryTypes[ctx->device_memory_type].heapIndex
                        : 0;
    out->budget = ctx->memory.memoryHeaps[heap].size;
    out->source = "heap size";
    /* Pages on the reaper's queue are cubec's no more: the driver counts them until freed. */
    const uint64_t pending = vk_reaper_pending(&v->reaper);
    out->returning = pending;
    if (!ctx->memory_budget) return;
    VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 p2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, .pNext = &b};
    vkGetPhysicalDeviceMemoryProperties2(ctx->physical, &p2);
    out->budget = b.heapBudget[heap];
    out->usage = b.heapUsage[heap] > pending ? b.heapUsage[heap] - pending : 0;
    out->usage_known = 1;
    out->source = "VK_EXT_memory_budget";
}

static void vk_vulkan_handles(gpu *g, cubec_vulkan_handles *out)
{
    const vk_context *ctx = &vk_gpu_of(g)->vk;
    *out = (cubec_vulkan_handles){
        .struct_size = sizeof(cubec_vulkan_handles),
        .instance = (uint64_t)(uintptr_t)ctx->instance,
        .physical_device = (uint64_t)(uintptr_t)ctx->physical,
        .device = (uint64_t)(uintptr_t)ctx->device,
        .api_version = GPU_VULKAN_API_VERSION,
        .queue_family = ctx->queue_family,
        .program_queue = (uint64_t)(uintptr_t)ctx->program_queue,
        .program_queue_index = ctx->program_queue ? 1 : 0,
    };
}

/* One table for every device: constant, so opening devices from several threads shares it safely.
 */
static const gpu_ops vk_ops = {.name = "vulkan",
                               .destroy = vk_gpu_destroy,
                               .mem_create = vk_mem_create,
                               .mem_create_unbacked = vk_mem_create_unbacked,
                               .mem_back = vk_mem_back,
                               .mem_map = vk_mem_map,
                               .mem_flush = vk_mem_flush,
                               .mem_invalidate = vk_mem_invalidate,
                               .mem_destroy = vk_mem_destroy,
                               .mem_raw = vk_mem_raw,
                               .vulkan_handles = vk_vulkan_handles,
                               .image_requirements = vk_image_requirements,
                               .image_create = vk_image_create,
                               .image_destroy = vk_image_destroy,
                               .mem_import_host = vk_mem_import_host,
                               .pipeline_create = vk_pipeline_create,
                               .pipeline_destroy = vk_pipeline_destroy,
                               .cmd_create = vk_cmd_create,
                               .cmd_destroy = vk_cmd_destroy,
                               .cmd_begin = vk_cmd_begin,
                               .cmd_end = vk_cmd_end,
                               .cmd_recycle = vk_cmd_recycle,
                               .queries_create = vk_queries_create,
                               .queries_destroy = vk_queries_destroy,
                               .queries_host_reset = vk_queries_host_reset,
                               .queries_read = vk_queries_read,
                               .submit = vk_submit,
                               .timeline_value = vk_timeline_value,
                               .timeline_wait = vk_timeline_wait,
                               .timeline_signal = vk_timeline_signal,
                               .queue_idle = vk_queue_idle,
                               .abandon = vk_abandon,
                               .calibrate = vk_calibrate,
                               .pipeline_cache_data = vk_pipeline_cache_data,
                               .pipeline_cache_merge = vk_pipeline_cache_merge,
                               .pipeline_cache_enable = vk_pipeline_cache_enable,
                               .memory_budget = vk_memory_budget,
                               .mem_create_exportable = vk_mem_create_exportable,
                               .mem_export = vk_mem_export,
                               .mem_import_fd = vk_mem_import_fd,
                               .timeline_export = vk_timeline_export,
                               .inbound_export = vk_inbound_export,
                               .inbound_signal = vk_inbound_signal};

cubec_status vk_gpu_open(const gpu_open_desc *desc, gpu **out)
{
    vk_gpu *v = calloc(1, sizeof *v);
    if (!v) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (device)");
    vk_context_desc vd = {.select_by_index = desc->select_by_index,
                          .index = desc->index,
                          .name = desc->name,
                          .validation = desc->validation,
                          .force_staging = desc->force_staging,
                          .no_push_descriptors = desc->no_push_descriptors,
                          .robust = desc->robust,
                          .disabled_features = desc->disabled_features,
                          .queue_family = desc->queue_family,
                          .on_validation = desc->on_validation,
                          .on_validation_user = desc->on_validation_user};
    cubec_status err = vk_context_create(&vd, &v->vk);
    if (err) {
        free(v);
        return err;
    }
    vk_reaper_init(&v->reaper, v->vk.device);
    gpu *g = &v->base;
    g->ops = &vk_ops;
    vk_fill_info(v->vk.instance, v->vk.physical, &g->info);
    g->features = v->vk.features;
    g->info.features = v->vk.features.enabled; /* what the device has, less what was disabled */
    vk_matrix_shapes_keep(&g->info, g->info.features);
    /* Without size control for compute kernels (subgroup_size_control turned off, too), a kernel
     * runs with the one size, as cubec_device_peek says of a device that lacks it. */
    v->views_lock_ready = pthread_mutex_init(&v->views_lock, NULL) == 0;
    if (!v->vk.required_subgroup_size)
        g->info.min_subgroup_size = g->info.max_subgroup_size = g->info.subgroup_size;
    g->info.push_descriptors = v->vk.push_descriptor != NULL;
    g->info.unified_memory = v->vk.unified;
    g->info.robust = v->vk.robust;
    vk_pipeline_cache_identity(v->vk.physical, &g->cache_id);
    g->cache_id.robust = v->vk.robust;
    g->caps = (gpu_caps){
        .unified = v->vk.unified,
        .push_descriptors = v->vk.push_descriptor != NULL,
        .timestamps = v->vk.timestamps,
        .timestamp_bits = v->vk.timestamp_bits,
        .host_query_reset = v->vk.host_query_reset,
        .calibrated_clock = v->vk.get_calibrated_timestamps != NULL,
        .physical_index = v->vk.physical_index,
        .deferred_recording = 1,
        .host_import_alignment = v->vk.host_import_alignment,
        .no_host_import = "no VK_EXT_external_memory_host",
        .uniform_info = v->vk.scalar_block_layout,
        .metadata_alignment = max_u64(v->vk.props.limits.minStorageBufferOffsetAlignment,
                                      v->vk.props.limits.minUniformBufferOffsetAlignment),
        .max_uniform_range = v->vk.props.limits.maxUniformBufferRange,
        .uniform_offset_alignment = v->vk.props.limits.minUniformBufferOffsetAlignment,
        .metadata_device_local = v->vk.metadata_device_local,
        .runs_kernels = 1,
        .host_memory = 1,
        .reusable_cmds = 1,
        .required_subgroup_size = v->vk.required_subgroup_size,
        .max_workgroup_subgroups = v->vk.max_workgroup_subgroups,
        .export_memory = v->vk.export_memory,
        .export_timeline = v->vk.export_timeline};
    vk_device_uuid(v->vk.physical, g->caps.device_uuid);
    g->info.external_handles = (v->vk.export_memory ? CUBEC_EXTERNAL_MEMORY_FD : 0) |
                               (v->vk.export_timeline ? CUBEC_EXTERNAL_TIMELINE_FD : 0);
    /* Exportable from its creation where the device can: CUDA then waits on cubec's values. */
    VkExportSemaphoreCreateInfo esci = {.sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
                                        .handleTypes =
                                            VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkSemaphoreTypeCreateInfo tci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .pNext = v->vk.export_timeline ? &esci : NULL,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
                                     .initialValue = 0};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &tci};
    err = vk_status(vkCreateSemaphore(v->vk.device, &sci, NULL, &v->timeline),
                    "vkCreateSemaphore(timeline)");
    if (!err)
        err = vk_status(vkCreateSemaphore(v->vk.device, &sci, NULL, &v->inbound),
                        "vkCreateSemaphore(inbound)");
    if (!err && !v->views_lock_ready)
        err = status_make(CUBEC_INTERNAL, "the texel-buffer views' lock could not be made");
    if (!err) err = vk_images_init(v);
    if (!err) err = vk_pipeline_cache_init(v);
    if (err) {
        vk_gpu_destroy(g);
        return err;
    }
    *out = g;
    return NULL;
}

VkDevice vk_gpu_device(gpu *g)
{
    return vk_gpu_of(g)->vk.device;
}

cubec_status vk_gpu_count(uint32_t *out_count)
{
    return vk_physical_count(out_count);
}

cubec_status vk_gpu_peek(uint32_t index, cubec_device_info *out)
{
    RETURN_IF_ERROR(vk_physical_info(index, out, NULL));
    gpu_caps caps = {0};
    RETURN_IF_ERROR(vk_physical_caps(index, &caps));
    out->capabilities = gpu_capabilities(&caps, &vk_ops);
    return NULL;
}
