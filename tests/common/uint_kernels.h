/* Element-wise uint32 kernels shared by the stream and failure tests: exact arithmetic, so every
 * result can be compared with a CPU model bit for bit. All take CUBEC_INFO(uint n; uint mul;
 * uint add;). */
#ifndef CUBEC_TEST_UINT_KERNELS_H
#define CUBEC_TEST_UINT_KERNELS_H

#define UINT_KERNEL_HEAD                                                                           \
    "#version 450\n"                                                                               \
    "layout(local_size_x = 64) in;\n"
#define UINT_KERNEL_INFO "CUBEC_INFO(uint n; uint mul; uint add;)\n"

extern const char produce_src[]; /* o[i] = i * mul + add (binding 0 written)            */
extern const char consume_src[]; /* y[i] = x[i] * mul + add (0 read, 1 written)         */
extern const char step_src[];    /* v[i] = v[i] * mul + add (0 read and written)        */

#endif
