/* libFuzzer harness: the input bytes as a kernel, to cubec_kernel_create on the null backend.
 *
 * The bytes go in twice: as GLSL source (a NUL-terminated copy), and as SPIR-V words (the bytes
 * rounded down to whole words, copied so that they are aligned). The null backend compiles GLSL
 * with shaderc, reflects SPIR-V with SPIRV-Cross, checks the capabilities and the bindings, and
 * makes a pipeline object of its own, so everything cubec does with a kernel before Vulkan runs.
 * Errors are expected; a crash or a sanitizer report aborts, and so does a code outside
 * CUBEC_CODES, an empty message, or a kernel that was created but cannot be described
 * (cubec_kernel_get_info) or destroyed.
 *
 * One device serves many inputs (shaderc's start-up costs ~100 ms; a device per input would
 * spend the run there); each kernel made is destroyed before the next input, and the device is
 * closed and opened again every REOPEN inputs, as it keeps pipelines until it closes. The first
 * input byte picks the optimizer (-O) for the GLSL, so both shaderc paths are reached. */
#include <cubec/cubec.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REOPEN 256

static cubec_device *device;
static unsigned inputs;

static void check(cubec_status st, const char *call)
{
    if (!st) return;
    cubec_code c = cubec_status_code(st);
    const char *msg = cubec_status_message(st);
    if (!strcmp(cubec_code_name(c), "CUBEC_UNKNOWN_CODE") || !msg || !*msg) {
        fprintf(stderr, "fuzz_shader: %s: code %d (%s), message '%s'\n", call, (int)c,
                cubec_code_name(c), msg ? msg : "(null)");
        abort();
    }
    cubec_status_free(st);
}

static void create(const cubec_kernel_desc *desc, const char *what)
{
    cubec_kernel k = {0};
    cubec_status st = cubec_kernel_create(device, desc, &k);
    if (st) {
        if (k.id) {
            fprintf(stderr, "fuzz_shader: %s: failed but set out_kernel\n", what);
            abort();
        }
        check(st, what);
        return;
    }
    cubec_kernel_info info = CUBEC_KERNEL_INFO_INIT;
    st = cubec_kernel_get_info(device, k, &info);
    if (st) {
        fprintf(stderr, "fuzz_shader: %s: kernel made, but get_info: %s\n", what,
                cubec_status_message(st));
        abort();
    }
    st = cubec_kernel_destroy(device, k);
    if (st) {
        fprintf(stderr, "fuzz_shader: %s: kernel made, but destroy: %s\n", what,
                cubec_status_message(st));
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (device && ++inputs % REOPEN == 0) {
        cubec_device_close(device);
        device = NULL;
    }
    if (!device) {
        cubec_device_desc desc = {.struct_size = sizeof(cubec_device_desc), .backend = "null"};
        cubec_status st = cubec_device_open(&desc, &device);
        if (st) {
            fprintf(stderr, "fuzz_shader: the null device did not open: %s\n",
                    cubec_status_message(st));
            abort();
        }
    }
    char *glsl = malloc(size + 1);
    if (!glsl) abort();
    memcpy(glsl, data, size);
    glsl[size] = '\0';
    create(&(cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc),
                                .name = "fuzz_glsl",
                                .glsl = glsl,
                                .optimize = size && data[0] & 1},
           "cubec_kernel_create (GLSL)");
    free(glsl);

    size_t words = size / 4;
    if (words) {
        uint32_t *spirv = malloc(words * 4);
        if (!spirv) abort();
        memcpy(spirv, data, words * 4);
        create(&(cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc),
                                    .name = "fuzz_spirv",
                                    .spirv = spirv,
                                    .spirv_words = words},
               "cubec_kernel_create (SPIR-V)");
        free(spirv);
    }
    return 0;
}
