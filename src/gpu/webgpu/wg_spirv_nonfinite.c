/* Infinite and NaN float constants made at run time for WebGPU (wg_spirv_nonfinite.h): a quick
 * scan for such a constant (most modules have none and go no further), then the parse
 * (wg_spirv_parse.h) for where each instruction is and which of its words are ids, then one copy
 * of the module. */
#include "gpu/webgpu/wg_spirv_nonfinite.h"

#include "gpu/webgpu/wg_spirv_out.h"
#include "gpu/webgpu/wg_spirv_parse.h"

#include <stdlib.h>
#include <string.h>

enum {
    OP_NAME = 5,
    OP_LINE = 8,
    OP_EXT_INST = 12,
    OP_TYPE_INT = 21,
    OP_TYPE_FLOAT = 22,
    OP_CONSTANT = 43,
    OP_CONSTANT_COMPOSITE = 44,
    OP_SPEC_CONSTANT_COMPOSITE = 51,
    OP_FUNCTION = 54,
    OP_FUNCTION_PARAMETER = 55,
    OP_FUNCTION_END = 56,
    OP_VARIABLE = 59,
    OP_STORE = 62,
    OP_DECORATE = 71,
    OP_COMPOSITE_CONSTRUCT = 80,
    OP_FCONVERT = 115,
    OP_BITCAST = 124,
    OP_LABEL = 248,
    OP_NO_LINE = 317,
    OP_DECORATE_ID = 332,
    OP_DECORATE_STRING = 5632,
};

#define MAX_BOUND (1u << 22) /* beyond it the module is malformed for this purpose: left alone */

/* What a special id is: an infinite or NaN scalar constant, or a composite built of them. */
enum { PLAIN = 0, NONFINITE = 1, COMPOSITE = 2 };

static int is_nonfinite(uint32_t width, const uint32_t *value)
{
    switch (width) {
    case 16: return (value[0] & 0x7c00u) == 0x7c00u;
    case 32: return (value[0] & 0x7f800000u) == 0x7f800000u;
    case 64: return (value[1] & 0x7ff00000u) == 0x7ff00000u; /* low word first */
    default: return 0;
    }
}

/* The bits of the 32-bit float of the same class and sign as `value` (a `width`-bit float that
 * is_nonfinite): itself for 32 bits. */
static uint32_t f32_bits_of(uint32_t width, const uint32_t *value)
{
    if (width == 32) return value[0];
    uint32_t sign = width == 16 ? (value[0] & 0x8000u) << 16 : value[1] & 0x80000000u;
    int nan = width == 16 ? (value[0] & 0x3ffu) != 0 : ((value[1] & 0xfffffu) | value[0]) != 0;
    return sign | (nan ? 0x7fc00000u : 0x7f800000u);
}

/* The width of each 32-, 16- or 64-bit float type of the module, by id (calloc'ed, `bound`). */
static uint32_t *float_widths(const uint32_t *w, size_t n, uint32_t bound)
{
    uint32_t *width = calloc(bound, sizeof *width);
    if (!width) return NULL;
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        if (!len || i + len > n) break;
        /* A fourth word is an encoding (bfloat16, fp8): not IEEE, left alone. */
        if (op == OP_TYPE_FLOAT && len == 3 && w[i + 1] < bound) width[w[i + 1]] = w[i + 2];
        i += len;
    }
    return width;
}

/* Whether the module has an infinite or NaN float OpConstant at all. */
static int has_nonfinite(const uint32_t *w, size_t n, const uint32_t *width, uint32_t bound)
{
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        if (!len || i + len > n) return 0;
        if (op == OP_CONSTANT && len >= 4 && w[i + 1] < bound && width[w[i + 1]]) {
            uint32_t wd = width[w[i + 1]];
            if (len >= (wd == 64 ? 5u : 4u) && is_nonfinite(wd, &w[i + 3])) return 1;
        }
        i += len;
    }
    return 0;
}

/* --- The copy ------------------------------------------------------------------------------ */

typedef struct rewrite {
    const uint32_t *w;
    const wg_spirv *p;
    uint32_t bound, next; /* the module's bound, then the next fresh id */
    unsigned char *kind;  /* by id: PLAIN, NONFINITE, COMPOSITE */
    uint32_t *width;      /* by id: the width of a float type */
    uint32_t *bits_id;    /* by id: a NONFINITE constant's 32-bit integer constant */
    uint32_t *local;      /* by id: a special id's value in the function being copied */
    uint32_t *stamp;      /* by id: the function (1-based) that uses it */
    size_t *special;      /* instruction indices of the special ids, in declaration order */
    size_t special_count;
    uint32_t special_cap;
    uint32_t fid;      /* the function being copied (1-based) */
    uint32_t u32, f32; /* the 32-bit unsigned integer and float types (existing or new) */
    wg_spirv_out o;
} rewrite;

static uint32_t use_at(const rewrite *r, const wg_spirv_inst *in, uint32_t k)
{
    return wg_spirv_use(r->p, in, k);
}

static int special(const rewrite *r, uint32_t id)
{
    return id < r->bound && r->kind[id] != PLAIN;
}

/* The instruction with each special id it uses replaced by its function-local value;
 * `drop_init` leaves out a variable's initializer (its last word). */
static void put_remapped(rewrite *r, const wg_spirv_inst *in, int drop_init)
{
    size_t start = r->o.n;
    uint32_t len = in->len - (drop_init ? 1u : 0u);
    wg_spirv_put(&r->o, r->w + in->at, len);
    if (r->o.oom) return;
    if (drop_init) r->o.w[start] = (len << 16) | in->op;
    for (uint32_t k = 0; k < in->use_count; k++) {
        size_t word = r->p->uses[in->uses + k] - in->at;
        uint32_t id = r->w[in->at + word];
        if (word < len && special(r, id)) r->o.w[start + word] = r->local[id];
    }
}

/* The values of the special ids the function being copied uses, computed where it starts. */
static void put_values(rewrite *r)
{
    for (size_t s = 0; s < r->special_count; s++) {
        const wg_spirv_inst *c = &r->p->v[r->special[s]];
        if (r->stamp[c->result] != r->fid) continue;
        if (r->kind[c->result] == NONFINITE && r->width[c->type] == 32) {
            wg_spirv_put_inst(&r->o, OP_BITCAST,
                              (uint32_t[]){c->type, r->local[c->result], r->bits_id[c->result]}, 3);
        } else if (r->kind[c->result] == NONFINITE) {
            uint32_t f = r->next++;
            wg_spirv_put_inst(&r->o, OP_BITCAST, (uint32_t[]){r->f32, f, r->bits_id[c->result]}, 3);
            wg_spirv_put_inst(&r->o, OP_FCONVERT, (uint32_t[]){c->type, r->local[c->result], f}, 3);
        } else {
            /* The composite's words, as an OpCompositeConstruct of the function's values. */
            size_t start = r->o.n;
            wg_spirv_put(&r->o, r->w + c->at, c->len);
            if (r->o.oom) return;
            r->o.w[start] = (c->len << 16) | OP_COMPOSITE_CONSTRUCT;
            r->o.w[start + 2] = r->local[c->result];
            for (uint32_t k = 3; k < c->len; k++)
                if (special(r, r->w[c->at + k])) r->o.w[start + k] = r->local[r->w[c->at + k]];
        }
    }
}

/* Copies the function whose OpFunction is instruction `i`; returns the index after its end. */
static size_t put_function(rewrite *r, size_t i, uint32_t fid)
{
    const wg_spirv *p = r->p;
    size_t end = i;
    while (end < p->count && p->v[end].op != OP_FUNCTION_END)
        end++;
    /* Which special ids it uses, and the composites' parts. */
    for (size_t j = i; j < end; j++)
        for (uint32_t k = 0; k < p->v[j].use_count; k++) {
            uint32_t id = use_at(r, &p->v[j], k);
            if (special(r, id)) r->stamp[id] = fid;
        }
    for (size_t s = r->special_count; s-- > 0;) {
        const wg_spirv_inst *c = &p->v[r->special[s]];
        if (r->stamp[c->result] != fid || r->kind[c->result] != COMPOSITE) continue;
        for (uint32_t k = 1; k < c->use_count; k++)
            if (special(r, use_at(r, c, k))) r->stamp[use_at(r, c, k)] = fid;
    }
    for (size_t s = 0; s < r->special_count; s++) {
        uint32_t id = p->v[r->special[s]].result;
        if (r->stamp[id] == fid) r->local[id] = r->next++;
    }
    r->fid = fid;

    /* OpFunction, its parameters, the first block's label, variables and debug lines. */
    size_t j = i;
    while (j < end && (p->v[j].op == OP_FUNCTION || p->v[j].op == OP_FUNCTION_PARAMETER))
        put_remapped(r, &p->v[j++], 0);
    if (j < end && p->v[j].op == OP_LABEL) {
        put_remapped(r, &p->v[j++], 0);
        /* The block's variables come first, with debug lines and non-semantic instructions
         * (DebugScope) among them: the values go after the last one. */
        size_t vars = j, last = j;
        for (size_t k = j; k < end && (p->v[k].op == OP_VARIABLE || p->v[k].op == OP_LINE ||
                                       p->v[k].op == OP_NO_LINE || p->v[k].op == OP_EXT_INST);
             k++)
            if (p->v[k].op == OP_VARIABLE) last = k + 1;
        while (j < last) {
            const wg_spirv_inst *v = &p->v[j++];
            put_remapped(r, v, v->op == OP_VARIABLE && v->len == 5 && special(r, r->w[v->at + 4]));
        }
        put_values(r);
        /* Variables initialised from a special constant are stored to instead. */
        for (size_t k = vars; k < j; k++) {
            const wg_spirv_inst *v = &p->v[k];
            if (v->op == OP_VARIABLE && v->len == 5 && special(r, r->w[v->at + 4]))
                wg_spirv_put_inst(&r->o, OP_STORE,
                                  (uint32_t[]){v->result, r->local[r->w[v->at + 4]]}, 2);
        }
    }
    for (; j <= end && j < p->count; j++)
        put_remapped(r, &p->v[j], 0);
    return j;
}

/* The new types and the integer constants, where the module-scope declarations end. */
static void put_declarations(rewrite *r, uint32_t new_u32, uint32_t new_f32)
{
    if (new_u32) wg_spirv_put_inst(&r->o, OP_TYPE_INT, (uint32_t[]){r->u32, 32, 0}, 3);
    if (new_f32) wg_spirv_put_inst(&r->o, OP_TYPE_FLOAT, (uint32_t[]){r->f32, 32}, 2);
    for (size_t s = 0; s < r->special_count; s++) {
        const wg_spirv_inst *c = &r->p->v[r->special[s]];
        if (r->kind[c->result] != NONFINITE) continue;
        uint32_t bits = f32_bits_of(r->width[c->type], r->w + c->at + 3);
        wg_spirv_put_inst(&r->o, OP_CONSTANT, (uint32_t[]){r->u32, r->bits_id[c->result], bits}, 3);
    }
}

static int is_annotation(uint32_t op)
{
    return op == OP_NAME || op == OP_DECORATE || op == OP_DECORATE_ID || op == OP_DECORATE_STRING;
}

/* Marks the special ids of the module-scope declarations; 0 where one is used there other than
 * by a composite, a name or a decoration (the module is then left alone). */
static int find_special(rewrite *r, int *needs_f32)
{
    const wg_spirv *p = r->p;
    for (size_t i = 0; i < p->count && p->v[i].op != OP_FUNCTION; i++) {
        const wg_spirv_inst *in = &p->v[i];
        if (in->op == OP_TYPE_INT && in->len == 4 && r->w[in->at + 2] == 32 &&
            r->w[in->at + 3] == 0 && !r->u32)
            r->u32 = in->result;
        if (in->op == OP_TYPE_FLOAT && in->len == 3 && r->w[in->at + 2] == 32 && !r->f32)
            r->f32 = in->result;
        uint32_t mark = PLAIN;
        if (in->op == OP_CONSTANT && in->type < r->bound && r->width[in->type] &&
            in->len >= (r->width[in->type] == 64 ? 5u : 4u) &&
            is_nonfinite(r->width[in->type], r->w + in->at + 3)) {
            mark = NONFINITE;
            if (r->width[in->type] != 32) *needs_f32 = 1;
        } else if (in->op == OP_CONSTANT_COMPOSITE || in->op == OP_SPEC_CONSTANT_COMPOSITE) {
            for (uint32_t k = 1; k < in->use_count; k++)
                if (special(r, use_at(r, in, k))) mark = COMPOSITE;
        } else {
            for (uint32_t k = 0; k < in->use_count; k++)
                if (special(r, use_at(r, in, k)) && !(k == 0 && is_annotation(in->op))) return 0;
        }
        if (mark == PLAIN || in->result >= r->bound) continue;
        if (array_grow((void **)&r->special, &r->special_cap, (uint64_t)r->special_count + 1,
                       sizeof *r->special) != 0)
            return -1;
        r->kind[in->result] = (unsigned char)mark;
        r->special[r->special_count++] = i;
    }
    return 1;
}

static cubec_status oom(void)
{
    return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (SPIR-V float constants)");
}

cubec_status wg_spirv_nonfinite(const uint32_t *w, size_t n, uint32_t **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    if (n < 5 || w[3] == 0 || w[3] > MAX_BOUND) return NULL;
    rewrite r = {.w = w, .bound = w[3], .next = w[3]};
    r.width = float_widths(w, n, r.bound);
    if (!r.width) return oom();
    if (!has_nonfinite(w, n, r.width, r.bound)) {
        free(r.width);
        return NULL;
    }
    wg_spirv p;
    int parsed = 0;
    cubec_status err = wg_spirv_parse(w, n, &p, &parsed);
    r.p = &p;
    r.kind = calloc(r.bound, 1);
    r.bits_id = calloc(r.bound, sizeof *r.bits_id);
    r.local = calloc(r.bound, sizeof *r.local);
    r.stamp = calloc(r.bound, sizeof *r.stamp);
    int needs_f32 = 0, found = 0;
    if (!err && (!r.kind || !r.bits_id || !r.local || !r.stamp)) {
        err = oom();
    } else if (!err && parsed) {
        found = find_special(&r, &needs_f32);
        if (found < 0) err = oom();
    }
    /* Malformed (naga refuses it as it is), nothing special, or used where it cannot move. */
    if (!err && found == 1 && r.special_count) {
        uint32_t new_u32 = r.u32 ? 0 : (r.u32 = r.next++);
        uint32_t new_f32 = needs_f32 && !r.f32 ? (r.f32 = r.next++) : 0;
        for (size_t s = 0; s < r.special_count; s++) {
            uint32_t id = p.v[r.special[s]].result;
            if (r.kind[id] == NONFINITE) r.bits_id[id] = r.next++;
        }
        wg_spirv_put(&r.o, w, 5);
        int declared = 0;
        uint32_t fid = 0;
        for (size_t i = 0; i < p.count && !r.o.oom;) {
            const wg_spirv_inst *in = &p.v[i];
            if (in->op == OP_FUNCTION) {
                if (!declared) put_declarations(&r, new_u32, new_f32);
                declared = 1;
                i = put_function(&r, i, ++fid);
                continue;
            }
            int gone = (in->result && special(&r, in->result)) ||
                       (is_annotation(in->op) && in->use_count && special(&r, use_at(&r, in, 0)));
            if (!gone) wg_spirv_put(&r.o, w + in->at, in->len);
            i++;
        }
        if (!declared) put_declarations(&r, new_u32, new_f32);
        if (r.o.oom) {
            err = oom();
            free(r.o.w);
        } else {
            r.o.w[3] = r.next;
            *out = r.o.w;
            *out_n = r.o.n;
        }
    }
    wg_spirv_free(&p);
    free(r.kind);
    free(r.bits_id);
    free(r.local);
    free(r.stamp);
    free(r.special);
    free(r.width);
    return err;
}
