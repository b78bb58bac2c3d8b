/* Batching and completion. Commands are recorded into one open command buffer and submitted every
 * tasks_max tasks, or when the host needs results. Each submission signals the next value of one
 * timeline semaphore; "is X done" is a comparison with the counter, and waiting polls briefly
 * before blocking (a fence wait costs ~25 us more than a busy poll on an H200). */
#include "server/submission.h"
#include "base/array.h"
#include "base/clock.h"
#include "base/log.h"
#include "server/device.h"
#include "server/hazards.h"
#include "server/health.h"
#include "server/streams.h"
#include "server/submitter.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cubec_status sub_init(cubec_device *d)
{
    d->sub->next_value = 1;
    d->sub->completed_value = 0;
    return NULL;
}

void sub_destroy(cubec_device *d)
{
    for (uint32_t i = 0; i < d->sub->batch_count; i++) {
        free(d->sub->batches[i].held);
        free(d->sub->batches[i].stamps);
        if (d->sub->batches[i].queries)
            d->gpu->ops->queries_destroy(d->gpu, d->sub->batches[i].queries);
        d->gpu->ops->cmd_destroy(d->gpu, d->sub->batches[i].cmd);
    }
    free(d->sub->batches);
    d->sub->batches = NULL;
    d->sub->batch_count = 0;
}

void sub_listen(cubec_device *d, const sub_listener *l)
{
    if (d->sub->listener_count < SUB_MAX_LISTENERS) d->sub->listeners[d->sub->listener_count++] = l;
}

/* Each listener's `event`, in registration order. */
#define NOTIFY(d, event, ...)                                                                      \
    do {                                                                                           \
        for (uint32_t li_ = 0; li_ < (d)->sub->listener_count; li_++)                              \
            if ((d)->sub->listeners[li_]->event)                                                   \
                (d)->sub->listeners[li_]->event((d), __VA_ARGS__);                                 \
    } while (0)
#define NOTIFY0(d, event)                                                                          \
    do {                                                                                           \
        for (uint32_t li_ = 0; li_ < (d)->sub->listener_count; li_++)                              \
            if ((d)->sub->listeners[li_]->event) (d)->sub->listeners[li_]->event(d);               \
    } while (0)

void sub_poll(cubec_device *d)
{
    uint64_t v = 0;
    cubec_status err = d->gpu->ops->timeline_value(d->gpu, &v);
    if (!err && v > d->sub->completed_value) d->sub->completed_value = v;
    cubec_status_free(err); /* a broken timeline shows in the next wait */
    NOTIFY0(d, progress);
    for (uint32_t i = 0; i < d->sub->batch_count; i++)
        if (d->sub->batches[i].stamp_count && d->sub->batches[i].value &&
            d->sub->batches[i].value <= d->sub->completed_value)
            NOTIFY(d, finished, &d->sub->batches[i]);
    /* Everything submitted finished and nothing is open: no earlier command can conflict. */
    if (!d->sub->open && d->sub->completed_value + 1 >= d->sub->next_value)
        hazard_reset(&d->sub->hazards);
}

/* A batch the GPU finished, whose command buffer the submission thread no longer uses. */
static int batch_reusable(cubec_device *d, const batch *b)
{
    return b->value == 0 ||
           (b->value <= d->sub->completed_value && submitter_released(d, b->value));
}

/* A finished batch to record into, or a new one. */
static cubec_status take_batch(cubec_device *d, batch **out)
{
    for (int polled = 0;; polled = 1) {
        for (uint32_t i = 0; i < d->sub->batch_count; i++) {
            if (batch_reusable(d, &d->sub->batches[i])) {
                *out = &d->sub->batches[i];
                return NULL;
            }
        }
        if (!polled) {
            sub_poll(d);
            continue;
        }
        if (d->sub->batch_count < d->sub->batch_cap) break;
        if (d->sub->batch_cap < d->sub->max_batches) {
            if (array_grow_ex((void **)&d->sub->batches, &d->sub->batch_cap,
                              (uint64_t)d->sub->batch_count + 1, sizeof(batch), 8,
                              d->sub->max_batches, realloc) != 0)
                return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (command buffers)");
            break;
        }
        /* Bound how far the host runs ahead (max_inflight_tasks, 16384 by default: more than
         * CUDA's ~1000 pending launches): wait for the oldest batch rather than grow forever. */
        uint64_t oldest = UINT64_MAX;
        for (uint32_t i = 0; i < d->sub->batch_count; i++)
            if (d->sub->batches[i].value < oldest) oldest = d->sub->batches[i].value;
        if (oldest <= d->sub->completed_value)
            sched_yield(); /* finished; the submission thread is about to let go of it */
        else
            RETURN_IF_ERROR(sub_wait_flags(d, oldest, WAIT_KEEP_LOCK));
    }
    batch *b = &d->sub->batches[d->sub->batch_count];
    memset(b, 0, sizeof *b);
    /* Without push descriptors: one set per launch, at most batch_task_cap launches. */
    RETURN_IF_ERROR(d->gpu->ops->cmd_create(d->gpu, GPU_CMD_ONCE, d->sub->batch_task_cap, &b->cmd));
    d->sub->batch_count++;
    *out = b;
    return NULL;
}

cubec_status sub_begin(cubec_device *d, gpu_cmd **out_cmd)
{
    if (d->sub->open) {
        *out_cmd = d->sub->open->cmd;
        return NULL;
    }
    batch *b = NULL;
    /* take_batch may wait for the oldest batch: it keeps the lock, or another thread could open
     * a batch meanwhile. */
    RETURN_IF_ERROR(take_batch(d, &b));
    if (!b) return status_make(CUBEC_INTERNAL, "no command buffer to record into");
    if (b->stamp_count) NOTIFY(d, finished, b); /* finished, not yet harvested */
    RETURN_IF_ERROR(d->gpu->ops->cmd_begin(d->gpu, b->cmd));
    NOTIFY(d, begun, b);
    b->value = 0;
    b->last_task = NULL;
    b->stream_count = 0;
    d->sub->open = b;
    d->sub->tasks = 0;
    /* Nothing is bound in a new command buffer. */
    d->sub->bound.pipeline = NULL;
    d->sub->bound.descriptors_for = NULL;
    d->sub->bound.push_for = NULL;
    *out_cmd = b->cmd;
    return NULL;
}

cubec_status sub_flush(cubec_device *d, int for_host)
{
    return sub_flush_to(d, for_host, NULL);
}

static cubec_status flush(cubec_device *d, int for_host, sub_handoff *handoff, int gated,
                          cubec_device *gate, uint64_t gate_value, uint64_t inbound_wait);

cubec_status sub_flush_to(cubec_device *d, int for_host, sub_handoff *handoff)
{
    return flush(d, for_host, handoff, 0, NULL, 0, 0);
}

cubec_status sub_flush_gated(cubec_device *d, cubec_device *gate, uint64_t gate_value)
{
    return flush(d, 1, NULL, 1, gate, gate_value, 0);
}

cubec_status sub_flush_inbound(cubec_device *d, uint64_t inbound_wait, uint64_t *out_value)
{
    if (!d->sub->open) {
        gpu_cmd *cmd;
        RETURN_IF_ERROR(sub_begin(d, &cmd));
    }
    *out_value = d->sub->next_value;
    return flush(d, 0, NULL, 1, NULL, 0, inbound_wait);
}

/* sub_flush_to; `gated`: the batch goes to the submission thread, which submits it once gate's
 * timeline reached gate_value (NULL: at once), a peer copy's chunk (server/peer.c), with a GPU
 * wait on the inbound timeline when `inbound_wait` is not 0. */
static cubec_status flush(cubec_device *d, int for_host, sub_handoff *handoff, int gated,
                          cubec_device *gate, uint64_t gate_value, uint64_t inbound_wait)
{
    if (!d->sub->open) {
        if (!for_host || d->sub->host_visible_value + 1 >= d->sub->next_value) return NULL;
        /* Earlier batches wrote without a host barrier: submit one that adds it. */
        gpu_cmd *cmd;
        RETURN_IF_ERROR(sub_begin(d, &cmd));
    }
    batch *b = d->sub->open;
    if (!b) return status_make(CUBEC_INTERNAL, "no open command buffer to submit");
    if (for_host)
        gpu_cmd_barrier(b->cmd, GPU_STAGE_COMPUTE | GPU_STAGE_TRANSFER,
                        GPU_ACCESS_SHADER_WRITE | GPU_ACCESS_TRANSFER_WRITE, GPU_STAGE_HOST,
                        GPU_ACCESS_HOST_READ);
    d->sub->open = NULL;
    /* Later launches' metadata goes to slices of the next batch (launch.c metadata_slice). */
    d->sub->bound.info_size = 0;
    cubec_status ended = d->gpu->ops->cmd_end(d->gpu, b->cmd);
    if (ended) {
        cubec_status err = server_note_error(d, ended);
        NOTIFY(d, settled, b, err, 0);
        b->value = 0;
        return err;
    }
    uint64_t value = d->sub->next_value;
    uint64_t submit_begin = clock_now_ns();
    cubec_status lost = NULL;
    if (handoff) {
        /* The submission thread submits it, with what the caller hands over next; the fault
         * plan counts it here, where the device lock orders the count. */
        lost = gpu_fault(d->gpu, CUBEC_FAULT_SUBMIT, CUBEC_INTERNAL);
        if (!lost) {
            handoff->cmd = b->cmd;
            handoff->value = value;
        }
    } else if (gated) {
        lost = gpu_fault(d->gpu, CUBEC_FAULT_SUBMIT, CUBEC_INTERNAL);
        if (!lost) {
            cubec_status encode = gpu_fault(d->gpu, CUBEC_FAULT_ENCODE, CUBEC_DEVICE_LOST);
            lost = inbound_wait ? submitter_push_inbound(d, b->cmd, value, encode, inbound_wait)
                                : submitter_push_gated(d, b->cmd, value, encode, gate, gate_value);
        }
        if (lost) lost = server_note_error(d, lost);
    } else if (!for_host && d->gpu->caps.deferred_recording) {
        /* Encoded and submitted by the submission thread while the caller goes on; counted by
         * the fault plan here, where the device lock orders the count. */
        lost = gpu_fault(d->gpu, CUBEC_FAULT_SUBMIT, CUBEC_INTERNAL);
        if (!lost) {
            /* An encode fault is counted here too but strikes on the thread, as a real
             * encoding or submission failure there would. */
            cubec_status encode = gpu_fault(d->gpu, CUBEC_FAULT_ENCODE, CUBEC_DEVICE_LOST);
            lost = submitter_push_batch(d, b->cmd, value, encode);
        }
        if (lost) lost = server_note_error(d, lost);
    } else {
        /* The host waits for this one: submitting here spares waking the thread. */
        submitter_quiesce(d); /* what was handed to the submission thread goes first */
        gpu_submit_item item = {b->cmd, value, 0};
        if (submitter_broken(d)) {
            /* Something handed over failed there: this batch may read what it did not write. */
            sub_poll(d); /* reports the failure: the device is lost */
            lost = server_check_alive(d);
            if (!lost) lost = status_make(CUBEC_DEVICE_LOST, "an earlier submission failed");
        } else {
            lost = gpu_submit(d->gpu, &item, 1);
        }
        d->sub->stats.submit_ns += clock_now_ns() - submit_begin;
        if (lost)
            lost = server_note_error(d, lost);
        else
            submitter_note_submitted(d, value);
    }
    if (lost) {
        /* The buffer was not submitted: make it reusable; its work is lost, and what it would
         * have written carries the error. */
        NOTIFY(d, settled, b, lost, submit_begin);
        b->value = 0;
        return lost;
    }
    b->value = value;
    NOTIFY(d, settled, b, NULL, submit_begin);
    d->sub->next_value++;
    d->sub->stats.submissions++;
    if (for_host) d->sub->host_visible_value = value;
    d->sub->tasks = 0;
    return NULL;
}

cubec_status sub_task_done(cubec_device *d)
{
    /* The scheduler decides when to submit; this only bounds one command buffer (its descriptor
     * pool, without push descriptors, and the work lost if a submission fails). */
    if (++d->sub->tasks >= d->sub->batch_task_cap) return sub_flush(d, 0);
    return NULL;
}

/* Resets the command pools of finished batches. Done in waits, where the host is blocked on the
 * GPU anyway, so that beginning a batch on the launch path finds a clean pool (a reset frees
 * every command the driver recorded: 6-8 us on lavapipe, as much as recording the 32 launches
 * of a batch). Batches that finish while nobody waits are reset when they are reused. */
static void recycle_finished(cubec_device *d)
{
    if (!d->gpu->ops->cmd_recycle) return;
    for (uint32_t i = 0; i < d->sub->batch_count; i++) {
        batch *b = &d->sub->batches[i];
        if (b != d->sub->open && b->value && batch_reusable(d, b))
            d->gpu->ops->cmd_recycle(d->gpu, b->cmd);
    }
}

/* Polls the timeline for up to spin_us, then blocks, all within timeout_ns (0: no limit).
 * Touches only the backend's timeline, which is safe without the device lock. */
static cubec_status wait_timeline(gpu *g, uint64_t value, int spin_us, uint64_t timeout_ns,
                                  uint64_t *out_value)
{
    uint64_t v = 0, start = clock_now_ns();
    if (spin_us > 0) {
        uint64_t until = start + (uint64_t)spin_us * 1000u;
        do {
            RETURN_IF_ERROR(g->ops->timeline_value(g, &v));
            if (v >= value) {
                *out_value = v;
                return NULL;
            }
        } while (clock_now_ns() < until);
    }
    uint64_t left = 0;
    if (timeout_ns) {
        uint64_t spent = clock_now_ns() - start;
        left = spent < timeout_ns ? timeout_ns - spent : 1;
    }
    RETURN_IF_ERROR(g->ops->timeline_wait(g, value, left));
    *out_value = value;
    return NULL;
}

/* A wait that passed the limit: names the work that did not finish. The device is then lost
 * (server_note_error), and close abandons what the GPU may still use. */
static cubec_status timed_out(cubec_device *d, uint64_t value, cubec_status err)
{
    const batch *late = NULL;
    for (uint32_t i = 0; i < d->sub->batch_count; i++)
        if (d->sub->batches[i].value == value) late = &d->sub->batches[i];
    char work[160] = "";
    if (late && late->last_task)
        snprintf(work, sizeof work, " (its last task: \"%s\" on stream %" PRIu64 ")",
                 late->last_task, late->last_stream);
    cubec_status t = status_make(
        CUBEC_TIMEOUT,
        "the work submitted as timeline value %" PRIu64 "%s did not finish within %.3g s "
        "([device] wait_timeout, CUBEC_WAIT_TIMEOUT; %s): the device is treated as lost",
        value, work, (double)d->sub->wait_timeout_ns / 1e9, cubec_status_message(err));
    cubec_status_free(err);
    return server_note_error(d, t);
}

static cubec_status wait_value(cubec_device *d, uint64_t value, int spin_us, uint32_t flags)
{
    if (value == 0 || value <= d->sub->completed_value) return NULL;
    if (d->sub->open && value >= d->sub->next_value) RETURN_IF_ERROR(sub_flush(d, 0));
    if (value >= d->sub->next_value) value = d->sub->next_value - 1;
    if (!submitter_released(d, value)) {
        /* The submission thread gets through the value first. It signals the value of a batch
         * that failed there from the host; a GPU wait racing that signal made the Khronos
         * validation layer of Debian 12 stall for 10 s and report
         * UNASSIGNED-VkSemaphore-state-timeout ("most likely a validation bug", fixed in later
         * layers: Vulkan-ValidationLayers issues 4649 and 8519), seen in the profile fault sweep
         * (encode:2). The GPU cannot reach a value the thread has not submitted, so this does
         * not delay the wait. Without the lock meanwhile, as for the GPU wait below: the thread
         * may be waiting for the queue to go idle. */
        if (flags & WAIT_KEEP_LOCK) {
            submitter_wait_released(d, value);
        } else {
            pthread_mutex_unlock(&d->lock);
            submitter_wait_released(d, value);
            pthread_mutex_lock(&d->lock);
        }
    }
    sub_poll(d);
    if (value <= d->sub->completed_value) return NULL;
    recycle_finished(d);
    uint64_t seen = 0;
    /* An injected failure of the wait is a lost device, like a real one. */
    cubec_status err = gpu_fault(d->gpu, CUBEC_FAULT_WAIT, CUBEC_DEVICE_LOST);
    if (err) return server_note_error(d, status_annotate(err, "the device is treated as lost"));
    uint64_t limit = d->sub->wait_timeout_ns;
    int counted = submitter_wait_begin(d);
    if (flags & WAIT_KEEP_LOCK) {
        err = wait_timeline(d->gpu, value, spin_us, limit, &seen);
    } else {
        /* Other threads queue and record while this one waits for the GPU. */
        pthread_mutex_unlock(&d->lock);
        err = wait_timeline(d->gpu, value, spin_us, limit, &seen);
        pthread_mutex_lock(&d->lock);
    }
    submitter_wait_end(d, counted);
    if (err && cubec_status_code(err) == CUBEC_TIMEOUT) return timed_out(d, value, err);
    if (err) return server_note_error(d, err);
    if (seen > d->sub->completed_value) d->sub->completed_value = seen;
    sub_poll(d);
    recycle_finished(d);
    return NULL;
}

cubec_status sub_wait(cubec_device *d, uint64_t value)
{
    return sub_wait_polling(d, value, 0);
}

cubec_status sub_wait_flags(cubec_device *d, uint64_t value, uint32_t flags)
{
    RETURN_IF_ERROR(wait_value(d, value, d->sub->spin_us, flags));
    return server_check_alive(d); /* as sub_wait_polling */
}

cubec_status sub_wait_polling(cubec_device *d, uint64_t value, uint64_t expected_us)
{
    /* A wait expected to be long (a DMA of known size) polls through it when polling is on: a
     * blocking wait wakes 25-35 us after the GPU on an H200, 2-4% of a 64 MiB DMA. */
    int spin = d->sub->spin_us;
    if (spin > 0 && expected_us > (uint64_t)spin)
        spin = expected_us < SUB_MAX_POLL_US ? (int)expected_us : SUB_MAX_POLL_US;
    RETURN_IF_ERROR(wait_value(d, value, spin, 0));
    /* A value may have been signalled for work that never ran: the submission thread signals
     * the value of a batch that failed there, after recording the failure that the poll which
     * saw the value reported (the device is then lost). Nothing waited for is valid. */
    return server_check_alive(d);
}

cubec_status sub_wait_for_host(cubec_device *d, uint64_t value)
{
    if (value == 0) return NULL;
    if (value > d->sub->host_visible_value) {
        RETURN_IF_ERROR(sub_flush(d, 1));
        /* The host barrier is in the batch just submitted: wait for that one. */
        value = d->sub->host_visible_value;
    }
    return sub_wait(d, value);
}

void sub_hazards(cubec_device *d, gpu_cmd *cmd, const hazard_range *ranges, uint32_t n,
                 sub_command kind)
{
    sub_hazards_in(d, &d->sub->hazards, cmd, ranges, n, kind);
}

void sub_barrier_all_in(cubec_device *d, hazard_tracker *t, gpu_cmd *cmd)
{
    gpu_cmd_barrier(cmd, GPU_STAGE_COMPUTE | GPU_STAGE_TRANSFER,
                    GPU_ACCESS_SHADER_WRITE | GPU_ACCESS_TRANSFER_WRITE, GPU_STAGES_USED,
                    GPU_ACCESS_USED);
    hazard_reset(t);
    d->sub->stats.barriers++;
}

void sub_hazards_in(cubec_device *d, hazard_tracker *t, gpu_cmd *cmd, const hazard_range *ranges,
                    uint32_t n, sub_command kind)
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
        uint32_t dst_access = !access        ? 0
                              : compute_only ? GPU_ACCESS_SHADER_READ | GPU_ACCESS_SHADER_WRITE
                                             : GPU_ACCESS_USED;
        gpu_cmd_barrier(cmd, src ? src : GPU_STAGE_TOP, access,
                        compute_only ? GPU_STAGE_COMPUTE : GPU_STAGES_USED, dst_access);
        hazard_reset(t);
        if (compute_only) {
            t->partial_stages = partial_stages;
            t->partial_access = partial_access;
        }
        d->sub->stats.barriers++;
    }
    if (kind == SUB_TRANSFER)
        hazard_note(t, ranges, n, GPU_STAGE_TRANSFER, GPU_ACCESS_TRANSFER_WRITE);
    else
        hazard_note(t, ranges, n, GPU_STAGE_COMPUTE, GPU_ACCESS_SHADER_WRITE);
}
