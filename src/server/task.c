/* The task machinery: reserving a task on a slot's queue, queueing it (or handing it to a graph
 * capture), recording it into the open batch when the scheduler drains the slot, and dropping it
 * with what it holds. Launches, copies, fills and timestamps are all tasks; what differs by kind
 * is in the kind table (task.h) and in the hooks the components above set (task_hooks), so this
 * file calls nothing above it. The warm path allocates nothing. */
#include "server/task.h"
#include "base/log.h"
#include "server/buffers.h"
#include "server/device.h"
#include "server/failures.h"
#include "server/hazards.h"
#include "server/host_ring.h"
#include "server/kernels.h"
#include "server/launch_timing.h"
#include "server/run_mode.h"
#include "server/streams.h"
#include "server/submission.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cubec_status server_record_dispatch(cubec_device *d, const recorder *rec, const pipeline_entry *e,
                                    const gpu_binding *bindings, uint32_t n,
                                    const gpu_binding *info_buffer, const void *push_data)
{
    return server_record_dispatch_images(d, rec, e, bindings, n, info_buffer, push_data, NULL, 0);
}

cubec_status server_record_dispatch_images(cubec_device *d, const recorder *rec,
                                           const pipeline_entry *e, const gpu_binding *bindings,
                                           uint32_t n, const gpu_binding *info_buffer,
                                           const void *push_data, const gpu_image_binding *images,
                                           uint32_t ni)
{
    gpu_cmd *cmd = rec->cmd;
    bind_cache *bc = rec->bound;
    if (bc->pipeline != e->pipeline) {
        gpu_cmd_bind_pipeline(cmd, e->pipeline);
        bc->pipeline = e->pipeline;
    }
    const gpu_binding *info = e->refl.has_info_buffer ? info_buffer : NULL;
    uint32_t count = n + (info ? 1 : 0);
    if (ni) {
        /* Everything in one update (a set without push descriptors is written whole); the
         * cache, which holds buffers only, no longer says what is bound. */
        gpu_cmd_bind_resources(cmd, e->pipeline, bindings, n, info, images, ni);
        bc->descriptors_for = NULL;
    } else if (count && d->gpu->caps.push_descriptors) {
        /* Pushed descriptors stay bound for later dispatches of the same layout. */
        int bound = bc->descriptors_for == e->pipeline && bc->descriptor_count == count &&
                    memcmp(bc->descriptors, bindings, n * sizeof *bindings) == 0 &&
                    (!info || memcmp(&bc->descriptors[n], info, sizeof *info) == 0);
        if (!bound) {
            gpu_cmd_bind_buffers(cmd, e->pipeline, bindings, n, info);
            bc->descriptors_for = e->pipeline;
            bc->descriptor_count = count;
            memcpy(bc->descriptors, bindings, n * sizeof *bindings);
            if (info) bc->descriptors[n] = *info;
        }
    } else if (count) {
        /* No push descriptors: a set from the command buffer's pools (reset when it is recorded
         * again, so the warm path still allocates nothing from the host heap). */
        gpu_cmd_bind_buffers(cmd, e->pipeline, bindings, n, info);
    }
    if (e->info_in_push &&
        (bc->push_for != e->pipeline || bc->push_size != e->info_size ||
         e->info_size > sizeof bc->push || memcmp(bc->push, push_data, e->info_size) != 0)) {
        gpu_cmd_push_constants(cmd, e->pipeline, push_data, e->info_size);
        /* Larger blocks than the cache holds are pushed every time. */
        int cached = e->info_size <= sizeof bc->push;
        bc->push_for = cached ? e->pipeline : NULL;
        bc->push_size = e->info_size;
        if (cached) memcpy(bc->push, push_data, e->info_size);
    }
    return NULL;
}

const task_kind_info task_kinds[TASK_KIND_COUNT] = {
    [TASK_LAUNCH] = {NULL, 0, 0},
    [TASK_TRANSFER_COPY] = {"cubec.copy", 2, 1u << 0},
    [TASK_TRANSFER_FILL] = {"cubec.fill", 1, 0},
    [TASK_TIMESTAMP] = {"cubec.timestamp", 0, 0},
    [TASK_IMAGE_INIT] = {"cubec.image_init", 1, 0},
    [TASK_IMAGE_COPY] = {"cubec.image_copy", 2, 1u << 0},
};

/* Releases what a task holds (its references on the allocations it binds). Inlined: recording
 * ends with it (a call cost every recorded task ~24 instructions). */
__attribute__((always_inline)) static inline void discard_task(cubec_device *d, task *t)
{
    uint32_t n = task_bindings(t);
    for (uint32_t i = 0; i < n; i++)
        server_alloc_release(d, task_b(d->streams->slots, t, i)->alloc);
    if (t->indirect.alloc) server_alloc_release(d, t->indirect.alloc);
}

/* Marks what a queued task will write and read, for the alignment of later users on other
 * slots. */
static void note_queued_uses(const cubec_device *d, task *t, uint32_t slot)
{
    uint32_t n = task_bindings(t);
    for (uint32_t i = 0; i < n; i++) {
        alloc_obj *a = task_b(d->streams->slots, t, i)->alloc;
        if (t->write_mask & (1u << i)) a->queued_writer = slot;
        if (task_reads(t, i)) a->queued_readers |= 1ull << (slot % 64);
    }
    if (t->indirect.alloc) t->indirect.alloc->queued_readers |= 1ull << (slot % 64);
}

cubec_status server_queue_task(cubec_device *d, uint32_t slot, task *t)
{
    const slot_state *ss = &d->streams->slots[slot];
    if (ss->capture == CAPTURE_RECORDING && ss->capture_owner == t->stream) {
        /* The reserved record is not committed: the slot's queue stays as it was. Work of
         * other streams on the slot is queued and runs: the window is the capturing stream's. */
        cubec_status err = d->tasks->capture(d, slot, t);
        discard_task(d, t);
        return err;
    }
    note_queued_uses(d, t, slot);
    return server_commit_task(d, slot);
}

cubec_status server_align(cubec_device *d, uint32_t slot, buffer_obj *const *bufs, uint32_t n,
                          uint32_t write_mask, const buffer_obj *indirect)
{
    /* Every real use goes through here (launches, and copies and fills without a kernel): the
     * first one gives a dry run's pages their memory. */
    RETURN_IF_ERROR(server_back_buffers(d, bufs, n, indirect));
    uint32_t *slots = d->streams->align_slots;
    uint32_t count = 0;
    for (uint32_t k = 0; k < n; k++)
        count = server_align_slots(d, slot, bufs[k]->alloc, (int)((write_mask >> k) & 1), slots,
                                   count, d->streams->max_streams);
    if (indirect)
        count =
            server_align_slots(d, slot, indirect->alloc, 0, slots, count, d->streams->max_streams);
    if (!count) return NULL;
    LOG(LOG_DEBUG, LOG_SYS_STREAMS,
        "slot %u uses buffers of %u other slot(s): submitting them first", slot, count);
    return server_drain(d, slots, count, 0);
}

const unsigned char *server_task_info(const cubec_device *d, const task *t)
{
    return t->info_size > TASK_INLINE_INFO ? d->streams->slots[t->slot].arena + t->info_at
                                           : t->info;
}

/* Tells the component that watches failed tasks (profiles open on the slot take the failure). */
static void tell_failed(cubec_device *d, uint32_t slot, failure *f)
{
    if (d->tasks->failed) d->tasks->failed(d, slot, f);
}

/* Taints what the task would have written with `f` (the task did not run). */
static void taint_outputs(const cubec_device *d, task *t, failure *f)
{
    uint32_t n = task_bindings(t);
    for (uint32_t i = 0; i < n; i++)
        if ((t->write_mask >> i) & 1) {
            bound_range *r = task_b(d->streams->slots, t, i);
            server_taint(r->alloc, bound_start(r), bound_bytes(r), f);
            r->alloc->queued_writer = NO_SLOT;
        }
}

/* Spec 5.4 rule 3, skip don't taint: a task whose input (the indirect count included) carries a
 * failure must not run. Returns the failure its outputs take (a link of the chain naming the task
 * and the input; the caller releases it), or NULL when every input is good. */
failure *server_task_input_failure(const cubec_device *d, const task *t)
{
    uint32_t n = task_bindings(t);
    for (uint32_t i = 0; i <= n; i++) {
        const bound_range *r = i < n ? task_b(d->streams->slots, t, i) : &t->indirect;
        int input = i < n ? task_reads(t, i) : r->alloc != NULL;
        if (!input || !r->alloc) continue;
        failure *cause = server_failure_of(r->alloc, bound_start(r), bound_bytes(r));
        if (!cause) continue;
        return failure_chain(cause,
                             "launch \"%s\" on stream %" PRIu64
                             " was skipped because its %s buffer #%" PRIu64 " was not written",
                             task_name(t), t->stream, i < n ? "input" : "indirect-count",
                             r->alloc->number);
    }
    return NULL;
}

/* Skips a task whose input failed: its outputs and the profiles open on its slot take the
 * failure. Returns 1 when skipped. */
static int skip_if_input_failed(cubec_device *d, task *t)
{
    failure *f = server_task_input_failure(d, t);
    if (!f) return 0;
    taint_outputs(d, t, f);
    tell_failed(d, t->slot, f);
    failure_release(f);
    d->sub->stats.skipped++;
    return 1;
}

/* The task could not be recorded: what it would have written carries the error (the caller
 * still gets the error: it stops the drain). */
static cubec_status record_failed(cubec_device *d, task *t, cubec_status err)
{
    failure *f =
        failure_new(cubec_status_code(err), "launch \"%s\" on stream %" PRIu64 " failed: %s",
                    task_name(t), t->stream, cubec_status_message(err));
    taint_outputs(d, t, f);
    tell_failed(d, t->slot, f);
    failure_release(f);
    return err;
}

void server_drop_task(cubec_device *d, task *t, cubec_status cause)
{
    /* The scheduler dropped it without recording (something earlier in the same drain failed,
     * or the device closed): its outputs must not read back as if written, and they name what
     * stopped the drain. */
    failure *f = cause ? failure_new(cubec_status_code(cause),
                                     "launch \"%s\" on stream %" PRIu64
                                     " was dropped: the drain it was queued in failed: %s",
                                     task_name(t), t->stream, cubec_status_message(cause))
                       : failure_new(CUBEC_INTERNAL,
                                     "launch \"%s\" on stream %" PRIu64
                                     " was dropped: the device closed before it was submitted",
                                     task_name(t), t->stream);
    taint_outputs(d, t, f);
    tell_failed(d, t->slot, f);
    if (d->tasks->dropped[t->kind]) d->tasks->dropped[t->kind](d, t, f);
    failure_release(f);
    discard_task(d, t);
}

cubec_status server_emit_task(cubec_device *d, const recorder *rec, const task *t,
                              const gpu_binding *info_buffer, batch *timed_in)
{
    gpu_cmd *cmd = rec->cmd;
    hazard_range ranges[33]; /* 32 bindings (buffers and images) and the indirect count */
    /* While the program holds a guard (cubec_buffer_raw), any command may reach the guarded
     * bytes through their device address, which no binding names and so no hazard range holds:
     * each command then comes after every earlier one (cubec.h, cubec_buffer_raw). One load when
     * no guard is held. */
    if (d->buffers->guards.live) sub_barrier_all_in(d, rec->hazards, cmd);
    if (t->kind == TASK_TRANSFER_COPY) {
        gpu_mem *sp = t->b[0].alloc->mem.page, *tp = t->b[1].alloc->mem.page;
        ranges[0] = (hazard_range){sp, t->b[0].offset, t->b[0].size, 0};
        ranges[1] = (hazard_range){tp, t->b[1].offset, t->b[1].size, 1};
        sub_hazards_in(d, rec->hazards, cmd, ranges, 2, SUB_TRANSFER);
        int timed = timed_in && timing_launch_begin(d, timed_in, t);
        gpu_cmd_copy(cmd, sp, t->b[0].offset, tp, t->b[1].offset, t->b[0].size);
        if (timed) timing_launch_end(d, timed_in);
        return NULL;
    }
    if (t->kind == TASK_TRANSFER_FILL) {
        gpu_mem *tp = t->b[0].alloc->mem.page;
        ranges[0] = (hazard_range){tp, t->b[0].offset, t->b[0].size, 1};
        sub_hazards_in(d, rec->hazards, cmd, ranges, 1, SUB_TRANSFER);
        int timed = timed_in && timing_launch_begin(d, timed_in, t);
        gpu_cmd_fill(cmd, tp, t->b[0].offset, t->b[0].size, t->pattern);
        if (timed) timing_launch_end(d, timed_in);
        return NULL;
    }
    if (t->kind == TASK_IMAGE_INIT || t->kind == TASK_IMAGE_COPY) {
        /* An image's commands: its memory is a range of a page like a buffer's, so hazards
         * order them as copies. */
        uint32_t nb = t->kind == TASK_IMAGE_COPY ? 2 : 1;
        for (uint32_t i = 0; i < nb; i++)
            ranges[i] = (hazard_range){t->b[i].alloc->mem.page, t->b[i].offset, t->b[i].size,
                                       (int)((t->write_mask >> i) & 1)};
        sub_hazards_in(d, rec->hazards, cmd, ranges, nb, SUB_TRANSFER);
        int timed = timed_in && timing_launch_begin(d, timed_in, t);
        if (t->kind == TASK_IMAGE_INIT) {
            gpu_cmd_image_init(cmd, t->b[0].alloc->image);
        } else {
            int to_image = t->pattern != 0;
            const bound_range *img = &t->b[to_image ? 1 : 0], *buf = &t->b[to_image ? 0 : 1];
            gpu_cmd_copy_image(cmd, img->alloc->image, buf->alloc->mem.page, buf->offset, to_image);
        }
        if (timed) timing_launch_end(d, timed_in);
        return NULL;
    }
    const pipeline_entry *e = t->entry;
    gpu_binding infos[32];
    gpu_image_binding images[GPU_MAX_RESOURCES];
    /* The bound buffers, then those reached by address (ordered, never bound), then images. Of
     * the bound buffers, those past the module's slots are not passed to the backend, and those
     * at slots it left unused are passed but not bound (the backend skips them); neither is
     * accessed, so neither orders anything. */
    uint32_t n = t->count - t->resources, bound = n - t->addressed;
    uint32_t passed = bound < e->refl.binding_count ? bound : e->refl.binding_count;
    uint32_t nr = 0;
    for (uint32_t i = 0; i < t->count; i++) {
        const bound_range *r = task_b(d->streams->slots, t, i);
        gpu_mem *p = r->alloc->mem.page;
        if (i < passed) {
            infos[i] = (gpu_binding){p, r->offset, r->size};
        } else if (i >= n) {
            uint32_t j = i - n;
            const kernel_resource *k = &e->refl.resources[j];
            int texel = k->kind == CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER ||
                        k->kind == CUBEC_RESOURCE_STORAGE_TEXEL_BUFFER;
            images[j] = (gpu_image_binding){.image = texel ? NULL : r->alloc->image,
                                            .set = k->set,
                                            .binding = k->binding,
                                            .type = (uint32_t)k->kind,
                                            .linear = (t->sampler_bits >> j) & 1u,
                                            .address = (t->sampler_bits >> (8 + 2 * j)) & 3u};
            if (texel) {
                images[j].mem = p;
                images[j].offset = r->offset;
                images[j].size = r->size;
                images[j].format = (t->texel_formats >> (4 * j)) & 15u;
            }
        }
        if (i >= bound || (i < passed && e->refl.access[i]))
            ranges[nr++] =
                (hazard_range){p, bound_start(r), bound_bytes(r), (int)((t->write_mask >> i) & 1)};
    }
    /* The samplers, after the resources with memory: no range, only a filter. */
    uint32_t ni = t->resources;
    for (; ni < e->refl.resource_count; ni++) {
        const kernel_resource *k = &e->refl.resources[ni];
        images[ni] = (gpu_image_binding){.set = k->set,
                                         .binding = k->binding,
                                         .type = GPU_RESOURCE_SAMPLER,
                                         .linear = (t->sampler_bits >> ni) & 1u,
                                         .address = (t->sampler_bits >> (8 + 2 * ni)) & 3u};
    }
    if (t->indirect.alloc)
        ranges[nr++] = (hazard_range){t->indirect.alloc->mem.page, t->indirect.offset, 12, 0};
    sub_hazards_in(d, rec->hazards, cmd, ranges, nr,
                   t->indirect.alloc ? SUB_COMPUTE_INDIRECT : SUB_COMPUTE);
    RETURN_IF_ERROR(server_record_dispatch_images(d, rec, e, infos, passed, info_buffer,
                                                  server_task_info(d, t), images, ni));
    int timed = timed_in && timing_launch_begin(d, timed_in, t);
    if (t->indirect.alloc)
        gpu_cmd_dispatch_indirect(cmd, t->indirect.alloc->mem.page, t->indirect.offset);
    else
        gpu_cmd_dispatch(cmd, t->groups[0], t->groups[1], t->groups[2]);
    if (timed) timing_launch_end(d, timed_in);
    return NULL;
}

/* Metadata beyond push constants: a slice of the ring, reused once the batch is done. Taken
 * before the batch is opened: entering a chunk that the open batch itself still uses (its
 * launches filled the ring) submits that batch and waits for it, and the launch must then
 * record into the next one, not into the batch just submitted. A launch whose metadata equals
 * the open batch's last slice reads that slice: a chain of launches with the same metadata then
 * binds its descriptors once, as it would with push constants (0.1-0.2 us a dependent launch on
 * an H200). */
int server_metadata_reuse(const bind_cache *bc, const void *bytes, uint32_t size, gpu_binding *out)
{
    if (bc->info_size != size || memcmp(bc->info_bytes, bytes, size) != 0) return 0;
    *out = bc->info;
    return 1;
}

void server_metadata_remember(bind_cache *bc, const gpu_binding *slice, const void *bytes,
                              uint32_t size)
{
    bc->info_size = 0;
    if (size > sizeof bc->info_bytes) return;
    bc->info = *slice;
    bc->info_size = size;
    memcpy(bc->info_bytes, bytes, size);
}

static cubec_status metadata_slice(cubec_device *d, const task *t, gpu_binding *out)
{
    bind_cache *bc = &d->sub->bound;
    const void *bytes = server_task_info(d, t);
    uint32_t size = t->entry->info_size;
    if (server_metadata_reuse(bc, bytes, size, out)) return NULL;
    uint64_t at;
    RETURN_IF_ERROR(
        host_ring_alloc(d, &d->rings->info, size, d->gpu->caps.metadata_alignment, &at));
    memcpy(d->rings->info.mapped + at, bytes, size);
    gpu_mem_flush(d->gpu, d->rings->info.mem, at, size);
    *out = (gpu_binding){d->rings->info.mem, at, size};
    /* Remembered for the batch the launch records into: the one open now, or the one it opens
     * next (the cache is cleared when a batch is closed, so only launches of that batch match). */
    server_metadata_remember(bc, out, bytes, size);
    return NULL;
}

/* Records a queued task into the open command buffer (called by the scheduler). */
cubec_status server_record_task(cubec_device *d, task *t)
{
    /* Kinds recorded by their own component (a timestamp: profile.c); launches never are. */
    if (t->kind != TASK_LAUNCH && d->tasks->record[t->kind]) {
        cubec_status err = d->tasks->record[t->kind](d, t);
        if (!err && d->sub->open) batch_note_stream(d->sub->open, t->stream);
        return err;
    }
    if (skip_if_input_failed(d, t)) {
        discard_task(d, t);
        return NULL;
    }
    cubec_status err = NULL;
    gpu_binding info_buffer = {0};
    if (t->kind == TASK_LAUNCH && t->entry->refl.has_info_buffer)
        err = metadata_slice(d, t, &info_buffer);
    gpu_cmd *cmd = NULL;
    if (!err) err = sub_begin(d, &cmd);
    if (!err) {
        d->streams->slots[t->slot].recorded++;
        d->sub->open->last_task = task_name(t);
        d->sub->open->last_stream = t->stream;
        batch_note_stream(d->sub->open, t->stream);
        recorder rec = {cmd, &d->sub->bound, &d->sub->hazards};
        err = server_emit_task(d, &rec, t, &info_buffer, d->timing->on ? d->sub->open : NULL);
    }
    if (err) {
        cubec_status_free(record_failed(d, t, status_clone(err)));
        discard_task(d, t);
        return err;
    }
    /* For each binding: the batch's timeline value marks the use; a write is now recorded, so
     * earlier failures on that range no longer apply (a relaunch from good inputs recovers, like
     * a host write; tasks recorded later may still taint it); and the batch holds the range until
     * it is submitted, so a lost submission taints what it would have written (the hold also
     * keeps the memory until then). */
    uint32_t n = task_bindings(t);
    for (uint32_t i = 0; i < n; i++) {
        bound_range *r = task_b(d->streams->slots, t, i);
        int write = (int)((t->write_mask >> i) & 1);
        r->alloc->last_use = d->sub->next_value;
        if (write) {
            r->alloc->last_write = d->sub->next_value;
            r->alloc->queued_writer = NO_SLOT;
            server_untaint(r->alloc, bound_start(r), bound_bytes(r));
        }
        if (!err)
            err = server_hold(d, d->sub->open, r->alloc, bound_start(r), bound_bytes(r), write);
    }
    if (t->indirect.alloc) t->indirect.alloc->last_use = d->sub->next_value;
    d->sub->stats.tasks++;
    discard_task(d, t); /* the task's references: the holds and last_use keep the memory */
    if (err) return err;
    return sub_task_done(d);
}

static cubec_status backend_record(void *user, uint32_t slot, void *t)
{
    cubec_device *d = user;
    d->streams->slots[slot].last_value = d->sub->next_value;
    return server_record_task(d, t);
}

static cubec_status backend_submit(void *user, uint32_t mode)
{
    cubec_device *d = user;
    /* A drain may have recorded the tasks of slots other than the ones asked for (Interleave
     * drains every slot with pending work): recycle the metadata arena of every slot it emptied. */
    for (uint32_t i = 0; i < d->streams->max_streams; i++)
        if (d->streams->slots[i].arena_used && !sched_pending(&d->streams->sched, i))
            d->streams->slots[i].arena_used = 0;
    if (mode & DRAIN_KEEP_OPEN) return NULL;
    return sub_flush(d, (mode & DRAIN_FOR_HOST) != 0);
}

/* Two submissions or more that the GPU has not finished: one runs, the next is queued behind it,
 * so a full queue can wait for more tasks without the GPU idling (a submission boundary costs
 * an H200's queue ~0.4 us a launch in batches of 32). The timeline read is a memory read on
 * NVIDIA (12 ns). */
static int backend_busy(void *user)
{
    cubec_device *d = user;
    uint64_t done = 0;
    cubec_status err = d->gpu->ops->timeline_value(d->gpu, &done);
    if (err) {
        cubec_status_free(err); /* the next wait reports a lost device */
        return 0;
    }
    return d->sub->next_value >= done + 3;
}

static void backend_discard(void *user, void *t, cubec_status cause)
{
    server_drop_task(user, t, cause);
}

sched_backend server_task_backend(cubec_device *d)
{
    return (sched_backend){.user = d,
                           .record = backend_record,
                           .submit = backend_submit,
                           .discard = backend_discard,
                           .busy = backend_busy};
}
