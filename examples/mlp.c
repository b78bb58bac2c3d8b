/* mlp: the forward pass of a small neural network on the GPU.
 *
 *     x [64 x 256] -> Linear(256 -> 512) + bias -> ReLU -> Linear(512 -> 10) + bias -> logits
 *
 * Each layer is one launch of a tiled matrix multiply with the bias (and, for the hidden layer,
 * the ReLU) fused into the same kernel, so the hidden activations are written once and never
 * re-read for an element-wise pass. The weights are random from a fixed-seed PRNG; the logits are
 * checked against the same network evaluated on the CPU in double precision.
 *
 * What this example adds over vector_add and reduction:
 *  - one GLSL source compiled into two kernels with different defines (with and without ReLU);
 *  - tiling through shared memory: each 16x16 workgroup loads a 16x16 tile of the input and of the
 *    weights once, and every invocation reuses them 16 times from on-chip memory;
 *  - a loop that runs the forward pass many times on one stream, the way an inference server
 *    would: write a batch, queue both layers, read the logits. Work on one stream runs in order,
 *    and cubec orders each layer after the writes it depends on, so the loop contains no explicit
 *    synchronization at all.
 *  - the same passes queued back to back and waited for once, to show what batching saves;
 *  - the pass captured into a graph and replayed with fresh inputs (one submission per replay),
 *    and the GPU time of one replay measured with a profile. */
#include <cubec/cubec.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 64
#define IN_FEATURES 256
#define HIDDEN 512
#define OUT_FEATURES 10
/* The tile edge: workgroups are TILE x TILE invocations, one per output element. */
#define TILE 16
#define ITERATIONS 20
/* GPU vs CPU: |gpu - cpu| <= ABS_TOLERANCE + REL_TOLERANCE * |cpu|. The GPU accumulates in float
 * (dot products of 256 and 512 terms), the reference in double. */
#define ABS_TOLERANCE 1e-4
#define REL_TOLERANCE 1e-4

/* y[m x n] = x[m x k] * w[k x n] + bias[n], optionally followed by ReLU; all row-major.
 *  - Invocation (tx, ty) of workgroup (gx, gy) owns output element (row, col) =
 *    (gy*TILE + ty, gx*TILE + tx).
 *  - The k dimension is walked one tile at a time: the workgroup copies a TILE x TILE block of x
 *    and one of w into shared memory (each invocation one element of each), waits for all copies
 *    (barrier), accumulates its TILE products from shared memory, and waits again before the next
 *    block overwrites the tiles.
 *  - Elements outside the matrices load as zero, so any m, n, k work (here n = 10 for the last
 *    layer: one workgroup covers it with 6 idle columns). The loads are written as if statements
 *    rather than ?: so that an out-of-range address is never read.
 *  - TILE and APPLY_RELU come from the kernel desc's defines. */
static const char LINEAR_GLSL[] =
    "#version 450\n"
    "layout(local_size_x = TILE, local_size_y = TILE) in;\n"
    "layout(set = 0, binding = 0) readonly buffer X { float x[]; };\n"
    "layout(set = 0, binding = 1) readonly buffer W { float w[]; };\n"
    "layout(set = 0, binding = 2) readonly buffer Bias { float bias[]; };\n"
    "layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };\n"
    "CUBEC_INFO(uint m; uint n; uint k;)\n"
    "shared float tile_x[TILE][TILE];\n"
    "shared float tile_w[TILE][TILE];\n"
    "void main()\n"
    "{\n"
    "    uint tx = gl_LocalInvocationID.x;\n"
    "    uint ty = gl_LocalInvocationID.y;\n"
    "    uint row = gl_WorkGroupID.y * TILE + ty;\n"
    "    uint col = gl_WorkGroupID.x * TILE + tx;\n"
    "    float acc = 0.0;\n"
    "    for (uint t = 0; t < info.k; t += TILE) {\n"
    "        float xv = 0.0;\n"
    "        if (row < info.m && t + tx < info.k) {\n"
    "            xv = x[row * info.k + t + tx];\n"
    "        }\n"
    "        float wv = 0.0;\n"
    "        if (t + ty < info.k && col < info.n) {\n"
    "            wv = w[(t + ty) * info.n + col];\n"
    "        }\n"
    "        tile_x[ty][tx] = xv;\n"
    "        tile_w[ty][tx] = wv;\n"
    "        barrier();\n"
    "        for (uint j = 0; j < TILE; j++) {\n"
    "            acc += tile_x[ty][j] * tile_w[j][tx];\n"
    "        }\n"
    "        barrier();\n"
    "    }\n"
    "    if (row < info.m && col < info.n) {\n"
    "        float v = acc + bias[col];\n"
    "#ifdef APPLY_RELU\n"
    "        v = max(v, 0.0);\n"
    "#endif\n"
    "        y[row * info.n + col] = v;\n"
    "    }\n"
    "}\n";

/* The metadata of LINEAR_GLSL, laid out as CUBEC_INFO(uint m; uint n; uint k;). */
typedef struct linear_info {
    uint32_t m, n, k;
} linear_info;

/* The network on the device: two kernels (one source, two sets of defines), the parameters,
 * and the activations it writes. */
typedef struct mlp {
    cubec_kernel linear_relu;
    cubec_kernel linear;
    cubec_buffer w1, b1, w2, b2;
    cubec_buffer x, hidden, logits;
} mlp;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift32 with a fixed seed; a float uniform in [-scale, scale). */
static float random_float(uint32_t *state, float scale)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return ((float)(x >> 8) / (float)(1u << 23) - 1.0f) * scale;
}

/* Queues one layer: y = x * w + bias (then ReLU if the kernel was built with APPLY_RELU). One
 * workgroup per TILE x TILE block of the output, rounding up. */
static cubec_status queue_linear(cubec_device *device, cubec_stream stream, cubec_kernel kernel,
                                 cubec_buffer x, cubec_buffer w, cubec_buffer bias, cubec_buffer y,
                                 uint32_t m, uint32_t n, uint32_t k)
{
    const linear_info info = {.m = m, .n = n, .k = k};
    const cubec_buffer buffers[4] = {x, w, bias, y};
    const cubec_launch_desc launch = {
        .struct_size = sizeof(cubec_launch_desc),
        .kernel = kernel,
        .buffers = buffers,
        .buffer_count = 4,
        .info = &info,
        .info_size = sizeof info,
        .groups = {(n + TILE - 1) / TILE, (m + TILE - 1) / TILE, 1},
    };
    return cubec_launch(device, stream, &launch);
}

/* Queues the whole forward pass: x -> hidden -> logits. The second launch reads `hidden`, which
 * the first writes; cubec puts the barrier between them. */
static cubec_status queue_forward(cubec_device *device, cubec_stream stream, const mlp *net)
{
    cubec_status status = queue_linear(device, stream, net->linear_relu, net->x, net->w1, net->b1,
                                       net->hidden, BATCH, HIDDEN, IN_FEATURES);
    if (status != NULL) return status;
    return queue_linear(device, stream, net->linear, net->hidden, net->w2, net->b2, net->logits,
                        BATCH, OUT_FEATURES, HIDDEN);
}

/* One step of inference as a server would run it: upload the batch, run the network, read the
 * logits. cubec_write and cubec_read are ordered with the launches on the stream, and the read
 * blocks until the logits are there. */
static cubec_status infer(cubec_device *device, cubec_stream stream, const mlp *net, const float *x,
                          float *logits)
{
    cubec_status status =
        cubec_write(device, stream, net->x, 0, x, sizeof(float) * BATCH * IN_FEATURES);
    if (status != NULL) return status;
    status = queue_forward(device, stream, net);
    if (status != NULL) return status;
    return cubec_read(device, stream, net->logits, 0, logits, sizeof(float) * BATCH * OUT_FEATURES);
}

/* The CPU reference of one layer in double precision: y = x * w + bias, then ReLU if asked. */
static void cpu_linear(const double *x, const float *w, const float *bias, double *y, int m, int n,
                       int k, int relu)
{
    for (int r = 0; r < m; r++) {
        for (int c = 0; c < n; c++) {
            double acc = bias[c];
            for (int j = 0; j < k; j++)
                acc += x[r * k + j] * (double)w[j * n + c];
            y[r * n + c] = (relu && acc < 0.0) ? 0.0 : acc;
        }
    }
}

static int argmax(const float *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (v[i] > v[best]) best = i;
    }
    return best;
}

int main(void)
{
    const cubec_stream stream = CUBEC_STREAM_CURRENT;
    int exit_code = EXIT_FAILURE;
    cubec_device *device = NULL;
    mlp net;
    memset(&net, 0, sizeof net); /* zero handles: safe to release from any point below */
    cubec_graph graph = {0};

    /* Host data. Weights are uniform in +-1/sqrt(fan_in), which keeps activations of order one
     * through both layers (the usual initialization, and good for a meaningful check). */
    static float x[BATCH * IN_FEATURES];
    static float w1[IN_FEATURES * HIDDEN], b1[HIDDEN];
    static float w2[HIDDEN * OUT_FEATURES], b2[OUT_FEATURES];
    static float logits[BATCH * OUT_FEATURES], first_logits[BATCH * OUT_FEATURES];
    uint32_t seed = 7u;
    const float scale1 = 1.0f / sqrtf((float)IN_FEATURES);
    const float scale2 = 1.0f / sqrtf((float)HIDDEN);
    for (int i = 0; i < BATCH * IN_FEATURES; i++)
        x[i] = random_float(&seed, 1.0f);
    for (int i = 0; i < IN_FEATURES * HIDDEN; i++)
        w1[i] = random_float(&seed, scale1);
    for (int i = 0; i < HIDDEN; i++)
        b1[i] = random_float(&seed, 0.1f);
    for (int i = 0; i < HIDDEN * OUT_FEATURES; i++)
        w2[i] = random_float(&seed, scale2);
    for (int i = 0; i < OUT_FEATURES; i++)
        b2[i] = random_float(&seed, 0.1f);

    /* The reference, computed once on the CPU. */
    static double x_ref[BATCH * IN_FEATURES], hidden_ref[BATCH * HIDDEN];
    static double logits_ref[BATCH * OUT_FEATURES];
    for (int i = 0; i < BATCH * IN_FEATURES; i++)
        x_ref[i] = x[i];
    cpu_linear(x_ref, w1, b1, hidden_ref, BATCH, HIDDEN, IN_FEATURES, 1);
    cpu_linear(hidden_ref, w2, b2, logits_ref, BATCH, OUT_FEATURES, HIDDEN, 0);

    CUBEC_CHECK(cubec_device_open(NULL, &device));
    cubec_device_info device_info = CUBEC_DEVICE_INFO_INIT;
    CUBEC_CHECK(cubec_device_get_info(device, &device_info));
    printf("device: %s (%s)\n", device_info.name, device_info.driver);

    /* Two kernels from one source: the hidden layer with ReLU fused, the output layer without.
     * A define with a NULL value is defined empty, which is all #ifdef needs. */
    char tile_text[8];
    snprintf(tile_text, sizeof tile_text, "%d", TILE);
    const cubec_define relu_defines[2] = {{.name = "TILE", .value = tile_text},
                                          {.name = "APPLY_RELU", .value = NULL}};
    const cubec_kernel_desc relu_desc = {
        .struct_size = sizeof(cubec_kernel_desc),
        .name = "linear_relu",
        .glsl = LINEAR_GLSL,
        .defines = relu_defines,
        .define_count = 2,
        .optimize = 1,
    };
    const cubec_kernel_desc plain_desc = {
        .struct_size = sizeof(cubec_kernel_desc),
        .name = "linear",
        .glsl = LINEAR_GLSL,
        .defines = relu_defines,
        .define_count = 1, /* TILE only */
        .optimize = 1,
    };
    double t0 = now_seconds();
    CUBEC_CHECK(cubec_kernel_create(device, &relu_desc, &net.linear_relu));
    CUBEC_CHECK(cubec_kernel_create(device, &plain_desc, &net.linear));
    const double compile_s = now_seconds() - t0;

    /* Parameters are uploaded once and stay on the device; the activations are only allocated. */
    t0 = now_seconds();
    CUBEC_CHECK(cubec_buffer_from(device, stream, w1, sizeof w1, &net.w1));
    CUBEC_CHECK(cubec_buffer_from(device, stream, b1, sizeof b1, &net.b1));
    CUBEC_CHECK(cubec_buffer_from(device, stream, w2, sizeof w2, &net.w2));
    CUBEC_CHECK(cubec_buffer_from(device, stream, b2, sizeof b2, &net.b2));
    CUBEC_CHECK(cubec_buffer_create(device, stream, sizeof x, &net.x));
    CUBEC_CHECK(cubec_buffer_create(device, stream, sizeof(float) * BATCH * HIDDEN, &net.hidden));
    CUBEC_CHECK(cubec_buffer_create(device, stream, sizeof logits, &net.logits));
    CUBEC_CHECK(cubec_sync(device, stream));
    const double upload_s = now_seconds() - t0;

    /* The first pass also creates the two pipelines. */
    t0 = now_seconds();
    CUBEC_CHECK(infer(device, stream, &net, x, first_logits));
    const double first_s = now_seconds() - t0;

    /* Steady state: write + forward + read, one at a time, each timed on its own. */
    double total_s = 0.0, best_s = INFINITY;
    for (int it = 0; it < ITERATIONS; it++) {
        t0 = now_seconds();
        CUBEC_CHECK(infer(device, stream, &net, x, logits));
        const double dt = now_seconds() - t0;
        total_s += dt;
        if (dt < best_s) best_s = dt;
        /* Same input, same kernels, same order: the logits must not change by a single bit. */
        if (memcmp(logits, first_logits, sizeof logits) != 0) {
            fprintf(stderr, "mlp: FAILED: iteration %d gave different logits than the first\n", it);
            goto done;
        }
    }
    const double mean_s = total_s / ITERATIONS;

    /* Throughput: ITERATIONS forward passes queued back to back, one sync at the end. cubec
     * batches them into few submissions; each pass waits for the previous one only where they
     * share a buffer. */
    t0 = now_seconds();
    for (int it = 0; it < ITERATIONS; it++) {
        CUBEC_CHECK(queue_forward(device, stream, &net));
    }
    CUBEC_CHECK(cubec_sync(device, stream));
    const double queued_s = (now_seconds() - t0) / ITERATIONS;
    CUBEC_CHECK(cubec_read(device, stream, net.logits, 0, logits, sizeof logits));
    if (memcmp(logits, first_logits, sizeof logits) != 0) {
        fprintf(stderr, "mlp: FAILED: the queued passes gave different logits than the first\n");
        goto done;
    }

    /* A graph: the forward pass captured once and replayed. The passes above were the warm-up
     * (pipelines made, buffers placed); prepare drains the stream, the pass between prepare and
     * begin runs for real, the one between begin and end is recorded. A replay is one
     * submission whatever the number of launches, ordered with the stream's writes and reads. */
    CUBEC_CHECK(cubec_graph_prepare(device, stream));
    CUBEC_CHECK(queue_forward(device, stream, &net));
    CUBEC_CHECK(cubec_graph_begin(device, stream));
    CUBEC_CHECK(queue_forward(device, stream, &net));
    CUBEC_CHECK(cubec_graph_end(device, stream, &graph));
    double replay_s = 0.0;
    for (int it = 0; it < ITERATIONS; it++) {
        CUBEC_CHECK(cubec_write(device, stream, net.x, 0, x, sizeof x));
        t0 = now_seconds();
        CUBEC_CHECK(cubec_graph_replay(device, stream, graph));
        replay_s += now_seconds() - t0;
        CUBEC_CHECK(cubec_read(device, stream, net.logits, 0, logits, sizeof logits));
        if (memcmp(logits, first_logits, sizeof logits) != 0) {
            fprintf(stderr, "mlp: FAILED: replay %d gave different logits than the first pass\n",
                    it);
            goto done;
        }
    }
    /* The GPU time of one replay, from timestamps around it (cubec_profile_*). */
    cubec_profile profile;
    cubec_profile_result measured = CUBEC_PROFILE_RESULT_INIT;
    CUBEC_CHECK(cubec_profile_begin(device, stream, &profile));
    CUBEC_CHECK(cubec_graph_replay(device, stream, graph));
    CUBEC_CHECK(cubec_profile_end(device, stream, profile, &measured));

    /* Check against the CPU. */
    double max_error = 0.0;
    int bad = 0;
    for (int i = 0; i < BATCH * OUT_FEATURES; i++) {
        const double error = fabs((double)logits[i] - logits_ref[i]);
        if (!(error <= ABS_TOLERANCE + REL_TOLERANCE * fabs(logits_ref[i]))) {
            if (bad < 5) {
                fprintf(stderr, "mlp: logits[%d][%d] = %.7g, CPU %.7g\n", i / OUT_FEATURES,
                        i % OUT_FEATURES, (double)logits[i], logits_ref[i]);
            }
            bad++;
        }
        if (error > max_error) max_error = error;
    }
    if (bad != 0) {
        fprintf(stderr, "mlp: FAILED: %d of %d logits outside tolerance (max error %.3g)\n", bad,
                BATCH * OUT_FEATURES, max_error);
        goto done;
    }

    printf("mlp: %d x %d -> Linear(%d->%d)+ReLU -> Linear(%d->%d): all %d logits match the CPU "
           "(max abs error %.2e)\n",
           BATCH, IN_FEATURES, IN_FEATURES, HIDDEN, HIDDEN, OUT_FEATURES, BATCH * OUT_FEATURES,
           max_error);
    printf("  logits[0]  ");
    for (int c = 0; c < OUT_FEATURES; c++)
        printf(" %+.4f", (double)logits[c]);
    printf("\n  argmax of the first 8 samples:");
    for (int r = 0; r < 8; r++)
        printf(" %d", argmax(&logits[r * OUT_FEATURES], OUT_FEATURES));
    printf("\n");
    const double flops =
        2.0 * BATCH * ((double)IN_FEATURES * HIDDEN + (double)HIDDEN * OUT_FEATURES);
    printf("  compile 2 kernels   %8.3f ms\n", compile_s * 1e3);
    printf("  upload weights      %8.3f ms\n", upload_s * 1e3);
    printf("  first pass          %8.3f ms (write x, 2 launches, read; includes pipelines)\n",
           first_s * 1e3);
    printf("  per iteration       %8.3f ms mean, %.3f ms best (write x, 2 launches, read; %d "
           "iterations)\n",
           mean_s * 1e3, best_s * 1e3, ITERATIONS);
    printf("  per queued pass     %8.3f ms (%d passes queued, one sync), %.2f GFLOP/s\n",
           queued_s * 1e3, ITERATIONS, flops / queued_s * 1e-9);
    printf("  replay of the graph %8.3f ms host time per call (%d replays)\n",
           replay_s / ITERATIONS * 1e3, ITERATIONS);
    printf("  one replay          %8.3f ms of %s time (cubec_profile)\n",
           (double)measured.duration_ns * 1e-6,
           measured.method == CUBEC_TIMING_DEVICE ? "device" : "host");
    exit_code = EXIT_SUCCESS;

done:
    if (device != NULL) {
        const cubec_buffer buffers[7] = {net.logits, net.hidden, net.x, net.b2,
                                         net.w2,     net.b1,     net.w1};
        for (int i = 0; i < 7; i++) {
            CUBEC_CHECK(cubec_buffer_release(device, buffers[i]));
        }
        CUBEC_CHECK(cubec_graph_destroy(device, stream, graph));
        CUBEC_CHECK(cubec_kernel_destroy(device, net.linear));
        CUBEC_CHECK(cubec_kernel_destroy(device, net.linear_relu));
        cubec_device_close(device);
    }
    return exit_code;
}
