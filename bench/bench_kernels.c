/* The GLSL text of the suite's kernels (see bench_kernels.h). */
#include "bench_kernels.h"

const char bench_glsl_tiny[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(set = 0, binding = 0) buffer Data { uint data[]; };\n"
                               "CUBEC_INFO(uint n; uint step;)\n"
                               "void main()\n"
                               "{\n"
                               "    uint i = gl_GlobalInvocationID.x;\n"
                               "    if (i < info.n) data[i] += info.step;\n"
                               "}\n";

const char bench_glsl_salted[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(set = 0, binding = 0) writeonly buffer Data { uint data[]; };\n"
    "CUBEC_INFO(uint n; uint step;)\n"
    "void main()\n"
    "{\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i < info.n) data[i] = info.step + uint(SALT);\n"
    "}\n";

/* local_size_x must equal BENCH_VECTOR_WG (bench_figure.h). Four floats per invocation and
 * iteration: 16-byte loads and stores (vec4 arrays are tightly packed, so the buffers hold the
 * same floats in the same places as float arrays would). */
const char bench_glsl_vector_add[] =
    "#version 450\n"
    "layout(local_size_x = 256) in;\n"
    "layout(set = 0, binding = 0) readonly buffer A { vec4 a[]; };\n"
    "layout(set = 0, binding = 1) readonly buffer B { vec4 b[]; };\n"
    "layout(set = 0, binding = 2) writeonly buffer C { vec4 c[]; };\n"
    "CUBEC_INFO(uint n4;)\n"
    "void main()\n"
    "{\n"
    "    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
    "    for (uint i = gl_GlobalInvocationID.x; i < info.n4; i += stride)\n"
    "        c[i] = a[i] + b[i];\n"
    "}\n";
