/* `cubec bench`: the catalog of figures, the arguments, and the runner that measures each figure
 * on cubec and on the raw Vulkan baseline in the same process (see bench.h and bench_figure.h);
 * the streams.* figures, which raw Vulkan cannot express, against cubec itself.
 *
 * Each side of each figure gets its own freshly opened context (a cubec device or a raw Vulkan
 * context), closed again before the other side's is opened: never two VkDevices at once, and no
 * figure's failure or leftovers (a lost device, pool pages, queued work) can colour another. */
#include "bench.h"

#include "base/file.h"
#include "bench_figure.h"
#include "bench_report.h"
#include "gpu/gpu_backends.h"
#include "raw_vulkan.h"

#include <cubec/cubec.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cubec_git.h" /* CUBEC_GIT_DESCRIBE, generated at build time */

/* One result of a figure measured once per variant (streams.independent: once per thread
 * count); the first variant is the baseline of all. */
typedef struct figure_variant {
    const char *name;  /* the result's name */
    const char *label; /* its side: the baseline's name for the first variant */
    uint32_t threads;  /* bench_params.threads of its side */
    /* An environment variable set while its side's device is opened, and its value (NULL:
     * none); memory.peak_ratio picks each side's [memory] preset so. */
    const char *env;
    const char *env_value;
} figure_variant;

/* Fields in the order the table below gives them positionally, not the order packing them best
 * would: 16 bytes of padding on each of ~50 constant entries is nothing. */
typedef struct figure_def { // NOLINT(clang-analyzer-optin.performance.Padding)
    const char *name;
    const char *unit;
    int lower_is_better;
    const char *method; /* "host": host time of calls; "wall": until the work is done */
    uint32_t warmup;
    uint32_t reps;
    uint32_t quick_reps;
    /* Figures measured against cubec itself (raw Vulkan has no streams); NULL / 0 otherwise. */
    const char *self_baseline; /* the baseline side's name (bench_cubec_baseline_impls) */
    const figure_variant *variants;
    uint32_t variant_count;
    /* An environment variable set while the baseline side's device is opened (its cubec_config
     * is read then), and its value; NULL when the baseline opens its device as cubec does. */
    const char *baseline_env;
    const char *baseline_env_value;
    /* cubec_feature bits the figure needs: on a device without them it is skipped, saying so. */
    uint32_t needs;
    /* The same for every side of the figure (the baseline's own, when it has one, instead). */
    const char *env;
    const char *env_value;
    /* The same for cubec's side only, instead of `env` (NULL: none of its own). */
    const char *cubec_env;
    const char *cubec_env_value;
    /* What the figure's number means beyond its unit, printed with it (NULL: nothing more). */
    const char *note;
    /* Why the figure cannot run here (a library or device it needs is absent), or NULL when it
     * can: it is then skipped, saying so, as a missing feature is. NULL: it always can. */
    bench_err (*unavailable)(const bench_params *params);
} figure_def;

static const figure_variant independent_variants[] = {
    {"streams.independent.1", "cubec_1_thread", 1},
    {"streams.independent.2", "cubec_2_threads", 2},
    {"streams.independent.4", "cubec_4_threads", 4},
    {"streams.independent.8", "cubec_8_threads", 8},
};

/* memory.peak_ratio: one side per memory preset (docs/memory.md), the default ladder first. */
static const figure_variant peak_ratio_variants[] = {
    {"memory.peak_ratio.ladder", "cubec_ladder", 1, "CUBEC_MEMORY_PRESET", "ladder"},
    {"memory.peak_ratio.exclusive", "cubec_exclusive", 1, "CUBEC_MEMORY_PRESET", "exclusive"},
    {"memory.peak_ratio.adaptive", "cubec_adaptive", 1, "CUBEC_MEMORY_PRESET", "adaptive"},
};

/* The rows of multi.allreduce, one per size: the same but for the name and repetitions. */
#define ALLREDUCE_ROW(warm, reps_, quick)                                                          \
    .unit = "GB/s", .lower_is_better = 0, .method = "wall", .warmup = (warm), .reps = (reps_),     \
    .quick_reps = (quick), .self_baseline = "cubec_copy_peer", .note = BENCH_ALLREDUCE_NOTE
#define ALLREDUCE_FIGURE(mib, warm, reps_, quick)                                                  \
    {                                                                                              \
        .name = "multi.allreduce." #mib "MiB", ALLREDUCE_ROW(warm, reps_, quick),                  \
        .unavailable = bench_allreduce_##mib##_unavailable                                         \
    }

/* The rows of image.write and image.read: the same but for the name and the baseline. */
#define IMAGE_ROW                                                                                  \
    .unit = "GB/s", .lower_is_better = 0, .method = "wall", .warmup = 1, .reps = 11,               \
    .quick_reps = 3, .note = BENCH_IMAGE_NOTE

/* The figures of docs/benchmarks.md, then the streams figures, measured against cubec itself.
 * compile.warm_disk is measured against the same child processes without the disk cache.
 * Repetitions are odd so that the median is a sample. */
static const figure_def figures[] = {
    {"launch.enqueue", "us", 1, "host", 1, 11, 3},
    {"launch.roundtrip", "us", 1, "wall", 20, 501, 51},
    {"launch.device_dependent", "us", 1, "wall", 1, 21, 3},
    {"launch.device_independent", "us", 1, "wall", 1, 21, 3},
    /* Graphs: against raw Vulkan resubmitting one recorded command buffer, and against the same
     * launches issued eagerly through cubec (the *_vs_eager figures). */
    {"graph.replay_host", "us", 1, "host", 3, 51, 5},
    {"graph.replay_device", "us", 1, "device", 3, 21, 3},
    {"graph.replay_device_independent", "us", 1, "device", 3, 21, 3},
    {"graph.replay_host_vs_eager", "us", 1, "host", 3, 51, 5, "cubec_eager", NULL, 0},
    {"graph.replay_device_vs_eager", "us", 1, "device", 3, 21, 3, "cubec_eager", NULL, 0},
    {"write.h2d", "GB/s", 0, "wall", 1, 11, 3},
    {"read.d2h", "GB/s", 0, "wall", 1, 11, 3},
    {"write.h2d_registered", "GB/s", 0, "wall", 1, 11, 3},
    {"read.d2h_registered", "GB/s", 0, "wall", 1, 11, 3},
    {"write.h2d_pinned", "GB/s", 0, "wall", 1, 11, 3},
    {"read.d2h_pinned", "GB/s", 0, "wall", 1, 11, 3},
    {"copy.d2d", "GB/s", 0, "wall", 1, 7, 3},
    /* An image of odd rows written and read, against cubec_write / cubec_read of the same bytes
     * into a buffer (image_figures.c): cubec only. */
    {.name = "image.write", IMAGE_ROW, .self_baseline = "cubec_write"},
    {.name = "image.read", IMAGE_ROW, .self_baseline = "cubec_read"},
    {"kernel.vector_add", "GB/s", 0, "wall", 1, 11, 3},
    {"kernel.gemm_f16", "TFLOP/s", 0, "wall", 1, 11, 3, "cubec_scalar", NULL, 0, NULL, NULL,
     CUBEC_FEATURE_COOPERATIVE_MATRIX_NV},
    {"alloc.pair", "ns", 1, "host", 1, 11, 3},
    /* Relocation off outdated arena pages, against cubec_copy of the same bytes. */
    {"memory.relocate", "GB/s", 0, "wall", 1, 7, 3, "cubec_copy", NULL, 0, NULL, NULL, 0, NULL,
     NULL, "CUBEC_MEMORY_POOLS", "arena"},
    /* What a profile around nothing measures on an idle GPU: an autotuner's fixed error. */
    {"profile.empty", "us", 1, "device", 3, 51, 5},
    {"compile.cold", "ms", 1, "wall", 1, 11, 3},
    {"compile.warm_memory", "ms", 1, "wall", 3, 51, 5},
    {"compile.warm_disk", "ms", 1, "wall", 1, 11, 3, "cubec_no_disk_cache", NULL, 0},
    /* 64 kernels through the compile queue against the same created one by one, both without
     * the disk cache. */
    {"compile.batch64", "ms", 1, "wall", 1, 11, 1, "cubec_serial", NULL, 0, NULL, NULL, 0,
     "CUBEC_CACHE_DIR", "none"},
    {"streams.independent", "launches/s", 0, "wall", 1, 11, 3, NULL, independent_variants,
     sizeof independent_variants / sizeof independent_variants[0]},
    {"streams.cross", "us", 1, "wall", 1, 11, 3, "cubec_one_stream", NULL, 0},
    {"streams.interleave", "us", 1, "wall", 1, 11, 3, "cubec_sequential", NULL, 0,
     "CUBEC_STREAM_STRATEGY", "sequential"},
    /* Bytes reserved / bytes in use at the peak of an MLP training loop: deterministic, so one
     * repetition says it all. */
    {"memory.peak_ratio", "x", 1, "host", 0, 1, 1, NULL, peak_ratio_variants,
     sizeof peak_ratio_variants / sizeof peak_ratio_variants[0]},
    /* Copies to a second device (a second open of the default one) through the pair's path,
     * against cubec_copy of the same bytes on one device (multi_figures.c). */
    {"multi.copy_peer.1MiB", "GB/s", 0, "wall", 2, 11, 3, "cubec_copy", NULL, 0},
    {"multi.copy_peer.16MiB", "GB/s", 0, "wall", 1, 11, 3, "cubec_copy", NULL, 0},
    {"multi.copy_peer.256MiB", "GB/s", 0, "wall", 1, 5, 3, "cubec_copy", NULL, 0},
    /* The same between exportable buffers: the copies take the pair's path (cuda-interop on an
     * H200 with libcuda, host-staged on lavapipe; the note says which). */
    {"multi.copy_peer_exportable.1MiB", "GB/s", 0, "wall", 2, 11, 3, "cubec_copy", NULL, 0},
    {"multi.copy_peer_exportable.16MiB", "GB/s", 0, "wall", 1, 11, 3, "cubec_copy", NULL, 0},
    {"multi.copy_peer_exportable.256MiB", "GB/s", 0, "wall", 1, 5, 3, "cubec_copy", NULL, 0},
    /* An all-reduce over 2 ranks (the device and a second open of it), as bus bandwidth, against
     * a peer copy of the same bytes over the same pair (allreduce_figure.c). */
    ALLREDUCE_FIGURE(1, 2, 11, 3),
    ALLREDUCE_FIGURE(16, 1, 11, 3),
    ALLREDUCE_FIGURE(256, 1, 5, 3),
    /* cubec -> CUDA -> cubec on one GPU, against the same three kernels all in cubec
     * (cuda_roundtrip.c); where libcuda is absent it is skipped, saying so. */
    {.name = "multi.cuda_roundtrip",
     .unit = "us",
     .lower_is_better = 1,
     .method = "wall",
     .warmup = 5,
     .reps = 51,
     .quick_reps = 5,
     .self_baseline = "cubec_only",
     .note = BENCH_CUDA_ROUNDTRIP_NOTE,
     .unavailable = bench_cuda_roundtrip_unavailable},
};
#define FIGURE_COUNT (sizeof figures / sizeof figures[0])

typedef struct options {
    int json;
    int quick;
    const char *filters[16]; /* a figure runs if its name contains any of them (or none given) */
    uint32_t filter_count;
    const char *trace; /* --trace FILE: CUBEC_TRACE for every cubec device (NULL: none) */
    /* --backend NAME: CUBEC_BACKEND for every cubec device (NULL: as the environment says) */
    const char *backend;
} options;

/* The backends of this build, "vulkan, null, webgpu" (GPU_BACKENDS, the first the default). */
static const char *backend_list(void)
{
    static char list[128];
    if (!list[0]) {
        const char *from = GPU_BACKEND_CHOICES;
        size_t n = 0;
        for (; *from && n + 3 < sizeof list; from++) {
            if (*from == '|') {
                list[n++] = ',';
                list[n++] = ' ';
            } else {
                list[n++] = *from;
            }
        }
        list[n] = '\0';
    }
    return list;
}

/* Whether `name` is one of GPU_BACKEND_CHOICES ("vulkan|null|webgpu"), whole. */
/* The default backend's name: the first of GPU_BACKEND_CHOICES. */
static const char *default_backend(void)
{
    static char name[32];
    if (!name[0])
        snprintf(name, sizeof name, "%.*s", (int)strcspn(GPU_BACKEND_CHOICES, "|"),
                 GPU_BACKEND_CHOICES);
    return name;
}

static int backend_is_default(const char *name)
{
    return strcmp(name, default_backend()) == 0;
}

static int backend_known(const char *name)
{
    const size_t len = strlen(name);
    for (const char *p = GPU_BACKEND_CHOICES; len && *p;) {
        const char *end = strchr(p, '|');
        const size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, name, len) == 0) return 1;
        p += n + (end != NULL);
    }
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cubec bench [--json] [--quick] [--filter SUBSTR]... [--trace FILE]\n"
            "                   [--backend NAME]\n"
            "Measures the figures of docs/benchmarks.md (what each means, how it is\n"
            "measured, the results on lavapipe and an H200) on the default device.\n"
            "  --json           print the figures as the JSON object docs/benchmarks.md\n"
            "                   describes, instead of a table\n"
            "  --quick          fewer repetitions and smaller sizes (a smoke test)\n"
            "  --filter SUBSTR  run only the figures whose name contains SUBSTR\n"
            "                   (or one of its results, e.g. streams.independent.4)\n"
            "  --trace FILE     write a Chrome trace of the cubec side to FILE (sets\n"
            "                   CUBEC_TRACE; the full suite makes a large one: use --quick\n"
            "                   or --filter; open it in ui.perfetto.dev)\n"
            "  --backend NAME   run cubec's sides on the backend NAME (sets CUBEC_BACKEND;\n"
            "                   backends: %s); raw Vulkan stays the\n"
            "                   baseline, and a figure the backend refuses\n"
            "                   (CUBEC_UNSUPPORTED) is skipped, saying so\n"
            "figures:",
            backend_list());
    for (size_t i = 0; i < FIGURE_COUNT; i++) {
        const figure_def *f = &figures[i];
        if (!f->variant_count) {
            fprintf(out, " %s", f->name);
            continue;
        }
        /* name.{a,b,c}: the results' suffixes after the figure's name */
        fprintf(out, " %s.{", f->name);
        for (uint32_t v = 0; v < f->variant_count; v++)
            fprintf(out, "%s%s", v ? "," : "", f->variants[v].name + strlen(f->name) + 1);
        fputc('}', out);
    }
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
        } else if (strcmp(arg, "--trace") == 0 || strncmp(arg, "--trace=", 8) == 0) {
            const char *value = arg[7] == '=' ? arg + 8 : i + 1 < argc ? argv[++i] : NULL;
            if (!value) {
                fprintf(stderr, "cubec bench: --trace needs a file name\n");
                usage(stderr);
                return 2;
            }
            if (!*value) {
                fprintf(stderr, "cubec bench: --trace: the path is empty\n");
                usage(stderr);
                return 2;
            }
            opt->trace = value;
        } else if (strcmp(arg, "--backend") == 0 || strncmp(arg, "--backend=", 10) == 0) {
            const char *value = arg[9] == '=' ? arg + 10 : i + 1 < argc ? argv[++i] : NULL;
            if (!value) {
                fprintf(stderr, "cubec bench: --backend needs a backend name (%s)\n",
                        backend_list());
                usage(stderr);
                return 2;
            }
            if (!backend_known(value)) {
                fprintf(stderr, "cubec bench: --backend: unknown backend \"%s\" (backends: %s)\n",
                        value, backend_list());
                return 2;
            }
            opt->backend = value;
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

/* A figure runs if a filter is part of its name or of one of its results' names; it then runs
 * whole (streams.independent.4 needs its 1-thread baseline). */
static int selected(const options *opt, const figure_def *def)
{
    if (opt->filter_count == 0) return 1;
    for (uint32_t i = 0; i < opt->filter_count; i++) {
        if (strstr(def->name, opt->filters[i])) return 1;
        for (uint32_t v = 0; v < def->variant_count; v++)
            if (strstr(def->variants[v].name, opt->filters[i])) return 1;
    }
    return 0;
}

static uint32_t result_count(const figure_def *def)
{
    return def->variant_count ? def->variant_count : 1;
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

/* The sizes of docs/benchmarks.md for this device, clamped to what one binding may hold, so that
 * both sides get the same work wherever the suite runs. */
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
    p->threads = 1; /* set per side by streams.independent */
    p->thread_launches = quick ? 200 : 1000;
    p->cross_launches = quick ? 200 : 1000;
    p->interleave_rounds = quick ? 200 : 1000;
    p->gemm_n = p->gpu && !quick ? 4096 : 1024;
    p->features = info->features;
    p->max_binding = max_binding;
    p->vendor_id = info->vendor_id;
    p->external_handles = info->external_handles;
    p->mlp_steps = quick ? 8 : 40;
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

/* The context a side runs on. */
enum { SIDE_CUBEC, SIDE_RAW };
/* A figure has two sides (cubec, then its baseline: raw_vulkan or cubec itself), or one per
 * variant (the first is the baseline). */
#define MAX_SIDES 8

/* One side's measurement of a figure: the values of its repetitions. */
typedef struct side {
    int which; /* SIDE_CUBEC or SIDE_RAW */
    const char *label;
    const bench_impl *impl;
    const char *env, *env_value; /* set while its cubec device is opened (NULL: none) */
    bench_params params;
    double *values;
    double *device_values;
    char *note; /* what its impl's describe step said (NULL: nothing) */
} side;

/* The side's own context, opened fresh for it: a cubec device or a raw Vulkan context. */
static bench_err side_open(const side *s, const raw_target *target, void **out_ctx)
{
    *out_ctx = NULL;
    if (s->which == SIDE_CUBEC) {
        cubec_device *dev = NULL;
        cubec_status st;
        if (s->env) {
            /* The device reads its configuration (environment included) when it opens; the
             * variable is as it was again right after (the run's own CUBEC_CACHE_DIR stays), so
             * it colours this device only. */
            const char *was = getenv(s->env);
            char *saved = was ? strdup(was) : NULL;
            if ((was && !saved) || setenv(s->env, s->env_value, 1) != 0) {
                free(saved);
                return bench_errorf("setenv %s=%s failed", s->env, s->env_value);
            }
            st = cubec_device_open(NULL, &dev);
            if (saved)
                setenv(s->env, saved, 1);
            else
                unsetenv(s->env);
            free(saved);
        } else {
            st = cubec_device_open(NULL, &dev);
        }
        BENCH_TRY(bench_from_status(st, "cubec_device_open"));
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
    bench_sample sample = {NAN, NAN, 0};
    BENCH_TRY(s->impl->run(state, &sample));
    if (!(sample.value > 0 || (sample.zero_ok && sample.value == 0)) || !isfinite(sample.value))
        return bench_errorf("measured a value of %g", sample.value);
    if (value) *value = sample.value;
    if (device_value) *device_value = sample.device_value;
    return NULL;
}

/* Setup, warm-up, every repetition and the verification of one side, on its own context. */
static bench_err side_measure_on(side *s, void *ctx, const figure_def *def, uint32_t reps,
                                 const progress *pr, void **state)
{
    BENCH_TRY(bench_wrap(s->impl->setup(ctx, &s->params, state), "setup"));
    for (uint32_t w = 0; w < def->warmup; w++)
        BENCH_TRY(bench_wrap(side_run(s, *state, NULL, NULL), "warm-up"));
    for (uint32_t r = 0; r < reps; r++) {
        progress_show(pr, def->name, s->label, r + 1, reps);
        BENCH_TRY(side_run(s, *state, &s->values[r], &s->device_values[r]));
    }
    BENCH_TRY(bench_wrap(s->impl->verify(*state), "wrong result"));
    if (s->impl->describe) s->note = s->impl->describe(*state);
    return NULL;
}

/* Opens the side's context, measures, and tears everything down again (its state, then the
 * context), whatever happened: when this returns, the side has no device alive. */
static bench_err side_measure(side *s, const figure_def *def, uint32_t reps,
                              const raw_target *target, const progress *pr)
{
    void *ctx = NULL, *state = NULL;
    bench_err err = side_open(s, target, &ctx);
    if (!err) err = side_measure_on(s, ctx, def, reps, pr, &state);
    if (state) s->impl->teardown(state);
    if (ctx) side_close(s, ctx);
    return err ? bench_wrap(err, "%s", s->label) : NULL;
}

/* The sides of a figure (see MAX_SIDES), each with its own copy of the params; returns how many,
 * or 0 with *err set when an implementation is missing. */
static uint32_t plan_sides(const figure_def *def, const bench_params *params, side *sides,
                           bench_err *err)
{
    uint32_t n = 0;
    if (def->variant_count > MAX_SIDES) {
        *err = bench_errorf("%s has %u variants, at most %u", def->name, def->variant_count,
                            MAX_SIDES);
        return 0;
    }
    if (def->variant_count) {
        for (uint32_t v = 0; v < def->variant_count; v++, n++) {
            sides[n] = (side){.which = SIDE_CUBEC,
                              .label = def->variants[v].label,
                              .impl = find_impl(bench_cubec_impls, def->name),
                              .params = *params};
            sides[n].params.threads = def->variants[v].threads;
            sides[n].env = def->variants[v].env;
            sides[n].env_value = def->variants[v].env_value;
        }
    } else {
        sides[n++] = (side){.which = SIDE_CUBEC,
                            .label = "cubec",
                            .impl = find_impl(bench_cubec_impls, def->name),
                            .env = def->cubec_env ? def->cubec_env : def->env,
                            .env_value = def->cubec_env ? def->cubec_env_value : def->env_value,
                            .params = *params};
        if (def->self_baseline)
            sides[n++] =
                (side){.which = SIDE_CUBEC,
                       .label = def->self_baseline,
                       .impl = find_impl(bench_cubec_baseline_impls, def->name),
                       .env = def->baseline_env ? def->baseline_env : def->env,
                       .env_value = def->baseline_env ? def->baseline_env_value : def->env_value,
                       .params = *params};
        else
            sides[n++] = (side){.which = SIDE_RAW,
                                .label = "raw_vulkan",
                                .impl = find_impl(bench_raw_impls, def->name),
                                .params = *params};
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!sides[i].impl) {
            *err = bench_errorf("no implementation of %s for %s", def->name, sides[i].label);
            return 0;
        }
    }
    return n;
}

/* Measures the figure on each side in turn. Only one side's context (one VkDevice) is ever
 * alive: with both open at once, a GPU switches between the two contexts at every hand-over (on
 * an H200 this put a 17.8 us round trip at ~200 us on both sides). The side that goes first
 * rotates from figure to figure (`first`: the index of the figure in the catalog), so that an
 * order effect (clocks ramping up, a warm cache left behind by the process) does not always
 * favour the same side. Writes result_count(def) results: one comparing cubec with its baseline,
 * or one per variant compared with the first variant. */
static void run_figure(const figure_def *def, size_t first, const bench_params *params,
                       const char *backend, const raw_target *target, const progress *pr,
                       bench_result *res)
{
    int skipped = 0;
    const uint32_t reps = params->quick ? def->quick_reps : def->reps;
    side sides[MAX_SIDES];
    bench_err err = NULL;
    const uint32_t n = plan_sides(def, params, sides, &err);
    const uint32_t start = n ? (uint32_t)(first % n) : 0;
    const uint32_t results = result_count(def);
    for (uint32_t r = 0; r < results; r++) {
        res[r] = (bench_result){.name = def->variant_count ? def->variants[r].name : def->name,
                                .unit = def->unit,
                                .method = def->method,
                                .first = n ? sides[start].label : "cubec",
                                .baseline = def->variant_count   ? def->variants[0].label
                                            : def->self_baseline ? def->self_baseline
                                                                 : "raw_vulkan",
                                .lower_is_better = def->lower_is_better,
                                .reps = reps,
                                .value = NAN,
                                .baseline_value = NAN,
                                .device_value = NAN,
                                .baseline_device_value = NAN,
                                .note = def->note};
    }
    if (def->needs & ~params->features) {
        const uint64_t missing = def->needs & ~params->features;
        res->skipped = bench_errorf("the device lacks the feature %s (cubec info)",
                                    cubec_feature_name(missing & (~missing + 1)));
        bench_err_free(err); /* nothing was measured */
        return;
    }
    if (!params->device_timing && strcmp(def->method, "device") == 0) {
        /* Its number is a profile's device time: host time around syncs would pass for it. */
        res->skipped = bench_errorf("profiles on this device are host-measured "
                                    "(cubec_profile_get_method: system; the %s backend writes no "
                                    "timestamps here, or CUBEC_TIMING=system)",
                                    backend);
        bench_err_free(err);
        return;
    }
    bench_err why = def->unavailable ? def->unavailable(params) : NULL;
    if (why) {
        res->skipped = why;
        bench_err_free(err);
        return;
    }
    progress_show(pr, def->name, NULL, 0, reps);
    for (uint32_t s = 0; !err && s < n; s++) {
        sides[s].values = calloc(reps, sizeof(double));
        sides[s].device_values = calloc(reps, sizeof(double));
        if (!sides[s].values || !sides[s].device_values) err = bench_errorf("out of host memory");
    }
    for (uint32_t k = 0; !err && k < n; k++) {
        side *s = &sides[(start + k) % n];
        err = side_measure(s, def, reps, target, pr);
        /* A backend other than the default refuses by name what it cannot map (webgpu:
         * registered host memory, exportable memory...; docs/device.md): the figure is skipped,
         * saying so, as one the device lacks a feature for. On the default backend a refusal
         * stays an error, so that a regression there cannot pass for a skip. */
        if (err && s->which == SIDE_CUBEC && !backend_is_default(backend) &&
            strstr(err, cubec_code_name(CUBEC_UNSUPPORTED))) {
            for (uint32_t r = 0; r < results; r++)
                res[r].skipped = bench_errorf("the %s backend refuses it: %s", backend, err);
            bench_err_free(err);
            err = NULL;
            skipped = 1;
            break;
        }
    }
    if (skipped) {
        /* nothing measured: no numbers, no note */
    } else if (!err && def->variant_count) {
        /* Every variant against the first (streams.independent: speedup over one thread). */
        const double base = bench_median(sides[0].values, reps);
        for (uint32_t r = 0; r < results; r++) {
            res[r].value = r == 0 ? base : bench_median(sides[r].values, reps);
            res[r].baseline_value = base;
        }
    } else if (!err && n < 2) {
        err = bench_errorf("%u side(s) planned: a figure needs cubec's and its baseline's", n);
    } else if (!err) {
        res->value = bench_median(sides[0].values, reps);
        res->baseline_value = bench_median(sides[1].values, reps);
        /* Device values are all there or all NaN (timestamps are per device; raw side only). */
        res->baseline_device_value =
            isfinite(sides[1].device_values[0]) ? bench_median(sides[1].device_values, reps) : NAN;
        res->device_value =
            isfinite(sides[0].device_values[0]) ? bench_median(sides[0].device_values, reps) : NAN;
    }
    /* cubec's side describes what it ran on (the pair's path): after the figure's own note. */
    if (!skipped && !err && !def->variant_count && sides[0].note) {
        const char *fixed = def->note ? def->note : "";
        const size_t len = strlen(fixed) + strlen(sides[0].note) + 3;
        res->own_note = malloc(len);
        if (res->own_note) {
            snprintf(res->own_note, len, "%s%s%s", fixed, *fixed ? "; " : "", sides[0].note);
            res->note = res->own_note;
        }
    }
    for (uint32_t s = 0; s < n; s++) {
        free(sides[s].values);
        free(sides[s].device_values);
        free(sides[s].note);
    }
    if (err) {
        progress_clear(pr);
        fprintf(stderr, "cubec bench: %s failed: %s\n", def->name, err);
        res[0].error = err;
        for (uint32_t r = 1; r < results; r++)
            res[r].error = bench_errorf("%s", err); /* each result owns its message */
    }
}

/* --trace: every cubec device reads CUBEC_TRACE when it opens, so it is set before the first. A
 * file left by an earlier run is removed, so that it cannot pass for this run's trace. Returns 0,
 * or -1 after printing why. */
static int trace_begin(const char *path)
{
    /* Only a regular file is replaced: a FIFO, a device or a directory is refused, not removed. */
    cubec_status refused = file_check_output(path, 0);
    if (refused) {
        fprintf(stderr, "cubec bench: --trace: %s\n", cubec_status_message(refused));
        cubec_status_free(refused);
        return -1;
    }
    if (unlink(path) != 0 && errno != ENOENT) {
        fprintf(stderr, "cubec bench: --trace '%s': cannot replace the file: %s\n", path,
                strerror(errno));
        return -1;
    }
    if (setenv("CUBEC_TRACE", path, 1) != 0) {
        fprintf(stderr, "cubec bench: --trace '%s': cannot set CUBEC_TRACE: %s\n", path,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* After the run (every device closed, so the library has written the trace): 0 when the file is
 * there, else -1 after printing so. */
static int trace_check(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size == 0) {
        fprintf(stderr, "cubec bench: --trace '%s': the trace file was not written\n", path);
        return -1;
    }
    fprintf(stderr, "cubec bench: trace written to %s\n", path);
    return 0;
}

static int run_suite(const options *opt);

/* The default backend's device for the one `info` describes (the same vendor and device ID, else
 * the default device): 1 with its info in *out, 0 when none opens (raw Vulkan then picks the
 * first device and fails there if there is none). */
static int vulkan_twin(const cubec_device_info *info, cubec_device_info *out)
{
    cubec_device_desc desc = CUBEC_DEVICE_DESC_INIT;
    desc.backend = default_backend();
    int found = 0;
    for (uint32_t index = 0; index < 16 && !found; index++) {
        desc.select_by_index = 1;
        desc.index = index;
        cubec_device *dev = NULL;
        cubec_status st = cubec_device_open(&desc, &dev);
        if (st) {
            cubec_status_free(st);
            break;
        }
        st = cubec_device_get_info(dev, out);
        cubec_device_close(dev);
        if (st) {
            cubec_status_free(st);
            break;
        }
        found = out->vendor_id == info->vendor_id && out->device_id == info->device_id;
    }
    if (found) return 1;
    desc.select_by_index = 0;
    cubec_device *dev = NULL;
    cubec_status st = cubec_device_open(&desc, &dev);
    if (!st) st = cubec_device_get_info(dev, out);
    cubec_device_close(dev);
    if (st) cubec_status_free(st);
    return st == NULL;
}

int cubec_bench_main(int argc, char **argv)
{
    /* compile.warm_disk's child process (bench/warm_disk.c), not for users. */
    if (argc == 3 && !strcmp(argv[1], "--warm-disk-child")) return bench_warm_disk_child(argv[2]);
    options opt;
    int rc = parse_args(argc, argv, &opt);
    if (rc) return rc < 0 ? 0 : rc;
    if (opt.trace && trace_begin(opt.trace) != 0) return 1;
    /* Every cubec device reads CUBEC_BACKEND when it opens: set before the first. */
    if (opt.backend && setenv("CUBEC_BACKEND", opt.backend, 1) != 0) {
        fprintf(stderr, "cubec bench: --backend %s: cannot set CUBEC_BACKEND: %s\n", opt.backend,
                strerror(errno));
        return 1;
    }
    char cache_dir[4096];
    bench_cache_dir_begin(cache_dir, sizeof cache_dir);
    rc = run_suite(&opt);
    bench_cache_dir_end(cache_dir);
    return rc;
}

/* Every selected figure, then the report. */
static int run_suite(const options *options_in)
{
    const options opt = *options_in;

    /* The device cubec picks decides the sizes and which device the baseline opens. */
    cubec_device *dev = NULL;
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    cubec_timing timing = CUBEC_TIMING_SYSTEM;
    bench_err err = bench_from_status(cubec_device_open(NULL, &dev), "cubec_device_open");
    if (!err) err = bench_from_status(cubec_device_get_info(dev, &info), "cubec_device_get_info");
    if (!err)
        err = bench_from_status(cubec_profile_get_method(dev, &timing), "cubec_profile_get_method");
    cubec_device_close(dev);
    if (err) {
        fprintf(stderr, "cubec bench: %s\n", err);
        bench_err_free(err);
        return 1;
    }
    bench_params params;
    make_params(&info, opt.quick, &params);
    params.device_timing = timing == CUBEC_TIMING_DEVICE;
    /* The backend cubec's sides run on: --backend, else CUBEC_BACKEND, else the default (a name
     * CUBEC_BACKEND does not know failed the open above). */
    const char *env_backend = getenv("CUBEC_BACKEND");
    const char *backend = env_backend && *env_backend ? env_backend : default_backend();
    /* Raw Vulkan runs on the physical device cubec's side runs on; another backend's device
     * info (an adapter's) need not name it as Vulkan does, so its Vulkan twin is asked. */
    cubec_device_info vk_info = CUBEC_DEVICE_INFO_INIT;
    raw_target target = {info.name, info.vendor_id, info.device_id};
    if (!backend_is_default(backend) && vulkan_twin(&info, &vk_info))
        target = (raw_target){vk_info.name, vk_info.vendor_id, vk_info.device_id};

    size_t count = 0, total = 0, max_results = 0;
    for (size_t i = 0; i < FIGURE_COUNT; i++) {
        total += selected(&opt, &figures[i]);
        max_results += result_count(&figures[i]);
    }
    if (total == 0) {
        fprintf(stderr, "cubec bench: no figure matches the filter\n");
        usage(stderr);
        return 2;
    }
    bench_result *results = calloc(max_results, sizeof *results);
    if (!results) {
        fprintf(stderr, "cubec bench: out of host memory\n");
        return 1;
    }
    progress pr = {.tty = isatty(STDERR_FILENO), .total = total};
    int failed = 0;
    for (size_t i = 0; i < FIGURE_COUNT; i++) {
        if (!selected(&opt, &figures[i])) continue;
        pr.index++;
        /* Rotates by the figure's place in the catalog, so that a figure runs its sides in the
         * same order whatever --filter selects. */
        run_figure(&figures[i], i, &params, backend, &target, &pr, &results[count]);
        for (uint32_t r = 0; r < result_count(&figures[i]); r++)
            failed |= results[count + r].error != NULL;
        count += result_count(&figures[i]);
    }
    progress_clear(&pr);

    const bench_run_info run = {
        .device_name = info.name,
        .driver = info.driver,
        .vendor_id = info.vendor_id,
        .device_type = type_name(info.type),
        .commit = CUBEC_GIT_DESCRIBE,
        .backend = backend,
        .quick = opt.quick,
    };
    if (opt.json)
        bench_report_json(stdout, &run, results, count);
    else
        bench_report_table(stdout, &run, results, count);
    fflush(stdout);
    for (size_t i = 0; i < count; i++) {
        bench_err_free(results[i].error);
        bench_err_free(results[i].skipped);
        free(results[i].own_note);
    }
    free(results);
    if (opt.trace && trace_check(opt.trace) != 0) return 1;
    return failed ? 1 : 0;
}
