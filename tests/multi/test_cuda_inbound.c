/* cubec's work after CUDA's, without the host (cubec_stream_wait_cuda): a CUDA kernel (PTX the
 * driver compiles) spins for milliseconds and then writes an exportable buffer through its
 * mapping; cubec reads it, and copies it on the GPU, right after cubec_stream_wait_cuda, and
 * must see every word against the CPU's reference. A control read without the wait must see the
 * old words (else the spin was too short for the test to mean anything). Rounds alternate two
 * CUDA streams, so the inbound values reach the semaphore in order across streams. Where libcuda
 * or an NVIDIA GPU with an exportable timeline is absent (lavapipe), the GPU test reports itself
 * skipped by name and the refusals are checked. */
#include "interop/cuda_driver.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 1 << 16, SPINS = 1 << 22 };

static int cuda_present(const char *test)
{
    cuda_driver probe;
    cubec_status st = cuda_driver_load("libcuda.so.1", &probe);
    if (!st) return 1;
    print_message("%s skipped: %s\n", test, cubec_status_message(st));
    cubec_status_free(st);
    return 0;
}

static void test_refused_without_cuda_or_timeline(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cuda_driver probe;
    cubec_status st = cuda_driver_load("libcuda.so.1", &probe);
    int cuda = st == NULL;
    cubec_status_free(st);
    if (!(info.external_handles & CUBEC_EXTERNAL_TIMELINE_FD))
        ASSERT_ERROR(cubec_stream_wait_cuda(d, 0, NULL), CUBEC_UNSUPPORTED,
                     "CUBEC_EXTERNAL_TIMELINE_FD");
    else if (!cuda)
        ASSERT_ERROR(cubec_stream_wait_cuda(d, 0, NULL), CUBEC_UNSUPPORTED, "libcuda.so.1");
    else
        print_message("test_refused_without_cuda_or_timeline: %s has both: nothing refused\n",
                      info.name);
    test_device_close(d);
}

/* a[i] = i * 5 + 11 + tag after `spins` dependent steps per thread, in PTX. */
static const char late_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry late_write(.param .u64 pa, .param .u32 pn, .param .u32 pspins,\n"
    "                           .param .u32 ptag)\n"
    "{\n"
    "  .reg .pred p, q;\n"
    "  .reg .b32 r<14>;\n"
    "  .reg .b64 rd<5>;\n"
    "  ld.param.u64 rd1, [pa];\n"
    "  ld.param.u32 r1, [pn];\n"
    "  ld.param.u32 r2, [pspins];\n"
    "  ld.param.u32 r12, [ptag];\n"
    "  mov.u32 r3, %ctaid.x;\n"
    "  mov.u32 r4, %ntid.x;\n"
    "  mov.u32 r5, %tid.x;\n"
    "  mad.lo.s32 r6, r3, r4, r5;\n"
    "  setp.ge.u32 p, r6, r1;\n"
    "  @p bra DONE;\n"
    "  mov.u32 r7, r6;\n"
    "  mov.u32 r8, 0;\n"
    "LOOP:\n"
    "  setp.ge.u32 q, r8, r2;\n"
    "  @q bra STORE;\n"
    "  mad.lo.s32 r7, r7, 1664525, 1;\n"
    "  add.s32 r8, r8, 1;\n"
    "  bra LOOP;\n"
    "STORE:\n"
    "  setp.eq.u32 q, r7, 0;\n"
    "  setp.eq.and.u32 q, r6, -1, q;\n"
    "  selp.u32 r9, 1, 0, q;\n"
    "  mad.lo.s32 r10, r6, 5, 11;\n"
    "  add.s32 r10, r10, r9;\n"
    "  add.s32 r10, r10, r12;\n"
    "  cvta.to.global.u64 rd2, rd1;\n"
    "  mul.wide.u32 rd3, r6, 4;\n"
    "  add.s64 rd4, rd2, rd3;\n"
    "  st.global.u32 [rd4], r10;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

#define CU_OK(call) assert_int_equal((call), 0)

static uint32_t want_word(uint32_t i, uint32_t tag)
{
    return i * 5u + 11u + tag;
}

/* The words of `b` that differ from the reference for `tag`. */
static uint32_t mismatches(cubec_device *d, cubec_buffer b, uint32_t tag, uint32_t *first)
{
    uint32_t *got = malloc(N * 4);
    assert_non_null(got);
    ASSERT_OK(cubec_read(d, 0, b, 0, got, N * 4));
    uint32_t bad = 0;
    for (uint32_t i = 0; i < N; i++)
        if (got[i] != want_word(i, tag) && bad++ == 0) *first = i;
    free(got);
    return bad;
}

static void test_cuda_writes_cubec_reads(void **state)
{
    (void)state;
    if (!cuda_present("test_cuda_writes_cubec_reads")) skip();
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (info.vendor_id != 0x10de || !(info.external_handles & CUBEC_EXTERNAL_TIMELINE_FD)) {
        print_message("test_cuda_writes_cubec_reads skipped: %s is not an NVIDIA GPU with an "
                      "exportable timeline\n",
                      info.name);
        test_device_close(d);
        skip();
    }
    cubec_buffer a = {0}, copy = {0};
    ASSERT_OK(cubec_buffer_create_exportable(d, 0, N * 4, &a));
    ASSERT_OK(cubec_buffer_create(d, 0, N * 4, &copy));
    ASSERT_OK(cubec_fill(d, 0, a, 0, N * 4, 0));
    ASSERT_OK(cubec_sync(d, 0));
    cubec_cuda_mapping ma = CUBEC_CUDA_MAPPING_INIT;
    ASSERT_OK(cubec_cuda_map(d, a, &ma));

    const cuda_driver *cu = NULL;
    ASSERT_OK(cuda_driver_get(&cu));
    cu_device dev = 0;
    cu_context ctx = NULL, popped = NULL;
    CU_OK(cu->device_get(&dev, ma.cuda_device));
    CU_OK(cu->primary_ctx_retain(&ctx, dev));
    CU_OK(cu->ctx_push(ctx));
    cu_module mod = NULL;
    cu_function fn = NULL;
    CU_OK(cu->module_load_data(&mod, late_ptx));
    CU_OK(cu->module_get_function(&fn, mod, "late_write"));
    cu_stream cs[2] = {NULL, NULL};
    CU_OK(cu->stream_create(&cs[0], 1 /* CU_STREAM_NON_BLOCKING */));
    CU_OK(cu->stream_create(&cs[1], 1));

    unsigned long long pa = ma.device_ptr;
    unsigned int n = N, spins = SPINS;
    /* Control: without the wait, cubec reads before the CUDA kernel wrote. */
    {
        unsigned int tag = 1000;
        void *args[] = {&pa, &n, &spins, &tag};
        CU_OK(cu->launch_kernel(fn, N / 256, 1, 1, 256, 1, 1, 0, cs[0], args, NULL));
        uint32_t first = 0;
        uint32_t bad = mismatches(d, a, tag, &first);
        if (bad == 0)
            fail_msg("control: cubec saw CUDA's words without waiting: the spin (%u steps) is "
                     "too short for this test to mean anything",
                     SPINS);
        print_message("control without the wait: %u of %u words not written yet\n", bad, N);
        CU_OK(cu->stream_synchronize(cs[0]));
    }
    for (unsigned int round = 0; round < 4; round++) {
        unsigned int tag = round + 1;
        void *args[] = {&pa, &n, &spins, &tag};
        cu_stream s = cs[round % 2];
        CU_OK(cu->launch_kernel(fn, N / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
        ASSERT_OK(cubec_stream_wait_cuda(d, 0, s));
        /* On the GPU: a copy queued after the wait; on the host: a read. */
        ASSERT_OK(cubec_copy(d, 0, a, 0, copy, 0, N * 4));
        uint32_t first = 0;
        uint32_t bad = mismatches(d, a, tag, &first);
        if (bad)
            fail_msg("round %u: %u words of a differ from CUDA's, first a[%u] (cubec read before "
                     "CUDA wrote?)",
                     round, bad, first);
        bad = mismatches(d, copy, tag, &first);
        if (bad)
            fail_msg("round %u: %u words of the copy differ, first [%u] (the copy ran before "
                     "CUDA wrote?)",
                     round, bad, first);
    }
    /* A graph could not replay a wait for one call's value. */
    ASSERT_OK(cubec_graph_prepare(d, 0));
    ASSERT_OK(cubec_graph_begin(d, 0));
    ASSERT_ERROR(cubec_stream_wait_cuda(d, 0, cs[0]), CUBEC_GRAPH_STATE, "cubec_stream_wait_cuda");
    cubec_graph g = {0};
    cubec_status_free(cubec_graph_end(d, 0, &g));
    if (g.id) ASSERT_OK(cubec_graph_destroy(d, 0, g));

    CU_OK(cu->stream_synchronize(cs[0]));
    CU_OK(cu->stream_synchronize(cs[1]));
    CU_OK(cu->stream_destroy(cs[0]));
    CU_OK(cu->stream_destroy(cs[1]));
    CU_OK(cu->module_unload(mod));
    CU_OK(cu->ctx_pop(&popped));
    CU_OK(cu->primary_ctx_release(dev));
    ASSERT_OK(cubec_buffer_release(d, a));
    ASSERT_OK(cubec_buffer_release(d, copy));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_without_cuda_or_timeline),
        cmocka_unit_test(test_cuda_writes_cubec_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
