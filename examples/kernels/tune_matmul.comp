#version 450
// c[m x n] = a[m x k] * b[k x n], all float and row-major: the kernel examples/tune_matmul.c
// tunes. Its shape comes from defines, each a candidate of the tuner:
//   WG_X, WG_Y  the workgroup's size (WG_X * WG_Y invocations);
//   RM, RN      the outputs each invocation computes, RM rows by RN columns;
//   TK          the depth of the tiles of a and b staged in shared memory per step of k.
// A workgroup computes a block of BM = WG_Y * RM rows by BN = WG_X * RN columns. For each step of
// TK along k it copies the BM x TK block of a and the TK x BN block of b into shared memory (all
// invocations together), then each invocation multiplies its RM x RN outputs from there: a larger
// RM x RN reuses each value read from shared memory more times, a larger workgroup shares each
// global load among more invocations. Which wins depends on the device: hence tuning.
//
// The defaults below make the file compile with plain glslc too (docs/kernels.md).
#ifndef CUBEC_INFO
#define CUBEC_INFO(M) layout(push_constant, std430) uniform CubecInfo { M } info;
#endif
#ifndef WG_X
#define WG_X 16
#endif
#ifndef WG_Y
#define WG_Y 16
#endif
#ifndef RM
#define RM 1
#endif
#ifndef RN
#define RN 1
#endif
#ifndef TK
#define TK 16
#endif
#define BM (WG_Y * RM)
#define BN (WG_X * RN)
#define THREADS (WG_X * WG_Y)

layout(local_size_x = WG_X, local_size_y = WG_Y) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };

CUBEC_INFO(uint m; uint n; uint k;)

// a's block is stored transposed so that the inner loop reads a row of each tile.
shared float tile_a[TK][BM];
shared float tile_b[TK][BN];

void main()
{
    uint tx = gl_LocalInvocationID.x;
    uint ty = gl_LocalInvocationID.y;
    uint lid = ty * WG_X + tx;
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;
    float acc[RM][RN];
    for (uint i = 0; i < RM; i++)
        for (uint j = 0; j < RN; j++)
            acc[i][j] = 0.0;
    for (uint t = 0; t < info.k; t += TK) {
        // Elements outside the matrices load as zero: any m, n, k work.
        for (uint e = lid; e < BM * TK; e += THREADS) {
            uint r = e / TK, kk = e % TK;
            float v = 0.0;
            if (row0 + r < info.m && t + kk < info.k) v = a[(row0 + r) * info.k + t + kk];
            tile_a[kk][r] = v;
        }
        for (uint e = lid; e < TK * BN; e += THREADS) {
            uint kk = e / BN, cc = e % BN;
            float v = 0.0;
            if (t + kk < info.k && col0 + cc < info.n) v = b[(t + kk) * info.n + col0 + cc];
            tile_b[kk][cc] = v;
        }
        barrier();
        for (uint kk = 0; kk < TK; kk++) {
            // Invocation (tx, ty) owns rows ty + i * WG_Y and columns tx + j * WG_X of the
            // block: neighbouring invocations touch neighbouring words.
            float av[RM];
            float bv[RN];
            for (uint i = 0; i < RM; i++)
                av[i] = tile_a[kk][ty + i * WG_Y];
            for (uint j = 0; j < RN; j++)
                bv[j] = tile_b[kk][tx + j * WG_X];
            for (uint i = 0; i < RM; i++)
                for (uint j = 0; j < RN; j++)
                    acc[i][j] += av[i] * bv[j];
        }
        barrier();
    }
    for (uint i = 0; i < RM; i++) {
        for (uint j = 0; j < RN; j++) {
            uint row = row0 + ty + i * WG_Y;
            uint col = col0 + tx + j * WG_X;
            if (row < info.m && col < info.n) c[row * info.n + col] = acc[i][j];
        }
    }
}
