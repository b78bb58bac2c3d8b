/* The null backend: a gpu (gpu.h) made of host memory that runs no kernels, so that the server's
 * logic (ordering, barriers, hazards, failures, graphs) can be tested in milliseconds and
 * without Vulkan.
 *
 * It promises: memory is zeroed host memory, 64-byte aligned, always mappable (device memory too,
 * unless desc->force_staging asks for the discrete paths); copies, fills, timestamps and query
 * resets are carried out exactly, in recording order, when the command buffer is submitted;
 * dispatches do nothing (the server marks their outputs written); the timeline reaches a
 * submission's value at once, or desc->null_delay_us after the submission; with
 * desc->null_heap_bytes set, device memory beyond that many bytes in all is refused with
 * CUBEC_OUT_OF_MEMORY, as a full driver heap would be (the info's device_local_heap_size is then
 * the cap); with desc->null_noncoherent, mapped memory other than HOST and IMPORTED is a host copy
 * of the device's bytes that only mem_flush carries to the device and only mem_invalidate
 * refreshes, and a submission that reads upload or metadata bytes written without a flush is
 * refused (the seam's contract, gpu.h, checked). What Vulkan's
 * validation layer would refuse (out-of-range copies, unaligned fills or bindings, a command
 * buffer reset while in flight, signal values that do not increase) is refused with a status,
 * so a server bug shows up as an error in the null backend's tests too.
 *
 * Enumeration: there is one null device, "cubec null device", at index 0. */
#ifndef CUBEC_GPU_NULL_NULL_GPU_H
#define CUBEC_GPU_NULL_NULL_GPU_H

#include "gpu/gpu.h"

#include <stdint.h>

/* Opens the null device; `desc` may be NULL (defaults: no delay, unified memory, push
 * descriptors). select_by_index and name select like the Vulkan backend (only index 0 and
 * substrings of "cubec null device" match); validation and on_validation are ignored. */
MUST_USE cubec_status null_gpu_open(const gpu_open_desc *desc, gpu **out);
/* Always 1. */
MUST_USE cubec_status null_gpu_count(uint32_t *out_count);
/* The info of device 0 as null_gpu_open reports it with the default desc. */
MUST_USE cubec_status null_gpu_peek(uint32_t index, cubec_device_info *out);

#endif
