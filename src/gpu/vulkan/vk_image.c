/* Images in the Vulkan backend (docs/images.md): the formats cubec names and what the device can
 * do with them, the samplers, the VkImage bound to a range of a device page the server allocated
 * from its pools, its view, and the commands that touch an image (its one layout transition and
 * the copies to and from packed bytes).
 *
 * Why images live in pages: ordering, failures (taint), holds and graphs all key on a range of a
 * page, so an image there is tracked as a buffer is, without a second set of those mechanisms.
 * Why one layout (GENERAL) for an image's whole life: storage, sampling and copies all work in
 * it, so no command needs to know the layout the previous one left (a graph replay cannot know),
 * and the barriers the server records between commands (memory barriers) suffice. */
#include "gpu/vulkan/vk_gpu.h"
#include "gpu/vulkan/vk_result.h"

#include <inttypes.h>
#include <stdlib.h>

/* cubec_image_format -> VkFormat and bytes per texel; index 0 is no format. */
static const struct {
    VkFormat format;
    uint32_t bytes;
} formats[] = {
    {VK_FORMAT_UNDEFINED, 0},
    {VK_FORMAT_R8_UNORM, 1},
    {VK_FORMAT_R8G8B8A8_UNORM, 4},
    {VK_FORMAT_R16_SFLOAT, 2},
    {VK_FORMAT_R16G16B16A16_SFLOAT, 8},
    {VK_FORMAT_R32_SFLOAT, 4},
    {VK_FORMAT_R32G32B32A32_SFLOAT, 16},
    {VK_FORMAT_R32_UINT, 4},
    {VK_FORMAT_R32G32B32A32_UINT, 16},
    {VK_FORMAT_R32_SINT, 4},
};
#define FORMAT_COUNT (sizeof formats / sizeof formats[0])

VkDescriptorType vk_descriptor_type(uint32_t type)
{
    switch ((gpu_resource_type)type) {
    case GPU_RESOURCE_STORAGE_IMAGE: return VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
    case GPU_RESOURCE_SAMPLED_IMAGE: return VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
    case GPU_RESOURCE_UNIFORM_TEXEL_BUFFER: return VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
    case GPU_RESOURCE_STORAGE_TEXEL_BUFFER: return VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER;
    case GPU_RESOURCE_SAMPLED_TEXTURE: return VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE;
    case GPU_RESOURCE_SAMPLER: return VK_DESCRIPTOR_TYPE_SAMPLER;
    }
    return VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
}

VkFormat vk_image_format(uint32_t format)
{
    return format < FORMAT_COUNT ? formats[format].format : VK_FORMAT_UNDEFINED;
}

/* Sampled too where the format can be: an image is made before the kernels that bind it. */
static VkImageUsageFlags sampled_usage(vk_gpu *v, uint32_t format)
{
    VkFormatProperties fp = {0};
    vkGetPhysicalDeviceFormatProperties(v->vk.physical, formats[format].format, &fp);
    return (fp.optimalTilingFeatures & VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT)
               ? VK_IMAGE_USAGE_SAMPLED_BIT
               : 0;
}

static VkImageCreateInfo image_info(vk_gpu *v, const gpu_image_desc *desc)
{
    int three_d = desc->depth > 1;
    return (VkImageCreateInfo){.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                               .imageType = three_d ? VK_IMAGE_TYPE_3D : VK_IMAGE_TYPE_2D,
                               .format = formats[desc->format].format,
                               .extent = {desc->width, desc->height, three_d ? desc->depth : 1},
                               .mipLevels = 1,
                               .arrayLayers = 1,
                               .samples = VK_SAMPLE_COUNT_1_BIT,
                               .tiling = VK_IMAGE_TILING_OPTIMAL,
                               .usage =
                                   VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT |
                                   VK_IMAGE_USAGE_TRANSFER_DST_BIT | sampled_usage(v, desc->format),
                               .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
                               .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED};
}

/* The format exists, the device can store to it, and the extent fits the device's limits. */
static cubec_status check_desc(vk_gpu *v, const gpu_image_desc *desc)
{
    if (desc->format == 0 || desc->format >= FORMAT_COUNT)
        return INVALID_ARG("image format %" PRIu32 " is not a cubec_image_format", desc->format);
    VkFormatProperties fp = {0};
    vkGetPhysicalDeviceFormatProperties(v->vk.physical, formats[desc->format].format, &fp);
    VkFormatFeatureFlags need = VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT |
                                VK_FORMAT_FEATURE_TRANSFER_SRC_BIT |
                                VK_FORMAT_FEATURE_TRANSFER_DST_BIT;
    if ((fp.optimalTilingFeatures & need) != need)
        return status_make(CUBEC_UNSUPPORTED,
                           "image format %" PRIu32 " (VkFormat %d): the device cannot use it as a "
                           "storage image",
                           desc->format, (int)formats[desc->format].format);
    VkImageCreateInfo ici = image_info(v, desc);
    VkImageFormatProperties ip = {0};
    VkResult r = vkGetPhysicalDeviceImageFormatProperties(v->vk.physical, ici.format, ici.imageType,
                                                          ici.tiling, ici.usage, 0, &ip);
    if (r == VK_ERROR_FORMAT_NOT_SUPPORTED)
        return status_make(CUBEC_UNSUPPORTED,
                           "image format %" PRIu32 ": the device has no %s storage image of it",
                           desc->format, desc->depth > 1 ? "3D" : "2D");
    VK_RETURN_IF_ERROR(r, "vkGetPhysicalDeviceImageFormatProperties");
    if (ici.extent.width > ip.maxExtent.width || ici.extent.height > ip.maxExtent.height ||
        ici.extent.depth > ip.maxExtent.depth)
        return INVALID_ARG("image of %" PRIu32 "x%" PRIu32 "x%" PRIu32
                           " texels: the device's largest of this format is %" PRIu32 "x%" PRIu32
                           "x%" PRIu32,
                           ici.extent.width, ici.extent.height, ici.extent.depth,
                           ip.maxExtent.width, ip.maxExtent.height, ip.maxExtent.depth);
    return NULL;
}

cubec_status vk_image_requirements(gpu *g, const gpu_image_desc *desc, uint64_t *out_size,
                                   uint64_t *out_alignment)
{
    vk_gpu *v = vk_gpu_of(g);
    RETURN_IF_ERROR(check_desc(v, desc));
    VkImageCreateInfo ici = image_info(v, desc);
    VkImage image = VK_NULL_HANDLE;
    VK_RETURN_IF_ERROR(vkCreateImage(v->vk.device, &ici, NULL, &image), "vkCreateImage");
    VkMemoryRequirements req = {0};
    vkGetImageMemoryRequirements(v->vk.device, image, &req);
    vkDestroyImage(v->vk.device, image, NULL);
    /* A page also holds buffers: an optimal image keeps bufferImageGranularity away from them
     * on both sides (the alignment covers the start, the rounded size the end). */
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(v->vk.physical, &props);
    uint64_t gran = props.limits.bufferImageGranularity ? props.limits.bufferImageGranularity : 1;
    uint64_t align = req.alignment > gran ? req.alignment : gran;
    *out_size = (req.size + gran - 1) / gran * gran;
    *out_alignment = align;
    return NULL;
}

/* The six samplers (two filters by three address modes), made with the device: normalized
 * coordinates, no mipmaps. */
static cubec_status make_samplers(vk_gpu *v)
{
    static const VkSamplerAddressMode modes[3] = {VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
                                                  VK_SAMPLER_ADDRESS_MODE_REPEAT,
                                                  VK_SAMPLER_ADDRESS_MODE_MIRRORED_REPEAT};
    for (int i = 0; i < 6; i++) {
        if (v->samplers[i]) continue;
        VkFilter f = i % 2 ? VK_FILTER_LINEAR : VK_FILTER_NEAREST;
        VkSamplerAddressMode mode = modes[i / 2];
        VkSamplerCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO,
                                   .magFilter = f,
                                   .minFilter = f,
                                   .mipmapMode = VK_SAMPLER_MIPMAP_MODE_NEAREST,
                                   .addressModeU = mode,
                                   .addressModeV = mode,
                                   .addressModeW = mode,
                                   .maxLod = 0.0f,
                                   .borderColor = VK_BORDER_COLOR_FLOAT_TRANSPARENT_BLACK};
        VK_RETURN_IF_ERROR(vkCreateSampler(v->vk.device, &sci, NULL, &v->samplers[i]),
                           "vkCreateSampler");
    }
    return NULL;
}

/* Which cubec formats have all of `need` in `features` of the device, as bits by format. */
static uint32_t formats_of(VkPhysicalDevice pd, int buffer_features, VkFormatFeatureFlags need)
{
    uint32_t mask = 0;
    for (uint32_t f = 1; f < FORMAT_COUNT; f++) {
        VkFormatProperties fp = {0};
        vkGetPhysicalDeviceFormatProperties(pd, formats[f].format, &fp);
        VkFormatFeatureFlags have = buffer_features ? fp.bufferFeatures : fp.optimalTilingFeatures;
        if ((have & need) == need) mask |= 1u << f;
    }
    return mask;
}

static uint32_t formats_with(vk_gpu *v, int buffer_features, VkFormatFeatureFlags need)
{
    return formats_of(v->vk.physical, buffer_features, need);
}

uint32_t vk_texel_formats(VkPhysicalDevice pd)
{
    return formats_of(pd, 1,
                      VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT |
                          VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT);
}

cubec_status vk_images_init(vk_gpu *v)
{
    gpu_caps *caps = &v->base.caps;
    caps->sampled_formats = formats_with(v, 0, VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT);
    caps->linear_formats = formats_with(v, 0,
                                        VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT |
                                            VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT);
    caps->texel_formats = vk_texel_formats(v->vk.physical);
    caps->max_texel_elements = v->vk.props.limits.maxTexelBufferElements;
    caps->texel_offset_alignment = v->vk.props.limits.minTexelBufferOffsetAlignment;
    return make_samplers(v);
}

cubec_status vk_image_create(gpu *g, const gpu_image_desc *desc, gpu_mem *m, uint64_t offset,
                             gpu_image **out)
{
    vk_gpu *v = vk_gpu_of(g);
    VkDevice dev = v->vk.device;
    *out = NULL;
    RETURN_IF_ERROR(check_desc(v, desc));
    const vk_mem *page = (const vk_mem *)m;
    gpu_image *im = calloc(1, sizeof *im);
    if (!im) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (image record)");
    im->desc = *desc;
    im->texel_bytes = formats[desc->format].bytes;
    VkImageCreateInfo ici = image_info(v, desc);
    cubec_status err = vk_status(vkCreateImage(dev, &ici, NULL, &im->image), "vkCreateImage");
    VkMemoryRequirements req = {0};
    if (!err) {
        vkGetImageMemoryRequirements(dev, im->image, &req);
        if (!(req.memoryTypeBits & (1u << page->memory_type)))
            err = status_make(CUBEC_UNSUPPORTED,
                              "image format %" PRIu32 ": the device's images cannot live in its "
                              "buffer memory (type %" PRIu32 ", images allow 0x%" PRIx32 ")",
                              desc->format, page->memory_type, req.memoryTypeBits);
        else if (offset % req.alignment || offset + req.size > m->size)
            err = status_make(CUBEC_INTERNAL,
                              "image of %" PRIu64 " bytes at offset %" PRIu64 " of a %" PRIu64
                              "-byte page (alignment %" PRIu64 ")",
                              (uint64_t)req.size, offset, m->size, (uint64_t)req.alignment);
    }
    if (!err)
        err =
            vk_status(vkBindImageMemory(dev, im->image, page->memory, offset), "vkBindImageMemory");
    if (!err) {
        VkImageViewCreateInfo vci = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
                                     .image = im->image,
                                     .viewType = desc->depth > 1 ? VK_IMAGE_VIEW_TYPE_3D
                                                                 : VK_IMAGE_VIEW_TYPE_2D,
                                     .format = ici.format,
                                     .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
        err = vk_status(vkCreateImageView(dev, &vci, NULL, &im->view), "vkCreateImageView");
    }
    if (err) {
        vk_image_destroy(g, im);
        return err;
    }
    *out = im;
    return NULL;
}

void vk_image_destroy(gpu *g, gpu_image *im)
{
    if (!im) return;
    vk_gpu *v = vk_gpu_of(g);
    if (!v->abandoned) {
        if (im->view) vkDestroyImageView(v->vk.device, im->view, NULL);
        if (im->image) vkDestroyImage(v->vk.device, im->image, NULL);
    }
    free(im);
}

void vk_emit_image_init(vk_cmd *c, gpu_image *im)
{
    /* From no layout: the contents are undefined until written, as a new buffer's are. */
    VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
                              .srcAccessMask = 0,
                              .dstAccessMask =
                                  VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                  VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                              .oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
                              .newLayout = VK_IMAGE_LAYOUT_GENERAL,
                              .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                              .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                              .image = im->image,
                              .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    vkCmdPipelineBarrier(c->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                         0, NULL, 0, NULL, 1, &b);
}

/* A layout change of the whole image, waiting for `src_stages` and making the new layout
 * visible to `dst_stages`. */
static void transition(vk_cmd *c, gpu_image *im, VkImageLayout from, VkImageLayout to,
                       VkPipelineStageFlags src_stages, VkAccessFlags src_access,
                       VkPipelineStageFlags dst_stages, VkAccessFlags dst_access)
{
    VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
                              .srcAccessMask = src_access,
                              .dstAccessMask = dst_access,
                              .oldLayout = from,
                              .newLayout = to,
                              .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                              .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                              .image = im->image,
                              .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    vkCmdPipelineBarrier(c->cmd, src_stages, dst_stages, 0, 0, NULL, 0, NULL, 1, &b);
}

void vk_emit_copy_image(vk_cmd *c, gpu_image *im, gpu_mem *m, uint64_t offset, int to_image)
{
    const gpu_image_desc *d = &im->desc;
    VkBufferImageCopy region = {.bufferOffset = offset,
                                .bufferRowLength = 0, /* packed */
                                .bufferImageHeight = 0,
                                .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                                .imageOffset = {0, 0, 0},
                                .imageExtent = {d->width, d->height, d->depth > 1 ? d->depth : 1}};
    /* Copies run in the transfer layouts (drivers copy faster there, and the validation layer
     * says so for GENERAL); the image returns to GENERAL at once, so the one-layout rule holds
     * between commands. A transition writes the image: it waits for every earlier use (the
     * server's hazard barriers order only conflicting accesses, not a read before this write),
     * and what follows in any stage waits for the transition back. */
    const VkPipelineStageFlags uses =
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    const VkAccessFlags writes = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    const VkAccessFlags all = writes | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    VkImageLayout layout =
        to_image ? VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL : VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    VkAccessFlags access = to_image ? VK_ACCESS_TRANSFER_WRITE_BIT : VK_ACCESS_TRANSFER_READ_BIT;
    transition(c, im, VK_IMAGE_LAYOUT_GENERAL, layout, uses, writes, VK_PIPELINE_STAGE_TRANSFER_BIT,
               access);
    if (to_image)
        vkCmdCopyBufferToImage(c->cmd, vk_buffer_of(m), im->image, layout, 1, &region);
    else
        vkCmdCopyImageToBuffer(c->cmd, im->image, layout, vk_buffer_of(m), 1, &region);
    transition(c, im, layout, VK_IMAGE_LAYOUT_GENERAL, VK_PIPELINE_STAGE_TRANSFER_BIT,
               to_image ? VK_ACCESS_TRANSFER_WRITE_BIT : 0, uses, all);
}
