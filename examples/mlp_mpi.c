/* mlp_mpi: data-parallel training of the network of mlp.c over MPI ranks (cubec_mpi, docs/mpi.md).
 *
 *     x [64 x 256] -> Linear(256 -> 512) + bias -> ReLU -> Linear(512 -> 10) + bias -> y
 *     loss = mean over the batch and the outputs of (y - target)^2
 *
 * Run it under MPI, one device per rank:   mpirun -np 2 ./example_mlp_mpi
 *
 * Every rank starts from the same weights (one seed) and takes its shard of the batch's rows. A
 * step runs forward and backward on the rank's rows, all-reduces the gradients (one
 * cubec_mpi_allreduce over one buffer that holds all four, summed: each rank's gradient is already
 * divided by the whole batch's size, so the sum is the average over the batch) and applies them
 * with SGD, so the ranks' weights stay identical. Then rank 0 trains again from the same start on
 * the whole batch alone, without MPI, and checks that the weights agree:
 *
 *     |w_ranks - w_single| <= 1e-5 + 1e-4 * |w_single| for every weight and bias
 *
 * (the two runs add the same products in another order: the batch's sum is split between the
 * ranks; float rounding differs by a few ulps per step, far inside the tolerance).
 *
 * The kernels are plain (one invocation per output element): the point here is the data-parallel
 * step, mlp.c shows a tiled matmul. */
#include <cubec/cubec.h>
#include <cubec/cubec_mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 64
#define IN_FEATURES 256
#define HIDDEN 512
#define OUT_FEATURES 10
#define STEPS 8
#define LEARNING_RATE 0.05f
#define ABS_TOLERANCE 1e-5
#define REL_TOLERANCE 1e-4
#define GROUP 64

/* c[i][j] = sum_k a[i*sa_i + k*sa_k] * b[k*sb_k + j*sb_j] (+ bias[j]) (ReLU) (zero where
 * mask[i][j] <= 0): with the strides one kernel multiplies by a transpose as well, which the
 * backward pass needs (h^T dy, dy W2^T, x^T dh). Flags: 1 bias, 2 ReLU, 4 mask. */
static const char MATMUL_GLSL[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(set = 0, binding = 0) readonly buffer A { float a[]; };\n"
    "layout(set = 0, binding = 1) readonly buffer B { float b[]; };\n"
    "layout(set = 0, binding = 2) readonly buffer Bias { float bias[]; };\n"
    "layout(set = 0, binding = 3) readonly buffer Mask { float mask[]; };\n"
    "layout(set = 0, binding = 4) writeonly buffer C { float c[]; };\n"
    "CUBEC_INFO(uint m; uint n; uint k; uint sa_i; uint sa_k; uint sb_k; uint sb_j; uint flags;)\n"
    "void main()\n"
    "{\n"
    "    uint idx = gl_GlobalInvocationID.x;\n"
    "    if (idx >= info.m * info.n) return;\n"
    "    uint i = idx / info.n, j = idx % info.n;\n"
    "    float acc = 0.0;\n"
    "    for (uint k = 0; k < info.k; k++)\n"
    "        acc += a[i * info.sa_i + k * info.sa_k] * b[k * info.sb_k + j * info.sb_j];\n"
    "    if ((info.flags & 1u) != 0u) acc += bias[j];\n"
    "    if ((info.flags & 2u) != 0u) acc = max(acc, 0.0);\n"
    "    if ((info.flags & 4u) != 0u && mask[idx] <= 0.0) acc = 0.0;\n"
    "    c[idx] = acc;\n"
    "}\n";

/* The loss's gradient: dy = (y - target) * scale, scale = 2 / (BATCH * OUT_FEATURES). */
static const char GRAD_GLSL[] = "#version 450\n"
                                "layout(local_size_x = 64) in;\n"
                                "layout(set = 0, binding = 0) readonly buffer Y { float y[]; };\n"
                                "layout(set = 0, binding = 1) readonly buffer T { float t[]; };\n"
                                "layout(set = 0, binding = 2) writeonly buffer D { float d[]; };\n"
                                "CUBEC_INFO(uint n; float scale;)\n"
                                "void main()\n"
                                "{\n"
                                "    uint i = gl_GlobalInvocationID.x;\n"
                                "    if (i < info.n) d[i] = (y[i] - t[i]) * info.scale;\n"
                                "}\n";

/* SGD: w -= lr * g. */
static const char SGD_GLSL[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(set = 0, binding = 0) buffer W { float w[]; };\n"
                               "layout(set = 0, binding = 1) readonly buffer G { float g[]; };\n"
                               "CUBEC_INFO(uint n; float lr;)\n"
                               "void main()\n"
                               "{\n"
                               "    uint i = gl_GlobalInvocationID.x;\n"
                               "    if (i < info.n) w[i] -= info.lr * g[i];\n"
                               "}\n";

typedef struct matmul_info {
    uint32_t m, n, k, sa_i, sa_k, sb_k, sb_j, flags;
} matmul_info;

typedef struct scalar_info {
    uint32_t n;
    float value;
} scalar_info;

/* The parameters (and, with the same layout, their gradients) in one buffer: W1, b1, W2, b2, each
 * at an offset a view can start at. One buffer makes the gradients' all-reduce a single call. */
enum { P_W1, P_B1, P_W2, P_B2, P_COUNT };
static const uint64_t PARAM_FLOATS[P_COUNT] = {(uint64_t)IN_FEATURES * HIDDEN, HIDDEN,
                                               (uint64_t)HIDDEN *OUT_FEATURES, OUT_FEATURES};

typedef struct layout {
    uint64_t offset[P_COUNT]; /* bytes */
    uint64_t bytes;           /* the whole buffer */
} layout;

static layout make_layout(uint64_t align)
{
    layout l;
    uint64_t at = 0;
    for (int p = 0; p < P_COUNT; p++) {
        at = (at + align - 1) / align * align;
        l.offset[p] = at;
        at += PARAM_FLOATS[p] * sizeof(float);
    }
    l.bytes = at;
    return l;
}

typedef struct kernels {
    cubec_kernel matmul, grad, sgd;
} kernels;

/* xorshift32; a float uniform in [-scale, scale). */
static float random_float(uint32_t *state, float scale)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return ((float)(x >> 8) / (float)(1u << 23) - 1.0f) * scale;
}

static cubec_status launch(cubec_device *d, cubec_kernel k, const cubec_buffer *buffers,
                           uint32_t count, const void *info, size_t info_size, uint64_t threads)
{
    cubec_launch_desc desc = CUBEC_LAUNCH_DESC_INIT;
    desc.kernel = k;
    desc.buffers = buffers;
    desc.buffer_count = count;
    desc.info = info;
    desc.info_size = info_size;
    desc.groups[0] = (uint32_t)((threads + GROUP - 1) / GROUP);
    desc.groups[1] = 1;
    desc.groups[2] = 1;
    return cubec_launch(d, CUBEC_STREAM_CURRENT, &desc);
}

static cubec_status matmul(cubec_device *d, const kernels *k, cubec_buffer a, cubec_buffer b,
                           cubec_buffer bias, cubec_buffer mask, cubec_buffer c, matmul_info info)
{
    const cubec_buffer buffers[5] = {a, b, bias, mask, c};
    return launch(d, k->matmul, buffers, 5, &info, sizeof info, (uint64_t)info.m * info.n);
}

/* One rank's training: `rows` rows of the batch from row `first`, STEPS steps; the gradients
 * summed over the ranks of `comm` (NULL: this process alone). The final parameters land in
 * `params` (the initial ones on entry). */
static int train(cubec_device *d, const kernels *k, cubec_mpi_comm *comm, const layout *l,
                 const float *x, const float *target, uint64_t first, uint64_t rows, float *params,
                 double out_loss[2])
{
    const cubec_stream s = CUBEC_STREAM_CURRENT;
    const uint32_t n = (uint32_t)rows;
    cubec_buffer xb, tb, h, y, dy, dh, ones, pb, gb, dummy, pv[P_COUNT], gv[P_COUNT];
    float *host_ones = malloc((rows + 1) * sizeof(float));
    float *host_y = malloc((rows * OUT_FEATURES + 1) * sizeof(float));
    if (!host_ones || !host_y) {
        fprintf(stderr, "mlp_mpi: out of host memory\n");
        return 0;
    }
    for (uint64_t i = 0; i < rows; i++)
        host_ones[i] = 1.0f;
    CUBEC_CHECK(
        cubec_buffer_from(d, s, x + first * IN_FEATURES, rows * IN_FEATURES * sizeof(float), &xb));
    CUBEC_CHECK(cubec_buffer_from(d, s, target + first * OUT_FEATURES,
                                  rows * OUT_FEATURES * sizeof(float), &tb));
    CUBEC_CHECK(cubec_buffer_create(d, s, rows * HIDDEN * sizeof(float), &h));
    CUBEC_CHECK(cubec_buffer_create(d, s, rows * OUT_FEATURES * sizeof(float), &y));
    CUBEC_CHECK(cubec_buffer_create(d, s, rows * OUT_FEATURES * sizeof(float), &dy));
    CUBEC_CHECK(cubec_buffer_create(d, s, rows * HIDDEN * sizeof(float), &dh));
    CUBEC_CHECK(cubec_buffer_from(d, s, host_ones, rows * sizeof(float), &ones));
    CUBEC_CHECK(cubec_buffer_from(d, s, params, l->bytes, &pb));
    CUBEC_CHECK(cubec_buffer_create(d, s, l->bytes, &gb));
    CUBEC_CHECK(cubec_buffer_create(d, s, 16, &dummy)); /* a binding the launch does not use */
    for (int p = 0; p < P_COUNT; p++) {
        CUBEC_CHECK(cubec_buffer_view(d, pb, l->offset[p], PARAM_FLOATS[p] * 4, &pv[p]));
        CUBEC_CHECK(cubec_buffer_view(d, gb, l->offset[p], PARAM_FLOATS[p] * 4, &gv[p]));
    }
    /* The layout has no gaps to reduce when the offsets are packed; where alignment left gaps,
     * they are zero on every rank (cubec_fill), so their sum is zero too. */
    CUBEC_CHECK(cubec_fill(d, s, gb, 0, l->bytes, 0));
    const float scale = 2.0f / (float)(BATCH * OUT_FEATURES);
    double loss[2] = {0.0, 0.0}; /* the first and the last step's */
    for (int step = 0; step < STEPS; step++) {
        /* Forward: h = relu(x W1 + b1), y = h W2 + b2. */
        CUBEC_CHECK(matmul(d, k, xb, pv[P_W1], pv[P_B1], dummy, h,
                           (matmul_info){n, HIDDEN, IN_FEATURES, IN_FEATURES, 1, HIDDEN, 1, 3}));
        CUBEC_CHECK(matmul(d, k, h, pv[P_W2], pv[P_B2], dummy, y,
                           (matmul_info){n, OUT_FEATURES, HIDDEN, HIDDEN, 1, OUT_FEATURES, 1, 1}));
        if (step == 0 || step == STEPS - 1) {
            /* The loss of the first and last steps' forward passes, for the printout. */
            CUBEC_CHECK(cubec_read(d, s, y, 0, host_y, rows * OUT_FEATURES * sizeof(float)));
            for (uint64_t i = 0; i < rows * OUT_FEATURES; i++) {
                const double e = (double)host_y[i] - (double)target[first * OUT_FEATURES + i];
                loss[step != 0] += e * e;
            }
        }
        /* Backward. dy = 2 (y - t) / (BATCH * OUT): divided by the whole batch on every rank. */
        const cubec_buffer grad_buffers[3] = {y, tb, dy};
        const scalar_info grad_info = {n * OUT_FEATURES, scale};
        CUBEC_CHECK(launch(d, k->grad, grad_buffers, 3, &grad_info, sizeof grad_info,
                           (uint64_t)n * OUT_FEATURES));
        /* dW2 = h^T dy, db2 = 1^T dy, dh = (dy W2^T) where h > 0, dW1 = x^T dh, db1 = 1^T dh. */
        CUBEC_CHECK(matmul(d, k, h, dy, dummy, dummy, gv[P_W2],
                           (matmul_info){HIDDEN, OUT_FEATURES, n, 1, HIDDEN, OUT_FEATURES, 1, 0}));
        CUBEC_CHECK(matmul(d, k, ones, dy, dummy, dummy, gv[P_B2],
                           (matmul_info){1, OUT_FEATURES, n, 0, 1, OUT_FEATURES, 1, 0}));
        CUBEC_CHECK(
            matmul(d, k, dy, pv[P_W2], dummy, h, dh,
                   (matmul_info){n, HIDDEN, OUT_FEATURES, OUT_FEATURES, 1, 1, OUT_FEATURES, 4}));
        CUBEC_CHECK(matmul(d, k, xb, dh, dummy, dummy, gv[P_W1],
                           (matmul_info){IN_FEATURES, HIDDEN, n, 1, IN_FEATURES, HIDDEN, 1, 0}));
        CUBEC_CHECK(matmul(d, k, ones, dh, dummy, dummy, gv[P_B1],
                           (matmul_info){1, HIDDEN, n, 0, 1, HIDDEN, 1, 0}));
        /* The ranks' gradients summed in place: the average over the whole batch. It reads what
         * the launches above wrote and the SGD launch below reads its result (stream order). */
        if (comm)
            CUBEC_CHECK(
                cubec_mpi_allreduce(comm, s, gb, gb, l->bytes / 4, CUBEC_MPI_F32, CUBEC_MPI_SUM));
        const cubec_buffer sgd_buffers[2] = {pb, gb};
        const scalar_info sgd_info = {(uint32_t)(l->bytes / 4), LEARNING_RATE};
        CUBEC_CHECK(launch(d, k->sgd, sgd_buffers, 2, &sgd_info, sizeof sgd_info, l->bytes / 4));
    }
    CUBEC_CHECK(cubec_read(d, s, pb, 0, params, l->bytes));
    out_loss[0] = loss[0];
    out_loss[1] = loss[1];
    for (int p = 0; p < P_COUNT; p++) {
        CUBEC_CHECK(cubec_buffer_release(d, pv[p]));
        CUBEC_CHECK(cubec_buffer_release(d, gv[p]));
    }
    const cubec_buffer all[10] = {xb, tb, h, y, dy, dh, ones, pb, gb, dummy};
    for (int i = 0; i < 10; i++)
        CUBEC_CHECK(cubec_buffer_release(d, all[i]));
    free(host_ones);
    free(host_y);
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    cubec_device *d = NULL;
    CUBEC_CHECK(cubec_device_open(NULL, &d));
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    CUBEC_CHECK(cubec_device_get_info(d, &info));
    const layout l = make_layout(info.storage_offset_alignment ? info.storage_offset_alignment : 4);

    /* The same data and initial weights on every rank: one seed. Weights uniform in
     * +-1/sqrt(fan_in), as in mlp.c; targets uniform in +-1. */
    static float x[BATCH * IN_FEATURES], target[BATCH * OUT_FEATURES];
    float *initial = calloc(1, l.bytes), *ranks = malloc(l.bytes), *single = malloc(l.bytes);
    if (!initial || !ranks || !single) {
        fprintf(stderr, "mlp_mpi: out of host memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    uint32_t seed = 7u;
    for (int i = 0; i < BATCH * IN_FEATURES; i++)
        x[i] = random_float(&seed, 1.0f);
    for (int i = 0; i < BATCH * OUT_FEATURES; i++)
        target[i] = random_float(&seed, 1.0f);
    const float fan_scale[P_COUNT] = {1.0f / sqrtf((float)IN_FEATURES), 0.1f,
                                      1.0f / sqrtf((float)HIDDEN), 0.1f};
    for (int p = 0; p < P_COUNT; p++)
        for (uint64_t i = 0; i < PARAM_FLOATS[p]; i++)
            initial[l.offset[p] / 4 + i] = random_float(&seed, fan_scale[p]);

    kernels k;
    const cubec_kernel_desc descs[3] = {
        {.struct_size = sizeof(cubec_kernel_desc), .name = "matmul", .glsl = MATMUL_GLSL},
        {.struct_size = sizeof(cubec_kernel_desc), .name = "mse_grad", .glsl = GRAD_GLSL},
        {.struct_size = sizeof(cubec_kernel_desc), .name = "sgd", .glsl = SGD_GLSL},
    };
    CUBEC_CHECK(cubec_kernel_create(d, &descs[0], &k.matmul));
    CUBEC_CHECK(cubec_kernel_create(d, &descs[1], &k.grad));
    CUBEC_CHECK(cubec_kernel_create(d, &descs[2], &k.sgd));

    cubec_mpi_comm *comm = NULL;
    CUBEC_CHECK(cubec_mpi_comm_create(d, MPI_COMM_WORLD, NULL, &comm));
    cubec_mpi_comm_info comm_info = CUBEC_MPI_COMM_INFO_INIT;
    CUBEC_CHECK(cubec_mpi_comm_get_info(comm, &comm_info));
    uint64_t first, rows;
    CUBEC_CHECK(cubec_mpi_shard(comm, BATCH, rank, &first, &rows));

    /* Data-parallel: this rank's rows, gradients summed over the ranks. */
    memcpy(ranks, initial, l.bytes);
    double loss_part[2] = {0.0, 0.0}, loss_ranks[2] = {0.0, 0.0};
    int ok = train(d, &k, comm, &l, x, target, first, rows, ranks, loss_part);
    MPI_Allreduce(loss_part, loss_ranks, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

    /* Rank 0: the same training on the whole batch in this process alone, and the comparison. */
    int passed = 0;
    if (rank == 0 && ok) {
        memcpy(single, initial, l.bytes);
        double loss_single[2] = {0.0, 0.0};
        ok = train(d, &k, NULL, &l, x, target, 0, BATCH, single, loss_single);
        double max_error = 0.0, max_change = 0.0;
        int bad = 0;
        for (int p = 0; p < P_COUNT && ok; p++) {
            for (uint64_t i = 0; i < PARAM_FLOATS[p]; i++) {
                const uint64_t at = l.offset[p] / 4 + i;
                const double a = ranks[at], b = single[at];
                const double error = fabs(a - b);
                if (error > max_error) max_error = error;
                if (fabs(b - initial[at]) > max_change) max_change = fabs(b - initial[at]);
                if (!(error <= ABS_TOLERANCE + REL_TOLERANCE * fabs(b)) && bad++ < 5)
                    fprintf(stderr,
                            "mlp_mpi: parameter %d[%llu]: %d ranks %.8g, one process %.8g\n", p,
                            (unsigned long long)i, size, a, b);
            }
        }
        for (int i = 0; i < 2; i++) {
            loss_ranks[i] /= (double)(BATCH * OUT_FEATURES);
            loss_single[i] /= (double)(BATCH * OUT_FEATURES);
        }
        printf("mlp_mpi: %d ranks (MPIX_Query_cuda_support: %d), batch %d (%llu rows on rank 0), "
               "%d SGD steps\n",
               size, comm_info.cuda_aware, BATCH, (unsigned long long)rows, STEPS);
        printf("  loss: %.6f at the first step, %.6f at the last over the ranks, %.6f in one "
               "process\n",
               loss_ranks[0], loss_ranks[1], loss_single[1]);
        printf("  weights: max |ranks - one process| = %.3g (tolerance %.0e + %.0e x |w|), "
               "largest change from the start %.3g\n",
               max_error, ABS_TOLERANCE, REL_TOLERANCE, max_change);
        /* The weights must have moved and the loss fallen, or the comparison would prove
         * nothing. */
        passed = ok && bad == 0 && max_change > 1e-3 &&
                 fabs(loss_ranks[1] - loss_single[1]) < 1e-4 && loss_single[1] < loss_single[0];
        if (!passed) fprintf(stderr, "mlp_mpi: FAILED (%d parameters outside tolerance)\n", bad);
    }
    MPI_Bcast(&passed, 1, MPI_INT, 0, MPI_COMM_WORLD);

    cubec_mpi_comm_destroy(comm);
    CUBEC_CHECK(cubec_kernel_destroy(d, k.sgd));
    CUBEC_CHECK(cubec_kernel_destroy(d, k.grad));
    CUBEC_CHECK(cubec_kernel_destroy(d, k.matmul));
    cubec_device_close(d);
    free(initial);
    free(ranks);
    free(single);
    MPI_Finalize();
    return passed ? EXIT_SUCCESS : EXIT_FAILURE;
}
