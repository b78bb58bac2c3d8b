#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
CUBEC_INFO(uint n;)
void main() {
  for (uint i = gl_GlobalInvocationID.x; i < info.n; i += gl_NumWorkGroups.x * 256u)
    c[i] = a[i] + b[i];
}
