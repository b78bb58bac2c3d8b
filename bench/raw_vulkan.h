/* raw_vulkan: the hand-written Vulkan baseline that every cubec figure is compared with.
 *
 * This is deliberately the straightforward program a competent engineer would write without a
 * runtime: one VkDeviceMemory per buffer, shaderc to compile the same GLSL, push descriptors and
 * push constants, and for every piece of work "record a command buffer, submit, wait on a fence".
 * It must stay minimal: it is the yardstick for what cubec's layers cost or save, so it has no
 * cleverness cubec could be blamed for lacking or credited for adding.
 *
 * The context is a plain struct: the figures in raw_figures.c record their own command buffers
 * with the handles it holds. Everything it creates is destroyed by raw_close. */
#ifndef CUBEC_BENCH_RAW_VULKAN_H
#define CUBEC_BENCH_RAW_VULKAN_H

#include "bench_util.h"

#include <shaderc/shaderc.h>
#include <vulkan/vulkan.h>

/* Which physical device to open: the one cubec opened, so that both sides run on the same one. */
typedef struct raw_target {
    const char *name; /* exact VkPhysicalDeviceProperties::deviceName; NULL: the first device */
    uint32_t vendor_id;
    uint32_t device_id;
} raw_target;

typedef enum raw_memory {
    RAW_MEMORY_DEVICE,   /* where kernels read and write; mapped too when the device is unified */
    RAW_MEMORY_UPLOAD,   /* host-visible, coherent: staging for host -> device                  */
    RAW_MEMORY_READBACK, /* host-visible, cached where possible: staging for device -> host     */
} raw_memory;

typedef struct raw_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize size;
    void *mapped; /* non-NULL when the memory is host-visible */
    int coherent; /* no flush/invalidate needed around host access */
} raw_buffer;

typedef struct raw_kernel {
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    uint32_t binding_count;
    uint32_t push_size;
} raw_kernel;

typedef struct raw_define {
    const char *name;
    const char *value;
} raw_define;

typedef struct raw_ctx {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memory_props;
    VkDevice device;
    uint32_t queue_family;
    VkQueue queue;
    PFN_vkCmdPushDescriptorSetKHR push_descriptor;
    /* Memory type index per raw_memory kind. */
    uint32_t memory_type[3];
    /* Device memory is host-visible on a CPU or integrated device: transfers are a memcpy into
     * the mapped buffer, with no staging copy. */
    int unified;
    /* Timestamps are available on the queue; period in ns, mask of the valid bits. */
    int timestamps;
    double timestamp_period_ns;
    uint64_t timestamp_mask;
    /* One command buffer, fence and query pool for the record-submit-wait helpers below. */
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool queries;
    shaderc_compiler_t compiler;
    /* Staging buffers of raw_upload / raw_download on non-unified devices, made on first use. */
    raw_buffer staging_up;
    raw_buffer staging_down;
    uint32_t validation_messages;
} raw_ctx;

/* Opens the device. With CUBEC_VALIDATION=1 in the environment the Khronos validation layer is
 * turned on for the baseline too, and its messages are printed on stderr. */
bench_err raw_open(const raw_target *target, raw_ctx **out_ctx);
/* Waits for the device to be idle and destroys everything. NULL is accepted. */
void raw_close(raw_ctx *ctx);

bench_err raw_buffer_create(raw_ctx *ctx, VkDeviceSize size, raw_memory kind, raw_buffer *out);
/* Accepts a zeroed buffer. */
void raw_buffer_destroy(raw_ctx *ctx, raw_buffer *buffer);

/* Compiles GLSL to SPIR-V words (caller frees *out_words). CUBEC_INFO is defined as a push-constant
 * block (bench_kernels.h); `defines` are added as the cubec side adds them. */
bench_err raw_compile(raw_ctx *ctx, const char *glsl, const raw_define *defines,
                      uint32_t define_count, uint32_t **out_words, size_t *out_word_count);
/* Compiles and creates the pipeline: `binding_count` storage buffers at set 0 bindings 0..n-1
 * (push descriptors) and `push_size` bytes of push constants. No pipeline cache: that is cold. */
bench_err raw_kernel_create(raw_ctx *ctx, const char *glsl, const raw_define *defines,
                            uint32_t define_count, uint32_t binding_count, uint32_t push_size,
                            raw_kernel *out);
/* Accepts a zeroed kernel. */
void raw_kernel_destroy(raw_ctx *ctx, raw_kernel *kernel);

/* Begins a one-time-submit command buffer (after resetting it through its pool's flags). */
bench_err raw_begin(VkCommandBuffer cmd);
/* Records one launch: bind the pipeline, push the descriptors of `buffers` (binding_count of
 * them), push the constants, dispatch `groups_x` groups. */
void raw_dispatch(raw_ctx *ctx, VkCommandBuffer cmd, const raw_kernel *kernel,
                  const VkDescriptorBufferInfo *buffers, const void *push, uint32_t groups_x);
/* A global memory barrier: writes of `src_stage` made visible to reads and writes of
 * `dst_stage`. The straightforward dependency between two launches. */
void raw_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                 VkPipelineStageFlags dst_stage, VkAccessFlags dst_access);
#define RAW_ACCESS_RW (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT)
#define RAW_ACCESS_TRANSFER_RW (VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT)

/* Timestamps around the recorded work: begin resets the pool and writes the first one. */
void raw_timestamps_begin(raw_ctx *ctx, VkCommandBuffer cmd);
void raw_timestamps_end(raw_ctx *ctx, VkCommandBuffer cmd);
/* Seconds between the two timestamps after the work completed; NaN without timestamps. */
bench_err raw_timestamps_read(raw_ctx *ctx, double *out_seconds);

/* Ends `cmd`, submits it with the context's fence and waits for it. */
bench_err raw_submit_wait(raw_ctx *ctx, VkCommandBuffer cmd);

/* Host <-> device copies the straightforward way: a memcpy into the mapped memory on a unified
 * device, else a memcpy through a staging buffer with a vkCmdCopyBuffer per chunk, each recorded,
 * submitted and waited for. They use the context's command buffer. */
bench_err raw_upload(raw_ctx *ctx, raw_buffer *dst, VkDeviceSize offset, const void *src,
                     VkDeviceSize size);
bench_err raw_download(raw_ctx *ctx, raw_buffer *src, VkDeviceSize offset, void *dst,
                       VkDeviceSize size);

const char *raw_result_name(VkResult result);

#define RAW_VK_TRY(expr)                                                                           \
    do {                                                                                           \
        VkResult raw_try_result_ = (expr);                                                         \
        if (raw_try_result_ != VK_SUCCESS)                                                         \
            return bench_errorf("%s: %s returned %s", __func__, #expr,                             \
                                raw_result_name(raw_try_result_));                                 \
    } while (0)

#endif
