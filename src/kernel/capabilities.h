/* Which SPIR-V capabilities a kernel may declare on a device.
 *
 * A module that declares a capability the device has not enabled runs into undefined behaviour
 * (the validation layer reports it, a driver may crash or compute garbage), so cubec refuses such
 * a kernel at cubec_kernel_create. Each capability is one of: available on every Vulkan 1.2
 * compute device (Shader, GroupNonUniform...); available when one cubec_feature is enabled
 * (Float16 needs float16, StorageBuffer16BitAccess needs storage_buffer_16bit...); or needing a
 * Vulkan feature or extension cubec never enables (AtomicFloat32AddEXT, graphics stages...),
 * which is refused everywhere. A capability this module does not know is refused too, named by
 * its number.
 *
 * Pure: the capability list comes from reflection (reflect.h), the feature set from the device;
 * no Vulkan, unit-tested without a GPU. */
#ifndef CUBEC_KERNEL_CAPABILITIES_H
#define CUBEC_KERNEL_CAPABILITIES_H

#include "base/features.h"
#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

/* The SPIR-V name of a capability ("StorageBuffer16BitAccess"), or NULL when it is unknown here. */
const char *capability_name(uint32_t capability);

/* NULL when `features` covers every capability of caps[0..count); otherwise CUBEC_UNSUPPORTED:
 * "kernel 'K' needs SPIR-V capability C, which needs the device feature f (Vulkan v): device 'D'
 * lacks it" (or "...turned off on device 'D' by [device] disable_features" when the device has
 * it and the configuration disabled it, or "...which cubec does not enable on any device"),
 * followed by the names of any other capabilities refused. */
cubec_status capabilities_check(const char *kernel, const char *device, const uint32_t *caps,
                                uint32_t count, const feature_set *features);

/* The OpCapability operands of a module, read from its words without parsing the rest (at most
 * `max`; 0 for words that are not a SPIR-V module). For checking a module's capabilities before
 * the validator sees it: this SPIRV-Tools refuses capabilities newer than itself
 * (CooperativeMatrixKHR, BFloat16TypeKHR) as invalid, where the true answer on a device without
 * them is CUBEC_UNSUPPORTED. */
uint32_t capabilities_scan(const uint32_t *words, size_t word_count, uint32_t *caps, uint32_t max);
/* capabilities_check of the capabilities of `words` that need a device feature, before the
 * module is validated: the validator keeps its say on everything else (a capability Vulkan
 * forbids is invalid SPIR-V, not unsupported). */
cubec_status capabilities_precheck(const char *kernel, const char *device, const uint32_t *words,
                                   size_t word_count, const feature_set *features);

#endif
