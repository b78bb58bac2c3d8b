/* Bad input: every refused call returns a named error that names the argument and its value, and
 * leaves data that was already written intact (checked by reading it back after each refusal). */
#include "test_util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char ok_src[] =
    "#version 450\n"
    "layout(local_size_x = 16) in;\n"
    "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
    "layout(std430, binding = 1) writeonly buffer B { uint b[]; };\n"
    "CUBEC_INFO(uint add;)\n"
    "void main() { uint i = gl_GlobalInvocationID.x; b[i] = a[i] + info.add; }\n";

enum { WORDS = 64 };

typedef struct fixture {
    cubec_device *d;
    cubec_buffer a, b;
    cubec_kernel k;
    uint32_t data[WORDS];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->d = test_device_open();
    for (uint32_t i = 0; i < WORDS; i++)
        f->data[i] = i * 7 + 3;
    ASSERT_OK(cubec_buffer_from(f->d, 0, f->data, sizeof f->data, &f->a));
    ASSERT_OK(cubec_buffer_from(f->d, 0, f->data, sizeof f->data, &f->b));
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "add", .glsl = ok_src};
    ASSERT_OK(cubec_kernel_create(f->d, &kd, &f->k));
    *state = f;
    return 0;
}

/* The data written at setup is still there. */
static void assert_intact(fixture *f)
{
    uint32_t got[WORDS];
    ASSERT_OK(cubec_read(f->d, 0, f->a, 0, got, sizeof got));
    assert_memory_equal(got, f->data, sizeof got);
    ASSERT_OK(cubec_read(f->d, 0, f->b, 0, got, sizeof got));
    assert_memory_equal(got, f->data, sizeof got);
}

static int teardown(void **state)
{
    fixture *f = *state;
    assert_intact(f);
    ASSERT_OK(cubec_buffer_release(f->d, f->a));
    ASSERT_OK(cubec_buffer_release(f->d, f->b));
    ASSERT_OK(cubec_kernel_destroy(f->d, f->k));
    test_device_close(f->d);
    free(f);
    return 0;
}

static void test_null_arguments(void **state)
{
    fixture *f = *state;
    uint32_t x[4] = {0};
    cubec_buffer out = {123};
    ASSERT_ERROR(cubec_device_open(NULL, NULL), CUBEC_INVALID_ARGUMENT, "out_device");
    ASSERT_ERROR(cubec_buffer_create(NULL, 0, 16, &out), CUBEC_INVALID_ARGUMENT, "device is NULL");
    assert_int_equal(out.id, 0); /* out-parameters are cleared on entry */
    ASSERT_ERROR(cubec_buffer_create(f->d, 0, 16, NULL), CUBEC_INVALID_ARGUMENT, "out_buffer");
    ASSERT_ERROR(cubec_write(f->d, 0, f->a, 0, NULL, 16), CUBEC_INVALID_ARGUMENT, "src is NULL");
    ASSERT_ERROR(cubec_read(f->d, 0, f->a, 0, NULL, 16), CUBEC_INVALID_ARGUMENT, "dst is NULL");
    ASSERT_ERROR(cubec_read(f->d, 0, (cubec_buffer){0}, 0, x, 16), CUBEC_INVALID_ARGUMENT,
                 "handle is zero");
    ASSERT_ERROR(cubec_launch(f->d, 0, NULL), CUBEC_INVALID_ARGUMENT, "desc is NULL");
    ASSERT_ERROR(cubec_kernel_create(f->d, NULL, &f->k), CUBEC_INVALID_ARGUMENT, "desc is NULL");
    ASSERT_ERROR(cubec_event_wait(NULL), CUBEC_INVALID_ARGUMENT, "event is NULL");
    cubec_raw_buffer raw = {.struct_size = sizeof raw, 1, 1, 1, 1};
    cubec_guard guard = {7};
    ASSERT_ERROR(cubec_buffer_raw(f->d, 0, f->a, NULL, &guard), CUBEC_INVALID_ARGUMENT, "out_raw");
    assert_int_equal(guard.id, 0);
    ASSERT_ERROR(cubec_buffer_raw(NULL, 0, f->a, &raw, &guard), CUBEC_INVALID_ARGUMENT,
                 "device is NULL");
    assert_true(raw.buffer == 0 && raw.offset == 0 && raw.size == 0 && raw.device_address == 0);
    ASSERT_OK(cubec_guard_release(f->d, (cubec_guard){0}));
    /* Releasing or destroying zero handles and NULL objects is allowed. */
    ASSERT_OK(cubec_buffer_release(f->d, (cubec_buffer){0}));
    ASSERT_OK(cubec_kernel_destroy(f->d, (cubec_kernel){0}));
    cubec_device_close(NULL);
    cubec_event_free(NULL);
    cubec_status_free(NULL);
    assert_int_equal(cubec_status_code(NULL), CUBEC_OK);
}

static void test_released_handles(void **state)
{
    fixture *f = *state;
    cubec_buffer tmp;
    ASSERT_OK(cubec_buffer_create(f->d, 0, 64, &tmp));
    ASSERT_OK(cubec_buffer_release(f->d, tmp));
    uint32_t x[4];
    ASSERT_ERROR(cubec_read(f->d, 0, tmp, 0, x, sizeof x), CUBEC_INVALID_ARGUMENT, "released");
    ASSERT_ERROR(cubec_buffer_release(f->d, tmp), CUBEC_INVALID_ARGUMENT, "released");
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    cubec_guard guard = {7};
    ASSERT_ERROR(cubec_buffer_raw(f->d, 0, tmp, &raw, &guard), CUBEC_INVALID_ARGUMENT, "released");
    assert_int_equal(guard.id, 0);
    /* A new buffer may reuse the slot; the stale handle still must not reach it. */
    cubec_buffer fresh;
    ASSERT_OK(cubec_buffer_create(f->d, 0, 64, &fresh));
    assert_true(fresh.id != tmp.id);
    ASSERT_ERROR(cubec_write(f->d, 0, tmp, 0, x, sizeof x), CUBEC_INVALID_ARGUMENT, "released");
    ASSERT_OK(cubec_buffer_release(f->d, fresh));
    cubec_kernel k;
    cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc), .glsl = ok_src};
    ASSERT_OK(cubec_kernel_create(f->d, &kd, &k));
    ASSERT_OK(cubec_kernel_destroy(f->d, k));
    cubec_buffer bufs[2] = {f->a, f->b};
    uint32_t add = 1;
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = bufs,
                            .buffer_count = 2,
                            .info = &add,
                            .info_size = 4,
                            .groups = {1, 1, 1}};
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "desc->kernel");
    /* A made-up id: unknown, not "another device" (tests/badinput/test_unknown_handles.c). */
    ASSERT_ERROR(cubec_buffer_retain(f->d, (cubec_buffer){0x1234567}), CUBEC_INVALID_ARGUMENT,
                 "is unknown: no open device issued it");
}

static void test_other_device(void **state)
{
    fixture *f = *state;
    cubec_device *other = test_device_open();
    cubec_buffer foreign;
    uint32_t x[4] = {1, 2, 3, 4};
    ASSERT_OK(cubec_buffer_from(other, 0, x, sizeof x, &foreign));
    ASSERT_ERROR(cubec_read(f->d, 0, foreign, 0, x, sizeof x), CUBEC_INVALID_ARGUMENT,
                 "another device");
    cubec_buffer bufs[2] = {foreign, f->b};
    uint32_t add = 1;
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = f->k,
                            .buffers = bufs,
                            .buffer_count = 2,
                            .info = &add,
                            .info_size = 4,
                            .groups = {1, 1, 1}};
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "desc->buffers[0]");
    ASSERT_ERROR(cubec_copy(f->d, 0, f->a, 0, foreign, 0, 16), CUBEC_INVALID_ARGUMENT, "dst");
    ASSERT_OK(cubec_buffer_release(other, foreign));
    test_device_close(other);
}

static void test_ranges(void **state)
{
    fixture *f = *state;
    uint32_t x[WORDS + 1] = {0};
    uint64_t size = sizeof f->data;
    ASSERT_ERROR(cubec_write(f->d, 0, f->a, 4, x, size), CUBEC_INVALID_ARGUMENT, "past the end");
    ASSERT_ERROR(cubec_read(f->d, 0, f->a, size + 4, x, 0), CUBEC_INVALID_ARGUMENT, "offset");
    ASSERT_ERROR(cubec_write(f->d, 0, f->a, UINT64_MAX - 2, x, 8), CUBEC_INVALID_ARGUMENT,
                 "past the end");
    ASSERT_ERROR(cubec_buffer_view(f->d, f->a, 0, size + 1, &(cubec_buffer){0}),
                 CUBEC_INVALID_ARGUMENT, "past the end");
    ASSERT_ERROR(cubec_buffer_view(f->d, f->a, 4, 8, &(cubec_buffer){0}), CUBEC_INVALID_ARGUMENT,
                 "storage_offset_alignment");
    ASSERT_ERROR(cubec_copy(f->d, 0, f->a, 0, f->b, 8, size), CUBEC_INVALID_ARGUMENT,
                 "past the end");
    ASSERT_ERROR(cubec_copy(f->d, 0, f->a, 2, f->b, 0, 8), CUBEC_INVALID_ARGUMENT, "src_offset");
    ASSERT_ERROR(cubec_copy(f->d, 0, f->a, 0, f->a, 8, 16), CUBEC_INVALID_ARGUMENT, "overlap");
    ASSERT_ERROR(cubec_fill(f->d, 0, f->a, 0, 6, 0), CUBEC_INVALID_ARGUMENT, "size = 6");
    cubec_event *ev = (cubec_event *)1;
    ASSERT_ERROR(cubec_read_async(f->d, 0, f->a, 0, x, size + 4, &ev), CUBEC_INVALID_ARGUMENT,
                 "past the end");
    assert_null(ev);
}

/* Size 0 is defined: the buffer exists and holds nothing; 0-byte transfers succeed. */
static void test_zero_size(void **state)
{
    fixture *f = *state;
    cubec_buffer z;
    ASSERT_OK(cubec_buffer_create(f->d, 0, 0, &z));
    uint64_t size = 99;
    ASSERT_OK(cubec_buffer_get_size(f->d, z, &size));
    assert_int_equal(size, 0);
    uint32_t x = 5;
    ASSERT_OK(cubec_write(f->d, 0, z, 0, &x, 0));
    ASSERT_OK(cubec_read(f->d, 0, z, 0, &x, 0));
    assert_int_equal(x, 5);
    ASSERT_OK(cubec_write(f->d, 0, f->a, 0, &x, 0)); /* 0 bytes into a real buffer: no change */
    cubec_buffer bufs[2] = {z, f->b};
    uint32_t add = 1;
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = f->k,
                            .buffers = bufs,
                            .buffer_count = 2,
                            .info = &add,
                            .info_size = 4,
                            .groups = {1, 1, 1}};
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "size 0");
    ASSERT_OK(cubec_buffer_release(f->d, z));
    /* A launch with a zero group count launches nothing and succeeds. */
    bufs[0] = f->a;
    ld.groups[0] = 0;
    ASSERT_OK(cubec_launch(f->d, 0, &ld));
}

static void test_too_large(void **state)
{
    fixture *f = *state;
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(f->d, &info));
    cubec_buffer huge = {77};
    ASSERT_ERROR(cubec_buffer_create(f->d, 0, UINT64_MAX, &huge), CUBEC_OUT_OF_MEMORY, "bytes");
    assert_int_equal(huge.id, 0);
    ASSERT_ERROR(cubec_buffer_create(f->d, 0, info.max_allocation_size + 1, &huge),
                 CUBEC_OUT_OF_MEMORY, "bytes");
}

static void test_launch_mismatch(void **state)
{
    fixture *f = *state;
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(f->d, &info));
    cubec_buffer bufs[3] = {f->a, f->b, f->a};
    uint64_t add = 1;
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = f->k,
                            .buffers = bufs,
                            .buffer_count = 1,
                            .info = &add,
                            .info_size = 4,
                            .groups = {1, 1, 1}};
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "buffer_count is 1");
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "takes 2 buffers");
    ld.buffer_count = 2;
    ld.info_size = 8;
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "info_size is 8");
    ld.info_size = 0;
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "declares 4 bytes");
    ld.info_size = 4;
    ld.info = NULL;
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "desc->info is NULL");
    ld.info = &add;
    ld.groups[0] = info.max_workgroup_count[0] + 1u;
    if (ld.groups[0] != 0) /* the limit may be UINT32_MAX on some GPU */
        ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "groups[0]");
    ld.groups[0] = 1;
    ld.groups[1] = info.max_workgroup_count[1] + 1u;
    if (ld.groups[1] != 0)
        ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "groups[1]");
    ld.groups[1] = 1;
    ld.indirect = f->a;
    ld.indirect_offset = sizeof f->data - 8;
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "past the end");
    ld.indirect_offset = 2;
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "indirect_offset");
}

/* The buffers a launch declares it reaches by address: each refusal names the member and its
 * value, and nothing runs (the teardown finds the buffers unchanged). */
static void test_launch_address_buffers(void **state)
{
    fixture *f = *state;
    cubec_buffer bufs[2] = {f->a, f->b};
    cubec_buffer reached[2] = {f->b, {12345}};
    uint32_t add = 1;
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = f->k,
                            .buffers = bufs,
                            .buffer_count = 2,
                            .info = &add,
                            .info_size = 4,
                            .groups = {1, 1, 1},
                            .address_buffer_count = 1,
                            .address_reads = 1};
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->address_buffers is NULL with address_buffer_count 1");
    ld.address_buffers = reached;
    ld.address_buffer_count = 31;
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->buffer_count 2 plus desc->address_buffer_count 31 is more than 32");
    ld.address_buffer_count = 2;
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "desc->address_buffers[1]");
    ld.address_buffer_count = 1;
    ld.address_writes = 2;
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->address_writes is 0x2, which names buffers past address_buffer_count 1");
    ld.address_writes = 0;
    ld.address_reads = 4;
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT, "desc->address_reads is 0x4");
    ld.address_reads = 0;
    ASSERT_ERROR(cubec_launch(f->d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                 "desc->address_buffers[0] is neither read nor written");
}

static void test_bad_kernels(void **state)
{
    fixture *f = *state;
    cubec_kernel k = {55};
    /* GLSL that does not compile: shaderc's diagnostics name the line. */
    cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc),
                            .name = "broken",
                            .glsl = "#version 450\n"
                                    "layout(local_size_x = 1) in;\n"
                                    "void main() {\n"
                                    "  undeclared_thing = 1;\n"
                                    "}\n"};
    ASSERT_ERROR(cubec_kernel_create(f->d, &kd, &k), CUBEC_COMPILE_FAILED, "4:");
    assert_int_equal(k.id, 0);
    /* Malformed SPIR-V: garbage, and a valid header with nothing after it. */
    uint32_t garbage[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    cubec_kernel_desc sd = {.struct_size = sizeof(cubec_kernel_desc),
                            .name = "garbage",
                            .spirv = garbage,
                            .spirv_words = 8};
    ASSERT_ERROR(cubec_kernel_create(f->d, &sd, &k), CUBEC_INVALID_SPIRV, "garbage");
    uint32_t header[5] = {0x07230203u, 0x00010000u, 0, 1, 0};
    sd.spirv = header;
    sd.spirv_words = 5;
    ASSERT_ERROR(cubec_kernel_create(f->d, &sd, &k), CUBEC_INVALID_SPIRV, NULL);
    /* Both or neither source. */
    cubec_kernel_desc both = {.struct_size = sizeof(cubec_kernel_desc),
                              .glsl = ok_src,
                              .spirv = garbage,
                              .spirv_words = 8};
    ASSERT_ERROR(cubec_kernel_create(f->d, &both, &k), CUBEC_INVALID_ARGUMENT, "exactly one");
    cubec_kernel_desc neither = {.struct_size = sizeof(cubec_kernel_desc), .name = "x"};
    ASSERT_ERROR(cubec_kernel_create(f->d, &neither, &k), CUBEC_INVALID_ARGUMENT, "exactly one");
    /* A workgroup larger than the device allows: like every device limit, CUBEC_UNSUPPORTED
     * (tests/vulkan/test_kernel_limits.c checks each limit). */
    cubec_kernel_desc big = {.struct_size = sizeof(cubec_kernel_desc),
                             .name = "wide",
                             .glsl = "#version 450\n"
                                     "layout(local_size_x = 1024, local_size_y = 1024) in;\n"
                                     "void main() {}\n"};
    ASSERT_ERROR(cubec_kernel_create(f->d, &big, &k), CUBEC_UNSUPPORTED, "workgroup");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_null_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_released_handles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launch_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launch_address_buffers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_kernels, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
