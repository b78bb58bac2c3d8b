/* Images (server/images.c, docs/images.md): image objects over memory from the stream's pools,
 * their creation with the one layout transition, their release, and uploads and downloads
 * through a staging buffer and a copy task. */
#ifndef CUBEC_SERVER_IMAGES_H
#define CUBEC_SERVER_IMAGES_H

#include "base/handle_table.h"
#include "server/buffers.h"
#include "server/streams.h"

typedef struct image_obj {
    gpu_image_desc desc;
    uint64_t bytes;     /* packed texels: width * height * depth * texel bytes */
    uint64_t buffer_id; /* the buffer handle that holds its memory (alloc->image is the image) */
    buffer_obj *buffer; /* its record: binds and orders the image as the buffer would */
    uint32_t refs;      /* the handle, and calls that wait with the lock released */
} image_obj;

/* The device's images. Guarded by the device lock. */
typedef struct image_table {
    handle_table handles; /* image_obj per image */
} image_table;

void server_images_init(cubec_device *d);
/* Releases every image still alive (device close; the GPU is idle). */
void server_images_destroy(cubec_device *d);
/* cubec_image_create on `s` (desc checked by api/): memory from the slot's pools, the backend's
 * image bound to it, and its layout transition queued on `s`. */
MUST_USE cubec_status server_image_create(cubec_device *d, stream_ref s, const gpu_image_desc *desc,
                                          cubec_image *out);
/* Drops one reference of the image record; with `id` (the handle's release), its handle too. */
void server_image_release(cubec_device *d, uint64_t id, image_obj *im);
/* cubec_image_write / cubec_image_read of all `im->bytes` bytes. */
MUST_USE cubec_status server_image_write(cubec_device *d, stream_ref s, image_obj *im,
                                         const void *src);
MUST_USE cubec_status server_image_read(cubec_device *d, stream_ref s, image_obj *im, void *dst);

#endif
