/* CUDA on the same GPU (cubec_cuda_*): where libcuda.so.1 is absent (lavapipe machines) every
 * call is refused naming the library, and unmapping what was never mapped is refused by name.
 * Where the device is an NVIDIA GPU with CUDA, a cubec kernel writes an exportable buffer, a CUDA
 * kernel (PTX, JIT-compiled by the driver) queued after cubec_cuda_wait_stream reads it through
 * its mapping and writes a second mapped buffer, and cubec reads that back: each value is
 * checked against the CPU. cubec's kernel spins long enough that without the wait CUDA would
 * read the zeros the buffer held before. Tests that need CUDA report themselves skipped, by
 * name, elsewhere. */
#include "interop/cuda_driver.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 1 << 16 };

/* 1 when libcuda.so.1 loads, else prints why the named test is skipped. */
static int cuda_present(const char *test)
{
    cuda_driver probe;
    cubec_status st = cuda_driver_load("libcuda.so.1", &probe);
    if (!st) return 1;
    print_message("%s skipped: %s\n", test, cubec_status_message(st));
    cubec_status_free(st);
    return 0;
}

static void test_without_cuda_refused(void **state)
{
    (void)state;
    cuda_driver probe;
    cubec_status st = cuda_driver_load("libcuda.so.1", &probe);
    if (!st) {
        print_message("test_without_cuda_refused skipped: libcuda.so.1 is present\n");
        skip();
    }
    cubec_status_free(st);
    cubec_device *d = test_device_open();
    cubec_buffer b = {0};
    ASSERT_OK(cubec_buffer_create_exportable(d, 0, 4096, &b));
    cubec_cuda_mapping m = CUBEC_CUDA_MAPPING_INIT;
    ASSERT_ERROR(cubec_cuda_map(d, b, &m), CUBEC_UNSUPPORTED, "cannot load libcuda.so.1");
    assert_int_equal(m.cuda_device, -1);
    assert_int_equal(m.device_ptr, 0);
    ASSERT_ERROR(cubec_cuda_wait_stream(d, 0, NULL), CUBEC_UNSUPPORTED, "libcuda.so.1");
    ASSERT_OK(cubec_buffer_release(d, b));
    test_device_close(d);
}

static void test_unmap_refusals(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_buffer b = {0};
    ASSERT_OK(cubec_buffer_create(d, 0, 64, &b));
    char needle[64];
    snprintf(needle, sizeof needle, "buffer %llu is not mapped into CUDA",
             (unsigned long long)b.id);
    ASSERT_ERROR(cubec_cuda_unmap(d, b), CUBEC_INVALID_ARGUMENT, needle);
    cubec_cuda_mapping m = CUBEC_CUDA_MAPPING_INIT;
    m.struct_size = 0;
    ASSERT_ERROR(cubec_cuda_map(d, b, &m), CUBEC_INVALID_ARGUMENT, "out_mapping");
    ASSERT_ERROR(cubec_cuda_map(d, b, NULL), CUBEC_INVALID_ARGUMENT, "out_mapping is NULL");
    ASSERT_OK(cubec_buffer_release(d, b));
    test_device_close(d);
}

/* a[i] = i * 7 + 3 after a data-dependent spin, so the launch takes a while. */
static const char spin_src[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) writeonly buffer A { uint a[]; };\n"
                               "CUBEC_INFO(uint n; uint spins;)\n"
                               "void main() {\n"
                               "  uint i = gl_GlobalInvocationID.x;\n"
                               "  if (i >= info.n) return;\n"
                               "  uint x = i;\n"
                               "  for (uint k = 0u; k < info.spins; k++) x = x * 1664525u + 1u;\n"
                               "  a[i] = i * 7u + 3u + (x == 0u && i == 0xffffffffu ? 1u : 0u);\n"
                               "}\n";

/* b[i] = a[i] * 2 + 1, in PTX: the driver compiles it for the GPU at load. */
static const char twice_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry twice(.param .u64 pa, .param .u64 pb, .param .u32 pn)\n"
    "{\n"
    "  .reg .pred p;\n"
    "  .reg .b32 r<8>;\n"
    "  .reg .b64 rd<8>;\n"
    "  ld.param.u64 rd1, [pa];\n"
    "  ld.param.u64 rd2, [pb];\n"
    "  ld.param.u32 r1, [pn];\n"
    "  mov.u32 r2, %ctaid.x;\n"
    "  mov.u32 r3, %ntid.x;\n"
    "  mov.u32 r4, %tid.x;\n"
    "  mad.lo.s32 r5, r2, r3, r4;\n"
    "  setp.ge.u32 p, r5, r1;\n"
    "  @p bra DONE;\n"
    "  cvta.to.global.u64 rd3, rd1;\n"
    "  cvta.to.global.u64 rd4, rd2;\n"
    "  mul.wide.u32 rd5, r5, 4;\n"
    "  add.s64 rd6, rd3, rd5;\n"
    "  add.s64 rd7, rd4, rd5;\n"
    "  ld.global.u32 r6, [rd6];\n"
    "  mad.lo.s32 r7, r6, 2, 1;\n"
    "  st.global.u32 [rd7], r7;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

#define CU_OK(call) assert_int_equal((call), 0)

static void test_cubec_writes_cuda_reads(void **state)
{
    (void)state;
    if (!cuda_present("test_cubec_writes_cuda_reads")) skip();
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (info.vendor_id != 0x10de || !(info.external_handles & CUBEC_EXTERNAL_TIMELINE_FD)) {
        print_message("test_cubec_writes_cuda_reads skipped: %s is not an NVIDIA GPU with an "
                      "exportable timeline\n",
                      info.name);
        test_device_close(d);
        skip();
    }
    cubec_buffer a = {0}, b = {0}, plain = {0};
    ASSERT_OK(cubec_buffer_create_exportable(d, 0, N * 4, &a));
    ASSERT_OK(cubec_buffer_create_exportable(d, 0, N * 4, &b));
    ASSERT_OK(cubec_buffer_create(d, 0, N * 4, &plain));
    ASSERT_OK(cubec_fill(d, 0, a, 0, N * 4, 0));
    ASSERT_OK(cubec_fill(d, 0, b, 0, N * 4, 0));
    ASSERT_OK(cubec_sync(d, 0));
    /* A buffer that is not exportable cannot be mapped. */
    cubec_cuda_mapping mp = CUBEC_CUDA_MAPPING_INIT;
    ASSERT_ERROR(cubec_cuda_map(d, plain, &mp), CUBEC_INVALID_ARGUMENT, "exportable");
    cubec_cuda_mapping ma = CUBEC_CUDA_MAPPING_INIT, mb = CUBEC_CUDA_MAPPING_INIT;
    ASSERT_OK(cubec_cuda_map(d, a, &ma));
    ASSERT_OK(cubec_cuda_map(d, b, &mb));
    assert_true(ma.device_ptr != 0 && ma.size == N * 4 && ma.cuda_device >= 0);
    cubec_cuda_mapping again = CUBEC_CUDA_MAPPING_INIT;
    ASSERT_OK(cubec_cuda_map(d, a, &again));
    assert_true(again.device_ptr == ma.device_ptr);

    const cuda_driver *cu = NULL;
    ASSERT_OK(cuda_driver_get(&cu));
    cu_device dev = 0;
    cu_context ctx = NULL, popped = NULL;
    CU_OK(cu->device_get(&dev, ma.cuda_device));
    CU_OK(cu->primary_ctx_retain(&ctx, dev));
    CU_OK(cu->ctx_push(ctx));
    cu_module mod = NULL;
    cu_function fn = NULL;
    CU_OK(cu->module_load_data(&mod, twice_ptx));
    CU_OK(cu->module_get_function(&fn, mod, "twice"));
    cu_stream cs = NULL;
    CU_OK(cu->stream_create(&cs, 1 /* CU_STREAM_NON_BLOCKING */));

    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = "spin";
    kd.glsl = spin_src;
    cubec_kernel k = {0};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    for (uint32_t round = 0; round < 3; round++) {
        struct {
            uint32_t n, spins;
        } params = {N, 20000u + round};
        cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
        ld.kernel = k;
        ld.buffers = &a;
        ld.buffer_count = 1;
        ld.info = &params;
        ld.info_size = sizeof params;
        ld.groups[0] = N / 64;
        ld.groups[1] = ld.groups[2] = 1;
        ASSERT_OK(cubec_launch(d, 0, &ld));
        ASSERT_OK(cubec_cuda_wait_stream(d, 0, cs));
        unsigned long long pa = ma.device_ptr, pb = mb.device_ptr;
        unsigned int n = N;
        void *args[] = {&pa, &pb, &n};
        CU_OK(cu->launch_kernel(fn, N / 256, 1, 1, 256, 1, 1, 0, cs, args, NULL));
        CU_OK(cu->stream_synchronize(cs));
        uint32_t *got = malloc(N * 4);
        ASSERT_OK(cubec_read(d, 0, b, 0, got, N * 4));
        for (uint32_t i = 0; i < N; i++)
            if (got[i] != (i * 7u + 3u) * 2u + 1u)
                fail_msg("round %u: b[%u] = %u, want %u (CUDA read before cubec wrote?)", round, i,
                         got[i], (i * 7u + 3u) * 2u + 1u);
        free(got);
        ASSERT_OK(cubec_fill(d, 0, a, 0, N * 4, 0)); /* the next round starts from zeros */
    }
    CU_OK(cu->stream_destroy(cs));
    CU_OK(cu->module_unload(mod));
    CU_OK(cu->ctx_pop(&popped));
    CU_OK(cu->primary_ctx_release(dev));
    ASSERT_OK(cubec_cuda_unmap(d, a));
    ASSERT_ERROR(cubec_cuda_unmap(d, a), CUBEC_INVALID_ARGUMENT, "not mapped into CUDA");
    /* b stays mapped: the device's close unmaps it. */
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_buffer_release(d, a));
    ASSERT_OK(cubec_buffer_release(d, b));
    ASSERT_OK(cubec_buffer_release(d, plain));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_without_cuda_refused),
        cmocka_unit_test(test_unmap_refusals),
        cmocka_unit_test(test_cubec_writes_cuda_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
