#version 450
// The model's consume kernel (tests/common/uint_kernel_sources.c) as SPIR-V for the harness:
// y[i] = x[i] * mul + add.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Info { uint n; uint mul; uint add; } info;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n) y[i] = x[i] * info.mul + info.add;
}
