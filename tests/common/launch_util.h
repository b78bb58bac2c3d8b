/* Helpers shared by the tests that launch kernels and compare messages that name buffers and
 * streams (the failure, graph, stream and profiling tests): kernels, streams and buffers created
 * with their calls asserted, buffer and stream numbers as messages print them, and a buffer made
 * to carry a failure by a lost submission. */
#ifndef CUBEC_TEST_LAUNCH_UTIL_H
#define CUBEC_TEST_LAUNCH_UTIL_H

#include "cubec/cubec.h"

#include <stdint.h>

/* A kernel compiled from `glsl`; fails the test if it cannot be created. */
cubec_kernel make_kernel(cubec_device *d, const char *name, const char *glsl);
cubec_kernel make_kernel_defined(cubec_device *d, const char *name, const char *glsl,
                                 const cubec_define *defines, uint32_t define_count);

/* A new stream, never CUBEC_STREAM_CURRENT. */
cubec_stream new_stream(cubec_device *d);
/* The stream's number as messages print it: the low 48 bits of its id. */
uint64_t stream_number(cubec_stream s);

/* Buffers are numbered in the order of creation on a device ("buffer #n" in messages). A test that
 * expects those numbers opens its device with open_device (the count starts again) and creates
 * every buffer with make_numbered_buffer. */
typedef struct tbuf {
    cubec_buffer h;
    uint64_t number;
} tbuf;

cubec_device *open_device(void);
/* A buffer of `bytes` bytes on `s`, uploaded from `data` when it is not NULL. */
tbuf make_numbered_buffer(cubec_device *d, cubec_stream s, const void *data, uint64_t bytes);

/* Reads words [at, at + words) of `b`, a buffer of `buffer_words` words (the range must lie in it),
 * and compares them with want[0..words), naming the first difference. */
void expect_range_in(cubec_device *d, cubec_stream s, cubec_buffer b, uint32_t buffer_words,
                     uint32_t at, uint32_t words, const uint32_t *want, const char *what);

/* Loses the submission of a launch that writes `b` (uint kernel k, binding 0 = b, info {n, mul,
 * add}), so that `b` carries a failure. The stream is synced first: only that launch is lost. The
 * flush must report the injected fault and a check of `b` the lost submission; both messages are
 * printed. */
void taint_by_lost_submission(cubec_device *d, cubec_stream s, cubec_kernel k, cubec_buffer b,
                              uint32_t n, uint32_t mul, uint32_t add);

#endif
