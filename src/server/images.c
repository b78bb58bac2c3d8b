/* Images (server/images.h, docs/images.md). An image's memory is an allocation from the stream's
 * pools held through an internal buffer handle, with the backend's image bound to it
 * (alloc->image): launches, copies, hazards, failures, holds and graphs then treat it exactly as
 * they treat a buffer's bytes. The allocation is pinned (never relocated: the image is bound to
 * where it is) for as long as the image lives, and the backend's image is destroyed with the
 * memory, once no batch uses it (server/buffers.c). Uploads and downloads go through a staging
 * buffer and a TASK_IMAGE_COPY task on the stream, so they are ordered like cubec_write and
 * cubec_read; on a backend that writes images straight from the host (gpu_ops.image_write:
 * WebGPU's queue writes) uploads are such writes, ordered as cubec_write's own
 * (server_write_queued). */
#include "server/images.h"
#include "base/clock.h"
#include "base/image_formats.h"
#include "server/device.h"
#include "server/launch_timing.h"
#include "server/memory_ops.h"
#include "server/relocate.h"
#include "server/run_mode.h"
#include "server/task.h"
#include "server/transfer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

void server_images_init(cubec_device *d)
{
    handle_table_init(&d->images->handles, d->tag, "image");
}

static void image_free(cubec_device *d, image_obj *im)
{
    server_alloc_unpin(d, im->buffer->alloc);
    server_buffer_release(d, im->buffer_id, im->buffer);
    free(im);
}

void server_images_destroy(cubec_device *d)
{
    for (uint32_t i = 0; i < d->images->handles.count; i++) {
        image_obj *im = d->images->handles.slots[i].object;
        if (im) image_free(d, im);
    }
    handle_table_free(&d->images->handles);
}

void server_image_release(cubec_device *d, uint64_t id, image_obj *im)
{
    /* The handle goes at once (a second release of it is refused); the record when the last
     * call using it is done. */
    if (id) handle_table_remove(&d->images->handles, id);
    if (--im->refs == 0) image_free(d, im);
}

/* Queues a task of `kind` holding whole buffers (b[i] <- bufs[i]), writing those of `writes`. */
static cubec_status queue_image_task(cubec_device *d, stream_ref s, task_kind kind,
                                     buffer_obj *const *bufs, uint32_t n, uint32_t writes,
                                     uint32_t pattern)
{
    RETURN_IF_ERROR(server_align(d, s.slot, bufs, n, writes, NULL));
    task *t;
    RETURN_IF_ERROR(server_reserve_task(d, s, kind, &t));
    t->count = n;
    t->write_mask = writes;
    t->pattern = pattern;
    for (uint32_t i = 0; i < n; i++) {
        bound_range *r = &t->b[i];
        r->alloc = bufs[i]->alloc;
        r->offset = buffer_device_offset(bufs[i]);
        r->size = bufs[i]->size;
        r->lead = 0;
        r->alloc->refs++;
    }
    return server_queue_task(d, s.slot, t);
}

cubec_status server_image_create(cubec_device *d, stream_ref s, const gpu_image_desc *desc,
                                 cubec_image *out)
{
    uint64_t size = 0, align = 0;
    RETURN_IF_ERROR(d->gpu->ops->image_requirements(d->gpu, desc, &size, &align));
    if (!align) align = 1;
    /* Room to align the image inside the allocation: pools align to less than an image may
     * need (bufferImageGranularity on NVIDIA). */
    cubec_buffer handle;
    RETURN_IF_ERROR(server_buffer_create(d, s, size + align, 0, &handle));
    buffer_obj *b = handle_table_get(&d->buffers->handles, handle.id);
    image_obj *im = calloc(1, sizeof *im);
    if (!im) {
        server_buffer_release(d, handle.id, b);
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (image record)");
    }
    cubec_status err = server_back_buffers(d, &b, 1, NULL); /* a dry run's page gets memory */
    if (!err) {
        uint64_t at = buffer_device_offset(b);
        at = (at + align - 1) / align * align;
        err = d->gpu->ops->image_create(d->gpu, desc, buffer_page(b), at, &b->alloc->image);
    }
    if (err) {
        free(im);
        server_buffer_release(d, handle.id, b);
        return err;
    }
    *im = (image_obj){.desc = *desc,
                      .bytes = (uint64_t)image_format_bytes(desc->format) * desc->width *
                               desc->height * (desc->depth ? desc->depth : 1),
                      .buffer_id = handle.id,
                      .buffer = b,
                      .refs = 1};
    server_alloc_pin(d, b->alloc);
    err = handle_table_insert(&d->images->handles, im, &out->id);
    if (err) {
        image_free(d, im);
        return err;
    }
    /* The layout transition, first of all work on the image, as a write of its memory: later
     * users on any stream are ordered after it. */
    err = queue_image_task(d, s, TASK_IMAGE_INIT, &b, 1, 1u, 0);
    if (err) {
        server_image_release(d, out->id, im);
        out->id = 0;
    }
    return err;
}

/* A staging buffer of the image's packed size on `s` (its handle: *out_id). */
static cubec_status staging(cubec_device *d, stream_ref s, const image_obj *im, uint64_t *out_id,
                            buffer_obj **out)
{
    cubec_buffer h;
    RETURN_IF_ERROR(server_buffer_create(d, s, im->bytes, 0, &h));
    *out_id = h.id;
    *out = handle_table_get(&d->buffers->handles, h.id);
    return NULL;
}

/* The texels for server_write_queued: gpu_ops.image_write's arguments. */
typedef struct image_put {
    gpu_image *image;
    const void *src;
} image_put;

static cubec_status put_image(cubec_device *d, void *ctx)
{
    const image_put *p = ctx;
    return d->gpu->ops->image_write(d->gpu, p->image, p->src);
}

/* The backend writes the texels straight from the program's memory (WebGPU's
 * wgpuQueueWriteTexture, which takes rows at any pitch): no staging buffer, no copy task, no
 * repacking of rows. After the work queued on the image on any stream is recorded, and done on
 * the GPU; what a failed write may have reached carries its error, and a good one clears the
 * image's failures, as the copy task's outputs are settled. */
static cubec_status write_direct(cubec_device *d, stream_ref s, image_obj *im, const void *src)
{
    uint64_t t0 = d->timing->trace ? clock_now_ns() : 0;
    buffer_obj *b = im->buffer;
    im->refs++; /* the wait may release the lock */
    cubec_status err = server_drain_for_host(d, s.slot, b->alloc, 1);
    if (!err) {
        image_put put = {b->alloc->image, src};
        err =
            server_write_queued(d, s, b->alloc, buffer_device_offset(b), b->size, put_image, &put);
    }
    if (!err && d->timing->trace) {
        char args[96];
        snprintf(args, sizeof args, "\"bytes\":%" PRIu64 ",\"buffer\":%" PRIu64, im->bytes,
                 b->alloc->number);
        timing_host(d, "image write", "write", t0, s.number, args);
    }
    server_image_release(d, 0, im);
    return err;
}

cubec_status server_image_write(cubec_device *d, stream_ref s, image_obj *im, const void *src)
{
    /* Every write is eligible where the backend has the op: a capture refuses image writes
     * before they get here (api_image.c), and a dry run writes images as it writes buffers
     * (server/run_mode.h), for real. */
    if (d->gpu->ops->image_write) return write_direct(d, s, im, src);
    uint64_t id;
    buffer_obj *bufs[2];
    RETURN_IF_ERROR(staging(d, s, im, &id, &bufs[0]));
    im->refs++; /* the write may release the lock */
    cubec_status err = server_write(d, s, bufs[0], 0, src, im->bytes);
    bufs[1] = im->buffer;
    if (!err) err = queue_image_task(d, s, TASK_IMAGE_COPY, bufs, 2, 1u << 1, 1);
    server_buffer_release(d, id, bufs[0]); /* the task holds its memory */
    server_image_release(d, 0, im);
    return err;
}

cubec_status server_image_read(cubec_device *d, stream_ref s, image_obj *im, void *dst)
{
    uint64_t id;
    buffer_obj *bufs[2];
    RETURN_IF_ERROR(staging(d, s, im, &id, &bufs[1]));
    bufs[0] = im->buffer;
    im->refs++; /* the read waits with the lock released */
    cubec_status err = queue_image_task(d, s, TASK_IMAGE_COPY, bufs, 2, 1u << 1, 0);
    /* A texel carrying a failure skips the copy and taints the staging bytes: the read returns
     * the failure. */
    if (!err) err = server_read(d, s, bufs[1], 0, dst, im->bytes);
    server_buffer_release(d, id, bufs[1]);
    server_image_release(d, 0, im);
    return err;
}
