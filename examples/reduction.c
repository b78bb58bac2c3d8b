/* reduction: summing 4 million floats on the GPU in two passes.
 *
 * A sum is the classic example of work that does not split into independent elements: every
 * input contributes to one output. The standard GPU answer is a tree:
 *   pass 1: many workgroups each reduce a slice of the input to one partial sum, cooperating
 *           through shared memory (fast on-chip memory visible to one workgroup);
 *   pass 2: one workgroup reduces the partial sums to the total.
 * Both passes are the same kernel, launched with different buffers and metadata. The second pass
 * reads what the first one wrote; cubec sees that from the kernels' binding access (readonly /
 * writeonly) and puts a barrier between the two launches, so the program needs no explicit
 * synchronization between them.
 *
 * The result is compared with a double-precision sum computed on the CPU. Float addition is not
 * associative, so the GPU's tree order gives a slightly different (and usually more accurate)
 * answer than a sequential float loop: the check is a relative tolerance, not equality. */
#include <cubec/cubec.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The kernel. WG_SIZE is not written in the source: it comes from the kernel desc's defines, so
 * the C program and the kernel agree on the workgroup size by construction.
 *  - Each invocation first adds up its grid-stride slice of the input in a register: with fewer
 *    workgroups than elements / WG_SIZE this does most of the work without any synchronization.
 *  - Then the workgroup halves the number of active invocations at every step, each adding the
 *    value `s` places to its right. barrier() makes every invocation wait for the others and, in
 *    a compute shader, also makes their shared-memory writes visible.
 *  - Invocation 0 writes the workgroup's result to out[workgroup index]. */
static const char REDUCE_GLSL[] =
    "#version 450\n"
    "layout(local_size_x = WG_SIZE) in;\n"
    "layout(set = 0, binding = 0) readonly buffer In { float x[]; };\n"
    "layout(set = 0, binding = 1) writeonly buffer Out { float out_sums[]; };\n"
    "CUBEC_INFO(uint n;)\n"
    "shared float scratch[WG_SIZE];\n"
    "void main()\n"
    "{\n"
    "    uint local = gl_LocalInvocationIndex;\n"
    "    uint stride = gl_NumWorkGroups.x * WG_SIZE;\n"
    "    float sum = 0.0;\n"
    "    for (uint i = gl_GlobalInvocationID.x; i < info.n; i += stride) {\n"
    "        sum += x[i];\n"
    "    }\n"
    "    scratch[local] = sum;\n"
    "    barrier();\n"
    "    for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {\n"
    "        if (local < s) {\n"
    "            scratch[local] += scratch[local + s];\n"
    "        }\n"
    "        barrier();\n"
    "    }\n"
    "    if (local == 0) {\n"
    "        out_sums[gl_WorkGroupID.x] = scratch[0];\n"
    "    }\n"
    "}\n";

#define WG_SIZE 256u
/* Workgroups of pass 1, i.e. the number of partial sums. Fewer, fuller workgroups beat one
 * workgroup per 256 elements: each invocation then sums 16 elements before synchronizing. */
#define PARTIALS 1024u
/* How close the GPU sum must be to the double-precision one. A float has a 24-bit mantissa
 * (relative precision 6e-8); a tree of depth ~22 stays well inside 1e-5. */
#define RELATIVE_TOLERANCE 1e-5
#define TIMED_RUNS 10

/* The metadata of the kernel, laid out exactly as CUBEC_INFO(uint n;). */
typedef struct reduce_info {
    uint32_t n;
} reduce_info;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift32 with a fixed seed: the same input on every run. Returns a float in [0, 1), so the
 * sum grows with n and a relative tolerance is meaningful (no cancellation towards zero). */
static float random_unit(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return (float)(x >> 8) / (float)(1u << 24);
}

/* Queues both passes: input -> partials (PARTIALS workgroups), partials -> total (1 workgroup).
 * Nothing runs until the stream is synced or read. */
static cubec_status queue_sum(cubec_device *device, cubec_stream stream, cubec_kernel kernel,
                              cubec_buffer input, uint32_t n, cubec_buffer partials,
                              cubec_buffer total)
{
    const reduce_info pass1_info = {.n = n};
    const cubec_buffer pass1_buffers[2] = {input, partials};
    const cubec_launch_desc pass1 = {
        .struct_size = sizeof(cubec_launch_desc),
        .kernel = kernel,
        .buffers = pass1_buffers,
        .buffer_count = 2,
        .info = &pass1_info,
        .info_size = sizeof pass1_info,
        .groups = {PARTIALS, 1, 1},
    };
    cubec_status status = cubec_launch(device, stream, &pass1);
    if (status != NULL) return status;

    const reduce_info pass2_info = {.n = PARTIALS};
    const cubec_buffer pass2_buffers[2] = {partials, total};
    const cubec_launch_desc pass2 = {
        .struct_size = sizeof(cubec_launch_desc),
        .kernel = kernel,
        .buffers = pass2_buffers,
        .buffer_count = 2,
        .info = &pass2_info,
        .info_size = sizeof pass2_info,
        .groups = {1, 1, 1},
    };
    return cubec_launch(device, stream, &pass2);
}

int main(void)
{
    const uint32_t n = 1u << 22;
    const uint64_t bytes = (uint64_t)n * sizeof(float);
    const cubec_stream stream = CUBEC_STREAM_CURRENT;

    int exit_code = EXIT_FAILURE;
    cubec_device *device = NULL;
    cubec_kernel kernel = {0};
    cubec_buffer input = {0}, partials = {0}, total = {0};
    float *host_x = malloc(bytes);
    if (host_x == NULL) {
        fprintf(stderr, "reduction: out of host memory\n");
        goto done;
    }

    /* The input, and two CPU references: the exact-enough double sum that the GPU is checked
     * against, and a naive float loop, to show what summation order does to accuracy. */
    uint32_t seed = 2024u;
    double reference = 0.0;
    float naive = 0.0f;
    for (uint32_t i = 0; i < n; i++) {
        host_x[i] = random_unit(&seed);
        reference += host_x[i];
        naive += host_x[i];
    }

    CUBEC_CHECK(cubec_device_open(NULL, &device));
    cubec_device_info device_info = CUBEC_DEVICE_INFO_INIT;
    CUBEC_CHECK(cubec_device_get_info(device, &device_info));
    printf("device: %s (%s)\n", device_info.name, device_info.driver);

    /* Compile with WG_SIZE defined, exactly as if the source started with #define WG_SIZE 256. */
    char wg_size_text[16];
    snprintf(wg_size_text, sizeof wg_size_text, "%u", WG_SIZE);
    const cubec_define defines[1] = {{.name = "WG_SIZE", .value = wg_size_text}};
    const cubec_kernel_desc kernel_desc = {
        .struct_size = sizeof(cubec_kernel_desc),
        .name = "reduce_sum",
        .glsl = REDUCE_GLSL,
        .defines = defines,
        .define_count = 1,
        .optimize = 1,
    };
    double t0 = now_seconds();
    CUBEC_CHECK(cubec_kernel_create(device, &kernel_desc, &kernel));
    const double compile_s = now_seconds() - t0;

    /* The kernel's info tells what the library found in the SPIR-V: which bindings it reads and
     * writes, and where the metadata goes. Worth a look when writing a new kernel. */
    cubec_kernel_info kernel_info = CUBEC_KERNEL_INFO_INIT;
    CUBEC_CHECK(cubec_kernel_get_info(device, kernel, &kernel_info));
    printf("kernel: %" PRIu32 " bindings, %" PRIu32 " bytes of info in %s, workgroup %" PRIu32 "\n",
           kernel_info.binding_count, kernel_info.info_size,
           kernel_info.info_in_push_constants ? "push constants" : "a storage buffer",
           kernel_info.workgroup_size[0]);

    t0 = now_seconds();
    CUBEC_CHECK(cubec_buffer_from(device, stream, host_x, bytes, &input));
    CUBEC_CHECK(cubec_buffer_create(device, stream, PARTIALS * sizeof(float), &partials));
    CUBEC_CHECK(cubec_buffer_create(device, stream, sizeof(float), &total));
    CUBEC_CHECK(cubec_sync(device, stream));
    const double upload_s = now_seconds() - t0;

    /* Run the two passes and read the single float of the result. cubec_read waits for both
     * launches: reads are ordered after all earlier work on the stream. */
    float gpu_sum = 0.0f;
    t0 = now_seconds();
    CUBEC_CHECK(queue_sum(device, stream, kernel, input, n, partials, total));
    CUBEC_CHECK(cubec_read(device, stream, total, 0, &gpu_sum, sizeof gpu_sum));
    const double first_s = now_seconds() - t0;

    /* Again, warm: the pipeline exists now, so this is the steady-state cost of one sum. */
    t0 = now_seconds();
    for (int run = 0; run < TIMED_RUNS; run++) {
        float again = 0.0f;
        CUBEC_CHECK(queue_sum(device, stream, kernel, input, n, partials, total));
        CUBEC_CHECK(cubec_read(device, stream, total, 0, &again, sizeof again));
        /* The same launches on the same data in the same order must give the same bits. */
        if (again != gpu_sum) {
            fprintf(stderr, "reduction: FAILED: run %d gave %.9g, the first run %.9g\n", run,
                    (double)again, (double)gpu_sum);
            goto done;
        }
    }
    const double warm_s = (now_seconds() - t0) / TIMED_RUNS;

    const double gpu_error = fabs((double)gpu_sum - reference) / fabs(reference);
    const double naive_error = fabs((double)naive - reference) / fabs(reference);
    if (!(gpu_error <= RELATIVE_TOLERANCE)) { /* written so that a NaN fails too */
        fprintf(stderr,
                "reduction: FAILED: GPU sum %.9g, CPU double sum %.9g, relative error %.3g "
                "> %.1g\n",
                (double)gpu_sum, reference, gpu_error, RELATIVE_TOLERANCE);
        goto done;
    }

    printf("reduction: sum of %" PRIu32 " floats = %.9g on the GPU, %.9g on the CPU in double "
           "(relative error %.2e <= %.0e)\n",
           n, (double)gpu_sum, reference, gpu_error, RELATIVE_TOLERANCE);
    printf("  (a sequential float loop on the CPU gets %.9g, relative error %.2e)\n", (double)naive,
           naive_error);
    printf("  passes             %u workgroups x %u -> %u partial sums -> 1 workgroup -> total\n",
           PARTIALS, WG_SIZE, PARTIALS);
    printf("  compile            %8.3f ms\n", compile_s * 1e3);
    printf("  upload             %8.3f ms (%.1f MiB)\n", upload_s * 1e3,
           (double)bytes / (1024.0 * 1024.0));
    printf("  first sum + read   %8.3f ms (includes pipeline creation)\n", first_s * 1e3);
    printf("  warm sum + read    %8.3f ms per sum (mean of %d), %.2f GB/s\n", warm_s * 1e3,
           TIMED_RUNS, (double)bytes / warm_s * 1e-9);
    exit_code = EXIT_SUCCESS;

done:
    if (device != NULL) {
        CUBEC_CHECK(cubec_buffer_release(device, total));
        CUBEC_CHECK(cubec_buffer_release(device, partials));
        CUBEC_CHECK(cubec_buffer_release(device, input));
        CUBEC_CHECK(cubec_kernel_destroy(device, kernel));
        cubec_device_close(device);
    }
    free(host_x);
    return exit_code;
}
