/* Logical streams and their slots (spec 2.1-2.2), and draining their queues through the
 * scheduler.
 *
 * A stream id packs the device tag (16 bits) over a 48-bit number. Numbers come from one
 * process-wide counter, so every thread's default stream and every cubec_stream_new stream is
 * distinct; the tag makes an id of another device detectable. The slot is number % max_streams.
 * A device remembers the numbers of the ids it handed out (cubec_stream_new,
 * cubec_stream_get_current) as ranges, a few bytes for a run of streams made one after another, and
 * accepts an explicit id only when it names one of them: a made-up number under the device's tag
 * would otherwise fold onto some slot, possibly one that records another stream's graph. The
 * scheduler's backend (what recording a queued task means) is the task machinery's, handed in at
 * init (server/task.c). */
#include "server/streams.h"
#include "base/log.h"
#include "server/buffers.h"
#include "server/device.h"
#include "server/health.h"
#include "server/submission.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>

static atomic_uint_fast64_t stream_numbers = 1;
static _Thread_local uint64_t thread_stream_number;

static uint64_t next_number(void)
{
    return atomic_fetch_add(&stream_numbers, 1);
}

static cubec_stream make_id(const cubec_device *d, uint64_t number)
{
    return ((uint64_t)d->tag << 48) | (number & 0xffffffffffffull);
}

/* The number the calling thread's current stream resolves to. */
static uint64_t current_number(const cubec_device *d)
{
    if (d->streams->single) return 0;
    if (!thread_stream_number) thread_stream_number = next_number();
    return thread_stream_number;
}

cubec_status server_stream_resolve(cubec_device *d, cubec_stream stream, const char *fn,
                                   stream_ref *out)
{
    uint64_t number;
    if (stream == CUBEC_STREAM_CURRENT) {
        number = current_number(d);
    } else {
        if ((uint16_t)(stream >> 48) != d->tag)
            return INVALID_ARG("%s: stream 0x%016" PRIx64
                               " belongs to another device or was not made by cubec_stream_new",
                               fn, stream);
        number = stream & 0xffffffffffffull;
        if (!range_set_has(&d->streams->issued, number))
            return INVALID_ARG("%s: stream 0x%016" PRIx64
                               " was not created by cubec_stream_new on this device (nor returned "
                               "by cubec_stream_get_current): its number %" PRIu64
                               " names no stream of this device",
                               fn, stream, number);
    }
    out->slot = (uint32_t)(number % d->streams->max_streams);
    out->number = number;
    return NULL;
}

/* The id of `number`, remembered as handed out by this device. */
static cubec_status hand_out(cubec_device *d, uint64_t number, cubec_stream *out)
{
    if (range_set_add(&d->streams->issued, number))
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (the device's stream ids)");
    *out = make_id(d, number);
    return NULL;
}

cubec_status server_stream_current(cubec_device *d, cubec_stream *out)
{
    return hand_out(d, current_number(d), out);
}

cubec_status server_stream_new(cubec_device *d, cubec_stream *out)
{
    return hand_out(d, next_number(), out);
}

cubec_status server_streams_init(cubec_device *d, sched_backend be, size_t task_size)
{
    d->streams->slots = calloc(d->streams->max_streams, sizeof *d->streams->slots);
    d->streams->align_slots = calloc(d->streams->max_streams, sizeof *d->streams->align_slots);
    if (!d->streams->slots || !d->streams->align_slots)
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (stream slots)");
    sched_strategy strategy = d->config.sequential_streams ? SCHED_SEQUENTIAL : SCHED_INTERLEAVE;
    RETURN_IF_ERROR(sched_init(&d->streams->sched, d->streams->max_streams, task_size,
                               d->sub->tasks_max, strategy, be));
    /* [device] batch_growth = auto: on GPUs, whose queue idles between submissions; a CPU
     * device's cores run the work, and its runs stay reproducible batch by batch (on: also
     * there, which the tests use). */
    if (config_auto_on(d->config.batch_growth, d->info.type != CUBEC_DEVICE_TYPE_CPU))
        sched_set_growth(&d->streams->sched, d->sub->batch_task_cap);
    return NULL;
}

/* Drops whatever is still queued (their references go back first) and the arenas. The slot array
 * stays: the memory pools in it are destroyed after this. */
void server_streams_destroy(cubec_device *d)
{
    range_set_free(&d->streams->issued);
    if (d->streams->sched.queues) sched_destroy(&d->streams->sched);
    for (uint32_t i = 0; d->streams->slots && i < d->streams->max_streams; i++) {
        free(d->streams->slots[i].arena);
        d->streams->slots[i].arena = NULL;
    }
}

/* Drains (records and submits) the queues of `slots`. Waits inside keep the lock: the
 * scheduler holds tasks it has taken off the queues, so every wait a recording can reach passes
 * WAIT_KEEP_LOCK (a command buffer: take_batch; the metadata ring: host_ring_alloc; a release
 * that cannot defer: server_alloc_release). */
cubec_status server_drain(cubec_device *d, const uint32_t *slots, uint32_t n, uint32_t mode)
{
    cubec_status err = sched_execute_mode(&d->streams->sched, slots, n, mode);
    for (uint32_t i = 0; i < n; i++)
        if (!sched_pending(&d->streams->sched, slots[i]))
            d->streams->slots[slots[i]].arena_used = 0;
    return server_note_error(d, err);
}

cubec_status server_drain_all(cubec_device *d, uint32_t mode)
{
    cubec_status err = sched_execute_all_mode(&d->streams->sched, mode);
    for (uint32_t i = 0; i < d->streams->max_streams; i++)
        d->streams->slots[i].arena_used = 0;
    return server_note_error(d, err);
}

cubec_status server_commit_task(cubec_device *d, uint32_t slot)
{
    cubec_status err = sched_commit(&d->streams->sched, slot);
    if (!sched_pending(&d->streams->sched, slot)) d->streams->slots[slot].arena_used = 0;
    return server_note_error(d, err);
}

/* Before `slot` uses `a`: the work queued on its owner's slot, and on the slot of the last queued
 * task that writes it, must be submitted first (spec 2.3 "align"). Collects those slots. */
static uint32_t add_slot(cubec_device *d, uint32_t slot, uint32_t s, uint32_t *slots, uint32_t n,
                         uint32_t room)
{
    if (s == NO_SLOT || s == slot || n >= room || !sched_pending(&d->streams->sched, s)) return n;
    for (uint32_t j = 0; j < n; j++)
        if (slots[j] == s) return n;
    slots[n++] = s;
    return n;
}

uint32_t server_align_slots(cubec_device *d, uint32_t slot, const alloc_obj *a, int write,
                            uint32_t *slots, uint32_t n, uint32_t room)
{
    n = add_slot(d, slot, a->slot, slots, n, room);
    n = add_slot(d, slot, a->queued_writer, slots, n, room);
    /* Only the set bits: this runs for every written binding of every launch. */
    uint64_t readers = write ? a->queued_readers : 0;
    for (; readers; readers &= readers - 1)
        for (uint32_t s = (uint32_t)__builtin_ctzll(readers); s < d->streams->max_streams; s += 64)
            n = add_slot(d, slot, s, slots, n, room);
    return n;
}

/* Everything a host access of `a` from `slot` must see: the caller's own queue and the aligned
 * slots, recorded and submitted. */
cubec_status server_drain_for_host(cubec_device *d, uint32_t slot, const alloc_obj *a, int write)
{
    uint32_t *slots = d->streams->align_slots;
    slots[0] = slot;
    uint32_t n = server_align_slots(d, slot, a, write, slots, 1, d->streams->max_streams);
    if (n > 1)
        LOG(LOG_DEBUG, LOG_SYS_STREAMS, "slot %u reads or writes memory of slot %u: draining both",
            slot, slots[1]);
    return server_drain(d, slots, n, 0);
}
