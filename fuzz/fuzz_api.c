/* libFuzzer harness: the input bytes as a sequence of public API calls, checked against a host
 * model. Compiled twice from this file (fuzz/CMakeLists.txt): fuzz_api on the null backend, and
 * fuzz_api_lavapipe (FUZZ_API_VULKAN) on lavapipe, the CPU Vulkan driver, with the validation
 * layer on (unless CUBEC_TEST_VALIDATION=0), where the kernels run for real.
 *
 * Each input opens a fresh device (the null device in tens of microseconds, lavapipe in tens of
 * milliseconds), so nothing carries over from one input to the next and every crash replays from
 * its file alone. It reads one opcode byte at a time and the arguments of that call from the
 * bytes that follow: buffers, views, retains and releases; writes, reads, copies and fills at
 * ranges that are often out of bounds or misaligned; launches of two fixed kernels with right and
 * wrong bindings, metadata and group counts; flushes, syncs and checks; new streams and made-up
 * stream ids; graph prepare/begin/end/replay/destroy; profiles begun, ended and abandoned;
 * injected faults; asynchronous reads and their events; memory reports and cleanup. Handles that
 * were released stay in their slots, so later calls use them stale. At the end everything still
 * alive is released and the device closed, so LeakSanitizer sees a leak of cubec's as a leak.
 *
 * It aborts on a crash or sanitizer report (libFuzzer does that), a validation message (lavapipe)
 * and a broken invariant:
 *  - every error code is one of cubec.h's CUBEC_CODES with a non-empty message, and a code that
 *    only a fault can cause (CUBEC_INTERNAL, CUBEC_DEVICE_LOST, CUBEC_TIMEOUT) appears only after
 *    a fault was armed;
 *  - a call with an argument that cubec.h says is refused (a released handle, a range past the
 *    end, a copy or fill not in multiples of 4, a stream id of no open device, a read, sync or
 *    profile_begin on a stream that records a graph, a replay of no graph, memory cleanup while a
 *    stream records, a profile ended on another stream or twice) fails;
 *  - a successful cubec_read, an asynchronous read whose event succeeded, and the bytes after a
 *    graph replay hold what a host model of writes, copies and fills holds (the backends carry
 *    them out exactly; the null backend runs no kernels, so a launch keeps its outputs' bytes);
 *    a failed one fails with CUBEC_GRAPH_STATE (a byte a capture window refused) unless a fault
 *    was armed;
 *  - a profile that ends well measures an interval that lies between its begin and end calls
 *    (null) with duration end - begin, in the device's method; one that fails zeroes its result
 *    and says CUBEC_PROFILE_INVALID or CUBEC_GRAPH_STATE.
 * The model keeps each allocation's bytes and whether each is known, and gives up on bytes it
 * cannot know rather than guess: bytes never written, what a kernel wrote (lavapipe), every byte
 * after an armed fault, the destination of a call that failed, bytes another stream has queued
 * work on since its last sync (streams are not ordered with each other), and what a replay wrote
 * when the graph's buffers may carry a failure. A capture is modelled per stream: the copies,
 * fills and launches of the recording stream are recorded (they change nothing until a replay
 * carries them out in order), its writes are refused lazily (the bytes keep their value and may
 * carry a failure), and every other stream works as usual.
 * test_random_null.c (tests/null) holds the full model of failures; this one stays small so
 * that the fuzzer runs fast and a report is easy to read. */
#include <cubec/cubec.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef FUZZ_API_VULKAN
#include <dlfcn.h>
#define KERNELS_RUN 1 /* a launch changes its outputs' bytes */
#else
#define KERNELS_RUN 0
#endif

#define NHANDLES 8 /* buffer and view slots, and the allocations (stores) they hold */
#define NSTREAMS 4 /* slot 0: the thread's current stream */
#define NEVENTS 2
#define NGRAPHS 2
#define NPROFILES 2
#define MAX_GOPS 16   /* operations a graph model keeps; past that its replay is not checked */
#define MAX_SIZE 1024 /* the largest buffer the model keeps bytes for */

typedef struct store { /* one allocation: the model's bytes */
    int refs;          /* handles, events and graphs that keep it alive */
    uint64_t size;
    unsigned char *val, *known;
    uint32_t users; /* streams with work queued on it since their last sync */
    int tainted;    /* some bytes may carry a failure (coarse: never cleared) */
} store;

typedef struct handle {
    cubec_buffer h;
    int live, refs, st; /* st: index of its store */
    uint64_t off, size;
} handle;

typedef enum gop_kind { GOP_COPY, GOP_FILL, GOP_LAUNCH } gop_kind;

typedef struct gop { /* one operation a capture recorded, at offsets in its stores */
    gop_kind kind;
    int src, dst; /* stores; a launch's bindings are in the graph's `touched` */
    uint64_t src_off, dst_off, size;
    uint32_t pattern;
} gop;

typedef struct graph_model { /* what a capture recorded, then what its graph replays */
    int nops, inexact;       /* inexact: an operation did not fit in ops */
    gop ops[MAX_GOPS];
    unsigned char touched[NHANDLES]; /* stores it uses: it holds a reference on each */
} graph_model;

typedef struct event_slot {
    cubec_event *ev;
    unsigned char *dst, *want, *known; /* the read's bytes, what the model expects of them */
    uint64_t size;
    int st, stream;
    int disturbed; /* another stream queued work on the store since: not checked */
} event_slot;

typedef struct profile_slot {
    cubec_profile p;
    int live, stream;
    uint64_t t0; /* host time before cubec_profile_begin */
} profile_slot;

typedef struct input {
    const uint8_t *p;
    size_t n;
} input;

typedef struct state {
    input in;
    cubec_device *d;
    cubec_device_info info;
    cubec_timing method;
    cubec_stream streams[NSTREAMS];
    int nstreams;
    store stores[NHANDLES];
    handle handles[NHANDLES];
    event_slot events[NEVENTS];
    cubec_graph graphs[NGRAPHS];
    graph_model gmodels[NGRAPHS];
    int recording[NSTREAMS]; /* the stream's graph_begin succeeded and no graph_end since */
    graph_model capture[NSTREAMS];
    profile_slot profiles[NPROFILES];
    cubec_kernel kernels[2];
    int kernels_made;
    int fault_armed;  /* a fault was armed: codes of faults allowed, values no longer known */
    const char *call; /* for the report */
} state;

static void fail(const state *s, const char *what, cubec_status st)
{
    fprintf(stderr, "fuzz_api: %s: %s: %s (%s)\n", s->call, what, cubec_status_message(st),
            cubec_code_name(cubec_status_code(st)));
    abort();
}

/* ---- reading the input -------------------------------------------------------------------- */

static uint8_t u8(state *s)
{
    if (!s->in.n) return 0;
    s->in.n--;
    return *s->in.p++;
}

static uint32_t u16(state *s)
{
    uint32_t lo = u8(s);
    return lo | (uint32_t)u8(s) << 8;
}

static uint64_t u64(state *s)
{
    uint64_t x = 0;
    for (int i = 0; i < 8; i++)
        x |= (uint64_t)u8(s) << (8 * i);
    return x;
}

/* A size: mostly a small multiple of 4, sometimes any small value, sometimes far too large. */
static uint64_t pick_size(state *s)
{
    uint8_t b = u8(s);
    if (b < 192) return (uint64_t)(b % 65) * 16 % (MAX_SIZE + 4);
    if (b < 240) return u16(s) % (MAX_SIZE + 1);
    static const uint64_t huge[] = {UINT64_MAX, UINT64_MAX - 3, (uint64_t)1 << 62};
    if (b < 244) return huge[b - 240 < 3 ? b - 240 : 0];
    return s->info.max_allocation_size + 4 * (uint64_t)(b - 243);
}

/* An offset within (or just past) a range of `size` bytes. */
static uint64_t pick_offset(state *s, uint64_t size)
{
    uint8_t b = u8(s);
    if (b == 255) return u64(s);
    if (b >= 240) return size + 4 * (uint64_t)(b - 240);
    uint64_t off = size ? (uint64_t)b * 4 % (size + 1) : 0;
    return b & 1 ? off : off & ~(uint64_t)3;
}

/* A stream: an index in s->streams (returned in *idx), or a made-up id of no open device (*idx
 * is -1). The made-up id carries a tag no device has: the device's tag plus 0x8000. */
static cubec_stream pick_stream(state *s, int *idx)
{
    uint8_t b = u8(s);
    if (b < 8 || s->nstreams == 0) {
        *idx = b % (s->nstreams ? s->nstreams : 1);
        return b == 0 ? CUBEC_STREAM_CURRENT : s->streams[*idx];
    }
    *idx = b < 16 ? -1 : (int)(b % s->nstreams);
    if (*idx >= 0) return s->streams[*idx];
    uint64_t tag = (s->streams[0] >> 48) ^ 0x8000u;
    return tag << 48 | (u64(s) & 0xffffffffffffull);
}

/* ---- checking codes ----------------------------------------------------------------------- */

/* Checks a status and frees it; returns its code. A code outside CUBEC_CODES, an empty message,
 * or a code only a fault can cause before any fault was armed, aborts. */
static cubec_code take(state *s, cubec_status st)
{
    cubec_code c = cubec_status_code(st);
    if (!st) return CUBEC_OK;
    const char *msg = cubec_status_message(st);
    if (c == CUBEC_OK || !strcmp(cubec_code_name(c), "CUBEC_UNKNOWN_CODE"))
        fail(s, "a code outside CUBEC_CODES", st);
    if (!msg || !*msg) fail(s, "an empty message", st);
    if (!s->fault_armed && (c == CUBEC_INTERNAL || c == CUBEC_DEVICE_LOST || c == CUBEC_TIMEOUT))
        fail(s, "a fault's code without a fault armed", st);
    cubec_status_free(st);
    return c;
}

/* take() for a call whose arguments cubec.h refuses: it must fail. */
static void refused(state *s, cubec_status st)
{
    if (!st) fail(s, "a refused argument was accepted", st);
    (void)take(s, st);
}

/* take() for a call that hands back bytes (a read, an event): without a fault it succeeds or
 * fails because the bytes carry the failure of a write or capture a graph window refused. */
static cubec_code take_bytes(state *s, cubec_status st)
{
    if (st && !s->fault_armed && cubec_status_code(st) != CUBEC_GRAPH_STATE)
        fail(s, "a failure other than CUBEC_GRAPH_STATE without a fault armed", st);
    return take(s, st);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the model ---------------------------------------------------------------------------- */

static int in_range(uint64_t off, uint64_t size, uint64_t limit)
{
    return off <= limit && size <= limit - off;
}

static void forget(store *t, uint64_t off, uint64_t size)
{
    if (t->known) memset(t->known + off, 0, size);
}

static void forget_all(state *s)
{
    for (int i = 0; i < NHANDLES; i++)
        if (s->stores[i].refs) forget(&s->stores[i], 0, s->stores[i].size);
}

static void store_unref(state *s, int si)
{
    store *t = &s->stores[si];
    if (--t->refs > 0) return;
    free(t->val);
    free(t->known);
    memset(t, 0, sizeof *t);
}

/* A handle slot: live, released (its id stale) or never used (id 0). */
static handle *pick_handle(state *s)
{
    return &s->handles[u8(s) % NHANDLES];
}

/* Bytes another stream may still be writing or reading: their values are not ordered. */
static int unordered(const store *t, int stream)
{
    return stream < 0 || (t->users & ~(1u << stream)) != 0;
}

static void sync_done(state *s, int stream)
{
    for (int i = 0; i < NHANDLES; i++)
        s->stores[i].users &= ~(1u << stream);
}

static int recording_any(const state *s)
{
    for (int i = 0; i < NSTREAMS; i++)
        if (s->recording[i]) return 1;
    return 0;
}

/* Work queued on `stream` that writes or reads store `si`: pending asynchronous reads of it from
 * other streams are no longer ordered with it, so their bytes are not checked. */
static void queued_on(state *s, int si, int stream)
{
    for (int e = 0; e < NEVENTS; e++)
        if (s->events[e].ev && s->events[e].st == si && s->events[e].stream != stream)
            s->events[e].disturbed = 1;
}

/* A graph model's reference on store `si`, taken once. */
static void touch(state *s, graph_model *g, int si)
{
    if (g->touched[si]) return;
    g->touched[si] = 1;
    s->stores[si].refs++;
}

static void graph_model_drop(state *s, graph_model *g)
{
    for (int i = 0; i < NHANDLES; i++)
        if (g->touched[i]) store_unref(s, i);
    memset(g, 0, sizeof *g);
}

static void record(state *s, int stream, gop op)
{
    graph_model *g = &s->capture[stream];
    if (op.kind == GOP_COPY) touch(s, g, op.src);
    if (op.kind != GOP_LAUNCH) touch(s, g, op.dst);
    if (g->nops == MAX_GOPS)
        g->inexact = 1;
    else
        g->ops[g->nops++] = op;
}

/* A replay that succeeded on `stream`: its operations in order, where the model can know them. */
static void replay_model(state *s, const graph_model *g, int stream)
{
    int exact = !g->inexact && !s->fault_armed;
    for (int i = 0; i < NHANDLES; i++)
        if (g->touched[i] && s->stores[i].tainted) exact = 0; /* a replay may have been skipped */
    for (int i = 0; exact && i < g->nops; i++) {
        const gop *op = &g->ops[i];
        store *td = &s->stores[op->dst];
        if (op->kind == GOP_LAUNCH) {
            exact = !KERNELS_RUN;
        } else if (unordered(td, stream) ||
                   (op->kind == GOP_COPY && unordered(&s->stores[op->src], stream))) {
            forget(td, op->dst_off, op->size);
        } else if (op->kind == GOP_COPY) { /* a capture refuses overlapping copies too */
            const store *ts = &s->stores[op->src];
            memmove(td->val + op->dst_off, ts->val + op->src_off, op->size);
            memmove(td->known + op->dst_off, ts->known + op->src_off, op->size);
        } else {
            for (uint64_t b = 0; b < op->size; b++)
                td->val[op->dst_off + b] = (unsigned char)(op->pattern >> (8 * (b % 4)));
            memset(td->known + op->dst_off, 1, op->size);
        }
    }
    int taint = 0;
    for (int i = 0; i < NHANDLES; i++)
        taint |= g->touched[i] && s->stores[i].tainted;
    for (int i = 0; i < NHANDLES; i++) {
        if (!g->touched[i]) continue;
        if (!exact) forget(&s->stores[i], 0, s->stores[i].size);
        if (taint) s->stores[i].tainted = 1;
        s->stores[i].users |= 1u << stream;
        queued_on(s, i, stream);
    }
}

/* ---- calls -------------------------------------------------------------------------------- */

static void op_create(state *s)
{
    int idx;
    cubec_stream stream = pick_stream(s, &idx);
    uint64_t size = pick_size(s);
    int slot = u8(s) % NHANDLES;
    handle *h = &s->handles[slot];
    if (h->live || s->stores[slot].refs) return; /* the slot's store is still held */
    int from = u8(s) & 1;
    unsigned char data[MAX_SIZE];
    for (uint64_t i = 0; from && i < size && i < MAX_SIZE; i++)
        data[i] = (unsigned char)(i * 7 + size);
    cubec_buffer b = {0};
    s->call = from ? "cubec_buffer_from" : "cubec_buffer_create";
    cubec_status st = from && size <= MAX_SIZE ? cubec_buffer_from(s->d, stream, data, size, &b)
                                               : cubec_buffer_create(s->d, stream, size, &b);
    if (idx < 0 || size > s->info.max_allocation_size) {
        refused(s, st);
        return;
    }
    if (take(s, st) != CUBEC_OK) return;
    store *t = &s->stores[slot];
    t->refs = 1;
    t->size = size;
    t->val = calloc(size + 1, 1);
    t->known = calloc(size + 1, 1);
    if (!t->val || !t->known) abort();
    if (from && size <= MAX_SIZE && s->recording[idx]) {
        t->tainted = 1; /* the recording stream's write is refused lazily */
    } else if (from && size <= MAX_SIZE && !s->fault_armed) {
        memcpy(t->val, data, size);
        memset(t->known, 1, size);
    }
    *h = (handle){.h = b, .live = 1, .refs = 1, .st = slot, .off = 0, .size = size};
}

static void op_view(state *s)
{
    handle *p = pick_handle(s);
    uint64_t off = pick_offset(s, p->size) & ~(uint64_t)15;
    if (u8(s) & 1) off += 4; /* misaligned */
    uint64_t size = p->size > off ? (p->size - off) >> (u8(s) % 4) : pick_size(s);
    handle *h = &s->handles[u8(s) % NHANDLES];
    s->call = "cubec_buffer_view";
    cubec_buffer v = {0};
    cubec_status st = cubec_buffer_view(s->d, p->h, off, size, &v);
    if (!p->live || !in_range(off, size, p->size) || off % s->info.storage_offset_alignment) {
        refused(s, st);
        return;
    }
    if (take(s, st) != CUBEC_OK) return;
    if (h->live) { /* the slot is taken: give the view back */
        s->call = "cubec_buffer_release (view)";
        (void)take(s, cubec_buffer_release(s->d, v));
        return;
    }
    s->stores[p->st].refs++;
    *h = (handle){.h = v, .live = 1, .refs = 1, .st = p->st, .off = p->off + off, .size = size};
}

static void op_retain_release(state *s)
{
    handle *h = pick_handle(s);
    if (u8(s) % 4 == 0) {
        s->call = "cubec_buffer_retain";
        cubec_status st = cubec_buffer_retain(s->d, h->h);
        if (!h->live) {
            refused(s, st);
        } else if (take(s, st) == CUBEC_OK) {
            h->refs++;
        }
        return;
    }
    s->call = "cubec_buffer_release";
    cubec_status st = cubec_buffer_release(s->d, h->h);
    if (!h->live) {
        if (h->h.id)
            refused(s, st);
        else
            (void)take(s, st);
        return;
    }
    if (take(s, st) != CUBEC_OK) return;
    if (--h->refs == 0) {
        h->live = 0; /* the id stays, to be used stale */
        store_unref(s, h->st);
    }
}

static void op_write(state *s)
{
    int idx;
    cubec_stream stream = pick_stream(s, &idx);
    handle *h = pick_handle(s);
    uint64_t off = pick_offset(s, h->size), size = pick_size(s);
    uint8_t seed = u8(s);
    unsigned char data[MAX_SIZE];
    /* A size past MAX_SIZE is past every buffer's end: refused before a byte is read (were it
     * not, AddressSanitizer would report the overflow). */
    for (uint64_t i = 0; i < size && i < MAX_SIZE; i++)
        data[i] = (unsigned char)(seed + i * 13);
    s->call = "cubec_write";
    cubec_status st = cubec_write(s->d, stream, h->h, off, data, size);
    if (!h->live || idx < 0 || !in_range(off, size, h->size)) {
        refused(s, st);
        return;
    }
    store *t = &s->stores[h->st];
    cubec_code c = take(s, st);
    queued_on(s, h->st, idx);
    if (c == CUBEC_OK && s->recording[idx]) { /* refused lazily: the bytes stay as they are */
        t->tainted = 1;
        return;
    }
    if (c != CUBEC_OK || s->fault_armed || unordered(t, idx)) {
        forget(t, h->off + off, size);
        return;
    }
    memcpy(t->val + h->off + off, data, size);
    memset(t->known + h->off + off, 1, size);
}

/* Compares bytes handed back with the model's (want, known); aborts on a known byte that
 * differs. */
static void compare(const state *s, const char *what, uint64_t off, const unsigned char *got,
                    const unsigned char *want, const unsigned char *known, uint64_t size)
{
    for (uint64_t i = 0; i < size; i++) {
        if (!known[i] || want[i] == got[i]) continue;
        fprintf(stderr,
                "fuzz_api: %s: %s of %llu bytes at %llu: byte %llu is 0x%02x, the model says "
                "0x%02x\n",
                s->call, what, (unsigned long long)size, (unsigned long long)off,
                (unsigned long long)i, got[i], want[i]);
        abort();
    }
}

static void op_read(state *s)
{
    int idx;
    cubec_stream stream = pick_stream(s, &idx);
    handle *h = pick_handle(s);
    uint64_t off = pick_offset(s, h->size), size = pick_size(s);
    unsigned char got[MAX_SIZE]; /* as in op_write, a larger size is refused */
    s->call = "cubec_read";
    cubec_status st = cubec_read(s->d, stream, h->h, off, got, size);
    if (!h->live || idx < 0 || !in_range(off, size, h->size) || s->recording[idx]) {
        refused(s, st);
        return;
    }
    if (take_bytes(s, st) != CUBEC_OK) return;
    const store *t = &s->stores[h->st];
    if (unordered(t, idx)) return;
    compare(s, "a read", off, got, t->val + h->off + off, t->known + h->off + off, size);
}

static void op_copy(state *s)
{
    int idx;
    cubec_stream stream = pick_stream(s, &idx);
    handle *a = pick_handle(s), *b = pick_handle(s);
    uint64_t so = pick_offset(s, a->size), dof = pick_offset(s, b->size), size = pick_size(s);
    s->call = "cubec_copy";
    cubec_status st = cubec_copy(s->d, stream, a->h, so, b->h, dof, size);
    if (!a->live || !b->live || idx < 0 || !in_range(so, size, a->size) ||
        !in_range(dof, size, b->size) || (so | dof | size) % 4) {
        refused(s, st);
        return;
    }
    store *ts = &s->stores[a->st], *td = &s->stores[b->st];
    cubec_code c = take(s, st);
    uint64_t as = a->off + so, ad = b->off + dof;
    if (c == CUBEC_OK && s->recording[idx]) {
        record(s, idx, (gop){.kind = GOP_COPY, a->st, b->st, as, ad, size, 0});
        return;
    }
    queued_on(s, a->st, idx);
    queued_on(s, b->st, idx);
    if (c != CUBEC_OK || s->fault_armed || ts->tainted || unordered(ts, idx) ||
        unordered(td, idx)) {
        forget(td, ad, size); /* a copy from bytes that carry a failure is skipped */
    } else { /* refused when the ranges overlap in one allocation, so memmove is exact */
        memmove(td->val + ad, ts->val + as, size);
        memmove(td->known + ad, ts->known + as, size);
    }
    if (c != CUBEC_OK || ts->tainted) td->tainted = 1;
    if (c == CUBEC_OK) {
        ts->users |= 1u << idx;
        td->users |= 1u << idx;
    }
}

static void op_fill(state *s)
{
    int idx;
    cubec_stream stream = pick_stream(s, &idx);
    handle *h = pick_handle(s);
    uint64_t off = pick_offset(s, h->size), size = pick_size(s);
    uint32_t pattern = (uint32_t)u16(s) * 0x10001u;
    s->call = "cubec_fill";
    cubec_status st = cubec_fill(s->d, stream, h->h, off, size, pattern);
    if (!h->live || idx < 0 || !in_range(off, size, h->size) || (off | size) % 4) {
        refused(s, st);
        return;
    }
    store *t = &s->stores[h->st];
    cubec_code c = take(s, st);
    uint64_t at = h->off + off;
    if (c == CUBEC_OK && s->recording[idx]) {
        record(
            s, idx,
            (gop){.kind = GOP_FILL, .dst = h->st, .dst_off = at, .size = size, .pattern = pattern});
        return;
    }
    queued_on(s, h->st, idx);
    if (c != CUBEC_OK || s->fault_armed || unordered(t, idx)) {
        forget(t, at, size);
    } else {
        for (uint64_t i = 0; i < size; i++)
            t->val[at + i] = (unsigned char)(pattern >> (8 * (i % 4)));
        memset(t->known + at, 1, size);
    }
    if (c != CUBEC_OK) t->tainted = 1;
    if (c == CUBEC_OK) t->users |= 1u << idx;
}

/* The kernels of fuzz/kernels/, compiled by glslc at build time (fuzz/CMakeLists.txt). */
static const uint32_t add_one_spirv[] =
#include "add_one.inc"
    ;
static const uint32_t twice_spirv[] =
#include "twice.inc"
    ;

/* Launches one of two fixed kernels (created at the input's first launch) or a zero or stale
 * kernel, with handles, metadata and group counts from the input. On null no kernel runs: the
 * outputs keep their bytes, so the model changes only what it knows about the ordering; on
 * lavapipe the model forgets the bound bytes. */
static void op_launch(state *s)
{
    if (!s->kernels_made) {
        s->kernels_made = 1;
        for (int i = 0; i < 2; i++) {
            s->call = "cubec_kernel_create";
            cubec_kernel_desc desc = {.name = i ? "twice" : "add_one",
                                      .spirv = i ? twice_spirv : add_one_spirv,
                                      .spirv_words =
                                          i ? sizeof twice_spirv / 4 : sizeof add_one_spirv / 4};
            (void)take(s, cubec_kernel_create(s->d, &desc, &s->kernels[i]));
        }
    }
    int idx;
    cubec_stream stream = pick_stream(s, &idx);
    uint8_t k = u8(s);
    cubec_launch_desc desc = {.kernel = s->kernels[k % 2]};
    if (k >= 250) desc.kernel.id = k == 255 ? u64(s) : s->kernels[k % 2].id + 1;
    cubec_buffer bufs[3];
    handle *used[3];
    desc.buffer_count = u8(s) % 4;
    for (uint32_t i = 0; i < desc.buffer_count; i++) {
        used[i] = pick_handle(s);
        bufs[i] = used[i]->h;
    }
    desc.buffers = desc.buffer_count ? bufs : NULL;
    uint32_t n = u16(s), info_size = u8(s) % 8 ? 4 : u8(s) % 9;
    desc.info = info_size ? &n : NULL;
    desc.info_size = info_size;
    for (int i = 0; i < 3; i++) {
        uint8_t g = u8(s);
        desc.groups[i] = g == 255 ? (uint32_t)u64(s) : g % 4 + (i == 0);
    }
    s->call = "cubec_launch";
    cubec_status st = cubec_launch(s->d, stream, &desc);
    int stale = idx < 0;
    for (uint32_t i = 0; i < desc.buffer_count; i++)
        stale |= !used[i]->live;
    if (stale) {
        refused(s, st);
        return;
    }
    cubec_code c = take(s, st);
    if (c == CUBEC_OK && s->recording[idx]) {
        for (uint32_t i = 0; i < desc.buffer_count; i++)
            touch(s, &s->capture[idx], used[i]->st);
        record(s, idx, (gop){.kind = GOP_LAUNCH});
        return;
    }
    int taint = c != CUBEC_OK; /* a launch whose input carries a failure is skipped */
    for (uint32_t i = 0; i < desc.buffer_count; i++)
        taint |= s->stores[used[i]->st].tainted;
    for (uint32_t i = 0; i < desc.buffer_count; i++) {
        store *t = &s->stores[used[i]->st];
        queued_on(s, used[i]->st, idx);
        if (c == CUBEC_OK) t->users |= 1u << idx;
        if (taint) t->tainted = 1;
        /* a failed launch may or may not have marked its outputs: forget the bytes */
        if (c != CUBEC_OK || s->fault_armed || KERNELS_RUN) forget(t, used[i]->off, used[i]->size);
    }
}

static void op_flush_sync(state *s)
{
    int idx;
    cubec_stream stream = pick_stream(s, &idx);
    uint8_t b = u8(s) % 3;
    s->call = b == 0 ? "cubec_flush" : b == 1 ? "cubec_sync" : "cubec_sync_check";
    cubec_buffer list[2] = {pick_handle(s)->h, pick_handle(s)->h};
    cubec_status st = b == 0   ? cubec_flush(s->d, stream)
                      : b == 1 ? cubec_sync(s->d, stream)
                               : cubec_sync_check(s->d, stream, list, 2);
    if (idx < 0 || (b != 0 && s->recording[idx])) {
        refused(s, st);
        return;
    }
    if (take(s, st) == CUBEC_OK && b == 1) sync_done(s, idx);
}

static void op_check(state *s)
{
    cubec_buffer list[4];
    uint32_t n = u8(s) % 5;
    for (uint32_t i = 0; i < n; i++)
        list[i] = pick_handle(s)->h;
    s->call = "cubec_check";
    (void)take(s, cubec_check(s->d, n ? list : NULL, n));
}

static void op_stream_new(state *s)
{
    if (s->nstreams == NSTREAMS) return;
    s->call = "cubec_stream_new";
    cubec_stream id = 0;
    if (take(s, cubec_stream_new(s->d, &id)) == CUBEC_OK) s->streams[s->nstreams++] = id;
}

/* Graph calls. Which graph slot and whether its graph is live come from the input; the model
 * follows each stream's recording (begin succeeded, no end since) and each graph's operations. */
static void op_graph(state *s)
{
    int idx;
    cubec_stream stream = pick_stream(s, &idx);
    uint8_t b = u8(s);
    int gi = b / 8 % NGRAPHS;
    cubec_graph *g = &s->graphs[gi];
    cubec_status st = NULL;
    switch (b % 5) {
    case 0:
        s->call = "cubec_graph_prepare";
        st = cubec_graph_prepare(s->d, stream);
        break;
    case 1:
        s->call = "cubec_graph_begin";
        st = cubec_graph_begin(s->d, stream);
        if (!st && idx >= 0) {
            graph_model_drop(s, &s->capture[idx]);
            s->recording[idx] = 1;
        }
        break;
    case 2: {
        s->call = "cubec_graph_end";
        cubec_graph out = {0};
        st = cubec_graph_end(s->d, stream, &out);
        if (idx >= 0 && s->recording[idx]) { /* the stream is usable again either way */
            s->recording[idx] = 0;
            graph_model *cap = &s->capture[idx];
            if (!st) {
                s->call = "cubec_graph_destroy (the slot's old graph)";
                (void)take(s, cubec_graph_destroy(s->d, stream, *g));
                graph_model_drop(s, &s->gmodels[gi]);
                *g = out;
                s->gmodels[gi] = *cap; /* its references move with it */
                memset(cap, 0, sizeof *cap);
            } else { /* what the capture recorded never runs and carries the failure */
                for (int i = 0; i < NHANDLES; i++)
                    if (cap->touched[i]) s->stores[i].tainted = 1;
                graph_model_drop(s, cap);
            }
            s->call = "cubec_graph_end";
        } else if (!st && !s->fault_armed) {
            fail(s, "a graph came from a stream that did not record", NULL);
        }
        break;
    }
    case 3:
        s->call = "cubec_graph_replay";
        st = cubec_graph_replay(s->d, stream, *g);
        if (idx >= 0 && (!g->id || s->recording[idx])) {
            refused(s, st);
            return;
        }
        if (!st) {
            replay_model(s, &s->gmodels[gi], idx);
        } else if (idx >= 0) { /* its outputs carry the failure */
            for (int i = 0; i < NHANDLES; i++)
                if (s->gmodels[gi].touched[i]) s->stores[i].tainted = 1;
        }
        break;
    default:
        s->call = "cubec_graph_destroy";
        st = cubec_graph_destroy(s->d, stream, *g);
        if (!st) {
            g->id = 0;
            graph_model_drop(s, &s->gmodels[gi]);
        }
        break;
    }
    if (idx < 0 && b % 5 != 4)
        refused(s, st);
    else
        (void)take(s, st);
}

static void op_fault(state *s)
{
    uint8_t b = u8(s);
    cubec_fault_kind kind = (cubec_fault_kind)(b % (CUBEC_FAULT_KIND_COUNT + 1));
    uint64_t nth = u8(s) % 4;
    s->call = "cubec_fault_inject";
    cubec_status st = cubec_fault_inject(s->d, kind, nth);
    if (kind == CUBEC_FAULT_KIND_COUNT) {
        refused(s, st);
        return;
    }
    if (take(s, st) == CUBEC_OK && nth) {
        s->fault_armed = 1;
        forget_all(s);
    }
}

static void event_drop(state *s, event_slot *e)
{
    cubec_event_free(e->ev);
    free(e->dst);
    free(e->want);
    free(e->known);
    store_unref(s, e->st);
    memset(e, 0, sizeof *e);
}

/* The event's outcome: a success hands back the bytes of when the read was queued. */
static void event_done(state *s, event_slot *e, cubec_status st)
{
    if (take_bytes(s, st) != CUBEC_OK || e->disturbed || s->fault_armed) return;
    compare(s, "an asynchronous read", 0, e->dst, e->want, e->known, e->size);
}

static void op_read_async(state *s)
{
    event_slot *e = &s->events[u8(s) % NEVENTS];
    if (e->ev) { /* the slot is busy: wait for it, poll it, or free it without waiting */
        uint8_t how = u8(s) % 3;
        if (how == 0) {
            s->call = "cubec_event_wait";
            event_done(s, e, cubec_event_wait(e->ev));
        } else if (how == 1) {
            s->call = "cubec_event_query";
            cubec_status st = cubec_event_query(e->ev);
            if (cubec_status_code(st) == CUBEC_NOT_READY) {
                cubec_status_free(st);
                return; /* still pending: the slot stays busy */
            }
            event_done(s, e, st);
        }
        event_drop(s, e);
        return;
    }
    int idx;
    cubec_stream stream = pick_stream(s, &idx);
    handle *h = pick_handle(s);
    uint64_t off = pick_offset(s, h->size), size = pick_size(s) % (MAX_SIZE + 1);
    unsigned char *dst = malloc(size + 1);
    if (!dst) abort();
    s->call = "cubec_read_async";
    cubec_event *ev = NULL;
    cubec_status st = cubec_read_async(s->d, stream, h->h, off, dst, size, &ev);
    if (!h->live || idx < 0 || !in_range(off, size, h->size) || s->recording[idx]) {
        refused(s, st);
    } else if (take_bytes(s, st) == CUBEC_OK) {
        const store *t = &s->stores[h->st];
        *e = (event_slot){.ev = ev, .dst = dst, .size = size, .st = h->st, .stream = idx};
        e->want = malloc(size + 1);
        e->known = calloc(size + 1, 1);
        if (!e->want || !e->known) abort();
        memcpy(e->want, t->val + h->off + off, size);
        if (!unordered(t, idx)) memcpy(e->known, t->known + h->off + off, size);
        s->stores[h->st].refs++; /* the model's bytes outlive the handle, as the memory does */
        return;
    }
    if (ev) fail(s, "an out_event set on failure", NULL);
    free(dst);
}

static void op_memory(state *s)
{
    int idx;
    cubec_stream stream = pick_stream(s, &idx);
    uint8_t b = u8(s) % 3;
    if (b == 0) {
        s->call = "cubec_memory_cleanup";
        cubec_status st = cubec_memory_cleanup(s->d, stream);
        if (idx < 0 || recording_any(s))
            refused(s, st);
        else
            (void)take(s, st);
        return;
    }
    char *text = NULL;
    s->call = b == 1 ? "cubec_memory_report_json" : "cubec_memory_report_table";
    cubec_status st =
        b == 1 ? cubec_memory_report_json(s->d, &text) : cubec_memory_report_table(s->d, &text);
    if (take(s, st) == CUBEC_OK && (!text || !*text)) fail(s, "an empty report", NULL);
    cubec_string_free(text);
}

static void op_size(state *s)
{
    handle *h = pick_handle(s);
    uint64_t size = 0;
    s->call = "cubec_buffer_size";
    cubec_status st = cubec_buffer_size(s->d, h->h, &size);
    if (!h->live) {
        refused(s, st);
    } else if (take(s, st) == CUBEC_OK && size != h->size) {
        fail(s, "a size other than the buffer's", NULL);
    }
}

/* Ends a profile on its own stream and checks the result: a time between the calls, or a
 * zeroed result and a code a profile may end with. */
static void profile_end(state *s, profile_slot *p)
{
    cubec_profile_result r;
    memset(&r, 0xab, sizeof r);
    s->call = "cubec_profile_end";
    cubec_status st = cubec_profile_end(s->d, s->streams[p->stream], p->p, &r);
    uint64_t t1 = now_ns();
    cubec_code c = cubec_status_code(st);
    if (s->recording[p->stream] && !st) fail(s, "a measurement while the stream records", NULL);
    if (st && !s->fault_armed && c != CUBEC_PROFILE_INVALID && c != CUBEC_GRAPH_STATE)
        fail(s, "a failure other than CUBEC_PROFILE_INVALID or CUBEC_GRAPH_STATE", st);
    (void)take(s, st);
    if (c != CUBEC_OK) {
        static const cubec_profile_result zero;
        if (memcmp(&r, &zero, sizeof r)) fail(s, "a failed end left its result unzeroed", NULL);
    } else if (!s->fault_armed) { /* after a fault, a begin lost with its submission is known */
        if (r.method != s->method) fail(s, "a result in another method", NULL);
        if (r.end_ns < r.begin_ns || r.duration_ns != r.end_ns - r.begin_ns)
            fail(s, "an interval that ends before it begins or has another duration", NULL);
        /* null's timestamps are the host clock itself; a Vulkan device's are converted */
        if (!KERNELS_RUN && (r.begin_ns + 1000 < p->t0 || r.end_ns > t1 + 1000))
            fail(s, "an interval outside the calls", NULL);
    }
    /* The token is consumed, also on error. */
    s->call = "cubec_profile_abandon (of an ended profile)";
    refused(s, cubec_profile_abandon(s->d, s->streams[p->stream], p->p));
    memset(p, 0, sizeof *p);
}

static void op_profile(state *s)
{
    profile_slot *p = &s->profiles[u8(s) % NPROFILES];
    uint8_t how = u8(s) % 4;
    if (!p->live) {
        int idx;
        cubec_stream stream = pick_stream(s, &idx);
        cubec_profile out = {0};
        uint64_t t0 = now_ns();
        s->call = "cubec_profile_begin";
        cubec_status st = cubec_profile_begin(s->d, stream, &out);
        if (idx < 0 || s->recording[idx]) {
            refused(s, st);
        } else if (take(s, st) == CUBEC_OK) {
            *p = (profile_slot){.p = out, .live = 1, .stream = idx, .t0 = t0};
            return;
        }
        if (out.id) fail(s, "a failed begin wrote its out_profile", NULL);
        return;
    }
    if (how < 2) {
        profile_end(s, p);
        return;
    }
    if (how == 2 && s->nstreams > 1) { /* another stream: refused; whether the token is consumed
                                          is not said, so it is abandoned either way */
        cubec_profile_result r;
        s->call = "cubec_profile_end (on another stream)";
        int other = (p->stream + 1) % s->nstreams;
        refused(s, cubec_profile_end(s->d, s->streams[other], p->p, &r));
        s->call = "cubec_profile_abandon (after a refused end)";
        (void)take(s, cubec_profile_abandon(s->d, s->streams[p->stream], p->p));
        memset(p, 0, sizeof *p);
        return;
    }
    s->call = "cubec_profile_abandon";
    (void)take(s, cubec_profile_abandon(s->d, s->streams[p->stream], p->p));
    cubec_profile stale = p->p;
    memset(p, 0, sizeof *p);
    cubec_profile_result r;
    s->call = "cubec_profile_end (of an abandoned profile)";
    refused(s, cubec_profile_end(s->d, s->streams[0], stale, &r));
}

typedef void (*op_fn)(state *s);
static const op_fn ops[] = {op_create, op_create,     op_view,   op_retain_release, op_write,
                            op_write,  op_read,       op_read,   op_copy,           op_fill,
                            op_launch, op_flush_sync, op_check,  op_graph,          op_stream_new,
                            op_fault,  op_read_async, op_memory, op_size,           op_graph,
                            op_profile};

/* Frees the events, ends the profiles, releases every live handle, destroys the graphs and
 * kernels, closes. */
static void finish(state *s)
{
    for (int e = 0; e < NEVENTS; e++)
        if (s->events[e].ev) event_drop(s, &s->events[e]);
    for (int i = 0; i < NPROFILES; i++) {
        if (!s->profiles[i].live) continue;
        s->call = "cubec_profile_abandon (at the end)";
        (void)take(
            s, cubec_profile_abandon(s->d, s->streams[s->profiles[i].stream], s->profiles[i].p));
    }
    for (int i = 0; i < NHANDLES; i++) {
        handle *h = &s->handles[i];
        s->call = "cubec_buffer_release (at the end)";
        while (h->live && h->refs > 0) {
            (void)take(s, cubec_buffer_release(s->d, h->h));
            if (--h->refs == 0) store_unref(s, h->st);
        }
    }
    for (int i = 0; i < NGRAPHS; i++) {
        s->call = "cubec_graph_destroy (at the end)";
        (void)take(s, cubec_graph_destroy(s->d, CUBEC_STREAM_CURRENT, s->graphs[i]));
        graph_model_drop(s, &s->gmodels[i]);
    }
    for (int i = 0; i < NSTREAMS; i++)
        graph_model_drop(s, &s->capture[i]);
    for (int i = 0; i < 2; i++) {
        s->call = "cubec_kernel_destroy (at the end)";
        (void)take(s, cubec_kernel_destroy(s->d, s->kernels[i]));
    }
    cubec_device_close(s->d);
}

#ifdef FUZZ_API_VULKAN
/* Any validation message is a bug of cubec's (the tests hold the same rule). */
static void on_validation(void *user, const char *message)
{
    (void)user;
    fprintf(stderr, "fuzz_api_lavapipe: validation message: %s\n", message);
    abort();
}
#endif

/* Opens the input's device: null, or lavapipe with the validation layer. The first byte is
 * tasks_max (0: the default). */
static void open_device(state *s)
{
    s->call = "cubec_device_open";
    cubec_device_desc desc = {.tasks_max = u8(s) % 9};
#ifdef FUZZ_API_VULKAN
    static int pinned;
    if (!pinned) { /* as tests/common/test_util.c: LeakSanitizer names what they keep */
        pinned = 1;
        dlopen("libvulkan_lvp.so", RTLD_NOW | RTLD_NODELETE);
        dlopen("libVkLayer_khronos_validation.so", RTLD_NOW | RTLD_NODELETE);
    }
    desc.backend = "vulkan";
    desc.name = "llvmpipe";
    /* CUBEC_TEST_VALIDATION=0, as for the tests: without the layer, whose allocations per
     * device LeakSanitizer would report (docs/reliability.md, "Fuzzing"). */
    const char *v = getenv("CUBEC_TEST_VALIDATION");
    desc.validation = !(v && v[0] == '0');
    desc.on_validation = on_validation;
#else
    desc.backend = "null";
#endif
    cubec_status st = cubec_device_open(&desc, &s->d);
    if (st) fail(s, "the device did not open", st);
    s->call = "cubec_device_get_info";
    if ((st = cubec_device_get_info(s->d, &s->info))) fail(s, "no info", st);
    s->call = "cubec_profile_method";
    if ((st = cubec_profile_method(s->d, &s->method))) fail(s, "no profile method", st);
    s->call = "cubec_stream_current";
    if ((st = cubec_stream_current(s->d, &s->streams[0]))) fail(s, "no current stream", st);
    s->nstreams = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static state s;
    memset(&s, 0, sizeof s);
    s.in = (input){data, size};
    open_device(&s);
    for (int steps = 0; s.in.n && steps < 256; steps++)
        ops[u8(&s) % (sizeof ops / sizeof ops[0])](&s);
    finish(&s);
    return 0;
}
