/* Allocation windows of a stream's slot (server/memory_windows.c): cubec_memory_window_begin,
 * _pop and _get. */
#ifndef CUBEC_SERVER_MEMORY_WINDOWS_H
#define CUBEC_SERVER_MEMORY_WINDOWS_H

#include "base/status.h"
#include "server/streams.h"

/* cubec_memory_window_begin / _pop / _get on `s`'s slot. Push and pop return the refusals of
 * memory_modes_push / _pop, for the caller to name itself in. */
MUST_USE cubec_status server_memory_mode_push(cubec_device *d, stream_ref s, uint32_t mode);
MUST_USE cubec_status server_memory_mode_pop(cubec_device *d, stream_ref s);
void server_memory_mode_get(cubec_device *d, stream_ref s, uint32_t *out_mode, uint32_t *out_depth);

#endif
