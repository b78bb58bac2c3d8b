/* The submission thread: it makes the vkQueueSubmit of graph replays and of eager batches, and
 * encodes those batches first.
 *
 * Why: a driver walks a whole command buffer when it is submitted (an H200 takes 9-20 us for one
 * of 1000 launches), and on backends that defer recording (gpu_caps.deferred_recording) encoding a
 * batch is most of a launch's host cost (~0.7 us a launch on an H200). A replay or a full batch is
 * handed to this thread with its timeline value and the caller returns, as after a CUDA launch.
 * Work the host waits for (sub_flush for the host) is still submitted on the caller's thread,
 * which then needs no wake-up of this one.
 *
 * Order: the queue sees submissions in timeline order. Items are pushed under the device lock in
 * value order and submitted in FIFO order; every other submission (sub_flush) first waits until
 * the thread has submitted everything pushed, and it holds the device lock, so nothing new is
 * pushed meanwhile: the VkQueue is never used by two threads at once.
 *
 * Failure: an item whose encoding or vkQueueSubmit fails never signals its value. The thread then
 * waits for the queue to finish what came before and has the value signalled (gpu_ops.
 * timeline_signal: through the queue, from the host only on a lost device), so that no
 * waiter hangs, and records the failure; the device (under its lock, in sub_poll) taints a
 * graph's outputs with it and surfaces a lost device. An eager batch's ranges were released when
 * it was handed over, so what it would have written is unknown: the device is treated as lost. */
#include "server/submitter.h"
#include "base/clock.h"
#include "base/log.h"
#include "server/device.h"
#include "server/submission.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Polls for a push after `seen` for poll_spin_us, and while a host wait is in progress (at most
 * SUBMITTER_PRIME_CAP_NS in all), then poll_spin_us after it ended. Ends early when pushed
 * changes, which submitter_stop does too. */
static void spin_for_work(cubec_device *d, unsigned seen)
{
    submitter *s = d->submitter;
    uint64_t now = clock_now_ns(), spin_ns = (uint64_t)d->sub->spin_us * 1000u;
    uint64_t until = now + spin_ns, cap = now + SUBMITTER_PRIME_CAP_NS;
    while (atomic_load(&s->pushed) == seen) {
        now = clock_now_ns();
        if (atomic_load(&s->waiters) && now < cap)
            until = now + spin_ns;
        else if (now >= until)
            return;
        sched_yield();
    }
}

/* Waits until `gate`'s timeline reaches `value` (an error when the wait fails or the gate device
 * lost a submission, which signals its value without having done the work); either way the
 * gate's count goes down. */
static cubec_status gate_pass(cubec_device *d, cubec_device *gate, uint64_t value)
{
    cubec_status err = gate->gpu->ops->timeline_wait(gate->gpu, value, d->sub->wait_timeout_ns);
    if (!err && atomic_load(&gate->submitter->broken))
        err = status_make(CUBEC_DEVICE_LOST, "a submission of the other device failed");
    if (err)
        err = status_annotate(
            err, "a peer copy's batch waited for timeline value %" PRIu64 " of device %p", value,
            (void *)gate);
    atomic_fetch_sub(&gate->peer_gates, 1);
    return err;
}

/* An eager batch with nothing attached: no replay, injected fault or peer gate. Several of them
 * queued back to back go to the backend in one call (coalesce). */
static int plain_batch(const submit_item *item)
{
    return !item->graph && !item->batch && !item->fault && !item->gate;
}

static void *submitter_main(void *arg)
{
    cubec_device *d = arg;
    submitter *s = d->submitter;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        if (!s->count && !s->stop && d->sub->spin_us > 0) {
            /* On a GPU, poll for a while before sleeping: waking a sleeping thread takes tens of
             * microseconds, during which the GPU would idle between a replay and the work
             * before it, and the thread that pushes pays the wake-up. */
            unsigned seen = atomic_load(&s->pushed);
            pthread_mutex_unlock(&s->lock);
            spin_for_work(d, seen);
            pthread_mutex_lock(&s->lock);
        }
        if (!s->count && !s->stop) {
            s->sleeping = 1;
            pthread_cond_wait(&s->work, &s->lock);
            s->sleeping = 0;
            continue; /* a push, a stop, or a host wait that wants the thread polling */
        }
        if (!s->count) break; /* stopping, nothing left */
        submit_item item = s->ring[s->head];
        s->head = (s->head + 1) % s->ring_cap;
        s->count--;
        s->busy = 1;
        /* The batch handed over with the replay first, in the same call: the GPU goes from
         * one to the other without waiting for a second submission. Counted by the fault plan
         * when it was handed over (under the device lock). */
        gpu_submit_item items[GPU_SUBMIT_MAX_ITEMS];
        uint32_t n = 0, taken = 1;
        if (item.batch) items[n++] = (gpu_submit_item){item.batch, item.batch_value, 0};
        items[n++] = (gpu_submit_item){item.cmd, item.value, item.inbound_wait};
        /* Plain batches that queued up behind a plain one while this thread was busy go with it,
         * as many as the backend asks for (gpu_caps.coalesce_batches): where encoding and
         * submitting is slower than the program's launches, each call's cost is shared. Vulkan
         * takes one: a vkQueueSubmit costs an H200 2-11 us, but the GPU would start later, and
         * that trade is not measured yet. */
        uint64_t last_value = item.value;
        uint32_t most = d->gpu->caps.coalesce_batches;
        if (most > GPU_SUBMIT_MAX_ITEMS) most = GPU_SUBMIT_MAX_ITEMS;
        while (plain_batch(&item) && s->count && n < most && plain_batch(&s->ring[s->head])) {
            const submit_item *next = &s->ring[s->head];
            items[n++] = (gpu_submit_item){next->cmd, next->value, next->inbound_wait};
            last_value = next->value;
            s->head = (s->head + 1) % s->ring_cap;
            s->count--;
            taken++;
        }
        pthread_mutex_unlock(&s->lock);

        uint64_t t0 = clock_now_ns();
        cubec_status r = NULL;
        int first_failure = 0, gate_counted = 0;
        if (atomic_load(&s->broken)) {
            /* Work after a failed submission may read what it did not write: nothing more
             * runs (the device is lost), but its value is signalled so that no waiter hangs. */
            cubec_status_free(item.fault);
            r = status_make(CUBEC_DEVICE_LOST, "an earlier submission failed");
        } else {
            /* A peer copy's batch waits here, on this thread, for the other device's copy of
             * its chunk (or for the other side to be done with the staging it overwrites). */
            cubec_status gate = item.gate ? gate_pass(d, item.gate, item.gate_value) : NULL;
            gate_counted = item.gate != NULL;
            if (gate) {
                cubec_status_free(item.fault);
                r = gate;
            } else {
                r = item.fault ? item.fault : d->gpu->ops->submit(d->gpu, items, n);
            }
            first_failure = r != NULL;
            if (r) atomic_store(&s->broken, 1);
        }
        if (item.gate && !gate_counted)
            atomic_fetch_sub(&item.gate->peer_gates, 1); /* never waited for */
        uint64_t spent = clock_now_ns() - t0;
        pthread_mutex_lock(&s->lock);
        s->submit_ns += spent;
        s->submissions++;
        if (first_failure) {
            if (s->failure_count < sizeof s->failures / sizeof s->failures[0]) {
                s->failures[s->failure_count].result = r;
                s->failures[s->failure_count].graph = item.graph;
                s->failures[s->failure_count].value = item.value;
                s->failure_count++;
            } else {
                cubec_status_free(r);
                s->failures_dropped++;
            }
            r = NULL; /* kept in the ring */
        }
        pthread_mutex_unlock(&s->lock);
        int failed = r != NULL || first_failure;
        cubec_status_free(r);
        r = NULL;
        if (failed) {
            /* Nothing will signal the value: do it once what came before has finished. The
             * failure is recorded first, so a poll that sees the value also finds it. */
            d->gpu->ops->queue_idle(d->gpu);
            cubec_status_free(d->gpu->ops->timeline_signal(d->gpu, last_value));
        }
        atomic_store_explicit(&s->through, last_value, memory_order_release);
        atomic_store(&s->worked_ns, clock_now_ns());
        pthread_mutex_lock(&s->lock);
        s->busy = 0;
        atomic_fetch_add(&s->done, taken);
        pthread_cond_broadcast(&s->idle);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static cubec_status push(cubec_device *d, submit_item item)
{
    submitter *s = d->submitter;
    cubec_status err = submitter_start(d);
    if (err) {
        cubec_status_free(item.fault);
        return err;
    }
    pthread_mutex_lock(&s->lock);
    while (s->count == s->ring_cap)
        pthread_cond_wait(&s->idle, &s->lock);
    s->ring[(s->head + s->count) % s->ring_cap] = item;
    s->count++;
    atomic_fetch_add(&s->pushed, 1);
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

cubec_status submitter_push(cubec_device *d, gpu_cmd *cmd, uint64_t value, uint64_t graph,
                            const sub_handoff *before)
{
    return push(d, (submit_item){cmd, value, graph, before ? before->cmd : NULL,
                                 before ? before->value : 0, NULL, NULL, 0, 0});
}

cubec_status submitter_push_batch(cubec_device *d, gpu_cmd *cmd, uint64_t value, cubec_status fault)
{
    return push(d, (submit_item){cmd, value, 0, NULL, 0, fault, NULL, 0, 0});
}

cubec_status submitter_push_inbound(cubec_device *d, gpu_cmd *cmd, uint64_t value,
                                    cubec_status fault, uint64_t inbound_wait)
{
    return push(d, (submit_item){cmd, value, 0, NULL, 0, fault, NULL, 0, inbound_wait});
}

cubec_status submitter_push_gated(cubec_device *d, gpu_cmd *cmd, uint64_t value, cubec_status fault,
                                  struct cubec_device_s *gate, uint64_t gate_value)
{
    if (gate) atomic_fetch_add(&gate->peer_gates, 1);
    cubec_status err = push(d, (submit_item){cmd, value, 0, NULL, 0, fault, gate, gate_value, 0});
    if (err && gate) atomic_fetch_sub(&gate->peer_gates, 1);
    return err;
}

void submitter_wait_gates(cubec_device *d)
{
    while (atomic_load(&d->peer_gates)) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

void submitter_note_submitted(cubec_device *d, uint64_t value)
{
    atomic_store_explicit(&d->submitter->through, value, memory_order_release);
}

int submitter_broken(cubec_device *d)
{
    return atomic_load(&d->submitter->broken);
}

int submitter_released(cubec_device *d, uint64_t value)
{
    return value <= atomic_load_explicit(&d->submitter->through, memory_order_acquire);
}

cubec_status submitter_start(cubec_device *d)
{
    submitter *s = d->submitter;
    if (s->started) return NULL;
    uint32_t cap = d->sub->max_batches + 64;
    free(s->ring);
    s->ring = calloc(cap, sizeof *s->ring);
    if (!s->ring) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (submission ring)");
    s->ring_cap = cap;
    s->head = s->count = 0;
    s->prime = config_auto_on(d->config.submitter_poll, d->info.type != CUBEC_DEVICE_TYPE_CPU);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->idle, NULL);
    if (pthread_create(&s->thread, NULL, submitter_main, d) != 0) {
        pthread_cond_destroy(&s->idle);
        pthread_cond_destroy(&s->work);
        pthread_mutex_destroy(&s->lock);
        return status_make(CUBEC_OUT_OF_MEMORY, "cannot start the submission thread");
    }
    s->started = 1;
    return NULL;
}

int submitter_wait_begin(cubec_device *d)
{
    submitter *s = d->submitter;
    if (!s->started || !s->prime || d->sub->spin_us <= 0) return 0;
    atomic_fetch_add(&s->waiters, 1);
    if (clock_now_ns() - atomic_load(&s->worked_ns) <= SUBMITTER_PRIME_WINDOW_NS) {
        pthread_mutex_lock(&s->lock);
        if (s->sleeping && !s->count) pthread_cond_signal(&s->work);
        pthread_mutex_unlock(&s->lock);
    }
    return 1;
}

void submitter_wait_end(cubec_device *d, int counted)
{
    if (counted) atomic_fetch_sub(&d->submitter->waiters, 1);
}

void submitter_quiesce(cubec_device *d)
{
    submitter *s = d->submitter;
    if (!s->started) return;
    if (d->sub->spin_us > 0) {
        /* On a GPU, poll before sleeping: being woken takes tens of microseconds, which a
         * sync that waits here for the last batches would add to its latency. */
        uint64_t until = clock_now_ns() + (uint64_t)d->sub->spin_us * 1000u;
        while (atomic_load(&s->done) != atomic_load(&s->pushed) && clock_now_ns() < until)
            sched_yield();
    }
    pthread_mutex_lock(&s->lock);
    while (s->count || s->busy)
        pthread_cond_wait(&s->idle, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

void submitter_wait_released(cubec_device *d, uint64_t value)
{
    submitter *s = d->submitter;
    if (!s->started || submitter_released(d, value)) return;
    if (d->sub->spin_us > 0) {
        uint64_t until = clock_now_ns() + (uint64_t)d->sub->spin_us * 1000u;
        while (!submitter_released(d, value) && clock_now_ns() < until)
            sched_yield();
    }
    pthread_mutex_lock(&s->lock);
    /* The thread broadcasts `idle` after every item; an idle thread has nothing more to do. */
    while (!submitter_released(d, value) && (s->count || s->busy))
        pthread_cond_wait(&s->idle, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

cubec_status submitter_take_failure(cubec_device *d, uint64_t *out_graph, uint64_t *out_value)
{
    submitter *s = d->submitter;
    if (!s->started) return NULL;
    pthread_mutex_lock(&s->lock);
    cubec_status r = NULL;
    uint64_t graph = 0, value = 0;
    uint32_t dropped = s->failures_dropped;
    if (s->failure_count) {
        r = s->failures[0].result;
        graph = s->failures[0].graph;
        value = s->failures[0].value;
        s->failure_count--;
        memmove(&s->failures[0], &s->failures[1], s->failure_count * sizeof s->failures[0]);
    } else if (dropped) {
        s->failures_dropped = 0;
    }
    pthread_mutex_unlock(&s->lock);
    if (!r && !dropped) return NULL;
    if (!r) {
        /* More failures than the ring holds: which outputs they leave unwritten is unknown, so
         * the device is treated as lost (a failing vkQueueSubmit nearly always means that). */
        *out_graph = 0;
        *out_value = 0;
        return status_make(CUBEC_DEVICE_LOST,
                           "%u submissions failed beyond the ones reported; the device is "
                           "treated as lost",
                           dropped);
    }
    *out_graph = graph;
    *out_value = value;
    /* Work submitted after it may have read what it did not write, and nothing more is
     * submitted: nothing of the device can be trusted any more. */
    cubec_status lost =
        status_make(CUBEC_DEVICE_LOST,
                    "the %s signalling timeline value %" PRIu64
                    " was not submitted (%s); the device is treated as lost",
                    graph ? "replay" : "batch of eager work", value, cubec_status_message(r));
    cubec_status_free(r);
    return lost;
}

void submitter_stop(cubec_device *d)
{
    submitter *s = d->submitter;
    if (!s->started) return;
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    atomic_fetch_add(&s->pushed, 1); /* ends a poll, also one that lasts through a host wait */
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    for (uint32_t i = 0; i < s->failure_count; i++)
        cubec_status_free(s->failures[i].result);
    s->failure_count = 0;
    d->sub->stats.submit_ns += s->submit_ns;
    d->sub->stats.submissions += s->submissions;
    pthread_cond_destroy(&s->idle);
    pthread_cond_destroy(&s->work);
    pthread_mutex_destroy(&s->lock);
    free(s->ring);
    s->ring = NULL;
    s->started = 0;
}
