/* A reflected kernel against the device's limits (see limits.h). */
#include "kernel/limits.h"

#include <inttypes.h>
#include <stdio.h>

kernel_limits kernel_limits_of(const cubec_device_info *info)
{
    kernel_limits l = {
        .max_workgroup_size = {info->max_workgroup_size[0], info->max_workgroup_size[1],
                               info->max_workgroup_size[2]},
        .max_workgroup_invocations = info->max_workgroup_invocations,
        .max_shared_memory_size = info->max_shared_memory_size,
        .max_push_constants_size = info->max_push_constants_size,
        .max_info_size = CUBEC_KERNEL_MAX_INFO_BYTES,
    };
    return l;
}

static const char axis[3] = {'x', 'y', 'z'};

/* Where specialization constants set the workgroup size, which ones and their values, so that a
 * refusal names what the caller gave ("; x is specialization constant 0 = 2048"); "" if none. */
static void spec_sources(const kernel_reflection *r, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < 3; i++) {
        if (!r->workgroup_size_spec[i]) continue;
        int w = snprintf(buf + at, cap - at, "%s%c is specialization constant %u = %u",
                         at ? ", " : "; ", axis[i], r->workgroup_size_spec[i] - 1u,
                         r->workgroup_size[i]);
        if (w < 0 || (size_t)w >= cap - at) break;
        at += (size_t)w;
    }
}

cubec_status kernel_limits_check(const char *kernel, const kernel_reflection *r,
                                 const kernel_limits *limits)
{
    const uint32_t *wg = r->workgroup_size;
    char from_spec[160];
    spec_sources(r, from_spec, sizeof from_spec);
    for (int i = 0; i < 3; i++)
        if (wg[i] > limits->max_workgroup_size[i])
            return status_make(CUBEC_UNSUPPORTED,
                               "kernel '%s': workgroup size %c = %u exceeds the device limit of "
                               "%u (maxComputeWorkGroupSize[%d])%s",
                               kernel, axis[i], wg[i], limits->max_workgroup_size[i], i, from_spec);
    uint64_t invocations = (uint64_t)wg[0] * wg[1] * wg[2];
    if (invocations > limits->max_workgroup_invocations)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': a workgroup of %u x %u x %u = %" PRIu64
                           " invocations exceeds the device limit of %u "
                           "(maxComputeWorkGroupInvocations)%s",
                           kernel, wg[0], wg[1], wg[2], invocations,
                           limits->max_workgroup_invocations, from_spec);
    uint64_t subgroups_hold =
        (uint64_t)limits->required_subgroup_size * limits->max_workgroup_subgroups;
    if (subgroups_hold && invocations > subgroups_hold)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': a workgroup of %u x %u x %u = %" PRIu64
                           " invocations exceeds the device limit of %" PRIu64
                           " with desc->required_subgroup_size %u (maxComputeWorkgroupSubgroups: "
                           "%u subgroups a workgroup)%s",
                           kernel, wg[0], wg[1], wg[2], invocations, subgroups_hold,
                           limits->required_subgroup_size, limits->max_workgroup_subgroups,
                           from_spec);
    if (r->shared_memory_size > limits->max_shared_memory_size)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': %" PRIu64
                           " bytes of shared (Workgroup) memory exceed the device limit of %u "
                           "bytes (maxComputeSharedMemorySize)",
                           kernel, r->shared_memory_size, limits->max_shared_memory_size);
    if (r->push_constant_size > limits->max_push_constants_size)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': push-constant block of %u bytes exceeds the device limit "
                           "of %u bytes (maxPushConstantsSize); declare metadata with CUBEC_INFO "
                           "in GLSL to let cubec move it to a buffer",
                           kernel, r->push_constant_size, limits->max_push_constants_size);
    if (r->info_buffer_size > limits->max_info_size)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': metadata (info) block of %u bytes exceeds cubec's limit "
                           "of %u bytes (CUBEC_KERNEL_MAX_INFO_BYTES); pass larger data in a "
                           "storage buffer",
                           kernel, r->info_buffer_size, limits->max_info_size);
    if (r->shared_int64_atomics)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s' needs SPIR-V capability Int64Atomics on shared "
                           "(Workgroup) memory, which needs the Vulkan feature "
                           "shaderSharedInt64Atomics that cubec does not enable on any device "
                           "(64-bit atomics on storage buffers need only int64_atomics)",
                           kernel);
    return NULL;
}
