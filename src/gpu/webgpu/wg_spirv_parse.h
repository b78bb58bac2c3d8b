/* A SPIR-V module read by SPIRV-Tools' binary parser for the WebGPU backend's rewrites and
 * diagnoses of modules before and after naga: where each instruction is, and which of its words
 * are ids it uses (a hand-written table of every opcode's operands would be the larger risk). */
#ifndef CUBEC_GPU_WEBGPU_WG_SPIRV_PARSE_H
#define CUBEC_GPU_WEBGPU_WG_SPIRV_PARSE_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct wg_spirv_inst {
    size_t at; /* word index of the instruction */
    uint32_t len, op, result, type;
    size_t uses;        /* index into wg_spirv.uses of its first id operand (its result excluded) */
    uint32_t use_count; /* its type id counts as one */
} wg_spirv_inst;

typedef struct wg_spirv {
    const uint32_t *w; /* the module's words (not owned) */
    size_t n;
    wg_spirv_inst *v; /* the instructions, in order */
    size_t count;
    size_t *uses; /* word indices of id operands, instruction after instruction */
} wg_spirv;

/* Reads the module `w` (n words) into *out (wg_spirv_free it, also on failure). *parsed is 0 where
 * the parser refuses the module (malformed: left for naga to refuse). CUBEC_OUT_OF_MEMORY only. */
MUST_USE cubec_status wg_spirv_parse(const uint32_t *w, size_t n, wg_spirv *out, int *parsed);
void wg_spirv_free(wg_spirv *m);

/* The id that instruction `in`'s k-th id operand names. */
static inline uint32_t wg_spirv_use(const wg_spirv *m, const wg_spirv_inst *in, uint32_t k)
{
    return m->w[m->uses[in->uses + k]];
}

#endif
