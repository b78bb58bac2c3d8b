/* Helpers shared by the kernel compiler and reflection tests: assertions that print the status
 * or text they reject, and a cmocka group fixture holding one glsl_compiler, which is costly to
 * create, for every test of the group. */
#ifndef CUBEC_TEST_KERNEL_TEST_UTIL_H
#define CUBEC_TEST_KERNEL_TEST_UTIL_H

#include "cubec/cubec.h"

#include <stddef.h>
#include <stdint.h>

/* Fails the test unless `text` is non-NULL and contains `needle`. */
void expect_contains(const char *text, const char *needle);
/* Fails the test, printing the code and message, if `status` is an error (which it frees). */
void expect_ok(cubec_status status);
/* Fails the test, printing SPIRV-Tools' diagnostic, unless the `n` words at `words` are a valid
 * SPIR-V module for Vulkan 1.2 (what a rewrite of a module must still be). `what` names it. */
void expect_valid_spirv(const uint32_t *words, size_t n, const char *what);

/* Group setup and teardown: *state is the group's glsl_compiler. Setup fails the group when the
 * compiler cannot be created. */
int group_setup(void **state);
int group_teardown(void **state);

#endif
