/* cubec_write_failure (cubec.h "Transfers"): a failure written in place of bytes, as a library that
 * fills buffers outside cubec (cubec_mpi) does when its transfer fails. On the default device with
 * the validation layer on:
 *  - the range carries the failure with the code and message given: a read returns it, bytes
 *    around it read back as written, a launch that reads it is skipped and passes it on;
 *  - it is ordered after the earlier work on the stream: a launch queued before it that writes the
 *    range does not clear it;
 *  - a later cubec_write clears it;
 *  - bad arguments are refused by name and leave the bytes as they were. */
#include "test_util.h"
#include "uint_kernels.h"

#include <stdio.h>
#include <string.h>

#define N 256 /* words per buffer */
#define BYTES ((uint64_t)N * 4)

static void test_failure_read_back_and_passed_on(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel produce, consume, step;
    uint_kernels_create(d, &produce, &consume, &step);
    const cubec_stream s = CUBEC_STREAM_CURRENT;
    uint32_t host[N], expect[N], got[N];
    for (uint32_t i = 0; i < N; i++)
        host[i] = i * 7u + 1u;
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_from(d, s, host, BYTES, &x));
    ASSERT_OK(cubec_buffer_create(d, s, BYTES, &y));

    /* A launch that writes x is queued first: its recording must not clear the failure written
     * after it. */
    ASSERT_OK(uint_launch(d, s, produce, x, NONE, N, 3, 5));
    ASSERT_OK(cubec_write_failure(d, s, x, 64, 128, CUBEC_INTERNAL, "rank 1's input failed"));
    ASSERT_ERROR(cubec_read(d, s, x, 0, got, BYTES), CUBEC_INTERNAL, "rank 1's input failed");
    ASSERT_ERROR(cubec_read(d, s, x, 64, got, 4), CUBEC_INTERNAL, "rank 1's input failed");
    /* The bytes around the range carry none: they hold what produce wrote. */
    cpu_produce(expect, N, 3, 5);
    ASSERT_OK(cubec_read(d, s, x, 0, got, 64));
    assert_memory_equal(got, expect, 64);
    ASSERT_OK(cubec_read(d, s, x, 192, got, BYTES - 192));
    assert_memory_equal(got, expect + 48, BYTES - 192);

    /* A launch reading the range is skipped; its output carries the failure. */
    ASSERT_OK(uint_launch(d, s, consume, x, y, N, 1, 0));
    ASSERT_ERROR(cubec_sync_check(d, s, &y, 1), CUBEC_INTERNAL, "rank 1's input failed");

    /* A write clears it. */
    ASSERT_OK(cubec_write(d, s, x, 0, host, BYTES));
    ASSERT_OK(cubec_read(d, s, x, 0, got, BYTES));
    assert_memory_equal(got, host, BYTES);

    ASSERT_OK(cubec_buffer_release(d, y));
    ASSERT_OK(cubec_buffer_release(d, x));
    uint_kernels_destroy(d, produce, consume, step);
    test_device_close(d);
}

static void test_bad_arguments_refused_by_name(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    const cubec_stream s = CUBEC_STREAM_CURRENT;
    uint32_t host[N], got[N];
    for (uint32_t i = 0; i < N; i++)
        host[i] = i ^ 0x5a5a5a5au;
    cubec_buffer x;
    ASSERT_OK(cubec_buffer_from(d, s, host, BYTES, &x));
    ASSERT_ERROR(cubec_write_failure(d, s, x, 0, 4, CUBEC_OK, "m"), CUBEC_INVALID_ARGUMENT,
                 "code = 0");
    ASSERT_ERROR(cubec_write_failure(d, s, x, 0, 4, (cubec_code)99, "m"), CUBEC_INVALID_ARGUMENT,
                 "code = 99");
    ASSERT_ERROR(cubec_write_failure(d, s, x, 0, 4, CUBEC_INTERNAL, NULL), CUBEC_INVALID_ARGUMENT,
                 "message is NULL");
    ASSERT_ERROR(cubec_write_failure(d, s, x, BYTES - 4, 8, CUBEC_INTERNAL, "m"),
                 CUBEC_INVALID_ARGUMENT, "cubec_write_failure: dst");
    ASSERT_ERROR(cubec_write_failure(d, s, (cubec_buffer){12345}, 0, 4, CUBEC_INTERNAL, "m"),
                 CUBEC_INVALID_ARGUMENT, "cubec_write_failure: dst");
    /* Nothing was written. */
    ASSERT_OK(cubec_read(d, s, x, 0, got, BYTES));
    assert_memory_equal(got, host, BYTES);
    ASSERT_OK(cubec_buffer_release(d, x));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failure_read_back_and_passed_on),
        cmocka_unit_test(test_bad_arguments_refused_by_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
