/* The `cubec` command-line tool: what its subcommands share.
 *
 * Exit codes are part of the tool's contract, so scripts can tell a mistake in the command line
 * (fix the command) from a failure while running it (look at the device, the kernel, the data):
 *   0  success
 *   1  a runtime error: a cubec call failed, a file could not be read or written
 *   2  a usage error: an unknown command or flag, or a flag value that does not parse
 * Every error message names the flag and the value that were refused. */
#ifndef CUBEC_TOOLS_CLI_H
#define CUBEC_TOOLS_CLI_H

#include <cubec/cubec.h>

#include <stdint.h>
#include <stdio.h>

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_RUNTIME = 1,
    CLI_EXIT_USAGE = 2,
};

/* Subcommands. argv[0] is the subcommand's name ("info", "run"); they return an exit code. */
int cli_info_main(int argc, char **argv);
/* `cubec info --topology [--json]` (tools/cmd_topology.c). */
int cli_topology_main(int json);
int cli_run_main(int argc, char **argv);
void cli_info_usage(FILE *out);
void cli_run_usage(FILE *out);

/* Prints "cubec <cmd>: <message>" and a hint to use --help on stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* If `status` is an error: prints "cubec <cmd>: <what>: <CODE>: <message>" on stderr, frees the
 * status and returns non-zero. Returns 0 for success (NULL). */
int cli_failed(const char *cmd, cubec_status status, const char *what);

/* The backend the configuration selects (CUBEC_BACKEND, `[device] backend`, read as
 * cubec_device_open reads it) into *out_backend, a gpu_backend; 0 when the configuration cannot
 * be read (reported as `cmd`'s error). */
int cli_selected_backend(const char *cmd, int *out_backend);
/* Whether `backend` (a gpu_backend) is the webgpu backend, whose devices are no Vulkan devices:
 * the subcommands say what WebGPU does where Vulkan's words would not be true. */
int cli_backend_is_webgpu(int backend);

/* Formats a byte count as "134217728 (128 MiB)" into `buf`; returns `buf`. */
const char *cli_format_bytes(uint64_t bytes, char *buf, size_t size);

#endif
