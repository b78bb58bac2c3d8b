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
