/* Buffer bindings declared more than once, merged for WebGPU (wg_spirv_aliases.h): the module read
 * once (wg_spirv_parse.h) for its storage buffers, their bindings and the shape of each block;
 * every use of a vector view checked; then one copy in which each access through a vector view is
 * one through the scalar view of its binding. */
#include "gpu/webgpu/wg_spirv_aliases.h"

#include "gpu/webgpu/wg_spirv_out.h"
#include "gpu/webgpu/wg_spirv_parse.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum {
    OP_NAME = 5,
    OP_MEMBER_NAME = 6,
    OP_ENTRY_POINT = 15,
    OP_TYPE_INT = 21,
    OP_TYPE_FLOAT = 22,
    OP_TYPE_VECTOR = 23,
    OP_TYPE_RUNTIME_ARRAY = 29,
    OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32,
    OP_CONSTANT = 43,
    OP_FUNCTION = 54,
    OP_VARIABLE = 59,
    OP_LOAD = 61,
    OP_STORE = 62,
    OP_ACCESS_CHAIN = 65,
    OP_IN_BOUNDS_ACCESS_CHAIN = 66,
    OP_ARRAY_LENGTH = 68,
    OP_DECORATE = 71,
    OP_MEMBER_DECORATE = 72,
    OP_COMPOSITE_CONSTRUCT = 80,
    OP_COMPOSITE_EXTRACT = 81,
    OP_UDIV = 134,
    OP_IADD = 128,
    OP_IMUL = 132,
    OP_DECORATE_ID = 332,
    OP_DECORATE_STRING = 5632,
    STORAGE_BUFFER = 12,
    DEC_ARRAY_STRIDE = 6,
    DEC_BINDING = 33,
    DEC_SET = 34,
    DEC_OFFSET = 35,
};

#define MAX_BOUND (1u << 22) /* beyond it the module is left for naga to judge */

/* What the module declares, by id. */
typedef struct decl {
    uint32_t *set, *binding, *stride, *offset0;
    unsigned char *has_binding, *has_offset0;
    uint32_t *width;   /* a scalar type's width in bits */
    uint32_t *comp;    /* a vector type's component type */
    uint32_t *count;   /* a vector type's component count, a struct's member count */
    uint32_t *member0; /* a struct's first member type, a runtime array's element type */
    uint32_t *pointee; /* a pointer type's pointee */
    uint32_t *storage; /* a pointer type's storage class */
    uint32_t *type_of; /* an id's result type */
    size_t *at;        /* where an id is defined (word index), 0 if not */
} decl;

/* A storage buffer variable that shares its binding. */
typedef struct view {
    uint32_t var, block, elem, scalar, comps, stride; /* stride in scalars */
    int simple;        /* a block of one runtime array at offset 0 of scalars or vectors of them */
    struct view *base; /* the scalar view of its binding (itself for the base) */
} view;

typedef struct merge {
    const wg_spirv *m;
    decl d;
    view *views;
    uint32_t view_count;
    view **by_var;     /* by id: the view of an aliased variable, NULL otherwise */
    uint32_t *elem_of; /* by id: the vector view's element pointer it is (its var), or 0 */
    uint32_t *base_id; /* by id: an element pointer's scalar index (a fresh id) */
    uint32_t bound, next;
    /* Constants the rewrite needs: (type, value) -> id, declared before the functions. */
    uint32_t (*consts)[3];
    size_t const_count;
    uint32_t const_cap;
    uint32_t *ptr_of;      /* by scalar type: its StorageBuffer pointer type (existing or new) */
    uint32_t *new_ptr_for; /* scalar types whose pointer type is new */
    size_t new_ptr_count;
    wg_spirv_out out;
} merge;

static const uint32_t *w_of(const merge *g)
{
    return g->m->w;
}

static void put(merge *g, const uint32_t *words, size_t count)
{
    wg_spirv_put(&g->out, words, count);
}

static void put_inst(merge *g, uint32_t op, const uint32_t *operands, uint32_t count)
{
    wg_spirv_put_inst(&g->out, op, operands, count);
}

/* The id of the constant `value` of the integer type `type`, added to those to declare. */
static uint32_t constant(merge *g, uint32_t type, uint32_t value)
{
    for (size_t i = 0; i < g->const_count; i++)
        if (g->consts[i][0] == type && g->consts[i][1] == value) return g->consts[i][2];
    if (array_grow((void **)&g->consts, &g->const_cap, (uint64_t)g->const_count + 1,
                   sizeof *g->consts) != 0) {
        g->out.oom = 1;
        return 0;
    }
    g->consts[g->const_count][0] = type;
    g->consts[g->const_count][1] = value;
    g->consts[g->const_count][2] = g->next++;
    return g->consts[g->const_count++][2];
}

static void free_decl(decl *d)
{
    free(d->set), free(d->binding), free(d->stride), free(d->offset0), free(d->has_binding);
    free(d->has_offset0), free(d->width), free(d->comp), free(d->count), free(d->member0);
    free(d->pointee), free(d->storage), free(d->type_of), free(d->at);
}

static int read_decl(merge *g)
{
    decl *d = &g->d;
    uint32_t b = g->bound;
    d->set = calloc(b, 4), d->binding = calloc(b, 4), d->stride = calloc(b, 4);
    d->offset0 = calloc(b, 4), d->has_binding = calloc(b, 1), d->has_offset0 = calloc(b, 1);
    d->width = calloc(b, 4), d->comp = calloc(b, 4), d->count = calloc(b, 4);
    d->member0 = calloc(b, 4), d->pointee = calloc(b, 4), d->storage = calloc(b, 4);
    d->type_of = calloc(b, 4), d->at = calloc(b, sizeof *d->at);
    if (!d->set || !d->binding || !d->stride || !d->offset0 || !d->has_binding || !d->has_offset0 ||
        !d->width || !d->comp || !d->count || !d->member0 || !d->pointee || !d->storage ||
        !d->type_of || !d->at)
        return 0;
    const uint32_t *w = w_of(g);
    for (size_t i = 0; i < g->m->count; i++) {
        const wg_spirv_inst *in = &g->m->v[i];
        const uint32_t *o = w + in->at + 1; /* the operands */
        uint32_t len = in->len, r = in->result;
        if (r >= b) continue;
        if (r) d->at[r] = in->at, d->type_of[r] = in->type;
        switch (in->op) {
        case OP_DECORATE:
            if (len >= 4 && o[0] < b) {
                if (o[1] == DEC_SET) d->set[o[0]] = o[2];
                if (o[1] == DEC_BINDING) d->binding[o[0]] = o[2], d->has_binding[o[0]] = 1;
                if (o[1] == DEC_ARRAY_STRIDE) d->stride[o[0]] = o[2];
            }
            break;
        case OP_MEMBER_DECORATE:
            if (len >= 5 && o[0] < b && o[1] == 0 && o[2] == DEC_OFFSET)
                d->offset0[o[0]] = o[3], d->has_offset0[o[0]] = 1;
            break;
        case OP_TYPE_INT:
            if (len >= 3) d->width[r] = o[1];
            break;
        case OP_TYPE_FLOAT:
            if (len == 3) d->width[r] = o[1];
            break;
        case OP_TYPE_VECTOR:
            if (len >= 4) d->comp[r] = o[1], d->count[r] = o[2];
            break;
        case OP_TYPE_RUNTIME_ARRAY:
            if (len >= 3) d->member0[r] = o[1];
            break;
        case OP_TYPE_STRUCT:
            d->count[r] = len - 2;
            if (len >= 3) d->member0[r] = o[1];
            break;
        case OP_TYPE_POINTER:
            if (len >= 4) d->storage[r] = o[1], d->pointee[r] = o[2];
            break;
        default: break;
        }
    }
    return 1;
}

/* The views of the storage buffers whose set and binding another storage buffer has. */
static int find_views(merge *g)
{
    const decl *d = &g->d;
    const uint32_t *w = w_of(g);
    uint32_t vars = 0;
    for (size_t i = 0; i < g->m->count; i++) {
        const wg_spirv_inst *in = &g->m->v[i];
        if (in->op == OP_FUNCTION) break;
        if (in->op == OP_VARIABLE && in->len >= 4 && in->result < g->bound &&
            w[in->at + 3] == STORAGE_BUFFER && d->has_binding[in->result])
            vars++;
    }
    g->views = calloc(vars ? vars : 1, sizeof *g->views);
    if (!g->views) return 0;
    for (size_t i = 0; i < g->m->count; i++) {
        const wg_spirv_inst *in = &g->m->v[i];
        if (in->op == OP_FUNCTION) break;
        if (!(in->op == OP_VARIABLE && in->len >= 4 && in->result < g->bound &&
              w[in->at + 3] == STORAGE_BUFFER && d->has_binding[in->result]))
            continue;
        view *v = &g->views[g->view_count++];
        v->var = in->result;
        v->block = in->type < g->bound ? d->pointee[in->type] : 0;
        uint32_t arr = v->block < g->bound ? d->member0[v->block] : 0;
        v->elem = arr < g->bound ? d->member0[arr] : 0;
        if (v->elem >= g->bound) v->elem = 0;
        v->scalar = v->elem && d->comp[v->elem] ? d->comp[v->elem] : v->elem;
        v->comps = v->elem && d->comp[v->elem] ? d->count[v->elem] : 1;
        uint32_t bytes = v->scalar < g->bound ? d->width[v->scalar] / 8 : 0;
        uint32_t stride = arr < g->bound ? d->stride[arr] : 0;
        v->stride = bytes ? stride / bytes : 0;
        v->simple = v->block && d->count[v->block] == 1 && arr && w[d->at[arr]] >> 16 == 3 &&
                    (w[d->at[arr]] & 0xffffu) == OP_TYPE_RUNTIME_ARRAY &&
                    d->has_offset0[v->block] && d->offset0[v->block] == 0 && bytes &&
                    stride % bytes == 0 && v->stride >= v->comps && v->comps <= 4;
    }
    return 1;
}

/* The member name of a view's block, for messages. */
static const char *member_name(const merge *g, const view *v)
{
    const uint32_t *w = w_of(g);
    for (size_t i = 0; i < g->m->count; i++) {
        const wg_spirv_inst *in = &g->m->v[i];
        if (in->op == OP_MEMBER_NAME && in->len >= 4 && w[in->at + 1] == v->block &&
            w[in->at + 2] == 0)
            return (const char *)&w[in->at + 3];
    }
    return "(unnamed)";
}

static cubec_status refuse(const merge *g, const view *a, const view *b, const char *why)
{
    return status_make(CUBEC_UNSUPPORTED,
                       "set %" PRIu32 " binding %" PRIu32 " is declared more than once ('%s' and "
                       "'%s'); WebGPU allows one variable per binding, and cubec merges only views "
                       "of one scalar type and of vectors of it: %s",
                       g->d.set[a->var], g->d.binding[a->var], member_name(g, a), member_name(g, b),
                       why);
}

/* Pairs each aliased view with the scalar view of its binding; the refusal where it cannot. */
static cubec_status pair_views(merge *g, int *any)
{
    const decl *d = &g->d;
    *any = 0;
    for (uint32_t i = 0; i < g->view_count; i++) {
        view *v = &g->views[i];
        view *first = NULL;
        for (uint32_t j = 0; j < g->view_count; j++) {
            view *u = &g->views[j];
            if (u == v || d->set[u->var] != d->set[v->var] ||
                d->binding[u->var] != d->binding[v->var])
                continue;
            if (!first) first = u;
            if (!v->simple || !u->simple)
                return refuse(g, v, u,
                              "one is not a block of one runtime array of scalars or "
                              "vectors");
            if (u->scalar != v->scalar)
                return refuse(g, v, u, "their elements are of different scalar types");
            if (u->comps == 1 && u->stride == 1 && (!v->base || u < v->base)) v->base = u;
        }
        if (!first) continue;
        if (v->comps == 1 && v->stride == 1 && (!v->base || v < v->base)) v->base = v;
        if (!v->base) return refuse(g, v, first, "none of them is an array of the scalars");
        *any = 1;
    }
    for (uint32_t i = 0; i < g->view_count; i++)
        if (g->views[i].base && g->views[i].base != &g->views[i])
            g->by_var[g->views[i].var] = &g->views[i];
    return NULL;
}

static int is_chain(uint32_t op)
{
    return op == OP_ACCESS_CHAIN || op == OP_IN_BOUNDS_ACCESS_CHAIN;
}

static int is_annotation(uint32_t op)
{
    return op == OP_NAME || op == OP_DECORATE || op == OP_DECORATE_ID || op == OP_DECORATE_STRING;
}

/* Whether `id` is a 32-bit integer (the rewrite's constants and sums are of 32 bits). */
static int index_32(const merge *g, uint32_t id)
{
    uint32_t t = id < g->bound ? g->d.type_of[id] : 0;
    return t && t < g->bound && g->d.width[t] == 32 &&
           (w_of(g)[g->d.at[t]] & 0xffffu) == OP_TYPE_INT;
}

/* Checks every use of a merged view and of its element pointers; notes the element pointers and
 * the constants and pointer types the copy needs. */
static cubec_status check_uses(merge *g)
{
    const uint32_t *w = w_of(g);
    for (size_t i = 0; i < g->m->count; i++) {
        const wg_spirv_inst *in = &g->m->v[i];
        for (uint32_t k = 0; k < in->use_count; k++) {
            uint32_t id = wg_spirv_use(g->m, in, k);
            if (id >= g->bound) continue;
            view *v = g->by_var[id];
            uint32_t ev = g->elem_of[id];
            if (!v && !ev) continue;
            const char *bad = NULL;
            if (v) {
                uint32_t indices = in->len - 4;
                if ((is_annotation(in->op) && k == 0) || in->op == OP_ENTRY_POINT) continue;
                if (is_chain(in->op) && k == 1 && indices >= 2 && indices <= 3 &&
                    index_32(g, w[in->at + 5]) && (indices == 2 || index_32(g, w[in->at + 6]))) {
                    uint32_t idx_type = g->d.type_of[w[in->at + 5]];
                    constant(g, idx_type, v->stride);
                    for (uint32_t c = 1; c < v->comps; c++)
                        constant(g, idx_type, c);
                    if (indices == 2) {
                        g->elem_of[in->result] = id;
                        g->base_id[in->result] = g->next++;
                    }
                    continue;
                }
                if (in->op == OP_ARRAY_LENGTH && k == 1) {
                    constant(g, in->type, v->stride);
                    continue;
                }
                bad = "a vector view used other than by indexing it with 32-bit integers";
            } else {
                if ((in->op == OP_LOAD && k == 1) || (in->op == OP_STORE && k == 0)) continue;
                if (is_chain(in->op) && k == 1 && in->len == 5 && index_32(g, w[in->at + 4]))
                    continue;
                bad = "a vector element's pointer used other than to load, store or index it";
            }
            view *which = v ? v : g->by_var[ev];
            return refuse(g, which, which->base, bad);
        }
    }
    /* The StorageBuffer pointer type of each merged scalar type. */
    for (uint32_t i = 0; i < g->view_count; i++) {
        const view *v = &g->views[i];
        if (!v->base || v->base == v || g->ptr_of[v->scalar]) continue;
        for (size_t j = 0; j < g->m->count && !g->ptr_of[v->scalar]; j++) {
            const wg_spirv_inst *in = &g->m->v[j];
            if (in->op == OP_TYPE_POINTER && in->len == 4 && w[in->at + 2] == STORAGE_BUFFER &&
                w[in->at + 3] == v->scalar)
                g->ptr_of[v->scalar] = in->result;
        }
        if (!g->ptr_of[v->scalar]) {
            g->ptr_of[v->scalar] = g->next++;
            g->new_ptr_for[g->new_ptr_count++] = v->scalar;
        }
    }
    return NULL;
}

/* The new pointer types and constants, where the module-scope declarations end. */
static void put_declarations(merge *g)
{
    for (size_t i = 0; i < g->new_ptr_count; i++) {
        uint32_t t = g->new_ptr_for[i];
        put_inst(g, OP_TYPE_POINTER, (uint32_t[]){g->ptr_of[t], STORAGE_BUFFER, t}, 3);
    }
    for (size_t i = 0; i < g->const_count; i++)
        put_inst(g, OP_CONSTANT, (uint32_t[]){g->consts[i][0], g->consts[i][2], g->consts[i][1]},
                 3);
}

/* A pointer (`result`, a fresh id where 0) to the scalar at `index` (of the integer type
 * `idx_type`), plus `comp` where not 0, of view `v`'s base; `zero` is the member index the
 * original chain used. */
static uint32_t put_scalar_pointer(merge *g, const view *v, uint32_t zero, uint32_t idx_type,
                                   uint32_t index, uint32_t comp, uint32_t result)
{
    uint32_t at = index;
    if (comp) {
        at = g->next++;
        put_inst(g, OP_IADD, (uint32_t[]){idx_type, at, index, comp}, 4);
    }
    if (!result) result = g->next++;
    put_inst(g, OP_ACCESS_CHAIN, (uint32_t[]){g->ptr_of[v->scalar], result, v->base->var, zero, at},
             5);
    return result;
}

/* The copy of instruction `in` of a function, with its accesses through a vector view made
 * through the scalar view. */
static void put_function_inst(merge *g, const wg_spirv_inst *in)
{
    const uint32_t *w = w_of(g);
    const uint32_t *o = w + in->at + 1;
    view *v = is_chain(in->op) && in->len >= 6 && o[2] < g->bound ? g->by_var[o[2]] : NULL;
    if (v) {
        /* Element `o[4]` (times the stride in scalars), and component `o[5]` of it. */
        uint32_t idx_type = g->d.type_of[o[4]];
        uint32_t first = g->elem_of[in->result] ? g->base_id[in->result] : g->next++;
        put_inst(g, OP_IMUL, (uint32_t[]){idx_type, first, o[4], constant(g, idx_type, v->stride)},
                 4);
        if (in->len == 7) put_scalar_pointer(g, v, o[3], idx_type, first, o[5], in->result);
        return;
    }
    if (in->op == OP_ARRAY_LENGTH && in->len == 5 && o[2] < g->bound && g->by_var[o[2]]) {
        v = g->by_var[o[2]];
        uint32_t scalars = g->next++;
        put_inst(g, OP_ARRAY_LENGTH, (uint32_t[]){o[0], scalars, v->base->var, 0}, 4);
        put_inst(g, OP_UDIV, (uint32_t[]){o[0], o[1], scalars, constant(g, o[0], v->stride)}, 4);
        return;
    }
    uint32_t ptr = in->op == OP_LOAD && in->len >= 4    ? o[2]
                   : in->op == OP_STORE && in->len >= 3 ? o[0]
                   : is_chain(in->op) && in->len == 5   ? o[2]
                                                        : 0;
    uint32_t var = ptr && ptr < g->bound ? g->elem_of[ptr] : 0;
    if (!var) {
        put(g, w + in->at, in->len);
        return;
    }
    v = g->by_var[var];
    /* The element's access chain: its member index and the type of its element index. */
    const uint32_t *chain = w + g->d.at[ptr] + 1;
    uint32_t zero = chain[3], first = g->base_id[ptr], idx_type = g->d.type_of[chain[4]];
    if (is_chain(in->op)) {
        put_scalar_pointer(g, v, zero, idx_type, first, o[3], o[1]);
        return;
    }
    uint32_t parts[4];
    for (uint32_t c = 0; c < v->comps; c++) {
        uint32_t p =
            put_scalar_pointer(g, v, zero, idx_type, first, c ? constant(g, idx_type, c) : 0, 0);
        if (in->op == OP_LOAD) {
            parts[c] = g->next++;
            put_inst(g, OP_LOAD, (uint32_t[]){v->scalar, parts[c], p}, 3);
        } else {
            uint32_t x = g->next++;
            put_inst(g, OP_COMPOSITE_EXTRACT, (uint32_t[]){v->scalar, x, o[1], c}, 4);
            put_inst(g, OP_STORE, (uint32_t[]){p, x}, 2);
        }
    }
    if (in->op == OP_LOAD) {
        uint32_t ops[6] = {o[0], o[1]};
        memcpy(ops + 2, parts, v->comps * sizeof *parts);
        put_inst(g, OP_COMPOSITE_CONSTRUCT, ops, 2 + v->comps);
    }
}

/* The module with the merged views gone, their uses rewritten. */
static void copy_module(merge *g)
{
    const uint32_t *w = w_of(g);
    put(g, w, 5);
    int in_functions = 0;
    for (size_t i = 0; i < g->m->count && !g->out.oom; i++) {
        const wg_spirv_inst *in = &g->m->v[i];
        if (in->op == OP_FUNCTION && !in_functions) {
            put_declarations(g);
            in_functions = 1;
        }
        if (in_functions) {
            put_function_inst(g, in);
            continue;
        }
        if ((in->result && in->result < g->bound && g->by_var[in->result]) ||
            (is_annotation(in->op) && in->use_count && wg_spirv_use(g->m, in, 0) < g->bound &&
             g->by_var[wg_spirv_use(g->m, in, 0)]))
            continue;
        if (in->op != OP_ENTRY_POINT) {
            put(g, w + in->at, in->len);
            continue;
        }
        /* The interface without the merged views (their base listed in their place). */
        size_t start = g->out.n;
        put(g, w + in->at, in->len);
        if (g->out.oom) return;
        /* Its interface starts after the function (the first id) and the name. */
        uint32_t iface = in->len - in->use_count + 1, kept = iface;
        for (uint32_t k = 1; k < in->use_count; k++) {
            uint32_t id = wg_spirv_use(g->m, in, k);
            view *v = id < g->bound ? g->by_var[id] : NULL;
            if (v) id = v->base->var;
            int seen = 0;
            for (uint32_t j = iface; j < kept; j++)
                seen |= g->out.w[start + j] == id;
            if (!seen) g->out.w[start + kept++] = id;
        }
        g->out.w[start] = (kept << 16) | OP_ENTRY_POINT;
        g->out.n = start + kept;
    }
    if (!in_functions) put_declarations(g);
}

cubec_status wg_spirv_merge_aliases(const uint32_t *w, size_t n, uint32_t **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    if (n < 5 || w[3] == 0 || w[3] > MAX_BOUND) return NULL;
    /* Quick look: two Binding decorations of one number, or nothing to do. */
    uint32_t bindings[64], count = 0;
    int twice = 0;
    for (size_t i = 5; i < n && !twice;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        if (!len || i + len > n) return NULL;
        if (op == OP_FUNCTION) break;
        if (op == OP_DECORATE && len >= 4 && w[i + 2] == DEC_BINDING) {
            for (uint32_t k = 0; k < count; k++)
                twice |= bindings[k] == w[i + 3];
            if (count < 64) bindings[count++] = w[i + 3];
        }
        i += len;
    }
    if (!twice) return NULL;

    wg_spirv m;
    int parsed = 0;
    cubec_status err = wg_spirv_parse(w, n, &m, &parsed);
    merge g = {.m = &m, .bound = w[3], .next = w[3]};
    g.by_var = calloc(g.bound, sizeof(view *));
    g.elem_of = calloc(g.bound, sizeof *g.elem_of);
    g.base_id = calloc(g.bound, sizeof *g.base_id);
    g.ptr_of = calloc(g.bound, sizeof *g.ptr_of);
    g.new_ptr_for = calloc(g.bound, sizeof *g.new_ptr_for);
    int any = 0;
    if (!err && (!g.by_var || !g.elem_of || !g.base_id || !g.ptr_of || !g.new_ptr_for ||
                 !read_decl(&g) || !find_views(&g)))
        err = status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (SPIR-V bindings)");
    if (!err && parsed) err = pair_views(&g, &any);
    if (!err && any) err = check_uses(&g);
    if (!err && any) {
        copy_module(&g);
        if (g.out.oom) {
            err = status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (SPIR-V bindings)");
        } else {
            g.out.w[3] = g.next;
            *out = g.out.w;
            *out_n = g.out.n;
            g.out.w = NULL;
        }
    }
    free(g.out.w);
    free(g.consts);
    free(g.views);
    free(g.by_var);
    free(g.elem_of);
    free(g.base_id);
    free(g.ptr_of);
    free(g.new_ptr_for);
    free_decl(&g.d);
    wg_spirv_free(&m);
    return err;
}
