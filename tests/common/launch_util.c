#include "launch_util.h"

#include "test_util.h"
#include "uint_kernels.h"

#include <stdio.h>
#include <stdlib.h>

cubec_kernel make_kernel_defined(cubec_device *d, const char *name, const char *glsl,
                                 const cubec_define *defines, uint32_t define_count)
{
    cubec_kernel k = {0};
    cubec_kernel_desc desc = {.struct_size = sizeof(cubec_kernel_desc),
                              .name = name,
                              .glsl = glsl,
                              .defines = defines,
                              .define_count = define_count};
    ASSERT_OK(cubec_kernel_create(d, &desc, &k));
    return k;
}

cubec_kernel make_kernel(cubec_device *d, const char *name, const char *glsl)
{
    return make_kernel_defined(d, name, glsl, NULL, 0);
}

cubec_stream new_stream(cubec_device *d)
{
    cubec_stream s = 0;
    ASSERT_OK(cubec_stream_new(d, &s));
    assert_true(s != CUBEC_STREAM_CURRENT);
    return s;
}

uint64_t stream_number(cubec_stream s)
{
    return s & 0xffffffffffffull;
}

static uint64_t created; /* buffers created on the current device */

cubec_device *open_device(void)
{
    created = 0;
    return test_device_open();
}

tbuf make_numbered_buffer(cubec_device *d, cubec_stream s, const void *data, uint64_t bytes)
{
    tbuf b = {{0}, ++created};
    if (data)
        ASSERT_OK(cubec_buffer_from(d, s, data, bytes, &b.h));
    else
        ASSERT_OK(cubec_buffer_create(d, s, bytes, &b.h));
    return b;
}

void expect_range_in(cubec_device *d, cubec_stream s, cubec_buffer b, uint32_t buffer_words,
                     uint32_t at, uint32_t words, const uint32_t *want, const char *what)
{
    assert_true(at + words <= buffer_words);
    uint32_t *got = malloc((size_t)words * 4);
    assert_non_null(got);
    ASSERT_OK(cubec_read(d, s, b, (uint64_t)at * 4, got, (uint64_t)words * 4));
    for (uint32_t i = 0; i < words; i++)
        if (got[i] != want[i]) {
            uint32_t g = got[i], w = want[i];
            free(got);
            fail_msg("%s: word %u is %u, expected %u", what, at + i, g, w);
        }
    free(got);
}

/* ASSERT_ERROR that also prints the message, as the graph tests print every error they check. */
static void expect_printed_error(cubec_status st, const char *needle, const char *expr, int line)
{
    if (st)
        printf("    %s\n      -> %s: %s\n", expr, cubec_code_name(cubec_status_code(st)),
               cubec_status_message(st));
    test_assert_error(st, CUBEC_INTERNAL, needle, expr, __FILE__, line);
}

void taint_by_lost_submission(cubec_device *d, cubec_stream s, cubec_kernel k, cubec_buffer b,
                              uint32_t n, uint32_t mul, uint32_t add)
{
    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(uint_launch(d, s, k, b, NONE, n, mul, add));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    expect_printed_error(cubec_flush(d, s), "injected fault: submit call #", "cubec_flush(d, s)",
                         __LINE__);
    expect_printed_error(cubec_check(d, &b, 1),
                         "the submission of its work failed: injected fault: submit call #",
                         "cubec_check(d, &b, 1)", __LINE__);
}
