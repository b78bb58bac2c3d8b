/* Copies between devices: the host-staged path (see peer.h). The links are process-wide state
 * (documented next to the device registry): one per ordered pair of open devices, each device's
 * import of the link's host memory owned and freed by that device. */
#include "server/peer.h"
#include "base/log.h"
#include "server/device.h"
#include "server/external.h"
#include "server/failures.h"
#include "server/hazards.h"
#include "server/health.h"
#include "server/submission.h"
#include "server/submitter.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Two slots: chunk i goes through slot i % 2. */
#define PEER_SLOTS 2

struct peer_link {
    cubec_device *src, *dst; /* NULL once that device closed (its import freed) */
    unsigned char *bytes;    /* PEER_SLOTS chunks */
    uint64_t chunk;
    gpu_mem *src_mem, *dst_mem; /* the bytes as each device's transfer buffer */
    /* Per slot: the destination's timeline value of the last batch that copied out of it (the
     * source's next copy into the slot waits for it). */
    uint64_t dst_done[PEER_SLOTS];
    uint32_t next_slot;
    struct peer_link *next;
};

/* Guards the list; taken after device locks, never before. */
static pthread_mutex_t links_lock = PTHREAD_MUTEX_INITIALIZER;
static peer_link *links;

static uint64_t round_up(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

static void link_free_bytes(peer_link *l)
{
    free(l->bytes);
    free(l);
}

cubec_status server_peer_link(cubec_device *src, cubec_device *dst, peer_link **out)
{
    pthread_mutex_lock(&links_lock);
    for (peer_link *l = links; l; l = l->next)
        if (l->src == src && l->dst == dst) {
            pthread_mutex_unlock(&links_lock);
            *out = l;
            return NULL;
        }
    pthread_mutex_unlock(&links_lock);
    uint64_t a = src->gpu->caps.host_import_alignment, b = dst->gpu->caps.host_import_alignment;
    if (!a || !b)
        return status_make(CUBEC_UNSUPPORTED,
                           "no host-staged path from device %p to device %p: the %s cannot "
                           "import host memory (%s)",
                           (void *)src, (void *)dst, !a ? "source" : "destination",
                           gpu_no_host_import(!a ? src->gpu : dst->gpu));
    uint64_t align = a > b ? a : b;
    if (align < 64) align = 64;
    uint64_t chunk = round_up((uint64_t)src->config.multi_chunk_bytes, align);
    peer_link *l = calloc(1, sizeof *l);
    if (l) l->bytes = aligned_alloc(align, chunk * PEER_SLOTS);
    if (!l || !l->bytes) {
        free(l);
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "host out of memory (%" PRIu64 " bytes of peer-copy staging)",
                           chunk * PEER_SLOTS);
    }
    l->chunk = chunk;
    cubec_status err = gpu_mem_import(src->gpu, l->bytes, chunk * PEER_SLOTS, &l->src_mem);
    if (!err) err = gpu_mem_import(dst->gpu, l->bytes, chunk * PEER_SLOTS, &l->dst_mem);
    if (err) {
        if (l->src_mem) gpu_mem_free(src->gpu, l->src_mem);
        link_free_bytes(l);
        return status_annotate(err, "importing the peer-copy staging of %" PRIu64 " bytes",
                               chunk * PEER_SLOTS);
    }
    l->src = src;
    l->dst = dst;
    pthread_mutex_lock(&links_lock);
    l->next = links;
    links = l;
    pthread_mutex_unlock(&links_lock);
    LOG(LOG_INFO, LOG_SYS_DEVICE, "peer link %p -> %p: host-staged, 2 chunks of %" PRIu64 " bytes",
        (void *)src, (void *)dst, chunk);
    *out = l;
    return NULL;
}

uint64_t server_peer_chunk(const peer_link *l)
{
    return l->chunk;
}

/* What a failed drain leaves: a lost device is an error of the call; any other failure was
 * attached to the memory its work would have written, which the chunk then carries over. */
static cubec_status drained(cubec_device *d, cubec_status err)
{
    if (!err) return NULL;
    if (d->lost) return err;
    cubec_status_free(err);
    return NULL;
}

/* Records a copy between a buffer's page and the link's memory into `d`'s open batch. */
static cubec_status record_copy(cubec_device *d, stream_ref s, alloc_obj *a, uint64_t at,
                                gpu_mem *staging, uint64_t staging_at, uint64_t size, int to_buffer)
{
    gpu_cmd *cmd;
    RETURN_IF_ERROR(sub_begin(d, &cmd));
    batch_note_stream(d->sub->open, s.number);
    hazard_range r[2] = {{a->mem.page, at, size, to_buffer},
                         {staging, staging_at, size, !to_buffer}};
    /* A guarded allocation may have been reached through its device address: after everything. */
    if (a->raw_guards) sub_barrier_all_in(d, &d->sub->hazards, cmd);
    sub_hazards(d, cmd, r, 2, SUB_TRANSFER);
    if (to_buffer)
        gpu_cmd_copy(cmd, staging, staging_at, a->mem.page, at, size);
    else
        gpu_cmd_copy(cmd, a->mem.page, at, staging, staging_at, size);
    a->last_use = d->sub->next_value;
    if (to_buffer) {
        a->last_write = d->sub->next_value;
        RETURN_IF_ERROR(server_hold(d, d->sub->open, a, at, size, 1));
    }
    d->streams->slots[s.slot].recorded++;
    d->streams->slots[s.slot].last_value = d->sub->next_value;
    return NULL;
}

cubec_status server_peer_copy_chunk(peer_link *l, stream_ref src_stream, alloc_obj *a, uint64_t at,
                                    stream_ref dst_stream, alloc_obj *dst_alloc, uint64_t dst_at,
                                    uint64_t size)
{
    cubec_device *src = l->src, *dst = l->dst;
    uint32_t slot = l->next_slot;
    uint64_t staging_at = (uint64_t)slot * l->chunk;
    /* The source: after the work queued for its bytes, unless they carry a failure. */
    RETURN_IF_ERROR(drained(src, server_drain_for_host(src, src_stream.slot, a, 0)));
    failure *carried = server_failure_of(a, at, size), *own = NULL;
    uint64_t sent = 0;
    if (!carried) {
        RETURN_IF_ERROR(record_copy(src, src_stream, a, at, l->src_mem, staging_at, size, 0));
        sent = src->sub->next_value;
        /* Once the destination copied the slot's last chunk out (a value of its timeline). */
        cubec_status err = sub_flush_gated(src, l->dst_done[slot] ? dst : NULL, l->dst_done[slot]);
        if (err) {
            if (src->lost) return err;
            /* The batch held the source's writers (tainted now) or only this copy. */
            carried = server_failure_of(a, at, size);
            own = carried
                      ? NULL
                      : failure_new(cubec_status_code(err), "the submission of its work failed: %s",
                                    cubec_status_message(err));
            cubec_status_free(err);
        }
    }
    if (own)
        carried = own;
    else if (carried)
        carried = failure_retain(carried);
    /* The destination: after the work queued on its bytes; the copy out of the slot waits for
     * the source's batch of this chunk. */
    cubec_status err = drained(dst, server_drain_for_host(dst, dst_stream.slot, dst_alloc, 1));
    if (err || carried) {
        if (carried && !err) {
            failure *f = failure_chain(carried,
                                       "a peer copy from buffer #%" PRIu64
                                       " of another device was not made because its source "
                                       "was not written",
                                       a->number);
            server_taint(dst_alloc, dst_at, size, f);
            failure_release(f);
        }
        if (carried) failure_release(carried);
        return err;
    }
    RETURN_IF_ERROR(
        record_copy(dst, dst_stream, dst_alloc, dst_at, l->dst_mem, staging_at, size, 1));
    uint64_t received = dst->sub->next_value;
    server_untaint(dst_alloc, dst_at, size);
    RETURN_IF_ERROR(sub_flush_gated(dst, src, sent));
    l->dst_done[slot] = received;
    l->next_slot = (slot + 1) % PEER_SLOTS;
    return NULL;
}

cubec_status server_peer_external_source(cubec_device *d, stream_ref s, alloc_obj *a, uint64_t at,
                                         uint64_t size, uint64_t *out_value, failure **out_carried)
{
    *out_value = 0;
    *out_carried = NULL;
    RETURN_IF_ERROR(drained(d, server_drain_for_host(d, s.slot, a, 0)));
    failure *f = server_failure_of(a, at, size);
    if (f) {
        *out_carried = failure_retain(f);
        return NULL;
    }
    uint64_t value = 0;
    RETURN_IF_ERROR(server_stream_hand_out(d, s, &a, 1, &value));
    /* Writers on other streams were drained into batches the hand-out submitted. */
    *out_value = value > a->last_write ? value : a->last_write;
    return NULL;
}

cubec_status server_peer_external_dest(cubec_device *d, stream_ref s, alloc_obj *b, uint64_t at,
                                       uint64_t size, const failure *carried, uint64_t src_number,
                                       uint64_t *out_value)
{
    *out_value = 0;
    RETURN_IF_ERROR(drained(d, server_drain_for_host(d, s.slot, b, 1)));
    if (carried) {
        failure *f = failure_chain(carried,
                                   "a peer copy from buffer #%" PRIu64
                                   " of another device was not made because its source was not "
                                   "written",
                                   src_number);
        server_taint(b, at, size, f);
        failure_release(f);
        return NULL;
    }
    uint64_t value = 0;
    RETURN_IF_ERROR(server_stream_hand_out(d, s, &b, 1, &value));
    *out_value = value > b->last_use ? value : b->last_use;
    return NULL;
}

void server_peer_external_landed(cubec_device *d, stream_ref s, alloc_obj *b, uint64_t at,
                                 uint64_t size)
{
    uint64_t value = d->streams->slots[s.slot].inbound_after;
    if (value > b->last_write) b->last_write = value;
    if (value > b->last_use) b->last_use = value;
    server_untaint(b, at, size);
}

void server_peer_close(cubec_device *d)
{
    /* Other devices' submission threads may still wait on this timeline: it has finished, so
     * they pass at once, but its objects must outlive their waits. */
    submitter_wait_gates(d);
    pthread_mutex_lock(&links_lock);
    for (peer_link **p = &links; *p;) {
        peer_link *l = *p;
        if (l->src == d) {
            gpu_mem_free(d->gpu, l->src_mem);
            l->src_mem = NULL;
            l->src = NULL;
        }
        if (l->dst == d) {
            gpu_mem_free(d->gpu, l->dst_mem);
            l->dst_mem = NULL;
            l->dst = NULL;
        }
        if (!l->src && !l->dst) {
            *p = l->next;
            link_free_bytes(l);
        } else {
            p = &l->next;
        }
    }
    pthread_mutex_unlock(&links_lock);
}
