/* The staging rings of a device without unified memory (server/host_ring.c), on the null backend
 * with CUBEC_FORCE_STAGING=1 (the transfer paths of Vulkan on a discrete GPU): none at open, the
 * upload ring made by the first staged write and the readback ring by the first staged read, as
 * the memory report shows; a ring that cannot be made refuses that transfer by its name and size,
 * changes nothing, and the next transfer makes it. Bytes are checked against copies kept here. */
#include "test_util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { BYTES = 4096 + 12 };

static cubec_device *open_staging(void)
{
    setenv("CUBEC_FORCE_STAGING", "1", 1);
    cubec_device_desc desc = CUBEC_DEVICE_DESC_INIT;
    desc.backend = "null";
    cubec_device *d = NULL;
    ASSERT_OK(cubec_device_open(&desc, &d));
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    assert_int_equal(info.unified_memory, 0);
    return d;
}

/* bytes_reserved of the ring `kind` in the report of stream 0; 0 when it is not listed. */
static uint64_t ring_bytes(cubec_device *d, const char *kind)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, 0, &r));
    for (uint32_t i = 0; i < r.pool_count; i++)
        if (!strcmp(r.pools[i].kind, kind)) return r.pools[i].bytes_reserved;
    return 0;
}

static void fill(unsigned char *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)test_rand(&seed);
}

static void test_rings_made_by_first_use(void **state)
{
    (void)state;
    cubec_device *d = open_staging();
    assert_true(ring_bytes(d, "metadata") > 0);
    assert_int_equal(ring_bytes(d, "upload"), 0);
    assert_int_equal(ring_bytes(d, "readback"), 0);
    unsigned char want[BYTES], back[BYTES];
    fill(want, sizeof want, 3);
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(d, 0, want, sizeof want, &b)); /* a staged write */
    assert_int_equal(ring_bytes(d, "upload"), 64u << 20);
    assert_int_equal(ring_bytes(d, "readback"), 0);
    memset(back, 0, sizeof back);
    ASSERT_OK(cubec_read(d, 0, b, 0, back, sizeof back)); /* a staged read */
    assert_memory_equal(back, want, sizeof back);
    assert_int_equal(ring_bytes(d, "readback"), 64u << 20);
    ASSERT_OK(cubec_buffer_release(d, b));
    cubec_device_close(d);
}

static void test_ring_failure_refuses_and_keeps(void **state)
{
    (void)state;
    cubec_device *d = open_staging();
    unsigned char want[BYTES], part[100], back[BYTES];
    fill(want, sizeof want, 7);
    fill(part, sizeof part, 9);
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof want, &b));
    /* The upload ring's mapping refused: the write is refused by the ring's name and size. */
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_MAP, 1));
    ASSERT_ERROR(cubec_write(d, 0, b, 0, want, sizeof want), CUBEC_INTERNAL,
                 "creating the upload ring (67108864 bytes)");
    assert_int_equal(ring_bytes(d, "upload"), 0);
    ASSERT_OK(cubec_write(d, 0, b, 0, want, sizeof want)); /* the next one makes it */
    assert_int_equal(ring_bytes(d, "upload"), 64u << 20);
    /* The readback ring likewise: the read fails by name, its destination untouched. */
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_MAP, 1));
    memset(back, 0xee, sizeof back);
    ASSERT_ERROR(cubec_read(d, 0, b, 0, back, sizeof back), CUBEC_INTERNAL,
                 "creating the readback ring (67108864 bytes)");
    for (size_t i = 0; i < sizeof back; i++)
        assert_int_equal(back[i], 0xee);
    assert_int_equal(ring_bytes(d, "readback"), 0);
    /* Nothing was lost: a partial write lands, and the bytes read back are the reference. */
    ASSERT_OK(cubec_write(d, 0, b, 33, part, sizeof part));
    memcpy(want + 33, part, sizeof part);
    ASSERT_OK(cubec_read(d, 0, b, 0, back, sizeof back));
    assert_memory_equal(back, want, sizeof back);
    assert_int_equal(ring_bytes(d, "readback"), 64u << 20);
    ASSERT_OK(cubec_buffer_release(d, b));
    cubec_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rings_made_by_first_use),
        cmocka_unit_test(test_ring_failure_refuses_and_keeps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
