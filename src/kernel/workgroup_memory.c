/* Workgroup memory of a SPIR-V module (see workgroup_memory.h).
 *
 * One pass over the instructions suffices: SPIR-V defines every type and constant before its use,
 * and names (OpName) before both. Each id gets a small record of what defined it; a type's size
 * is computed when the type is defined, from the records of its parts. */
#include "kernel/workgroup_memory.h"

#include <spirv_cross/spirv.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPIRV_HEADER_WORDS 5u
/* The SPIR-V validator's default id bound; a module past it was refused before it got here. */
#define MAX_ID_BOUND 0x3fffffu
/* A size too large to count, kept below UINT64_MAX so sums stay ordered. */
#define SIZE_HUGE (UINT64_MAX - 1)

typedef struct id_info {
    uint64_t size;    /* types: bytes; integer constants: their value */
    uint32_t ref;     /* pointer types: the pointee; values: their type */
    uint32_t aux;     /* integer and float types: the width; pointer types: the storage class */
    uint32_t name_at; /* word index of the OpName string, 0 if none */
    uint32_t spec_id; /* specialization constants: SpecId + 1 (0: not decorated) */
    uint16_t op;      /* the opcode that defined the id */
    uint8_t unknown;  /* types: the size depends on a specialization-constant expression */
} id_info;

typedef struct walk {
    const uint32_t *words;
    size_t count;
    uint32_t bound;
    id_info *ids;
    const cubec_spec_constant *spec; /* the values given for the pipeline */
    uint32_t spec_count;
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

/* Records a type's size from its parts. */
static int size_type(const walk *w, size_t at, uint32_t n, uint32_t op, id_info *t)
{
    const uint32_t *ins = w->words + at;
    switch (op) {
    case SpvOpTypeBool: t->size = 4; return 1; /* as the validation layer counts it */
    case SpvOpTypeInt:
    case SpvOpTypeFloat:
        if (n < 3) return 0;
        t->aux = ins[2];
        t->size = ins[2] / 8;
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
        if (len->op == SpvOpConstant || len->op == SpvOpSpecConstant)
            t->size = mul_sat(elem->size, len->size);
        else
            t->unknown = 1; /* OpSpecConstantOp: a value only specialization would fix */
        t->unknown |= elem->unknown;
        return 1;
    }
    case SpvOpTypeStruct:
        for (uint32_t k = 2; k < n; k++) {
            const id_info *m = operand(w, at, n, k);
            if (!m) return 0;
            t->size = add_sat(t->size, m->size);
            t->unknown |= m->unknown;
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

static cubec_status add_variable(const walk *w, size_t at, uint32_t n, workgroup_memory *out)
{
    const uint32_t *ins = w->words + at;
    if (n < 4 || ins[3] != SpvStorageClassWorkgroup) return NULL;
    const id_info *ptr = operand(w, at, n, 1);
    if (!ptr || ptr->op != SpvOpTypePointer || ptr->ref >= w->bound) return malformed(at);
    const id_info *pointee = &w->ids[ptr->ref];
    if (pointee->unknown) {
        char name[80];
        id_name(w, ins[2], name, sizeof name);
        return status_make(CUBEC_UNSUPPORTED,
                           "Workgroup (shared) variable %s has an array length given by a "
                           "specialization-constant expression: cubec does not evaluate those, "
                           "so its size is unknown; use a literal length, a specialization "
                           "constant or a define",
                           name);
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
        } else if (op == SpvOpConstant || op == SpvOpSpecConstant || op == SpvOpSpecConstantOp) {
            id_info *c = operand(w, at, n, 2);
            if (!c) return malformed(at);
            c->op = (uint16_t)op;
            c->ref = ins[1];
            /* Integer lengths: the low word, and the high word of a 64-bit one. */
            if (op != SpvOpSpecConstantOp && n >= 4)
                c->size = n >= 5 ? ((uint64_t)ins[4] << 32 | ins[3]) : ins[3];
            /* A specialization constant counts with the value the pipeline gets (32-bit: the
             * only kind cubec_spec_constant sets), not with its default. */
            if (op == SpvOpSpecConstant && c->spec_id)
                for (uint32_t k = 0; k < w->spec_count; k++)
                    if (w->spec[k].id == c->spec_id - 1u) c->size = w->spec[k].value;
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
    return NULL;
}

cubec_status workgroup_memory_scan(const uint32_t *words, size_t word_count, workgroup_memory *out)
{
    return workgroup_memory_scan_specialized(words, word_count, NULL, 0, out);
}

cubec_status workgroup_memory_scan_specialized(const uint32_t *words, size_t word_count,
                                               const cubec_spec_constant *spec, uint32_t spec_count,
                                               workgroup_memory *out)
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
    free(w.ids);
    if (!s) *out = result;
    return s;
}
