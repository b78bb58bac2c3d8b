/* Combined image samplers split for WebGPU (wg_spirv_split.h): one scan of the module for the
 * types, variables and uses it needs, then one copy that retypes each combined variable to its
 * image, adds its sampler variable and rewrites its loads. */
#include "gpu/webgpu/wg_spirv_split.h"

#include <stdlib.h>
#include <string.h>

enum {
    OP_NAME = 5,
    OP_ENTRY_POINT = 15,
    OP_TYPE_SAMPLER = 26,
    OP_TYPE_SAMPLED_IMAGE = 27,
    OP_TYPE_POINTER = 32,
    OP_FUNCTION = 54,
    OP_VARIABLE = 59,
    OP_LOAD = 61,
    OP_DECORATE = 71,
    OP_SAMPLED_IMAGE = 86,
    UNIFORM_CONSTANT = 0,
    DEC_BINDING = 33,
    DEC_SET = 34,
};

#define MAX_SPLIT 8 /* GPU_MAX_RESOURCES */

typedef struct split_var {
    uint32_t var, image, sampled; /* the variable, its image type and its sampled-image type */
    uint32_t image_ptr;           /* pointer (UniformConstant) to the image type */
    uint32_t sampler_var;         /* the new sampler variable */
} split_var;

typedef struct scan {
    uint32_t bound;
    uint32_t *sampled_of; /* sampled-image type id -> its image type (0: not one) */
    uint32_t *uc_pointee; /* UniformConstant pointer id -> pointee (0: not one) */
    uint32_t sampler_type;
    size_t sampler_type_at, first_var_at; /* where they are declared (word index) */
    split_var v[MAX_SPLIT];
    uint32_t count;
} scan;

static uint32_t word_at(const uint32_t *w, size_t n, size_t i)
{
    return i < n ? w[i] : 0;
}

static split_var *find(scan *s, uint32_t id)
{
    for (uint32_t k = 0; k < s->count; k++)
        if (s->v[k].var == id) return &s->v[k];
    return NULL;
}

/* The OpName of `id`, for messages. */
static const char *name_of(const uint32_t *w, size_t n, uint32_t id)
{
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        if (!len || i + len > n) break;
        if (op == OP_NAME && len >= 3 && w[i + 1] == id) return (const char *)&w[i + 2];
        i += len;
    }
    return "(unnamed)";
}

/* The variables to split and what they need; NULL or a refusal. */
static cubec_status scan_module(const uint32_t *w, size_t n, scan *s)
{
    int in_functions = 0;
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        if (!len || i + len > n) {
            s->count = 0; /* malformed: naga refuses it unsplit */
            return NULL;
        }
        uint32_t a = word_at(w, n, i + 1), b = word_at(w, n, i + 2), c = word_at(w, n, i + 3);
        if (op == OP_FUNCTION) in_functions = 1;
        if (op == OP_TYPE_SAMPLED_IMAGE && len >= 3 && a < s->bound) s->sampled_of[a] = b;
        if (op == OP_TYPE_SAMPLER && len >= 2 && !s->sampler_type) {
            s->sampler_type = a;
            s->sampler_type_at = i;
        }
        if (op == OP_TYPE_POINTER && len >= 4 && b == UNIFORM_CONSTANT && a < s->bound)
            s->uc_pointee[a] = c;
        if (op == OP_VARIABLE && len >= 4 && c == UNIFORM_CONSTANT && a < s->bound &&
            s->uc_pointee[a] < s->bound && s->sampled_of[s->uc_pointee[a]]) {
            if (s->count == MAX_SPLIT) return NULL; /* more than reflection lets through */
            uint32_t sampled = s->uc_pointee[a];
            if (!s->count) s->first_var_at = i;
            split_var *v = &s->v[s->count++];
            *v = (split_var){.var = b, .image = s->sampled_of[sampled], .sampled = sampled};
            /* A pointer to the image type declared before the variable (one declared after it
             * cannot be used there: a new one is made then). */
            for (uint32_t id = 1; id < s->bound && !v->image_ptr; id++)
                if (s->uc_pointee[id] == v->image) v->image_ptr = id;
        }
        /* In function bodies a combined variable may only be loaded. */
        if (in_functions && s->count && !(op == OP_LOAD && len >= 4))
            for (uint32_t k = 1; k < len; k++)
                if (find(s, w[i + k])) {
                    return status_make(CUBEC_UNSUPPORTED,
                                       "combined image sampler '%s' is used other than by "
                                       "loading it (SPIR-V opcode %u), which cubec cannot split "
                                       "into WebGPU's texture and sampler: declare a texture2D "
                                       "and a sampler",
                                       name_of(w, n, w[i + k]), op);
                }
        i += len;
    }
    return NULL;
}

static void put(uint32_t *out, size_t *at, uint32_t op, uint32_t len)
{
    out[(*at)++] = (len << 16) | op;
}

cubec_status wg_spirv_split_samplers(const uint32_t *words, size_t n, uint32_t **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    if (n < 5 || words[3] > (1u << 22)) return NULL;
    scan s = {.bound = words[3]};
    s.sampled_of = calloc(s.bound + 1u, sizeof *s.sampled_of);
    s.uc_pointee = calloc(s.bound + 1u, sizeof *s.uc_pointee);
    cubec_status err = NULL;
    if (!s.sampled_of || !s.uc_pointee) {
        err = status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (splitting samplers)");
        goto done;
    }
    err = scan_module(words, n, &s);
    if (err || !s.count) goto done;
    /* New ids: the sampler type where missing, a pointer to it, a pointer to each image type
     * where missing, each sampler variable, and two per load (counted as they come). A sampler
     * type declared after the first combined variable moves before it (a type is declared
     * once, before its uses). */
    uint32_t bound = s.bound;
    int emit_sampler_type = !s.sampler_type || s.sampler_type_at > s.first_var_at;
    size_t skip_at = s.sampler_type && emit_sampler_type ? s.sampler_type_at : 0;
    if (!s.sampler_type) s.sampler_type = bound++;
    uint32_t sampler_ptr = bound++;
    uint32_t new_image_ptr = 0; /* bit k: v[k].image_ptr is new (emitted before v[k]) */
    for (uint32_t k = 0; k < s.count; k++) {
        if (!s.v[k].image_ptr) {
            for (uint32_t j = 0; j < k; j++)
                if (s.v[j].image == s.v[k].image) s.v[k].image_ptr = s.v[j].image_ptr;
            if (!s.v[k].image_ptr) {
                s.v[k].image_ptr = bound++;
                new_image_ptr |= 1u << k;
            }
        }
        s.v[k].sampler_var = bound++;
    }
    /* Each load grows by 5 + 4 words at most; each variable by 4 (variable) + 8 (decorations)
     * + 1 (interface) + 4 (pointer); the types by 2 + 4. */
    size_t loads = 0;
    for (size_t i = 5; i < n; i += words[i] >> 16)
        if ((words[i] & 0xffffu) == OP_LOAD && (words[i] >> 16) >= 4 && find(&s, words[i + 3]))
            loads++;
    size_t cap = n + loads * 9 + (size_t)s.count * 17 + 6;
    uint32_t *o = malloc(cap * sizeof *o);
    if (!o) {
        err = status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (splitting samplers)");
        goto done;
    }
    size_t at = 0;
    memcpy(o, words, 5 * sizeof *o);
    at = 5;
    int types_emitted = 0;
    for (size_t i = 5; i < n;) {
        uint32_t op = words[i] & 0xffffu, len = words[i] >> 16;
        const uint32_t *x = &words[i];
        split_var *v = len >= 2 ? find(&s, x[1]) : NULL;
        if (skip_at && i == skip_at) {
            i += len; /* emitted before the first combined variable */
            continue;
        }
        if (op == OP_ENTRY_POINT) {
            /* The interface lists every global the entry point uses (SPIR-V 1.4 and later):
             * each sampler variable joins its texture. It follows the name, a string of words
             * ending with the first that holds a zero byte. */
            memcpy(o + at, x, len * sizeof *o);
            size_t head = at;
            at += len;
            uint32_t k = 3;
            while (k < len && (x[k] & 0xffu) && (x[k] & 0xff00u) && (x[k] & 0xff0000u) &&
                   (x[k] & 0xff000000u))
                k++;
            for (k++; k < len; k++)
                if (find(&s, x[k])) {
                    o[at++] = find(&s, x[k])->sampler_var;
                    o[head] += 1u << 16;
                }
        } else if (op == OP_DECORATE && v && len >= 4 && (x[2] == DEC_BINDING || x[2] == DEC_SET)) {
            memcpy(o + at, x, len * sizeof *o);
            at += len;
            put(o, &at, OP_DECORATE, 4);
            o[at++] = v->sampler_var;
            o[at++] = x[2];
            o[at++] = x[2] == DEC_BINDING ? x[3] + WG_SPLIT_SAMPLER_BINDING : x[3];
        } else if (op == OP_VARIABLE && len >= 4 && find(&s, x[2])) {
            split_var *sv = find(&s, x[2]);
            uint32_t k = (uint32_t)(sv - s.v);
            if (!types_emitted) {
                if (emit_sampler_type) {
                    put(o, &at, OP_TYPE_SAMPLER, 2);
                    o[at++] = s.sampler_type;
                }
                put(o, &at, OP_TYPE_POINTER, 4);
                o[at++] = sampler_ptr;
                o[at++] = UNIFORM_CONSTANT;
                o[at++] = s.sampler_type;
                types_emitted = 1;
            }
            if (new_image_ptr & (1u << k)) {
                put(o, &at, OP_TYPE_POINTER, 4);
                o[at++] = sv->image_ptr;
                o[at++] = UNIFORM_CONSTANT;
                o[at++] = sv->image;
            }
            put(o, &at, OP_VARIABLE, 4);
            o[at++] = sv->image_ptr;
            o[at++] = sv->var;
            o[at++] = UNIFORM_CONSTANT;
            put(o, &at, OP_VARIABLE, 4);
            o[at++] = sampler_ptr;
            o[at++] = sv->sampler_var;
            o[at++] = UNIFORM_CONSTANT;
        } else if (op == OP_LOAD && len >= 4 && find(&s, x[3])) {
            split_var *sv = find(&s, x[3]);
            uint32_t image = bound++, sampler = bound++;
            put(o, &at, OP_LOAD, 4);
            o[at++] = sv->image;
            o[at++] = image;
            o[at++] = sv->var;
            put(o, &at, OP_LOAD, 4);
            o[at++] = s.sampler_type;
            o[at++] = sampler;
            o[at++] = sv->sampler_var;
            put(o, &at, OP_SAMPLED_IMAGE, 5);
            o[at++] = x[1]; /* the load's result type and id, now the combination's */
            o[at++] = x[2];
            o[at++] = image;
            o[at++] = sampler;
        } else {
            memcpy(o + at, x, len * sizeof *o);
            at += len;
        }
        i += len;
    }
    o[3] = bound;
    *out = o;
    *out_n = at;
done:
    free(s.sampled_of);
    free(s.uc_pointee);
    return err;
}
