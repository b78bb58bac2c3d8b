/* The multi-stream scheduler (see scheduler.h). */
#include "stream/scheduler.h"

#include "base/array.h"
#include "base/assert.h"
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cubec_status sched_init(scheduler *s, uint32_t slots, size_t task_size, uint32_t max_tasks,
                        sched_strategy strategy, sched_backend backend)
{
    memset(s, 0, sizeof *s);
    if (slots == 0 || task_size == 0 || max_tasks == 0)
        return INVALID_ARG("scheduler: slots %u, task size %zu and max_tasks %u must be non-zero",
                           slots, task_size, max_tasks);
    s->queues = calloc(slots, sizeof *s->queues);
    if (!s->queues) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (scheduler)");
    s->slots = slots;
    s->task_size = task_size;
    s->max_tasks = max_tasks;
    s->max_grown = max_tasks;
    s->strategy = strategy;
    s->backend = backend;
    return NULL;
}

static void *task_at(const scheduler *s, const sched_queue *q, uint32_t i)
{
    return q->tasks + (size_t)((q->head + i) % q->cap) * s->task_size;
}

/* Takes the first task of a queue (valid until the next reserve on that slot). */
static void *pop(scheduler *s, sched_queue *q)
{
    CUBEC_ASSERT(q->count > 0 && q->count <= q->cap);
    void *t = task_at(s, q, 0);
    q->head = (q->head + 1) % q->cap;
    q->count--;
    return t;
}

static void discard_queue(scheduler *s, sched_queue *q, cubec_status cause)
{
    while (q->count)
        s->backend.discard(s->backend.user, pop(s, q), cause);
    q->head = 0;
}

void sched_destroy(scheduler *s)
{
    for (uint32_t i = 0; i < s->slots && s->queues; i++) {
        if (s->queues[i].tasks) discard_queue(s, &s->queues[i], NULL);
        free(s->queues[i].tasks);
    }
    free(s->queues);
    memset(s, 0, sizeof *s);
}

/* Grows a full ring. The records from `head` to the old end move to the new end, so the ring
 * stays in order without copying the rest. */
static cubec_status grow(scheduler *s, sched_queue *q)
{
    uint32_t old_cap = q->cap;
    uint32_t first = s->max_tasks < 8 ? s->max_tasks + 1 : 8;
    if (array_grow_ex((void **)&q->tasks, &q->cap, (uint64_t)q->count + 1, s->task_size, first,
                      UINT32_MAX, realloc))
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (task queue)");
    if (q->head) {
        uint32_t tail = old_cap - q->head; /* records from head to the old end */
        memmove(q->tasks + (size_t)(q->cap - tail) * s->task_size,
                q->tasks + (size_t)q->head * s->task_size, (size_t)tail * s->task_size);
        q->head = q->cap - tail;
    }
    return NULL;
}

cubec_status sched_reserve(scheduler *s, uint32_t slot, void **out_task)
{
    sched_queue *q = &s->queues[slot];
    if (q->count == q->cap) RETURN_IF_ERROR(grow(s, q));
    *out_task = task_at(s, q, q->count);
    return NULL;
}

static cubec_status execute(scheduler *s, const uint32_t *slots, uint32_t count, uint32_t mode,
                            uint32_t own);

void sched_set_growth(scheduler *s, uint32_t max_grown)
{
    s->max_grown = max_grown > s->max_tasks ? max_grown : s->max_tasks;
}

cubec_status sched_commit(scheduler *s, uint32_t slot)
{
    sched_queue *q = &s->queues[slot];
    q->count++;
    /* A queue's first task starts a fresh count, however the queue was emptied before. */
    if (q->count == 1) q->limit = s->max_tasks;
    if (q->count < q->limit) return NULL;
    if (q->count + s->max_tasks <= s->max_grown && s->backend.busy &&
        s->backend.busy(s->backend.user)) {
        q->limit += s->max_tasks;
        return NULL;
    }
    if (s->strategy == SCHED_SEQUENTIAL) return execute(s, &slot, 1, 0, slot);
    /* Interleave: the full slot goes first, with every slot that has work pending, so that the
     * chains of concurrent streams share barriers in one command buffer. The commit returns an
     * error only when it lost the caller's own work: when the slots are submitted one by one
     * (one needs isolation), another slot's failed submission stays on that slot's outputs. */
    uint32_t ids[64];
    uint32_t n = 0;
    ids[n++] = slot;
    for (uint32_t i = 0; i < s->slots && n < 64; i++)
        if (i != slot && s->queues[i].count) ids[n++] = i;
    return execute(s, ids, n, 0, slot);
}

/* Records every task of the listed queues, round-robin into one submission or one queue after
 * the other, each in its own submission. Returns the error that lost work of `own` (a slot, or
 * SCHED_NO_SLOT: any error), and drops whatever a record error left unrecorded, naming it. */
static cubec_status drain(scheduler *s, const uint32_t *order, uint32_t n, int interleave,
                          uint32_t mode, uint32_t own)
{
    cubec_status first = NULL, own_err = NULL;
    if (interleave) {
        uint32_t recorded = 0;
        for (int more = 1; more && !first;) {
            more = 0;
            for (uint32_t i = 0; i < n && !first; i++) {
                sched_queue *q = &s->queues[order[i]];
                if (!q->count) continue;
                more = 1;
                first = s->backend.record(s->backend.user, order[i], pop(s, q));
                recorded++;
            }
        }
        if (!first && recorded) first = s->backend.submit(s->backend.user, mode);
        own_err = first ? status_clone(first) : NULL; /* one submission: everyone's */
    } else {
        /* A failed submission is charged to the work in it (the backend taints its outputs);
         * the queues after it hold unrelated work, still submitted rather than dropped as if it
         * had been part of the failed one. A record error stops the drain. */
        for (uint32_t i = 0; i < n; i++) {
            sched_queue *q = &s->queues[order[i]];
            uint32_t here = 0;
            cubec_status e = NULL;
            while (q->count && !e) {
                e = s->backend.record(s->backend.user, order[i], pop(s, q));
                here++;
            }
            int recorded_all = !e;
            if (!e && here) e = s->backend.submit(s->backend.user, mode);
            if (e && order[i] == own && !own_err) own_err = status_clone(e);
            if (e && !first)
                first = e;
            else
                cubec_status_free(e);
            if (!recorded_all) break;
        }
    }
    if (first)
        for (uint32_t i = 0; i < n; i++) {
            sched_queue *q = &s->queues[order[i]];
            /* The caller's own work dropped unrecorded: lost with the drain. */
            if (q->count && order[i] == own && !own_err) own_err = status_clone(first);
            discard_queue(s, q, first);
        }
    if (own == SCHED_NO_SLOT) {
        cubec_status_free(own_err);
        return first;
    }
    cubec_status_free(first);
    return own_err;
}

cubec_status sched_execute(scheduler *s, const uint32_t *slots, uint32_t count)
{
    return sched_execute_mode(s, slots, count, 0);
}

cubec_status sched_execute_mode(scheduler *s, const uint32_t *slots, uint32_t count, uint32_t mode)
{
    return execute(s, slots, count, mode, SCHED_NO_SLOT);
}

static cubec_status execute(scheduler *s, const uint32_t *slots, uint32_t count, uint32_t mode,
                            uint32_t own)
{
    uint32_t order[64];
    uint32_t n = 0;
    int isolation = 0;
    cubec_status err = NULL;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t slot = slots[i];
        int seen = 0;
        for (uint32_t j = 0; j < n; j++)
            seen |= order[j] == slot;
        if (seen || !s->queues[slot].count) continue;
        if (n == sizeof order / sizeof order[0]) {
            /* More distinct slots than fit: drain what is collected, then go on (the next
             * slots hold other work, as after a failed submission within one drain). */
            cubec_status e =
                drain(s, order, n, s->strategy == SCHED_INTERLEAVE && !isolation, mode, own);
            if (e && !err)
                err = e;
            else
                cubec_status_free(e);
            n = 0;
            isolation = 0;
        }
        order[n++] = slot;
        isolation |= s->queues[slot].requires_isolation;
    }
    if (!n) return err;
    s->drains++;
    int interleave = s->strategy == SCHED_INTERLEAVE && !isolation;
    if (log_enabled(LOG_DEBUG, LOG_SYS_STREAMS)) {
        char list[256];
        size_t at = 0;
        for (uint32_t i = 0; i < n && at + 16 < sizeof list; i++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%u(%u)", i ? " " : "", order[i],
                                   s->queues[order[i]].count);
        LOG(LOG_DEBUG, LOG_SYS_STREAMS, "%s slots [%s] (slot(tasks))",
            interleave ? "interleaving" : "draining one by one", list);
    }
    cubec_status e = drain(s, order, n, interleave, mode, own);
    if (!err) return e;
    cubec_status_free(e);
    return err;
}

cubec_status sched_execute_all(scheduler *s)
{
    return sched_execute_all_mode(s, 0);
}

cubec_status sched_execute_all_mode(scheduler *s, uint32_t mode)
{
    for (uint32_t first = 0; first < s->slots; first += 64) {
        uint32_t ids[64], n = 0;
        for (uint32_t i = first; i < s->slots && n < 64; i++)
            if (s->queues[i].count) ids[n++] = i;
        RETURN_IF_ERROR(sched_execute_mode(s, ids, n, mode));
    }
    return NULL;
}
