/* `cubec bench`: the catalog of figures, the arguments, and the runner that measures each figure
 * on cubec and on the raw Vulkan baseline in the same process (see bench.h and bench_figure.h).
 *
 * Each side of each figure gets its own freshly opened context (a cubec device or a raw Vulkan
 * context), closed again before the other side's is opened: never two VkDevices at once, and no
 * figure's failure or leftovers (a lost device, pool pages, queued work) can colour another. */
#include "bench.h"

#include "bench_figure.h"
#include "bench_report.h"
#include "raw_vulkan.h"

#include <cubec/cubec.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cubec_git.h" /* CUBEC_GIT_DESCRIBE, generated at build time */

typedef struct figure_def {
    const char *name;
    const char *unit;
    int lower_is_better;
    const char *method; /* "host": host time of calls; "wall": until the work is done */
    uint32_t warmup;
    uint32_t reps;
    uint32_t quick_reps;
} figure_def;

/* The figures of BENCHMARKS.md that the public API can express so far (graph.* and
 * compile.warm_disk wait for their APIs). Repetitions are odd so that the median is a sample. */
static const figure_def figures[] = {
    {"launch.enqueue", "us", 1, "host", 1, 11, 3},
    {"launch.roundtrip", "us", 1, "wall", 20, 501, 51},
    {"launch.device_dependent", "us", 1, "wall", 1, 21, 3},
    {"launch.device_independent", "us", 1, "wall", 1, 21, 3},
    {"write.h2d", "GB/s", 0, "wall", 1, 11, 3},
    {"read.d2h", "GB/s", 0, "wall", 1, 11, 3},
    {"copy.d2d", "GB/s", 0, "wall", 1, 7, 3},
    {"kernel.vector_add", "GB/s", 0, "wall", 1, 11, 3},
    {"alloc.pair", "ns", 1, "host", 1, 11, 3},
    {"compile.cold", "ms", 1, "wall", 1, 11, 3},
    {"compile.warm_memory", "ms", 1, "wall", 3, 51, 5},
};
#define FIGURE_COUNT (sizeof figures / sizeof figures[0])

typedef struct options {
    int json;
    int quick;
    const char *filters[16]; /* a figure runs if its name contains any of them (or none given) */
    uint32_t filter_count;
} options;

static void usage(FILE *out)
{
    fprintf(out, "usage: cubec bench [--json] [--quick] [--filter SUBSTR]...\n"
                 "  --json           print the JSON object of BENCHMARKS.md instead of a table\n"
                 "  --quick          fewer repetitions and smaller sizes (a smoke test)\n"
                 "  --filter SUBSTR  run only the figures whose name contains SUBSTR\n"
                 "figures:");
    for (size_t i = 0; i < FIGURE_COUNT; i++)
        fprintf(out, " %s", figures[i].name);
    fputc('\n', out);
}

/* Returns 0 on success, 2 on a usage error (after printing it), -1 for --help. */
static int parse_args(int argc, char **argv, options *opt)
{
    memset(opt, 0, sizeof *opt);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--json") == 0) {
            opt->json = 1;
        } else if (strcmp(arg, "--quick") == 0) {
            opt->quick = 1;
        } else if (strcmp(arg, "--filter") == 0 && i + 1 < argc) {
            if (opt->filter_count == sizeof opt->filters / sizeof opt->filters[0]) {
                fprintf(stderr, "cubec bench: too many --filter options\n");
                return 2;
            }
            opt->filters[opt->filter_count++] = argv[++i];
        } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return -1;
        } else {
            fprintf(stderr, "cubec bench: unknown or incomplete argument \"%s\"\n", arg);
            usage(stderr);
            return 2;
        }
    }
    return 0;
}

static int selected(const options *opt, const char *name)
{
    if (opt->filter_count == 0) return 1;
    for (uint32_t i = 0; i < opt->filter_count; i++) {
        if (strstr(name, opt->filters[i])) return 1;
    }
    return 0;
}

static const char *type_name(cubec_device_type type)
{
    switch (type) {
    case CUBEC_DEVICE_TYPE_CPU: return "cpu";
    case CUBEC_DEVICE_TYPE_DISCRETE: return "discrete";
    case CUBEC_DEVICE_TYPE_INTEGRATED: return "integrated";
    case CUBEC_DEVICE_TYPE_VIRTUAL: return "virtual";
    default: return "other";
    }
}

/* The sizes of BENCHMARKS.md for this device, clamped to what one binding may hold, so that both
 * sides get the same work wherever the suite runs. */
static void make_params(const cubec_device_info *info, int quick, bench_params *p)
{
    memset(p, 0, sizeof *p);
    p->quick = quick;
    p->gpu = info->type != CUBEC_DEVICE_TYPE_CPU;
    p->batch = info->tasks_max ? info->tasks_max : 32;
    p->enqueue_launches = 10000;
    p->chain_launches = 1000;
    p->transfer_bytes = 64ull << 20;
    p->copy_bytes = p->gpu ? 1ull << 30 : 256ull << 20;
    p->vector_n = p->gpu ? 1ull << 28 : 1ull << 24;
    if (quick) {
        /* The smoke test keeps every path (a copy larger than lavapipe's 128 MiB binding limit
         * included) but moves less data. */
        p->copy_bytes = p->gpu ? 256ull << 20 : 160ull << 20;
        p->vector_n = p->gpu ? 1ull << 26 : 1ull << 22;
    }
    uint64_t max_binding = info->max_storage_buffer_range;
    if (info->max_allocation_size && info->max_allocation_size < max_binding)
        max_binding = info->max_allocation_size;
    while (max_binding && p->vector_n > 4 && p->vector_n * 4 > max_binding)
        p->vector_n /= 2;
    /* vector_n stays a power of two of at least 4, so a multiple of 4: the kernel reads and writes
     * vec4s. Groups: min(ceil(n4 / 256), 131072, maxComputeWorkGroupCount[0]) on both sides. */
    const uint64_t n4 = p->vector_n / 4;
    uint64_t groups = (n4 + BENCH_VECTOR_WG - 1) / BENCH_VECTOR_WG;
    uint64_t max_groups = info->max_workgroup_count[0] ? info->max_workgroup_count[0] : 65535;
    if (max_groups > BENCH_VECTOR_MAX_GROUPS) max_groups = BENCH_VECTOR_MAX_GROUPS;
    p->vector_groups = (uint32_t)(groups < max_groups ? groups : max_groups);
    p->alloc_min_bytes = 256;
    p->alloc_max_bytes = 16ull << 20;
    p->alloc_cycles = quick ? 4 : 20;
    /* Unique per run, so that no disk cache (cubec's or the driver's) has seen a salted kernel. */
    p->salt_base = ((uint32_t)time(NULL) ^ (uint32_t)getpid() * 2654435761u) & 0x3fffffffu;
}

static const bench_impl *find_impl(const bench_impl_entry *list, const char *name)
{
    for (; list->name; list++) {
        if (strcmp(list->name, name) == 0) return list->impl;
    }
    return NULL;
}

typedef struct progress {
    int tty;
    size_t index, total;
} progress;

/* `label`: the side being measured, NULL when the figure starts. */
static void progress_show(const progress *pr, const char *name, const char *label, uint32_t rep,
                          uint32_t reps)
{
    if (pr->tty) {
        fprintf(stderr, "\r\033[K[%zu/%zu] %s  %s %u/%u", pr->index, pr->total, name,
                label ? label : "", rep, reps);
        fflush(stderr);
    } else if (rep == 0 && label == NULL) {
        fprintf(stderr, "cubec bench: [%zu/%zu] %s\n", pr->index, pr->total, name);
    }
}

static void progress_clear(const progress *pr)
{
    if (pr->tty) fputs("\r\033[K", stderr);
}

/* The two sides of a figure: index 0 is cubec, 1 is raw_vulkan. */
enum { SIDE_CUBEC, SIDE_RAW, SIDE_COUNT };
static const char *const side_labels[SIDE_COUNT] = {"cubec", "raw_vulkan"};

/* One side's measurement of a figure: the values of its repetitions. */
typedef struct side {
    int which; /* SIDE_CUBEC or SIDE_RAW */
    const char *label;
    const bench_impl *impl;
    double *values;
    double *device_values;
} side;

/* The side's own context, opened fresh for it: a cubec device or a raw Vulkan context. */
static bench_err side_open(const side *s, const raw_target *target, void **out_ctx)
{
    *out_ctx = NULL;
    if (s->which == SIDE_CUBEC) {
        cubec_device *dev = NULL;
        BENCH_TRY(bench_from_status(cubec_device_open(NULL, &dev), "cubec_device_open"));
        *out_ctx = dev;
        return NULL;
    }
    raw_ctx *raw = NULL;
    BENCH_TRY(raw_open(target, &raw));
    *out_ctx = raw;
    return NULL;
}

/* Waits for the context's work and destroys it, VkDevice and VkInstance included. */
static void side_close(const side *s, void *ctx)
{
    if (s->which == SIDE_CUBEC)
        cubec_device_close(ctx);
    else
        raw_close(ctx);
}

static bench_err side_run(side *s, void *state, double *value, double *device_value)
{
    bench_sample sample = {NAN, NAN};
    BENCH_TRY(s->impl->run(state, &sample));
    if (!(sample.value > 0) || !isfinite(sample.value))
        return bench_errorf("measured a value of %g", sample.value);
    if (value) *value = sample.value;
    if (device_value) *device_value = sample.device_value;
    return NULL;
}

/* Setup, warm-up, every repetition and the verification of one side, on its own context. */
static bench_err side_measure_on(side *s, void *ctx, const figure_def *def,
                                 const bench_params *params, uint32_t reps, const progress *pr,
                                 void **state)
{
    BENCH_TRY(bench_wrap(s->impl->setup(ctx, params, state), "setup"));
    for (uint32_t w = 0; w < def->warmup; w++)
        BENCH_TRY(bench_wrap(side_run(s, *state, NULL, NULL), "warm-up"));
    for (uint32_t r = 0; r < reps; r++) {
        progress_show(pr, def->name, s->label, r + 1, reps);
        BENCH_TRY(side_run(s, *state, &s->values[r], &s->device_values[r]));
    }
    return bench_wrap(s->impl->verify(*state), "wrong result");
}

/* Opens the side's context, measures, and tears everything down again (its state, then the
 * context), whatever happened: when this returns, the side has no device alive. */
static bench_err side_measure(side *s, const figure_def *def, const bench_params *params,
                              uint32_t reps, const raw_target *target, const progress *pr)
{
    void *ctx = NULL, *state = NULL;
    bench_err err = side_open(s, target, &ctx);
    if (!err) err = side_measure_on(s, ctx, def, params, reps, pr, &state);
    if (state) s->impl->teardown(state);
    if (ctx) side_close(s, ctx);
    return err ? bench_wrap(err, "%s", s->label) : NULL;
}

/* Measures the figure on one side, then on the other. Only one side's context (one VkDevice) is
 * ever alive: with both open at once, a GPU switches between the two contexts at every hand-over
 * (on an H200 this put a 17.8 us round trip at ~200 us on both sides). The side that goes first
 * alternates from figure to figure (`first`), so that an order effect (clocks ramping up, a warm
 * cache left behind by the process) does not always favour the same side. */
static void run_figure(const figure_def *def, int first, const bench_params *params,
                       const raw_target *target, const progress *pr, bench_result *res)
{
    const uint32_t reps = params->quick ? def->quick_reps : def->reps;
    *res = (bench_result){.name = def->name,
                          .unit = def->unit,
                          .method = def->method,
                          .first = side_labels[first],
                          .lower_is_better = def->lower_is_better,
                          .reps = reps,
                          .value = NAN,
                          .baseline_value = NAN,
                          .baseline_device_value = NAN};
    side sides[SIDE_COUNT] = {
        {.which = SIDE_CUBEC,
         .label = side_labels[SIDE_CUBEC],
         .impl = find_impl(bench_cubec_impls, def->name)},
        {.which = SIDE_RAW,
         .label = side_labels[SIDE_RAW],
         .impl = find_impl(bench_raw_impls, def->name)},
    };
    progress_show(pr, def->name, NULL, 0, reps);
    bench_err err = NULL;
    if (!sides[0].impl || !sides[1].impl) err = bench_errorf("no implementation of %s", def->name);
    for (int s = 0; !err && s < SIDE_COUNT; s++) {
        sides[s].values = calloc(reps, sizeof(double));
        sides[s].device_values = calloc(reps, sizeof(double));
        if (!sides[s].values || !sides[s].device_values) err = bench_errorf("out of host memory");
    }
    for (int k = 0; !err && k < SIDE_COUNT; k++)
        err = side_measure(&sides[(first + k) % SIDE_COUNT], def, params, reps, target, pr);
    if (!err) {
        res->value = bench_median(sides[SIDE_CUBEC].values, reps);
        res->baseline_value = bench_median(sides[SIDE_RAW].values, reps);
        /* Device values are all there or all NaN (timestamps are per device). */
        res->baseline_device_value = isfinite(sides[SIDE_RAW].device_values[0])
                                         ? bench_median(sides[SIDE_RAW].device_values, reps)
                                         : NAN;
    }
    for (int s = 0; s < SIDE_COUNT; s++) {
        free(sides[s].values);
        free(sides[s].device_values);
    }
    if (err) {
        progress_clear(pr);
        fprintf(stderr, "cubec bench: %s failed: %s\n", def->name, err);
        res->error = err;
    }
}

int cubec_bench_main(int argc, char **argv)
{
    options opt;
    int rc = parse_args(argc, argv, &opt);
    if (rc) return rc < 0 ? 0 : rc;

    /* The device cubec picks decides the sizes and which device the baseline opens. */
    cubec_device *dev = NULL;
    cubec_device_info info;
    bench_err err = bench_from_status(cubec_device_open(NULL, &dev), "cubec_device_open");
    if (!err) err = bench_from_status(cubec_device_get_info(dev, &info), "cubec_device_get_info");
    cubec_device_close(dev);
    if (err) {
        fprintf(stderr, "cubec bench: %s\n", err);
        bench_err_free(err);
        return 1;
    }
    bench_params params;
    make_params(&info, opt.quick, &params);
    const raw_target target = {info.name, info.vendor_id, info.device_id};

    bench_result results[FIGURE_COUNT];
    size_t count = 0, total = 0;
    for (size_t i = 0; i < FIGURE_COUNT; i++)
        total += selected(&opt, figures[i].name);
    if (total == 0) {
        fprintf(stderr, "cubec bench: no figure matches the filter\n");
        usage(stderr);
        return 2;
    }
    progress pr = {.tty = isatty(STDERR_FILENO), .total = total};
    int failed = 0;
    for (size_t i = 0; i < FIGURE_COUNT; i++) {
        if (!selected(&opt, figures[i].name)) continue;
        pr.index = count + 1;
        /* Alternates by the figure's place in the catalog, so that a figure runs its sides in the
         * same order whatever --filter selects. */
        run_figure(&figures[i], (int)(i % SIDE_COUNT), &params, &target, &pr, &results[count]);
        failed |= results[count].error != NULL;
        count++;
    }
    progress_clear(&pr);

    const bench_run_info run = {
        .device_name = info.name,
        .driver = info.driver,
        .vendor_id = info.vendor_id,
        .device_type = type_name(info.type),
        .commit = CUBEC_GIT_DESCRIBE,
        .quick = opt.quick,
    };
    if (opt.json)
        bench_report_json(stdout, &run, results, count);
    else
        bench_report_table(stdout, &run, results, count);
    fflush(stdout);
    for (size_t i = 0; i < count; i++)
        bench_err_free(results[i].error);
    return failed ? 1 : 0;
}
