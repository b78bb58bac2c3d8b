/* The submission thread (server/submitter.c): encodes and submits eager batches and graph
 * replays while the caller goes on. */
#ifndef CUBEC_SERVER_SUBMITTER_H
#define CUBEC_SERVER_SUBMITTER_H

#include "gpu/gpu.h"
#include "server/submission.h"
#include <pthread.h>
#include <stdatomic.h>

typedef struct submit_item {
    gpu_cmd *cmd;
    uint64_t value; /* the timeline value it signals */
    uint64_t graph; /* the graph's number, for a failure (0: an eager batch) */
    gpu_cmd *batch; /* a batch submitted just before it, in the same call (or NULL) */
    uint64_t batch_value;
    cubec_status fault; /* an injected encode fault: the thread fails the item with it */
    /* A peer copy's batch (server/peer.c): submitted only once `gate`'s timeline reached
     * gate_value, so the caller never waits for the other device (NULL: no gate). */
    struct cubec_device_s *gate;
    uint64_t gate_value;
    /* A batch that waits on the GPU for the inbound timeline to reach this value
     * (gpu_submit_item.inbound_wait; 0: none). */
    uint64_t inbound_wait;
} submit_item;

typedef struct submitter {
    int started, stop, busy;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t work, idle;
    /* Items pushed and not yet taken: room for every batch the device may have in flight, so
     * that the caller is held back by max_inflight_tasks rather than by the ring. */
    submit_item *ring;
    uint32_t ring_cap, head, count;
    atomic_uint pushed; /* bumped by every push: the thread polls it before sleeping */
    atomic_uint done;   /* bumped after every item: quiesce polls it before sleeping */
    atomic_int broken;  /* a submission failed: nothing more is submitted (the device is lost) */
    /* Host waits in progress, whether the thread sleeps on `work`, and when it last finished an
     * item (CLOCK_MONOTONIC ns): submitter_wait_begin wakes a thread that worked lately, so that
     * it polls through the wait and takes the next replay without a wake-up. */
    atomic_uint waiters;
    int prime; /* [device] submitter_poll: on GPUs (a CPU device's cores run the work) */
    int sleeping;
    _Atomic uint64_t worked_ns;
    /* The highest timeline value submitted (or given up on), by either thread; stored after the
     * thread's last use of what it submitted, so that a command buffer it handled is reused
     * only after this says so (the GPU finishing it is not a synchronisation the host sees). */
    _Atomic uint64_t through;
    uint64_t submit_ns, submissions;
    /* Failed submissions not yet reported to the device (a ring; more than fit are counted). */
    struct {
        cubec_status result;
        uint64_t graph, value;
    } failures[16];
    uint32_t failure_count, failures_dropped;
} submitter;

/* A host wait for the GPU begins / ends (submission.c). A thread that handled work in the last
 * SUBMITTER_PRIME_WINDOW_NS and sleeps is woken to poll during the wait and for poll_spin_us
 * after it (at most SUBMITTER_PRIME_CAP_NS of polling in a row): the replay or batch that a
 * program issues right after a sync is then taken without waking the thread, which cost the
 * caller of a replay ~4.3 us of its ~6 us on an H200. */
#define SUBMITTER_PRIME_WINDOW_NS 100000000ull
#define SUBMITTER_PRIME_CAP_NS 5000000ull
int submitter_wait_begin(cubec_device *d);
/* `counted`: what submitter_wait_begin returned (the thread may start during the wait). */
void submitter_wait_end(cubec_device *d, int counted);
/* Hands a replay's command buffer to the submission thread (started on first use), after the
 * handed-off batch `before` when it holds one. */
MUST_USE cubec_status submitter_push(cubec_device *d, gpu_cmd *cmd, uint64_t value, uint64_t graph,
                                     const sub_handoff *before);
/* Hands an eager batch to the submission thread, which encodes and submits it (or, with
 * `fault`, which it takes, fails it as if encoding had failed). */
MUST_USE cubec_status submitter_push_batch(cubec_device *d, gpu_cmd *cmd, uint64_t value,
                                           cubec_status fault);
/* submitter_push_batch for a batch that must not reach the queue before `gate`'s timeline
 * reached `gate_value` (a peer copy's chunk, server/peer.c; gate NULL: no wait): the thread waits
 * for it, the caller does not. Counted on the gate device until the thread is past the wait. */
MUST_USE cubec_status submitter_push_gated(cubec_device *d, gpu_cmd *cmd, uint64_t value,
                                           cubec_status fault, struct cubec_device_s *gate,
                                           uint64_t gate_value);
/* submitter_push_batch for a batch that waits on the GPU until the inbound timeline reached
 * `inbound_wait` (cubec_stream_wait_cuda): the queue holds it and every later batch; neither the
 * caller nor the thread waits (the null backend's thread does: its queue is the thread). */
MUST_USE cubec_status submitter_push_inbound(cubec_device *d, gpu_cmd *cmd, uint64_t value,
                                             cubec_status fault, uint64_t inbound_wait);
/* Returns once no submission thread of another device waits on d's timeline (at close, once d's
 * own work is done: their waits then end at once). */
void submitter_wait_gates(cubec_device *d);
/* Notes a submission made on the caller's thread (after submitter_quiesce). */
void submitter_note_submitted(cubec_device *d, uint64_t value);
/* Whether a submission failed on the thread (the device is then lost: nothing more may be
 * submitted, by the thread or by the caller). */
int submitter_broken(cubec_device *d);
/* Whether the submission of `value` is made and the thread is done with its command buffer. */
int submitter_released(cubec_device *d, uint64_t value);
/* Returns once the thread is through `value` (submitted it, or failed it and signalled it from
 * the host), or has nothing left to do. */
void submitter_wait_released(cubec_device *d, uint64_t value);
/* Starts the thread if it is not running (a replay does it before handing a batch over). */
MUST_USE cubec_status submitter_start(cubec_device *d);
/* Returns once everything pushed is submitted: call before any other vkQueueSubmit. */
void submitter_quiesce(cubec_device *d);
/* A replay submission that failed and was not reported yet (its graph's number and timeline
 * value), or NULL. */
MUST_USE cubec_status submitter_take_failure(cubec_device *d, uint64_t *out_graph,
                                             uint64_t *out_value);
/* Submits what is left and joins the thread. */
void submitter_stop(cubec_device *d);

#endif
