/* Allocation windows of a stream's slot (cubec_memory_window_begin / _pop / _get, docs/memory.md
 * "Modes and windows"). The windows live with the slot's pools (memory/memory_modes.h), which route
 * each allocation by them. */
#include "server/memory_windows.h"
#include "server/device.h"
#include "server/memory_ops.h"
#include "server/streams.h"

cubec_status server_memory_mode_push(cubec_device *d, stream_ref s, uint32_t mode)
{
    memory_manager *m = NULL;
    RETURN_IF_ERROR(server_slot_memory(d, s.slot, &m));
    return memory_modes_push(memory_manager_modes(m), mode);
}

cubec_status server_memory_mode_pop(cubec_device *d, stream_ref s)
{
    memory_manager *m = d->streams->slots[s.slot].memory;
    if (!m)
        return INVALID_ARG("no memory mode window is open on this stream's slot (an end without "
                           "its begin?)");
    return memory_modes_pop(memory_manager_modes(m));
}

void server_memory_mode_get(cubec_device *d, stream_ref s, uint32_t *out_mode, uint32_t *out_depth)
{
    memory_manager *m = d->streams->slots[s.slot].memory;
    const memory_modes *mm = m ? memory_manager_modes(m) : NULL;
    *out_mode = mm ? (uint32_t)memory_modes_window(mm) : MEMORY_MODE_AUTO;
    *out_depth = mm ? mm->depth : 0;
}
