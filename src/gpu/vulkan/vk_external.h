/* External memory and the exported timeline on Vulkan (vk_external.c): which handles a physical
 * device can export and import, exportable pages, their opaque fds, imports of such fds and the
 * timeline semaphore's fd (docs/multi-device.md). */
#ifndef CUBEC_GPU_VK_EXTERNAL_H
#define CUBEC_GPU_VK_EXTERNAL_H

#include "gpu/gpu.h"

#include <vulkan/vulkan.h>

/* The usage of every device page's VkBuffer (vk_gpu.c's pages and the external ones alike, so an
 * imported page binds wherever a page does). */
static inline VkBufferUsageFlags vk_page_usage(int device_address)
{
    return VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
           VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT |
           VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
           (device_address ? VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT : 0);
}

/* What `pd` can do with opaque fds: pages of `usage` exported and imported (*out_dedicated_only
 * set when only dedicated allocations can), and timeline semaphores exported. Each needs its
 * device extension too (VK_KHR_external_memory_fd, VK_KHR_external_semaphore_fd). */
int vk_external_memory_supported(VkPhysicalDevice pd, VkBufferUsageFlags usage,
                                 int *out_dedicated_only);
int vk_external_timeline_supported(VkPhysicalDevice pd);
/* VkPhysicalDeviceIDProperties.deviceUUID. */
void vk_device_uuid(VkPhysicalDevice pd, uint8_t out[16]);

/* The gpu_ops entries (gpu.h). */
MUST_USE cubec_status vk_mem_create_exportable(gpu *g, uint64_t size, gpu_mem **out);
MUST_USE cubec_status vk_mem_export(gpu *g, gpu_mem *m, gpu_export *out);
MUST_USE cubec_status vk_mem_import_fd(gpu *g, int fd, uint64_t allocation_size, int dedicated,
                                       gpu_mem **out);
MUST_USE cubec_status vk_timeline_export(gpu *g, int *out_fd);
MUST_USE cubec_status vk_inbound_export(gpu *g, int *out_fd);

#endif
