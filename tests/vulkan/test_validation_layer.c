/* The harness itself: a deliberate misuse of Vulkan below the API must reach the validation
 * callback, otherwise "no validation message" in the other tests would prove nothing. */
#include "test_util.h"

#include "gpu/vulkan/vk_gpu.h"
#include "server/device.h"

static void test_misuse_is_reported(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    unsigned before = test_validation_messages();
    /* A zero-size buffer is invalid usage (VUID-VkBufferCreateInfo-size-00912). */
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = 0,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    VkBuffer buf = VK_NULL_HANDLE;
    VkResult r = vkCreateBuffer(vk_gpu_device(d->gpu), &bci, NULL, &buf);
    if (r == VK_SUCCESS && buf) vkDestroyBuffer(vk_gpu_device(d->gpu), buf, NULL);
    assert_true(test_validation_messages() > before);
    cubec_device_close(d); /* not test_device_close: messages are expected here */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_misuse_is_reported)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
