/* Reflection of WGSL kernels (kernel/wgsl_reflect.h): a scan of the declarations cubec needs,
 * over a copy of the source whose comments are blanked (offsets stay those of the source, so the
 * read_write rewrite applies to the original text). */
#include "kernel/wgsl_reflect.h"

#include "base/image_formats.h"

#include <spirv_cross/spirv.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The source with // and (nested) block comments replaced by spaces. */
static char *blank_comments(const char *s)
{
    size_t n = strlen(s);
    char *c = malloc(n + 1);
    if (!c) return NULL;
    memcpy(c, s, n + 1);
    for (size_t i = 0; i < n; i++) {
        if (c[i] == '/' && c[i + 1] == '/') {
            while (i < n && c[i] != '\n')
                c[i++] = ' ';
        } else if (c[i] == '/' && c[i + 1] == '*') {
            int depth = 0;
            while (i < n) {
                if (c[i] == '/' && c[i + 1] == '*') {
                    depth++;
                    c[i++] = ' ';
                } else if (c[i] == '*' && c[i + 1] == '/') {
                    depth--;
                    c[i++] = ' ';
                    if (!depth) {
                        c[i] = ' ';
                        break;
                    }
                }
                if (c[i] != '\n') c[i] = ' ';
                i++;
            }
        }
    }
    return c;
}

static int ident_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

static const char *skip_ws(const char *p)
{
    while (*p && isspace((unsigned char)*p))
        p++;
    return p;
}

/* The next occurrence of the word `w` at or after p (not part of a longer identifier). */
static const char *find_word(const char *base, const char *p, const char *w)
{
    size_t n = strlen(w);
    for (const char *q = strstr(p, w); q; q = strstr(q + 1, w))
        if ((q == base || !ident_char(q[-1])) && !ident_char(q[n])) return q;
    return NULL;
}

/* An integer literal (decimal or 0x, with an optional i/u suffix) at p; -1 if none. */
static long literal(const char **p)
{
    const char *q = skip_ws(*p);
    char *end = NULL;
    long v = strtol(q, &end, 0);
    if (end == q || v < 0) return -1;
    if (*end == 'u' || *end == 'i') end++;
    if (ident_char(*end)) return -1;
    *p = end;
    return v;
}

/* The value of `@attr(N)` in [from, to), or -1. */
static long attribute(const char *from, const char *to, const char *attr)
{
    size_t n = strlen(attr);
    for (const char *q = from; q + n < to; q++)
        if (*q == '@' && strncmp(q + 1, attr, n) == 0 && !ident_char(q[1 + n])) {
            const char *p = skip_ws(q + 1 + n);
            if (*p != '(') return -1;
            p++;
            return literal(&p);
        }
    return -1;
}

/* Size and alignment of a 32-bit scalar or vector type named at p; 0 if it is not one. */
static uint32_t type_size(const char *p, uint32_t *align)
{
    static const char *const scalars[] = {"u32", "i32", "f32"};
    for (int i = 0; i < 3; i++)
        if (strncmp(p, scalars[i], 3) == 0 && !ident_char(p[3])) {
            *align = 4;
            return 4;
        }
    if (strncmp(p, "vec", 3) == 0 && p[3] >= '2' && p[3] <= '4') {
        uint32_t n = (uint32_t)(p[3] - '0');
        const char *q = p + 4;
        if (*q == 'u' || *q == 'i' || *q == 'f')
            q++;
        else if (*q == '<') {
            q = skip_ws(q + 1);
            if (strncmp(q, "u32", 3) != 0 && strncmp(q, "i32", 3) != 0 && strncmp(q, "f32", 3) != 0)
                return 0;
        } else
            return 0;
        *align = n == 2 ? 8 : 16;
        return 4 * n;
    }
    return 0;
}

/* The byte size of the immediates' type named at p: a scalar, a vector or a struct of them. */
static cubec_status immediate_size(const char *name, const char *base, const char *p, uint32_t *out)
{
    uint32_t align = 0, size = type_size(p, &align);
    if (size) {
        *out = size;
        return NULL;
    }
    size_t n = 0;
    while (ident_char(p[n]))
        n++;
    char type[64];
    if (!n || n >= sizeof type)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': the WGSL immediates' type is not "
                           "a struct, scalar or vector cubec can lay out",
                           name);
    memcpy(type, p, n);
    type[n] = 0;
    for (const char *s = find_word(base, base, "struct"); s; s = find_word(base, s + 1, "struct")) {
        const char *q = skip_ws(s + 6);
        if (strncmp(q, type, n) != 0 || ident_char(q[n])) continue;
        q = skip_ws(q + n);
        if (*q != '{') break;
        uint32_t at = 0, max_align = 4;
        for (q++; *(q = skip_ws(q)) && *q != '}';) {
            const char *colon = strchr(q, ':');
            if (!colon) break;
            const char *t = skip_ws(colon + 1);
            uint32_t a = 0, sz = type_size(t, &a);
            if (!sz) {
                size_t tn = 0;
                while (ident_char(t[tn]) || t[tn] == '<' || t[tn] == '>')
                    tn++;
                return status_make(CUBEC_UNSUPPORTED,
                                   "kernel '%s': member type '%.*s' of the WGSL immediates "
                                   "struct %s: cubec lays out 32-bit scalars and vectors only",
                                   name, (int)tn, t, type);
            }
            at = (at + a - 1) / a * a + sz;
            if (a > max_align) max_align = a;
            const char *next = strpbrk(t, ",}");
            if (!next) break;
            q = *next == ',' ? next + 1 : next;
        }
        *out = (at + max_align - 1) / max_align * max_align;
        return NULL;
    }
    return status_make(CUBEC_UNSUPPORTED,
                       "kernel '%s': struct %s of the WGSL immediates is not "
                       "found",
                       name, type);
}

/* The cubec_image_format of a WGSL texel format at p (its length in *len); 0 if cubec names
 * none. */
static uint32_t texel_format(const char *p, size_t *len)
{
    static const struct {
        const char *wgsl;
        uint32_t format;
    } names[] = {
        {"r8unorm", CUBEC_IMAGE_FORMAT_R8_UNORM},
        {"rgba8unorm", CUBEC_IMAGE_FORMAT_RGBA8_UNORM},
        {"r16float", CUBEC_IMAGE_FORMAT_R16_SFLOAT},
        {"rgba16float", CUBEC_IMAGE_FORMAT_RGBA16_SFLOAT},
        {"r32float", CUBEC_IMAGE_FORMAT_R32_SFLOAT},
        {"rgba32float", CUBEC_IMAGE_FORMAT_RGBA32_SFLOAT},
        {"r32uint", CUBEC_IMAGE_FORMAT_R32_UINT},
        {"rgba32uint", CUBEC_IMAGE_FORMAT_RGBA32_UINT},
        {"r32sint", CUBEC_IMAGE_FORMAT_R32_SINT},
    };
    *len = 0;
    while (ident_char(p[*len]))
        (*len)++;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].wgsl) == *len && strncmp(p, names[i].wgsl, *len) == 0)
            return names[i].format;
    return 0;
}

/* A module-scope texture or sampler (`var name: type;` at @group(group) @binding(binding)) as a
 * kernel_resource: storage textures, sampled textures and samplers of 2D or 3D; anything else
 * is CUBEC_UNSUPPORTED naming it. `decl` is the variable's name, `type` its type. */
static cubec_status texture_resource(const char *kernel, const char *var, size_t var_len,
                                     const char *type, long group, long binding, kernel_resource *r)
{
    size_t tn = 0;
    while (ident_char(type[tn]))
        tn++;
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%.*s", (int)(var_len < 47 ? var_len : 47), var);
    r->set = (uint32_t)group;
    r->binding = (uint32_t)binding;
    r->access = CUBEC_ACCESS_READ;
    const char *args = skip_ws(type + tn);
    if (tn == 7 && strncmp(type, "sampler", 7) == 0) {
        r->kind = CUBEC_RESOURCE_SAMPLER;
        return NULL;
    }
    int storage2 = tn == 18 && strncmp(type, "texture_storage_2d", 18) == 0;
    int storage3 = tn == 18 && strncmp(type, "texture_storage_3d", 18) == 0;
    int sampled2 = tn == 10 && strncmp(type, "texture_2d", 10) == 0;
    int sampled3 = tn == 10 && strncmp(type, "texture_3d", 10) == 0;
    if ((!storage2 && !storage3 && !sampled2 && !sampled3) || *args != '<')
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': WGSL binding %ld of @group(%ld) ('%s') is a %.*s: cubec "
                           "binds buffers, texture_storage_2d/3d, texture_2d/3d and sampler",
                           kernel, binding, group, r->name, (int)tn, type);
    r->dims = storage3 || sampled3 ? 3 : 2;
    const char *a = skip_ws(args + 1);
    if (sampled2 || sampled3) {
        r->kind = CUBEC_RESOURCE_SAMPLED_TEXTURE;
        r->numeric = strncmp(a, "u32", 3) == 0   ? KERNEL_NUMERIC_UINT
                     : strncmp(a, "i32", 3) == 0 ? KERNEL_NUMERIC_SINT
                                                 : KERNEL_NUMERIC_FLOAT;
        return NULL;
    }
    r->kind = CUBEC_RESOURCE_STORAGE_IMAGE;
    size_t fl = 0;
    r->format = texel_format(a, &fl);
    if (!r->format)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': WGSL storage texture '%s' has format %.*s, which cubec "
                           "names no image format for",
                           kernel, r->name, (int)fl, a);
    r->numeric = image_format_numeric(r->format);
    const char *comma = skip_ws(a + fl);
    if (*comma == ',') {
        const char *m = skip_ws(comma + 1);
        r->access = strncmp(m, "read_write", 10) == 0 ? CUBEC_ACCESS_READ_WRITE
                    : strncmp(m, "write", 5) == 0     ? CUBEC_ACCESS_WRITE
                                                      : CUBEC_ACCESS_READ;
    }
    return NULL;
}

/* Adds a texture or sampler, refusing one past the limits or at a taken place; those with memory
 * are kept before the samplers (kernel/reflect.h), in the order declared. */
static cubec_status add_resource(const char *kernel, kernel_reflection *out,
                                 const kernel_resource *r)
{
    if (r->set >= KERNEL_MAX_SETS)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': WGSL '%s' is in @group(%u): cubec binds groups 0..%d",
                           kernel, r->name, r->set, KERNEL_MAX_SETS - 1);
    if (r->set == 0 && r->binding < KERNEL_MAX_SLOTS &&
        out->slots[r->binding].kind != KERNEL_SLOT_UNUSED)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': WGSL '%s' is at @group(0) @binding(%u), which a buffer "
                           "also declares",
                           kernel, r->name, r->binding);
    for (uint32_t j = 0; j < out->resource_count; j++)
        if (out->resources[j].set == r->set && out->resources[j].binding == r->binding)
            return status_make(CUBEC_UNSUPPORTED,
                               "kernel '%s': WGSL '%s' and '%s' share @group(%u) @binding(%u)",
                               kernel, r->name, out->resources[j].name, r->set, r->binding);
    if (out->resource_count == KERNEL_MAX_RESOURCES)
        return status_make(CUBEC_UNSUPPORTED,
                           "kernel '%s': more than %d WGSL textures and samplers ('%s')", kernel,
                           KERNEL_MAX_RESOURCES, r->name);
    uint32_t at = out->resource_count;
    if (r->kind != CUBEC_RESOURCE_SAMPLER) {
        at = out->memory_resource_count++;
        memmove(&out->resources[at + 1], &out->resources[at],
                (out->resource_count - at) * sizeof out->resources[0]);
    }
    out->resources[at] = *r;
    out->resource_count++;
    if (r->set + 1 > out->set_count) out->set_count = r->set + 1;
    return NULL;
}

/* Which textures each sampler samples: every one (WGSL's textureSample pairs are not read
 * here), so a linear filter is checked against each (as for SPIR-V pairs not worked out). */
static void pair_samplers(kernel_reflection *out)
{
    uint32_t textures = 0;
    for (uint32_t k = 0; k < out->memory_resource_count; k++)
        if (out->resources[k].kind == CUBEC_RESOURCE_SAMPLED_TEXTURE) textures |= 1u << k;
    for (uint32_t k = out->memory_resource_count; k < out->resource_count; k++)
        out->resources[k].samples = textures;
}

/* The optional features a WGSL kernel uses, as the SPIR-V capabilities cubec checks every
 * kernel's against the device (kernel/capabilities.h): so a kernel needing a feature the device
 * lacks, or that [device] disable_features turned off, is refused by name before the
 * implementation's compiler sees it. An `enable` directive (f16, subgroups) or the word (i64,
 * u64, f64: wgpu-native's native extensions have no directive) is the use; the subgroup
 * operations are told apart by their built-in functions, as SPIR-V's capabilities part them. */
typedef struct wgsl_use {
    const char *word;
    int directive; /* 1: the word of an `enable` directive; 0: a word anywhere */
    uint32_t capability;
} wgsl_use;

static const wgsl_use uses[] = {
    {"f16", 1, SpvCapabilityFloat16},
    {"subgroups", 1, SpvCapabilityGroupNonUniform},
    {"i64", 0, SpvCapabilityInt64},
    {"u64", 0, SpvCapabilityInt64},
    {"f64", 0, SpvCapabilityFloat64},
    {"subgroupAll", 0, SpvCapabilityGroupNonUniformVote},
    {"subgroupAny", 0, SpvCapabilityGroupNonUniformVote},
    {"subgroupAdd", 0, SpvCapabilityGroupNonUniformArithmetic},
    {"subgroupExclusiveAdd", 0, SpvCapabilityGroupNonUniformArithmetic},
    {"subgroupInclusiveAdd", 0, SpvCapabilityGroupNonUniformArithmetic},
    {"subgroupMul", 0, SpvCapabilityGroupNonUniformArithmetic},
    {"subgroupExclusiveMul", 0, SpvCapabilityGroupNonUniformArithmetic},
    {"subgroupInclusiveMul", 0, SpvCapabilityGroupNonUniformArithmetic},
    {"subgroupMin", 0, SpvCapabilityGroupNonUniformArithmetic},
    {"subgroupMax", 0, SpvCapabilityGroupNonUniformArithmetic},
    {"subgroupAnd", 0, SpvCapabilityGroupNonUniformArithmetic},
    {"subgroupOr", 0, SpvCapabilityGroupNonUniformArithmetic},
    {"subgroupXor", 0, SpvCapabilityGroupNonUniformArithmetic},
    {"subgroupBallot", 0, SpvCapabilityGroupNonUniformBallot},
    {"subgroupBroadcast", 0, SpvCapabilityGroupNonUniformBallot},
    {"subgroupBroadcastFirst", 0, SpvCapabilityGroupNonUniformBallot},
    {"subgroupShuffle", 0, SpvCapabilityGroupNonUniformShuffle},
    {"subgroupShuffleXor", 0, SpvCapabilityGroupNonUniformShuffle},
    {"subgroupShuffleUp", 0, SpvCapabilityGroupNonUniformShuffleRelative},
    {"subgroupShuffleDown", 0, SpvCapabilityGroupNonUniformShuffleRelative},
    {"quadBroadcast", 0, SpvCapabilityGroupNonUniformQuad},
    {"quadSwapX", 0, SpvCapabilityGroupNonUniformQuad},
    {"quadSwapY", 0, SpvCapabilityGroupNonUniformQuad},
    {"quadSwapDiagonal", 0, SpvCapabilityGroupNonUniformQuad},
};

/* Is `word` one of the names of an `enable` directive of c (a comma-separated list ended by
 * ';')? */
static int enabled(const char *c, const char *word)
{
    for (const char *e = find_word(c, c, "enable"); e; e = find_word(c, e + 1, "enable")) {
        const char *end = strchr(e, ';');
        if (!end) return 0;
        const char *w = find_word(c, e + 6, word);
        if (w && w < end) return 1;
    }
    return 0;
}

static void add_capability(kernel_reflection *out, uint32_t capability)
{
    for (uint32_t i = 0; i < out->capability_count; i++)
        if (out->capabilities[i] == capability) return;
    if (out->capability_count < KERNEL_MAX_CAPABILITIES)
        out->capabilities[out->capability_count++] = capability;
}

static void declared_capabilities(const char *c, kernel_reflection *out)
{
    for (size_t i = 0; i < sizeof uses / sizeof uses[0]; i++)
        if (uses[i].directive ? enabled(c, uses[i].word) : find_word(c, c, uses[i].word) != NULL)
            add_capability(out, uses[i].capability);
    /* 64-bit atomics: atomic<i64> or atomic<u64>. */
    for (const char *a = find_word(c, c, "atomic"); a; a = find_word(c, a + 1, "atomic")) {
        const char *t = skip_ws(a + 6);
        if (*t != '<') continue;
        t = skip_ws(t + 1);
        if ((t[0] == 'i' || t[0] == 'u') && t[1] == '6' && t[2] == '4' && !ident_char(t[3]))
            add_capability(out, SpvCapabilityInt64Atomics);
    }
}

cubec_status wgsl_reflect(const char *name, const char *source, const char *entry_point,
                          kernel_reflection *out, char **out_module)
{
    memset(out, 0, sizeof *out);
    *out_module = NULL;
    const char *entry = entry_point && *entry_point ? entry_point : "main";
    char *c = blank_comments(source);
    char *module = malloc(strlen(source) * 2 + 1); /* each rewrite adds 6 bytes to >= 12 */
    if (!c || !module) {
        free(c);
        free(module);
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (WGSL reflection)");
    }
    size_t copied = 0, out_at = 0; /* source bytes copied to module, and module's length */
    cubec_status err = NULL;
    out->set_count = 1;
    declared_capabilities(c, out);
    /* The entry point: `@compute ... fn <entry>(`, its workgroup size in the attributes. */
    const char *fn = NULL;
    for (const char *q = find_word(c, c, "fn"); q && !fn; q = find_word(c, q + 1, "fn")) {
        const char *id = skip_ws(q + 2);
        size_t n = strlen(entry);
        if (strncmp(id, entry, n) == 0 && !ident_char(id[n])) fn = q;
    }
    if (!fn) {
        err = status_make(CUBEC_COMPILE_FAILED, "kernel '%s': the WGSL has no function '%s'", name,
                          entry);
        goto done;
    }
    const char *attrs = fn;
    while (attrs > c && attrs[-1] != ';' && attrs[-1] != '}')
        attrs--;
    if (!strstr(attrs, "@compute") || strstr(attrs, "@compute") > fn) {
        err = status_make(CUBEC_COMPILE_FAILED,
                          "kernel '%s': WGSL function '%s' is not a @compute entry point", name,
                          entry);
        goto done;
    }
    out->workgroup_size[0] = out->workgroup_size[1] = out->workgroup_size[2] = 1;
    const char *ws = strstr(attrs, "@workgroup_size");
    if (!ws || ws > fn) {
        err = status_make(CUBEC_COMPILE_FAILED,
                          "kernel '%s': WGSL entry point '%s' has no "
                          "@workgroup_size",
                          name, entry);
        goto done;
    }
    const char *p = skip_ws(ws + 15);
    if (*p == '(') p++;
    for (int i = 0; i < 3; i++) {
        long v = literal(&p);
        if (v <= 0) {
            err = status_make(CUBEC_UNSUPPORTED,
                              "kernel '%s': the WGSL @workgroup_size must be integer literals "
                              "(override-sized workgroups are not taken yet)",
                              name);
            goto done;
        }
        out->workgroup_size[i] = (uint32_t)v;
        p = skip_ws(p);
        if (*p != ',') break;
        p = skip_ws(p + 1);
        if (*p == ')') break;
    }
    /* Module-scope variables. */
    for (const char *v = find_word(c, c, "var"); v; v = find_word(c, v + 1, "var")) {
        const char *q = skip_ws(v + 3);
        const char *decl = v;
        while (decl > c && decl[-1] != ';' && decl[-1] != '}' && decl[-1] != '{')
            decl--;
        long group = attribute(decl, v, "group"), binding = attribute(decl, v, "binding");
        if (*q != '<') {
            if (binding < 0) continue; /* a variable of a function */
            /* A texture or a sampler: `name : type`. */
            size_t vn = 0;
            while (ident_char(q[vn]))
                vn++;
            const char *colon = skip_ws(q + vn);
            if (*colon != ':' || group < 0) {
                err = status_make(CUBEC_UNSUPPORTED,
                                  "kernel '%s': WGSL binding %ld has no @group or no type", name,
                                  binding);
                goto done;
            }
            kernel_resource r;
            err = texture_resource(name, q, vn, skip_ws(colon + 1), group, binding, &r);
            if (!err) err = add_resource(name, out, &r);
            if (err) goto done;
            continue;
        }
        const char *close = strchr(q, '>');
        if (!close) break;
        const char *space = skip_ws(q + 1);
        if (strncmp(space, "immediate", 9) == 0 || strncmp(space, "push_constant", 13) == 0) {
            if (out->push_constant_size) {
                err = status_make(CUBEC_UNSUPPORTED,
                                  "kernel '%s': more than one WGSL var<immediate>", name);
                goto done;
            }
            const char *colon = strchr(close, ':');
            if (!colon) break;
            err = immediate_size(name, c, skip_ws(colon + 1), &out->push_constant_size);
            if (err) goto done;
            continue;
        }
        int storage = strncmp(space, "storage", 7) == 0 && !ident_char(space[7]);
        int uniform = strncmp(space, "uniform", 7) == 0 && !ident_char(space[7]);
        if (!storage && !uniform) continue; /* workgroup, private, function */
        if (group != 0 || binding < 0 || binding >= KERNEL_MAX_SLOTS) {
            err = status_make(CUBEC_UNSUPPORTED,
                              "kernel '%s': a WGSL buffer at @group(%ld) @binding(%ld): cubec "
                              "binds buffers of @group(0) at bindings 0..%d",
                              name, group, binding, KERNEL_MAX_SLOTS - 1);
            goto done;
        }
        if (out->slots[binding].kind != KERNEL_SLOT_UNUSED) {
            err = status_make(CUBEC_UNSUPPORTED, "kernel '%s': two WGSL buffers at binding %ld",
                              name, binding);
            goto done;
        }
        for (uint32_t j = 0; j < out->resource_count; j++)
            if (out->resources[j].set == 0 && out->resources[j].binding == (uint32_t)binding) {
                err = status_make(CUBEC_UNSUPPORTED,
                                  "kernel '%s': WGSL '%s' is at @group(0) @binding(%ld), which a "
                                  "buffer also declares",
                                  name, out->resources[j].name, binding);
                goto done;
            }
        out->slots[binding] =
            (kernel_slot){.kind = storage ? KERNEL_SLOT_STORAGE : KERNEL_SLOT_UNIFORM,
                          .binding = (uint8_t)binding};
        int read_write = 0;
        if (storage) {
            const char *comma = strchr(space, ',');
            if (comma && comma < close) {
                const char *a = skip_ws(comma + 1);
                read_write = strncmp(a, "read_write", 10) == 0;
            }
        }
        out->access[binding] = read_write ? CUBEC_ACCESS_READ_WRITE : CUBEC_ACCESS_READ;
        if ((uint32_t)binding + 1 > out->binding_count) out->binding_count = (uint32_t)binding + 1;
        if (storage && !read_write) {
            /* The declaration's <...> becomes <storage, read_write> in the module. */
            size_t from = (size_t)(q - c), to = (size_t)(close - c) + 1;
            memcpy(module + out_at, source + copied, from - copied);
            out_at += from - copied;
            static const char rw[] = "<storage, read_write>";
            memcpy(module + out_at, rw, sizeof rw - 1);
            out_at += sizeof rw - 1;
            copied = to;
        }
    }
    strcpy(module + out_at, source + copied);
    if (out->resource_count > out->memory_resource_count) pair_samplers(out);
done:
    free(c);
    if (err) {
        free(module);
        memset(out, 0, sizeof *out);
        return err;
    }
    *out_module = module;
    return NULL;
}
