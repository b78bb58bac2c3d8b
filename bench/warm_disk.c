/* compile.warm_disk: a new process's first launch of a kernel that cubec's disk cache holds
 * (docs/kernel-cache.md). Each repetition runs `cubec bench --warm-disk-child SALT` (this
 * executable again, through /proc/self/exe), which opens a device and launches another kernel
 * first (so that the process's first launch, its first submission and the first use of the
 * SPIR-V validator are not counted, as they are not in compile.cold, whose device is warm), then
 * times cubec_kernel_create + cubec_launch + cubec_sync of the salted kernel, checks the buffer
 * against the host and prints the milliseconds.
 *
 * cubec's side: every child finds the kernel in a cache directory of the figure's own, which a
 * first child filled. The baseline, cubec_no_disk_cache: the same children with
 * CUBEC_CACHE_DIR=none and a new salt each, i.e. compile.cold in a new process. The target
 * (BENCHMARKS.md) is warm_disk <= 0.1x compile.cold of the same run. */
#include "bench_figure.h"
#include "bench_kernels.h"

#include <cubec/cubec.h>

#include <errno.h>
#include <ftw.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define CU_TRY(call) BENCH_TRY(bench_from_status((call), #call))

typedef struct warm_fig {
    bench_params p;
    char dir[4096]; /* the cache directory of cubec's side ("" for the baseline) */
    uint32_t salt;  /* the kernel the children create */
    int fresh_salt; /* the baseline: a new kernel every child */
    uint32_t children;
} warm_fig;

/* ---- the child ------------------------------------------------------------------------- */

/* Creates the salted kernel and launches it once on `buf`. */
static bench_err salted_launch(cubec_device *dev, cubec_buffer buf, uint32_t salt,
                               cubec_kernel *out_kernel)
{
    char value[16];
    snprintf(value, sizeof value, "%u", salt);
    const cubec_define define = {"SALT", value};
    const cubec_kernel_desc desc = {.struct_size = sizeof(cubec_kernel_desc),
                                    .name = "bench_salted",
                                    .glsl = bench_glsl_salted,
                                    .defines = &define,
                                    .define_count = 1};
    static const bench_tiny_info info = {.n = BENCH_TINY_WORDS, .step = 1};
    CU_TRY(cubec_kernel_create(dev, &desc, out_kernel));
    const cubec_launch_desc launch = {.struct_size = sizeof(cubec_launch_desc),
                                      .kernel = *out_kernel,
                                      .buffers = &buf,
                                      .buffer_count = 1,
                                      .info = &info,
                                      .info_size = sizeof info,
                                      .groups = {1, 1, 1}};
    CU_TRY(cubec_launch(dev, CUBEC_STREAM_CURRENT, &launch));
    return bench_from_status(cubec_sync(dev, CUBEC_STREAM_CURRENT), "cubec_sync");
}

/* The kernel a child launches before the timed one (WARMUP_SALT, outside every figure's salts). */
#define WARMUP_SALT 1u

static bench_err child_run(uint32_t salt, double *out_ms)
{
    cubec_device *dev = NULL;
    CU_TRY(cubec_device_open(NULL, &dev));
    cubec_buffer buf = {0};
    cubec_kernel kernel = {0};
    bench_err err = NULL;
    const uint32_t zeros[BENCH_TINY_WORDS] = {0};
    uint32_t words[BENCH_TINY_WORDS];
#define CHILD_TRY(call)                                                                            \
    if (!err) err = bench_from_status((call), #call)
    CHILD_TRY(cubec_buffer_create(dev, CUBEC_STREAM_CURRENT, BENCH_RANGE_STRIDE, &buf));
    /* The device as compile.cold finds it: its launch path, the driver's compute state and the
     * validator warmed up by another kernel (cached from the first child too). */
    if (!err) err = salted_launch(dev, buf, WARMUP_SALT, &kernel);
    cubec_status_free(cubec_kernel_destroy(dev, kernel));
    kernel = (cubec_kernel){0};
    CHILD_TRY(cubec_write(dev, CUBEC_STREAM_CURRENT, buf, 0, zeros, sizeof zeros));
    CHILD_TRY(cubec_sync(dev, CUBEC_STREAM_CURRENT));
    double t0 = bench_now();
    if (!err) err = salted_launch(dev, buf, salt, &kernel);
    *out_ms = (bench_now() - t0) * 1e3;
    CHILD_TRY(cubec_read(dev, CUBEC_STREAM_CURRENT, buf, 0, words, sizeof words));
#undef CHILD_TRY
    for (uint32_t i = 0; !err && i < BENCH_TINY_WORDS; i++)
        if (words[i] != 1u + salt)
            err = bench_errorf("word %u holds %u, expected %u", i, words[i], 1u + salt);
    cubec_status_free(cubec_kernel_destroy(dev, kernel));
    if (buf.id) cubec_status_free(cubec_buffer_release(dev, buf));
    cubec_device_close(dev);
    return err;
}

int bench_warm_disk_child(const char *salt_text)
{
    char *end = NULL;
    unsigned long salt = strtoul(salt_text, &end, 10);
    if (!*salt_text || *end || salt > 0x7fffffffu) {
        fprintf(stderr, "cubec bench: --warm-disk-child: '%s' is not a salt\n", salt_text);
        return 2;
    }
    double ms = 0;
    bench_err err = child_run((uint32_t)salt, &ms);
    if (err) {
        fprintf(stderr, "cubec bench: --warm-disk-child %lu: %s\n", salt, err);
        bench_err_free(err);
        return 1;
    }
    printf("%.6f\n", ms);
    return 0;
}

/* ---- the parent ------------------------------------------------------------------------ */

/* The environment of a child: this one's, with CUBEC_CACHE_DIR set to `cache_dir` and without
 * CUBEC_TRACE (a child would rewrite the run's trace file). */
static char **child_environment(const char *cache_dir, char *cache_var, size_t cap)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "CUBEC_CACHE_DIR=", 16) != 0 &&
            strncmp(environ[i], "CUBEC_TRACE=", 12) != 0)
            env[k++] = environ[i];
    snprintf(cache_var, cap, "CUBEC_CACHE_DIR=%s", cache_dir);
    env[k++] = cache_var;
    env[k] = NULL;
    return env;
}

/* Runs one child and reads its milliseconds. */
static bench_err spawn_child(const char *cache_dir, uint32_t salt, double *out_ms)
{
    char salt_text[16], cache_var[128];
    snprintf(salt_text, sizeof salt_text, "%u", salt);
    char *argv[] = {"cubec", "bench", "--warm-disk-child", salt_text, NULL};
    char **env = child_environment(cache_dir, cache_var, sizeof cache_var);
    if (!env) return bench_errorf("out of host memory");
    int fds[2];
    if (pipe(fds) != 0) {
        free(env);
        return bench_errorf("pipe: %s", strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, "/proc/self/exe", &actions, NULL, argv, env);
    posix_spawn_file_actions_destroy(&actions);
    free(env);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return bench_errorf("posix_spawn /proc/self/exe: %s", strerror(rc));
    }
    char out[128] = {0};
    size_t got = 0;
    for (ssize_t r; got < sizeof out - 1 && (r = read(fds[0], out + got, sizeof out - 1 - got));) {
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        got += (size_t)r;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return bench_errorf("the child process for salt %u failed (status %d; see above)", salt,
                            status);
    char *end = NULL;
    *out_ms = strtod(out, &end);
    if (end == out) return bench_errorf("the child process printed '%s', not a time", out);
    return NULL;
}

/* Where the bench makes its temporary cache directories: $TMPDIR when set, else /tmp. */
static const char *tmp_base(void)
{
    const char *dir = getenv("TMPDIR");
    return dir && dir[0] ? dir : "/tmp";
}
static bench_err warm_setup_common(const bench_params *params, void **out_state, int cached)
{
    warm_fig *f = calloc(1, sizeof *f);
    *out_state = f;
    if (!f) return bench_errorf("out of host memory");
    f->p = *params;
    /* Salts of their own: compile.cold's are salt_base + 2k, the raw side's odd. */
    f->salt = (params->salt_base & ~1u) + (cached ? 0x40000000u : 0x40100000u);
    f->fresh_salt = !cached;
    if (!cached) {
        snprintf(f->dir, sizeof f->dir, "none");
        return NULL;
    }
    snprintf(f->dir, sizeof f->dir, "%s/cubec-bench-warm-disk-XXXXXX", tmp_base());
    if (!mkdtemp(f->dir)) {
        f->dir[0] = 0;
        return bench_errorf("mkdtemp: %s", strerror(errno));
    }
    /* The first child compiles the kernel and fills the cache. */
    double ms = 0;
    return spawn_child(f->dir, f->salt, &ms);
}

static bench_err warm_disk_setup(void *dev, const bench_params *params, void **out_state)
{
    (void)dev; /* the children open their own */
    return warm_setup_common(params, out_state, 1);
}

static bench_err no_cache_setup(void *dev, const bench_params *params, void **out_state)
{
    (void)dev;
    return warm_setup_common(params, out_state, 0);
}

static bench_err warm_disk_run(void *state, bench_sample *out)
{
    warm_fig *f = state;
    if (f->fresh_salt) f->salt += 2;
    f->children++;
    return spawn_child(f->dir, f->salt, &out->value);
}

/* Every child checked its own buffer; there is nothing left in this process to check. */
static bench_err warm_disk_verify(void *state)
{
    warm_fig *f = state;
    return f->children ? NULL : bench_errorf("no child process ran");
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void warm_disk_teardown(void *state)
{
    warm_fig *f = state;
    if (!f) return;
    if (f->dir[0] == '/') nftw(f->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    free(f);
}

const bench_impl bench_warm_disk_impl = {warm_disk_setup, warm_disk_run, warm_disk_verify,
                                         warm_disk_teardown};
const bench_impl bench_warm_disk_baseline_impl = {no_cache_setup, warm_disk_run, warm_disk_verify,
                                                  warm_disk_teardown};

/* ---- the run's cache directory --------------------------------------------------------- */

void bench_cache_dir_begin(char *dir, size_t cap)
{
    dir[0] = 0;
    if (getenv("CUBEC_CACHE_DIR")) return; /* the user's choice, `none` included */
    snprintf(dir, cap, "%s/cubec-bench-cache-XXXXXX", tmp_base());
    if (!mkdtemp(dir) || setenv("CUBEC_CACHE_DIR", dir, 1) != 0) {
        fprintf(stderr, "cubec bench: no temporary cache directory (%s): using none\n",
                strerror(errno));
        dir[0] = 0;
        setenv("CUBEC_CACHE_DIR", "none", 1);
    }
}

void bench_cache_dir_end(const char *dir)
{
    if (dir[0] == '/') nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}
