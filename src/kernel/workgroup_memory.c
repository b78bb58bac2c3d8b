/* Workgroup memory of a SPIR-V module (see workgroup_memory.h).
 *
 * One pass over the instructions suffices: SPIR-V defines every type and constant before its use,
 * and names (OpName) before both. Each id gets a small record of what defined it; a type's size
 * is computed when the type is defined, from the records of its parts. */
#include "kernel/workgroup_memory.h"

#include <spirv_cross/spirv.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPIRV_HEADER_WORDS 5u
/* The SPIR-V validator's default id bound; a module past it was refused before it got here. */
#define MAX_ID_BOUND 0x3fffffu
/* A size too large to count, kept below UINT64_MAX so sums stay ordered. */
#define SIZE_HUGE (UINT64_MAX - 1)

typedef struct id_info {
    uint64_t size;       /* types: bytes; integer and bool constants: their value (bool: 0 or 1) */
    uint32_t ref;        /* pointer types: the pointee; values: their type */
    uint32_t aux;        /* integer and float types: the width; pointer types: the storage class;
                            constants: the word index of the instruction that defined them */
    uint32_t name_at;    /* word index of the OpName string, 0 if none */
    uint32_t spec_id;    /* specialization constants: SpecId + 1 (0: not decorated) */
    uint16_t op;         /* the opcode that defined the id */
    uint8_t unknown;     /* types: the size depends on a value not evaluated; constants: their value
                            is not known (a float, an operation not evaluated, a division by 0) */
    uint8_t short_array; /* types: an array of length < 1 is (part of) it */
    uint8_t is_signed;   /* integer types: signed */
} id_info;

typedef struct walk {
    const uint32_t *words;
    size_t count;
    uint32_t bound;
    id_info *ids;
    const cubec_spec_constant *spec; /* the values given for the pipeline */
    uint32_t spec_count;
    uint32_t short_type;  /* the first array type whose length is below 1, 0 if none */
    int64_t short_length; /* ... its length */
} walk;

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > SIZE_HUGE - b ? SIZE_HUGE : a + b;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return a != 0 && b > SIZE_HUGE / a ? SIZE_HUGE : a * b;
}

/* The record of an id the instruction at word `at` refers to in word `at + k`, or NULL when the
 * instruction is too short or the id is out of bounds (a module the validator would refuse). */
static id_info *operand(const walk *w, size_t at, uint32_t n, uint32_t k)
{
    if (k >= n) return NULL;
    uint32_t id = w->words[at + k];
    return id != 0 && id < w->bound ? &w->ids[id] : NULL;
}

static int is_pointer_op(uint32_t op)
{
    switch (op) {
    case SpvOpUndef:
    case SpvOpFunctionParameter:
    case SpvOpVariable:
    case SpvOpAccessChain:
    case SpvOpInBoundsAccessChain:
    case SpvOpPtrAccessChain:
    case SpvOpInBoundsPtrAccessChain:
    case SpvOpCopyObject: return 1;
    default: return 0;
    }
}

/* The word (after the opcode) holding an atomic instruction's pointer; 0 when `op` is not one. */
static uint32_t atomic_pointer_word(uint32_t op)
{
    switch (op) {
    case SpvOpAtomicStore:
    case SpvOpAtomicFlagClear: return 1;
    case SpvOpAtomicLoad:
    case SpvOpAtomicExchange:
    case SpvOpAtomicCompareExchange:
    case SpvOpAtomicCompareExchangeWeak:
    case SpvOpAtomicIIncrement:
    case SpvOpAtomicIDecrement:
    case SpvOpAtomicIAdd:
    case SpvOpAtomicISub:
    case SpvOpAtomicSMin:
    case SpvOpAtomicUMin:
    case SpvOpAtomicSMax:
    case SpvOpAtomicUMax:
    case SpvOpAtomicAnd:
    case SpvOpAtomicOr:
    case SpvOpAtomicXor:
    case SpvOpAtomicFlagTestAndSet:
    case SpvOpAtomicFMinEXT:
    case SpvOpAtomicFMaxEXT:
    case SpvOpAtomicFAddEXT: return 3;
    default: return 0;
    }
}

static int is_constant_op(uint32_t op)
{
    switch (op) {
    case SpvOpConstantTrue:
    case SpvOpConstantFalse:
    case SpvOpConstant:
    case SpvOpConstantComposite:
    case SpvOpConstantNull:
    case SpvOpSpecConstantTrue:
    case SpvOpSpecConstantFalse:
    case SpvOpSpecConstant:
    case SpvOpSpecConstantComposite:
    case SpvOpSpecConstantOp: return 1;
    default: return 0;
    }
}

static int64_t sign_extend(uint64_t v, uint32_t width);

/* An array length must be at least 1 (a signed one read as signed): the validator checks literal
 * ones, but one that specialization sets is checked only by the driver, or by the validation
 * layer (VUID-VkPipelineShaderStageCreateInfo-pSpecializationInfo-06719). ggml's flash_attn has
 * a length of 0 with its defaults. */
static void note_length(walk *w, uint32_t type, const id_info *len)
{
    const id_info *lt = len->ref < w->bound ? &w->ids[len->ref] : NULL;
    if (!lt || lt->op != SpvOpTypeInt) return;
    int64_t v = lt->is_signed ? sign_extend(len->size, lt->aux)
                              : (len->size > INT64_MAX ? INT64_MAX : (int64_t)len->size);
    if (v >= 1) return;
    w->ids[type].short_array = 1;
    if (!w->short_type) {
        w->short_type = type;
        w->short_length = v;
    }
}

/* Records a type's size from its parts. */
static int size_type(walk *w, size_t at, uint32_t n, uint32_t op, id_info *t)
{
    const uint32_t *ins = w->words + at;
    switch (op) {
    case SpvOpTypeBool: t->size = 4; return 1; /* as the validation layer counts it */
    case SpvOpTypeInt:
    case SpvOpTypeFloat:
        if (n < 3) return 0;
        t->aux = ins[2];
        t->size = ins[2] / 8;
        if (op == SpvOpTypeInt && n >= 4) t->is_signed = ins[3] != 0;
        return 1;
    case SpvOpTypeVector:
    case SpvOpTypeMatrix: {
        const id_info *part = operand(w, at, n, 2);
        if (!part || n < 4) return 0;
        t->size = mul_sat(part->size, ins[3]);
        t->unknown = part->unknown;
        return 1;
    }
    case SpvOpTypeArray: {
        const id_info *elem = operand(w, at, n, 2), *len = operand(w, at, n, 3);
        if (!elem || !len) return 0;
        if (is_constant_op(len->op) && !len->unknown) {
            t->size = mul_sat(elem->size, len->size);
            note_length(w, ins[1], len);
        } else {
            t->unknown = 1; /* a length whose value was not evaluated */
        }
        t->unknown |= elem->unknown;
        t->short_array |= elem->short_array;
        return 1;
    }
    case SpvOpTypeStruct:
        for (uint32_t k = 2; k < n; k++) {
            const id_info *m = operand(w, at, n, k);
            if (!m) return 0;
            t->size = add_sat(t->size, m->size);
            t->unknown |= m->unknown;
            t->short_array |= m->short_array;
        }
        return 1;
    case SpvOpTypePointer: {
        if (n < 4 || !operand(w, at, n, 3)) return 0;
        t->aux = ins[2];
        t->ref = ins[3];
        t->size = 8;
        return 1;
    }
    default: return 1; /* opaque types, runtime arrays: no size of their own */
    }
}

static cubec_status malformed(size_t at)
{
    return status_make(CUBEC_INVALID_SPIRV,
                       "SPIR-V module does not walk as instructions at word %zu (a module the "
                       "validator should have refused)",
                       at);
}

/* Constants: integer and bool values are kept (what array lengths and workgroup sizes need),
 * with the values the pipeline's specialization constants get, and OpSpecConstantOp expressions
 * computed from them as the driver will (SPIR-V 2.2.2 "Specialization": integer arithmetic in
 * the result type's width, two's complement). Floats, composites as values and anything else are
 * left unknown: an array sized by one is refused (add_variable), not guessed. */

/* The bits of a value of `type`: an integer type's width, 1 for bool, 0 for anything else. */
static uint32_t value_width(const walk *w, uint32_t type)
{
    if (type == 0 || type >= w->bound) return 0;
    const id_info *t = &w->ids[type];
    if (t->op == SpvOpTypeBool) return 1;
    if (t->op == SpvOpTypeInt && t->aux >= 1 && t->aux <= 64) return t->aux;
    return 0;
}

static uint64_t truncate_to(uint64_t v, uint32_t width)
{
    return width >= 64 ? v : v & ((UINT64_C(1) << width) - 1u);
}

/* `v` (its low `width` bits) as a signed integer. */
static int64_t sign_extend(uint64_t v, uint32_t width)
{
    if (width >= 64) return (int64_t)v;
    uint64_t sign = UINT64_C(1) << (width - 1);
    uint64_t x = truncate_to(v, width);
    return (x & sign) ? -(int64_t)((~x & (sign - 1u)) + 1u) : (int64_t)x;
}

/* How many value operands an OpSpecConstantOp opcode takes; 0 for opcodes not evaluated. */
static uint32_t spec_op_arity(uint32_t opcode)
{
    switch (opcode) {
    case SpvOpSConvert:
    case SpvOpUConvert:
    case SpvOpSNegate:
    case SpvOpNot:
    case SpvOpLogicalNot: return 1;
    case SpvOpIAdd:
    case SpvOpISub:
    case SpvOpIMul:
    case SpvOpUDiv:
    case SpvOpSDiv:
    case SpvOpUMod:
    case SpvOpSRem:
    case SpvOpSMod:
    case SpvOpShiftRightLogical:
    case SpvOpShiftRightArithmetic:
    case SpvOpShiftLeftLogical:
    case SpvOpBitwiseOr:
    case SpvOpBitwiseXor:
    case SpvOpBitwiseAnd:
    case SpvOpLogicalOr:
    case SpvOpLogicalAnd:
    case SpvOpLogicalEqual:
    case SpvOpLogicalNotEqual:
    case SpvOpIEqual:
    case SpvOpINotEqual:
    case SpvOpULessThan:
    case SpvOpSLessThan:
    case SpvOpUGreaterThan:
    case SpvOpSGreaterThan:
    case SpvOpULessThanEqual:
    case SpvOpSLessThanEqual:
    case SpvOpUGreaterThanEqual:
    case SpvOpSGreaterThanEqual: return 2;
    case SpvOpSelect: return 3;
    default: return 0;
    }
}

/* The value of a known scalar constant operand, or NULL. */
static const id_info *known_constant(const walk *w, uint32_t id)
{
    if (id == 0 || id >= w->bound) return NULL;
    const id_info *c = &w->ids[id];
    return is_constant_op(c->op) && !c->unknown && value_width(w, c->ref) ? c : NULL;
}

/* OpCompositeExtract of a constant vector (gl_WorkGroupSize.x): its constituent's value. */
static int extract_constituent(const walk *w, const uint32_t *ins, uint32_t n, uint64_t *out)
{
    if (n != 6 || ins[4] == 0 || ins[4] >= w->bound) return 0;
    const id_info *comp = &w->ids[ins[4]];
    if (comp->op != SpvOpConstantComposite && comp->op != SpvOpSpecConstantComposite) return 0;
    const uint32_t *cins = w->words + comp->aux;
    uint32_t cn = cins[0] >> 16;
    if (ins[5] >= cn - 3u) return 0;
    const id_info *part = known_constant(w, cins[3 + ins[5]]);
    if (!part) return 0;
    *out = part->size;
    return 1;
}

/* Computes the OpSpecConstantOp at `at` into *out; 0 when it is not evaluated (an opcode not
 * listed, an operand not known, a division by zero or a shift past the width, which SPIR-V
 * leaves undefined). */
static int evaluate(const walk *w, size_t at, uint32_t n, uint32_t width, uint64_t *out)
{
    const uint32_t *ins = w->words + at;
    if (n < 5 || width == 0) return 0;
    uint32_t opcode = ins[3];
    uint64_t r = 0;
    if (opcode == SpvOpCompositeExtract) {
        if (!extract_constituent(w, ins, n, &r)) return 0;
        *out = truncate_to(r, width);
        return 1;
    }
    uint32_t arity = spec_op_arity(opcode);
    if (arity == 0 || n != 4 + arity) return 0;
    uint64_t v[3] = {0, 0, 0};
    uint32_t vw[3] = {1, 1, 1};
    for (uint32_t k = 0; k < arity; k++) {
        const id_info *c = known_constant(w, ins[4 + k]);
        if (!c) return 0;
        v[k] = c->size;
        vw[k] = value_width(w, c->ref);
    }
    const int64_t a = sign_extend(v[0], vw[0]), b = sign_extend(v[1], vw[1]);
    switch (opcode) {
    case SpvOpSConvert: r = (uint64_t)a; break;
    case SpvOpUConvert: r = v[0]; break;
    case SpvOpSNegate: r = 0u - v[0]; break;
    case SpvOpNot: r = ~v[0]; break;
    case SpvOpLogicalNot: r = v[0] == 0; break;
    case SpvOpIAdd: r = v[0] + v[1]; break;
    case SpvOpISub: r = v[0] - v[1]; break;
    case SpvOpIMul: r = v[0] * v[1]; break;
    case SpvOpUDiv:
        if (v[1] == 0) return 0;
        r = v[0] / v[1];
        break;
    case SpvOpUMod:
        if (v[1] == 0) return 0;
        r = v[0] % v[1];
        break;
    case SpvOpSDiv:
        if (b == 0) return 0;
        r = b == -1 ? 0u - (uint64_t)a : (uint64_t)(a / b);
        break;
    case SpvOpSRem: /* the sign of the dividend */
        if (b == 0) return 0;
        r = b == -1 ? 0u : (uint64_t)(a % b);
        break;
    case SpvOpSMod: { /* the sign of the divisor */
        if (b == 0) return 0;
        int64_t m = b == -1 ? 0 : a % b;
        if (m != 0 && (m < 0) != (b < 0)) m += b;
        r = (uint64_t)m;
        break;
    }
    case SpvOpShiftRightLogical:
        if (v[1] >= vw[0]) return 0;
        r = v[0] >> v[1];
        break;
    case SpvOpShiftRightArithmetic:
        if (v[1] >= vw[0]) return 0;
        r = a < 0 ? ~(~(uint64_t)a >> v[1]) : (uint64_t)a >> v[1];
        break;
    case SpvOpShiftLeftLogical:
        if (v[1] >= vw[0]) return 0;
        r = v[0] << v[1];
        break;
    case SpvOpBitwiseOr: r = v[0] | v[1]; break;
    case SpvOpBitwiseXor: r = v[0] ^ v[1]; break;
    case SpvOpBitwiseAnd: r = v[0] & v[1]; break;
    case SpvOpLogicalOr: r = v[0] || v[1]; break;
    case SpvOpLogicalAnd: r = v[0] && v[1]; break;
    case SpvOpLogicalEqual: r = (v[0] != 0) == (v[1] != 0); break;
    case SpvOpLogicalNotEqual: r = (v[0] != 0) != (v[1] != 0); break;
    case SpvOpIEqual: r = v[0] == v[1]; break;
    case SpvOpINotEqual: r = v[0] != v[1]; break;
    case SpvOpULessThan: r = v[0] < v[1]; break;
    case SpvOpSLessThan: r = a < b; break;
    case SpvOpUGreaterThan: r = v[0] > v[1]; break;
    case SpvOpSGreaterThan: r = a > b; break;
    case SpvOpULessThanEqual: r = v[0] <= v[1]; break;
    case SpvOpSLessThanEqual: r = a <= b; break;
    case SpvOpUGreaterThanEqual: r = v[0] >= v[1]; break;
    case SpvOpSGreaterThanEqual: r = a >= b; break;
    case SpvOpSelect: r = v[0] ? v[1] : v[2]; break;
    default: return 0;
    }
    *out = truncate_to(r, width);
    return 1;
}

/* Records a constant: its value where it is an integer or bool, the specialization value given
 * for its SpecId (32-bit: the only kind cubec_spec_constant sets) in place of its default. */
static cubec_status define_constant(const walk *w, size_t at, uint32_t n, uint32_t op)
{
    const uint32_t *ins = w->words + at;
    id_info *c = operand(w, at, n, 2);
    if (!c || ins[1] == 0 || ins[1] >= w->bound) return malformed(at);
    c->op = (uint16_t)op;
    c->ref = ins[1];
    c->aux = (uint32_t)at;
    const uint32_t width = value_width(w, ins[1]);
    switch (op) {
    case SpvOpConstantTrue:
    case SpvOpSpecConstantTrue: c->size = 1; break;
    case SpvOpConstantFalse:
    case SpvOpSpecConstantFalse:
    case SpvOpConstantNull: c->size = 0; break;
    case SpvOpConstant:
    case SpvOpSpecConstant:
        if (n < 4) return malformed(at);
        /* The low word, and the high word of a 64-bit one. */
        c->size = n >= 5 ? ((uint64_t)ins[4] << 32 | ins[3]) : ins[3];
        break;
    case SpvOpSpecConstantOp: c->unknown = !evaluate(w, at, n, width, &c->size); break;
    default: c->unknown = 1; /* a composite: its parts are read by extract_constituent */
    }
    int specializable =
        op == SpvOpSpecConstant || op == SpvOpSpecConstantTrue || op == SpvOpSpecConstantFalse;
    if (specializable && c->spec_id)
        for (uint32_t k = 0; k < w->spec_count; k++)
            if (w->spec[k].id == c->spec_id - 1u)
                c->size = op == SpvOpSpecConstant ? w->spec[k].value : w->spec[k].value != 0;
    if (width == 0)
        c->unknown = 1; /* a float or a composite: no integer value */
    else
        c->size = width == 1 ? c->size != 0 : truncate_to(c->size, width);
    return NULL;
}

/* What an id is called in messages: its OpName, or %id. */
static void id_name(const walk *w, uint32_t id, char *buf, size_t cap)
{
    const id_info *info = &w->ids[id];
    if (info->name_at) {
        /* The string is NUL-terminated inside its instruction (the validator checked it). */
        const char *s = (const char *)&w->words[info->name_at];
        if (s[0]) {
            size_t len = strnlen(s, cap - 3);
            buf[0] = '\'';
            memcpy(buf + 1, s, len);
            buf[len + 1] = '\'';
            buf[len + 2] = '\0';
            return;
        }
    }
    snprintf(buf, cap, "%%%u", id);
}

/* Notes the first problem these values leave the module with (workgroup_memory.problem). */
static void note_problem(const walk *w, uint32_t var, int problem, int64_t length,
                         workgroup_memory *out)
{
    if (out->problem) return;
    char name[80];
    id_name(w, var, name, sizeof name);
    out->problem = problem;
    out->length = length;
    snprintf(out->what, sizeof out->what, "%s", name);
}

static cubec_status add_variable(const walk *w, size_t at, uint32_t n, workgroup_memory *out)
{
    const uint32_t *ins = w->words + at;
    if (n < 4) return malformed(at);
    const id_info *ptr = operand(w, at, n, 1);
    if (!ptr || ptr->op != SpvOpTypePointer || ptr->ref >= w->bound) return malformed(at);
    const id_info *pointee = &w->ids[ptr->ref];
    const int shared = ins[3] == SpvStorageClassWorkgroup;
    if (pointee->short_array && !out->problem) {
        note_problem(w, ins[2], WORKGROUP_LENGTH_BELOW_ONE, w->short_length, out);
        out->what_shared = shared;
    }
    if (!shared) return NULL;
    if (pointee->unknown) {
        /* Not counted: its size is unknown (workgroup_memory_problem refuses the kernel). */
        if (!out->problem) {
            note_problem(w, ins[2], WORKGROUP_LENGTH_UNKNOWN, 0, out);
            out->what_shared = 1;
        }
        return NULL;
    }
    out->bytes = add_sat(out->bytes, pointee->size);
    out->variables++;
    return NULL;
}

static void check_atomic(const walk *w, size_t at, uint32_t n, uint32_t op, workgroup_memory *out)
{
    uint32_t k = atomic_pointer_word(op);
    const id_info *ptr = k ? operand(w, at, n, k) : NULL;
    if (!ptr || ptr->ref == 0 || ptr->ref >= w->bound) return;
    const id_info *type = &w->ids[ptr->ref];
    if (type->op != SpvOpTypePointer || type->aux != SpvStorageClassWorkgroup ||
        type->ref >= w->bound)
        return;
    const id_info *pointee = &w->ids[type->ref];
    if (pointee->op == SpvOpTypeInt && pointee->aux == 64) out->int64_atomics = 1;
}

static cubec_status walk_module(walk *w, workgroup_memory *out)
{
    for (size_t at = SPIRV_HEADER_WORDS; at < w->count;) {
        uint32_t n = w->words[at] >> 16, op = w->words[at] & 0xffffu;
        if (n == 0 || n > w->count - at) return malformed(at);
        const uint32_t *ins = w->words + at;
        if (op == SpvOpName) {
            id_info *target = operand(w, at, n, 1);
            if (target && n > 2) target->name_at = (uint32_t)(at + 2);
        } else if (op >= SpvOpTypeVoid && op < SpvOpTypeForwardPointer) {
            /* The core types (OpTypeForwardPointer's id is defined again by an OpTypePointer). */
            id_info *t = operand(w, at, n, 1);
            if (!t) return malformed(at);
            t->op = (uint16_t)op;
            if (!size_type(w, at, n, op, t)) return malformed(at);
        } else if (op == SpvOpDecorate && n >= 4 && ins[2] == SpvDecorationSpecId) {
            /* Annotations come before the constants they decorate. */
            id_info *target = operand(w, at, n, 1);
            if (target) target->spec_id = ins[3] + 1u;
        } else if (is_constant_op(op)) {
            RETURN_IF_ERROR(define_constant(w, at, n, op));
        } else if (is_pointer_op(op)) {
            id_info *v = operand(w, at, n, 2);
            if (!v || ins[1] >= w->bound) return malformed(at);
            v->op = (uint16_t)op;
            v->ref = ins[1];
            if (op == SpvOpVariable) RETURN_IF_ERROR(add_variable(w, at, n, out));
        } else {
            check_atomic(w, at, n, op, out);
        }
        at += n;
    }
    if (out->bytes == SIZE_HUGE) out->bytes = UINT64_MAX;
    if (w->short_type && !out->problem) {
        out->problem = WORKGROUP_LENGTH_BELOW_ONE;
        out->length = w->short_length;
        snprintf(out->what, sizeof out->what, "array type %%%u", w->short_type);
    }
    return NULL;
}

cubec_status workgroup_memory_problem(const workgroup_memory *wm)
{
    if (!wm || !wm->problem) return NULL;
    const char *kind = wm->what_shared ? "Workgroup (shared) variable " : "";
    if (wm->problem == WORKGROUP_LENGTH_UNKNOWN)
        return status_make(CUBEC_UNSUPPORTED,
                           "%s%s has an array length given by a specialization-constant "
                           "expression that cubec cannot evaluate (a float, an operation other "
                           "than integer arithmetic, bit, logical and comparison operations, "
                           "Select and CompositeExtract, or a division by zero), so its size is "
                           "unknown; use a literal length, a specialization constant or a define",
                           kind, wm->what);
    return status_make(CUBEC_INVALID_SPIRV,
                       "%s%s has an array length of %" PRId64
                       " with these specialization values: Vulkan requires every length to be "
                       "at least 1 once specialized "
                       "(VUID-VkPipelineShaderStageCreateInfo-pSpecializationInfo-06719); give "
                       "values that make it at least 1",
                       kind, wm->what, wm->length);
}

/* The walk with `spec`, and the values of the constants `ids` (`id_count` of them) once it is
 * done. */
static cubec_status scan(const uint32_t *words, size_t word_count, const cubec_spec_constant *spec,
                         uint32_t spec_count, const uint32_t *ids, uint32_t id_count,
                         uint64_t *values, unsigned char *known, workgroup_memory *out)
{
    if (!out) return INVALID_ARG("workgroup_memory_scan: out is NULL");
    if (!spec && spec_count)
        return INVALID_ARG("workgroup_memory_scan: spec is NULL with spec_count %u", spec_count);
    memset(out, 0, sizeof *out);
    if (!words) return INVALID_ARG("workgroup_memory_scan: words is NULL");
    if (word_count < SPIRV_HEADER_WORDS)
        return status_make(CUBEC_INVALID_SPIRV, "SPIR-V module of %zu words has no header",
                           word_count);
    uint32_t bound = words[3];
    if (bound == 0 || bound > MAX_ID_BOUND + 1)
        return status_make(CUBEC_INVALID_SPIRV, "SPIR-V module has an id bound of %u", bound);
    walk w = {words, word_count, bound, calloc(bound, sizeof(id_info)), spec, spec_count};
    if (!w.ids)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "host out of memory walking a SPIR-V module (%u ids)", bound);
    workgroup_memory result;
    memset(&result, 0, sizeof result);
    cubec_status s = walk_module(&w, &result);
    for (uint32_t k = 0; !s && k < id_count; k++) {
        const id_info *c = known_constant(&w, ids[k]);
        if (known) {
            known[k] = c != NULL;
            values[k] = c ? c->size : 0;
        } else if (!c) {
            char name[80] = "";
            if (ids[k] < bound) id_name(&w, ids[k], name, sizeof name);
            s = status_make(CUBEC_UNSUPPORTED,
                            "constant %s (id %u) is not an integer constant cubec can evaluate "
                            "(see docs/kernels.md, \"Specialization\")",
                            name[0] ? name : "?", ids[k]);
        } else {
            values[k] = c->size;
        }
    }
    free(w.ids);
    if (!s) *out = result;
    return s;
}

cubec_status workgroup_memory_scan(const uint32_t *words, size_t word_count, workgroup_memory *out)
{
    return scan(words, word_count, NULL, 0, NULL, 0, NULL, NULL, out);
}

cubec_status workgroup_memory_scan_specialized(const uint32_t *words, size_t word_count,
                                               const cubec_spec_constant *spec, uint32_t spec_count,
                                               workgroup_memory *out)
{
    return scan(words, word_count, spec, spec_count, NULL, 0, NULL, NULL, out);
}

cubec_status workgroup_memory_constants(const uint32_t *words, size_t word_count,
                                        const cubec_spec_constant *spec, uint32_t spec_count,
                                        const uint32_t *ids, uint32_t id_count, uint64_t *values)
{
    if (id_count && (!ids || !values))
        return INVALID_ARG("workgroup_memory_constants: ids or values is NULL with id_count %u",
                           id_count);
    workgroup_memory unused;
    return scan(words, word_count, spec, spec_count, ids, id_count, values, NULL, &unused);
}

cubec_status workgroup_memory_constants_known(const uint32_t *words, size_t word_count,
                                              const cubec_spec_constant *spec, uint32_t spec_count,
                                              const uint32_t *ids, uint32_t id_count,
                                              uint64_t *values, unsigned char *known)
{
    if (id_count && (!ids || !values || !known))
        return INVALID_ARG("workgroup_memory_constants_known: ids, values or known is NULL with "
                           "id_count %u",
                           id_count);
    workgroup_memory unused;
    return scan(words, word_count, spec, spec_count, ids, id_count, values, known, &unused);
}
