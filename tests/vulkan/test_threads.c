/* Several threads share one device: each creates its buffers, launches, copies and reads back,
 * while others do the same. Results are checked per thread against a CPU reference; the build
 * with -DCUBEC_TSAN=ON runs this under ThreadSanitizer. */
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char add_src[] = "#version 450\n"
                              "layout(local_size_x = 64) in;\n"
                              "layout(std430, binding = 0) buffer B { uint v[]; };\n"
                              "CUBEC_INFO(uint n; uint add;)\n"
                              "void main() {\n"
                              "  uint i = gl_GlobalInvocationID.x;\n"
                              "  if (i < info.n) v[i] += info.add;\n"
                              "}\n";

enum { THREADS = 4, WORDS = 4096, ROUNDS = 40 };

typedef struct worker {
    cubec_device *d;
    cubec_kernel k;
    uint32_t id;
    int failed;
    char why[256];
} worker;

static void *run(void *arg)
{
    worker *w = arg;
    uint32_t *host = malloc(WORDS * 4), *ref = malloc(WORDS * 4);
    for (uint32_t i = 0; i < WORDS; i++)
        host[i] = ref[i] = i * (w->id + 1);
    cubec_buffer b = {0}, c = {0};
    cubec_status st = cubec_buffer_from(w->d, 0, host, WORDS * 4, &b);
    if (!st) st = cubec_buffer_create(w->d, 0, WORDS * 4, &c);
    for (uint32_t r = 0; r < ROUNDS && !st; r++) {
        uint32_t info[2] = {WORDS, w->id + r};
        cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                                .kernel = w->k,
                                .buffers = &b,
                                .buffer_count = 1,
                                .info = info,
                                .info_size = sizeof info,
                                .groups = {WORDS / 64, 1, 1}};
        st = cubec_launch(w->d, 0, &ld);
        for (uint32_t i = 0; i < WORDS; i++)
            ref[i] += w->id + r;
        if (!st && r % 8 == 7) st = cubec_read(w->d, 0, b, 0, host, WORDS * 4);
    }
    if (!st) st = cubec_copy(w->d, 0, b, 0, c, 0, WORDS * 4);
    if (!st) st = cubec_read(w->d, 0, c, 0, host, WORDS * 4);
    if (st) {
        w->failed = 1;
        snprintf(w->why, sizeof w->why, "%s", cubec_status_message(st));
        cubec_status_free(st);
    } else if (memcmp(host, ref, WORDS * 4) != 0) {
        w->failed = 1;
        snprintf(w->why, sizeof w->why, "thread %u read wrong values", w->id);
    }
    cubec_status_free(cubec_buffer_release(w->d, b));
    cubec_status_free(cubec_buffer_release(w->d, c));
    free(host);
    free(ref);
    return NULL;
}

static void test_threads_share_a_device(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k;
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "add", .glsl = add_src};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    pthread_t t[THREADS];
    worker w[THREADS];
    for (uint32_t i = 0; i < THREADS; i++) {
        w[i] = (worker){.d = d, .k = k, .id = i};
        assert_int_equal(pthread_create(&t[i], NULL, run, &w[i]), 0);
    }
    for (uint32_t i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (uint32_t i = 0; i < THREADS; i++)
        if (w[i].failed) fail_msg("worker %u: %s", i, w[i].why);
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, 0, &r));
    assert_int_equal(r.allocations, 0);
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads_share_a_device)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
