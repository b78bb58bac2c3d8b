/* The raw Vulkan baseline's context and helpers (see raw_vulkan.h for what it promises). */
#include "raw_vulkan.h"

#include "bench_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Chunk of the staging copies: the size of the transfer figures, so that one of their transfers
 * is one memcpy plus one vkCmdCopyBuffer. */
#define RAW_STAGING_BYTES (64ull << 20)

const char *raw_result_name(VkResult result)
{
    switch (result) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_INVALID_SHADER_NV: return "VK_ERROR_INVALID_SHADER_NV";
    default: return "an unknown VkResult";
    }
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)severity;
    (void)types;
    raw_ctx *ctx = user;
    ctx->validation_messages++;
    fprintf(stderr, "raw_vulkan validation: %s\n", data->pMessage);
    return VK_FALSE;
}

static int validation_requested(void)
{
    const char *env = getenv("CUBEC_VALIDATION");
    return env && env[0] && strcmp(env, "0") != 0;
}

static bench_err create_instance(raw_ctx *ctx)
{
    int validation = validation_requested();
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "cubec bench raw_vulkan",
        .apiVersion = VK_API_VERSION_1_2,
    };
    /* Synchronization validation too: the baseline's barriers are what make it correct, and a
     * baseline that skipped one would be fast for the wrong reason. */
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT features = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .enabledValidationFeatureCount = 1,
        .pEnabledValidationFeatures = &sync,
    };
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = validation ? &features : NULL,
        .pApplicationInfo = &app,
        .enabledLayerCount = validation ? 1 : 0,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = validation ? 1 : 0,
        .ppEnabledExtensionNames = extensions,
    };
    RAW_VK_TRY(vkCreateInstance(&info, NULL, &ctx->instance));
    if (!validation) return NULL;

    PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)(void (*)(
        void))vkGetInstanceProcAddr(ctx->instance, "vkCreateDebugUtilsMessengerEXT");
    if (!create) return bench_errorf("vkCreateDebugUtilsMessengerEXT is missing");
    VkDebugUtilsMessengerCreateInfoEXT messenger = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_validation,
        .pUserData = ctx,
    };
    RAW_VK_TRY(create(ctx->instance, &messenger, NULL, &ctx->messenger));
    return NULL;
}

static bench_err pick_physical_device(raw_ctx *ctx, const raw_target *target)
{
    uint32_t count = 0;
    RAW_VK_TRY(vkEnumeratePhysicalDevices(ctx->instance, &count, NULL));
    if (count == 0) return bench_errorf("no Vulkan device is present");
    VkPhysicalDevice *devices = calloc(count, sizeof(VkPhysicalDevice));
    if (!devices) return bench_errorf("out of host memory");
    VkResult result = vkEnumeratePhysicalDevices(ctx->instance, &count, devices);
    if (result != VK_SUCCESS && result != VK_INCOMPLETE) {
        free(devices);
        return bench_errorf("vkEnumeratePhysicalDevices returned %s", raw_result_name(result));
    }
    for (uint32_t i = 0; i < count && !ctx->physical; i++) {
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(devices[i], &props);
        if (target && target->name &&
            (strcmp(props.deviceName, target->name) != 0 || props.vendorID != target->vendor_id ||
             props.deviceID != target->device_id))
            continue;
        ctx->physical = devices[i];
        ctx->props = props;
    }
    free(devices);
    if (!ctx->physical && !(target && target->name))
        return bench_errorf("no Vulkan device could be picked");
    if (!ctx->physical)
        return bench_errorf("no Vulkan device is named \"%s\" (vendor 0x%x, device 0x%x)",
                            target->name, target->vendor_id, target->device_id);
    vkGetPhysicalDeviceMemoryProperties(ctx->physical, &ctx->memory_props);
    return NULL;
}

static bench_err pick_queue_family(raw_ctx *ctx)
{
    VkQueueFamilyProperties families[32];
    uint32_t count = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &count, families);
    for (uint32_t i = 0; i < count; i++) {
        if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        ctx->queue_family = i;
        uint32_t bits = families[i].timestampValidBits;
        ctx->timestamps = bits > 0 && ctx->props.limits.timestampPeriod > 0;
        ctx->timestamp_mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
        ctx->timestamp_period_ns = ctx->props.limits.timestampPeriod;
        return NULL;
    }
    return bench_errorf("%s has no compute queue", ctx->props.deviceName);
}

static bench_err require_extension(raw_ctx *ctx, const char *name)
{
    uint32_t count = 0;
    RAW_VK_TRY(vkEnumerateDeviceExtensionProperties(ctx->physical, NULL, &count, NULL));
    VkExtensionProperties *props = calloc(count ? count : 1, sizeof *props);
    if (!props) return bench_errorf("out of host memory");
    VkResult result = vkEnumerateDeviceExtensionProperties(ctx->physical, NULL, &count, props);
    int found = 0;
    for (uint32_t i = 0; result == VK_SUCCESS && i < count; i++)
        found |= strcmp(props[i].extensionName, name) == 0;
    free(props);
    if (result != VK_SUCCESS)
        return bench_errorf("vkEnumerateDeviceExtensionProperties returned %s",
                            raw_result_name(result));
    if (!found)
        return bench_errorf("%s lacks %s, which the raw_vulkan baseline needs",
                            ctx->props.deviceName, name);
    return NULL;
}

/* The memory type for `kind`: all `required` flags, then as few `avoided` flags as possible, then
 * the lowest index (the driver lists its preferred types first). */
static int pick_memory_type(const raw_ctx *ctx, VkMemoryPropertyFlags required,
                            VkMemoryPropertyFlags avoided, VkMemoryPropertyFlags preferred)
{
    int best = -1, best_score = 0;
    for (uint32_t i = 0; i < ctx->memory_props.memoryTypeCount; i++) {
        VkMemoryPropertyFlags flags = ctx->memory_props.memoryTypes[i].propertyFlags;
        if ((flags & required) != required) continue;
        int score = 4 * (!(flags & avoided)) + 2 * ((flags & preferred) == preferred);
        if (best < 0 || score > best_score) {
            best = (int)i;
            best_score = score;
        }
    }
    return best;
}

static bench_err pick_memory_types(raw_ctx *ctx)
{
    const VkMemoryPropertyFlags visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
    const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    int cpu_or_integrated = ctx->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ||
                            ctx->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
    /* A discrete GPU's host-visible device memory (resizable BAR) is slow to read from the host,
     * so the straightforward program keeps kernels' buffers in plain device memory and stages. */
    int dev = pick_memory_type(ctx, local, cpu_or_integrated ? 0 : visible,
                               cpu_or_integrated ? visible : 0);
    int up = pick_memory_type(ctx, visible | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                              cpu_or_integrated ? 0 : local, 0);
    int down = pick_memory_type(ctx, visible, cpu_or_integrated ? 0 : local,
                                VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    if (dev < 0 || up < 0 || down < 0)
        return bench_errorf("%s lacks a device-local or a host-visible memory type",
                            ctx->props.deviceName);
    ctx->memory_type[RAW_MEMORY_DEVICE] = (uint32_t)dev;
    ctx->memory_type[RAW_MEMORY_UPLOAD] = (uint32_t)up;
    ctx->memory_type[RAW_MEMORY_READBACK] = (uint32_t)down;
    ctx->unified =
        cpu_or_integrated && (ctx->memory_props.memoryTypes[dev].propertyFlags & visible) != 0;
    return NULL;
}

static bench_err create_device(raw_ctx *ctx)
{
    BENCH_TRY(require_extension(ctx, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME));
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = ctx->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    const char *extensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue,
        .enabledExtensionCount = 1,
        .ppEnabledExtensionNames = extensions,
    };
    RAW_VK_TRY(vkCreateDevice(ctx->physical, &info, NULL, &ctx->device));
    vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);
    ctx->push_descriptor = (PFN_vkCmdPushDescriptorSetKHR)(void (*)(void))vkGetDeviceProcAddr(
        ctx->device, "vkCmdPushDescriptorSetKHR");
    if (!ctx->push_descriptor) return bench_errorf("vkCmdPushDescriptorSetKHR is missing");
    return NULL;
}

static bench_err create_submission_objects(raw_ctx *ctx)
{
    VkCommandPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = ctx->queue_family,
    };
    RAW_VK_TRY(vkCreateCommandPool(ctx->device, &pool, NULL, &ctx->pool));
    VkCommandBufferAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = ctx->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    RAW_VK_TRY(vkAllocateCommandBuffers(ctx->device, &alloc, &ctx->cmd));
    VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    RAW_VK_TRY(vkCreateFence(ctx->device, &fence, NULL, &ctx->fence));
    if (ctx->timestamps) {
        VkQueryPoolCreateInfo queries = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = 2,
        };
        RAW_VK_TRY(vkCreateQueryPool(ctx->device, &queries, NULL, &ctx->queries));
    }
    ctx->compiler = shaderc_compiler_initialize();
    if (!ctx->compiler) return bench_errorf("shaderc_compiler_initialize failed");
    return NULL;
}

bench_err raw_open(const raw_target *target, raw_ctx **out_ctx)
{
    *out_ctx = NULL;
    raw_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return bench_errorf("out of host memory");
    bench_err err = create_instance(ctx);
    if (!err) err = pick_physical_device(ctx, target);
    if (!err) err = pick_queue_family(ctx);
    if (!err) err = pick_memory_types(ctx);
    if (!err) err = create_device(ctx);
    if (!err) err = create_submission_objects(ctx);
    if (err) {
        raw_close(ctx);
        return bench_wrap(err, "raw_vulkan: opening the device");
    }
    *out_ctx = ctx;
    return NULL;
}

void raw_close(raw_ctx *ctx)
{
    if (!ctx) return;
    if (ctx->device) {
        vkDeviceWaitIdle(ctx->device);
        raw_buffer_destroy(ctx, &ctx->staging_up);
        raw_buffer_destroy(ctx, &ctx->staging_down);
        if (ctx->queries) vkDestroyQueryPool(ctx->device, ctx->queries, NULL);
        if (ctx->fence) vkDestroyFence(ctx->device, ctx->fence, NULL);
        if (ctx->pool) vkDestroyCommandPool(ctx->device, ctx->pool, NULL);
        vkDestroyDevice(ctx->device, NULL);
    }
    if (ctx->compiler) shaderc_compiler_release(ctx->compiler);
    if (ctx->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)(void (*)(void))vkGetInstanceProcAddr(
                ctx->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(ctx->instance, ctx->messenger, NULL);
    }
    if (ctx->instance) vkDestroyInstance(ctx->instance, NULL);
    free(ctx);
}

bench_err raw_buffer_create(raw_ctx *ctx, VkDeviceSize size, raw_memory kind, raw_buffer *out)
{
    memset(out, 0, sizeof *out);
    VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    raw_buffer b = {.size = size};
    RAW_VK_TRY(vkCreateBuffer(ctx->device, &info, NULL, &b.buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(ctx->device, b.buffer, &req);
    uint32_t type = ctx->memory_type[kind];
    if (!(req.memoryTypeBits & (1u << type))) {
        vkDestroyBuffer(ctx->device, b.buffer, NULL);
        return bench_errorf("raw_vulkan: memory type %u cannot hold a storage buffer", type);
    }
    VkMemoryAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    VkResult result = vkAllocateMemory(ctx->device, &alloc, NULL, &b.memory);
    if (result == VK_SUCCESS) result = vkBindBufferMemory(ctx->device, b.buffer, b.memory, 0);
    VkMemoryPropertyFlags flags = ctx->memory_props.memoryTypes[type].propertyFlags;
    if (result == VK_SUCCESS && (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
        result = vkMapMemory(ctx->device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped);
    b.coherent = (flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    if (result != VK_SUCCESS) {
        raw_buffer_destroy(ctx, &b);
        return bench_errorf("raw_vulkan: allocating a buffer of %llu bytes: %s",
                            (unsigned long long)size, raw_result_name(result));
    }
    *out = b;
    return NULL;
}

void raw_buffer_destroy(raw_ctx *ctx, raw_buffer *buffer)
{
    if (buffer->buffer) vkDestroyBuffer(ctx->device, buffer->buffer, NULL);
    if (buffer->memory) vkFreeMemory(ctx->device, buffer->memory, NULL);
    memset(buffer, 0, sizeof *buffer);
}

bench_err raw_compile(raw_ctx *ctx, const char *glsl, const raw_define *defines,
                      uint32_t define_count, uint32_t **out_words, size_t *out_word_count)
{
    *out_words = NULL;
    *out_word_count = 0;
    shaderc_compile_options_t options = shaderc_compile_options_initialize();
    if (!options) return bench_errorf("shaderc_compile_options_initialize failed");
    shaderc_compile_options_set_target_env(options, shaderc_target_env_vulkan,
                                           shaderc_env_version_vulkan_1_2);
    shaderc_compile_options_add_macro_definition(
        options, BENCH_RAW_INFO_MACRO_NAME, strlen(BENCH_RAW_INFO_MACRO_NAME),
        BENCH_RAW_INFO_MACRO_VALUE, strlen(BENCH_RAW_INFO_MACRO_VALUE));
    for (uint32_t i = 0; i < define_count; i++) {
        const char *value = defines[i].value ? defines[i].value : "";
        shaderc_compile_options_add_macro_definition(options, defines[i].name,
                                                     strlen(defines[i].name), value, strlen(value));
    }
    shaderc_compilation_result_t result = shaderc_compile_into_spv(
        ctx->compiler, glsl, strlen(glsl), shaderc_compute_shader, "bench.comp", "main", options);
    shaderc_compile_options_release(options);
    bench_err err = NULL;
    if (!result) {
        err = bench_errorf("raw_vulkan: shaderc returned no result");
    } else if (shaderc_result_get_compilation_status(result) !=
               shaderc_compilation_status_success) {
        err = bench_errorf("raw_vulkan: GLSL did not compile: %s",
                           shaderc_result_get_error_message(result));
    } else {
        size_t bytes = shaderc_result_get_length(result);
        *out_words = malloc(bytes);
        if (!*out_words) {
            err = bench_errorf("out of host memory");
        } else {
            memcpy(*out_words, shaderc_result_get_bytes(result), bytes);
            *out_word_count = bytes / 4;
        }
    }
    if (result) shaderc_result_release(result);
    return err;
}

static bench_err create_pipeline(raw_ctx *ctx, const uint32_t *words, size_t word_count,
                                 raw_kernel *k)
{
    VkShaderModuleCreateInfo module = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = word_count * 4,
        .pCode = words,
    };
    RAW_VK_TRY(vkCreateShaderModule(ctx->device, &module, NULL, &k->module));
    VkDescriptorSetLayoutBinding bindings[8];
    if (k->binding_count > 8) return bench_errorf("raw_vulkan: too many bindings");
    for (uint32_t i = 0; i < k->binding_count; i++) {
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    }
    VkDescriptorSetLayoutCreateInfo set = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
        .bindingCount = k->binding_count,
        .pBindings = bindings,
    };
    RAW_VK_TRY(vkCreateDescriptorSetLayout(ctx->device, &set, NULL, &k->set_layout));
    VkPushConstantRange range = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        .size = k->push_size,
    };
    VkPipelineLayoutCreateInfo layout = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &k->set_layout,
        .pushConstantRangeCount = k->push_size ? 1 : 0,
        .pPushConstantRanges = &range,
    };
    RAW_VK_TRY(vkCreatePipelineLayout(ctx->device, &layout, NULL, &k->layout));
    VkComputePipelineCreateInfo pipeline = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage =
            {
                .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = k->module,
                .pName = "main",
            },
        .layout = k->layout,
    };
    RAW_VK_TRY(
        vkCreateComputePipelines(ctx->device, VK_NULL_HANDLE, 1, &pipeline, NULL, &k->pipeline));
    return NULL;
}

bench_err raw_kernel_create(raw_ctx *ctx, const char *glsl, const raw_define *defines,
                            uint32_t define_count, uint32_t binding_count, uint32_t push_size,
                            raw_kernel *out)
{
    memset(out, 0, sizeof *out);
    uint32_t *words;
    size_t word_count;
    BENCH_TRY(raw_compile(ctx, glsl, defines, define_count, &words, &word_count));
    raw_kernel k = {.binding_count = binding_count, .push_size = push_size};
    bench_err err = create_pipeline(ctx, words, word_count, &k);
    free(words);
    if (err) {
        raw_kernel_destroy(ctx, &k);
        return err;
    }
    *out = k;
    return NULL;
}

void raw_kernel_destroy(raw_ctx *ctx, raw_kernel *kernel)
{
    if (kernel->pipeline) vkDestroyPipeline(ctx->device, kernel->pipeline, NULL);
    if (kernel->layout) vkDestroyPipelineLayout(ctx->device, kernel->layout, NULL);
    if (kernel->set_layout) vkDestroyDescriptorSetLayout(ctx->device, kernel->set_layout, NULL);
    if (kernel->module) vkDestroyShaderModule(ctx->device, kernel->module, NULL);
    memset(kernel, 0, sizeof *kernel);
}

bench_err raw_begin(VkCommandBuffer cmd)
{
    VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    RAW_VK_TRY(vkBeginCommandBuffer(cmd, &begin));
    return NULL;
}

void raw_dispatch(raw_ctx *ctx, VkCommandBuffer cmd, const raw_kernel *kernel,
                  const VkDescriptorBufferInfo *buffers, const void *push, uint32_t groups_x)
{
    VkWriteDescriptorSet writes[8];
    for (uint32_t i = 0; i < kernel->binding_count; i++) {
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &buffers[i],
        };
    }
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, kernel->pipeline);
    ctx->push_descriptor(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, kernel->layout, 0,
                         kernel->binding_count, writes);
    if (kernel->push_size)
        vkCmdPushConstants(cmd, kernel->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kernel->push_size,
                           push);
    vkCmdDispatch(cmd, groups_x, 1, 1);
}

void raw_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                 VkPipelineStageFlags dst_stage, VkAccessFlags dst_access)
{
    VkMemoryBarrier barrier = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = src_access,
        .dstAccessMask = dst_access,
    };
    vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &barrier, 0, NULL, 0, NULL);
}

void raw_timestamps_begin(raw_ctx *ctx, VkCommandBuffer cmd)
{
    if (!ctx->timestamps) return;
    vkCmdResetQueryPool(cmd, ctx->queries, 0, 2);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, ctx->queries, 0);
}

void raw_timestamps_end(raw_ctx *ctx, VkCommandBuffer cmd)
{
    if (!ctx->timestamps) return;
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ctx->queries, 1);
}

bench_err raw_timestamps_read(raw_ctx *ctx, double *out_seconds)
{
    *out_seconds = NAN;
    if (!ctx->timestamps) return NULL;
    uint64_t ticks[2];
    RAW_VK_TRY(vkGetQueryPoolResults(ctx->device, ctx->queries, 0, 2, sizeof ticks, ticks,
                                     sizeof ticks[0],
                                     VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    uint64_t delta = (ticks[1] - ticks[0]) & ctx->timestamp_mask;
    *out_seconds = (double)delta * ctx->timestamp_period_ns * 1e-9;
    return NULL;
}

bench_err raw_submit_wait(raw_ctx *ctx, VkCommandBuffer cmd)
{
    RAW_VK_TRY(vkEndCommandBuffer(cmd));
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &cmd,
    };
    RAW_VK_TRY(vkQueueSubmit(ctx->queue, 1, &submit, ctx->fence));
    RAW_VK_TRY(vkWaitForFences(ctx->device, 1, &ctx->fence, VK_TRUE, UINT64_MAX));
    RAW_VK_TRY(vkResetFences(ctx->device, 1, &ctx->fence));
    return NULL;
}

/* One staged chunk: copy between the staging buffer and `buffer` on the device, waited for. */
static bench_err staged_copy(raw_ctx *ctx, VkBuffer from, VkDeviceSize from_offset, VkBuffer to,
                             VkDeviceSize to_offset, VkDeviceSize size)
{
    BENCH_TRY(raw_begin(ctx->cmd));
    /* Orders the copy after earlier submissions' shader or transfer writes, and makes it visible
     * to later ones (the fence alone does not make device writes visible to the device). */
    raw_barrier(ctx->cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                VK_PIPELINE_STAGE_TRANSFER_BIT, RAW_ACCESS_TRANSFER_RW);
    VkBufferCopy region = {.srcOffset = from_offset, .dstOffset = to_offset, .size = size};
    vkCmdCopyBuffer(ctx->cmd, from, to, 1, &region);
    raw_barrier(ctx->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                VK_ACCESS_HOST_READ_BIT | VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
    return raw_submit_wait(ctx, ctx->cmd);
}

static bench_err ensure_staging(raw_ctx *ctx, raw_buffer *staging, raw_memory kind)
{
    if (staging->buffer) return NULL;
    return raw_buffer_create(ctx, RAW_STAGING_BYTES, kind, staging);
}

static bench_err check_range(const raw_buffer *buffer, VkDeviceSize offset, VkDeviceSize size)
{
    if (offset > buffer->size || size > buffer->size - offset)
        return bench_errorf("raw_vulkan: range %llu+%llu exceeds a buffer of %llu bytes",
                            (unsigned long long)offset, (unsigned long long)size,
                            (unsigned long long)buffer->size);
    return NULL;
}

bench_err raw_upload(raw_ctx *ctx, raw_buffer *dst, VkDeviceSize offset, const void *src,
                     VkDeviceSize size)
{
    BENCH_TRY(check_range(dst, offset, size));
    if (ctx->unified && dst->mapped) {
        memcpy((char *)dst->mapped + offset, src, size);
        if (!dst->coherent) {
            VkMappedMemoryRange range = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                         .memory = dst->memory,
                                         .size = VK_WHOLE_SIZE};
            RAW_VK_TRY(vkFlushMappedMemoryRanges(ctx->device, 1, &range));
        }
        return NULL;
    }
    BENCH_TRY(ensure_staging(ctx, &ctx->staging_up, RAW_MEMORY_UPLOAD));
    for (VkDeviceSize done = 0; done < size;) {
        VkDeviceSize chunk = size - done < RAW_STAGING_BYTES ? size - done : RAW_STAGING_BYTES;
        memcpy(ctx->staging_up.mapped, (const char *)src + done, chunk);
        BENCH_TRY(staged_copy(ctx, ctx->staging_up.buffer, 0, dst->buffer, offset + done, chunk));
        done += chunk;
    }
    return NULL;
}

bench_err raw_download(raw_ctx *ctx, raw_buffer *src, VkDeviceSize offset, void *dst,
                       VkDeviceSize size)
{
    BENCH_TRY(check_range(src, offset, size));
    if (ctx->unified && src->mapped) {
        /* A fence does not make device writes visible to the host: a barrier to the host stage
         * does, and the straightforward place for it is here, where the host is about to read. */
        BENCH_TRY(raw_begin(ctx->cmd));
        raw_barrier(ctx->cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                    VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
        BENCH_TRY(raw_submit_wait(ctx, ctx->cmd));
        if (!src->coherent) {
            VkMappedMemoryRange range = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                         .memory = src->memory,
                                         .size = VK_WHOLE_SIZE};
            RAW_VK_TRY(vkInvalidateMappedMemoryRanges(ctx->device, 1, &range));
        }
        memcpy(dst, (const char *)src->mapped + offset, size);
        return NULL;
    }
    BENCH_TRY(ensure_staging(ctx, &ctx->staging_down, RAW_MEMORY_READBACK));
    for (VkDeviceSize done = 0; done < size;) {
        VkDeviceSize chunk = size - done < RAW_STAGING_BYTES ? size - done : RAW_STAGING_BYTES;
        BENCH_TRY(staged_copy(ctx, src->buffer, offset + done, ctx->staging_down.buffer, 0, chunk));
        if (!ctx->staging_down.coherent) {
            VkMappedMemoryRange range = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                         .memory = ctx->staging_down.memory,
                                         .size = VK_WHOLE_SIZE};
            RAW_VK_TRY(vkInvalidateMappedMemoryRanges(ctx->device, 1, &range));
        }
        memcpy((char *)dst + done, ctx->staging_down.mapped, chunk);
        done += chunk;
    }
    return NULL;
}
