/* libFuzzer harness over the one host model of the API (tests/common/api_model.c): the input's
 * bytes make the model's choices (one byte per small choice, eight per number), so each input is
 * a sequence of public calls checked against the model, and the run ends with the bytes.
 * Compiled twice from this file (fuzz/CMakeLists.txt): fuzz_api on the null backend, and
 * fuzz_api_lavapipe (FUZZ_API_VULKAN) on lavapipe with the validation layer on (unless
 * CUBEC_TEST_VALIDATION=0), where the kernels run. Each input opens a fresh device, so a crash
 * replays from its file alone; a broken invariant, a validation message or a sanitizer report
 * aborts. */
#include "api_model.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef FUZZ_API_VULKAN
#include <dlfcn.h>
#endif

static void on_failure(const char *message)
{
    fprintf(stderr, "fuzz_api: %s\n", message);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
#ifdef FUZZ_API_VULKAN
    static int pinned;
    if (!pinned) { /* as tests/common/test_util.c: LeakSanitizer names what they keep */
        pinned = 1;
        dlopen("libvulkan_lvp.so", RTLD_NOW | RTLD_NODELETE);
        dlopen("libVkLayer_khronos_validation.so", RTLD_NOW | RTLD_NODELETE);
    }
    const char *backend = "vulkan";
#else
    const char *backend = "null";
#endif
    api_model_config c = {
        .backend = backend,
        .bytes = data,
        .byte_count = size,
        .max_steps = 256, /* a bound for inputs whose steps draw few bytes */
        .fail = on_failure,
    };
    api_model_use_spirv(&c);
    api_model_run(&c, NULL);
    return 0;
}
