/* The null backend (see null_gpu.h): gpu.h carried out on host memory, with no kernels.
 *
 * Owns: the device (null_gpu, whose first member is the struct gpu the server sees), its memory
 * (null_mem), pipelines (null_pipeline: only what the checks need), command buffers (null_cmd:
 * the seam's command list, gpu/cmd_list.h, which this backend checks and interprets) and query
 * pools (null_queries: host ticks).
 *
 * Execution: submit carries out every command of its items in order before it returns, even
 * when the completion is delayed: the contents of memory then never depend on timing, and a
 * test that reads memory early sees the result rather than a race. Only the timeline (and so
 * whatever the server does once it sees a value) waits for the delay. Timestamps are the host's
 * CLOCK_MONOTONIC in ns at execution, so ticks and host time are the same clock (period 1 ns,
 * calibration exact).
 *
 * Checks: the recording functions cannot fail (gpu.h), so cmd_end walks the list and returns
 * the first entry Vulkan's validation layer would refuse, like a Vulkan recording error; submit
 * refuses a command buffer that did not end well, a one-time one submitted twice, and signal
 * values that do not increase, before it carries out anything ("a failure leaves nothing
 * submitted"). These are server bugs: CUBEC_INTERNAL.
 *
 * Threads: submit may run on the submitter thread while the device thread reads, waits on or
 * signals the timeline. `lock` guards the timeline (value, pending completions, each command
 * buffer's last signal); `queue_lock` keeps submissions whole and in order, like a VkQueue's
 * external synchronisation, without holding `lock` while memory is copied. Everything else is
 * used by one thread at a time, as the server guarantees for the Vulkan objects. */
#include "gpu/null/null_gpu.h"

#include "gpu/cmd_list.h"

#include "base/image_formats.h"
#include "base/log.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NULL_DEVICE_NAME "cubec null device"
#define NULL_ALIGNMENT 64u      /* host memory alignment: a cache line, like a GPU page's start */
#define NULL_MAP_MIN (1u << 20) /* allocations from this size on are mapped (null_mem_create) */
#define NULL_SPIRV_MAGIC 0x07230203u
#define NULL_SPIRV_HEADER_WORDS 5u
#define NULL_INITIAL_PENDING 16u

/* --- Objects ------------------------------------------------------------------------------ */

/* A completion not yet visible: `value` is reached at `due` (CLOCK_MONOTONIC ns). */
typedef struct null_pending {
    uint64_t value;
    uint64_t due;
} null_pending;

typedef struct null_gpu {
    gpu base; /* first: the server's gpu * is a null_gpu * */
    uint64_t delay_ns;
    int abandoned; /* queue_idle no longer waits (its device was given up on, see gpu.h) */
    pthread_mutex_t queue_lock; /* one submission at a time, carried out whole */
    pthread_mutex_t lock;       /* the timeline below, and null_cmd.last_signal */
    pthread_cond_t changed;     /* on CLOCK_MONOTONIC: a value reached or a completion queued */
    uint64_t value;             /* reached */
    uint64_t submitted;         /* highest value submitted or signalled from the host */
    uint64_t last_due;          /* completions become visible in submission order */
    /* The inbound timeline (gpu_ops.inbound_signal): a counter only the host sets here. A
     * submission that waits on it runs its commands once it is reached, so later submissions
     * (which the queue lock holds back) run after it too, as on a Vulkan queue. */
    uint64_t inbound;
    null_pending *pending; /* ring of delayed completions, oldest at pending_head */
    uint32_t pending_head, pending_count, pending_cap;
    uint64_t heap_cap;  /* device memory granted at most (desc->null_heap_bytes; 0: no cap) */
    uint64_t heap_used; /* device memory granted now; under `lock` */
    int noncoherent;    /* desc->null_noncoherent: mappings are shadows (null_mem.shadow) */
} null_gpu;

typedef struct null_mem {
    gpu_mem base; /* first: the public fields */
    unsigned char *host;
    int imported; /* host is the program's memory: not freed here */
    void *map;    /* a mapping of map_bytes that holds host, or NULL when host is from malloc */
    size_t map_bytes;
    /* With null_noncoherent, what mem->mapped points at: a host copy of `host` (the device's
     * bytes) that only mem_flush carries to the device and only mem_invalidate refreshes, as a
     * CPU cache in front of non-coherent memory does. NULL otherwise. */
    unsigned char *shadow;
    void *shadow_map;
    size_t shadow_map_bytes;
} null_mem;

typedef struct null_pipeline {
    uint32_t binding_count;
    int info_buffer;
    uint32_t push_size;
    char name[64];
} null_pipeline;

typedef struct null_queries {
    uint32_t count;
    uint64_t *ticks;
    unsigned char *written; /* 1 once a timestamp was written since the last reset */
} null_queries;

typedef enum null_cmd_state {
    CMD_INITIAL,    /* created, or its recording failed: not submittable */
    CMD_RECORDING,  /* between cmd_begin and cmd_end */
    CMD_EXECUTABLE, /* ended without error */
} null_cmd_state;

/* A command buffer: the seam's command list (gpu/cmd_list.h), which cmd_end checks and submit
 * carries out, and the state Vulkan's validation would track. */
typedef struct null_cmd {
    gpu_cmd base; /* first: the list the server records into */
    null_gpu *g;
    gpu_cmd_use use;
    null_cmd_state state;
    int submitted;        /* GPU_CMD_ONCE: this recording was submitted (a second time is a bug) */
    uint64_t last_signal; /* under g->lock: in flight until the timeline reaches it */
    size_t ended_len;     /* the list's length at cmd_end: more was recorded after it if it grew */
} null_cmd;

/* --- Helpers ------------------------------------------------------------------------------ */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct timespec to_timespec(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
                          .tv_nsec = (long)(ns % 1000000000u)};
    return ts;
}

/* 1 when [offset, offset+size) lies in a buffer of `limit` bytes (without overflowing). */
/* An image: packed texels in a page (docs/images.md). */
struct gpu_image {
    gpu_mem *m;
    uint64_t offset, bytes;
};

static int in_range(uint64_t offset, uint64_t size, uint64_t limit)
{
    return offset <= limit && size <= limit - offset;
}

static void fill_info(cubec_device_info *out)
{
    memset(out, 0, sizeof *out);
    out->features = FEATURES_ALL; /* it runs no kernels: every feature is accepted */
    snprintf(out->name, sizeof out->name, "%s", NULL_DEVICE_NAME);
    snprintf(out->driver, sizeof out->driver, "cubec null backend (host memory, no kernels)");
    out->vendor_id = 0;
    out->device_id = 0;
    out->api_version = (1u << 22) | (3u << 12); /* 1.3.0 (VK_MAKE_API_VERSION): lavapipe's level */
    /* CPU: the server then copies with transfer commands (which this backend carries out) rather
     * than kernels (which it does not), and does not busy-poll. */
    out->type = CUBEC_DEVICE_TYPE_CPU;
    out->unified_memory = 1;
    /* Limits as lavapipe reports them, so that the server's chunking and alignment paths run as
     * they do on the CPU driver the tests use. */
    out->max_storage_buffer_range = 128u << 20;
    out->max_allocation_size = 1u << 30;
    out->max_push_constants_size = 256;
    for (int i = 0; i < 3; i++)
        out->max_workgroup_count[i] = 65535;
    out->max_workgroup_size[0] = 1024;
    out->max_workgroup_size[1] = 1024;
    out->max_workgroup_size[2] = 64;
    out->max_workgroup_invocations = 1024;
    out->max_shared_memory_size = 32768;
    out->storage_offset_alignment = 16;
    out->uniform_offset_alignment = 64; /* caps.uniform_offset_alignment: NVIDIA's, above storage */
    out->subgroup_size = 8;
    out->min_subgroup_size = out->max_subgroup_size = 8;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    out->device_local_heap_size =
        pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : (uint64_t)4 << 30;
    out->timestamp_period_ns = 1.0;
    out->push_descriptors = 1;
    out->host_register_alignment = 4096; /* caps.host_import_alignment */
    out->tasks_max = 0;                  /* the server's, not the device's */
}

/* --- Timeline (callers hold g->lock) --------------------------------------------------------- */

/* Makes the completions whose time has come visible. */
static void advance_locked(null_gpu *g, uint64_t now)
{
    while (g->pending_count && g->pending[g->pending_head].due <= now) {
        uint64_t v = g->pending[g->pending_head].value;
        if (v > g->value) g->value = v;
        g->pending_head = (g->pending_head + 1) % g->pending_cap;
        g->pending_count--;
    }
}

/* Blocks until the timeline reaches `value`. As with vkWaitSemaphores(UINT64_MAX), a value that
 * nothing will signal waits forever: a later submit or host signal from another thread may
 * still reach it. */
/* Waits until the timeline reaches `value`, or until `deadline` (CLOCK ns, 0: none); returns
 * whether it was reached. */
static int wait_locked_until(null_gpu *g, uint64_t value, uint64_t deadline)
{
    for (;;) {
        uint64_t now = now_ns();
        advance_locked(g, now);
        if (g->value >= value) return 1;
        if (deadline && now >= deadline) return 0;
        uint64_t until = g->pending_count ? g->pending[g->pending_head].due : 0;
        if (deadline && (!until || deadline < until)) until = deadline;
        if (until) {
            struct timespec due = to_timespec(until);
            /* ETIMEDOUT or a wake-up: the loop looks again either way. */
            (void)pthread_cond_timedwait(&g->changed, &g->lock, &due);
        } else {
            pthread_cond_wait(&g->changed, &g->lock);
        }
    }
}

static void wait_locked(null_gpu *g, uint64_t value)
{
    (void)wait_locked_until(g, value, 0);
}

/* Room for `n` more pending completions, kept in order (the ring is unrolled into the new
 * block). */
static int reserve_pending_locked(null_gpu *g, uint32_t n)
{
    uint64_t need = (uint64_t)g->pending_count + n;
    if (need <= g->pending_cap) return 1;
    uint64_t cap = g->pending_cap ? g->pending_cap : NULL_INITIAL_PENDING;
    while (cap < need)
        cap *= 2;
    if (cap > UINT32_MAX || cap > SIZE_MAX / sizeof(null_pending)) return 0;
    null_pending *p = malloc((size_t)cap * sizeof *p);
    if (!p) return 0;
    for (uint32_t i = 0; i < g->pending_count; i++) /* pending_count > 0: pending_cap > 0 */
        p[i] = g->pending[(g->pending_head + i) % (g->pending_cap ? g->pending_cap : 1)];
    free(g->pending);
    g->pending = p;
    g->pending_head = 0;
    g->pending_cap = (uint32_t)cap;
    return 1;
}

/* --- Device ------------------------------------------------------------------------------- */

static void null_destroy(gpu *base)
{
    null_gpu *g = (null_gpu *)base;
    if (!g) return;
    pthread_cond_destroy(&g->changed);
    pthread_mutex_destroy(&g->lock);
    pthread_mutex_destroy(&g->queue_lock);
    free(g->pending);
    free(g);
}

/* --- Memory ------------------------------------------------------------------------------- */

/* Device memory that goes back to the capped heap. */
static void heap_give_back(null_gpu *g, gpu_mem_kind kind, uint64_t size)
{
    if (kind != GPU_MEM_DEVICE || !g->heap_cap) return;
    pthread_mutex_lock(&g->lock);
    g->heap_used -= size;
    pthread_mutex_unlock(&g->lock);
}

/* `bytes` (a multiple of NULL_ALIGNMENT) of zeroes that end where an inaccessible guard page
 * begins: an access past the end faults at once, as AddressSanitizer would report it. A pool
 * page or a ring is megabytes of which a test touches a few pages; memset made every open and
 * every page cost its whole size (and, under AddressSanitizer, poisoning its shadow at each free
 * cost as much again), while fresh anonymous pages cost only what is touched. */
static unsigned char *map_zeroed(size_t bytes, void **out_map, size_t *out_map_bytes)
{
    long page_size = sysconf(_SC_PAGESIZE);
    size_t page = page_size > 0 ? (size_t)page_size : 4096;
    size_t len = (bytes + page - 1) / page * page + page;
    void *map =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) return NULL;
    unsigned char *guard = (unsigned char *)map + len - page;
    if (mprotect(guard, page, PROT_NONE) != 0) {
        munmap(map, len);
        return NULL;
    }
    *out_map = map;
    *out_map_bytes = len;
    return guard - bytes;
}

/* Takes `size` bytes of the heap cap and the host memory behind m. On error nothing changed. */
static cubec_status null_mem_back(gpu *base, gpu_mem *mem)
{
    if (!mem) return INVALID_ARG("null gpu mem_back: mem is NULL");
    null_gpu *g = (null_gpu *)base;
    null_mem *m = (null_mem *)mem;
    uint64_t size = mem->size;
    if (mem->kind == GPU_MEM_DEVICE && g->heap_cap) {
        /* A driver's heap runs out: the server's out-of-memory paths can then be tested. */
        pthread_mutex_lock(&g->lock);
        uint64_t used = g->heap_used;
        int fits = size <= g->heap_cap - used;
        if (fits) g->heap_used += size;
        pthread_mutex_unlock(&g->lock);
        if (!fits)
            return status_make(CUBEC_OUT_OF_MEMORY,
                               "null gpu: %" PRIu64 " bytes of device memory would pass the heap "
                               "cap of %" PRIu64 " bytes (CUBEC_NULL_HEAP_BYTES; %" PRIu64
                               " bytes granted)",
                               size, g->heap_cap, used);
    }
    /* aligned_alloc wants a multiple of the alignment; the size is below 1 GiB here. */
    size_t bytes = (size_t)((size + NULL_ALIGNMENT - 1) / NULL_ALIGNMENT * NULL_ALIGNMENT);
    unsigned char *host = NULL;
    if (bytes >= NULL_MAP_MIN) {
        host = map_zeroed(bytes, &m->map, &m->map_bytes);
    } else {
        host = aligned_alloc(NULL_ALIGNMENT, bytes);
        if (host) memset(host, 0, bytes); /* deterministic contents: no test sees leftovers */
    }
    if (!host) {
        heap_give_back(g, mem->kind, size);
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "null gpu: host out of memory allocating %" PRIu64 " bytes", size);
    }
    m->host = host;
    mem->unbacked = 0;
    return NULL;
}

/* The record of a buffer, without its memory (null_mem_back). */
static cubec_status null_mem_record(gpu *base, gpu_mem_kind kind, uint64_t size, null_mem **out)
{
    if (!out) return INVALID_ARG("null gpu mem_create: out is NULL");
    *out = NULL;
    if (kind != GPU_MEM_DEVICE && kind != GPU_MEM_UPLOAD && kind != GPU_MEM_READBACK &&
        kind != GPU_MEM_HOST && kind != GPU_MEM_METADATA)
        return INVALID_ARG("null gpu mem_create: kind %d is not a gpu_mem_kind", (int)kind);
    if (size == 0) return INVALID_ARG("null gpu mem_create: size 0 (Vulkan needs at least 1 byte)");
    /* Like a driver's allocation limit: the server's paths for huge buffers see the same error. */
    if (size > base->info.max_allocation_size)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "null gpu: %" PRIu64 " bytes exceed max_allocation_size %" PRIu64, size,
                           base->info.max_allocation_size);
    null_mem *m = calloc(1, sizeof *m);
    if (!m) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (memory record)");
    m->base.size = size;
    m->base.kind = kind;
    m->base.unbacked = 1;
    *out = m;
    return NULL;
}

static cubec_status null_mem_create_unbacked(gpu *base, uint64_t size, gpu_mem **out)
{
    null_mem *m = NULL;
    RETURN_IF_ERROR(null_mem_record(base, GPU_MEM_DEVICE, size, &m));
    *out = &m->base;
    return NULL;
}

static cubec_status null_mem_create(gpu *base, gpu_mem_kind kind, uint64_t size, gpu_mem **out)
{
    null_mem *m = NULL;
    RETURN_IF_ERROR(null_mem_record(base, kind, size, &m));
    cubec_status err = null_mem_back(base, &m->base);
    if (err) {
        free(m);
        return err;
    }
    *out = &m->base;
    return NULL;
}

/* Memory the host writes or reads through a mapping that the device also uses: with
 * null_noncoherent it gets a shadow (pinned HOST and IMPORTED memory are the program's own,
 * coherent by the seam's contract). */
static int shadowed(const null_gpu *g, const gpu_mem *mem)
{
    return g->noncoherent && (mem->kind == GPU_MEM_UPLOAD || mem->kind == GPU_MEM_METADATA ||
                              mem->kind == GPU_MEM_READBACK || mem->kind == GPU_MEM_DEVICE);
}

static cubec_status null_mem_map(gpu *base, gpu_mem *mem)
{
    if (!mem) return INVALID_ARG("null gpu mem_map: mem is NULL");
    /* With force_staging the device is discrete: device memory is not host-visible, as on a
     * discrete Vulkan device, so a server path that maps it anyway fails here too. */
    if (mem->kind == GPU_MEM_DEVICE && !base->caps.unified)
        return status_make(CUBEC_UNSUPPORTED,
                           "null gpu: device memory is not host-visible (force_staging)");
    null_mem *m = (null_mem *)mem;
    if (mem->mapped) return NULL;
    if (!shadowed((null_gpu *)base, mem)) {
        mem->mapped = m->host;
        return NULL;
    }
    size_t bytes = (size_t)((mem->size + NULL_ALIGNMENT - 1) / NULL_ALIGNMENT * NULL_ALIGNMENT);
    m->shadow = map_zeroed(bytes, &m->shadow_map, &m->shadow_map_bytes);
    if (!m->shadow)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "null gpu: host out of memory mapping %" PRIu64 " bytes", mem->size);
    memcpy(m->shadow, m->host, (size_t)mem->size);
    mem->mapped = m->shadow;
    mem->noncoherent = 1;
    return NULL;
}

/* What Vulkan's validation would say of a flush or invalidate outside the memory; void calls
 * cannot refuse, so the log names the server bug. */
static int sync_range_ok(const gpu_mem *mem, uint64_t offset, uint64_t size, const char *what)
{
    const null_mem *m = (const null_mem *)mem;
    if (m->shadow && in_range(offset, size, mem->size)) return 1;
    LOG(LOG_ERROR, LOG_SYS_DEVICE,
        "null gpu: %s of [%" PRIu64 ", +%" PRIu64 ") of %" PRIu64 " bytes of %s memory ignored",
        what, offset, size, mem->size, m->shadow ? "mapped" : "unshadowed");
    return 0;
}

static void null_mem_flush(gpu *base, gpu_mem *mem, uint64_t offset, uint64_t size)
{
    (void)base;
    null_mem *m = (null_mem *)mem;
    if (sync_range_ok(mem, offset, size, "mem_flush"))
        memcpy(m->host + offset, m->shadow + offset, (size_t)size);
}

static void null_mem_invalidate(gpu *base, gpu_mem *mem, uint64_t offset, uint64_t size)
{
    (void)base;
    null_mem *m = (null_mem *)mem;
    if (sync_range_ok(mem, offset, size, "mem_invalidate"))
        memcpy(m->shadow + offset, m->host + offset, (size_t)size);
}

static void null_mem_destroy(gpu *base, gpu_mem *mem)
{
    if (!mem) return;
    if (!mem->unbacked) heap_give_back((null_gpu *)base, mem->kind, mem->size);
    null_mem *m = (null_mem *)mem;
    if (m->shadow_map) munmap(m->shadow_map, m->shadow_map_bytes);
    if (m->map)
        munmap(m->map, m->map_bytes);
    else if (!m->imported) /* imported: the program's memory */
        free(m->host);
    free(m);
}

/* Like VK_EXT_external_memory_host at a 4 KiB alignment: the program's bytes are the buffer. */
static cubec_status null_mem_import_host(gpu *base, void *ptr, uint64_t size, gpu_mem **out)
{
    uint64_t align = base->caps.host_import_alignment;
    if (!ptr || !size || (uintptr_t)ptr % align || size % align)
        return INVALID_ARG("null gpu mem_import_host: %p +%" PRIu64 " is not aligned to %" PRIu64,
                           ptr, size, align);
    null_mem *m = calloc(1, sizeof *m);
    if (!m) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (memory record)");
    m->base.size = size;
    m->base.kind = GPU_MEM_IMPORTED;
    m->base.mapped = ptr;
    m->host = ptr;
    m->imported = 1;
    *out = &m->base;
    return NULL;
}

/* --- Pipelines ---------------------------------------------------------------------------- */

static cubec_status null_pipeline_create(gpu *base, const gpu_pipeline_desc *desc,
                                         gpu_pipeline **out)
{
    if (!out) return INVALID_ARG("null gpu pipeline_create: out is NULL");
    *out = NULL;
    if (!desc) return INVALID_ARG("null gpu pipeline_create: desc is NULL");
    const char *name = desc->name ? desc->name : "(unnamed)";
    /* What vkCreateShaderModule needs at least: the header, starting with the magic number (in
     * the host's byte order: the word of the other order is not accepted either). */
    if (!desc->spirv || desc->words < NULL_SPIRV_HEADER_WORDS)
        return status_make(CUBEC_INVALID_SPIRV,
                           "kernel '%s': SPIR-V of %zu words is shorter than its %u-word header",
                           name, desc->spirv ? desc->words : (size_t)0, NULL_SPIRV_HEADER_WORDS);
    if (desc->spirv[0] != NULL_SPIRV_MAGIC)
        return status_make(CUBEC_INVALID_SPIRV,
                           "kernel '%s': first word 0x%08" PRIx32 " is not the SPIR-V magic number "
                           "0x%08x",
                           name, desc->spirv[0], NULL_SPIRV_MAGIC);
    /* Without slots the buffers sit at set 0 below the info binding; with them, reflection
     * placed them (sets after 0 may reach binding 31). */
    uint32_t max_buffers =
        desc->info_buffer && !desc->slots ? GPU_INFO_BINDING : GPU_MAX_BINDINGS - 1;
    if (desc->binding_count > max_buffers)
        return INVALID_ARG("kernel '%s': binding_count %" PRIu32 " exceeds %" PRIu32, name,
                           desc->binding_count, max_buffers);
    if (desc->push_size > base->info.max_push_constants_size || desc->push_size % 4)
        return INVALID_ARG("kernel '%s': push_size %" PRIu32
                           " is not a multiple of 4 up to max_push_constants_size %" PRIu32,
                           name, desc->push_size, base->info.max_push_constants_size);
    /* A required subgroup size, as the server checks it for the Vulkan backend: it runs no
     * kernel, so the size only has to be one the device could give. */
    uint32_t sg = desc->required_subgroup_size;
    if (sg && (!base->caps.required_subgroup_size || (sg & (sg - 1)) ||
               sg < base->info.min_subgroup_size || sg > base->info.max_subgroup_size))
        return INVALID_ARG("kernel '%s': required_subgroup_size %" PRIu32
                           " is not a power of two in %" PRIu32 "..%" PRIu32
                           " with subgroup size control on",
                           name, sg, base->info.min_subgroup_size, base->info.max_subgroup_size);
    null_pipeline *p = calloc(1, sizeof *p);
    if (!p) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory");
    p->binding_count = desc->binding_count;
    p->info_buffer = desc->info_buffer;
    p->push_size = desc->push_size;
    snprintf(p->name, sizeof p->name, "%s", name);
    *out = (gpu_pipeline *)p;
    return NULL;
}

static void null_pipeline_destroy(gpu *base, gpu_pipeline *p)
{
    (void)base;
    free(p);
}

/* --- Command buffers ---------------------------------------------------------------------- */

/* 1 when the timeline has not reached the command buffer's last submission yet. */
static int in_flight(null_cmd *c, uint64_t *out_signal, uint64_t *out_value)
{
    null_gpu *g = c->g;
    pthread_mutex_lock(&g->lock);
    advance_locked(g, now_ns());
    *out_signal = c->last_signal;
    *out_value = g->value;
    int busy = c->last_signal > g->value;
    pthread_mutex_unlock(&g->lock);
    return busy;
}

static cubec_status null_cmd_create(gpu *base, gpu_cmd_use use, uint32_t sets, gpu_cmd **out)
{
    (void)sets; /* bindings are recorded, never allocated from a pool */
    if (!out) return INVALID_ARG("null gpu cmd_create: out is NULL");
    *out = NULL;
    if (use != GPU_CMD_ONCE && use != GPU_CMD_REUSABLE)
        return INVALID_ARG("null gpu cmd_create: use %d is not a gpu_cmd_use", (int)use);
    null_cmd *c = calloc(1, sizeof *c);
    if (!c) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory");
    c->g = (null_gpu *)base;
    c->use = use;
    c->state = CMD_INITIAL;
    *out = &c->base;
    return NULL;
}

static void null_cmd_destroy(gpu *base, gpu_cmd *cmd)
{
    (void)base;
    if (!cmd) return;
    null_cmd *c = (null_cmd *)cmd;
    uint64_t signal, value;
    /* Void, so it cannot refuse; the log names the bug Vulkan's validation would report. */
    if (in_flight(c, &signal, &value))
        LOG(LOG_ERROR, LOG_SYS_DEVICE,
            "null gpu: command buffer destroyed in flight (signals %" PRIu64
            ", timeline at %" PRIu64 ")",
            signal, value);
    gpu_cmd_list_free(&c->base);
    free(c);
}

static cubec_status null_cmd_begin(gpu *base, gpu_cmd *cmd)
{
    (void)base;
    if (!cmd) return INVALID_ARG("null gpu cmd_begin: cmd is NULL");
    null_cmd *c = (null_cmd *)cmd;
    if (c->state == CMD_RECORDING)
        return status_make(CUBEC_INTERNAL, "null gpu: cmd_begin on a command buffer already "
                                           "recording");
    uint64_t signal, value;
    /* Resetting what the queue may still read is the bug delays exist to catch. */
    if (in_flight(c, &signal, &value))
        return status_make(CUBEC_INTERNAL,
                           "null gpu: cmd_begin on a command buffer in flight (signals %" PRIu64
                           ", timeline at %" PRIu64 ")",
                           signal, value);
    gpu_cmd_list_reset(&c->base);
    c->submitted = 0;
    c->state = CMD_RECORDING;
    return NULL;
}

/* --- Checks of a recording (cmd_end): what Vulkan's validation layer would refuse ---------- */

/* Checks one binding as vkCmdPushDescriptorSetKHR's validation would. */
static cubec_status check_binding(const null_gpu *g, const null_pipeline *p, const gpu_binding *b,
                                  const char *which, uint32_t i)
{
    const cubec_device_info *info = &g->base.info;
    if (!b->mem)
        return INVALID_ARG("null gpu bind_buffers: kernel '%s': %s %" PRIu32 " has no memory",
                           p->name, which, i);
    if (b->size == 0 || !in_range(b->offset, b->size, b->mem->size))
        return INVALID_ARG("null gpu bind_buffers: kernel '%s': %s %" PRIu32 " range [%" PRIu64
                           ", +%" PRIu64 ") is empty or outside its memory of %" PRIu64 " bytes",
                           p->name, which, i, b->offset, b->size, b->mem->size);
    if (b->offset % info->storage_offset_alignment)
        return INVALID_ARG("null gpu bind_buffers: kernel '%s': %s %" PRIu32 " offset %" PRIu64
                           " is not a multiple of storage_offset_alignment %" PRIu64,
                           p->name, which, i, b->offset, info->storage_offset_alignment);
    if (b->size > info->max_storage_buffer_range)
        return INVALID_ARG("null gpu bind_buffers: kernel '%s': %s %" PRIu32 " size %" PRIu64
                           " exceeds max_storage_buffer_range %" PRIu64,
                           p->name, which, i, b->size, info->max_storage_buffer_range);
    return NULL;
}

static cubec_status check_bind_buffers(const null_gpu *g, const gpu_cmd_entry *e)
{
    const null_pipeline *p = (const null_pipeline *)e->u.buffers.p;
    uint32_t n = e->u.buffers.n;
    const gpu_binding *b = gpu_cmd_entry_bindings(e);
    if (!p) return INVALID_ARG("null gpu bind_buffers: pipeline is NULL");
    if (n > GPU_MAX_BINDINGS)
        return INVALID_ARG("null gpu bind_buffers: kernel '%s': n %" PRIu32
                           " exceeds GPU_MAX_BINDINGS %d",
                           p->name, n, GPU_MAX_BINDINGS);
    if (n > p->binding_count)
        return INVALID_ARG("null gpu bind_buffers: kernel '%s': n %" PRIu32
                           " exceeds the pipeline's binding_count %" PRIu32,
                           p->name, n, p->binding_count);
    if (e->u.buffers.info && !p->info_buffer)
        return INVALID_ARG("null gpu bind_buffers: kernel '%s': an info buffer for a pipeline "
                           "without one",
                           p->name);
    for (uint32_t i = 0; i < n; i++)
        RETURN_IF_ERROR(check_binding(g, p, &b[i], "binding", i));
    if (e->u.buffers.info)
        RETURN_IF_ERROR(check_binding(g, p, &b[n], "info binding", GPU_INFO_BINDING));
    return NULL;
}

/* One entry, with the pipeline bound before it (*bound, updated by a bind). */
static cubec_status check_entry(const null_gpu *g, const gpu_cmd_entry *e,
                                const null_pipeline **bound)
{
    const cubec_device_info *info = &g->base.info;
    switch ((gpu_cmd_op)e->op) {
    case GPU_OP_BARRIER: return NULL;
    case GPU_OP_OWNERSHIP:
        /* Vulkan transfers ownership only of memory bound to external handles. */
        if (!e->u.ownership.m || !e->u.ownership.m->external)
            return status_make(CUBEC_INTERNAL,
                               "null gpu: an ownership transfer of a page that is not external");
        return NULL;
    case GPU_OP_BIND_PIPELINE:
        if (!e->u.pipeline) return status_make(CUBEC_INTERNAL, "null gpu: bind_pipeline of NULL");
        *bound = (const null_pipeline *)e->u.pipeline;
        return NULL;
    case GPU_OP_BIND_BUFFERS: return check_bind_buffers(g, e);
    case GPU_OP_PUSH_CONSTANTS: {
        const null_pipeline *p = (const null_pipeline *)e->u.push.p;
        uint32_t size = e->u.push.size;
        if (!p || size == 0 || size % 4 || size > p->push_size)
            return status_make(CUBEC_INTERNAL,
                               "null gpu: push_constants of %" PRIu32
                               " bytes for kernel '%s' (push_size %" PRIu32 ")",
                               size, p ? p->name : "(NULL pipeline)", p ? p->push_size : 0);
        return NULL;
    }
    case GPU_OP_DISPATCH: {
        const uint32_t *max = info->max_workgroup_count;
        uint32_t x = e->u.dispatch.x, y = e->u.dispatch.y, z = e->u.dispatch.z;
        if (!*bound || x > max[0] || y > max[1] || z > max[2])
            return status_make(CUBEC_INTERNAL,
                               "null gpu: dispatch %" PRIu32 "x%" PRIu32 "x%" PRIu32
                               " %s (max_workgroup_count %" PRIu32 "x%" PRIu32 "x%" PRIu32 ")",
                               x, y, z, *bound ? "too large" : "with no pipeline bound", max[0],
                               max[1], max[2]);
        return NULL;
    }
    case GPU_OP_DISPATCH_INDIRECT: {
        const gpu_mem *m = e->u.indirect.m;
        uint64_t offset = e->u.indirect.offset;
        /* VkDispatchIndirectCommand: three uint32 at a multiple of 4. */
        if (!*bound || !m || offset % 4 || !in_range(offset, 12, m->size))
            return status_make(CUBEC_INTERNAL,
                               "null gpu: dispatch_indirect at offset %" PRIu64 " of %" PRIu64
                               " bytes%s",
                               offset, m ? m->size : 0, *bound ? "" : " with no pipeline bound");
        return NULL;
    }
    case GPU_OP_COPY: {
        const gpu_mem *src = e->u.copy.src, *dst = e->u.copy.dst;
        uint64_t so = e->u.copy.src_offset, dof = e->u.copy.dst_offset, size = e->u.copy.size;
        /* vkCmdCopyBuffer: a non-empty region inside both buffers, not overlapping in one. */
        int ok =
            src && dst && size && in_range(so, size, src->size) && in_range(dof, size, dst->size);
        if (ok && src == dst) ok = so + size <= dof || dof + size <= so;
        if (!ok)
            return status_make(CUBEC_INTERNAL,
                               "null gpu: copy of %" PRIu64 " bytes from [%" PRIu64 "] of %" PRIu64
                               " bytes to [%" PRIu64 "] of %" PRIu64
                               " bytes is empty, out of range or overlapping",
                               size, so, src ? src->size : 0, dof, dst ? dst->size : 0);
        return NULL;
    }
    case GPU_OP_FILL: {
        const gpu_mem *dst = e->u.fill.dst;
        uint64_t offset = e->u.fill.offset, size = e->u.fill.size;
        /* vkCmdFillBuffer: offset and size multiples of 4 (no VK_WHOLE_SIZE at this seam). */
        if (!dst || size == 0 || offset % 4 || size % 4 || !in_range(offset, size, dst->size))
            return status_make(CUBEC_INTERNAL,
                               "null gpu: fill of [%" PRIu64 ", +%" PRIu64 ") in %" PRIu64
                               " bytes is empty, unaligned (4) or out of range",
                               offset, size, dst ? dst->size : 0);
        return NULL;
    }
    case GPU_OP_TIMESTAMP: {
        const null_queries *q = (const null_queries *)e->u.queries.q;
        if (!q || e->u.queries.a >= q->count)
            return status_make(CUBEC_INTERNAL,
                               "null gpu: timestamp into query %" PRIu32 " of %" PRIu32,
                               e->u.queries.a, q ? q->count : 0);
        return NULL;
    }
    case GPU_OP_IMAGE_INIT:
        if (!e->u.image.im) return status_make(CUBEC_INTERNAL, "null gpu: image_init of NULL");
        return NULL;
    case GPU_OP_COPY_IMAGE: {
        const gpu_image *im = e->u.image.im;
        const gpu_mem *m = e->u.image.m;
        if (!im || !m || !in_range(e->u.image.offset, im->bytes, m->size))
            return status_make(CUBEC_INTERNAL,
                               "null gpu: image copy of %" PRIu64 " bytes at [%" PRIu64
                               "] of %" PRIu64 " bytes is out of range",
                               im ? im->bytes : 0, e->u.image.offset, m ? m->size : 0);
        return NULL;
    }
    case GPU_OP_RESET_QUERIES: {
        const null_queries *q = (const null_queries *)e->u.queries.q;
        if (!q || !in_range(e->u.queries.a, e->u.queries.b, q->count))
            return status_make(CUBEC_INTERNAL,
                               "null gpu: reset_queries [%" PRIu32 ", +%" PRIu32 ") of %" PRIu32,
                               e->u.queries.a, e->u.queries.b, q ? q->count : 0);
        return NULL;
    }
    }
    return status_make(CUBEC_INTERNAL, "null gpu: command list entry of op %" PRIu32, e->op);
}

static cubec_status null_cmd_end(gpu *base, gpu_cmd *cmd)
{
    if (!cmd) return INVALID_ARG("null gpu cmd_end: cmd is NULL");
    null_cmd *c = (null_cmd *)cmd;
    if (c->state != CMD_RECORDING)
        return status_make(CUBEC_INTERNAL, "null gpu: cmd_end on a command buffer not recording");
    cubec_status err = gpu_cmd_list_status(cmd);
    const null_pipeline *bound = NULL;
    for (const gpu_cmd_entry *e = gpu_cmd_list_first(cmd); e && !err; e = gpu_cmd_list_next(cmd, e))
        err = check_entry((const null_gpu *)base, e, &bound);
    c->ended_len = cmd->len;
    /* A failed recording is unusable until the next cmd_begin, as in Vulkan. */
    c->state = err ? CMD_INITIAL : CMD_EXECUTABLE;
    return err;
}

/* --- Queries ------------------------------------------------------------------------------ */

static cubec_status null_queries_create(gpu *base, uint32_t count, gpu_queries **out)
{
    (void)base;
    if (!out) return INVALID_ARG("null gpu queries_create: out is NULL");
    *out = NULL;
    if (count == 0) return INVALID_ARG("null gpu queries_create: count 0");
    null_queries *q = calloc(1, sizeof *q);
    if (q) {
        q->ticks = calloc(count, sizeof *q->ticks);
        q->written = calloc(count, 1);
    }
    if (!q || !q->ticks || !q->written) {
        if (q) {
            free(q->ticks);
            free(q->written);
        }
        free(q);
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (%" PRIu32 " queries)", count);
    }
    q->count = count;
    *out = (gpu_queries *)q;
    return NULL;
}

static void null_queries_destroy(gpu *base, gpu_queries *queries)
{
    (void)base;
    null_queries *q = (null_queries *)queries;
    if (!q) return;
    free(q->ticks);
    free(q->written);
    free(q);
}

static void reset_range(null_queries *q, uint32_t first, uint32_t count)
{
    memset(q->ticks + first, 0, count * sizeof *q->ticks);
    memset(q->written + first, 0, count);
}

static void null_queries_host_reset(gpu *base, gpu_queries *queries, uint32_t first, uint32_t count)
{
    (void)base;
    null_queries *q = (null_queries *)queries;
    if (!q || !in_range(first, count, q->count)) {
        LOG(LOG_ERROR, LOG_SYS_DEVICE,
            "null gpu: queries_host_reset [%" PRIu32 ", +%" PRIu32 ") of %" PRIu32 " ignored",
            first, count, q ? q->count : 0);
        return;
    }
    reset_range(q, first, count);
}

static cubec_status null_queries_read(gpu *base, gpu_queries *queries, uint32_t first,
                                      uint32_t count, uint64_t *out_ticks)
{
    (void)base;
    null_queries *q = (null_queries *)queries;
    if (!q || (count && !out_ticks) || !in_range(first, count, q->count))
        return INVALID_ARG("null gpu queries_read: [%" PRIu32 ", +%" PRIu32 ") of %" PRIu32
                           " queries (out_ticks %s)",
                           first, count, q ? q->count : 0, out_ticks ? "set" : "NULL");
    /* Like vkGetQueryPoolResults without the WAIT bit: a query with no timestamp yet. */
    for (uint32_t i = first; i < first + count; i++)
        if (!q->written[i])
            return status_make(CUBEC_NOT_READY, "null gpu: query %" PRIu32 " has no timestamp", i);
    memcpy(out_ticks, q->ticks + first, count * sizeof *out_ticks);
    return NULL;
}

/* --- Submission --------------------------------------------------------------------------- */

static void fill_bytes(unsigned char *dst, uint64_t size, uint32_t pattern)
{
    /* The pattern in host byte order, as vkCmdFillBuffer writes it; then the filled part is
     * copied onto the rest, doubling, so a large fill costs a few memcpy calls. */
    memcpy(dst, &pattern, 4);
    for (uint64_t done = 4; done < size;) {
        uint64_t n = done < size - done ? done : size - done;
        memcpy(dst + done, dst, (size_t)n);
        done += n;
    }
}

static unsigned char *host_of(gpu_mem *m)
{
    return ((null_mem *)m)->host;
}

static void execute(const null_cmd *c)
{
    const gpu_cmd *list = &c->base;
    for (const gpu_cmd_entry *e = gpu_cmd_list_first(list); e; e = gpu_cmd_list_next(list, e)) {
        switch ((gpu_cmd_op)e->op) {
        case GPU_OP_COPY:
            memmove(host_of(e->u.copy.dst) + e->u.copy.dst_offset,
                    host_of(e->u.copy.src) + e->u.copy.src_offset, (size_t)e->u.copy.size);
            break;
        case GPU_OP_FILL:
            fill_bytes(host_of(e->u.fill.dst) + e->u.fill.offset, e->u.fill.size,
                       e->u.fill.pattern);
            break;
        case GPU_OP_TIMESTAMP: {
            null_queries *q = (null_queries *)e->u.queries.q;
            q->ticks[e->u.queries.a] = now_ns();
            q->written[e->u.queries.a] = 1;
            break;
        }
        case GPU_OP_RESET_QUERIES:
            reset_range((null_queries *)e->u.queries.q, e->u.queries.a, e->u.queries.b);
            break;
        case GPU_OP_COPY_IMAGE: {
            /* The null image's texels are packed bytes of its page. */
            const gpu_image *im = e->u.image.im;
            unsigned char *img = host_of(im->m) + im->offset;
            unsigned char *buf = host_of(e->u.image.m) + e->u.image.offset;
            if (e->u.image.to_image)
                memmove(img, buf, (size_t)im->bytes);
            else
                memmove(buf, img, (size_t)im->bytes);
            break;
        }
        /* No kernels run: the server marks their outputs written. Barriers order nothing here:
         * commands are carried out one after the other; images have no layouts. */
        case GPU_OP_IMAGE_INIT:
        case GPU_OP_BARRIER:
        case GPU_OP_OWNERSHIP:
        case GPU_OP_BIND_PIPELINE:
        case GPU_OP_BIND_BUFFERS:
        case GPU_OP_PUSH_CONSTANTS:
        case GPU_OP_DISPATCH:
        case GPU_OP_DISPATCH_INDIRECT: break;
        }
    }
}

/* Refuses, before anything runs, a submission Vulkan would refuse. Called with g->lock held. */
static cubec_status check_items_locked(const null_gpu *g, const gpu_submit_item *items, uint32_t n)
{
    uint64_t prev = g->submitted;
    for (uint32_t i = 0; i < n; i++) {
        const null_cmd *c = (const null_cmd *)items[i].cmd;
        if (!c) return INVALID_ARG("null gpu submit: item %" PRIu32 " has no command buffer", i);
        if (c->state != CMD_EXECUTABLE)
            return status_make(
                CUBEC_INTERNAL, "null gpu submit: item %" PRIu32 ": the command buffer %s", i,
                c->state == CMD_RECORDING ? "is still recording" : "has no good recording");
        /* Recorded into after cmd_end: what was meant to run is not what would run. */
        if (c->base.len != c->ended_len)
            return status_make(CUBEC_INTERNAL,
                               "null gpu submit: item %" PRIu32
                               ": commands recorded outside cmd_begin/cmd_end",
                               i);
        if (c->use == GPU_CMD_ONCE && c->submitted)
            return status_make(CUBEC_INTERNAL,
                               "null gpu submit: item %" PRIu32
                               ": a one-time command buffer submitted again without cmd_begin",
                               i);
        for (uint32_t j = 0; j < i && c->use == GPU_CMD_ONCE; j++)
            if (items[j].cmd == items[i].cmd)
                return status_make(CUBEC_INTERNAL,
                                   "null gpu submit: items %" PRIu32 " and %" PRIu32
                                   " are one one-time command buffer",
                                   j, i);
        if (items[i].signal <= prev)
            return status_make(CUBEC_INTERNAL,
                               "null gpu submit: item %" PRIu32 " signals %" PRIu64
                               ", not above %" PRIu64 " (already submitted or signalled)",
                               i, items[i].signal, prev);
        prev = items[i].signal;
    }
    return NULL;
}

/* With null_noncoherent: a range of host-written memory (upload staging, metadata) that the
 * device would read differs from what the host wrote into its mapping, so the host did not flush
 * it (the GPU never writes such memory: the two can differ only by an unflushed write). */
static cubec_status check_flushed(const gpu_mem *mem, uint64_t offset, uint64_t size,
                                  const char *what, uint32_t item)
{
    const null_mem *m = (const null_mem *)mem;
    if (!m || !m->shadow || (mem->kind != GPU_MEM_UPLOAD && mem->kind != GPU_MEM_METADATA) ||
        !in_range(offset, size, mem->size))
        return NULL;
    if (memcmp(m->host + offset, m->shadow + offset, (size_t)size) == 0) return NULL;
    return status_make(CUBEC_INTERNAL,
                       "null gpu submit: item %" PRIu32 ": %s reads [%" PRIu64 ", +%" PRIu64
                       ") of %s memory that the host wrote without gpu_mem_flush",
                       item, what, offset, size,
                       mem->kind == GPU_MEM_UPLOAD ? "upload" : "metadata");
}

static cubec_status check_items_flushed(const gpu_submit_item *items, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const gpu_cmd *list = items[i].cmd;
        for (const gpu_cmd_entry *e = gpu_cmd_list_first(list); e; e = gpu_cmd_list_next(list, e)) {
            if (e->op == GPU_OP_COPY)
                RETURN_IF_ERROR(check_flushed(e->u.copy.src, e->u.copy.src_offset, e->u.copy.size,
                                              "a copy", i));
            if (e->op != GPU_OP_BIND_BUFFERS) continue;
            const gpu_binding *b = gpu_cmd_entry_bindings(e);
            for (uint32_t k = 0; k < e->u.buffers.n + e->u.buffers.info; k++)
                RETURN_IF_ERROR(check_flushed(b[k].mem, b[k].offset, b[k].size, "a launch", i));
        }
    }
    return NULL;
}

/* A submission's wait on the inbound timeline, on the submitting thread (the server submits
 * such batches from its submission thread, so no caller blocks). Bounded, where a GPU's wait is
 * not, so that a test that never signals fails instead of hanging its close. */
#define NULL_INBOUND_LIMIT_NS (30ull * 1000000000ull)
static cubec_status wait_inbound(null_gpu *g, uint64_t value)
{
    uint64_t deadline = now_ns() + NULL_INBOUND_LIMIT_NS;
    pthread_mutex_lock(&g->lock);
    while (g->inbound < value && !g->abandoned && now_ns() < deadline) {
        struct timespec due = to_timespec(deadline);
        (void)pthread_cond_timedwait(&g->changed, &g->lock, &due);
    }
    int reached = g->inbound >= value;
    uint64_t at = g->inbound;
    pthread_mutex_unlock(&g->lock);
    if (reached) return NULL;
    return status_make(CUBEC_DEVICE_LOST,
                       "null gpu: inbound timeline value %" PRIu64 " not signalled (at %" PRIu64
                       ") within 30 s",
                       value, at);
}

static cubec_status null_inbound_signal(gpu *base, uint64_t value)
{
    null_gpu *g = (null_gpu *)base;
    pthread_mutex_lock(&g->lock);
    if (value > g->inbound) g->inbound = value;
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

static cubec_status null_submit(gpu *base, const gpu_submit_item *items, uint32_t n)
{
    null_gpu *g = (null_gpu *)base;
    if (n && !items) return INVALID_ARG("null gpu submit: items is NULL");
    pthread_mutex_lock(&g->queue_lock);
    uint64_t submit_ns = now_ns();
    pthread_mutex_lock(&g->lock);
    advance_locked(g, submit_ns);
    cubec_status err = check_items_locked(g, items, n);
    if (!err && g->noncoherent) err = check_items_flushed(items, n);
    /* Room for every completion first: nothing may fail once the first item has run. */
    if (!err && g->delay_ns && !reserve_pending_locked(g, n))
        err = status_make(CUBEC_OUT_OF_MEMORY, "null gpu submit: host out of memory");
    pthread_mutex_unlock(&g->lock);
    if (err) {
        pthread_mutex_unlock(&g->queue_lock);
        return err;
    }
    for (uint32_t i = 0; i < n; i++) {
        null_cmd *c = (null_cmd *)items[i].cmd;
        uint64_t signal = items[i].signal;
        if (items[i].inbound_wait) {
            /* Nothing before item i can fail now; items from i on are not run if this does. */
            err = wait_inbound(g, items[i].inbound_wait);
            if (err) break;
        }
        execute(c);
        if (c->use == GPU_CMD_ONCE) c->submitted = 1;
        pthread_mutex_lock(&g->lock);
        if (signal > c->last_signal) c->last_signal = signal;
        if (signal > g->submitted) g->submitted = signal;
        if (!g->delay_ns) {
            if (signal > g->value) g->value = signal;
        } else {
            /* Due null_delay_us after the submission, and never before an earlier one. */
            uint64_t due = submit_ns + g->delay_ns;
            if (due < g->last_due) due = g->last_due;
            g->last_due = due;
            uint32_t at = (g->pending_head + g->pending_count) % g->pending_cap;
            g->pending[at] = (null_pending){signal, due};
            g->pending_count++;
        }
        /* Waiters look again: at the value, or at a new earliest due time. */
        pthread_cond_broadcast(&g->changed);
        pthread_mutex_unlock(&g->lock);
    }
    pthread_mutex_unlock(&g->queue_lock);
    return err;
}

static cubec_status null_timeline_value(gpu *base, uint64_t *out)
{
    null_gpu *g = (null_gpu *)base;
    if (!out) return INVALID_ARG("null gpu timeline_value: out is NULL");
    pthread_mutex_lock(&g->lock);
    advance_locked(g, now_ns());
    *out = g->value;
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

static cubec_status null_timeline_wait(gpu *base, uint64_t value, uint64_t timeout_ns)
{
    null_gpu *g = (null_gpu *)base;
    pthread_mutex_lock(&g->lock);
    int reached = wait_locked_until(g, value, timeout_ns ? now_ns() + timeout_ns : 0);
    pthread_mutex_unlock(&g->lock);
    if (!reached)
        return status_make(CUBEC_TIMEOUT, "null gpu: value %" PRIu64 " not reached", value);
    return NULL;
}

static cubec_status null_timeline_signal(gpu *base, uint64_t value)
{
    null_gpu *g = (null_gpu *)base;
    pthread_mutex_lock(&g->lock);
    advance_locked(g, now_ns());
    /* Monotonic: a lower value changes nothing. Pending completions at or below it are simply
     * reached early; advance_locked drops them when their time comes. */
    if (value > g->value) g->value = value;
    if (value > g->submitted) g->submitted = value;
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

/* Host memory is freed as usual: nothing runs on it after the submission returned. */
static void null_abandon(gpu *base)
{
    null_gpu *g = (null_gpu *)base;
    pthread_mutex_lock(&g->lock);
    g->abandoned = 1;
    pthread_cond_broadcast(&g->changed); /* a wait on the inbound timeline gives up */
    pthread_mutex_unlock(&g->lock);
}

static void null_queue_idle(gpu *base)
{
    null_gpu *g = (null_gpu *)base;
    if (g->abandoned) return;
    /* Every submission so far: later ones (another thread's) are not waited for. */
    pthread_mutex_lock(&g->queue_lock);
    pthread_mutex_lock(&g->lock);
    uint64_t target = g->submitted;
    pthread_mutex_unlock(&g->queue_lock);
    wait_locked(g, target);
    pthread_mutex_unlock(&g->lock);
}

static int null_calibrate(gpu *base, uint64_t *out_ticks, uint64_t *out_host_ns)
{
    (void)base;
    /* Ticks are CLOCK_MONOTONIC ns: one sample is both. */
    uint64_t t = now_ns();
    if (out_ticks) *out_ticks = t;
    if (out_host_ns) *out_host_ns = t;
    return 1;
}

/* The capped heap is the null device's budget; without a cap, none is known. */
static void null_memory_budget(gpu *base, gpu_budget *out)
{
    null_gpu *g = (null_gpu *)base;
    memset(out, 0, sizeof *out);
    if (!g->heap_cap) return;
    pthread_mutex_lock(&g->lock);
    out->usage = g->heap_used;
    pthread_mutex_unlock(&g->lock);
    out->budget = g->heap_cap;
    out->usage_known = 1;
    out->source = "null heap";
}

/* No Vulkan object here: the memory's host address stands for both (docs/memory.md). */
static void null_mem_raw(gpu *g, gpu_mem *m, uint64_t *out_handle, uint64_t *out_address)
{
    (void)g;
    *out_handle = *out_address = (uint64_t)(uintptr_t)((null_mem *)m)->host;
}

/* --- Images: packed texels in a page (docs/images.md) ------------------------------------ */

static cubec_status null_image_requirements(gpu *g, const gpu_image_desc *desc, uint64_t *out_size,
                                            uint64_t *out_alignment)
{
    (void)g;
    uint32_t texel = image_format_bytes(desc->format);
    if (!texel)
        return INVALID_ARG("null gpu image: format %" PRIu32 " is not a cubec_image_format",
                           desc->format);
    *out_size = (uint64_t)texel * desc->width * desc->height * (desc->depth ? desc->depth : 1);
    *out_alignment = 16;
    return NULL;
}

static cubec_status null_image_create(gpu *g, const gpu_image_desc *desc, gpu_mem *m,
                                      uint64_t offset, gpu_image **out)
{
    *out = NULL;
    uint64_t size = 0, align = 16;
    RETURN_IF_ERROR(null_image_requirements(g, desc, &size, &align));
    if (!m || !align || offset % align || !in_range(offset, size, m->size))
        return status_make(CUBEC_INTERNAL,
                           "null gpu image: %" PRIu64 " bytes at offset %" PRIu64
                           " do not fit the page",
                           size, offset);
    gpu_image *im = calloc(1, sizeof *im);
    if (!im) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (image record)");
    *im = (gpu_image){m, offset, size};
    *out = im;
    return NULL;
}

static void null_image_destroy(gpu *g, gpu_image *im)
{
    (void)g;
    free(im);
}

static const gpu_ops null_ops = {
    .name = "null",
    .destroy = null_destroy,
    .mem_create = null_mem_create,
    .mem_map = null_mem_map,
    .mem_flush = null_mem_flush,
    .mem_invalidate = null_mem_invalidate,
    .mem_destroy = null_mem_destroy,
    .mem_create_unbacked = null_mem_create_unbacked,
    .mem_back = null_mem_back,
    .mem_raw = null_mem_raw,
    .mem_import_host = null_mem_import_host,
    .image_requirements = null_image_requirements,
    .image_create = null_image_create,
    .image_destroy = null_image_destroy,
    .pipeline_create = null_pipeline_create,
    .pipeline_destroy = null_pipeline_destroy,
    .cmd_create = null_cmd_create,
    .cmd_destroy = null_cmd_destroy,
    .cmd_begin = null_cmd_begin,
    .cmd_end = null_cmd_end,
    .cmd_recycle = NULL, /* a recording holds nothing to free early: cmd_begin reuses it all */
    .queries_create = null_queries_create,
    .queries_destroy = null_queries_destroy,
    .queries_host_reset = null_queries_host_reset,
    .queries_read = null_queries_read,
    .submit = null_submit,
    .timeline_value = null_timeline_value,
    .timeline_wait = null_timeline_wait,
    .timeline_signal = null_timeline_signal,
    .inbound_signal = null_inbound_signal,
    .queue_idle = null_queue_idle,
    .abandon = null_abandon,
    .calibrate = null_calibrate,
    .memory_budget = null_memory_budget,
};

/* --- Opening and enumeration -------------------------------------------------------------- */

cubec_status null_gpu_open(const gpu_open_desc *desc, gpu **out)
{
    if (!out) return INVALID_ARG("null_gpu_open: out is NULL");
    *out = NULL;
    gpu_open_desc defaults = {0};
    if (!desc) desc = &defaults;
    /* Selection as in the Vulkan backend, over a list of one. */
    if (desc->select_by_index && desc->index != 0)
        return status_make(CUBEC_NOT_FOUND, "device index %" PRIu32 ": only 1 device(s) present",
                           desc->index);
    if (!desc->select_by_index && desc->name && *desc->name &&
        !strstr(NULL_DEVICE_NAME, desc->name))
        return status_make(CUBEC_NOT_FOUND,
                           "no device name contains '%s' (the null backend has "
                           "'" NULL_DEVICE_NAME "')",
                           desc->name);
    null_gpu *g = calloc(1, sizeof *g);
    if (!g) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory");
    pthread_condattr_t attr;
    int attr_ok = pthread_condattr_init(&attr) == 0;
    /* Due times are CLOCK_MONOTONIC: timed waits must count on the same clock. */
    int cond = attr_ok && pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
               pthread_cond_init(&g->changed, &attr) == 0;
    if (attr_ok) pthread_condattr_destroy(&attr);
    int lock = cond && pthread_mutex_init(&g->lock, NULL) == 0;
    int queue = lock && pthread_mutex_init(&g->queue_lock, NULL) == 0;
    if (!queue) {
        if (lock) pthread_mutex_destroy(&g->lock);
        if (cond) pthread_cond_destroy(&g->changed);
        free(g);
        return status_make(CUBEC_INTERNAL, "null gpu: the timeline's lock could not be made");
    }
    g->base.ops = &null_ops;
    g->base.faults = NULL; /* attached by gpu_set_faults */
    fill_info(&g->base.info);
    g->base.caps.unified = !desc->force_staging;
    g->base.caps.push_descriptors = !desc->no_push_descriptors;
    g->base.caps.timestamps = 1;
    /* It runs no kernels, so it accepts kernels of any feature (less what was turned off). */
    g->base.features.enabled = FEATURES_ALL & ~desc->disabled_features;
    g->base.features.disabled = desc->disabled_features;
    g->base.info.features = g->base.features.enabled;
    g->base.caps.timestamp_bits = 64;
    g->base.caps.host_query_reset = 1;
    g->base.caps.calibrated_clock = 1;
    g->base.caps.host_import_alignment = 4096;
    g->base.caps.host_memory = 1;
    g->base.caps.reusable_cmds = 1; /* a recorded list is run again as it is */
    g->base.caps.physical_index = 0;
    /* Like a discrete GPU with a BAR window when staging: metadata then goes in uniform
     * buffers, so the server's paths for them run here too. */
    g->base.caps.uniform_info = 1;
    g->base.caps.metadata_alignment = 64;
    g->base.caps.uniform_offset_alignment = 64;
    g->base.caps.max_uniform_range = 65536;
    g->base.caps.metadata_device_local = !g->base.caps.unified;
    /* Subgroup size control for compute kernels, lavapipe's 8..8 with its 32 subgroups a
     * workgroup, unless the configuration turned it off (then the range is the one size, as
     * fill_info has it anyway). */
    g->base.caps.required_subgroup_size =
        !(desc->disabled_features & CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL);
    g->base.caps.max_workgroup_subgroups = 32;
    /* Every cubec format samples, filters and serves texel buffers here, with lavapipe's
     * texel-buffer limits. */
    g->base.caps.sampled_formats = g->base.caps.linear_formats = g->base.caps.texel_formats =
        0x3feu;
    g->base.caps.max_texel_elements = 1u << 27;
    g->base.caps.texel_offset_alignment = 16;
    /* The info describes the device as opened, like the Vulkan backend's (the API layer fills
     * capabilities of every backend's device; here too, so that info and peek agree). */
    g->base.info.capabilities = gpu_capabilities(&g->base.caps, &null_ops);
    g->base.info.unified_memory = g->base.caps.unified;
    g->base.info.push_descriptors = g->base.caps.push_descriptors;
    g->delay_ns = (uint64_t)desc->null_delay_us * 1000u;
    g->heap_cap = desc->null_heap_bytes;
    g->noncoherent = desc->null_noncoherent;
    if (g->heap_cap) g->base.info.device_local_heap_size = g->heap_cap;
    *out = &g->base;
    return NULL;
}

cubec_status null_gpu_count(uint32_t *out_count)
{
    if (!out_count) return INVALID_ARG("null_gpu_count: out_count is NULL");
    *out_count = 1;
    return NULL;
}

cubec_status null_gpu_peek(uint32_t index, cubec_device_info *out)
{
    if (!out) return INVALID_ARG("null_gpu_peek: out is NULL");
    if (index != 0)
        return INVALID_ARG("index: %" PRIu32 " is out of range, 1 device(s) present", index);
    fill_info(out);
    /* What null_gpu_open gives with the configuration's defaults (texel formats included). */
    gpu_caps caps = {.host_memory = 1,
                     .reusable_cmds = 1,
                     .host_import_alignment = 4096,
                     .calibrated_clock = 1,
                     .timestamps = 1,
                     .texel_formats = 0x3feu};
    out->capabilities = gpu_capabilities(&caps, &null_ops);
    return NULL;
}
