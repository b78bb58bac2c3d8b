/* The null backend (see null_gpu.c). */
#ifndef CUBEC_GPU_NULL_GPU_H
#define CUBEC_GPU_NULL_GPU_H

#include "gpu/gpu.h"

cubec_status null_gpu_open(const gpu_open_desc *desc, gpu **out);
cubec_status null_gpu_count(uint32_t *out_count);
cubec_status null_gpu_peek(uint32_t index, cubec_device_info *out);

#endif
