#include "uint_kernels.h"

#include "launch_util.h"
#include "test_util.h"

cubec_status uint_launch_indirect(cubec_device *d, cubec_stream s, cubec_kernel k, cubec_buffer a,
                                  cubec_buffer b, uint32_t n, uint32_t mul, uint32_t add,
                                  cubec_buffer indirect)
{
    uint32_t info[3] = {n, mul, add};
    cubec_buffer bufs[2] = {a, b};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = bufs,
                            .buffer_count = b.id ? 2 : 1,
                            .info = info,
                            .info_size = sizeof info,
                            .groups = {(n + 63) / 64, 1, 1},
                            .indirect = indirect};
    return cubec_launch(d, s, &ld);
}

cubec_status uint_launch(cubec_device *d, cubec_stream s, cubec_kernel k, cubec_buffer a,
                         cubec_buffer b, uint32_t n, uint32_t mul, uint32_t add)
{
    return uint_launch_indirect(d, s, k, a, b, n, mul, add, NONE);
}

void uint_kernels_create(cubec_device *d, cubec_kernel *produce, cubec_kernel *consume,
                         cubec_kernel *step)
{
    *produce = make_kernel(d, "produce", produce_src);
    *consume = make_kernel(d, "consume", consume_src);
    *step = make_kernel(d, "step", step_src);
}

void uint_kernels_destroy(cubec_device *d, cubec_kernel produce, cubec_kernel consume,
                          cubec_kernel step)
{
    ASSERT_OK(cubec_kernel_destroy(d, produce));
    ASSERT_OK(cubec_kernel_destroy(d, consume));
    ASSERT_OK(cubec_kernel_destroy(d, step));
}

void cpu_produce(uint32_t *o, uint32_t n, uint32_t mul, uint32_t add)
{
    for (uint32_t i = 0; i < n; i++)
        o[i] = i * mul + add;
}

void cpu_consume(const uint32_t *x, uint32_t *y, uint32_t n, uint32_t mul, uint32_t add)
{
    for (uint32_t i = 0; i < n; i++)
        y[i] = x[i] * mul + add;
}
