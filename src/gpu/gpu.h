/* The GPU seam: everything the server asks of a GPU, as one table of functions a backend fills.
 *
 * The server (src/server/) decides what runs, in which order, with which barriers, and what a
 * failure taints; a backend only carries it out. Two backends exist: Vulkan (src/gpu/vulkan/), the
 * only code in src/ that calls Vulkan, and null (src/gpu/null/), which runs no kernels and lets the
 * server's logic be tested in milliseconds.
 *
 * Objects are opaque to the server except for the public fields of gpu_mem (its size and, when it
 * is host-visible, where it is mapped). Recording is not the backend's: the gpu_cmd_* functions
 * below append entries to the command list every command buffer holds (gpu/cmd_list.h), take no
 * device and return nothing (they are on the launch path); a backend carries the list out (Vulkan
 * encodes it at cmd_end for a graph, at submit for a batch; null checks it at cmd_end and runs it
 * at submit) and reports what went wrong at cmd_end or submit. Everything that can fail returns a
 * cubec_status.
 *
 * Fault injection counts here: the gpu_* wrappers below count every page allocation, map and
 * submission of the plan attached with gpu_set_faults, so a new call site is covered without
 * remembering a hook. Waits and pipeline creations run without the caller's lock, so the caller
 * counts them under it (see below). */
#ifndef CUBEC_GPU_GPU_H
#define CUBEC_GPU_GPU_H

#include "base/fault.h"
#include "base/features.h"
#include "base/status.h"
#include "gpu/gpu_backends.h"

#include <stdint.h>

/* The Vulkan version cubec's instance asks for (VK_MAKE_API_VERSION(0, 1, 2, 0)). What cubec
 * uses on a device is the lower of this and the device's cubec_device_info.api_version: SPIR-V is
 * validated for that version (kernel/reflect.h). */
#define GPU_VULKAN_API_VERSION ((1u << 22) | (2u << 12))

typedef struct gpu gpu;
typedef struct gpu_pipeline gpu_pipeline;
typedef struct gpu_cmd gpu_cmd;
typedef struct gpu_queries gpu_queries;
typedef struct gpu_image gpu_image;

/* What memory is for; the backend picks the memory type. */
typedef enum gpu_mem_kind {
    GPU_MEM_DEVICE,   /* pages of buffers: device-local (host-visible too when unified) */
    GPU_MEM_UPLOAD,   /* host-visible (written, then flushed): upload staging */
    GPU_MEM_READBACK, /* host-visible, cached when possible: readback staging */
    GPU_MEM_HOST,     /* host-visible and coherent, cached when possible: pinned host memory a
                         program reads and writes itself (cubec_host_alloc) */
    GPU_MEM_IMPORTED, /* the program's own memory, imported (mem_import_host): never mapped or
                         allocated by the backend */
    GPU_MEM_METADATA, /* host-visible (written, then flushed), and device-local where a type is
                         both (the BAR window): launch metadata the host writes and every launch
                         reads */
} gpu_mem_kind;

/* A buffer with its own memory. */
typedef struct gpu_mem {
    uint64_t size;
    unsigned char *mapped; /* after gpu_mem_map; NULL when not mapped */
    gpu_mem_kind kind;
    /* A page made under a dry run: it has an identity but no memory until gpu_mem_back, which
     * every real use of it calls first (spec 3.6's lazy mapping). */
    int unbacked;
    /* The mapping is not coherent (set by the backend when it maps): gpu_mem_flush and
     * gpu_mem_invalidate call the backend. 0: both cost one test of this field. */
    int noncoherent;
    /* Memory another API may hold too (docs/multi-device.md): GPU_EXTERNAL_EXPORTABLE, a page
     * allocated exportable (gpu_mem_alloc_exportable); GPU_EXTERNAL_IMPORTED, memory imported
     * from a file descriptor (gpu_mem_import_fd). 0 for every other page. Either is a device
     * page in every other respect (kind GPU_MEM_DEVICE). */
    int external;
} gpu_mem;

enum { GPU_EXTERNAL_EXPORTABLE = 1, GPU_EXTERNAL_IMPORTED = 2 };

/* An exportable page's memory as another API imports it (gpu_ops.mem_export): `fd` is new and
 * the caller's; `allocation_size` the whole allocation's (what an importer passes back);
 * `dedicated` whether the allocation is a dedicated one (an importer must say so too). */
typedef struct gpu_export {
    int fd;
    uint64_t allocation_size;
    int dedicated;
} gpu_export;

/* Pipeline stages and accesses of the commands cubec records (bits). */
enum {
    GPU_STAGE_COMPUTE = 1u << 0,
    GPU_STAGE_TRANSFER = 1u << 1,
    GPU_STAGE_INDIRECT = 1u << 2,
    GPU_STAGE_HOST = 1u << 3,
    GPU_STAGE_TOP = 1u << 4,
    GPU_STAGE_BOTTOM = 1u << 5,
    GPU_STAGE_ALL = 1u << 6,
};
#define GPU_STAGES_USED (GPU_STAGE_COMPUTE | GPU_STAGE_TRANSFER | GPU_STAGE_INDIRECT)
enum {
    GPU_ACCESS_SHADER_READ = 1u << 0,
    GPU_ACCESS_SHADER_WRITE = 1u << 1,
    GPU_ACCESS_TRANSFER_READ = 1u << 2,
    GPU_ACCESS_TRANSFER_WRITE = 1u << 3,
    GPU_ACCESS_INDIRECT_READ = 1u << 4,
    GPU_ACCESS_HOST_READ = 1u << 5,
    GPU_ACCESS_HOST_WRITE = 1u << 6,
};
#define GPU_ACCESS_USED                                                                            \
    (GPU_ACCESS_SHADER_READ | GPU_ACCESS_SHADER_WRITE | GPU_ACCESS_TRANSFER_READ |                 \
     GPU_ACCESS_TRANSFER_WRITE | GPU_ACCESS_INDIRECT_READ)

/* A storage-buffer binding. */
typedef struct gpu_binding {
    gpu_mem *mem;
    uint64_t offset, size;
} gpu_binding;

/* An image's shape (docs/images.md): `format` is a cubec_image_format; depth 1 is a 2D image. */
typedef struct gpu_image_desc {
    uint32_t format;
    uint32_t width, height, depth;
} gpu_image_desc;

/* What a pipeline binds besides storage buffers, and how (a descriptor type). The values are
 * those of cubec_resource_kind, so the server passes a kernel's kinds through. */
typedef enum gpu_resource_type {
    GPU_RESOURCE_STORAGE_IMAGE = 1,
    GPU_RESOURCE_SAMPLED_IMAGE = 2, /* with a sampler: a combined image sampler */
    GPU_RESOURCE_UNIFORM_TEXEL_BUFFER = 3,
    GPU_RESOURCE_STORAGE_TEXEL_BUFFER = 4,
    GPU_RESOURCE_SAMPLED_TEXTURE = 5, /* a sampled image without a sampler */
    GPU_RESOURCE_SAMPLER = 6,         /* a sampler alone */
} gpu_resource_type;

/* A binding other than a buffer: its place and type, and what the kernel declares of it
 * (kernel/reflect.h's kernel_resource): a backend whose layouts name them (WebGPU: a storage
 * texture's format and access, a texture's sample type and dimension) reads these. */
typedef struct gpu_resource_slot {
    uint32_t set, binding;
    uint32_t type;    /* gpu_resource_type */
    uint32_t access;  /* cubec_access: 1 read, 2 write, 3 both (storage images) */
    uint32_t dims;    /* 2 or 3; 1 a texel buffer; 0 a sampler */
    uint32_t format;  /* the declared format qualifier (cubec_image_format), 0: none */
    uint32_t numeric; /* texels read as floats (0), unsigned (1) or signed (2) integers */
    const char *name; /* the variable's, for messages (NULL: none) */
} gpu_resource_slot;

/* A resource bound for a dispatch (gpu_cmd_bind_resources): an image (image kinds), a range of
 * a page read as texels of `format` (texel buffers), or nothing (a sampler). */
typedef struct gpu_image_binding {
    gpu_image *image;
    gpu_mem *mem; /* texel buffers: the page, the range and its cubec_image_format (`format`) */
    uint64_t offset, size;
    uint32_t set, binding;
    uint32_t type;    /* gpu_resource_type */
    uint32_t linear;  /* sampled images and samplers: 1 linear filtering, 0 nearest */
    uint32_t address; /* ... and 0 clamp to edge, 1 repeat, 2 mirrored repeat */
    uint32_t format;
} gpu_image_binding;

#define GPU_MAX_RESOURCES 8 /* images a pipeline binds at most (KERNEL_MAX_RESOURCES) */

#define GPU_MAX_SPEC_CONSTANTS 64 /* CUBEC_MAX_SPEC_CONSTANTS */
#define GPU_MAX_BINDINGS 33       /* 32 buffers and the metadata buffer */
#define GPU_INFO_BINDING 31       /* binding of the metadata buffer (CUBEC_INFO_BINDING) */

/* A specialization constant's id and 32-bit value (the layout of cubec_spec_constant). */
typedef struct gpu_spec_constant {
    uint32_t id;
    uint32_t value;
} gpu_spec_constant;

/* How the buffer at one position of a bind is bound (kernel/reflect.h's kernel_slot). */
typedef enum gpu_slot_kind {
    GPU_SLOT_UNUSED = 0, /* not bound: the module declares nothing there */
    GPU_SLOT_STORAGE,
    GPU_SLOT_UNIFORM,
} gpu_slot_kind;

#define GPU_MAX_SETS 4 /* KERNEL_MAX_SETS */

/* The descriptor a bind's buffer i fills: (set, binding) and its type. */
typedef struct gpu_slot {
    uint8_t kind; /* gpu_slot_kind */
    uint8_t set;
    uint8_t binding;
} gpu_slot;

typedef struct gpu_pipeline_desc {
    const uint32_t *spirv;
    size_t words;
    const char *entry_point;
    uint32_t binding_count; /* buffers a bind passes (slots, or storage at 0..n-1) */
    /* Where each of them is bound (binding_count of them; NULL: storage buffers at set 0
     * bindings 0..n-1), and one past the highest set (0 or 1 with slots NULL). */
    const gpu_slot *slots;
    uint32_t set_count;
    int info_buffer;               /* and the metadata buffer at set 0 GPU_INFO_BINDING */
    int info_uniform;              /* ... as a uniform buffer rather than a storage buffer */
    uint32_t push_size;            /* bytes of push constants (0: none) */
    const char *name;              /* for messages */
    const gpu_spec_constant *spec; /* specialization constants (spec_count of them) */
    uint32_t spec_count;
    /* The subgroup size the pipeline requires
     * (VkPipelineShaderStageRequiredSubgroupSizeCreateInfo), or 0: none. Only where
     * caps.required_subgroup_size, a power of two in the device's [min_subgroup_size,
     * max_subgroup_size], the workgroup at most that many times caps.max_workgroup_subgroups
     * invocations (the server checks all of it first). */
    uint32_t required_subgroup_size;
    /* Images at bindings no buffer takes, in sets below set_count (resource_count of them, at
     * most GPU_MAX_RESOURCES). */
    const gpu_resource_slot *resources;
    uint32_t resource_count;
    /* WGSL source instead of `spirv` (only where caps.wgsl; NULL otherwise). */
    const char *wgsl;
} gpu_pipeline_desc;

typedef enum gpu_cmd_use {
    GPU_CMD_ONCE,     /* a batch: recorded, submitted once, reset and reused */
    GPU_CMD_REUSABLE, /* a graph: recorded once, submitted many times */
} gpu_cmd_use;

/* The most items one gpu_ops.submit call takes (a replay's batch and the replay, or plain
 * batches the submission thread found queued together). */
#define GPU_SUBMIT_MAX_ITEMS 16u

/* One command buffer of a submission, and the timeline value it signals. `inbound_wait`: 0, or
 * a value of the device's inbound timeline (gpu_ops.inbound_export) that the submission waits
 * for on the GPU before its commands and every later submission's run (docs/multi-device.md,
 * "CUDA's work before cubec's"). */
typedef struct gpu_submit_item {
    gpu_cmd *cmd;
    uint64_t signal;
    uint64_t inbound_wait;
} gpu_submit_item;

/* What a backend can do; read by the server to choose its paths. */
typedef struct gpu_caps {
    int unified;          /* device pages are host-visible and coherent: no staging */
    int push_descriptors; /* bindings are pushed; otherwise sets come from the command buffer */
    int timestamps;       /* the queue writes timestamps */
    uint32_t timestamp_bits;
    int host_query_reset; /* queries can be reset from the host */
    int calibrated_clock; /* device ticks and CLOCK_MONOTONIC can be sampled together */
    uint32_t physical_index;
    /* Recording only notes commands: the driver's work happens when a batch is submitted, so
     * handing batches to the submission thread takes it off the caller's thread. */
    int deferred_recording;
    /* Host memory can be imported (mem_import_host) at this alignment of address and size;
     * 0 when it cannot (Vulkan: VK_EXT_external_memory_host). */
    uint64_t host_import_alignment;
    /* Why it cannot, in the backend's own terms, for messages where host_import_alignment is 0
     * ("no VK_EXT_external_memory_host"; WebGPU has no import at all). */
    const char *no_host_import;
    /* Metadata as a std430 uniform block works (scalarBlockLayout), with slices of a buffer
     * aligned to metadata_alignment (set by every backend: a storage or uniform binding's offset
     * alignment, whichever is larger) and at most max_uniform_range bytes. */
    int uniform_info;
    uint64_t metadata_alignment;
    uint64_t max_uniform_range;
    /* minUniformBufferOffsetAlignment: where a buffer bound as a module's uniform block may
     * start. */
    uint64_t uniform_offset_alignment;
    /* GPU_MEM_METADATA is device memory the host writes through the BAR window: a kernel reads
     * its metadata from there as fast as push constants, without a push-constant range. */
    int metadata_device_local;
    /* Dispatches run kernels (the null backend records them and runs none: its copies and fills
     * must be transfer commands, whatever [device] copy_engine says). */
    int runs_kernels;
    /* A pipeline can require a subgroup size (gpu_pipeline_desc.required_subgroup_size): Vulkan's
     * subgroupSizeControl is enabled and its requiredSubgroupSizeStages include compute. The
     * sizes are info.min_subgroup_size .. max_subgroup_size; a workgroup of a pipeline that
     * requires size s has at most s * max_workgroup_subgroups invocations
     * (maxComputeWorkgroupSubgroups). Without it, the only size is info.subgroup_size. */
    int required_subgroup_size;
    uint32_t max_workgroup_subgroups;
    /* External handles (docs/multi-device.md): device pages can be allocated exportable and
     * memory imported as opaque file descriptors (Vulkan: VK_KHR_external_memory_fd, with the
     * buffer usage cubec gives pages exportable and importable); the timeline can be exported as
     * one (VK_KHR_external_semaphore_fd, timeline semaphores exportable). `device_uuid`: the
     * physical device's (VkPhysicalDeviceIDProperties.deviceUUID), which importers compare. */
    int export_memory;
    int export_timeline;
    uint8_t device_uuid[16];
    /* Per cubec_image_format f, bit f: images of it can be sampled (sampled_formats) and
     * filtered linearly (linear_formats); texel buffers of it can be read and written
     * (texel_formats: a page carries both texel usages, so a view's format needs both
     * features). */
    uint32_t sampled_formats;
    uint32_t linear_formats;
    uint32_t texel_formats;
    uint32_t max_texel_elements;     /* texels a texel buffer holds at most */
    uint64_t texel_offset_alignment; /* where a texel buffer may start in its page */
    /* Pipelines take WGSL source (gpu_pipeline_desc.wgsl): the webgpu backend. */
    int wgsl;
    /* GPU_MEM_HOST pages exist (cubec_host_alloc): 0 on webgpu, which has no host memory the
     * device reads directly. */
    int host_memory;
    /* GPU_CMD_REUSABLE command buffers are recorded once and resubmitted as they are; 0 where
     * each submission encodes the command list again (webgpu's single-submit buffers). */
    int reusable_cmds;
    /* The implementation orders work by whole buffer objects (WebGPU's usage scopes): two
     * allocations of one page written by two dispatches look dependent to it, and it puts a
     * barrier between them. The `auto` memory preset then gives each allocation a page of its
     * own (server/buffers.c). */
    int hazards_per_buffer;
    /* Eager batches one submit call may take when the submission thread finds them queued
     * together (1 to GPU_SUBMIT_MAX_ITEMS; 0 counts as 1): where each call costs much
     * (webgpu: a command buffer and wgpu's submission work, tens of thousands of instructions)
     * several batches share it, at the price of the GPU starting the first one later. */
    uint32_t coalesce_batches;
} gpu_caps;

/* What the process may use of the heap device pages (GPU_MEM_DEVICE) come from. */
typedef struct gpu_budget {
    uint64_t budget; /* bytes the driver estimates this process may use; 0: unknown */
    uint64_t usage;  /* bytes it counts this process using (0 with `usage_known` 0) */
    int usage_known; /* the driver counts usage (VK_EXT_memory_budget, the null heap) */
    /* bytes of pages cubec handed back that the driver has not freed yet (Vulkan's reaper) */
    uint64_t returning;
    const char *source; /* "VK_EXT_memory_budget", "heap size", "null heap" */
} gpu_budget;

typedef struct gpu_ops {
    const char *name;
    void (*destroy)(gpu *g);
    /* Memory. mem_map maps the whole buffer once (mem->mapped). The mapping's contract, for a
     * backend whose mappings are not coherent (mem->noncoherent; WebGPU has no persistent
     * coherent mapping at all): bytes the host writes through mem->mapped of UPLOAD, METADATA
     * or (unified) DEVICE memory reach the device only through mem_flush of their range, which
     * the server calls after every such write and before the work that reads them is
     * submitted; bytes the device wrote into READBACK or DEVICE memory may be read through
     * mem->mapped once the timeline passed the work that wrote them and mem_invalidate of
     * their range was called. HOST and IMPORTED memory is the program's own and coherent.
     * Called through gpu_mem_flush / gpu_mem_invalidate below, only on noncoherent memory. */
    cubec_status (*mem_create)(gpu *g, gpu_mem_kind kind, uint64_t size, gpu_mem **out);
    /* A GPU_MEM_DEVICE buffer without memory (unbacked = 1), and the memory it gets later; on
     * error mem_back leaves it unbacked. Destroying an unbacked buffer is fine. */
    cubec_status (*mem_create_unbacked)(gpu *g, uint64_t size, gpu_mem **out);
    cubec_status (*mem_back)(gpu *g, gpu_mem *m);
    cubec_status (*mem_map)(gpu *g, gpu_mem *m);
    void (*mem_flush)(gpu *g, gpu_mem *m, uint64_t offset, uint64_t size);
    void (*mem_invalidate)(gpu *g, gpu_mem *m, uint64_t offset, uint64_t size);
    void (*mem_destroy)(gpu *g, gpu_mem *m);
    /* The backend's own object behind a page, for a program's code (cubec_buffer_raw): Vulkan,
     * the VkBuffer and, where bufferDeviceAddress is enabled, its device address (else 0); null,
     * the host address of the memory, twice. */
    void (*mem_raw)(gpu *g, gpu_mem *m, uint64_t *out_handle, uint64_t *out_address);
    /* The program's memory [ptr, +size) as a buffer the GPU copies to and from (mapped = ptr);
     * both aligned to caps.host_import_alignment. NULL when the backend cannot import. */
    cubec_status (*mem_import_host)(gpu *g, void *ptr, uint64_t size, gpu_mem **out);
    /* Copies [src, +size) into [offset, +size) of the DEVICE page `m` straight from the host,
     * in queue order: after all work submitted before, before all work submitted after; `src`
     * may be reused when it returns. Offset and size are multiples of 4. NULL where uploads go
     * through staging and a copy command (Vulkan, null); WebGPU: wgpuQueueWriteBuffer, which
     * saves the upload ring's two extra copies. */
    cubec_status (*mem_write)(gpu *g, gpu_mem *m, uint64_t offset, const void *src, uint64_t size);
    /* The mirror of mem_write: copies [offset, +size) of the DEVICE page `m` into `dst` on the
     * host, in queue order (after all work submitted before), and returns when the bytes are
     * there; any offset and size. Waits at most timeout_ns (0: without a limit); past it a
     * CUBEC_TIMEOUT status. NULL where reads go through readback memory and a copy command
     * (Vulkan, null); WebGPU: one copy into the backend's MAP_READ buffer, mapped and copied
     * out, which saves the readback ring's extra GPU copy and host copy. */
    cubec_status (*mem_read)(gpu *g, gpu_mem *m, uint64_t offset, void *dst, uint64_t size,
                             uint64_t timeout_ns);
    /* Pipelines from SPIR-V. */
    cubec_status (*pipeline_create)(gpu *g, const gpu_pipeline_desc *desc, gpu_pipeline **out);
    void (*pipeline_destroy)(gpu *g, gpu_pipeline *p);
    /* Command buffers (a struct gpu_cmd first: gpu/cmd_list.h). `sets`: launches one recording
     * may bind without push descriptors. cmd_begin resets what an earlier recording left, list
     * included (gpu_cmd_list_reset); cmd_end reports what the recording got wrong. */
    cubec_status (*cmd_create)(gpu *g, gpu_cmd_use use, uint32_t sets, gpu_cmd **out);
    void (*cmd_destroy)(gpu *g, gpu_cmd *c);
    cubec_status (*cmd_begin)(gpu *g, gpu_cmd *c);
    cubec_status (*cmd_end)(gpu *g, gpu_cmd *c);
    /* Frees what a finished recording holds, ahead of its reuse (optional: NULL). */
    void (*cmd_recycle)(gpu *g, gpu_cmd *c);
    /* Timestamp queries. */
    cubec_status (*queries_create)(gpu *g, uint32_t count, gpu_queries **out);
    void (*queries_destroy)(gpu *g, gpu_queries *q);
    void (*queries_host_reset)(gpu *g, gpu_queries *q, uint32_t first, uint32_t count);
    cubec_status (*queries_read)(gpu *g, gpu_queries *q, uint32_t first, uint32_t count,
                                 uint64_t *out_ticks);
    /* Submission: each item signals its value of the device's one timeline. */
    cubec_status (*submit)(gpu *g, const gpu_submit_item *items, uint32_t n);
    cubec_status (*timeline_value)(gpu *g, uint64_t *out);
    /* Waits at most timeout_ns (0: without a limit); past it, a CUBEC_TIMEOUT status. */
    cubec_status (*timeline_wait)(gpu *g, uint64_t value, uint64_t timeout_ns);
    /* Signals `value` for work that will not run (after the queue went idle): through the queue
     * where it still takes submissions, else from the host. */
    cubec_status (*timeline_signal)(gpu *g, uint64_t value);
    void (*queue_idle)(gpu *g);
    /* Closing a device whose GPU may never finish (a wait timed out): let go of the host side
     * without waiting for the GPU or destroying what it may still use. */
    void (*abandon)(gpu *g);
    /* Device ticks and host CLOCK_MONOTONIC ns sampled together; 0 when unsupported. */
    int (*calibrate)(gpu *g, uint64_t *out_ticks, uint64_t *out_host_ns);
    /* The driver's pipeline cache, which pipeline_create fills and uses (optional: NULL where the
     * backend has none, as the null backend). pipeline_cache_data: a malloc'ed copy of what it
     * holds. pipeline_cache_merge: adds a blob that pipeline_cache_data wrote on a device of the
     * same cache_id; a blob whose own header names another device, driver or format is refused
     * (CUBEC_INVALID_ARGUMENT saying why) before the driver sees it. Neither may run while
     * pipelines are being created (the server calls them with no build in flight). */
    cubec_status (*pipeline_cache_data)(gpu *g, void **out, size_t *out_size);
    cubec_status (*pipeline_cache_merge)(gpu *g, const void *data, size_t size);
    /* Pipelines are created through the cache from now on (the server has a disk cache to save
     * it to); until then none is used. */
    void (*pipeline_cache_enable)(gpu *g);
    /* The memory budget of the heap device pages live in (optional: NULL reads as none). */
    void (*memory_budget)(gpu *g, gpu_budget *out);
    /* The backend's own objects for a program's code (cubec_device_get_vulkan_handles); NULL where
     * there are none (the null backend). */
    void (*vulkan_handles)(gpu *g, cubec_vulkan_handles *out);
    /* Images (docs/images.md). image_requirements: the bytes and alignment an image of `desc`
     * needs in a page, or CUBEC_UNSUPPORTED naming a format the device cannot store to.
     * image_create binds a new image to [offset, +size) of the device page `m` (the server
     * allocated it from its pools with those requirements), in no layout yet: the first command
     * on it is gpu_cmd_image_init. */
    cubec_status (*image_requirements)(gpu *g, const gpu_image_desc *desc, uint64_t *out_size,
                                       uint64_t *out_alignment);
    cubec_status (*image_create)(gpu *g, const gpu_image_desc *desc, gpu_mem *m, uint64_t offset,
                                 gpu_image **out);
    void (*image_destroy)(gpu *g, gpu_image *im);
    /* Copies every texel of `im` from packed bytes at `src` (gpu_cmd_copy_image's layout)
     * straight from the host, in queue order as mem_write: after all work submitted before,
     * before all work submitted after; `src` may be reused when it returns. NULL where uploads
     * go through a staging buffer and gpu_cmd_copy_image (Vulkan, null); WebGPU:
     * wgpuQueueWriteTexture, which takes rows at any pitch, so the staging buffer, its queue
     * write and the repacking into 256-byte rows are saved. */
    cubec_status (*image_write)(gpu *g, gpu_image *im, const void *src);
    /* External memory and the timeline (optional: NULL where the backend has none, as null; the
     * gpu_* wrappers below refuse by name then). mem_create_exportable: a device page whose
     * memory may be exported (caps.export_memory). mem_export: a new opaque fd of an exportable
     * page's memory. mem_import_fd: memory exported by a device of the same physical device
     * (caps.device_uuid) as a device page; it owns `fd` after success, not after a failure.
     * timeline_export: a new opaque fd of the device's timeline (caps.export_timeline). */
    cubec_status (*mem_create_exportable)(gpu *g, uint64_t size, gpu_mem **out);
    cubec_status (*mem_export)(gpu *g, gpu_mem *m, gpu_export *out);
    cubec_status (*mem_import_fd)(gpu *g, int fd, uint64_t allocation_size, int dedicated,
                                  gpu_mem **out);
    cubec_status (*timeline_export)(gpu *g, int *out_fd);
    /* The inbound timeline: a second timeline semaphore of the device that only another API
     * signals (CUDA, through cuSignalExternalSemaphoresAsync) and submissions wait on
     * (gpu_submit_item.inbound_wait). inbound_export: a new opaque fd of it (where
     * caps.export_timeline). inbound_signal: sets it to `value` from the host (tests, and the
     * null backend's stand-in for the other API). Both optional: NULL where the backend has no
     * inbound timeline; a backend without inbound_signal has inbound_export NULL too. */
    cubec_status (*inbound_export)(gpu *g, int *out_fd);
    cubec_status (*inbound_signal)(gpu *g, uint64_t value);
} gpu_ops;

/* What a blob of a driver's pipeline cache is valid for: cubec's disk cache files one per
 * identity (docs/kernel-cache.md). All zero where the backend has no pipeline cache. */
typedef struct gpu_cache_identity {
    uint8_t uuid[16]; /* Vulkan: VkPhysicalDeviceProperties.pipelineCacheUUID */
    uint32_t vendor_id, device_id, driver_version;
    /* The bounds-checked mode (cubec_device_info.robust): drivers compile a pipeline's bounds
     * checks into its code, so the pipelines of each mode are cached apart. */
    int robust;
} gpu_cache_identity;

/* What every backend's device starts with. */
struct gpu {
    const gpu_ops *ops;
    gpu_caps caps;
    cubec_device_info info; /* info.features: what was enabled */
    feature_set features;   /* the optional shader features enabled, and those turned off */
    fault_plan *faults;     /* counted by the wrappers below; NULL: nothing counted */
    gpu_cache_identity cache_id;
};

/* How to open a backend device (from the config and the public desc). */
typedef struct gpu_open_desc {
    int select_by_index;
    uint32_t index;
    const char *name; /* substring of the device name */
    int validation;
    int force_staging;          /* treat unified memory as discrete (tests the staging paths) */
    int no_push_descriptors;    /* descriptor sets even where push descriptors exist */
    int robust;                 /* bounds-checked buffer access where the device has it */
    uint32_t disabled_features; /* cubec_feature bits not to enable even when present */
    int queue_family;           /* 1 + the queue family to use; 0: chosen (compute-only first) */
    uint32_t null_delay_us;     /* null backend: submissions complete after this long */
    uint64_t null_heap_bytes;   /* null backend: device memory it grants at most (0: no cap) */
    int null_noncoherent;       /* null backend: mappings are host copies that need flushes */
    void (*on_validation)(void *user, const char *message);
    void *on_validation_user;
} gpu_open_desc;

/* GPU_BACKEND_vulkan, GPU_BACKEND_null, ... in the order of GPU_BACKENDS (gpu/gpu_backends.h),
 * which is also the order of CUBEC_BACKEND's choices (config's `backend` is this value). */
typedef enum gpu_backend {
#define GPU_BACKEND_ENUMERATOR_(name, open, count, peek) GPU_BACKEND_##name,
    GPU_BACKENDS(GPU_BACKEND_ENUMERATOR_)
#undef GPU_BACKEND_ENUMERATOR_
        GPU_BACKEND_COUNT
} gpu_backend;

/* The CUBEC_CAPABILITY_* bits of cubec_device_info.capabilities that `caps` and `ops` give: one
 * mapping for open devices and for each backend's peek (which fills the caps it can know). */
uint32_t gpu_capabilities(const gpu_caps *caps, const gpu_ops *ops);

/* Opens a device of `backend` (src/gpu/gpu.c dispatches to the backend's open). */
MUST_USE cubec_status gpu_open(gpu_backend backend, const gpu_open_desc *desc, gpu **out);
void gpu_close(gpu *g);
/* Enumeration without opening (cubec info, cubec_device_get_count / _peek). */
MUST_USE cubec_status gpu_device_count(gpu_backend backend, uint32_t *out_count);
MUST_USE cubec_status gpu_device_peek(gpu_backend backend, uint32_t index, cubec_device_info *out);
/* Parses a backend name (a row of GPU_BACKENDS; NULL or "": the first, the default); an unknown
 * name is refused naming it and listing the backends. */
MUST_USE cubec_status gpu_backend_parse(const char *name, gpu_backend *out);
/* The name of a backend ("vulkan"), or NULL out of range. */
const char *gpu_backend_name(gpu_backend backend);

/* --- Recording: appends to a command buffer's list (gpu/cmd_list.c) ------------------------ */

void gpu_cmd_barrier(gpu_cmd *c, uint32_t src_stages, uint32_t src_access, uint32_t dst_stages,
                     uint32_t dst_access);
void gpu_cmd_bind_pipeline(gpu_cmd *c, const gpu_pipeline *p);
/* `n` storage buffers at bindings 0..n-1, and the metadata buffer at GPU_INFO_BINDING when
 * `info` is not NULL; checked by the backend when it carries the list out. */
void gpu_cmd_bind_buffers(gpu_cmd *c, const gpu_pipeline *p, const gpu_binding *b, uint32_t n,
                          const gpu_binding *info);
/* gpu_cmd_bind_buffers, with `ni` images at their bindings in the same set (one update: a set
 * without push descriptors is written whole). */
void gpu_cmd_bind_resources(gpu_cmd *c, const gpu_pipeline *p, const gpu_binding *b, uint32_t n,
                            const gpu_binding *info, const gpu_image_binding *images, uint32_t ni);
/* Puts a new image in the one layout cubec keeps images in (Vulkan's GENERAL: storage, sampling
 * and copies all work in it, so no later command changes layouts); its contents are undefined. */
void gpu_cmd_image_init(gpu_cmd *c, gpu_image *im);
/* Copies every texel of `im` from (to_image 1) or to (0) tightly packed bytes of `m` at
 * `offset`. */
void gpu_cmd_copy_image(gpu_cmd *c, gpu_image *im, gpu_mem *m, uint64_t offset, int to_image);
void gpu_cmd_push_constants(gpu_cmd *c, const gpu_pipeline *p, const void *data, uint32_t size);
void gpu_cmd_dispatch(gpu_cmd *c, uint32_t x, uint32_t y, uint32_t z);
void gpu_cmd_dispatch_indirect(gpu_cmd *c, gpu_mem *m, uint64_t offset);
void gpu_cmd_copy(gpu_cmd *c, gpu_mem *src, uint64_t src_offset, gpu_mem *dst, uint64_t dst_offset,
                  uint64_t size);
void gpu_cmd_fill(gpu_cmd *c, gpu_mem *dst, uint64_t offset, uint64_t size, uint32_t pattern);
void gpu_cmd_timestamp(gpu_cmd *c, gpu_queries *q, uint32_t query, uint32_t stage);
void gpu_cmd_reset_queries(gpu_cmd *c, gpu_queries *q, uint32_t first, uint32_t count);
/* An external page (gpu_mem.external) handed to the other APIs of the same GPU (acquire 0: a
 * release after every earlier command's writes) or taken back from them (acquire 1: an acquire
 * before every later command): Vulkan's queue family ownership transfer to and from
 * VK_QUEUE_FAMILY_EXTERNAL, which memory another API uses needs whatever its sharing mode
 * (docs/multi-device.md, "Queue-family ownership"). */
void gpu_cmd_ownership(gpu_cmd *c, gpu_mem *m, int acquire);

/* --- Counted calls: each may be failed by the fault plan ---------------------------------- */

MUST_USE static inline cubec_status gpu_fault(gpu *g, cubec_fault_kind kind, cubec_code code)
{
    if (g->faults && fault_hit(g->faults, kind)) return fault_status(g->faults, kind, code);
    return NULL;
}
/* A buffer with its memory, mapped when host-visible memory is asked for (or, for pages, when
 * memory is unified). A device page counts as a page; every map counts as a map. */
MUST_USE cubec_status gpu_mem_alloc(gpu *g, gpu_mem_kind kind, uint64_t size, gpu_mem **out);
/* A page of device memory whose memory comes at its first real use (gpu_mem_back; a dry run's
 * pages). gpu_mem_back is a no-op on a backed page; its errors are gpu_mem_alloc's. */
MUST_USE cubec_status gpu_mem_alloc_unbacked(gpu *g, uint64_t size, gpu_mem **out);
MUST_USE cubec_status gpu_mem_back(gpu *g, gpu_mem *m);
/* Makes the host's writes of [offset, +size) through m->mapped visible to the device, and the
 * device's writes visible to the host's reads (gpu_ops.mem_map's contract). Free on coherent
 * memory: the launch path writes metadata and flushes it for every launch. */
static inline void gpu_mem_flush(gpu *g, gpu_mem *m, uint64_t offset, uint64_t size)
{
    if (m->noncoherent) g->ops->mem_flush(g, m, offset, size);
}
static inline void gpu_mem_invalidate(gpu *g, gpu_mem *m, uint64_t offset, uint64_t size)
{
    if (m->noncoherent) g->ops->mem_invalidate(g, m, offset, size);
}
static inline void gpu_mem_free(gpu *g, gpu_mem *m)
{
    if (m) g->ops->mem_destroy(g, m);
}
/* Pipeline creations are counted by the caller with gpu_fault(g, CUBEC_FAULT_PIPELINE, ...) under
 * its lock: the creation itself runs without it (see server/kernels.c). Backends keep no state of
 * their own across creations, so several may run at once. */
/* The program's memory as a transfer buffer (counted as a map); CUBEC_UNSUPPORTED when the
 * backend cannot import (caps.host_import_alignment 0). */
MUST_USE cubec_status gpu_mem_import(gpu *g, void *ptr, uint64_t size, gpu_mem **out);
/* Why the backend cannot import host memory, for messages (caps.no_host_import, or the
 * backend's name where it gave none). */
static inline const char *gpu_no_host_import(const gpu *g)
{
    return g->caps.no_host_import ? g->caps.no_host_import : g->ops->name;
}
/* A device page allocated exportable (counted as a page, mapped as gpu_mem_alloc maps pages);
 * CUBEC_UNSUPPORTED naming the backend where caps.export_memory is 0. */
MUST_USE cubec_status gpu_mem_alloc_exportable(gpu *g, uint64_t size, gpu_mem **out);
/* A new fd of an exportable page's memory; CUBEC_UNSUPPORTED as above. */
MUST_USE cubec_status gpu_mem_export(gpu *g, gpu_mem *m, gpu_export *out);
/* Memory from an fd another device of this physical device exported, as a device page (counted
 * as a map, mapped as pages are). It imports a duplicate: `fd` stays the caller's either way.
 * CUBEC_UNSUPPORTED as above; a closed fd, CUBEC_INVALID_ARGUMENT naming it. */
MUST_USE cubec_status gpu_mem_import_fd(gpu *g, int fd, uint64_t allocation_size, int dedicated,
                                        gpu_mem **out);
/* A new fd of the device's timeline; CUBEC_UNSUPPORTED where caps.export_timeline is 0. */
MUST_USE cubec_status gpu_timeline_export(gpu *g, int *out_fd);
/* A new fd of the device's inbound timeline; CUBEC_UNSUPPORTED as gpu_timeline_export. */
MUST_USE cubec_status gpu_inbound_export(gpu *g, int *out_fd);
/* Whether submissions may wait on the inbound timeline (the backend has one). */
static inline int gpu_has_inbound(const gpu *g)
{
    return g->ops->inbound_signal != NULL;
}
MUST_USE cubec_status gpu_pipeline_create(gpu *g, const gpu_pipeline_desc *desc,
                                          gpu_pipeline **out);
static inline void gpu_image_free(gpu *g, gpu_image *im)
{
    if (im) g->ops->image_destroy(g, im);
}
/* Submits; a failure leaves nothing submitted. */
MUST_USE cubec_status gpu_submit(gpu *g, const gpu_submit_item *items, uint32_t n);
/* Waits are counted by the caller with gpu_fault(g, CUBEC_FAULT_WAIT, ...) under its lock: the
 * wait itself runs without it (see server/submission.c). */

#endif
