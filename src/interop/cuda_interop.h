/* cubec buffers mapped into CUDA on the same GPU, and CUDA streams ordered after cubec's work
 * (the public calls cubec_cuda_*; docs/multi-device.md, "CUDA on the same GPU"). Built on the
 * public export calls (cubec_buffer_export, cubec_timeline_export,
 * cubec_stream_get_timeline_value) and the driver loaded at run time (interop/cuda_driver.h).
 * What CUDA holds is kept per device in a table of this module, apart from the device itself:
 * cubec_device_close calls cuda_interop_forget to let it go. */
#ifndef CUBEC_INTEROP_CUDA_INTEROP_H
#define CUBEC_INTEROP_CUDA_INTEROP_H

#include "base/status.h"
#include "cubec/cubec.h"

#include <stddef.h>
#include <stdint.h>

/* Unmaps every buffer of `device` from CUDA and drops its imported timeline (device close). A
 * device that never used CUDA costs one lookup. */
void cuda_interop_forget(cubec_device *device);

/* Whether CUDA can copy between the GPUs of these UUIDs (cubec_device_info.device_uuid): libcuda
 * loads, each UUID is a CUDA device's, and two GPUs can reach each other's memory
 * (cuDeviceCanAccessPeer both ways). Else 0, with the reason in `why`. *out_two_gpus: the UUIDs
 * are two GPUs'. Takes no device lock. */
int cuda_interop_pair_usable(const uint8_t src_uuid[16], const uint8_t dst_uuid[16],
                             int *out_two_gpus, char *why, size_t why_size);

/* cubec_copy_peer through CUDA, between exportable buffers (cubec_copy_peer checked the
 * arguments and chose the path; no device lock held): CUDA waits on the GPU for the source's
 * writers and the destination's earlier users, copies (cuMemcpyDtoDAsync on one GPU,
 * cuMemcpyPeerAsync between two), and both devices' queues wait for the copy (the source's so
 * that later writers do not overwrite what CUDA still reads). A failure carried by the source
 * range lands on the destination range instead of a copy. The caller never waits. */
MUST_USE cubec_status cuda_interop_copy_peer(cubec_device *src_device, cubec_stream src_stream,
                                             cubec_buffer src, uint64_t src_offset,
                                             cubec_device *dst_device, cubec_stream dst_stream,
                                             cubec_buffer dst, uint64_t dst_offset, uint64_t size);

#endif
