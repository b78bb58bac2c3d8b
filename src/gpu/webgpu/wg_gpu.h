/* The WebGPU backend: gpu.h carried out on webgpu.h (wg_loader.h loads the implementation).
 *
 * What it maps (docs/device.md, "The WebGPU backend"): device pages are one WGPUBuffer each,
 * bound at offsets; upload, metadata and readback memory is mapped as a host copy (the seam's
 * non-coherent contract, gpu.h): a flush is a queue write of the range, an invalidate of
 * readback memory maps the range and copies it back. Pipelines come from SPIR-V through the
 * implementation's translation (naga for wgpu-native), with explicit layouts whose storage
 * bindings are all read_write (WebGPU forbids one buffer bound read-only and writable in one
 * dispatch; two tensors of one pooled page would be), and push constants as immediates. The
 * command list (gpu/cmd_list.h) is encoded at every submission, so a graph replays by
 * re-encoding. The timeline is a counter the queue's work-done callbacks advance; waits poll.
 * Timestamps are query sets written inside passes, on the encoder or at pass boundaries,
 * whichever the adapter has (wg_queries.c). Images are textures (wg_image.h). What cannot map
 * (host memory, imports, texel buffers, exports, pipeline caches, clock calibration) is refused
 * with CUBEC_UNSUPPORTED naming it.
 *
 * Enumeration: the adapters of the implementation's instance, in its order. */
#ifndef CUBEC_GPU_WEBGPU_WG_GPU_H
#define CUBEC_GPU_WEBGPU_WG_GPU_H

#include "gpu/gpu.h"

#include <stdint.h>

/* Opens adapter desc->index (or the first whose name contains desc->name). */
MUST_USE cubec_status wg_gpu_open(const gpu_open_desc *desc, gpu **out);
/* The adapters the implementation lists; 0 without an error where none is installed. */
MUST_USE cubec_status wg_gpu_count(uint32_t *out_count);
MUST_USE cubec_status wg_gpu_peek(uint32_t index, cubec_device_info *out);

#endif
