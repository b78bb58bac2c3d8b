/* A program's own Vulkan code on cubec's memory (cubec.h cubec_device_get_vulkan_handles,
 * docs/memory.md "Raw resources and the program's own Vulkan code"): the handles name cubec's
 * device (the raw VkBuffer's requirements and device address are read through them and agree with
 * cubec_buffer_raw), a program queue exists exactly where the family has a second queue, and on
 * such a device a fill the program records and submits itself lands in the buffer's bytes, and
 * only there, as cubec reads them back after the guard is released. The null backend refuses. */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#define WORDS 4096u
#define STREAM CUBEC_STREAM_CURRENT

typedef struct fixture {
    cubec_device *d;
    cubec_vulkan_handles h;
    VkDevice device;
    uint32_t family_queues;
} fixture;

static void fixture_open(fixture *f)
{
    f->d = test_device_open();
    f->h = (cubec_vulkan_handles)CUBEC_VULKAN_HANDLES_INIT;
    ASSERT_OK(cubec_device_get_vulkan_handles(f->d, &f->h));
    assert_true(f->h.instance != 0 && f->h.physical_device != 0 && f->h.device != 0);
    assert_true(f->h.api_version >= VK_API_VERSION_1_2);
    f->device = (VkDevice)(uintptr_t)f->h.device;
    VkPhysicalDevice physical = (VkPhysicalDevice)(uintptr_t)f->h.physical_device;
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, NULL);
    VkQueueFamilyProperties *qf = calloc(n, sizeof *qf);
    assert_non_null(qf);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, qf);
    assert_true(f->h.queue_family < n);
    assert_true(qf[f->h.queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT);
    f->family_queues = qf[f->h.queue_family].queueCount;
    free(qf);
}

/* Words i*7+seed: what each test writes and checks. */
static void pattern(uint32_t *w, uint32_t seed)
{
    for (uint32_t i = 0; i < WORDS; i++)
        w[i] = i * 7u + seed;
}

static void expect_words(cubec_device *d, cubec_buffer b, const uint32_t *want, const char *what)
{
    uint32_t got[WORDS];
    ASSERT_OK(cubec_read(d, STREAM, b, 0, got, sizeof got));
    for (uint32_t i = 0; i < WORDS; i++)
        if (got[i] != want[i]) fail_msg("%s: word %u is %#x, not %#x", what, i, got[i], want[i]);
}

/* The handles are cubec's device: Vulkan answers for the raw VkBuffer through them as
 * cubec_buffer_raw does, and the program queue is there exactly when the family has a second queue.
 */
static void test_handles_name_cubecs_device(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    if (f.family_queues >= 2) {
        assert_true(f.h.program_queue != 0);
        assert_int_equal(f.h.program_queue_index, 1);
    } else {
        assert_true(f.h.program_queue == 0);
        assert_int_equal(f.h.program_queue_index, 0);
    }
    uint32_t words[WORDS];
    pattern(words, 3);
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(f.d, STREAM, words, sizeof words, &b));
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    cubec_guard guard;
    ASSERT_OK(cubec_buffer_raw(f.d, STREAM, b, &raw, &guard));
    assert_int_equal(raw.size, sizeof words);
    VkBuffer vb = (VkBuffer)(uintptr_t)raw.buffer;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(f.device, vb, &req);
    assert_true(raw.offset + raw.size <= req.size);
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(f.d, &info));
    if (info.features & CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS) {
        VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
                                        .buffer = vb};
        assert_true(raw.device_address != 0);
        assert_int_equal(vkGetBufferDeviceAddress(f.device, &ai) + raw.offset, raw.device_address);
    }
    ASSERT_OK(cubec_guard_release(f.d, guard));
    expect_words(f.d, b, words, "the buffer after the program looked at it");
    ASSERT_OK(cubec_buffer_release(f.d, b));
    test_device_close(f.d);
}

/* The round trip of cubec.h: raw (cubec's writes finished), the program's fill submitted to the
 * program queue and waited for, the guard released, then cubec reads the fill, and the buffers
 * created around the filled one keep their bytes. A device whose family has one queue has no
 * program queue (the test above holds it to that), so the round trip needs one. */
static void test_program_fill_round_trip(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    if (!f.h.program_queue) {
        assert_true(f.family_queues < 2);
        test_device_close(f.d);
        return;
    }
    uint32_t before[WORDS], mid[WORDS], after[WORDS];
    pattern(before, 11);
    pattern(mid, 12);
    pattern(after, 13);
    cubec_buffer a, b, c;
    ASSERT_OK(cubec_buffer_from(f.d, STREAM, before, sizeof before, &a));
    ASSERT_OK(cubec_buffer_from(f.d, STREAM, mid, sizeof mid, &b));
    ASSERT_OK(cubec_buffer_from(f.d, STREAM, after, sizeof after, &c));
    /* Queued, not synced: the raw call orders it first. */
    ASSERT_OK(cubec_fill(f.d, STREAM, b, 0, sizeof mid, 0x01010101u));
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    cubec_guard guard;
    ASSERT_OK(cubec_buffer_raw(f.d, STREAM, b, &raw, &guard));

    /* The program's own Vulkan work: half the buffer filled with its pattern. */
    const uint32_t fill = 0xc0ffee11u;
    VkCommandPool pool;
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .queueFamilyIndex = f.h.queue_family};
    assert_int_equal(vkCreateCommandPool(f.device, &pci, NULL, &pool), VK_SUCCESS);
    VkCommandBuffer cb;
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    assert_int_equal(vkAllocateCommandBuffers(f.device, &cai, &cb), VK_SUCCESS);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    assert_int_equal(vkBeginCommandBuffer(cb, &bi), VK_SUCCESS);
    vkCmdFillBuffer(cb, (VkBuffer)(uintptr_t)raw.buffer, raw.offset, raw.size / 2, fill);
    assert_int_equal(vkEndCommandBuffer(cb), VK_SUCCESS);
    VkFence fence;
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    assert_int_equal(vkCreateFence(f.device, &fci, NULL, &fence), VK_SUCCESS);
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    assert_int_equal(vkQueueSubmit((VkQueue)(uintptr_t)f.h.program_queue, 1, &si, fence),
                     VK_SUCCESS);
    assert_int_equal(vkWaitForFences(f.device, 1, &fence, VK_TRUE, 20ull * 1000 * 1000 * 1000),
                     VK_SUCCESS);
    vkDestroyFence(f.device, fence, NULL);
    vkDestroyCommandPool(f.device, pool, NULL);
    ASSERT_OK(cubec_guard_release(f.d, guard));

    uint32_t want[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        want[i] = i < WORDS / 2 ? fill : 0x01010101u;
    expect_words(f.d, b, want, "the filled buffer");
    expect_words(f.d, a, before, "the buffer made before it");
    expect_words(f.d, c, after, "the buffer made after it");
    ASSERT_OK(cubec_buffer_release(f.d, a));
    ASSERT_OK(cubec_buffer_release(f.d, b));
    ASSERT_OK(cubec_buffer_release(f.d, c));
    test_device_close(f.d);
}

/* Refusals: NULL arguments name themselves and clear the output; the null backend has no Vulkan
 * objects. */
static void test_refusals(void **state)
{
    (void)state;
    cubec_vulkan_handles h = CUBEC_VULKAN_HANDLES_INIT;
    memset(&h, 0x5a, sizeof h);
    h.struct_size = sizeof h;
    ASSERT_ERROR(cubec_device_get_vulkan_handles(NULL, &h), CUBEC_INVALID_ARGUMENT,
                 "device is NULL");
    assert_true(h.device == 0 && h.program_queue == 0);
    cubec_device *d = test_device_open();
    ASSERT_ERROR(cubec_device_get_vulkan_handles(d, NULL), CUBEC_INVALID_ARGUMENT,
                 "out_handles is NULL");
    test_device_close(d);
    setenv("CUBEC_BACKEND", "null", 1);
    cubec_device *n = NULL;
    ASSERT_OK(cubec_device_open(NULL, &n));
    unsetenv("CUBEC_BACKEND");
    memset(&h, 0x5a, sizeof h);
    h.struct_size = sizeof h;
    ASSERT_ERROR(cubec_device_get_vulkan_handles(n, &h), CUBEC_UNSUPPORTED, "null backend");
    assert_true(h.device == 0 && h.instance == 0);
    cubec_device_close(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handles_name_cubecs_device),
        cmocka_unit_test(test_program_fill_round_trip),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
