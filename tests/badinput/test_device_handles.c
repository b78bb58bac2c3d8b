/* The device pointer is checked like every other handle (docs/api.md, "Handles"): a call on a
 * closed device, or on a pointer no cubec_device_open returned, is refused with
 * CUBEC_INVALID_ARGUMENT naming it ("device 0x... is not an open device (closed, or never
 * opened)") and never dereferenced (the sanitizer build reads freed memory otherwise); a second
 * close is ignored; a device opened after another closed never takes the closed one's address,
 * so the stale pointer stays refused while the new device works. What a garbage-collected
 * binding does when it finalizes objects after their device. */
#include "test_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPENS = 24, MANY_OPENS = 400 };

static cubec_device *open_null(void)
{
    cubec_device_desc desc = CUBEC_DEVICE_DESC_INIT;
    desc.backend = "null";
    cubec_device *d = NULL;
    ASSERT_OK(cubec_device_open(&desc, &d));
    return d;
}

/* Every kind of call on `d`, which is not an open device: each refused naming it. */
static void expect_all_refused(cubec_device *d)
{
    char needle[96];
    snprintf(needle, sizeof needle, "device %p is not an open device (closed, or never opened)",
             (void *)d);
    cubec_buffer b = {0x0001000001000001ull};
    uint32_t word = 0;
    ASSERT_ERROR(cubec_buffer_create(d, 0, 64, &b), CUBEC_INVALID_ARGUMENT, needle);
    assert_true(b.id == 0);
    ASSERT_ERROR(cubec_buffer_release(d, (cubec_buffer){0x0001000001000001ull}),
                 CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_write(d, 0, (cubec_buffer){1}, 0, &word, 4), CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_read(d, 0, (cubec_buffer){1}, 0, &word, 4), CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_sync(d, 0), CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_flush(d, 0), CUBEC_INVALID_ARGUMENT, needle);
    cubec_stream s = 77;
    ASSERT_ERROR(cubec_stream_new(d, &s), CUBEC_INVALID_ARGUMENT, needle);
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_ERROR(cubec_device_get_info(d, &info), CUBEC_INVALID_ARGUMENT, needle);
    cubec_vulkan_handles h = CUBEC_VULKAN_HANDLES_INIT;
    ASSERT_ERROR(cubec_device_get_vulkan_handles(d, &h), CUBEC_INVALID_ARGUMENT, needle);
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.glsl = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";
    cubec_kernel k = {0};
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_kernel_queue(d, &kd, &k), CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_kernel_destroy(d, (cubec_kernel){1}), CUBEC_INVALID_ARGUMENT, needle);
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = (cubec_kernel){1};
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT, needle);
    cubec_profile p = {0};
    ASSERT_ERROR(cubec_profile_begin(d, 0, &p), CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_graph_prepare(d, 0), CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_graph_destroy(d, 0, (cubec_graph){1}), CUBEC_INVALID_ARGUMENT, needle);
    char *json = (char *)"junk";
    ASSERT_ERROR(cubec_memory_report_json(d, &json), CUBEC_INVALID_ARGUMENT, needle);
    assert_null(json);
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_ERROR(cubec_memory_report_get(d, 0, &r), CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_memory_window_begin(d, 0, CUBEC_MEMORY_MODE_PERSISTENT),
                 CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_run_window_begin(d, 0, CUBEC_RUN_DRY), CUBEC_INVALID_ARGUMENT, needle);
    void *host = NULL;
    ASSERT_ERROR(cubec_host_alloc(d, 4096, &host), CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_fault_inject(d, CUBEC_FAULT_PAGE, 1), CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_guard_release(d, (cubec_guard){1}), CUBEC_INVALID_ARGUMENT, needle);
    cubec_tuner_desc td = CUBEC_TUNER_DESC_INIT;
    td.name = "t";
    cubec_tuner *t = NULL;
    ASSERT_ERROR(cubec_tuner_create(d, &td, &t), CUBEC_INVALID_ARGUMENT, needle);
    assert_null(t);
    /* Closing it again is ignored (a warning in the log). */
    cubec_device_close(d);
}

static void test_closed_device_refused(void **state)
{
    (void)state;
    cubec_device *d = open_null();
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_create(d, 0, 64, &b));
    cubec_device_close(d);
    expect_all_refused(d);
}

static void test_made_up_device_refused(void **state)
{
    (void)state;
    /* Memory that looks like anything, and an address nothing is mapped at. */
    void *junk = malloc(4096);
    assert_non_null(junk);
    memset(junk, 0x5a, 4096);
    expect_all_refused((cubec_device *)junk);
    free(junk);
    expect_all_refused((cubec_device *)(uintptr_t)0x10);
}

/* Devices opened after others closed never take a closed one's address: each stale pointer stays
 * refused while the open devices work. */
static void test_reopened_devices_never_reuse_a_closed_address(void **state)
{
    (void)state;
    cubec_device *closed[OPENS];
    for (int i = 0; i < OPENS; i++) {
        cubec_device *d = open_null();
        for (int j = 0; j < i; j++)
            assert_ptr_not_equal(d, closed[j]);
        uint32_t in = 0x1234u + (uint32_t)i, out = 0;
        cubec_buffer b;
        ASSERT_OK(cubec_buffer_from(d, 0, &in, sizeof in, &b));
        ASSERT_OK(cubec_read(d, 0, b, 0, &out, sizeof out));
        assert_int_equal(out, in);
        for (int j = 0; j < i; j++)
            ASSERT_ERROR(cubec_sync(closed[j], 0), CUBEC_INVALID_ARGUMENT, "is not an open device");
        cubec_device_close(d);
        closed[i] = d;
    }
}

/* A long-lived process opens and closes many devices: every open succeeds (the allocator hands
 * back closed devices' addresses, and an open that looked for a fresh one failed after ~95 of
 * them with "host out of memory (device)"), and none takes the address of any closed before. */
static void test_many_reopens_succeed_at_fresh_addresses(void **state)
{
    (void)state;
    static cubec_device *closed[MANY_OPENS];
    for (int i = 0; i < MANY_OPENS; i++) {
        cubec_device *d = NULL;
        cubec_device_desc desc = CUBEC_DEVICE_DESC_INIT;
        desc.backend = "null";
        cubec_status st = cubec_device_open(&desc, &d);
        if (st) fail_msg("open %d of %d: %s", i + 1, MANY_OPENS, cubec_status_message(st));
        for (int j = 0; j < i; j++)
            assert_ptr_not_equal(d, closed[j]);
        cubec_device_close(d);
        closed[i] = d;
    }
    ASSERT_ERROR(cubec_sync(closed[0], 0), CUBEC_INVALID_ARGUMENT, "is not an open device");
}

/* Two devices open at once: a call on one is not refused because of the other, and closing one
 * leaves the other usable. */
static void test_two_open_devices(void **state)
{
    (void)state;
    cubec_device *a = open_null();
    cubec_device *b = open_null();
    ASSERT_OK(cubec_sync(a, 0));
    ASSERT_OK(cubec_sync(b, 0));
    cubec_device_close(a);
    ASSERT_ERROR(cubec_sync(a, 0), CUBEC_INVALID_ARGUMENT, "is not an open device");
    ASSERT_OK(cubec_sync(b, 0));
    cubec_device_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closed_device_refused),
        cmocka_unit_test(test_made_up_device_refused),
        cmocka_unit_test(test_reopened_devices_never_reuse_a_closed_address),
        cmocka_unit_test(test_many_reopens_succeed_at_fresh_addresses),
        cmocka_unit_test(test_two_open_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
