/* Batching and completion. Commands are recorded into one open command buffer and submitted every
 * tasks_max tasks, or when the host needs results. Each submission signals the next value of one
 * timeline semaphore; "is X done" is a comparison with the counter, and waiting polls briefly
 * before blocking (a fence wait costs ~25 us more than a busy poll on an H200). */
#include "base/log.h"
#include "gpu/vulkan/vk_result.h"
#include "server/device.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The stages and accesses cubec's commands use: the destination of every barrier. */
#define ALL_STAGES                                                                                 \
    (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |                       \
     VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT)
#define ALL_ACCESS                                                                                 \
    (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |        \
     VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT)

cubec_status sub_init(cubec_device *d)
{
    VkSemaphoreTypeCreateInfo tci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
                                     .initialValue = 0};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &tci};
    VK_RETURN_IF_ERROR(vkCreateSemaphore(d->vk.device, &sci, NULL, &d->timeline),
                       "vkCreateSemaphore(timeline)");
    d->next_value = 1;
    d->completed_value = 0;
    return NULL;
}

void sub_destroy(cubec_device *d)
{
    for (uint32_t i = 0; i < d->batch_count; i++) {
        free(d->batches[i].held);
        free(d->batches[i].stamps);
        if (d->batches[i].queries) vkDestroyQueryPool(d->vk.device, d->batches[i].queries, NULL);
        vkDestroyCommandPool(d->vk.device, d->batches[i].pool, NULL);
        if (d->batches[i].descriptors)
            vkDestroyDescriptorPool(d->vk.device, d->batches[i].descriptors, NULL);
    }
    free(d->batches);
    d->batches = NULL;
    d->batch_count = 0;
    if (d->timeline) vkDestroySemaphore(d->vk.device, d->timeline, NULL);
}

void sub_poll(cubec_device *d)
{
    uint64_t v = 0;
    if (vkGetSemaphoreCounterValue(d->vk.device, d->timeline, &v) == VK_SUCCESS &&
        v > d->completed_value)
        d->completed_value = v;
    if (d->deferred_count) server_run_deferred_frees(d);
    if (d->submitter.started) {
        uint64_t graph = 0, value = 0;
        cubec_status lost;
        while ((lost = submitter_take_failure(d, &graph, &value)) != NULL)
            server_graph_replay_lost(d, graph, value, lost);
    }
    if (d->time_launches)
        for (uint32_t i = 0; i < d->batch_count; i++)
            if (d->batches[i].stamp_count && d->batches[i].value &&
                d->batches[i].value <= d->completed_value)
                timeline_harvest(d, &d->batches[i]);
    /* Everything submitted finished and nothing is open: no earlier command can conflict. */
    if (!d->open && d->completed_value + 1 >= d->next_value) hazard_reset(&d->hazards);
}

/* A finished batch to record into, or a new one. */
static cubec_status take_batch(cubec_device *d, batch **out)
{
    for (uint32_t i = 0; i < d->batch_count; i++) {
        batch *b = &d->batches[i];
        if (b->value == 0 || b->value <= d->completed_value) {
            *out = b;
            return NULL;
        }
    }
    sub_poll(d);
    for (uint32_t i = 0; i < d->batch_count; i++) {
        batch *b = &d->batches[i];
        if (b->value <= d->completed_value) {
            *out = b;
            return NULL;
        }
    }
    if (d->batch_count == d->batch_cap) {
        /* Bound how far the host runs ahead (max_inflight_tasks, 16384 by default: more than
         * CUDA's ~1000 pending launches): wait for the oldest batch rather than grow forever. */
        if (d->batch_cap >= d->max_batches) {
            uint64_t oldest = UINT64_MAX;
            for (uint32_t i = 0; i < d->batch_count; i++)
                if (d->batches[i].value < oldest) oldest = d->batches[i].value;
            RETURN_IF_ERROR(sub_wait(d, oldest));
            return take_batch(d, out);
        }
        uint32_t cap = d->batch_cap ? d->batch_cap * 2 : 8;
        if (cap > d->max_batches) cap = d->max_batches;
        batch *nb = realloc(d->batches, cap * sizeof *nb);
        if (!nb) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (command buffers)");
        d->batches = nb;
        d->batch_cap = cap;
    }
    batch *b = &d->batches[d->batch_count];
    /* A pool per batch: reusing the batch resets the whole pool at once, which drivers make
     * cheaper than resetting command buffers one by one. */
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                   .queueFamilyIndex = d->vk.queue_family};
    VK_RETURN_IF_ERROR(vkCreateCommandPool(d->vk.device, &pci, NULL, &b->pool),
                       "vkCreateCommandPool");
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = b->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkResult ar = vkAllocateCommandBuffers(d->vk.device, &ai, &b->cmd);
    if (ar != VK_SUCCESS) {
        vkDestroyCommandPool(d->vk.device, b->pool, NULL);
        return vk_status(ar, "vkAllocateCommandBuffers");
    }
    b->value = 0;
    b->recorded = 0;
    b->held = NULL;
    b->held_count = b->held_cap = 0;
    b->descriptors = VK_NULL_HANDLE;
    b->queries = VK_NULL_HANDLE;
    b->stamps = NULL;
    b->stamp_count = b->stamp_cap = 0;
    if (!d->vk.push_descriptor) {
        /* One set per launch, at most batch_task_cap launches per batch. */
        VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, d->batch_task_cap * 33u};
        VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                           .maxSets = d->batch_task_cap,
                                           .poolSizeCount = 1,
                                           .pPoolSizes = &size};
        VkResult r = vkCreateDescriptorPool(d->vk.device, &dpci, NULL, &b->descriptors);
        if (r != VK_SUCCESS) {
            vkDestroyCommandPool(d->vk.device, b->pool, NULL);
            return vk_status(r, "vkCreateDescriptorPool");
        }
    }
    d->batch_count++;
    *out = b;
    return NULL;
}

cubec_status sub_begin(cubec_device *d, VkCommandBuffer *out_cmd)
{
    if (d->open) {
        *out_cmd = d->open->cmd;
        return NULL;
    }
    batch *b = NULL;
    /* take_batch may wait for the oldest batch: keep the lock, or another thread could open a
     * batch meanwhile. */
    d->draining++;
    cubec_status err = take_batch(d, &b);
    d->draining--;
    RETURN_IF_ERROR(err);
    if (b->stamp_count) timeline_harvest(d, b); /* finished, not yet read */
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    if (b->recorded)
        VK_RETURN_IF_ERROR(vkResetCommandPool(d->vk.device, b->pool, 0), "vkResetCommandPool");
    b->recorded = 1;
    VK_RETURN_IF_ERROR(vkBeginCommandBuffer(b->cmd, &bi), "vkBeginCommandBuffer");
    if (b->descriptors) vkResetDescriptorPool(d->vk.device, b->descriptors, 0);
    if (d->time_launches) timeline_batch_begin(d, b);
    b->value = 0;
    d->open = b;
    d->tasks = 0;
    /* Nothing is bound in a new command buffer. */
    d->bound.pipeline = VK_NULL_HANDLE;
    d->bound.descriptor_layout = VK_NULL_HANDLE;
    d->bound.push_layout = VK_NULL_HANDLE;
    *out_cmd = b->cmd;
    return NULL;
}

cubec_status sub_flush(cubec_device *d, int for_host)
{
    return sub_flush_to(d, for_host, NULL);
}

cubec_status sub_flush_to(cubec_device *d, int for_host, sub_handoff *handoff)
{
    if (!d->open) {
        if (!for_host || d->host_visible_value + 1 >= d->next_value) return NULL;
        /* Earlier batches wrote without a host barrier: submit one that adds it. */
        VkCommandBuffer cmd;
        RETURN_IF_ERROR(sub_begin(d, &cmd));
    }
    batch *b = d->open;
    if (for_host) {
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask =
                                  VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                              .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
        vkCmdPipelineBarrier(b->cmd,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    }
    d->open = NULL;
    VkResult r = vkEndCommandBuffer(b->cmd);
    if (r != VK_SUCCESS) {
        cubec_status err = server_note_error(d, vk_status(r, "vkEndCommandBuffer"));
        server_batch_settled(d, b, err);
        b->value = 0;
        return err;
    }
    uint64_t value = d->next_value;
    VkTimelineSemaphoreSubmitInfo ts = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                        .signalSemaphoreValueCount = 1,
                                        .pSignalSemaphoreValues = &value};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .pNext = &ts,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &b->cmd,
                       .signalSemaphoreCount = 1,
                       .pSignalSemaphores = &d->timeline};
    uint64_t submit_begin = d->trace ? server_now_ns() : 0;
    cubec_status lost = fault_hit(&d->faults, CUBEC_FAULT_SUBMIT)
                            ? fault_status(&d->faults, CUBEC_FAULT_SUBMIT, CUBEC_INTERNAL)
                            : NULL;
    if (!lost && handoff) {
        /* The submission thread submits it, with what the caller hands over next. */
        handoff->cmd = b->cmd;
        handoff->value = value;
    } else if (!lost) {
        submitter_quiesce(d); /* replays handed to the submission thread go first */
        uint64_t t0 = server_now_ns();
        r = vkQueueSubmit(d->vk.queue, 1, &si, VK_NULL_HANDLE);
        d->stats.submit_ns += server_now_ns() - t0;
        if (r != VK_SUCCESS) lost = server_note_error(d, vk_status(r, "vkQueueSubmit"));
    }
    if (lost) {
        /* The buffer was not submitted: make it reusable; its work is lost, and what it would
         * have written carries the error. */
        server_batch_settled(d, b, lost);
        b->value = 0;
        b->stamp_count = 0; /* its timestamps will never be written */
        return lost;
    }
    server_batch_settled(d, b, NULL);
    b->value = value;
    d->next_value++;
    d->stats.submissions++;
    if (for_host) d->host_visible_value = value;
    if (d->trace) {
        char args[96];
        snprintf(args, sizeof args, "\"tasks\":%u,\"timeline_value\":%llu", d->tasks,
                 (unsigned long long)value);
        timeline_host(d, "submit", "submit", submit_begin, 0, args);
    }
    d->tasks = 0;
    return NULL;
}

cubec_status sub_task_done(cubec_device *d)
{
    /* The scheduler decides when to submit; this only bounds one command buffer (its descriptor
     * pool, without push descriptors, and the work lost if a submission fails). */
    if (++d->tasks >= d->batch_task_cap) return sub_flush(d, 0);
    return NULL;
}

/* Resets the command pools of finished batches. Done in waits, where the host is blocked on the
 * GPU anyway, so that beginning a batch on the launch path finds a clean pool (a reset frees
 * every command the driver recorded: 6-8 us on lavapipe, as much as recording the 32 launches
 * of a batch). Batches that finish while nobody waits are reset when they are reused. */
static void recycle_finished(cubec_device *d)
{
    for (uint32_t i = 0; i < d->batch_count; i++) {
        batch *b = &d->batches[i];
        if (b->recorded && b != d->open && b->value && b->value <= d->completed_value &&
            vkResetCommandPool(d->vk.device, b->pool, 0) == VK_SUCCESS)
            b->recorded = 0;
    }
}

/* Polls the timeline for up to spin_us, then blocks. Touches only immutable Vulkan handles, so
 * it may run without the device lock. Returns the observed counter value (0 on error). */
static VkResult wait_timeline(VkDevice dev, VkSemaphore timeline, uint64_t value, int spin_us,
                              int fail, uint64_t *out_value)
{
    if (fail) return VK_ERROR_DEVICE_LOST; /* an injected failure of the wait */
    uint64_t v = 0;
    if (spin_us > 0) {
        uint64_t until = now_ns() + (uint64_t)spin_us * 1000u;
        do {
            VkResult r = vkGetSemaphoreCounterValue(dev, timeline, &v);
            if (r != VK_SUCCESS) return r;
            if (v >= value) {
                *out_value = v;
                return VK_SUCCESS;
            }
        } while (now_ns() < until);
    }
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1,
                              .pSemaphores = &timeline,
                              .pValues = &value};
    VkResult r = vkWaitSemaphores(dev, &wi, UINT64_MAX);
    *out_value = value;
    return r;
}

cubec_status sub_wait(cubec_device *d, uint64_t value)
{
    if (value == 0 || value <= d->completed_value) return NULL;
    if (d->open && value >= d->next_value) RETURN_IF_ERROR(sub_flush(d, 0));
    if (value >= d->next_value) value = d->next_value - 1;
    sub_poll(d);
    if (value <= d->completed_value) return NULL;
    recycle_finished(d);
    uint64_t seen = 0;
    VkResult r;
    int fail = fault_hit(&d->faults, CUBEC_FAULT_WAIT);
    if (d->draining) {
        r = wait_timeline(d->vk.device, d->timeline, value, d->spin_us, fail, &seen);
    } else {
        /* Other threads queue and record while this one waits for the GPU. */
        pthread_mutex_unlock(&d->lock);
        r = wait_timeline(d->vk.device, d->timeline, value, d->spin_us, fail, &seen);
        pthread_mutex_lock(&d->lock);
    }
    if (r != VK_SUCCESS)
        return server_note_error(
            d, fail ? status_make(CUBEC_DEVICE_LOST,
                                  "injected fault: wait call #%llu: the "
                                  "device is treated as lost",
                                  (unsigned long long)d->faults.count[CUBEC_FAULT_WAIT])
                    : vk_status(r, "vkWaitSemaphores"));
    if (seen > d->completed_value) d->completed_value = seen;
    sub_poll(d);
    recycle_finished(d);
    return NULL;
}

cubec_status sub_wait_for_host(cubec_device *d, uint64_t value)
{
    if (value == 0) return NULL;
    if (value > d->host_visible_value) {
        RETURN_IF_ERROR(sub_flush(d, 1));
        /* The host barrier is in the batch just submitted: wait for that one. */
        value = d->host_visible_value;
    }
    return sub_wait(d, value);
}

void sub_hazards(cubec_device *d, VkCommandBuffer cmd, const hazard_range *ranges, uint32_t n,
                 sub_command kind)
{
    sub_hazards_in(d, &d->hazards, cmd, ranges, n, kind);
}

void sub_hazards_in(cubec_device *d, hazard_tracker *t, VkCommandBuffer cmd,
                    const hazard_range *ranges, uint32_t n, sub_command kind)
{
    /* Commands before an earlier compute-only barrier are not ordered before this one unless it
     * is a plain dispatch. */
    int stale = kind != SUB_COMPUTE && t->partial_stages;
    if (stale || hazard_needs_barrier(t, ranges, n)) {
        /* Wait only for the stages noted since the last barrier. A dispatch that follows
         * dispatches waits in the compute stage only: a barrier whose destination includes the
         * indirect-command stage makes an NVIDIA GPU drain its front end, which doubled the cost
         * of a dependent launch on an H200 (4.4 us against 2.1 us). Other commands get a barrier
         * to every stage cubec uses, after which the tracker forgets everything. */
        uint32_t src = t->stages | (stale ? t->partial_stages : 0);
        uint32_t access = t->write_access | (stale ? t->partial_access : 0);
        int compute_only = kind == SUB_COMPUTE;
        /* Compute-only barriers chain: each orders everything before the one before it too. */
        uint32_t partial_stages = t->partial_stages | src,
                 partial_access = t->partial_access | access;
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = access,
                              .dstAccessMask = !access        ? 0
                                               : compute_only ? VK_ACCESS_SHADER_READ_BIT |
                                                                    VK_ACCESS_SHADER_WRITE_BIT
                                                              : ALL_ACCESS};
        vkCmdPipelineBarrier(cmd, src ? src : VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                             compute_only ? VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT : ALL_STAGES, 0, 1,
                             &mb, 0, NULL, 0, NULL);
        hazard_reset(t);
        if (compute_only) {
            t->partial_stages = partial_stages;
            t->partial_access = partial_access;
        }
        d->stats.barriers++;
    }
    if (kind == SUB_TRANSFER)
        hazard_note(t, ranges, n, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    else
        hazard_note(t, ranges, n, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
}
