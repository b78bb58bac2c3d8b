/* streams_events: work on several streams, buffers shared between them, and reads that do not
 * block.
 *
 *   1. two streams of our own (cubec_stream_new) each compute y = a * x + b on their half of the
 *      input, in parallel; cubec_flush starts each one's work without waiting;
 *   2. one big output buffer is filled through views of it (cubec_buffer_view): a device-to-device
 *      copy (cubec_copy) on a third stream puts each half in place; it is ordered after the
 *      streams that wrote the halves because those streams created them;
 *   3. the result comes back with cubec_read_async into pinned host memory (cubec_host_alloc):
 *      the program polls the event (cubec_event_query), waits for it, and asks whether every
 *      byte was written (cubec_check, cubec_sync_check);
 *   4. the inputs are uploaded from memory the program registered (cubec_host_register), which
 *      the GPU reads directly where the device can import host memory;
 *   5. everything is checked against the same arithmetic on the CPU.
 */
#include <cubec/cubec.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SAXPY_GLSL[] = "#version 450\n"
                                 "layout(local_size_x = 256) in;\n"
                                 "layout(binding = 0) readonly buffer X { float x[]; };\n"
                                 "layout(binding = 1) writeonly buffer Y { float y[]; };\n"
                                 "CUBEC_INFO(uint n; float a; float b;)\n"
                                 "void main()\n"
                                 "{\n"
                                 "    uint i = gl_GlobalInvocationID.x;\n"
                                 "    if (i < info.n) y[i] = info.a * x[i] + info.b;\n"
                                 "}\n";

#define N (1u << 16) /* elements in all; each stream takes half */
#define HALF (N / 2)

int main(void)
{
    cubec_device *dev;
    CUBEC_CHECK(cubec_device_open(NULL, &dev));
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    CUBEC_CHECK(cubec_device_get_info(dev, &info));
    cubec_kernel saxpy;
    CUBEC_CHECK(cubec_kernel_create(dev,
                                    &(cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc),
                                                         .name = "saxpy",
                                                         .glsl = SAXPY_GLSL},
                                    &saxpy));

    /* Step 4 first: the input lives in memory the program registers. Registration wants an
     * address and a size that are multiples of host_register_alignment. */
    const uint64_t align = info.host_register_alignment;
    const uint64_t in_bytes = ((uint64_t)N * sizeof(float) + align - 1) / align * align;
    float *x = aligned_alloc(align, in_bytes);
    if (x == NULL) return 1;
    for (uint32_t i = 0; i < N; i++)
        x[i] = (float)i * 0.25f - 100.0f;
    CUBEC_CHECK(cubec_host_register(dev, x, in_bytes));

    /* Step 1: two streams, each with its own input and output buffers. A buffer belongs to the
     * stream that creates it; here each stream creates what it uses. */
    cubec_stream s[2];
    cubec_buffer in[2], out[2];
    const struct {
        uint32_t n;
        float a, b;
    } params[2] = {{HALF, 2.0f, 1.0f}, {HALF, -0.5f, 3.0f}};
    for (int k = 0; k < 2; k++) {
        CUBEC_CHECK(cubec_stream_new(dev, &s[k]));
        CUBEC_CHECK(cubec_buffer_from(dev, s[k], x + k * HALF, HALF * sizeof(float), &in[k]));
        CUBEC_CHECK(cubec_buffer_create(dev, s[k], HALF * sizeof(float), &out[k]));
        const cubec_buffer bind[2] = {in[k], out[k]};
        CUBEC_CHECK(cubec_launch(dev, s[k],
                                 &(cubec_launch_desc){.struct_size = sizeof(cubec_launch_desc),
                                                      .kernel = saxpy,
                                                      .buffers = bind,
                                                      .buffer_count = 2,
                                                      .info = &params[k],
                                                      .info_size = sizeof params[k],
                                                      .groups = {HALF / 256, 1, 1}}));
        /* Submit now; the two streams' work may run at the same time. */
        CUBEC_CHECK(cubec_flush(dev, s[k]));
    }

    /* Step 2: the halves go into one buffer, through views of it, on a third stream. Each copy
     * runs after the work already queued on the stream that created its source. The views'
     * offsets must be multiples of storage_offset_alignment (HALF floats are). */
    cubec_stream gather;
    CUBEC_CHECK(cubec_stream_new(dev, &gather));
    cubec_buffer all, view[2];
    CUBEC_CHECK(cubec_buffer_create(dev, gather, N * sizeof(float), &all));
    for (int k = 0; k < 2; k++) {
        CUBEC_CHECK(cubec_buffer_view(dev, all, (uint64_t)k * HALF * sizeof(float),
                                      HALF * sizeof(float), &view[k]));
        CUBEC_CHECK(cubec_copy(dev, gather, out[k], 0, view[k], 0, HALF * sizeof(float)));
    }
    uint64_t view_size;
    CUBEC_CHECK(cubec_buffer_get_size(dev, view[1], &view_size));
    /* A view keeps its buffer's memory alive: `all` may be released now and read through a view
     * later. Here another reference is taken and dropped, as a library holding on to a caller's
     * buffer would. */
    CUBEC_CHECK(cubec_buffer_retain(dev, all));
    CUBEC_CHECK(cubec_buffer_release(dev, all));

    /* Step 3: an asynchronous read into pinned memory. */
    float *y;
    CUBEC_CHECK(cubec_host_alloc(dev, N * sizeof(float), (void **)&y));
    cubec_event *done;
    CUBEC_CHECK(cubec_read_async(dev, gather, all, 0, y, N * sizeof(float), &done));
    /* The program could do other work here; it only asks whether the read has landed. */
    cubec_status q = cubec_event_query(done);
    const int pending = cubec_status_code(q) == CUBEC_NOT_READY;
    if (q != NULL && !pending) CUBEC_CHECK(q); /* a real failure: report it and stop */
    cubec_status_free(q);
    CUBEC_CHECK(cubec_event_wait(done));
    cubec_event_free(done);
    /* Did every byte of the views get written by the work queued for them? A failure after a
     * call returned (a lost submission, say) travels on the buffers it would have written, and
     * cubec_check returns it with its chain (docs/errors.md). The read above would have returned
     * it too. */
    CUBEC_CHECK(cubec_check(dev, view, 2));

    /* Step 5: the check against the CPU. a * x + b in float on both sides; GPUs may fuse the
     * multiply-add, so the comparison allows one rounding. */
    uint32_t bad = 0;
    for (uint32_t i = 0; i < N; i++) {
        const int k = i < HALF ? 0 : 1;
        const float expected = params[k].a * x[i] + params[k].b;
        const float err = y[i] > expected ? y[i] - expected : expected - y[i];
        if (err > 1e-6f * (expected < 0 ? -expected : expected) + 1e-6f) {
            if (bad++ < 5) fprintf(stderr, "y[%" PRIu32 "] = %g, expected %g\n", i, y[i], expected);
        }
    }
    printf("streams_events: 2 streams computed %" PRIu32
           " elements, gathered through 2 views of %" PRIu64
           " bytes and read back asynchronously (%s at the first query): %s\n",
           N, view_size, pending ? "pending" : "done", bad ? "MISMATCH" : "all match the CPU");

    /* cubec_sync_check: wait for a stream, then check buffers; here the first stream's output. */
    CUBEC_CHECK(cubec_sync_check(dev, s[0], &out[0], 1));
    CUBEC_CHECK(cubec_host_free(dev, y));
    CUBEC_CHECK(cubec_host_unregister(dev, x));
    free(x);
    for (int k = 0; k < 2; k++) {
        CUBEC_CHECK(cubec_buffer_release(dev, view[k]));
        CUBEC_CHECK(cubec_buffer_release(dev, in[k]));
        CUBEC_CHECK(cubec_buffer_release(dev, out[k]));
    }
    CUBEC_CHECK(cubec_buffer_release(dev, all));
    CUBEC_CHECK(cubec_kernel_destroy(dev, saxpy));
    cubec_device_close(dev);
    return bad != 0;
}
