/* The CUBEC_CAPABILITY_* bits of cubec_device_info.capabilities: how the seam's caps and ops
 * (gpu.h) answer each, for open devices and backends' peeks alike, and the bits' names. */
#include "gpu/gpu.h"

uint32_t gpu_capabilities(const gpu_caps *caps, const gpu_ops *ops)
{
    uint32_t bits = 0;
    if (caps->host_memory) bits |= CUBEC_CAPABILITY_PINNED_HOST_MEMORY;
    if (caps->host_import_alignment && ops->mem_import_host) bits |= CUBEC_CAPABILITY_HOST_IMPORT;
    if (ops->vulkan_handles) bits |= CUBEC_CAPABILITY_VULKAN_HANDLES;
    if (caps->reusable_cmds) bits |= CUBEC_CAPABILITY_REUSABLE_GRAPHS;
    if (caps->calibrated_clock && ops->calibrate) bits |= CUBEC_CAPABILITY_CALIBRATED_CLOCK;
    if (caps->timestamps) bits |= CUBEC_CAPABILITY_DEVICE_TIMESTAMPS;
    /* Pages carry texel usages only where some format serves both texel buffer kinds. */
    if (caps->texel_formats) bits |= CUBEC_CAPABILITY_TEXEL_BUFFERS;
    if (ops->image_create) bits |= CUBEC_CAPABILITY_IMAGES;
    if (caps->wgsl) bits |= CUBEC_CAPABILITY_WGSL;
    if (caps->runs_kernels) bits |= CUBEC_CAPABILITY_RUNS_KERNELS;
    return bits;
}

const char *cubec_capability_name(uint32_t capability)
{
    switch (capability) {
    case CUBEC_CAPABILITY_PINNED_HOST_MEMORY: return "pinned_host_memory";
    case CUBEC_CAPABILITY_HOST_IMPORT: return "host_import";
    case CUBEC_CAPABILITY_VULKAN_HANDLES: return "vulkan_handles";
    case CUBEC_CAPABILITY_REUSABLE_GRAPHS: return "reusable_graphs";
    case CUBEC_CAPABILITY_CALIBRATED_CLOCK: return "calibrated_clock";
    case CUBEC_CAPABILITY_DEVICE_TIMESTAMPS: return "device_timestamps";
    case CUBEC_CAPABILITY_TEXEL_BUFFERS: return "texel_buffers";
    case CUBEC_CAPABILITY_IMAGES: return "images";
    case CUBEC_CAPABILITY_WGSL: return "wgsl";
    case CUBEC_CAPABILITY_RUNS_KERNELS: return "runs_kernels";
    default: return "unknown";
    }
}
