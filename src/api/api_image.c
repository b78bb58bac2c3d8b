/* Public entry points: images (docs/images.md). Each checks its arguments, naming the argument
 * and value, and calls server/images.c under the device lock. */
#include "api/api_common.h"
#include "api/api_struct.h"
#include "base/image_formats.h"
#include "server/graph.h"
#include "server/images.h"

uint32_t cubec_image_format_size(cubec_image_format format)
{
    return image_format_bytes((uint32_t)format);
}

static cubec_status api_image(cubec_device *d, cubec_image h, const char *arg, image_obj **out)
{
    void *o;
    RETURN_IF_ERROR(handle_table_lookup(&d->images->handles, h.id, arg, &o));
    *out = o;
    return NULL;
}

cubec_status cubec_image_create(cubec_device *device, cubec_stream stream,
                                const cubec_image_desc *user, cubec_image *out_image)
{
    static const char fn[] = "cubec_image_create";
    if (!out_image) return INVALID_ARG("%s: out_image is NULL", fn);
    out_image->id = 0;
    if (!user) return INVALID_ARG("%s: desc is NULL", fn);
    RETURN_IF_ERROR(API_STRUCT_CHECK(user, cubec_image_desc, CUBEC_IMAGE_DESC_INIT, fn, "desc"));
    cubec_image_desc desc;
    api_struct_read(user, &desc, sizeof desc);
    if (!image_format_bytes((uint32_t)desc.format))
        return INVALID_ARG("%s: desc->format %d is not a cubec_image_format", fn, (int)desc.format);
    if (desc.width == 0 || desc.height == 0)
        return INVALID_ARG("%s: desc->width %u x desc->height %u: both must be at least 1", fn,
                           desc.width, desc.height);
    RETURN_IF_ERROR(api_lock(device, fn));
    stream_ref s;
    cubec_status err = api_slot(device, stream, fn, &s);
    /* Its layout transition would be recorded into the graph and replayed over its texels. */
    if (!err) err = server_graph_refuse(device, s, fn);
    gpu_image_desc gd = {(uint32_t)desc.format, desc.width, desc.height,
                         desc.depth ? desc.depth : 1};
    if (!err) err = server_image_create(device, s, &gd, out_image);
    return api_unlock(device, err);
}

cubec_status cubec_image_release(cubec_device *device, cubec_image image)
{
    if (image.id == 0) return NULL;
    RETURN_IF_ERROR(api_lock(device, "cubec_image_release"));
    image_obj *im;
    cubec_status err = api_image(device, image, "cubec_image_release: image", &im);
    if (!err) server_image_release(device, image.id, im);
    return api_unlock(device, err);
}

/* The image of a transfer, with `size` its packed size. */
static cubec_status transfer_image(cubec_device *d, const char *fn, const char *arg, cubec_image h,
                                   uint64_t size, image_obj **out)
{
    char what[96];
    snprintf(what, sizeof what, "%s: %s", fn, arg);
    RETURN_IF_ERROR(api_image(d, h, what, out));
    const gpu_image_desc *g = &(*out)->desc;
    if (size != (*out)->bytes)
        return INVALID_ARG("%s: size %" PRIu64 " is not the %ux%ux%u image's %" PRIu64
                           " bytes (%u per texel, packed)",
                           fn, size, g->width, g->height, g->depth, (*out)->bytes,
                           image_format_bytes(g->format));
    return NULL;
}

cubec_status cubec_image_write(cubec_device *device, cubec_stream stream, cubec_image dst,
                               const void *src, uint64_t size)
{
    static const char fn[] = "cubec_image_write";
    if (!src) return INVALID_ARG("%s: src is NULL", fn);
    RETURN_IF_ERROR(api_lock(device, fn));
    image_obj *im;
    stream_ref s;
    cubec_status err = api_slot(device, stream, fn, &s);
    if (!err) err = server_graph_refuse(device, s, fn);
    if (!err) err = transfer_image(device, fn, "dst", dst, size, &im);
    if (!err) err = server_image_write(device, s, im, src);
    return api_unlock(device, err);
}

cubec_status cubec_image_read(cubec_device *device, cubec_stream stream, cubec_image src, void *dst,
                              uint64_t size)
{
    static const char fn[] = "cubec_image_read";
    if (!dst) return INVALID_ARG("%s: dst is NULL", fn);
    RETURN_IF_ERROR(api_lock(device, fn));
    image_obj *im;
    stream_ref s;
    cubec_status err = api_slot(device, stream, fn, &s);
    if (!err) err = server_graph_refuse(device, s, fn);
    if (!err) err = transfer_image(device, fn, "src", src, size, &im);
    if (!err) err = server_image_read(device, s, im, dst);
    return api_unlock(device, err);
}
