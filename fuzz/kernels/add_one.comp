#version 450
// fuzz_api's first kernel: two bindings (read, write) and 4 bytes of push constants.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) writeonly buffer B { uint b[]; };
layout(push_constant) uniform Info { uint n; } info;
void main() { uint i = gl_GlobalInvocationID.x; if (i < info.n) b[i] = a[i] + 1u; }
