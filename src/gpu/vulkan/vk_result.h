/* One table from VkResult to cubec status codes and names. */
#ifndef CUBEC_GPU_VK_RESULT_H
#define CUBEC_GPU_VK_RESULT_H

#include "base/status.h"

#include <vulkan/vulkan.h>

const char *vk_result_name(VkResult r);
/* NULL for VK_SUCCESS; otherwise an error "<what>: <VkResult name>" with the matching code. */
cubec_status vk_status(VkResult r, const char *what);

#define VK_RETURN_IF_ERROR(call, what)                                                             \
    do {                                                                                           \
        VkResult vk_r_ = (call);                                                                   \
        if (vk_r_ != VK_SUCCESS) return vk_status(vk_r_, what);                                    \
    } while (0)

#endif
