/* Export and import between two opens of one physical device (docs/multi-device.md): memory a
 * device exports is read, written, copied and launched on by the device that imports it, every
 * byte compared with a reference computed here; misuse of each call is refused naming the
 * argument and its value, and leaves the fds and buffers as they were (a refused import does
 * not take the fd, a successful one does). Lavapipe has external memory fds; where a device
 * lacks them (or a timeline fd), the refusal by name is what is checked. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WORDS 4096u /* 16 KiB per buffer */

static int fd_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1;
}

static cubec_device_info info_of(cubec_device *d)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    return info;
}

/* Skips (by name) on a device without external memory fds; the refusals test covers it. */
static int has_memory_fd(cubec_device *d)
{
    if (info_of(d).external_handles & CUBEC_EXTERNAL_MEMORY_FD) return 1;
    printf("    skipped: the device has no external memory fds (CUBEC_EXTERNAL_MEMORY_FD)\n");
    return 0;
}

static cubec_import_desc import_of(const cubec_export_info *e)
{
    cubec_import_desc desc = CUBEC_IMPORT_DESC_INIT;
    desc.fd = e->fd;
    desc.allocation_size = e->allocation_size;
    desc.offset = e->offset;
    desc.size = e->size;
    desc.dedicated = e->dedicated;
    memcpy(desc.device_uuid, e->device_uuid, sizeof desc.device_uuid);
    return desc;
}

/* A buffer exported by `a` and imported by `b`; the import took the fd. */
static cubec_buffer share(cubec_device *a, cubec_buffer exported, cubec_device *b,
                          cubec_export_info *out)
{
    ASSERT_OK(cubec_buffer_export(a, exported, out));
    assert_true(out->fd >= 0);
    cubec_import_desc desc = import_of(out);
    cubec_buffer imported = {0};
    ASSERT_OK(cubec_buffer_import(b, CUBEC_STREAM_CURRENT, &desc, &imported));
    assert_true(imported.id != 0);
    assert_false(fd_open(desc.fd)); /* the buffer owns it now */
    return imported;
}

/* Written on A (a launch), read on B; written on B (a launch on the imported memory, and a
 * cubec_write), read on A; copied on B into B's own memory. */
static void test_export_import_both_ways(void **state)
{
    (void)state;
    cubec_device *a = test_device_open(), *b = test_device_open();
    if (!has_memory_fd(a)) {
        test_device_close(b);
        test_device_close(a);
        return;
    }
    cubec_device_info ia = info_of(a), ib = info_of(b);
    assert_memory_equal(ia.device_uuid, ib.device_uuid, 16);
    cubec_kernel pa, ca, sa, pb, cb, sb;
    uint_kernels_create(a, &pa, &ca, &sa);
    uint_kernels_create(b, &pb, &cb, &sb);
    cubec_stream s = CUBEC_STREAM_CURRENT;

    cubec_buffer x = {0};
    ASSERT_OK(cubec_buffer_create_exportable(a, s, WORDS * 4, &x));
    ASSERT_OK(uint_launch(a, s, pa, x, NONE, WORDS, 7, 3)); /* x[i] = 7i + 3 on A */
    ASSERT_OK(cubec_sync(a, s));
    cubec_export_info e = CUBEC_EXPORT_INFO_INIT;
    cubec_buffer y = share(a, x, b, &e);
    assert_int_equal(e.offset, 0);
    assert_int_equal(e.size, WORDS * 4);
    assert_true(e.allocation_size >= WORDS * 4);
    assert_memory_equal(e.device_uuid, ia.device_uuid, 16);
    uint64_t size = 0;
    ASSERT_OK(cubec_buffer_get_size(b, y, &size));
    assert_int_equal(size, WORDS * 4);

    uint32_t *want = malloc(WORDS * 4), *got = malloc(WORDS * 4);
    assert_non_null(want);
    assert_non_null(got);
    cpu_produce(want, WORDS, 7, 3);
    expect_range_in(b, s, y, WORDS, 0, WORDS, want, "A's launch read on B");

    /* B steps the imported words in place: y[i] = y[i] * 5 + 1. */
    ASSERT_OK(uint_launch(b, s, sb, y, NONE, WORDS, 5, 1));
    ASSERT_OK(cubec_sync(b, s));
    cpu_consume(want, want, WORDS, 5, 1);
    expect_range_in(a, s, x, WORDS, 0, WORDS, want, "B's launch read on A");

    /* A host write on B, read on A; then B copies into its own memory. */
    for (uint32_t i = 0; i < 64; i++)
        want[100 + i] = 0xC0DE0000u + i;
    ASSERT_OK(cubec_write(b, s, y, 400, &want[100], 64 * 4));
    ASSERT_OK(cubec_sync(b, s));
    expect_range_in(a, s, x, WORDS, 0, WORDS, want, "B's write read on A");
    cubec_buffer own = {0};
    ASSERT_OK(cubec_buffer_create(b, s, WORDS * 4, &own));
    ASSERT_OK(cubec_copy(b, s, y, 0, own, 0, WORDS * 4));
    ASSERT_OK(cubec_read(b, s, own, 0, got, WORDS * 4));
    assert_memory_equal(got, want, WORDS * 4);

    /* A view is exported with its offset into the same allocation. */
    uint64_t align = ia.storage_offset_alignment > 4 ? ia.storage_offset_alignment : 4;
    cubec_buffer view = {0};
    ASSERT_OK(cubec_buffer_view(a, x, align, 256, &view));
    cubec_export_info ev = CUBEC_EXPORT_INFO_INIT;
    cubec_buffer yv = share(a, view, b, &ev);
    assert_int_equal(ev.offset, align);
    assert_int_equal(ev.size, 256);
    expect_range_in(b, s, yv, 64, 0, 64, &want[align / 4], "a view's bytes on B");

    /* The exporter lets its handles go: the memory stays for the importer, and the next
     * exportable buffer gets a page of its own (never the one B still maps). */
    ASSERT_OK(cubec_buffer_release(a, view));
    ASSERT_OK(cubec_buffer_release(a, x));
    cubec_buffer z = {0};
    ASSERT_OK(cubec_buffer_create_exportable(a, s, WORDS * 4, &z));
    ASSERT_OK(cubec_fill(a, s, z, 0, WORDS * 4, 0xFFFFFFFFu));
    ASSERT_OK(cubec_sync(a, s));
    expect_range_in(b, s, y, WORDS, 0, WORDS, want, "B's import after A released it");

    ASSERT_OK(cubec_buffer_release(b, yv));
    ASSERT_OK(cubec_buffer_release(b, y));
    ASSERT_OK(cubec_buffer_release(b, own));
    ASSERT_OK(cubec_buffer_release(a, z));
    free(want);
    free(got);
    uint_kernels_destroy(a, pa, ca, sa);
    uint_kernels_destroy(b, pb, cb, sb);
    test_device_close(b);
    test_device_close(a);
}

/* Every refusal names the argument and value, and keeps what the caller had: the fd of a refused
 * import is still open and imports afterwards. */
static void test_export_import_refusals(void **state)
{
    (void)state;
    cubec_device *a = test_device_open(), *b = test_device_open();
    cubec_stream s = CUBEC_STREAM_CURRENT;
    if (!has_memory_fd(a)) {
        cubec_buffer x = {0};
        ASSERT_ERROR(cubec_buffer_create_exportable(a, s, 256, &x), CUBEC_UNSUPPORTED,
                     "cannot export memory");
        test_device_close(b);
        test_device_close(a);
        return;
    }
    cubec_buffer x = {0}, plain = {0}, out = {0};
    ASSERT_ERROR(cubec_buffer_create_exportable(a, s, 0, &x), CUBEC_INVALID_ARGUMENT, "size 0");
    ASSERT_ERROR(cubec_buffer_create_exportable(a, s, 256, NULL), CUBEC_INVALID_ARGUMENT,
                 "out_buffer is NULL");
    ASSERT_OK(cubec_buffer_create_exportable(a, s, 1024, &x));
    ASSERT_OK(cubec_buffer_create(a, s, 1024, &plain));

    cubec_export_info e = CUBEC_EXPORT_INFO_INIT;
    ASSERT_ERROR(cubec_buffer_export(a, plain, &e), CUBEC_INVALID_ARGUMENT,
                 "was not created exportable");
    assert_int_equal(e.fd, -1);
    ASSERT_ERROR(cubec_buffer_export(a, x, NULL), CUBEC_INVALID_ARGUMENT, "out_info is NULL");
    cubec_export_info unsized = {0};
    ASSERT_ERROR(cubec_buffer_export(a, x, &unsized), CUBEC_INVALID_ARGUMENT,
                 "out_info->struct_size is 0");

    ASSERT_OK(cubec_buffer_export(a, x, &e));
    const cubec_import_desc good = import_of(&e);
    cubec_import_desc d = good;

    /* Another physical device's UUID (made up). */
    d.device_uuid[3] ^= 0x5a;
    ASSERT_ERROR(cubec_buffer_import(b, s, &d, &out), CUBEC_INVALID_ARGUMENT, "desc->device_uuid");
    d = good;
    d.fd = -1;
    ASSERT_ERROR(cubec_buffer_import(b, s, &d, &out), CUBEC_INVALID_ARGUMENT, "desc->fd -1");
    /* A closed descriptor (a duplicate, closed). */
    d = good;
    d.fd = dup(good.fd);
    assert_true(d.fd >= 0);
    close(d.fd);
    char closed[48];
    snprintf(closed, sizeof closed, "fd %d cannot be duplicated", d.fd);
    ASSERT_ERROR(cubec_buffer_import(b, s, &d, &out), CUBEC_INVALID_ARGUMENT, closed);
    d = good;
    d.size = good.allocation_size + 4;
    d.offset = 0;
    ASSERT_ERROR(cubec_buffer_import(b, s, &d, &out), CUBEC_INVALID_ARGUMENT,
                 "is past desc->allocation_size");
    d = good;
    d.offset = good.allocation_size;
    ASSERT_ERROR(cubec_buffer_import(b, s, &d, &out), CUBEC_INVALID_ARGUMENT,
                 "is past desc->allocation_size");
    d = good;
    d.size = 0;
    ASSERT_ERROR(cubec_buffer_import(b, s, &d, &out), CUBEC_INVALID_ARGUMENT, "desc->size 0");
    d = good;
    d.offset = 4;
    d.size = 16;
    ASSERT_ERROR(cubec_buffer_import(b, s, &d, &out), CUBEC_INVALID_ARGUMENT,
                 "desc->offset 4 is not a multiple");
    ASSERT_ERROR(cubec_buffer_import(b, s, NULL, &out), CUBEC_INVALID_ARGUMENT, "desc is NULL");
    cubec_import_desc zero = {0};
    ASSERT_ERROR(cubec_buffer_import(b, s, &zero, &out), CUBEC_INVALID_ARGUMENT,
                 "desc->struct_size is 0");
    ASSERT_ERROR(cubec_buffer_import(b, 0x0bad000000000001ull, &good, &out), CUBEC_INVALID_ARGUMENT,
                 "cubec_buffer_import");
    assert_int_equal(out.id, 0);

    /* Nothing was taken: the fd is open and imports now. */
    assert_true(fd_open(good.fd));
    ASSERT_OK(cubec_buffer_import(b, s, &good, &out));
    assert_false(fd_open(good.fd));

    /* A buffer made of imported memory is exported by the device that made it. */
    cubec_export_info again = CUBEC_EXPORT_INFO_INIT;
    ASSERT_ERROR(cubec_buffer_export(b, out, &again), CUBEC_INVALID_ARGUMENT, "is imported memory");

    /* Stale handles and a closed device. */
    ASSERT_OK(cubec_buffer_release(a, x));
    ASSERT_ERROR(cubec_buffer_export(a, x, &again), CUBEC_INVALID_ARGUMENT,
                 "cubec_buffer_export: buffer");
    assert_int_equal(again.fd, -1);
    ASSERT_OK(cubec_buffer_release(b, out));
    ASSERT_ERROR(cubec_buffer_export(b, out, &again), CUBEC_INVALID_ARGUMENT,
                 "cubec_buffer_export: buffer");
    ASSERT_OK(cubec_buffer_release(a, plain));
    test_device_close(b);
    ASSERT_ERROR(cubec_buffer_export(b, x, &again), CUBEC_INVALID_ARGUMENT,
                 "is not an open device");
    ASSERT_ERROR(cubec_buffer_create_exportable(b, s, 256, &out), CUBEC_INVALID_ARGUMENT,
                 "is not an open device");
    cubec_import_desc late = good;
    ASSERT_ERROR(cubec_buffer_import(b, s, &late, &out), CUBEC_INVALID_ARGUMENT,
                 "is not an open device");
    int fd = 5;
    ASSERT_ERROR(cubec_timeline_export(b, &fd), CUBEC_INVALID_ARGUMENT, "is not an open device");
    assert_int_equal(fd, -1);
    test_device_close(a);
}

/* The timeline: exported where the device can (a new fd each time), refused by name where it
 * cannot; a stream's value is 0 before any work and grows with each submission. */
static void test_timeline_export_and_values(void **state)
{
    (void)state;
    cubec_device *a = test_device_open();
    cubec_stream s = new_stream(a), t = new_stream(a);
    int fd = 7;
    if (info_of(a).external_handles & CUBEC_EXTERNAL_TIMELINE_FD) {
        ASSERT_OK(cubec_timeline_export(a, &fd));
        assert_true(fd >= 0);
        int fd2 = -1;
        ASSERT_OK(cubec_timeline_export(a, &fd2));
        assert_true(fd2 >= 0 && fd2 != fd);
        close(fd);
        close(fd2);
    } else {
        printf("    the device has no timeline fd: its refusal is checked\n");
        ASSERT_ERROR(cubec_timeline_export(a, &fd), CUBEC_UNSUPPORTED,
                     "cannot export its timeline");
        assert_int_equal(fd, -1);
    }
    ASSERT_ERROR(cubec_timeline_export(a, NULL), CUBEC_INVALID_ARGUMENT, "out_fd is NULL");
    uint64_t v0 = 1, v1 = 0, v2 = 0, vt = 9;
    ASSERT_OK(cubec_stream_get_timeline_value(a, s, &v0));
    assert_int_equal(v0, 0);
    cubec_kernel p, c, st;
    uint_kernels_create(a, &p, &c, &st);
    cubec_buffer x = {0};
    ASSERT_OK(cubec_buffer_create(a, s, WORDS * 4, &x));
    ASSERT_OK(uint_launch(a, s, p, x, NONE, WORDS, 1, 0));
    ASSERT_OK(cubec_stream_get_timeline_value(a, s, &v1));
    assert_true(v1 > 0);
    ASSERT_OK(uint_launch(a, s, st, x, NONE, WORDS, 1, 1));
    ASSERT_OK(cubec_stream_get_timeline_value(a, s, &v2));
    assert_true(v2 > v1);
    /* Nothing new queued: the same value. Another stream's is its own (none yet). */
    uint64_t again = 0;
    ASSERT_OK(cubec_stream_get_timeline_value(a, s, &again));
    assert_int_equal(again, v2);
    ASSERT_OK(cubec_stream_get_timeline_value(a, t, &vt));
    assert_int_equal(vt, 0);
    ASSERT_ERROR(cubec_stream_get_timeline_value(a, s, NULL), CUBEC_INVALID_ARGUMENT,
                 "out_value is NULL");
    ASSERT_ERROR(cubec_stream_get_timeline_value(a, 0x0bad000000000002ull, &again),
                 CUBEC_INVALID_ARGUMENT, "cubec_stream_get_timeline_value");
    uint32_t want[WORDS], got[WORDS];
    cpu_produce(want, WORDS, 1, 0);
    cpu_consume(want, want, WORDS, 1, 1);
    ASSERT_OK(cubec_read(a, s, x, 0, got, sizeof got));
    assert_memory_equal(got, want, sizeof got);
    ASSERT_OK(cubec_buffer_release(a, x));
    uint_kernels_destroy(a, p, c, st);
    test_device_close(a);
}

/* A fault at each step of an import (the count before the import, the map of the imported page
 * after it succeeded on unified memory) fails the import and leaves the caller's fd open and
 * importable: the memory that was imported (a duplicate) goes with the failure. */
static void test_import_faults_keep_the_fd(void **state)
{
    (void)state;
    cubec_device *a = test_device_open(), *b = test_device_open();
    if (!has_memory_fd(a)) {
        test_device_close(b);
        test_device_close(a);
        return;
    }
    cubec_stream s = CUBEC_STREAM_CURRENT;
    cubec_buffer x = {0}, y = {0};
    ASSERT_OK(cubec_buffer_create_exportable(a, s, 1024, &x));
    uint32_t words[256];
    for (uint32_t i = 0; i < 256; i++)
        words[i] = i * 2654435761u;
    ASSERT_OK(cubec_write(a, s, x, 0, words, sizeof words));
    ASSERT_OK(cubec_sync(a, s));
    cubec_export_info e = CUBEC_EXPORT_INFO_INIT;
    ASSERT_OK(cubec_buffer_export(a, x, &e));
    const cubec_import_desc desc = import_of(&e);
    /* The import's map fault counts first; on unified memory the imported page is mapped after
     * the import, which is the second. */
    const int maps = info_of(b).unified_memory ? 2 : 1;
    for (int nth = 1; nth <= maps; nth++) {
        ASSERT_OK(cubec_fault_inject(b, CUBEC_FAULT_MAP, (uint64_t)nth));
        ASSERT_ERROR(cubec_buffer_import(b, s, &desc, &y), CUBEC_INTERNAL, "injected fault: map");
        assert_int_equal(y.id, 0);
        assert_true(fd_open(desc.fd));
        ASSERT_OK(cubec_fault_inject(b, CUBEC_FAULT_MAP, 0));
    }
    ASSERT_OK(cubec_buffer_import(b, s, &desc, &y));
    assert_false(fd_open(desc.fd));
    uint32_t got[256];
    ASSERT_OK(cubec_read(b, s, y, 0, got, sizeof got));
    assert_memory_equal(got, words, sizeof got);
    ASSERT_OK(cubec_buffer_release(b, y));
    ASSERT_OK(cubec_buffer_release(a, x));
    test_device_close(b);
    test_device_close(a);
}

/* The null backend has no external handles: each call refuses naming it. */
static void test_export_import_null_backend(void **state)
{
    (void)state;
    cubec_device_desc desc = CUBEC_DEVICE_DESC_INIT;
    desc.backend = "null";
    cubec_device *n = NULL;
    ASSERT_OK(cubec_device_open(&desc, &n));
    cubec_device_info info = info_of(n);
    assert_int_equal(info.external_handles, 0);
    cubec_buffer x = {0};
    ASSERT_ERROR(cubec_buffer_create_exportable(n, CUBEC_STREAM_CURRENT, 256, &x),
                 CUBEC_UNSUPPORTED, "(null backend) cannot export memory");
    cubec_import_desc d = CUBEC_IMPORT_DESC_INIT;
    d.fd = 0; /* never reached: the device is refused first */
    d.allocation_size = d.size = 256;
    ASSERT_ERROR(cubec_buffer_import(n, CUBEC_STREAM_CURRENT, &d, &x), CUBEC_UNSUPPORTED,
                 "(null backend) cannot import memory");
    int fd = 3;
    ASSERT_ERROR(cubec_timeline_export(n, &fd), CUBEC_UNSUPPORTED,
                 "the null device cannot export its timeline");
    assert_int_equal(fd, -1);
    cubec_device_close(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_import_both_ways),
        cmocka_unit_test(test_export_import_refusals),
        cmocka_unit_test(test_import_faults_keep_the_fd),
        cmocka_unit_test(test_timeline_export_and_values),
        cmocka_unit_test(test_export_import_null_backend),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
