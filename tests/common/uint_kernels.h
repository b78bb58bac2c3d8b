/* Element-wise uint32 kernels shared by the stream, failure, graph and profiling tests: exact
 * arithmetic, so every result can be compared with a CPU model bit for bit. All take
 * CUBEC_INFO(uint n; uint mul; uint add;). */
#ifndef CUBEC_TEST_UINT_KERNELS_H
#define CUBEC_TEST_UINT_KERNELS_H

#include "cubec/cubec.h"

#include <stdint.h>

#define UINT_KERNEL_HEAD                                                                           \
    "#version 450\n"                                                                               \
    "layout(local_size_x = 64) in;\n"
#define UINT_KERNEL_INFO "CUBEC_INFO(uint n; uint mul; uint add;)\n"

extern const char produce_src[]; /* o[i] = i * mul + add (binding 0 written)            */
extern const char consume_src[]; /* y[i] = x[i] * mul + add (0 read, 1 written)         */
extern const char step_src[];    /* v[i] = v[i] * mul + add (0 read and written)        */

/* Keeps the device busy: each word goes through `n` steps of an LCG (mul, add), so the cost is
 * words x steps. Lavapipe ends any loop after 65535 iterations, so more work is spread over more
 * invocations rather than made longer. Binding 0 is read and written. */
extern const char busy_src[];
#define LCG_MUL 1664525u
#define LCG_ADD 1013904223u

/* Two more of the fault sweeps (tests/failures/), each with its own CUBEC_INFO:
 * mix: y[i] = a[i] * 3 + b[i] + c (bindings a, b read, y written), CUBEC_INFO(uint n; uint c;);
 * acc: acc[i] += y[i] (acc read and written, y read), CUBEC_INFO(uint n;). */
extern const char mix_src[];
extern const char acc_src[];

/* No buffer: the second binding of a launch of a kernel that has one. */
#define NONE ((cubec_buffer){0})

/* A launch of one of these kernels, or of another with their CUBEC_INFO: bindings a (and b when
 * b.id is non-zero), info {n, mul, add}, one invocation per word. */
cubec_status uint_launch(cubec_device *d, cubec_stream s, cubec_kernel k, cubec_buffer a,
                         cubec_buffer b, uint32_t n, uint32_t mul, uint32_t add);
/* The same; with `indirect` non-zero the workgroup counts come from its first three words. */
cubec_status uint_launch_indirect(cubec_device *d, cubec_stream s, cubec_kernel k, cubec_buffer a,
                                  cubec_buffer b, uint32_t n, uint32_t mul, uint32_t add,
                                  cubec_buffer indirect);

/* A launch of busy over `words` words of v (a multiple of 64), `steps` steps of the LCG each. */
cubec_status busy_launch(cubec_device *d, cubec_stream s, cubec_kernel busy, cubec_buffer v,
                         uint32_t words, uint32_t steps);

/* The three kernels above, created on `d` (the test fails if one cannot be), and destroyed. */
void uint_kernels_create(cubec_device *d, cubec_kernel *produce, cubec_kernel *consume,
                         cubec_kernel *step);
void uint_kernels_destroy(cubec_device *d, cubec_kernel produce, cubec_kernel consume,
                          cubec_kernel step);

/* The CPU models: produce and consume over n words (step is cpu_consume(v, v, ...)). */
void cpu_produce(uint32_t *o, uint32_t n, uint32_t mul, uint32_t add);
void cpu_consume(const uint32_t *x, uint32_t *y, uint32_t n, uint32_t mul, uint32_t add);

#endif
