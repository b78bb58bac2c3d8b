/* Vulkan instance/device creation and device selection (see vk_context.h).
 *
 * Selection: an explicit index or name wins; otherwise discrete > integrated > virtual > CPU, the
 * first of the best type in enumeration order. Without a GPU that is lavapipe. */
#include "gpu/vulkan/vk_context.h"
#include "gpu/vulkan/vk_external.h"

#include "base/log.h"
#include "gpu/gpu.h"
#include "gpu/vulkan/vk_device_fault.h"
#include "gpu/vulkan/vk_features.h"
#include "gpu/vulkan/vk_matrix_shapes.h"
#include "gpu/vulkan/vk_result.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT type,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)type;
    vk_context *ctx = user; /* NULL for the instance's own messages */
    if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
    LOG(LOG_ERROR, LOG_SYS_VALIDATION, "%s", data->pMessage);
    if (!ctx) return VK_FALSE;
    atomic_fetch_add(&ctx->validation_messages, 1);
    if (ctx->on_validation) ctx->on_validation(ctx->on_validation_user, data->pMessage);
    return VK_FALSE;
}

static int has_layer(const char *name)
{
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    VkLayerProperties *p = calloc(n ? n : 1, sizeof *p);
    if (!p) return 0;
    vkEnumerateInstanceLayerProperties(&n, p);
    int found = 0;
    for (uint32_t i = 0; i < n; i++)
        found |= strcmp(p[i].layerName, name) == 0;
    free(p);
    return found;
}

/* One VkInstance per process (and per validation setting), created on first use and kept.
 * The NVIDIA driver of the H200 machine (580.159.04) refuses vkCreateInstance with
 * VK_ERROR_INCOMPATIBLE_DRIVER after ~29 create/destroy cycles in one process, so a program that
 * opens and closes devices repeatedly (a test suite, `cubec bench`) would stop working. Keeping
 * the instance is the documented global state of this module, next to the config and logger. */
/* Warnings and errors of every kind go to on_debug_message with `user` (a vk_context, or NULL). */
static VkDebugUtilsMessengerCreateInfoEXT messenger_info(void *user)
{
    return (VkDebugUtilsMessengerCreateInfoEXT){
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_debug_message,
        .pUserData = user};
}

static pthread_mutex_t instances_lock = PTHREAD_MUTEX_INITIALIZER;
static VkInstance instances[2];

static cubec_status shared_instance(int validation, VkInstance *out)
{
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "cubec",
                             .pEngineName = "cubec",
                             .apiVersion = GPU_VULKAN_API_VERSION};
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pApplicationInfo = &app};
    /* Reports problems of vkCreateInstance itself (no device to pass them to: logged). */
    VkDebugUtilsMessengerCreateInfoEXT mci = messenger_info(NULL);
    static const VkValidationFeatureEnableEXT enables[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                        .pNext = &mci,
                                        .enabledValidationFeatureCount = 1,
                                        .pEnabledValidationFeatures = enables};
    if (validation) {
        if (!has_layer(layers[0]))
            return status_make(CUBEC_UNSUPPORTED,
                               "validation was requested but VK_LAYER_KHRONOS_validation is not "
                               "installed (apt-get install vulkan-validationlayers)");
        ci.enabledLayerCount = 1;
        ci.ppEnabledLayerNames = layers;
        ci.enabledExtensionCount = 1;
        ci.ppEnabledExtensionNames = exts;
        /* Synchronization validation too: missing barriers are the bugs a runtime that drops
         * barriers on purpose must never have. */
        ci.pNext = &features;
    }
    pthread_mutex_lock(&instances_lock);
    VkResult r = VK_SUCCESS;
    if (!instances[validation]) r = vkCreateInstance(&ci, NULL, &instances[validation]);
    *out = instances[validation];
    pthread_mutex_unlock(&instances_lock);
    /* The loader says INCOMPATIBLE_DRIVER when it finds no driver at all (no ICD installed, or
     * VK_ICD_FILENAMES naming nothing): the one failure a new user meets first, so it says what
     * to install rather than only the Vulkan code. */
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
        return status_make(
            CUBEC_UNSUPPORTED,
            "vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER: the Vulkan loader "
            "found no usable driver. Install one: mesa-vulkan-drivers for the CPU "
            "device (lavapipe; `apt-get install mesa-vulkan-drivers` on Debian), "
            "or your GPU's Vulkan driver; then `vulkaninfo --summary` (vulkan-tools) "
            "should list a device. If VK_ICD_FILENAMES or VK_DRIVER_FILES is set, "
            "check the files it names");
    return vk_status(r, "vkCreateInstance");
}

static cubec_status create_instance(int validation, vk_context *ctx)
{
    RETURN_IF_ERROR(shared_instance(validation ? 1 : 0, &ctx->instance));
    if (validation) {
        /* A messenger per device, so that each device's callback gets its own messages. */
        VkDebugUtilsMessengerCreateInfoEXT mci = messenger_info(ctx);
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
                ctx->instance, "vkCreateDebugUtilsMessengerEXT");
        if (create) create(ctx->instance, &mci, NULL, &ctx->messenger);
    }
    return NULL;
}

static int type_rank(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
    }
}

static uint32_t best_index(VkPhysicalDevice *list, uint32_t n)
{
    uint32_t best = 0;
    int rank = -1;
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(list[i], &p);
        if (type_rank(p.deviceType) > rank) {
            rank = type_rank(p.deviceType);
            best = i;
        }
    }
    return best;
}

static int has_device_extension(VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
    VkExtensionProperties *p = calloc(n ? n : 1, sizeof *p);
    if (!p) return 0;
    vkEnumerateDeviceExtensionProperties(pd, NULL, &n, p);
    int found = 0;
    for (uint32_t i = 0; i < n; i++)
        found |= strcmp(p[i].extensionName, name) == 0;
    free(p);
    return found;
}

/* The bounds-checked mode the device can give: CUBEC_ROBUST_BUFFER with VK_EXT_robustness2's
 * robustBufferAccess2, CUBEC_ROBUST_PAGE with robustBufferAccess alone, else 0. */
static int robust_level(VkPhysicalDevice pd)
{
    VkPhysicalDeviceRobustness2FeaturesEXT r2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT};
    int has_r2 = has_device_extension(pd, VK_EXT_ROBUSTNESS_2_EXTENSION_NAME);
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = has_r2 ? &r2 : NULL};
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    if (!f2.features.robustBufferAccess) return 0;
    return r2.robustBufferAccess2 ? CUBEC_ROBUST_BUFFER : CUBEC_ROBUST_PAGE;
}

void vk_fill_info(VkInstance instance, VkPhysicalDevice pd, cubec_device_info *out)
{
    memset(out, 0, sizeof *out);
    VkPhysicalDeviceSubgroupProperties sub = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES, .pNext = &sub};
    VkPhysicalDeviceDriverProperties drv = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, .pNext = &m3};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &drv};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    const VkPhysicalDeviceProperties *p = &p2.properties;
    const VkPhysicalDeviceLimits *l = &p->limits;
    snprintf(out->name, sizeof out->name, "%s", p->deviceName);
    snprintf(out->driver, sizeof out->driver, "%.120s %.120s", drv.driverName, drv.driverInfo);
    out->vendor_id = p->vendorID;
    out->device_id = p->deviceID;
    out->api_version = p->apiVersion;
    switch (p->deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: out->type = CUBEC_DEVICE_TYPE_DISCRETE; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: out->type = CUBEC_DEVICE_TYPE_INTEGRATED; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: out->type = CUBEC_DEVICE_TYPE_VIRTUAL; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: out->type = CUBEC_DEVICE_TYPE_CPU; break;
    default: out->type = CUBEC_DEVICE_TYPE_OTHER; break;
    }
    out->max_storage_buffer_range = l->maxStorageBufferRange;
    out->max_allocation_size = m3.maxMemoryAllocationSize;
    out->max_push_constants_size = l->maxPushConstantsSize;
    for (int i = 0; i < 3; i++) {
        out->max_workgroup_count[i] = l->maxComputeWorkGroupCount[i];
        out->max_workgroup_size[i] = l->maxComputeWorkGroupSize[i];
    }
    out->max_workgroup_invocations = l->maxComputeWorkGroupInvocations;
    out->max_shared_memory_size = l->maxComputeSharedMemorySize;
    out->storage_offset_alignment = l->minStorageBufferOffsetAlignment;
    out->uniform_offset_alignment = l->minUniformBufferOffsetAlignment;
    out->subgroup_size = sub.subgroupSize;
    out->timestamp_period_ns = l->timestampPeriod;
    out->push_descriptors = has_device_extension(pd, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    /* What create_device would enable (vk_gpu_open sets what it did). */
    int dedicated_only = 0;
    if (has_device_extension(pd, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME) &&
        vk_external_memory_supported(pd, vk_page_usage(0), &dedicated_only))
        out->external_handles |= CUBEC_EXTERNAL_MEMORY_FD;
    if (has_device_extension(pd, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME) &&
        vk_external_timeline_supported(pd))
        out->external_handles |= CUBEC_EXTERNAL_TIMELINE_FD;
    vk_device_uuid(pd, out->device_uuid);
    /* What cubec_host_register asks of addresses and sizes (server/host_memory.c): the import
     * alignment, or the page size where the device cannot import. */
    long page = sysconf(_SC_PAGESIZE);
    out->host_register_alignment = page > 0 ? (uint64_t)page : 4096;
    if (has_device_extension(pd, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME)) {
        VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
        VkPhysicalDeviceProperties2 host_props = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &hp};
        vkGetPhysicalDeviceProperties2(pd, &host_props);
        if (hp.minImportedHostPointerAlignment)
            out->host_register_alignment = hp.minImportedHostPointerAlignment;
    }
    vk_feature_chain have;
    out->features = vk_features_query(pd, &have);
    out->min_subgroup_size = out->max_subgroup_size = out->subgroup_size;
    if ((have.extensions & VK_FEATURE_EXT_SUBGROUP_SIZE_CONTROL) &&
        (out->features & CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL)) {
        VkPhysicalDeviceSubgroupSizeControlPropertiesEXT sc = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
        VkPhysicalDeviceProperties2 sc2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                           .pNext = &sc};
        vkGetPhysicalDeviceProperties2(pd, &sc2);
        if ((sc.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) && sc.minSubgroupSize &&
            sc.minSubgroupSize <= sc.maxSubgroupSize) {
            out->min_subgroup_size = sc.minSubgroupSize;
            out->max_subgroup_size = sc.maxSubgroupSize;
        }
    }
    vk_matrix_shapes_query(instance, pd, have.extensions, out);
    out->robust = robust_level(pd); /* what the mode would be; vk_gpu_open sets what it is */
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    for (uint32_t i = 0; i < mp.memoryHeapCount; i++)
        if (mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT &&
            mp.memoryHeaps[i].size > out->device_local_heap_size)
            out->device_local_heap_size = mp.memoryHeaps[i].size;
    /* Unified: some DEVICE_LOCAL type is also HOST_VISIBLE|COHERENT and the device is not
     * discrete (a discrete GPU's BAR window is slow to read from the host). */
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
        VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                     VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        if ((f & want) == want && out->type != CUBEC_DEVICE_TYPE_DISCRETE) out->unified_memory = 1;
    }
}

uint32_t vk_find_memory_type(const vk_context *ctx, uint32_t bits, VkMemoryPropertyFlags required,
                             VkMemoryPropertyFlags preferred)
{
    uint32_t best = UINT32_MAX;
    int best_score = -1000;
    for (uint32_t i = 0; i < ctx->memory.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = ctx->memory.memoryTypes[i].propertyFlags;
        if (!(bits & (1u << i)) || (f & required) != required) continue;
        int score =
            __builtin_popcount(f & preferred) * 2 - __builtin_popcount(f & ~required & ~preferred);
        if (score > best_score) {
            best_score = score;
            best = i;
        }
    }
    return best;
}

static cubec_status choose_physical(vk_context *ctx, const vk_context_desc *desc)
{
    uint32_t n = 0;
    VK_RETURN_IF_ERROR(vkEnumeratePhysicalDevices(ctx->instance, &n, NULL),
                       "vkEnumeratePhysicalDevices");
    if (n == 0)
        return status_make(CUBEC_NOT_FOUND, "no Vulkan device found (on Debian: apt-get install "
                                            "mesa-vulkan-drivers for the CPU driver lavapipe)");
    VkPhysicalDevice *list = calloc(n, sizeof(VkPhysicalDevice));
    if (!list) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory");
    vkEnumeratePhysicalDevices(ctx->instance, &n, list);
    uint32_t pick = UINT32_MAX;
    cubec_status err = NULL;
    if (desc->select_by_index) {
        if (desc->index >= n)
            err = status_make(CUBEC_NOT_FOUND, "device index %u: only %u device(s) present",
                              desc->index, n);
        else
            pick = desc->index;
    } else if (desc->name && *desc->name) {
        for (uint32_t i = 0; i < n && pick == UINT32_MAX; i++) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(list[i], &p);
            if (strstr(p.deviceName, desc->name)) pick = i;
        }
        if (pick == UINT32_MAX)
            err = status_make(CUBEC_NOT_FOUND, "no device name contains '%s' (see `cubec info`)",
                              desc->name);
    } else {
        pick = best_index(list, n);
    }
    if (!err) {
        ctx->physical = list[pick];
        ctx->physical_index = pick;
    }
    free(list);
    return err;
}

/* 1 when the device can sample its timestamp counter together with CLOCK_MONOTONIC. */
static int monotonic_calibration(VkInstance instance, VkPhysicalDevice physical)
{
    if (!has_device_extension(physical, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME)) return 0;
    PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT domains =
        (PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT)vkGetInstanceProcAddr(
            instance, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT");
    if (!domains) return 0;
    VkTimeDomainEXT list[8];
    uint32_t n = 8;
    if (domains(physical, &n, list) < 0) return 0;
    int device = 0, monotonic = 0;
    for (uint32_t i = 0; i < n; i++) {
        device |= list[i] == VK_TIME_DOMAIN_DEVICE_EXT;
        monotonic |= list[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
    }
    return device && monotonic;
}

/* The queue family an open uses unless [device] queue_family names one: a compute family without
 * graphics where one writes timestamps (the H200's async compute family: a submission completes
 * ~1 us sooner there than on the universal one), else the first compute family; UINT32_MAX
 * without any. */
static uint32_t default_family(const VkQueueFamilyProperties *qf, uint32_t nq)
{
    for (uint32_t i = 0; i < nq; i++)
        if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) &&
            !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) && qf[i].timestampValidBits >= 36)
            return i;
    for (uint32_t i = 0; i < nq; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return i;
    return UINT32_MAX;
}

static cubec_status create_device(vk_context *ctx, int allow_push, uint32_t disabled_features,
                                  int queue_family, int robust)
{
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &nq, NULL);
    VkQueueFamilyProperties qf[32];
    if (nq > 32) nq = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &nq, qf);
    uint32_t family = UINT32_MAX;
    if (queue_family > 0) {
        uint32_t want = (uint32_t)queue_family - 1;
        if (want >= nq || !(qf[want].queueFlags & VK_QUEUE_COMPUTE_BIT))
            return status_make(
                CUBEC_INVALID_ARGUMENT,
                "[device] queue_family = %u (CUBEC_QUEUE_FAMILY): device '%s' has %u "
                "queue families and that one is %s",
                want, ctx->props.deviceName, nq,
                want >= nq ? "not among them" : "not a compute family");
        family = want;
    } else
        family = default_family(qf, nq);
    if (family == UINT32_MAX)
        return status_make(CUBEC_UNSUPPORTED, "device '%s' has no compute queue",
                           ctx->props.deviceName);
    ctx->queue_family = family;
    ctx->timestamps = qf[family].timestampValidBits > 0;
    ctx->timestamp_bits = qf[family].timestampValidBits;

    /* The optional features: every one the device has (less those the configuration turns
     * off), and nothing it lacks (a kernel that needs more is refused at creation). Enabling them
     * is what lets kernels use 8- and 16-bit types in buffers and push constants without the
     * validation layer objecting. */
    vk_feature_chain have, want;
    uint32_t supported = vk_features_query(ctx->physical, &have);
    if (!have.v12.timelineSemaphore)
        return status_make(CUBEC_UNSUPPORTED, "device '%s' lacks timeline semaphores",
                           ctx->props.deviceName);
    ctx->features.enabled = vk_features_mask(supported, disabled_features);
    ctx->features.disabled = supported & ~ctx->features.enabled;
    vk_features_want(ctx->features.enabled, &want);
    want.v12.timelineSemaphore = VK_TRUE;
    want.v12.hostQueryReset = have.v12.hostQueryReset;
    want.v12.scalarBlockLayout = have.v12.scalarBlockLayout;
    want.v12.uniformBufferStandardLayout = have.v12.uniformBufferStandardLayout;
    ctx->scalar_block_layout = have.v12.scalarBlockLayout == VK_TRUE;
    want.v12.bufferDeviceAddress = have.v12.bufferDeviceAddress;
    ctx->buffer_device_address = have.v12.bufferDeviceAddress == VK_TRUE;

    const char *exts[10 + VK_FEATURE_EXT_COUNT];
    uint32_t next = vk_features_extension_names(&want, exts, VK_FEATURE_EXT_COUNT);
    int push =
        allow_push && has_device_extension(ctx->physical, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    if (push) exts[next++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
    int calibrated = ctx->timestamps && monotonic_calibration(ctx->instance, ctx->physical);
    if (calibrated) exts[next++] = VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME;
    /* A lost device's error then carries the driver's report of the fault (docs/errors.md). */
    int fault_report = vk_device_fault_supported(ctx->physical);
    VkPhysicalDeviceFaultFeaturesEXT fault = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FAULT_FEATURES_EXT, .deviceFault = VK_TRUE};
    if (fault_report) {
        exts[next++] = VK_EXT_DEVICE_FAULT_EXTENSION_NAME;
        fault.pNext = want.v12.pNext;
        want.v12.pNext = &fault;
    }
    /* Registered host memory is copied by DMA straight from the program's pages (cubec.h,
     * "Host memory"). */
    int host_import =
        has_device_extension(ctx->physical, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    if (host_import) exts[next++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    /* The bounds-checked mode ([device] robust): robustBufferAccess bounds an access by the
     * VkBuffer, which is a whole pool page in cubec; robustBufferAccess2 by the descriptor's
     * range, which is the buffer's own size (vk_emit_bind_buffers), so only it keeps a write
     * past one buffer off its neighbours in the page. */
    VkPhysicalDeviceRobustness2FeaturesEXT robust2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT,
        .robustBufferAccess2 = VK_TRUE};
    ctx->robust = robust ? robust_level(ctx->physical) : 0;
    if (ctx->robust) want.core.features.robustBufferAccess = VK_TRUE;
    if (ctx->robust == CUBEC_ROBUST_BUFFER) {
        exts[next++] = VK_EXT_ROBUSTNESS_2_EXTENSION_NAME;
        robust2.pNext = want.v12.pNext;
        want.v12.pNext = &robust2;
    }
    /* Pages exported to and imported from other devices and CUDA as opaque fds, and the
     * timeline exported likewise (docs/multi-device.md): only where the driver offers both
     * directions for the usage cubec gives pages. */
    int external_dedicated_only = 0;
    ctx->export_memory =
        has_device_extension(ctx->physical, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME) &&
        vk_external_memory_supported(ctx->physical, vk_page_usage(ctx->buffer_device_address),
                                     &external_dedicated_only);
    ctx->external_dedicated_only = external_dedicated_only;
    if (ctx->export_memory) exts[next++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
    ctx->export_timeline =
        has_device_extension(ctx->physical, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME) &&
        vk_external_timeline_supported(ctx->physical);
    if (ctx->export_timeline) exts[next++] = VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME;
    /* The heap's budget and this process's use of it, for the memory report (docs/memory.md). */
    ctx->memory_budget = has_device_extension(ctx->physical, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    if (ctx->memory_budget) exts[next++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
    /* A second queue of the family, where it has one, for a program's own Vulkan work on
     * cubec's memory (cubec_device_get_vulkan_handles): queues are externally synchronized, and
     * cubec's own is submitted to from its threads at any time. */
    const float prio[2] = {1.0f, 1.0f};
    const uint32_t queues = qf[family].queueCount >= 2 ? 2 : 1;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = family,
                                   .queueCount = queues,
                                   .pQueuePriorities = prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &want.core,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci,
                              .enabledExtensionCount = next,
                              .ppEnabledExtensionNames = exts};
    VK_RETURN_IF_ERROR(vkCreateDevice(ctx->physical, &dci, NULL, &ctx->device), "vkCreateDevice");
    ctx->host_query_reset = have.v12.hostQueryReset == VK_TRUE;
    vkGetDeviceQueue(ctx->device, family, 0, &ctx->queue);
    ctx->program_queue = VK_NULL_HANDLE;
    if (queues == 2) vkGetDeviceQueue(ctx->device, family, 1, &ctx->program_queue);
    if (push)
        ctx->push_descriptor = (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(
            ctx->device, "vkCmdPushDescriptorSetKHR");
    if (host_import) {
        VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = &hp};
        vkGetPhysicalDeviceProperties2(ctx->physical, &p2);
        ctx->host_import_alignment = hp.minImportedHostPointerAlignment;
        ctx->get_host_pointer_properties =
            (PFN_vkGetMemoryHostPointerPropertiesEXT)vkGetDeviceProcAddr(
                ctx->device, "vkGetMemoryHostPointerPropertiesEXT");
        if (!ctx->get_host_pointer_properties) ctx->host_import_alignment = 0;
    }
    if (ctx->export_memory) {
        ctx->get_memory_fd =
            (PFN_vkGetMemoryFdKHR)vkGetDeviceProcAddr(ctx->device, "vkGetMemoryFdKHR");
        if (!ctx->get_memory_fd) ctx->export_memory = 0;
    }
    if (ctx->export_timeline) {
        ctx->get_semaphore_fd =
            (PFN_vkGetSemaphoreFdKHR)vkGetDeviceProcAddr(ctx->device, "vkGetSemaphoreFdKHR");
        if (!ctx->get_semaphore_fd) ctx->export_timeline = 0;
    }
    if (fault_report)
        ctx->get_device_fault_info = (PFN_vkGetDeviceFaultInfoEXT)vkGetDeviceProcAddr(
            ctx->device, "vkGetDeviceFaultInfoEXT");
    if (calibrated)
        ctx->get_calibrated_timestamps = (PFN_vkGetCalibratedTimestampsEXT)vkGetDeviceProcAddr(
            ctx->device, "vkGetCalibratedTimestampsEXT");
    return NULL;
}

/* Whether pipelines can require a subgroup size: subgroupSizeControl is enabled (so is its
 * extension) and requiredSubgroupSizeStages include compute, as vk_fill_info asks before it
 * reports the range; and how many subgroups a workgroup of such a pipeline may hold. */
static void query_size_control(vk_context *ctx)
{
    if (!(ctx->features.enabled & CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL)) return;
    VkPhysicalDeviceSubgroupSizeControlPropertiesEXT sc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sc};
    vkGetPhysicalDeviceProperties2(ctx->physical, &p2);
    ctx->required_subgroup_size = (sc.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                                  sc.minSubgroupSize && sc.minSubgroupSize <= sc.maxSubgroupSize;
    ctx->max_workgroup_subgroups = sc.maxComputeWorkgroupSubgroups;
}

cubec_status vk_context_create(const vk_context_desc *desc, vk_context *ctx)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->on_validation = desc->on_validation;
    ctx->on_validation_user = desc->on_validation_user;
    cubec_status err = create_instance(desc->validation, ctx);
    if (!err) err = choose_physical(ctx, desc);
    if (!err) {
        vkGetPhysicalDeviceProperties(ctx->physical, &ctx->props);
        vkGetPhysicalDeviceMemoryProperties(ctx->physical, &ctx->memory);
        cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
        vk_fill_info(ctx->instance, ctx->physical, &info);
        snprintf(ctx->driver_name, sizeof ctx->driver_name, "%s", info.driver);
        ctx->max_allocation_size = info.max_allocation_size;
        ctx->device_local_heap_size = info.device_local_heap_size;
        ctx->subgroup_size = info.subgroup_size;
        ctx->unified = info.unified_memory && !desc->force_staging;
        err = create_device(ctx, !desc->no_push_descriptors, desc->disabled_features,
                            desc->queue_family, desc->robust);
        if (!err) query_size_control(ctx);
    }
    if (!err) {
        VkMemoryPropertyFlags dl = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
        VkMemoryPropertyFlags hv =
            VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        if (ctx->unified) {
            ctx->device_memory_type =
                vk_find_memory_type(ctx, ~0u, dl | hv, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
        } else {
            /* Plain device-local memory: not the BAR window, which is small on most GPUs. */
            ctx->device_memory_type = vk_find_memory_type(ctx, ~0u, dl, 0);
            uint32_t i = ctx->device_memory_type;
            if (i != UINT32_MAX &&
                ctx->memory.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
                /* Prefer a type that is not host-visible when one exists. */
                for (uint32_t j = 0; j < ctx->memory.memoryTypeCount; j++) {
                    VkMemoryPropertyFlags f = ctx->memory.memoryTypes[j].propertyFlags;
                    if ((f & dl) && !(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) {
                        ctx->device_memory_type = j;
                        break;
                    }
                }
            }
        }
        ctx->upload_memory_type = vk_find_memory_type(ctx, ~0u, hv, 0);
        ctx->readback_memory_type = vk_find_memory_type(
            ctx, ~0u, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
            VK_MEMORY_PROPERTY_HOST_CACHED_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
        ctx->host_memory_type =
            vk_find_memory_type(ctx, ~0u, hv, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
        /* Metadata in VRAM through the BAR window where the device maps it (resizable BAR):
         * an H200 reads a launch's metadata from host memory over PCIe (+1 us a dependent
         * launch), from there at the cost of a push constant or less. */
        ctx->metadata_memory_type = ctx->upload_memory_type;
        if (!ctx->unified) {
            uint32_t t = vk_find_memory_type(ctx, ~0u, dl | hv, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
            if (t != UINT32_MAX) {
                ctx->metadata_memory_type = t;
                ctx->metadata_device_local = 1;
            }
        }
        if (ctx->device_memory_type == UINT32_MAX || ctx->upload_memory_type == UINT32_MAX ||
            ctx->readback_memory_type == UINT32_MAX)
            err = status_make(CUBEC_UNSUPPORTED, "device '%s' lacks a usable memory type",
                              ctx->props.deviceName);
    }
    if (err) {
        vk_context_destroy(ctx);
        return err;
    }
    LOG(LOG_INFO, LOG_SYS_DEVICE,
        "selected device %u '%s' (%s), %s memory, push descriptors %s, fault reports %s, "
        "bounds checks %s",
        ctx->physical_index, ctx->props.deviceName, ctx->driver_name,
        ctx->unified ? "unified" : "discrete", ctx->push_descriptor ? "on" : "off",
        ctx->get_device_fault_info ? "on" : "off",
        ctx->robust == CUBEC_ROBUST_BUFFER ? "per buffer (robustBufferAccess2)"
        : ctx->robust                      ? "per page (robustBufferAccess)"
                                           : "off");
    /* Said on its own line: a user who turned validation on (CUBEC_VALIDATION=1) and sees no
     * message should be able to tell a clean program from a layer that never loaded. */
    if (desc->validation)
        LOG(LOG_INFO, LOG_SYS_DEVICE,
            "validation layer on: VK_LAYER_KHRONOS_validation with synchronization validation; "
            "its messages are logged as errors (subsystem validation)");
    return NULL;
}

void vk_context_destroy(vk_context *ctx)
{
    if (ctx->device) vkDestroyDevice(ctx->device, NULL);
    if (ctx->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
                ctx->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(ctx->instance, ctx->messenger, NULL);
    }
    /* The instance is shared and kept (see shared_instance). */
    ctx->device = VK_NULL_HANDLE;
    ctx->instance = VK_NULL_HANDLE;
}

static cubec_status with_devices(VkInstance *inst, VkPhysicalDevice **list, uint32_t *n)
{
    RETURN_IF_ERROR(shared_instance(0, inst));
    *n = 0;
    vkEnumeratePhysicalDevices(*inst, n, NULL);
    *list = calloc(*n ? *n : 1, sizeof(VkPhysicalDevice));
    if (!*list) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory");
    vkEnumeratePhysicalDevices(*inst, n, *list);
    return NULL;
}

cubec_status vk_physical_count(uint32_t *out_count)
{
    VkInstance inst;
    VkPhysicalDevice *list;
    RETURN_IF_ERROR(with_devices(&inst, &list, out_count));
    free(list);
    return NULL;
}

cubec_status vk_physical_caps(uint32_t index, gpu_caps *out)
{
    VkInstance inst;
    VkPhysicalDevice *list;
    uint32_t n;
    RETURN_IF_ERROR(with_devices(&inst, &list, &n));
    if (index >= n) {
        free(list);
        return INVALID_ARG("index: %u is out of range, %u device(s) present", index, n);
    }
    VkPhysicalDevice pd = list[index];
    free(list);
    /* As create_device and vk_gpu_open decide them, with the configuration's defaults. */
    *out = (gpu_caps){.host_memory = 1, .reusable_cmds = 1, .runs_kernels = 1};
    if (has_device_extension(pd, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME)) {
        VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = &hp};
        vkGetPhysicalDeviceProperties2(pd, &p2);
        out->host_import_alignment = hp.minImportedHostPointerAlignment;
    }
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties qf[32];
    if (nq > 32) nq = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
    uint32_t family = default_family(qf, nq);
    out->timestamps = family != UINT32_MAX && qf[family].timestampValidBits > 0;
    out->calibrated_clock = out->timestamps && monotonic_calibration(inst, pd);
    out->texel_formats = vk_texel_formats(pd);
    return NULL;
}

cubec_status vk_physical_info(uint32_t index, cubec_device_info *out, uint32_t *out_default_index)
{
    VkInstance inst;
    VkPhysicalDevice *list;
    uint32_t n;
    RETURN_IF_ERROR(with_devices(&inst, &list, &n));
    cubec_status err = NULL;
    if (index >= n)
        err = INVALID_ARG("index: %u is out of range, %u device(s) present", index, n);
    else {
        vk_fill_info(inst, list[index], out);
        if (out_default_index) *out_default_index = best_index(list, n);
    }
    free(list);
    return err;
}
