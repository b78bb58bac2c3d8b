/* errors: what cubec says when something goes wrong, and how a failure travels.
 *
 *   1. a kernel that does not compile: CUBEC_COMPILE_FAILED with the compiler's line-numbered
 *      message, naming the kernel;
 *   2. a bad argument: a launch whose metadata has the wrong size is refused with
 *      CUBEC_INVALID_ARGUMENT naming both sizes; nothing is queued; and a status the program
 *      builds for a check of its own (cubec_status_new), read and freed like cubec's;
 *   3. a failure after the call returned, provoked by fault injection (cubec_fault_inject, the
 *      same as CUBEC_FAULT=submit:1 in the environment): the submission of a launch fails, so the
 *      buffer the launch would have written carries the failure, and reading it returns the
 *      root cause instead of stale bytes (docs/errors.md, "Failures on memory"); a later write
 *      of the whole buffer clears it;
 *   4. every outcome is checked: the codes, and the buffer's bytes after recovery.
 * The program examines the statuses itself, so it does not use CUBEC_CHECK for these calls.
 */
#include <cubec/cubec.h>

#include <inttypes.h>
#include <stdio.h>

static const char TYPO_GLSL[] = "#version 450\n"
                                "layout(local_size_x = 64) in;\n"
                                "layout(binding = 0) buffer B { uint v[]; };\n"
                                "void main() { v[gl_GlobalInvocationID.x] = undeclared_thing; }\n";

static const char ONES_GLSL[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(binding = 0) writeonly buffer B { uint v[]; };\n"
    "CUBEC_INFO(uint n;)\n"
    "void main()\n"
    "{\n"
    "    if (gl_GlobalInvocationID.x < info.n) v[gl_GlobalInvocationID.x] = 1u;\n"
    "}\n";

#define N 256u

/* Prints a status's code and message and frees it; returns its code. */
static cubec_code report(const char *what, cubec_status st)
{
    const cubec_code code = cubec_status_code(st);
    printf("%s -> %s\n  %s\n", what, cubec_code_name(code), cubec_status_message(st));
    cubec_status_free(st);
    return code;
}

int main(void)
{
    cubec_device *dev;
    CUBEC_CHECK(cubec_device_open(NULL, &dev));
    const cubec_stream s = CUBEC_STREAM_CURRENT;
    int ok = 1;

    /* Step 1: a compile error. */
    cubec_kernel bad;
    ok &= report("compiling 'typo'",
                 cubec_kernel_create(dev,
                                     &(cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc),
                                                          .name = "typo",
                                                          .glsl = TYPO_GLSL},
                                     &bad)) == CUBEC_COMPILE_FAILED;

    /* Step 2: a bad argument. The kernel declares 4 bytes of metadata; 8 are given. */
    cubec_kernel ones;
    CUBEC_CHECK(cubec_kernel_create(dev,
                                    &(cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc),
                                                         .name = "ones",
                                                         .glsl = ONES_GLSL},
                                    &ones));
    cubec_buffer out;
    CUBEC_CHECK(cubec_buffer_create(dev, s, N * sizeof(uint32_t), &out));
    const uint64_t too_big = N;
    cubec_launch_desc launch = {.struct_size = sizeof(cubec_launch_desc),
                                .kernel = ones,
                                .buffers = &out,
                                .buffer_count = 1,
                                .info = &too_big,
                                .info_size = sizeof too_big,
                                .groups = {N / 64, 1, 1}};
    ok &= report("launching with 8 bytes of info", cubec_launch(dev, s, &launch)) ==
          CUBEC_INVALID_ARGUMENT;

    /* A status of the program's own, for a check cubec cannot make: a callback (a tuner's
     * candidate, say) returns one like any cubec call, and whoever receives it reads and frees it
     * the same way. */
    const uint32_t rows = 100;
    cubec_status own = NULL;
    if (rows % 64 != 0)
        own = cubec_status_new(CUBEC_INVALID_ARGUMENT, "rows is %u, not a multiple of 64", rows);
    ok &= report("a check of the program's own", own) == CUBEC_INVALID_ARGUMENT;

    /* Step 3: the next submission fails. The launch itself is accepted (it only records); the
     * failure arises when the stream's work is submitted, and lands on `out`. */
    const uint32_t n = N;
    launch.info = &n;
    launch.info_size = sizeof n;
    uint64_t counts_before[CUBEC_FAULT_KIND_COUNT], counts_after[CUBEC_FAULT_KIND_COUNT];
    CUBEC_CHECK(cubec_fault_get_counts(dev, counts_before));
    CUBEC_CHECK(cubec_fault_inject(dev, CUBEC_FAULT_SUBMIT, 1));
    CUBEC_CHECK(cubec_launch(dev, s, &launch));
    cubec_status sync_status = cubec_sync(dev, s);
    if (sync_status) report("sync after the failed submission", sync_status);
    uint32_t host[N];
    const cubec_code read_code =
        report("reading the launch's output", cubec_read(dev, s, out, 0, host, sizeof host));
    ok &= read_code != CUBEC_OK;
    CUBEC_CHECK(cubec_fault_get_counts(dev, counts_after));
    printf("%s calls so far: %" PRIu64 " (%" PRIu64 " before)\n",
           cubec_fault_kind_name(CUBEC_FAULT_SUBMIT), counts_after[CUBEC_FAULT_SUBMIT],
           counts_before[CUBEC_FAULT_SUBMIT]);
    ok &= counts_after[CUBEC_FAULT_SUBMIT] > counts_before[CUBEC_FAULT_SUBMIT];

    /* Recovery: writing the whole buffer clears its failure; the launch then runs. */
    for (uint32_t i = 0; i < N; i++)
        host[i] = 0;
    CUBEC_CHECK(cubec_write(dev, s, out, 0, host, sizeof host));
    CUBEC_CHECK(cubec_launch(dev, s, &launch));
    CUBEC_CHECK(cubec_read(dev, s, out, 0, host, sizeof host));
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < N; i++)
        wrong += host[i] != 1u;
    ok &= wrong == 0;

    printf("errors: %s: a compile error, a refused argument and a failed submission each gave "
           "their code; after a write the launch ran and all %u values match the CPU's\n",
           ok ? "as expected" : "UNEXPECTED", N);
    CUBEC_CHECK(cubec_buffer_release(dev, out));
    CUBEC_CHECK(cubec_kernel_destroy(dev, ones));
    cubec_device_close(dev);
    return !ok;
}
