/* The WebGPU backend's device (wg_gpu.h): opening an adapter and a device, and the ops
 * table. Memory is wg_mem.c, pipelines wg_pipeline.c, submission and the timeline wg_submit.c,
 * images wg_image.c, the command list's encoding wg_encode.c, the bind-group cache
 * wg_bind_cache.c, errors and polling wg_events.c, the library's loading wg_loader.c, the
 * optional shader features wg_features.c. */
#include "gpu/webgpu/wg_features.h"
#include "gpu/webgpu/wg_image.h"
#include "gpu/webgpu/wg_internal.h"
#include "gpu/webgpu/wg_subgroup_size.h"

#include "base/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The fill kernel (wg_encode.c's fill_pattern): words [first, first + count) of the window take
 * `pattern`; grid-stride, so any count fits the dispatch limit. */
static const char fill_wgsl[] = "struct Fill { first: u32, count: u32, pattern: u32, pad: u32 }\n"
                                "var<immediate> f: Fill;\n"
                                "@group(0) @binding(0) var<storage, read_write> dst: array<u32>;\n"
                                "@compute @workgroup_size(256)\n"
                                "fn main(@builtin(global_invocation_id) id: vec3<u32>,\n"
                                "        @builtin(num_workgroups) n: vec3<u32>) {\n"
                                "    var i = id.x;\n"
                                "    loop {\n"
                                "        if (i >= f.count) { break; }\n"
                                "        dst[f.first + i] = f.pattern;\n"
                                "        i = i + n.x * 256u;\n"
                                "    }\n"
                                "}\n";

/* The byte-copy kernel (wg_encode.c's copy_bytes): `count` bytes from byte `src_at` of the source
 * window to byte `dst_at` of the destination window; each destination word is written by one
 * invocation, with its bytes outside the range kept. */
static const char copy_wgsl[] =
    "struct Copy { src_at: u32, dst_at: u32, count: u32, pad: u32 }\n"
    "var<immediate> c: Copy;\n"
    "@group(0) @binding(0) var<storage, read_write> src: array<u32>;\n"
    "@group(0) @binding(1) var<storage, read_write> dst: array<u32>;\n"
    "@compute @workgroup_size(256)\n"
    "fn main(@builtin(global_invocation_id) id: vec3<u32>,\n"
    "        @builtin(num_workgroups) n: vec3<u32>) {\n"
    "    let first = c.dst_at >> 2u;\n"
    "    let last = (c.dst_at + c.count + 3u) >> 2u;\n"
    "    var w = first + id.x;\n"
    "    loop {\n"
    "        if (w >= last) { break; }\n"
    "        var v = dst[w];\n"
    "        for (var k = 0u; k < 4u; k = k + 1u) {\n"
    "            let b = w * 4u + k;\n"
    "            if (b >= c.dst_at && b < c.dst_at + c.count) {\n"
    "                let sb = c.src_at + (b - c.dst_at);\n"
    "                let byte = (src[sb >> 2u] >> ((sb & 3u) * 8u)) & 0xffu;\n"
    "                v = (v & ~(0xffu << (k * 8u))) | (byte << (k * 8u));\n"
    "            }\n"
    "        }\n"
    "        dst[w] = v;\n"
    "        w = w + n.x * 256u;\n"
    "    }\n"
    "}\n";

/* --- Opening -----------------------------------------------------------------------------------
 */

static void wg_gpu_destroy(gpu *g)
{
    wg_gpu *w = wg_of(g);
    const wg_procs *p = w->p;
    if (w->device && !w->abandoned) wg_queue_idle(g);
    wg_bind_cache_free(w);
    wg_images_release(w);
    if (w->fill_pipeline) p->ComputePipelineRelease(w->fill_pipeline);
    if (w->fill_layout) p->BindGroupLayoutRelease(w->fill_layout);
    if (w->copy_pipeline) p->ComputePipelineRelease(w->copy_pipeline);
    if (w->copy_layout) p->BindGroupLayoutRelease(w->copy_layout);
    if (w->scratch) p->BufferRelease(w->scratch);
    if (w->indirect) p->BufferRelease(w->indirect);
    if (w->map) p->BufferRelease(w->map);
    if (w->queue) p->QueueRelease(w->queue);
    if (w->device && !w->abandoned) {
        /* Lets the last work-done callbacks run (they free their records). */
        wg_poll_events(w, 1);
        p->DeviceRelease(w->device);
    }
    if (w->adapter) p->AdapterRelease(w->adapter);
    free(w->error);
    pthread_mutex_destroy(&w->lock);
    pthread_mutex_destroy(&w->queue_lock);
    free(w);
}

static const gpu_ops wg_ops = {.name = "webgpu",
                               .destroy = wg_gpu_destroy,
                               .mem_create = wg_mem_create,
                               .mem_create_unbacked = wg_mem_create_unbacked,
                               .mem_back = wg_mem_back,
                               .mem_map = wg_mem_map,
                               .mem_flush = wg_mem_flush,
                               .mem_invalidate = wg_mem_invalidate,
                               .mem_destroy = wg_mem_destroy,
                               .mem_raw = wg_mem_raw,
                               .mem_write = wg_mem_write,
                               .mem_read = wg_mem_read,
                               .pipeline_create = wg_pipeline_create,
                               .pipeline_destroy = wg_pipeline_destroy,
                               .cmd_create = wg_cmd_create,
                               .cmd_destroy = wg_cmd_destroy,
                               .cmd_begin = wg_cmd_begin,
                               .cmd_end = wg_cmd_end,
                               .queries_create = wg_queries_create,
                               .queries_destroy = wg_queries_destroy,
                               .queries_host_reset = wg_queries_host_reset,
                               .queries_read = wg_queries_read,
                               .submit = wg_submit,
                               .timeline_value = wg_timeline_value,
                               .timeline_wait = wg_timeline_wait,
                               .timeline_signal = wg_timeline_signal,
                               .queue_idle = wg_queue_idle,
                               .abandon = wg_abandon,
                               .calibrate = wg_calibrate,
                               .image_requirements = wg_image_requirements,
                               .image_create = wg_image_create,
                               .image_destroy = wg_image_destroy,
                               .image_write = wg_image_write};

typedef struct adapter_wait {
    int done;
    WGPUAdapter adapter;
    WGPUDevice device;
    char message[256];
} adapter_wait;

static void copy_message(adapter_wait *aw, WGPUStringView m)
{
    size_t len = m.length == WGPU_STRLEN && m.data ? strlen(m.data) : m.length;
    snprintf(aw->message, sizeof aw->message, "%.*s", (int)len, m.data ? m.data : "");
}

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message,
                       void *user1, void *user2)
{
    (void)user2;
    adapter_wait *aw = user1;
    if (status == WGPURequestAdapterStatus_Success) aw->adapter = adapter;
    copy_message(aw, message);
    aw->done = 1;
}

static void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message,
                      void *user1, void *user2)
{
    (void)user2;
    adapter_wait *aw = user1;
    if (status == WGPURequestDeviceStatus_Success) aw->device = device;
    copy_message(aw, message);
    aw->done = 1;
}

/* The implementation's adapters (at most `cap`), each the caller's to release. */
static cubec_status list_adapters(const wg_procs *p, WGPUInstance instance, WGPUAdapter *out,
                                  uint32_t cap, uint32_t *out_count)
{
    *out_count = 0;
    if (p->InstanceEnumerateAdapters) {
        /* wgpu-native's primary backends (Vulkan, Metal, D3D12): its OpenGL adapter runs
         * compute through the same driver with fewer limits, and probing it needs a display. */
        struct {
            const WGPUChainedStruct *next;
            uint32_t backends; /* WGPUInstanceBackend (wgpu.h) */
        } options = {NULL, (1u << 0) | (1u << 2) | (1u << 3)};
        size_t n = p->InstanceEnumerateAdapters(instance, &options, NULL);
        if (n) {
            WGPUAdapter *all = calloc(n, sizeof(WGPUAdapter));
            if (!all) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (adapters)");
            p->InstanceEnumerateAdapters(instance, &options, all);
            for (size_t i = 0; i < n; i++) {
                if (*out_count < cap)
                    out[(*out_count)++] = all[i];
                else
                    p->AdapterRelease(all[i]);
            }
            free(all);
        }
        return NULL;
    }
    adapter_wait aw = {0};
    WGPURequestAdapterOptions o = {.featureLevel = WGPUFeatureLevel_Core};
    WGPURequestAdapterCallbackInfo ci = {
        .mode = WGPUCallbackMode_AllowSpontaneous, .callback = on_adapter, .userdata1 = &aw};
    p->InstanceRequestAdapter(instance, &o, ci);
    for (int i = 0; i < 100000 && !aw.done; i++)
        p->InstanceProcessEvents(instance);
    if (aw.adapter && cap) out[(*out_count)++] = aw.adapter;
    return NULL;
}

#define WG_MAX_ADAPTERS 16u

static cubec_device_type type_of(WGPUAdapterType t)
{
    switch (t) {
    case WGPUAdapterType_DiscreteGPU: return CUBEC_DEVICE_TYPE_DISCRETE;
    case WGPUAdapterType_IntegratedGPU: return CUBEC_DEVICE_TYPE_INTEGRATED;
    case WGPUAdapterType_CPU: return CUBEC_DEVICE_TYPE_CPU;
    default: return CUBEC_DEVICE_TYPE_OTHER;
    }
}

static const char *backend_of(WGPUBackendType b)
{
    switch (b) {
    case WGPUBackendType_Vulkan: return "Vulkan";
    case WGPUBackendType_Metal: return "Metal";
    case WGPUBackendType_D3D12: return "D3D12";
    case WGPUBackendType_D3D11: return "D3D11";
    case WGPUBackendType_OpenGL: return "OpenGL";
    case WGPUBackendType_OpenGLES: return "OpenGLES";
    default: return "other";
    }
}

static void view_copy(char *dst, size_t cap, WGPUStringView v)
{
    size_t len = v.length == WGPU_STRLEN && v.data ? strlen(v.data) : v.length;
    snprintf(dst, cap, "%.*s", (int)len, v.data ? v.data : "");
}

/* wg_features_probe's question, asked of the adapter of `user` (a wg_gpu). */
static int has_feature(void *user, WGPUFeatureName f)
{
    const wg_gpu *w = user;
    return w->p->AdapterHasFeature(w->adapter, f) != 0;
}

/* The info of an adapter, from its info and limits (api_version: the SPIR-V the server makes
 * for it). */
static void fill_info(const wg_procs *p, WGPUAdapter a, const WGPULimits *lim,
                      cubec_device_info *out)
{
    WGPUAdapterInfo ai = {0};
    p->AdapterGetInfo(a, &ai);
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    view_copy(out->name, sizeof out->name, ai.device);
    char desc[160], version[48] = "";
    view_copy(desc, sizeof desc, ai.description);
    if (p->GetVersion) {
        uint32_t v = p->GetVersion();
        snprintf(version, sizeof version, "wgpu-native %u.%u.%u.%u, ", v >> 24, (v >> 16) & 0xFFu,
                 (v >> 8) & 0xFFu, v & 0xFFu);
    }
    /* "WebGPU ([wgpu-native VERSION, ]LIBRARY) on BACKEND: DESCRIPTION": `cubec info` shows the
     * parts on lines of their own (tools/cmd_info.c; docs/device.md). */
    snprintf(out->driver, sizeof out->driver, "WebGPU (%s%s) on %s: %s", version, p->path,
             backend_of(ai.backendType), desc);
    out->vendor_id = ai.vendorID;
    out->device_id = ai.deviceID;
    out->api_version = GPU_VULKAN_API_VERSION;
    out->type = type_of(ai.adapterType);
    out->max_storage_buffer_range = lim->maxStorageBufferBindingSize;
    out->max_allocation_size = lim->maxBufferSize;
    out->max_push_constants_size = lim->maxImmediateSize;
    for (int i = 0; i < 3; i++)
        out->max_workgroup_count[i] = lim->maxComputeWorkgroupsPerDimension;
    out->max_workgroup_size[0] = lim->maxComputeWorkgroupSizeX;
    out->max_workgroup_size[1] = lim->maxComputeWorkgroupSizeY;
    out->max_workgroup_size[2] = lim->maxComputeWorkgroupSizeZ;
    out->max_workgroup_invocations = lim->maxComputeInvocationsPerWorkgroup;
    out->max_shared_memory_size = lim->maxComputeWorkgroupStorageSize;
    out->storage_offset_alignment = lim->minStorageBufferOffsetAlignment;
    out->uniform_offset_alignment = lim->minUniformBufferOffsetAlignment;
    out->subgroup_size = ai.subgroupMinSize ? ai.subgroupMinSize : 1;
    out->min_subgroup_size = out->max_subgroup_size = out->subgroup_size;
    /* WebGPU reports no heap: the host's memory on a CPU adapter, the largest buffer's size
     * four times elsewhere (a floor for the server's budget, said so in docs/device.md). */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    out->device_local_heap_size = out->type == CUBEC_DEVICE_TYPE_CPU && pages > 0 && page > 0
                                      ? (uint64_t)pages * (uint64_t)page
                                      : lim->maxBufferSize * 4u;
    out->timestamp_period_ns = 1.0;
    out->host_register_alignment = 4096; /* unused: nothing can be registered */
    p->AdapterInfoFreeMembers(ai);
}

/* The process's one instance, made at the first use and kept until the process exits: wgpu's
 * Vulkan backend loads the Vulkan loader and the driver with an instance and unloads them with
 * it, so an instance per enumeration or device loaded the driver again each time (lavapipe
 * leaks a little at each load, in a library then unloaded: LeakSanitizer cannot even name it). */
static pthread_once_t instance_once = PTHREAD_ONCE_INIT;
static const wg_procs *instance_procs;
static WGPUInstance instance;
static cubec_status instance_error;

static void make_instance(void)
{
    instance_error = wg_procs_get(&instance_procs);
    if (instance_error) return;
    /* wgpu-native's WGPUInstanceExtras (wgpu.h 29, restated: only its backends are set): the
     * primary backends (Vulkan, Metal, D3D12). Its OpenGL backend would run compute through
     * the same driver with fewer limits, and probing it wants a display (XDG_RUNTIME_DIR). A
     * Dawn ignores the unknown sType. The tail (the display handle) stays zero: none. */
    struct {
        WGPUChainedStruct chain;
        WGPUFlags backends, flags;
        uint32_t dx12_compiler, gles3_minor, gl_fence;
        WGPUStringView dxc_path;
        uint32_t dxc_max_model, dx12_presentation;
        const uint8_t *budget_creation, *budget_loss;
        unsigned char display_handle[64];
    } extras = {.chain = {.sType = (WGPUSType)0x00030004},
                .backends = (1u << 0) | (1u << 2) | (1u << 3),
                .flags = 1u << 24 /* WGPUInstanceFlag_Default: the build's own */};
    WGPUInstanceDescriptor d = {.nextInChain = instance_procs->DevicePoll ? &extras.chain : NULL};
    instance = instance_procs->CreateInstance(&d);
    if (!instance) instance_error = status_make(CUBEC_INTERNAL, "wgpuCreateInstance returned NULL");
}

static cubec_status open_instance(const wg_procs **out_p, WGPUInstance *out)
{
    pthread_once(&instance_once, make_instance);
    if (instance_error)
        return status_make(cubec_status_code(instance_error), "%s",
                           cubec_status_message(instance_error));
    *out_p = instance_procs;
    *out = instance;
    return NULL;
}

cubec_status wg_gpu_count(uint32_t *out_count)
{
    if (!out_count) return INVALID_ARG("wg_gpu_count: out_count is NULL");
    *out_count = 0;
    const wg_procs *p = NULL;
    WGPUInstance inst = NULL;
    cubec_status err = open_instance(&p, &inst);
    if (err) {
        /* No implementation installed: no WebGPU devices, not an error (cubec info). */
        if (cubec_status_code(err) == CUBEC_NOT_FOUND) {
            cubec_status_free(err);
            return NULL;
        }
        return err;
    }
    /* open_instance gives the table when it succeeds; said again for the analyzer, which
     * cannot follow pthread_once. */
    if (!p) return status_make(CUBEC_INTERNAL, "wg_gpu_count: no WebGPU procedure table");
    WGPUAdapter a[WG_MAX_ADAPTERS];
    uint32_t n = 0;
    err = list_adapters(p, inst, a, WG_MAX_ADAPTERS, &n);
    for (uint32_t i = 0; i < n; i++)
        p->AdapterRelease(a[i]);
    if (!err) *out_count = n;
    return err;
}

static pthread_mutex_t peeked_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t peeked_sizes[WG_MAX_ADAPTERS][3]; /* subgroup size, min, max; 0: not yet */

static void peek_subgroup_size(uint32_t index, cubec_device_info *out)
{
    if (index >= WG_MAX_ADAPTERS) return;
    pthread_mutex_lock(&peeked_lock);
    if (!peeked_sizes[index][0]) {
        gpu_open_desc desc = {.select_by_index = 1, .index = index};
        gpu *g = NULL;
        cubec_status err = wg_gpu_open(&desc, &g);
        if (!err && g) {
            peeked_sizes[index][0] = g->info.subgroup_size;
            peeked_sizes[index][1] = g->info.min_subgroup_size;
            peeked_sizes[index][2] = g->info.max_subgroup_size;
            g->ops->destroy(g);
        }
        cubec_status_free(err);
    }
    if (peeked_sizes[index][0]) {
        out->subgroup_size = peeked_sizes[index][0];
        out->min_subgroup_size = peeked_sizes[index][1];
        out->max_subgroup_size = peeked_sizes[index][2];
    }
    pthread_mutex_unlock(&peeked_lock);
}

cubec_status wg_gpu_peek(uint32_t index, cubec_device_info *out)
{
    if (!out) return INVALID_ARG("wg_gpu_peek: out is NULL");
    const wg_procs *p = NULL;
    WGPUInstance inst = NULL;
    RETURN_IF_ERROR(open_instance(&p, &inst));
    if (!p) return status_make(CUBEC_INTERNAL, "wg_gpu_peek: no WebGPU procedure table");
    WGPUAdapter a[WG_MAX_ADAPTERS];
    uint32_t n = 0;
    cubec_status err = list_adapters(p, inst, a, WG_MAX_ADAPTERS, &n);
    if (!err && index >= n)
        err = INVALID_ARG("index: %" PRIu32 " is out of range, %" PRIu32 " WebGPU adapter(s)",
                          index, n);
    if (!err) {
        WGPULimits lim = {0};
        p->AdapterGetLimits(a[index], &lim);
        fill_info(p, a[index], &lim, out);
        /* What the adapter has (cubec.h: peek's features are the device's, none disabled). */
        wg_gpu probe = {.p = p, .adapter = a[index]};
        WGPUFeatureName unused[WG_FEATURE_MAX];
        size_t n_unused = 0;
        feature_set set = {0};
        wg_features_probe(has_feature, &probe, 0, unused, &n_unused, &set);
        out->features = set.enabled;
        /* What wg_gpu_open gives (wg_image.c: no texel buffers in WebGPU). */
        gpu_caps caps = {.runs_kernels = 1,
                         .wgsl = 1,
                         .timestamps =
                             p->AdapterHasFeature(a[index], WGPUFeatureName_TimestampQuery) != 0};
        out->capabilities = gpu_capabilities(&caps, &wg_ops);
    }
    for (uint32_t i = 0; i < n; i++)
        p->AdapterRelease(a[i]);
    /* The subgroup sizes a device measures at open where the adapter reports none (the open
     * device's info and the peeked one agree): measured once per adapter in the process. */
    if (!err && out->subgroup_size <= 1 && (out->features & WG_SUBGROUP_BITS) && p->DevicePoll)
        peek_subgroup_size(index, out);
    return err;
}

/* Picks the adapter the desc asks for; the others are released. */
static cubec_status choose_adapter(wg_gpu *w, const gpu_open_desc *desc)
{
    const wg_procs *p = w->p;
    WGPUAdapter a[WG_MAX_ADAPTERS];
    uint32_t n = 0;
    RETURN_IF_ERROR(list_adapters(p, w->instance, a, WG_MAX_ADAPTERS, &n));
    int chosen = -1;
    for (uint32_t i = 0; i < n && chosen < 0; i++) {
        if (desc->select_by_index) {
            if (i == desc->index) chosen = (int)i;
            continue;
        }
        if (!desc->name || !*desc->name) {
            chosen = (int)i;
            continue;
        }
        WGPUAdapterInfo ai = {0};
        p->AdapterGetInfo(a[i], &ai);
        char name[256];
        view_copy(name, sizeof name, ai.device);
        p->AdapterInfoFreeMembers(ai);
        if (strstr(name, desc->name)) chosen = (int)i;
    }
    for (uint32_t i = 0; i < n; i++)
        if ((int)i != chosen) p->AdapterRelease(a[i]);
    if (chosen < 0) {
        if (desc->select_by_index)
            return status_make(CUBEC_NOT_FOUND,
                               "device index %" PRIu32 ": %" PRIu32 " WebGPU adapter(s) present",
                               desc->index, n);
        return status_make(CUBEC_NOT_FOUND,
                           "no WebGPU adapter's name contains '%s' (%" PRIu32 " adapter(s))",
                           desc->name ? desc->name : "", n);
    }
    w->adapter = a[chosen];
    return NULL;
}

static cubec_status request_device(wg_gpu *w, uint32_t disabled_features)
{
    const wg_procs *p = w->p;
    WGPULimits lim = {0};
    p->AdapterGetLimits(w->adapter, &lim);
    /* Immediates: wgpu-native's native feature (push constants); the standard header's
     * wgpuComputePassEncoderSetImmediates needs it enabled there. */
    const WGPUFeatureName immediates = (WGPUFeatureName)0x00030001;
    WGPUFeatureName features[4 + WG_FEATURE_MAX + WG_IMAGE_MAX_FEATURES];
    size_t nf = 0;
    if (p->AdapterHasFeature(w->adapter, immediates) && lim.maxImmediateSize) {
        features[nf++] = immediates;
        w->immediates = 1;
    }
    RETURN_IF_ERROR(wg_timestamp_features(w, features, &nf)); /* up to 3 more */
    /* The optional shader features the adapter has, less those turned off (wg_features.h). */
    wg_features_probe(has_feature, w, disabled_features, features, &nf, &w->base.features);
    nf += wg_image_features(p, w->adapter, features + nf);
    if (!w->immediates) lim.maxImmediateSize = 0;
    adapter_wait aw = {0};
    WGPUDeviceDescriptor dd = {
        .requiredFeatureCount = nf,
        .requiredFeatures = features,
        .requiredLimits = &lim, /* everything the adapter has: 8 storage buffers is too few */
        .uncapturedErrorCallbackInfo = {.callback = wg_on_uncaptured, .userdata1 = w}};
    WGPURequestDeviceCallbackInfo ci = {
        .mode = WGPUCallbackMode_AllowSpontaneous, .callback = on_device, .userdata1 = &aw};
    p->AdapterRequestDevice(w->adapter, &dd, ci);
    for (int i = 0; i < 100000 && !aw.done; i++)
        p->InstanceProcessEvents(w->instance);
    if (!aw.device)
        return status_make(CUBEC_UNSUPPORTED, "webgpu: the adapter gave no device: %s", aw.message);
    w->device = aw.device;
    p->DeviceGetLimits(w->device, &w->limits);
    w->queue = p->DeviceGetQueue(w->device);
    return NULL;
}

/* One of the backend's own WGSL kernels: `buffers` storage bindings and 16 bytes of
 * immediates. Without it, what it serves is refused by name (logged here). */
static void make_own_kernel(wg_gpu *w, const char *name, const char *wgsl, uint32_t buffers,
                            WGPUBindGroupLayout *out_layout, WGPUComputePipeline *out)
{
    const wg_procs *p = w->p;
    if (!w->immediates || w->limits.maxImmediateSize < 16) return;
    WGPUBindGroupLayoutEntry e[2];
    for (uint32_t i = 0; i < buffers && i < 2; i++)
        e[i] = (WGPUBindGroupLayoutEntry){.binding = i,
                                          .visibility = WGPUShaderStage_Compute,
                                          .buffer = {.type = WGPUBufferBindingType_Storage}};
    WGPUBindGroupLayoutDescriptor d = {.entryCount = buffers, .entries = e};
    *out_layout = p->DeviceCreateBindGroupLayout(w->device, &d);
    WGPUPipelineLayoutDescriptor ld = {
        .bindGroupLayoutCount = 1, .bindGroupLayouts = out_layout, .immediateSize = 16};
    WGPUPipelineLayout layout = p->DeviceCreatePipelineLayout(w->device, &ld);
    WGPUShaderSourceWGSL src = {.chain = {.sType = WGPUSType_ShaderSourceWGSL},
                                .code = wg_str(wgsl)};
    cubec_status err = wg_build_pipeline(w, &src.chain, name, "main", NULL, NULL, 0, layout, out);
    p->PipelineLayoutRelease(layout);
    if (err) {
        LOG(LOG_WARN, LOG_SYS_DEVICE, "webgpu: no kernel %s (%s)", name, cubec_status_message(err));
        cubec_status_free(err);
    }
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

cubec_status wg_gpu_open(const gpu_open_desc *desc, gpu **out)
{
    if (!out) return INVALID_ARG("wg_gpu_open: out is NULL");
    *out = NULL;
    gpu_open_desc defaults = {0};
    if (!desc) desc = &defaults;
    /* A WebGPU device has one queue: family 0 is the only one there is (and taken). */
    if (desc->queue_family > 1)
        return status_make(CUBEC_INVALID_ARGUMENT,
                           "[device] queue_family = %d (CUBEC_QUEUE_FAMILY): a WebGPU device has "
                           "one queue, family 0",
                           desc->queue_family - 1);
    wg_gpu *w = calloc(1, sizeof *w);
    if (!w) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (device)");
    pthread_mutex_init(&w->lock, NULL);
    pthread_mutex_init(&w->queue_lock, NULL);
    gpu *g = &w->base;
    g->ops = &wg_ops;
    cubec_status err = open_instance(&w->p, &w->instance);
    if (!err) err = choose_adapter(w, desc);
    if (!err) err = request_device(w, desc->disabled_features);
    if (err) {
        wg_gpu_destroy(g);
        return err;
    }
    fill_info(w->p, w->adapter, &w->limits, &g->info);
    g->info.timestamp_period_ns = wg_timestamp_period(w);
    /* Said rather than ignored: a user who asked for validation and sees no message should know
     * that WebGPU's own checks (always on, errors through wg_events.c) are what ran. */
    if (desc->validation)
        LOG(LOG_INFO, LOG_SYS_DEVICE,
            "webgpu: validation asked: WebGPU validates every call itself; the Khronos layer "
            "(CUBEC_VALIDATION) is the vulkan backend's");
    /* wgpu-native reports no subgroup size (fill_info's 1): measured where kernels can see it. */
    if (g->info.subgroup_size <= 1 && (g->features.enabled & WG_SUBGROUP_BITS) && w->p->DevicePoll)
        wg_measure_subgroup_size(w, &g->info);
    make_own_kernel(w, "cubec.webgpu.fill", fill_wgsl, 1, &w->fill_layout, &w->fill_pipeline);
    make_own_kernel(w, "cubec.webgpu.copy_bytes", copy_wgsl, 2, &w->copy_layout, &w->copy_pipeline);
    g->info.features = g->features.enabled; /* request_device's: what the device has, less the
                                               disabled */
    g->caps =
        (gpu_caps){.unified = 0,
                   .push_descriptors = 0,
                   /* Without them profiles are host-measured (CUBEC_TIMING_SYSTEM), said so. */
                   .timestamps = w->timestamps != WG_TS_NONE,
                   .timestamp_bits = 64,
                   .host_query_reset = 1, /* WebGPU queries need no reset at all */
                   .deferred_recording = 1,
                   .host_import_alignment = 0,
                   .no_host_import = "WebGPU has no import of host memory",
                   .uniform_info = 0,
                   .metadata_alignment = max_u64(w->limits.minStorageBufferOffsetAlignment,
                                                 w->limits.minUniformBufferOffsetAlignment),
                   .max_uniform_range = w->limits.maxUniformBufferBindingSize,
                   .uniform_offset_alignment = w->limits.minUniformBufferOffsetAlignment,
                   .metadata_device_local = 0,
                   .runs_kernels = 1,
                   .wgsl = 1,
                   .host_memory = 0,   /* no host memory the device reads directly */
                   .reusable_cmds = 0, /* single-submit command buffers: re-encoded */
                   .hazards_per_buffer = 1,
                   .coalesce_batches = GPU_SUBMIT_MAX_ITEMS};
    g->info.unified_memory = 0;
    g->info.push_descriptors = 0;
    err = wg_images_init(w);
    if (err) {
        wg_gpu_destroy(g);
        return err;
    }
    *out = g;
    return NULL;
}
