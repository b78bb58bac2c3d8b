/* The CUDA driver loaded at run time (src/interop/cuda_driver.c): a missing library and one
 * lacking an entry point are refused by name; a driver whose cuInit finds no device leaves
 * interop unsupported with CUDA's own error named (stand-ins built from tests/interop/fake_cuda.c).
 * Where the real libcuda.so.1 loads and the cubec device is an NVIDIA GPU, the CUDA device with
 * the Vulkan device's UUID is found (what interop maps buffers through); elsewhere that test
 * reports itself skipped, by name. */
#include "interop/cuda_driver.h"
#include "test_util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vulkan/vulkan.h>

static void test_missing_library_is_named(void **state)
{
    (void)state;
    cuda_driver cu;
    ASSERT_ERROR(cuda_driver_load("/nonexistent/libcuda.so.1", &cu), CUBEC_UNSUPPORTED,
                 "cannot load /nonexistent/libcuda.so.1");
    assert_null(cu.init);
}

static void test_missing_entry_point_is_named(void **state)
{
    (void)state;
    cuda_driver cu;
    ASSERT_ERROR(cuda_driver_load(FAKE_CUDA_PARTIAL, &cu), CUBEC_UNSUPPORTED,
                 "has no cuDeviceGetCount");
    assert_null(cu.init); /* nothing half-loaded is left behind */
}

static void test_driver_without_device_is_unsupported(void **state)
{
    (void)state;
    cuda_driver cu;
    ASSERT_OK(cuda_driver_load(FAKE_CUDA_FULL, &cu));
    assert_non_null(cu.launch_kernel);
    /* cuda_driver_get loads once per process and keeps what it loaded: the stand-in is loaded in
     * a child process, so that the real driver stays loadable for the test after this one. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("CUBEC_CUDA_LIBRARY", FAKE_CUDA_FULL, 1);
        int bad = 0;
        for (int round = 0; round < 2; round++) { /* the second answer is the cached one */
            const cuda_driver *got = NULL;
            cubec_status st = cuda_driver_get(&got);
            if (!st || cubec_status_code(st) != CUBEC_UNSUPPORTED || got ||
                !strstr(cubec_status_message(st), "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable "
                                                  "device is detected)")) {
                fprintf(stderr, "round %d: %s\n", round, st ? cubec_status_message(st) : "ok");
                bad = 1;
            }
            cubec_status_free(st);
        }
        _exit(bad);
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
}

/* The Vulkan device's UUID, through the handles cubec hands out. */
static void vulkan_uuid(cubec_device *d, uint8_t uuid[VK_UUID_SIZE])
{
    cubec_vulkan_handles h = CUBEC_VULKAN_HANDLES_INIT;
    ASSERT_OK(cubec_device_get_vulkan_handles(d, &h));
    VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceProperties2 p = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                     .pNext = &id};
    vkGetPhysicalDeviceProperties2((VkPhysicalDevice)(uintptr_t)h.physical_device, &p);
    memcpy(uuid, id.deviceUUID, VK_UUID_SIZE);
}

static void test_real_driver_finds_the_vulkan_device(void **state)
{
    (void)state;
    cuda_driver probe;
    cubec_status st = cuda_driver_load("libcuda.so.1", &probe);
    if (st) {
        print_message("test_real_driver_finds_the_vulkan_device skipped: %s\n",
                      cubec_status_message(st));
        cubec_status_free(st);
        skip();
    }
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (info.vendor_id != 0x10de) {
        print_message("test_real_driver_finds_the_vulkan_device skipped: the device is %s, "
                      "not an NVIDIA GPU\n",
                      info.name);
        test_device_close(d);
        skip();
    }
    uint8_t want[VK_UUID_SIZE];
    vulkan_uuid(d, want);
    const cuda_driver *cu = NULL;
    ASSERT_OK(cuda_driver_get(&cu));
    int count = 0;
    assert_int_equal(cu->device_get_count(&count), 0);
    assert_true(count >= 1);
    int found = -1;
    for (int i = 0; i < count; i++) {
        cu_device dev = 0;
        cu_uuid uuid;
        assert_int_equal(cu->device_get(&dev, i), 0);
        assert_int_equal(cu->device_get_uuid(&uuid, dev), 0);
        if (memcmp(uuid.bytes, want, VK_UUID_SIZE) == 0) found = i;
    }
    if (found < 0) fail_msg("no CUDA device of %d has the Vulkan device's UUID", count);
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_library_is_named),
        cmocka_unit_test(test_missing_entry_point_is_named),
        cmocka_unit_test(test_driver_without_device_is_unsupported),
        cmocka_unit_test(test_real_driver_finds_the_vulkan_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
