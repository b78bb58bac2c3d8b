/* The WebGPU backend's objects, shared by its files: the device (wg_gpu.c), the command list's
 * encoding (wg_encode.c) and the bind-group cache (wg_bind_cache.c). */
#ifndef CUBEC_GPU_WEBGPU_WG_INTERNAL_H
#define CUBEC_GPU_WEBGPU_WG_INTERNAL_H

#include "gpu/cmd_list.h"
#include "gpu/webgpu/wg_gpu.h"
#include "gpu/webgpu/wg_loader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* Bind groups kept per device (wg_bind_cache.c): 4096 in sets of 8, so a working set of 1000
 * groups (a graph of 1000 launches over 1000 buffers) stays whole. CubeCL's LRU holds ~1024. */
#define WG_BIND_CACHE_SETS 512u
#define WG_BIND_CACHE_WAYS 8u
#define WG_MAX_IMMEDIATES 256u /* bytes of immediates a pipeline may take at most */

typedef struct wg_bind_entry wg_bind_entry;

/* What images use of the device (wg_image.c): the features enabled for them, the samplers, and
 * which formats beyond WebGPU core the device was found to store (bit format, +16 for 3D). */
enum {
    WG_IMAGE_F_FLOAT32_FILTERABLE = 1u << 0,
    WG_IMAGE_F_TIER1 = 1u << 1,           /* texture-formats-tier1: more storage formats */
    WG_IMAGE_F_TIER2 = 1u << 2,           /* texture-formats-tier2: read_write storage */
    WG_IMAGE_F_ADAPTER_FORMATS = 1u << 3, /* wgpu-native's adapter-specific format features */
};
#define WG_SAMPLERS 6 /* two filters by three address modes: index linear + 2 * address */
/* How an image download moves rows that are not a multiple of 256 bytes (WebGPU's copy pitch):
 * a copy per texture row; or one texture copy into the scratch buffer's 256-byte aligned rows,
 * moved from there by a buffer copy per row or by the unpacking kernel (wg_image.c). */
typedef enum wg_image_copies {
    WG_IMAGE_COPIES_TEXTURE_ROWS,
    WG_IMAGE_COPIES_BUFFER_ROWS,
    WG_IMAGE_COPIES_KERNEL,
} wg_image_copies;
typedef struct wg_image_state {
    uint32_t features;
    WGPUSampler samplers[WG_SAMPLERS];
    uint64_t sampler_ids[WG_SAMPLERS]; /* for the bind cache's keys */
    uint32_t probed, storable;         /* under wg_gpu.lock */
    /* The kernel from rows 256-byte aligned to packed rows (wg_image.c; NULL without
     * immediates). */
    WGPUBindGroupLayout repack_layout;
    WGPUComputePipeline unpack;
    wg_image_copies copies; /* downloads' way */
} wg_image_state;

/* Where the device writes the command list's timestamps (wg_queries.c chooses, wg_encode.c
 * places them; docs/device.md, "The WebGPU backend"). */
typedef enum wg_timestamps {
    WG_TS_NONE,            /* no TimestampQuery: profiles are host-measured */
    WG_TS_PASS_BOUNDARIES, /* core TimestampQuery only: a pass descriptor's timestampWrites */
    WG_TS_ENCODERS,        /* wgpuCommandEncoderWriteTimestamp between passes */
    WG_TS_PASSES,          /* also wgpuComputePassEncoderWriteTimestamp inside a pass */
} wg_timestamps;

#define WG_QUERIES_PER_SET 4096u /* WebGPU's most queries in one query set */

typedef struct wg_gpu {
    gpu base; /* first: the server's gpu * is a wg_gpu * */
    const wg_procs *p;
    WGPUInstance instance;
    WGPUAdapter adapter;
    WGPUDevice device;
    WGPUQueue queue;
    WGPULimits limits;
    int immediates; /* the device takes immediates (push constants) */
    wg_timestamps timestamps;
    /* Timeline: `completed` advances in the queue's work-done callbacks (submission order). */
    pthread_mutex_t lock;
    uint64_t completed, submitted;
    char *error; /* the first uncaptured error since the last check (malloc'ed), under lock */
    int abandoned;
    /* One submission (its encoding included) at a time, and the bind-group cache with it. */
    pthread_mutex_t queue_lock;
    wg_bind_entry *bind_cache; /* WG_BIND_CACHE_SETS x WG_BIND_CACHE_WAYS */
    uint64_t bind_tick;        /* lookups so far: the cache's clock for least recently used */
    uint64_t bind_groups_made; /* groups the cache has made (tests read it) */
    uint64_t queue_submits;    /* wgpuQueueSubmit calls (wg_submit; tests read it) */
    atomic_uint reads_begun;   /* wg_mem_read calls, counted before queue_lock (tests) */
    uint64_t next_mem_id;      /* identities of buffers for the cache's keys (never reused) */
    /* Pattern fills (Vulkan's vkCmdFillBuffer has no WebGPU twin past zeros): a kernel. */
    WGPUComputePipeline fill_pipeline;
    WGPUBindGroupLayout fill_layout;
    /* Copies of bytes that are not whole words: a kernel too (wg_encode.c's copy_bytes). */
    WGPUComputePipeline copy_pipeline;
    WGPUBindGroupLayout copy_layout;
    /* Copies within one buffer go through this (wg_scratch), under queue_lock. */
    WGPUBuffer scratch;
    uint64_t scratch_bytes;
    /* Indirect dispatches' arguments, copied out of their pages (wg_indirect), under
     * queue_lock. */
    WGPUBuffer indirect;
    uint64_t indirect_bytes;
    /* Reads are copied here and mapped (wg_mem_read, wg_mem_invalidate), under queue_lock. */
    WGPUBuffer map;
    uint64_t map_bytes;
    wg_image_state images;
} wg_gpu;

typedef struct wg_mem {
    gpu_mem base;
    WGPUBuffer buffer;
    uint64_t id;    /* wg_gpu.next_mem_id at creation: bind-cache keys never see a reused one */
    uint64_t bytes; /* the WGPUBuffer's size: base.size rounded up to 4 */
} wg_mem;

struct gpu_pipeline {
    WGPUComputePipeline pipeline;
    WGPUPipelineLayout layout;
    WGPUBindGroupLayout groups[GPU_MAX_SETS];
    uint32_t set_count;
    uint32_t slot_count;
    gpu_slot slots[GPU_MAX_BINDINGS];
    int info_uniform;
    uint32_t push_size;
    uint64_t id; /* for the bind cache's keys, like wg_mem.id */
    /* The format each storage image is declared with, by set and binding (bound images must
     * have it: wg_image_bind_entry). */
    uint32_t resource_count;
    struct {
        uint32_t set, binding, format;
    } resources[GPU_MAX_RESOURCES];
};

/* The seam's query pool: WebGPU query sets of WG_QUERIES_PER_SET queries (the last shorter),
 * query i being index i % WG_QUERIES_PER_SET of set i / WG_QUERIES_PER_SET, and the buffer reads
 * resolve them into. */
struct gpu_queries {
    WGPUQuerySet *sets;
    uint32_t set_count;
    uint32_t count;
    WGPUBuffer resolve; /* QUERY_RESOLVE | COPY_SRC, resolve_bytes */
    uint64_t resolve_bytes;
};

static inline WGPUQuerySet wg_query_set(const gpu_queries *q, uint32_t query, uint32_t *out_index)
{
    *out_index = query % WG_QUERIES_PER_SET;
    return q->sets[query / WG_QUERIES_PER_SET];
}

typedef struct wg_cmd {
    gpu_cmd base; /* first: the command list */
    int ended;
} wg_cmd;

static inline wg_gpu *wg_of(gpu *g)
{
    return (wg_gpu *)g;
}

#define WG_ALIGN4(x) (((x) + 3u) & ~(uint64_t)3u)

/* The seam's operations, one file per concern (the ops table is wg_gpu.c's). */
/* wg_mem.c */
MUST_USE cubec_status wg_mem_create(gpu *g, gpu_mem_kind kind, uint64_t size, gpu_mem **out);
MUST_USE cubec_status wg_mem_create_unbacked(gpu *g, uint64_t size, gpu_mem **out);
MUST_USE cubec_status wg_mem_back(gpu *g, gpu_mem *gm);
MUST_USE cubec_status wg_mem_map(gpu *g, gpu_mem *gm);
void wg_mem_flush(gpu *g, gpu_mem *gm, uint64_t offset, uint64_t size);
void wg_mem_invalidate(gpu *g, gpu_mem *gm, uint64_t offset, uint64_t size);
void wg_mem_destroy(gpu *g, gpu_mem *gm);
void wg_mem_raw(gpu *g, gpu_mem *gm, uint64_t *out_handle, uint64_t *out_address);
MUST_USE cubec_status wg_mem_write(gpu *g, gpu_mem *gm, uint64_t offset, const void *src,
                                   uint64_t size);
MUST_USE cubec_status wg_mem_read(gpu *g, gpu_mem *gm, uint64_t offset, void *dst, uint64_t size,
                                  uint64_t timeout_ns);
/* wg_pipeline.c */
MUST_USE cubec_status wg_pipeline_create(gpu *g, const gpu_pipeline_desc *desc, gpu_pipeline **out);
void wg_pipeline_destroy(gpu *g, gpu_pipeline *pl);
/* Creates the module and the pipeline of `source` (a chained WGSL or SPIR-V source). */
MUST_USE cubec_status wg_build_pipeline(wg_gpu *w, WGPUChainedStruct *source, const char *name,
                                        const char *entry, const gpu_spec_constant *spec,
                                        const double *spec_values, uint32_t spec_count,
                                        WGPUPipelineLayout layout, WGPUComputePipeline *out);
/* wg_submit.c */
MUST_USE cubec_status wg_cmd_create(gpu *g, gpu_cmd_use use, uint32_t sets, gpu_cmd **out);
void wg_cmd_destroy(gpu *g, gpu_cmd *c);
MUST_USE cubec_status wg_cmd_begin(gpu *g, gpu_cmd *c);
MUST_USE cubec_status wg_cmd_end(gpu *g, gpu_cmd *c);
MUST_USE cubec_status wg_submit(gpu *g, const gpu_submit_item *items, uint32_t n);
MUST_USE cubec_status wg_timeline_value(gpu *g, uint64_t *out);
MUST_USE cubec_status wg_timeline_wait(gpu *g, uint64_t value, uint64_t timeout_ns);
MUST_USE cubec_status wg_timeline_signal(gpu *g, uint64_t value);
void wg_queue_idle(gpu *g);
void wg_abandon(gpu *g);
int wg_calibrate(gpu *g, uint64_t *out_ticks, uint64_t *out_host_ns);
/* wg_queries.c: timestamp queries. */
MUST_USE cubec_status wg_queries_create(gpu *g, uint32_t count, gpu_queries **out);
void wg_queries_destroy(gpu *g, gpu_queries *q);
void wg_queries_host_reset(gpu *g, gpu_queries *q, uint32_t first, uint32_t count);
MUST_USE cubec_status wg_queries_read(gpu *g, gpu_queries *q, uint32_t first, uint32_t count,
                                      uint64_t *out_ticks);
/* Chooses w->timestamps from the adapter's features (capped by CUBEC_WEBGPU_TIMESTAMPS) and
 * appends the features the device must be asked for to `features` (at most 3; *count grows). */
MUST_USE cubec_status wg_timestamp_features(wg_gpu *w, WGPUFeatureName *features, size_t *count);
/* Nanoseconds per tick of the device's resolved timestamps. */
double wg_timestamp_period(const wg_gpu *w);
/* wg_image.c */
MUST_USE cubec_status wg_image_requirements(gpu *g, const gpu_image_desc *desc, uint64_t *out_size,
                                            uint64_t *out_alignment);
MUST_USE cubec_status wg_image_create(gpu *g, const gpu_image_desc *desc, gpu_mem *m,
                                      uint64_t offset, gpu_image **out);
void wg_image_destroy(gpu *g, gpu_image *im);
MUST_USE cubec_status wg_image_write(gpu *g, gpu_image *im, const void *src);
/* wg_events.c: the device's uncaptured-error callback (its userdata1 is the wg_gpu). */
void wg_on_uncaptured(WGPUDevice const *device, WGPUErrorType type, WGPUStringView message,
                      void *user1, void *user2);
/* wg_events.c: lets the implementation run its callbacks (work done, maps); blocks when `wait`. */
void wg_poll_events(wg_gpu *w, int wait);
uint64_t wg_now_ns(void); /* CLOCK_MONOTONIC */
/* wg_events.c: maps [0, bytes) of the MAP_READ buffer `map`, waits for it (polling) at most
 * timeout_ns (0: without a limit), copies [skip, +n) of it to `dst` and unmaps it. 0 when it
 * did; else the WGPUMapAsyncStatus that failed, or one of WG_MAP_* below. */
#define WG_MAP_NO_RANGE (-1)  /* the mapped range could not be had */
#define WG_MAP_TIMED_OUT (-2) /* not mapped within timeout_ns (the map is aborted) */
#define WG_MAP_NO_MEMORY (-3) /* the host is out of memory */
int wg_map_read(wg_gpu *w, WGPUBuffer map, size_t bytes, size_t skip, void *dst, size_t n,
                uint64_t timeout_ns);

/* Encodes the lists of `n` items, in order, into one new command buffer (under queue_lock). */
MUST_USE cubec_status wg_encode(wg_gpu *w, const gpu_submit_item *items, uint32_t n,
                                WGPUCommandBuffer *out);
/* Workgroups of 256 for the backend's own grid-stride kernels (fill, byte copy, image
 * repacking) over `words`
 * words. A GPU gets enough to fill it (4096 x 256 invocations is more than an H200 keeps
 * resident) and no more than the dispatch limit. A CPU device runs each workgroup as a task of
 * its own on one of a few threads, and llvmpipe allocates memory for each (a page-aligned
 * block): a fill of 16 MiB as 16384 workgroups only added overhead there, and under ASan the
 * quarantine kept those blocks by the hundred thousand (test_relocation_threads at 3.6 GB
 * resident); 64 keep every thread busy. Inline: wg_encode.c and wg_image.c
 * both use it, and each calls the other only one way. */
static inline uint32_t wg_own_kernel_groups(const wg_gpu *w, uint64_t words)
{
    uint64_t cap = w->base.info.type == CUBEC_DEVICE_TYPE_CPU ? 64u : 4096u;
    if (cap > w->limits.maxComputeWorkgroupsPerDimension)
        cap = w->limits.maxComputeWorkgroupsPerDimension;
    uint64_t groups = (words + 255u) / 256u;
    if (groups > cap) groups = cap;
    return groups ? (uint32_t)groups : 1u;
}

/* The bind group of set `set` of `pl` with these buffers (cached; under queue_lock). The
 * returned bind group stays the cache's. */
MUST_USE cubec_status wg_bind_group(wg_gpu *w, const gpu_pipeline *pl, uint32_t set,
                                    const WGPUBindGroupEntry *entries, uint32_t count,
                                    const uint64_t *mem_ids, WGPUBindGroup *out);
void wg_bind_cache_free(wg_gpu *w);
/* A buffer of at least `bytes` for copies within one buffer (under queue_lock; grown by
 * replacement: command buffers hold their own references to the old one). */
MUST_USE cubec_status wg_scratch(wg_gpu *w, uint64_t bytes, WGPUBuffer *out);
/* The same for reads mapped by the host (MAP_READ | COPY_DST). */
MUST_USE cubec_status wg_map_buffer(wg_gpu *w, uint64_t bytes, WGPUBuffer *out);
/* The same for indirect dispatches' arguments (INDIRECT | COPY_DST). */
MUST_USE cubec_status wg_indirect(wg_gpu *w, uint64_t bytes, WGPUBuffer *out);
/* The first uncaptured error since the last call, as a status naming `what`; NULL if none. */
MUST_USE cubec_status wg_take_error(wg_gpu *w, const char *what);

#endif
