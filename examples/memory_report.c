/* memory_report: where buffers live, and what the device's memory holds.
 *
 *   1. "weights" are created inside a PERSISTENT allocation window (cubec_memory_window_begin /
 * _pop): exact-fit slices of the persistent pool, kept through cleanups; cubec_memory_window_get
 * says which window is open;
 *   2. activations come from the ordinary pools, and are released;
 *   3. the memory report (cubec_memory_report_get) is checked against what the program did: the
 *      persistent pool holds exactly the weights' bytes, and the layout's pools hold nothing
 *      live after the release; cubec_memory_cleanup hands empty pages back to the driver; the
 *      same report as a table and as JSON (cubec_memory_report_table / _json, freed with
 *      cubec_string_free);
 *   4. the raw Vulkan buffer behind the weights (cubec_buffer_raw), for a program's own Vulkan
 *      code, held in place by a guard until cubec_guard_release.
 */
#include <cubec/cubec.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define WEIGHT_BYTES (3u << 20)     /* 3 MiB */
#define ACTIVATION_BYTES (1u << 20) /* 1 MiB each */
#define ACTIVATIONS 4

int main(void)
{
    cubec_device *dev;
    CUBEC_CHECK(cubec_device_open(NULL, &dev));
    const cubec_stream s = CUBEC_STREAM_CURRENT;

    /* Step 1: weights in the persistent pool. */
    CUBEC_CHECK(cubec_memory_window_begin(dev, s, CUBEC_MEMORY_MODE_PERSISTENT));
    cubec_memory_mode mode;
    uint32_t depth;
    CUBEC_CHECK(cubec_memory_window_get(dev, s, &mode, &depth));
    cubec_buffer weights;
    CUBEC_CHECK(cubec_buffer_create(dev, s, WEIGHT_BYTES, &weights));
    CUBEC_CHECK(cubec_fill(dev, s, weights, 0, WEIGHT_BYTES, 0x3f800000u)); /* 1.0f */
    CUBEC_CHECK(cubec_memory_window_end(dev, s));

    /* Step 2: short-lived buffers from the preset's pools. */
    cubec_buffer act[ACTIVATIONS];
    for (int i = 0; i < ACTIVATIONS; i++)
        CUBEC_CHECK(cubec_buffer_create(dev, s, ACTIVATION_BYTES, &act[i]));
    for (int i = 0; i < ACTIVATIONS; i++)
        CUBEC_CHECK(cubec_buffer_release(dev, act[i]));
    CUBEC_CHECK(cubec_sync(dev, s));

    /* Step 3: the report. bytes_in_use counts live buffers as requested. */
    static cubec_memory_report before = CUBEC_MEMORY_REPORT_INIT,
                               after = CUBEC_MEMORY_REPORT_INIT; /* large: not on the stack */
    CUBEC_CHECK(cubec_memory_report_get(dev, s, &before));
    CUBEC_CHECK(cubec_memory_cleanup(dev, s));
    CUBEC_CHECK(cubec_memory_report_get(dev, s, &after));
    char *table, *json;
    CUBEC_CHECK(cubec_memory_report_table(dev, &table));
    CUBEC_CHECK(cubec_memory_report_json(dev, &json));
    printf("%s", table);
    /* The persistent pool's line must be in the JSON as in the table. */
    const int json_ok = strstr(json, "\"persistent\"") != NULL;
    cubec_string_free(table);
    cubec_string_free(json);

    /* Step 4: the raw buffer. Waits for cubec's uses of the bytes, then guards them. */
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    cubec_guard guard;
    CUBEC_CHECK(cubec_buffer_raw(dev, s, weights, &raw, &guard));
    printf("weights: VkBuffer 0x%" PRIx64 " at offset %" PRIu64 ", %" PRIu64 " bytes, device "
           "address 0x%" PRIx64 "\n",
           raw.buffer, raw.offset, raw.size, raw.device_address);
    /* ...a program's own Vulkan commands on raw.buffer would go here... */
    CUBEC_CHECK(cubec_guard_release(dev, guard));

    /* The checks, against what this program allocated. persistent_memory "enabled" (the
     * default) honours the window; the other settings route differently (docs/memory.md). */
    const int honoured = strcmp(before.persistent_memory, "enabled") == 0;
    const int window_ok = mode == CUBEC_MEMORY_MODE_PERSISTENT && depth == 1;
    const int persistent_ok = !honoured || before.persistent.bytes_in_use == WEIGHT_BYTES;
    const int in_use_ok = before.bytes_in_use == WEIGHT_BYTES && after.bytes_in_use == WEIGHT_BYTES;
    const int raw_ok = raw.size == WEIGHT_BYTES;
    const int cleanup_ok = after.bytes_reserved <= before.bytes_reserved;
    const int ok = window_ok && persistent_ok && in_use_ok && raw_ok && cleanup_ok && json_ok;
    printf("memory_report: %s: %" PRIu64 " bytes in use (the weights' %u), persistent pool %" PRIu64
           ", reserved %" PRIu64 " -> %" PRIu64 " bytes after cleanup, budget %" PRIu64
           " MiB (%s)\n",
           ok ? "as allocated" : "MISMATCH", before.bytes_in_use, WEIGHT_BYTES,
           before.persistent.bytes_in_use, before.bytes_reserved, after.bytes_reserved,
           after.budget_bytes >> 20, after.budget_source);
    if (!ok) {
        fprintf(stderr,
                "memory_report: window %d, persistent %d, in use %d, raw %d, cleanup %d, json %d\n",
                window_ok, persistent_ok, in_use_ok, raw_ok, cleanup_ok, json_ok);
    }
    CUBEC_CHECK(cubec_buffer_release(dev, weights));
    cubec_device_close(dev);
    return !ok;
}
