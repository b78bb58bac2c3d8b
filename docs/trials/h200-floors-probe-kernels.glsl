// ---- copy1.comp
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer S { uvec4 s[]; };
layout(set = 0, binding = 1) writeonly buffer D { uvec4 d[]; };
layout(push_constant) uniform Info { uint count; } info;
void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uint i = gl_GlobalInvocationID.x;
  for (; i + (1 - 1) * stride < info.count; i += 1 * stride) {
    uvec4 v0 = s[i + 0 * stride];
    d[i + 0 * stride] = v0;
  }
  for (; i < info.count; i += stride) d[i] = s[i];
}
// ---- copy2.comp
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer S { uvec4 s[]; };
layout(set = 0, binding = 1) writeonly buffer D { uvec4 d[]; };
layout(push_constant) uniform Info { uint count; } info;
void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uint i = gl_GlobalInvocationID.x;
  for (; i + (2 - 1) * stride < info.count; i += 2 * stride) {
    uvec4 v0 = s[i + 0 * stride];
    uvec4 v1 = s[i + 1 * stride];
    d[i + 0 * stride] = v0;
    d[i + 1 * stride] = v1;
  }
  for (; i < info.count; i += stride) d[i] = s[i];
}
// ---- copy4.comp
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer S { uvec4 s[]; };
layout(set = 0, binding = 1) writeonly buffer D { uvec4 d[]; };
layout(push_constant) uniform Info { uint count; } info;
void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uint i = gl_GlobalInvocationID.x;
  for (; i + (4 - 1) * stride < info.count; i += 4 * stride) {
    uvec4 v0 = s[i + 0 * stride];
    uvec4 v1 = s[i + 1 * stride];
    uvec4 v2 = s[i + 2 * stride];
    uvec4 v3 = s[i + 3 * stride];
    d[i + 0 * stride] = v0;
    d[i + 1 * stride] = v1;
    d[i + 2 * stride] = v2;
    d[i + 3 * stride] = v3;
  }
  for (; i < info.count; i += stride) d[i] = s[i];
}
// ---- mark.comp
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
layout(push_constant) uniform Info { uint v; } info;
void main() { data[0] = info.v; }
// ---- tiny_buf.comp
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
layout(set = 0, binding = 1) readonly buffer Info { uint n; uint step; } info;
void main() { uint i = gl_GlobalInvocationID.x; if (i < info.n) data[i] += info.step; }
// ---- tiny_none.comp
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < 256u) data[i] += 1u; }
// ---- tiny_pc.comp
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
layout(push_constant) uniform Info { uint n; uint step; } info;
void main() { uint i = gl_GlobalInvocationID.x; if (i < info.n) data[i] += info.step; }
// ---- tiny_ubo.comp
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
layout(set = 0, binding = 1) uniform Info { uint n; uint step; } info;
void main() { uint i = gl_GlobalInvocationID.x; if (i < info.n) data[i] += info.step; }
// ---- vadd.comp
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer A { vec4 a[]; };
layout(set = 0, binding = 1) readonly buffer B { vec4 b[]; };
layout(set = 0, binding = 2) writeonly buffer C { vec4 c[]; };
layout(push_constant) uniform Info { uint n4; } info;
void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < info.n4; i += stride) c[i] = a[i] + b[i];
}
