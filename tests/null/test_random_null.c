/* Seeded random runs of the public API on the null backend (host memory, copies and fills
 * carried out exactly, no kernels run, submissions completed after a random delay), checked
 * against the host model of tests/common/api_model.c (the model's head comment says what it
 * checks). Fast enough for thousands of steps a second, so it runs many short episodes, each on
 * a fresh device and from a generator of its own: an episode replays alone.
 *
 * CUBEC_FUZZ_SECONDS (default 3) bounds the run; CUBEC_FUZZ_SEED sets the seed (printed at the
 * start, and with any failure); CUBEC_FUZZ_EPISODE=n runs only episode n of that seed;
 * CUBEC_FUZZ_TRACE=1 prints every call. */
#include "api_model.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t run_seed;
static unsigned run_episode;

static void on_model_failure(const char *message)
{
    printf("  replay: CUBEC_FUZZ_SEED=0x%016" PRIx64 " CUBEC_FUZZ_EPISODE=%u CUBEC_FUZZ_TRACE=1\n",
           run_seed, run_episode);
    fail_msg("seed 0x%016" PRIx64 " episode %u: %s", run_seed, run_episode, message);
}

static void test_random_api_sequence(void **state)
{
    (void)state;
    const char *seed_env = getenv("CUBEC_FUZZ_SEED"), *secs = getenv("CUBEC_FUZZ_SECONDS");
    const char *only = getenv("CUBEC_FUZZ_EPISODE"), *trace = getenv("CUBEC_FUZZ_TRACE");
    run_seed = seed_env && *seed_env
                   ? strtoull(seed_env, NULL, 0)
                   : mix((uint64_t)(seconds_now() * 1e9) ^ ((uint64_t)getpid() << 32));
    double seconds = secs && *secs ? strtod(secs, NULL) : 3.0;
    printf("test_random_null: seed 0x%016" PRIx64 " (CUBEC_FUZZ_SEED to replay), %.1f s\n",
           run_seed, seconds);
    fflush(stdout);
    double start = seconds_now();
    api_model_stats total = {0};
    unsigned episodes = 0;
    for (unsigned e = only ? (unsigned)strtoul(only, NULL, 0) : 0;; e++) {
        run_episode = e;
        uint64_t episode_seed = mix(run_seed ^ mix(e + 1));
        api_model_config c = {.backend = "null",
                              .seed = episode_seed,
                              .max_steps = 200 + episode_seed % 1200,
                              .trace = trace && *trace == '1',
                              .fail = on_model_failure};
        api_model_stats st;
        api_model_use_spirv(&c);
        api_model_run(&c, &st);
        total.steps += st.steps;
        total.calls += st.calls;
        total.reads_compared += st.reads_compared;
        total.bytes_compared += st.bytes_compared;
        total.faults_fired += st.faults_fired;
        total.replays += st.replays;
        episodes++;
        if (only || seconds_now() - start >= seconds) break;
    }
    printf("test_random_null: %u episodes, %" PRIu64 " steps, %" PRIu64 " calls, %" PRIu64
           " reads compared (%" PRIu64 " bytes), %" PRIu64 " faults fired, %" PRIu64 " replays\n",
           episodes, total.steps, total.calls, total.reads_compared, total.bytes_compared,
           total.faults_fired, total.replays);
    /* A run that compared nothing would pass without testing anything. */
    assert_true(total.reads_compared > 0 && total.bytes_compared > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_api_sequence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
