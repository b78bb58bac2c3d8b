/* The WebGPU backend's images (docs/device.md, "The WebGPU backend", images): a WGPUTexture and
 * its view per image, the six samplers, and what the pipeline layouts, the bind groups and the
 * command list's image copies need of them (wg_pipeline.c and wg_encode.c call these).
 *
 * Why the texture owns its memory: WebGPU has no way to place a texture in a buffer's memory, so
 * the page range the server allocates for an image (gpu.h image_create) is accounting only; it
 * is the texture's packed size, so the server's budget, pressure and memory report see what the
 * texture costs. */
#ifndef CUBEC_GPU_WEBGPU_WG_IMAGE_H
#define CUBEC_GPU_WEBGPU_WG_IMAGE_H

#include "gpu/webgpu/wg_internal.h"

#include <stddef.h>
#include <stdint.h>

struct gpu_image {
    WGPUTexture texture;
    WGPUTextureView view;
    gpu_image_desc desc;
    uint32_t texel_bytes;
    uint64_t id; /* for the bind cache's keys, like wg_mem.id */
};

#define WG_IMAGE_MAX_FEATURES 4

/* The features images use that the adapter has (filterable 32-bit floats, the texture-format
 * tiers, wgpu-native's adapter-specific format features), into out[WG_IMAGE_MAX_FEATURES]; their
 * count. Asked for when the device is made. */
size_t wg_image_features(const wg_procs *p, WGPUAdapter adapter, WGPUFeatureName *out);
/* After the device is made: the caps images fill (sampled and linear formats; no texel buffers)
 * and the six samplers. */
MUST_USE cubec_status wg_images_init(wg_gpu *w);
void wg_images_release(wg_gpu *w);

/* The layout entries of a kernel's resource `r` (out[2], *out_count of them): a storage texture
 * of the declared format and access, a texture of the declared texel type, a filtering sampler,
 * or for a combined image sampler both a texture and its sampler (at the binding
 * wg_spirv_split.h moved it to). CUBEC_UNSUPPORTED naming the binding for what WebGPU has no
 * twin of (texel buffers, a storage image without a format qualifier cubec names, read_write
 * access the device cannot give). */
MUST_USE cubec_status wg_image_layout_entry(const wg_gpu *w, const gpu_resource_slot *r,
                                            WGPUBindGroupLayoutEntry *out, uint32_t *out_count);
/* The bind-group entries of `b` (out[2], *out_count of them: two for a combined image sampler)
 * and their identities for the bind cache. A storage image whose format is not the one the
 * kernel declares (`declared`; WebGPU binds a storage texture only in its layout's format) is
 * CUBEC_INVALID_ARGUMENT naming both. */
MUST_USE cubec_status wg_image_bind_entry(const wg_gpu *w, const gpu_image_binding *b,
                                          uint32_t declared, WGPUBindGroupEntry *out,
                                          uint64_t *out_id, uint32_t *out_count);
/* Copies every texel of `im` to packed bytes of `m` at `offset`: one copy where rows are 256-byte
 * multiples, else through the scratch buffer's aligned rows (under queue_lock, as all encoding
 * is) in the device's way (wg_image_copies). `to_image` is CUBEC_INTERNAL: writes are queue
 * writes (wg_image_write). */
MUST_USE cubec_status wg_image_encode_copy(wg_gpu *w, WGPUCommandEncoder enc, gpu_image *im,
                                           wg_mem *m, uint64_t offset, int to_image);

#endif
