/* cubec's work after another API's, without the host (the inbound timeline behind
 * cubec_stream_wait_cuda; docs/multi-device.md "CUDA's work before cubec's"), on the null backend:
 * a host thread stands in for CUDA, writing a buffer's memory late and then signalling the
 * inbound timeline. A read and a copy queued after the wait see its bytes; the call itself does
 * not wait; refusals name what is wrong. tests/multi/test_cuda_inbound.c does it with CUDA. */
#include "api/api_common.h"
#include "api/api_inbound.h"
#include "base/clock.h"
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { WORDS = 1024, LATE_MS = 150 };

/* The stand-in for CUDA: writes `words` into `at` LATE_MS after it starts, then signals `value`
 * on the inbound timeline. */
typedef struct late_writer {
    cubec_device *device;
    uint32_t *at;
    const uint32_t *words;
    uint64_t value;
    pthread_t thread;
} late_writer;

static void *write_late(void *arg)
{
    late_writer *w = arg;
    struct timespec pause = {0, LATE_MS * 1000000L};
    nanosleep(&pause, NULL);
    memcpy(w->at, w->words, WORDS * sizeof(uint32_t));
    cubec_status st = api_inbound_signal(w->device, w->value);
    if (st) print_error("api_inbound_signal: %s\n", cubec_status_message(st));
    cubec_status_free(st);
    return NULL;
}

/* Where the null backend keeps the buffer's bytes (its memory is the host's). */
static uint32_t *host_bytes(cubec_device *d, cubec_buffer h)
{
    ASSERT_OK(api_lock(d, "host_bytes"));
    buffer_obj *b = NULL;
    cubec_status st = api_buffer(d, h, "buffer", &b);
    uint32_t *at = st ? NULL : (uint32_t *)(buffer_page(b)->mapped + buffer_device_offset(b));
    ASSERT_OK(api_unlock(d, st));
    assert_non_null(at);
    return at;
}

static void fill(uint32_t *w, uint32_t seed)
{
    for (uint32_t i = 0; i < WORDS; i++)
        w[i] = seed * 2654435761u + i * 40503u;
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

static void test_read_and_copy_after_late_write(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_stream s = 0;
    ASSERT_OK(cubec_stream_new(d, &s));
    static uint32_t zeros[WORDS], want[WORDS];
    fill(want, 7);
    cubec_buffer b = {0}, copy = {0};
    ASSERT_OK(cubec_buffer_from(d, s, zeros, sizeof zeros, &b));
    ASSERT_OK(cubec_buffer_from(d, s, zeros, sizeof zeros, &copy));
    ASSERT_OK(cubec_sync(d, s));

    for (uint64_t value = 1; value <= 2; value++) {
        fill(want, (uint32_t)value + 10);
        late_writer w = {d, host_bytes(d, b), want, value, 0};
        assert_int_equal(pthread_create(&w.thread, NULL, write_late, &w), 0);
        uint64_t t0 = clock_now_ns();
        ASSERT_OK(api_stream_wait_inbound(d, s, value, NULL, 0, "test"));
        /* The caller goes on at once: the wait is the queue's. */
        uint64_t spent_ms = (clock_now_ns() - t0) / 1000000u;
        if (spent_ms >= LATE_MS / 2)
            fail_msg("the wait call took %llu ms", (unsigned long long)spent_ms);
        /* A host read (its wait covers the stream's inbound wait: no range names what the
         * other API wrote), then a copy on the queue: both after the late write. */
        expect_words(d, s, b, want, "read queued after the wait");
        ASSERT_OK(cubec_copy(d, s, b, 0, copy, 0, sizeof want));
        expect_words(d, s, copy, want, "copy queued after the wait");
        assert_int_equal(pthread_join(w.thread, NULL), 0);
    }
    ASSERT_OK(cubec_buffer_release(d, b));
    ASSERT_OK(cubec_buffer_release(d, copy));
    test_device_close(d);
}

static void test_refusals(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_stream s = 0;
    ASSERT_OK(cubec_stream_new(d, &s));
    ASSERT_ERROR(api_stream_wait_inbound(d, s, 0, NULL, 0, "test_wait"), CUBEC_INVALID_ARGUMENT,
                 "inbound timeline value 0");
    ASSERT_ERROR(api_stream_wait_inbound(d, (cubec_stream)12345, 1, NULL, 0, "test_wait"),
                 CUBEC_INVALID_ARGUMENT, "test_wait");
    /* A graph would replay the wait for a value passed long ago. */
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_ERROR(api_stream_wait_inbound(d, s, 1, NULL, 0, "test_wait"), CUBEC_GRAPH_STATE,
                 "test_wait: refused while stream");
    cubec_graph g = {0};
    cubec_status_free(cubec_graph_end(d, s, &g));
    if (g.id) ASSERT_OK(cubec_graph_destroy(d, s, g));
    /* The null backend exports nothing: CUDA could not import its inbound timeline. */
    int fd = 7;
    ASSERT_ERROR(api_inbound_export(d, "test_export", &fd), CUBEC_UNSUPPORTED, "test_export");
    assert_int_equal(fd, -1);
    ASSERT_ERROR(cubec_stream_wait_cuda(d, s, NULL), CUBEC_UNSUPPORTED,
                 "CUBEC_EXTERNAL_TIMELINE_FD");
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_and_copy_after_late_write),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
