/* More fault sweeps (issue 11): the recipe of test_fault_sweep.c over other workloads, one per
 * ctest entry (the workload's name is the program's argument; tests/CMakeLists.txt):
 *
 *   graph    a graph captured on one stream (prepare, warm-up, begin, the same launches, end) and
 *            replayed several times, with fresh inputs written and every output read after each
 *            replay, and eager work on a second stream that consumes a replay's output;
 *   profile  profiles around launches: nested on one stream, one on a second stream around work
 *            that reads the first stream's output, and one abandoned;
 *   async    cubec_read_async and events: several reads in flight on two streams, a query, a
 *            write of a buffer whose asynchronous read is still pending, an event freed without
 *            a wait (run again with CUBEC_FORCE_STAGING=1: the staging paths);
 *   streams  a write on stream 1, a launch on stream 2 that reads it, a copy on stream 3 of the
 *            launch's output, an accumulator on stream 1 fed from stream 3, reads of each buffer
 *            from each stream;
 *   trace    the graph workload with CUBEC_TRACE on: after every run, tests/profiling/
 *            check_trace.py must accept the file the device wrote when it closed.
 *
 * A clean run counts the fallible calls of each kind (cubec_fault_get_counts after opening and at
 * the end); then for every kind and every n up to its count the workload runs on a fresh device
 * with that one call made to fail (CUBEC_FAULT for calls made while opening, cubec_fault_inject
 * after). Every run, with the validation layer on (any message fails the test) and, in the ASan
 * build, LeakSanitizer watching:
 *  - every call returns success, or an error that names the root cause ("injected fault: <kind>
 *    call #<n>"): the call that made the failing call (a launch, copy or fill whose drain lost
 *    only another stream's submission succeeds, docs/errors.md (e)), or a call that reports
 *    failures found downstream of it (reads, checks, event waits, cubec_graph_begin / _end,
 * cubec_profile_end); no call fails before the fault fired;
 *  - every read (cubec_read, an asynchronous read's event) returns exactly the bytes of the CPU
 *    model below, or fails naming the root cause, and only for a buffer that may be downstream of
 *    the fault (written by work not yet known to be submitted when it fired, or computed from such
 *    a buffer) and not confirmed by an earlier read, check or successful profile of the same
 *    contents; a buffer that fails to read is written again from the host (which clears the
 *    failure), as a program would;
 *  - a profile that returns a time measured launches that ran: their outputs read back;
 *  - after a lost device (wait, encode) every later call fails at once with CUBEC_DEVICE_LOST
 *    naming the cause; otherwise a final cubec_sync_check of every buffer succeeds;
 *  - cubec_device_close returns (the ctest timeout catches a hang).
 * A call that returned an error leaves its outputs ambiguous (its work may or may not have been
 * queued): the model keeps both contents and resolves them by reading before the next use.
 * Violations are collected and listed at the end, each kind once with its first occurrence. The
 * last line gives the sweep's size. CUBEC_SWEEP_TRACE=1 prints every call. */
#include "test_util.h"
#include "uint_kernels.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CUBEC_SOURCE_DIR
#error "CUBEC_SOURCE_DIR (the source tree, for check_trace.py) is set by tests/CMakeLists.txt"
#endif

/* ---------------------------------------------------------------------------------------------
 * Kernels (mix, acc and busy of tests/common/uint_kernels.h: uint32 arithmetic, so every result
 * is exact) and their CPU models
 * ------------------------------------------------------------------------------------------- */

#define WORDS 256 /* data buffers */
#define BUSY_WORDS 512
#define BUSY_STEPS 60000u
#define MAXW 512
#define MAXB 32

enum { K_MIX, K_ACC, K_BUSY, K_COUNT };

static void busy_affine(uint32_t *a, uint32_t *c)
{
    static uint32_t ma, mc;
    if (!ma) {
        ma = 1;
        for (uint32_t k = 0; k < BUSY_STEPS; k++) {
            ma *= LCG_MUL;
            mc = mc * LCG_MUL + LCG_ADD;
        }
    }
    *a = ma;
    *c = mc;
}

/* ---------------------------------------------------------------------------------------------
 * The model of a run
 * ------------------------------------------------------------------------------------------- */

typedef struct mbuf {
    char name[16];
    cubec_buffer h; /* 0: not created (its creation failed) */
    uint64_t number;
    uint32_t words;
    uint32_t ref[MAXW]; /* what it holds */
    uint32_t alt[MAXW]; /* with has_alt: what it may hold instead (a call that wrote it failed) */
    int has_alt;
    int maybe;     /* may carry the failure: downstream of the fault */
    int settled;   /* what wrote it is known to have been submitted */
    int confirmed; /* a read, check or valid profile said it was written: it cannot fail later */
    uint32_t version;
    uint64_t wstream; /* the stream whose work wrote it last; 0: the host */
} mbuf;

enum { EAGER, CAPTURE, MODEL }; /* how work is issued: run, recorded into a graph, replayed */

typedef struct run_state {
    cubec_device *d;
    int clean;
    cubec_fault_kind kind;
    uint64_t n;
    char root[96]; /* "injected fault: <kind> call #<n>" */
    int fault_seen, lost;
    uint64_t created; /* buffer numbers used on this device */
    mbuf b[MAXB];
    int nb;
    cubec_kernel k[K_COUNT];
    int kok[K_COUNT];
    uint64_t reads, repairs;
    int staging;
    int mode;        /* EAGER, CAPTURE or MODEL */
    int model_error; /* MODEL: the replay returned an error: outputs are ambiguous */
    /* CAPTURE: buffers the recorded work writes (for a capture that is discarded) */
    int captured_out[MAXB];
    int ncaptured;
    /* Profiles open on the stream: the outputs (index, version) of their launches. */
    int profiling;
    int prof_out[MAXB];
    uint32_t prof_ver[MAXB];
    int nprof;
} run_state;

static run_state R;
static int trace;

static const char *run_name(void)
{
    static char name[64];
    if (R.clean) return "clean run";
    snprintf(name, sizeof name, "run with %s:%" PRIu64, cubec_fault_kind_name(R.kind), R.n);
    return name;
}

typedef struct violation {
    const char *format;
    char first[2048];
    char run[64];
    uint64_t count;
} violation;

static violation violations[64];
static int violation_kinds;
static uint64_t violation_total, violating_runs;
static int run_violated;

static void violate(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* A broken rule: fatal in the clean run; in a faulty run recorded (by format) and the run goes
 * on, so that one bug does not hide another. */
static void violate(const char *format, ...)
{
    char what[2048];
    va_list ap;
    va_start(ap, format);
    vsnprintf(what, sizeof what, format, ap);
    va_end(ap);
    if (trace) fprintf(stderr, "  VIOLATION: %s\n", what);
    if (R.clean) fail_msg("%s: %s", run_name(), what);
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
    snprintf(v->run, sizeof v->run, "%s", run_name());
}

/* When the fault fires, what was queued but not known to be submitted may be lost with it. */
static void mark_unsettled(void)
{
    for (int i = 0; i < R.nb; i++)
        if (R.b[i].h.id && !R.b[i].settled) R.b[i].maybe = 1;
}

static void note_loss(cubec_status st, const char *what)
{
    /* A wait fault loses the device in the call that waits; an encode fault strikes on the
     * submission thread, and a later call sees it. */
    int expected = R.kind == CUBEC_FAULT_ENCODE || (R.kind == CUBEC_FAULT_WAIT && !R.fault_seen);
    if (!R.fault_seen) mark_unsettled();
    if (!expected || !strstr(cubec_status_message(st), R.root))
        violate("%s: unexpected CUBEC_DEVICE_LOST: %s", what, cubec_status_message(st));
    R.fault_seen = 1;
    R.lost = 1;
}

/* After every call, with its result `st` (not freed). `reports`: the call may return a failure
 * found downstream of the fault (a read, a check, an event's wait, a graph's begin or end, a
 * profile's end): after the fault such an error is right when it names the root cause. */
/* Whether `what` names a call that queues work on a stream (its drain may submit others'). */
static int queues_work(const char *what)
{
    static const char *const calls[] = {"cubec_launch", "cubec_copy", "cubec_fill"};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        if (!strncmp(what, calls[i], strlen(calls[i]))) return 1;
    return 0;
}

static void after_call(cubec_status st, const char *what, int reports)
{
    if (trace) fprintf(stderr, "  %s -> %s\n", what, st ? cubec_status_message(st) : "ok");
    if (R.lost) {
        if (st && (cubec_status_code(st) != CUBEC_DEVICE_LOST ||
                   !strstr(cubec_status_message(st), R.root)))
            violate("%s after the loss: %s", what, cubec_status_message(st));
        return;
    }
    if (R.clean) {
        if (st)
            violate("%s failed: %s: %s", what, cubec_code_name(cubec_status_code(st)),
                    cubec_status_message(st));
        return;
    }
    if (st && cubec_status_code(st) == CUBEC_DEVICE_LOST) {
        note_loss(st, what);
        return;
    }
    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    cubec_status cs = cubec_fault_get_counts(R.d, counts);
    if (cs) {
        if (cubec_status_code(cs) == CUBEC_DEVICE_LOST &&
            strstr(cubec_status_message(cs), R.root)) {
            /* The call lost the device without returning it (a wait inside cubec_event_free,
             * or a poll that found the batch that failed on the submission thread): what it
             * returned must still be right; the loss shows from the next call on. */
            note_loss(cs, what);
            cubec_status_free(cs);
            if (st && !strstr(cubec_status_message(st), R.root))
                violate("%s returned \"%s\", which does not name \"%s\"", what,
                        cubec_status_message(st), R.root);
            return;
        }
        fail_msg("%s: cubec_fault_get_counts after %s: %s", run_name(), what,
                 cubec_status_message(cs));
    }
    if (!R.fault_seen && counts[R.kind] >= R.n) {
        R.fault_seen = 1;
        mark_unsettled();
        if (st) {
            if (!strstr(cubec_status_message(st), R.root))
                violate("%s made the failing call but returned \"%s\", which does not name \"%s\"",
                        what, cubec_status_message(st), R.root);
        } else if (R.kind != CUBEC_FAULT_PAGE && R.kind != CUBEC_FAULT_ENCODE &&
                   !(R.kind == CUBEC_FAULT_SUBMIT && queues_work(what))) {
            /* A page fault may be absorbed by memory_alloc's retry; an encode fault strikes
             * later, on the submission thread; a launch, copy or fill whose drain lost only
             * another stream's submission succeeds (docs/errors.md (e)): the lost work's
             * outputs carry the failure, which the reads check. Nothing else may succeed. */
            violate("%s made the failing call (%s #%" PRIu64 ") but succeeded", what,
                    cubec_fault_kind_name(R.kind), R.n);
        }
        return;
    }
    if (!st) return;
    if (reports && R.fault_seen && strstr(cubec_status_message(st), R.root)) return;
    violate("%s failed although it made no failing call: %s: %s", what,
            cubec_code_name(cubec_status_code(st)), cubec_status_message(st));
}

static mbuf *new_mbuf(const char *name, uint32_t words)
{
    assert_true(R.nb < MAXB && words <= MAXW);
    mbuf *b = &R.b[R.nb++];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    b->words = words;
    return b;
}

/* New contents of `b`, written by the host (s == 0) or by work on stream s. */
static void set_contents(mbuf *b, const uint32_t *ref, uint64_t s, int maybe)
{
    memcpy(b->ref, ref, b->words * 4u);
    b->has_alt = 0;
    b->maybe = maybe;
    b->settled = s == 0 && !R.staging; /* a staged write is a submission */
    b->confirmed = 0;
    b->version++;
    b->wstream = s;
}

/* A call that would have written `b` with `ref` failed: it holds its old or its new contents,
 * or carries the failure. */
static void set_ambiguous(mbuf *b, const uint32_t *ref, uint64_t s)
{
    memcpy(b->alt, b->ref, b->words * 4u);
    memcpy(b->ref, ref, b->words * 4u);
    b->has_alt = 1;
    b->maybe = 1;
    b->settled = 0;
    b->confirmed = 0;
    b->version++;
    b->wstream = s;
}

static void op_write(mbuf *b, cubec_stream s, const uint32_t *data);

/* The outcome of a read of `b` (bytes `got` when st is NULL), judged against the model, or a
 * snapshot `m` of the model taken when an asynchronous read started. */
static void judge_read(mbuf *b, const mbuf *m, cubec_status st, const uint32_t *got, const char *fn,
                       cubec_stream s)
{
    int same_version = m->version == b->version;
    R.reads++;
    if (!st) {
        after_call(NULL, fn, 0);
        int is_ref = !memcmp(got, m->ref, m->words * 4u);
        int is_alt = m->has_alt && !memcmp(got, m->alt, m->words * 4u);
        if (!is_ref && !is_alt) {
            uint32_t i = 0;
            while (got[i] == m->ref[i])
                i++;
            violate("%s of %s (#%" PRIu64 ") returned wrong bytes: word %u is %u, expected %u%s",
                    fn, m->name, m->number, i, got[i], m->ref[i],
                    m->has_alt ? " (or the contents before a failed call)" : "");
        }
        if (same_version) {
            if (!is_ref) memcpy(b->ref, got, b->words * 4u);
            b->has_alt = 0;
            b->maybe = 0;
            b->settled = 1;
            b->confirmed = 1;
        }
        return;
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, "read of buffer #%" PRIu64 ": ", m->number);
    const char *msg = cubec_status_message(st);
    if (strncmp(msg, prefix, strlen(prefix))) {
        /* The call's own failure (a submission it made, a lost device). */
        after_call(st, fn, 0);
        if (!R.lost && same_version) b->maybe = 1; /* its work may be in the lost submission */
        return;
    }
    after_call(st, fn, 1);
    if (trace) fprintf(stderr, "    %s of %s: %s\n", fn, m->name, msg);
    if (!R.fault_seen) return; /* after_call reported it */
    if (!m->maybe)
        violate("%s (#%" PRIu64 ") is not downstream of the fault, yet %s: %s", m->name, m->number,
                fn, msg);
    else if (m->confirmed)
        violate("%s (#%" PRIu64 "): an earlier read, check or profile of the same contents "
                "succeeded, yet %s: %s",
                m->name, m->number, fn, msg);
    /* As a program would: write the bytes again, which clears the failure. */
    if (same_version && !R.lost) {
        R.repairs++;
        uint32_t data[MAXW];
        memcpy(data, b->ref, b->words * 4u);
        op_write(b, s, data);
    }
}

static void op_read(mbuf *b, cubec_stream s)
{
    if (R.lost || !b->h.id) return;
    uint32_t got[MAXW];
    cubec_status st = cubec_read(R.d, s, b->h, 0, got, b->words * 4u);
    mbuf snapshot = *b;
    judge_read(b, &snapshot, st, got, "cubec_read", s);
    cubec_status_free(st);
}

/* Before work reads `b`: a buffer whose contents are ambiguous is read first. */
static void resolve(mbuf *b, cubec_stream s)
{
    if (b->has_alt && R.mode == EAGER) op_read(b, s);
}

static void op_create(mbuf *b, cubec_stream s, const uint32_t *data)
{
    if (R.lost) return;
    uint64_t number = ++R.created;
    cubec_buffer h = {0};
    cubec_status st = cubec_buffer_from(R.d, s, data, b->words * 4u, &h);
    after_call(st, "cubec_buffer_from", 0);
    if (st) {
        if (h.id) violate("a failed creation returned a buffer");
        cubec_status_free(st);
        return;
    }
    b->h = h;
    b->number = number;
    set_contents(b, data, 0, 0);
}

static void op_write(mbuf *b, cubec_stream s, const uint32_t *data)
{
    if (R.lost || !b->h.id) return;
    cubec_status st = cubec_write(R.d, s, b->h, 0, data, b->words * 4u);
    after_call(st, "cubec_write", 0);
    if (st) {
        if (!R.lost) set_ambiguous(b, data, 0);
        cubec_status_free(st);
        return;
    }
    set_contents(b, data, 0, 0);
}

/* The output of work that was queued (EAGER), recorded (CAPTURE) or replayed (MODEL). */
static void wrote(mbuf *out, const uint32_t *ref, cubec_stream s, mbuf *const *in, int nin)
{
    int maybe = 0;
    for (int i = 0; i < nin; i++)
        maybe |= in[i]->maybe;
    if (R.mode == CAPTURE) {
        R.captured_out[R.ncaptured++] = (int)(out - R.b);
        return;
    }
    if (R.mode == MODEL && R.model_error) {
        set_ambiguous(out, ref, s);
        return;
    }
    set_contents(out, ref, s, R.fault_seen && maybe);
    if (R.profiling && R.nprof < MAXB) {
        R.prof_out[R.nprof] = (int)(out - R.b);
        R.prof_ver[R.nprof++] = out->version;
    }
}

/* Can work over `in` (inputs) and `out` be issued? Its inputs are resolved first. */
static int can_issue(mbuf *out, mbuf *const *in, int nin, cubec_stream s)
{
    if (R.lost || !out->h.id) return 0;
    for (int i = 0; i < nin; i++) {
        if (!in[i]->h.id) return 0;
        resolve(in[i], s);
        if (R.lost) return 0;
    }
    return 1;
}

/* A launch of kernel `ki` over `bufs` in binding order; `out` is the one it writes, and `nin` of
 * `bufs`, from the first, are what it reads. */
static void launch(int ki, cubec_stream s, mbuf *const *bufs, int count, mbuf *out, int nin,
                   const uint32_t *info, uint32_t info_words, uint32_t groups, const uint32_t *ref)
{
    if (!R.kok[ki]) return; /* not created: not in the graph either */
    if (R.mode == MODEL) {
        if (out->h.id) wrote(out, ref, s, bufs, nin);
        return;
    }
    cubec_buffer hs[4];
    for (int i = 0; i < count; i++)
        hs[i] = bufs[i]->h;
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = R.k[ki],
                            .buffers = hs,
                            .buffer_count = (uint32_t)count,
                            .info = info,
                            .info_size = info_words * 4u,
                            .groups = {groups, 1, 1}};
    cubec_status st = cubec_launch(R.d, s, &ld);
    after_call(st, "cubec_launch", 0);
    if (st) {
        if (!R.lost && R.mode == EAGER) set_ambiguous(out, ref, s);
        cubec_status_free(st);
        return;
    }
    wrote(out, ref, s, bufs, nin);
}

static void op_mix(cubec_stream s, mbuf *a, mbuf *b, mbuf *y, uint32_t c)
{
    mbuf *bufs[3] = {a, b, y};
    if (!can_issue(y, bufs, 2, s)) return;
    uint32_t ref[MAXW];
    for (uint32_t i = 0; i < y->words; i++)
        ref[i] = a->ref[i] * 3u + b->ref[i] + c;
    uint32_t info[2] = {y->words, c};
    launch(K_MIX, s, bufs, 3, y, 2, info, 2, (y->words + 63) / 64, ref);
}

static void op_acc(cubec_stream s, mbuf *acc, mbuf *y)
{
    mbuf *bufs[2] = {acc, y};
    if (!can_issue(acc, bufs, 2, s)) return;
    uint32_t ref[MAXW];
    for (uint32_t i = 0; i < acc->words; i++)
        ref[i] = acc->ref[i] + y->ref[i];
    uint32_t info[1] = {acc->words};
    launch(K_ACC, s, bufs, 2, acc, 2, info, 1, (acc->words + 63) / 64, ref);
}

static void op_busy(cubec_stream s, mbuf *v)
{
    mbuf *bufs[1] = {v};
    if (!can_issue(v, bufs, 1, s)) return;
    uint32_t a, c, ref[MAXW];
    busy_affine(&a, &c);
    for (uint32_t i = 0; i < v->words; i++)
        ref[i] = v->ref[i] * a + c;
    uint32_t info[3] = {BUSY_STEPS, LCG_MUL, LCG_ADD};
    launch(K_BUSY, s, bufs, 1, v, 1, info, 3, v->words / 64, ref);
}

static void op_copy(cubec_stream s, mbuf *src, mbuf *dst)
{
    mbuf *in[1] = {src};
    if (!can_issue(dst, in, 1, s)) return;
    uint32_t ref[MAXW];
    memcpy(ref, src->ref, dst->words * 4u);
    if (R.mode == MODEL) {
        wrote(dst, ref, s, in, 1);
        return;
    }
    cubec_status st = cubec_copy(R.d, s, src->h, 0, dst->h, 0, dst->words * 4u);
    after_call(st, "cubec_copy", 0);
    if (st) {
        if (!R.lost && R.mode == EAGER) set_ambiguous(dst, ref, s);
        cubec_status_free(st);
        return;
    }
    wrote(dst, ref, s, in, 1);
}

static void op_fill(cubec_stream s, mbuf *dst, uint32_t pattern)
{
    if (!can_issue(dst, NULL, 0, s)) return;
    uint32_t ref[MAXW];
    for (uint32_t i = 0; i < dst->words; i++)
        ref[i] = pattern;
    if (R.mode == MODEL) {
        wrote(dst, ref, s, NULL, 0);
        return;
    }
    cubec_status st = cubec_fill(R.d, s, dst->h, 0, dst->words * 4u, pattern);
    after_call(st, "cubec_fill", 0);
    if (st) {
        if (!R.lost && R.mode == EAGER) set_ambiguous(dst, ref, s);
        cubec_status_free(st);
        return;
    }
    wrote(dst, ref, s, NULL, 0);
}

static void op_sync(cubec_stream s)
{
    if (R.lost) return;
    cubec_status st = cubec_sync(R.d, s);
    after_call(st, "cubec_sync", 0);
    if (!st)
        for (int i = 0; i < R.nb; i++)
            if (R.b[i].wstream == s) R.b[i].settled = 1;
    cubec_status_free(st);
}

static void op_flush(cubec_stream s)
{
    if (R.lost) return;
    cubec_status st = cubec_flush(R.d, s);
    after_call(st, "cubec_flush", 0);
    cubec_status_free(st);
}

static cubec_stream new_stream(void)
{
    cubec_stream s = 0;
    cubec_status st = cubec_stream_new(R.d, &s);
    if (st) fail_msg("%s: cubec_stream_new: %s", run_name(), cubec_status_message(st));
    return s;
}

static void make_kernels(void)
{
    static const char *const names[K_COUNT] = {"mix", "acc", "busy"};
    static const char *const srcs[K_COUNT] = {mix_src, acc_src, busy_src};
    for (int i = 0; i < K_COUNT; i++) {
        R.kok[i] = 0;
        if (R.lost) continue;
        cubec_kernel_desc kd = {
            .struct_size = sizeof(cubec_kernel_desc), .name = names[i], .glsl = srcs[i]};
        cubec_kernel k = {0};
        cubec_status st = cubec_kernel_create(R.d, &kd, &k);
        after_call(st, "cubec_kernel_create", 0);
        if (st) {
            if (k.id) violate("a failed kernel creation returned a kernel");
            cubec_status_free(st);
            continue;
        }
        R.k[i] = k;
        R.kok[i] = 1;
    }
}

/* Deterministic data, different for every seed. */
static void data_for(uint32_t *w, uint32_t words, uint32_t seed)
{
    for (uint32_t i = 0; i < words; i++) {
        uint32_t x = seed * 2654435761u + i * 40503u + 12345u;
        x ^= x >> 13;
        x *= 0x5bd1e995u;
        w[i] = x ^ (x >> 15);
    }
}

static mbuf *made(const char *name, uint32_t words, cubec_stream s, uint32_t seed)
{
    mbuf *b = new_mbuf(name, words);
    uint32_t data[MAXW];
    data_for(data, words, seed);
    op_create(b, s, data);
    return b;
}

/* The end of a run: every buffer read, then one cubec_sync_check of all (clean now, since every
 * buffer that failed was written again); after a loss, every call fails at once. */
static void finish(cubec_stream s)
{
    for (int i = 0; i < R.nb; i++)
        op_read(&R.b[i], s);
    if (!R.lost) {
        cubec_buffer list[MAXB];
        uint32_t count = 0;
        for (int i = 0; i < R.nb; i++)
            if (R.b[i].h.id) list[count++] = R.b[i].h;
        cubec_status st = cubec_sync_check(R.d, s, list, count);
        after_call(st, "cubec_sync_check", 0);
        cubec_status_free(st);
    }
    if (!R.lost) {
        for (int i = 0; i < R.nb; i++) {
            cubec_status st = cubec_buffer_release(R.d, R.b[i].h);
            after_call(st, "cubec_buffer_release", 0);
            cubec_status_free(st);
        }
        for (int i = 0; i < K_COUNT; i++) {
            cubec_status st = cubec_kernel_destroy(R.d, R.k[i]);
            after_call(st, "cubec_kernel_destroy", 0);
            cubec_status_free(st);
        }
        return;
    }
    cubec_buffer any = {0};
    for (int i = 0; i < R.nb && !any.id; i++)
        any = R.b[i].h;
    uint32_t word = 0;
    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    cubec_buffer nb = {0};
    cubec_graph g = {0};
    cubec_profile p = {0};
    cubec_event *ev = NULL;
    cubec_status st[9];
    st[0] = cubec_read(R.d, s, any, 0, &word, 4);
    st[1] = cubec_write(R.d, s, any, 0, &word, 4);
    st[2] = cubec_sync(R.d, s);
    st[3] = cubec_check(R.d, &any, 1);
    st[4] = cubec_buffer_create(R.d, s, 64, &nb);
    st[5] = cubec_fault_get_counts(R.d, counts);
    st[6] = cubec_graph_prepare(R.d, s);
    st[7] = cubec_profile_begin(R.d, s, &p);
    st[8] = cubec_read_async(R.d, s, any, 0, &word, 4, &ev);
    for (int i = 0; i < 9; i++) {
        if (cubec_status_code(st[i]) != CUBEC_DEVICE_LOST ||
            !strstr(cubec_status_message(st[i]), R.root))
            violate("call %d after the loss gave %s (%s), not CUBEC_DEVICE_LOST naming the cause",
                    i, cubec_code_name(cubec_status_code(st[i])), cubec_status_message(st[i]));
        cubec_status_free(st[i]);
    }
    if (nb.id || p.id || ev) violate("a call after the loss returned an object");
    cubec_event_free(ev);
    (void)g;
}

/* ---------------------------------------------------------------------------------------------
 * Workloads
 * ------------------------------------------------------------------------------------------- */

/* The graph's launches (and a copy), issued as R.mode says. The busy launch comes last: the first
 * read after a replay waits for it. */
typedef struct graph_bufs {
    mbuf *x, *p, *y, *z, *acc, *keep, *spin;
} graph_bufs;

static void graph_body(const graph_bufs *g, cubec_stream s)
{
    op_mix(s, g->x, g->p, g->y, 1);
    op_mix(s, g->y, g->x, g->z, 2);
    op_acc(s, g->acc, g->z);
    op_copy(s, g->z, g->keep);
    op_busy(s, g->spin);
}

static void workload_graph(void)
{
    cubec_stream s = new_stream(), s2 = new_stream();
    make_kernels();
    graph_bufs g = {.x = made("x", WORDS, s, 1),
                    .p = made("p", WORDS, s, 2),
                    .y = made("y", WORDS, s, 3),
                    .z = made("z", WORDS, s, 4),
                    .acc = made("acc", WORDS, s, 5),
                    .keep = made("keep", WORDS, s, 6),
                    .spin = made("spin", BUSY_WORDS, s, 7)};
    mbuf *w = made("w", WORDS, s2, 8), *spin2 = made("spin2", BUSY_WORDS, s2, 9);
    op_fill(s2, w, 7u); /* compiles the builtin kernels */

    cubec_graph graph = {0};
    mbuf *inputs[4] = {g.x, g.p, g.acc, g.spin}; /* what the graph reads before writing */
    for (int attempt = 0; attempt < 2 && !graph.id && !R.lost; attempt++) {
        if (attempt) /* as a program would: inputs that carry the failure are written again */
            for (int i = 0; i < 4; i++)
                op_read(inputs[i], s);
        cubec_status st = cubec_graph_prepare(R.d, s);
        after_call(st, "cubec_graph_prepare", 0);
        if (st) {
            cubec_status_free(st);
            continue;
        }
        graph_body(&g, s); /* the warm-up runs */
        st = cubec_graph_begin(R.d, s);
        after_call(st, "cubec_graph_begin", 1);
        if (st) {
            cubec_status_free(st);
            continue;
        }
        R.mode = CAPTURE;
        R.ncaptured = 0;
        graph_body(&g, s);
        R.mode = EAGER;
        st = cubec_graph_end(R.d, s, &graph);
        after_call(st, "cubec_graph_end", 1);
        if (st) {
            if (graph.id) violate("a failed cubec_graph_end returned a graph");
            graph.id = 0;
            /* What the discarded capture would have written carries its failure. */
            for (int i = 0; i < R.ncaptured; i++) {
                mbuf *b = &R.b[R.captured_out[i]];
                b->maybe = 1;
                b->confirmed = 0;
                b->settled = 0;
            }
            cubec_status_free(st);
        }
    }
    for (uint32_t r = 0; r < 4 && graph.id && !R.lost; r++) {
        uint32_t data[MAXW];
        data_for(data, WORDS, 100 + r);
        op_write(g.x, s, data);
        for (int i = 0; i < 4; i++) /* read when the replay runs */
            resolve(inputs[i], s);
        if (R.lost) break;
        cubec_status st = cubec_graph_replay(R.d, s, graph);
        after_call(st, "cubec_graph_replay", 0);
        R.mode = MODEL;
        R.model_error = st != NULL && !R.lost;
        if (!R.lost) graph_body(&g, s);
        R.mode = EAGER;
        R.model_error = 0;
        cubec_status_free(st);
        op_read(g.y, s);
        op_read(g.z, s);
        op_read(g.acc, s);
        op_read(g.keep, s);
        if (r % 2) { /* another stream consumes the replay's output */
            op_mix(s2, g.z, g.p, w, r);
            op_busy(s2, spin2);
            op_read(w, s2);
        }
    }
    if (graph.id && !R.lost) {
        cubec_status st = cubec_graph_destroy(R.d, s, graph);
        after_call(st, "cubec_graph_destroy", 0);
        cubec_status_free(st);
    }
    finish(s2);
}

/* A profile's end: a time only for work that ran. */
static void profile_end(cubec_stream s, cubec_profile p, int first_out, int profiled)
{
    if (R.lost || !p.id) return;
    cubec_profile_result res = CUBEC_PROFILE_RESULT_INIT;
    cubec_status st = cubec_profile_end(R.d, s, p, &res);
    after_call(st, "cubec_profile_end", 1);
    if (!st) {
        if (res.end_ns < res.begin_ns || res.duration_ns != res.end_ns - res.begin_ns ||
            (res.method != CUBEC_TIMING_DEVICE && res.method != CUBEC_TIMING_SYSTEM))
            violate("cubec_profile_end: a result that does not add up: %" PRIu64 " ns from %" PRIu64
                    " to %" PRIu64 ", method %d",
                    res.duration_ns, res.begin_ns, res.end_ns, (int)res.method);
        /* The launches it measured ran: their outputs were written. */
        for (int i = first_out; i < R.nprof; i++) {
            mbuf *b = &R.b[R.prof_out[i]];
            if (b->version == R.prof_ver[i] && b->wstream == s) {
                b->confirmed = 1;
                b->settled = 1;
            }
        }
    } else if (R.fault_seen && cubec_status_code(st) == CUBEC_PROFILE_INVALID &&
               !strstr(cubec_status_message(st), R.root)) {
        violate("CUBEC_PROFILE_INVALID does not name the root cause: %s", cubec_status_message(st));
    }
    if (!st && profiled)
        for (int i = 0; i < R.nb; i++)
            if (R.b[i].wstream == s) R.b[i].settled = 1;
    cubec_status_free(st);
}

static cubec_profile profile_begin(cubec_stream s, int *first_out)
{
    cubec_profile p = {0};
    *first_out = R.nprof;
    if (R.lost) return p;
    cubec_status st = cubec_profile_begin(R.d, s, &p);
    after_call(st, "cubec_profile_begin", 0);
    if (st) {
        if (p.id) violate("a failed cubec_profile_begin returned a profile");
        p.id = 0;
        cubec_status_free(st);
    }
    R.profiling++;
    return p;
}

static void workload_profile(void)
{
    cubec_stream s1 = new_stream(), s2 = new_stream();
    make_kernels();
    mbuf *a = made("a", WORDS, s1, 1), *p = made("p", WORDS, s1, 2), *y1 = made("y1", WORDS, s1, 3);
    mbuf *u = made("u", WORDS, s1, 4), *y2 = made("y2", WORDS, s2, 5);
    mbuf *acc = made("acc", WORDS, s2, 6), *spin1 = made("spin1", BUSY_WORDS, s1, 7);
    mbuf *spin2 = made("spin2", BUSY_WORDS, s2, 8);
    for (uint32_t it = 0; it < 3 && !R.lost; it++) {
        uint32_t data[MAXW];
        data_for(data, WORDS, 50 + it);
        op_write(a, s1, data);
        int o_outer, o_inner, o_two;
        /* Nested on stream 1 ... */
        R.nprof = 0;
        cubec_profile outer = profile_begin(s1, &o_outer);
        cubec_profile inner = profile_begin(s1, &o_inner);
        op_mix(s1, a, p, y1, it);
        op_busy(s1, spin1);
        profile_end(s1, inner, o_inner, 1);
        R.profiling--;
        op_mix(s1, y1, a, u, 5);
        /* ... and on stream 2, around work that reads stream 1's output. */
        cubec_profile two = profile_begin(s2, &o_two);
        op_mix(s2, y1, p, y2, 9);
        op_acc(s2, acc, y2);
        op_busy(s2, spin2);
        profile_end(s2, two, o_two, 1);
        R.profiling--;
        profile_end(s1, outer, o_outer, 1);
        R.profiling--;
        /* An abandoned profile: nothing measured, nothing waited for. */
        int o_ab;
        cubec_profile ab = profile_begin(s1, &o_ab);
        op_mix(s1, u, p, y1, 11);
        R.profiling--;
        if (!R.lost && ab.id) {
            cubec_status st = cubec_profile_abandon(R.d, s1, ab);
            after_call(st, "cubec_profile_abandon", 0);
            cubec_status_free(st);
        }
        op_busy(s1, spin1);
        op_read(y1, s1);
        op_read(u, s2);
        op_read(y2, s1);
        op_read(acc, s2);
    }
    finish(s1);
}

/* An asynchronous read in flight: the model of the buffer when it started. */
typedef struct pending {
    mbuf *b;
    mbuf snapshot;
    cubec_event *ev;
    cubec_stream s;
    uint32_t got[MAXW];
} pending;

static void read_async(pending *pr, mbuf *b, cubec_stream s)
{
    pr->ev = NULL;
    pr->b = NULL;
    if (R.lost || !b->h.id) return;
    pr->b = b;
    pr->s = s;
    pr->snapshot = *b;
    cubec_status st = cubec_read_async(R.d, s, b->h, 0, pr->got, b->words * 4u, &pr->ev);
    if (st) {
        if (pr->ev) violate("a failed cubec_read_async returned an event");
        pr->ev = NULL;
        judge_read(b, &pr->snapshot, st, pr->got, "cubec_read_async", s);
        cubec_status_free(st);
        pr->b = NULL;
        return;
    }
    after_call(NULL, "cubec_read_async", 0);
}

static void event_wait(pending *pr)
{
    if (!pr->b) return;
    if (R.lost) {
        cubec_event_free(pr->ev); /* must not wait for a lost device */
        pr->b = NULL;
        return;
    }
    cubec_status st = cubec_event_wait(pr->ev);
    judge_read(pr->b, &pr->snapshot, st, pr->got, "cubec_event_wait", pr->s);
    cubec_status_free(st);
    /* Asked again, the event gives the same outcome. */
    if (!R.lost) {
        cubec_status again = cubec_event_query(pr->ev);
        if (cubec_status_code(again) == CUBEC_NOT_READY)
            violate("cubec_event_query after a wait: CUBEC_NOT_READY");
        cubec_status_free(again);
    }
    cubec_event_free(pr->ev);
    pr->b = NULL;
}

static void workload_async(void)
{
    cubec_stream s1 = new_stream(), s2 = new_stream();
    make_kernels();
    mbuf *a = made("a", WORDS, s1, 1), *p = made("p", WORDS, s1, 2), *y = made("y", WORDS, s1, 3);
    mbuf *z = made("z", WORDS, s2, 4), *spin1 = made("spin1", BUSY_WORDS, s1, 5);
    mbuf *spin2 = made("spin2", BUSY_WORDS, s2, 6);
    for (uint32_t it = 0; it < 3 && !R.lost; it++) {
        uint32_t data[MAXW];
        data_for(data, WORDS, 70 + it);
        op_write(a, s1, data);
        op_mix(s1, a, p, y, it);
        op_busy(s1, spin1);
        static pending pr[5];
        read_async(&pr[0], y, s1);
        op_mix(s2, y, a, z, 3);
        op_busy(s2, spin2);
        read_async(&pr[1], z, s2);
        read_async(&pr[2], a, s1);
        if (pr[0].b && !R.lost) {
            /* Whatever the timing, a query says not ready, done, or the failure. */
            cubec_status q = cubec_event_query(pr[0].ev);
            if (q && cubec_status_code(q) != CUBEC_NOT_READY) after_call(q, "cubec_event_query", 1);
            cubec_status_free(q);
        }
        /* A write of a buffer whose asynchronous read is pending: the read gets the bytes from
         * before it. */
        data_for(data, WORDS, 90 + it);
        op_write(a, s2, data);
        op_busy(s1, spin1); /* so that the next read is pending in every run */
        read_async(&pr[3], spin1, s1);
        event_wait(&pr[1]);
        event_wait(&pr[0]);
        event_wait(&pr[2]);
        /* Freed without a wait: it waits itself. */
        if (pr[3].b) {
            cubec_event_free(pr[3].ev);
            pr[3].b = NULL;
            after_call(NULL, "cubec_event_free", 0);
        }
        op_sync(s2);
        read_async(&pr[4], a, s1); /* complete at once: its bytes are copied by the call */
        event_wait(&pr[4]);
        op_read(y, s2);
    }
    finish(s1);
}

static void workload_streams(void)
{
    cubec_stream s1 = new_stream(), s2 = new_stream(), s3 = new_stream();
    make_kernels();
    mbuf *x = made("x", WORDS, s1, 1), *p = made("p", WORDS, s2, 2), *y = made("y", WORDS, s2, 3);
    mbuf *z = made("z", WORDS, s3, 4), *acc = made("acc", WORDS, s1, 5);
    mbuf *f = made("f", WORDS, s3, 6);
    mbuf *spin2 = made("spin2", BUSY_WORDS, s2, 7), *spin3 = made("spin3", BUSY_WORDS, s3, 8);
    op_fill(s3, f, 3u); /* compiles the builtin kernels */
    for (uint32_t it = 0; it < 3 && !R.lost; it++) {
        uint32_t data[MAXW];
        data_for(data, WORDS, 30 + it);
        op_write(x, s1, data);   /* stream 1 writes */
        op_mix(s2, x, p, y, it); /* stream 2 reads it */
        op_busy(s2, spin2);
        op_copy(s3, y, z); /* stream 3 copies stream 2's output */
        op_busy(s3, spin3);
        op_acc(s1, acc, z); /* stream 1 takes stream 3's copy */
        op_flush(s1);
        op_read(z, s3);
        op_read(y, s2);
        op_read(x, s1);
        op_read(y, s1);
        op_read(acc, s3);
        op_copy(s2, f, y);        /* stream 2 overwrites its output from stream 3's buffer */
        op_fill(s3, f, 10u + it); /* ... which stream 3 then refills */
        op_busy(s2, spin2);
        op_read(y, s3);
        op_read(f, s2);
        op_sync(s1);
        op_sync(s2);
        op_sync(s3);
    }
    finish(s2);
}

/* ---------------------------------------------------------------------------------------------
 * The sweep
 * ------------------------------------------------------------------------------------------- */

typedef struct workload_def {
    const char *name;
    void (*run)(void);
    int traced;
} workload_def;

static const workload_def workloads[] = {
    {"graph", workload_graph, 0}, {"profile", workload_profile, 0},
    {"async", workload_async, 0}, {"streams", workload_streams, 0},
    {"trace", workload_graph, 1},
};

static const workload_def *chosen;
static char trace_path[4096];

static void count_message(void *user, const char *message)
{
    (void)user;
    fail_msg("validation message while opening with a fault: %s", message);
}

/* CUBEC_TRACE for the next device; after it closed, check_trace.py must accept the file. */
static void trace_before(void)
{
    if (!chosen->traced) return;
    unlink(trace_path);
    setenv("CUBEC_TRACE", trace_path, 1);
}

static void trace_after(int opened)
{
    if (!chosen->traced) return;
    unsetenv("CUBEC_TRACE");
    if (!opened && access(trace_path, F_OK)) return; /* the open failed before creating it */
    char command[8192];
    snprintf(command, sizeof command,
             "python3 '%s/tests/profiling/check_trace.py' '%s' > /dev/null 2>&1", CUBEC_SOURCE_DIR,
             trace_path);
    int rc = system(command);
    if (rc) {
        char shown[1024];
        snprintf(command, sizeof command,
                 "python3 '%s/tests/profiling/check_trace.py' '%s' 2>&1 | head -c 600",
                 CUBEC_SOURCE_DIR, trace_path);
        FILE *f = popen(command, "r");
        size_t len = f ? fread(shown, 1, sizeof shown - 1, f) : 0;
        shown[len] = 0;
        if (f) pclose(f);
        violate("check_trace.py refused the trace file (status %d): %s", rc, shown);
    }
    unlink(trace_path);
}

static uint64_t sweep_runs, sweep_faults, sweep_reads;

static void run_once(int clean, cubec_fault_kind kind, uint64_t n, uint64_t open_n)
{
    memset(&R, 0, sizeof R);
    R.clean = clean;
    R.kind = kind;
    R.n = n;
    const char *staging = getenv("CUBEC_FORCE_STAGING");
    R.staging = staging && staging[0] == '1';
    snprintf(R.root, sizeof R.root, "injected fault: %s call #%" PRIu64,
             cubec_fault_kind_name(kind), n);
    trace_before();
    R.d = test_device_open();
    if (!clean) {
        cubec_status st = cubec_fault_inject(R.d, kind, n - open_n);
        if (st) fail_msg("cubec_fault_inject: %s", cubec_status_message(st));
    }
    chosen->run();
    test_device_close(R.d);
    trace_after(1);
}

static void test_sweep(void **state)
{
    (void)state;
    setenv("CUBEC_TASKS_MAX", "4", 1);
    trace = getenv("CUBEC_SWEEP_TRACE") != NULL;
    snprintf(trace_path, sizeof trace_path, "%s/cubec_fault_sweep_%d.json", test_tmp_dir(),
             (int)getpid());

    uint64_t open_counts[CUBEC_FAULT_KIND_COUNT], counts[CUBEC_FAULT_KIND_COUNT];
    /* The clean run: its counts bound the sweep. */
    memset(&R, 0, sizeof R);
    R.clean = 1;
    const char *staging = getenv("CUBEC_FORCE_STAGING");
    R.staging = staging && staging[0] == '1';
    trace_before();
    R.d = test_device_open();
    ASSERT_OK(cubec_fault_get_counts(R.d, open_counts));
    chosen->run();
    ASSERT_OK(cubec_fault_get_counts(R.d, counts));
    uint64_t clean_reads = R.reads;
    test_device_close(R.d);
    trace_after(1);
    printf("%s: clean run: %" PRIu64 " reads;", chosen->name, clean_reads);
    for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++)
        printf(" %s %" PRIu64 " (%" PRIu64 " while opening)",
               cubec_fault_kind_name((cubec_fault_kind)k), counts[k], open_counts[k]);
    printf("\n");
    assert_true(counts[CUBEC_FAULT_SUBMIT] >= 4 && counts[CUBEC_FAULT_WAIT] >= 2);
    assert_true(counts[CUBEC_FAULT_COMPILE] >= K_COUNT);

    uint64_t runs = 0, faults = 0, reads = clean_reads, lost = 0, absorbed = 0, repairs = 0;
    uint64_t skipped_waits = 0;
    const char *only = getenv("CUBEC_SWEEP_ONLY"); /* kind:n: that run alone */
    for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++) {
        const char *kind = cubec_fault_kind_name((cubec_fault_kind)k);
        for (uint64_t n = 1; n <= counts[k]; n++) {
            char this_run[64];
            snprintf(this_run, sizeof this_run, "%s:%" PRIu64, kind, n);
            if (only && strcmp(only, this_run)) continue;
            runs++;
            run_violated = 0;
            if (n <= open_counts[k]) {
                /* A call made while opening: the open fails, naming the fault. */
                char spec[64];
                snprintf(spec, sizeof spec, "%s:%" PRIu64, kind, n);
                char root[96];
                snprintf(root, sizeof root, "injected fault: %s call #%" PRIu64, kind, n);
                setenv("CUBEC_FAULT", spec, 1);
                trace_before();
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
                if (!strstr(cubec_status_message(st), root) || d)
                    fail_msg("CUBEC_FAULT=%s: cubec_device_open: %s", spec,
                             cubec_status_message(st));
                cubec_status_free(st);
                memset(&R, 0, sizeof R);
                R.kind = (cubec_fault_kind)k;
                R.n = n;
                trace_after(0);
                faults++;
                continue;
            }
            if (trace) fprintf(stderr, "== %s:%" PRIu64 "\n", kind, n);
            run_once(0, (cubec_fault_kind)k, n, open_counts[k]);
            reads += R.reads;
            repairs += R.repairs;
            if (R.fault_seen) {
                faults++;
                lost += R.lost;
            } else if (k == CUBEC_FAULT_WAIT) {
                skipped_waits++; /* that wait was not made: the work was done already */
            } else {
                fail_msg("run with %s:%" PRIu64 ": the failing call was never made", kind, n);
            }
            (void)absorbed;
        }
    }
    printf("%s: %" PRIu64 " faulty runs: %" PRIu64 " lost devices, %" PRIu64
           " failed reads written again, %" PRIu64 " waits not made\n",
           chosen->name, runs, lost, repairs, skipped_waits);
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

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "";
    for (size_t i = 0; i < sizeof workloads / sizeof workloads[0]; i++)
        if (!strcmp(name, workloads[i].name)) chosen = &workloads[i];
    if (!chosen) {
        fprintf(stderr, "usage: %s graph|profile|async|streams|trace\n", argv[0]);
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    printf("sweep %s: %" PRIu64 " runs, %" PRIu64 " faults injected, %" PRIu64 " reads checked\n",
           name, sweep_runs, sweep_faults, sweep_reads);
    return failed;
}
