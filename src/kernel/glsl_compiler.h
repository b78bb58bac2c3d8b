/* GLSL compute source -> SPIR-V, through shaderc (the NVRTC of Vulkan).
 *
 * This module owns the one place where cubec's GLSL dialect is defined: before the user's source
 * it defines CUBEC_INFO(MEMBERS), which declares the kernel's metadata block either as push
 * constants or as a read-only storage buffer at binding CUBEC_INFO_BINDING, so the same source
 * serves devices with small and large push-constant limits. The macros go in as predefined
 * macros (shaderc puts them in glslang's preamble), so the line numbers in diagnostics are the
 * user's own. */
#ifndef CUBEC_KERNEL_GLSL_COMPILER_H
#define CUBEC_KERNEL_GLSL_COMPILER_H

#include "cubec/cubec.h"

#include "base/status.h"
#include "kernel/glsl_sources.h"

#include <stddef.h>
#include <stdint.h>

/* Wraps one shaderc_compiler_t; the caller serializes its use. */
typedef struct glsl_compiler glsl_compiler;

/* Where CUBEC_INFO(M) puts the kernel's metadata block `info` (std430 offsets in every form). */
typedef enum glsl_info_form {
    GLSL_INFO_STORAGE = 0, /* a read-only storage buffer at CUBEC_INFO_BINDING */
    GLSL_INFO_PUSH = 1,    /* push constants */
    GLSL_INFO_UNIFORM = 2, /* a uniform buffer at CUBEC_INFO_BINDING (needs scalarBlockLayout) */
} glsl_info_form;

MUST_USE cubec_status glsl_compiler_create(glsl_compiler **out_compiler);
/* NULL is accepted. */
void glsl_compiler_destroy(glsl_compiler *compiler);

/* Compiles GLSL compute source to SPIR-V 1.5 for Vulkan 1.2.
 *
 * Predefined: CUBEC_INFO(M) (push-constant block, read-only storage buffer or uniform buffer
 * `info`, as chosen by `form`; for the uniform form GL_EXT_scalar_block_layout is enabled after
 * the #version line), CUBEC_INFO_BINDING (31) and CUBEC_INFO_IN_PUSH_CONSTANTS (1 or 0),
 * then the user's defines (a NULL value defines the name empty). `name` (NULL: "kernel") names
 * the kernel in diagnostics; `entry_point` (NULL: "main") becomes the SPIR-V entry point's name
 * (the GLSL function is always main). optimize != 0 selects shaderc's performance level.
 *
 * Errors: CUBEC_INVALID_ARGUMENT naming a bad argument; CUBEC_COMPILE_FAILED with
 * "kernel '<name>': GLSL compilation failed:\n<shaderc's line-numbered diagnostics>", or, for an
 * entry_point other than main that the preprocessed source defines no `void <entry_point>()` for
 * (a source with a main would otherwise compile that main), "kernel '<name>': entry_point 'X'
 * names no function of the GLSL source ...".
 * On success *out_words is malloc'ed (free() it) and holds *out_word_count words. */
MUST_USE cubec_status glsl_compile(glsl_compiler *compiler, const char *name, const char *source,
                                   const cubec_define *defines, uint32_t define_count,
                                   const char *entry_point, int optimize, glsl_info_form form,
                                   uint32_t **out_words, size_t *out_word_count);

/* What a kernel brings beyond its source text (docs/kernels.md, "Bringing existing shaders"). */
typedef struct glsl_source_options {
    /* Text inserted after the #version line (extension lines, defines), or NULL. A #line follows
     * it, so diagnostics keep the source's own line numbers; the preamble's own lines are
     * reported as "<preamble>:N". */
    const char *preamble;
    /* The kernel's source in diagnostics ("<file_name>:<line>: error"), e.g. the path it was read
     * from; NULL: the kernel's name. */
    const char *file_name;
    /* Resolves #include (served from this snapshot, see glsl_sources.h); NULL: an #include is
     * not found, with a message saying that no directory was given. */
    glsl_sources *includes;
} glsl_source_options;

/* glsl_compile with `more` (NULL: none of it). An #include not found fails with
 * CUBEC_COMPILE_FAILED naming the file, the including file and line and the directories searched;
 * includes nested deeper than GLSL_MAX_INCLUDE_DEPTH (a cycle) fail with the chain of files. */
MUST_USE cubec_status glsl_compile_with(glsl_compiler *compiler, const char *name,
                                        const char *source, const glsl_source_options *more,
                                        const cubec_define *defines, uint32_t define_count,
                                        const char *entry_point, int optimize, glsl_info_form form,
                                        uint32_t **out_words, size_t *out_word_count);

#endif
