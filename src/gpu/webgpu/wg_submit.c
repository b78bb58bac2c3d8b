/* The WebGPU backend's command buffers, submission and the timeline (a counter advanced by the
 * queue's work-done callbacks; waits poll). Queries are wg_queries.c's. */
#include "gpu/webgpu/wg_internal.h"

#include "base/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* --- Command buffers ----------------------------------------------------------------------- */

cubec_status wg_cmd_create(gpu *g, gpu_cmd_use use, uint32_t sets, gpu_cmd **out)
{
    (void)g;
    (void)use; /* both kinds are encoded at each submission */
    (void)sets;
    wg_cmd *c = calloc(1, sizeof *c);
    if (!c) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (command buffer)");
    *out = &c->base;
    return NULL;
}

void wg_cmd_destroy(gpu *g, gpu_cmd *c)
{
    (void)g;
    if (!c) return;
    gpu_cmd_list_free(c);
    free(c);
}

cubec_status wg_cmd_begin(gpu *g, gpu_cmd *c)
{
    (void)g;
    gpu_cmd_list_reset(c);
    ((wg_cmd *)c)->ended = 0;
    return NULL;
}

cubec_status wg_cmd_end(gpu *g, gpu_cmd *c)
{
    (void)g;
    RETURN_IF_ERROR(gpu_cmd_list_status(c));
    ((wg_cmd *)c)->ended = 1;
    return NULL;
}

/* --- Submission and the timeline ------------------------------------------------------------ */

typedef struct wg_done {
    wg_gpu *w;
    uint64_t value;
} wg_done;

static void on_work_done(WGPUQueueWorkDoneStatus status, WGPUStringView message, void *user1,
                         void *user2)
{
    (void)message;
    (void)user2;
    wg_done *d = user1;
    wg_gpu *w = d->w;
    pthread_mutex_lock(&w->lock);
    /* A failed queue (device lost) completes nothing: the wait's limit reports it. */
    if (status == WGPUQueueWorkDoneStatus_Success && d->value > w->completed)
        w->completed = d->value;
    pthread_mutex_unlock(&w->lock);
    free(d);
}

/* The items' lists are encoded into one command buffer, which goes to the queue in one
 * submission: the GPU goes from one list to the next without waiting for the host to encode the
 * next (a replay's 1000 dispatches take milliseconds to encode, which a profile begun in the
 * batch before it measured as device time), and wgpu's work per command buffer and per
 * submission (tens of thousands of instructions) is paid once for batches that the submission
 * thread found queued together. If a list fails to encode, nothing is submitted: the server
 * takes the whole call as failed. */
cubec_status wg_submit(gpu *g, const gpu_submit_item *items, uint32_t n)
{
    wg_gpu *w = wg_of(g);
    const wg_procs *p = w->p;
    if (!n) return NULL;
    uint64_t signal = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!((wg_cmd *)items[i].cmd)->ended)
            return status_make(CUBEC_INTERNAL, "webgpu: a command buffer submitted unended");
        if (items[i].signal > signal) signal = items[i].signal;
    }
    wg_done *d = malloc(sizeof *d);
    if (!d) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (submission)");
    pthread_mutex_lock(&w->queue_lock);
    WGPUCommandBuffer cb = NULL;
    cubec_status err = wg_encode(w, items, n, &cb);
    if (!err) {
        *d = (wg_done){w, signal};
        p->QueueSubmit(w->queue, 1, &cb);
        p->CommandBufferRelease(cb);
        w->queue_submits++;
        pthread_mutex_lock(&w->lock);
        if (signal > w->submitted) w->submitted = signal;
        pthread_mutex_unlock(&w->lock);
        /* Work completes in submission order: the last value stands for every item's. */
        WGPUQueueWorkDoneCallbackInfo ci = {
            .mode = WGPUCallbackMode_AllowSpontaneous, .callback = on_work_done, .userdata1 = d};
        p->QueueOnSubmittedWorkDone(w->queue, ci);
        d = NULL;
        err = wg_take_error(w, "submitting");
    }
    pthread_mutex_unlock(&w->queue_lock);
    free(d);
    return err;
}

/* A look at the timeline, which the program's thread takes often (for every batch it opens).
 * While the submission thread encodes or submits (queue_lock), wgpu holds its own locks, and a
 * poll would wait for the whole submission: the callbacks it would fire are fired by that
 * submission anyway, so the value known so far is the answer. */
cubec_status wg_timeline_value(gpu *g, uint64_t *out)
{
    wg_gpu *w = wg_of(g);
    if (pthread_mutex_trylock(&w->queue_lock) == 0) {
        wg_poll_events(w, 0);
        pthread_mutex_unlock(&w->queue_lock);
    }
    pthread_mutex_lock(&w->lock);
    *out = w->completed;
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* A poll loop: wgpu-native 29's wgpuDevicePoll has no timeout, so a wait with a limit polls
 * without blocking and sleeps a little between polls, longer as it goes on. */
cubec_status wg_timeline_wait(gpu *g, uint64_t value, uint64_t timeout_ns)
{
    wg_gpu *w = wg_of(g);
    uint64_t start = wg_now_ns();
    unsigned sleep_us = 0;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        uint64_t reached = w->completed, submitted = w->submitted;
        pthread_mutex_unlock(&w->lock);
        if (reached >= value) return NULL;
        /* Without a limit, and with the value submitted, the implementation's own blocking
         * poll waits for it (and for what was submitted before it). */
        int block = !timeout_ns && submitted >= value && w->p->DevicePoll;
        wg_poll_events(w, block);
        pthread_mutex_lock(&w->lock);
        reached = w->completed;
        pthread_mutex_unlock(&w->lock);
        if (reached >= value) return NULL;
        if (timeout_ns && wg_now_ns() - start > timeout_ns)
            return status_make(CUBEC_TIMEOUT,
                               "webgpu: timeline value %" PRIu64 " not reached after %" PRIu64
                               " ms (reached %" PRIu64 ")",
                               value, timeout_ns / 1000000u, reached);
        if (!block) {
            usleep(sleep_us);
            if (sleep_us < 200) sleep_us += 10;
        }
    }
}

cubec_status wg_timeline_signal(gpu *g, uint64_t value)
{
    wg_gpu *w = wg_of(g);
    pthread_mutex_lock(&w->lock);
    if (value > w->completed) w->completed = value;
    if (value > w->submitted) w->submitted = value;
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

void wg_queue_idle(gpu *g)
{
    wg_gpu *w = wg_of(g);
    if (w->abandoned) return;
    pthread_mutex_lock(&w->lock);
    uint64_t submitted = w->submitted;
    pthread_mutex_unlock(&w->lock);
    cubec_status err = wg_timeline_wait(g, submitted, 0);
    if (err) cubec_status_free(err);
}

void wg_abandon(gpu *g)
{
    wg_of(g)->abandoned = 1;
}
