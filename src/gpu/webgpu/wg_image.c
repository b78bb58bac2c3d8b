/* The WebGPU backend's images (wg_image.h): the formats cubec names as WebGPU texture formats and
 * what the device can do with them, the texture and view of an image, its layout and bind-group
 * entries, its writes from the program's memory and its copies to packed bytes.
 *
 * Why no layout transition and no init command: WebGPU tracks a texture's usage itself and
 * zeroes a new texture, so gpu_cmd_image_init has nothing to do here (wg_encode.c).
 *
 * Why writes are queue writes: wgpuQueueWriteTexture takes rows at any pitch straight from the
 * program's memory and repacks them into wgpu's staging on the CPU, the one copy a write needs
 * (wg_image_write). The server therefore never asks this backend for a copy towards a texture,
 * and wg_image_encode_copy refuses one.
 *
 * Why downloads go through aligned rows: WebGPU's rows in a buffer are a multiple of 256 bytes
 * apart (bytesPerRow), and packed rows are not unless their size is. One texture copy per row
 * costs ~2000 copy commands for a 2047 x 2048 image. Instead one copy takes the texture into
 * 256-byte aligned rows of the device's scratch buffer, and the backend's unpacking kernel moves
 * them to the packed rows on a GPU (one pass); a CPU device keeps a texture copy per row, the
 * cheaper there (choose_copies has the figures). */
#include "gpu/webgpu/wg_image.h"
#include "gpu/webgpu/wg_spirv_split.h"

#include "base/image_formats.h"
#include "base/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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

/* The unpacking kernel, over `rows` rows of `row` bytes: `padded` holds them from its byte 0
 * with each row 256-byte aligned (the copy pitch), `packed` receives them one after another
 * from byte `at` of its window (a multiple of 16). It moves 16 bytes (a vec4) per step; 16 bytes
 * at any byte are two aligned vec4s funnel-shifted (bytes16). It writes each packed vec4 once,
 * whole where it lies within one row, else byte by byte keeping the bytes outside the rows
 * (another allocation's, in a pooled page). Grid-stride, as the fill and byte-copy kernels are;
 * the (row, column) of a step moves by a fixed amount with a carry, so an invocation divides
 * once, not once a step. */
static const char repack_wgsl[] =
    "struct Repack { at: u32, row: u32, rows: u32, pad: u32 }\n"
    "var<immediate> r: Repack;\n"
    "@group(0) @binding(0) var<storage, read_write> packed: array<vec4<u32>>;\n"
    "@group(0) @binding(1) var<storage, read_write> padded: array<vec4<u32>>;\n"
    "fn pitch() -> u32 { return (r.row + 255u) & ~255u; }\n"
    "fn bytes16(a: vec4<u32>, b: vec4<u32>, s: u32) -> vec4<u32> {\n"
    "    let q = (s >> 2u) & 3u;\n"
    "    let c1 = vec4<u32>(a.yzw, b.x);\n"
    "    let c2 = vec4<u32>(a.zw, b.xy);\n"
    "    let c3 = vec4<u32>(a.w, b.xyz);\n"
    "    let lo = select(select(select(a, c1, q == 1u), c2, q == 2u), c3, q == 3u);\n"
    "    let hi = select(select(select(c1, c2, q == 1u), c3, q == 2u), b, q == 3u);\n"
    "    let sh = (s & 3u) * 8u;\n"
    "    let up = select(hi << vec4<u32>((32u - sh) & 31u), vec4<u32>(0u), sh == 0u);\n"
    "    return (lo >> vec4<u32>(sh)) | up;\n"
    "}\n"
    "fn bytewise(j: u32) -> vec4<u32> {\n"
    "    let end = r.at + r.row * r.rows;\n"
    "    let pitch_bytes = pitch();\n"
    "    var v = packed[j];\n"
    "    for (var k = 0u; k < 16u; k = k + 1u) {\n"
    "        let b = j * 16u + k;\n"
    "        if (b >= r.at && b < end) {\n"
    "            let p = b - r.at;\n"
    "            let y = p / r.row;\n"
    "            let sb = y * pitch_bytes + p - y * r.row;\n"
    "            let byte = (padded[sb >> 4u][(sb >> 2u) & 3u] >> ((sb & 3u) * 8u)) & 0xffu;\n"
    "            let sh = (k & 3u) * 8u;\n"
    "            v[k >> 2u] = (v[k >> 2u] & ~(0xffu << sh)) | (byte << sh);\n"
    "        }\n"
    "    }\n"
    "    return v;\n"
    "}\n"
    "@compute @workgroup_size(256)\n"
    "fn unpack(@builtin(global_invocation_id) id: vec3<u32>,\n"
    "          @builtin(num_workgroups) n: vec3<u32>) {\n"
    "    let stride = n.x * 256u;\n"
    "    let last = (r.at + r.row * r.rows + 15u) >> 4u;\n"
    "    var j = (r.at >> 4u) + id.x;\n"
    "    let pitch_bytes = pitch();\n"
    "    let step = stride * 16u;\n"
    "    let dy = step / r.row;\n"
    "    let dx = step - dy * r.row;\n"
    "    var y = id.x * 16u / r.row;\n"
    "    var x = id.x * 16u - y * r.row;\n"
    "    loop {\n"
    "        if (j >= last) { break; }\n"
    "        if (y < r.rows && x + 16u <= r.row) {\n"
    "            let s = y * pitch_bytes + x;\n"
    "            let i = s >> 4u;\n"
    "            packed[j] = bytes16(padded[i], padded[i + 1u], s);\n"
    "        } else {\n"
    "            packed[j] = bytewise(j);\n"
    "        }\n"
    "        j = j + stride;\n"
    "        x = x + dx;\n"
    "        y = y + dy;\n"
    "        if (x >= r.row) { x = x - r.row; y = y + 1u; }\n"
    "    }\n"
    "}\n";

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

/* The unpacking kernel: two storage buffers and 16 bytes of immediates. Without it (no
 * immediates, or a failure, logged) downloads of rows that are not 256-byte multiples go row by
 * row. */
static void make_repack(wg_gpu *w)
{
    const wg_procs *p = w->p;
    wg_image_state *s = &w->images;
    if (!w->immediates || w->limits.maxImmediateSize < 16) return;
    WGPUBindGroupLayoutEntry e[2];
    for (uint32_t i = 0; i < 2; i++)
        e[i] = (WGPUBindGroupLayoutEntry){.binding = i,
                                          .visibility = WGPUShaderStage_Compute,
                                          .buffer = {.type = WGPUBufferBindingType_Storage}};
    WGPUBindGroupLayoutDescriptor d = {.entryCount = 2, .entries = e};
    s->repack_layout = p->DeviceCreateBindGroupLayout(w->device, &d);
    WGPUPipelineLayoutDescriptor ld = {
        .bindGroupLayoutCount = 1, .bindGroupLayouts = &s->repack_layout, .immediateSize = 16};
    WGPUPipelineLayout layout = p->DeviceCreatePipelineLayout(w->device, &ld);
    WGPUShaderSourceWGSL src = {.chain = {.sType = WGPUSType_ShaderSourceWGSL},
                                .code = wg_str(repack_wgsl)};
    cubec_status err = wg_build_pipeline(w, &src.chain, "cubec.webgpu.unpack", "unpack", NULL, NULL,
                                         0, layout, &s->unpack);
    p->PipelineLayoutRelease(layout);
    if (err) {
        LOG(LOG_WARN, LOG_SYS_DEVICE,
            "webgpu: no image unpacking kernel (%s): image downloads go by texture rows",
            cubec_status_message(err));
        cubec_status_free(err);
        s->unpack = NULL;
    }
}

/* How downloads of rows that are not 256-byte multiples go (wg_image_copies): measured on
 * lavapipe (2047 x 2048 rgba8, CPU time per cubec_image_read): a copy per texture row 12.3-14.3
 * ms, the kernel 31-32 ms (a CPU device runs each lane's storage access in a loop of its own), a
 * buffer copy per row through the scratch buffer 15-15.7 ms. So a CPU device goes by texture
 * rows. A GPU runs the kernel's pass in microseconds, while every copy command costs the
 * implementation microseconds of CPU: the kernel. CUBEC_WEBGPU_IMAGE_COPIES picks one way
 * (kernel, buffer-rows, texture-rows), so that every way can be tested anywhere; the kernel
 * without the kernel (no immediates) goes by texture rows. */
static cubec_status choose_copies(wg_gpu *w)
{
    static const char *const names[] = {"texture-rows", "buffer-rows", "kernel"};
    wg_image_state *s = &w->images;
    int cpu = w->base.info.type == CUBEC_DEVICE_TYPE_CPU;
    s->copies = cpu ? WG_IMAGE_COPIES_TEXTURE_ROWS : WG_IMAGE_COPIES_KERNEL;
    const char *env = getenv("CUBEC_WEBGPU_IMAGE_COPIES");
    if (env && *env) {
        uint32_t found = UINT32_MAX;
        for (uint32_t i = 0; i < sizeof names / sizeof *names; i++)
            if (strcmp(env, names[i]) == 0) found = i;
        if (found == UINT32_MAX)
            return INVALID_ARG("CUBEC_WEBGPU_IMAGE_COPIES: '%s' is not one of kernel, "
                               "buffer-rows, texture-rows",
                               env);
        s->copies = (wg_image_copies)found;
    }
    if (!s->unpack && s->copies == WG_IMAGE_COPIES_KERNEL) s->copies = WG_IMAGE_COPIES_TEXTURE_ROWS;
    LOG(LOG_DEBUG, LOG_SYS_DEVICE, "webgpu: image downloads: %s", names[s->copies]);
    return NULL;
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
    RETURN_IF_ERROR(wg_take_error(w, "creating the samplers"));
    make_repack(w);
    return choose_copies(w);
}

void wg_images_release(wg_gpu *w)
{
    const wg_procs *p = w->p;
    wg_image_state *s = &w->images;
    for (int i = 0; i < WG_SAMPLERS; i++)
        if (s->samplers[i]) p->SamplerRelease(s->samplers[i]);
    if (s->unpack) p->ComputePipelineRelease(s->unpack);
    if (s->repack_layout) p->BindGroupLayoutRelease(s->repack_layout);
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

/* The most packed bytes one queue write of a texture takes: wgpu stages each write in memory of
 * its own (its rows 256-byte aligned) until the GPU has taken it, so a large image goes in
 * pieces, each handed to the GPU (an empty submission) before the next is staged, as
 * wg_mem_write's chunks are: what wgpu holds stays bounded whatever the image's size. Why 8 MiB
 * and not wg_mem_write's 64: on lavapipe a 16 MiB write staged whole mapped a fresh 128 MiB host
 * block every call and faulted its pages in (13 ms a call for 2047 x 2048 rgba8), where pieces
 * of 8 MiB mostly reuse one (2-4 ms, sometimes 8; the staged path took 9-11). */
#define IMAGE_WRITE_CHUNK (8ull << 20)

/* Texels [y, +rows) of slices [z, +slices) from their packed bytes at `src`. */
static void write_region(wg_gpu *w, gpu_image *im, const unsigned char *src, uint64_t row,
                         uint32_t y, uint32_t rows, uint32_t z, uint32_t slices)
{
    WGPUTexelCopyTextureInfo tex = {
        .texture = im->texture, .origin = {0, y, z}, .aspect = WGPUTextureAspect_All};
    WGPUTexelCopyBufferLayout layout = {
        .offset = 0, .bytesPerRow = (uint32_t)row, .rowsPerImage = rows};
    WGPUExtent3D size = {im->desc.width, rows, slices};
    w->p->QueueWriteTexture(w->queue, &tex, src, (size_t)(row * rows * slices), &layout, &size);
}

cubec_status wg_image_write(gpu *g, gpu_image *im, const void *src)
{
    wg_gpu *w = wg_of(g);
    const gpu_image_desc *d = &im->desc;
    uint32_t slices = d->depth > 1 ? d->depth : 1;
    uint64_t row = (uint64_t)d->width * im->texel_bytes, slice = row * d->height;
    const unsigned char *from = src;
    /* Under queue_lock, as wg_mem_write's writes: never beside a submission. */
    pthread_mutex_lock(&w->queue_lock);
    if (slice <= IMAGE_WRITE_CHUNK) {
        /* Whole slices a write. */
        uint32_t per = (uint32_t)(IMAGE_WRITE_CHUNK / slice);
        for (uint32_t z = 0; z < slices; z += per) {
            uint32_t n = slices - z < per ? slices - z : per;
            if (z) w->p->QueueSubmit(w->queue, 0, NULL);
            write_region(w, im, from + slice * z, row, 0, d->height, z, n);
        }
    } else {
        /* Rows of one slice a write (a row, at most the largest texture dimension times 16
         * bytes, is far below a chunk). */
        uint32_t per = (uint32_t)(IMAGE_WRITE_CHUNK / row);
        for (uint32_t z = 0; z < slices; z++)
            for (uint32_t y = 0; y < d->height; y += per) {
                uint32_t n = d->height - y < per ? d->height - y : per;
                if (z || y) w->p->QueueSubmit(w->queue, 0, NULL);
                write_region(w, im, from + slice * z + row * y, row, y, n, z, 1);
            }
    }
    pthread_mutex_unlock(&w->queue_lock);
    return wg_take_error(w, "queue write of a texture");
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

/* One copy of the texture's rows [y, +rows) of slices [z, +slices) to bytes of `buffer` at
 * `at`, `row` bytes a row in the buffer (WGPU_COPY_STRIDE_UNDEFINED for one row). */
static void copy_region(wg_gpu *w, WGPUCommandEncoder enc, gpu_image *im, WGPUBuffer buffer,
                        uint64_t at, uint32_t row, uint32_t y, uint32_t rows, uint32_t z,
                        uint32_t slices)
{
    const wg_procs *p = w->p;
    WGPUTexelCopyBufferInfo buf = {
        .layout = {.offset = at,
                   .bytesPerRow = row,
                   .rowsPerImage = slices > 1 ? rows : WGPU_COPY_STRIDE_UNDEFINED},
        .buffer = buffer};
    WGPUTexelCopyTextureInfo tex = {
        .texture = im->texture, .origin = {0, y, z}, .aspect = WGPUTextureAspect_All};
    WGPUExtent3D size = {im->desc.width, rows, slices};
    p->CommandEncoderCopyTextureToBuffer(enc, &tex, &buf, &size);
}

/* The most bytes of aligned rows one unpacking pass moves through the scratch buffer: the
 * scratch buffer stays this small whatever the image (larger images go in several passes),
 * and it keeps both bindings within any device's storage binding limit. */
#define REPACK_MAX_BYTES (32u << 20)

/* The unpacking kernel over `rows` rows of `row` bytes: aligned to `pitch` from byte 0 of
 * `scratch`, packed to `at` of `m`. */
static cubec_status unpack(wg_gpu *w, WGPUCommandEncoder enc, wg_mem *m, uint64_t at,
                           WGPUBuffer scratch, uint64_t row, uint64_t pitch, uint64_t rows)
{
    const wg_procs *p = w->p;
    uint64_t align = w->limits.minStorageBufferOffsetAlignment;
    uint64_t start = at / align * align, window = m->bytes - start;
    uint64_t binding_max = w->limits.maxStorageBufferBindingSize;
    if (window > binding_max) window = binding_max;
    window &= ~(uint64_t)15u; /* whole vec4s: the kernels' arrays end at the last whole one */
    if (((at + row * rows + 15u) & ~(uint64_t)15u) > start + window)
        return status_make(CUBEC_INTERNAL,
                           "webgpu: unpacking %" PRIu64 " rows of %" PRIu64 " bytes at %" PRIu64
                           ": past one storage binding (%" PRIu64 " bytes)",
                           rows, row, at, binding_max);
    WGPUBindGroupEntry be[2] = {
        {.binding = 0, .buffer = m->buffer, .offset = start, .size = window},
        {.binding = 1, .buffer = scratch, .offset = 0, .size = pitch * rows}};
    WGPUBindGroupDescriptor bd = {
        .layout = w->images.repack_layout, .entryCount = 2, .entries = be};
    WGPUBindGroup group = p->DeviceCreateBindGroup(w->device, &bd);
    if (!group) return status_make(CUBEC_INTERNAL, "wgpuDeviceCreateBindGroup (image unpacking)");
    uint32_t imm[4] = {(uint32_t)(at - start), (uint32_t)row, (uint32_t)rows, 0};
    /* Steps of 16 bytes: one per vec4 the rows touch. */
    uint64_t steps = ((at - start) % 16u + row * rows + 15u) / 16u;
    WGPUComputePassDescriptor d = {0};
    WGPUComputePassEncoder pass = p->CommandEncoderBeginComputePass(enc, &d);
    p->ComputePassEncoderSetPipeline(pass, w->images.unpack);
    p->ComputePassEncoderSetBindGroup(pass, 0, group, 0, NULL);
    p->ComputePassEncoderSetImmediates(pass, 0, imm, sizeof imm);
    p->ComputePassEncoderDispatchWorkgroups(pass, wg_own_kernel_groups(w, steps), 1, 1);
    p->ComputePassEncoderEnd(pass);
    p->ComputePassEncoderRelease(pass);
    p->BindGroupRelease(group); /* the command buffer holds its own reference */
    return NULL;
}

/* Rows [y, +rows) of slices [z, +slices) (all rows of each slice when slices > 1) through the
 * scratch buffer's aligned rows: copied from the texture, then moved to the packed rows by the
 * kernel in one pass or, where that way is chosen, by a buffer copy per row. */
static cubec_status copy_through_scratch(wg_gpu *w, WGPUCommandEncoder enc, gpu_image *im,
                                         wg_mem *m, uint64_t at, uint64_t pitch, uint32_t y,
                                         uint32_t rows, uint32_t z, uint32_t slices)
{
    const wg_procs *p = w->p;
    uint64_t row = (uint64_t)im->desc.width * im->texel_bytes, n = (uint64_t)rows * slices;
    WGPUBuffer scratch = NULL;
    RETURN_IF_ERROR(wg_scratch(w, pitch * n, &scratch));
    copy_region(w, enc, im, scratch, 0, (uint32_t)pitch, y, rows, z, slices);
    if (w->images.copies == WG_IMAGE_COPIES_KERNEL)
        return unpack(w, enc, m, at, scratch, row, pitch, n);
    for (uint64_t i = 0; i < n; i++)
        p->CommandEncoderCopyBufferToBuffer(enc, scratch, i * pitch, m->buffer, at + i * row, row);
    return NULL;
}

/* Whether the copy can go through the scratch buffer in the device's way: the kernels reach the
 * packed bytes in whole vec4s from a vec4's start (the server's allocations start at 16 bytes at
 * least: server/buffers.c), the last one in the buffer; buffer copies take whole words only. */
static int through_scratch(wg_image_copies way, const wg_mem *m, uint64_t offset, uint64_t row,
                           uint64_t bytes)
{
    switch (way) {
    case WG_IMAGE_COPIES_KERNEL:
        return offset % 16u == 0 && ((offset + bytes + 15u) & ~(uint64_t)15u) <= m->bytes;
    case WG_IMAGE_COPIES_BUFFER_ROWS: return ((offset | row) & 3u) == 0;
    default: return 0;
    }
}

/* `per` units of `unit` packed bytes a pass, fewer so that every pass's packed bytes are a
 * multiple of 16: each pass then starts at a vec4, as the first does (through_scratch). */
static uint32_t whole_vec4s(uint32_t per, uint64_t unit)
{
    uint32_t step = 1;
    while (step < 16u && (unit * step) % 16u)
        step *= 2;
    return per / step * step;
}

cubec_status wg_image_encode_copy(wg_gpu *w, WGPUCommandEncoder enc, gpu_image *im, wg_mem *m,
                                  uint64_t offset, int to_image)
{
    const gpu_image_desc *d = &im->desc;
    if (to_image)
        return status_make(CUBEC_INTERNAL,
                           "webgpu: a copy into an image: writes are queue writes of the texture "
                           "(gpu_ops.image_write), so the server never records one here");
    uint32_t slices = d->depth > 1 ? d->depth : 1;
    uint64_t row = (uint64_t)d->width * im->texel_bytes;
    if (offset % im->texel_bytes || offset + row * d->height * slices > m->base.size)
        return status_make(CUBEC_INTERNAL,
                           "webgpu: an image copy at offset %" PRIu64 " of a %" PRIu64
                           "-byte page (texels of %" PRIu32 " bytes)",
                           offset, m->base.size, im->texel_bytes);
    /* Packed rows are WebGPU's copy rows where their size is a multiple of 256: one copy. */
    if (row % 256u == 0) {
        copy_region(w, enc, im, m->buffer, offset, (uint32_t)row, 0, d->height, 0, slices);
        return NULL;
    }
    uint64_t pitch = (row + 255u) & ~(uint64_t)255u, slice = pitch * d->height;
    /* Room for the aligned rows of a pass, less what the packed side's binding starts before
     * them (its offset rounded down to the binding alignment) and its last vec4's tail. */
    uint64_t room = w->limits.maxStorageBufferBindingSize;
    if (room > REPACK_MAX_BYTES) room = REPACK_MAX_BYTES;
    uint64_t lead = w->limits.minStorageBufferOffsetAlignment + 16u;
    room = room > lead ? room - lead : 0;
    int scratch = through_scratch(w->images.copies, m, offset, row, row * d->height * slices);
    uint32_t per =
        slice && slice <= room ? whole_vec4s((uint32_t)(room / slice), row * d->height) : 0;
    if (scratch && per) {
        /* Whole slices a pass. */
        for (uint32_t z = 0; z < slices; z += per) {
            uint32_t n = slices - z < per ? slices - z : per;
            RETURN_IF_ERROR(copy_through_scratch(w, enc, im, m, offset + row * d->height * z, pitch,
                                                 0, d->height, z, n));
        }
        return NULL;
    }
    per = pitch && pitch <= room ? whole_vec4s((uint32_t)(room / pitch), row) : 0;
    if (scratch && per) {
        /* Rows of one slice a pass. */
        for (uint32_t z = 0; z < slices; z++)
            for (uint32_t y = 0; y < d->height; y += per) {
                uint32_t n = d->height - y < per ? d->height - y : per;
                RETURN_IF_ERROR(copy_through_scratch(w, enc, im, m,
                                                     offset + row * ((uint64_t)z * d->height + y),
                                                     pitch, y, n, z, 1));
            }
        return NULL;
    }
    /* Texture rows, or what the scratch buffer cannot take (bytes that are not whole words for
     * buffer copies, packed bytes ending in the buffer's last partial vec4 for the kernels): one
     * copy per row, each with no row pitch at all (a copy of one row needs none). */
    for (uint32_t z = 0; z < slices; z++)
        for (uint32_t y = 0; y < d->height; y++)
            copy_region(w, enc, im, m->buffer, offset + row * ((uint64_t)z * d->height + y),
                        WGPU_COPY_STRIDE_UNDEFINED, y, 1, z, 1);
    return NULL;
}
