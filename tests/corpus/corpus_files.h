/* The vendored shader files of tests/corpus, read as the kernel tests hand them to cubec: the
 * text of a file and its path (for cubec_kernel_desc.glsl and glsl_path), from the source
 * directory the build names in CUBEC_CORPUS_DIR. */
#ifndef CUBEC_CORPUS_FILES_H
#define CUBEC_CORPUS_FILES_H

#include <stddef.h>
#include <stdint.h>

/* The path of `relative` (e.g. "ncnn/shader/relu.comp") under the corpus directory, in `out`. */
void corpus_path(char *out, size_t cap, const char *relative);
/* The file's bytes with a terminating NUL (free() them); fails the test when it cannot be read. */
char *corpus_read_text(const char *relative);

/* The words of a SPIR-V module the build made, `dir`/`stem`.spv (malloc'ed, *out_words of them);
 * fails the test naming the file and `built_by` (the target that makes it) when it is missing. */
uint32_t *corpus_read_spirv(const char *dir, const char *stem, const char *built_by,
                            size_t *out_words);

/* IEEE half-precision conversions for the tests' fp16 buffers: float_to_half rounds to the
 * nearest even half (the conversion a GPU's float16_t() does), half_to_float is exact. */
unsigned short corpus_float_to_half(float f);
float corpus_half_to_float(unsigned short h);

#endif
