/* The device: everything one cubec_device owns, and the server operations on it. All server_*
 * functions expect the device lock to be held by the caller (the api/ layer takes it). */
#ifndef CUBEC_SERVER_DEVICE_H
#define CUBEC_SERVER_DEVICE_H

#include "base/config.h"
#include "base/handle_table.h"
#include "base/status.h"
#include "gpu/vulkan/vk_context.h"
#include "kernel/glsl_compiler.h"
#include "kernel/reflect.h"
#include "memory/memory_manager.h"
#include "server/hazards.h"

#include <pthread.h>
#include <vulkan/vulkan.h>

/* One page of device memory: what memory_manager sub-allocates. */
typedef struct vk_page {
    VkDeviceMemory memory;
    VkBuffer buffer;
    uint64_t size;
    unsigned char *mapped; /* non-NULL on unified memory */
} vk_page;

/* A live allocation shared by a buffer and its views. Freed into the pool only when the last
 * reference is gone and the GPU has passed `last_use`. */
typedef struct alloc_obj {
    mem_alloc mem; /* page, offset, size; size 0 = no memory */
    uint32_t refs;
    uint64_t last_use; /* timeline value of the last batch that reads or writes it */
    uint64_t last_write;
} alloc_obj;

typedef struct buffer_obj {
    alloc_obj *alloc;
    uint64_t offset; /* within the allocation */
    uint64_t size;
    uint32_t refs;
} buffer_obj;

/* A compiled pipeline for one (kernel identity, metadata layout). Shared by every kernel handle
 * created from the same definition; lives until the device closes. */
typedef struct pipeline_entry {
    uint64_t key;
    char name[64];
    kernel_reflection refl;
    int info_in_push;
    uint32_t info_size;
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    struct pipeline_entry *next; /* hash chain */
} pipeline_entry;

typedef struct kernel_obj {
    pipeline_entry *entry;
} kernel_obj;

/* A recorded-but-not-yet-finished command buffer. */
typedef struct batch {
    VkCommandPool pool;
    VkCommandBuffer cmd;
    int recorded; /* the command buffer holds commands: reset the pool before reuse */
    /* Without VK_KHR_push_descriptor: the batch's descriptor sets, reset when it is reused. */
    VkDescriptorPool descriptors;
    uint64_t value; /* timeline value signalled when it completes; 0 = free */
} batch;

typedef struct deferred_free {
    mem_alloc mem;
    uint64_t after; /* free once the timeline reaches this */
} deferred_free;

/* Host-visible buffer used as a ring for metadata that does not fit push constants, and on
 * discrete GPUs for staging. */
typedef struct host_ring {
    VkBuffer buffer;
    VkDeviceMemory memory;
    unsigned char *mapped;
    uint64_t size, head;
    uint64_t *chunk_use; /* per chunk: last timeline value using it */
    uint64_t chunk_size;
    uint32_t chunks;
} host_ring;

struct cubec_device_s {
    pthread_mutex_t lock;
    cubec_config config;
    vk_context vk;
    cubec_device_info info;
    uint16_t tag;
    int lost; /* a device-lost error was seen: every later call fails */

    handle_table buffers;
    handle_table kernels;
    memory_manager *memory;
    deferred_free *deferred;
    uint32_t deferred_count, deferred_cap;

    glsl_compiler *compiler;
    pipeline_entry *pipelines[256];
    VkPipelineCache pipeline_cache;
    pipeline_entry *copy_kernel, *copy4_kernel, *fill_kernel;

    /* Submission state. */
    VkSemaphore timeline;
    uint64_t next_value;         /* the value the open batch will signal */
    uint64_t completed_value;    /* last observed counter value */
    uint64_t host_visible_value; /* the latest submitted batch that ended with a host barrier */
    batch *batches;
    uint32_t batch_count, batch_cap;
    batch *open; /* NULL when nothing is recorded */
    uint32_t tasks;
    uint32_t tasks_max;
    uint32_t max_batches;      /* in flight; beyond it the host waits for the oldest */
    VkPipeline bound_pipeline; /* in the open command buffer: rebinding the same one is skipped */
    int spin_us;
    hazard_tracker hazards;

    host_ring info_ring;
    host_ring upload;   /* discrete only */
    host_ring readback; /* discrete only */
};

/* server/device.c */
cubec_status server_open(const cubec_device_desc *desc, cubec_device **out);
void server_close(cubec_device *d);
cubec_status server_check_alive(cubec_device *d);
/* Marks the device lost when `err` says so; returns err. */
cubec_status server_note_error(cubec_device *d, cubec_status err);

/* server/submission.c */
/* The open command buffer, beginning one when needed. */
cubec_status sub_begin(cubec_device *d, VkCommandBuffer *out_cmd);
/* Counts one recorded task; submits when tasks_max is reached. */
cubec_status sub_task_done(cubec_device *d);
/* Submits the open batch (if any). With for_host, ends it with a barrier that makes device
 * writes visible to host reads. */
cubec_status sub_flush(cubec_device *d, int for_host);
/* Waits until the timeline reaches `value` (submitting first when `value` is the open batch). */
cubec_status sub_wait(cubec_device *d, uint64_t value);
/* Waits until work up to `value` finished and device writes are visible to the host. */
cubec_status sub_wait_for_host(cubec_device *d, uint64_t value);
/* Refreshes completed_value, runs deferred frees, recycles batches. */
void sub_poll(cubec_device *d);
/* What a command is, for the barrier in front of it. */
typedef enum sub_command {
    SUB_COMPUTE,          /* a dispatch */
    SUB_COMPUTE_INDIRECT, /* a dispatch whose counts come from a buffer */
    SUB_TRANSFER,         /* vkCmdCopyBuffer */
} sub_command;
/* Records the barrier a command touching these ranges needs (only on a real hazard, and only
 * between the stages involved), then notes the ranges. */
void sub_hazards(cubec_device *d, VkCommandBuffer cmd, const hazard_range *ranges, uint32_t n,
                 sub_command kind);
void sub_destroy(cubec_device *d);
cubec_status sub_init(cubec_device *d);

/* server/buffers.c */
cubec_status server_buffer_create(cubec_device *d, uint64_t size, cubec_buffer *out);
cubec_status server_buffer_view(cubec_device *d, buffer_obj *parent, uint64_t offset, uint64_t size,
                                cubec_buffer *out);
void server_buffer_release(cubec_device *d, uint64_t id, buffer_obj *b);
void server_alloc_release(cubec_device *d, alloc_obj *a);
void server_run_deferred_frees(cubec_device *d);
cubec_status server_memory_init(cubec_device *d);
void server_memory_destroy(cubec_device *d);
static inline vk_page *buffer_page(const buffer_obj *b)
{
    return (vk_page *)b->alloc->mem.page;
}
static inline uint64_t buffer_device_offset(const buffer_obj *b)
{
    return b->alloc->mem.offset + b->offset;
}

/* server/host_ring.c */
cubec_status host_ring_init(cubec_device *d, host_ring *r, uint64_t size, uint32_t chunks,
                            uint32_t memory_type, VkBufferUsageFlags usage);
void host_ring_destroy(cubec_device *d, host_ring *r);
/* Reserves `size` bytes (size <= chunk) aligned to `align`; waits if the GPU still uses them. */
cubec_status host_ring_alloc(cubec_device *d, host_ring *r, uint64_t size, uint64_t align,
                             uint64_t *out_offset);

/* server/transfer.c */
cubec_status server_write(cubec_device *d, buffer_obj *b, uint64_t offset, const void *src,
                          uint64_t size);
cubec_status server_read(cubec_device *d, buffer_obj *b, uint64_t offset, void *dst, uint64_t size);
cubec_status server_read_async(cubec_device *d, buffer_obj *b, uint64_t offset, void *dst,
                               uint64_t size, cubec_event **out);

/* server/kernels.c */
cubec_status server_kernel_create(cubec_device *d, const cubec_kernel_desc *desc,
                                  pipeline_entry **out);
cubec_status server_builtin_kernels(cubec_device *d);
void server_kernels_destroy(cubec_device *d);

/* server/launch.c */
typedef struct launch_args {
    const pipeline_entry *entry;
    buffer_obj *const *buffers;
    uint32_t buffer_count;
    const void *info;
    uint32_t groups[3];
    buffer_obj *indirect;
    uint64_t indirect_offset;
} launch_args;
cubec_status server_launch(cubec_device *d, const launch_args *a);
cubec_status server_copy(cubec_device *d, buffer_obj *src, uint64_t src_offset, buffer_obj *dst,
                         uint64_t dst_offset, uint64_t size);
cubec_status server_fill(cubec_device *d, buffer_obj *dst, uint64_t offset, uint64_t size,
                         uint32_t pattern);

/* server/transfer.c: events (device lock held) */
cubec_status server_event_progress(cubec_event *e, int block);
void server_event_free(cubec_event *e);
cubec_device *server_event_device(cubec_event *e);
#endif
