/* A randomized sequence of API calls on the null backend, checked against a host model.
 *
 * The null device carries out copies and fills exactly, so the test keeps every byte of every
 * allocation: its value (when defined) and whether it may or must carry a failure. Each episode
 * opens a device with a random tasks_max and completion delay, makes a few streams, and runs a
 * few hundred random steps: buffers and views created, retained and released; writes, reads,
 * copies and fills at random (sometimes refused) ranges; flushes, syncs and checks; asynchronous
 * reads; profiles; graph captures of copies and fills, with their wrong transitions, replays and
 * destruction; memory reports and cleanup; injected submit, page and map faults; and calls with
 * released handles, made-up ids and out-of-range or misaligned arguments. Then it closes the
 * device with whatever is still alive. It fails on a crash, a sanitizer report, or a broken
 * invariant:
 *  - every call's error code is one cubec.h / docs allow for it in that state (refusals are
 *    CUBEC_INVALID_ARGUMENT, capture-window refusals CUBEC_GRAPH_STATE, ...), and an
 *    injected fault's CUBEC_INTERNAL / CUBEC_OUT_OF_MEMORY appears only when one fired;
 *  - a successful read returns exactly the model's defined bytes; a read of bytes that must carry
 *    a failure fails, one of bytes that cannot carry one succeeds, and a failure's message names
 *    the buffer's number and a cause the model allows (the injected fault, a task dropped with a
 *    lost submission, a refused write or a discarded capture);
 *  - after all streams are synced, each stream's memory report shows exactly the bytes and
 *    allocations the model holds alive; cleanup then returns every page of a stream that holds
 *    nothing.
 * What the model cannot know, it does not assert. After an injected submit fault fires, what the
 * work queued since it was armed would have written may carry a failure (the "may fail" state)
 * until a host write, a fill or a copy from good bytes writes it again. Where cubec does not order
 * work (a write on one stream of a buffer that another stream has a queued read or write of: a
 * race, docs/api.md), the test syncs the other stream first.
 *
 * Environment: CUBEC_FUZZ_SECONDS (default 3) bounds the run; CUBEC_FUZZ_SEED sets the seed
 * (printed at the start, and with any failure); CUBEC_FUZZ_EPISODE=n runs only episode n of that
 * seed; CUBEC_FUZZ_TRACE=1 prints every step. Episodes draw from their own generator, seeded from
 * the seed and their number, so an episode replays alone. Steps whose outcome depends on timing
 * (an event's readiness with a delayed device) do not change what is drawn afterwards. */
#include "test_util.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- limits ------------------------------------------------------------------------------- */

#define NSTREAMS 4     /* streams per episode: the thread's current one and three new ones */
#define MAX_HANDLES 40 /* buffer and view handles, live or released (for stale-handle calls) */
#define MAX_STORES 64  /* allocations the model tracks */
#define MAX_GRAPHS 4   /* live graphs */
#define MAX_GOPS 8     /* copies and fills a graph records */
#define MAX_EVENTS 4   /* pending asynchronous reads */
#define MAX_PROFILES 6 /* open profiles */
#define MAX_AT_RISK 4096
#define TRACE_RING 24

/* Per byte: its value is defined; it may carry a failure from an injected fault, or from a
 * refused write or a discarded capture (CUBEC_GRAPH_STATE); it surely carries one. */
enum { F_DEF = 1, F_MFAULT = 2, F_MGRAPH = 4, F_SURE = 8 };
#define F_KINDS (F_MFAULT | F_MGRAPH)
#define F_FAIL (F_KINDS | F_SURE)

/* ---- the model ---------------------------------------------------------------------------- */

typedef struct store {
    int used;
    uint32_t gen;
    uint64_t size, number; /* number: "buffer #n" in messages */
    unsigned char *val, *fl;
    int owner;        /* stream index */
    int refs;         /* live handles, graphs, a capture and events that hold it */
    uint32_t readers; /* streams with queued (maybe unexecuted) work reading it */
    uint32_t writers; /* streams with queued work writing it */
    int events;       /* pending asynchronous reads of it */
} store;

typedef struct handle {
    cubec_buffer h;
    int live, refs, store;
    uint64_t off, size;
} handle;

typedef struct gop { /* a copy or a fill, offsets within the allocations */
    int fill;
    int src, dst;
    uint64_t src_off, dst_off, size;
    uint32_t pattern;
} gop;

typedef struct graph {
    int live;
    cubec_graph g;
    int n;
    gop op[MAX_GOPS];
} graph;

typedef struct event {
    int live;
    cubec_event *e;
    int store;
    uint64_t off, size;
    unsigned char *dst, *want, *wfl; /* the model's bytes when the read was queued */
    int done;                        /* its bytes landed (a query or a wait said so) */
    int holds;                       /* it holds a reference on its store (until done) */
} event;

typedef struct profile {
    int live;
    cubec_profile p;
    int stream;
    int may_invalid, sure_invalid;
    int fault_seen;   /* a submit fault fired while it was open */
    uint64_t t_begin; /* host time before cubec_profile_begin */
} profile;

enum { CAP_NONE, CAP_PREPARED, CAP_RECORDING };

typedef struct risk {
    int store;
    uint32_t gen;
    uint64_t off, size;
} risk;

typedef struct fuzz {
    /* the run */
    uint64_t seed;
    unsigned episode;
    uint64_t step, rng;
    int trace;
    char ring[TRACE_RING][240];
    unsigned ring_at;
    char op[200];
    /* the device */
    cubec_device *d;
    uint32_t tasks_max, delay_us;
    uint64_t align, created;
    cubec_stream streams[NSTREAMS];
    store stores[MAX_STORES];
    handle handles[MAX_HANDLES];
    graph graphs[MAX_GRAPHS];
    event events[MAX_EVENTS];
    profile profiles[MAX_PROFILES];
    /* the capture */
    int cap, cap_stream, cap_doom, cap_kinds, cap_n;
    gop cap_op[MAX_GOPS];
    /* faults */
    uint64_t armed[CUBEC_FAULT_KIND_COUNT]; /* target count, 0 = not armed */
    risk at_risk[MAX_AT_RISK];
    uint32_t risk_count;
    int risk_overflow;
    int fired; /* a fault fired during the current step */
    cubec_timing method;
    /* statistics */
    uint64_t reads_checked, failures_seen, faults_fired, replays, refusals;
    uint32_t gens;
    /* A buffer of stream 0 no random step touches, and whether a submission was lost since a
     * later one completed (known bug lost-batch-holds-memory). */
    cubec_buffer scratch;
    int scratch_store, unsettled;
} fuzz;

static fuzz F;

/* ---- randomness and reporting ------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t rnd(void)
{
    F.rng = mix(F.rng);
    return F.rng;
}

static uint64_t below(uint64_t n)
{
    return n ? rnd() % n : 0;
}

static int chance(unsigned percent)
{
    return below(100) < percent;
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(F.op, sizeof F.op, fmt, ap);
    va_end(ap);
    snprintf(F.ring[F.ring_at++ % TRACE_RING], sizeof F.ring[0], "%" PRIu64 ": %s", F.step, F.op);
    if (F.trace) printf("  [%u.%" PRIu64 "] %s\n", F.episode, F.step, F.op);
}

static void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fuzz_fail(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("FAILED: seed 0x%016" PRIx64 " episode %u step %" PRIu64 " (tasks_max %u, delay %u us)\n"
           "  step: %s\n  %s\n  last steps:\n",
           F.seed, F.episode, F.step, F.tasks_max, F.delay_us, F.op, msg);
    for (unsigned i = 0; i < TRACE_RING; i++) {
        const char *line = F.ring[(F.ring_at + i) % TRACE_RING];
        if (*line) printf("    %s\n", line);
    }
    printf("  replay: CUBEC_FUZZ_SEED=0x%016" PRIx64 " CUBEC_FUZZ_EPISODE=%u CUBEC_FUZZ_TRACE=1\n",
           F.seed, F.episode);
    fflush(stdout);
    fail_msg("seed 0x%016" PRIx64 " episode %u step %" PRIu64 ": %s", F.seed, F.episode, F.step,
             msg);
}

/* Takes a status: returns its code (CUBEC_OK for NULL) and copies its message. */
static cubec_code take(cubec_status st, char *msg, size_t cap)
{
    cubec_code c = cubec_status_code(st);
    snprintf(msg, cap, "%s", cubec_status_message(st));
    cubec_status_free(st);
    return c;
}

#define CODE_BIT(c) (1u << (c))
#define OK_BIT CODE_BIT(CUBEC_OK)
#define INVALID_BIT CODE_BIT(CUBEC_INVALID_ARGUMENT)
#define STATE_BIT CODE_BIT(CUBEC_GRAPH_STATE)

static void check_faults(void);

/* Checks a call's outcome: its code must be in `allowed`; an injected fault's error (the message
 * names it) is allowed too when a fault fired during this step. Returns the code. */
static cubec_code verdict(cubec_status st, uint32_t allowed, char *msg, size_t cap)
{
    char local[2048];
    if (!msg) {
        msg = local;
        cap = sizeof local;
    }
    cubec_code c = take(st, msg, cap);
    check_faults();
    if (c == CUBEC_OK) {
        if (!(allowed & OK_BIT)) fuzz_fail("succeeded; expected an error");
        return c;
    }
    if (c == CUBEC_INVALID_ARGUMENT || c == CUBEC_GRAPH_STATE) F.refusals++;
    if (allowed & CODE_BIT(c)) return c;
    /* (cubec_profile_end whose own flush loses the profiled work: CUBEC_PROFILE_INVALID) */
    if (F.fired && strstr(msg, "injected fault") &&
        (c == CUBEC_INTERNAL || c == CUBEC_OUT_OF_MEMORY || c == CUBEC_PROFILE_INVALID))
        return c;
    fuzz_fail("returned %s (%s), which this call may not return here", cubec_code_name(c), msg);
    return c;
}

/* ---- model helpers ------------------------------------------------------------------------ */

/* The id passed for stream index s: index 0 is the thread's current stream, passed as 0 or as
 * its id. */
static cubec_stream sid(int s)
{
    if (s == 0 && chance(50)) return CUBEC_STREAM_CURRENT;
    return F.streams[s];
}

static store *st_of(const handle *h)
{
    return &F.stores[h->store];
}

static unsigned char range_flags(const store *s, uint64_t off, uint64_t size)
{
    unsigned char f = 0;
    for (uint64_t i = 0; i < size; i++)
        f |= s->fl[off + i];
    return f & F_FAIL;
}

static void mark(store *s, uint64_t off, uint64_t size, unsigned char bits)
{
    for (uint64_t i = 0; i < size; i++)
        s->fl[off + i] |= bits;
}

/* The bytes may or may not have been written by a call that returned an error: their value is
 * unknown, and they may carry a failure. */
static void unknown(store *s, uint64_t off, uint64_t size, unsigned char bits)
{
    for (uint64_t i = 0; i < size; i++)
        s->fl[off + i] = (unsigned char)((s->fl[off + i] & ~F_DEF) | bits);
}

static void model_write(store *s, uint64_t off, const unsigned char *data, uint64_t size)
{
    memcpy(s->val + off, data, size);
    memset(s->fl + off, F_DEF, size);
}

static void model_fill(store *s, uint64_t off, uint64_t size, uint32_t pattern)
{
    for (uint64_t i = 0; i < size; i += 4)
        memcpy(s->val + off + i, &pattern, 4);
    memset(s->fl + off, F_DEF, size);
}

/* A copy that is recorded or skipped: the destination takes the source's bytes, and whatever
 * failure any source byte may carry (a skipped copy taints its whole destination). */
static void model_copy(store *src, uint64_t so, store *dst, uint64_t dof, uint64_t size)
{
    unsigned char any = range_flags(src, so, size);
    unsigned char *v = malloc(size), *f = malloc(size);
    assert_non_null(v);
    assert_non_null(f);
    memcpy(v, src->val + so, size);
    memcpy(f, src->fl + so, size);
    for (uint64_t i = 0; i < size; i++) {
        dst->val[dof + i] = v[i];
        dst->fl[dof + i] = (unsigned char)((f[i] & F_DEF) | any);
    }
    free(v);
    free(f);
}

static void risk_add(int si, uint64_t off, uint64_t size)
{
    if (!F.armed[CUBEC_FAULT_SUBMIT] || !size) return;
    if (F.risk_count == MAX_AT_RISK) {
        F.risk_overflow = 1;
        return;
    }
    F.at_risk[F.risk_count++] = (risk){si, F.stores[si].gen, off, size};
}

static void profiles_may_invalid_all(void)
{
    for (int i = 0; i < MAX_PROFILES; i++)
        if (F.profiles[i].live) F.profiles[i].may_invalid = F.profiles[i].fault_seen = 1;
}

static void profiles_note(int stream, unsigned char flags)
{
    if (!(flags & F_FAIL)) return;
    for (int i = 0; i < MAX_PROFILES; i++) {
        profile *p = &F.profiles[i];
        if (!p->live || p->stream != stream) continue;
        p->may_invalid = 1;
        if (flags & F_SURE) p->sure_invalid = 1;
    }
}

/* Reads the fault counters: a fault whose call came marks what its submission may have lost. */
static void check_faults(void)
{
    int any = 0;
    for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++)
        any |= F.armed[k] != 0;
    if (!any) return;
    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    cubec_status st = cubec_fault_counts(F.d, counts);
    if (st) {
        char msg[512];
        take(st, msg, sizeof msg);
        fuzz_fail("cubec_fault_counts: %s", msg);
    }
    for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++) {
        if (!F.armed[k] || counts[k] < F.armed[k]) continue;
        F.armed[k] = 0;
        F.fired = 1;
        F.faults_fired++;
        if (k != CUBEC_FAULT_SUBMIT) continue;
        F.unsettled = 1;
        /* Everything queued since it was armed may have been in the lost submission. */
        for (uint32_t i = 0; i < F.risk_count; i++) {
            risk *r = &F.at_risk[i];
            store *s = &F.stores[r->store];
            if (s->used && s->gen == r->gen) mark(s, r->off, r->size, F_MFAULT);
        }
        if (F.risk_overflow)
            for (int i = 0; i < MAX_STORES; i++)
                if (F.stores[i].used) mark(&F.stores[i], 0, F.stores[i].size, F_MFAULT);
        F.risk_count = 0;
        F.risk_overflow = 0;
        profiles_may_invalid_all();
    }
}

static void store_unref(int si)
{
    store *s = &F.stores[si];
    assert_true(s->refs > 0);
    if (--s->refs) return;
    free(s->val);
    free(s->fl);
    s->val = s->fl = NULL;
    s->used = 0;
}

/* The stream's queued work has all been recorded and submitted (a flush, sync, read or write on
 * it): its reads and writes are no longer pending. */
static void stream_drained(int s)
{
    for (int i = 0; i < MAX_STORES; i++) {
        F.stores[i].readers &= ~(1u << s);
        F.stores[i].writers &= ~(1u << s);
    }
}

/* ---- events ------------------------------------------------------------------------------- */

static void event_check_bytes(event *e)
{
    for (uint64_t i = 0; i < e->size; i++)
        if ((e->wfl[i] & F_DEF) && e->dst[i] != e->want[i])
            fuzz_fail("asynchronous read of buffer #%" PRIu64 " at %" PRIu64 ": byte %" PRIu64
                      " is 0x%02x, expected 0x%02x",
                      F.stores[e->store].number, e->off, e->off + i, e->dst[i], e->want[i]);
    F.reads_checked++;
}

/* The bytes landed: cubec lets go of the source's memory. */
static void event_done(event *e)
{
    if (e->done) return;
    e->done = 1;
    if (!e->holds) return;
    e->holds = 0;
    F.stores[e->store].events--;
    store_unref(e->store);
}

/* Waits for the event (unless it is only freed), checks its bytes and frees it. */
static void event_finish(event *e, int free_only)
{
    if (!free_only && !e->done) {
        cubec_status st = cubec_event_wait(e->e);
        if (verdict(st, OK_BIT, NULL, 0) == CUBEC_OK) event_check_bytes(e);
    }
    cubec_event_free(e->e);
    event_done(e);
    free(e->dst);
    free(e->want);
    free(e->wfl);
    memset(e, 0, sizeof *e);
}

/* ---- ordering discipline ------------------------------------------------------------------ */

static void sync_stream(int s, const char *why);

enum { W_DEVICE, W_HOST, W_LAZY };

/* Before work on stream `s` writes store `si`: other streams' queued reads and writes of it would
 * race with device work (docs/api.md), so they are synced first (W_DEVICE). A cubec_write waits
 * for queued work that uses the buffer (W_HOST and W_LAZY, a write refused lazily inside a
 * capture window: nothing to do). */
static void before_write(int s, int si, int how)
{
    store *t = &F.stores[si];
    uint32_t others = how == W_DEVICE ? t->readers | t->writers : 0;
    others &= ~(1u << s);
    for (int o = 0; o < NSTREAMS; o++)
        if (others & (1u << o)) sync_stream(o, "ordering");
}

/* ---- buffers ------------------------------------------------------------------------------ */

static int pick_handle(int live)
{
    int cand[MAX_HANDLES], n = 0;
    for (int i = 0; i < MAX_HANDLES; i++)
        if (F.handles[i].h.id && (live ? F.handles[i].live : !F.handles[i].live)) cand[n++] = i;
    return n ? cand[below((uint64_t)n)] : -1;
}

static int free_handle_slot(void)
{
    for (int i = 0; i < MAX_HANDLES; i++)
        if (!F.handles[i].h.id) return i;
    /* Forget a released one (its id stays refused by cubec). */
    for (int i = 0; i < MAX_HANDLES; i++)
        if (!F.handles[i].live) {
            memset(&F.handles[i], 0, sizeof F.handles[i]);
            return i;
        }
    return -1;
}

static int free_store_slot(void)
{
    for (int i = 0; i < MAX_STORES; i++)
        if (!F.stores[i].used) return i;
    return -1;
}

static uint64_t random_size(void)
{
    uint64_t r = below(100);
    if (r < 3) return 0;
    if (r < 60) return 1 + below(512);
    if (r < 92) return 1 + below(8192);
    if (r < 99) return 1 + below(65536);
    return (1u << 20) + below(4096);
}

static void release_handle(int hi);

static void op_create(void)
{
    int hi = free_handle_slot(), si = free_store_slot();
    if (hi < 0 || si < 0) {
        int victim = pick_handle(1);
        if (victim >= 0) release_handle(victim);
        return;
    }
    int s = (int)below(NSTREAMS);
    uint64_t size = random_size();
    int from = chance(40);
    unsigned char *data = NULL;
    if (from && size) {
        data = malloc(size);
        assert_non_null(data);
        for (uint64_t i = 0; i < size; i++)
            data[i] = (unsigned char)rnd();
    }
    note("%s(stream %d, %" PRIu64 " bytes)", from ? "cubec_buffer_from" : "cubec_buffer_create", s,
         size);
    cubec_buffer b = {0};
    cubec_status st = from ? cubec_buffer_from(F.d, sid(s), data, size, &b)
                           : cubec_buffer_create(F.d, sid(s), size, &b);
    F.created++; /* a creation that failed still used a number (docs/errors.md) */
    uint32_t allowed = OK_BIT;
    int capturing = F.cap == CAP_RECORDING && s == F.cap_stream;
    if (capturing) allowed |= STATE_BIT; /* kept from when a new page was refused there */
    char msg[2048];
    cubec_code c = verdict(st, allowed, msg, sizeof msg);
    if (c != CUBEC_OK && capturing) {
        /* spec 3.9 AddOnly: a creation that fails inside the window (an injected page or map
         * fault) dooms the capture with the creation's error */
        F.cap_doom = 2;
        F.cap_kinds |= c == CUBEC_GRAPH_STATE ? F_MGRAPH : F_MFAULT;
    }
    if (c != CUBEC_OK) {
        if (b.id) fuzz_fail("a failed creation wrote its out_buffer");
        free(data);
        return;
    }
    if (!b.id) fuzz_fail("a created buffer has id 0");
    store *t = &F.stores[si];
    memset(t, 0, sizeof *t);
    t->used = 1;
    t->gen = ++F.gens;
    t->size = size;
    t->number = F.created;
    t->val = calloc(size ? size : 1, 1);
    t->fl = calloc(size ? size : 1, 1);
    assert_non_null(t->val);
    assert_non_null(t->fl);
    t->owner = s;
    t->refs = 1;
    if (data && capturing) {
        /* the upload is a write inside the window: refused lazily, and it dooms the capture */
        mark(t, 0, size, F_MGRAPH | F_SURE);
        F.cap_doom = 2;
        F.cap_kinds |= F_MGRAPH;
    } else if (data) {
        model_write(t, 0, data, size);
        stream_drained(s);
    }
    free(data);
    F.handles[hi] = (handle){.h = b, .live = 1, .refs = 1, .store = si, .off = 0, .size = size};
}

static void op_view(void)
{
    int p = pick_handle(1), hi = free_handle_slot();
    if (p < 0 || hi < 0) return;
    handle *ph = &F.handles[p];
    uint64_t off = ph->size ? below(ph->size + 1) : 0;
    int misaligned = chance(10);
    if (!misaligned) off -= off % F.align;
    uint64_t size = below(ph->size - off + 1);
    int past = chance(5);
    if (past) size = ph->size - off + 1 + below(64);
    note("cubec_buffer_view(#%" PRIu64 " [%" PRIu64 ", +%" PRIu64 "] of %" PRIu64 ")",
         st_of(ph)->number, off, size, ph->size);
    cubec_buffer v = {0};
    cubec_status st = cubec_buffer_view(F.d, ph->h, off, size, &v);
    int bad = past || off % F.align;
    cubec_code c = verdict(st, bad ? INVALID_BIT : OK_BIT, NULL, 0);
    if (c != CUBEC_OK) {
        if (v.id) fuzz_fail("a refused view wrote its out_view");
        return;
    }
    F.handles[hi] = (handle){
        .h = v, .live = 1, .refs = 1, .store = ph->store, .off = ph->off + off, .size = size};
    st_of(ph)->refs++;
}

static void release_handle(int hi)
{
    handle *h = &F.handles[hi];
    note("cubec_buffer_release(#%" PRIu64 " handle %d, refs %d)", st_of(h)->number, hi, h->refs);
    verdict(cubec_buffer_release(F.d, h->h), OK_BIT, NULL, 0);
    if (--h->refs) return;
    h->live = 0;
    store_unref(h->store);
}

static void op_retain_release(void)
{
    int hi = pick_handle(1);
    if (hi < 0) return;
    handle *h = &F.handles[hi];
    if (chance(35) && h->refs < 4) {
        note("cubec_buffer_retain(#%" PRIu64 ")", st_of(h)->number);
        verdict(cubec_buffer_retain(F.d, h->h), OK_BIT, NULL, 0);
        h->refs++;
        return;
    }
    release_handle(hi);
}

static void op_size(void)
{
    int hi = pick_handle(1);
    if (hi < 0) return;
    handle *h = &F.handles[hi];
    note("cubec_buffer_size(#%" PRIu64 ")", st_of(h)->number);
    uint64_t size = 12345;
    verdict(cubec_buffer_size(F.d, h->h, &size), OK_BIT, NULL, 0);
    if (size != h->size) fuzz_fail("size %" PRIu64 ", expected %" PRIu64, size, h->size);
}

/* A range within a handle: mostly valid, sometimes past its end. */
static int pick_range(const handle *h, uint64_t word, uint64_t *off, uint64_t *size)
{
    if (chance(4)) {
        /* past the end, or an offset that overflows */
        if (chance(30)) {
            *off = UINT64_MAX - below(8) * word;
            *size = word * (1 + below(4));
        } else {
            *off = h->size - h->size % word;
            *size = word * (1 + below(16));
            if (*off + *size <= h->size) *size += word;
        }
        return 0;
    }
    uint64_t cells = h->size / word;
    uint64_t a = below(cells + 1), n = below(cells - a + 1);
    if (chance(50) && cells) { /* whole or large ranges are common in programs */
        a = below(2);
        if (a > cells) a = cells;
        n = cells - a;
    }
    *off = a * word;
    *size = n * word;
    return 1;
}

/* ---- checking reads ----------------------------------------------------------------------- */

/* Whether an error of code c with message msg may come from bytes with flags f. A task dropped
 * with a failed drain names what stopped it (docs/errors.md). */
static int failure_fits(cubec_code c, const char *msg, unsigned char f)
{
    int from_fault =
        c == CUBEC_INTERNAL && (strstr(msg, "injected fault") ||
                                strstr(msg, "was dropped: the drain it was queued in failed"));
    return (from_fault && (f & F_MFAULT)) || (c == CUBEC_GRAPH_STATE && (f & F_MGRAPH));
}

/* A read (or check) of [off, +size) of store s returned `c` / `msg` / `got`. */
static void judge_read(const char *verb, store *s, uint64_t off, uint64_t size, cubec_code c,
                       const char *msg, const unsigned char *got)
{
    unsigned char f = range_flags(s, off, size);
    if (c == CUBEC_OK) {
        if (f & F_SURE)
            fuzz_fail("%s of buffer #%" PRIu64 " [%" PRIu64 ", +%" PRIu64
                      ") succeeded; its bytes carry a failure",
                      verb, s->number, off, size);
        if (got) {
            for (uint64_t i = 0; i < size; i++)
                if ((s->fl[off + i] & F_DEF) && got[i] != s->val[off + i])
                    fuzz_fail("%s of buffer #%" PRIu64 ": byte %" PRIu64
                              " is 0x%02x, expected 0x%02x (flags 0x%x)",
                              verb, s->number, off + i, got[i], s->val[off + i], s->fl[off + i]);
            F.reads_checked++;
        }
        return;
    }
    F.failures_seen++;
    /* Only a failure on memory, or the fault that fired in this step, may fail a good read. A
     * task dropped with a failed drain names what stopped it (docs/errors.md). */
    int from_fault =
        c == CUBEC_INTERNAL && (strstr(msg, "injected fault") ||
                                strstr(msg, "was dropped: the drain it was queued in failed"));
    if (from_fault && F.fired) return; /* the drain of this very call lost a submission */
    if (!(f & F_KINDS))
        fuzz_fail("%s of buffer #%" PRIu64 " [%" PRIu64 ", +%" PRIu64
                  ") failed with %s (%s); its bytes carry no failure",
                  verb, s->number, off, size, cubec_code_name(c), msg);
    int code_ok = (from_fault && (f & F_MFAULT)) || (c == CUBEC_GRAPH_STATE && (f & F_MGRAPH));
    if (!code_ok)
        fuzz_fail("%s of buffer #%" PRIu64 " failed with %s (%s); the model allows %s%s", verb,
                  s->number, cubec_code_name(c), msg, f & F_MFAULT ? "an injected fault " : "",
                  f & F_MGRAPH ? "CUBEC_GRAPH_STATE" : "");
    char head[96];
    snprintf(head, sizeof head, "%s of buffer #%" PRIu64 ": not written: ", verb, s->number);
    if (strncmp(msg, head, strlen(head)))
        fuzz_fail("the failure \"%s\" does not start with \"%s\"", msg, head);
}

/* ---- transfers ---------------------------------------------------------------------------- */

/* An id no object of this device has: ids carry the device's tag in their top 16 bits (a random
 * id with the right tag would name a stream, or, rarely, a live object). */
static uint64_t made_up_id(void)
{
    uint64_t tag = F.streams[0] >> 48;
    uint64_t other = (tag + 1 + below(65535)) & 0xffff;
    return other << 48 | (rnd() & 0xffffffffffffull) | 1;
}

static int pick_stream_for_work(void)
{
    int s = F.cap != CAP_NONE && chance(50) ? F.cap_stream : (int)below(NSTREAMS);
    /* a capture the model has no room for: work goes to another stream */
    if (F.cap == CAP_RECORDING && s == F.cap_stream && F.cap_n >= MAX_GOPS) s = (s + 1) % NSTREAMS;
    return s;
}

static int recording_on(int s)
{
    return F.cap == CAP_RECORDING && s == F.cap_stream;
}

static void op_write(void)
{
    int hi = pick_handle(1);
    if (hi < 0) return;
    handle *h = &F.handles[hi];
    store *t = st_of(h);
    int s = pick_stream_for_work();
    uint64_t off, size;
    int valid = pick_range(h, chance(50) ? 4 : 1, &off, &size);
    unsigned char *data = calloc(size ? size : 1, 1);
    assert_non_null(data);
    if (valid)
        for (uint64_t i = 0; i < size; i++)
            data[i] = (unsigned char)rnd();
    note("cubec_write(stream %d, #%" PRIu64 " at %" PRIu64 " [%" PRIu64 ", +%" PRIu64 "])", s,
         t->number, h->off, off, size);
    /* A write refused lazily taints the bytes at once (lazy-write-war: it does not wait for the
     * reads and writes other streams queued before it). */
    int lazy = recording_on(s) && valid && size;
    if (valid && size) before_write(s, h->store, lazy ? W_LAZY : W_HOST);
    cubec_status st = cubec_write(F.d, sid(s), h->h, off, data, size);
    cubec_code c = verdict(st, valid ? OK_BIT : INVALID_BIT, NULL, 0);
    if (c == CUBEC_OK && valid && size) {
        if (lazy) {
            /* refused lazily: the bytes are not written and carry CUBEC_GRAPH_STATE */
            mark(t, h->off + off, size, F_MGRAPH | F_SURE);
            F.cap_doom = 2;
            F.cap_kinds |= F_MGRAPH;
        } else {
            model_write(t, h->off + off, data, size);
        }
    }
    if (c == CUBEC_OK && valid && size && !lazy) stream_drained(s);
    free(data);
}

static void op_read(void)
{
    int hi = pick_handle(1);
    if (hi < 0) return;
    handle *h = &F.handles[hi];
    store *t = st_of(h);
    int s = (int)below(NSTREAMS);
    uint64_t off, size;
    int valid = pick_range(h, chance(50) ? 4 : 1, &off, &size);
    unsigned char *got = malloc(size ? size : 1);
    assert_non_null(got);
    note("cubec_read(stream %d, #%" PRIu64 " at %" PRIu64 " [%" PRIu64 ", +%" PRIu64 "])", s,
         t->number, h->off, off, size);
    cubec_status st = cubec_read(F.d, sid(s), h->h, off, got, size);
    char msg[4096];
    if (recording_on(s)) {
        /* refused before the range is looked at */
        verdict(st, STATE_BIT, msg, sizeof msg);
    } else if (!valid) {
        verdict(st, INVALID_BIT, msg, sizeof msg);
    } else {
        cubec_code c = take(st, msg, sizeof msg);
        check_faults();
        judge_read("read", t, h->off + off, size, c, msg, got);
        if (c == CUBEC_OK && size) stream_drained(s);
    }
    free(got);
}

static void op_check(void)
{
    int n = 1 + (int)below(3);
    cubec_buffer list[3];
    int idx[3];
    for (int i = 0; i < n; i++) {
        idx[i] = pick_handle(1);
        if (idx[i] < 0) return;
        list[i] = F.handles[idx[i]].h;
    }
    int s = (int)below(NSTREAMS);
    int sync = chance(40);
    char what[160] = "";
    for (int i = 0; i < n; i++) {
        const handle *h = &F.handles[idx[i]];
        size_t at = strlen(what);
        snprintf(what + at, sizeof what - at, "%s#%" PRIu64 " [%" PRIu64 ", +%" PRIu64 ")",
                 i ? ", " : "", st_of(h)->number, h->off, h->size);
    }
    note("%s(stream %d: %s)", sync ? "cubec_sync_check" : "cubec_check", s, what);
    cubec_status st = sync ? cubec_sync_check(F.d, sid(s), list, (uint32_t)n)
                           : cubec_check(F.d, list, (uint32_t)n);
    char msg[4096];
    if (sync && recording_on(s)) {
        verdict(st, STATE_BIT, msg, sizeof msg);
        return;
    }
    cubec_code c = take(st, msg, sizeof msg);
    check_faults();
    if (c == CUBEC_OK) {
        for (int i = 0; i < n; i++) {
            handle *h = &F.handles[idx[i]];
            judge_read("check", st_of(h), h->off, h->size, c, msg, NULL);
        }
        if (sync) stream_drained(s);
        return;
    }
    /* The failure of the first listed buffer that carries one: before it, none may be sure. */
    if (c == CUBEC_INTERNAL && F.fired && strstr(msg, "injected fault")) return;
    for (int i = 0; i < n; i++) {
        handle *h = &F.handles[idx[i]];
        store *t = st_of(h);
        char head[96];
        snprintf(head, sizeof head, "check of buffer #%" PRIu64 ": not written: ", t->number);
        unsigned char f = range_flags(t, h->off, h->size);
        if (!strncmp(msg, head, strlen(head)) && failure_fits(c, msg, f)) return;
        if (f & F_SURE)
            fuzz_fail("check returned \"%s\", not the failure of buffers[%d] (#%" PRIu64 ")", msg,
                      i, t->number);
    }
    fuzz_fail("check failed with %s (%s); no listed buffer may carry that", cubec_code_name(c),
              msg);
}

static void op_copy(void)
{
    int a = pick_handle(1), b = pick_handle(1);
    if (a < 0 || b < 0) return;
    handle *hs = &F.handles[a], *hd = &F.handles[b];
    store *ts = st_of(hs), *td = st_of(hd);
    int s = pick_stream_for_work();
    uint64_t so, dof, size;
    int valid = 1;
    /* one range length that fits both, in words */
    uint64_t cells = (hs->size < hd->size ? hs->size : hd->size) / 4;
    size = 4 * below(cells + 1);
    so = 4 * below((hs->size - size) / 4 + 1);
    dof = 4 * below((hd->size - size) / 4 + 1);
    int kind = (int)below(100);
    if (kind < 3) {
        so += 1 + below(3); /* misaligned */
        valid = 0;
    } else if (kind < 6) {
        size += 2; /* not a multiple of 4 */
        valid = 0;
    } else if (kind < 9) {
        dof = hd->size - hd->size % 4 + 4 * below(3); /* past the end */
        if (!size) size = 4;
        valid = 0;
    }
    int same = hs->store == hd->store;
    uint64_t as = hs->off + so, ad = hd->off + dof;
    if (valid && same && size && as < ad + size && ad < as + size) valid = 0; /* overlap */
    unsigned char pre = valid ? range_flags(ts, as, size) : 0;
    note("cubec_copy(stream %d, #%" PRIu64 " at %" PRIu64 " [%" PRIu64 "] -> #%" PRIu64
         " at %" PRIu64 " [%" PRIu64 "], %" PRIu64 ")%s",
         s, ts->number, hs->off, so, td->number, hd->off, dof, size,
         pre & F_SURE    ? " (source fails)"
         : pre & F_KINDS ? " (source may fail)"
                         : "");
    int rec = recording_on(s);
    if (valid && size && !rec) before_write(s, hd->store, W_DEVICE);
    cubec_status st = cubec_copy(F.d, sid(s), hs->h, so, hd->h, dof, size);
    cubec_code c = verdict(st, valid ? OK_BIT : INVALID_BIT, NULL, 0);
    if (!valid || !size) return;
    unsigned char sf = range_flags(ts, as, size);
    if (c != CUBEC_OK) {
        /* A lost drain: the copy may not have been queued, or queued and lost with it, or queued
         * and skipped later for a failure of its source. */
        unknown(td, ad, size, (unsigned char)(F_MFAULT | (sf & F_KINDS)));
        return;
    }
    if (rec) {
        /* recorded, not run; an input that carries a failure dooms the capture */
        if (sf & F_SURE) F.cap_doom = 2;
        if ((sf & F_KINDS) && F.cap_doom < 1) F.cap_doom = 1;
        F.cap_kinds |= sf & F_KINDS;
        /* pick_stream_for_work keeps a full capture's work off its stream */
        if (F.cap_n >= MAX_GOPS) fuzz_fail("the model's capture is full");
        F.cap_op[F.cap_n++] = (gop){0, hs->store, hd->store, as, ad, size, 0};
        ts->refs++;
        td->refs++;
        return;
    }
    model_copy(ts, as, td, ad, size);
    risk_add(hd->store, ad, size);
    profiles_note(s, sf);
    ts->readers |= 1u << s;
    td->writers |= 1u << s;
}

static void op_fill(void)
{
    int b = pick_handle(1);
    if (b < 0) return;
    handle *hd = &F.handles[b];
    store *td = st_of(hd);
    int s = pick_stream_for_work();
    uint64_t off, size;
    int valid = pick_range(hd, 4, &off, &size);
    if (valid && chance(4)) {
        off += 2;
        valid = 0;
    }
    uint32_t pattern = (uint32_t)rnd();
    note("cubec_fill(stream %d, #%" PRIu64 " at %" PRIu64 " [%" PRIu64 ", +%" PRIu64 "], 0x%08x)",
         s, td->number, hd->off, off, size, pattern);
    int rec = recording_on(s);
    if (valid && size && !rec) before_write(s, hd->store, W_DEVICE);
    cubec_status st = cubec_fill(F.d, sid(s), hd->h, off, size, pattern);
    cubec_code c = verdict(st, valid ? OK_BIT : INVALID_BIT, NULL, 0);
    if (!valid || !size) return;
    uint64_t ad = hd->off + off;
    if (c != CUBEC_OK) {
        unknown(td, ad, size, F_MFAULT);
        return;
    }
    if (rec) {
        if (F.cap_n >= MAX_GOPS) fuzz_fail("the model's capture is full");
        F.cap_op[F.cap_n++] = (gop){1, -1, hd->store, 0, ad, size, pattern};
        td->refs++;
        return;
    }
    model_fill(td, ad, size, pattern);
    risk_add(hd->store, ad, size);
    td->writers |= 1u << s;
}

/* ---- flush, sync, events ------------------------------------------------------------------ */

static void sync_stream(int s, const char *why)
{
    char saved[200];
    snprintf(saved, sizeof saved, "%s", F.op);
    note("cubec_sync(stream %d) (%s)", s, why);
    cubec_status st = cubec_sync(F.d, sid(s));
    cubec_code c = verdict(st, recording_on(s) ? STATE_BIT : OK_BIT, NULL, 0);
    if (c == CUBEC_OK) stream_drained(s);
    snprintf(F.op, sizeof F.op, "%s", saved);
}

/* Syncs every stream (but a recording one); returns 1 when all succeeded. */
static int sync_all(const char *why)
{
    int ok = 1;
    for (int s = 0; s < NSTREAMS; s++) {
        if (recording_on(s)) {
            ok = 0;
            continue;
        }
        note("cubec_sync(stream %d) (%s)", s, why);
        cubec_code c = verdict(cubec_sync(F.d, sid(s)), OK_BIT, NULL, 0);
        if (c == CUBEC_OK)
            stream_drained(s);
        else
            ok = 0;
    }
    /* All queued work was submitted without the armed fault: none of it is at risk any more. */
    if (ok && F.armed[CUBEC_FAULT_SUBMIT]) {
        F.risk_count = 0;
        F.risk_overflow = 0;
    }
    return ok;
}

static void op_flush_sync(void)
{
    int s = (int)below(NSTREAMS);
    if (chance(50)) {
        note("cubec_flush(stream %d)", s);
        cubec_code c = verdict(cubec_flush(F.d, sid(s)), OK_BIT, NULL, 0);
        if (c == CUBEC_OK && !recording_on(s)) stream_drained(s);
    } else {
        sync_stream(s, "random");
    }
}

static void op_read_async(void)
{
    int ei = -1;
    for (int i = 0; i < MAX_EVENTS; i++)
        if (!F.events[i].live) ei = i;
    int hi = pick_handle(1);
    if (ei < 0 || hi < 0) return;
    handle *h = &F.handles[hi];
    store *t = st_of(h);
    int s = (int)below(NSTREAMS);
    uint64_t off, size;
    int valid = pick_range(h, chance(50) ? 4 : 1, &off, &size);
    note("cubec_read_async(stream %d, #%" PRIu64 " at %" PRIu64 " [%" PRIu64 ", +%" PRIu64 "])", s,
         t->number, h->off, off, size);
    unsigned char *dst = malloc(size ? size : 1);
    assert_non_null(dst);
    cubec_event *e = NULL;
    cubec_status st = cubec_read_async(F.d, sid(s), h->h, off, dst, size, &e);
    char msg[4096];
    cubec_code c;
    if (recording_on(s)) {
        c = verdict(st, STATE_BIT, msg, sizeof msg);
    } else if (!valid) {
        c = verdict(st, INVALID_BIT, msg, sizeof msg);
    } else {
        c = take(st, msg, sizeof msg);
        check_faults();
        judge_read("read", t, h->off + off, size, c, msg, NULL);
    }
    if (c != CUBEC_OK) {
        if (e) fuzz_fail("a failed cubec_read_async wrote its out_event");
        free(dst);
        return;
    }
    if (size) stream_drained(s);
    event *ev = &F.events[ei];
    ev->live = 1;
    ev->e = e;
    ev->store = h->store;
    ev->off = h->off + off;
    ev->size = size;
    ev->dst = dst;
    ev->want = malloc(size ? size : 1);
    ev->wfl = malloc(size ? size : 1);
    assert_non_null(ev->want);
    assert_non_null(ev->wfl);
    memcpy(ev->want, t->val + ev->off, size);
    memcpy(ev->wfl, t->fl + ev->off, size);
    /* the event keeps the memory alive until it is done (an empty read holds nothing) */
    ev->holds = size != 0;
    if (ev->holds) {
        t->refs++;
        t->events++;
    }
}

static void op_event(void)
{
    int cand[MAX_EVENTS], n = 0;
    for (int i = 0; i < MAX_EVENTS; i++)
        if (F.events[i].live) cand[n++] = i;
    if (!n) return;
    event *e = &F.events[cand[below((uint64_t)n)]];
    int how = (int)below(3);
    note("%s(read of #%" PRIu64 " at %" PRIu64 ", %" PRIu64 " bytes)",
         how == 0   ? "cubec_event_query"
         : how == 1 ? "cubec_event_wait"
                    : "cubec_event_free",
         F.stores[e->store].number, e->off, e->size);
    if (how == 0) {
        /* Whether it is ready depends on timing: nothing drawn later depends on the answer. */
        char msg[512];
        cubec_code c =
            verdict(cubec_event_query(e->e), OK_BIT | CODE_BIT(CUBEC_NOT_READY), msg, sizeof msg);
        if (c == CUBEC_OK && !e->done) {
            event_check_bytes(e);
            event_done(e);
        }
        if (c == CUBEC_OK) /* done: asking again gives the same answer */
            verdict(cubec_event_query(e->e), OK_BIT, NULL, 0);
        return;
    }
    if (how == 1) {
        event_finish(e, 0);
        return;
    }
    event_finish(e, 1); /* frees without looking (waits first) */
}

/* ---- profiles ----------------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void op_profile_begin(void)
{
    int pi = -1;
    for (int i = 0; i < MAX_PROFILES; i++)
        if (!F.profiles[i].live) pi = i;
    if (pi < 0) return;
    int s = pick_stream_for_work();
    note("cubec_profile_begin(stream %d)", s);
    cubec_profile p = {0};
    uint64_t t0 = now_ns();
    cubec_code c = verdict(cubec_profile_begin(F.d, sid(s), &p),
                           recording_on(s) ? STATE_BIT : OK_BIT, NULL, 0);
    if (c != CUBEC_OK) {
        if (p.id) fuzz_fail("a refused profile_begin wrote its out_profile");
        return;
    }
    F.profiles[pi] = (profile){.live = 1, .p = p, .stream = s, .t_begin = t0};
}

static void op_profile_end(void)
{
    int cand[MAX_PROFILES], n = 0;
    for (int i = 0; i < MAX_PROFILES; i++)
        if (F.profiles[i].live) cand[n++] = i;
    if (!n) return;
    profile *p = &F.profiles[cand[below((uint64_t)n)]];
    int s = p->stream;
    int how = (int)below(10);
    if (how == 0) {
        /* another stream: refused, naming both */
        int o = (s + 1 + (int)below(NSTREAMS - 1)) % NSTREAMS;
        note("cubec_profile_end(stream %d) of a profile of stream %d", o, s);
        cubec_profile_result r;
        verdict(cubec_profile_end(F.d, sid(o), p->p, &r), INVALID_BIT, NULL, 0);
        /* whether a refused end consumed the token is not documented: abandon it either way */
        note("cubec_profile_abandon(stream %d) after a refused end", s);
        verdict(cubec_profile_abandon(F.d, sid(s), p->p), OK_BIT | INVALID_BIT, NULL, 0);
        memset(p, 0, sizeof *p);
        return;
    }
    if (how == 1) {
        note("cubec_profile_abandon(stream %d)", s);
        verdict(cubec_profile_abandon(F.d, sid(s), p->p), OK_BIT, NULL, 0);
        cubec_profile stale = p->p;
        memset(p, 0, sizeof *p);
        note("cubec_profile_end(stream %d) of an abandoned profile", s);
        cubec_profile_result r;
        verdict(cubec_profile_end(F.d, sid(s), stale, &r), INVALID_BIT, NULL, 0);
        return;
    }
    note("cubec_profile_end(stream %d)%s%s", s, p->sure_invalid ? " (surely invalid)" : "",
         p->may_invalid ? " (maybe invalid)" : "");
    cubec_profile_result r;
    memset(&r, 0xab, sizeof r);
    uint32_t allowed = p->sure_invalid  ? CODE_BIT(CUBEC_PROFILE_INVALID)
                       : p->may_invalid ? OK_BIT | CODE_BIT(CUBEC_PROFILE_INVALID)
                                        : OK_BIT;
    /* While its stream records, its measurement is void (the capture began after it). */
    if (recording_on(s)) allowed = CODE_BIT(CUBEC_PROFILE_INVALID) | STATE_BIT;
    char msg[4096];
    cubec_code c = verdict(cubec_profile_end(F.d, sid(s), p->p, &r), allowed, msg, sizeof msg);
    uint64_t t1 = now_ns();
    cubec_profile stale = p->p;
    uint64_t t0 = p->t_begin;
    memset(p, 0, sizeof *p);
    if (c == CUBEC_OK) {
        if (r.method != F.method)
            fuzz_fail("profile method %d, device says %d", r.method, F.method);
        if (r.end_ns < r.begin_ns || r.duration_ns != r.end_ns - r.begin_ns)
            fuzz_fail("profile [%" PRIu64 ", %" PRIu64 "] duration %" PRIu64, r.begin_ns, r.end_ns,
                      r.duration_ns);
        if (r.begin_ns + 1000 < t0 || r.end_ns > t1 + 1000)
            fuzz_fail("profile [%" PRIu64 ", %" PRIu64 "] outside its calls [%" PRIu64 ", %" PRIu64
                      "]",
                      r.begin_ns, r.end_ns, t0, t1);
    }
    if (c == CUBEC_OK && !recording_on(s)) stream_drained(s);
    if (c != CUBEC_OK) {
        cubec_profile_result zero;
        memset(&zero, 0, sizeof zero);
        if (memcmp(&r, &zero, sizeof r)) fuzz_fail("a failed profile_end left its result unzeroed");
    }
    /* consumed, also on error */
    note("cubec_profile_abandon(stream %d) of an ended profile", s);
    verdict(cubec_profile_abandon(F.d, sid(s), stale), INVALID_BIT, NULL, 0);
}

/* ---- graphs ------------------------------------------------------------------------------- */

static void cap_release_ops(void)
{
    for (int i = 0; i < F.cap_n; i++) {
        if (!F.cap_op[i].fill) store_unref(F.cap_op[i].src);
        store_unref(F.cap_op[i].dst);
    }
    F.cap_n = 0;
}

static void cap_reset(void)
{
    F.cap = CAP_NONE;
    F.cap_doom = 0;
    F.cap_kinds = 0;
}

static void graph_end(int from)
{
    note("cubec_graph_end(stream %d) of the capture of stream %d (doom %d, %d ops)", from,
         F.cap_stream, F.cap_doom, F.cap_n);
    /* A failed end taints what the capture would have written, at once: like a write by the
     * capturing stream, it must not overtake other streams' queued reads of those bytes. */
    for (int i = 0; i < F.cap_n; i++)
        before_write(F.cap_stream, F.cap_op[i].dst, W_DEVICE);
    cubec_graph g = {0};
    uint32_t allowed = F.cap_doom == 2 ? STATE_BIT : F.cap_doom == 1 ? OK_BIT | STATE_BIT : OK_BIT;
    char msg[4096];
    cubec_code c = verdict(cubec_graph_end(F.d, sid(from), &g), allowed, msg, sizeof msg);
    int gi = -1;
    for (int i = 0; i < MAX_GRAPHS; i++)
        if (!F.graphs[i].live) gi = i;
    if (c == CUBEC_OK && gi >= 0) {
        if (!g.id) fuzz_fail("cubec_graph_end succeeded with graph id 0");
        graph *gr = &F.graphs[gi];
        gr->live = 1;
        gr->g = g;
        gr->n = F.cap_n;
        memcpy(gr->op, F.cap_op, sizeof F.cap_op);
        F.cap_n = 0; /* the graph holds the references now */
    } else if (c == CUBEC_OK) {
        /* no room in the model: destroy it at once */
        note("cubec_graph_destroy(stream %d) of a graph the model does not keep", from);
        verdict(cubec_graph_destroy(F.d, sid(from), g), OK_BIT, NULL, 0);
        cap_release_ops();
    } else {
        if (g.id) fuzz_fail("a failed cubec_graph_end wrote its out_graph");
        /* What the recorded copies and fills would have written carries the failure. */
        unsigned char bits = F_SURE | F_MGRAPH | (unsigned char)F.cap_kinds;
        for (int i = 0; i < F.cap_n; i++)
            mark(&F.stores[F.cap_op[i].dst], F.cap_op[i].dst_off, F.cap_op[i].size, bits);
        cap_release_ops();
    }
    cap_reset();
}

static void graph_destroy(graph *g, int s);

static void op_graph(void)
{
    char msg[4096];
    if (F.cap == CAP_NONE) {
        int s = (int)below(NSTREAMS);
        int how = (int)below(10);
        if (how == 0) {
            note("cubec_graph_begin(stream %d) without prepare", s);
            verdict(cubec_graph_begin(F.d, sid(s)), STATE_BIT, NULL, 0);
            return;
        }
        if (how == 1) {
            note("cubec_graph_end(stream %d) without a capture", s);
            cubec_graph g = {0};
            verdict(cubec_graph_end(F.d, sid(s), &g), STATE_BIT, NULL, 0);
            if (g.id) fuzz_fail("a refused end wrote its out_graph");
            return;
        }
        note("cubec_graph_prepare(stream %d)", s);
        cubec_code c = verdict(cubec_graph_prepare(F.d, sid(s)), OK_BIT, msg, sizeof msg);
        if (c != CUBEC_OK) return;
        stream_drained(s);
        F.cap = CAP_PREPARED;
        F.cap_stream = s;
        return;
    }
    int s = F.cap_stream;
    if (F.cap == CAP_PREPARED) {
        int how = (int)below(10);
        if (how == 0) {
            note("cubec_graph_prepare(stream %d) again", s);
            verdict(cubec_graph_prepare(F.d, sid(s)), STATE_BIT, NULL, 0);
            return;
        }
        if (how == 1) {
            /* end after a prepare that never began: refused, and the preparation is dropped */
            note("cubec_graph_end(stream %d) of a prepared capture", s);
            cubec_graph g = {0};
            verdict(cubec_graph_end(F.d, sid(s), &g), STATE_BIT, NULL, 0);
            cap_reset();
            return;
        }
        note("cubec_graph_begin(stream %d)", s);
        cubec_code c = verdict(cubec_graph_begin(F.d, sid(s)), OK_BIT, msg, sizeof msg);
        if (c != CUBEC_OK) {
            cap_reset(); /* the warm-up failed: prepare again */
            return;
        }
        stream_drained(s);
        F.cap = CAP_RECORDING;
        F.cap_n = 0;
        /* A profile open on the stream when its capture begins is invalid. */
        for (int i = 0; i < MAX_PROFILES; i++)
            if (F.profiles[i].live && F.profiles[i].stream == s)
                F.profiles[i].sure_invalid = F.profiles[i].may_invalid = 1;
        return;
    }
    /* recording */
    int how = (int)below(10);
    if (how == 0) {
        note("cubec_graph_begin(stream %d) while recording", s);
        verdict(cubec_graph_begin(F.d, sid(s)), STATE_BIT, NULL, 0);
        return;
    }
    if (how == 1) {
        note("cubec_graph_prepare(stream %d) while recording", s);
        verdict(cubec_graph_prepare(F.d, sid(s)), STATE_BIT, NULL, 0);
        return;
    }
    if (how == 2) {
        /* from a stream of another slot: finds no capture, changes nothing */
        int o = (s + 1 + (int)below(NSTREAMS - 1)) % NSTREAMS;
        note("cubec_graph_end(stream %d) of the capture of stream %d", o, s);
        cubec_graph g = {0};
        verdict(cubec_graph_end(F.d, sid(o), &g), STATE_BIT, NULL, 0);
        return;
    }
    if (how == 3) {
        note("cubec_memory_cleanup(stream %d) while stream %d records", (s + 1) % NSTREAMS, s);
        verdict(cubec_memory_cleanup(F.d, sid((s + 1) % NSTREAMS)), STATE_BIT, NULL, 0);
        return;
    }
    if (how < 6 && F.cap_n < 2) return; /* let it record something first */
    int room = 0;
    for (int i = 0; i < MAX_GRAPHS; i++)
        room |= !F.graphs[i].live;
    if (!room) graph_destroy(&F.graphs[below(MAX_GRAPHS)], (s + 1) % NSTREAMS);
    graph_end(s);
}

/* The replay of a graph: its inputs (bytes read before the graph writes them) decide whether it
 * runs; then its copies and fills in order. */
static void model_replay(graph *g, int s)
{
    unsigned char in = 0;
    for (int i = 0; i < g->n; i++) {
        const gop *o = &g->op[i];
        if (o->fill) continue;
        store *t = &F.stores[o->src];
        int all_covered = 1;
        unsigned char exact = 0, loose = 0;
        for (uint64_t b = 0; b < o->size; b++) {
            uint64_t at = o->src_off + b;
            int covered = 0;
            for (int j = 0; j < i && !covered; j++)
                covered = g->op[j].dst == o->src && g->op[j].dst_off <= at &&
                          at < g->op[j].dst_off + g->op[j].size;
            if (covered)
                loose |= t->fl[at];
            else {
                exact |= t->fl[at];
                all_covered = 0;
            }
        }
        if (all_covered) continue; /* not an input: the graph wrote it first */
        in |= exact & F_FAIL;
        in |= loose & F_KINDS; /* an input partly written before: may count */
    }
    profiles_note(s, in);
    if (in & F_SURE) {
        for (int i = 0; i < g->n; i++)
            mark(&F.stores[g->op[i].dst], g->op[i].dst_off, g->op[i].size,
                 (unsigned char)(F_SURE | (in & F_KINDS)));
        return;
    }
    for (int i = 0; i < g->n; i++) {
        const gop *o = &g->op[i];
        if (o->fill)
            model_fill(&F.stores[o->dst], o->dst_off, o->size, o->pattern);
        else
            model_copy(&F.stores[o->src], o->src_off, &F.stores[o->dst], o->dst_off, o->size);
    }
    for (int i = 0; i < g->n; i++) {
        mark(&F.stores[g->op[i].dst], g->op[i].dst_off, g->op[i].size, in & F_KINDS);
        risk_add(g->op[i].dst, g->op[i].dst_off, g->op[i].size);
    }
}

static void op_replay(void)
{
    int cand[MAX_GRAPHS], n = 0;
    for (int i = 0; i < MAX_GRAPHS; i++)
        if (F.graphs[i].live) cand[n++] = i;
    int s = (int)below(NSTREAMS);
    if (!n || chance(5)) {
        note("cubec_graph_replay(stream %d) of a made-up graph", s);
        verdict(cubec_graph_replay(F.d, sid(s), (cubec_graph){made_up_id()}), STATE_BIT, NULL, 0);
        return;
    }
    graph *g = &F.graphs[cand[below((uint64_t)n)]];
    note("cubec_graph_replay(stream %d) of a graph of %d ops", s, g->n);
    if (recording_on(s)) {
        verdict(cubec_graph_replay(F.d, sid(s), g->g), STATE_BIT, NULL, 0);
        return;
    }
    for (int i = 0; i < g->n; i++)
        before_write(s, g->op[i].dst, W_DEVICE);
    cubec_code c = verdict(cubec_graph_replay(F.d, sid(s), g->g), OK_BIT, NULL, 0);
    F.replays++;
    if (c != CUBEC_OK) {
        /* not run, or run and lost, or skipped: its outputs may carry the fault, or a failure
         * of an input */
        unsigned char in = 0;
        for (int i = 0; i < g->n; i++)
            if (!g->op[i].fill)
                in |= range_flags(&F.stores[g->op[i].src], g->op[i].src_off, g->op[i].size);
        for (int i = 0; i < g->n; i++)
            mark(&F.stores[g->op[i].dst], g->op[i].dst_off, g->op[i].size,
                 (unsigned char)(F_MFAULT | (in & F_KINDS)));
        return;
    }
    model_replay(g, s);
    /* ordered after the stream's queued work: that was submitted with it */
    stream_drained(s);
}

static void graph_destroy(graph *g, int s)
{
    note("cubec_graph_destroy(stream %d)", s);
    verdict(cubec_graph_destroy(F.d, sid(s), g->g), OK_BIT, NULL, 0);
    cubec_graph dead = g->g;
    for (int i = 0; i < g->n; i++) {
        if (!g->op[i].fill) store_unref(g->op[i].src);
        store_unref(g->op[i].dst);
    }
    memset(g, 0, sizeof *g);
    note("cubec_graph_destroy(stream %d) again", s);
    verdict(cubec_graph_destroy(F.d, sid(s), dead), OK_BIT, NULL, 0);
    note("cubec_graph_replay(stream %d) of a destroyed graph", s);
    verdict(cubec_graph_replay(F.d, sid(s), dead), STATE_BIT, NULL, 0);
}

static void op_graph_destroy(void)
{
    int cand[MAX_GRAPHS], n = 0;
    for (int i = 0; i < MAX_GRAPHS; i++)
        if (F.graphs[i].live) cand[n++] = i;
    if (!n) return;
    graph_destroy(&F.graphs[cand[below((uint64_t)n)]], (int)below(NSTREAMS));
}

/* ---- memory ------------------------------------------------------------------------------- */

static void report_sums(const cubec_memory_report *r)
{
    uint64_t in_use = 0, reserved = 0, allocs = 0;
    uint32_t pages = 0;
    for (uint32_t i = 0; i < r->pool_count; i++) {
        const cubec_pool_report *p = &r->pools[i];
        if (p->pages_peak < p->pages)
            fuzz_fail("pool %s: peak %u < pages %u", p->kind, p->pages_peak, p->pages);
        if (strcmp(p->kind, "sliced") && strcmp(p->kind, "exclusive")) continue;
        if (p->bytes_reserved < p->bytes_in_use + p->bytes_padding)
            fuzz_fail("pool %s: reserved %" PRIu64 " < in use %" PRIu64 " + padding %" PRIu64,
                      p->kind, p->bytes_reserved, p->bytes_in_use, p->bytes_padding);
        if (p->bytes_padding > p->allocations * (F.align - 1))
            fuzz_fail("pool %s: padding %" PRIu64 " for %" PRIu64 " allocations", p->kind,
                      p->bytes_padding, p->allocations);
        in_use += p->bytes_in_use;
        reserved += p->bytes_reserved;
        allocs += p->allocations;
        pages += p->pages;
    }
    if (in_use != r->bytes_in_use || reserved != r->bytes_reserved || allocs != r->allocations ||
        pages != r->pages)
        fuzz_fail("the report's totals are not the sums of its buffer pools");
}

static void model_live(int s, uint64_t *bytes, uint64_t *allocs)
{
    *bytes = *allocs = 0;
    for (int i = 0; i < MAX_STORES; i++)
        if (F.stores[i].used && F.stores[i].owner == s && F.stores[i].size) {
            *bytes += F.stores[i].size;
            (*allocs)++;
        }
}

static void op_memory(void)
{
    int s = (int)below(NSTREAMS);
    int how = (int)below(4);
    cubec_memory_report r;
    if (how == 0) {
        note("cubec_memory_cleanup(stream %d)", s);
        uint32_t allowed = F.cap == CAP_RECORDING ? STATE_BIT : OK_BIT;
        verdict(cubec_memory_cleanup(F.d, sid(s)), allowed, NULL, 0);
    }
    if (how == 1 && F.cap != CAP_RECORDING) {
        /* quiesced: every stream synced, the report is exact */
        if (!sync_all("quiesce")) return;
        int cleanup = chance(50);
        if (cleanup) {
            note("cubec_memory_cleanup(stream %d) (quiesced)", s);
            verdict(cubec_memory_cleanup(F.d, sid(s)), OK_BIT, NULL, 0);
        }
        note("cubec_memory_report_get(stream %d) (quiesced)", s);
        verdict(cubec_memory_report_get(F.d, sid(s), &r), OK_BIT, NULL, 0);
        report_sums(&r);
        uint64_t bytes, allocs;
        model_live(s, &bytes, &allocs);
        if (r.bytes_in_use != bytes || r.allocations != allocs)
            fuzz_fail("stream %d holds %" PRIu64 " bytes in %" PRIu64
                      " allocations; the report says %" PRIu64 " in %" PRIu64,
                      s, bytes, allocs, r.bytes_in_use, r.allocations);
        if (cleanup && !allocs && (r.pages || r.bytes_reserved))
            fuzz_fail("after cleanup, stream %d holds nothing but %u pages (%" PRIu64
                      " bytes) stay",
                      s, r.pages, r.bytes_reserved);
        return;
    }
    if (how >= 2) {
        note("cubec_memory_report_get(stream %d)", s);
        verdict(cubec_memory_report_get(F.d, sid(s), &r), OK_BIT, NULL, 0);
        report_sums(&r);
        uint64_t bytes, allocs;
        model_live(s, &bytes, &allocs);
        /* freed memory may still wait for queued work; live memory is always there */
        if (r.bytes_in_use < bytes || r.allocations < allocs)
            fuzz_fail("stream %d holds at least %" PRIu64 " bytes in %" PRIu64
                      " allocations; the report says %" PRIu64 " in %" PRIu64,
                      s, bytes, allocs, r.bytes_in_use, r.allocations);
        if (how == 3) {
            char *json = NULL, *table = NULL;
            note("cubec_memory_report_json / _table");
            verdict(cubec_memory_report_json(F.d, &json), OK_BIT, NULL, 0);
            verdict(cubec_memory_report_table(F.d, &table), OK_BIT, NULL, 0);
            if (!json || !strstr(json, "\"totals\"") || !table) fuzz_fail("an empty report");
            cubec_string_free(json);
            cubec_string_free(table);
        }
    }
}

/* ---- faults ------------------------------------------------------------------------------- */

static void op_fault(void)
{
    if (F.cap == CAP_RECORDING) return;
    int k = (int)below(3);
    cubec_fault_kind kind = k == 0   ? CUBEC_FAULT_SUBMIT
                            : k == 1 ? CUBEC_FAULT_PAGE
                                     : CUBEC_FAULT_MAP;
    if (F.armed[kind]) return;
    uint64_t nth = 1 + below(kind == CUBEC_FAULT_SUBMIT ? 4 : 2);
    /* Nothing queued: what the fault may lose is what is queued from now on. */
    if (kind == CUBEC_FAULT_SUBMIT && !sync_all("before arming")) return;
    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    note("cubec_fault_inject(kind %d, %" PRIu64 ")", (int)kind, nth);
    verdict(cubec_fault_counts(F.d, counts), OK_BIT, NULL, 0);
    verdict(cubec_fault_inject(F.d, kind, nth), OK_BIT, NULL, 0);
    F.armed[kind] = counts[kind] + nth;
    if (kind == CUBEC_FAULT_SUBMIT) {
        F.risk_count = 0;
        F.risk_overflow = 0;
    }
}

/* ---- refused calls ------------------------------------------------------------------------ */

static void op_invalid(void)
{
    int dead = pick_handle(0);
    cubec_buffer stale = dead >= 0 ? F.handles[dead].h : (cubec_buffer){made_up_id()};
    cubec_buffer madeup = {made_up_id()};
    int live = pick_handle(1);
    cubec_buffer good = live >= 0 ? F.handles[live].h : stale;
    cubec_stream bad_stream = (cubec_stream)made_up_id();
    unsigned char bytes[16] = {0};
    cubec_buffer out = {0};
    int s = (int)below(NSTREAMS);
    switch (below(14)) {
    case 0:
        note("cubec_write of a released or made-up buffer");
        verdict(cubec_write(F.d, sid(s), chance(50) ? stale : madeup, 0, bytes, 4), INVALID_BIT,
                NULL, 0);
        break;
    case 1:
        note("cubec_read of a released buffer");
        verdict(cubec_read(F.d, sid(s), stale, 0, bytes, 4),
                recording_on(s) ? STATE_BIT : INVALID_BIT, NULL, 0);
        break;
    case 2:
        note("cubec_copy from a released buffer");
        verdict(cubec_copy(F.d, sid(s), stale, 0, good, 0, 4), INVALID_BIT, NULL, 0);
        break;
    case 3:
        note("cubec_copy to a released buffer");
        verdict(cubec_copy(F.d, sid(s), good, 0, stale, 0, 4), INVALID_BIT, NULL, 0);
        break;
    case 4:
        note("cubec_fill of a made-up buffer");
        verdict(cubec_fill(F.d, sid(s), madeup, 0, 4, 1), INVALID_BIT, NULL, 0);
        break;
    case 5:
        note("cubec_buffer_view of a released buffer");
        verdict(cubec_buffer_view(F.d, stale, 0, 0, &out), INVALID_BIT, NULL, 0);
        if (out.id) fuzz_fail("a refused view wrote its out_view");
        break;
    case 6:
        note("cubec_buffer_release of a released buffer");
        verdict(cubec_buffer_release(F.d, stale), INVALID_BIT, NULL, 0);
        break;
    case 7:
        note("cubec_buffer_retain of a made-up buffer");
        verdict(cubec_buffer_retain(F.d, madeup), INVALID_BIT, NULL, 0);
        break;
    case 8:
        note("cubec_buffer_create on a made-up stream");
        verdict(cubec_buffer_create(F.d, bad_stream, 16, &out), INVALID_BIT, NULL, 0);
        if (out.id) fuzz_fail("a refused creation wrote its out_buffer");
        break;
    case 9:
        note("cubec_write on a made-up stream");
        verdict(cubec_write(F.d, bad_stream, good, 0, bytes, 0), INVALID_BIT, NULL, 0);
        break;
    case 10:
        note("cubec_sync / cubec_flush on a made-up stream");
        verdict(chance(50) ? cubec_sync(F.d, bad_stream) : cubec_flush(F.d, bad_stream),
                INVALID_BIT, NULL, 0);
        break;
    case 11:
        note("cubec_fault_inject of kind %d", CUBEC_FAULT_KIND_COUNT);
        verdict(cubec_fault_inject(F.d, CUBEC_FAULT_KIND_COUNT, 1), INVALID_BIT, NULL, 0);
        break;
    case 12: {
        note("cubec_check of a released buffer");
        cubec_buffer list[2] = {good, stale};
        verdict(cubec_check(F.d, list, 2), INVALID_BIT, NULL, 0);
        break;
    }
    default: {
        note("NULL out-parameters");
        verdict(cubec_buffer_create(F.d, sid(s), 4, NULL), INVALID_BIT, NULL, 0);
        verdict(cubec_profile_begin(F.d, sid(s), NULL), INVALID_BIT, NULL, 0);
        verdict(cubec_graph_end(F.d, sid(s), NULL), INVALID_BIT, NULL, 0);
        verdict(cubec_read_async(F.d, sid(s), good, 0, bytes, 1, NULL), INVALID_BIT, NULL, 0);
        verdict(cubec_memory_report_get(F.d, sid(s), NULL), INVALID_BIT, NULL, 0);
        break;
    }
    }
}

static void op_stream_new(void)
{
    note("cubec_stream_new / cubec_stream_current");
    cubec_stream a = 0, b = 0, cur = 0;
    verdict(cubec_stream_new(F.d, &a), OK_BIT, NULL, 0);
    verdict(cubec_stream_new(F.d, &b), OK_BIT, NULL, 0);
    verdict(cubec_stream_current(F.d, &cur), OK_BIT, NULL, 0);
    if (!a || !b || a == b) fuzz_fail("cubec_stream_new gave %" PRIx64 " and %" PRIx64, a, b);
    for (int i = 0; i < NSTREAMS; i++)
        if (F.streams[i] == a || F.streams[i] == b) fuzz_fail("a new stream repeats an old one");
    if (cur != F.streams[0]) fuzz_fail("the current stream changed");
}

/* ---- episodes ----------------------------------------------------------------------------- */

static uint32_t max_streams(void)
{
    const char *v = getenv("CUBEC_MAX_STREAMS");
    long n = v ? strtol(v, NULL, 10) : 0;
    return n > 0 ? (uint32_t)n : 128;
}

static void open_episode(void)
{
    static const uint32_t tasks[] = {0, 1, 2, 3, 8, 32};
    static const uint32_t delays[] = {0, 0, 0, 20, 300};
    F.tasks_max = tasks[below(sizeof tasks / sizeof tasks[0])];
    F.delay_us = delays[below(sizeof delays / sizeof delays[0])];
    cubec_device_desc desc = {
        .backend = "null", .tasks_max = F.tasks_max, .null_delay_us = F.delay_us};
    note("cubec_device_open(null, tasks_max %u, delay %u us)", F.tasks_max, F.delay_us);
    cubec_status st = cubec_device_open(&desc, &F.d);
    verdict(st, OK_BIT, NULL, 0);
    cubec_device_info info;
    verdict(cubec_device_get_info(F.d, &info), OK_BIT, NULL, 0);
    if (info.type != CUBEC_DEVICE_TYPE_CPU) fuzz_fail("the null device is not of type CPU");
    F.align = info.storage_offset_alignment;
    verdict(cubec_profile_method(F.d, &F.method), OK_BIT, NULL, 0);
    /* Streams on distinct slots: slot sharing is a rule of its own, not modelled here. */
    uint32_t ms = max_streams();
    verdict(cubec_stream_current(F.d, &F.streams[0]), OK_BIT, NULL, 0);
    /* the scratch buffer: a store of stream 0 with no handle the steps can pick */
    note("cubec_buffer_create(stream 0, 16 bytes) (scratch)");
    verdict(cubec_buffer_create(F.d, F.streams[0], 16, &F.scratch), OK_BIT, NULL, 0);
    F.created++;
    store *t = &F.stores[0];
    t->used = 1;
    t->gen = ++F.gens;
    t->size = 16;
    t->number = F.created;
    t->val = calloc(16, 1);
    t->fl = calloc(16, 1);
    assert_non_null(t->val);
    assert_non_null(t->fl);
    t->owner = 0;
    t->refs = 1;
    F.scratch_store = 0;
    for (int i = 1; i < NSTREAMS; i++) {
        for (;;) {
            verdict(cubec_stream_new(F.d, &F.streams[i]), OK_BIT, NULL, 0);
            int clash = 0;
            for (int j = 0; j < i; j++)
                clash |= (F.streams[i] & 0xffffffffffffull) % ms ==
                         (F.streams[j] & 0xffffffffffffull) % ms;
            if (!clash) break;
        }
    }
}

/* Closes the device with what is still alive (graphs, buffers, profiles), after freeing events
 * (cubec.h: free events before closing) and checking what the model still knows. */
static void close_episode(void)
{
    for (int i = 0; i < MAX_EVENTS; i++)
        if (F.events[i].live) event_finish(&F.events[i], 0);
    if (F.cap == CAP_NONE && chance(50) && sync_all("closing")) {
        /* a last read of every live handle */
        for (int i = 0; i < MAX_HANDLES; i++) {
            handle *h = &F.handles[i];
            if (!h->live || !h->size) continue;
            unsigned char *got = malloc(h->size);
            assert_non_null(got);
            note("cubec_read(#%" PRIu64 " whole) before closing", st_of(h)->number);
            char msg[4096];
            cubec_code c = take(cubec_read(F.d, sid(0), h->h, 0, got, h->size), msg, sizeof msg);
            check_faults();
            judge_read("read", st_of(h), h->off, h->size, c, msg, got);
            free(got);
        }
    }
    note("cubec_device_close");
    cubec_device_close(F.d);
    F.d = NULL;
    for (int i = 0; i < MAX_STORES; i++) {
        free(F.stores[i].val);
        free(F.stores[i].fl);
    }
}

static void run_episode(uint64_t steps)
{
    /* the model of a fresh device */
    uint64_t seed = F.seed, rng = F.rng;
    unsigned episode = F.episode;
    int trace = F.trace;
    uint64_t stats[5] = {F.reads_checked, F.failures_seen, F.faults_fired, F.replays, F.refusals};
    memset(&F, 0, sizeof F);
    F.seed = seed;
    F.rng = rng;
    F.episode = episode;
    F.trace = trace;
    F.reads_checked = stats[0];
    F.failures_seen = stats[1];
    F.faults_fired = stats[2];
    F.replays = stats[3];
    F.refusals = stats[4];
    open_episode();
    static const struct {
        void (*fn)(void);
        unsigned weight;
    } ops[] = {
        {op_create, 10},       {op_view, 4},        {op_retain_release, 7}, {op_size, 1},
        {op_write, 12},        {op_read, 10},       {op_check, 3},          {op_copy, 16},
        {op_fill, 5},          {op_flush_sync, 5},  {op_read_async, 3},     {op_event, 3},
        {op_profile_begin, 2}, {op_profile_end, 2}, {op_graph, 5},          {op_replay, 5},
        {op_graph_destroy, 1}, {op_memory, 3},      {op_fault, 2},          {op_invalid, 3},
        {op_stream_new, 1},
    };
    unsigned total = 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        total += ops[i].weight;
    for (F.step = 1; F.step <= steps; F.step++) {
        F.fired = 0;
        unsigned r = (unsigned)below(total);
        size_t i = 0;
        while (r >= ops[i].weight) {
            r -= ops[i].weight;
            i++;
        }
        ops[i].fn();
        /* a fault that fired in a step that did not look */
        check_faults();
    }
    F.step = steps + 1;
    close_episode();
}

static double env_double(const char *name, double fallback)
{
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end;
    double x = strtod(v, &end);
    return end != v ? x : fallback;
}

static double seconds_now(void)
{
    return (double)now_ns() / 1e9;
}

static void test_random_api_sequence(void **state)
{
    (void)state;
    const char *seed_env = getenv("CUBEC_FUZZ_SEED");
    uint64_t seed = seed_env && *seed_env ? strtoull(seed_env, NULL, 0)
                                          : mix(now_ns() ^ ((uint64_t)getpid() << 32));
    double seconds = env_double("CUBEC_FUZZ_SECONDS", 3.0);
    const char *only = getenv("CUBEC_FUZZ_EPISODE");
    const char *trace = getenv("CUBEC_FUZZ_TRACE");
    if (trace && *trace == '1') setvbuf(stdout, NULL, _IONBF, 0); /* in order with cubec's log */
    printf("test_random_null: seed 0x%016" PRIx64 " (CUBEC_FUZZ_SEED to replay), %.1f s\n", seed,
           seconds);
    fflush(stdout);
    double start = seconds_now();
    uint64_t steps_total = 0;
    unsigned episodes = 0;
    memset(&F, 0, sizeof F);
    for (unsigned e = only ? (unsigned)strtoul(only, NULL, 0) : 0;; e++) {
        F.seed = seed;
        F.episode = e;
        F.rng = mix(seed ^ mix(e + 1));
        F.trace = trace && *trace == '1';
        uint64_t steps = 200 + below(1200);
        run_episode(steps);
        steps_total += steps;
        episodes++;
        if (only || seconds_now() - start >= seconds) break;
    }
    printf("test_random_null: %u episodes, %" PRIu64 " steps in %.2f s: %" PRIu64
           " reads checked, %" PRIu64 " failures on memory seen, %" PRIu64 " faults fired, %" PRIu64
           " replays, %" PRIu64 " refusals\n",
           episodes, steps_total, seconds_now() - start, F.reads_checked, F.failures_seen,
           F.faults_fired, F.replays, F.refusals);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_api_sequence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
