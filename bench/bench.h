/* cubec's benchmark suite: the figures of ../shared/BENCHMARKS.md, each measured on cubec and on a
 * raw Vulkan baseline (raw_vulkan.c) in the same process, side by side.
 *
 * `cubec bench [--json] [--quick] [--filter SUBSTR] [--trace FILE]` is this function:
 * tools/cubec.c passes its arguments after the word "bench" (argv[0] is the command's name and is
 * skipped). It prints a table, or with --json the JSON object of BENCHMARKS.md, on stdout, and a
 * progress line on stderr. Returns 0 when every figure ran and verified, 1 when one failed (its
 * message is printed instead of a number) or the --trace file was not written, 2 on a usage
 * error. */
#ifndef CUBEC_BENCH_H
#define CUBEC_BENCH_H

#ifdef __cplusplus
extern "C" {
#endif

int cubec_bench_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
