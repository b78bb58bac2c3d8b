/* cubec: the command-line face of the runtime.
 *
 *   cubec info                 the devices of the selected backend (Vulkan by default), their
 *                              limits, and the default one
 *   cubec info --json          the same as JSON, for scripts (docs/cli.md)
 *   cubec info --memory        the default device's memory report (--json for JSON)
 *   cubec run KERNEL ...       run one GLSL, SPIR-V or WGSL kernel on buffers made from the
 *                              command line
 *   cubec bench ...            the benchmark suite (bench/, see docs/benchmarks.md)
 *   cubec version              the version and the git revision it was built from
 *
 * This file only dispatches to the subcommands and holds the helpers they share (cli.h); each
 * subcommand lives in its own file. */
#include "bench.h"
#include "cli.h"

#include "base/config.h"
#include "gpu/gpu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubec_git.h" /* CUBEC_GIT_DESCRIBE, generated at build time */

#define CUBEC_STRINGIFY_(x) #x
#define CUBEC_STRINGIFY(x) CUBEC_STRINGIFY_(x)
#define CUBEC_VERSION_STRING                                                                       \
    CUBEC_STRINGIFY(CUBEC_VERSION_MAJOR)                                                           \
    "." CUBEC_STRINGIFY(CUBEC_VERSION_MINOR) "." CUBEC_STRINGIFY(CUBEC_VERSION_PATCH)

static void usage(FILE *out)
{
    fprintf(out,
            "cubec %s: a GPU compute runtime for C on Vulkan (and WebGPU)\n"
            "\n"
            "usage: cubec <command> [options]\n"
            "\n"
            "commands:\n"
            "  info      list the devices of the selected backend, their limits, and which\n"
            "            one is the default (--json for scripts); `info --memory [--json]`\n"
            "            prints the default device's memory report\n"
            "  run       run a GLSL (.comp), SPIR-V (.spv) or WGSL (.wgsl, webgpu) kernel on\n"
            "            buffers given as flags (typed, from .npy files, seeded random; outputs\n"
            "            saved as .npy)\n"
            "  bench     run the benchmark suite (a table, or --json; docs/benchmarks.md)\n"
            "  version   print the version and the git revision of this build\n"
            "  help      print this, or `cubec help <command>` for a command's options\n"
            "\n"
            "`cubec <command> --help` describes a command's options; docs/cli.md all of them.\n"
            "Environment: CUBEC_BACKEND picks the backend (vulkan, the default; null; webgpu,\n"
            "where a WebGPU implementation loads: CUBEC_WEBGPU_LIBRARY names one),\n"
            "CUBEC_DEVICE the default device (index or part of the name),\n"
            "CUBEC_VALIDATION=1 turns on the Vulkan validation layer (the vulkan backend's\n"
            "devices only), CUBEC_LOG_LEVEL sets the\n"
            "log level (off, error, warn, info, debug), CUBEC_LOG one per subsystem\n"
            "(e.g. memory=debug,compile=info; docs/configuration.md), CUBEC_TRACE=FILE writes\n"
            "a Chrome trace of every device (`run --trace FILE` and `bench --trace FILE` set it;\n"
            "docs/profiling.md).\n"
            "Exit codes: 0 success, 1 runtime error, 2 usage error.\n",
            CUBEC_VERSION_STRING);
}

static int version_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: cubec version\n\nPrints the version of cubec and the `git describe` of "
                   "the tree it was built from.\n");
            return CLI_EXIT_OK;
        }
        return cli_usage_error("version", "unexpected argument '%s'", argv[i]);
    }
    printf("cubec %s (git %s)\n", CUBEC_VERSION_STRING, CUBEC_GIT_DESCRIBE);
    return CLI_EXIT_OK;
}

/* `cubec help [command]`: the command's own --help, so there is one text per command. */
static int help_main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (argc > 2) {
        fprintf(stderr, "cubec help: unexpected argument '%s' (usage: cubec help [command])\n",
                argv[2]);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "info") == 0) {
        cli_info_usage(stdout);
    } else if (strcmp(cmd, "run") == 0) {
        cli_run_usage(stdout);
    } else if (strcmp(cmd, "version") == 0) {
        char *args[] = {"version", "--help", NULL};
        return version_main(2, args);
    } else if (strcmp(cmd, "bench") == 0) {
        char *args[] = {"bench", "--help", NULL};
        return cubec_bench_main(2, args);
    } else if (strcmp(cmd, "help") == 0) {
        usage(stdout);
    } else {
        fprintf(stderr,
                "cubec help: unknown command '%s' (commands: info, run, bench, version, "
                "help)\n",
                cmd);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "cubec %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'cubec %s --help'.\n", cmd);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

int cli_failed(const char *cmd, cubec_status status, const char *what)
{
    if (status == NULL) return 0;
    fprintf(stderr, "cubec %s: %s: %s: %s\n", cmd, what, cubec_code_name(cubec_status_code(status)),
            cubec_status_message(status));
    cubec_status_free(status);
    return 1;
}

int cli_selected_backend(const char *cmd, int *out_backend)
{
    cubec_config *c = malloc(sizeof *c); /* large (the pool list's text): not on the stack */
    if (!c) {
        fprintf(stderr, "cubec %s: host out of memory\n", cmd);
        return 0;
    }
    cubec_status err = config_load(c);
    if (!err) *out_backend = c->backend;
    free(c);
    return !cli_failed(cmd, err, "reading the configuration");
}

int cli_backend_is_webgpu(int backend)
{
    return strcmp(gpu_backend_name((gpu_backend)backend), "webgpu") == 0;
}

const char *cli_format_bytes(uint64_t bytes, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = (double)bytes;
    int unit = 0;
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        unit++;
    }
    if (unit == 0) {
        snprintf(buf, size, "%llu B", (unsigned long long)bytes);
    } else {
        snprintf(buf, size, "%llu (%.4g %s)", (unsigned long long)bytes, value, units[unit]);
    }
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    /* Each subcommand sees its own name as argv[0], like a program of its own. */
    if (strcmp(cmd, "info") == 0) return cli_info_main(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0) return cli_run_main(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0) return cubec_bench_main(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0)
        return version_main(argc - 1, argv + 1);
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
        return help_main(argc - 1, argv + 1);
    if (cmd[0] == '-') {
        fprintf(stderr, "cubec: unknown option '%s' (a command comes first)\n", cmd);
    } else {
        fprintf(stderr, "cubec: unknown command '%s'\n", cmd);
    }
    fprintf(stderr, "Try 'cubec --help'.\n");
    return CLI_EXIT_USAGE;
}
