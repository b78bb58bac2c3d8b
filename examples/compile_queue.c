/* compile_queue: many kernel variants compiled in the background, a dry run that checks launches
 * without running them, and profiles.
 *
 *   1. four variants of one kernel (a define, SCALE = 1..4) are queued for compilation
 *      (cubec_kernel_queue returns at once; worker threads compile them in parallel); the program
 *      waits for one (cubec_kernel_wait), then for all (cubec_kernel_compile_queued);
 *      the metadata block's members are looked up by name (cubec_kernel_info_field_find) to fill
 *      the launch's info bytes;
 *   2. a dry run (cubec_dry_run_begin / _end): launches of every variant are checked and their
 *      pipelines built, but nothing runs, so the output buffers keep the pattern a fill wrote;
 *      inside it a window of real runs (cubec_run_window_begin with CUBEC_RUN_REAL) runs one
 *      variant for real, as a tuner measuring inside a dry pass would;
 *   3. the real pass, timed by a profile; a second profile is dropped (cubec_profile_abandon);
 *   4. every output is checked against the CPU: the dry-run state and the real results.
 */
#include <cubec/cubec.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char SCALE_GLSL[] = "#version 450\n"
                                 "layout(local_size_x = 64) in;\n"
                                 "layout(binding = 0) writeonly buffer Out { uint v[]; };\n"
                                 "CUBEC_INFO(uint n;)\n"
                                 "void main()\n"
                                 "{\n"
                                 "    uint i = gl_GlobalInvocationID.x;\n"
                                 "    if (i < info.n) v[i] = i * SCALE;\n"
                                 "}\n";

#define VARIANTS 4
#define N 1024u
#define PATTERN 0xdeadbeefu /* what the fill writes; a dry-run launch must leave it */

static uint32_t host[N];

/* The number of elements of out[k] that differ from what is expected: k * i for a variant that
 * ran (SCALE = k + 1), PATTERN for one that did not. */
static uint32_t mismatches(cubec_device *dev, cubec_buffer out, uint32_t scale, int ran)
{
    CUBEC_CHECK(cubec_read(dev, CUBEC_STREAM_CURRENT, out, 0, host, sizeof host));
    uint32_t bad = 0;
    for (uint32_t i = 0; i < N; i++)
        bad += host[i] != (ran ? i * scale : PATTERN);
    return bad;
}

int main(void)
{
    cubec_device *dev;
    CUBEC_CHECK(cubec_device_open(NULL, &dev));
    const cubec_stream s = CUBEC_STREAM_CURRENT;

    /* Step 1: queue the variants. Each define makes a different kernel (its own identity and
     * cache entry); the strings must live only during the call. */
    static const char *const scale_text[VARIANTS] = {"1u", "2u", "3u", "4u"};
    cubec_kernel k[VARIANTS];
    for (int v = 0; v < VARIANTS; v++) {
        const cubec_define def = {.name = "SCALE", .value = scale_text[v]};
        CUBEC_CHECK(
            cubec_kernel_queue(dev,
                               &(cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc),
                                                    .name = "scale",
                                                    .glsl = SCALE_GLSL,
                                                    .defines = &def,
                                                    .define_count = 1},
                               &k[v]));
    }
    CUBEC_CHECK(cubec_kernel_wait(dev, k[0]));     /* this one alone */
    CUBEC_CHECK(cubec_kernel_compile_queued(dev)); /* and every other */

    cubec_buffer out[VARIANTS];
    for (int v = 0; v < VARIANTS; v++) {
        CUBEC_CHECK(cubec_buffer_create(dev, s, sizeof host, &out[v]));
        CUBEC_CHECK(cubec_fill(dev, s, out[v], 0, sizeof host, PATTERN));
    }
    /* The metadata block, filled by name: cubec reflects CUBEC_INFO's members (name, offset,
     * type), so the info bytes need not mirror the block with a C struct whose padding may differ
     * (docs/kernels.md, "Filling the block by name"). */
    cubec_kernel_info kinfo = CUBEC_KERNEL_INFO_INIT;
    CUBEC_CHECK(cubec_kernel_get_info(dev, k[0], &kinfo));
    for (uint32_t f = 0; f < kinfo.info_field_count; f++) {
        cubec_info_field field = CUBEC_INFO_FIELD_INIT;
        CUBEC_CHECK(cubec_kernel_get_info_field(dev, k[0], f, &field));
        printf("info member %" PRIu32 ": '%s' at offset %" PRIu32 ", %" PRIu32 " bytes\n", f,
               field.name, field.offset, field.size);
    }
    cubec_info_field n_field = CUBEC_INFO_FIELD_INIT;
    CUBEC_CHECK(cubec_kernel_find_info_field(dev, k[0], "n", &n_field));
    uint8_t info_bytes[16] = {0};
    const int layout_ok = n_field.type == CUBEC_INFO_UINT32 && n_field.offset == 0 &&
                          kinfo.info_size == sizeof(uint32_t);
    if (!layout_ok) {
        fprintf(stderr,
                "compile_queue: FAILED: CUBEC_INFO(uint n;) reflected as %" PRIu32
                " bytes with n at offset %" PRIu32 "\n",
                kinfo.info_size, n_field.offset);
        return 1;
    }
    const uint32_t n = N;
    memcpy(info_bytes + n_field.offset, &n, sizeof n);
    cubec_launch_desc launch[VARIANTS];
    for (int v = 0; v < VARIANTS; v++) {
        launch[v] = (cubec_launch_desc){.struct_size = sizeof(cubec_launch_desc),
                                        .kernel = k[v],
                                        .buffers = &out[v],
                                        .buffer_count = 1,
                                        .info = info_bytes,
                                        .info_size = kinfo.info_size,
                                        .groups = {N / 64, 1, 1}};
    }

    /* Step 2: the dry run. Every launch is checked as usual (a wrong info size would fail here),
     * then dropped. Variant 0 runs for real inside a window of its own. */
    CUBEC_CHECK(cubec_dry_run_begin());
    CUBEC_CHECK(cubec_run_window_begin(dev, s, CUBEC_RUN_REAL));
    CUBEC_CHECK(cubec_launch(dev, s, &launch[0]));
    CUBEC_CHECK(cubec_run_window_end(dev, s));
    for (int v = 1; v < VARIANTS; v++)
        CUBEC_CHECK(cubec_launch(dev, s, &launch[v]));
    CUBEC_CHECK(cubec_dry_run_end());
    uint32_t dry_bad = mismatches(dev, out[0], 1, 1);
    for (int v = 1; v < VARIANTS; v++)
        dry_bad += mismatches(dev, out[v], (uint32_t)v + 1, 0);

    /* Step 3: the real pass, profiled. */
    cubec_profile whole, dropped;
    CUBEC_CHECK(cubec_profile_begin(dev, s, &whole));
    CUBEC_CHECK(cubec_profile_begin(dev, s, &dropped));
    for (int v = 0; v < VARIANTS; v++)
        CUBEC_CHECK(cubec_launch(dev, s, &launch[v]));
    CUBEC_CHECK(cubec_profile_abandon(dev, s, dropped)); /* no measurement, no wait */
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    CUBEC_CHECK(cubec_profile_end(dev, s, whole, &r));

    /* Step 4: the real results. */
    uint32_t real_bad = 0;
    for (int v = 0; v < VARIANTS; v++)
        real_bad += mismatches(dev, out[v], (uint32_t)v + 1, 1);
    printf("compile_queue: %d variants compiled in the queue; the dry run left %d outputs "
           "untouched and ran 1 for real (%s); the real pass (%.3f ms of %s time) %s\n",
           VARIANTS, VARIANTS - 1, dry_bad ? "MISMATCH" : "as expected",
           (double)r.duration_ns * 1e-6, r.method == CUBEC_TIMING_DEVICE ? "GPU" : "host",
           real_bad ? "MISMATCHES the CPU" : "matches the CPU");

    for (int v = 0; v < VARIANTS; v++) {
        CUBEC_CHECK(cubec_buffer_release(dev, out[v]));
        CUBEC_CHECK(cubec_kernel_destroy(dev, k[v]));
    }
    cubec_device_close(dev);
    return dry_bad != 0 || real_bad != 0;
}
