/* The multi-stream scheduler (spec 2.3): one FIFO of pending tasks per slot, drained into the
 * backend when a slot holds max_tasks tasks or when someone needs the results.
 *
 * Interleave (the default): the tasks of all slots being drained are recorded round-robin (task 0
 * of each slot, then task 1, ...) into one command stream, then submitted once. Independent
 * chains of several streams then share barriers: one barrier serves every chain that needs it.
 * Unlike the spec, a slot that fills up drains with every slot that has work pending, so that
 * this interleaving happens in steady state too, not only when a read needs several slots.
 * Sequential: each slot's tasks are recorded and submitted in turn; used for every slot when a
 * drained slot requires isolation (a graph capture, later).
 *
 * The module knows nothing of Vulkan: tasks are fixed-size records copied into per-slot rings,
 * and the backend is three callbacks. So it is unit-tested with a fake backend. Not thread-safe:
 * the device lock is held. */
#ifndef CUBEC_STREAM_SCHEDULER_H
#define CUBEC_STREAM_SCHEDULER_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

typedef enum sched_strategy {
    SCHED_INTERLEAVE = 0,
    SCHED_SEQUENTIAL = 1,
} sched_strategy;

/* No slot: a drain returns whichever error it met first. */
#define SCHED_NO_SLOT UINT32_MAX

typedef struct sched_backend {
    void *user;
    /* Records one task of `slot`. An error stops the drain; the remaining tasks are discarded. */
    cubec_status (*record)(void *user, uint32_t slot, void *task);
    /* Submits what was recorded; `mode` is the caller's, passed through (the server's drain
     * mode: whether the host reads the results, whether the batch stays open). */
    cubec_status (*submit)(void *user, uint32_t mode);
    /* Releases what a task holds without recording it: `cause` is the error that stopped its
     * drain, or NULL when the scheduler is destroyed. */
    void (*discard)(void *user, void *task, cubec_status cause);
    /* Optional: whether the device still has enough submitted work that a full queue may wait
     * for more tasks (sched_set_growth). NULL: never. */
    int (*busy)(void *user);
} sched_backend;

typedef struct sched_queue {
    unsigned char *tasks; /* ring of `cap` records of task_size bytes */
    uint32_t head, count, cap;
    uint32_t limit; /* the count that drains it: max_tasks, grown while the device is busy */
    int requires_isolation;
} sched_queue;

typedef struct scheduler {
    sched_queue *queues;
    uint32_t slots;
    size_t task_size;
    uint32_t max_tasks;
    uint32_t max_grown; /* a busy device lets a queue grow to this (sched_set_growth) */
    sched_strategy strategy;
    sched_backend backend;
    uint64_t drains; /* statistics, for tests and logs */
} scheduler;

MUST_USE cubec_status sched_init(scheduler *s, uint32_t slots, size_t task_size, uint32_t max_tasks,
                                 sched_strategy strategy, sched_backend backend);
/* Lets a full queue keep growing, max_tasks at a time up to `max_grown` tasks, while
 * backend.busy says the device still has enough work: a GPU fed by submissions of a few tasks
 * each idles between them, so when it is busy anyway the tasks go in fewer, larger ones.
 * max_grown <= max_tasks turns it off (the default). */
void sched_set_growth(scheduler *s, uint32_t max_grown);
/* Discards every queued task and frees the queues. */
void sched_destroy(scheduler *s);
/* Room for one more task at the end of `slot`'s queue (the ring grows when full: only until it
 * has reached max_tasks (or max_grown) records, after which drains keep it from filling). The
 * caller fills the record, then calls sched_commit. */
MUST_USE cubec_status sched_reserve(scheduler *s, uint32_t slot, void **out_task);
/* Makes the reserved task part of the queue. When the slot then holds max_tasks tasks it is
 * drained: alone under Sequential; under Interleave together with every slot that has pending
 * work (first), so that concurrent streams share command buffers and barriers. Returns an error
 * only when the drain lost this slot's work: another slot's failed submission in a drain that
 * submits slot by slot stays on that slot's outputs (the backend taints them). */
MUST_USE cubec_status sched_commit(scheduler *s, uint32_t slot);
/* Drains the queues of `slots` (duplicates allowed, first-seen order kept) into the backend and
 * submits. Slots with empty queues cost nothing; if nothing was recorded, nothing is submitted. */
MUST_USE cubec_status sched_execute(scheduler *s, const uint32_t *slots, uint32_t count);
/* The same, with `mode` handed to the backend's submit (sched_execute passes 0). */
MUST_USE cubec_status sched_execute_mode(scheduler *s, const uint32_t *slots, uint32_t count,
                                         uint32_t mode);
/* Drains every slot. */
MUST_USE cubec_status sched_execute_all(scheduler *s);
MUST_USE cubec_status sched_execute_all_mode(scheduler *s, uint32_t mode);
static inline uint32_t sched_pending(const scheduler *s, uint32_t slot)
{
    return s->queues[slot].count;
}

#endif
