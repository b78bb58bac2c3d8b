/* The NCCL transport of cubec_comm (src/comm/nccl_transport.c) where it can run here: which
 * transport a communicator takes and why the other was not taken (cubec_comm_info), the per-call
 * fallback to the ring for buffers CUDA cannot map, and the step that makes NCCL's writes known
 * to the server (api_peer_external_landed: a failure on an output range is gone after it).
 *
 * Two opens of one device stand for the ranks: NCCL refuses two ranks on one GPU, so on lavapipe
 * and on a one-GPU machine alike the ring is taken, with that reason. NCCL's own results over real
 * buffers need two GPUs (test_nccl_collectives covers one rank on one GPU, and the calls NCCL
 * receives through a host stand-in). */
#include "api/api_peer_cuda.h"
#include "comm/comm.h"
#include "comm/nccl_transport.h"
#include "launch_util.h"
#include "test_util.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RANKS = 2, N = 1001 /* not divisible by RANKS */, BYTES = N * 4 };

typedef struct fixture {
    cubec_device *d[RANKS];
    cubec_stream s[RANKS];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    for (int r = 0; r < RANKS; r++) {
        f->d[r] = test_device_open();
        f->s[r] = new_stream(f->d[r]);
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    for (int r = RANKS - 1; r >= 0; r--)
        test_device_close(f->d[r]);
    free(f);
    return 0;
}

static int has_memory_fd(cubec_device *d, const char *test)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (info.external_handles & CUBEC_EXTERNAL_MEMORY_FD) return 1;
    print_message("%s skipped: the device has no external memory fds\n", test);
    return 0;
}

/* Two ranks on one GPU: NCCL is tried first and refuses by name; the ring is taken and the info
 * says why NCCL was not. */
static void test_two_opens_take_ring_with_reason(void **state)
{
    fixture *f = *state;
    cubec_comm *comm = NULL;
    ASSERT_OK(cubec_comm_create(f->d, RANKS, &comm));
    cubec_comm_info info = CUBEC_COMM_INFO_INIT;
    ASSERT_OK(cubec_comm_get_info(comm, &info));
    assert_string_equal(info.transport, "ring");
    assert_non_null(strstr(info.transport_reason,
                           "nccl: nccl_group_open: devices[0] and devices[1] are the same GPU"));
    assert_null(strstr(info.transport_reason, "ring"));
    cubec_comm_destroy(comm);
}

/* One rank has nothing to exchange: NCCL is not opened for it. */
static void test_one_rank_takes_ring(void **state)
{
    fixture *f = *state;
    cubec_comm *comm = NULL;
    ASSERT_OK(cubec_comm_create(f->d, 1, &comm));
    cubec_comm_info info = CUBEC_COMM_INFO_INIT;
    ASSERT_OK(cubec_comm_get_info(comm, &info));
    assert_string_equal(info.transport, "ring");
    assert_string_equal(info.transport_reason,
                        "nccl: a communicator of 1 rank has nothing to exchange: the ring serves "
                        "it");
    cubec_comm_destroy(comm);
}

/* A caller built against 0.2.12 or older declares no transport_reason: nothing past transport is
 * written. */
static void test_old_info_struct_keeps_its_bytes(void **state)
{
    fixture *f = *state;
    cubec_comm *comm = NULL;
    ASSERT_OK(cubec_comm_create(f->d, RANKS, &comm));
    struct {
        cubec_comm_info info;
    } whole;
    memset(&whole, 0x5a, sizeof whole);
    whole.info.struct_size = (uint32_t)offsetof(cubec_comm_info, transport_reason);
    ASSERT_OK(cubec_comm_get_info(comm, &whole.info));
    assert_string_equal(whole.info.transport, "ring");
    assert_int_equal((unsigned char)whole.info.transport_reason[0], 0x5a);
    cubec_comm_destroy(comm);
}

/* The call goes to NCCL only when every buffer on every rank is exportable. */
static void test_exportable_decides_per_call(void **state)
{
    fixture *f = *state;
    if (!has_memory_fd(f->d[0], "test_exportable_decides_per_call")) skip();
    cubec_comm *comm = NULL;
    ASSERT_OK(cubec_comm_create(f->d, RANKS, &comm));
    cubec_buffer plain[RANKS], ex[RANKS], mixed[RANKS];
    for (int r = 0; r < RANKS; r++) {
        ASSERT_OK(cubec_buffer_create(f->d[r], f->s[r], BYTES, &plain[r]));
        ASSERT_OK(cubec_buffer_create_exportable(f->d[r], f->s[r], BYTES, &ex[r]));
    }
    mixed[0] = ex[0];
    mixed[1] = plain[1];
    comm_call call = {COMM_ALL_REDUCE, ex, ex, f->s, N, CUBEC_DTYPE_F32, CUBEC_REDUCE_SUM, 0};
    assert_int_equal(comm_nccl_call_exportable(comm, &call), 1);
    call.in = call.out = plain;
    assert_int_equal(comm_nccl_call_exportable(comm, &call), 0);
    call.in = call.out = mixed;
    assert_int_equal(comm_nccl_call_exportable(comm, &call), 0);
    /* all-gather: in exportable, out not. */
    comm_call gather = {COMM_ALL_GATHER, ex, plain, f->s, N, CUBEC_DTYPE_F32, 0, 0};
    assert_int_equal(comm_nccl_call_exportable(comm, &gather), 0);
    gather.out = ex;
    gather.in = plain;
    assert_int_equal(comm_nccl_call_exportable(comm, &gather), 0);
    for (int r = 0; r < RANKS; r++) {
        ASSERT_OK(cubec_buffer_release(f->d[r], plain[r]));
        ASSERT_OK(cubec_buffer_release(f->d[r], ex[r]));
    }
    cubec_comm_destroy(comm);
}

/* The transport's run over buffers CUDA cannot map: the ring's result, checked against a CPU
 * reference; over exportable ones it goes to NCCL (here without a group: refused by NCCL's
 * entry point, by name, which shows the route). */
static void test_run_falls_back_to_ring_per_call(void **state)
{
    fixture *f = *state;
    cubec_comm *comm = NULL;
    ASSERT_OK(cubec_comm_create(f->d, RANKS, &comm));
    cubec_buffer b[RANKS];
    static float host[RANKS][N], want[N], got[N];
    for (int i = 0; i < N; i++) {
        want[i] = 0;
        for (int r = 0; r < RANKS; r++) {
            host[r][i] = (float)((i * 7 + r * 13) % 101) - 50.0f;
            want[i] += host[r][i];
        }
    }
    for (int r = 0; r < RANKS; r++) {
        ASSERT_OK(cubec_buffer_create(f->d[r], f->s[r], BYTES, &b[r]));
        ASSERT_OK(cubec_write(f->d[r], f->s[r], b[r], 0, host[r], BYTES));
    }
    comm_call call = {COMM_ALL_REDUCE, b, b, f->s, N, CUBEC_DTYPE_F32, CUBEC_REDUCE_SUM, 0};
    ASSERT_OK(comm_nccl_transport.run(comm, NULL, &call));
    for (int r = 0; r < RANKS; r++) {
        ASSERT_OK(cubec_read(f->d[r], f->s[r], b[r], 0, got, BYTES));
        for (int i = 0; i < N; i++)
            assert_float_equal(got[i], want[i], 0);
        ASSERT_OK(cubec_buffer_release(f->d[r], b[r]));
    }
    if (has_memory_fd(f->d[0], "test_run_falls_back_to_ring_per_call (exportable half)")) {
        for (int r = 0; r < RANKS; r++)
            ASSERT_OK(cubec_buffer_create_exportable(f->d[r], f->s[r], BYTES, &b[r]));
        ASSERT_ERROR(comm_nccl_transport.run(comm, NULL, &call), CUBEC_INVALID_ARGUMENT,
                     "nccl_group_all_reduce: group is NULL");
        for (int r = 0; r < RANKS; r++)
            ASSERT_OK(cubec_buffer_release(f->d[r], b[r]));
    }
    cubec_comm_destroy(comm);
}

/* What NCCL's collectives do after each stream waits for CUDA: the output range is marked
 * written by that wait, so a failure it carried from before is gone, while bytes outside the
 * range keep theirs. */
static void test_landed_range_loses_old_failure(void **state)
{
    fixture *f = *state;
    cubec_device *d = f->d[0];
    cubec_stream s = f->s[0];
    cubec_buffer b;
    static const uint32_t words[64] = {1, 2, 3};
    ASSERT_OK(cubec_buffer_create(d, s, sizeof words, &b));
    ASSERT_OK(cubec_write(d, s, b, 0, words, sizeof words));
    ASSERT_OK(cubec_write_failure(d, s, b, 0, sizeof words, CUBEC_INTERNAL, "before"));
    ASSERT_ERROR(cubec_sync_check(d, s, &b, 1), CUBEC_INTERNAL, "before");
    ASSERT_OK(api_peer_external_landed(d, s, b, 0, 128, "test"));
    uint32_t got[32];
    ASSERT_OK(cubec_read(d, s, b, 0, got, sizeof got));
    assert_memory_equal(got, words, sizeof got);
    ASSERT_ERROR(cubec_read(d, s, b, 128, got, sizeof got), CUBEC_INTERNAL, "before");
    ASSERT_ERROR(api_peer_external_landed(d, s, b, 200, 128, "test"), CUBEC_INVALID_ARGUMENT,
                 "test");
    ASSERT_OK(cubec_buffer_release(d, b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_opens_take_ring_with_reason),
        cmocka_unit_test(test_one_rank_takes_ring),
        cmocka_unit_test(test_old_info_struct_keeps_its_bytes),
        cmocka_unit_test(test_exportable_decides_per_call),
        cmocka_unit_test(test_run_falls_back_to_ring_per_call),
        cmocka_unit_test(test_landed_range_loses_old_failure),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
