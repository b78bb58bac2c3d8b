/* The table and the JSON object of the suite's results (see bench_report.h). */
#include "bench_report.h"

#include <math.h>
#include <string.h>

/* A JSON string literal: quotes, backslashes and control characters escaped. */
static void json_string(FILE *out, const char *text)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(text ? text : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

/* JSON has no NaN: a missing number is null. */
static void json_number(FILE *out, double value)
{
    if (isfinite(value))
        fprintf(out, "%.6g", value);
    else
        fputs("null", out);
}

void bench_report_json(FILE *out, const bench_run_info *run, const bench_result *results,
                       size_t count)
{
    fputs("{\"device\": {\"name\": ", out);
    json_string(out, run->device_name);
    fprintf(out, ", \"vendor_id\": %u, \"driver\": ", run->vendor_id);
    json_string(out, run->driver);
    fputs(", \"type\": ", out);
    json_string(out, run->device_type);
    fputs("},\n \"backend\": ", out);
    json_string(out, run->backend);
    fputs(",\n \"commit\": ", out);
    json_string(out, run->commit);
    fprintf(out, ",\n \"quick\": %s,\n \"results\": [", run->quick ? "true" : "false");
    for (size_t i = 0; i < count; i++) {
        const bench_result *r = &results[i];
        fputs(i ? ",\n   {" : "\n   {", out);
        fputs("\"name\": ", out);
        json_string(out, r->name);
        fputs(", \"unit\": ", out);
        json_string(out, r->unit);
        if (r->note) {
            fputs(", \"note\": ", out);
            json_string(out, r->note);
        }
        if (r->error) {
            fputs(", \"error\": ", out);
            json_string(out, r->error);
        } else if (r->skipped) {
            fputs(", \"skipped\": ", out);
            json_string(out, r->skipped);
        } else {
            fputs(", \"value\": ", out);
            json_number(out, r->value);
            fputs(", \"baseline\": ", out);
            json_string(out, r->baseline);
            fputs(", \"baseline_value\": ", out);
            json_number(out, r->baseline_value);
            fputs(", \"ratio\": ", out);
            json_number(out, r->value / r->baseline_value);
            if (isfinite(r->device_value)) {
                fputs(", \"timestamp_value\": ", out);
                json_number(out, r->device_value);
            }
            if (isfinite(r->baseline_device_value)) {
                fputs(", \"baseline_timestamp_value\": ", out);
                json_number(out, r->baseline_device_value);
            }
        }
        fprintf(out,
                ", \"lower_is_better\": %s, \"method\": ", r->lower_is_better ? "true" : "false");
        json_string(out, r->method);
        fputs(", \"first\": ", out);
        json_string(out, r->first);
        fprintf(out, ", \"reps\": %u}", r->reps);
    }
    fputs("\n ]}\n", out);
}

static void table_number(FILE *out, double value)
{
    if (isfinite(value))
        fprintf(out, " %12.4g", value);
    else
        fprintf(out, " %12s", "-");
}

/* The numbers of a result that was measured, after its name and unit. */
static void table_row(FILE *out, const bench_result *r)
{
    table_number(out, r->value);
    table_number(out, r->baseline_value);
    fprintf(out, " %8.3f  %-6s", r->value / r->baseline_value,
            r->lower_is_better ? "lower" : "higher");
    table_number(out, r->device_value);
    table_number(out, r->baseline_device_value);
    fprintf(out, "  %s\n", r->baseline);
}

void bench_report_table(FILE *out, const bench_run_info *run, const bench_result *results,
                        size_t count)
{
    fprintf(out, "cubec bench%s on %s (%s, %s), backend %s, commit %s\n",
            run->quick ? " --quick" : "", run->device_name, run->device_type, run->driver,
            run->backend, run->commit);
    fprintf(out, "%-32s %-10s %12s %12s %8s  %-6s %12s %12s  %s\n", "figure", "unit", "cubec",
            "baseline", "ratio", "better", "cubec (ts)", "raw (ts)", "baseline is");
    for (size_t i = 0; i < count; i++) {
        const bench_result *r = &results[i];
        /* A note under the first of the rows that share it (multi.allreduce's three sizes). */
        const char *note =
            r->note && (i == 0 || !results[i - 1].note || strcmp(results[i - 1].note, r->note) != 0)
                ? r->note
                : NULL;
        fprintf(out, "%-32s %-10s", r->name, r->unit);
        if (r->error) {
            fprintf(out, " ERROR: %s\n", r->error);
        } else if (r->skipped) {
            fprintf(out, " skipped: %s\n", r->skipped);
        } else {
            table_row(out, r);
        }
        if (note) fprintf(out, "  note: %s\n", note);
    }
    fputs("Each value is the median of the repetitions after a warm-up; ratio = cubec / "
          "baseline.\n"
          "The baseline is raw_vulkan, except for streams.*, measured against cubec itself:\n"
          "streams.independent.N against its own 1-thread run (ratio = speedup over 1 thread),\n"
          "streams.cross against the same chain on one stream (ratio = cost of crossing),\n"
          "streams.interleave against the same work with CUBEC_STREAM_STRATEGY=sequential,\n"
          "graph.*_vs_eager against the same launches issued eagerly through cubec,\n"
          "kernel.gemm_f16 against a scalar 16x16 tiled multiply through cubec (cubec_scalar),\n"
          "multi.copy_peer.* and multi.copy_peer_exportable.* (to a second open of the device,\n"
          "the note names the path taken) against cubec_copy on one device,\n"
          "multi.allreduce.* (bus bandwidth) against multi.copy_peer's copy of the same bytes,\n"
          "multi.cuda_roundtrip against the same kernels in cubec alone (ratio = cost of the\n"
          "handoffs to CUDA and back);\n"
          "a figure the device cannot run (a feature or library missing) is skipped, saying why.\n"
          "memory.peak_ratio.P against the ladder preset (ratio = the preset's peak ratio\n"
          "over the ladder's).\n"
          "Each side runs all its repetitions on its own device, closed before the next side's "
          "opens.\n"
          "Device work is timed by the wall clock around submission and wait on both sides\n"
          "(method device: graph.replay_device* use timestamps on both sides, cubec's through\n"
          "cubec_profile_begin/end);\n"
          "cubec (ts) and raw (ts) are each side's device time from timestamps (device_dependent,\n"
          "copy.d2d and kernel.vector_add: a profile around the work on cubec's side).\n",
          out);
}
