/* The files a GLSL kernel may #include, read once when the kernel is created.
 *
 * A kernel's identity (its memory and disk cache keys) must change when any file it includes
 * changes, and what is compiled must be what was hashed. So the files are gathered before the
 * kernel's identity is computed: the source is scanned for #include lines (every one, conditional
 * or not: a superset of what the preprocessor takes), each is resolved as the compiler's include
 * callback resolves it, and the files found are read and scanned in turn. The identity hashes the
 * resolutions and the bytes; the compiler's include callback then serves the files from this
 * snapshot, so a file edited during a build cannot be compiled under the old key.
 *
 * Resolution, as C compilers do it: #include "x" looks next to the including file first (for the
 * kernel's own source, next to desc->glsl_path when given), then in the include directories in
 * order; #include <x> looks in the include directories only. An absolute name is taken as it
 * is. The current directory is never searched implicitly (pass "." to search it). */
#ifndef CUBEC_KERNEL_GLSL_SOURCES_H
#define CUBEC_KERNEL_GLSL_SOURCES_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct glsl_sources glsl_sources;

/* How deep #include may nest: past it, the include fails (an include cycle without guards ends
 * here; glslang itself has no limit and recurses forever). */
#define GLSL_MAX_INCLUDE_DEPTH 32

/* Gathers the files `source` and `preamble` (NULL: none; it is part of the source to the
 * compiler) may include. `source_path` (NULL: none) is the file the source was read from; `dirs`
 * the include directories. `max_bytes` bounds the bytes of all files read (the
 * device's source limit); more is refused as CUBEC_INVALID_ARGUMENT naming the file. `fn` names
 * the API call in messages. Files not found are recorded as such (the compiler reports them, if
 * the preprocessor reaches their #include). */
MUST_USE cubec_status glsl_sources_gather(const char *fn, const char *source, const char *preamble,
                                          const char *source_path, const char *const *dirs,
                                          uint32_t dir_count, uint64_t max_bytes,
                                          glsl_sources **out);
/* NULL is accepted. */
void glsl_sources_free(glsl_sources *s);

/* Whether the snapshot holds anything that may change what is compiled: a file or a resolution
 * (found or not). A source without #include has none, and its identity stays what it was. */
int glsl_sources_any(const glsl_sources *s);

/* Feeds every resolution and every file's path and bytes to `add`, length-prefixed fields, in a
 * deterministic order: the kernel identity hashes them, the disk cache's key holds them. */
void glsl_sources_digest(const glsl_sources *s, void (*add)(void *ctx, const void *bytes, size_t n),
                         void *ctx);

/* One file of the snapshot. */
typedef struct glsl_source_file {
    char *path; /* as resolved: the including directory or include dir joined with the name */
    char *text;
    size_t length;
} glsl_source_file;

/* Resolves `name` (`system`: written <name>) included by `requester` (NULL: the kernel's own
 * source). Returns the file, or NULL when it is not found or cannot be read; then *out_why (owned
 * by the snapshot, valid until it is freed) says which directories were searched. A resolution
 * the gather did not make (an #include it could not see) is made now, from the disk. */
const glsl_source_file *glsl_sources_resolve(glsl_sources *s, const glsl_source_file *requester,
                                             const char *name, int system, const char **out_why);

/* The file of the snapshot whose path is `path`, or NULL. */
const glsl_source_file *glsl_sources_find(const glsl_sources *s, const char *path);

#endif
