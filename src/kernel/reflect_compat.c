/* Cooperative-matrix modules for an older SPIRV-Cross (see reflect_compat.h). */
#include "kernel/reflect_compat.h"

#include <stdlib.h>
#include <string.h>

enum {
    HEADER = 5,
    OP_UNDEF = 1,
    OP_NAME = 5,
    OP_ENTRY_POINT = 15,
    OP_MEMBER_NAME = 6,
    OP_TYPE_VOID = 19,
    OP_TYPE_ARRAY = 28,
    OP_TYPE_RUNTIME_ARRAY = 29,
    OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32,
    OP_TYPE_FUNCTION = 33,
    OP_CONSTANT_COMPOSITE = 44,
    OP_CONSTANT_NULL = 46,
    OP_SPEC_CONSTANT_COMPOSITE = 51,
    OP_SPEC_CONSTANT_OP = 52,
    OP_FUNCTION = 54,
    OP_FUNCTION_END = 56,
    OP_VARIABLE = 59,
    OP_DECORATE = 71,
    OP_MEMBER_DECORATE = 72,
    OP_LABEL = 248,
    OP_RETURN = 253,
    OP_UNREACHABLE = 255,
    OP_TYPE_COOPERATIVE_MATRIX_KHR = 4456,
    OP_TYPE_COOPERATIVE_MATRIX_NV = 5358,
};

/* Marks for ids: built on a cooperative-matrix type (dropped), or the void type. */
enum { GONE = 1, VOID = 2 };

static int is_matrix_type(uint32_t op)
{
    return op == OP_TYPE_COOPERATIVE_MATRIX_KHR || op == OP_TYPE_COOPERATIVE_MATRIX_NV;
}

static int gone(const unsigned char *marks, uint32_t bound, uint32_t id)
{
    return id < bound && (marks[id] & GONE);
}

/* Which words of a declaration name ids it is built on, and where its result id is; 0 for
 * instructions that are not checked here. Types have the result at word 1, constants and
 * variables their result type at word 1 and result at word 2. */
static int declaration(uint32_t op, uint32_t *result_at, uint32_t *first_operand)
{
    switch (op) {
    case OP_TYPE_POINTER: *result_at = 1, *first_operand = 3; return 1;
    case OP_TYPE_ARRAY:
    case OP_TYPE_RUNTIME_ARRAY:
    case OP_TYPE_STRUCT:
    case OP_TYPE_FUNCTION: *result_at = 1, *first_operand = 2; return 1;
    case OP_CONSTANT_COMPOSITE:
    case OP_SPEC_CONSTANT_COMPOSITE:
    case OP_CONSTANT_NULL:
    case OP_UNDEF: *result_at = 2, *first_operand = 3; return 1;
    /* Word 3 is a literal: OpVariable's storage class, OpSpecConstantOp's opcode. */
    case OP_VARIABLE:
    case OP_SPEC_CONSTANT_OP: *result_at = 2, *first_operand = 4; return 1;
    default: return 0;
    }
}

/* Marks what the declarations outside functions build on a cooperative-matrix type; 1 when the
 * module declares one. Declarations come in dependency order, so one pass sees them all. */
static int mark(const uint32_t *w, size_t n, unsigned char *marks, uint32_t bound)
{
    int any = 0, in_function = 0;
    for (size_t i = HEADER; i < n;) {
        uint32_t count = w[i] >> 16, op = w[i] & 0xffffu;
        if (count == 0 || count > n - i) break;
        if (op == OP_FUNCTION) in_function = 1;
        if (op == OP_FUNCTION_END) in_function = 0;
        uint32_t result_at, first;
        if (!in_function && is_matrix_type(op) && count > 1 && w[i + 1] < bound) {
            marks[w[i + 1]] |= GONE;
            any = 1;
        } else if (!in_function && op == OP_TYPE_VOID && count > 1 && w[i + 1] < bound) {
            marks[w[i + 1]] |= VOID;
        } else if (!in_function && declaration(op, &result_at, &first) && count > result_at) {
            int built_on = result_at == 2 && gone(marks, bound, w[i + 1]);
            for (uint32_t k = first; k < count && !built_on; k++)
                built_on = gone(marks, bound, w[i + k]);
            if (built_on && w[i + result_at] < bound) marks[w[i + result_at]] |= GONE;
        }
        i += count;
    }
    return any;
}

/* Whether instruction `w` (outside a function body) goes into the copy. */
static int keep(const uint32_t *w, uint32_t count, const unsigned char *marks, uint32_t bound)
{
    uint32_t op = w[0] & 0xffffu, result_at, first;
    if (is_matrix_type(op)) return 0;
    if (op == OP_NAME || op == OP_MEMBER_NAME || op == OP_DECORATE || op == OP_MEMBER_DECORATE)
        return count < 2 || !gone(marks, bound, w[1]);
    if (declaration(op, &result_at, &first) && count > result_at)
        return !gone(marks, bound, w[result_at]);
    return 1;
}

/* Copies an OpEntryPoint less the interface variables that were dropped (SPIR-V 1.4 lists
 * every global, Private matrices too); returns the words written. */
static uint32_t copy_entry_point(const uint32_t *w, uint32_t count, const unsigned char *marks,
                                 uint32_t bound, uint32_t *out)
{
    uint32_t i = 3; /* after the execution model and the function: the name, nul-terminated */
    while (i < count) {
        uint32_t word = w[i++];
        if ((word >> 24) == 0 || ((word >> 16) & 0xffu) == 0 || ((word >> 8) & 0xffu) == 0 ||
            (word & 0xffu) == 0)
            break;
    }
    memcpy(out, w, i * sizeof *out);
    uint32_t used = i;
    for (; i < count; i++)
        if (!gone(marks, bound, w[i])) out[used++] = w[i];
    out[0] = (used << 16) | OP_ENTRY_POINT;
    return used;
}

cubec_status reflect_compat_copy(const uint32_t *w, size_t n, uint32_t **out, size_t *out_count)
{
    *out = NULL;
    *out_count = 0;
    if (!w || n < HEADER) return NULL;
    uint32_t bound = w[3];
    unsigned char *marks = calloc(bound ? bound : 1, 1);
    uint32_t *copy = malloc(2 * n * sizeof *copy); /* a body may shrink to less than its return */
    if (!marks || !copy) {
        free(marks);
        free(copy);
        return status_make(CUBEC_OUT_OF_MEMORY, "SPIR-V reflection: out of host memory");
    }
    if (!mark(w, n, marks, bound)) {
        free(marks);
        free(copy);
        return NULL;
    }
    memcpy(copy, w, HEADER * sizeof *copy);
    size_t used = HEADER;
    /* In a function: 0 outside, 1 before its first label, 2 in its body (skipped); `returns`
     * says what ends the reduced body, `skip` drops a function built on a matrix type. */
    int state = 0, skip = 0;
    uint32_t end = OP_RETURN;
    for (size_t i = HEADER; i < n;) {
        uint32_t count = w[i] >> 16, op = w[i] & 0xffffu;
        if (count == 0 || count > n - i) break;
        int emit;
        if (op == OP_FUNCTION && count >= 5) {
            state = 1;
            skip = gone(marks, bound, w[i + 1]) || gone(marks, bound, w[i + 4]);
            end = w[i + 1] < bound && (marks[w[i + 1]] & VOID) ? OP_RETURN : OP_UNREACHABLE;
            emit = !skip;
        } else if (op == OP_FUNCTION_END) {
            emit = !skip;
            if (emit && state == 2) copy[used++] = (1u << 16) | end;
            state = 0;
        } else if (state == 1 && op == OP_LABEL) {
            emit = !skip;
            state = 2;
        } else if (state == 2) {
            emit = 0;
        } else if (state == 1) {
            emit = !skip; /* parameters */
        } else {
            emit = keep(w + i, count, marks, bound);
        }
        if (emit && op == OP_ENTRY_POINT) {
            used += copy_entry_point(w + i, count, marks, bound, copy + used);
        } else if (emit) {
            memcpy(copy + used, w + i, count * sizeof *copy);
            used += count;
        }
        i += count;
    }
    free(marks);
    *out = copy;
    *out_count = used;
    return NULL;
}
