/* The names of 0.1 that 0.2 renamed (docs/api.md, "Naming"), kept for one release: each is an
 * exported function that forwards to its new name, so programs and bindings built against 0.1's
 * names still link and run, with a compiler warning that names the new one. */
#include "cubec/cubec.h"

cubec_status cubec_buffer_size(cubec_device *device, cubec_buffer buffer, uint64_t *out_size)
{
    return cubec_buffer_get_size(device, buffer, out_size);
}

cubec_status cubec_profile_method(cubec_device *device, cubec_timing *out_method)
{
    return cubec_profile_get_method(device, out_method);
}

cubec_status cubec_fault_counts(cubec_device *device, uint64_t out_counts[CUBEC_FAULT_KIND_COUNT])
{
    return cubec_fault_get_counts(device, out_counts);
}

cubec_status cubec_device_vulkan_handles(cubec_device *device, cubec_vulkan_handles *out_handles)
{
    return cubec_device_get_vulkan_handles(device, out_handles);
}

cubec_status cubec_stream_current(cubec_device *device, cubec_stream *out_stream)
{
    return cubec_stream_get_current(device, out_stream);
}

cubec_status cubec_device_count(uint32_t *out_count)
{
    return cubec_device_get_count(out_count);
}

cubec_status cubec_memory_mode_push(cubec_device *device, cubec_stream stream,
                                    cubec_memory_mode mode)
{
    return cubec_memory_window_begin(device, stream, mode);
}

cubec_status cubec_memory_mode_pop(cubec_device *device, cubec_stream stream)
{
    return cubec_memory_window_end(device, stream);
}

cubec_status cubec_memory_mode_get(cubec_device *device, cubec_stream stream,
                                   cubec_memory_mode *out_mode, uint32_t *out_depth)
{
    return cubec_memory_window_get(device, stream, out_mode, out_depth);
}
