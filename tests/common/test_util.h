/* Helpers shared by the tests: a device opened with the validation layer on, which counts every
 * validation message so that the test fails on any, and status assertions that print the
 * message when they fail. */
#ifndef CUBEC_TEST_UTIL_H
#define CUBEC_TEST_UTIL_H

#include "cubec/cubec.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

/* Opens the default device with validation; fails the test if that is impossible. */
cubec_device *test_device_open(void);
/* Closes it and fails the test if the validation layer said anything while it was open. */
void test_device_close(cubec_device *device);
/* The number of validation messages so far. */
unsigned test_validation_messages(void);

#define ASSERT_OK(expr)                                                                            \
    do {                                                                                           \
        cubec_status st_ = (expr);                                                                 \
        if (st_) fail_msg("%s failed: %s", #expr, cubec_status_message(st_));                      \
    } while (0)

/* Asserts that `expr` fails with `code` and that the message contains `needle`. */
#define ASSERT_ERROR(expr, code, needle)                                                           \
    test_assert_error((expr), (code), (needle), #expr, __FILE__, __LINE__)
void test_assert_error(cubec_status st, cubec_code code, const char *needle, const char *expr,
                       const char *file, int line);

/* Where tests make their files: $TMPDIR when set (ctest sets it to a directory that must be
 * empty after the run: tests/CMakeLists.txt, test_tmp_empty), else /tmp. */
const char *test_tmp_dir(void);
/* A new empty directory <test_tmp_dir()>/<prefix>_XXXXXX, its path in `out` (fails the test if it
 * cannot be made), and the removal of such a directory with everything in it. */
void test_temp_dir(char *out, size_t cap, const char *prefix);
void test_remove_tree(const char *dir);
/* Lines of the text file `path` that contain `needle` (the file must exist). */
size_t test_count_lines_with(const char *path, const char *needle);
/* Files of `dir` named <anything>.<kind> (the disk cache's entries of that kind). */
uint32_t test_count_entries(const char *dir, const char *kind);

/* Deterministic pseudo-random numbers for test data. */
uint32_t test_rand(uint32_t *state);
float test_randf(uint32_t *state); /* in [-1, 1) */

#endif
