/* Shared helpers of the public entry points: taking the device lock, resolving handles and
 * checking ranges, each producing an error that names the argument and its value. */
#ifndef CUBEC_API_COMMON_H
#define CUBEC_API_COMMON_H

#include "base/device_registry.h"
#include "server/buffers.h"
#include "server/device.h"
#include "server/health.h"
#include "server/streams.h"

#include <inttypes.h>
#include <stdio.h>

/* NULL when `d` is an open device: the check before anything touches it, so that a closed or
 * made-up pointer is refused rather than dereferenced (base/device_registry.h). */
MUST_USE static inline cubec_status api_device(const cubec_device *d, const char *fn)
{
    if (!d) return INVALID_ARG("%s: device is NULL", fn);
    if (!device_registry_is_open(d))
        return INVALID_ARG("%s: device %p is not an open device (closed, or never opened)", fn,
                           (const void *)d);
    return NULL;
}

/* Locks the device; on error nothing is locked. */
MUST_USE static inline cubec_status api_lock(cubec_device *d, const char *fn)
{
    /* The test written out rather than RETURN_IF_ERROR(api_device(...)): the analyzer then sees
     * that d is not NULL where it is locked. */
    if (!d || !device_registry_is_open(d)) return api_device(d, fn);
    pthread_mutex_lock(&d->lock);
    cubec_status err = server_check_alive(d);
    if (err) {
        pthread_mutex_unlock(&d->lock);
        return status_annotate(err, "%s", fn);
    }
    return NULL;
}

MUST_USE static inline cubec_status api_unlock(cubec_device *d, cubec_status result)
{
    pthread_mutex_unlock(&d->lock);
    return result;
}

/* Resolves the stream argument of `fn` to its slot. */
MUST_USE static inline cubec_status api_slot(cubec_device *d, cubec_stream stream, const char *fn,
                                             stream_ref *out)
{
    return server_stream_resolve(d, stream, fn, out);
}

MUST_USE static inline cubec_status api_buffer(cubec_device *d, cubec_buffer h, const char *arg,
                                               buffer_obj **out)
{
    void *o;
    RETURN_IF_ERROR(handle_table_lookup(&d->buffers->handles, h.id, arg, &o));
    *out = o;
    return NULL;
}

/* offset + size must lie within a buffer of `buffer_size` bytes (overflow-safe). */
MUST_USE static inline cubec_status api_range(const char *fn, const char *arg, uint64_t offset,
                                              uint64_t size, uint64_t buffer_size)
{
    if (offset > buffer_size || size > buffer_size - offset)
        return INVALID_ARG("%s: %s range offset %" PRIu64 " + size %" PRIu64
                           " is past the end of the %" PRIu64 "-byte buffer",
                           fn, arg, offset, size, buffer_size);
    return NULL;
}

#endif
