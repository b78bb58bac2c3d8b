/* Names of the optional device features (see features.h). */
#include "base/features.h"

#include <string.h>
#include <strings.h>

typedef struct feature_entry {
    uint32_t bit;
    const char *name, *vulkan;
} feature_entry;

static const feature_entry features[] = {
#define FEATURE_ENTRY(bit, name, vulkan) {(uint32_t)(bit), name, vulkan},
    FEATURE_LIST(FEATURE_ENTRY)
#undef FEATURE_ENTRY
};

static const feature_entry *find_bit(uint32_t bit)
{
    for (size_t i = 0; i < sizeof features / sizeof features[0]; i++)
        if (features[i].bit == bit) return &features[i];
    return NULL;
}

const char *cubec_feature_name(uint64_t feature)
{
    if (feature >> 32) return "unknown"; /* no feature has a bit there yet */
    const feature_entry *e = find_bit((uint32_t)feature);
    return e ? e->name : "unknown";
}

const char *feature_vulkan_name(uint32_t bit)
{
    const feature_entry *e = find_bit(bit);
    return e ? e->vulkan : NULL;
}

uint32_t feature_from_name(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof features / sizeof features[0]; i++)
        if (strlen(features[i].name) == len && strncasecmp(features[i].name, name, len) == 0)
            return features[i].bit;
    return 0;
}

const char *cubec_matrix_type_name(cubec_matrix_type type)
{
    static const char *const names[] = {"other",  "float16", "float32", "float64", "bfloat16",
                                        "sint8",  "sint16",  "sint32",  "sint64",  "uint8",
                                        "uint16", "uint32",  "uint64"};
    unsigned i = (unsigned)type;
    return i < sizeof names / sizeof names[0] ? names[i] : "other";
}
