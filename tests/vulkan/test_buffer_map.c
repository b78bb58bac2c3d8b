/* Host mappings (cubec_buffer_map, docs/memory.md "Host mappings") on lavapipe and, as
 * test_buffer_map_null, on the null backend (which runs no kernels: the launch checks are
 * skipped there). The bytes at the pointer are compared with a reference computed here: after a
 * launch wrote them, after a host write through the pointer that a later launch reads, through a
 * view, and at an offset within a pool page shared with other buffers. Refusals: a buffer that
 * carries a failure, memory that is not host-visible (CUBEC_FORCE_STAGING) or not coherent
 * (CUBEC_NULL_NONCOHERENT, null backend), bad arguments; and a closed device refuses the guard's
 * release by name. Relocation while mapped: tests/memory/test_relocation.c. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096u

static int null_backend(void)
{
    const char *b = getenv("CUBEC_BACKEND");
    return b && strcmp(b, "null") == 0;
}

/* Skips the case (closing `d`) where device memory is not host-visible: a discrete GPU, or the
 * webgpu backend, whose buffers the host maps only asynchronously. cubec_buffer_map refuses
 * them there (test_map_refuses_device_local_memory checks that refusal). */
static void skip_unless_host_visible(cubec_device *d)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (info.unified_memory) return;
    print_message("skipped: device '%s' has no host-visible device memory (unified_memory 0)\n",
                  info.name);
    test_device_close(d);
    skip();
}

/* A launch's output read through the mapping, then a host write through it that the next launch
 * reads, its result read through the mapping again after cubec_sync. */
static void test_map_after_launch_and_host_write(void **state)
{
    (void)state;
    if (null_backend()) skip();
    cubec_device *d = test_device_open();
    skip_unless_host_visible(d);
    cubec_stream s = CUBEC_STREAM_CURRENT;
    cubec_kernel produce, consume, step;
    uint_kernels_create(d, &produce, &consume, &step);
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_create(d, s, N * 4, &x));
    ASSERT_OK(cubec_buffer_create(d, s, N * 4, &y));
    ASSERT_OK(uint_launch(d, s, produce, x, NONE, N, 7, 3));
    /* No sync: the map waits for the launch. */
    void *p = NULL;
    cubec_guard g;
    ASSERT_OK(cubec_buffer_map(d, s, x, &p, &g));
    assert_non_null(p);
    uint32_t *want = malloc(N * 4), *host = p;
    assert_non_null(want);
    cpu_produce(want, N, 7, 3);
    assert_memory_equal(host, want, N * 4);
    /* The host writes its own input through the pointer; a launch enqueued after reads it. */
    for (uint32_t i = 0; i < N; i++)
        host[i] = i * 2654435761u;
    ASSERT_OK(uint_launch(d, s, consume, x, y, N, 5, 1));
    uint32_t *got = malloc(N * 4);
    assert_non_null(got);
    ASSERT_OK(cubec_read(d, s, y, 0, got, N * 4));
    uint32_t *in = malloc(N * 4);
    assert_non_null(in);
    for (uint32_t i = 0; i < N; i++)
        in[i] = i * 2654435761u;
    cpu_consume(in, want, N, 5, 1);
    assert_memory_equal(got, want, N * 4);
    /* GPU writes after the map: ordered by cubec_sync, then visible through the pointer. */
    ASSERT_OK(uint_launch(d, s, step, x, NONE, N, 3, 9));
    ASSERT_OK(cubec_sync(d, s));
    cpu_consume(in, want, N, 3, 9);
    assert_memory_equal(host, want, N * 4);
    /* The guard keeps the memory after the handle goes. */
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_memory_cleanup(d, s));
    assert_memory_equal(host, want, N * 4);
    ASSERT_OK(cubec_guard_release(d, g));
    ASSERT_OK(cubec_guard_release(d, g)); /* twice is harmless */
    free(in);
    free(got);
    free(want);
    ASSERT_OK(cubec_buffer_release(d, y));
    uint_kernels_destroy(d, produce, consume, step);
    test_device_close(d);
}

/* A view maps to its own first byte; small buffers share a pool page, each at its own offset;
 * bytes cubec_write put there are what the pointer shows, and host writes what cubec_read gives. */
static void test_map_view_and_pool_offsets(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    skip_unless_host_visible(d);
    cubec_stream s = CUBEC_STREAM_CURRENT;
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    const uint64_t at = info.storage_offset_alignment * 3, size = 1000;
    uint8_t bytes[3][4096];
    cubec_buffer b[3];
    uint32_t rng = 5;
    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; i < sizeof bytes[k]; i++)
            bytes[k][i] = (uint8_t)test_rand(&rng);
        ASSERT_OK(cubec_buffer_from(d, s, bytes[k], sizeof bytes[k], &b[k]));
    }
    cubec_buffer view;
    ASSERT_OK(cubec_buffer_view(d, b[1], at, size, &view));
    void *pv = NULL, *pb[3];
    cubec_guard gv, gb[3];
    ASSERT_OK(cubec_buffer_map(d, s, view, &pv, &gv));
    for (int k = 0; k < 3; k++) {
        ASSERT_OK(cubec_buffer_map(d, s, b[k], &pb[k], &gb[k]));
        assert_memory_equal(pb[k], bytes[k], sizeof bytes[k]);
    }
    assert_ptr_equal(pv, (uint8_t *)pb[1] + at);
    assert_memory_equal(pv, bytes[1] + at, size);
    /* Distinct buffers, distinct bytes (the pool's offsets, not the page's start). */
    assert_true(pb[0] != pb[1] && pb[1] != pb[2]);
    memset(pv, 0xab, size);
    memset(bytes[1] + at, 0xab, size);
    uint8_t got[4096];
    ASSERT_OK(cubec_read(d, s, b[1], 0, got, sizeof got));
    assert_memory_equal(got, bytes[1], sizeof got);
    ASSERT_OK(cubec_read(d, s, b[0], 0, got, sizeof got));
    assert_memory_equal(got, bytes[0], sizeof got);
    ASSERT_OK(cubec_write(d, s, b[2], 16, "written", 8));
    memcpy(bytes[2] + 16, "written", 8);
    assert_memory_equal(pb[2], bytes[2], sizeof bytes[2]);
    ASSERT_OK(cubec_guard_release(d, gv));
    for (int k = 0; k < 3; k++) {
        ASSERT_OK(cubec_guard_release(d, gb[k]));
        ASSERT_OK(cubec_buffer_release(d, b[k]));
    }
    ASSERT_OK(cubec_buffer_release(d, view));
    test_device_close(d);
}

/* A buffer that carries a failure is refused with it, out-parameters cleared; a cubec_write that
 * clears the failure makes it mappable again. */
static void test_map_refuses_a_failed_buffer(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    skip_unless_host_visible(d);
    cubec_stream s = CUBEC_STREAM_CURRENT;
    cubec_buffer src, dst;
    ASSERT_OK(cubec_buffer_create(d, s, 256, &src));
    ASSERT_OK(cubec_buffer_create(d, s, 256, &dst));
    ASSERT_OK(cubec_fill(d, s, src, 0, 256, 0x01010101u));
    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_OK(cubec_copy(d, s, src, 0, dst, 0, 256));
    ASSERT_ERROR(cubec_sync(d, s), CUBEC_INTERNAL, "injected fault: submit");
    void *p = (void *)&p;
    cubec_guard g = {99};
    ASSERT_ERROR(cubec_buffer_map(d, s, dst, &p, &g), CUBEC_INTERNAL, "map");
    assert_null(p);
    assert_int_equal(g.id, 0);
    uint8_t bytes[256];
    memset(bytes, 0x5c, sizeof bytes);
    ASSERT_OK(cubec_write(d, s, dst, 0, bytes, sizeof bytes));
    ASSERT_OK(cubec_buffer_map(d, s, dst, &p, &g));
    assert_memory_equal(p, bytes, sizeof bytes);
    ASSERT_OK(cubec_guard_release(d, g));
    ASSERT_OK(cubec_buffer_release(d, src));
    ASSERT_OK(cubec_buffer_release(d, dst));
    test_device_close(d);
}

/* Arguments refused by name; size 0 maps to NULL with a guard. */
static void test_map_arguments(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_stream s = CUBEC_STREAM_CURRENT;
    cubec_buffer b, empty;
    ASSERT_OK(cubec_buffer_create(d, s, 64, &b));
    ASSERT_OK(cubec_buffer_create(d, s, 0, &empty));
    void *p = (void *)&p;
    cubec_guard g = {99};
    ASSERT_ERROR(cubec_buffer_map(d, s, b, NULL, &g), CUBEC_INVALID_ARGUMENT, "out_ptr");
    assert_int_equal(g.id, 0);
    ASSERT_ERROR(cubec_buffer_map(d, s, b, &p, NULL), CUBEC_INVALID_ARGUMENT, "out_guard");
    assert_null(p);
    ASSERT_ERROR(cubec_buffer_map(d, s, (cubec_buffer){0}, &p, &g), CUBEC_INVALID_ARGUMENT,
                 "cubec_buffer_map: buffer");
    ASSERT_ERROR(cubec_buffer_map(NULL, s, b, &p, &g), CUBEC_INVALID_ARGUMENT, "device");
    ASSERT_OK(cubec_buffer_map(d, s, empty, &p, &g));
    assert_null(p);
    assert_true(g.id != 0);
    ASSERT_OK(cubec_guard_release(d, g));
    ASSERT_OK(cubec_buffer_release(d, empty));
    ASSERT_OK(cubec_buffer_release(d, b));
    test_device_close(d);
}

/* Device memory that is not host-visible (a discrete GPU, here forced with
 * CUBEC_FORCE_STAGING) is refused with CUBEC_UNSUPPORTED naming the buffer. */
static void test_map_refuses_device_local_memory(void **state)
{
    (void)state;
    setenv("CUBEC_FORCE_STAGING", "1", 1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_FORCE_STAGING");
    cubec_stream s = CUBEC_STREAM_CURRENT;
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_create(d, s, 64, &b));
    void *p = (void *)&p;
    cubec_guard g = {99};
    char number[32];
    snprintf(number, sizeof number, "buffer %llu", (unsigned long long)b.id);
    ASSERT_ERROR(cubec_buffer_map(d, s, b, &p, &g), CUBEC_UNSUPPORTED, number);
    assert_null(p);
    assert_int_equal(g.id, 0);
    ASSERT_OK(cubec_buffer_release(d, b));
    test_device_close(d);
}

/* Null backend: with CUBEC_NULL_NONCOHERENT device pages are host-visible but not coherent, and
 * a long-lived pointer could not stay right: refused. */
static void test_map_refuses_noncoherent_memory(void **state)
{
    (void)state;
    if (!null_backend()) skip();
    setenv("CUBEC_NULL_NONCOHERENT", "1", 1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_NULL_NONCOHERENT");
    cubec_stream s = CUBEC_STREAM_CURRENT;
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_create(d, s, 64, &b));
    void *p = (void *)&p;
    cubec_guard g = {99};
    ASSERT_ERROR(cubec_buffer_map(d, s, b, &p, &g), CUBEC_UNSUPPORTED, "not coherent");
    assert_null(p);
    assert_int_equal(g.id, 0);
    ASSERT_OK(cubec_buffer_release(d, b));
    test_device_close(d);
}

/* A mapping left at the device's close: the close frees it (no leak: ASan's leak check), and the
 * guard's release on the closed device is refused by name, not a use after free. */
static void test_map_then_device_close(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    skip_unless_host_visible(d);
    cubec_stream s = CUBEC_STREAM_CURRENT;
    cubec_buffer b;
    const uint8_t bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ASSERT_OK(cubec_buffer_from(d, s, bytes, sizeof bytes, &b));
    void *p;
    cubec_guard g;
    ASSERT_OK(cubec_buffer_map(d, s, b, &p, &g));
    assert_memory_equal(p, bytes, sizeof bytes);
    test_device_close(d);
    char needle[96];
    snprintf(needle, sizeof needle, "device %p is not an open device", (void *)d);
    ASSERT_ERROR(cubec_guard_release(d, g), CUBEC_INVALID_ARGUMENT, needle);
    ASSERT_ERROR(cubec_buffer_map(d, s, b, &p, &g), CUBEC_INVALID_ARGUMENT, needle);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_after_launch_and_host_write),
        cmocka_unit_test(test_map_view_and_pool_offsets),
        cmocka_unit_test(test_map_refuses_a_failed_buffer),
        cmocka_unit_test(test_map_arguments),
        cmocka_unit_test(test_map_refuses_device_local_memory),
        cmocka_unit_test(test_map_refuses_noncoherent_memory),
        cmocka_unit_test(test_map_then_device_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
