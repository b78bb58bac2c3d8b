/* The Vulkan instance, the chosen physical device, the logical device and its compute queue, with
 * the limits and memory types the layers above need. Created once per cubec device. */
#ifndef CUBEC_GPU_VK_CONTEXT_H
#define CUBEC_GPU_VK_CONTEXT_H

#include "base/features.h"
#include "base/status.h"

#include <stdatomic.h>
#include <vulkan/vulkan.h>

typedef struct vk_context_desc {
    int select_by_index;
    uint32_t index;
    const char *name; /* substring of the device name */
    int validation;
    int force_staging;          /* treat unified memory as discrete (tests the staging paths) */
    int no_push_descriptors;    /* descriptor pools even when push descriptors exist */
    int robust;                 /* enable robustBufferAccess (and robustBufferAccess2) */
    uint32_t disabled_features; /* cubec_feature bits not to enable even when present */
    int queue_family;           /* 1 + the queue family to use; 0: chosen */
    void (*on_validation)(void *user, const char *message);
    void *on_validation_user;
} vk_context_desc;

typedef struct vk_context {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    /* Queue 1 of that family, created for the program's own submissions (cubec never submits
     * to it: cubec_device_get_vulkan_handles); VK_NULL_HANDLE when the family has one queue. */
    VkQueue program_queue;
    uint32_t physical_index;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memory;
    char driver_name[256];
    uint32_t device_memory_type;   /* pages: DEVICE_LOCAL, host-visible too when unified      */
    int unified;                   /* pages are host-visible and coherent: no staging        */
    uint32_t upload_memory_type;   /* HOST_VISIBLE|COHERENT for staging writes (discrete)    */
    uint32_t readback_memory_type; /* HOST_VISIBLE, HOST_CACHED preferred, for reads       */
    uint32_t host_memory_type;     /* HOST_VISIBLE|COHERENT, CACHED preferred: pinned memory */
    uint32_t metadata_memory_type; /* DEVICE_LOCAL|HOST_VISIBLE|COHERENT if any, else upload  */
    int metadata_device_local;     /* ... and it is device-local on a discrete device        */
    int scalar_block_layout;       /* enabled: std430 uniform blocks                         */
    int buffer_device_address;     /* enabled: pages have device addresses (cubec_buffer_raw) */
    int robust; /* the bounds-checked mode in force: 0, CUBEC_ROBUST_PAGE or CUBEC_ROBUST_BUFFER */
    /* VK_EXT_external_memory_host: the program's memory imported as buffers. 0 / NULL
     * without it. */
    uint64_t host_import_alignment;
    PFN_vkGetMemoryHostPointerPropertiesEXT get_host_pointer_properties;
    /* External handles as opaque fds (vk_external.c): pages exported and imported
     * (VK_KHR_external_memory_fd; dedicated allocations only where the driver says so), the
     * timeline exported (VK_KHR_external_semaphore_fd; then created exportable). 0 / NULL
     * without. */
    int export_memory;
    int external_dedicated_only;
    PFN_vkGetMemoryFdKHR get_memory_fd;
    int export_timeline;
    PFN_vkGetSemaphoreFdKHR get_semaphore_fd;
    uint64_t max_allocation_size;
    uint64_t device_local_heap_size;
    int memory_budget; /* VK_EXT_memory_budget is enabled: heaps report budget and usage */
    uint32_t subgroup_size;
    /* Pipelines can require a subgroup size (subgroupSizeControl enabled, compute among its
     * requiredSubgroupSizeStages), with at most max_workgroup_subgroups subgroups of that size in
     * a workgroup (maxComputeWorkgroupSubgroups). 0 without. */
    int required_subgroup_size;
    uint32_t max_workgroup_subgroups;
    int timestamps;          /* the queue writes timestamps                             */
    uint32_t timestamp_bits; /* valid bits of a timestamp (the counter wraps there)   */
    int host_query_reset;    /* vkResetQueryPool from the host (Vulkan 1.2 feature)    */
    feature_set features;    /* the optional shader features enabled at vkCreateDevice  */
    /* VK_EXT_calibrated_timestamps with CLOCK_MONOTONIC: maps device ticks to host time
     * exactly. NULL without it (traces then align the clocks around a submission). */
    PFN_vkGetCalibratedTimestampsEXT get_calibrated_timestamps;
    PFN_vkCmdPushDescriptorSetKHR push_descriptor; /* NULL when the extension is missing */
    /* VK_EXT_device_fault: the driver's report of a lost device. NULL without it. */
    PFN_vkGetDeviceFaultInfoEXT get_device_fault_info;
    void (*on_validation)(void *user, const char *message);
    void *on_validation_user;
    atomic_uint validation_messages;
} vk_context;

/* `ctx` must stay at a fixed address (the validation callback points at it). */
cubec_status vk_context_create(const vk_context_desc *desc, vk_context *ctx);
void vk_context_destroy(vk_context *ctx);
/* Index of the memory type with all of `required` (and most of `preferred`), or UINT32_MAX. */
uint32_t vk_find_memory_type(const vk_context *ctx, uint32_t type_bits,
                             VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred);
/* Enumeration without opening a device (for `cubec info`). */
cubec_status vk_physical_count(uint32_t *out_count);
cubec_status vk_physical_info(uint32_t index, cubec_device_info *out, uint32_t *out_default_index);
/* The seam's caps behind cubec_device_info.capabilities (gpu_capabilities) that device `index`
 * would be opened with: what cubec_device_peek reports. */
struct gpu_caps;
cubec_status vk_physical_caps(uint32_t index, struct gpu_caps *out);
/* The cubec formats whose uniform and storage texel buffers the device supports, a bit each. */
uint32_t vk_texel_formats(VkPhysicalDevice pd);
/* Fills the public info struct from a physical device (features: what the device has). */
void vk_fill_info(VkInstance instance, VkPhysicalDevice physical, cubec_device_info *out);

#endif
