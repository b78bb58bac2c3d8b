/* Copies and fills (server/copy_fill.c). */
#ifndef CUBEC_SERVER_COPY_FILL_H
#define CUBEC_SERVER_COPY_FILL_H

#include "server/buffers.h"
#include "server/streams.h"

MUST_USE cubec_status server_copy(cubec_device *d, stream_ref s, buffer_obj *src,
                                  uint64_t src_offset, buffer_obj *dst, uint64_t dst_offset,
                                  uint64_t size);
MUST_USE cubec_status server_fill(cubec_device *d, stream_ref s, buffer_obj *dst, uint64_t offset,
                                  uint64_t size, uint32_t pattern);
/* The built-in copy and fill pipelines, compiled on first use, under the device lock: the copy
 * and fill paths that need them hold resolved buffers, which another thread could release while
 * the lock was dropped. They are three small fixed sources, compiled once per device. */
MUST_USE cubec_status server_builtin_kernels(cubec_device *d);
/* Whether copies and fills run as kernels ([device] copy_engine; auto: on GPUs). */
int server_copies_by_kernel(const cubec_device *d);
/* Records a copy of [src_offset, +size) of one page to another into `cmd`, with the barrier it
 * needs: relocation's copies (spec 3.9), by the built-in move kernel where copies run as kernels
 * (server_builtin_kernels first) and by the copy command otherwise. */
MUST_USE cubec_status server_record_move(cubec_device *d, gpu_cmd *cmd, gpu_mem *src,
                                         uint64_t src_offset, gpu_mem *dst, uint64_t dst_offset,
                                         uint64_t size);

#endif
