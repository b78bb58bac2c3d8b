#version 450
// y[i] = x[i] * scale + offset[i % 2] + lanes[i % 3], for i < n.
//
// A kernel file that compiles both with cubec (cubec_kernel_create, `cubec run`) and with plain
// glslc, so that it can be linted and inspected with the usual tools: cubec predefines
// CUBEC_INFO, and the default below stands in for it elsewhere (docs/kernels.md).
#ifndef CUBEC_INFO
#define CUBEC_INFO(M) layout(push_constant, std430) uniform CubecInfo { M } info;
#endif

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };

// std430 offsets: n 0, scale 4, offset 8 (a vec2 is 8-aligned), lanes 16 (stride 4): 28 bytes,
// the same as the C struct { uint32_t n; float scale; float offset[2]; uint32_t lanes[3]; }.
CUBEC_INFO(uint n; float scale; vec2 offset; uint lanes[3];)

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n)
        y[i] = x[i] * info.scale + info.offset[i % 2u] + float(info.lanes[i % 3u]);
}
