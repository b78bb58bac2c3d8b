/* The members of a metadata block from SPIRV-Cross's types; see info_layout.h.
 *
 * Offsets, sizes and strides are SPIRV-Cross's reading of the module's Offset and ArrayStride
 * decorations, which glslang writes by the block's std430 rules: they are what the driver reads,
 * whatever a C compiler would make of the same members. */
#include "kernel/info_layout.h"

#include "base/array.h"

#include <spirv_cross/spirv_cross_c.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A struct member nested deeper than this is listed as one field: real blocks nest once or twice,
 * and the limit keeps the walk's recursion bounded on hostile SPIR-V. */
#define MAX_DEPTH 8

typedef struct walker {
    spvc_compiler compiler;
    kernel_info_layout *layout;
    uint32_t cap;
} walker;

static cubec_info_type type_of(spvc_basetype b)
{
    switch (b) {
    case SPVC_BASETYPE_BOOLEAN: return CUBEC_INFO_BOOL;
    case SPVC_BASETYPE_INT8: return CUBEC_INFO_INT8;
    case SPVC_BASETYPE_UINT8: return CUBEC_INFO_UINT8;
    case SPVC_BASETYPE_INT16: return CUBEC_INFO_INT16;
    case SPVC_BASETYPE_UINT16: return CUBEC_INFO_UINT16;
    case SPVC_BASETYPE_FP16: return CUBEC_INFO_FLOAT16;
    case SPVC_BASETYPE_INT32: return CUBEC_INFO_INT32;
    case SPVC_BASETYPE_UINT32: return CUBEC_INFO_UINT32;
    case SPVC_BASETYPE_FP32: return CUBEC_INFO_FLOAT32;
    case SPVC_BASETYPE_INT64: return CUBEC_INFO_INT64;
    case SPVC_BASETYPE_UINT64: return CUBEC_INFO_UINT64;
    case SPVC_BASETYPE_FP64: return CUBEC_INFO_FLOAT64;
    case SPVC_BASETYPE_STRUCT: return CUBEC_INFO_STRUCT;
    default: return CUBEC_INFO_OTHER;
    }
}

/* A GL_EXT_buffer_reference member is a pointer into PhysicalStorageBuffer: SPIRV-Cross reports
 * the pointee's base type (a struct), so the storage class tells them apart. */
static int is_address(spvc_type t)
{
    return spvc_type_get_storage_class(t) == SpvStorageClassPhysicalStorageBuffer;
}

/* The bytes of the widest scalar in `t` (a bool is 4 in a block, an address 8). */
static uint32_t widest_scalar(spvc_compiler c, spvc_type t, int depth)
{
    if (is_address(t)) return 8;
    spvc_basetype b = spvc_type_get_basetype(t);
    if (b == SPVC_BASETYPE_BOOLEAN) return 4;
    if (b != SPVC_BASETYPE_STRUCT) {
        uint32_t w = spvc_type_get_bit_width(t) / 8;
        return w ? w : 4;
    }
    uint32_t widest = 1;
    unsigned n = spvc_type_get_num_member_types(t);
    for (unsigned i = 0; i < n && depth < MAX_DEPTH; i++) {
        uint32_t w = widest_scalar(
            c, spvc_compiler_get_type_handle(c, spvc_type_get_member_type(t, i)), depth + 1);
        if (w > widest) widest = w;
    }
    return widest;
}

static cubec_status add_field(walker *w, const kernel_info_field *f, const char *prefix,
                              const char *name)
{
    kernel_info_layout *l = w->layout;
    if (array_grow((void **)&l->fields, &w->cap, (uint64_t)l->count + 1, sizeof *l->fields))
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (metadata fields)");
    size_t len = strlen(prefix) + strlen(name) + 1;
    char *copy = malloc(len);
    if (!copy) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (metadata fields)");
    snprintf(copy, len, "%s%s", prefix, name);
    l->fields[l->count] = *f;
    l->fields[l->count].name = copy;
    l->count++;
    return NULL;
}

static cubec_status member_failure(const char *what, const char *name)
{
    return status_make(CUBEC_INVALID_SPIRV,
                       "SPIR-V reflection: the %s of metadata member '%s' "
                       "cannot be read",
                       what, name);
}

static cubec_status walk(walker *w, spvc_type_id struct_id, const char *prefix, uint32_t base,
                         int depth)
{
    spvc_compiler c = w->compiler;
    spvc_type st = spvc_compiler_get_type_handle(c, struct_id);
    unsigned n = spvc_type_get_num_member_types(st);
    for (unsigned i = 0; i < n; i++) {
        spvc_type mt = spvc_compiler_get_type_handle(c, spvc_type_get_member_type(st, i));
        const char *given = spvc_compiler_get_member_name(c, struct_id, i);
        char unnamed[32];
        if (!given || !given[0]) {
            snprintf(unnamed, sizeof unnamed, "(member %u)", i);
            given = unnamed;
        }
        unsigned offset = 0;
        size_t size = 0;
        if (spvc_compiler_type_struct_member_offset(c, st, i, &offset) != SPVC_SUCCESS)
            return member_failure("offset", given);
        if (spvc_compiler_get_declared_struct_member_size(c, st, i, &size) != SPVC_SUCCESS)
            return member_failure("size", given);
        unsigned dims = spvc_type_get_num_array_dimensions(mt);
        int address = is_address(mt);
        kernel_info_field f = {.offset = base + offset,
                               .size = (uint32_t)size,
                               .type = address ? CUBEC_INFO_ADDRESS
                                               : type_of(spvc_type_get_basetype(mt)),
                               .vector_size = 1,
                               .columns = 1};
        if (f.type == CUBEC_INFO_STRUCT && dims == 0 && depth < MAX_DEPTH) {
            size_t len = strlen(prefix) + strlen(given) + 2;
            char *inner = malloc(len);
            if (!inner) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (metadata)");
            snprintf(inner, len, "%s%s.", prefix, given);
            cubec_status err = walk(w, spvc_type_get_base_type_id(mt), inner, f.offset, depth + 1);
            free(inner);
            RETURN_IF_ERROR(err);
            continue;
        }
        if (!address && f.type != CUBEC_INFO_STRUCT) {
            f.vector_size = spvc_type_get_vector_size(mt);
            f.columns = spvc_type_get_columns(mt);
        }
        if (f.columns > 1 && spvc_compiler_type_struct_member_matrix_stride(
                                 c, st, i, &f.matrix_stride) != SPVC_SUCCESS)
            return member_failure("matrix stride", given);
        if (dims > 0) {
            unsigned stride = 0;
            if (spvc_compiler_type_struct_member_array_stride(c, st, i, &stride) != SPVC_SUCCESS)
                return member_failure("array stride", given);
            /* An array of arrays is listed as one run of elements: the block's layout packs the
             * inner arrays back to back (size = count x stride), so the elements are evenly
             * spaced and one length and stride describe them. A dimension set by a
             * specialization constant has no literal: the count then comes from the size. */
            uint64_t length = 1;
            int literal = 1;
            for (unsigned d = 0; d < dims; d++) {
                if (!spvc_type_array_dimension_is_literal(mt, d)) literal = 0;
                length *= spvc_type_get_array_dimension(mt, d);
            }
            uint64_t elements = literal && length ? length : (stride ? size / stride : 0);
            f.array_length = (uint32_t)elements;
            f.array_stride = elements ? (uint32_t)(size / elements) : stride;
        }
        RETURN_IF_ERROR(add_field(w, &f, prefix, given));
    }
    return NULL;
}

cubec_status kernel_info_layout_build(struct spvc_compiler_s *compiler, uint32_t block_type_id,
                                      kernel_info_layout **out_layout)
{
    *out_layout = NULL;
    kernel_info_layout *l = calloc(1, sizeof *l);
    if (!l) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (metadata layout)");
    walker w = {.compiler = compiler, .layout = l};
    cubec_status err = walk(&w, block_type_id, "", 0, 0);
    if (err) {
        kernel_info_layout_free(l);
        return err;
    }
    /* Members come in the order of their offsets in GLSL; hand-written SPIR-V need not. */
    for (uint32_t i = 1; i < l->count; i++) {
        kernel_info_field f = l->fields[i];
        uint32_t j = i;
        for (; j > 0 && l->fields[j - 1].offset > f.offset; j--)
            l->fields[j] = l->fields[j - 1];
        l->fields[j] = f;
    }
    l->scalar_align =
        widest_scalar(compiler, spvc_compiler_get_type_handle(compiler, block_type_id), 0);
    *out_layout = l;
    return NULL;
}

void kernel_info_layout_free(kernel_info_layout *layout)
{
    if (!layout) return;
    for (uint32_t i = 0; i < layout->count; i++)
        free(layout->fields[i].name);
    free(layout->fields);
    free(layout);
}

const kernel_info_field *kernel_info_layout_find(const kernel_info_layout *layout, const char *name)
{
    if (!layout || !name) return NULL;
    for (uint32_t i = 0; i < layout->count; i++)
        if (strcmp(layout->fields[i].name, name) == 0) return &layout->fields[i];
    return NULL;
}

/* GLSL's prefix of vector and matrix type names per element type ("" for float, "d" for
 * double...), and the scalar's own name. */
static void type_words(cubec_info_type t, const char **prefix, const char **scalar)
{
    switch (t) {
    case CUBEC_INFO_BOOL: *prefix = "b", *scalar = "bool"; return;
    case CUBEC_INFO_INT8: *prefix = "i8", *scalar = "int8_t"; return;
    case CUBEC_INFO_UINT8: *prefix = "u8", *scalar = "uint8_t"; return;
    case CUBEC_INFO_INT16: *prefix = "i16", *scalar = "int16_t"; return;
    case CUBEC_INFO_UINT16: *prefix = "u16", *scalar = "uint16_t"; return;
    case CUBEC_INFO_FLOAT16: *prefix = "f16", *scalar = "float16_t"; return;
    case CUBEC_INFO_INT32: *prefix = "i", *scalar = "int"; return;
    case CUBEC_INFO_UINT32: *prefix = "u", *scalar = "uint"; return;
    case CUBEC_INFO_FLOAT32: *prefix = "", *scalar = "float"; return;
    case CUBEC_INFO_INT64: *prefix = "i64", *scalar = "int64_t"; return;
    case CUBEC_INFO_UINT64: *prefix = "u64", *scalar = "uint64_t"; return;
    case CUBEC_INFO_FLOAT64: *prefix = "d", *scalar = "double"; return;
    case CUBEC_INFO_STRUCT: *prefix = "", *scalar = "struct"; return;
    case CUBEC_INFO_ADDRESS: *prefix = "", *scalar = "buffer_reference"; return;
    default: *prefix = "", *scalar = "?"; return;
    }
}

void kernel_info_field_type_name(const kernel_info_field *f, char *buf, size_t size)
{
    const char *prefix, *scalar;
    type_words(f->type, &prefix, &scalar);
    char base[32];
    if (f->columns > 1 && f->columns == f->vector_size)
        snprintf(base, sizeof base, "%smat%u", prefix, f->columns);
    else if (f->columns > 1)
        snprintf(base, sizeof base, "%smat%ux%u", prefix, f->columns, f->vector_size);
    else if (f->vector_size > 1)
        snprintf(base, sizeof base, "%svec%u", prefix, f->vector_size);
    else
        snprintf(base, sizeof base, "%s", scalar);
    if (f->array_length)
        snprintf(buf, size, "%s[%u]", base, f->array_length);
    else
        snprintf(buf, size, "%s", base);
}

void kernel_info_layout_describe(const kernel_info_layout *layout, char *buf, size_t size)
{
    if (!size) return;
    buf[0] = '\0';
    if (!layout || layout->count == 0) {
        snprintf(buf, size, "no members");
        return;
    }
    size_t used = 0;
    for (uint32_t i = 0; i < layout->count; i++) {
        const kernel_info_field *f = &layout->fields[i];
        char type[48];
        kernel_info_field_type_name(f, type, sizeof type);
        int n = snprintf(buf + used, size - used, "%s%s at %u (%s)", i ? ", " : "", f->name,
                         f->offset, type);
        if (n < 0 || (size_t)n >= size - used) {
            /* Cut: end in "..." where there is room for it. */
            if (size >= 4) snprintf(buf + size - 4, 4, "...");
            return;
        }
        used += (size_t)n;
    }
}
