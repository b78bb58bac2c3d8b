/* The text a lost device's error gets from VK_EXT_device_fault's report: every field of every
 * record shown, counts of records left out, an unterminated description kept in bounds, and a
 * short buffer cut cleanly. The expected strings are built here from the same records. */
#include "test_util.h"

#include "gpu/vulkan/vk_device_fault.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void test_report_names_every_record(void **state)
{
    (void)state;
    VkDeviceFaultAddressInfoEXT addr[2] = {
        {VK_DEVICE_FAULT_ADDRESS_TYPE_WRITE_INVALID_EXT, 0x7f0012345000ull, 0xfffull},
        {VK_DEVICE_FAULT_ADDRESS_TYPE_INSTRUCTION_POINTER_FAULT_EXT, 0x1000ull, 0}};
    VkDeviceFaultVendorInfoEXT vendor[1] = {{.vendorFaultCode = 13, .vendorFaultData = 0xabcdef}};
    snprintf(vendor[0].description, sizeof vendor[0].description, "Xid %d", 31);
    VkDeviceFaultInfoEXT info = {.sType = VK_STRUCTURE_TYPE_DEVICE_FAULT_INFO_EXT,
                                 .pAddressInfos = addr,
                                 .pVendorInfos = vendor};
    snprintf(info.description, sizeof info.description, "MMU fault");
    char got[1024], want[1024];
    vk_device_fault_format(&info, 2, 5, 1, 1, got, sizeof got);
    snprintf(want, sizeof want,
             "%s; a write to an invalid address 0x%" PRIx64 " (precision 0x%" PRIx64
             "); the faulting instruction 0x%" PRIx64 " (precision 0x0); %u more address "
             "records; vendor: %s (code 0x%" PRIx64 ", data 0x%" PRIx64 ")",
             info.description, (uint64_t)addr[0].reportedAddress,
             (uint64_t)addr[0].addressPrecision, (uint64_t)addr[1].reportedAddress, 5u - 2u,
             vendor[0].description, vendor[0].vendorFaultCode, vendor[0].vendorFaultData);
    assert_string_equal(got, want);
}

static void test_report_stays_in_bounds(void **state)
{
    (void)state;
    VkDeviceFaultInfoEXT info = {.sType = VK_STRUCTURE_TYPE_DEVICE_FAULT_INFO_EXT};
    /* A description that fills its array with no terminator. */
    memset(info.description, 'x', sizeof info.description);
    char got[VK_MAX_DESCRIPTION_SIZE + 64];
    vk_device_fault_format(&info, 0, 0, 0, 3, got, sizeof got);
    char want[VK_MAX_DESCRIPTION_SIZE + 64];
    memset(want, 'x', VK_MAX_DESCRIPTION_SIZE);
    snprintf(want + VK_MAX_DESCRIPTION_SIZE, sizeof want - VK_MAX_DESCRIPTION_SIZE,
             "; %u more vendor records", 3u);
    assert_string_equal(got, want);
    /* A short buffer: cut, terminated, a prefix of the full text. */
    char small[16];
    vk_device_fault_format(&info, 0, 0, 0, 3, small, sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, want, sizeof small - 1);
    /* No description: said so. */
    VkDeviceFaultInfoEXT empty = {.sType = VK_STRUCTURE_TYPE_DEVICE_FAULT_INFO_EXT};
    vk_device_fault_format(&empty, 0, 0, 0, 0, small, sizeof small);
    assert_string_equal(small, "no description");
}

/* Without the extension (get_info NULL) or for another code, the status passes unchanged. */
static void test_annotate_leaves_other_errors(void **state)
{
    (void)state;
    cubec_status st = status_make(CUBEC_INTERNAL, "vkQueueSubmit: VK_ERROR_UNKNOWN");
    cubec_status out = vk_device_fault_annotate(VK_NULL_HANDLE, NULL, st);
    assert_ptr_equal(out, st);
    assert_string_equal(cubec_status_message(out), "vkQueueSubmit: VK_ERROR_UNKNOWN");
    cubec_status_free(out);
    assert_null(vk_device_fault_annotate(VK_NULL_HANDLE, NULL, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_names_every_record),
        cmocka_unit_test(test_report_stays_in_bounds),
        cmocka_unit_test(test_annotate_leaves_other_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
