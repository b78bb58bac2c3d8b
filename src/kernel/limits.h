/* A reflected kernel against what a device allows: the limits cubec can know at
 * cubec_kernel_create, and the uses of memory that the capability list (capabilities.h) does not
 * show.
 *
 * Checked: the workgroup size (each dimension, the invocations of one workgroup, and those
 * against the subgroups of a required subgroup size a workgroup may hold), the shared
 * (Workgroup) memory the module declares, the push-constant block, the metadata (info) block
 * against cubec's own CUBEC_KERNEL_MAX_INFO_BYTES, and 64-bit integer atomics on shared memory,
 * which need shaderSharedInt64Atomics, a feature cubec does not enable. A kernel past any of them
 * is refused with CUBEC_UNSUPPORTED naming the kernel, the value and the limit, before the driver
 * sees it: past a limit, Vulkan's behaviour is undefined (lavapipe ran a kernel declaring 256 MiB
 * of shared memory; a metadata block over the ring's chunk failed every launch at sync).
 *
 * Pure: the limits come from the device info, the kernel from reflection (reflect.h). */
#ifndef CUBEC_KERNEL_LIMITS_H
#define CUBEC_KERNEL_LIMITS_H

#include "base/status.h"
#include "kernel/reflect.h"

#include <stdint.h>

typedef struct kernel_limits {
    uint32_t max_workgroup_size[3];     /* maxComputeWorkGroupSize */
    uint32_t max_workgroup_invocations; /* maxComputeWorkGroupInvocations */
    uint32_t max_shared_memory_size;    /* maxComputeSharedMemorySize */
    uint32_t max_push_constants_size;   /* maxPushConstantsSize */
    uint32_t max_info_size;             /* CUBEC_KERNEL_MAX_INFO_BYTES: the metadata ring's chunk */
    /* The subgroup size the kernel requires (cubec_kernel_desc.required_subgroup_size) where the
     * pipeline will ask for it, and maxComputeWorkgroupSubgroups: a workgroup holds at most
     * their product of invocations. Either 0: no such limit (kernel_limits_of leaves them 0). */
    uint32_t required_subgroup_size;
    uint32_t max_workgroup_subgroups;
} kernel_limits;

/* The limits of a device (its cubec_device_info) with cubec's own. */
kernel_limits kernel_limits_of(const cubec_device_info *info);

/* NULL when `r` fits `limits`; otherwise CUBEC_UNSUPPORTED naming kernel `kernel`, what exceeds
 * which limit, and both numbers, e.g. "kernel 'k': 32772 bytes of shared (Workgroup) memory
 * exceed the device limit of 32768 bytes (maxComputeSharedMemorySize)". The first check that
 * fails is reported, in the order of the header comment. */
MUST_USE cubec_status kernel_limits_check(const char *kernel, const kernel_reflection *r,
                                          const kernel_limits *limits);

#endif
