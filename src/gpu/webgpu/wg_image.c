/* The WebGPU backend's images: none yet (docs/device.md). */
#include "gpu/webgpu/wg_internal.h"

#include "base/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* --- Images: none ---------------------------------------------------------------------------- */

cubec_status wg_image_requirements(gpu *g, const gpu_image_desc *desc, uint64_t *out_size,
                                   uint64_t *out_alignment)
{
    (void)g;
    (void)desc;
    (void)out_size;
    (void)out_alignment;
    return status_make(CUBEC_UNSUPPORTED, "the webgpu backend has no images yet");
}

cubec_status wg_image_create(gpu *g, const gpu_image_desc *desc, gpu_mem *m, uint64_t offset,
                             gpu_image **out)
{
    (void)g;
    (void)desc;
    (void)m;
    (void)offset;
    (void)out;
    return status_make(CUBEC_UNSUPPORTED, "the webgpu backend has no images yet");
}

void wg_image_destroy(gpu *g, gpu_image *im)
{
    (void)g;
    (void)im;
}
