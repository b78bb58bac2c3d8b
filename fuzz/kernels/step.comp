#version 450
// The model's step kernel (tests/common/uint_kernel_sources.c) as SPIR-V for the harness:
// v[i] = v[i] * mul + add.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer V { uint v[]; };
layout(push_constant) uniform Info { uint n; uint mul; uint add; } info;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n) v[i] = v[i] * info.mul + info.add;
}
