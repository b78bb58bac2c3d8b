/* The GLSL kernels of the suite. Both sides compile the very same text at run time: cubec through
 * cubec_kernel_create, which defines CUBEC_INFO itself, and the raw baseline through shaderc with
 * BENCH_RAW_INFO_MACRO standing in for it (a plain push-constant block, which is what cubec makes
 * of an info block that fits the device's push-constant space). */
#ifndef CUBEC_BENCH_KERNELS_H
#define CUBEC_BENCH_KERNELS_H

#include <stdint.h>

/* launch.*: one workgroup of 64 threads, each adding `step` to one uint (a read-modify-write, so
 * consecutive launches on the same buffer are a real read-after-write chain). */
extern const char bench_glsl_tiny[];
/* compile.*: like the tiny kernel but writes `step + SALT`; the SALT define makes every compile
 * unique down to the SPIR-V, so no cache of any layer (cubec's, the driver's) can answer it. */
extern const char bench_glsl_salted[];
/* kernel.vector_add: c = a + b over float32, read and written as vec4 (n must be a multiple of
 * 4), grid-stride loop because the group count is capped (BENCH_VECTOR_MAX_GROUPS, and lavapipe
 * allows 65535 groups in x). Workgroup size BENCH_VECTOR_WG. */
extern const char bench_glsl_vector_add[];

#define BENCH_RAW_INFO_MACRO_NAME "CUBEC_INFO(members)"
#define BENCH_RAW_INFO_MACRO_VALUE                                                                 \
    "layout(push_constant) uniform cubec_info_block { members } info;"

/* The info blocks of the kernels above, as the launch passes them. */
typedef struct bench_tiny_info {
    uint32_t n;
    uint32_t step;
} bench_tiny_info;

typedef struct bench_vector_info {
    uint32_t n4; /* vec4 elements: n / 4 */
} bench_vector_info;

#endif
