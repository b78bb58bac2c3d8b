/* The server keeps the GPU seam's memory contract (gpu.h, gpu_ops.mem_map): every write through a
 * mapped pointer is followed by gpu_mem_flush, every read of device-written bytes by
 * gpu_mem_invalidate. Checked on the null backend with CUBEC_NULL_NONCOHERENT=1, where a mapping
 * is a host copy of the device's bytes: an unflushed write never reaches the device (and is lost
 * at the next invalidate), an uninvalidated read sees old bytes, and a submission that reads
 * upload or metadata bytes written without a flush is refused. Each case runs on unified memory
 * (pages written and read through their mapping) and with staging (the upload and readback
 * rings), with launches' metadata in a buffer (the metadata ring, and a graph's own metadata).
 * Every expected value is computed here; removing any one of the server's flushes fails a case. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WORDS = 3000 }; /* not a multiple of a chunk or page: ranges end mid-way */

static cubec_device *open_noncoherent(int staging)
{
    setenv("CUBEC_NULL_NONCOHERENT", "1", 1);
    setenv("CUBEC_KERNEL_METADATA", "buffer", 1);
    if (staging)
        setenv("CUBEC_FORCE_STAGING", "1", 1);
    else
        unsetenv("CUBEC_FORCE_STAGING");
    cubec_device_desc desc = {.struct_size = sizeof(cubec_device_desc), .backend = "null"};
    cubec_device *d = NULL;
    ASSERT_OK(cubec_device_open(&desc, &d));
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    assert_int_equal(info.unified_memory, !staging);
    return d;
}

static void fill_words(uint32_t *w, uint32_t n, uint32_t seed)
{
    for (uint32_t i = 0; i < n; i++)
        w[i] = seed * 2654435761u + i * 40503u + 1u;
}

static void expect_words(cubec_device *d, cubec_stream s, cubec_buffer b, const uint32_t *want,
                         uint32_t n, const char *what)
{
    uint32_t *got = malloc(n * sizeof *got);
    assert_non_null(got);
    memset(got, 0xee, n * sizeof *got);
    ASSERT_OK(cubec_read(d, s, b, 0, got, n * sizeof *got));
    for (uint32_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s: word %" PRIu32 " is 0x%08" PRIx32 ", expected 0x%08" PRIx32, what, i,
                     got[i], want[i]);
    free(got);
}

/* Uploads, writes at offsets, device copies of written bytes, blocking and asynchronous reads. */
static void transfers(int staging)
{
    cubec_device *d = open_noncoherent(staging);
    cubec_stream s = new_stream(d);
    static uint32_t model[WORDS], other[WORDS], part[100];
    fill_words(model, WORDS, 1);
    cubec_buffer a = {0}, b = {0};
    ASSERT_OK(cubec_buffer_from(d, s, model, sizeof model, &a));
    ASSERT_OK(cubec_buffer_create(d, s, sizeof other, &b));
    expect_words(d, s, a, model, WORDS, "a after its upload");

    /* A write into the middle, then a device copy of the whole buffer reads the written bytes. */
    fill_words(part, 100, 2);
    ASSERT_OK(cubec_write(d, s, a, (uint64_t)1234 * 4, part, sizeof part));
    memcpy(model + 1234, part, sizeof part);
    ASSERT_OK(cubec_copy(d, s, a, 0, b, 0, sizeof model));
    expect_words(d, s, b, model, WORDS, "b copied from a after a write");

    /* The device writes b again (a fill): the host reads what the device wrote. */
    ASSERT_OK(cubec_fill(d, s, b, 0, sizeof other, 0x5a5a5a5au));
    for (uint32_t i = 0; i < WORDS; i++)
        other[i] = 0x5a5a5a5au;
    expect_words(d, s, b, other, WORDS, "b after a fill");
    cubec_event *e = NULL;
    static uint32_t got[WORDS];
    ASSERT_OK(cubec_copy(d, s, a, 0, b, 0, sizeof model));
    ASSERT_OK(cubec_read_async(d, s, b, 0, got, sizeof got, &e));
    ASSERT_OK(cubec_event_wait(e));
    cubec_event_free(e);
    assert_memory_equal(got, model, sizeof model);
    /* Written by the device and complete before the call: an asynchronous read of unified
     * memory copies at once, from a mapping that must be refreshed first. */
    ASSERT_OK(cubec_fill(d, s, b, 0, sizeof other, 0x3c3c3c3cu));
    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_read_async(d, s, b, 0, got, sizeof got, &e));
    ASSERT_OK(cubec_event_wait(e));
    cubec_event_free(e);
    for (uint32_t i = 0; i < WORDS; i++)
        if (got[i] != 0x3c3c3c3cu) fail_msg("read_async after a sync: word %" PRIu32, i);

    ASSERT_OK(cubec_buffer_release(d, a));
    ASSERT_OK(cubec_buffer_release(d, b));
    cubec_device_close(d);
}

static void test_transfers_unified(void **state)
{
    (void)state;
    transfers(0);
}

static void test_transfers_staged(void **state)
{
    (void)state;
    transfers(1);
}

/* Launches with metadata of their own each (no two alike, so none reuses a slice), eager and
 * replayed from a graph: every submission reads flushed metadata, or it is refused and the sync
 * reports it. No kernel runs on null: the output keeps its bytes. */
static void launches(int staging)
{
    cubec_device *d = open_noncoherent(staging);
    cubec_stream s = new_stream(d);
    cubec_kernel consume = make_kernel(d, "consume", consume_src);
    static uint32_t xs[WORDS], ys[WORDS];
    fill_words(xs, WORDS, 3);
    fill_words(ys, WORDS, 4);
    cubec_buffer x = {0}, y = {0};
    ASSERT_OK(cubec_buffer_from(d, s, xs, sizeof xs, &x));
    ASSERT_OK(cubec_buffer_from(d, s, ys, sizeof ys, &y));
    for (uint32_t i = 0; i < 40; i++)
        ASSERT_OK(uint_launch(d, s, consume, x, y, WORDS, 3 + i, i));
    ASSERT_OK(cubec_sync_check(d, s, &y, 1));

    cubec_graph g = {0};
    ASSERT_OK(cubec_graph_prepare(d, s));
    for (uint32_t i = 0; i < 8; i++)
        ASSERT_OK(uint_launch(d, s, consume, x, y, WORDS, 100 + i, i));
    ASSERT_OK(cubec_graph_begin(d, s));
    for (uint32_t i = 0; i < 8; i++)
        ASSERT_OK(uint_launch(d, s, consume, x, y, WORDS, 200 + i, i));
    ASSERT_OK(cubec_graph_end(d, s, &g));
    for (int round = 0; round < 3; round++) {
        ASSERT_OK(cubec_graph_replay(d, s, g));
        ASSERT_OK(cubec_sync_check(d, s, &y, 1));
    }
    expect_words(d, s, y, ys, WORDS, "y after launches on null");

    ASSERT_OK(cubec_graph_destroy(d, s, g));
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, y));
    ASSERT_OK(cubec_kernel_destroy(d, consume));
    cubec_device_close(d);
}

static void test_launches_unified(void **state)
{
    (void)state;
    launches(0);
}

static void test_launches_staged(void **state)
{
    (void)state;
    launches(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transfers_unified),
        cmocka_unit_test(test_transfers_staged),
        cmocka_unit_test(test_launches_unified),
        cmocka_unit_test(test_launches_staged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
