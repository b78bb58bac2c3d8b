/* Public entry points: registered and pinned host memory. */
#include "api/api_common.h"
#include "server/host_memory.h"
#include "server/transfer.h"

cubec_status cubec_host_register(cubec_device *device, void *ptr, uint64_t size)
{
    if (!ptr) return INVALID_ARG("cubec_host_register: ptr is NULL");
    if (!size) return INVALID_ARG("cubec_host_register: size is 0");
    RETURN_IF_ERROR(api_lock(device, "cubec_host_register"));
    return api_unlock(device, server_host_register(device, ptr, size));
}

cubec_status cubec_host_unregister(cubec_device *device, void *ptr)
{
    if (!ptr) return INVALID_ARG("cubec_host_unregister: ptr is NULL");
    RETURN_IF_ERROR(api_lock(device, "cubec_host_unregister"));
    cubec_status err = status_annotate(server_reads_land_before_release(device, ptr),
                                       "cubec_host_unregister: the reads landing in %p", ptr);
    if (!err) err = server_host_unregister(device, ptr);
    return api_unlock(device, err);
}

cubec_status cubec_host_alloc(cubec_device *device, uint64_t size, void **out_ptr)
{
    if (!out_ptr) return INVALID_ARG("cubec_host_alloc: out_ptr is NULL");
    *out_ptr = NULL;
    if (!size) return INVALID_ARG("cubec_host_alloc: size is 0");
    RETURN_IF_ERROR(api_lock(device, "cubec_host_alloc"));
    return api_unlock(device, server_host_alloc(device, size, out_ptr));
}

cubec_status cubec_host_free(cubec_device *device, void *ptr)
{
    if (!ptr) return INVALID_ARG("cubec_host_free: ptr is NULL");
    RETURN_IF_ERROR(api_lock(device, "cubec_host_free"));
    cubec_status err = status_annotate(server_reads_land_before_release(device, ptr),
                                       "cubec_host_free: the reads landing in %p", ptr);
    if (!err) err = server_host_free(device, ptr);
    return api_unlock(device, err);
}
