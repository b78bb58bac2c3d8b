/* The fault sweep: a small MLP-like workload is run once cleanly to count its fallible calls of
 * each kind (cubec_fault_get_counts after opening the device and after the workload), then rerun on
 * a fresh device once per kind and per call number n up to that count, with that one call made
 * to fail: through CUBEC_FAULT before cubec_device_open for calls made while opening, through
 * cubec_fault_inject right after it for the others.
 *
 * The workload (CUBEC_TASKS_MAX=4, so that it submits often): two layers (matmul + bias + ReLU,
 * then matmul + bias) on two streams for three iterations, with fresh activations created,
 * written, read, checked and released in each; parameters owned by the first stream and used from
 * the second; the second stream's second layer takes its workgroup counts from a buffer filled
 * on the device; an accumulator on the second stream fed from both streams; a buffer of the first
 * stream that each iteration overwrites with a copy of the second stream's output ("keep"); a
 * fill (which compiles cubec's builtin kernels); flushes, a sync and a final cubec_sync_check of
 * everything; and, before every read that waits, a launch that keeps the device busy for a few
 * milliseconds, so that the waits, and so the numbering of wait calls, are the same in every run.
 * Values are small integers in floats (and uint32 for the busy kernel): every result is exact,
 * and every read is compared with a reference computed here on the CPU, which the clean run must
 * match.
 *
 * Every run asserts: no crash, no leak (the test also runs in the ASan build), no validation
 * message; the call that makes the failing call returns an error that names the injected fault
 * (an injected page fault may instead be absorbed: memory_alloc retries after an out-of-memory
 * error), and what it would have produced is treated as not produced (nothing depending on it is
 * queued); every buffer whose read or check fails is downstream of the fault, with a message that
 * names the injected fault as root cause and a first link that matches the work that wrote it
 * last; every buffer computed from one seen to carry the failure carries it too; nothing that a
 * read or check found written fails later; every other buffer reads back exactly the reference;
 * after a wait fault (a lost device) every later call returns CUBEC_DEVICE_LOST at once and the
 * run ends; an encode fault (a batch failing on the submission thread) lets the call that handed
 * the batch over succeed, and a later call returns CUBEC_DEVICE_LOST naming the fault, after
 * which the same holds. Violations in the faulty runs are collected (one bug must not hide another)
 * and listed at the end, each kind once with its first occurrence. The last line of output is the
 * sweep's size: "sweep: R runs, F faults injected, C reads checked" (reads and checks), with R
 * the sum of the clean run's counts. CUBEC_SWEEP_TRACE=1 prints every call. */
#include "test_util.h"

#include "base/clock.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Kernels and their CPU references
 * ------------------------------------------------------------------------------------------- */

/* y[m x n] = x[m x k] * w[k x n] + b[n], then ReLU with APPLY_RELU; one invocation per output. */
static const char linear_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer X { float x[]; };\n"
    "layout(std430, binding = 1) readonly buffer W { float w[]; };\n"
    "layout(std430, binding = 2) readonly buffer B { float b[]; };\n"
    "layout(std430, binding = 3) writeonly buffer Y { float y[]; };\n"
    "CUBEC_INFO(uint m; uint n; uint k;)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i >= info.m * info.n) return;\n"
    "  uint r = i / info.n, c = i % info.n;\n"
    "  float acc = b[c];\n"
    "  for (uint j = 0; j < info.k; j++) acc += x[r * info.k + j] * w[j * info.n + c];\n"
    "#ifdef APPLY_RELU\n"
    "  acc = max(acc, 0.0);\n"
    "#endif\n"
    "  y[i] = acc;\n"
    "}\n";

/* acc[i] += y[i] */
static const char accumulate_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) buffer A { float acc[]; };\n"
    "layout(std430, binding = 1) readonly buffer Y { float y[]; };\n"
    "CUBEC_INFO(uint n;)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < info.n) acc[i] += y[i];\n"
    "}\n";

/* Each word goes through `n` steps of an LCG: about 13 ms on lavapipe for 512 words
 * (which ends any loop after 65535 iterations, so the work is wide rather than long). */
static const char busy_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) buffer V { uint v[]; };\n"
    "CUBEC_INFO(uint n;)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  uint s = v[i];\n"
    "  for (uint k = 0; k < info.n; k++) s = s * 1664525u + 1013904223u;\n"
    "  v[i] = s;\n"
    "}\n";

#define M 4  /* rows of a batch */
#define K 16 /* input features */
#define H 32 /* hidden features */
#define O 8  /* outputs */
#define BUSY_WORDS 512
#define BUSY_STEPS 60000u
#define ITERATIONS 3

static void cpu_linear(const float *x, const float *w, const float *b, float *y, uint32_t m,
                       uint32_t n, uint32_t k, int relu)
{
    for (uint32_t r = 0; r < m; r++)
        for (uint32_t c = 0; c < n; c++) {
            float acc = b[c];
            for (uint32_t j = 0; j < k; j++)
                acc += x[r * k + j] * w[j * n + c];
            y[r * n + c] = relu && acc < 0.0f ? 0.0f : acc;
        }
}

static void cpu_busy(const uint32_t *in, uint32_t *out)
{
    static uint32_t a, c;
    if (!a) { /* BUSY_STEPS steps of the LCG are one affine map s -> a * s + c */
        a = 1;
        for (uint32_t k = 0; k < BUSY_STEPS; k++) {
            a *= 1664525u;
            c = c * 1664525u + 1013904223u;
        }
    }
    for (uint32_t i = 0; i < BUSY_WORDS; i++)
        out[i] = in[i] * a + c;
}

/* ---------------------------------------------------------------------------------------------
 * The model of one run: what each buffer should hold, and what may or must have failed
 * ------------------------------------------------------------------------------------------- */

#define MAX_BUFFERS 48
#define MAX_WORDS 512
#define MAX_EVENTS 256

/* A buffer's words, as floats or as uint32 (the busy kernel's). */
typedef union wordbuf {
    uint32_t u[MAX_WORDS];
    float f[MAX_WORDS];
} wordbuf;

typedef struct lbuf {
    char name[24];
    cubec_buffer h;  /* 0: not created (its creation failed or was not attempted) */
    uint64_t number; /* "buffer #n" in messages */
    int is_float;
    uint32_t words;
    wordbuf ref;     /* what a clean run holds now */
    int unknown;     /* contents unknown: never written, or a call that should have written it
                        returned an error; nothing that reads it is queued, and it is not checked */
    int settled;     /* what wrote it is known to have been submitted (or was a host write) */
    int maybe;       /* it may carry the injected failure (downstream of the fault) */
    int failed;      /* its last read returned the failure */
    int read_ok;     /* its last read returned the reference */
    int confirmed;   /* a read or check said these contents were written: they cannot fail later */
    int after_fault; /* written by work queued after the failing call: not in a lost submission */
    uint32_t version;
    /* Lineage: the work (events) its contents came from, itself included. A buffer whose
     * lineage holds an event whose output was seen to carry the failure must carry it too. */
    int event; /* the event that wrote the current contents; -1: the host */
    uint64_t deps[MAX_EVENTS / 64];
    /* The work that wrote the current contents (for checking the first link of a chain). */
    const char *writer; /* kernel name, NULL for a host write */
    uint64_t writer_stream;
    int writer_inputs[5];
    uint32_t writer_input_versions[5];
    int writer_input_count;
    char failure[1024]; /* the message after "read of buffer #n: ", when failed */
} lbuf;

typedef struct run {
    cubec_device *d;
    int clean; /* no fault armed */
    cubec_fault_kind kind;
    uint64_t n;        /* the failing call, counted from the device's opening */
    int fault_seen;    /* the n-th call of `kind` was made */
    int fault_errored; /* ... and the call that made it returned its error */
    int lost;          /* the device is lost: the run ends */
    char root[96];     /* "injected fault: <kind> call #<n>" */
    uint64_t created;  /* buffers numbered on this device */
    int events;        /* work queued so far */
    uint64_t failed_events[MAX_EVENTS / 64]; /* work whose output was seen to carry the failure */
    lbuf b[MAX_BUFFERS];
    int nb;
    cubec_kernel relu, linear, accumulate, busy;
    int kernel_ok[4];
    uint64_t reads; /* reads whose outcome was checked */
} run;

static double now_s(void)
{
    return (double)clock_now_ns() * 1e-9;
}

static const char *run_name(const run *r)
{
    static char name[64];
    if (r->clean) return "clean run";
    snprintf(name, sizeof name, "run with %s:%" PRIu64, cubec_fault_kind_name(r->kind), r->n);
    return name;
}

/* A violation of a rule: fatal in the clean run (the workload itself must be right); in the
 * sweep, recorded by kind (its format) and the run goes on, so that one bug does not hide the
 * others; the test fails at the end, listing each kind once with its first occurrence. */
typedef struct violation {
    const char *format;
    char first[4096];
    char run[64];
    uint64_t count;
} violation;

static violation violations[64];
static int violation_kinds;
static uint64_t violation_total, violating_runs;
static int run_violated;

static void violate(run *r, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void violate(run *r, const char *format, ...)
{
    char what[4096];
    va_list ap;
    va_start(ap, format);
    vsnprintf(what, sizeof what, format, ap);
    va_end(ap);
    if (r->clean) fail_msg("%s: %s", run_name(r), what);
    violation_total++;
    if (!run_violated) violating_runs++;
    run_violated = 1;
    for (int i = 0; i < violation_kinds; i++)
        if (violations[i].format == format) {
            violations[i].count++;
            return;
        }
    if (violation_kinds == (int)(sizeof violations / sizeof violations[0])) return;
    violation *v = &violations[violation_kinds++];
    v->format = format;
    v->count = 1;
    snprintf(v->first, sizeof v->first, "%s", what);
    snprintf(v->run, sizeof v->run, "%s", run_name(r));
}

#define RUN_FAIL(r, ...) violate((r), __VA_ARGS__)

static lbuf *new_lbuf(run *r, const char *name, uint32_t words, int is_float)
{
    assert_true(r->nb < MAX_BUFFERS && words <= MAX_WORDS);
    lbuf *b = &r->b[r->nb++];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    b->words = words;
    b->is_float = is_float;
    b->unknown = 1;
    return b;
}

static uint64_t stream_number(cubec_stream s)
{
    return s & 0xffffffffffffull;
}

/* CUBEC_SWEEP_TRACE=1 prints every call of the workload. */
static int trace;

/* The GPU work queued so far whose submission is not known: at the fault, it may be lost. */
static void mark_unsettled(run *r)
{
    for (int i = 0; i < r->nb; i++) {
        lbuf *b = &r->b[i];
        if (b->h.id && !b->unknown && !b->settled) b->maybe = 1;
    }
}

/* After every call: was it the one that made the failing call? `st` is its result (not freed).
 * Returns 1 when the run must stop issuing work (the device is lost). */
static int after_call(run *r, cubec_status st, const char *what)
{
    if (trace) {
        uint64_t c[CUBEC_FAULT_KIND_COUNT] = {0};
        cubec_status_free(r->lost ? NULL : cubec_fault_get_counts(r->d, c));
        fprintf(stderr, "  %s -> %s (submit %" PRIu64 ", wait %" PRIu64 ")\n", what,
                st ? cubec_status_message(st) : "ok", c[CUBEC_FAULT_SUBMIT], c[CUBEC_FAULT_WAIT]);
    }
    if (r->clean) {
        if (st)
            RUN_FAIL(r, "%s failed: %s: %s", what, cubec_code_name(cubec_status_code(st)),
                     cubec_status_message(st));
        return 0;
    }
    if (st && cubec_status_code(st) == CUBEC_DEVICE_LOST) {
        /* A wait fault loses the device in the call that waits; an encode fault strikes on the
         * submission thread after the call that handed the batch over, and that call or a
         * later one sees the loss (the message names the fault, so it was made). */
        int expected = r->kind == CUBEC_FAULT_WAIT ? !r->fault_seen : r->kind == CUBEC_FAULT_ENCODE;
        if (!r->fault_seen) mark_unsettled(r);
        if (!expected || !strstr(cubec_status_message(st), r->root))
            RUN_FAIL(r, "%s: unexpected CUBEC_DEVICE_LOST: %s", what, cubec_status_message(st));
        r->fault_seen = r->fault_errored = 1;
        r->lost = 1;
        return 1;
    }
    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    cubec_status cs = cubec_fault_get_counts(r->d, counts);
    if (cs && r->kind == CUBEC_FAULT_ENCODE && cubec_status_code(cs) == CUBEC_DEVICE_LOST &&
        strstr(cubec_status_message(cs), r->root)) {
        /* The call polled the GPU's progress and found the batch that failed on the
         * submission thread; what it returned was checked above (a read against the
         * reference): the loss shows from the next call on. */
        cubec_status_free(cs);
        if (!r->fault_seen) mark_unsettled(r);
        r->fault_seen = r->fault_errored = 1;
        r->lost = 1;
        return 1;
    }
    if (cs)
        fail_msg("%s: cubec_fault_get_counts after %s: %s", run_name(r), what,
                 cubec_status_message(cs));
    if (!r->fault_seen && counts[r->kind] >= r->n) {
        r->fault_seen = 1;
        mark_unsettled(r);
        if (st) {
            if (!strstr(cubec_status_message(st), r->root))
                RUN_FAIL(r,
                         "%s made the failing call but returned \"%s\", which does not name "
                         "\"%s\"",
                         what, cubec_status_message(st), r->root);
            r->fault_errored = 1;
        } else if (r->kind != CUBEC_FAULT_PAGE && r->kind != CUBEC_FAULT_ENCODE) {
            /* An injected page fault may be absorbed: memory_alloc answers an out-of-memory
             * error by returning empty pages and allocating again. An encode fault strikes
             * later, on the submission thread. Nothing else may succeed. */
            RUN_FAIL(r, "%s made the failing call (%s #%" PRIu64 ") but succeeded", what,
                     cubec_fault_kind_name(r->kind), r->n);
        }
        return 0;
    }
    if (st)
        RUN_FAIL(r, "%s failed although it made no failing call: %s: %s", what,
                 cubec_code_name(cubec_status_code(st)), cubec_status_message(st));
    return 0;
}

/* A fresh version of `b`'s contents, written by the host or by work. */
static void new_version(lbuf *b, const void *ref)
{
    memcpy(b->ref.u, ref, b->words * 4u);
    b->unknown = 0;
    b->failed = 0;
    b->read_ok = 0;
    b->confirmed = 0;
    b->after_fault = 0;
    b->version++;
    b->event = -1;
    memset(b->deps, 0, sizeof b->deps);
}

/* Was `b` computed from work whose output was seen to carry the failure? */
static int must_fail(const run *r, const lbuf *b)
{
    for (int i = 0; i < MAX_EVENTS / 64; i++)
        if (b->deps[i] & r->failed_events[i]) return 1;
    return 0;
}

/* cubec_buffer_create, or cubec_buffer_from when `data` is set, on stream `s`. */
static void op_create(run *r, lbuf *b, cubec_stream s, const uint32_t *data)
{
    if (r->lost) return;
    uint64_t number = ++r->created;
    cubec_buffer h = {0};
    cubec_status st = data ? cubec_buffer_from(r->d, s, data, b->words * 4u, &h)
                           : cubec_buffer_create(r->d, s, b->words * 4u, &h);
    after_call(r, st, data ? "cubec_buffer_from" : "cubec_buffer_create");
    if (st) {
        if (h.id) RUN_FAIL(r, "a failed creation returned a buffer");
        cubec_status_free(st);
        return; /* b stays uncreated: nothing that uses it is queued */
    }
    b->h = h;
    b->number = number;
    if (data) {
        new_version(b, data);
        b->settled = 1;
        b->writer = NULL;
    }
}

static void op_write(run *r, lbuf *b, cubec_stream s, const uint32_t *data)
{
    if (r->lost || !b->h.id) return;
    cubec_status st = cubec_write(r->d, s, b->h, 0, data, b->words * 4u);
    after_call(r, st, "cubec_write");
    if (st) {
        cubec_status_free(st);
        b->unknown = 1;
        b->version++;
        return;
    }
    new_version(b, data);
    b->settled = 1;
    b->maybe = 0;
    b->writer = NULL;
}

/* Marks `out` as written by work `name` on stream `s` from `inputs`, with contents `ref`. */
static void note_work(run *r, lbuf *out, const char *name, cubec_stream s, lbuf *const *inputs,
                      int nin, const void *ref)
{
    int maybe = 0;
    uint64_t deps[MAX_EVENTS / 64] = {0};
    for (int i = 0; i < nin; i++) {
        maybe |= inputs[i]->maybe;
        for (int j = 0; j < MAX_EVENTS / 64; j++)
            deps[j] |= inputs[i]->deps[j];
        out->writer_inputs[i] = (int)(inputs[i] - r->b);
        out->writer_input_versions[i] = inputs[i]->version;
    }
    out->writer_input_count = nin;
    new_version(out, ref);
    assert_true(r->events < MAX_EVENTS);
    out->event = r->events++;
    deps[out->event / 64] |= 1ull << (out->event % 64);
    memcpy(out->deps, deps, sizeof deps);
    out->settled = 0;
    out->maybe = r->fault_seen ? maybe : 0;
    out->after_fault = r->fault_seen;
    out->writer = name;
    out->writer_stream = stream_number(s);
}

/* Can work that reads `inputs` and writes `out` be queued? Otherwise `out` becomes unknown. */
static int can_queue(run *r, lbuf *out, lbuf *const *inputs, int nin)
{
    if (r->lost) return 0;
    int ok = out->h.id != 0;
    for (int i = 0; i < nin; i++)
        ok &= inputs[i]->h.id && !inputs[i]->unknown;
    if (!ok && out->h.id) {
        out->unknown = 1;
        out->version++;
    }
    return ok;
}

/* A launch of `k` over `buffers` (the inputs, then the output); `ref` is the output's new
 * reference. `out_is_input`: the output binding is read-write. */
static void op_launch(run *r, cubec_kernel k, int kernel_ok, const char *name, cubec_stream s,
                      lbuf *const *bufs, int count, int out_is_input, const void *info,
                      uint32_t info_size, uint32_t groups, lbuf *indirect, const void *ref)
{
    lbuf *out = bufs[count - 1];
    lbuf *inputs[6];
    int nin = out_is_input ? count : count - 1;
    memcpy(inputs, bufs, (size_t)nin * sizeof *inputs);
    if (indirect) inputs[nin++] = indirect; /* the indirect count is an input */
    if (!can_queue(r, out, inputs, nin)) return;
    if (!kernel_ok) {
        out->unknown = 1;
        out->version++;
        return;
    }
    cubec_buffer hs[5];
    for (int i = 0; i < count; i++)
        hs[i] = bufs[i]->h;
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = hs,
                            .buffer_count = (uint32_t)count,
                            .info = info,
                            .info_size = info_size,
                            .groups = {groups, 1, 1},
                            .indirect = indirect ? indirect->h : (cubec_buffer){0}};
    cubec_status st = cubec_launch(r->d, s, &ld);
    after_call(r, st, "cubec_launch");
    if (st) {
        cubec_status_free(st);
        out->unknown = 1;
        out->version++;
        return;
    }
    note_work(r, out, name, s, inputs, nin, ref);
}

/* y = x * w + b (then ReLU); with `counts`, the workgroup counts are read from that buffer. */
static void op_linear(run *r, cubec_stream s, int relu, lbuf *x, lbuf *w, lbuf *b, lbuf *y,
                      uint32_t m, uint32_t n, uint32_t k, lbuf *counts)
{
    lbuf *bufs[4] = {x, w, b, y};
    float out[MAX_WORDS];
    cpu_linear(x->ref.f, w->ref.f, b->ref.f, out, m, n, k, relu);
    uint32_t info[3] = {m, n, k};
    op_launch(r, relu ? r->relu : r->linear, r->kernel_ok[relu ? 0 : 1],
              relu ? "linear_relu" : "linear", s, bufs, 4, 0, info, sizeof info, (m * n + 63) / 64,
              counts, out);
}

static void op_accumulate(run *r, cubec_stream s, lbuf *acc, lbuf *y)
{
    lbuf *bufs[2] = {y, acc}; /* launched as (acc, y): see below */
    float out[MAX_WORDS];
    for (uint32_t i = 0; i < acc->words; i++)
        out[i] = acc->ref.f[i] + y->ref.f[i];
    if (!can_queue(r, acc, bufs, 2)) return;
    if (!r->kernel_ok[2]) {
        acc->unknown = 1;
        acc->version++;
        return;
    }
    uint32_t n = acc->words;
    cubec_buffer hs[2] = {acc->h, y->h};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = r->accumulate,
                            .buffers = hs,
                            .buffer_count = 2,
                            .info = &n,
                            .info_size = sizeof n,
                            .groups = {(n + 63) / 64, 1, 1}};
    cubec_status st = cubec_launch(r->d, s, &ld);
    after_call(r, st, "cubec_launch");
    if (st) {
        cubec_status_free(st);
        acc->unknown = 1;
        acc->version++;
        return;
    }
    note_work(r, acc, "accumulate", s, bufs, 2, out);
}

static void op_busy(run *r, cubec_stream s, lbuf *v)
{
    lbuf *bufs[1] = {v};
    uint32_t out[BUSY_WORDS];
    cpu_busy(v->ref.u, out);
    uint32_t n = BUSY_STEPS;
    op_launch(r, r->busy, r->kernel_ok[3], "busy", s, bufs, 1, 1, &n, sizeof n, BUSY_WORDS / 64,
              NULL, out);
}

static void op_copy(run *r, cubec_stream s, lbuf *src, lbuf *dst)
{
    lbuf *in[1] = {src};
    if (!can_queue(r, dst, in, 1)) return;
    assert_int_equal(src->words, dst->words);
    cubec_status st = cubec_copy(r->d, s, src->h, 0, dst->h, 0, src->words * 4u);
    after_call(r, st, "cubec_copy");
    if (st) {
        cubec_status_free(st);
        dst->unknown = 1;
        dst->version++;
        return;
    }
    /* On lavapipe (a CPU device) the copy is a transfer named "cubec.copy"; elsewhere a builtin
     * kernel "cubec.copy" or "cubec.copy4": the chain check accepts the prefix. */
    note_work(r, dst, "cubec.copy", s, in, 1, src->ref.u);
}

static void op_fill(run *r, cubec_stream s, lbuf *dst, uint32_t pattern)
{
    if (!can_queue(r, dst, NULL, 0)) return;
    cubec_status st = cubec_fill(r->d, s, dst->h, 0, dst->words * 4u, pattern);
    after_call(r, st, "cubec_fill");
    if (st) {
        cubec_status_free(st);
        dst->unknown = 1;
        dst->version++;
        return;
    }
    uint32_t ref[MAX_WORDS];
    for (uint32_t i = 0; i < dst->words; i++)
        ref[i] = pattern;
    note_work(r, dst, "cubec.fill", s, NULL, 0, ref);
}

static void op_sync(run *r, cubec_stream s)
{
    if (r->lost) return;
    cubec_status st = cubec_sync(r->d, s);
    after_call(r, st, "cubec_sync");
    if (st) {
        cubec_status_free(st);
        return;
    }
    /* Everything queued on the stream was submitted. */
    for (int i = 0; i < r->nb; i++)
        if (r->b[i].writer && r->b[i].writer_stream == stream_number(s)) r->b[i].settled = 1;
}

static void op_release(run *r, lbuf *b)
{
    if (r->lost || !b->h.id) return;
    cubec_status st = cubec_buffer_release(r->d, b->h);
    after_call(r, st, "cubec_buffer_release");
    cubec_status_free(st);
    b->h.id = 0;
}

/* Is `msg` (after "read of buffer #n: ") a chain that starts with the writer of `b`? */
static void check_chain(run *r, const lbuf *b, const char *msg)
{
    const char *rest = msg;
    if (strncmp(rest, "not written: ", 13))
        RUN_FAIL(r, "%s (#%" PRIu64 "): \"%s\" does not start with \"not written: \"", b->name,
                 b->number, msg);
    rest += 13;
    /* The root cause ends the chain. */
    size_t lm = strlen(msg), lr = strlen(r->root);
    if (lm < lr || strcmp(msg + lm - lr, r->root))
        RUN_FAIL(r, "%s (#%" PRIu64 "): \"%s\" does not end with the root cause \"%s\"", b->name,
                 b->number, msg, r->root);
    if (!strncmp(rest, "launch \"", 8)) {
        /* launch "<writer>" on stream <s> (was skipped because its [indirect-count |]input
         * buffer #<m> was not written | failed): ... */
        if (!b->writer || strncmp(rest + 8, b->writer, strlen(b->writer)))
            RUN_FAIL(r, "%s (#%" PRIu64 "): \"%s\" does not name its writer \"%s\"", b->name,
                     b->number, msg, b->writer ? b->writer : "(host)");
        char want[96];
        snprintf(want, sizeof want, " on stream %" PRIu64 " ", b->writer_stream);
        if (!strstr(rest, want))
            RUN_FAIL(r, "%s (#%" PRIu64 "): \"%s\" does not name stream %" PRIu64, b->name,
                     b->number, msg, b->writer_stream);
        static const char input[] = " was skipped because its input buffer #";
        static const char count[] = " was skipped because its indirect-count buffer #";
        const char *sk = strstr(rest, input), *skc = strstr(rest, count);
        const char *first_colon = strstr(rest, ": ");
        if (skc && (!sk || skc < sk)) sk = skc;
        if (sk && (!first_colon || sk < first_colon)) {
            uint64_t m = strtoull(sk + (sk == skc ? strlen(count) : strlen(input)), NULL, 10);
            int found = 0;
            for (int i = 0; i < b->writer_input_count; i++)
                found |= r->b[b->writer_inputs[i]].number == m;
            if (!found)
                RUN_FAIL(r,
                         "%s (#%" PRIu64 "): \"%s\": buffer #%" PRIu64
                         " is not an input of the work that wrote it last (the failure is "
                         "older than the contents)",
                         b->name, b->number, msg, m);
        }
    } else if (strncmp(rest, "the submission of its work failed: ", 35)) {
        RUN_FAIL(r, "%s (#%" PRIu64 "): unexpected first link in \"%s\"", b->name, b->number, msg);
    } else if (!b->writer) {
        RUN_FAIL(r, "%s (#%" PRIu64 "): \"%s\", but the host wrote it last", b->name, b->number,
                 msg);
    } else if (b->after_fault) {
        RUN_FAIL(r,
                 "%s (#%" PRIu64 "): \"%s\", but it was written by work queued after the "
                 "failing call, which cannot have been in the failed submission",
                 b->name, b->number, msg);
    }
}

/* Reads `b` on stream `s` (or, with `check`, asks cubec_check about it) and checks the outcome
 * against the model. */
static void op_host(run *r, lbuf *b, cubec_stream s, int check)
{
    if (r->lost || !b->h.id || b->unknown) return;
    wordbuf got;
    const char *fn = check ? "cubec_check" : "cubec_read";
    cubec_status st =
        check ? cubec_check(r->d, &b->h, 1) : cubec_read(r->d, s, b->h, 0, got.u, b->words * 4u);
    if (!st) {
        after_call(r, NULL, fn);
        r->reads++;
        if (must_fail(r, b))
            RUN_FAIL(r,
                     "%s of %s (#%" PRIu64 ") succeeded, but it was computed from work "
                     "whose output carries the failure",
                     fn, b->name, b->number);
        if (check) {
            b->confirmed = 1;
            return;
        }
        for (uint32_t i = 0; i < b->words; i++) {
            int same = b->is_float ? got.f[i] == b->ref.f[i] : got.u[i] == b->ref.u[i];
            if (!same) {
                if (b->is_float)
                    RUN_FAIL(r, "%s (#%" PRIu64 "): word %u is %g, expected %g", b->name, b->number,
                             i, (double)got.f[i], (double)b->ref.f[i]);
                else
                    RUN_FAIL(r, "%s (#%" PRIu64 "): word %u is %u, expected %u", b->name, b->number,
                             i, got.u[i], b->ref.u[i]);
                return;
            }
        }
        b->settled = 1;
        b->failed = 0;
        b->read_ok = 1;
        b->confirmed = 1;
        return;
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s of buffer #%" PRIu64 ": ", check ? "check" : "read",
             b->number);
    const char *msg = cubec_status_message(st);
    r->reads++;
    if (strncmp(msg, prefix, strlen(prefix))) {
        /* Not the buffer's failure: the call submitted queued work and that failed (or the
         * device was lost). It must be the call that made the failing call. */
        after_call(r, st, fn);
        cubec_status_free(st);
        return;
    }
    after_call(r, NULL, fn); /* the call itself made no failing call */
    if (trace) fprintf(stderr, "    %s of %s: %s\n", fn, b->name, msg);
    if (r->clean || !r->fault_seen)
        RUN_FAIL(r, "%s of %s (#%" PRIu64 ") failed before any fault: %s", fn, b->name, b->number,
                 msg);
    else if (!b->maybe)
        RUN_FAIL(r, "%s (#%" PRIu64 ") is not downstream of the fault, yet: %s", b->name, b->number,
                 msg);
    else if (b->confirmed)
        RUN_FAIL(r,
                 "%s (#%" PRIu64 "): an earlier read or check of the same contents succeeded, "
                 "yet: %s",
                 b->name, b->number, msg);
    check_chain(r, b, msg + strlen(prefix));
    snprintf(b->failure, sizeof b->failure, "%s", msg + strlen(prefix));
    b->failed = 1;
    b->read_ok = 0;
    if (b->event >= 0) r->failed_events[b->event / 64] |= 1ull << (b->event % 64);
    cubec_status_free(st);
}

static void op_read(run *r, lbuf *b, cubec_stream s)
{
    op_host(r, b, s, 0);
}

static void op_check(run *r, lbuf *b)
{
    op_host(r, b, 0, 1);
}

static void op_flush(run *r, cubec_stream s)
{
    if (r->lost) return;
    cubec_status st = cubec_flush(r->d, s);
    after_call(r, st, "cubec_flush");
    cubec_status_free(st);
}

/* After the reads at the end: no buffer that read back fine was computed from work whose output
 * carries the failure (whichever was read first); and a buffer whose writer read a buffer that
 * still holds the version it read, and carries the failure, carries it too. */
static void check_downstream(run *r)
{
    for (int i = 0; i < r->nb; i++) {
        const lbuf *b = &r->b[i];
        if (!b->h.id || b->unknown) continue;
        if (b->read_ok && must_fail(r, b))
            RUN_FAIL(r,
                     "%s (#%" PRIu64 ") read back data, but it was computed from work whose "
                     "output carries the failure",
                     b->name, b->number);
        if (!b->writer) continue;
        for (int j = 0; j < b->writer_input_count; j++) {
            const lbuf *in = &r->b[b->writer_inputs[j]];
            if (in == b || !in->h.id || in->version != b->writer_input_versions[j]) continue;
            if (in->failed && !b->failed)
                RUN_FAIL(r,
                         "%s (#%" PRIu64 ") was computed from %s (#%" PRIu64
                         "), which carries the failure, but reads back fine",
                         b->name, b->number, in->name, in->number);
        }
    }
}

/* cubec_sync_check of every readable buffer: the failure of the first one that carries one. */
static void check_all(run *r, cubec_stream s)
{
    if (r->lost) return;
    cubec_buffer list[MAX_BUFFERS];
    uint32_t count = 0;
    const lbuf *first = NULL;
    for (int i = 0; i < r->nb; i++) {
        const lbuf *b = &r->b[i];
        if (!b->h.id || b->unknown) continue;
        list[count++] = b->h;
        if (b->failed && !first) first = b;
    }
    cubec_status st = cubec_sync_check(r->d, s, list, count);
    if (!first) {
        if (st) RUN_FAIL(r, "cubec_sync_check of clean buffers: %s", cubec_status_message(st));
        return;
    }
    char want[1200];
    snprintf(want, sizeof want, "check of buffer #%" PRIu64 ": %s", first->number, first->failure);
    if (!st || strcmp(cubec_status_message(st), want))
        RUN_FAIL(r, "cubec_sync_check gave \"%s\"; expected \"%s\"",
                 st ? cubec_status_message(st) : "ok", want);
    cubec_status_free(st);
}

/* After a lost device every call fails at once with CUBEC_DEVICE_LOST. */
static void check_lost(run *r, cubec_stream s, lbuf *any)
{
    cubec_device *d = r->d;
    double t0 = now_s();
    uint32_t word = 0;
    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    cubec_buffer nb = {0};
    cubec_status st[6];
    st[0] = cubec_read(d, s, any->h, 0, &word, 4);
    st[1] = cubec_write(d, s, any->h, 0, &word, 4);
    st[2] = cubec_sync(d, s);
    st[3] = cubec_check(d, &any->h, 1);
    st[4] = cubec_buffer_create(d, s, 64, &nb);
    st[5] = cubec_fault_get_counts(d, counts);
    double elapsed = now_s() - t0;
    for (int i = 0; i < 6; i++) {
        if (cubec_status_code(st[i]) != CUBEC_DEVICE_LOST)
            RUN_FAIL(r, "call %d after the loss gave %s (%s)", i,
                     cubec_code_name(cubec_status_code(st[i])), cubec_status_message(st[i]));
        cubec_status_free(st[i]);
    }
    if (elapsed > 1.0) RUN_FAIL(r, "the calls after the loss took %.2f s", elapsed);
}

/* ---------------------------------------------------------------------------------------------
 * The workload
 * ------------------------------------------------------------------------------------------- */

/* Small integers, different for every (seed, index): exact in float through both layers. */
static float small(uint32_t seed, uint32_t i, int span)
{
    uint32_t x = seed * 2654435761u + i * 40503u + 12345u;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    return (float)((int)(x % (uint32_t)(2 * span + 1)) - span);
}

static void fill_small(uint32_t *words, uint32_t n, uint32_t seed, int span)
{
    for (uint32_t i = 0; i < n; i++) {
        float f = small(seed, i, span);
        memcpy(&words[i], &f, 4);
    }
}

static cubec_kernel make_kernel(run *r, const char *name, const char *src, const cubec_define *def,
                                int *ok)
{
    cubec_kernel k = {0};
    *ok = 0;
    if (r->lost) return k;
    cubec_kernel_desc desc = {.struct_size = sizeof(cubec_kernel_desc),
                              .name = name,
                              .glsl = src,
                              .defines = def,
                              .define_count = def ? 1 : 0};
    cubec_status st = cubec_kernel_create(r->d, &desc, &k);
    after_call(r, st, "cubec_kernel_create");
    if (st) {
        if (k.id) RUN_FAIL(r, "a failed kernel creation returned a kernel");
        cubec_status_free(st);
        return k;
    }
    *ok = 1;
    return k;
}

static void workload(run *r)
{
    cubec_device *d = r->d;
    cubec_stream s1 = 0, s2 = 0;
    cubec_status st = cubec_stream_new(d, &s1);
    if (!st) st = cubec_stream_new(d, &s2);
    if (st) fail_msg("%s: cubec_stream_new: %s", run_name(r), cubec_status_message(st));

    cubec_define relu_def = {"APPLY_RELU", NULL};
    r->relu = make_kernel(r, "linear_relu", linear_src, &relu_def, &r->kernel_ok[0]);
    r->linear = make_kernel(r, "linear", linear_src, NULL, &r->kernel_ok[1]);
    r->accumulate = make_kernel(r, "accumulate", accumulate_src, NULL, &r->kernel_ok[2]);
    r->busy = make_kernel(r, "busy", busy_src, NULL, &r->kernel_ok[3]);

    /* Parameters, owned by stream 1 and used by both. */
    uint32_t data[MAX_WORDS];
    lbuf *w1 = new_lbuf(r, "w1", K * H, 1), *b1 = new_lbuf(r, "b1", H, 1);
    lbuf *w2 = new_lbuf(r, "w2", H * O, 1), *b2 = new_lbuf(r, "b2", O, 1);
    fill_small(data, K * H, 1, 2);
    op_create(r, w1, s1, data);
    fill_small(data, H, 2, 4);
    op_create(r, b1, s1, data);
    fill_small(data, H * O, 3, 2);
    op_create(r, w2, s1, data);
    fill_small(data, O, 4, 4);
    op_create(r, b2, s1, data);
    /* Scratch of the busy launches, one per stream; the accumulator and a kept copy. */
    lbuf *spin1 = new_lbuf(r, "spin1", BUSY_WORDS, 0), *spin2 = new_lbuf(r, "spin2", BUSY_WORDS, 0);
    for (uint32_t i = 0; i < BUSY_WORDS; i++)
        data[i] = i * 2654435761u;
    op_create(r, spin1, s1, data);
    op_create(r, spin2, s2, data);
    lbuf *acc = new_lbuf(r, "acc", M * O, 1), *keep = new_lbuf(r, "keep", M * O, 1);
    op_create(r, acc, s2, NULL);
    op_create(r, keep, s1, NULL);
    op_fill(r, s2, acc, 0); /* 0.0f: compiles the builtin kernels */

    for (uint32_t it = 0; it < ITERATIONS && !r->lost; it++) {
        char name[24];
        /* Stream 1: a batch through both layers. */
        snprintf(name, sizeof name, "x1.%u", it);
        lbuf *x1 = new_lbuf(r, name, M * K, 1);
        snprintf(name, sizeof name, "h1.%u", it);
        lbuf *h1 = new_lbuf(r, name, M * H, 1);
        snprintf(name, sizeof name, "y1.%u", it);
        lbuf *y1 = new_lbuf(r, name, M * O, 1);
        fill_small(data, M * K, 100 + it, 3);
        op_create(r, x1, s1, NULL);
        op_write(r, x1, s1, data);
        op_create(r, h1, s1, NULL);
        op_create(r, y1, s1, NULL);
        op_linear(r, s1, 1, x1, w1, b1, h1, M, H, K, NULL);
        op_linear(r, s1, 0, h1, w2, b2, y1, M, O, H, NULL);
        op_flush(r, s1); /* start it early */
        /* Stream 2: another batch, with stream 1's parameters. Its second layer takes its
         * workgroup counts from a buffer filled on the device (and submitted at once). */
        snprintf(name, sizeof name, "counts.%u", it);
        lbuf *counts = new_lbuf(r, name, 4, 0);
        op_create(r, counts, s2, NULL);
        op_fill(r, s2, counts, 1); /* groups (1, 1, 1): 64 invocations cover M x O */
        op_flush(r, s2);
        snprintf(name, sizeof name, "x2.%u", it);
        lbuf *x2 = new_lbuf(r, name, M * K, 1);
        snprintf(name, sizeof name, "h2.%u", it);
        lbuf *h2 = new_lbuf(r, name, M * H, 1);
        snprintf(name, sizeof name, "y2.%u", it);
        lbuf *y2 = new_lbuf(r, name, M * O, 1);
        fill_small(data, M * K, 200 + it, 3);
        op_create(r, x2, s2, data);
        op_create(r, h2, s2, NULL);
        op_create(r, y2, s2, NULL);
        op_linear(r, s2, 1, x2, w1, b1, h2, M, H, K, NULL);
        op_linear(r, s2, 0, h2, w2, b2, y2, M, O, H, counts);
        op_release(r, counts);
        /* The activations are released while still queued: the work keeps them. */
        op_release(r, x1);
        op_release(r, h1);
        op_release(r, h2);
        /* The accumulator on stream 2 takes both outputs (y1 is stream 1's). */
        op_accumulate(r, s2, acc, y1);
        op_accumulate(r, s2, acc, y2);
        /* Reads that wait: each behind a busy launch on its stream. */
        op_busy(r, s1, spin1);
        op_read(r, y1, s1);
        op_check(r, y2);
        op_busy(r, s2, spin2);
        op_read(r, y2, s2);
        /* Stream 1 keeps a copy of stream 2's output. */
        op_copy(r, s1, y2, keep);
        op_release(r, x2);
        op_release(r, y1);
        op_release(r, y2);
    }
    /* The end: the accumulator read from stream 1, every other buffer, and one check of all. */
    op_busy(r, s2, spin2);
    op_sync(r, s2);
    op_busy(r, s1, spin1); /* in the batch of the last copy: the read of `keep` waits */
    op_read(r, acc, s1);
    op_read(r, keep, s1);
    op_read(r, spin1, s1);
    op_read(r, spin2, s2);
    op_read(r, w1, s2);
    op_read(r, b1, s2);
    op_read(r, w2, s1);
    op_read(r, b2, s1);
    if (r->lost) {
        check_lost(r, s1, w1->h.id ? w1 : spin1);
        return;
    }
    check_downstream(r);
    check_all(r, s1);
}

/* Releases what the workload left (kernels, buffers), unless the device is lost. */
static void workload_end(run *r)
{
    if (r->lost) return;
    for (int i = 0; i < r->nb; i++)
        op_release(r, &r->b[i]);
    cubec_kernel ks[4] = {r->relu, r->linear, r->accumulate, r->busy};
    for (int i = 0; i < 4; i++) {
        cubec_status st = cubec_kernel_destroy(r->d, ks[i]);
        if (st) RUN_FAIL(r, "cubec_kernel_destroy: %s", cubec_status_message(st));
        cubec_status_free(st);
    }
}

/* ---------------------------------------------------------------------------------------------
 * The sweep
 * ------------------------------------------------------------------------------------------- */

static unsigned open_messages;

static void count_message(void *user, const char *message)
{
    (void)user;
    open_messages++;
    fprintf(stderr, "VALIDATION: %s\n", message);
}

static uint64_t sweep_runs, sweep_faults, sweep_reads, sweep_absorbed, sweep_lost;

static void test_fault_sweep(void **state)
{
    (void)state;
    /* A small queue, so that the workload submits often: drains triggered by launches, by
     * cross-stream use, by reads and by syncs. */
    setenv("CUBEC_TASKS_MAX", "4", 1);
    trace = getenv("CUBEC_SWEEP_TRACE") != NULL;
    static run r; /* large: not on the stack */
    uint64_t open_counts[CUBEC_FAULT_KIND_COUNT], counts[CUBEC_FAULT_KIND_COUNT];

    memset(&r, 0, sizeof r);
    r.clean = 1;
    r.d = test_device_open();
    ASSERT_OK(cubec_fault_get_counts(r.d, open_counts));
    workload(&r);
    ASSERT_OK(cubec_fault_get_counts(r.d, counts));
    uint64_t clean_reads = r.reads;
    workload_end(&r);
    test_device_close(r.d);
    uint64_t total = 0;
    printf("clean run: %" PRIu64 " reads;", clean_reads);
    for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++) {
        printf(" %s %" PRIu64 " (%" PRIu64 " while opening)",
               cubec_fault_kind_name((cubec_fault_kind)k), counts[k], open_counts[k]);
        total += counts[k];
    }
    printf("\n");
    /* Every kind the workload exercises is counted. */
    assert_true(counts[CUBEC_FAULT_COMPILE] >= 4 && counts[CUBEC_FAULT_PIPELINE] >= 4);
    assert_true(counts[CUBEC_FAULT_SUBMIT] >= 8 && counts[CUBEC_FAULT_WAIT] >= 4);
    assert_true(counts[CUBEC_FAULT_PAGE] >= 2);

    double t0 = now_s();
    uint64_t runs = 0, faults = 0, reads = clean_reads;
    for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++) {
        const char *kind = cubec_fault_kind_name((cubec_fault_kind)k);
        for (uint64_t n = 1; n <= counts[k]; n++) {
            runs++;
            memset(&r, 0, sizeof r);
            r.kind = (cubec_fault_kind)k;
            r.n = n;
            snprintf(r.root, sizeof r.root, "injected fault: %s call #%" PRIu64, kind, n);
            if (n <= open_counts[k]) {
                /* A call made while opening: the open fails, naming the fault. */
                char spec[64];
                snprintf(spec, sizeof spec, "%s:%" PRIu64, kind, n);
                setenv("CUBEC_FAULT", spec, 1);
                cubec_device_desc desc = {.struct_size = sizeof(cubec_device_desc),
                                          .validation = 1,
                                          .on_validation = count_message};
                const char *v = getenv("CUBEC_TEST_VALIDATION");
                if (v && v[0] == '0') desc.validation = 0;
                cubec_device *d = NULL;
                cubec_status st = cubec_device_open(&desc, &d);
                unsetenv("CUBEC_FAULT");
                if (!st) {
                    cubec_device_close(d);
                    fail_msg("CUBEC_FAULT=%s: cubec_device_open succeeded", spec);
                }
                if (!strstr(cubec_status_message(st), r.root) || d)
                    fail_msg("CUBEC_FAULT=%s: cubec_device_open: %s", spec,
                             cubec_status_message(st));
                cubec_status_free(st);
                if (open_messages) fail_msg("validation messages with CUBEC_FAULT=%s", spec);
                faults++;
                continue;
            }
            run_violated = 0;
            r.d = test_device_open();
            ASSERT_OK(cubec_fault_inject(r.d, r.kind, n - open_counts[k]));
            workload(&r);
            workload_end(&r);
            test_device_close(r.d);
            reads += r.reads;
            if (r.fault_seen) {
                faults++;
                sweep_absorbed += !r.fault_errored;
                sweep_lost += r.lost;
            } else if (k == CUBEC_FAULT_WAIT) {
                printf("run with wait:%" PRIu64 ": that wait was not made (the work was done "
                       "already)\n",
                       n);
            } else {
                /* Only waits depend on timing (a wait for work already done is not made):
                 * page calls do too where each buffer has a page of its own (the exclusive
                 * preset), which is why the sweep runs with pages shared (tests/webgpu). */
                fail_msg("run with %s:%" PRIu64 ": the failing call was never made", kind, n);
            }
        }
    }
    double elapsed = now_s() - t0;
    assert_int_equal(runs, total); /* every fallible call of the workload was made to fail */
    printf("%" PRIu64 " faulty runs in %.1f s: %" PRIu64 " faults absorbed by a retry, %" PRIu64
           " lost devices\n",
           runs, elapsed, sweep_absorbed, sweep_lost);
    sweep_runs = runs;
    sweep_faults = faults;
    sweep_reads = reads;
    unsetenv("CUBEC_TASKS_MAX");
    if (violation_total) {
        for (int i = 0; i < violation_kinds; i++)
            printf("VIOLATION (%" PRIu64 "x, first in the %s): %s\n", violations[i].count,
                   violations[i].run, violations[i].first);
        fail_msg("%" PRIu64 " violation(s) of %d kind(s) in %" PRIu64 " of %" PRIu64 " runs",
                 violation_total, violation_kinds, violating_runs, runs);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_sweep),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    printf("sweep: %" PRIu64 " runs, %" PRIu64 " faults injected, %" PRIu64 " reads checked\n",
           sweep_runs, sweep_faults, sweep_reads);
    return failed;
}
