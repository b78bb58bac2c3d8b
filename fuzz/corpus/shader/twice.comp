#version 450
// fuzz_api's second kernel: one read-write binding, no metadata.
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer A { uint a[]; };
void main() { a[gl_GlobalInvocationID.x] *= 2u; }
