/* libFuzzer harness: the input bytes as a sequence of public API calls on the null backend.
 *
 * Each input opens a fresh null device (milliseconds, and nothing carries over from one input to
 * the next, so every crash replays from its file alone), then reads one opcode byte at a time and
 * the arguments of that call from the bytes that follow: buffers, views, retains and releases;
 * writes, reads, copies and fills at ranges that are often out of bounds or misaligned; launches
 * of two fixed kernels with right and wrong bindings, metadata and group counts; flushes, syncs and
 * checks; new streams and made-up stream ids; graph prepare/begin/end/replay/destroy; injected
 * faults; asynchronous reads and their events; memory reports and cleanup. Handles that were
 * released stay in their slots, so later calls use them stale. At the end everything still alive
 * is released and the device closed, so LeakSanitizer sees a leak of cubec's as a leak.
 *
 * It aborts on a crash or sanitizer report (libFuzzer does that) and on a broken invariant:
 *  - every error code is one of cubec.h's CUBEC_CODES with a non-empty message, and a code that
 *    only a fault can cause (CUBEC_INTERNAL, CUBEC_DEVICE_LOST, CUBEC_TIMEOUT) appears only after
 *    a fault was armed;
 *  - a call with an argument that cubec.h says is refused (a released handle, a range past the
 *    end, a copy or fill not in multiples of 4, a stream id of no open device) fails;
 *  - a successful cubec_read returns the bytes a host model holds. The null backend carries out
 *    writes, copies and fills exactly and runs no kernels (a launch keeps its outputs' bytes), so
 *    the model keeps each allocation's bytes and whether each is known. It gives up on bytes it
 *    cannot know rather than guess: bytes never written, bytes written while a graph capture is
 *    open anywhere (refused lazily, or written only by a replay), every byte after a replay or an
 *    armed fault, the destination of a call that failed, and bytes another stream has queued
 *    work on since its last sync (streams are not ordered with each other).
 * test_random_null.c (tests/null) holds the full model; this one stays small so that the fuzzer
 * runs fast and a report is easy to read. */
#include <cubec/cubec.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NHANDLES 8 /* buffer and view slots */
#define NSTREAMS 4 /* slot 0: the thread's current stream */
#define NEVENTS 2
#define NGRAPHS 2
#define MAX_SIZE 1024 /* the largest buffer the model keeps bytes for */

typedef struct store { /* one allocation: the model's bytes */
    int refs;          /* handles and events that keep it alive */
    uint64_t size;
    unsigned char *val, *known;
    uint32_t users; /* streams with work queued on it since their last sync */
} store;

typedef struct handle {
    cubec_buffer h;
    int live, refs, st; /* st: index of its store */
    uint64_t off, size;
} handle;

typedef struct input {
    const uint8_t *p;
    size_t n;
} input;

typedef struct state {
    input in;
    cubec_device *d;
    cubec_device_info info;
    cubec_stream streams[NSTREAMS];
    int nstreams;
    store stores[NHANDLES];
    handle handles[NHANDLES];
    cubec_event *events[NEVENTS];
    unsigned char *event_dst[NEVENTS];
    int event_st[NEVENTS];
    cubec_graph graphs[NGRAPHS];
    cubec_kernel kernels[2];
    int kernels_made;
    int capturing;    /* a graph_prepare or graph_begin succeeded and no graph_end since */
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
    if (from && size <= MAX_SIZE && !s->capturing && !s->fault_armed) {
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
    if (c != CUBEC_OK || s->capturing || s->fault_armed || unordered(t, idx)) {
        forget(t, h->off + off, size);
        return;
    }
    memcpy(t->val + h->off + off, data, size);
    memset(t->known + h->off + off, 1, size);
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
    if (!h->live || idx < 0 || !in_range(off, size, h->size)) {
        refused(s, st);
        return;
    }
    if (take(s, st) != CUBEC_OK) return;
    const store *t = &s->stores[h->st];
    if (unordered(t, idx)) return;
    for (uint64_t i = 0; i < size; i++) {
        uint64_t at = h->off + off + i;
        if (t->known[at] && t->val[at] != got[i]) {
            fprintf(stderr,
                    "fuzz_api: cubec_read of %llu bytes at %llu: byte %llu is 0x%02x, the model "
                    "says 0x%02x\n",
                    (unsigned long long)size, (unsigned long long)off, (unsigned long long)i,
                    got[i], t->val[at]);
            abort();
        }
    }
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
    if (c != CUBEC_OK || s->capturing || s->fault_armed || unordered(ts, idx) ||
        unordered(td, idx)) {
        forget(td, ad, size);
    } else { /* refused when the ranges overlap in one allocation, so memmove is exact */
        memmove(td->val + ad, ts->val + as, size);
        memmove(td->known + ad, ts->known + as, size);
    }
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
    if (c != CUBEC_OK || s->capturing || s->fault_armed || unordered(t, idx)) {
        forget(t, at, size);
    } else {
        for (uint64_t i = 0; i < size; i++)
            t->val[at + i] = (unsigned char)(pattern >> (8 * (i % 4)));
        memset(t->known + at, 1, size);
    }
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
 * kernel, with handles, metadata and group counts from the input. The null backend runs no kernel:
 * the outputs keep their bytes, so the model changes only what it knows about the ordering. */
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
    for (uint32_t i = 0; i < desc.buffer_count; i++) {
        store *t = &s->stores[used[i]->st];
        if (!used[i]->live) continue;
        if (c == CUBEC_OK) t->users |= 1u << idx;
        /* a failed launch may or may not have marked its outputs: forget the bytes */
        if (c != CUBEC_OK || s->capturing || s->fault_armed) forget(t, used[i]->off, used[i]->size);
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
    if (idx < 0) {
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

static void op_graph(state *s)
{
    int idx;
    cubec_stream stream = pick_stream(s, &idx);
    uint8_t b = u8(s);
    cubec_graph *g = &s->graphs[b / 8 % NGRAPHS];
    cubec_status st = NULL;
    switch (b % 5) {
    case 0:
        s->call = "cubec_graph_prepare";
        st = cubec_graph_prepare(s->d, stream);
        if (!st) s->capturing = 1;
        break;
    case 1:
        s->call = "cubec_graph_begin";
        st = cubec_graph_begin(s->d, stream);
        if (!st) s->capturing = 1;
        break;
    case 2: {
        s->call = "cubec_graph_end";
        cubec_graph out = {0};
        st = cubec_graph_end(s->d, stream, &out);
        if (!st) {
            s->call = "cubec_graph_destroy (the slot's old graph)";
            (void)take(s, cubec_graph_destroy(s->d, stream, *g));
            *g = out;
        }
        /* Which stream's capture ended is not modelled: think of it as open until all end. */
        if (!st && u8(s) & 1) s->capturing = 0;
        break;
    }
    case 3:
        s->call = "cubec_graph_replay";
        st = cubec_graph_replay(s->d, stream, *g);
        if (!st) {
            forget_all(s);
            for (int i = 0; i < NHANDLES; i++)
                s->stores[i].users |= 1u << (idx < 0 ? 0 : idx);
        }
        break;
    default:
        s->call = "cubec_graph_destroy";
        st = cubec_graph_destroy(s->d, stream, *g);
        if (!st) g->id = 0;
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

static void op_read_async(state *s)
{
    int e = u8(s) % NEVENTS;
    if (s->events[e]) { /* the slot is busy: wait for it, or free it without waiting */
        s->call = "cubec_event_wait";
        if (u8(s) & 1) (void)take(s, cubec_event_wait(s->events[e]));
        cubec_event_free(s->events[e]);
        s->events[e] = NULL;
        free(s->event_dst[e]);
        s->event_dst[e] = NULL;
        store_unref(s, s->event_st[e]);
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
    if (!h->live || idx < 0 || !in_range(off, size, h->size)) {
        refused(s, st);
    } else if (take(s, st) == CUBEC_OK) {
        s->events[e] = ev;
        s->event_dst[e] = dst;
        s->event_st[e] = h->st;
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
        if (idx < 0)
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

typedef void (*op_fn)(state *s);
static const op_fn ops[] = {
    op_create,     op_create, op_view,       op_retain_release, op_write,      op_write, op_read,
    op_read,       op_copy,   op_fill,       op_launch,         op_flush_sync, op_check, op_graph,
    op_stream_new, op_fault,  op_read_async, op_memory,         op_size};

/* Frees the events, releases every live handle, destroys the graphs and kernels, closes. */
static void finish(state *s)
{
    for (int e = 0; e < NEVENTS; e++) {
        if (!s->events[e]) continue;
        cubec_event_free(s->events[e]);
        free(s->event_dst[e]);
        store_unref(s, s->event_st[e]);
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
    }
    for (int i = 0; i < 2; i++) {
        s->call = "cubec_kernel_destroy (at the end)";
        (void)take(s, cubec_kernel_destroy(s->d, s->kernels[i]));
    }
    cubec_device_close(s->d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static state s;
    memset(&s, 0, sizeof s);
    s.in = (input){data, size};
    s.call = "cubec_device_open";
    cubec_device_desc desc = {.backend = "null", .tasks_max = u8(&s) % 9};
    cubec_status st = cubec_device_open(&desc, &s.d);
    if (st) fail(&s, "the null device did not open", st);
    s.call = "cubec_device_get_info";
    if ((st = cubec_device_get_info(s.d, &s.info))) fail(&s, "no info", st);
    s.call = "cubec_stream_current";
    if ((st = cubec_stream_current(s.d, &s.streams[0]))) fail(&s, "no current stream", st);
    s.nstreams = 1;
    for (int steps = 0; s.in.n && steps < 256; steps++)
        ops[u8(&s) % (sizeof ops / sizeof ops[0])](&s);
    finish(&s);
    return 0;
}
