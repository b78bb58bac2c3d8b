/* The Vulkan backend's flush and invalidate of mapped ranges (gpu_mem_flush / gpu_mem_invalidate,
 * vk_gpu.c), with the validation layer on: lavapipe's memory is coherent, so the server never
 * calls them there; this test marks mappings non-coherent itself (mem->noncoherent, which the
 * backend sets from the memory type) to run vkFlushMappedMemoryRanges and
 * vkInvalidateMappedMemoryRanges on ranges at odd offsets and sizes, at the start, in the middle
 * and up to the end of a buffer whose size is not a multiple of nonCoherentAtomSize. Any
 * validation message (a range not widened to whole atoms, or past the allocation) fails it, and
 * the bytes that went through a device copy are compared with what the host wrote. */
#include "test_util.h"

#include "gpu/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned messages;

static void on_validation(void *user, const char *message)
{
    (void)user;
    messages++;
    fprintf(stderr, "validation: %s\n", message);
}

enum { SIZE = 1000 }; /* not a multiple of any atom size */

static void test_flush_and_invalidate_ranges(void **state)
{
    (void)state;
    const char *v = getenv("CUBEC_TEST_VALIDATION");
    gpu_open_desc desc = {.validation = !(v && v[0] == '0'), .on_validation = on_validation};
    gpu *g = NULL;
    ASSERT_OK(gpu_open(GPU_BACKEND_vulkan, &desc, &g));
    gpu_mem *up = NULL, *back = NULL;
    ASSERT_OK(gpu_mem_alloc(g, GPU_MEM_UPLOAD, SIZE, &up));
    ASSERT_OK(gpu_mem_alloc(g, GPU_MEM_READBACK, SIZE, &back));
    up->noncoherent = back->noncoherent = 1;

    unsigned char ref[SIZE];
    for (int i = 0; i < SIZE; i++)
        ref[i] = (unsigned char)(i * 7 + 3);
    memcpy(up->mapped, ref, SIZE);
    static const uint64_t ranges[][2] = {{0, 1}, {3, 5}, {61, 70}, {500, 1}, {990, 10}, {0, SIZE}};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        gpu_mem_flush(g, up, ranges[i][0], ranges[i][1]);

    gpu_cmd *c = NULL;
    ASSERT_OK(g->ops->cmd_create(g, GPU_CMD_ONCE, 4, &c));
    ASSERT_OK(g->ops->cmd_begin(g, c));
    gpu_cmd_copy(c, up, 0, back, 0, SIZE);
    gpu_cmd_barrier(c, GPU_STAGE_TRANSFER, GPU_ACCESS_TRANSFER_WRITE, GPU_STAGE_HOST,
                    GPU_ACCESS_HOST_READ);
    ASSERT_OK(g->ops->cmd_end(g, c));
    gpu_submit_item item = {c, 1};
    ASSERT_OK(gpu_submit(g, &item, 1));
    ASSERT_OK(g->ops->timeline_wait(g, 1, 0));
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        gpu_mem_invalidate(g, back, ranges[i][0], ranges[i][1]);
    assert_memory_equal(back->mapped, ref, SIZE);

    g->ops->cmd_destroy(g, c);
    gpu_mem_free(g, up);
    gpu_mem_free(g, back);
    gpu_close(g);
    assert_int_equal(messages, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flush_and_invalidate_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
