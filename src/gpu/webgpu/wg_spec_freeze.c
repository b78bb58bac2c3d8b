/* Freezing specialization constants into a SPIR-V module for the WebGPU backend
 * (wg_spec_freeze.h says why). The values of OpSpecConstantOp expressions come from the
 * evaluator that measures Workgroup memory (kernel/workgroup_memory.h); then one pass rewrites
 * the module: types and constants precede their uses (SPIR-V's layout rule), so a composite's
 * constituents are known when it is met. Only the SpecId decorations, the workgroup size's
 * execution mode and the types-and-constants section change; the rest is copied. */
#include "gpu/webgpu/wg_spec_freeze.h"

#include "kernel/workgroup_memory.h"

#include <stdlib.h>
#include <string.h>

enum {
    OP_TYPE_BOOL = 20,
    OP_TYPE_INT = 21,
    OP_TYPE_FLOAT = 22,
    OP_CONSTANT_TRUE = 41,
    OP_CONSTANT_FALSE = 42,
    OP_CONSTANT = 43,
    OP_CONSTANT_COMPOSITE = 44,
    OP_CONSTANT_NULL = 46,
    OP_SPEC_CONSTANT_TRUE = 48,
    OP_SPEC_CONSTANT_FALSE = 49,
    OP_SPEC_CONSTANT = 50,
    OP_SPEC_CONSTANT_COMPOSITE = 51,
    OP_SPEC_CONSTANT_OP = 52,
    OP_DECORATE = 71,
    OP_FCONVERT = 115,
    OP_EXECUTION_MODE = 16,
    OP_EXECUTION_MODE_ID = 331,
    MODE_LOCAL_SIZE = 17,
    MODE_LOCAL_SIZE_ID = 38,
    DECORATION_SPEC_ID = 1,
    DECORATION_BUILT_IN = 11,
    BUILT_IN_WORKGROUP_SIZE = 25,
};

/* What the pass knows of an id. */
enum {
    ID_OTHER,
    ID_INT32,
    ID_INT64,
    ID_BOOL,
    ID_F16,
    ID_F32,
    ID_F64,
    ID_SCALAR,
    ID_CONSTANT,
    ID_COMPOSITE,
    ID_FLOAT
};

typedef struct freeze {
    uint32_t bound;
    /* Of type ids: ID_INT32, ID_INT64 (signed or not), ID_BOOL, ID_F16, ID_F32, ID_F64. */
    unsigned char *type_kind;
    /* Of constant ids: ID_SCALAR (a 32-bit integer or a boolean, value known), ID_FLOAT (a float
     * scalar, its bits in op_value and its type in float_type), ID_CONSTANT (of another type),
     * ID_COMPOSITE (a composite of constants); ID_OTHER: not a constant. */
    unsigned char *kind;
    uint32_t *value;      /* ID_SCALAR: the 32 bits (booleans 0 or 1) */
    size_t *at;           /* ID_COMPOSITE: where its instruction starts in the output */
    uint32_t *spec_value; /* by result id: the value given for its SpecId */
    unsigned char *given;
    uint64_t *op_value; /* by result id: an OpSpecConstantOp's value where op_known; ID_FLOAT's
                         * bits */
    unsigned char *op_known;
    unsigned char *float_type; /* ID_FLOAT's type kind: ID_F16, ID_F32 or ID_F64 */
} freeze;

/* Float bits between widths, for OpSpecConstantOp FConvert: glslang emits one for a half made
 * from a float specialization constant (float16_t(SLOPE)), which naga refuses. Rounding to
 * nearest even, as a driver folds it; NaN stays a (quiet) NaN. */
static uint32_t half_from_float(uint32_t x)
{
    uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
    if (exp == 0xffu) return sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0);
    int e = (int)exp - 127 + 15;
    if (e >= 31) return sign | 0x7c00u;
    if (e <= 0) { /* a subnormal half, or zero */
        if (e < -10) return sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e), h = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (h & 1u))) h++;
        return sign | h;
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* a carry may make it infinite */
    return sign | h;
}

static uint32_t float_from_half(uint32_t h)
{
    uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1fu) return sign | 0x7f800000u | (man << 13);
    if (exp) return sign | ((exp + 112u) << 23) | (man << 13);
    float v = (float)man * 0x1p-24f; /* a subnormal half: exact in a float */
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return sign | bits;
}

/* `bits` of a float of kind `from` as one of kind `to`; 0 where not folded (double to half,
 * which would round twice through float). */
static int convert_float(unsigned char from, unsigned char to, uint64_t bits, uint64_t *out)
{
    uint32_t f32;
    if (from == ID_F16) {
        f32 = float_from_half((uint32_t)bits);
    } else if (from == ID_F32) {
        f32 = (uint32_t)bits;
    } else {
        if (to == ID_F16) return 0;
        double d;
        memcpy(&d, &bits, sizeof d);
        float f = (float)d;
        memcpy(&f32, &f, sizeof f32);
    }
    if (to == ID_F16) {
        *out = half_from_float(f32);
    } else if (to == ID_F32) {
        *out = f32;
    } else {
        float f;
        memcpy(&f, &f32, sizeof f);
        double d = (double)f;
        memcpy(out, &d, sizeof d);
    }
    return 1;
}

static int has_spec_constants(const uint32_t *w, size_t n)
{
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        if (!len || i + len > n) return 0;
        if (op >= OP_SPEC_CONSTANT_TRUE && op <= OP_SPEC_CONSTANT_OP) return 1;
        i += len;
    }
    return 0;
}

static void freeze_free(freeze *f)
{
    free(f->type_kind);
    free(f->kind);
    free(f->value);
    free(f->at);
    free(f->spec_value);
    free(f->given);
    free(f->op_value);
    free(f->op_known);
    free(f->float_type);
}

static int freeze_alloc(freeze *f, uint32_t bound)
{
    f->bound = bound;
    f->type_kind = calloc(bound, 1);
    f->kind = calloc(bound, 1);
    f->value = calloc(bound, sizeof *f->value);
    f->at = calloc(bound, sizeof *f->at);
    f->spec_value = calloc(bound, sizeof *f->spec_value);
    f->given = calloc(bound, 1);
    f->op_value = calloc(bound, sizeof *f->op_value);
    f->op_known = calloc(bound, 1);
    f->float_type = calloc(bound, 1);
    return f->float_type && f->type_kind && f->kind && f->value && f->at && f->spec_value &&
           f->given && f->op_value && f->op_known;
}

/* The values given, by the result id their SpecId decorates. */
static void note_given(freeze *f, const uint32_t *w, size_t n, const gpu_spec_constant *spec,
                       uint32_t spec_count)
{
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        if (!len || i + len > n) return;
        if (op == OP_DECORATE && len >= 4 && w[i + 2] == DECORATION_SPEC_ID && w[i + 1] < f->bound)
            for (uint32_t s = 0; s < spec_count; s++)
                if (spec[s].id == w[i + 3]) {
                    f->spec_value[w[i + 1]] = spec[s].value;
                    f->given[w[i + 1]] = 1;
                }
        i += len;
    }
}

static int scalar(const freeze *f, uint32_t id, uint32_t *out)
{
    if (id >= f->bound || f->kind[id] != ID_SCALAR) return 0;
    *out = f->value[id];
    return 1;
}

/* The values of the module's OpSpecConstantOp results under `spec`, by result id, from the
 * evaluator that sizes Workgroup memory (kernel/workgroup_memory.h): one definition of what an
 * expression is worth, as the driver computes it. */
static cubec_status evaluate_ops(freeze *f, const uint32_t *w, size_t n,
                                 const gpu_spec_constant *spec, uint32_t spec_count)
{
    cubec_spec_constant given[GPU_MAX_SPEC_CONSTANTS];
    if (spec_count > GPU_MAX_SPEC_CONSTANTS) spec_count = GPU_MAX_SPEC_CONSTANTS;
    for (uint32_t s = 0; s < spec_count; s++)
        given[s] = (cubec_spec_constant){spec[s].id, spec[s].value};
    uint32_t count = 0;
    for (size_t i = 5; i < n;) {
        uint32_t len = w[i] >> 16;
        if (!len || i + len > n) break;
        if ((w[i] & 0xffffu) == OP_SPEC_CONSTANT_OP && len >= 3) count++;
        i += len;
    }
    if (!count) return NULL;
    uint32_t *ids = calloc(count, sizeof *ids);
    uint64_t *values = calloc(count, sizeof *values);
    unsigned char *known = calloc(count, 1);
    if (!ids || !values || !known) {
        free(ids);
        free(values);
        free(known);
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (module)");
    }
    uint32_t k = 0;
    for (size_t i = 5; i < n && k < count;) {
        uint32_t len = w[i] >> 16;
        if (!len || i + len > n) break;
        if ((w[i] & 0xffffu) == OP_SPEC_CONSTANT_OP && len >= 3) ids[k++] = w[i + 2];
        i += len;
    }
    cubec_status err =
        workgroup_memory_constants_known(w, n, given, spec_count, ids, k, values, known);
    /* A module the evaluator cannot walk is left to the translator, unfolded. */
    if (err && cubec_status_code(err) != CUBEC_OUT_OF_MEMORY) {
        cubec_status_free(err);
        err = NULL;
        memset(known, 0, count);
    }
    for (uint32_t j = 0; !err && j < k; j++)
        if (known[j] && ids[j] < f->bound) {
            f->op_known[ids[j]] = 1;
            f->op_value[ids[j]] = values[j];
        }
    free(ids);
    free(values);
    free(known);
    return err;
}

static void note_scalar(freeze *f, uint32_t id, uint32_t value)
{
    if (id >= f->bound) return;
    f->kind[id] = ID_SCALAR;
    f->value[id] = value;
}

/* The workgroup size as the execution mode's literals: the translator reads the size from
 * OpExecutionMode LocalSize alone, while SPIR-V lets a constant decorated BuiltIn WorkgroupSize
 * (glslang's form of local_size_x_id) take its place, and LocalSizeId take ids. */
static void set_local_size(const freeze *f, uint32_t *o, size_t mode_at, uint32_t builtin)
{
    if (!mode_at) return;
    uint32_t *m = o + mode_at, size[3];
    if (builtin && builtin < f->bound && f->kind[builtin] == ID_COMPOSITE) {
        const uint32_t *c = o + f->at[builtin];
        if ((c[0] >> 16) != 6) return;
        for (int i = 0; i < 3; i++)
            if (!scalar(f, c[3 + i], &size[i])) return;
    } else if (m[2] == MODE_LOCAL_SIZE_ID) {
        for (int i = 0; i < 3; i++)
            if (!scalar(f, m[3 + i], &size[i])) return;
    } else {
        return;
    }
    m[0] = (6u << 16) | OP_EXECUTION_MODE;
    m[2] = MODE_LOCAL_SIZE;
    for (int i = 0; i < 3; i++)
        m[3 + i] = size[i];
}

cubec_status wg_spec_freeze(const uint32_t *w, size_t n, const gpu_spec_constant *spec,
                            uint32_t spec_count, uint32_t **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    uint32_t *o = malloc((n ? n : 1) * sizeof *o);
    if (!o) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (module)");
    memcpy(o, w, n * sizeof *o);
    *out = o;
    *out_n = n;
    if (n < 5 || !has_spec_constants(w, n)) return NULL;
    freeze f;
    memset(&f, 0, sizeof f);
    if (!freeze_alloc(&f, w[3])) {
        freeze_free(&f);
        free(o);
        *out = NULL;
        *out_n = 0;
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (module)");
    }
    note_given(&f, w, n, spec, spec_count);
    cubec_status err = evaluate_ops(&f, w, n, spec, spec_count);
    if (err) {
        freeze_free(&f);
        free(o);
        *out = NULL;
        *out_n = 0;
        return err;
    }
    size_t at = 5, local_size_at = 0;
    uint32_t workgroup_size = 0; /* the id decorated BuiltIn WorkgroupSize */
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        if (!len || i + len > n) len = (uint32_t)(n - i); /* malformed: kept, the translator says */
        const uint32_t *x = w + i;
        uint32_t *y = o + at;
        memcpy(y, x, len * sizeof *y);
        size_t keep = len;
        uint32_t id = len >= 3 ? x[2] : 0;
        int known = id < f.bound;
        switch (op) {
        case OP_TYPE_BOOL:
            if (len >= 2 && x[1] < f.bound) f.type_kind[x[1]] = ID_BOOL;
            break;
        case OP_TYPE_FLOAT:
            if (len >= 3 && x[1] < f.bound && (x[2] == 16 || x[2] == 32 || x[2] == 64))
                f.type_kind[x[1]] = x[2] == 16 ? ID_F16 : x[2] == 32 ? ID_F32 : ID_F64;
            break;
        case OP_TYPE_INT:
            if (len >= 4 && x[1] < f.bound && (x[2] == 32 || x[2] == 64))
                f.type_kind[x[1]] = x[2] == 32 ? ID_INT32 : ID_INT64;
            break;
        case OP_DECORATE:
            /* The SpecId of a constant frozen below: a decoration constants may not carry. */
            if (len >= 4 && x[2] == DECORATION_SPEC_ID) keep = 0;
            if (len >= 4 && x[2] == DECORATION_BUILT_IN && x[3] == BUILT_IN_WORKGROUP_SIZE)
                workgroup_size = x[1];
            break;
        case OP_EXECUTION_MODE:
        case OP_EXECUTION_MODE_ID:
            if (len == 6 && (x[2] == MODE_LOCAL_SIZE || x[2] == MODE_LOCAL_SIZE_ID))
                local_size_at = at;
            break;
        case OP_CONSTANT_TRUE:
        case OP_CONSTANT_FALSE:
            if (known) note_scalar(&f, id, op == OP_CONSTANT_TRUE);
            break;
        case OP_SPEC_CONSTANT_TRUE:
        case OP_SPEC_CONSTANT_FALSE:
            if (known) {
                uint32_t v = f.given[id] ? f.spec_value[id] != 0 : op == OP_SPEC_CONSTANT_TRUE;
                y[0] = (len << 16) | (v ? OP_CONSTANT_TRUE : OP_CONSTANT_FALSE);
                note_scalar(&f, id, v);
            }
            break;
        case OP_CONSTANT:
        case OP_SPEC_CONSTANT:
            if (op == OP_SPEC_CONSTANT) {
                y[0] = (len << 16) | OP_CONSTANT;
                if (known && f.given[id] && len == 4) y[3] = f.spec_value[id];
            }
            if (known && len == 4 && x[1] < f.bound && f.type_kind[x[1]] == ID_INT32)
                note_scalar(&f, id, y[3]);
            else if (known && x[1] < f.bound && f.type_kind[x[1]] >= ID_F16 &&
                     f.type_kind[x[1]] <= ID_F64 &&
                     len == (f.type_kind[x[1]] == ID_F64 ? 5u : 4u)) {
                f.kind[id] = ID_FLOAT;
                f.float_type[id] = f.type_kind[x[1]];
                f.op_value[id] = y[3] | (len == 5 ? (uint64_t)y[4] << 32 : 0);
            } else if (known)
                f.kind[id] = ID_CONSTANT;
            break;
        case OP_CONSTANT_NULL:
            if (known) f.kind[id] = ID_CONSTANT;
            break;
        case OP_CONSTANT_COMPOSITE:
        case OP_SPEC_CONSTANT_COMPOSITE: {
            int constant = 1;
            for (uint32_t c = 3; c < len; c++)
                if (x[c] >= f.bound || f.kind[x[c]] == ID_OTHER) constant = 0;
            if (op == OP_SPEC_CONSTANT_COMPOSITE && constant)
                y[0] = (len << 16) | OP_CONSTANT_COMPOSITE;
            if (known && constant) {
                f.kind[id] = ID_COMPOSITE;
                f.at[id] = at;
            }
            break;
        }
        case OP_SPEC_CONSTANT_OP: {
            uint32_t type = len >= 2 ? x[1] : 0;
            unsigned char tk = type < f.bound ? f.type_kind[type] : 0;
            if (known && tk >= ID_F16 && tk <= ID_F64 && len == 5 && x[3] == OP_FCONVERT &&
                x[4] < f.bound && f.kind[x[4]] == ID_FLOAT) {
                uint64_t v;
                if (!convert_float(f.float_type[x[4]], tk, f.op_value[x[4]], &v)) break;
                y[0] = ((tk == ID_F64 ? 5u : 4u) << 16) | OP_CONSTANT;
                y[3] = (uint32_t)v;
                if (tk == ID_F64) y[4] = (uint32_t)(v >> 32);
                keep = tk == ID_F64 ? 5 : 4;
                f.kind[id] = ID_FLOAT;
                f.float_type[id] = tk;
                f.op_value[id] = v;
                break;
            }
            if (!known || !tk || tk > ID_BOOL || !f.op_known[id]) break;
            uint64_t v = f.op_value[id];
            if (tk == ID_BOOL) {
                y[0] = (3u << 16) | (v ? OP_CONSTANT_TRUE : OP_CONSTANT_FALSE);
                keep = 3;
                note_scalar(&f, id, v != 0);
            } else if (tk == ID_INT32) {
                y[0] = (4u << 16) | OP_CONSTANT;
                y[3] = (uint32_t)v;
                keep = 4;
                note_scalar(&f, id, (uint32_t)v);
            } else { /* 64 bits: the low word first */
                y[0] = (5u << 16) | OP_CONSTANT;
                y[3] = (uint32_t)v;
                y[4] = (uint32_t)(v >> 32);
                keep = 5;
                f.kind[id] = ID_CONSTANT;
            }
            break;
        }
        default: break;
        }
        at += keep;
        i += len;
    }
    set_local_size(&f, o, local_size_at, workgroup_size);
    freeze_free(&f);
    *out_n = at;
    return NULL;
}
