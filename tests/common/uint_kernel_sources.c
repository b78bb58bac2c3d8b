/* The GLSL of the uint kernels (uint_kernels.h) and the busy launch: no test framework, so that
 * the libFuzzer harness (fuzz/fuzz_api.c, through tests/common/api_model.c) links them too. */
#include "uint_kernels.h"

const char produce_src[] = UINT_KERNEL_HEAD
    "layout(std430, binding = 0) writeonly buffer O { uint o[]; };\n" UINT_KERNEL_INFO
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < info.n) o[i] = i * info.mul + info.add;\n"
    "}\n";

const char consume_src[] = UINT_KERNEL_HEAD
    "layout(std430, binding = 0) readonly buffer X { uint x[]; };\n"
    "layout(std430, binding = 1) writeonly buffer Y { uint y[]; };\n" UINT_KERNEL_INFO
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < info.n) y[i] = x[i] * info.mul + info.add;\n"
    "}\n";

const char step_src[] = UINT_KERNEL_HEAD
    "layout(std430, binding = 0) buffer V { uint v[]; };\n" UINT_KERNEL_INFO "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < info.n) v[i] = v[i] * info.mul + info.add;\n"
    "}\n";

const char busy_src[] = UINT_KERNEL_HEAD
    "layout(std430, binding = 0) buffer V { uint v[]; };\n" UINT_KERNEL_INFO "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  uint s = v[i];\n"
    "  for (uint k = 0; k < info.n; k++) s = s * info.mul + info.add;\n"
    "  v[i] = s;\n"
    "}\n";

const char mix_src[] =
    UINT_KERNEL_HEAD "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
                     "layout(std430, binding = 1) readonly buffer B { uint b[]; };\n"
                     "layout(std430, binding = 2) writeonly buffer Y { uint y[]; };\n"
                     "CUBEC_INFO(uint n; uint c;)\n"
                     "void main() {\n"
                     "  uint i = gl_GlobalInvocationID.x;\n"
                     "  if (i < info.n) y[i] = a[i] * 3u + b[i] + info.c;\n"
                     "}\n";

const char acc_src[] =
    UINT_KERNEL_HEAD "layout(std430, binding = 0) buffer A { uint acc[]; };\n"
                     "layout(std430, binding = 1) readonly buffer Y { uint y[]; };\n"
                     "CUBEC_INFO(uint n;)\n"
                     "void main() {\n"
                     "  uint i = gl_GlobalInvocationID.x;\n"
                     "  if (i < info.n) acc[i] += y[i];\n"
                     "}\n";

cubec_status busy_launch(cubec_device *d, cubec_stream s, cubec_kernel busy, cubec_buffer v,
                         uint32_t words, uint32_t steps)
{
    uint32_t info[3] = {steps, LCG_MUL, LCG_ADD};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = busy,
                            .buffers = &v,
                            .buffer_count = 1,
                            .info = info,
                            .info_size = sizeof info,
                            .groups = {words / 64, 1, 1}};
    return cubec_launch(d, s, &ld);
}
