/* `cubec bench`: the catalog of figures, the arguments, and the runner that measures each figure
 * on cubec and on the raw Vulkan baseline side by side (see bench.h and bench_figure.h).
 *
 * Each figure gets a freshly opened cubec device and raw context, so that one figure's failure or
 * leftovers (a lost device, pool pages, queued work) cannot colour the next one. */
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

#ifndef CUBEC_GIT_DESCRIBE
#define CUBEC_GIT_DESCRIBE "unknown"
#endif

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
    while (max_binding && p->vector_n * 4 > max_binding)
        p->vector_n /= 2;
    uint64_t groups = (p->vector_n + BENCH_VECTOR_WG - 1) / BENCH_VECTOR_WG;
    uint64_t max_groups = info->max_workgroup_count[0] ? info->max_workgroup_count[0] : 65535;
    if (max_groups > 65535) max_groups = 65535; /* the anchors' grid: 65535 groups */
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

static void progress_show(const progress *pr, const char *name, uint32_t rep, uint32_t reps)
{
    if (pr->tty) {
        fprintf(stderr, "\r\033[K[%zu/%zu] %s  %u/%u", pr->index, pr->total, name, rep, reps);
        fflush(stderr);
    } else if (rep == 0) {
        fprintf(stderr, "cubec bench: [%zu/%zu] %s\n", pr->index, pr->total, name);
    }
}

static void progress_clear(const progress *pr)
{
    if (pr->tty) fputs("\r\033[K", stderr);
}

/* One side's state while a figure runs. */
typedef struct side {
    const char *label;
    const bench_impl *impl;
    void *ctx;
    void *state;
    double *values;
    double *device_values;
} side;

static bench_err side_run(side *s, double *value, double *device_value)
{
    bench_sample sample = {NAN, NAN};
    BENCH_TRY(bench_wrap(s->impl->run(s->state, &sample), "%s", s->label));
    if (!(sample.value > 0) || !isfinite(sample.value))
        return bench_errorf("%s: measured a value of %g", s->label, sample.value);
    if (value) *value = sample.value;
    if (device_value) *device_value = sample.device_value;
    return NULL;
}

/* Setup, warm-up, the alternating repetitions and the verification of both sides. */
static bench_err measure(const figure_def *def, const bench_params *params, uint32_t reps,
                         const progress *pr, side sides[2], bench_result *res)
{
    for (int s = 0; s < 2; s++) {
        sides[s].values = calloc(reps, sizeof(double));
        sides[s].device_values = calloc(reps, sizeof(double));
        if (!sides[s].values || !sides[s].device_values) return bench_errorf("out of host memory");
        BENCH_TRY(bench_wrap(sides[s].impl->setup(sides[s].ctx, params, &sides[s].state),
                             "%s: setup", sides[s].label));
    }
    for (uint32_t w = 0; w < def->warmup; w++) {
        for (int s = 0; s < 2; s++)
            BENCH_TRY(side_run(&sides[s], NULL, NULL));
    }
    /* Alternating which side goes first cancels an order effect (a cache or clock state that one
     * run leaves for the next). */
    for (uint32_t r = 0; r < reps; r++) {
        progress_show(pr, def->name, r + 1, reps);
        for (int k = 0; k < 2; k++) {
            side *s = &sides[(r + k) % 2];
            BENCH_TRY(side_run(s, &s->values[r], &s->device_values[r]));
        }
    }
    for (int s = 0; s < 2; s++)
        BENCH_TRY(
            bench_wrap(sides[s].impl->verify(sides[s].state), "%s: wrong result", sides[s].label));
    res->value = bench_median(sides[0].values, reps);
    res->baseline_value = bench_median(sides[1].values, reps);
    /* Device values are all there or all NaN (timestamps are per device). */
    res->baseline_device_value =
        isfinite(sides[1].device_values[0]) ? bench_median(sides[1].device_values, reps) : NAN;
    return NULL;
}

static void run_figure(const figure_def *def, const bench_params *params, const raw_target *target,
                       const progress *pr, bench_result *res)
{
    const uint32_t reps = params->quick ? def->quick_reps : def->reps;
    *res = (bench_result){.name = def->name,
                          .unit = def->unit,
                          .method = def->method,
                          .lower_is_better = def->lower_is_better,
                          .reps = reps,
                          .value = NAN,
                          .baseline_value = NAN,
                          .baseline_device_value = NAN};
    side sides[2] = {{.label = "cubec", .impl = find_impl(bench_cubec_impls, def->name)},
                     {.label = "raw_vulkan", .impl = find_impl(bench_raw_impls, def->name)}};
    progress_show(pr, def->name, 0, reps);
    bench_err err = NULL;
    if (!sides[0].impl || !sides[1].impl) err = bench_errorf("no implementation of %s", def->name);
    cubec_device *dev = NULL;
    raw_ctx *raw = NULL;
    if (!err) err = bench_from_status(cubec_device_open(NULL, &dev), "cubec_device_open");
    if (!err) err = raw_open(target, &raw);
    if (!err) {
        sides[0].ctx = dev;
        sides[1].ctx = raw;
        err = measure(def, params, reps, pr, sides, res);
    }
    for (int s = 0; s < 2; s++) {
        if (sides[s].state) sides[s].impl->teardown(sides[s].state);
        free(sides[s].values);
        free(sides[s].device_values);
    }
    raw_close(raw);
    cubec_device_close(dev);
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
        run_figure(&figures[i], &params, &target, &pr, &results[count]);
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
