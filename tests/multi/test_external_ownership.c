/* Queue-family ownership of memory another API uses (docs/multi-device.md, "Queue-family
 * ownership"), on lavapipe with the validation layer: an exportable buffer handed out (released
 * to VK_QUEUE_FAMILY_EXTERNAL, as cubec_cuda_wait_stream does) and taken back (acquired, as
 * cubec_stream_wait_cuda does in its wait batch, here after a host signal of the inbound
 * timeline standing in for CUDA's). The layer must accept both barriers; the bytes must survive
 * them (checked against the host's copy), cubec's work after them must run in order, and
 * buffers that are not exportable, handed out twice or no longer valid are passed over. */
#include "api/api_inbound.h"
#include "test_util.h"

#include <string.h>

enum { WORDS = 4096 };

static void fill(uint32_t *w, uint32_t seed)
{
    for (uint32_t i = 0; i < WORDS; i++)
        w[i] = seed * 2246822519u ^ (i * 3266489917u);
}

static void expect_words(cubec_device *d, cubec_stream s, cubec_buffer b, const uint32_t *want,
                         const char *what)
{
    static uint32_t got[WORDS];
    memset(got, 0, sizeof got);
    ASSERT_OK(cubec_read(d, s, b, 0, got, sizeof got));
    for (uint32_t i = 0; i < WORDS; i++)
        if (got[i] != want[i])
            fail_msg("%s: word %u is 0x%08x, expected 0x%08x", what, i, got[i], want[i]);
}

static void test_hand_out_and_take_back(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (!(info.external_handles & CUBEC_EXTERNAL_MEMORY_FD)) {
        print_message("test_hand_out_and_take_back skipped: %s cannot export memory\n", info.name);
        test_device_close(d);
        skip();
    }
    cubec_stream s = 0;
    ASSERT_OK(cubec_stream_new(d, &s));
    static uint32_t want[WORDS];
    fill(want, 1);
    cubec_buffer a = {0}, plain = {0}, copy = {0}, gone = {0};
    ASSERT_OK(cubec_buffer_create_exportable(d, s, sizeof want, &a));
    ASSERT_OK(cubec_buffer_create_exportable(d, s, 64, &gone));
    ASSERT_OK(cubec_buffer_create(d, s, sizeof want, &plain));
    ASSERT_OK(cubec_buffer_create(d, s, sizeof want, &copy));
    ASSERT_OK(cubec_write(d, s, a, 0, want, sizeof want));
    uint64_t gone_id = gone.id;
    ASSERT_OK(cubec_buffer_release(d, gone));
    const uint64_t ids[] = {a.id, plain.id, gone_id, a.id};

    for (uint64_t round = 1; round <= 3; round++) {
        uint64_t value = 0;
        ASSERT_OK(api_stream_hand_out(d, s, ids, 4, &value, "test_hand_out"));
        assert_true(value > 0);
        /* Handed out already: a second hand-out records nothing more. */
        ASSERT_OK(api_stream_hand_out(d, s, ids, 4, &value, "test_hand_out"));
        /* The other API's turn, then its signal (the host's, before the wait is submitted). */
        ASSERT_OK(api_inbound_signal(d, round));
        ASSERT_OK(api_stream_wait_inbound(d, s, round, ids, 4, "test_take_back"));
        expect_words(d, s, a, want, "a after its ownership went out and back");
        ASSERT_OK(cubec_copy(d, s, a, 0, copy, 0, sizeof want));
        expect_words(d, s, copy, want, "a copy of a queued after the take-back");
        fill(want, (uint32_t)round + 1);
        ASSERT_OK(cubec_write(d, s, a, 0, want, sizeof want));
    }
    /* Taking back what was never handed out records nothing. */
    ASSERT_OK(api_inbound_signal(d, 4));
    ASSERT_OK(api_stream_wait_inbound(d, s, 4, ids, 4, "test_take_back"));
    expect_words(d, s, a, want, "a after a take-back of nothing");
    ASSERT_OK(cubec_buffer_release(d, a));
    ASSERT_OK(cubec_buffer_release(d, plain));
    ASSERT_OK(cubec_buffer_release(d, copy));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_out_and_take_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
