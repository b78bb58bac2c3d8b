/* The parts of a webgpu device's driver string (tools/webgpu_driver.c), which `cubec info` shows
 * on lines of their own and under a "webgpu" object in its JSON. The backend writes the string
 * (src/gpu/webgpu/wg_gpu.c, docs/device.md): cubec_device_info has one driver field for every
 * backend, and on webgpu the facts behind it are the implementation's and the adapter's. */
#ifndef CUBEC_TOOLS_WEBGPU_DRIVER_H
#define CUBEC_TOOLS_WEBGPU_DRIVER_H

typedef struct webgpu_driver {
    char implementation[64]; /* "wgpu-native 29.0.1.1", or "" where the library gives none */
    char library[256];       /* the library cubec loaded */
    char backend[32];        /* the adapter's backend: "Vulkan", "Metal", "D3D12"... */
    char description[256];   /* the adapter's description (its driver) */
} webgpu_driver;

/* Splits "WebGPU ([IMPLEMENTATION, ]LIBRARY) on BACKEND: DESCRIPTION"; 0 when `driver` is not in
 * that form (the caller then shows it whole). */
int webgpu_driver_parse(const char *driver, webgpu_driver *out);

#endif
