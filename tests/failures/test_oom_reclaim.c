/* Out of device memory while other streams' pools hold empty pages (issue 11): before a buffer
 * creation fails with CUBEC_OUT_OF_MEMORY, the empty pages of every stream slot go back to the
 * driver and the page is tried again (docs/errors.md "Out of device memory").
 *
 *  (a) test_null_heap_reclaims_other_streams_pages: on the null backend with its heap capped
 *      (CUBEC_NULL_HEAP_BYTES), stream 1 fills three 8 MiB pages with 2 MiB buffers and releases
 *      all but two, so its slot keeps two empty pages; stream 2's 16 MiB buffer fits the cap only
 *      once those are returned, and is created. The bytes of every surviving buffer read back as
 *      written. A buffer larger than the whole cap then fails with CUBEC_OUT_OF_MEMORY naming its
 *      size and the bytes reserved and in use over every stream (computed here from the memory
 *      reports), and the device is still usable: a new buffer is written and read back.
 *  (b) test_page_fault_reclaims_other_streams_pages: on the default device (validation on), one
 *      injected page fault (CUBEC_FAULT_PAGE) while stream 1 holds empty pages: stream 2's
 *      creation succeeds, stream 1's empty pages were returned (its report keeps only the pages
 *      with live buffers), and the buffers' bytes read back as written.
 * Before the fix both failed: the memory manager returned only the empty pages of the creating
 * stream's own slot, so (a) failed with CUBEC_OUT_OF_MEMORY and (b) kept stream 1's pages. */
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024ull)
#define SMALL (2 * MIB) /* the largest slice of the 8 MiB pages on a 128 MiB page limit */
#define SMALL_COUNT 12u /* at least three pages of four (lavapipe's 8 MiB pages) */
#define KEPT 2u         /* buffers 0 and 1 survive: both in the first page */

static void pattern(uint32_t *words, uint64_t bytes, uint32_t seed)
{
    for (uint64_t i = 0; i < bytes / 4; i++)
        words[i] = (uint32_t)i * 2654435761u + seed;
}

/* Reads `b` back and compares it with the pattern it was written with. */
static void expect_pattern(cubec_device *d, cubec_stream s, cubec_buffer b, uint64_t bytes,
                           uint32_t seed)
{
    uint32_t *want = malloc(bytes), *got = malloc(bytes);
    assert_non_null(want);
    assert_non_null(got);
    pattern(want, bytes, seed);
    memset(got, 0xee, bytes);
    ASSERT_OK(cubec_read(d, s, b, 0, got, bytes));
    if (memcmp(want, got, bytes) != 0) fail_msg("a buffer written with seed %u reads back", seed);
    free(want);
    free(got);
}

static cubec_buffer make_written(cubec_device *d, cubec_stream s, uint64_t bytes, uint32_t seed)
{
    uint32_t *words = malloc(bytes);
    assert_non_null(words);
    pattern(words, bytes, seed);
    cubec_buffer b = {0};
    ASSERT_OK(cubec_buffer_create(d, s, bytes, &b));
    ASSERT_OK(cubec_write(d, s, b, 0, words, bytes));
    free(words);
    return b;
}

static cubec_memory_report report(cubec_device *d, cubec_stream s)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    return r;
}

/* Stream 1's buffers: SMALL_COUNT written, all but the first KEPT released after a sync, so that
 * its slot holds empty pages and nothing is in flight. Returns the pages it held at its peak. */
static uint32_t leave_empty_pages(cubec_device *d, cubec_stream s1, cubec_buffer kept[KEPT])
{
    /* Enough buffers for three pages of the device's page size (8 MiB on lavapipe, larger on a
     * GPU with more memory): the first one's page tells its size. */
    cubec_buffer first = make_written(d, s1, SMALL, 100);
    cubec_memory_report r0 = report(d, s1);
    assert_int_equal(r0.pages, 1);
    uint64_t per_page = r0.bytes_reserved / SMALL;
    assert_true(per_page >= 1 && per_page <= 1024);
    uint32_t count = (uint32_t)(3 * per_page);
    if (count < SMALL_COUNT) count = SMALL_COUNT;
    cubec_buffer *b = calloc(count, sizeof *b);
    assert_non_null(b);
    b[0] = first;
    for (uint32_t i = 1; i < count; i++)
        b[i] = make_written(d, s1, SMALL, 100 + i);
    ASSERT_OK(cubec_sync(d, s1));
    uint32_t peak = report(d, s1).pages;
    for (uint32_t i = KEPT; i < count; i++)
        ASSERT_OK(cubec_buffer_release(d, b[i]));
    for (uint32_t i = 0; i < KEPT; i++)
        kept[i] = b[i];
    free(b);
    cubec_memory_report r = report(d, s1);
    assert_int_equal(r.bytes_in_use, KEPT * SMALL);
    assert_int_equal(r.pages, peak); /* the sliced pools keep their empty pages */
    return peak;
}

static void test_null_heap_reclaims_other_streams_pages(void **state)
{
    (void)state;
    const uint64_t cap = 32 * MIB;
    char cap_text[32];
    snprintf(cap_text, sizeof cap_text, "%" PRIu64, cap);
    setenv("CUBEC_NULL_HEAP_BYTES", cap_text, 1);
    cubec_device_desc desc = {.struct_size = sizeof(cubec_device_desc), .backend = "null"};
    cubec_device *d = NULL;
    cubec_status st = cubec_device_open(&desc, &d);
    unsetenv("CUBEC_NULL_HEAP_BYTES");
    ASSERT_OK(st);
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    assert_int_equal(info.device_local_heap_size, cap);

    cubec_stream s1, s2;
    ASSERT_OK(cubec_stream_new(d, &s1));
    ASSERT_OK(cubec_stream_new(d, &s2));
    cubec_buffer kept[KEPT];
    uint32_t peak = leave_empty_pages(d, s1, kept);
    /* Three 8 MiB pages: a 16 MiB buffer does not fit beside them under the cap. */
    assert_int_equal(peak, SMALL_COUNT * SMALL / (8 * MIB));
    assert_true((uint64_t)peak * 8 * MIB + 16 * MIB > cap);

    const uint64_t big = 16 * MIB;
    cubec_buffer b2 = make_written(d, s2, big, 7);
    /* Only the page with the surviving buffers is left to stream 1. */
    assert_int_equal(report(d, s1).pages, 1);
    expect_pattern(d, s2, b2, big, 7);
    for (uint32_t i = 0; i < KEPT; i++)
        expect_pattern(d, s1, kept[i], SMALL, 100 + i);

    /* Larger than the whole cap: refused after the reclaim, naming the size and the totals. */
    cubec_memory_report r1 = report(d, s1), r2 = report(d, s2);
    const uint64_t never = 2 * cap;
    cubec_buffer none = {0};
    st = cubec_buffer_create(d, s2, never, &none);
    if (!st)
        fail_msg("a %" PRIu64 "-byte buffer was created under a %" PRIu64 "-byte cap", never, cap);
    assert_int_equal(cubec_status_code(st), CUBEC_OUT_OF_MEMORY);
    char want_size[64], want_totals[160];
    snprintf(want_size, sizeof want_size, "creating a buffer of %" PRIu64 " bytes", never);
    snprintf(want_totals, sizeof want_totals,
             "the pools of every stream hold %" PRIu64 " bytes reserved, %" PRIu64 " bytes in use",
             r1.bytes_reserved + r2.bytes_reserved, r1.bytes_in_use + r2.bytes_in_use);
    const char *msg = cubec_status_message(st);
    if (!strstr(msg, want_size) || !strstr(msg, want_totals))
        fail_msg("the message \"%s\" lacks \"%s\" or \"%s\"", msg, want_size, want_totals);
    cubec_status_free(st);
    assert_int_equal(none.id, 0);

    /* Still usable: a new buffer, and every surviving one, read back as written. */
    cubec_buffer after = make_written(d, s2, MIB, 9);
    expect_pattern(d, s2, after, MIB, 9);
    expect_pattern(d, s2, b2, big, 7);
    for (uint32_t i = 0; i < KEPT; i++)
        expect_pattern(d, s1, kept[i], SMALL, 100 + i);
    cubec_device_close(d);
}

static void test_page_fault_reclaims_other_streams_pages(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_stream s1, s2;
    ASSERT_OK(cubec_stream_new(d, &s1));
    ASSERT_OK(cubec_stream_new(d, &s2));
    cubec_buffer kept[KEPT];
    uint32_t peak = leave_empty_pages(d, s1, kept);
    assert_true(peak >= 2); /* at least one page holds none of the kept buffers */

    uint64_t before[CUBEC_FAULT_KIND_COUNT], after[CUBEC_FAULT_KIND_COUNT];
    ASSERT_OK(cubec_fault_get_counts(d, before));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_PAGE, 1));
    cubec_buffer b2 = make_written(d, s2, SMALL, 7);
    ASSERT_OK(cubec_fault_get_counts(d, after));
    /* The injected failure and the retry that succeeded. */
    assert_int_equal(after[CUBEC_FAULT_PAGE] - before[CUBEC_FAULT_PAGE], 2);
    /* Stream 1 keeps the page of its live buffers only. */
    assert_int_equal(report(d, s1).pages, 1);
    expect_pattern(d, s2, b2, SMALL, 7);
    for (uint32_t i = 0; i < KEPT; i++)
        expect_pattern(d, s1, kept[i], SMALL, 100 + i);
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_null_heap_reclaims_other_streams_pages),
        cmocka_unit_test(test_page_fault_reclaims_other_streams_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
