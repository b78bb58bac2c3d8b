/* The driver's report of a lost device (see vk_device_fault.h). */
#include "gpu/vulkan/vk_device_fault.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vk_device_fault_supported(VkPhysicalDevice physical)
{
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(physical, NULL, &n, NULL) != VK_SUCCESS || !n)
        return 0;
    VkExtensionProperties *p = calloc(n, sizeof *p);
    if (!p) return 0;
    int found = 0;
    if (vkEnumerateDeviceExtensionProperties(physical, NULL, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            found |= strcmp(p[i].extensionName, VK_EXT_DEVICE_FAULT_EXTENSION_NAME) == 0;
    free(p);
    if (!found) return 0;
    VkPhysicalDeviceFaultFeaturesEXT fault = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FAULT_FEATURES_EXT};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &fault};
    vkGetPhysicalDeviceFeatures2(physical, &f2);
    return fault.deviceFault == VK_TRUE;
}

static const char *address_kind(VkDeviceFaultAddressTypeEXT t)
{
    switch (t) {
    case VK_DEVICE_FAULT_ADDRESS_TYPE_NONE_EXT: return "an address";
    case VK_DEVICE_FAULT_ADDRESS_TYPE_READ_INVALID_EXT: return "a read of an invalid address";
    case VK_DEVICE_FAULT_ADDRESS_TYPE_WRITE_INVALID_EXT: return "a write to an invalid address";
    case VK_DEVICE_FAULT_ADDRESS_TYPE_EXECUTE_INVALID_EXT: return "execution at an invalid address";
    case VK_DEVICE_FAULT_ADDRESS_TYPE_INSTRUCTION_POINTER_UNKNOWN_EXT:
        return "an instruction pointer";
    case VK_DEVICE_FAULT_ADDRESS_TYPE_INSTRUCTION_POINTER_INVALID_EXT:
        return "an invalid instruction pointer";
    case VK_DEVICE_FAULT_ADDRESS_TYPE_INSTRUCTION_POINTER_FAULT_EXT:
        return "the faulting instruction";
    default: return "an address of unknown kind";
    }
}

/* Appends to out[*at..cap), keeping the string terminated; stops quietly when full. */
static void put(char *out, size_t cap, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *out, size_t cap, size_t *at, const char *fmt, ...)
{
    if (*at + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *at, cap - *at, fmt, ap);
    va_end(ap);
    if (n > 0) *at = *at + (size_t)n < cap ? *at + (size_t)n : cap - 1;
}

void vk_device_fault_format(const VkDeviceFaultInfoEXT *info, uint32_t shown_addresses,
                            uint32_t total_addresses, uint32_t shown_vendor, uint32_t total_vendor,
                            char *out, size_t cap)
{
    if (!cap) return;
    out[0] = 0;
    size_t at = 0;
    /* The description is a fixed array the driver fills: never trust it to be terminated. */
    int len = (int)strnlen(info->description, VK_MAX_DESCRIPTION_SIZE);
    if (len)
        put(out, cap, &at, "%.*s", len, info->description);
    else
        put(out, cap, &at, "no description");
    for (uint32_t i = 0; i < shown_addresses && info->pAddressInfos; i++) {
        const VkDeviceFaultAddressInfoEXT *a = &info->pAddressInfos[i];
        put(out, cap, &at, "; %s 0x%" PRIx64 " (precision 0x%" PRIx64 ")",
            address_kind(a->addressType), (uint64_t)a->reportedAddress,
            (uint64_t)a->addressPrecision);
    }
    if (total_addresses > shown_addresses)
        put(out, cap, &at, "; %u more address records", total_addresses - shown_addresses);
    for (uint32_t i = 0; i < shown_vendor && info->pVendorInfos; i++) {
        const VkDeviceFaultVendorInfoEXT *v = &info->pVendorInfos[i];
        put(out, cap, &at, "; vendor: %.*s (code 0x%" PRIx64 ", data 0x%" PRIx64 ")",
            (int)strnlen(v->description, VK_MAX_DESCRIPTION_SIZE), v->description,
            v->vendorFaultCode, v->vendorFaultData);
    }
    if (total_vendor > shown_vendor)
        put(out, cap, &at, "; %u more vendor records", total_vendor - shown_vendor);
}

cubec_status vk_device_fault_annotate(VkDevice device, PFN_vkGetDeviceFaultInfoEXT get_info,
                                      cubec_status lost)
{
    if (!get_info || cubec_status_code(lost) != CUBEC_DEVICE_LOST) return lost;
    VkDeviceFaultCountsEXT counts = {.sType = VK_STRUCTURE_TYPE_DEVICE_FAULT_COUNTS_EXT};
    if (get_info(device, &counts, NULL) != VK_SUCCESS) return lost;
    VkDeviceFaultAddressInfoEXT addresses[VK_DEVICE_FAULT_MAX_RECORDS];
    VkDeviceFaultVendorInfoEXT vendor[VK_DEVICE_FAULT_MAX_RECORDS];
    uint32_t total_addresses = counts.addressInfoCount, total_vendor = counts.vendorInfoCount;
    /* Ask for at most what fits; the binary dump is for vendor tools, not for a message. */
    if (counts.addressInfoCount > VK_DEVICE_FAULT_MAX_RECORDS)
        counts.addressInfoCount = VK_DEVICE_FAULT_MAX_RECORDS;
    if (counts.vendorInfoCount > VK_DEVICE_FAULT_MAX_RECORDS)
        counts.vendorInfoCount = VK_DEVICE_FAULT_MAX_RECORDS;
    counts.vendorBinarySize = 0;
    VkDeviceFaultInfoEXT info = {.sType = VK_STRUCTURE_TYPE_DEVICE_FAULT_INFO_EXT,
                                 .pAddressInfos = counts.addressInfoCount ? addresses : NULL,
                                 .pVendorInfos = counts.vendorInfoCount ? vendor : NULL};
    VkResult r = get_info(device, &counts, &info);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return lost;
    char report[1024];
    vk_device_fault_format(&info, counts.addressInfoCount, total_addresses, counts.vendorInfoCount,
                           total_vendor, report, sizeof report);
    cubec_status annotated = status_make(CUBEC_DEVICE_LOST, "%s (the driver's fault report: %s)",
                                         cubec_status_message(lost), report);
    cubec_status_free(lost);
    return annotated;
}
