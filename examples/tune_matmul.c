/* tune_matmul: let cubec pick the fastest shape of a matrix multiply for this device.
 *
 * The kernel (examples/kernels/tune_matmul.comp) computes c = a * b with a workgroup size and a
 * tile shape given by defines. Which shape is fastest depends on the device (its cores, its
 * caches, its shared memory), so the program offers several as candidates to a cubec tuner:
 *   1. each candidate is a callback that queues one launch of its own kernel on a stream;
 *   2. cubec_tune_choose measures every candidate with device-timed profiles (a warm-up run,
 *      then several timed runs each) and returns the index of the one with the lowest median;
 *   3. the choice is stored in cubec's cache directory (the one compiled kernels go to: set
 *      CUBEC_CACHE_DIR, or `none` to turn it off), keyed by this device and driver, the tuner's
 *      name and the problem's shape. Run the program again: it finds the stored choice, measures
 *      nothing, and compiles only the winner's kernel;
 *   4. the program runs the winner and checks its result against the CPU.
 * The request's checksum is a hash of the kernel file: edit the file and the next run measures
 * again.
 *
 * usage: example_tune_matmul [SIZE [KERNEL_FILE]]
 *   SIZE         m = n = k (default 128: lavapipe, which runs kernels on the CPU, takes about
 *                0.1 s per multiply then; try 2048 on a GPU); each size is a key of its own
 *   KERNEL_FILE  default: the file in the source tree */
#include <cubec/cubec.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TUNE_MATMUL_KERNEL
#define TUNE_MATMUL_KERNEL "examples/kernels/tune_matmul.comp"
#endif

#define DEFAULT_SIZE 128
#define MAX_SIZE 8192
/* |gpu - cpu| <= ABS_TOLERANCE_PER_TERM * k + REL_TOLERANCE * |cpu|: the GPU sums k float
 * products in float, in an order that depends on the candidate; the reference sums in double. */
#define ABS_TOLERANCE_PER_TERM 2e-6
#define REL_TOLERANCE 1e-4

/* The candidates: workgroup size and outputs per invocation. TK = 16 for all. */
typedef struct shape {
    const char *name;
    uint32_t wg_x, wg_y, rm, rn;
} shape;

static const shape SHAPES[] = {
    {"wg8x8_r1x1", 8, 8, 1, 1},     {"wg16x16_r1x1", 16, 16, 1, 1}, {"wg8x8_r2x2", 8, 8, 2, 2},
    {"wg16x16_r2x2", 16, 16, 2, 2}, {"wg16x16_r4x4", 16, 16, 4, 4}, {"wg32x8_r1x4", 32, 8, 1, 4},
};
#define SHAPE_COUNT (sizeof SHAPES / sizeof SHAPES[0])

typedef struct matmul_info {
    uint32_t m, n, k;
} matmul_info;

/* What a candidate's callback needs. Its kernel is compiled at its first run: when the choice
 * comes from the cache, only the winner's kernel is ever compiled. */
typedef struct candidate {
    const shape *shape;
    uint32_t size; /* m = n = k */
    const char *source;
    cubec_kernel kernel;
    cubec_buffer a, b, c;
    int compiled;
} candidate;

static cubec_status compile(cubec_device *device, candidate *c)
{
    char wg_x[16], wg_y[16], rm[16], rn[16];
    snprintf(wg_x, sizeof wg_x, "%" PRIu32, c->shape->wg_x);
    snprintf(wg_y, sizeof wg_y, "%" PRIu32, c->shape->wg_y);
    snprintf(rm, sizeof rm, "%" PRIu32, c->shape->rm);
    snprintf(rn, sizeof rn, "%" PRIu32, c->shape->rn);
    const cubec_define defines[] = {
        {"WG_X", wg_x}, {"WG_Y", wg_y}, {"RM", rm}, {"RN", rn}, {"TK", "16"}};
    const cubec_kernel_desc desc = {.struct_size = sizeof(cubec_kernel_desc),
                                    .name = c->shape->name,
                                    .glsl = c->source,
                                    .defines = defines,
                                    .define_count = 5,
                                    .optimize = 1};
    cubec_status status = cubec_kernel_create(device, &desc, &c->kernel);
    if (status == NULL) c->compiled = 1;
    return status;
}

/* The candidate's callback: one launch, one workgroup per BM x BN block of c. An error it
 * returns (a kernel that does not compile on this device, say) rejects the candidate. */
static cubec_status run_candidate(cubec_device *device, cubec_stream stream, void *user)
{
    candidate *c = user;
    if (!c->compiled) {
        cubec_status status = compile(device, c);
        if (status != NULL) return status;
    }
    const uint32_t bm = c->shape->wg_y * c->shape->rm, bn = c->shape->wg_x * c->shape->rn;
    const uint32_t n = c->size;
    const matmul_info info = {n, n, n};
    const cubec_buffer buffers[3] = {c->a, c->b, c->c};
    const cubec_launch_desc launch = {.struct_size = sizeof(cubec_launch_desc),
                                      .kernel = c->kernel,
                                      .buffers = buffers,
                                      .buffer_count = 3,
                                      .info = &info,
                                      .info_size = sizeof info,
                                      .groups = {(n + bn - 1) / bn, (n + bm - 1) / bm, 1}};
    return cubec_launch(device, stream, &launch);
}

/* The whole file, NUL-terminated, or NULL. */
static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size >= 0 && fseek(f, 0, SEEK_SET) == 0) {
            text = malloc((size_t)size + 1);
            if (text && fread(text, 1, (size_t)size, f) != (size_t)size) {
                free(text);
                text = NULL;
            }
            if (text) text[size] = '\0';
        }
    }
    fclose(f);
    return text;
}

/* 64-bit FNV-1a of the kernel source: the request's checksum. */
static uint64_t fnv1a(const char *text)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h;
}

static float random_float(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return (float)(x >> 8) / (float)(1u << 23) - 1.0f;
}

int main(int argc, char **argv)
{
    const int size = argc > 1 ? atoi(argv[1]) : DEFAULT_SIZE;
    const char *path = argc > 2 ? argv[2] : TUNE_MATMUL_KERNEL;
    if (size < 1 || size > MAX_SIZE) {
        fprintf(stderr, "tune_matmul: SIZE must be 1..%d, not '%s'\n", MAX_SIZE, argv[1]);
        return EXIT_FAILURE;
    }
    const size_t n = (size_t)size, bytes = n * n * sizeof(float);
    const cubec_stream stream = CUBEC_STREAM_CURRENT;
    int exit_code = EXIT_FAILURE;
    cubec_device *device = NULL;
    cubec_tuner *tuner = NULL;
    cubec_buffer a = {0}, b = {0}, c = {0};
    candidate cands[SHAPE_COUNT];
    memset(cands, 0, sizeof cands);
    char *source = read_file(path);
    float *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes);
    if (!source) {
        fprintf(stderr, "tune_matmul: cannot read the kernel file %s\n", path);
        goto done;
    }
    if (!ha || !hb || !hc) {
        fprintf(stderr, "tune_matmul: out of host memory\n");
        goto done;
    }
    uint32_t seed = 11u;
    for (size_t i = 0; i < n * n; i++)
        ha[i] = random_float(&seed);
    for (size_t i = 0; i < n * n; i++)
        hb[i] = random_float(&seed);

    CUBEC_CHECK(cubec_device_open(NULL, &device));
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    CUBEC_CHECK(cubec_device_get_info(device, &info));
    printf("device: %s (%s)\n", info.name, info.driver);
    CUBEC_CHECK(cubec_buffer_from(device, stream, ha, bytes, &a));
    CUBEC_CHECK(cubec_buffer_from(device, stream, hb, bytes, &b));
    CUBEC_CHECK(cubec_buffer_create(device, stream, bytes, &c));

    /* One warm-up run and five timed runs per candidate (the defaults are 2 and 10). */
    const cubec_tuner_desc tuner_desc = {.struct_size = sizeof(cubec_tuner_desc),
                                         .name = "example.matmul",
                                         .warmup = 1,
                                         .samples = 5};
    CUBEC_CHECK(cubec_tuner_create(device, &tuner_desc, &tuner));
    cubec_tune_candidate tc[SHAPE_COUNT];
    for (size_t i = 0; i < SHAPE_COUNT; i++) {
        cands[i] = (candidate){
            .shape = &SHAPES[i], .size = (uint32_t)n, .source = source, .a = a, .b = b, .c = c};
        tc[i] = (cubec_tune_candidate){SHAPES[i].name, run_candidate, &cands[i]};
    }
    char key[64];
    snprintf(key, sizeof key, "m=%zu,n=%zu,k=%zu", n, n, n);
    const cubec_tune_request request = {.struct_size = sizeof(cubec_tune_request),
                                        .key = key,
                                        .candidates = tc,
                                        .candidate_count = SHAPE_COUNT,
                                        .checksum = fnv1a(source)};
    cubec_tune_result choice = CUBEC_TUNE_RESULT_INIT;
    CUBEC_CHECK(cubec_tune_choose(tuner, stream, &request, &choice));

    if (choice.source == CUBEC_TUNE_MEASURED) {
        printf("measured %zu candidates for %s:\n", SHAPE_COUNT, key);
        for (uint32_t i = 0; i < SHAPE_COUNT; i++) {
            cubec_tune_outcome o = CUBEC_TUNE_OUTCOME_INIT;
            CUBEC_CHECK(cubec_tune_outcome_get(tuner, i, &o));
            if (o.state == CUBEC_TUNE_TIMED)
                printf("  %-14s median %9.1f us  (%.2f GFLOP/s)%s\n", SHAPES[i].name,
                       o.median_ns / 1e3, 2.0 * (double)(n * n * n) / (double)o.median_ns,
                       i == choice.index ? "  <- chosen" : "");
            else
                printf("  %-14s rejected: %s\n", SHAPES[i].name, o.reason);
        }
        printf("choice: %s (measured now; stored for the next run)\n", SHAPES[choice.index].name);
    } else {
        printf("choice: %s (stored by an earlier run: nothing measured, median %.1f us then)\n",
               SHAPES[choice.index].name, choice.median_ns / 1e3);
    }

    /* The caller runs the winner: once more, on fresh output, and checks it. */
    CUBEC_CHECK(cubec_fill(device, stream, c, 0, bytes, 0));
    CUBEC_CHECK(run_candidate(device, stream, &cands[choice.index]));
    CUBEC_CHECK(cubec_read(device, stream, c, 0, hc, bytes));
    size_t compiled = 0;
    for (size_t i = 0; i < SHAPE_COUNT; i++)
        compiled += (size_t)cands[i].compiled;
    for (size_t r = 0; r < n; r++) {
        for (size_t col = 0; col < n; col++) {
            double want = 0.0;
            for (size_t j = 0; j < n; j++)
                want += (double)ha[r * n + j] * (double)hb[j * n + col];
            double got = hc[r * n + col];
            if (fabs(got - want) >
                ABS_TOLERANCE_PER_TERM * (double)n + REL_TOLERANCE * fabs(want)) {
                fprintf(stderr, "tune_matmul: FAILED: c[%zu][%zu] = %.7g, the CPU says %.7g\n", r,
                        col, got, want);
                goto done;
            }
        }
    }
    printf("result of %s checked against the CPU: OK (%zu of %zu kernels compiled)\n",
           SHAPES[choice.index].name, compiled, SHAPE_COUNT);
    exit_code = EXIT_SUCCESS;

done:
    CUBEC_CHECK(cubec_tuner_destroy(tuner));
    for (size_t i = 0; i < SHAPE_COUNT; i++)
        if (cands[i].compiled) CUBEC_CHECK(cubec_kernel_destroy(device, cands[i].kernel));
    if (device) {
        CUBEC_CHECK(cubec_buffer_release(device, a));
        CUBEC_CHECK(cubec_buffer_release(device, b));
        CUBEC_CHECK(cubec_buffer_release(device, c));
    }
    cubec_device_close(device);
    free(source);
    free(ha);
    free(hb);
    free(hc);
    return exit_code;
}
