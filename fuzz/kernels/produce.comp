#version 450
// The model's produce kernel (tests/common/uint_kernel_sources.c) as SPIR-V for the harness:
// o[i] = i * mul + add, its metadata in push constants at the offsets CUBEC_INFO gives them.
layout(local_size_x = 64) in;
layout(std430, binding = 0) writeonly buffer O { uint o[]; };
layout(push_constant) uniform Info { uint n; uint mul; uint add; } info;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n) o[i] = i * info.mul + info.add;
}
