/* The staging rings on the WebGPU backend (server/host_ring.c): created at the first transfer that
 * stages, never at open. WebGPU's reads map (gpu_ops.mem_read), its whole-word writes are queue
 * writes (gpu_ops.mem_write) and cubec_read_async copies into a private device range, so a device
 * that only does those holds no upload or readback ring; a write of partial words stages through
 * the upload ring, which it creates. Checked through the memory report, against bytes computed
 * here; a failure to create the ring refuses that write by name and loses nothing. Skipped, by
 * name, where no WebGPU implementation loads. */
#include "test_util.h"
#include "webgpu_open.h"

#include <stdint.h>
#include <string.h>

enum { WORDS = 1000 }; /* 4000 bytes: not a multiple of a chunk */

/* The pool of the report named `kind` (the rings come after the buffer pools), or NULL. */
static const cubec_pool_report *ring_of(const cubec_memory_report *r, const char *kind)
{
    for (uint32_t i = 0; i < r->pool_count; i++)
        if (!strcmp(r->pools[i].kind, kind)) return &r->pools[i];
    return NULL;
}

static void report(cubec_device *d, cubec_memory_report *r)
{
    *r = (cubec_memory_report)CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, 0, r));
}

static void check_buffer(cubec_device *d, cubec_buffer b, const unsigned char *want)
{
    unsigned char back[WORDS * 4];
    memset(back, 0xee, sizeof back);
    ASSERT_OK(cubec_read(d, 0, b, 0, back, sizeof back));
    assert_memory_equal(back, want, sizeof back);
}

static void test_direct_paths_hold_no_staging_ring(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    cubec_memory_report r;
    report(d, &r);
    assert_non_null(ring_of(&r, "metadata")); /* launches' metadata: at open, as before */
    assert_null(ring_of(&r, "upload"));
    assert_null(ring_of(&r, "readback"));

    unsigned char want[WORDS * 4], part[WORDS * 4];
    uint32_t seed = 11;
    for (uint32_t i = 0; i < sizeof want; i++)
        want[i] = (unsigned char)test_rand(&seed);
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(d, 0, want, sizeof want, &b)); /* a whole-word write */
    for (uint32_t i = 0; i < 64; i++)
        part[i] = (unsigned char)(i * 7u + 3u);
    ASSERT_OK(cubec_write(d, 0, b, 400, part, 64)); /* whole words, inside the buffer */
    memcpy(want + 400, part, 64);
    check_buffer(d, b, want);
    unsigned char back[13];
    ASSERT_OK(cubec_read(d, 0, b, 1, back, sizeof back)); /* a read of partial words: direct */
    assert_memory_equal(back, want + 1, sizeof back);
    unsigned char async_back[WORDS * 4 - 6];
    cubec_event *e = NULL;
    ASSERT_OK(cubec_read_async(d, 0, b, 3, async_back, sizeof async_back, &e));
    ASSERT_OK(cubec_event_wait(e));
    cubec_event_free(e);
    assert_memory_equal(async_back, want + 3, sizeof async_back);
    report(d, &r);
    assert_null(ring_of(&r, "upload"));
    assert_null(ring_of(&r, "readback"));

    /* A write of partial words stages: it needs the upload ring. Failing to create it (the
     * ring's mapping refused) refuses the write by the ring's name, and loses nothing: the
     * bytes are as before, with no failure on them, and no ring is reported. */
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_MAP, 1));
    ASSERT_ERROR(cubec_write(d, 0, b, 5, part, 10), CUBEC_INTERNAL, "upload ring");
    check_buffer(d, b, want);
    report(d, &r);
    assert_null(ring_of(&r, "upload"));
    /* The next one creates it and lands. */
    ASSERT_OK(cubec_write(d, 0, b, 5, part, 10));
    memcpy(want + 5, part, 10);
    ASSERT_OK(cubec_write(d, 0, b, WORDS * 4 - 3, part + 20, 3)); /* the last partial word */
    memcpy(want + WORDS * 4 - 3, part + 20, 3);
    check_buffer(d, b, want);
    report(d, &r);
    const cubec_pool_report *up = ring_of(&r, "upload");
    assert_non_null(up);
    assert_int_equal(up->pages, 1);
    assert_int_equal(up->bytes_reserved, 64u << 20);
    assert_int_equal(up->max_slice_size, 16u << 20); /* 4 chunks */
    assert_null(ring_of(&r, "readback"));            /* reads never stage on WebGPU */
    ASSERT_OK(cubec_buffer_release(d, b));
    cubec_device_close(d);
}

/* cubec_read_async copies the range, in stream order, into a private device range, which the
 * backend maps straight into the program's memory when the event completes: no host mapping at
 * all (a refused mapping does not touch it; before, its readback copy was mapped, and the bytes
 * crossed the host twice). Later work on the buffer does not reach the bytes read, and reads at
 * odd offsets and sizes land exactly, guard bytes around them untouched. */
static void test_async_read_maps_nothing(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    unsigned char want[WORDS * 4], later[WORDS * 4];
    uint32_t seed = 23;
    for (uint32_t i = 0; i < sizeof want; i++) {
        want[i] = (unsigned char)test_rand(&seed);
        later[i] = (unsigned char)(want[i] ^ 0x5au);
    }
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(d, 0, want, sizeof want, &b));
    static const uint64_t offsets[] = {0, 1, 3, 1000, WORDS * 4 - 7};
    static const uint64_t sizes[] = {WORDS * 4, 13, WORDS * 4 - 6, 2, 7};
    for (size_t k = 0; k < sizeof offsets / sizeof *offsets; k++) {
        unsigned char got[WORDS * 4 + 2];
        memset(got, 0xee, sizeof got);
        ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_MAP, 1));
        cubec_event *e = NULL;
        ASSERT_OK(cubec_read_async(d, 0, b, offsets[k], got + 1, sizes[k], &e));
        ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_MAP, 0));
        /* Queued after the read: it must not reach what the read returns. */
        ASSERT_OK(cubec_write(d, 0, b, 0, later, sizeof later));
        ASSERT_OK(cubec_event_wait(e));
        cubec_event_free(e);
        assert_memory_equal(got + 1, want + offsets[k], sizes[k]);
        assert_int_equal(got[0], 0xee);
        assert_int_equal(got[1 + sizes[k]], 0xee);
        ASSERT_OK(cubec_write(d, 0, b, 0, want, sizeof want));
    }
    cubec_memory_report r;
    report(d, &r);
    assert_null(ring_of(&r, "readback"));
    /* The mapped read at completion fails like a wait: the event reports it (the device is
     * treated as lost), and the program's bytes are left as they were, not half-written. */
    unsigned char got[64];
    memset(got, 0xee, sizeof got);
    cubec_event *e = NULL;
    ASSERT_OK(cubec_read_async(d, 0, b, 0, got, sizeof got, &e));
    ASSERT_OK(cubec_sync(d, 0));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_WAIT, 1));
    ASSERT_ERROR(cubec_event_wait(e), CUBEC_DEVICE_LOST, "injected fault");
    cubec_event_free(e);
    for (size_t i = 0; i < sizeof got; i++)
        assert_int_equal(got[i], 0xee);
    ASSERT_ERROR(cubec_buffer_release(d, b), CUBEC_DEVICE_LOST, "lost earlier");
    cubec_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_paths_hold_no_staging_ring),
        cmocka_unit_test(test_async_read_maps_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
