/* The words of a SPIR-V module being written by one of the WebGPU backend's rewrites
 * (wg_spirv_aliases.c, wg_spirv_nonfinite.c): appended whole instructions, growing as needed. A
 * failed growth sets `oom` and drops every later word, so a rewrite checks once at its end. */
#ifndef CUBEC_GPU_WEBGPU_WG_SPIRV_OUT_H
#define CUBEC_GPU_WEBGPU_WG_SPIRV_OUT_H

#include "base/array.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct wg_spirv_out {
    uint32_t *w; /* malloc'ed; the caller takes or frees it */
    size_t n;
    uint32_t cap;
    int oom;
} wg_spirv_out;

static inline void wg_spirv_put(wg_spirv_out *o, const uint32_t *words, size_t count)
{
    if (o->oom) return;
    if (array_grow_ex((void **)&o->w, &o->cap, (uint64_t)o->n + count, sizeof *o->w, 1024,
                      UINT32_MAX, realloc) != 0) {
        o->oom = 1;
        return;
    }
    memcpy(o->w + o->n, words, count * sizeof *words);
    o->n += count;
}

/* One instruction: its opcode and the `count` words after its head. */
static inline void wg_spirv_put_inst(wg_spirv_out *o, uint32_t op, const uint32_t *operands,
                                     uint32_t count)
{
    uint32_t head = (count + 1u) << 16 | op;
    wg_spirv_put(o, &head, 1);
    wg_spirv_put(o, operands, count);
}

#endif
