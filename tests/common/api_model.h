/* The one host model of the public API (api_model.c): random sequences of every public call of
 * cubec.h, each checked against a model of buffers' bytes and failures, streams, graphs,
 * profiles, faults, host memory, windows, raw resources, dry runs, the compile queue and tuners.
 * The randomized testers are thin generators over it: a seeded run on lavapipe
 * (tests/fuzz/test_random_api.c), a seeded run on the null backend
 * (tests/null/test_random_null.c), and libFuzzer, whose input bytes make the choices
 * (fuzz/fuzz_api.c). */
#ifndef CUBEC_TEST_API_MODEL_H
#define CUBEC_TEST_API_MODEL_H

#include "cubec/cubec.h"

#include <stddef.h>
#include <stdint.h>

typedef struct api_model_config {
    /* "null", "vulkan" or "webgpu" (the validation layer on unless CUBEC_TEST_VALIDATION=0), or
     * NULL: the one CUBEC_BACKEND names (vulkan by default) */
    const char *backend;
    uint64_t seed; /* the generator's seed; printed in every failure */
    /* libFuzzer: when set, the choices come from these bytes and the run ends with them */
    const uint8_t *bytes;
    size_t byte_count;
    double seconds;     /* bound by time (0: none) */
    uint64_t max_steps; /* bound by steps (0: none); a failure prints the count to replay */
    /* With `seconds`: the least steps taken however long they take, so that a slow backend on a
     * busy machine still tests something (0: none) */
    uint64_t min_steps;
    int trace;        /* print every call */
    int print_replay; /* a failure prints CUBEC_FUZZ_SEED and CUBEC_FUZZ_STEPS to replay it */
    /* Optional: the produce, consume and step kernels as SPIR-V words (api_model_use_spirv);
     * NULL: their GLSL, compiled by shaderc at every device open. */
    const uint32_t *spirv[3];
    size_t spirv_words[3];
    /* Called with the message when a call breaks the model; must not return (abort() if NULL). */
    void (*fail)(const char *message);
} api_model_config;

typedef struct api_model_stats {
    uint64_t steps, calls, invalid_calls, reads_compared, bytes_compared;
    uint64_t faults_armed, faults_fired, captures, replays, reopens;
} api_model_stats;

/* Sets the config's kernels to the SPIR-V compiled at build time (api_model_spirv.c). */
void api_model_use_spirv(api_model_config *config);

/* Runs one sequence: opens a device, takes steps until the bound, closes it. */
void api_model_run(const api_model_config *config, api_model_stats *out_stats);

/* Every public call with the model step that carries it out, for the coverage check
 * (tests/api_model_covers_header.sh): NULL-terminated {call, step} pairs. */
extern const char *const api_model_calls[][2];

#endif
