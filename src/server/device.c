/* Opening and closing a device: configuration, the Vulkan context, memory, submission state and
 * rings. Closing waits for the GPU, then frees everything still alive, so teardown is
 * validation-clean even when the program forgot to release buffers. */
#include "server/device.h"
#include "base/device_registry.h"
#include "base/log.h"
#include "server/buffers.h"
#include "server/compile_queue.h"
#include "server/device_clock.h"
#include "server/failures.h"
#include "server/graph.h"
#include "server/host_memory.h"
#include "server/host_ring.h"
#include "server/images.h"
#include "server/kernels.h"
#include "server/launch_timing.h"
#include "server/memory_ops.h"
#include "server/peer.h"
#include "server/profile.h"
#include "server/raw.h"
#include "server/run_mode.h"
#include "server/streams.h"
#include "server/submission.h"
#include "server/submitter.h"
#include "server/task.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The device and its components in one allocation: the device holds them by pointer (device.h
 * includes none of their headers) and they stay next to it in memory. The device comes first, so
 * freeing it frees them. */
typedef struct device_parts {
    struct cubec_device_s device;
    buffer_store buffers;
    kernel_cache kernels;
    stream_slots streams;
    submission sub;
    host_rings rings;
    host_memory host;
    profile_table profiles;
    graph_table graphs;
    submitter submitter;
    launch_timing timing;
    run_modes runs;
    device_clock clock;
    task_hooks tasks;
    image_table images;
} device_parts;

static cubec_device *device_alloc(void)
{
    /* Never at a closed device's address: closed devices stay parked (base/device_registry.h). */
    device_parts *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    cubec_device *d = &p->device;
    d->buffers = &p->buffers;
    d->kernels = &p->kernels;
    d->streams = &p->streams;
    d->sub = &p->sub;
    d->rings = &p->rings;
    d->host = &p->host;
    d->profiles = &p->profiles;
    d->graphs = &p->graphs;
    d->submitter = &p->submitter;
    d->timing = &p->timing;
    d->runs = &p->runs;
    d->clock = &p->clock;
    d->tasks = &p->tasks;
    d->images = &p->images;
    return d;
}

server_stats server_stats_get(cubec_device *d)
{
    pthread_mutex_lock(&d->lock);
    server_stats s = {.tasks = d->sub->stats.tasks,
                      .skipped = d->sub->stats.skipped,
                      .barriers = d->sub->stats.barriers,
                      .submissions = d->sub->stats.submissions,
                      .max_streams = d->streams->max_streams,
                      .compiles = d->kernels->compiles,
                      .build_waits = d->kernels->build_waits,
                      .host_dma_transfers = d->host->dma_transfers,
                      .host_dma_bytes = d->host->dma_bytes,
                      .dry_launches = d->runs->dry_launches};
    pthread_mutex_unlock(&d->lock);
    return s;
}

/* Helper threads for staging copies: the configured count, or half the online cores (the
 * caller is one more), at most 7. */
static uint32_t copy_helpers(const cubec_config *c)
{
    if (c->copy_threads >= 0) return (uint32_t)c->copy_threads;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long helpers = cores > 1 ? cores / 2 : 0;
    return (uint32_t)(helpers > 7 ? 7 : helpers);
}

/* CUBEC_DEVICE / [device] select: a number is an index, anything else a name substring. The
 * config refused numbers that do not fit an index. */
static void apply_selection(const cubec_config *c, gpu_open_desc *vd)
{
    if (!c->device[0] || vd->select_by_index || vd->name) return;
    if (c->device_by_index) {
        vd->select_by_index = 1;
        vd->index = c->device_index;
    } else {
        vd->name = c->device;
    }
}

/* The fields of the desc that have ranges, with the ranges of the options they override. */
static cubec_status check_desc(const cubec_device_desc *desc)
{
    if (desc->tasks_max > CONFIG_TASKS_MAX_LIMIT)
        return INVALID_ARG("cubec_device_open: desc->tasks_max = %" PRIu32
                           " is not in 1..%d (0: [device] tasks_max / CUBEC_TASKS_MAX)",
                           desc->tasks_max, CONFIG_TASKS_MAX_LIMIT);
    if (desc->null_delay_us > CONFIG_NULL_DELAY_US_LIMIT)
        return INVALID_ARG("cubec_device_open: desc->null_delay_us = %" PRIu32
                           " is not in 0..%d (0: CUBEC_NULL_DELAY_US or at once)",
                           desc->null_delay_us, CONFIG_NULL_DELAY_US_LIMIT);
    return NULL;
}

cubec_status server_open(const cubec_device_desc *desc, cubec_device **out)
{
    cubec_device_desc zero = CUBEC_DEVICE_DESC_INIT;
    if (!desc) desc = &zero;
    RETURN_IF_ERROR(check_desc(desc));
    cubec_device *d = device_alloc();
    if (!d) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (device)");
    cubec_status err = config_load(&d->config);
    if (!err) {
        char what[1400];
        err = status_annotate(log_configure_levels(d->config.log_levels, d->config.log_file), "%s",
                              config_describe(&d->config, "CUBEC_LOG_FILE", what, sizeof what));
    }
    if (err) {
        free(d);
        return err;
    }
    config_warn_once(&d->config);
    d->faults = d->config.faults; /* CUBEC_FAULT, counted from this opening */
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->kernels->built, NULL);
    gpu_backend backend = (gpu_backend)d->config.backend;
    if (desc->backend)
        err = status_annotate(gpu_backend_parse(desc->backend, &backend),
                              "cubec_device_desc.backend");
    gpu_open_desc gd = {.select_by_index = desc->select_by_index,
                        .index = desc->index,
                        .name = desc->name,
                        .validation = desc->validation || d->config.validation,
                        .force_staging = d->config.force_staging,
                        .queue_family = (int)d->config.queue_family + 1,
                        .no_push_descriptors = !d->config.push_descriptors,
                        .robust = desc->robust || d->config.robust,
                        .disabled_features = d->config.disabled_features,
                        .on_validation = desc->on_validation,
                        .on_validation_user = desc->on_validation_user};
    gd.null_delay_us =
        desc->null_delay_us ? desc->null_delay_us : (uint32_t)d->config.null_delay_us;
    gd.null_heap_bytes = (uint64_t)d->config.null_heap_bytes;
    gd.null_noncoherent = d->config.null_noncoherent;
    apply_selection(&d->config, &gd);
    if (!err) err = gpu_open(backend, &gd, &d->gpu);
    if (err) {
        pthread_cond_destroy(&d->kernels->built);
        pthread_mutex_destroy(&d->lock);
        free(d);
        return err;
    }
    d->gpu->faults = &d->faults;
    d->info = d->gpu->info;
    /* WebGPU checks every access against its binding itself, with no mode to turn on or report
     * (docs/device.md): the request is met there, and the warning would say it is not. */
    if ((desc->robust || d->config.robust) && !d->info.robust && backend != GPU_BACKEND_webgpu)
        LOG(LOG_WARN, LOG_SYS_DEVICE,
            "bounds-checked mode asked for (%s) but device '%s' has no robustBufferAccess: "
            "kernels run unchecked (cubec_device_info.robust = 0)",
            desc->robust ? "cubec_device_desc.robust" : "[device] robust / CUBEC_ROBUST",
            d->info.name);
    d->sub->tasks_max = desc->tasks_max ? desc->tasks_max : (uint32_t)d->config.tasks_max;
    d->info.tasks_max = d->sub->tasks_max;
    d->sub->batch_task_cap = d->sub->tasks_max * 8 < 256 ? 256 : d->sub->tasks_max * 8;
    d->streams->max_streams = (uint32_t)d->config.max_streams;
    d->streams->single = d->config.single_stream;
    d->sub->max_batches = (uint32_t)d->config.max_inflight_tasks / d->sub->tasks_max;
    if (d->sub->max_batches < 4) d->sub->max_batches = 4;
    /* Busy-polling (yielding the core between polls) before blocking: a blocking wait costs
     * 25-35 us more on an H200, and 200 us covers a round trip even when the GPU is clocked
     * down. On lavapipe with 2 cores it halves the round trip too (50-73 us against 113-136 us
     * blocking; raw Vulkan's fence wait 100-140 us): the poll yields to the driver's threads. */
    d->sub->spin_us = d->config.poll_spin_us >= 0 ? (int)d->config.poll_spin_us : 200;
    d->sub->wait_timeout_ns = (uint64_t)(d->config.wait_timeout_s * 1e9);
    server_kernels_configure(d);
    d->tag = handle_tag_acquire(); /* released in server_close */
    handle_table_init(&d->buffers->handles, d->tag, "buffer");
    handle_table_init(&d->kernels->handles, d->tag, "kernel");
    handle_table_init(&d->buffers->guards, d->tag, "guard");
    server_images_init(d);
    server_graphs_init(d);
    server_host_memory_init(d);
    d->info.host_register_alignment = d->host->alignment;
    err = server_memory_init(d);
    if (!err) err = server_streams_init(d, server_task_backend(d), sizeof(task));
    if (!err) err = sub_init(d);
    /* The chain (docs/ARCHITECTURE.md): submission reports to these, in this order. Failures
     * first, so that a lost batch's outputs carry the failure before profiles and timing hear
     * of it; buffers before graphs, so memory freed by finished work is reusable first. */
    static const sub_listener *const chain[] = {&failures_listener, &profiles_listener,
                                                &timing_listener, &buffers_listener,
                                                &graphs_listener};
    for (size_t i = 0; !err && i < sizeof chain / sizeof chain[0]; i++)
        sub_listen(d, chain[i]);
    if (!err) err = server_profiles_init(d);
    if (!err) err = timing_init(d);
    /* Metadata rings: a launch's block takes at most one chunk, so a chunk is the largest block
     * a kernel may declare (cubec_kernel_create refuses larger ones). */
    host_ring_plan(&d->rings->info, "metadata", 8 * (uint64_t)CUBEC_KERNEL_MAX_INFO_BYTES, 8,
                   GPU_MEM_METADATA);
    if (!err) err = host_ring_create(d, &d->rings->info);
    /* Staging rings: 64 MiB each, created by the first transfer that stages (transfer.c). On
     * unified memory none does, nor on WebGPU but for writes of partial words: opening them
     * here held 128 MiB of device memory (and on WebGPU as much again in host copies) for
     * nothing. */
    host_ring_plan(&d->rings->upload, "upload", 64u << 20, 4, GPU_MEM_UPLOAD);
    host_ring_plan(&d->rings->readback, "readback", 64u << 20, 4, GPU_MEM_READBACK);
    d->rings->copy_helpers = copy_helpers(&d->config);
    if (!err) err = device_registry_add(d);
    if (err) {
        server_close(d);
        return err;
    }
    *out = d;
    return NULL;
}

void server_close(cubec_device *d)
{
    /* The compile workers first: they take the device lock, and builds use the device. */
    compile_queue_stop(d);
    if (d->sub->stats.tasks)
        LOG(LOG_INFO, LOG_SYS_DEVICE,
            "closing: %" PRIu64 " tasks recorded, %" PRIu64 " barriers, %" PRIu64
            " submissions (%.3f us each in vkQueueSubmit)",
            d->sub->stats.tasks, d->sub->stats.barriers, d->sub->stats.submissions,
            d->sub->stats.submissions
                ? (double)d->sub->stats.submit_ns / 1e3 / (double)d->sub->stats.submissions
                : 0.0);
    if (d->gpu && d->hung) {
        /* A wait timed out: the GPU may never finish. Nothing below may wait for it, and what
         * it may still use must not be destroyed under it; host memory is freed. */
        LOG(LOG_WARN, LOG_SYS_DEVICE,
            "closing a device whose GPU did not finish (%s): its driver objects are abandoned",
            d->lost_reason);
        d->gpu->ops->abandon(d->gpu);
    }
    if (d->gpu) {
        /* Queued work still runs: the program may have released the buffers it reads. */
        if (d->streams->slots && !d->lost) cubec_status_free(server_drain_all(d, 0));
        if (d->sub->open && !d->lost) cubec_status_free(sub_flush(d, 0));
        submitter_stop(d);
        d->gpu->ops->queue_idle(d->gpu);
        server_peer_close(d); /* other devices' waits on this timeline end; imports go */
        sub_poll(d);
        server_graphs_read_timing(d);
        timing_close(d); /* reads the last timestamps: before completed_value is forced */
        d->sub->completed_value = UINT64_MAX; /* everything finished: deferred frees can run */
        server_graphs_destroy(d);
    }
    server_guards_destroy(d); /* their references go before the buffers' */
    server_images_destroy(d); /* their pins and buffer handles, likewise */
    for (uint32_t i = 0; i < d->buffers->handles.count; i++) {
        buffer_obj *b = d->buffers->handles.slots[i].object;
        if (!b) continue;
        server_alloc_release(d, b->alloc); /* the GPU is idle: frees at once */
        free(b);
    }
    for (uint32_t i = 0; i < d->kernels->handles.count; i++) {
        compile_queue_drop_handle(d, d->kernels->handles.slots[i].object);
        free(d->kernels->handles.slots[i].object);
    }
    compile_queue_destroy(d);
    handle_table_free(&d->buffers->handles);
    handle_table_free(&d->kernels->handles);
    if (d->gpu) {
        /* Tasks still queued (the device was lost) name their kernel when they are dropped: the
         * queues go before the kernels, whose entries keep those names. */
        server_streams_destroy(d);
        server_kernels_destroy(d);
        host_ring_destroy(d, &d->rings->info);
        host_ring_destroy(d, &d->rings->upload);
        host_ring_destroy(d, &d->rings->readback);
        copy_pool_destroy(d->rings->copies);
        server_host_memory_destroy(d); /* the GPU is idle: it copies to or from none of them */
        server_profiles_destroy(d);
        server_memory_destroy(d);
        server_run_modes_destroy(d);
        sub_destroy(d);
    }
    gpu_close(d->gpu);
    free(d->streams->slots);
    free(d->streams->align_slots);
    handle_tag_release(d->tag); /* its handles now read as issued by no open device */
    pthread_cond_destroy(&d->kernels->built);
    pthread_mutex_destroy(&d->lock);
    /* The block stays allocated a while, so that a stale pointer to it never names a later
     * device; the one parked longest ago goes now. */
    free(device_registry_park(d));
}

void server_fault_inject(cubec_device *d, cubec_fault_kind kind, uint64_t nth)
{
    d->faults.fail_at[kind] = nth ? d->faults.count[kind] + nth : 0;
}
