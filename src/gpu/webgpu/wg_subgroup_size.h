/* The WebGPU backend's subgroup sizes, measured by a kernel where the implementation reports
 * none (wg_subgroup_size.c). */
#ifndef CUBEC_GPU_WEBGPU_WG_SUBGROUP_SIZE_H
#define CUBEC_GPU_WEBGPU_WG_SUBGROUP_SIZE_H

#include "gpu/webgpu/wg_internal.h"

/* Sets info's subgroup_size, min_subgroup_size and max_subgroup_size from what a kernel of the
 * device sees; leaves them (and logs a warning) when the measure fails. Needs the device's
 * subgroup feature enabled and wgpu-native (the kernel has no `enable subgroups;`). */
void wg_measure_subgroup_size(wg_gpu *w, cubec_device_info *info);

#endif
