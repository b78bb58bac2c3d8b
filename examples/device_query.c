/* device_query: what the machine offers, before and after opening a device.
 *
 *   0. check that the library is the version this program was built against (cubec_version);
 *   1. count the Vulkan devices and describe each without opening it (cubec_device_peek): the
 *      features cubec would enable, the cooperative-matrix shapes, the limits that shape kernels;
 *   2. open the default device and read what was enabled (cubec_device_get_info), the timing
 *      method profiles will use, the calling thread's stream and the Vulkan handles a program's
 *      own Vulkan code would use;
 *   3. check the opened device against its peeked description: the same name, and every enabled
 *      feature one that peek said the device has.
 *
 * `cubec info` prints the same facts; this is how a program asks for them. */
#include <cubec/cubec.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *type_name(cubec_device_type type)
{
    switch (type) {
    case CUBEC_DEVICE_TYPE_INTEGRATED: return "integrated GPU";
    case CUBEC_DEVICE_TYPE_DISCRETE: return "discrete GPU";
    case CUBEC_DEVICE_TYPE_VIRTUAL: return "virtual GPU";
    case CUBEC_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
    }
}

/* Prints the names of the feature bits set in `features`, e.g. "int8 int64 float16 ...". */
static void print_features(uint64_t features)
{
    printf("  features:");
    for (uint32_t bit = 0; bit < 64; bit++) {
        const uint64_t one = (uint64_t)1 << bit; /* features is 64 bits wide (docs/api.md) */
        if (features & one) printf(" %s", cubec_feature_name(one));
    }
    printf("\n");
}

/* A copy of each device's peeked description, so that the opened one can be checked against it
 * (cubec_device_info is large: static, not on the stack). */
#define MAX_DEVICES 16
static cubec_device_info peeked[MAX_DEVICES];

int main(void)
{
    /* Step 0: the library is the one this program was built for. The version is packed
     * (major << 16 | minor << 8 | patch); while the major version is 0 a different minor one is
     * incompatible too (cubec.h, cubec_version). */
    const uint32_t lib = cubec_version();
    printf("cubec %" PRIu32 ".%" PRIu32 ".%" PRIu32 " (built against %d.%d.%d)\n", lib >> 16,
           (lib >> 8) & 0xffu, lib & 0xffu, CUBEC_VERSION_MAJOR, CUBEC_VERSION_MINOR,
           CUBEC_VERSION_PATCH);
    if (lib >> 8 != (uint32_t)CUBEC_VERSION >> 8) {
        fprintf(stderr, "device_query: FAILED: the library's version differs from the header's\n");
        return 1;
    }

    /* Step 1: every device, unopened. Peeking creates no VkDevice: it is cheap. */
    uint32_t count = 0;
    CUBEC_CHECK(cubec_device_get_count(&count));
    printf("%" PRIu32 " Vulkan device(s)\n", count);
    for (uint32_t i = 0; i < count && i < MAX_DEVICES; i++) {
        cubec_device_info *info = &peeked[i];
        info->struct_size = sizeof *info; /* what CUBEC_DEVICE_INFO_INIT sets */
        CUBEC_CHECK(cubec_device_peek(i, info));
        printf("[%" PRIu32 "] %s (%s), %s, driver %s\n", i, info->name, type_name(info->type),
               info->unified_memory ? "unified memory" : "discrete memory", info->driver);
        printf("  max workgroup %" PRIu32 " invocations, %" PRIu32 " bytes of shared memory, "
               "%" PRIu32 " bytes of push constants, subgroups of %" PRIu32 "-%" PRIu32 "\n",
               info->max_workgroup_invocations, info->max_shared_memory_size,
               info->max_push_constants_size, info->min_subgroup_size, info->max_subgroup_size);
        print_features(info->features);
        /* Cooperative matrices (examples/gemm_f16.c uses them): one line per shape. */
        for (uint32_t s = 0; s < info->matrix_shape_count; s++) {
            const cubec_matrix_shape *m = &info->matrix_shapes[s];
            printf("  matrix %" PRIu32 "x%" PRIu32 "x%" PRIu32 ": %s x %s + %s -> %s%s\n", m->m,
                   m->n, m->k, cubec_matrix_type_name(m->a), cubec_matrix_type_name(m->b),
                   cubec_matrix_type_name(m->c), cubec_matrix_type_name(m->result),
                   m->nv ? " (NV)" : "");
        }
    }

    /* Step 2: the default device (CUBEC_DEVICE picks another by index or name). */
    cubec_device *dev;
    CUBEC_CHECK(cubec_device_open(NULL, &dev));
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    CUBEC_CHECK(cubec_device_get_info(dev, &info));
    cubec_timing timing;
    CUBEC_CHECK(cubec_profile_get_method(dev, &timing));
    cubec_stream mine;
    CUBEC_CHECK(cubec_stream_get_current(dev, &mine));
    printf("opened: %s; profiles use %s; this thread's stream is %" PRIu64 "\n", info.name,
           timing == CUBEC_TIMING_DEVICE ? "GPU timestamps" : "the host clock around syncs", mine);
    /* The Vulkan objects behind the device, for a program's own Vulkan code (docs/memory.md,
     * "Raw resources"); the null backend (CUBEC_BACKEND=null) has none. */
    cubec_vulkan_handles vk = CUBEC_VULKAN_HANDLES_INIT;
    cubec_status st = cubec_device_get_vulkan_handles(dev, &vk);
    if (st == NULL) {
        printf("Vulkan: VkDevice 0x%" PRIx64 ", API %" PRIu32 ".%" PRIu32 ", queue family %" PRIu32
               ", %s\n",
               vk.device, vk.api_version >> 22, (vk.api_version >> 12) & 0x3ffu, vk.queue_family,
               vk.program_queue ? "a queue of its own for the program" : "no spare queue");
    } else {
        printf("Vulkan handles: %s\n", cubec_status_message(st));
        cubec_status_free(st);
    }

    /* Step 3: the check. Find the peeked device of the same name (the default device is the best
     * one, not necessarily index 0). */
    int found = 0, ok = 0;
    for (uint32_t i = 0; i < count && i < MAX_DEVICES && !found; i++) {
        if (strcmp(peeked[i].name, info.name) != 0) continue;
        found = 1;
        /* Enabled features are those the device has, less any the configuration disables. */
        ok = (info.features & ~peeked[i].features) == 0 && info.type == peeked[i].type &&
             info.max_workgroup_invocations == peeked[i].max_workgroup_invocations;
    }
    cubec_device_close(dev);
    if (!found || !ok) {
        fprintf(stderr, "device_query: FAILED: the opened device '%s' %s\n", info.name,
                found ? "differs from its peeked description" : "is not among the peeked ones");
        return 1;
    }
    printf("device_query: %" PRIu32 " device(s) described; the opened one matches its "
           "description before opening (name, type, limits, features)\n",
           count);
    return 0;
}
