/* The WebGPU backend's images (wg_image.h): the formats cubec names as WebGPU texture formats and
 * what the device can do with them, the texture and view of an image, its layout and bind-group
 * entries, and its copies to and from packed bytes.
 *
 * Why no layout transition and no init command: WebGPU tracks a texture's usage itself and
 * zeroes a new texture, so gpu_cmd_image_init has nothing to do here (wg_encode.c). */
#include "gpu/webgpu/wg_image.h"
#include "gpu/webgpu/wg_spirv_split.h"

#include "base/image_formats.h"

#include <inttypes.h>
#include <stdlib.h>

/* cubec_image_format -> WebGPU format and name; index 0 is no format. `core_storage`: WebGPU
 * core allows write-only and read-only storage of it; `core_read_write`: and read_write
 * storage. Other formats, and read_write of others, need the texture-format tiers or
 * wgpu-native's adapter-specific format features (WG_IMAGE_F_*). */
static const struct {
    WGPUTextureFormat format;
    const char *name;
    int core_storage, core_read_write;
} formats[] = {
    {WGPUTextureFormat_Undefined, "(none)", 0, 0},
    {WGPUTextureFormat_R8Unorm, "r8unorm", 0, 0},
    {WGPUTextureFormat_RGBA8Unorm, "rgba8unorm", 1, 0},
    {WGPUTextureFormat_R16Float, "r16float", 0, 0},
    {WGPUTextureFormat_RGBA16Float, "rgba16float", 1, 0},
    {WGPUTextureFormat_R32Float, "r32float", 1, 1},
    {WGPUTextureFormat_RGBA32Float, "rgba32float", 1, 0},
    {WGPUTextureFormat_R32Uint, "r32uint", 1, 1},
    {WGPUTextureFormat_RGBA32Uint, "rgba32uint", 1, 0},
    {WGPUTextureFormat_R32Sint, "r32sint", 1, 1},
};
#define FORMAT_COUNT (sizeof formats / sizeof formats[0])

/* The features images ask for, and their bits in wg_image_state.features. */
#define FEATURE_ADAPTER_FORMATS ((WGPUFeatureName)0x00030002) /* wgpu.h, native */
static const struct {
    WGPUFeatureName name;
    uint32_t bit;
} image_features[WG_IMAGE_MAX_FEATURES] = {
    {WGPUFeatureName_Float32Filterable, WG_IMAGE_F_FLOAT32_FILTERABLE},
    {WGPUFeatureName_TextureFormatsTier1, WG_IMAGE_F_TIER1},
    {WGPUFeatureName_TextureFormatsTier2, WG_IMAGE_F_TIER2},
    {FEATURE_ADAPTER_FORMATS, WG_IMAGE_F_ADAPTER_FORMATS},
};

static const WGPUTextureUsage image_usage = WGPUTextureUsage_StorageBinding |
                                            WGPUTextureUsage_TextureBinding |
                                            WGPUTextureUsage_CopySrc | WGPUTextureUsage_CopyDst;

size_t wg_image_features(const wg_procs *p, WGPUAdapter adapter, WGPUFeatureName *out)
{
    size_t n = 0;
    for (size_t i = 0; i < WG_IMAGE_MAX_FEATURES; i++)
        if (p->AdapterHasFeature(adapter, image_features[i].name))
            out[n++] = image_features[i].name;
    return n;
}

static uint64_t next_id(wg_gpu *w)
{
    pthread_mutex_lock(&w->lock);
    uint64_t id = ++w->next_mem_id;
    pthread_mutex_unlock(&w->lock);
    return id;
}

cubec_status wg_images_init(wg_gpu *w)
{
    const wg_procs *p = w->p;
    wg_image_state *s = &w->images;
    for (size_t i = 0; i < WG_IMAGE_MAX_FEATURES; i++)
        if (p->AdapterHasFeature(w->adapter, image_features[i].name))
            s->features |= image_features[i].bit;
    /* Every format is a texture binding in WebGPU. Layouts declare float textures filterable
     * (a launch picks the filter, after the pipeline is made), and 32-bit floats are filterable
     * only with the feature, so without it they are not sampled at all. */
    gpu_caps *caps = &w->base.caps;
    for (uint32_t f = 1; f < FORMAT_COUNT; f++) {
        int wide_float =
            f == CUBEC_IMAGE_FORMAT_R32_SFLOAT || f == CUBEC_IMAGE_FORMAT_RGBA32_SFLOAT;
        if (wide_float && !(s->features & WG_IMAGE_F_FLOAT32_FILTERABLE)) continue;
        caps->sampled_formats |= 1u << f;
        if (!image_format_numeric(f)) caps->linear_formats |= 1u << f;
    }
    caps->texel_formats = 0; /* no texel buffers in WebGPU */
    caps->max_texel_elements = 0;
    caps->texel_offset_alignment = 0;
    /* The six samplers (two filters by three address modes), as the Vulkan backend makes them:
     * normalized coordinates, no mipmaps. */
    static const WGPUAddressMode modes[3] = {WGPUAddressMode_ClampToEdge, WGPUAddressMode_Repeat,
                                             WGPUAddressMode_MirrorRepeat};
    for (int i = 0; i < WG_SAMPLERS; i++) {
        WGPUFilterMode f = i % 2 ? WGPUFilterMode_Linear : WGPUFilterMode_Nearest;
        WGPUSamplerDescriptor d = {.addressModeU = modes[i / 2],
                                   .addressModeV = modes[i / 2],
                                   .addressModeW = modes[i / 2],
                                   .magFilter = f,
                                   .minFilter = f,
                                   .mipmapFilter = WGPUMipmapFilterMode_Nearest,
                                   .lodMinClamp = 0.0f,
                                   .lodMaxClamp = 32.0f,
                                   .maxAnisotropy = 1};
        s->samplers[i] = p->DeviceCreateSampler(w->device, &d);
        if (!s->samplers[i]) return status_make(CUBEC_INTERNAL, "wgpuDeviceCreateSampler");
        s->sampler_ids[i] = next_id(w);
    }
    return wg_take_error(w, "creating the samplers");
}

void wg_images_release(wg_gpu *w)
{
    for (int i = 0; i < WG_SAMPLERS; i++)
        if (w->images.samplers[i]) w->p->SamplerRelease(w->images.samplers[i]);
}

static WGPUTextureDescriptor texture_desc(const gpu_image_desc *desc)
{
    int three_d = desc->depth > 1;
    return (WGPUTextureDescriptor){.usage = image_usage,
                                   .dimension =
                                       three_d ? WGPUTextureDimension_3D : WGPUTextureDimension_2D,
                                   .size = {desc->width, desc->height, three_d ? desc->depth : 1},
                                   .format = formats[desc->format].format,
                                   .mipLevelCount = 1,
                                   .sampleCount = 1};
}

/* Whether the device can store to `format` in 2D or 3D: core formats always; others once
 * tried (a texture of one texel with the storage usage), remembered per device. */
static cubec_status storable(wg_gpu *w, uint32_t format, int three_d, int *out)
{
    wg_image_state *s = &w->images;
    uint32_t bit = 1u << (format + (three_d ? 16u : 0u));
    if (formats[format].core_storage) {
        *out = 1;
        return NULL;
    }
    if (!(s->features & (WG_IMAGE_F_TIER1 | WG_IMAGE_F_ADAPTER_FORMATS))) {
        *out = 0;
        return NULL;
    }
    pthread_mutex_lock(&w->lock);
    int known = (s->probed & bit) != 0, ok = (s->storable & bit) != 0;
    pthread_mutex_unlock(&w->lock);
    if (!known) {
        gpu_image_desc one = {.format = format, .width = 1, .height = 1, .depth = three_d ? 2 : 1};
        WGPUTextureDescriptor d = texture_desc(&one);
        WGPUTexture t = w->p->DeviceCreateTexture(w->device, &d);
        cubec_status err = wg_take_error(w, "trying a storage texture");
        ok = t && !err;
        cubec_status_free(err);
        if (t) w->p->TextureRelease(t);
        pthread_mutex_lock(&w->lock);
        s->probed |= bit;
        if (ok) s->storable |= bit;
        pthread_mutex_unlock(&w->lock);
    }
    *out = ok;
    return NULL;
}

/* The format exists, the device can store to it, and the extent fits the device's limits. */
static cubec_status check_desc(wg_gpu *w, const gpu_image_desc *desc)
{
    if (desc->format == 0 || desc->format >= FORMAT_COUNT)
        return INVALID_ARG("image format %" PRIu32 " is not a cubec_image_format", desc->format);
    int three_d = desc->depth > 1, ok = 0;
    RETURN_IF_ERROR(storable(w, desc->format, three_d, &ok));
    if (!ok)
        return status_make(CUBEC_UNSUPPORTED,
                           "image format %s (WebGPU %s): the device cannot use it as a %s storage "
                           "texture (WebGPU core stores only rgba8, rgba16f, r32f, rgba32f, r32ui, "
                           "rgba32ui and r32i; others need texture-formats-tier1 or wgpu-native's "
                           "adapter-specific format features)",
                           image_format_name(desc->format), formats[desc->format].name,
                           three_d ? "3D" : "2D");
    uint32_t max = three_d ? w->limits.maxTextureDimension3D : w->limits.maxTextureDimension2D;
    uint32_t depth_max = three_d ? max : 1;
    if (desc->width > max || desc->height > max || (three_d && desc->depth > depth_max))
        return INVALID_ARG("image of %" PRIu32 "x%" PRIu32 "x%" PRIu32
                           " texels: the device's largest %s texture is %" PRIu32 "x%" PRIu32
                           "x%" PRIu32,
                           desc->width, desc->height, three_d ? desc->depth : 1,
                           three_d ? "3D" : "2D", max, max, depth_max);
    return NULL;
}

static uint64_t packed_bytes(const gpu_image_desc *desc)
{
    return (uint64_t)desc->width * desc->height * (desc->depth > 1 ? desc->depth : 1) *
           image_format_bytes(desc->format);
}

cubec_status wg_image_requirements(gpu *g, const gpu_image_desc *desc, uint64_t *out_size,
                                   uint64_t *out_alignment)
{
    wg_gpu *w = wg_of(g);
    RETURN_IF_ERROR(check_desc(w, desc));
    /* The range only accounts for the texture's memory (wg_image.h): its packed size, in words
     * so that buffers placed after it stay word-aligned. */
    *out_size = WG_ALIGN4(packed_bytes(desc));
    *out_alignment = 4;
    return NULL;
}

cubec_status wg_image_create(gpu *g, const gpu_image_desc *desc, gpu_mem *m, uint64_t offset,
                             gpu_image **out)
{
    wg_gpu *w = wg_of(g);
    const wg_procs *p = w->p;
    *out = NULL;
    RETURN_IF_ERROR(check_desc(w, desc));
    if (!m || offset + packed_bytes(desc) > m->size)
        return status_make(CUBEC_INTERNAL,
                           "image of %" PRIu64 " bytes at offset %" PRIu64 " of a %" PRIu64
                           "-byte page",
                           packed_bytes(desc), offset, m ? m->size : 0);
    gpu_image *im = calloc(1, sizeof *im);
    if (!im) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (image record)");
    im->desc = *desc;
    im->texel_bytes = image_format_bytes(desc->format);
    im->id = next_id(w);
    WGPUTextureDescriptor d = texture_desc(desc);
    im->texture = p->DeviceCreateTexture(w->device, &d);
    cubec_status err = wg_take_error(w, "creating a texture");
    if (!err && !im->texture) err = status_make(CUBEC_INTERNAL, "wgpuDeviceCreateTexture");
    if (!err) {
        im->view = p->TextureCreateView(im->texture, NULL); /* the whole texture, its dimension */
        err = wg_take_error(w, "creating a texture view");
        if (!err && !im->view) err = status_make(CUBEC_INTERNAL, "wgpuTextureCreateView");
    }
    if (err) {
        wg_image_destroy(g, im);
        return err;
    }
    *out = im;
    return NULL;
}

void wg_image_destroy(gpu *g, gpu_image *im)
{
    if (!im) return;
    wg_gpu *w = wg_of(g);
    /* Command buffers and cached bind groups that use it hold their own references. */
    if (!w->abandoned) {
        if (im->view) w->p->TextureViewRelease(im->view);
        if (im->texture) w->p->TextureRelease(im->texture);
    }
    free(im);
}

static const char *var_name(const gpu_resource_slot *r)
{
    return r->name && r->name[0] ? r->name : "(unnamed)";
}

/* A texture binding of the texel type the kernel reads. */
static WGPUTextureBindingLayout texture_layout(const gpu_resource_slot *r,
                                               WGPUTextureViewDimension dim)
{
    return (WGPUTextureBindingLayout){.sampleType = r->numeric == 1   ? WGPUTextureSampleType_Uint
                                                    : r->numeric == 2 ? WGPUTextureSampleType_Sint
                                                                      : WGPUTextureSampleType_Float,
                                      .viewDimension = dim};
}

cubec_status wg_image_layout_entry(const wg_gpu *w, const gpu_resource_slot *r,
                                   WGPUBindGroupLayoutEntry *out, uint32_t *out_count)
{
    *out = (WGPUBindGroupLayoutEntry){.binding = r->binding, .visibility = WGPUShaderStage_Compute};
    *out_count = 1;
    WGPUTextureViewDimension dim =
        r->dims == 3 ? WGPUTextureViewDimension_3D : WGPUTextureViewDimension_2D;
    switch ((gpu_resource_type)r->type) {
    case GPU_RESOURCE_STORAGE_IMAGE: {
        if (r->format == 0 || r->format >= FORMAT_COUNT)
            return status_make(CUBEC_UNSUPPORTED,
                               "storage image '%s' at set %" PRIu32 " binding %" PRIu32
                               " declares no format cubec names: a WebGPU "
                               "storage texture's layout names its format",
                               var_name(r), r->set, r->binding);
        WGPUStorageTextureAccess access =
            r->access == CUBEC_ACCESS_READ    ? WGPUStorageTextureAccess_ReadOnly
            : r->access == CUBEC_ACCESS_WRITE ? WGPUStorageTextureAccess_WriteOnly
                                              : WGPUStorageTextureAccess_ReadWrite;
        /* Past core, read_write is the tiers' or the adapter's to allow (wgpu then checks the
         * format's features when the layout is made, and its message names the format). */
        if (access == WGPUStorageTextureAccess_ReadWrite && !formats[r->format].core_read_write &&
            !(w->images.features & (WG_IMAGE_F_TIER2 | WG_IMAGE_F_ADAPTER_FORMATS)))
            return status_make(CUBEC_UNSUPPORTED,
                               "storage image '%s' at set %" PRIu32 " binding %" PRIu32
                               " is read and written (neither readonly nor "
                               "writeonly) in format %s: WebGPU core reads and writes one "
                               "storage texture only in r32f, r32ui and r32i, and the device has "
                               "neither texture-formats-tier2 nor adapter-specific formats",
                               var_name(r), r->set, r->binding, image_format_name(r->format));
        out->storageTexture = (WGPUStorageTextureBindingLayout){
            .access = access, .format = formats[r->format].format, .viewDimension = dim};
        return NULL;
    }
    case GPU_RESOURCE_SAMPLED_IMAGE:
        /* Split in two (wg_spirv_split.h): the texture here, its sampler further on. */
        if (r->binding + WG_SPLIT_SAMPLER_BINDING >= w->limits.maxBindingsPerBindGroup)
            return status_make(CUBEC_UNSUPPORTED,
                               "combined image sampler '%s' at set %" PRIu32 " binding %" PRIu32
                               ": its sampler would be at binding %" PRIu32
                               ", past the device's %" PRIu32 " bindings of a group",
                               var_name(r), r->set, r->binding,
                               r->binding + WG_SPLIT_SAMPLER_BINDING,
                               w->limits.maxBindingsPerBindGroup);
        out[1] = (WGPUBindGroupLayoutEntry){.binding = r->binding + WG_SPLIT_SAMPLER_BINDING,
                                            .visibility = WGPUShaderStage_Compute,
                                            .sampler = {.type = WGPUSamplerBindingType_Filtering}};
        *out_count = 2;
        out->texture = texture_layout(r, dim);
        return NULL;
    case GPU_RESOURCE_SAMPLED_TEXTURE: out->texture = texture_layout(r, dim); return NULL;
    case GPU_RESOURCE_SAMPLER:
        out->sampler = (WGPUSamplerBindingLayout){.type = WGPUSamplerBindingType_Filtering};
        return NULL;
    case GPU_RESOURCE_UNIFORM_TEXEL_BUFFER:
    case GPU_RESOURCE_STORAGE_TEXEL_BUFFER:
        return status_make(CUBEC_UNSUPPORTED,
                           "'%s' at set %" PRIu32 " binding %" PRIu32
                           " is a texel buffer, which WebGPU has no twin of: read the buffer as "
                           "a storage buffer",
                           var_name(r), r->set, r->binding);
    }
    return status_make(CUBEC_INTERNAL, "webgpu: resource type %" PRIu32 " is unknown", r->type);
}

cubec_status wg_image_bind_entry(const wg_gpu *w, const gpu_image_binding *b, uint32_t declared,
                                 WGPUBindGroupEntry *out, uint64_t *out_id, uint32_t *out_count)
{
    *out = (WGPUBindGroupEntry){.binding = b->binding};
    *out_count = 1;
    uint32_t i = (b->linear ? 1u : 0u) + 2u * (b->address < 3 ? b->address : 0u);
    if (b->type == GPU_RESOURCE_SAMPLER) {
        out->sampler = w->images.samplers[i];
        *out_id = w->images.sampler_ids[i];
        return NULL;
    }
    if (b->type == GPU_RESOURCE_SAMPLED_IMAGE) {
        out[1] = (WGPUBindGroupEntry){.binding = b->binding + WG_SPLIT_SAMPLER_BINDING,
                                      .sampler = w->images.samplers[i]};
        out_id[1] = w->images.sampler_ids[i];
        *out_count = 2;
    }
    if (!b->image)
        return status_make(CUBEC_UNSUPPORTED,
                           "webgpu: binding %" PRIu32 " of set %" PRIu32
                           " is a texel buffer, which WebGPU has no twin of",
                           b->binding, b->set);
    if (b->type == GPU_RESOURCE_STORAGE_IMAGE && declared && b->image->desc.format != declared)
        return INVALID_ARG("storage image at set %" PRIu32 " binding %" PRIu32
                           " has format %s, but the kernel declares %s there: WebGPU binds a "
                           "storage texture only in the format its kernel declares",
                           b->set, b->binding, image_format_name(b->image->desc.format),
                           image_format_name(declared));
    out->textureView = b->image->view;
    *out_id = b->image->id;
    return NULL;
}

/* One copy between the texture's rows [y, +rows) of slices [z, +slices) and bytes at `at`,
 * `row` bytes a row in the buffer (WGPU_COPY_STRIDE_UNDEFINED for one row). */
static void copy_region(wg_gpu *w, WGPUCommandEncoder enc, gpu_image *im, wg_mem *m, uint64_t at,
                        uint32_t row, uint32_t y, uint32_t rows, uint32_t z, uint32_t slices,
                        int to_image)
{
    const wg_procs *p = w->p;
    WGPUTexelCopyBufferInfo buf = {
        .layout = {.offset = at,
                   .bytesPerRow = row,
                   .rowsPerImage = slices > 1 ? rows : WGPU_COPY_STRIDE_UNDEFINED},
        .buffer = m->buffer};
    WGPUTexelCopyTextureInfo tex = {
        .texture = im->texture, .origin = {0, y, z}, .aspect = WGPUTextureAspect_All};
    WGPUExtent3D size = {im->desc.width, rows, slices};
    if (to_image)
        p->CommandEncoderCopyBufferToTexture(enc, &buf, &tex, &size);
    else
        p->CommandEncoderCopyTextureToBuffer(enc, &tex, &buf, &size);
}

cubec_status wg_image_encode_copy(wg_gpu *w, WGPUCommandEncoder enc, gpu_image *im, wg_mem *m,
                                  uint64_t offset, int to_image)
{
    const gpu_image_desc *d = &im->desc;
    uint32_t slices = d->depth > 1 ? d->depth : 1;
    uint64_t row = (uint64_t)d->width * im->texel_bytes;
    if (offset % im->texel_bytes || offset + row * d->height * slices > m->base.size)
        return status_make(CUBEC_INTERNAL,
                           "webgpu: an image copy at offset %" PRIu64 " of a %" PRIu64
                           "-byte page (texels of %" PRIu32 " bytes)",
                           offset, m->base.size, im->texel_bytes);
    /* WebGPU's rows in a buffer are 256-byte aligned; packed rows are only where their size is
     * a multiple of 256. Otherwise one copy per row, each with no row pitch at all (a copy of
     * one row needs none), rather than a padded staging buffer and a repacking pass. */
    if (row % 256u == 0) {
        copy_region(w, enc, im, m, offset, (uint32_t)row, 0, d->height, 0, slices, to_image);
        return NULL;
    }
    for (uint32_t z = 0; z < slices; z++)
        for (uint32_t y = 0; y < d->height; y++)
            copy_region(w, enc, im, m, offset + row * ((uint64_t)z * d->height + y),
                        WGPU_COPY_STRIDE_UNDEFINED, y, 1, z, 1, to_image);
    return NULL;
}
