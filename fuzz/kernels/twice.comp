#version 450
// fuzz_api's second kernel: one read-write binding, no metadata; in range on lavapipe whatever
// the group count.
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer A { uint a[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < a.length()) a[i] *= 2u;
}
