/* cubec buffers mapped into CUDA on the same GPU, and CUDA streams ordered after cubec's work
 * (the public calls cubec_cuda_*; docs/multi-device.md, "CUDA on the same GPU"). Built on the
 * public export calls (cubec_buffer_export, cubec_timeline_export,
 * cubec_stream_get_timeline_value) and the driver loaded at run time (interop/cuda_driver.h).
 * What CUDA holds is kept per device in a table of this module, apart from the device itself:
 * cubec_device_close calls cuda_interop_forget to let it go. */
#ifndef CUBEC_INTEROP_CUDA_INTEROP_H
#define CUBEC_INTEROP_CUDA_INTEROP_H

#include "cubec/cubec.h"

/* Unmaps every buffer of `device` from CUDA and drops its imported timeline (device close). A
 * device that never used CUDA costs one lookup. */
void cuda_interop_forget(cubec_device *device);

#endif
