/* The members of a kernel's metadata block (CUBEC_INFO, or a push-constant block of the source's
 * own), read from SPIRV-Cross's reflection: names, std430 offsets and sizes, element types and
 * shapes. cubec_kernel_get_info_field hands them out so that C and bindings fill the block by name
 * instead of mirroring it with a C struct, and the launch's size check names them when the
 * caller's size is wrong. Only reflect.c builds a layout (it owns the SPIRV-Cross session). */
#ifndef CUBEC_KERNEL_INFO_LAYOUT_H
#define CUBEC_KERNEL_INFO_LAYOUT_H

#include "cubec/cubec.h"

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kernel_info_field {
    char *name; /* owned by the layout */
    uint32_t offset, size;
    cubec_info_type type;
    uint32_t vector_size, columns, array_length, array_stride, matrix_stride;
} kernel_info_field;

typedef struct kernel_info_layout {
    uint32_t count; /* fields listed, in the order of their offsets */
    kernel_info_field *fields;
    /* The widest scalar of the block in bytes (1..8): a C struct that mirrors the block is padded
     * to a multiple of it (a double + float block is 12 bytes, its C struct 16), so the launch
     * accepts that size too. */
    uint32_t scalar_align;
} kernel_info_layout;

struct spvc_compiler_s;

/* Walks the struct type `block_type_id` of `compiler` (the block's base type) into a new layout.
 * Members of a struct member are listed in its place as "outer.inner"; an array of structs is one
 * CUBEC_INFO_STRUCT field. Errors: CUBEC_OUT_OF_MEMORY; CUBEC_INVALID_SPIRV where SPIRV-Cross
 * cannot measure a member. */
MUST_USE cubec_status kernel_info_layout_build(struct spvc_compiler_s *compiler,
                                               uint32_t block_type_id,
                                               kernel_info_layout **out_layout);

/* Frees a layout; NULL is accepted. */
void kernel_info_layout_free(kernel_info_layout *layout);

/* The field named `name`, or NULL. */
const kernel_info_field *kernel_info_layout_find(const kernel_info_layout *layout,
                                                 const char *name);

/* Writes "name at offset (type), ..." into buf (at most `size` bytes, ending in "..." when cut):
 * the launch's size check and cubec_kernel_find_info_field name the members with it. */
void kernel_info_layout_describe(const kernel_info_layout *layout, char *buf, size_t size);

/* The GLSL-like name of a field's type ("float", "vec3", "uint[4]", "dmat2"), into buf. */
void kernel_info_field_type_name(const kernel_info_field *f, char *buf, size_t size);

#endif
