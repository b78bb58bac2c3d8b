/* Placeholder until the null backend lands: refuses to open. */
#include "gpu/null/null_gpu.h"

cubec_status null_gpu_open(const gpu_open_desc *desc, gpu **out)
{
    (void)desc;
    (void)out;
    return status_make(CUBEC_UNSUPPORTED, "the null backend is not built yet");
}
cubec_status null_gpu_count(uint32_t *out_count)
{
    *out_count = 0;
    return NULL;
}
cubec_status null_gpu_peek(uint32_t index, cubec_device_info *out)
{
    (void)out;
    return status_make(CUBEC_NOT_FOUND, "no null device %u", index);
}
