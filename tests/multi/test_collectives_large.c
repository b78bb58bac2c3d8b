/* A collective over buffers larger than one kernel binding may span, in a program of its own:
 * the buffers are past lavapipe's 128 MiB limit, and with ASan's quarantine holding what the
 * other collective tests freed, one program would pass the 2 GiB every test program keeps to. */
#include "launch_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct fixture {
    cubec_device *d[2];
    cubec_comm *comm[3]; /* comm[2]: over both */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    for (int r = 0; r < 2; r++)
        f->d[r] = test_device_open();
    ASSERT_OK(cubec_comm_create(f->d, 2, &f->comm[2]));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    cubec_comm_destroy(f->comm[2]);
    for (int r = 1; r >= 0; r--)
        test_device_close(f->d[r]);
    free(f);
    return 0;
}

/* An all-reduce of a buffer larger than one binding may span (lavapipe: 128 MiB): the element
 * kernels bind views of the words they touch, in pieces. Filled with constants, then distinct
 * values at both ends and around the pieces' edges; read back in slices. Skipped where a binding
 * spans more than 256 MiB (the buffer would have to be larger than a test may hold). */
static void test_past_one_binding(void **state)
{
    fixture *f = *state;
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(f->d[0], &info));
    if (info.max_storage_buffer_range > (256u << 20)) {
        print_message("skipped: max_storage_buffer_range is %" PRIu64 " bytes\n",
                      info.max_storage_buffer_range);
        return;
    }
    const uint64_t bytes = info.max_storage_buffer_range + (1u << 20), count = bytes / 4;
    /* Spots: both ends, each rank's chunk edge, and the edges of the kernels' 64 MiB pieces. */
    const uint64_t spots[] = {0,
                              1,
                              count / 2 - 1,
                              count / 2,
                              count / 2 + 1,
                              (16u << 20) - 1,
                              16u << 20,
                              count / 2 + (16u << 20),
                              count - 2,
                              count - 1};
    enum { SPOTS = sizeof spots / sizeof spots[0], SLICE = 8 << 20 };
    cubec_buffer b[2];
    cubec_stream s[2];
    for (uint32_t r = 0; r < 2; r++) {
        s[r] = new_stream(f->d[r]);
        ASSERT_OK(cubec_buffer_create(f->d[r], s[r], bytes, &b[r]));
        ASSERT_OK(cubec_fill(f->d[r], s[r], b[r], 0, bytes, 3 + 2 * r));
        for (int i = 0; i < SPOTS; i++) {
            uint32_t v = (uint32_t)(spots[i] * 7 + r);
            ASSERT_OK(cubec_write(f->d[r], s[r], b[r], spots[i] * 4, &v, 4));
        }
    }
    ASSERT_OK(cubec_comm_all_reduce(f->comm[2], b, s, count, CUBEC_DTYPE_I32, CUBEC_REDUCE_SUM));
    uint32_t *got = malloc(SLICE);
    for (uint32_t r = 0; r < 2; r++) {
        int spot = 0;
        for (uint64_t at = 0; at < bytes; at += SLICE) {
            const uint64_t n = bytes - at < SLICE ? bytes - at : SLICE;
            ASSERT_OK(cubec_read(f->d[r], s[r], b[r], at, got, n));
            for (uint64_t i = 0; i < n / 4; i++) {
                const uint64_t e = at / 4 + i;
                uint32_t want = 8;
                for (int k = 0; k < SPOTS; k++)
                    if (spots[k] == e) want = (uint32_t)(e * 14 + 1), spot++;
                if (got[i] != want)
                    fail_msg("rank %u element %" PRIu64 " is %u, want %u", r, e, got[i], want);
            }
        }
        assert_int_equal(spot, SPOTS);
        ASSERT_OK(cubec_buffer_release(f->d[r], b[r]));
    }
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_past_one_binding),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
