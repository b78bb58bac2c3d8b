#version 450
// fuzz_api's first kernel: two bindings (read, write) and 4 bytes of push constants. Its bounds
// come from the bindings too, so that it stays in range on lavapipe whatever n the input gives.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) writeonly buffer B { uint b[]; };
layout(push_constant) uniform Info { uint n; } info;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n && i < a.length() && i < b.length()) b[i] = a[i] + 1u;
}
