/* Registered and pinned host memory (cubec.h "Host memory"): transfers whose host side lies in a
 * registered or pinned range are one DMA on the discrete paths (a discrete GPU, or lavapipe with
 * CUBEC_FORCE_STAGING) and plain copies on unified memory; every byte is checked against a
 * reference made here, and the device's counters say which transfers went straight through a range.
 * Misuse gets a named error and changes nothing. */
#include "test_util.h"

#include "server/device.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (1u << 20) /* past the size below which writes stay staged */

static void pattern(unsigned char *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 7u;
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(test_rand(&x) >> 24);
}

static uint64_t alignment(cubec_device *d)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    assert_true(info.host_register_alignment >= 1);
    /* a power of two, as Vulkan's minImportedHostPointerAlignment is */
    assert_int_equal(info.host_register_alignment & (info.host_register_alignment - 1), 0);
    /* cubec_device_peek (what `cubec info` shows) reports the same for this device. */
    uint32_t count = 0, same = 0;
    ASSERT_OK(cubec_device_get_count(&count));
    for (uint32_t i = 0; i < count; i++) {
        cubec_device_info peeked = CUBEC_DEVICE_INFO_INIT;
        ASSERT_OK(cubec_device_peek(i, &peeked));
        same += !strcmp(peeked.name, info.name) &&
                peeked.host_register_alignment == info.host_register_alignment;
    }
    if (!same)
        fail_msg("no peeked device '%s' reports alignment %" PRIu64, info.name,
                 info.host_register_alignment);
    return info.host_register_alignment;
}

static unsigned char *aligned(uint64_t align, size_t n)
{
    unsigned char *p = aligned_alloc(align, n);
    assert_non_null(p);
    return p;
}

static uint64_t dma_transfers(cubec_device *d)
{
    return server_stats_get(d).host_dma_transfers;
}

/* Writes from, reads into and asynchronous reads into registered memory, on one device. */
static void registered_round_trips(cubec_device *d, int staged)
{
    uint64_t align = alignment(d);
    cubec_stream s = CUBEC_STREAM_CURRENT;
    unsigned char *reg = aligned(align, 3 * BIG), *want = malloc(BIG), *got = malloc(BIG);
    assert_non_null(want);
    assert_non_null(got);
    ASSERT_OK(cubec_host_register(d, reg, 2 * BIG));
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_create(d, s, BIG, &b));

    /* A write from the registered range, read back into ordinary memory. */
    pattern(reg, BIG, 1);
    memcpy(want, reg, BIG);
    uint64_t before = dma_transfers(d);
    ASSERT_OK(cubec_write(d, s, b, 0, reg, BIG));
    memset(reg, 0, BIG); /* the write has taken the bytes when it returns */
    ASSERT_OK(cubec_read(d, s, b, 0, got, BIG));
    assert_memory_equal(got, want, BIG);
    /* A read into the second half of the range, at an offset. */
    ASSERT_OK(cubec_read(d, s, b, 4096, reg + BIG + 16, BIG - 4096));
    assert_memory_equal(reg + BIG + 16, want + 4096, BIG - 4096);
    /* An asynchronous read: the bytes land at completion with nothing copied by the host. */
    memset(reg + BIG, 0, BIG);
    cubec_event *e;
    ASSERT_OK(cubec_read_async(d, s, b, 0, reg + BIG, BIG, &e));
    ASSERT_OK(cubec_event_wait(e));
    cubec_event_free(e);
    assert_memory_equal(reg + BIG, want, BIG);
    uint64_t direct = dma_transfers(d) - before;
    /* On the discrete paths all three went straight through the range; unified memory has no
     * staging to skip, so they copy as before. */
    assert_int_equal(direct, staged ? 3 : 0);

    /* A range that runs past the registration (of the first 2 BIG bytes) is staged and still
     * right. */
    pattern(want, BIG, 2);
    memcpy(reg + 2 * BIG - BIG / 4, want, BIG / 2);
    before = dma_transfers(d);
    ASSERT_OK(cubec_write(d, s, b, 0, reg + 2 * BIG - BIG / 4, BIG / 2));
    ASSERT_OK(cubec_read(d, s, b, 0, got, BIG / 2));
    assert_memory_equal(got, want, BIG / 2);
    /* A small write from the range is staged too (cheaper than waiting for a DMA). */
    pattern(reg, 4096, 3);
    ASSERT_OK(cubec_write(d, s, b, 64, reg, 4096));
    ASSERT_OK(cubec_read(d, s, b, 64, got, 4096));
    assert_memory_equal(got, reg, 4096);
    /* ... while the read above went straight into ordinary memory: no DMA through a range. */
    assert_int_equal(dma_transfers(d) - before, 0);

    /* Unregistered, the memory is ordinary again: transfers work and are staged. */
    ASSERT_OK(cubec_host_unregister(d, reg));
    pattern(reg, BIG, 4);
    before = dma_transfers(d);
    ASSERT_OK(cubec_write(d, s, b, 0, reg, BIG));
    ASSERT_OK(cubec_read(d, s, b, 0, got, BIG));
    assert_memory_equal(got, reg, BIG);
    assert_int_equal(dma_transfers(d) - before, 0);

    ASSERT_OK(cubec_buffer_release(d, b));
    free(reg);
    free(want);
    free(got);
}

/* Pinned memory: written by the program, sent to a buffer, copied on the GPU, read into a second
 * pinned allocation. */
static void pinned_round_trip(cubec_device *d, int staged)
{
    cubec_stream s = CUBEC_STREAM_CURRENT;
    unsigned char *in = NULL, *out = NULL;
    ASSERT_OK(cubec_host_alloc(d, BIG, (void **)&in));
    ASSERT_OK(cubec_host_alloc(d, BIG, (void **)&out));
    assert_non_null(in);
    assert_non_null(out);
    pattern(in, BIG, 5);
    cubec_buffer a, b;
    ASSERT_OK(cubec_buffer_create(d, s, BIG, &a));
    ASSERT_OK(cubec_buffer_create(d, s, BIG, &b));
    uint64_t before = dma_transfers(d);
    ASSERT_OK(cubec_write(d, s, a, 0, in, BIG));
    ASSERT_OK(cubec_copy(d, s, a, 0, b, 0, BIG));
    ASSERT_OK(cubec_read(d, s, b, 0, out, BIG));
    assert_memory_equal(out, in, BIG);
    assert_int_equal(dma_transfers(d) - before, staged ? 2 : 0);
    ASSERT_OK(cubec_buffer_release(d, a));
    ASSERT_OK(cubec_buffer_release(d, b));
    ASSERT_OK(cubec_host_free(d, in));
    /* `out` stays allocated: the device frees it at close. */
}

/* Unregistering waits for a transfer that still writes into the range. */
static void unregister_waits(cubec_device *d)
{
    uint64_t align = alignment(d);
    cubec_stream s = CUBEC_STREAM_CURRENT;
    unsigned char *reg = aligned(align, BIG), *want = malloc(BIG);
    assert_non_null(want);
    pattern(want, BIG, 6);
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(d, s, want, BIG, &b));
    ASSERT_OK(cubec_host_register(d, reg, BIG));
    memset(reg, 0, BIG);
    cubec_event *e;
    ASSERT_OK(cubec_read_async(d, s, b, 0, reg, BIG, &e));
    ASSERT_OK(cubec_host_unregister(d, reg));
    assert_memory_equal(reg, want, BIG); /* landed before the unregistration returned */
    ASSERT_OK(cubec_event_wait(e));
    cubec_event_free(e);
    ASSERT_OK(cubec_buffer_release(d, b));
    free(reg);
    free(want);
}

/* `force`: CUBEC_FORCE_STAGING. Transfers go through staging, and so straight through registered
 * ranges, when forced or when the device is discrete. */
static void run_all(int force)
{
    if (force) setenv("CUBEC_FORCE_STAGING", "1", 1);
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    int staged = force || !info.unified_memory;
    registered_round_trips(d, staged);
    pinned_round_trip(d, staged);
    unregister_waits(d);
    test_device_close(d);
    if (force) unsetenv("CUBEC_FORCE_STAGING");
}

static void test_host_memory_as_it_is(void **state)
{
    (void)state;
    run_all(0);
}

static void test_host_memory_forced_staging(void **state)
{
    (void)state;
    run_all(1);
}

/* Misuse: each refused with the argument and value named, nothing registered or freed by it. */
static void test_host_memory_misuse(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    uint64_t align = alignment(d);
    char needle[64];
    unsigned char *reg = aligned(align, 4 * align);
    ASSERT_ERROR(cubec_host_register(NULL, reg, align), CUBEC_INVALID_ARGUMENT, "device is NULL");
    ASSERT_ERROR(cubec_host_register(d, NULL, align), CUBEC_INVALID_ARGUMENT, "ptr is NULL");
    ASSERT_ERROR(cubec_host_register(d, reg, 0), CUBEC_INVALID_ARGUMENT, "size is 0");
    snprintf(needle, sizeof needle, "must be multiples of %" PRIu64, align);
    ASSERT_ERROR(cubec_host_register(d, reg + 8, align), CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_host_register(d, reg, align + 8), CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_OK(cubec_host_register(d, reg + align, 2 * align));
    /* Overlaps, from each side and inside. */
    ASSERT_ERROR(cubec_host_register(d, reg, 2 * align), CUBEC_INVALID_ARGUMENT, "overlaps");
    ASSERT_ERROR(cubec_host_register(d, reg + 2 * align, 2 * align), CUBEC_INVALID_ARGUMENT,
                 "overlaps the registered range");
    ASSERT_ERROR(cubec_host_register(d, reg + align, align), CUBEC_INVALID_ARGUMENT, "overlaps");
    /* Neighbours that touch but do not overlap are fine. */
    ASSERT_OK(cubec_host_register(d, reg, align));
    ASSERT_OK(cubec_host_register(d, reg + 3 * align, align));
    /* Unregistering what is not a range's start, twice, or through the pinned call. */
    ASSERT_ERROR(cubec_host_unregister(d, reg + 2 * align), CUBEC_INVALID_ARGUMENT,
                 "is not registered");
    ASSERT_ERROR(cubec_host_free(d, reg + align), CUBEC_INVALID_ARGUMENT,
                 "is registered, not pinned");
    ASSERT_OK(cubec_host_unregister(d, reg + align));
    ASSERT_ERROR(cubec_host_unregister(d, reg + align), CUBEC_INVALID_ARGUMENT,
                 "is not registered");
    ASSERT_ERROR(cubec_host_unregister(d, NULL), CUBEC_INVALID_ARGUMENT, "ptr is NULL");
    /* Pinned memory: not unregistered, not registered again, freed once. */
    void *pinned = NULL;
    ASSERT_ERROR(cubec_host_alloc(d, 0, &pinned), CUBEC_INVALID_ARGUMENT, "size is 0");
    ASSERT_ERROR(cubec_host_alloc(d, 64, NULL), CUBEC_INVALID_ARGUMENT, "out_ptr is NULL");
    ASSERT_OK(cubec_host_alloc(d, 3 * align, &pinned));
    ASSERT_ERROR(cubec_host_unregister(d, pinned), CUBEC_INVALID_ARGUMENT, "is pinned");
    if ((uintptr_t)pinned % align == 0)
        ASSERT_ERROR(cubec_host_register(d, pinned, align), CUBEC_INVALID_ARGUMENT,
                     "overlaps the pinned");
    ASSERT_OK(cubec_host_free(d, pinned));
    ASSERT_ERROR(cubec_host_free(d, pinned), CUBEC_INVALID_ARGUMENT,
                 "was not returned by cubec_host_alloc");
    int on_stack = 0;
    ASSERT_ERROR(cubec_host_free(d, &on_stack), CUBEC_INVALID_ARGUMENT,
                 "was not returned by cubec_host_alloc");
    /* What is still registered goes with the device. */
    test_device_close(d);
    free(reg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_memory_as_it_is),
        cmocka_unit_test(test_host_memory_forced_staging),
        cmocka_unit_test(test_host_memory_misuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
