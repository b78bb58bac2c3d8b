/* vector_add: the "hello world" of GPU computing with cubec.
 *
 * It adds two vectors of 2^20 floats on the GPU, c = a + b, and walks through the whole life of a
 * cubec program:
 *   1. open the default device (the best Vulkan device present; lavapipe on a machine without GPU),
 *   2. compile a GLSL compute kernel at run time,
 *   3. upload the inputs into device buffers,
 *   4. launch the kernel and wait for it,
 *   5. read the result back and check it against the same sum computed on the CPU; where the
 *      device's memory is host-visible (lavapipe, integrated GPUs), also look at c in place,
 *   6. release everything.
 *
 * Every cubec call that can fail returns a cubec_status: NULL means success; anything else is an
 * error that the caller owns, reads with cubec_status_message() and frees with cubec_status_free().
 * CUBEC_CHECK (cubec.h) does that here: on an error it prints the call, its place and the message,
 * and exits non-zero. A program that must clean up or recover tests the status itself (as
 * examples/errors.c does).
 *
 * Try it with CUBEC_VALIDATION=1 in the environment: the Khronos validation layer then checks every
 * Vulkan call that cubec makes on the program's behalf. */
#include <cubec/cubec.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The kernel, in GLSL. Things worth knowing:
 *  - Storage buffers are set 0, bindings 0..n-1; a launch passes its buffers in that order.
 *    `readonly` / `writeonly` are not decoration: cubec reads them back from the compiled SPIR-V
 *    to know which launches depend on which, and inserts barriers only where one is needed.
 *  - CUBEC_INFO(...) declares the launch's metadata (here the element count) as a block named
 *    `info`. cubec puts it in push constants when it fits, so a launch passes it without
 *    allocating anything.
 *  - A launch may have at most maxComputeWorkGroupCount.x workgroups along x (65535 on lavapipe),
 *    which is less than n / 256 for big vectors. The grid-stride loop lets any number of
 *    workgroups cover any n: each invocation handles i, i + stride, i + 2*stride, ...
 *  - Each invocation moves a vec4 (16 bytes) per array: wide loads are what memory-bound kernels
 *    need on a GPU (on an H200, 4.2 TB/s with vec4 against 3.6 TB/s with scalar floats). So the
 *    kernel counts in vec4s: info.n4 = n / 4, and n must be a multiple of 4 (2^20 is). */
static const char VECTOR_ADD_GLSL[] =
    "#version 450\n"
    "layout(local_size_x = 256) in;\n"
    "layout(set = 0, binding = 0) readonly buffer A { vec4 a[]; };\n"
    "layout(set = 0, binding = 1) readonly buffer B { vec4 b[]; };\n"
    "layout(set = 0, binding = 2) writeonly buffer C { vec4 c[]; };\n"
    "CUBEC_INFO(uint n4;)\n"
    "void main()\n"
    "{\n"
    "    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
    "    for (uint i = gl_GlobalInvocationID.x; i < info.n4; i += stride) {\n"
    "        c[i] = a[i] + b[i];\n"
    "    }\n"
    "}\n";

/* The workgroup size declared by local_size_x above. */
#define WORKGROUP_SIZE 256u
/* Launches timed after the first one, to show the cost of a launch on a warm pipeline. */
#define TIMED_LAUNCHES 10

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A small fixed-seed PRNG (xorshift32), so that every run checks the same numbers. Returns a
 * float in [-1, 1). */
static float random_float(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return (float)(x >> 8) / (float)(1u << 23) - 1.0f;
}

int main(void)
{
    const uint32_t n = 1u << 20;
    const uint64_t bytes = (uint64_t)n * sizeof(float);
    /* Zero means "the calling thread's stream": work queued on one stream runs in order. */
    const cubec_stream stream = CUBEC_STREAM_CURRENT;

    int exit_code = EXIT_FAILURE;
    cubec_device *device = NULL;
    cubec_kernel kernel = {0};
    cubec_buffer a = {0}, b = {0}, c = {0};
    float *host_a = malloc(bytes);
    float *host_b = malloc(bytes);
    float *host_c = malloc(bytes);
    if (host_a == NULL || host_b == NULL || host_c == NULL) {
        fprintf(stderr, "vector_add: out of host memory\n");
        goto done;
    }

    /* The inputs, made on the host. */
    uint32_t seed = 12345u;
    for (uint32_t i = 0; i < n; i++) {
        host_a[i] = random_float(&seed);
        host_b[i] = random_float(&seed);
    }

    /* Step 1: open the default device. A NULL desc means "all defaults"; CUBEC_DEVICE in the
     * environment can pick another device (see `cubec info` for the list). */
    CUBEC_CHECK(cubec_device_open(NULL, &device));
    cubec_device_info device_info = CUBEC_DEVICE_INFO_INIT;
    CUBEC_CHECK(cubec_device_get_info(device, &device_info));
    printf("device: %s (%s)\n", device_info.name, device_info.driver);

    /* Step 2: compile the kernel. The desc is read only during the call; zeroed fields take
     * their defaults (entry point "main", no defines, no optimization). */
    double t0 = now_seconds();
    const cubec_kernel_desc kernel_desc = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "vector_add", .glsl = VECTOR_ADD_GLSL};
    CUBEC_CHECK(cubec_kernel_create(device, &kernel_desc, &kernel));
    const double compile_s = now_seconds() - t0;

    /* Step 3: device buffers. `a` and `b` are created holding a copy of the host arrays (the
     * host memory may be reused as soon as the call returns); `c` is only allocated: its
     * contents are undefined until the kernel writes them. */
    t0 = now_seconds();
    CUBEC_CHECK(cubec_buffer_from(device, stream, host_a, bytes, &a));
    CUBEC_CHECK(cubec_buffer_from(device, stream, host_b, bytes, &b));
    CUBEC_CHECK(cubec_buffer_create(device, stream, bytes, &c));
    CUBEC_CHECK(cubec_sync(device, stream));
    const double upload_s = now_seconds() - t0;

    /* Step 4: launch. The info bytes must have exactly the layout of CUBEC_INFO(uint n4;), so a
     * struct with the same members in the same order is the natural way to build them.
     * Enough workgroups for one vec4 per invocation, but no more than the device allows and no
     * more than 2^17 (past that a GPU spends more on scheduling groups than on moving bytes);
     * the grid-stride loop does the rest. */
    const struct {
        uint32_t n4;
    } info = {.n4 = n / 4};
    uint32_t groups = (info.n4 + WORKGROUP_SIZE - 1) / WORKGROUP_SIZE;
    if (groups > device_info.max_workgroup_count[0]) groups = device_info.max_workgroup_count[0];
    if (groups > (1u << 17)) groups = 1u << 17;
    const cubec_buffer bindings[3] = {a, b, c};
    const cubec_launch_desc launch = {
        .struct_size = sizeof(cubec_launch_desc),
        .kernel = kernel,
        .buffers = bindings,
        .buffer_count = 3,
        .info = &info,
        .info_size = sizeof info,
        .groups = {groups, 1, 1},
    };

    /* cubec_launch only records the launch; cubec_sync submits the stream's work and waits for
     * it. The first launch also pays for creating the Vulkan pipeline. */
    t0 = now_seconds();
    CUBEC_CHECK(cubec_launch(device, stream, &launch));
    CUBEC_CHECK(cubec_sync(device, stream));
    const double first_launch_s = now_seconds() - t0;

    /* The same launch again a few times, queued back to back and waited for once: this is the
     * cost of a launch on a warm pipeline. Each one writes the same c, so the result is unchanged
     * (cubec orders them with barriers because they all write the same buffer). */
    t0 = now_seconds();
    for (int i = 0; i < TIMED_LAUNCHES; i++) {
        CUBEC_CHECK(cubec_launch(device, stream, &launch));
    }
    CUBEC_CHECK(cubec_sync(device, stream));
    const double launch_s = (now_seconds() - t0) / TIMED_LAUNCHES;

    /* Step 5: read the result back. cubec_read waits for all earlier work on the stream. */
    t0 = now_seconds();
    CUBEC_CHECK(cubec_read(device, stream, c, 0, host_c, bytes));
    const double read_s = now_seconds() - t0;

    /* Check against the CPU. A float addition is correctly rounded on the GPU as on the CPU, so
     * the results must be identical, not just close. */
    uint32_t mismatches = 0;
    for (uint32_t i = 0; i < n; i++) {
        const float expected = host_a[i] + host_b[i];
        if (host_c[i] != expected) {
            if (mismatches < 5) {
                fprintf(stderr, "vector_add: c[%" PRIu32 "] = %.9g, expected %.9g\n", i,
                        (double)host_c[i], (double)expected);
            }
            mismatches++;
        }
    }
    if (mismatches != 0) {
        fprintf(stderr, "vector_add: FAILED: %" PRIu32 " of %" PRIu32 " elements differ\n",
                mismatches, n);
        goto done;
    }

    /* Step 5b: where the buffer's memory is host-visible, cubec_buffer_map hands out a pointer to
     * c itself (no copy); a discrete GPU's device-local memory is refused with CUBEC_UNSUPPORTED,
     * and cubec_read above is the way there. The guard keeps the bytes in place until released. */
    const float *mapped = NULL;
    cubec_guard guard = {0};
    cubec_status map_status = cubec_buffer_map(device, stream, c, (void **)&mapped, &guard);
    const char *in_place = "is not host-visible (cubec_read is the way)";
    if (map_status == NULL) {
        in_place = "mapped in place: the same bytes";
        for (uint32_t i = 0; i < n; i++) {
            if (mapped[i] != host_c[i]) {
                in_place = "mapped in place: DIFFERENT bytes";
                mismatches++;
            }
        }
        CUBEC_CHECK(cubec_guard_release(device, guard));
    } else if (cubec_status_code(map_status) != CUBEC_UNSUPPORTED) {
        fprintf(stderr, "vector_add: cubec_buffer_map: %s\n", cubec_status_message(map_status));
        mismatches++;
    }
    cubec_status_free(map_status);
    if (mismatches != 0) {
        fprintf(stderr, "vector_add: FAILED: the mapped buffer differs from the read\n");
        goto done;
    }

    printf("vector_add: c = a + b for n = %" PRIu32 " floats: all %" PRIu32 " elements match "
           "the CPU (c[0] = %g, c[n-1] = %g)\n",
           n, n, (double)host_c[0], (double)host_c[n - 1]);
    printf("  groups            %" PRIu32 " x %u invocations (grid-stride over %" PRIu32
           " vec4s)\n",
           groups, WORKGROUP_SIZE, n / 4);
    printf("  compile           %8.3f ms\n", compile_s * 1e3);
    printf("  upload a, b       %8.3f ms\n", upload_s * 1e3);
    printf("  first launch+sync %8.3f ms (includes pipeline creation)\n", first_launch_s * 1e3);
    printf("  warm launch       %8.3f ms per launch (%d queued, one sync), %.2f GB/s\n",
           launch_s * 1e3, TIMED_LAUNCHES, 3.0 * (double)bytes / launch_s * 1e-9);
    printf("  read back c       %8.3f ms; c %s\n", read_s * 1e3, in_place);
    exit_code = EXIT_SUCCESS;

done:
    /* Step 6: release. Zero handles are accepted, so this works from any point above. Closing
     * the device would free whatever is left anyway, but releasing what you created is the habit
     * that keeps long-running programs from leaking device memory. */
    if (device != NULL) {
        CUBEC_CHECK(cubec_buffer_release(device, c));
        CUBEC_CHECK(cubec_buffer_release(device, b));
        CUBEC_CHECK(cubec_buffer_release(device, a));
        CUBEC_CHECK(cubec_kernel_destroy(device, kernel));
        cubec_device_close(device);
    }
    free(host_c);
    free(host_b);
    free(host_a);
    return exit_code;
}
