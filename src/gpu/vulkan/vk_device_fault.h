/* VK_EXT_device_fault: what the driver can tell about why the device was lost (a description,
 * the faulting addresses, vendor records). Enabled at open where the device has it; a status of
 * CUBEC_DEVICE_LOST from a submit or a wait then carries the driver's report, so the error a
 * program sees names the fault and not only VK_ERROR_DEVICE_LOST. */
#ifndef CUBEC_GPU_VK_DEVICE_FAULT_H
#define CUBEC_GPU_VK_DEVICE_FAULT_H

#include "base/status.h"

#include <stddef.h>
#include <vulkan/vulkan.h>

/* Records of each kind a report shows at most (the rest are counted). */
#define VK_DEVICE_FAULT_MAX_RECORDS 8

/* Whether the device has the extension and its deviceFault feature. */
int vk_device_fault_supported(VkPhysicalDevice physical);

/* "<description>; read of an invalid address 0x... (+/- 0x...); vendor: <description> (code
 * 0x..., data 0x...)" into `out` (always terminated; cut at `cap`). `total_*` are the counts the
 * driver reported; only the first `shown_*` records are in `info`. */
void vk_device_fault_format(const VkDeviceFaultInfoEXT *info, uint32_t shown_addresses,
                            uint32_t total_addresses, uint32_t shown_vendor, uint32_t total_vendor,
                            char *out, size_t cap);

/* `lost` (consumed) with the driver's fault report appended when it is a CUBEC_DEVICE_LOST and
 * `get_info` is not NULL; otherwise `lost` as it is. */
cubec_status vk_device_fault_annotate(VkDevice device, PFN_vkGetDeviceFaultInfoEXT get_info,
                                      cubec_status lost);

#endif
