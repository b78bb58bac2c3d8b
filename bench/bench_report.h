/* Printing the suite's results: the table for people and the JSON object of BENCHMARKS.md for
 * tools. Both print the same results; neither measures anything. */
#ifndef CUBEC_BENCH_REPORT_H
#define CUBEC_BENCH_REPORT_H

#include "bench_util.h"

#include <stdint.h>
#include <stdio.h>

typedef struct bench_result {
    const char *name;
    const char *unit;
    const char *method;   /* how the cubec value was taken: "wall" or "host" */
    const char *first;    /* the side measured first: "cubec", "raw_vulkan", "cubec_1_thread"... */
    const char *baseline; /* what baseline_value measured: "raw_vulkan", or for the streams.*
                           * figures cubec itself ("cubec_1_thread", "cubec_one_stream") */
    int lower_is_better;
    uint32_t reps;
    double value;                 /* cubec, median */
    double device_value;          /* cubec by timestamps (profiles), median; NaN if none */
    double baseline_value;        /* the baseline, median */
    double baseline_device_value; /* raw_vulkan by timestamps, median; NaN if none */
    bench_err error;              /* set: the figure failed and the numbers mean nothing */
    bench_err skipped;            /* set: why the device cannot run the figure (no numbers) */
    const char *note;             /* what the number means beyond its unit (NULL: nothing) */
    char *own_note;               /* the note when made at run time (freed with the results) */
} bench_result;

typedef struct bench_run_info {
    const char *device_name;
    const char *driver;
    uint32_t vendor_id;
    const char *device_type; /* "cpu", "discrete", "integrated", "virtual", "other" */
    const char *commit;
    const char *backend; /* the backend cubec's sides ran on (CUBEC_BACKEND): "vulkan", "webgpu" */
    int quick;
} bench_run_info;

void bench_report_table(FILE *out, const bench_run_info *run, const bench_result *results,
                        size_t count);
void bench_report_json(FILE *out, const bench_run_info *run, const bench_result *results,
                       size_t count);

#endif
