/* The matrix multiply of example_gemm_f16, shared with `cubec bench` (kernel.gemm_f16) and its
 * test: C (M x N, float32) = A (M x K, float16) * B (K x N, float16), all row-major, on
 * cooperative matrices (GL_NV_cooperative_matrix: the glslang of Debian 12 knows no
 * GL_KHR_cooperative_matrix, docs/kernels.md "Cooperative matrices").
 *
 * Each workgroup computes a TILE_M x TILE_N tile of C with WG_ROWS x WG_COLS subgroups, each
 * subgroup a (TILE_M / WG_ROWS) x (TILE_N / WG_COLS) block of it as an array of LM x LN
 * accumulators held in registers for the whole K loop. Per step of TILE_K, the workgroup copies a
 * TILE_M x TILE_K slice of A and a TILE_K x TILE_N slice of B to shared memory with 16-byte
 * loads (each row padded by 16 bytes so that the subgroups' matrix loads spread over the banks),
 * and every subgroup multiplies its LM x LK pieces of A with its LK x LN pieces of B from there.
 * The next step's slices are loaded into registers while the current one is multiplied, so the
 * global loads overlap the math; with STAGES 2 they are stored to a second shared buffer right
 * after, which saves a barrier per step and costs twice the shared memory.
 *
 * M must be a multiple of TILE_M, N of TILE_N and K of TILE_K (gemm_f16_check_shape says so);
 * the host defines every upper-case name below (gemm_f16_defines). */
#ifndef CUBEC_EXAMPLES_GEMM_F16_KERNEL_H
#define CUBEC_EXAMPLES_GEMM_F16_KERNEL_H

#include <cubec/cubec.h>

#include <stdio.h>

/* In two parts: C11 compilers need not take string literals over 4095 bytes (gemm_f16_source
 * joins them). */
static const char gemm_f16_glsl_head[] =
    "#version 450\n"
    "#extension GL_NV_cooperative_matrix : require\n"
    "#extension GL_KHR_memory_scope_semantics : require\n"
    "#extension GL_KHR_shader_subgroup_basic : require\n"
    "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
    "#extension GL_EXT_control_flow_attributes : require\n"
    "#define INVOCATIONS (WG_ROWS * WG_COLS * SUBGROUP)\n"
    "layout(local_size_x = INVOCATIONS) in;\n"
    "layout(std430, binding = 0) readonly buffer A { uvec4 a[]; };\n"
    "layout(std430, binding = 1) readonly buffer B { uvec4 b[]; };\n"
    "layout(std430, binding = 2) writeonly buffer C { float c[]; };\n"
    "CUBEC_INFO(uint m; uint n; uint k;)\n"
    "const uint VEC = 8u; /* float16 per uvec4 */\n"
    "const uint A_STRIDE = TILE_K + VEC; /* shared row lengths in float16, padded */\n"
    "const uint B_STRIDE = TILE_N + VEC;\n"
    "const uint A_SIZE = TILE_M * A_STRIDE / VEC, B_SIZE = TILE_K * B_STRIDE / VEC;\n"
    "shared uvec4 ash[STAGES * A_SIZE];\n"
    "shared uvec4 bsh[STAGES * B_SIZE];\n"
    "const uint A_ROW_VECS = TILE_K / VEC;\n"
    "const uint A_ROWS_PER_PASS = INVOCATIONS / A_ROW_VECS;\n"
    "const uint A_PASSES = TILE_M / A_ROWS_PER_PASS;\n"
    "const uint B_ROW_VECS = TILE_N / VEC;\n"
    "const uint B_ROWS_PER_PASS = INVOCATIONS / B_ROW_VECS;\n"
    "const uint B_PASSES = TILE_K / B_ROWS_PER_PASS;\n"
    "const uint C_ROWS = TILE_M / WG_ROWS / LM;\n"
    "const uint C_COLS = TILE_N / WG_COLS / LN;\n"
    "uvec4 ra[A_PASSES], rb[B_PASSES];\n"
    "fcoopmatNV<32, gl_ScopeSubgroup, LM, LN> acc[C_ROWS][C_COLS];\n";
static const char gemm_f16_glsl_body[] =
    "/* The slices at depth k0 into registers. */\n"
    "void load(uint tile_row, uint tile_col, uint k0, uint n, uint k) {\n"
    "  const uint lid = gl_LocalInvocationIndex;\n"
    "  const uint a_row = lid / A_ROW_VECS, a_col = (lid % A_ROW_VECS) * VEC;\n"
    "  const uint b_row = lid / B_ROW_VECS, b_col = (lid % B_ROW_VECS) * VEC;\n"
    "  [[unroll]] for (uint p = 0; p < A_PASSES; p++)\n"
    "    ra[p] = a[((tile_row + a_row + p * A_ROWS_PER_PASS) * k + k0 + a_col) / VEC];\n"
    "  [[unroll]] for (uint p = 0; p < B_PASSES; p++)\n"
    "    rb[p] = b[((k0 + b_row + p * B_ROWS_PER_PASS) * n + tile_col + b_col) / VEC];\n"
    "}\n"
    "/* The registers into shared stage s. */\n"
    "void store(uint s) {\n"
    "  const uint lid = gl_LocalInvocationIndex;\n"
    "  const uint a_row = lid / A_ROW_VECS, a_col = (lid % A_ROW_VECS) * VEC;\n"
    "  const uint b_row = lid / B_ROW_VECS, b_col = (lid % B_ROW_VECS) * VEC;\n"
    "  [[unroll]] for (uint p = 0; p < A_PASSES; p++)\n"
    "    ash[s * A_SIZE + ((a_row + p * A_ROWS_PER_PASS) * A_STRIDE + a_col) / VEC] = ra[p];\n"
    "  [[unroll]] for (uint p = 0; p < B_PASSES; p++)\n"
    "    bsh[s * B_SIZE + ((b_row + p * B_ROWS_PER_PASS) * B_STRIDE + b_col) / VEC] = rb[p];\n"
    "}\n"
    "/* This subgroup's products of shared stage s. */\n"
    "void multiply(uint s, uint sg_row, uint sg_col) {\n"
    "  [[unroll]] for (uint kk = 0; kk < TILE_K; kk += LK) {\n"
    "    fcoopmatNV<16, gl_ScopeSubgroup, LM, LK> ma[C_ROWS];\n"
    "    [[unroll]] for (uint i = 0; i < C_ROWS; i++)\n"
    "      coopMatLoadNV(ma[i], ash, s * A_SIZE + ((sg_row * C_ROWS + i) * LM * A_STRIDE + kk) / "
    "VEC,\n"
    "                    A_STRIDE / VEC, false);\n"
    "    [[unroll]] for (uint j = 0; j < C_COLS; j++) {\n"
    "      fcoopmatNV<16, gl_ScopeSubgroup, LK, LN> mb;\n"
    "      coopMatLoadNV(mb, bsh, s * B_SIZE + (kk * B_STRIDE + (sg_col * C_COLS + j) * LN) / "
    "VEC,\n"
    "                    B_STRIDE / VEC, false);\n"
    "      [[unroll]] for (uint i = 0; i < C_ROWS; i++)\n"
    "        acc[i][j] = coopMatMulAddNV(ma[i], mb, acc[i][j]);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "void main() {\n"
    "  const uint sg_row = gl_SubgroupID / WG_COLS, sg_col = gl_SubgroupID % WG_COLS;\n"
    "  const uint tile_row = gl_WorkGroupID.y * TILE_M, tile_col = gl_WorkGroupID.x * TILE_N;\n"
    "  const uint n = info.n, k = info.k;\n"
    "  [[unroll]] for (uint i = 0; i < C_ROWS; i++)\n"
    "    [[unroll]] for (uint j = 0; j < C_COLS; j++)\n"
    "      acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, LM, LN>(0.0);\n"
    "  load(tile_row, tile_col, 0, n, k);\n"
    "#if STAGES == 1\n"
    "  /* One stage: the next slices wait in registers while this one is multiplied. */\n"
    "  for (uint k0 = 0; k0 < k; k0 += TILE_K) {\n"
    "    barrier(); /* every subgroup is done reading the stage */\n"
    "    store(0);\n"
    "    barrier();\n"
    "    if (k0 + TILE_K < k) load(tile_row, tile_col, k0 + TILE_K, n, k);\n"
    "    multiply(0, sg_row, sg_col);\n"
    "  }\n"
    "#else\n"
    "  /* Two stages: the next slices go to the other stage while this one is multiplied, one\n"
    "   * barrier per step (the stage written was last read before the previous barrier). */\n"
    "  store(0);\n"
    "  barrier();\n"
    "  uint s = 0;\n"
    "  for (uint k0 = 0; k0 < k; k0 += TILE_K) {\n"
    "    const bool more = k0 + TILE_K < k;\n"
    "    if (more) load(tile_row, tile_col, k0 + TILE_K, n, k);\n"
    "    multiply(s, sg_row, sg_col);\n"
    "    if (more) store(s ^ 1u);\n"
    "    barrier();\n"
    "    s ^= 1u;\n"
    "  }\n"
    "#endif\n"
    "  [[unroll]] for (uint i = 0; i < C_ROWS; i++)\n"
    "    [[unroll]] for (uint j = 0; j < C_COLS; j++)\n"
    "      coopMatStoreNV(acc[i][j], c,\n"
    "                     (tile_row + (sg_row * C_ROWS + i) * LM) * n + tile_col +\n"
    "                         (sg_col * C_COLS + j) * LN,\n"
    "                     n, false);\n"
    "}\n";

/* The kernel's source in `buf` (at least sizeof head + sizeof body bytes); returns buf. */
static inline const char *gemm_f16_source(char *buf, size_t size)
{
    snprintf(buf, size, "%s%s", gemm_f16_glsl_head, gemm_f16_glsl_body);
    return buf;
}
#define GEMM_F16_SOURCE_SIZE (sizeof gemm_f16_glsl_head + sizeof gemm_f16_glsl_body)

/* The tiling: workgroup tile and subgroup grid. */
typedef struct gemm_f16_config {
    unsigned tile_m, tile_n, tile_k;
    unsigned wg_rows, wg_cols;
    unsigned stages;  /* shared-memory stages: 1 (next slices wait in registers) or 2 */
    unsigned shape_n; /* the N of the cooperative-matrix shape to prefer (8 or 16) */
} gemm_f16_config;

/* 128 x 256 x 32 tiles over 2 x 4 subgroups: each subgroup owns a 64 x 64 block of C. The fastest
 * of those tried on the H200 (docs/kernels.md, "Cooperative matrices"). */
#define GEMM_F16_DEFAULT ((gemm_f16_config){128, 256, 32, 2, 4, 1, 8})

/* The device's cooperative-matrix shape for float16 x float16 + float32 of the NV extension,
 * preferring 16 x `prefer_n` x 16 (16 x 8 x 16 is one tensor-core instruction on NVIDIA), into
 * *out; 0 when it has none, and *out is then 16 x 8 x 16 so that creating the kernel tells why it
 * cannot run. */
static inline int gemm_f16_pick_shape(const cubec_device_info *info, unsigned prefer_n,
                                      cubec_matrix_shape *out)
{
    int found = 0;
    *out = (cubec_matrix_shape){.m = 16, .n = 8, .k = 16};
    for (uint32_t i = 0; i < info->matrix_shape_count; i++) {
        const cubec_matrix_shape *s = &info->matrix_shapes[i];
        if (!s->nv || s->a != CUBEC_MATRIX_FLOAT16 || s->b != CUBEC_MATRIX_FLOAT16 ||
            s->c != CUBEC_MATRIX_FLOAT32 || s->result != CUBEC_MATRIX_FLOAT32)
            continue;
        if (!found || (s->m == 16 && s->n == prefer_n && s->k == 16)) *out = *s;
        found = 1;
    }
    return found;
}

/* The defines of the kernel for a shape, a tiling and the device's subgroup size. `text` holds
 * the values the defines point into. */
typedef struct gemm_f16_defines {
    char text[10][16];
    cubec_define list[10];
} gemm_f16_defines;

static inline void gemm_f16_make_defines(gemm_f16_defines *d, const cubec_matrix_shape *shape,
                                         const gemm_f16_config *cfg, uint32_t subgroup)
{
    static const char *const names[10] = {"LM",     "LN",      "LK",      "TILE_M",   "TILE_N",
                                          "TILE_K", "WG_ROWS", "WG_COLS", "SUBGROUP", "STAGES"};
    const unsigned values[10] = {shape->m,    shape->n,     shape->k,     cfg->tile_m, cfg->tile_n,
                                 cfg->tile_k, cfg->wg_rows, cfg->wg_cols, subgroup,    cfg->stages};
    for (int i = 0; i < 10; i++) {
        snprintf(d->text[i], sizeof d->text[i], "%u", values[i]);
        d->list[i] = (cubec_define){names[i], d->text[i]};
    }
}

/* NULL when the tiling works for a shape and subgroup size (whole subgroups per block of C,
 * whole passes of 16-byte loads per slice), else why not. */
static inline const char *gemm_f16_check_config(const gemm_f16_config *cfg,
                                                const cubec_matrix_shape *shape, uint32_t subgroup)
{
    const unsigned invocations = cfg->wg_rows * cfg->wg_cols * subgroup;
    if (!cfg->wg_rows || !cfg->wg_cols || !subgroup || !shape->m || !shape->n || !shape->k)
        return "a zero in the tiling";
    if (cfg->stages != 1 && cfg->stages != 2) return "STAGES must be 1 or 2";
    if (cfg->tile_m % (cfg->wg_rows * shape->m) || cfg->tile_n % (cfg->wg_cols * shape->n))
        return "the tile does not split into whole matrices per subgroup";
    if (cfg->tile_k % shape->k || cfg->tile_k % 8 || cfg->tile_n % 8)
        return "TILE_K and TILE_N must be multiples of 8 and TILE_K of the shape's K";
    const unsigned a_vecs = cfg->tile_k / 8, b_vecs = cfg->tile_n / 8;
    if (invocations % a_vecs || cfg->tile_m % (invocations / a_vecs) || invocations % b_vecs ||
        cfg->tile_k % (invocations / b_vecs))
        return "the slices do not split into whole passes of the workgroup's 16-byte loads";
    return NULL;
}

/* NULL when M x N x K fits the tiling, else why not. */
static inline const char *gemm_f16_check_shape(const gemm_f16_config *cfg, uint32_t m, uint32_t n,
                                               uint32_t k)
{
    if (m == 0 || m % cfg->tile_m) return "M must be a positive multiple of the tile's rows";
    if (n == 0 || n % cfg->tile_n) return "N must be a positive multiple of the tile's columns";
    if (k == 0 || k % cfg->tile_k) return "K must be a positive multiple of the tile's depth";
    return NULL;
}

#endif
