/* A seeded random run of the public API on lavapipe with the validation layer on, checked
 * against the host model of tests/common/api_model.c (the model's head comment says what it
 * checks). Kernels run here, so launches' outputs are compared too. The backend is the one
 * CUBEC_BACKEND names: Vulkan, or WebGPU (test_random_api_webgpu), where the model expects the
 * refusals the device's capabilities say (api_model.c, device_learn).
 *
 * CUBEC_FUZZ_SECONDS (default 5; MIN_STEPS steps at least) bounds the run, or CUBEC_FUZZ_STEPS
 * steps exactly (a failure prints both, with the seed, to replay it); CUBEC_FUZZ_SEED sets the
 * seed (printed at the start); CUBEC_FUZZ_TRACE=1 prints every call. */
#include "api_model.h"
#include "test_util.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The least steps a run bounded by time takes (api_model_config.min_steps). */
#define MIN_STEPS 300u

static void on_model_failure(const char *message)
{
    fail_msg("%s", message);
}

static void test_random_api(void **state)
{
    (void)state;
    /* Keep lavapipe and the validation layer loaded for LeakSanitizer (as test_device_open). */
    dlopen("libvulkan_lvp.so", RTLD_NOW | RTLD_NODELETE);
    dlopen("libVkLayer_khronos_validation.so", RTLD_NOW | RTLD_NODELETE);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    const char *seed = getenv("CUBEC_FUZZ_SEED"), *secs = getenv("CUBEC_FUZZ_SECONDS");
    const char *steps = getenv("CUBEC_FUZZ_STEPS"), *trace = getenv("CUBEC_FUZZ_TRACE");
    api_model_config c = {
        .backend = NULL, /* the one CUBEC_BACKEND names: vulkan, or webgpu (<name>_webgpu) */
        .seed = seed && *seed ? strtoull(seed, NULL, 0)
                              : (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec,
        .max_steps = steps && *steps ? strtoull(steps, NULL, 0) : 0,
        .trace = trace && *trace == '1',
        .print_replay = 1,
        .fail = on_model_failure,
    };
    c.seconds = c.max_steps ? 0 : secs && *secs ? strtod(secs, NULL) : 5.0;
    /* Whatever the time: with two busy loops and three runs at once on two cores the webgpu
     * backend took as few as 33 steps in 5 s (410 on average; opening a device costs it ~1 s
     * alone, a read a submission and a map), and 3 runs in 116 compared no byte (the check
     * below); unloaded it takes 1000 to 2000. */
    c.min_steps = c.max_steps ? 0 : MIN_STEPS;
    printf("    fuzz: CUBEC_FUZZ_SEED=%" PRIu64 " (%s)\n", c.seed,
           c.max_steps ? "a fixed number of steps" : "bounded by time");
    fflush(stdout);
    api_model_stats st;
    api_model_use_spirv(&c);
    api_model_run(&c, &st);
    printf("    fuzz: seed %" PRIu64 ", %" PRIu64 " steps (rerun: CUBEC_FUZZ_SEED=%" PRIu64
           " CUBEC_FUZZ_STEPS=%" PRIu64 "): %" PRIu64 " calls, %" PRIu64
           " refused as expected, %" PRIu64 " reads compared (%" PRIu64 " bytes), %" PRIu64
           " faults armed (%" PRIu64 " fired), %" PRIu64 " graphs captured, %" PRIu64
           " replays, %" PRIu64 " reopens\n",
           c.seed, st.steps, c.seed, st.steps, st.calls, st.invalid_calls, st.reads_compared,
           st.bytes_compared, st.faults_armed, st.faults_fired, st.captures, st.replays,
           st.reopens);
    /* A run that compared nothing would pass without testing anything. */
    assert_true(st.reads_compared > 0 && st.bytes_compared > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_api),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
