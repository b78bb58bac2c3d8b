/* A copy of a module that the SPIRV-Cross cubec is built with can parse, for reflection only.
 *
 * Debian 12's SPIRV-Cross (2021) stops at instructions newer than itself: the cooperative-matrix
 * types (OpTypeCooperativeMatrixNV, OpTypeCooperativeMatrixKHR) and their loads, stores and
 * multiply-adds. Reflection reads only the module's declarations (resources, decorations,
 * execution modes, capabilities, specialization constants), never a function body, so the copy
 * keeps every declaration except those built on a cooperative-matrix type, and reduces each
 * function's body to a return. The module itself is what is validated and run. */
#ifndef CUBEC_KERNEL_REFLECT_COMPAT_H
#define CUBEC_KERNEL_REFLECT_COMPAT_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

/* *out (malloc'ed, *out_count words) is the copy, or NULL where the module declares no
 * cooperative-matrix type and needs none. The module must have passed validation. */
MUST_USE cubec_status reflect_compat_copy(const uint32_t *words, size_t word_count, uint32_t **out,
                                          size_t *out_count);

#endif
