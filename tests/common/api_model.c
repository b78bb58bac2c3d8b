/* The one host model of the public API (api_model.h), which the randomized testers drive: a
 * seeded run on lavapipe (tests/fuzz/test_random_api.c), a seeded run on the null backend
 * (tests/null/test_random_null.c) and libFuzzer (fuzz/fuzz_api.c, the input's bytes making the
 * choices). One step per kind of work, each carrying the call out on the device and checking its
 * code and what it returned against the model; api_model_calls at the end maps every public call
 * of cubec.h to its step, and test_api_model_covers_header fails on a call without one.
 *
 * Steps: buffer create/from/view/retain/release/size; write, read, read_async with events
 * queried, waited and freed at once or left pending across steps; copy and fill; launches of the
 * uint kernels (tests/common/uint_kernels.h; direct and indirect); kernel create/destroy/info
 * and the compile queue (queue, wait, compile_queued, a kernel that does not compile); flush,
 * sync, check, sync_check; stream_new/current; profile begin/end/abandon; graph
 * prepare/begin/end/replay/destroy, with the calls a capture window refuses tried inside it;
 * memory report (struct, JSON, table) and cleanup; memory windows (push/pop/get); raw resources,
 * host mappings (the bytes at the pointer checked) and guards; registered and pinned host memory,
 * which transfers then use; dry runs (the process-wide one and run windows, DRY and REAL nested);
 * tuners (create, choose, outcome, destroy); device count/peek/info/Vulkan handles and the name
 * functions; fault injection of every kind; a device closed with everything live, or lost, and
 * opened again; and invalid arguments of all of them (released, zero and made-up handles, ranges
 * past the end, unaligned copies and fills, misaligned views and host ranges, NULL pointers, wrong
 * launch descriptions, stale profiles and graphs, wrong graph transitions, bad modes, windows
 * closed that are not open). On lavapipe the validation layer is on and any message fails the run.
 *
 * The model keeps every byte of every allocation with one of three states:
 *   KNOWN    its value is in the model: a successful read (also through a pending event, and on
 *            the null backend the bytes at cubec_buffer_raw's address) must return it;
 *   UNKNOWN  never written, computed from unknown bytes, or written by a launch on the null
 *            backend (which runs no kernel): a read must succeed, value unchecked;
 *   SUSPECT  the work that wrote it may have been lost (a fault was armed while it was queued,
 *            or it was computed from suspect bytes): a read may fail with a failure code.
 * Arming a fault makes every byte SUSPECT; bytes written again after the fault fired are KNOWN
 * again. A launch reading suspect bytes may be skipped, so its outputs become SUSPECT and every
 * open profile may be invalid (docs/errors.md rules (a) and (e), docs/profiling.md). A launch or
 * replay in a dry run changes nothing.
 *
 * Every call's code must be in the set the documentation allows for it in the model's state:
 * success for valid arguments with nothing pending, CUBEC_INVALID_ARGUMENT for refused arguments,
 * CUBEC_GRAPH_STATE for wrong graph transitions and refusals in a capture window, the code of an
 * armed fault for the calls that can hit it, a failure code for reads of suspect bytes,
 * CUBEC_PROFILE_INVALID for profiles that saw a possible failure, CUBEC_DEVICE_LOST after an
 * injected wait fault (and then for every call). Out-parameters of failed calls stay cleared.
 * Besides codes and bytes it checks: buffer sizes; memory windows' mode and depth (mode_get and
 * the memory report); the bytes in use, at least what live handles hold and, with every stream
 * synced, at most what the model holds; a profile's interval between its calls (null backend);
 * a tuner's choice (never a refusing candidate; SINGLE, MEASURED, then MEMORY for a key) and its
 * outcomes; the names of every fault kind, feature and matrix type.
 * Cross-stream use follows the documented ordering only: reads on any stream after queued writes,
 * but before a stream writes an allocation another stream has queued work on, that stream is
 * synced (two streams writing, or a write racing a read, are not ordered by the documentation).
 *
 * Left out on purpose: a guarded buffer written through its device address (the model's kernels
 * take bindings), and the time of an empty profile window (not 0 in every case yet: see the
 * issue 22 report). A pinned or registered range released while a read into it is pending must
 * wait for the read (cubec.h), and the pending read's bytes are checked after. */
#include "api_model.h"

#include "uint_kernels.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    MAX_STREAMS = 6,
    MAX_BUFS = 20,
    MAX_GRAPHS = 4,
    MAX_PROFILES = 4,
    MAX_KERNELS = 8,
    DEAD = 8,
    MAX_GRAPH_OPS = 4,
    LOG_LINES = 60,
    LOG_WIDTH = 400,
};

enum { KNOWN = 0, UNKNOWN = 1, SUSPECT = 2 };
enum { K_PRODUCE = 0, K_CONSUME = 1, K_STEP = 2, K_FILL = 3 };
enum { NO_FAULT = -1 };

/* Which fallible work a call can do, so that an armed fault of that kind can fail it. */
enum {
    C_NONE = 0,
    C_SUBMITS = 1, /* queues, submits or waits: submit and wait faults */
    C_CREATES = 2, /* allocates pages or maps memory: page and map faults */
    C_COMPILES = 4 /* compiles or creates pipelines (a kernel; the builtin copy and fill) */
};

#define M(code) (1u << (code))
#define FAILURE_CODES (M(CUBEC_INTERNAL) | M(CUBEC_GRAPH_STATE))

typedef struct m_alloc m_alloc;
struct m_alloc {
    uint64_t size;
    uint8_t *bytes, *state;
    int refs;                  /* model handles and graph bindings */
    int owner;                 /* the stream index it was created on */
    uint32_t readers, writers; /* streams with work on it not yet synced */
    uint64_t number;
};

enum { MAX_HOSTS = 4, MEM_WINDOWS_MAX = 64, MAX_GUARDS = 4, TUNE_KEYS = 4, MAX_EVENTS = 3 };

typedef struct m_host {
    uint8_t *ptr;
    uint64_t size;
    int pinned; /* from cubec_host_alloc; else registered memory of the model's */
    int busy;   /* a pending asynchronous read lands in it: no other transfer uses it */
} m_host;

struct m_alloc;

/* An asynchronous read left pending across steps: what the model held when it was queued (the
 * bytes it must deliver, whatever is written after it), and the allocation it keeps alive. */
typedef struct m_event {
    cubec_event *e;
    uint8_t *got;
    struct m_alloc *a;
    uint64_t off, len;
    uint8_t *want, *state;
    uint32_t fail; /* the failure codes it may complete with */
    int stream;
    int gone;      /* its host range was released: the bytes are not the model's to free */
    int unchecked; /* and freed with it: they cannot be read */
} m_event;

typedef struct m_buf {
    cubec_buffer h;
    m_alloc *a;
    uint64_t off, size;
    int refs;
    int view;
} m_buf;

typedef struct m_kernel {
    cubec_kernel h;
    int kind;
    int base; /* one of the three the run keeps */
} m_kernel;

/* A launch or a fill, as issued and as a graph keeps it. */
typedef struct m_op {
    int kind;
    cubec_kernel k;
    cubec_buffer h0, h1;
    m_alloc *a0, *a1;
    uint64_t off0, size0, off1, size1; /* the bindings' ranges in their allocations */
    uint32_t n, mul, add;
    uint64_t fill_off, fill_size; /* K_FILL: within h0; the pattern is `mul` */
    int indirect;
    cubec_buffer ih;
    m_alloc *ia;
    uint64_t ioff; /* in the allocation */
    uint64_t ioff_in_buffer;
} m_op;

typedef struct m_graph {
    cubec_graph g;
    m_op ops[MAX_GRAPH_OPS];
    int count;
} m_graph;

typedef struct m_profile {
    cubec_profile p;
    int stream;
    int poisoned;
    int maybe_consumed;
    uint64_t t_begin; /* host time before cubec_profile_begin */
} m_profile;

typedef struct fuzz {
    cubec_device *d;
    cubec_device_info info;
    cubec_timing timing;
    uint32_t tasks_max;
    uint64_t rng;
    cubec_stream streams[MAX_STREAMS];
    uint64_t slots[MAX_STREAMS]; /* each stream's slot: its number modulo max_streams */
    uint64_t max_streams;
    int nstreams;
    m_buf bufs[MAX_BUFS];
    int nbufs;
    m_alloc **allocs;
    int nallocs, cap_allocs;
    uint64_t alloc_numbers;
    m_kernel kernels[MAX_KERNELS];
    int nkernels;
    uint32_t kernel_variants;
    m_graph graphs[MAX_GRAPHS];
    int ngraphs;
    m_profile profiles[MAX_PROFILES];
    int nprofiles;
    cubec_buffer dead_bufs[DEAD];
    cubec_kernel dead_kernels[DEAD];
    cubec_graph dead_graphs[DEAD];
    cubec_profile dead_profiles[DEAD];
    uint32_t dead_buf_count, dead_kernel_count, dead_graph_count, dead_profile_count;
    int pending;             /* the armed fault's kind, or NO_FAULT */
    uint64_t pending_target; /* the call count at which it fires */
    uint32_t pending_age;
    int lost;
    /* Bookkeeping and statistics. */
    uint64_t seed, step, max_steps;
    double seconds, t0;
    int trace;
    const api_model_config *cfg;
    const uint8_t *in; /* libFuzzer: the choices left; the run ends when they run out */
    size_t in_left;
    int in_bytes, exhausted;
    /* vulkan, webgpu: launches compute; null: their outputs count as written. From the
     * configuration's backend, then from the runs_kernels capability of each device opened. */
    int kernels_run;
    /* What the open device can do (device_learn), so that a call it cannot carry out is expected
     * to be refused with CUBEC_UNSUPPORTED, and only there. */
    int can_map;        /* cubec_buffer_map of device memory (info.unified_memory) */
    int can_pin;        /* cubec_host_alloc */
    int vulkan_objects; /* cubec_device_get_vulkan_handles */
    /* Host ranges: registered (the model's own allocations) or pinned (cubec_host_alloc). */
    m_host hosts[MAX_HOSTS];
    int nhosts;
    /* Memory windows per stream slot: the modes of the open ones, innermost last. */
    uint8_t win_modes[MAX_STREAMS][MEM_WINDOWS_MAX + 1];
    uint32_t win_depth[MAX_STREAMS];
    /* Run windows per stream and the process-wide dry-run count this run opened. */
    uint32_t run_depth[MAX_STREAMS];
    uint32_t dry_global;
    cubec_guard guards[MAX_GUARDS];
    m_alloc *guarded[MAX_GUARDS]; /* a guard keeps its allocation alive */
    int nguards;
    m_event events[MAX_EVENTS];
    int nevents;
    cubec_guard dead_guard;
    /* The tuner, and the choice it remembers per key (index + 1; 0 none). */
    cubec_kernel failed; /* a queued kernel that failed to compile, kept alive */
    cubec_tuner *tuner;
    uint32_t tuner_samples;
    uint32_t tuned[TUNE_KEYS];
    char log[LOG_LINES][LOG_WIDTH];
    uint64_t log_count;
    uint64_t codes[16];
    uint64_t calls, reads_compared, bytes_compared, faults_armed, faults_fired, reopens;
    uint64_t captures, replays, invalid_calls;
} fuzz;

static fuzz F;

/* ------------------------------------------------------------------------------------------ */
/* Validation messages, PRNG, logging, failing. */

static atomic_uint validation_messages;

static void on_validation(void *user, const char *message)
{
    (void)user;
    atomic_fetch_add(&validation_messages, 1);
    fprintf(stderr, "VALIDATION: %s\n", message);
}

static uint64_t rnd64(fuzz *f)
{
    if (f->in_bytes) {
        /* libFuzzer: eight input bytes make a number, and the last ones end the run */
        uint64_t v = 0;
        for (int i = 0; i < 8; i++) {
            if (!f->in_left) {
                f->exhausted = 1;
                break;
            }
            v = v << 8 | *f->in++;
            f->in_left--;
        }
        return v;
    }
    uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t rnd(fuzz *f, uint32_t n)
{
    if (!n) return 0;
    if (f->in_bytes && n <= 256) {
        /* one byte per small choice, so that libFuzzer's mutations map onto single steps */
        if (!f->in_left) {
            f->exhausted = 1;
            return 0;
        }
        f->in_left--;
        return *f->in++ % n;
    }
    if (f->in_bytes && n <= 65536) {
        uint32_t v = rnd(f, 256);
        return (v << 8 | rnd(f, 256)) % n;
    }
    return (uint32_t)(rnd64(f) % n);
}

/* 1 in n. */
static int chance(fuzz *f, uint32_t n)
{
    return rnd(f, n) == 0;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void note(fuzz *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(fuzz *f, const char *fmt, ...)
{
    char *line = f->log[f->log_count % LOG_LINES];
    int n = snprintf(line, LOG_WIDTH, "[%" PRIu64 "] ", f->step);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, LOG_WIDTH - (size_t)n, fmt, ap);
    va_end(ap);
    f->log_count++;
    if (f->trace) {
        printf("    %s\n", line);
        fflush(stdout); /* a hang must not keep the last lines in the buffer */
    }
}

static void print_log(const fuzz *f)
{
    uint64_t first = f->log_count > LOG_LINES ? f->log_count - LOG_LINES : 0;
    printf("    --- the last %" PRIu64 " calls ---\n", f->log_count - first);
    for (uint64_t i = first; i < f->log_count; i++)
        printf("    %s\n", f->log[i % LOG_LINES]);
}

static void die(fuzz *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void die(fuzz *f, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    print_log(f);
    printf("    FUZZ FAILURE at step %" PRIu64 ": %s\n", f->step, msg);
    if (f->cfg && f->cfg->print_replay)
        printf("    reproduce: CUBEC_FUZZ_SEED=%" PRIu64 " CUBEC_FUZZ_STEPS=%" PRIu64
               " CUBEC_FUZZ_TRACE=1\n",
               f->seed, f->step + 1);
    fflush(stdout);
    char line[2200];
    snprintf(line, sizeof line, "step %" PRIu64 " (seed %" PRIu64 "): %s", f->step, f->seed, msg);
    if (f->cfg && f->cfg->fail) f->cfg->fail(line);
    abort();
}

/* A condition the model itself needs (memory for its bytes, a setup call): fails the run. */
#define MUST(f, cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) die(f, "%s:%d: %s", __FILE__, __LINE__, #cond);                               \
    } while (0)
#define MUST_OK(f, call)                                                                           \
    do {                                                                                           \
        cubec_status must_st_ = (call);                                                            \
        if (must_st_) die(f, "%s: %s", #call, cubec_status_message(must_st_));                     \
    } while (0)

static void mask_names(uint32_t mask, char *out, size_t size)
{
    out[0] = 0;
    for (int c = 0; c < 16; c++)
        if (mask & M(c)) {
            size_t len = strlen(out);
            snprintf(out + len, size - len, "%s%s", len ? " " : "", cubec_code_name((cubec_code)c));
        }
}

/* Checks that `st` has one of the codes in `allowed`; frees it; returns its code. */
static cubec_code expect(fuzz *f, cubec_status st, uint32_t allowed, const char *what)
{
    cubec_code code = cubec_status_code(st);
    char msg[1536];
    snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
    cubec_status_free(st);
    f->calls++;
    if ((unsigned)code < 16) f->codes[code]++;
    if (code)
        note(f, "  -> %s: %.300s", cubec_code_name(code), msg);
    else if (f->trace)
        note(f, "  -> ok");
    if (code && !msg[0])
        die(f, "%s returned %s with an empty message", what, cubec_code_name(code));
    if ((unsigned)code >= 16 || !(allowed & M(code))) {
        char names[512];
        mask_names(allowed, names, sizeof names);
        die(f, "%s returned %s (%s); the documentation allows here: %s", what,
            cubec_code_name(code), msg, names);
    }
    if (code == CUBEC_DEVICE_LOST) f->lost = 1;
    return code;
}

/* The codes a call may return on valid arguments: success, and what an armed fault or a lost
 * device can make it return. */
static uint32_t allow(const fuzz *f, unsigned work)
{
    uint32_t m = M(CUBEC_OK);
    if (f->lost) return m | M(CUBEC_DEVICE_LOST);
    switch (f->pending) {
    case CUBEC_FAULT_SUBMIT:
        if (work & C_SUBMITS) m |= M(CUBEC_INTERNAL);
        break;
    case CUBEC_FAULT_WAIT:
        if (work & C_SUBMITS) m |= M(CUBEC_DEVICE_LOST);
        break;
    case CUBEC_FAULT_PAGE:
        if (work & C_CREATES) m |= M(CUBEC_OUT_OF_MEMORY);
        break;
    case CUBEC_FAULT_MAP:
        if (work & C_CREATES) m |= M(CUBEC_INTERNAL);
        break;
    case CUBEC_FAULT_COMPILE:
        if (work & C_COMPILES) m |= M(CUBEC_COMPILE_FAILED);
        break;
    case CUBEC_FAULT_PIPELINE:
        if (work & C_COMPILES) m |= M(CUBEC_INTERNAL);
        break;
    default: break;
    }
    return m;
}

/* The code of a refused argument (a lost device may answer first). */
static uint32_t refused(fuzz *f)
{
    f->invalid_calls++;
    return M(CUBEC_INVALID_ARGUMENT) | (f->lost ? M(CUBEC_DEVICE_LOST) : 0);
}

static uint32_t graph_refused(fuzz *f)
{
    f->invalid_calls++;
    return M(CUBEC_GRAPH_STATE) | (f->lost ? M(CUBEC_DEVICE_LOST) : 0);
}

static int submit_pending(const fuzz *f)
{
    return f->pending == CUBEC_FAULT_SUBMIT || f->pending == CUBEC_FAULT_WAIT;
}

/* ------------------------------------------------------------------------------------------ */
/* The model. */

static uint32_t bit(int stream)
{
    return 1u << stream;
}

static m_alloc *alloc_new(fuzz *f, uint64_t size, int owner)
{
    m_alloc *a = calloc(1, sizeof *a);
    MUST(f, a);
    a->size = size;
    a->bytes = calloc(size + 1, 1);
    a->state = malloc(size + 1);
    MUST(f, a->bytes && a->state);
    memset(a->state, UNKNOWN, size + 1);
    a->refs = 1;
    a->owner = owner;
    a->number = ++f->alloc_numbers;
    if (f->nallocs == f->cap_allocs) {
        f->cap_allocs = f->cap_allocs ? f->cap_allocs * 2 : 32;
        f->allocs = realloc(f->allocs, (size_t)f->cap_allocs * sizeof *f->allocs);
        MUST(f, f->allocs);
    }
    f->allocs[f->nallocs++] = a;
    return a;
}

static void alloc_unref(fuzz *f, m_alloc *a)
{
    if (--a->refs) return;
    for (int i = 0; i < f->nallocs; i++)
        if (f->allocs[i] == a) {
            f->allocs[i] = f->allocs[--f->nallocs];
            break;
        }
    free(a->bytes);
    free(a->state);
    free(a);
}

static int range_has(const m_alloc *a, uint64_t off, uint64_t len, int state)
{
    for (uint64_t i = 0; i < len; i++)
        if (a->state[off + i] == state) return 1;
    return 0;
}

static void mark(m_alloc *a, uint64_t off, uint64_t len, int state)
{
    memset(a->state + off, state, len);
}

/* A recorded launch clears the failures of what it binds for writing: bytes it does not write
 * keep their values, no longer suspect. */
static void clear_suspect(m_alloc *a, uint64_t off, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        if (a->state[off + i] == SUSPECT) a->state[off + i] = UNKNOWN;
}

static void mark_all(fuzz *f, int state)
{
    for (int i = 0; i < f->nallocs; i++)
        mark(f->allocs[i], 0, f->allocs[i]->size, state);
}

static void poison_profiles(fuzz *f)
{
    for (int i = 0; i < f->nprofiles; i++)
        f->profiles[i].poisoned = 1;
}

static void push_dead(cubec_buffer *ring, uint32_t *count, cubec_buffer h)
{
    ring[(*count)++ % DEAD] = h;
}

/* Word i of [off, off + 4n) of `a`: its value and whether all four bytes are known. */
static int word_at(const m_alloc *a, uint64_t at, uint32_t *value)
{
    memcpy(value, a->bytes + at, 4);
    return !range_has(a, at, 4, UNKNOWN) && !range_has(a, at, 4, SUSPECT);
}

static void put_word(m_alloc *a, uint64_t at, uint32_t value, int known)
{
    memcpy(a->bytes + at, &value, 4);
    mark(a, at, 4, known ? KNOWN : UNKNOWN);
}

/* The ranges an op writes: out[0..count). */
typedef struct range {
    m_alloc *a;
    uint64_t off, size;
} range;

static int op_outputs(const m_op *o, range *out)
{
    switch (o->kind) {
    case K_PRODUCE:
    case K_STEP: out[0] = (range){o->a0, o->off0, o->size0}; return 1;
    case K_CONSUME: out[0] = (range){o->a1, o->off1, o->size1}; return 1;
    case K_FILL: out[0] = (range){o->a0, o->off0 + o->fill_off, o->fill_size}; return 1;
    }
    return 0;
}

static int op_inputs(const m_op *o, range *in)
{
    int n = 0;
    if (o->kind == K_CONSUME || o->kind == K_STEP) in[n++] = (range){o->a0, o->off0, o->size0};
    if (o->indirect) in[n++] = (range){o->ia, o->ioff, 12};
    return n;
}

static int op_reads_suspect(const m_op *o)
{
    range in[2];
    int n = op_inputs(o, in);
    for (int i = 0; i < n; i++)
        if (range_has(in[i].a, in[i].off, in[i].size, SUSPECT)) return 1;
    return 0;
}

static void mark_outputs(const m_op *o, int state)
{
    range out[1] = {{0}};
    int n = op_outputs(o, out);
    for (int i = 0; i < n; i++)
        mark(out[i].a, out[i].off, out[i].size, state);
}

/* The effect of a launch or fill that ran, or may not have (`lost`: a fault was armed). */
static void model_op(fuzz *f, const m_op *o, int lost)
{
    if (lost || op_reads_suspect(o)) {
        /* Skipped (an input carries a failure) or lost: the outputs carry it. */
        poison_profiles(f);
        mark_outputs(o, SUSPECT);
        return;
    }
    if (o->kind != K_FILL && !F.kernels_run) {
        /* The null backend runs no kernel: what a launch binds for writing counts as written,
         * with bytes the model cannot know. */
        if (o->n) mark_outputs(o, UNKNOWN);
        return;
    }
    uint64_t words = o->n;
    /* A launch of zero groups launches nothing (it may or may not count as recorded, so what
     * its outputs carry is left as it is). */
    if (o->kind != K_FILL && words == 0) return;
    switch (o->kind) {
    case K_PRODUCE:
        for (uint32_t i = 0; i < words; i++)
            put_word(o->a0, o->off0 + 4ull * i, i * o->mul + o->add, 1);
        clear_suspect(o->a0, o->off0 + 4 * words, o->size0 - 4 * words);
        break;
    case K_CONSUME:
    case K_STEP: {
        m_alloc *out = o->kind == K_CONSUME ? o->a1 : o->a0;
        uint64_t out_off = o->kind == K_CONSUME ? o->off1 : o->off0;
        uint64_t out_size = o->kind == K_CONSUME ? o->size1 : o->size0;
        for (uint32_t i = 0; i < words; i++) {
            uint32_t x;
            int known = word_at(o->a0, o->off0 + 4ull * i, &x);
            put_word(out, out_off + 4ull * i, x * o->mul + o->add, known);
        }
        clear_suspect(out, out_off + 4 * words, out_size - 4 * words);
        break;
    }
    case K_FILL:
        for (uint64_t j = 0; j < o->fill_size; j++) {
            uint8_t b[4];
            memcpy(b, &o->mul, 4);
            o->a0->bytes[o->off0 + o->fill_off + j] = b[j % 4];
        }
        mark(o->a0, o->off0 + o->fill_off, o->fill_size, KNOWN);
        break;
    }
}

static void note_use(const m_op *o, int stream)
{
    range r[2];
    int n = op_inputs(o, r);
    for (int i = 0; i < n; i++)
        r[i].a->readers |= bit(stream);
    n = op_outputs(o, r);
    for (int i = 0; i < n; i++)
        r[i].a->writers |= bit(stream);
}

/* Compares the known bytes of a successful read with the model. */
static void compare(fuzz *f, const m_alloc *a, uint64_t off, const uint8_t *got, uint64_t len,
                    const char *what)
{
    f->reads_compared++;
    for (uint64_t i = 0; i < len; i++) {
        if (a->state[off + i] != KNOWN) continue;
        f->bytes_compared++;
        if (got[i] != a->bytes[off + i])
            die(f,
                "%s: byte %" PRIu64 " of allocation #%" PRIu64 " (read at +%" PRIu64
                ") is 0x%02x, the model says 0x%02x",
                what, off + i, a->number, i, got[i], a->bytes[off + i]);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Picking. */

static int pick_stream(fuzz *f)
{
    return (int)rnd(f, (uint32_t)f->nstreams);
}

static cubec_stream stream_of(const fuzz *f, int s)
{
    return f->streams[s];
}

/* A buffer with at least `min_size` bytes, or -1. */
static int pick_buf(fuzz *f, uint64_t min_size)
{
    int candidates[MAX_BUFS], n = 0;
    for (int i = 0; i < f->nbufs; i++)
        if (f->bufs[i].size >= min_size) candidates[n++] = i;
    return n ? candidates[rnd(f, (uint32_t)n)] : -1;
}

/* A handle no live buffer has: released, zero, or made up. */
static cubec_buffer bad_buffer(fuzz *f)
{
    uint32_t dead = f->dead_buf_count < DEAD ? f->dead_buf_count : DEAD;
    switch (rnd(f, 4)) {
    case 0:
        if (dead) return f->dead_bufs[rnd(f, dead)];
        /* fall through */
    case 1: return (cubec_buffer){0};
    case 2:
        if (f->nbufs) /* this device's tag and generation bits, an index never handed out */
            return (cubec_buffer){(f->bufs[0].h.id & ~0xffffffffull) |
                                  (0x40000000u + rnd(f, 1000))};
        /* fall through */
    default: return (cubec_buffer){0x5a5a000000000000ull ^ (rnd64(f) & 0xffffffffffffull)};
    }
}

/* [off, off + len) within `size` bytes, both multiples of `unit`: whole, empty, small pieces at
 * the edges or anywhere. */
static void pick_range(fuzz *f, uint64_t size, uint64_t unit, uint64_t *off, uint64_t *len)
{
    uint64_t units = size / unit;
    uint64_t a, b;
    switch (rnd(f, 6)) {
    case 0: a = 0, b = units; break;
    case 1: a = b = rnd64(f) % (units + 1); break;
    case 2: a = units - (units ? rnd64(f) % (units < 8 ? units : 8) : 0), b = units; break;
    case 3:
        a = rnd64(f) % (units + 1);
        b = a + rnd64(f) % (units - a + 1 < 9 ? units - a + 1 : 9);
        break;
    default:
        a = rnd64(f) % (units + 1);
        b = rnd64(f) % (units + 1);
        if (a > b) {
            uint64_t t = a;
            a = b;
            b = t;
        }
    }
    *off = a * unit;
    *len = (b - a) * unit;
}

static uint64_t pick_size(fuzz *f)
{
    static const uint64_t sizes[] = {0,   4,    8,    12,   16,   20,    64,   100,
                                     256, 1000, 1024, 4096, 4100, 16384, 65536};
    return sizes[rnd(f, sizeof sizes / sizeof sizes[0])];
}

static void random_fill(fuzz *f, uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        p[i] = (uint8_t)rnd64(f);
}

/* ------------------------------------------------------------------------------------------ */
/* Ordering across streams (see the top of the file). */

static void do_sync(fuzz *f, int s)
{
    for (int attempt = 0; attempt < 3 && !f->lost; attempt++) {
        note(f, "cubec_sync(stream[%d])", s);
        cubec_code c =
            expect(f, cubec_sync(f->d, stream_of(f, s)), allow(f, C_SUBMITS), "cubec_sync");
        if (c == CUBEC_OK) {
            for (int i = 0; i < f->nallocs; i++) {
                f->allocs[i]->readers &= ~bit(s);
                f->allocs[i]->writers &= ~bit(s);
            }
            return;
        }
    }
}

/* Before stream `s` writes `a`: the other streams with work on it are synced. 0 if the device
 * was lost meanwhile. */
static int before_write(fuzz *f, m_alloc *a, int s)
{
    uint32_t others = (a->readers | a->writers) & ~bit(s);
    for (int i = 0; i < f->nstreams && !f->lost; i++)
        if (others & bit(i)) do_sync(f, i);
    return !f->lost;
}

static int before_op(fuzz *f, const m_op *o, int s)
{
    range out[1] = {{0}};
    int n = op_outputs(o, out);
    for (int i = 0; i < n; i++)
        if (!before_write(f, out[i].a, s)) return 0;
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers. */

static void add_buf(fuzz *f, cubec_buffer h, m_alloc *a, uint64_t off, uint64_t size, int view)
{
    f->bufs[f->nbufs++] = (m_buf){h, a, off, size, 1, view};
}

static void drop_buf(fuzz *f, int i)
{
    m_buf *b = &f->bufs[i];
    push_dead(f->dead_bufs, &f->dead_buf_count, b->h);
    alloc_unref(f, b->a);
    f->bufs[i] = f->bufs[--f->nbufs];
}

/* Host memory for a transfer of `len` bytes: now and then inside a registered or pinned range
 * (the transfer then skips staging), else from the heap. */
static uint8_t *host_mem(fuzz *f, uint64_t len)
{
    if (f->nhosts && chance(f, 3)) {
        m_host *h = &f->hosts[rnd(f, (uint32_t)f->nhosts)];
        if (h->size > len && !h->busy) {
            uint64_t room = h->size - len;
            return h->ptr + rnd(f, room < 256 ? (uint32_t)room : 256);
        }
    }
    uint8_t *p = malloc(len + 1);
    MUST(f, p);
    return p;
}

static void host_mem_free(fuzz *f, uint8_t *p)
{
    for (int i = 0; i < f->nhosts; i++)
        if (p >= f->hosts[i].ptr && p < f->hosts[i].ptr + f->hosts[i].size) return;
    free(p);
}

static void op_create(fuzz *f)
{
    if (f->nbufs >= MAX_BUFS) return;
    int s = pick_stream(f);
    uint64_t size = pick_size(f);
    cubec_buffer h = {0x77};
    if (chance(f, 25)) {
        note(f, "cubec_buffer_create(stream[%d], %" PRIu64 ", NULL)", s, size);
        expect(f, cubec_buffer_create(f->d, stream_of(f, s), size, NULL), refused(f),
               "cubec_buffer_create with a NULL out_buffer");
        return;
    }
    if (chance(f, 2)) {
        note(f, "cubec_buffer_create(stream[%d], %" PRIu64 ")", s, size);
        cubec_code c = expect(f, cubec_buffer_create(f->d, stream_of(f, s), size, &h),
                              allow(f, C_CREATES | C_SUBMITS), "cubec_buffer_create");
        if (c) {
            if (h.id) die(f, "a failed cubec_buffer_create left its out_buffer set");
            return;
        }
        m_alloc *a = alloc_new(f, size, s);
        add_buf(f, h, a, 0, size, 0);
        return;
    }
    uint8_t *data = malloc(size + 1);
    MUST(f, data);
    random_fill(f, data, size);
    int pending = submit_pending(f);
    note(f, "cubec_buffer_from(stream[%d], %" PRIu64 " bytes)", s, size);
    cubec_code c = expect(f, cubec_buffer_from(f->d, stream_of(f, s), data, size, &h),
                          allow(f, C_CREATES | C_SUBMITS), "cubec_buffer_from");
    if (!c) {
        m_alloc *a = alloc_new(f, size, s);
        memcpy(a->bytes, data, size);
        mark(a, 0, size, pending ? SUSPECT : KNOWN);
        a->writers |= bit(s);
        add_buf(f, h, a, 0, size, 0);
    } else if (h.id) {
        free(data);
        die(f, "a failed cubec_buffer_from left its out_buffer set");
    }
    free(data);
}

static void op_view(fuzz *f)
{
    int i = pick_buf(f, 0);
    if (i < 0 || f->nbufs >= MAX_BUFS) return;
    m_buf *p = &f->bufs[i];
    uint64_t align = f->info.storage_offset_alignment;
    uint64_t off, len;
    pick_range(f, p->size, 1, &off, &len);
    off -= off % align;
    if (len > p->size - off) len = p->size - off;
    cubec_buffer v = {0x77};
    switch (rnd(f, 14)) {
    case 0:
        if (align > 1 && off + 1 <= p->size) {
            note(f, "cubec_buffer_view(buf %d, %" PRIu64 ", 0) misaligned", i, off + 1);
            expect(f, cubec_buffer_view(f->d, p->h, off + 1, 0, &v), refused(f),
                   "a misaligned view");
            if (v.id) die(f, "a refused view left its out_view set");
            return;
        }
        break;
    case 1:
        note(f, "cubec_buffer_view(buf %d, %" PRIu64 ", %" PRIu64 ") past the end", i, off,
             p->size - off + 1);
        expect(f, cubec_buffer_view(f->d, p->h, off, p->size - off + 1, &v), refused(f),
               "a view past the end");
        return;
    case 2: {
        cubec_buffer bad = bad_buffer(f);
        note(f, "cubec_buffer_view(bad handle 0x%" PRIx64 ")", bad.id);
        expect(f, cubec_buffer_view(f->d, bad, 0, 0, &v), refused(f), "a view of a bad handle");
        return;
    }
    case 3:
        note(f, "cubec_buffer_view(buf %d, NULL out)", i);
        expect(f, cubec_buffer_view(f->d, p->h, 0, 0, NULL), refused(f),
               "a view with a NULL out_view");
        return;
    default: break;
    }
    note(f, "cubec_buffer_view(buf %d [alloc #%" PRIu64 " +%" PRIu64 "], %" PRIu64 ", %" PRIu64 ")",
         i, p->a->number, p->off, off, len);
    if (expect(f, cubec_buffer_view(f->d, p->h, off, len, &v), allow(f, C_NONE),
               "cubec_buffer_view"))
        return;
    p->a->refs++;
    add_buf(f, v, p->a, p->off + off, len, 1);
}

static void op_release(fuzz *f)
{
    if (chance(f, 6)) {
        cubec_buffer bad = bad_buffer(f);
        note(f, "cubec_buffer_release(bad handle 0x%" PRIx64 ")", bad.id);
        expect(f, cubec_buffer_release(f->d, bad), bad.id ? refused(f) : allow(f, C_NONE),
               "cubec_buffer_release of a bad handle");
        return;
    }
    int i = pick_buf(f, 0);
    if (i < 0 || f->nbufs < 4) return;
    note(f, "cubec_buffer_release(buf %d)", i);
    if (expect(f, cubec_buffer_release(f->d, f->bufs[i].h), allow(f, C_SUBMITS),
               "cubec_buffer_release"))
        return;
    if (--f->bufs[i].refs == 0) drop_buf(f, i);
}

static void op_retain_size(fuzz *f)
{
    int i = pick_buf(f, 0);
    if (i < 0) return;
    m_buf *b = &f->bufs[i];
    if (chance(f, 3) && b->refs < 3) {
        note(f, "cubec_buffer_retain(buf %d)", i);
        if (!expect(f, cubec_buffer_retain(f->d, b->h), allow(f, C_NONE), "cubec_buffer_retain"))
            b->refs++;
        return;
    }
    uint64_t size = 12345;
    if (chance(f, 8)) {
        note(f, "cubec_buffer_get_size(buf %d, NULL)", i);
        expect(f, cubec_buffer_get_size(f->d, b->h, NULL), refused(f),
               "cubec_buffer_get_size NULL");
        return;
    }
    note(f, "cubec_buffer_get_size(buf %d)", i);
    if (!expect(f, cubec_buffer_get_size(f->d, b->h, &size), allow(f, C_NONE),
                "cubec_buffer_get_size") &&
        size != b->size)
        die(f, "cubec_buffer_get_size of buf %d is %" PRIu64 ", the model says %" PRIu64, i, size,
            b->size);
}

/* ------------------------------------------------------------------------------------------ */
/* Transfers. */

static void op_write(fuzz *f)
{
    int s = pick_stream(f);
    int i = pick_buf(f, 0);
    if (i < 0) return;
    m_buf *b = &f->bufs[i];
    uint64_t off, len;
    pick_range(f, b->size, 1, &off, &len);
    uint8_t *data = host_mem(f, len);
    MUST(f, data);
    random_fill(f, data, len);
    switch (rnd(f, 24)) {
    case 0: {
        cubec_buffer bad = bad_buffer(f);
        note(f, "cubec_write(stream[%d], bad handle 0x%" PRIx64 ")", s, bad.id);
        expect(f, cubec_write(f->d, stream_of(f, s), bad, 0, data, len), refused(f),
               "cubec_write to a bad handle");
        host_mem_free(f, data);
        return;
    }
    case 1:
        note(f, "cubec_write(stream[%d], buf %d, %" PRIu64 ", %" PRIu64 ") past the end", s, i, off,
             b->size - off + 1);
        expect(f, cubec_write(f->d, stream_of(f, s), b->h, off, data, b->size - off + 1),
               refused(f), "cubec_write past the end");
        host_mem_free(f, data);
        return;
    case 2:
        note(f, "cubec_write(stream[%d], buf %d, %" PRIu64 ", NULL, %" PRIu64 ")", s, i, off,
             len ? len : 1);
        expect(f, cubec_write(f->d, stream_of(f, s), b->h, off, NULL, len ? len : 1), refused(f),
               "cubec_write from NULL");
        host_mem_free(f, data);
        return;
    case 3: {
        cubec_stream bogus = 0x0bad000000000000ull | rnd(f, 1000);
        note(f, "cubec_write(made-up stream 0x%" PRIx64 ")", bogus);
        expect(f, cubec_write(f->d, bogus, b->h, off, data, len), refused(f),
               "cubec_write on a made-up stream");
        host_mem_free(f, data);
        return;
    }
    case 4:
        note(f, "cubec_write_failure(stream[%d], buf %d, code 0)", s, i);
        expect(f, cubec_write_failure(f->d, stream_of(f, s), b->h, off, len, CUBEC_OK, "model"),
               refused(f), "cubec_write_failure of CUBEC_OK");
        host_mem_free(f, data);
        return;
    case 5: {
        /* A failure written in place of bytes: reads of them fail from now on, as for bytes whose
         * writer may have been lost. */
        host_mem_free(f, data);
        if (!before_write(f, b->a, s)) return;
        note(f, "cubec_write_failure(stream[%d], buf %d, %" PRIu64 ", %" PRIu64 ")", s, i, off,
             len);
        cubec_code c = expect(f,
                              cubec_write_failure(f->d, stream_of(f, s), b->h, off, len,
                                                  CUBEC_INTERNAL, "written by the model"),
                              allow(f, C_SUBMITS), "cubec_write_failure");
        (void)c;
        mark(b->a, b->off + off, len, SUSPECT);
        b->a->writers |= bit(s);
        return;
    }
    default: break;
    }
    if (!before_write(f, b->a, s)) {
        host_mem_free(f, data);
        return;
    }
    int pending = submit_pending(f);
    note(f,
         "cubec_write(stream[%d], buf %d [alloc #%" PRIu64 " +%" PRIu64 "], %" PRIu64 ", %" PRIu64
         " bytes)",
         s, i, b->a->number, b->off, off, len);
    /* C_CREATES: a staged write creates the upload ring at its first use (server/host_ring.c). */
    cubec_code c = expect(f, cubec_write(f->d, stream_of(f, s), b->h, off, data, len),
                          allow(f, C_SUBMITS | C_CREATES), "cubec_write");
    memcpy(b->a->bytes + b->off + off, data, len);
    mark(b->a, b->off + off, len, c || pending ? SUSPECT : KNOWN);
    b->a->writers |= bit(s);
    host_mem_free(f, data);
}

static void op_read(fuzz *f)
{
    int s = pick_stream(f);
    int i = pick_buf(f, 0);
    if (i < 0) return;
    m_buf *b = &f->bufs[i];
    uint64_t off, len;
    pick_range(f, b->size, 1, &off, &len);
    uint8_t *got = host_mem(f, len);
    MUST(f, got);
    switch (rnd(f, 24)) {
    case 0: {
        cubec_buffer bad = bad_buffer(f);
        note(f, "cubec_read(stream[%d], bad handle 0x%" PRIx64 ")", s, bad.id);
        expect(f, cubec_read(f->d, stream_of(f, s), bad, 0, got, len), refused(f),
               "cubec_read of a bad handle");
        host_mem_free(f, got);
        return;
    }
    case 1:
        note(f, "cubec_read(stream[%d], buf %d, offset %" PRIu64 ") past the end", s, i,
             b->size + 1);
        expect(f, cubec_read(f->d, stream_of(f, s), b->h, b->size + 1, got, 0), refused(f),
               "cubec_read past the end");
        host_mem_free(f, got);
        return;
    case 2:
        note(f, "cubec_read(stream[%d], buf %d, NULL)", s, i);
        expect(f, cubec_read(f->d, stream_of(f, s), b->h, 0, NULL, b->size ? 1 : 0),
               b->size ? refused(f) : allow(f, C_SUBMITS), "cubec_read into NULL");
        host_mem_free(f, got);
        return;
    default: break;
    }
    uint32_t ok = allow(f, C_SUBMITS | C_CREATES); /* the readback ring, made at first use */
    if (range_has(b->a, b->off + off, len, SUSPECT)) ok |= FAILURE_CODES;
    note(f,
         "cubec_read(stream[%d], buf %d [alloc #%" PRIu64 " +%" PRIu64 "], %" PRIu64 ", %" PRIu64
         " bytes)",
         s, i, b->a->number, b->off, off, len);
    if (!expect(f, cubec_read(f->d, stream_of(f, s), b->h, off, got, len), ok, "cubec_read"))
        compare(f, b->a, b->off + off, got, len, "cubec_read");
    host_mem_free(f, got);
}

static void op_read_async(fuzz *f)
{
    int s = pick_stream(f);
    int i = pick_buf(f, 0);
    if (i < 0) return;
    m_buf *b = &f->bufs[i];
    uint64_t off, len;
    pick_range(f, b->size, 1, &off, &len);
    uint8_t *got = host_mem(f, len);
    MUST(f, got);
    cubec_event *e = (cubec_event *)&got; /* cleared on entry */
    if (chance(f, 12)) {
        note(f, "cubec_read_async(stream[%d], buf %d, NULL event)", s, i);
        expect(f, cubec_read_async(f->d, stream_of(f, s), b->h, off, got, len, NULL), refused(f),
               "cubec_read_async with a NULL out_event");
        host_mem_free(f, got);
        return;
    }
    uint32_t fail = range_has(b->a, b->off + off, len, SUSPECT) ? FAILURE_CODES : 0;
    note(f,
         "cubec_read_async(stream[%d], buf %d [alloc #%" PRIu64 "], %" PRIu64 ", %" PRIu64
         " bytes)",
         s, i, b->a->number, off, len);
    cubec_code c = expect(f, cubec_read_async(f->d, stream_of(f, s), b->h, off, got, len, &e),
                          allow(f, C_SUBMITS | C_CREATES) | fail, "cubec_read_async");
    if (c) {
        if (e) die(f, "a failed cubec_read_async left its out_event set");
        host_mem_free(f, got);
        return;
    }
    b->a->readers |= bit(s);
    if (f->nevents < MAX_EVENTS && chance(f, 2)) {
        /* Left pending: op_event finishes it, after other steps wrote what they like. */
        m_event *ev = &f->events[f->nevents++];
        *ev = (m_event){e, got, b->a, b->off + off, len, malloc(len + 1), malloc(len + 1), fail, s};
        MUST(f, ev->want && ev->state);
        memcpy(ev->want, b->a->bytes + ev->off, len);
        memcpy(ev->state, b->a->state + ev->off, len);
        b->a->refs++;
        for (int h = 0; h < f->nhosts; h++)
            if (got >= f->hosts[h].ptr && got < f->hosts[h].ptr + f->hosts[h].size)
                f->hosts[h].busy++;
        return;
    }
    int done = 0;
    for (int q = rnd(f, 4); q > 0 && !done; q--) {
        note(f, "cubec_event_query");
        c = expect(f, cubec_event_query(e), allow(f, C_SUBMITS) | fail | M(CUBEC_NOT_READY),
                   "cubec_event_query");
        if (c != CUBEC_NOT_READY) done = 1 + (c != CUBEC_OK);
    }
    if (!done) {
        note(f, "cubec_event_wait");
        c = expect(f, cubec_event_wait(e), allow(f, C_SUBMITS) | fail, "cubec_event_wait");
        done = 1 + (c != CUBEC_OK);
    }
    cubec_event_free(e);
    if (done == 1) compare(f, b->a, b->off + off, got, len, "cubec_read_async");
    host_mem_free(f, got);
}

/* Finishes pending event `i`: a wait (or only a free, which waits too), then the bytes it
 * delivered against what the model held when it was queued. */
static void event_finish(fuzz *f, int i, int free_only)
{
    m_event *ev = &f->events[i];
    uint32_t ok = allow(f, C_SUBMITS) | ev->fail;
    int done = free_only ? 0 : 1;
    if (!free_only) {
        for (int q = rnd(f, 3); q > 0 && done == 1; q--) {
            note(f, "cubec_event_query (pending read of alloc #%" PRIu64 ")", ev->a->number);
            cubec_code c =
                expect(f, cubec_event_query(ev->e), ok | M(CUBEC_NOT_READY), "cubec_event_query");
            if (c != CUBEC_NOT_READY) done = 2 + (c != CUBEC_OK);
        }
        if (done == 1) {
            note(f, "cubec_event_wait (pending read of alloc #%" PRIu64 ")", ev->a->number);
            done = 2 + (expect(f, cubec_event_wait(ev->e), ok, "cubec_event_wait") != CUBEC_OK);
        }
    }
    note(f, "cubec_event_free (pending read of alloc #%" PRIu64 ")", ev->a->number);
    cubec_event_free(ev->e);
    if (done == 2 && !ev->unchecked) {
        f->reads_compared++;
        for (uint64_t j = 0; j < ev->len; j++) {
            if (ev->state[j] != KNOWN) continue;
            f->bytes_compared++;
            if (ev->got[j] != ev->want[j])
                die(f,
                    "a pending cubec_read_async of allocation #%" PRIu64 ": byte %" PRIu64
                    " is 0x%02x; when the read was queued it was 0x%02x",
                    ev->a->number, ev->off + j, ev->got[j], ev->want[j]);
        }
    }
    for (int h = 0; h < f->nhosts; h++)
        if (ev->got >= f->hosts[h].ptr && ev->got < f->hosts[h].ptr + f->hosts[h].size)
            f->hosts[h].busy--;
    if (!ev->gone) host_mem_free(f, ev->got);
    free(ev->want);
    free(ev->state);
    alloc_unref(f, ev->a);
    f->events[i] = f->events[--f->nevents];
}

static void op_event(fuzz *f)
{
    if (!f->nevents) return;
    event_finish(f, (int)rnd(f, (uint32_t)f->nevents), chance(f, 5));
}

/* Arming a fault: a pending read not yet submitted may be lost with the submission. */
static void events_may_fail(fuzz *f)
{
    for (int i = 0; i < f->nevents; i++)
        f->events[i].fail |= FAILURE_CODES | M(CUBEC_DEVICE_LOST);
}

static void op_copy(fuzz *f)
{
    int s = pick_stream(f);
    int si = pick_buf(f, 0), di = pick_buf(f, 0);
    if (si < 0) return;
    m_buf *src = &f->bufs[si], *dst = &f->bufs[di];
    uint64_t soff, len, doff, dlen;
    pick_range(f, src->size, 4, &soff, &len);
    pick_range(f, dst->size, 4, &doff, &dlen);
    if (len > dst->size - doff) len = (dst->size - doff) / 4 * 4;
    uint64_t a = src->off + soff, b = dst->off + doff;
    int overlap = src->a == dst->a && len && a < b + len && b < a + len;
    switch (overlap ? 0 : rnd(f, 20)) {
    case 0:
        if (overlap) {
            note(f,
                 "cubec_copy(buf %d +%" PRIu64 " -> buf %d +%" PRIu64 ", %" PRIu64 ") overlapping",
                 si, soff, di, doff, len);
            expect(f, cubec_copy(f->d, stream_of(f, s), src->h, soff, dst->h, doff, len),
                   refused(f), "cubec_copy overlapping itself");
            return;
        }
        break;
    case 1:
        note(f, "cubec_copy(buf %d +%" PRIu64 " unaligned)", si, soff + 2);
        expect(f, cubec_copy(f->d, stream_of(f, s), src->h, soff + 2, dst->h, doff, 4), refused(f),
               "cubec_copy at an unaligned offset");
        return;
    case 2:
        note(f, "cubec_copy(size %" PRIu64 " unaligned)", len + 1);
        expect(f, cubec_copy(f->d, stream_of(f, s), src->h, soff, dst->h, doff, len + 1),
               refused(f), "cubec_copy of an unaligned size");
        return;
    case 3: {
        cubec_buffer bad = bad_buffer(f);
        note(f, "cubec_copy(bad source 0x%" PRIx64 ")", bad.id);
        expect(f, cubec_copy(f->d, stream_of(f, s), bad, 0, dst->h, doff, 0), refused(f),
               "cubec_copy from a bad handle");
        return;
    }
    case 4:
        note(f, "cubec_copy(buf %d -> buf %d +%" PRIu64 ") past the end", si, di,
             dst->size / 4 * 4 + 4);
        expect(f, cubec_copy(f->d, stream_of(f, s), src->h, 0, dst->h, dst->size / 4 * 4 + 4, 0),
               refused(f), "cubec_copy past the end");
        return;
    default: break;
    }
    m_op o = {.kind = K_FILL}; /* only for the ordering helpers: the destination range */
    o.a0 = dst->a;
    o.off0 = dst->off;
    o.fill_off = doff;
    o.fill_size = len;
    if (!before_op(f, &o, s)) return;
    int pending = submit_pending(f);
    note(f,
         "cubec_copy(stream[%d], buf %d [alloc #%" PRIu64 " +%" PRIu64 "] +%" PRIu64
         " -> buf %d [alloc #%" PRIu64 " +%" PRIu64 "] +%" PRIu64 ", %" PRIu64 ")",
         s, si, src->a->number, src->off, soff, di, dst->a->number, dst->off, doff, len);
    /* On one device cubec_copy_peer is cubec_copy on the destination's stream. */
    cubec_code c =
        chance(f, 4) ? expect(f,
                              cubec_copy_peer(f->d, stream_of(f, s), src->h, soff, f->d,
                                              stream_of(f, s), dst->h, doff, len),
                              allow(f, C_SUBMITS | C_COMPILES), "cubec_copy_peer")
                     : expect(f, cubec_copy(f->d, stream_of(f, s), src->h, soff, dst->h, doff, len),
                              allow(f, C_SUBMITS | C_COMPILES), "cubec_copy");
    src->a->readers |= bit(s);
    dst->a->writers |= bit(s);
    if (c || pending || range_has(src->a, a, len, SUSPECT)) {
        if (!c) poison_profiles(f);
        mark(dst->a, b, len, SUSPECT);
    } else {
        memmove(dst->a->bytes + b, src->a->bytes + a, len);
        memmove(dst->a->state + b, src->a->state + a, len);
    }
}

static void op_fill(fuzz *f)
{
    int s = pick_stream(f);
    int i = pick_buf(f, 0);
    if (i < 0) return;
    m_buf *b = &f->bufs[i];
    uint64_t off, len;
    pick_range(f, b->size, 4, &off, &len);
    uint32_t pattern = (uint32_t)rnd64(f);
    switch (rnd(f, 20)) {
    case 0:
        note(f, "cubec_fill(buf %d, +%" PRIu64 " unaligned)", i, off + 1);
        expect(f, cubec_fill(f->d, stream_of(f, s), b->h, off + 1, 4, pattern), refused(f),
               "cubec_fill at an unaligned offset");
        return;
    case 1:
        note(f, "cubec_fill(buf %d, size %" PRIu64 " unaligned)", i, len + 2);
        expect(f, cubec_fill(f->d, stream_of(f, s), b->h, off, len + 2, pattern), refused(f),
               "cubec_fill of an unaligned size");
        return;
    case 2:
        note(f, "cubec_fill(buf %d, +%" PRIu64 " %" PRIu64 ") past the end", i, off, len + 4);
        expect(f, cubec_fill(f->d, stream_of(f, s), b->h, b->size / 4 * 4, 4 + len, pattern),
               refused(f), "cubec_fill past the end");
        return;
    case 3: {
        cubec_buffer bad = bad_buffer(f);
        note(f, "cubec_fill(bad handle 0x%" PRIx64 ")", bad.id);
        expect(f, cubec_fill(f->d, stream_of(f, s), bad, 0, 4, pattern), refused(f),
               "cubec_fill of a bad handle");
        return;
    }
    default: break;
    }
    m_op o = {.kind = K_FILL,
              .a0 = b->a,
              .off0 = b->off,
              .fill_off = off,
              .fill_size = len,
              .mul = pattern,
              .h0 = b->h};
    if (!before_op(f, &o, s)) return;
    int pending = submit_pending(f);
    note(f,
         "cubec_fill(stream[%d], buf %d [alloc #%" PRIu64 " +%" PRIu64 "], +%" PRIu64 ", %" PRIu64
         ", 0x%08x)",
         s, i, b->a->number, b->off, off, len, pattern);
    cubec_code c = expect(f, cubec_fill(f->d, stream_of(f, s), b->h, off, len, pattern),
                          allow(f, C_SUBMITS | C_COMPILES), "cubec_fill");
    note_use(&o, s);
    if (c)
        mark_outputs(&o, SUSPECT);
    else
        model_op(f, &o, pending);
}

/* ------------------------------------------------------------------------------------------ */
/* Launches. */

static int pick_kernel(fuzz *f)
{
    return (int)rnd(f, (uint32_t)f->nkernels);
}

static cubec_status issue(fuzz *f, int s, const m_op *o)
{
    if (o->kind == K_FILL)
        return cubec_fill(f->d, stream_of(f, s), o->h0, o->fill_off, o->fill_size, o->mul);
    uint32_t info[3] = {o->n, o->mul, o->add};
    cubec_buffer bufs[2] = {o->h0, o->h1};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = o->k,
                            .buffers = bufs,
                            .buffer_count = o->kind == K_CONSUME ? 2 : 1,
                            .info = info,
                            .info_size = sizeof info,
                            .groups = {(o->n + 63) / 64, 1, 1}};
    if (o->indirect) {
        ld.indirect = o->ih;
        ld.indirect_offset = o->ioff_in_buffer;
    }
    return cubec_launch(f->d, stream_of(f, s), &ld);
}

static void describe_op(const m_op *o, char *out, size_t size)
{
    static const char *const names[] = {"produce", "consume", "step", "fill"};
    if (o->kind == K_FILL)
        snprintf(out, size, "fill(alloc #%" PRIu64 " +%" PRIu64 ", %" PRIu64 ", 0x%08x)",
                 o->a0->number, o->off0 + o->fill_off, o->fill_size, o->mul);
    else if (o->kind == K_CONSUME)
        snprintf(out, size,
                 "consume(alloc #%" PRIu64 " +%" PRIu64 " [%" PRIu64 "] -> alloc #%" PRIu64
                 " +%" PRIu64 " [%" PRIu64 "], n %u, mul %u, add %u%s)",
                 o->a0->number, o->off0, o->size0, o->a1->number, o->off1, o->size1, o->n, o->mul,
                 o->add, o->indirect ? ", indirect" : "");
    else
        snprintf(out, size,
                 "%s(alloc #%" PRIu64 " +%" PRIu64 " [%" PRIu64 "], n %u, mul %u, add %u%s)",
                 names[o->kind], o->a0->number, o->off0, o->size0, o->n, o->mul, o->add,
                 o->indirect ? ", indirect" : "");
}

/* A valid launch (or, for graphs, sometimes a fill) on random buffers: 0 if none fits. */
static int make_op(fuzz *f, m_op *o, int allow_fill)
{
    memset(o, 0, sizeof *o);
    if (allow_fill && chance(f, 5)) {
        int i = pick_buf(f, 4);
        if (i < 0) return 0;
        m_buf *b = &f->bufs[i];
        o->kind = K_FILL;
        o->h0 = b->h;
        o->a0 = b->a;
        o->off0 = b->off;
        pick_range(f, b->size, 4, &o->fill_off, &o->fill_size);
        o->mul = (uint32_t)rnd64(f);
        return 1;
    }
    int k = pick_kernel(f);
    o->kind = f->kernels[k].kind;
    o->k = f->kernels[k].h;
    int i = pick_buf(f, 4);
    if (i < 0) return 0;
    m_buf *x = &f->bufs[i];
    o->h0 = x->h;
    o->a0 = x->a;
    o->off0 = x->off;
    o->size0 = x->size;
    uint64_t words = x->size / 4;
    if (o->kind == K_CONSUME) {
        int j = -1;
        for (int tries = 0; tries < 6 && j < 0; tries++) {
            int c = pick_buf(f, 4);
            if (c < 0) return 0;
            m_buf *y = &f->bufs[c];
            int overlap = y->a == x->a && y->off < x->off + x->size && x->off < y->off + y->size;
            if (!overlap) j = c;
        }
        if (j < 0) return 0;
        m_buf *y = &f->bufs[j];
        o->h1 = y->h;
        o->a1 = y->a;
        o->off1 = y->off;
        o->size1 = y->size;
        if (y->size / 4 < words) words = y->size / 4;
    }
    switch (rnd(f, 8)) {
    case 0: o->n = 0; break;
    case 1:
    case 2: o->n = (uint32_t)rnd64(f) % ((uint32_t)words + 1); break;
    default: o->n = (uint32_t)words;
    }
    o->mul = (uint32_t)rnd64(f) | 1;
    o->add = (uint32_t)rnd64(f);
    return 1;
}

/* An indirect launch reads its counts from 12 known bytes written just before, in a buffer
 * the launch does not write. 0 if that cannot be arranged. */
static int make_indirect(fuzz *f, m_op *o, int s)
{
    int i = pick_buf(f, 12);
    if (i < 0) return 0;
    m_buf *b = &f->bufs[i];
    range out[1] = {{0}};
    op_outputs(o, out);
    if (b->a == out[0].a) return 0;
    uint64_t at = (rnd64(f) % ((b->size - 12) / 4 + 1)) * 4;
    uint32_t counts[3] = {(o->n + 63) / 64, 1, 1};
    if (!before_write(f, b->a, s)) return 0;
    int pending = submit_pending(f);
    note(f,
         "cubec_write(stream[%d], buf %d [alloc #%" PRIu64 " +%" PRIu64 "], %" PRIu64
         ", counts {%u, 1, 1})",
         s, i, b->a->number, b->off, at, counts[0]);
    cubec_code c = expect(f, cubec_write(f->d, stream_of(f, s), b->h, at, counts, 12),
                          allow(f, C_SUBMITS), "cubec_write of indirect counts");
    memcpy(b->a->bytes + b->off + at, counts, 12);
    mark(b->a, b->off + at, 12, c || pending ? SUSPECT : KNOWN);
    b->a->writers |= bit(s);
    if (c) return 0;
    o->indirect = 1;
    o->ih = b->h;
    o->ia = b->a;
    o->ioff = b->off + at;
    o->ioff_in_buffer = at;
    return 1;
}

/* The refused launches: each breaks one rule of cubec_launch. */
static void launch_refused(fuzz *f, int s, const m_op *o)
{
    uint32_t info[3] = {o->n, o->mul, o->add};
    cubec_buffer bufs[3] = {o->h0, o->kind == K_CONSUME ? o->h1 : NONE, NONE};
    uint32_t count = o->kind == K_CONSUME ? 2 : 1;
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = o->k,
                            .buffers = bufs,
                            .buffer_count = count,
                            .info = info,
                            .info_size = sizeof info,
                            .groups = {(o->n + 63) / 64, 1, 1}};
    const char *what = "?";
    uint32_t dead = f->dead_kernel_count < DEAD ? f->dead_kernel_count : DEAD;
    switch (rnd(f, 10)) {
    case 0: ld.buffer_count = count + 1, what = "one buffer too many"; break;
    case 1: ld.info_size = 8, what = "a wrong info_size"; break;
    case 2: ld.info = NULL, what = "NULL info"; break;
    case 3: ld.buffers = NULL, what = "NULL buffers"; break;
    case 4: bufs[0] = bad_buffer(f), what = "a bad buffer handle"; break;
    case 5:
        ld.kernel = dead ? f->dead_kernels[rnd(f, dead)] : (cubec_kernel){0x1234};
        what = "a destroyed or made-up kernel";
        break;
    case 6: ld.groups[0] = f->info.max_workgroup_count[0] + 1, what = "too many groups"; break;
    case 7:
        ld.indirect = o->h0, ld.indirect_offset = 2, what = "an unaligned indirect offset";
        break;
    case 8: {
        /* A buffer of 0 bytes cannot be bound. */
        int z = -1;
        for (int i = 0; i < f->nbufs && z < 0; i++)
            if (f->bufs[i].size == 0) z = i;
        if (z < 0) return;
        bufs[0] = f->bufs[z].h, what = "a binding of 0 bytes";
        break;
    }
    default:
        note(f, "cubec_launch(stream[%d], NULL)", s);
        expect(f, cubec_launch(f->d, stream_of(f, s), NULL), refused(f), "cubec_launch(NULL)");
        return;
    }
    note(f, "cubec_launch(stream[%d]) with %s", s, what);
    char msg[128];
    snprintf(msg, sizeof msg, "cubec_launch with %s", what);
    expect(f, cubec_launch(f->d, stream_of(f, s), &ld), refused(f), msg);
}

static void op_launch(fuzz *f)
{
    int s = pick_stream(f);
    m_op o;
    if (!make_op(f, &o, 0)) return;
    if (chance(f, 12)) {
        launch_refused(f, s, &o);
        return;
    }
    if (chance(f, 6) && !make_indirect(f, &o, s)) return;
    if (f->lost || !before_op(f, &o, s)) return;
    int pending = submit_pending(f);
    char desc[400];
    describe_op(&o, desc, sizeof desc);
    note(f, "cubec_launch(stream[%d], %s)", s, desc);
    cubec_code c = expect(f, issue(f, s, &o), allow(f, C_SUBMITS), "cubec_launch");
    note_use(&o, s);
    if (c) {
        /* Its own drain failed: its work was queued and lost with the submission. */
        poison_profiles(f);
        mark_outputs(&o, SUSPECT);
        return;
    }
    model_op(f, &o, pending);
}

/* ------------------------------------------------------------------------------------------ */
/* Kernels. */

static const char *kernel_source(int kind)
{
    return kind == K_PRODUCE ? produce_src : kind == K_CONSUME ? consume_src : step_src;
}

/* A metadata field by index, then by the name it gave: the same member; the index just past the
 * count is refused. */
static void model_info_field(fuzz *f, cubec_kernel k)
{
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    if (expect(f, cubec_kernel_get_info(f->d, k, &ki), allow(f, C_NONE), "cubec_kernel_get_info"))
        return;
    uint32_t index = rnd(f, ki.info_field_count + 1);
    cubec_info_field field = CUBEC_INFO_FIELD_INIT, by_name = CUBEC_INFO_FIELD_INIT;
    note(f, "cubec_kernel_get_info_field(%u of %u)", index, ki.info_field_count);
    if (index == ki.info_field_count) {
        expect(f, cubec_kernel_get_info_field(f->d, k, index, &field), refused(f),
               "cubec_kernel_get_info_field past the count");
        return;
    }
    if (expect(f, cubec_kernel_get_info_field(f->d, k, index, &field), allow(f, C_NONE),
               "cubec_kernel_get_info_field"))
        return;
    if (!expect(f, cubec_kernel_find_info_field(f->d, k, field.name, &by_name), allow(f, C_NONE),
                "cubec_kernel_find_info_field") &&
        (by_name.offset != field.offset || by_name.size != field.size))
        die(f, "field '%s' is at %u by index but at %u by name", field.name, field.offset,
            by_name.offset);
}

static void op_kernel(fuzz *f)
{
    if (f->nkernels < MAX_KERNELS && chance(f, 2)) {
        int kind = (int)rnd(f, 3);
        char value[16], name[32];
        snprintf(value, sizeof value, "%u", ++f->kernel_variants);
        snprintf(name, sizeof name, "variant%u", f->kernel_variants);
        cubec_define def = {"FUZZ_VARIANT", value};
        cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc),
                                .name = name,
                                .glsl = kernel_source(kind),
                                .defines = &def,
                                .define_count = 1};
        cubec_kernel k = {0x77};
        note(f, "cubec_kernel_create(%s, kind %d)", name, kind);
        if (!expect(f, cubec_kernel_create(f->d, &kd, &k), allow(f, C_COMPILES),
                    "cubec_kernel_create"))
            f->kernels[f->nkernels++] = (m_kernel){k, kind, 0};
        else if (k.id)
            die(f, "a failed cubec_kernel_create left its out_kernel set");
        return;
    }
    int i = pick_kernel(f);
    if (chance(f, 4)) {
        cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
        note(f, "cubec_kernel_get_info(kernel %d)", i);
        if (!expect(f, cubec_kernel_get_info(f->d, f->kernels[i].h, &ki), allow(f, C_NONE),
                    "cubec_kernel_get_info") &&
            ki.binding_count != (f->kernels[i].kind == K_CONSUME ? 2u : 1u))
            die(f, "kernel %d has %u bindings", i, ki.binding_count);
        if (chance(f, 2)) model_info_field(f, f->kernels[i].h);
        return;
    }
    if (f->kernels[i].base) return;
    note(f, "cubec_kernel_destroy(kernel %d)", i);
    expect(f, cubec_kernel_destroy(f->d, f->kernels[i].h), allow(f, C_NONE),
           "cubec_kernel_destroy");
    f->dead_kernels[f->dead_kernel_count++ % DEAD] = f->kernels[i].h;
    f->kernels[i] = f->kernels[--f->nkernels];
    if (chance(f, 2)) {
        uint32_t dead = f->dead_kernel_count < DEAD ? f->dead_kernel_count : DEAD;
        cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
        note(f, "cubec_kernel_get_info(destroyed kernel)");
        expect(f, cubec_kernel_get_info(f->d, f->dead_kernels[rnd(f, dead)], &ki), refused(f),
               "cubec_kernel_get_info of a destroyed kernel");
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Streams, flushes, syncs, checks. */

/* Streams fold onto max_streams slots (cubec.h "Streams"): streams of one slot share the profiles
 * a capture makes invalid (the capture window itself is its stream's). */
static void add_stream(fuzz *f, cubec_stream s)
{
    f->slots[f->nstreams] = (s & 0xffffffffffffull) % f->max_streams;
    f->streams[f->nstreams++] = s;
}

/* The model's index of `s`'s slot: the first stream of the run on it. */
static int slot_of(const fuzz *f, int s)
{
    for (int i = 0; i < f->nstreams; i++)
        if (f->slots[i] == f->slots[s]) return i;
    return s;
}

static void op_stream(fuzz *f)
{
    if (chance(f, 5)) {
        note(f, "cubec_stream_new(NULL)");
        expect(f, cubec_stream_new(f->d, NULL), refused(f), "cubec_stream_new(NULL)");
        return;
    }
    if (f->nstreams >= MAX_STREAMS) return;
    cubec_stream s = 0;
    note(f, "cubec_stream_new -> stream[%d]", f->nstreams);
    if (!expect(f, cubec_stream_new(f->d, &s), allow(f, C_NONE), "cubec_stream_new"))
        add_stream(f, s);
}

static void op_flush_sync(fuzz *f)
{
    int s = pick_stream(f);
    switch (rnd(f, 8)) {
    case 0: {
        cubec_stream bogus = 0x0bad000000000000ull | rnd(f, 1000);
        note(f, "cubec_sync(made-up stream)");
        expect(f, cubec_sync(f->d, bogus), refused(f), "cubec_sync of a made-up stream");
        return;
    }
    case 1:
    case 2:
    case 3:
        note(f, "cubec_flush(stream[%d])", s);
        expect(f, cubec_flush(f->d, stream_of(f, s)), allow(f, C_SUBMITS), "cubec_flush");
        return;
    default: do_sync(f, s);
    }
}

/* Whether cubec_check of the bytes [off, off + len) of `a` may report a failure: when one of
 * them is suspect (an empty range has none). */
static int check_may_fail(const m_alloc *a, uint64_t off, uint64_t len)
{
    return len && range_has(a, off, len, SUSPECT);
}

static void op_check(fuzz *f)
{
    cubec_buffer hs[3];
    int idx[3], n = 1 + (int)rnd(f, 3);
    uint32_t fail = 0;
    for (int j = 0; j < n; j++) {
        idx[j] = pick_buf(f, 0);
        if (idx[j] < 0) return;
        m_buf *b = &f->bufs[idx[j]];
        hs[j] = b->h;
        if (check_may_fail(b->a, b->off, b->size)) fail = FAILURE_CODES;
    }
    char list[256] = "";
    for (int j = 0; j < n; j++) {
        const m_buf *b = &f->bufs[idx[j]];
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len,
                 "%sbuf %d [alloc #%" PRIu64 " +%" PRIu64 ", %" PRIu64 " bytes%s]", j ? ", " : "",
                 idx[j], b->a->number, b->off, b->size,
                 range_has(b->a, b->off, b->size, SUSPECT) ? ", suspect" : "");
    }
    if (chance(f, 10)) {
        note(f, "cubec_check(NULL, %d)", n);
        expect(f, cubec_check(f->d, NULL, (uint32_t)n), refused(f), "cubec_check(NULL)");
        return;
    }
    if (chance(f, 2)) {
        note(f, "cubec_check(%s)", list);
        expect(f, cubec_check(f->d, hs, (uint32_t)n), allow(f, C_SUBMITS) | fail, "cubec_check");
        return;
    }
    int s = pick_stream(f);
    note(f, "cubec_sync_check(stream[%d], %s)", s, list);
    if (!expect(f, cubec_sync_check(f->d, stream_of(f, s), hs, (uint32_t)n),
                allow(f, C_SUBMITS) | fail, "cubec_sync_check"))
        for (int i = 0; i < f->nallocs; i++) {
            f->allocs[i]->readers &= ~bit(s);
            f->allocs[i]->writers &= ~bit(s);
        }
}

/* ------------------------------------------------------------------------------------------ */
/* Profiles. */

static void drop_profile(fuzz *f, int i)
{
    f->dead_profiles[f->dead_profile_count++ % DEAD] = f->profiles[i].p;
    f->profiles[i] = f->profiles[--f->nprofiles];
}

static void op_profile(fuzz *f)
{
    uint32_t dead = f->dead_profile_count < DEAD ? f->dead_profile_count : DEAD;
    if (dead && chance(f, 8)) {
        cubec_profile stale = f->dead_profiles[rnd(f, dead)];
        cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
        note(f, "cubec_profile_end(stale profile)");
        expect(f, cubec_profile_end(f->d, stream_of(f, 0), stale, &r), refused(f),
               "cubec_profile_end of a consumed profile");
        return;
    }
    if (f->nprofiles < MAX_PROFILES && (f->nprofiles == 0 || chance(f, 2))) {
        int s = pick_stream(f);
        cubec_profile p = {0x77};
        uint64_t t_begin = now_ns();
        note(f, "cubec_profile_begin(stream[%d])", s);
        if (expect(f, cubec_profile_begin(f->d, stream_of(f, s), &p), allow(f, C_SUBMITS),
                   "cubec_profile_begin")) {
            if (p.id) die(f, "a failed cubec_profile_begin left its out_profile set");
            return;
        }
        f->profiles[f->nprofiles++] = (m_profile){p, s, f->pending != NO_FAULT, 0, t_begin};
        return;
    }
    if (!f->nprofiles) return;
    int i = (int)rnd(f, (uint32_t)f->nprofiles);
    m_profile *p = &f->profiles[i];
    uint32_t stale = p->maybe_consumed ? M(CUBEC_INVALID_ARGUMENT) : 0;
    if (chance(f, 4)) {
        note(f, "cubec_profile_abandon(profile on stream[%d])", p->stream);
        expect(f, cubec_profile_abandon(f->d, stream_of(f, p->stream), p->p),
               allow(f, C_NONE) | stale, "cubec_profile_abandon");
        drop_profile(f, i);
        return;
    }
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    if (f->nstreams > 1 && chance(f, 8)) {
        int other = (p->stream + 1 + (int)rnd(f, (uint32_t)f->nstreams - 1)) % f->nstreams;
        note(f, "cubec_profile_end(profile on stream[%d]) from stream[%d]", p->stream, other);
        expect(f, cubec_profile_end(f->d, stream_of(f, other), p->p, &r), refused(f),
               "cubec_profile_end on another stream");
        p->maybe_consumed = 1; /* whether a refusal consumes the token is not documented */
        return;
    }
    uint32_t ok = allow(f, C_SUBMITS) | stale;
    if (p->poisoned) ok |= M(CUBEC_PROFILE_INVALID);
    if (submit_pending(f)) ok |= M(CUBEC_PROFILE_INVALID);
    int s = p->stream;
    note(f, "cubec_profile_end(profile on stream[%d])%s", s,
         p->poisoned ? " (may be invalid)" : "");
    memset(&r, 0x5a, sizeof r);
    r.struct_size = sizeof r;
    uint64_t t_begin = p->t_begin;
    cubec_code c =
        expect(f, cubec_profile_end(f->d, stream_of(f, s), p->p, &r), ok, "cubec_profile_end");
    uint64_t t_end = now_ns();
    drop_profile(f, i);
    /* The null backend's clock is the host's: the interval lies between the two calls. */
    if (c == CUBEC_OK && !f->kernels_run && (r.begin_ns < t_begin || r.end_ns > t_end))
        die(f,
            "a profile measured [%" PRIu64 ", %" PRIu64 "], outside its calls [%" PRIu64
            ", %" PRIu64 "]",
            r.begin_ns, r.end_ns, t_begin, t_end);
    if (c == CUBEC_OK) {
        if (r.method != f->timing || r.end_ns < r.begin_ns ||
            r.duration_ns != r.end_ns - r.begin_ns)
            die(f,
                "cubec_profile_end returned method %d, begin %" PRIu64 ", end %" PRIu64
                ", duration %" PRIu64,
                (int)r.method, r.begin_ns, r.end_ns, r.duration_ns);
        for (int a = 0; a < f->nallocs; a++) {
            f->allocs[a]->readers &= ~bit(s);
            f->allocs[a]->writers &= ~bit(s);
        }
    } else if (r.duration_ns || r.begin_ns || r.end_ns) {
        die(f, "a failed cubec_profile_end did not zero its result");
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Graphs. */

/* The calls a capture window refuses, tried on the capturing stream `s`. */
static void refused_in_window(fuzz *f, int s)
{
    uint8_t byte;
    cubec_profile p;
    cubec_event *e;
    switch (rnd(f, 8)) {
    case 0: {
        int i = pick_buf(f, 1);
        if (i < 0) return;
        note(f, "  in the window: cubec_read(stream[%d])", s);
        expect(f, cubec_read(f->d, stream_of(f, s), f->bufs[i].h, 0, &byte, 1), graph_refused(f),
               "cubec_read in a capture window");
        return;
    }
    case 1:
        note(f, "  in the window: cubec_sync(stream[%d])", s);
        expect(f, cubec_sync(f->d, stream_of(f, s)), graph_refused(f),
               "cubec_sync in a capture window");
        return;
    case 2:
        note(f, "  in the window: cubec_profile_begin(stream[%d])", s);
        expect(f, cubec_profile_begin(f->d, stream_of(f, s), &p), graph_refused(f),
               "cubec_profile_begin in a capture window");
        return;
    case 3:
        if (!f->ngraphs) return;
        note(f, "  in the window: cubec_graph_replay(stream[%d])", s);
        expect(f, cubec_graph_replay(f->d, stream_of(f, s), f->graphs[rnd(f, f->ngraphs)].g),
               graph_refused(f), "cubec_graph_replay in a capture window");
        return;
    case 4:
        note(f, "  in the window: cubec_memory_cleanup(stream[0])");
        expect(f, cubec_memory_cleanup(f->d, stream_of(f, 0)), graph_refused(f),
               "cubec_memory_cleanup in a capture window");
        return;
    case 5: {
        int i = pick_buf(f, 1);
        if (i < 0) return;
        note(f, "  in the window: cubec_read_async(stream[%d])", s);
        expect(f, cubec_read_async(f->d, stream_of(f, s), f->bufs[i].h, 0, &byte, 1, &e),
               graph_refused(f), "cubec_read_async in a capture window");
        return;
    }
    case 6:
        note(f, "  in the window: cubec_graph_prepare(stream[%d])", s);
        expect(f, cubec_graph_prepare(f->d, stream_of(f, s)), graph_refused(f),
               "cubec_graph_prepare in a capture window");
        return;
    default:
        note(f, "  in the window: cubec_graph_begin(stream[%d])", s);
        expect(f, cubec_graph_begin(f->d, stream_of(f, s)), graph_refused(f),
               "cubec_graph_begin in a capture window");
    }
}

/* prepare, a warm-up of 1..4 launches and fills, begin, refused calls, the same launches
 * recorded, end. */
static void op_capture(fuzz *f)
{
    int s = pick_stream(f);
    if (chance(f, 6)) {
        /* Wrong transitions change nothing (the second drops the preparation). */
        if (chance(f, 2)) {
            note(f, "cubec_graph_begin(stream[%d]) without prepare", s);
            expect(f, cubec_graph_begin(f->d, stream_of(f, s)), graph_refused(f),
                   "cubec_graph_begin without prepare");
        } else {
            cubec_graph g = {0x77};
            note(f, "cubec_graph_end(stream[%d]) without a capture", s);
            expect(f, cubec_graph_end(f->d, stream_of(f, s), &g), graph_refused(f),
                   "cubec_graph_end without a capture");
            if (g.id) die(f, "a failed cubec_graph_end left its out_graph set");
        }
        return;
    }
    if (f->ngraphs >= MAX_GRAPHS) return;
    m_graph gr = {{0}};
    gr.count = 1 + (int)rnd(f, MAX_GRAPH_OPS);
    for (int i = 0; i < gr.count; i++)
        if (!make_op(f, &gr.ops[i], 1)) return;
    for (int i = 0; i < gr.count; i++)
        if (!before_op(f, &gr.ops[i], s)) return;
    note(f, "cubec_graph_prepare(stream[%d])", s);
    if (expect(f, cubec_graph_prepare(f->d, stream_of(f, s)), allow(f, C_SUBMITS),
               "cubec_graph_prepare"))
        return;
    if (chance(f, 10)) {
        cubec_graph g = {0x77};
        note(f, "cubec_graph_end(stream[%d]) after prepare without begin", s);
        expect(f, cubec_graph_end(f->d, stream_of(f, s), &g), graph_refused(f),
               "cubec_graph_end after a prepare that never began");
        return;
    }
    /* The warm-up runs for real. */
    int doomed = 0;
    for (int i = 0; i < gr.count; i++) {
        int pending = submit_pending(f);
        char desc[400];
        describe_op(&gr.ops[i], desc, sizeof desc);
        note(f, "  warm-up %s", desc);
        cubec_code c = expect(f, issue(f, s, &gr.ops[i]), allow(f, C_SUBMITS | C_COMPILES),
                              "a warm-up launch");
        note_use(&gr.ops[i], s);
        if (c) {
            poison_profiles(f);
            mark_outputs(&gr.ops[i], SUSPECT);
            doomed = 1;
        } else {
            model_op(f, &gr.ops[i], pending);
        }
    }
    if (f->lost) return;
    int pending = f->pending != NO_FAULT;
    note(f, "cubec_graph_begin(stream[%d])", s);
    cubec_code c = expect(f, cubec_graph_begin(f->d, stream_of(f, s)),
                          allow(f, C_SUBMITS) | (doomed ? FAILURE_CODES : 0), "cubec_graph_begin");
    if (c) return; /* the preparation is dropped */
    /* A profile open on the slot when the capture begins is invalid. */
    for (int i = 0; i < f->nprofiles; i++)
        if (f->slots[f->profiles[i].stream] == f->slots[s]) f->profiles[i].poisoned = 1;
    for (int r = (int)rnd(f, 3); r > 0; r--)
        refused_in_window(f, s);
    for (int i = 0; i < gr.count; i++) {
        if (op_reads_suspect(&gr.ops[i])) doomed = 1;
        char desc[400];
        describe_op(&gr.ops[i], desc, sizeof desc);
        note(f, "  recorded %s", desc);
        /* C_CREATES: a launch whose metadata goes in memory allocates the graph's metadata
         * chunk (server/graph.c), mapped: seen on the H200, where metadata is not pushed. */
        if (expect(f, issue(f, s, &gr.ops[i]),
                   allow(f, C_COMPILES | C_CREATES) | M(CUBEC_GRAPH_STATE), "a recorded launch"))
            doomed = 1;
    }
    cubec_graph g = {0x77};
    note(f, "cubec_graph_end(stream[%d])%s", s, doomed || pending ? " (may be doomed)" : "");
    c = expect(f, cubec_graph_end(f->d, stream_of(f, s), &g),
               allow(f, C_SUBMITS) | (doomed || pending ? M(CUBEC_GRAPH_STATE) : 0),
               "cubec_graph_end");
    if (c) {
        if (g.id) die(f, "a failed cubec_graph_end left its out_graph set");
        /* What the recorded launches would have written carries the failure. */
        for (int i = 0; i < gr.count; i++)
            mark_outputs(&gr.ops[i], SUSPECT);
        poison_profiles(f);
        return;
    }
    if (!g.id) die(f, "cubec_graph_end succeeded with a zero graph");
    gr.g = g;
    for (int i = 0; i < gr.count; i++) {
        gr.ops[i].a0->refs++;
        if (gr.ops[i].kind == K_CONSUME) gr.ops[i].a1->refs++;
        if (gr.ops[i].indirect) gr.ops[i].ia->refs++;
    }
    f->graphs[f->ngraphs++] = gr;
    f->captures++;
}

static void op_replay(fuzz *f)
{
    int s = pick_stream(f);
    uint32_t dead = f->dead_graph_count < DEAD ? f->dead_graph_count : DEAD;
    if (!f->ngraphs || chance(f, 10)) {
        cubec_graph g = dead && chance(f, 2) ? f->dead_graphs[rnd(f, dead)]
                                             : (cubec_graph){chance(f, 2) ? 0 : rnd64(f)};
        note(f, "cubec_graph_replay(stream[%d], dead or made-up graph 0x%" PRIx64 ")", s, g.id);
        expect(f, cubec_graph_replay(f->d, stream_of(f, s), g), graph_refused(f),
               "cubec_graph_replay of a dead graph");
        if (chance(f, 2)) {
            /* A dead graph of the device is accepted; a made-up value whose tag is not the
             * device's is refused. */
            note(f, "cubec_graph_destroy(dead or made-up graph)");
            expect(f, cubec_graph_destroy(f->d, stream_of(f, s), g),
                   allow(f, C_NONE) | graph_refused(f), "cubec_graph_destroy of a dead graph");
        }
        return;
    }
    m_graph *gr = &f->graphs[rnd(f, f->ngraphs)];
    for (int i = 0; i < gr->count; i++)
        if (!before_op(f, &gr->ops[i], s)) return;
    int pending = submit_pending(f);
    int skipped = 0;
    for (int i = 0; i < gr->count; i++)
        if (op_reads_suspect(&gr->ops[i])) skipped = 1;
    note(f, "cubec_graph_replay(stream[%d], graph 0x%" PRIx64 " of %d ops)%s", s, gr->g.id,
         gr->count, skipped ? " (inputs suspect)" : "");
    cubec_code c = expect(f, cubec_graph_replay(f->d, stream_of(f, s), gr->g), allow(f, C_SUBMITS),
                          "cubec_graph_replay");
    f->replays++;
    for (int i = 0; i < gr->count; i++)
        note_use(&gr->ops[i], s);
    if (c || pending || skipped) {
        poison_profiles(f);
        for (int i = 0; i < gr->count; i++)
            mark_outputs(&gr->ops[i], SUSPECT);
        return;
    }
    for (int i = 0; i < gr->count; i++)
        model_op(f, &gr->ops[i], 0);
}

static void graph_free_model(fuzz *f, m_graph *gr)
{
    for (int i = 0; i < gr->count; i++) {
        alloc_unref(f, gr->ops[i].a0);
        if (gr->ops[i].kind == K_CONSUME) alloc_unref(f, gr->ops[i].a1);
        if (gr->ops[i].indirect) alloc_unref(f, gr->ops[i].ia);
    }
}

static void op_graph_destroy(fuzz *f)
{
    if (!f->ngraphs) return;
    int i = (int)rnd(f, f->ngraphs);
    int s = pick_stream(f);
    note(f, "cubec_graph_destroy(stream[%d], graph 0x%" PRIx64 ")", s, f->graphs[i].g.id);
    expect(f, cubec_graph_destroy(f->d, stream_of(f, s), f->graphs[i].g), allow(f, C_SUBMITS),
           "cubec_graph_destroy");
    f->dead_graphs[f->dead_graph_count++ % DEAD] = f->graphs[i].g;
    graph_free_model(f, &f->graphs[i]);
    f->graphs[i] = f->graphs[--f->ngraphs];
}

/* ------------------------------------------------------------------------------------------ */
/* Memory reports, faults. */

static void op_memory(fuzz *f)
{
    int s = pick_stream(f);
    switch (rnd(f, 6)) {
    case 0: {
        char *json = (char *)&json;
        note(f, "cubec_memory_report_json");
        if (!expect(f, cubec_memory_report_json(f->d, &json), allow(f, C_NONE),
                    "cubec_memory_report_json") &&
            (!json || json[0] != '{'))
            die(f, "cubec_memory_report_json returned no JSON object");
        cubec_string_free(json);
        return;
    }
    case 1: {
        char *text = NULL;
        note(f, "cubec_memory_report_table");
        if (!expect(f, cubec_memory_report_table(f->d, &text), allow(f, C_NONE),
                    "cubec_memory_report_table") &&
            !text)
            die(f, "cubec_memory_report_table returned NULL");
        cubec_string_free(text);
        return;
    }
    case 2:
        note(f, "cubec_memory_report_get(stream[%d], NULL)", s);
        expect(f, cubec_memory_report_get(f->d, stream_of(f, s), NULL), refused(f),
               "cubec_memory_report_get(NULL)");
        return;
    case 3:
        note(f, "cubec_memory_cleanup(stream[%d])", s);
        expect(f, cubec_memory_cleanup(f->d, stream_of(f, s)), allow(f, C_SUBMITS),
               "cubec_memory_cleanup");
        return;
    default: {
        static cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
        /* Quiesced (every stream synced): what no handle, guard, graph or event holds has gone
         * back, so the bytes in use lie between what live handles and guards hold and what the
         * model holds at all. */
        int quiesced = !f->lost && chance(f, 3);
        for (int i = 0; quiesced && i < f->nstreams && !f->lost; i++)
            do_sync(f, i);
        if (f->lost) return;
        note(f, "cubec_memory_report_get(stream[%d])%s", s, quiesced ? " (quiesced)" : "");
        if (expect(f, cubec_memory_report_get(f->d, stream_of(f, s), &r), allow(f, C_NONE),
                   "cubec_memory_report_get"))
            return;
        /* The allocations created on the stream that a live buffer or view holds are in its
         * pools (what only graphs hold may be less: a launch of zero groups binds nothing). */
        uint64_t live = 0;
        for (int i = 0; i < f->nallocs; i++) {
            int held = 0;
            for (int b = 0; b < f->nbufs; b++)
                held |= f->bufs[b].a == f->allocs[i];
            if (held && f->allocs[i]->owner == s) live += f->allocs[i]->size;
        }
        int w = slot_of(f, s);
        cubec_memory_mode top =
            f->win_depth[w] ? (cubec_memory_mode)f->win_modes[w][f->win_depth[w] - 1] : 0;
        if (r.window_depth != f->win_depth[w] || r.window_mode != top)
            die(f,
                "the memory report of stream[%d] shows window mode %d depth %u; the model: %d %u",
                s, (int)r.window_mode, r.window_depth, (int)top, f->win_depth[w]);
        uint64_t modelled = 0;
        for (int i = 0; i < f->nallocs; i++)
            if (f->slots[f->allocs[i]->owner] == f->slots[s]) modelled += f->allocs[i]->size;
        if (quiesced && r.bytes_in_use > modelled)
            die(f,
                "stream[%d]'s slot has %" PRIu64 " bytes in use with every stream synced; the "
                "model holds %" PRIu64 " bytes created on it",
                s, r.bytes_in_use, modelled);
        if (r.bytes_in_use < live || r.pool_count > CUBEC_MAX_POOLS) {
            for (int i = 0; i < f->nallocs; i++) {
                const m_alloc *a = f->allocs[i];
                if (a->owner != s) continue;
                int root = 0, views = 0;
                for (int b = 0; b < f->nbufs; b++)
                    if (f->bufs[b].a == a) f->bufs[b].view ? views++ : root++;
                printf("    alloc #%" PRIu64 ": %" PRIu64 " bytes, %d refs: root handle %d, %d "
                       "views, the rest graphs\n",
                       a->number, a->size, a->refs, root, views);
            }
            die(f,
                "the memory report of stream[%d] has %" PRIu64 " bytes in use, %u pools; the "
                "model holds %" PRIu64 " live bytes created on it",
                s, r.bytes_in_use, r.pool_count, live);
        }
    }
    }
}

static void op_fault(fuzz *f)
{
    if (chance(f, 8)) {
        note(f, "cubec_fault_inject(kind %d)", CUBEC_FAULT_KIND_COUNT);
        expect(f, cubec_fault_inject(f->d, CUBEC_FAULT_KIND_COUNT, 1), refused(f),
               "cubec_fault_inject of a bad kind");
        return;
    }
    if (f->pending != NO_FAULT) return;
    /* Wait faults: op_lose_device (a wait is counted only when the GPU is busy, so elsewhere
     * which call it fails would depend on timing, and a run could not be replayed). */
    static const int kinds[] = {CUBEC_FAULT_SUBMIT,  CUBEC_FAULT_SUBMIT,  CUBEC_FAULT_SUBMIT,
                                CUBEC_FAULT_SUBMIT,  CUBEC_FAULT_PAGE,    CUBEC_FAULT_MAP,
                                CUBEC_FAULT_COMPILE, CUBEC_FAULT_PIPELINE};
    int kind = kinds[rnd(f, sizeof kinds / sizeof kinds[0])];
    uint64_t n = 1 + rnd(f, 3);
    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    note(f, "cubec_fault_get_counts");
    if (expect(f, cubec_fault_get_counts(f->d, counts), allow(f, C_NONE), "cubec_fault_get_counts"))
        return;
    note(f, "cubec_fault_inject(kind %d, %" PRIu64 ") -> call #%" PRIu64, kind, n,
         counts[kind] + n);
    if (expect(f, cubec_fault_inject(f->d, (cubec_fault_kind)kind, n), allow(f, C_NONE),
               "cubec_fault_inject"))
        return;
    f->pending = kind;
    f->pending_target = counts[kind] + n;
    f->pending_age = 0;
    f->faults_armed++;
    /* What is queued now may be lost: nothing written so far is certain any more. */
    mark_all(f, SUSPECT);
    events_may_fail(f);
    poison_profiles(f);
}

/* After each step: has the armed fault fired? Disarmed if it did not within a while. */
static void after_step(fuzz *f)
{
    if (atomic_load(&validation_messages))
        die(f, "the validation layer reported %u message(s)", atomic_load(&validation_messages));
    if (f->lost || f->pending == NO_FAULT) return;
    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    if (expect(f, cubec_fault_get_counts(f->d, counts), allow(f, C_NONE), "cubec_fault_get_counts"))
        return;
    if (counts[f->pending] >= f->pending_target) {
        note(f, "(the fault fired)");
        f->faults_fired++;
        f->pending = NO_FAULT;
    } else if (++f->pending_age > 50) {
        note(f, "cubec_fault_inject(kind %d, 0): disarmed", f->pending);
        if (!expect(f, cubec_fault_inject(f->d, (cubec_fault_kind)f->pending, 0), allow(f, C_NONE),
                    "cubec_fault_inject(0)"))
            f->pending = NO_FAULT;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The device's description, names and Vulkan objects. */

/* The names of 0.1 (cubec.h, "Names of 0.1"): each answers as its new name does. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void op_old_names(fuzz *f)
{
    note(f, "the names of 0.1: cubec_device_count, cubec_profile_method, cubec_fault_counts, "
            "cubec_stream_current, cubec_device_vulkan_handles, cubec_buffer_size, "
            "cubec_memory_mode_push/get/pop");
    uint32_t count = 0, count_now = 1;
    if (!expect(f, cubec_device_count(&count), M(CUBEC_OK), "cubec_device_count") &&
        !expect(f, cubec_device_get_count(&count_now), M(CUBEC_OK), "cubec_device_get_count") &&
        count != count_now)
        die(f, "cubec_device_count says %u, cubec_device_get_count %u", count, count_now);
    cubec_timing t = 0;
    if (!expect(f, cubec_profile_method(f->d, &t), allow(f, C_NONE), "cubec_profile_method") &&
        t != f->timing)
        die(f, "cubec_profile_method says %d, not %d", (int)t, (int)f->timing);
    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    expect(f, cubec_fault_counts(f->d, counts), allow(f, C_NONE), "cubec_fault_counts");
    cubec_stream cur = 0;
    expect(f, cubec_stream_current(f->d, &cur), allow(f, C_NONE), "cubec_stream_current");
    cubec_vulkan_handles h = CUBEC_VULKAN_HANDLES_INIT;
    expect(f, cubec_device_vulkan_handles(f->d, &h),
           f->vulkan_objects ? allow(f, C_NONE) : M(CUBEC_UNSUPPORTED),
           "cubec_device_vulkan_handles");
    if (f->nbufs) {
        uint64_t size = 12345;
        if (!expect(f, cubec_buffer_size(f->d, f->bufs[0].h, &size), allow(f, C_NONE),
                    "cubec_buffer_size") &&
            size != f->bufs[0].size)
            die(f, "cubec_buffer_size is %" PRIu64 ", the model says %" PRIu64, size,
                f->bufs[0].size);
    }
    /* An Auto window opened and closed by the old names: one deeper in between, as before after. */
    cubec_memory_mode mode = CUBEC_MEMORY_MODE_AUTO;
    uint32_t depth = 0, inside = 0;
    if (expect(f, cubec_memory_mode_get(f->d, 0, &mode, &depth), allow(f, C_NONE),
               "cubec_memory_mode_get") ||
        depth >= 64)
        return;
    if (expect(f, cubec_memory_mode_push(f->d, 0, CUBEC_MEMORY_MODE_AUTO), allow(f, C_NONE),
               "cubec_memory_mode_push"))
        return;
    if (!expect(f, cubec_memory_mode_get(f->d, 0, &mode, &inside), allow(f, C_NONE),
                "cubec_memory_mode_get") &&
        (inside != depth + 1 || mode != CUBEC_MEMORY_MODE_AUTO))
        die(f, "inside cubec_memory_mode_push: depth %u mode %d, expected %u AUTO", inside,
            (int)mode, depth + 1);
    expect(f, cubec_memory_mode_pop(f->d, 0), allow(f, C_NONE), "cubec_memory_mode_pop");
}
#pragma GCC diagnostic pop

static void op_info(fuzz *f)
{
    switch (rnd(f, 7)) {
    case 6: {
        /* The path of the device to itself (nothing queued: get_path never measures). */
        cubec_path_info pi = CUBEC_PATH_INFO_INIT;
        note(f, "cubec_device_get_path, cubec_path_name, cubec_link_class_name");
        if (!expect(f, cubec_device_get_path(f->d, f->d, &pi), allow(f, C_NONE) | M(CUBEC_OK),
                    "cubec_device_get_path") &&
            (pi.path != CUBEC_PATH_SAME_DEVICE || pi.link != CUBEC_LINK_SAME_DEVICE))
            die(f, "cubec_device_get_path of one device: path %s, link %s",
                cubec_path_name(pi.path), cubec_link_class_name(pi.link));
        if (strcmp(cubec_path_name(CUBEC_PATH_HOST_STAGED), "host-staged") ||
            strcmp(cubec_link_class_name(CUBEC_LINK_PCIE), "pcie"))
            die(f, "cubec_path_name or cubec_link_class_name changed");
        expect(f, cubec_device_get_path(f->d, f->d, NULL), refused(f),
               "cubec_device_get_path(NULL)");
        /* A real measurement queues work the model does not hold: only its refusals here. */
        note(f, "cubec_device_measure_path(bytes 6)");
        expect(f, cubec_device_measure_path(f->d, f->d, 6, &pi), refused(f),
               "cubec_device_measure_path of an unaligned size");
        return;
    }
    case 0: {
        uint32_t count = 77;
        cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
        note(f, "cubec_device_get_count, cubec_device_peek");
        if (expect(f, cubec_device_get_count(&count), M(CUBEC_OK), "cubec_device_get_count"))
            return;
        if (count == 0 || count == 77) die(f, "cubec_device_get_count says %u devices", count);
        expect(f, cubec_device_peek(0, &info), M(CUBEC_OK), "cubec_device_peek(0)");
        expect(f, cubec_device_peek(count, &info), refused(f) | M(CUBEC_NOT_FOUND),
               "cubec_device_peek past the count");
        expect(f, cubec_device_peek(0, NULL), refused(f), "cubec_device_peek(NULL)");
        expect(f, cubec_device_get_count(NULL), refused(f), "cubec_device_get_count(NULL)");
        return;
    }
    case 1: {
        cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
        note(f, "cubec_device_get_info");
        if (!expect(f, cubec_device_get_info(f->d, &info), allow(f, C_NONE) | M(CUBEC_OK),
                    "cubec_device_get_info") &&
            (info.storage_offset_alignment != f->info.storage_offset_alignment ||
             info.tasks_max != f->info.tasks_max || info.capabilities != f->info.capabilities ||
             strcmp(info.backend, f->info.backend)))
            die(f, "cubec_device_get_info changed between two calls");
        /* A struct_size of 0 (the INIT macro forgotten) is refused and nothing is written. */
        cubec_device_info unsized = CUBEC_DEVICE_INFO_INIT;
        memset(&unsized, 0x5a, sizeof unsized);
        unsized.struct_size = 0;
        expect(f, cubec_device_get_info(f->d, &unsized), refused(f),
               "cubec_device_get_info with struct_size 0");
        if (unsized.vendor_id != 0x5a5a5a5au)
            die(f, "a refused cubec_device_get_info wrote into its out-parameter");
        if (cubec_version() != CUBEC_VERSION)
            die(f, "cubec_version() is 0x%x, the header's CUBEC_VERSION 0x%x", cubec_version(),
                (unsigned)CUBEC_VERSION);
        if (chance(f, 4)) op_old_names(f);
        cubec_timing t = 0;
        if (!expect(f, cubec_profile_get_method(f->d, &t), allow(f, C_NONE),
                    "cubec_profile_get_method") &&
            t != f->timing)
            die(f, "cubec_profile_get_method changed from %d to %d", (int)f->timing, (int)t);
        return;
    }
    case 2: {
        cubec_vulkan_handles h = CUBEC_VULKAN_HANDLES_INIT;
        memset(&h, 0x5a, sizeof h);
        h.struct_size = sizeof h;
        note(f, "cubec_device_get_vulkan_handles");
        cubec_code c = expect(f, cubec_device_get_vulkan_handles(f->d, &h),
                              f->vulkan_objects ? allow(f, C_NONE) : M(CUBEC_UNSUPPORTED),
                              "cubec_device_get_vulkan_handles");
        if (c == CUBEC_OK && (!h.instance || !h.physical_device || !h.device))
            die(f, "cubec_device_get_vulkan_handles returned a zero handle");
        if (c != CUBEC_OK && (h.instance || h.device))
            die(f, "a failed cubec_device_get_vulkan_handles did not clear its out-parameter");
        return;
    }
    case 3: {
        /* Every name of a list the header generates, and the name of a value outside it. */
        static const char *const kinds[] = {"page", "compile", "pipeline", "submit",
                                            "map",  "wait",    "encode"};
        note(f, "cubec_fault_kind_name, cubec_feature_name, cubec_matrix_type_name, "
                "cubec_capability_name");
        for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++)
            if (strcmp(cubec_fault_kind_name((cubec_fault_kind)k), kinds[k]))
                die(f, "cubec_fault_kind_name(%d) is %s", k,
                    cubec_fault_kind_name((cubec_fault_kind)k));
        if (strcmp(cubec_fault_kind_name(CUBEC_FAULT_KIND_COUNT), "unknown"))
            die(f, "cubec_fault_kind_name of no kind is not \"unknown\"");
        for (int b = 0; b <= 28; b++)
            if (!strcmp(cubec_feature_name((cubec_feature)(1u << b)), "unknown"))
                die(f, "cubec_feature_name(1 << %d) is \"unknown\"", b);
        if (strcmp(cubec_feature_name((cubec_feature)3), "unknown"))
            die(f, "cubec_feature_name of two bits is not \"unknown\"");
        for (int m = 1; m <= CUBEC_MATRIX_UINT64; m++)
            if (!strcmp(cubec_matrix_type_name((cubec_matrix_type)m), "other"))
                die(f, "cubec_matrix_type_name(%d) is \"other\"", m);
        if (strcmp(cubec_matrix_type_name((cubec_matrix_type)99), "other"))
            die(f, "cubec_matrix_type_name(99) is not \"other\"");
        for (int b = 0; b <= 9; b++)
            if (!strcmp(cubec_capability_name(1u << b), "unknown"))
                die(f, "cubec_capability_name(1 << %d) is \"unknown\"", b);
        if (strcmp(cubec_capability_name(3u), "unknown") ||
            strcmp(cubec_capability_name(0), "unknown"))
            die(f, "cubec_capability_name of two bits or none is not \"unknown\"");
        return;
    }
    case 4:
        note(f, "cubec_status_code/message/free(NULL), cubec_code_name, cubec_status_new");
        if (cubec_status_code(NULL) != CUBEC_OK || strcmp(cubec_status_message(NULL), "ok"))
            die(f, "a NULL status is not CUBEC_OK \"ok\"");
        cubec_status_free(NULL);
        if (strcmp(cubec_code_name(CUBEC_TIMEOUT), "CUBEC_TIMEOUT") ||
            strcmp(cubec_code_name((cubec_code)99), "CUBEC_UNKNOWN_CODE"))
            die(f, "cubec_code_name names a code wrongly");
        {
            /* A status of the program's own: its code and message; OK is success (NULL). */
            cubec_status own = cubec_status_new(CUBEC_UNSUPPORTED, "model %s %d", "step", 7);
            if (cubec_status_code(own) != CUBEC_UNSUPPORTED ||
                strcmp(cubec_status_message(own), "model step 7"))
                die(f, "cubec_status_new made %s \"%s\"", cubec_code_name(cubec_status_code(own)),
                    cubec_status_message(own));
            cubec_status_free(own);
            if (cubec_status_new(CUBEC_OK, "fine"))
                die(f, "cubec_status_new(CUBEC_OK) is not NULL");
        }
        return;
    default: {
        cubec_stream cur = 0;
        note(f, "cubec_stream_get_current");
        if (!expect(f, cubec_stream_get_current(f->d, &cur), allow(f, C_NONE),
                    "cubec_stream_get_current") &&
            (cur & 0xffffffffffffull) % f->max_streams != f->slots[0])
            die(f, "cubec_stream_get_current moved to another slot");
        expect(f, cubec_stream_get_current(f->d, NULL), refused(f),
               "cubec_stream_get_current(NULL)");
    }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Host memory: registered and pinned ranges (transfers use them through host_mem). */

static void host_forget(fuzz *f, int i)
{
    f->hosts[i] = f->hosts[--f->nhosts];
}

static void op_host(fuzz *f)
{
    uint64_t align = f->info.host_register_alignment ? f->info.host_register_alignment : 4096;
    if (f->nhosts < MAX_HOSTS && chance(f, 2)) {
        uint64_t size = align * (1 + rnd(f, 4));
        if (chance(f, 2)) {
            void *p = (void *)&p;
            note(f, "cubec_host_alloc(%" PRIu64 ")", size);
            if (expect(f, cubec_host_alloc(f->d, size, &p),
                       f->can_pin ? allow(f, C_CREATES) : M(CUBEC_UNSUPPORTED),
                       "cubec_host_alloc")) {
                if (p) die(f, "a failed cubec_host_alloc left its out_ptr set");
                return;
            }
            f->hosts[f->nhosts++] = (m_host){p, size, 1};
            return;
        }
        uint8_t *p = aligned_alloc(align, size);
        MUST(f, p);
        if (chance(f, 6)) {
            note(f, "cubec_host_register(misaligned)");
            expect(f, cubec_host_register(f->d, p + 1, size - align), refused(f),
                   "cubec_host_register of a misaligned range");
            free(p);
            return;
        }
        note(f, "cubec_host_register(%" PRIu64 " bytes)", size);
        if (expect(f, cubec_host_register(f->d, p, size), allow(f, C_CREATES),
                   "cubec_host_register")) {
            free(p);
            return;
        }
        f->hosts[f->nhosts++] = (m_host){p, size, 0};
        if (chance(f, 4)) {
            note(f, "cubec_host_register(the same range again)");
            expect(f, cubec_host_register(f->d, p, size), refused(f),
                   "cubec_host_register of a registered range");
        }
        return;
    }
    if (!f->nhosts || chance(f, 8)) {
        int x = 0;
        note(f, "cubec_host_free / cubec_host_unregister of memory not cubec's");
        expect(f, cubec_host_free(f->d, &x), refused(f), "cubec_host_free of a stack address");
        expect(f, cubec_host_unregister(f->d, &x), refused(f),
               "cubec_host_unregister of a stack address");
        return;
    }
    int i = (int)rnd(f, (uint32_t)f->nhosts);
    m_host h = f->hosts[i];
    if (chance(f, 6)) {
        note(f, "%s of a %s range", h.pinned ? "cubec_host_unregister" : "cubec_host_free",
             h.pinned ? "pinned" : "registered");
        expect(f, h.pinned ? cubec_host_unregister(f->d, h.ptr) : cubec_host_free(f->d, h.ptr),
               refused(f), "the other release of a host range");
        return;
    }
    note(f, "%s(%" PRIu64 " bytes)", h.pinned ? "cubec_host_free" : "cubec_host_unregister",
         h.size);
    /* The release waits for the reads pending into the range (cubec.h): they have landed. */
    cubec_code c =
        expect(f, h.pinned ? cubec_host_free(f->d, h.ptr) : cubec_host_unregister(f->d, h.ptr),
               allow(f, C_SUBMITS), "the release of a host range");
    host_forget(f, i);
    for (int e = f->nevents - 1; e >= 0; e--) {
        m_event *ev = &f->events[e];
        if (ev->got < h.ptr || ev->got >= h.ptr + h.size) continue;
        ev->gone = 1;
        ev->unchecked = h.pinned || c; /* pinned memory went with the call: nothing to read */
        event_finish(f, e, 0);
    }
    if (!h.pinned) free(h.ptr);
}

static void hosts_close(fuzz *f)
{
    /* Registered memory is the program's and outlives the device; pinned memory goes with it. */
    while (f->nhosts) {
        m_host h = f->hosts[f->nhosts - 1];
        host_forget(f, f->nhosts - 1);
        if (!h.pinned) free(h.ptr);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Memory windows (per stream slot) and raw resources. */

static void op_window(fuzz *f)
{
    int s = pick_stream(f);
    int w = slot_of(f, s);
    uint32_t depth = f->win_depth[w];
    cubec_memory_mode top = depth ? (cubec_memory_mode)f->win_modes[w][depth - 1] : 0;
    switch (rnd(f, 6)) {
    case 0:
    case 1: {
        cubec_memory_mode mode = (cubec_memory_mode)rnd(f, 3);
        if (chance(f, 10)) mode = (cubec_memory_mode)(3 + rnd(f, 5));
        note(f, "cubec_memory_window_begin(stream[%d], %d) at depth %u", s, (int)mode, depth);
        int ok = mode <= CUBEC_MEMORY_MODE_DEDICATED && depth < MEM_WINDOWS_MAX;
        if (!expect(f, cubec_memory_window_begin(f->d, stream_of(f, s), mode),
                    ok ? allow(f, C_NONE) : refused(f), "cubec_memory_window_begin") &&
            ok)
            f->win_modes[w][f->win_depth[w]++] = (uint8_t)mode;
        return;
    }
    case 2:
        note(f, "cubec_memory_window_end(stream[%d]) at depth %u", s, depth);
        if (!expect(f, cubec_memory_window_end(f->d, stream_of(f, s)),
                    depth ? allow(f, C_NONE) : refused(f), "cubec_memory_window_end") &&
            depth)
            f->win_depth[w]--;
        return;
    default: {
        cubec_memory_mode mode = (cubec_memory_mode)77;
        uint32_t got = 77;
        note(f, "cubec_memory_window_get(stream[%d])", s);
        if (chance(f, 6)) {
            expect(f, cubec_memory_window_get(f->d, stream_of(f, s), NULL, NULL), allow(f, C_NONE),
                   "cubec_memory_window_get(NULL, NULL)");
            return;
        }
        if (chance(f, 6)) {
            /* A refused call clears its out-parameters (cubec.h's conventions). */
            cubec_stream bogus = 0x0bad000000000000ull | rnd(f, 1000);
            note(f, "cubec_memory_window_get(made-up stream)");
            expect(f, cubec_memory_window_get(f->d, bogus, &mode, &got), refused(f),
                   "cubec_memory_window_get of a made-up stream");
            if (mode != CUBEC_MEMORY_MODE_AUTO || got != 0)
                die(f, "a refused cubec_memory_window_get left mode %d depth %u", (int)mode, got);
            return;
        }
        if (!expect(f, cubec_memory_window_get(f->d, stream_of(f, s), &mode, &got),
                    allow(f, C_NONE), "cubec_memory_window_get") &&
            (mode != top || got != depth))
            die(f, "cubec_memory_window_get says mode %d depth %u; the model: mode %d depth %u",
                (int)mode, got, (int)top, depth);
    }
    }
}

static void op_raw(fuzz *f)
{
    if (f->nguards && chance(f, 3)) {
        int i = (int)rnd(f, (uint32_t)f->nguards);
        note(f, "cubec_guard_release(guard %" PRIu64 ")", f->guards[i].id);
        expect(f, cubec_guard_release(f->d, f->guards[i]), allow(f, C_NONE), "cubec_guard_release");
        f->dead_guard = f->guards[i];
        alloc_unref(f, f->guarded[i]);
        f->nguards--;
        f->guards[i] = f->guards[f->nguards];
        f->guarded[i] = f->guarded[f->nguards];
        return;
    }
    if (chance(f, 8)) {
        note(f, "cubec_guard_release(released or zero guard)");
        expect(f, cubec_guard_release(f->d, chance(f, 2) ? f->dead_guard : (cubec_guard){0}),
               allow(f, C_NONE), "cubec_guard_release of a released guard");
        return;
    }
    int s = pick_stream(f);
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    cubec_guard g = {77};
    if (chance(f, 8)) {
        note(f, "cubec_buffer_raw(bad handle or NULL out)");
        int i = pick_buf(f, 0);
        expect(f,
               i >= 0 && chance(f, 2)
                   ? cubec_buffer_raw(f->d, stream_of(f, s), f->bufs[i].h, &raw, NULL)
                   : cubec_buffer_raw(f->d, stream_of(f, s), bad_buffer(f), &raw, &g),
               refused(f), "cubec_buffer_raw refused");
        return;
    }
    int i = pick_buf(f, 0);
    if (i < 0 || f->nguards >= MAX_GUARDS) return;
    m_buf *b = &f->bufs[i];
    uint32_t fail = range_has(b->a, b->off, b->size, SUSPECT) ? FAILURE_CODES : 0;
    note(f, "cubec_buffer_raw(stream[%d], buf %d [alloc #%" PRIu64 " +%" PRIu64 ", %" PRIu64 "])",
         s, i, b->a->number, b->off, b->size);
    cubec_code c = expect(f, cubec_buffer_raw(f->d, stream_of(f, s), b->h, &raw, &g),
                          allow(f, C_SUBMITS) | fail, "cubec_buffer_raw");
    if (c) {
        if (g.id || raw.size) die(f, "a failed cubec_buffer_raw left its out-parameters set");
        return;
    }
    if (raw.size != b->size || !g.id)
        die(f, "cubec_buffer_raw gave size %" PRIu64 " (the buffer's: %" PRIu64 "), guard %" PRIu64,
            raw.size, b->size, g.id);
    /* The backend's object, and a device address exactly where the device has buffer device
     * addresses (the webgpu backend has none: 0, docs/device.md). */
    const int addresses = (f->info.features & CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS) != 0;
    if (f->kernels_run && b->size && (!raw.buffer || (raw.device_address != 0) != addresses))
        die(f,
            "cubec_buffer_raw gave handle 0x%" PRIx64 ", device address 0x%" PRIx64
            " on a device %s buffer device addresses",
            raw.buffer, raw.device_address, addresses ? "with" : "without");
    /* Every use has finished: on the null backend the address is the bytes themselves. */
    if (!f->kernels_run && b->size)
        compare(f, b->a, b->off, (const uint8_t *)(uintptr_t)raw.device_address, b->size,
                "the bytes at cubec_buffer_raw's address");
    b->a->refs++;
    f->guarded[f->nguards] = b->a;
    f->guards[f->nguards++] = g;
}

/* A host mapping: a guard like op_raw's (released there), and the bytes at its pointer, which
 * hold what a read would return once every use finished (on lavapipe and the null backend alike:
 * both map every page and are coherent). Refused with CUBEC_UNSUPPORTED where device memory is
 * not host-visible (device_learn). */
static void op_map(fuzz *f)
{
    int s = pick_stream(f);
    void *p = (void *)f;
    cubec_guard g = {77};
    if (chance(f, 8)) {
        note(f, "cubec_buffer_map(bad handle or NULL out)");
        int i = pick_buf(f, 0);
        expect(f,
               i >= 0 && chance(f, 2)
                   ? cubec_buffer_map(f->d, stream_of(f, s), f->bufs[i].h, &p, NULL)
                   : cubec_buffer_map(f->d, stream_of(f, s), bad_buffer(f), &p, &g),
               refused(f), "cubec_buffer_map refused");
        return;
    }
    int i = pick_buf(f, 0);
    if (i < 0 || f->nguards >= MAX_GUARDS) return;
    m_buf *b = &f->bufs[i];
    uint32_t fail = range_has(b->a, b->off, b->size, SUSPECT) ? FAILURE_CODES : 0;
    note(f, "cubec_buffer_map(stream[%d], buf %d [alloc #%" PRIu64 " +%" PRIu64 ", %" PRIu64 "])",
         s, i, b->a->number, b->off, b->size);
    /* Where device memory has no host mapping, bytes are refused before anything is waited
     * for (a size-0 buffer maps to NULL everywhere). */
    uint32_t ok = f->can_map || !b->size
                      ? allow(f, C_SUBMITS) | fail
                      : M(CUBEC_UNSUPPORTED) | (f->lost ? M(CUBEC_DEVICE_LOST) : 0);
    cubec_code c =
        expect(f, cubec_buffer_map(f->d, stream_of(f, s), b->h, &p, &g), ok, "cubec_buffer_map");
    if (c) {
        if (g.id || p) die(f, "a failed cubec_buffer_map left its out-parameters set");
        return;
    }
    if (!g.id || (b->size != 0) != (p != NULL))
        die(f, "cubec_buffer_map gave pointer %p and guard %" PRIu64 " for %" PRIu64 " bytes", p,
            g.id, b->size);
    if (b->size) compare(f, b->a, b->off, p, b->size, "the bytes at cubec_buffer_map's pointer");
    b->a->refs++;
    f->guarded[f->nguards] = b->a;
    f->guards[f->nguards++] = g;
}

/* ------------------------------------------------------------------------------------------ */
/* Dry runs: inside a window of its own (or the process-wide dry run) a launch or a replay on the
 * stream is checked and dropped; a REAL window inside opts the stream back in. */

static int dry_on(const fuzz *f, int s, const uint8_t *modes, uint32_t depth)
{
    (void)s;
    if (depth) return modes[depth - 1] == CUBEC_RUN_DRY;
    return f->dry_global > 0;
}

static void op_dry(fuzz *f)
{
    int s = pick_stream(f);
    uint8_t modes[4];
    uint32_t depth = 0;
    int global = chance(f, 3);
    if (chance(f, 8)) {
        note(f, "cubec_run_window_begin(stream[%d], bad mode) / _end with none open", s);
        expect(f, cubec_run_window_begin(f->d, stream_of(f, s), (cubec_run_mode)(3 + rnd(f, 9))),
               refused(f), "cubec_run_window_begin of a bad mode");
        if (!f->run_depth[s])
            expect(f, cubec_run_window_end(f->d, stream_of(f, s)), refused(f),
                   "cubec_run_window_end with none open");
        if (!f->dry_global) expect(f, cubec_dry_run_end(), refused(f), "cubec_dry_run_end");
        return;
    }
    if (global) {
        note(f, "cubec_dry_run_begin");
        if (expect(f, cubec_dry_run_begin(), M(CUBEC_OK), "cubec_dry_run_begin")) return;
        f->dry_global++;
    }
    for (int n = 1 + (int)rnd(f, 2); n > 0; n--) {
        cubec_run_mode mode = chance(f, 3) ? CUBEC_RUN_REAL : CUBEC_RUN_DRY;
        if (global && n == 1 && chance(f, 2)) break; /* the process-wide one alone */
        note(f, "cubec_run_window_begin(stream[%d], %s)", s,
             mode == CUBEC_RUN_DRY ? "dry" : "real");
        if (expect(f, cubec_run_window_begin(f->d, stream_of(f, s), mode), allow(f, C_NONE),
                   "cubec_run_window_begin"))
            break;
        modes[depth++] = (uint8_t)mode;
        f->run_depth[s]++;
    }
    int dry = dry_on(f, s, modes, depth);
    for (int n = 1 + (int)rnd(f, 3); n > 0 && !f->lost; n--) {
        m_op o;
        if (chance(f, 4) && f->ngraphs) {
            m_graph *gr = &f->graphs[rnd(f, f->ngraphs)];
            if (!dry) break;
            note(f, "cubec_graph_replay(stream[%d], graph 0x%" PRIx64 ") in a dry run", s,
                 gr->g.id);
            expect(f, cubec_graph_replay(f->d, stream_of(f, s), gr->g), allow(f, C_SUBMITS),
                   "cubec_graph_replay in a dry run");
            continue;
        }
        if (!make_op(f, &o, 0)) break;
        if (!dry) {
            /* A real window inside: the launch runs as anywhere. */
            if (!before_op(f, &o, s)) break;
            int pending = submit_pending(f);
            note(f, "cubec_launch(stream[%d]) in a real window", s);
            cubec_code c = expect(f, issue(f, s, &o), allow(f, C_SUBMITS), "cubec_launch");
            note_use(&o, s);
            if (c) {
                poison_profiles(f);
                mark_outputs(&o, SUSPECT);
            } else {
                model_op(f, &o, pending);
            }
            continue;
        }
        char desc[400];
        describe_op(&o, desc, sizeof desc);
        note(f, "cubec_launch(stream[%d], %s) in a dry run: dropped", s, desc);
        expect(f, issue(f, s, &o), allow(f, C_SUBMITS | C_COMPILES), "a dry launch");
    }
    while (depth) {
        note(f, "cubec_run_window_end(stream[%d])", s);
        expect(f, cubec_run_window_end(f->d, stream_of(f, s)), allow(f, C_NONE),
               "cubec_run_window_end");
        depth--;
        f->run_depth[s]--;
    }
    if (global) {
        note(f, "cubec_dry_run_end");
        expect(f, cubec_dry_run_end(), M(CUBEC_OK), "cubec_dry_run_end");
        f->dry_global--;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The compile queue. */

static const char bad_glsl[] = "#version 450\nlayout(local_size_x = 64) in;\n"
                               "void main() { this does not compile; }\n";

static void op_queue(fuzz *f)
{
    if (chance(f, 4)) {
        note(f, "cubec_kernel_compile_queued");
        /* Every kernel queued was waited for: the call reports a failed one as long as its
         * handle lives. */
        cubec_code c = expect(f, cubec_kernel_compile_queued(f->d),
                              allow(f, C_COMPILES) | (f->failed.id ? M(CUBEC_COMPILE_FAILED) : 0),
                              "cubec_kernel_compile_queued");
        if (f->failed.id && !c) die(f, "cubec_kernel_compile_queued missed a failed kernel");
        if (f->failed.id && chance(f, 2)) {
            note(f, "cubec_kernel_destroy(the kernel that failed)");
            expect(f, cubec_kernel_destroy(f->d, f->failed), allow(f, C_NONE),
                   "cubec_kernel_destroy");
            f->failed = (cubec_kernel){0};
        }
        return;
    }
    if (f->nkernels >= MAX_KERNELS) return;
    int bad = chance(f, 5);
    int kind = (int)rnd(f, 3);
    char value[16], name[32];
    snprintf(value, sizeof value, "%u", ++f->kernel_variants);
    snprintf(name, sizeof name, "queued%u", f->kernel_variants);
    cubec_define def = {"FUZZ_VARIANT", value};
    cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc),
                            .name = name,
                            .glsl = bad ? bad_glsl : kernel_source(kind),
                            .defines = &def,
                            .define_count = 1};
    cubec_kernel k = {0x77};
    note(f, "cubec_kernel_queue(%s%s)", name, bad ? ", does not compile" : "");
    if (chance(f, 10)) {
        expect(f, cubec_kernel_queue(f->d, &kd, NULL), refused(f), "cubec_kernel_queue(NULL)");
        return;
    }
    uint32_t fails = bad ? M(CUBEC_COMPILE_FAILED) : 0;
    cubec_code c = expect(f, cubec_kernel_queue(f->d, &kd, &k), allow(f, C_COMPILES) | fails,
                          "cubec_kernel_queue");
    if (c) {
        if (k.id) die(f, "a failed cubec_kernel_queue left its out_kernel set");
        return;
    }
    if (bad && chance(f, 2)) {
        /* A launch declaring no output returns the compile error. */
        cubec_buffer none = NONE;
        uint32_t info[3] = {0};
        cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                                .kernel = k,
                                .buffers = &none,
                                .buffer_count = 0,
                                .info = info,
                                .info_size = 12};
        ld.groups[0] = ld.groups[1] = ld.groups[2] = 1;
        note(f, "cubec_launch of %s, which does not compile", name);
        expect(f, cubec_launch(f->d, stream_of(f, pick_stream(f)), &ld),
               M(CUBEC_COMPILE_FAILED) | M(CUBEC_INVALID_ARGUMENT) |
                   (f->lost ? M(CUBEC_DEVICE_LOST) : 0),
               "a launch of a kernel that failed to compile");
    }
    note(f, "cubec_kernel_wait(%s)", name);
    c = expect(f, cubec_kernel_wait(f->d, k), allow(f, C_COMPILES) | fails, "cubec_kernel_wait");
    if (bad && !c) die(f, "cubec_kernel_wait of a kernel that does not compile succeeded");
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    c = expect(f, cubec_kernel_get_info(f->d, k, &ki), allow(f, C_COMPILES) | fails,
               "cubec_kernel_get_info of a queued kernel");
    if (bad && !f->failed.id && chance(f, 2)) {
        f->failed = k; /* kept: cubec_kernel_compile_queued must report it */
        return;
    }
    if (c || bad) {
        note(f, "cubec_kernel_destroy(%s)", name);
        expect(f, cubec_kernel_destroy(f->d, k), allow(f, C_NONE), "cubec_kernel_destroy");
        return;
    }
    f->kernels[f->nkernels++] = (m_kernel){k, kind, 0};
}

/* ------------------------------------------------------------------------------------------ */
/* Tuners: candidates fill one buffer with one pattern (so the bytes are known whichever wins),
 * or refuse (an unaligned fill), and the tuner remembers its choice per key. */

typedef struct tune_arg {
    cubec_buffer h;
    uint64_t size;
    uint32_t pattern;
    int refuse;
    cubec_tuner *destroy; /* the candidate tries to destroy its own tuner (refused) */
} tune_arg;

static cubec_status tune_run(cubec_device *device, cubec_stream stream, void *user)
{
    const tune_arg *a = user;
    if (a->destroy) {
        cubec_status st = cubec_tuner_destroy(a->destroy);
        if (cubec_status_code(st) != CUBEC_INVALID_ARGUMENT)
            die(&F, "cubec_tuner_destroy from a candidate of that tuner returned %s",
                cubec_code_name(cubec_status_code(st)));
        cubec_status_free(st);
    }
    if (a->refuse) return cubec_fill(device, stream, a->h, 0, 3, a->pattern); /* refused */
    return cubec_fill(device, stream, a->h, 0, a->size, a->pattern);
}

static void op_tune(fuzz *f)
{
    if (!f->tuner) {
        cubec_tuner_desc td = {.struct_size = sizeof(cubec_tuner_desc),
                               .name = "model",
                               .warmup = rnd(f, 2),
                               .samples = 1 + rnd(f, 2),
                               .memory_only = 1};
        cubec_tuner *t = (cubec_tuner *)&td;
        if (chance(f, 6)) {
            td.samples = CUBEC_TUNE_MAX_SAMPLES + 1;
            note(f, "cubec_tuner_create(%u samples)", td.samples);
            expect(f, cubec_tuner_create(f->d, &td, &t), refused(f), "cubec_tuner_create");
            return;
        }
        note(f, "cubec_tuner_create(warmup %u, samples %u)", td.warmup, td.samples);
        if (expect(f, cubec_tuner_create(f->d, &td, &t), allow(f, C_NONE), "cubec_tuner_create"))
            return;
        f->tuner = t;
        f->tuner_samples = td.samples;
        memset(f->tuned, 0, sizeof f->tuned);
        return;
    }
    if (chance(f, 10)) {
        note(f, "cubec_tuner_destroy");
        expect(f, cubec_tuner_destroy(f->tuner), allow(f, C_NONE), "cubec_tuner_destroy");
        expect(f, cubec_tuner_destroy(NULL), M(CUBEC_OK), "cubec_tuner_destroy(NULL)");
        f->tuner = NULL;
        return;
    }
    int s = pick_stream(f);
    int i = pick_buf(f, 4);
    if (i < 0) return;
    m_buf *b = &f->bufs[i];
    uint32_t key = rnd(f, TUNE_KEYS);
    /* The key decides the candidates, so that a remembered choice names the same one. */
    uint32_t count = 1 + key % 3;
    tune_arg args[3];
    cubec_tune_candidate cands[3];
    static const char *const names[] = {"a", "b", "c"};
    uint32_t pattern = (uint32_t)rnd64(f);
    uint64_t size = b->size / 4 * 4;
    for (uint32_t c = 0; c < count; c++) {
        args[c] = (tune_arg){b->h, size, pattern, key == 2 && c == 0,
                             key == 1 && c == 1 ? f->tuner : NULL};
        cands[c] = (cubec_tune_candidate){names[c], tune_run, &args[c]};
    }
    char keytext[16];
    snprintf(keytext, sizeof keytext, "key%u", key);
    cubec_tune_request req = {.struct_size = sizeof(cubec_tune_request),
                              .key = keytext,
                              .candidates = cands,
                              .candidate_count = count};
    cubec_tune_result r = {.struct_size = sizeof r, 77, 77, 77};
    if (chance(f, 8)) {
        req.candidate_count = 0;
        note(f, "cubec_tune_choose(no candidates)");
        expect(f, cubec_tune_choose(f->tuner, stream_of(f, s), &req, &r), refused(f),
               "cubec_tune_choose of no candidates");
        return;
    }
    if (chance(f, 5)) {
        uint32_t index = rnd(f, 4);
        cubec_tune_outcome o = CUBEC_TUNE_OUTCOME_INIT;
        note(f, "cubec_tune_outcome_get(%u)", index);
        cubec_code c =
            expect(f, cubec_tune_outcome_get(f->tuner, index, &o),
                   allow(f, C_NONE) | M(CUBEC_INVALID_ARGUMENT), "cubec_tune_outcome_get");
        if (!c && o.state == CUBEC_TUNE_TIMED && o.samples != f->tuner_samples)
            die(f, "a timed candidate has %u samples, the tuner takes %u", o.samples,
                f->tuner_samples);
        return;
    }
    if (!before_write(f, b->a, s)) return;
    int pending = submit_pending(f);
    note(f,
         "cubec_tune_choose(stream[%d], %s: %u candidates filling buf %d [alloc #%" PRIu64
         "] with 0x%08x)",
         s, keytext, count, i, b->a->number, pattern);
    cubec_code c = expect(f, cubec_tune_choose(f->tuner, stream_of(f, s), &req, &r),
                          allow(f, C_SUBMITS) | M(CUBEC_PROFILE_INVALID), "cubec_tune_choose");
    b->a->writers |= bit(s);
    if (c) {
        if (c == CUBEC_PROFILE_INVALID && !pending && f->pending == NO_FAULT && count > 1 &&
            !(key == 2 && count == 3))
            die(f, "cubec_tune_choose rejected every candidate, though only one refuses");
        mark(b->a, b->off, size, SUSPECT);
        return;
    }
    if (r.index >= count || (key == 2 && r.index == 0 && count > 1))
        die(f, "cubec_tune_choose chose candidate %u of %u (key %u)", r.index, count, key);
    if (count == 1 && r.source != CUBEC_TUNE_SINGLE)
        die(f, "a single candidate was chosen by source %d, not CUBEC_TUNE_SINGLE", (int)r.source);
    if (count > 1 && f->tuned[key] &&
        (r.source != CUBEC_TUNE_MEMORY || r.index + 1 != f->tuned[key]))
        die(f, "a remembered choice came back as source %d index %u (remembered: %u)",
            (int)r.source, r.index, f->tuned[key] - 1);
    if (count > 1 && !f->tuned[key] && r.source != CUBEC_TUNE_MEASURED)
        die(f, "a first choice of key %u came from source %d", key, (int)r.source);
    if (r.source == CUBEC_TUNE_MEASURED) {
        /* Every good candidate ran: the bytes hold the pattern. */
        for (uint64_t j = 0; j < size; j++)
            b->a->bytes[b->off + j] = (uint8_t)(pattern >> (8 * (j % 4)));
        mark(b->a, b->off, size, pending ? SUSPECT : KNOWN);
        f->tuned[key] = r.index + 1;
        cubec_tune_outcome o = CUBEC_TUNE_OUTCOME_INIT;
        for (uint32_t k = 0; k < count; k++) {
            if (expect(f, cubec_tune_outcome_get(f->tuner, k, &o), allow(f, C_NONE),
                       "cubec_tune_outcome_get"))
                continue;
            cubec_tune_state want = args[k].refuse ? CUBEC_TUNE_REJECTED : CUBEC_TUNE_TIMED;
            if (o.state != want && !pending)
                die(f, "candidate %u of key %u has state %d, the model: %d", k, key, (int)o.state,
                    (int)want);
        }
        expect(f, cubec_tune_outcome_get(f->tuner, count, &o), refused(f),
               "cubec_tune_outcome_get past the candidates");
    }
}

static void end_windows(fuzz *f)
{
    if (f->tuner) expect(f, cubec_tuner_destroy(f->tuner), allow(f, C_NONE), "cubec_tuner_destroy");
    f->tuner = NULL;
    while (f->dry_global) {
        MUST_OK(f, cubec_dry_run_end());
        f->dry_global--;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The device. */

static void model_reset(fuzz *f)
{
    for (int i = 0; i < f->ngraphs; i++)
        graph_free_model(f, &f->graphs[i]);
    f->ngraphs = 0;
    while (f->nbufs) {
        alloc_unref(f, f->bufs[f->nbufs - 1].a);
        f->nbufs--;
    }
    while (f->nguards)
        alloc_unref(f, f->guarded[--f->nguards]);
    MUST(f, f->nallocs == 0);
    f->nprofiles = f->nkernels = f->nstreams = 0;
    f->dead_buf_count = f->dead_kernel_count = f->dead_graph_count = f->dead_profile_count = 0;
    f->pending = NO_FAULT;
    f->lost = 0;
    memset(f->win_depth, 0, sizeof f->win_depth);
    memset(f->run_depth, 0, sizeof f->run_depth);
    f->dead_guard = (cubec_guard){0};
    f->failed = (cubec_kernel){0};
}

/* What the device just opened can do, and its backend's name, from cubec_device_info: a host
 * mapping of device memory needs host-visible, coherent device memory (unified_memory: CPU
 * devices, integrated GPUs, the null backend; not a discrete GPU, nor the webgpu backend, whose
 * buffers map only asynchronously); pinned memory (cubec_host_alloc) and Vulkan objects are
 * capability bits (the webgpu backend has neither, the null backend no Vulkan objects).
 * cubec_host_register is accepted everywhere, its transfers staged where host_import is clear. */
static const char *device_learn(fuzz *f)
{
    f->can_map = f->info.unified_memory != 0;
    f->vulkan_objects = (f->info.capabilities & CUBEC_CAPABILITY_VULKAN_HANDLES) != 0;
    f->can_pin = (f->info.capabilities & CUBEC_CAPABILITY_PINNED_HOST_MEMORY) != 0;
    /* Also where CUBEC_BACKEND=null opened the device the configuration left to it. */
    f->kernels_run = (f->info.capabilities & CUBEC_CAPABILITY_RUNS_KERNELS) != 0;
    if (!f->info.backend[0]) die(f, "cubec_device_info.backend is empty");
    return f->info.backend;
}

static void device_open(fuzz *f)
{
    static const uint32_t tasks[] = {0, 1, 2, 3, 5, 8, 32};
    static const uint32_t delays[] = {0, 0, 20, 300};
    f->tasks_max = tasks[rnd(f, sizeof tasks / sizeof tasks[0])];
    const char *v = getenv("CUBEC_TEST_VALIDATION");
    cubec_device_desc desc = {.struct_size = sizeof(cubec_device_desc), .tasks_max = f->tasks_max};
    if (f->kernels_run) {
        desc.backend = f->cfg->backend; /* NULL: the one CUBEC_BACKEND names */
        desc.validation = !(v && v[0] == '0');
        desc.on_validation = on_validation;
    } else {
        desc.backend = "null";
        desc.null_delay_us = delays[rnd(f, sizeof delays / sizeof delays[0])];
    }
    MUST_OK(f, cubec_device_open(&desc, &f->d));
    f->info = (cubec_device_info)CUBEC_DEVICE_INFO_INIT;
    MUST_OK(f, cubec_device_get_info(f->d, &f->info));
    MUST_OK(f, cubec_profile_get_method(f->d, &f->timing));
    const char *backend = device_learn(f);
    note(f, "cubec_device_open(%s, tasks_max %u, delay %u us)%s%s%s", backend, f->tasks_max,
         desc.null_delay_us, f->can_map ? "" : ": no host mappings",
         f->can_pin ? "" : ", no pinned memory", f->vulkan_objects ? "" : ", no Vulkan objects");
    /* The slot count is configuration (docs/configuration.md); the tests set it, if at all, in
     * the environment. */
    const char *slots = getenv("CUBEC_MAX_STREAMS");
    f->max_streams = slots && *slots ? strtoull(slots, NULL, 10) : 128;
    MUST(f, f->max_streams >= 1);
    cubec_stream current = 0, s = 0;
    MUST_OK(f, cubec_stream_get_current(f->d, &current));
    f->nstreams = 0;
    add_stream(f, current);
    f->streams[0] = CUBEC_STREAM_CURRENT; /* used as such; its slot is the resolved stream's */
    for (int i = 0; i < 2; i++) {
        MUST_OK(f, cubec_stream_new(f->d, &s));
        add_stream(f, s);
    }
    for (int kind = 0; kind < 3; kind++) {
        cubec_kernel_desc kd = {
            .struct_size = sizeof(cubec_kernel_desc), .name = "base", .glsl = kernel_source(kind)};
        if (f->cfg->spirv[kind]) {
            kd.glsl = NULL;
            kd.spirv = f->cfg->spirv[kind];
            kd.spirv_words = f->cfg->spirv_words[kind];
        }
        cubec_kernel k = {0};
        MUST_OK(f, cubec_kernel_create(f->d, &kd, &k));
        f->kernels[f->nkernels++] = (m_kernel){k, kind, 1};
    }
}

static void device_close(fuzz *f)
{
    /* A tuner is destroyed before its device (cubec.h "Autotuning"). */
    if (f->tuner) {
        note(f, "cubec_tuner_destroy");
        expect(f, cubec_tuner_destroy(f->tuner), allow(f, C_NONE), "cubec_tuner_destroy");
        f->tuner = NULL;
    }
    /* Pending reads are waited for and checked (freed only, when the device is lost). */
    while (f->nevents)
        event_finish(f, f->nevents - 1, f->lost);
    note(f, "cubec_device_close");
    cubec_device *closed = f->d;
    cubec_device_close(f->d);
    f->d = NULL;
    /* The closed pointer is refused by name, never dereferenced (docs/api.md "Handles"); a
     * second close is ignored. */
    cubec_status st = cubec_sync(closed, 0);
    if (cubec_status_code(st) != CUBEC_INVALID_ARGUMENT ||
        !strstr(cubec_status_message(st), "is not an open device"))
        die(f, "a call on a closed device returned %s: %s", cubec_code_name(cubec_status_code(st)),
            cubec_status_message(st));
    cubec_status_free(st);
    cubec_device_close(closed);
    hosts_close(f);
    model_reset(f);
    if (atomic_load(&validation_messages))
        die(f, "the validation layer reported %u message(s)", atomic_load(&validation_messages));
}

/* A lost device fails every call at once the same way (docs/errors.md (e)); then it is closed
 * and a new one opened. */
static void lost_phase(fuzz *f, uint64_t seed)
{
    const uint32_t lost = M(CUBEC_DEVICE_LOST);
    fuzz side = {.rng = seed}; /* the run's own sequence does not depend on what was lost */
    uint8_t byte = 0;
    cubec_buffer b = f->nbufs ? f->bufs[0].h : (cubec_buffer){0}, created;
    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    cubec_stream s = 0;
    for (int r = 0; r < 4; r++) {
        switch (rnd(&side, 8)) {
        case 0:
            note(f, "lost: cubec_sync");
            expect(f, cubec_sync(f->d, stream_of(f, 0)), lost, "cubec_sync after a lost device");
            break;
        case 1:
            note(f, "lost: cubec_flush");
            expect(f, cubec_flush(f->d, stream_of(f, 0)), lost, "cubec_flush after a lost device");
            break;
        case 2:
            note(f, "lost: cubec_buffer_create");
            expect(f, cubec_buffer_create(f->d, stream_of(f, 0), 16, &created), lost,
                   "cubec_buffer_create after a lost device");
            break;
        case 3:
            note(f, "lost: cubec_stream_new");
            expect(f, cubec_stream_new(f->d, &s), lost, "cubec_stream_new after a lost device");
            break;
        case 4:
            note(f, "lost: cubec_fault_get_counts");
            expect(f, cubec_fault_get_counts(f->d, counts), lost,
                   "cubec_fault_get_counts after a lost device");
            break;
        case 5:
            note(f, "lost: cubec_memory_cleanup");
            expect(f, cubec_memory_cleanup(f->d, stream_of(f, 0)), lost,
                   "cubec_memory_cleanup after a lost device");
            break;
        case 6:
            if (!f->nbufs || !f->bufs[0].size) break;
            note(f, "lost: cubec_read");
            expect(f, cubec_read(f->d, stream_of(f, 0), b, 0, &byte, 1), lost,
                   "cubec_read after a lost device");
            break;
        default:
            if (!f->nbufs || !f->bufs[0].size) break;
            note(f, "lost: cubec_write");
            expect(f, cubec_write(f->d, stream_of(f, 0), b, 0, &byte, 1), lost,
                   "cubec_write after a lost device");
        }
    }
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    note(f, "lost: cubec_device_get_info");
    expect(f, cubec_device_get_info(f->d, &info), M(CUBEC_OK), "cubec_device_get_info");
    device_close(f);
    f->reopens++;
    device_open(f);
}

/* A lost device, made deterministic: a sync waits for some 20 ms of GPU work, and that wait is
 * the one an injected wait fault fails. The device is closed and opened again either way. */
static void op_lose_device(fuzz *f)
{
    if (f->pending != NO_FAULT) return;
    uint64_t side_seed = rnd64(f);
    int s = pick_stream(f);
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "busy", .glsl = busy_src};
    cubec_kernel busy = {0};
    cubec_buffer scratch = {0};
    note(f, "cubec_kernel_create(busy)");
    if (expect(f, cubec_kernel_create(f->d, &kd, &busy), allow(f, C_COMPILES),
               "cubec_kernel_create(busy)"))
        return;
    note(f, "cubec_buffer_create(stream[%d], 8192) for busy work", s);
    if (expect(f, cubec_buffer_create(f->d, stream_of(f, s), 8192, &scratch),
               allow(f, C_CREATES | C_SUBMITS), "cubec_buffer_create"))
        return;
    note(f, "busy work on stream[%d], then cubec_fault_inject(wait, 1) and cubec_sync", s);
    expect(f, busy_launch(f->d, stream_of(f, s), busy, scratch, 2048, 12000), allow(f, C_SUBMITS),
           "the busy launch");
    expect(f, cubec_flush(f->d, stream_of(f, s)), allow(f, C_SUBMITS), "cubec_flush");
    expect(f, cubec_fault_inject(f->d, CUBEC_FAULT_WAIT, 1), allow(f, C_NONE),
           "cubec_fault_inject(wait, 1)");
    f->pending = CUBEC_FAULT_WAIT;
    f->faults_armed++;
    cubec_code c = expect(f, cubec_sync(f->d, stream_of(f, s)), allow(f, C_SUBMITS), "cubec_sync");
    if (c == CUBEC_DEVICE_LOST) {
        f->faults_fired++;
        lost_phase(f, side_seed);
        return;
    }
    /* The GPU was done before the wait: no lost device this time. */
    note(f, "(the sync did not wait: closing anyway)");
    device_close(f);
    f->reopens++;
    device_open(f);
}

/* Images (docs/images.md): one made, written, read back and compared, released, with its
 * refusals. Only where nothing can fail under it (no armed fault, no dry run, a live device):
 * the model keeps no image state across steps. */
static void op_image(fuzz *f)
{
    int s = pick_stream(f);
    if (f->pending != NO_FAULT || f->lost || f->dry_global || f->run_depth[s]) return;
    cubec_stream st = stream_of(f, s);
    uint32_t w = 1 + (uint32_t)rnd(f, 9), h = 1 + (uint32_t)rnd(f, 5);
    cubec_image_desc id = CUBEC_IMAGE_DESC_INIT;
    id.format = rnd(f, 2) ? CUBEC_IMAGE_FORMAT_R32_UINT : CUBEC_IMAGE_FORMAT_RGBA8_UNORM;
    id.width = w;
    id.height = h;
    uint64_t bytes = (uint64_t)w * h * cubec_image_format_size(id.format);
    cubec_image im = {0};
    note(f, "cubec_image_create(stream[%d], %ux%u format %d)", s, w, h, (int)id.format);
    if (rnd(f, 8) == 0) {
        id.width = 0;
        expect(f, cubec_image_create(f->d, st, &id, &im), refused(f), "cubec_image_create 0 wide");
        return;
    }
    if (expect(f, cubec_image_create(f->d, st, &id, &im), allow(f, C_CREATES | C_SUBMITS),
               "cubec_image_create"))
        return;
    /* One block for both (host_mem may place two blocks in one registered range, overlapping). */
    uint8_t *src = host_mem(f, 2 * bytes), *got = src + bytes;
    MUST(f, src);
    for (uint64_t i = 0; i < bytes; i++)
        src[i] = (uint8_t)rnd(f, 256);
    expect(f, cubec_image_write(f->d, st, im, src, bytes + 1), refused(f),
           "cubec_image_write of the wrong size");
    if (!expect(f, cubec_image_write(f->d, st, im, src, bytes), allow(f, C_SUBMITS | C_CREATES),
                "cubec_image_write") &&
        !expect(f, cubec_image_read(f->d, st, im, got, bytes), allow(f, C_SUBMITS | C_CREATES),
                "cubec_image_read") &&
        memcmp(src, got, (size_t)bytes) != 0) {
        uint64_t at = 0;
        while (src[at] == got[at])
            at++;
        die(f,
            "cubec_image_read did not return what cubec_image_write wrote: byte %" PRIu64
            " of %" PRIu64 " is 0x%02x, written 0x%02x",
            at, bytes, got[at], src[at]);
    }
    host_mem_free(f, src);
    expect(f, cubec_image_release(f->d, im), allow(f, C_SUBMITS), "cubec_image_release");
    expect(f, cubec_image_release(f->d, im), refused(f), "cubec_image_release twice");
}

/* ------------------------------------------------------------------------------------------ */

/* Export and import (docs/multi-device.md): an exportable buffer exported and released (its fd
 * closed), refusals of a non-exportable buffer and of a bad import, the timeline's export where
 * the device offers it, and a stream's timeline value. What the import shares is left to
 * tests/multi/test_export_import.c: the model keeps no aliases. */
static void op_external(fuzz *f)
{
    int s = pick_stream(f);
    const int memory = (f->info.external_handles & CUBEC_EXTERNAL_MEMORY_FD) != 0;
    switch (rnd(f, 4)) {
    case 0: {
        note(f, "cubec_buffer_create_exportable(stream[%d], 256) and cubec_buffer_export", s);
        cubec_buffer b = {0};
        cubec_code c =
            expect(f, cubec_buffer_create_exportable(f->d, stream_of(f, s), 256, &b),
                   memory ? allow(f, C_CREATES) : M(CUBEC_UNSUPPORTED) | allow(f, C_NONE),
                   "cubec_buffer_create_exportable");
        if (c) {
            if (b.id) die(f, "a failed cubec_buffer_create_exportable left its out_buffer set");
            return;
        }
        cubec_export_info info = CUBEC_EXPORT_INFO_INIT;
        if (!expect(f, cubec_buffer_export(f->d, b, &info), allow(f, C_NONE),
                    "cubec_buffer_export")) {
            if (info.fd < 0 || info.size != 256 || info.offset != 0 || info.allocation_size < 256)
                die(f,
                    "cubec_buffer_export gave fd %d, offset %" PRIu64 ", size %" PRIu64
                    " of %" PRIu64 " bytes",
                    info.fd, info.offset, info.size, info.allocation_size);
            close(info.fd);
        }
        expect(f, cubec_buffer_release(f->d, b), allow(f, C_NONE), "cubec_buffer_release");
        return;
    }
    case 1: {
        int i = pick_buf(f, 0);
        if (i < 0) return;
        note(f, "cubec_buffer_export(buf %d, not exportable)", i);
        cubec_export_info info = CUBEC_EXPORT_INFO_INIT;
        expect(f, cubec_buffer_export(f->d, f->bufs[i].h, &info), refused(f),
               "cubec_buffer_export of a buffer not created exportable");
        if (info.fd != -1) die(f, "a refused cubec_buffer_export left fd %d", info.fd);
        return;
    }
    case 2: {
        note(f, "cubec_buffer_import(fd -1)");
        cubec_import_desc desc = CUBEC_IMPORT_DESC_INIT;
        desc.allocation_size = desc.size = 256;
        cubec_buffer b = {0};
        expect(f, cubec_buffer_import(f->d, stream_of(f, s), &desc, &b), refused(f),
               "cubec_buffer_import of fd -1");
        return;
    }
    default: {
        note(f, "cubec_timeline_export and cubec_stream_get_timeline_value(stream[%d])", s);
        int fd = -1;
        const int timeline = (f->info.external_handles & CUBEC_EXTERNAL_TIMELINE_FD) != 0;
        if (!expect(f, cubec_timeline_export(f->d, &fd),
                    timeline ? allow(f, C_NONE) : M(CUBEC_UNSUPPORTED) | allow(f, C_NONE),
                    "cubec_timeline_export") &&
            fd >= 0)
            close(fd);
        uint64_t value = 0;
        expect(f, cubec_stream_get_timeline_value(f->d, stream_of(f, s), &value),
               allow(f, C_SUBMITS), "cubec_stream_get_timeline_value");
        return;
    }
    }
}

/* CUDA on the same GPU: without libcuda (or with it, for a buffer not created exportable) a map
 * is refused; a wait submits the stream's work or is unsupported; unmapping what was never
 * mapped is refused. Mapped buffers are tested in tests/multi/test_cuda_interop.c. */
static void op_cuda(fuzz *f)
{
    int s = pick_stream(f);
    int i = pick_buf(f, 0);
    if (i >= 0) {
        note(f, "cubec_cuda_map and cubec_cuda_unmap(buf %d, not exportable)", i);
        cubec_cuda_mapping m = CUBEC_CUDA_MAPPING_INIT;
        expect(f, cubec_cuda_map(f->d, f->bufs[i].h, &m), M(CUBEC_UNSUPPORTED) | refused(f),
               "cubec_cuda_map of a buffer not created exportable");
        if (m.cuda_device != -1 || m.device_ptr)
            die(f, "a refused cubec_cuda_map left device %d, pointer %" PRIu64, m.cuda_device,
                m.device_ptr);
        expect(f, cubec_cuda_unmap(f->d, f->bufs[i].h), refused(f),
               "cubec_cuda_unmap of a buffer never mapped");
    }
    note(f, "cubec_cuda_wait_stream(stream[%d], the default CUDA stream)", s);
    expect(f, cubec_cuda_wait_stream(f->d, stream_of(f, s), NULL),
           M(CUBEC_UNSUPPORTED) | allow(f, C_SUBMITS), "cubec_cuda_wait_stream");
    /* Refused by name without CUDA or an exportable timeline (lavapipe, null); with CUDA it
     * submits the stream's queued work and a batch that waits for the default CUDA stream. */
    note(f, "cubec_stream_wait_cuda(stream[%d], the default CUDA stream)", s);
    expect(f, cubec_stream_wait_cuda(f->d, stream_of(f, s), NULL),
           M(CUBEC_UNSUPPORTED) | allow(f, C_SUBMITS), "cubec_stream_wait_cuda");
}

/* A communicator of one rank (the model has one device): its all-reduce leaves the buffer as it
 * was and queues nothing; a count past the buffer is refused naming it. The reductions over
 * several devices are tests/multi/test_collectives.c's. */
static void op_comm(fuzz *f)
{
    int s = pick_stream(f);
    int i = pick_buf(f, 0);
    if (i < 0) return;
    m_buf *b = &f->bufs[i];
    cubec_comm *comm = NULL;
    note(f, "cubec_comm_create(1 device)");
    if (expect(f, cubec_comm_create(&f->d, 1, &comm), M(CUBEC_OK), "cubec_comm_create")) return;
    cubec_buffer h = b->h;
    cubec_stream st = stream_of(f, s);
    note(f, "cubec_comm_all_reduce(buf %d, stream[%d], %" PRIu64 " i32, sum)", i, s, b->size / 4);
    expect(f, cubec_comm_all_reduce(comm, &h, &st, b->size / 4, CUBEC_DTYPE_I32, CUBEC_REDUCE_SUM),
           allow(f, 0), "cubec_comm_all_reduce");
    note(f, "cubec_comm_all_reduce(buf %d, %" PRIu64 " f32: past the end)", i, b->size / 4 + 1);
    expect(f,
           cubec_comm_all_reduce(comm, &h, &st, b->size / 4 + 1, CUBEC_DTYPE_F32, CUBEC_REDUCE_MAX),
           refused(f), "cubec_comm_all_reduce past the end");
    note(f, "cubec_comm_broadcast(buf %d, %" PRIu64 " f16, root 0)", i, b->size / 4 * 2);
    expect(f, cubec_comm_broadcast(comm, &h, &st, b->size / 4 * 2, CUBEC_DTYPE_F16, 0), allow(f, 0),
           "cubec_comm_broadcast");
    note(f, "cubec_comm_broadcast(root 1 of 1 rank)");
    expect(f, cubec_comm_broadcast(comm, &h, &st, 1, CUBEC_DTYPE_I32, 1), refused(f),
           "cubec_comm_broadcast root 1");
    /* in and out one buffer: refused, whatever the count. */
    note(f, "cubec_comm_all_gather(buf %d as in and out)", i);
    expect(f, cubec_comm_all_gather(comm, &h, &h, &st, 0, CUBEC_DTYPE_F32), refused(f),
           "cubec_comm_all_gather in == out");
    note(f, "cubec_comm_reduce_scatter(buf %d as in and out)", i);
    expect(f, cubec_comm_reduce_scatter(comm, &h, &h, &st, 0, CUBEC_DTYPE_F32, CUBEC_REDUCE_SUM),
           refused(f), "cubec_comm_reduce_scatter in == out");
    cubec_comm_info info = CUBEC_COMM_INFO_INIT;
    note(f, "cubec_comm_get_info");
    if (!expect(f, cubec_comm_get_info(comm, &info), M(CUBEC_OK), "cubec_comm_get_info") &&
        (info.n != 1 || strcmp(info.transport, "ring") != 0))
        die(f, "cubec_comm_get_info: n %u, transport %s; want 1, ring", info.n, info.transport);
    uint64_t off = 1, cnt = 1;
    note(f, "cubec_comm_shard(%" PRIu64 ", rank 0)", b->size);
    if (!expect(f, cubec_comm_shard(comm, b->size, 0, &off, &cnt), M(CUBEC_OK),
                "cubec_comm_shard") &&
        (off != 0 || cnt != b->size))
        die(f, "cubec_comm_shard of one rank: offset %" PRIu64 ", count %" PRIu64, off, cnt);
    cubec_comm_destroy(comm);
}

typedef struct weighted {
    void (*run)(fuzz *f);
    unsigned weight;
} weighted;

static const weighted ops[] = {
    {op_create, 6},     {op_view, 4},          {op_release, 4},    {op_retain_size, 2},
    {op_write, 10},     {op_read, 10},         {op_read_async, 3}, {op_copy, 6},
    {op_fill, 5},       {op_launch, 12},       {op_kernel, 1},     {op_stream, 1},
    {op_flush_sync, 5}, {op_check, 3},         {op_profile, 4},    {op_capture, 2},
    {op_replay, 5},     {op_graph_destroy, 1}, {op_memory, 2},     {op_fault, 1},
    {op_info, 1},       {op_host, 2},          {op_window, 2},     {op_raw, 2},
    {op_map, 1},        {op_dry, 2},           {op_queue, 1},      {op_tune, 1},
    {op_event, 2},      {op_image, 1},         {op_external, 1},   {op_cuda, 1},
    {op_comm, 1},
};

/* Rarer than one weight unit in `ops`: one step in RARE. */
#define RARE 600

static void step(fuzz *f)
{
    /* The rare steps sit at the top of the range: zero bytes, common in fuzz inputs, pick
     * ordinary steps. */
    switch (RARE - 1 - rnd(f, RARE)) {
    case 0:
        /* Closed with everything live (buffers, views, graphs, profiles, kernels). */
        device_close(f);
        f->reopens++;
        device_open(f);
        return;
    case 1: op_lose_device(f); return;
    default: break;
    }
    unsigned total = 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        total += ops[i].weight;
    unsigned pick = rnd(f, total);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (pick < ops[i].weight) {
            ops[i].run(f);
            break;
        }
        pick -= ops[i].weight;
    }
}

/* Every public call of cubec.h and the step that carries it out and checks it: a new public
 * call without a row fails tests/api_model_covers_header.sh. */
const char *const api_model_calls[][2] = {
    {"cubec_buffer_create", "op_create"},
    {"cubec_image_create", "op_image"},
    {"cubec_image_format_size", "op_image"},
    {"cubec_image_read", "op_image"},
    {"cubec_image_release", "op_image"},
    {"cubec_image_write", "op_image"},
    {"cubec_buffer_from", "op_create"},
    {"cubec_buffer_raw", "op_raw"},
    {"cubec_buffer_map", "op_map"},
    {"cubec_buffer_release", "op_release"},
    {"cubec_buffer_retain", "op_retain_size"},
    {"cubec_buffer_get_size", "op_retain_size"},
    {"cubec_buffer_view", "op_view"},
    {"cubec_check", "op_check"},
    {"cubec_code_name", "op_info"},
    {"cubec_status_new", "op_info"},
    {"cubec_version", "op_info"},
    {"cubec_copy", "op_copy"},
    {"cubec_copy_peer", "op_copy"},
    {"cubec_comm_create", "op_comm"},
    {"cubec_comm_destroy", "op_comm"},
    {"cubec_comm_all_reduce", "op_comm"},
    {"cubec_comm_get_info", "op_comm"},
    {"cubec_comm_shard", "op_comm"},
    {"cubec_comm_broadcast", "op_comm"},
    {"cubec_comm_all_gather", "op_comm"},
    {"cubec_comm_reduce_scatter", "op_comm"},
    {"cubec_device_get_path", "op_info"},
    {"cubec_device_measure_path", "op_info"},
    {"cubec_path_name", "op_info"},
    {"cubec_link_class_name", "op_info"},
    {"cubec_device_close", "device_close"},
    {"cubec_device_get_count", "op_info"},
    {"cubec_device_get_info", "op_info"},
    {"cubec_device_open", "device_open"},
    {"cubec_device_peek", "op_info"},
    {"cubec_device_get_vulkan_handles", "op_info"},
    {"cubec_dry_run_begin", "op_dry"},
    {"cubec_dry_run_end", "op_dry"},
    {"cubec_event_free", "op_read_async"},
    {"cubec_event_query", "op_read_async"},
    {"cubec_event_wait", "op_read_async"},
    {"cubec_fault_get_counts", "op_fault"},
    {"cubec_fault_inject", "op_fault"},
    {"cubec_fault_kind_name", "op_info"},
    {"cubec_feature_name", "op_info"},
    {"cubec_capability_name", "op_info"},
    {"cubec_fill", "op_fill"},
    {"cubec_flush", "op_flush_sync"},
    {"cubec_graph_begin", "op_capture"},
    {"cubec_graph_destroy", "op_graph_destroy"},
    {"cubec_graph_end", "op_capture"},
    {"cubec_graph_prepare", "op_capture"},
    {"cubec_graph_replay", "op_replay"},
    {"cubec_guard_release", "op_raw"},
    {"cubec_host_alloc", "op_host"},
    {"cubec_host_free", "op_host"},
    {"cubec_host_register", "op_host"},
    {"cubec_host_unregister", "op_host"},
    {"cubec_kernel_compile_queued", "op_queue"},
    {"cubec_kernel_create", "op_kernel"},
    {"cubec_kernel_destroy", "op_kernel"},
    {"cubec_kernel_get_info", "op_kernel"},
    {"cubec_kernel_get_info_field", "model_info_field"},
    {"cubec_kernel_find_info_field", "model_info_field"},
    {"cubec_kernel_queue", "op_queue"},
    {"cubec_kernel_wait", "op_queue"},
    {"cubec_launch", "op_launch"},
    {"cubec_matrix_type_name", "op_info"},
    {"cubec_memory_cleanup", "op_memory"},
    {"cubec_memory_window_get", "op_window"},
    {"cubec_memory_window_end", "op_window"},
    {"cubec_memory_window_begin", "op_window"},
    {"cubec_memory_report_get", "op_memory"},
    {"cubec_memory_report_json", "op_memory"},
    {"cubec_memory_report_table", "op_memory"},
    {"cubec_profile_abandon", "op_profile"},
    {"cubec_profile_begin", "op_profile"},
    {"cubec_profile_end", "op_profile"},
    {"cubec_profile_get_method", "op_info"},
    {"cubec_read", "op_read"},
    {"cubec_read_async", "op_read_async"},
    {"cubec_run_window_begin", "op_dry"},
    {"cubec_run_window_end", "op_dry"},
    {"cubec_status_code", "op_info"},
    {"cubec_status_free", "op_info"},
    {"cubec_status_message", "op_info"},
    {"cubec_stream_get_current", "op_info"},
    {"cubec_stream_new", "op_stream"},
    {"cubec_string_free", "op_memory"},
    {"cubec_sync", "op_flush_sync"},
    {"cubec_sync_check", "op_check"},
    {"cubec_tune_choose", "op_tune"},
    {"cubec_tune_outcome_get", "op_tune"},
    {"cubec_tuner_create", "op_tune"},
    {"cubec_tuner_destroy", "op_tune"},
    {"cubec_write", "op_write"},
    {"cubec_write_failure", "op_write"},
    {"cubec_cuda_map", "op_cuda"},
    {"cubec_cuda_unmap", "op_cuda"},
    {"cubec_cuda_wait_stream", "op_cuda"},
    {"cubec_stream_wait_cuda", "op_cuda"},
    {"cubec_buffer_create_exportable", "op_external"},
    {"cubec_buffer_export", "op_external"},
    {"cubec_buffer_import", "op_external"},
    {"cubec_timeline_export", "op_external"},
    {"cubec_stream_get_timeline_value", "op_external"},
    {NULL, NULL},
    {"cubec_buffer_size", "op_old_names"},
    {"cubec_profile_method", "op_old_names"},
    {"cubec_fault_counts", "op_old_names"},
    {"cubec_device_vulkan_handles", "op_old_names"},
    {"cubec_stream_current", "op_old_names"},
    {"cubec_device_count", "op_old_names"},
    {"cubec_memory_mode_push", "op_old_names"},
    {"cubec_memory_mode_pop", "op_old_names"},
    {"cubec_memory_mode_get", "op_old_names"},
};

void api_model_run(const api_model_config *config, api_model_stats *out_stats)
{
    fuzz *f = &F;
    memset(f, 0, sizeof *f);
    atomic_store(&validation_messages, 0);
    f->cfg = config;
    f->seed = config->seed;
    f->rng = config->seed;
    f->in = config->bytes;
    f->in_left = config->byte_count;
    f->in_bytes = config->bytes != NULL;
    f->kernels_run = !config->backend || strcmp(config->backend, "null") != 0;
    f->seconds = config->seconds;
    f->max_steps = config->max_steps;
    f->trace = config->trace;
    f->pending = NO_FAULT;
    f->t0 = now_s();
    device_open(f);
    for (f->step = 0;; f->step++) {
        if (f->max_steps && f->step >= f->max_steps) break;
        if (f->seconds > 0 && now_s() - f->t0 >= f->seconds && f->step >= config->min_steps) break;
        if (f->exhausted) break;
        if (f->lost) die(f, "the device was lost outside op_lose_device");
        step(f);
        after_step(f);
    }
    /* The end: tidy some of it by hand, let the close free the rest. */
    while (f->ngraphs && !f->lost)
        op_graph_destroy(f);
    while (f->nprofiles && !f->lost) {
        note(f, "cubec_profile_abandon");
        expect(f,
               cubec_profile_abandon(f->d, stream_of(f, f->profiles[0].stream), f->profiles[0].p),
               allow(f, C_NONE) | M(CUBEC_INVALID_ARGUMENT), "cubec_profile_abandon");
        drop_profile(f, 0);
    }
    end_windows(f);
    device_close(f);
    free(f->allocs);
    if (out_stats)
        *out_stats = (api_model_stats){.steps = f->step,
                                       .calls = f->calls,
                                       .invalid_calls = f->invalid_calls,
                                       .reads_compared = f->reads_compared,
                                       .bytes_compared = f->bytes_compared,
                                       .faults_armed = f->faults_armed,
                                       .faults_fired = f->faults_fired,
                                       .captures = f->captures,
                                       .replays = f->replays,
                                       .reopens = f->reopens};
    if (f->trace) {
        printf("    codes:");
        for (int c = 0; c < 13; c++)
            if (f->codes[c]) printf(" %s %" PRIu64, cubec_code_name((cubec_code)c), f->codes[c]);
        printf("\n");
    }
}
