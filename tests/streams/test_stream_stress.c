/* Stress: 8 threads x 4 streams each (from cubec_stream_new) on one device, random launches,
 * host writes, fills, copies, reads and releases, sharing buffers across streams and threads.
 * Every read is checked against a CPU model of the same operations.
 *
 * The model only assumes the orderings cubec.h promises (work on one stream is ordered; an
 * operation on stream S of a buffer runs after the work queued on its owner stream and on the
 * stream whose queued task last writes it; work of unrelated streams is not ordered):
 *  - a thread writes only its own buffers; each write, on any of its streams, is ordered after
 *    the earlier writes by the rules above;
 *  - a kernel read of an own buffer on a stream other than its owner is not ordered before a
 *    later write from a third stream: the thread remembers such streams per buffer and syncs
 *    them before the next write on another stream;
 *  - other threads' buffers are only read, and only after their owner published them (never
 *    written again); the owner publishes with or without a sync first (the rules order the
 *    readers after its queued work either way) and releases them whenever it likes, while readers
 *    may still have kernels queued that read them (those keep the memory alive);
 *  - own buffers are released at random too, with kernels of other streams still queued on them.
 * Integer arithmetic (uint32, wrapping) keeps the model exact.
 *
 * CUBEC_STRESS_OPS (operations per thread, default 300) and CUBEC_STRESS_SEED make longer runs
 * and reproductions possible. The build with -DCUBEC_TSAN=ON runs this under ThreadSanitizer. */
#include "test_util.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    THREADS = 8,
    STREAMS = 4,       /* per thread */
    MAX_OWN = 6,       /* live own (writable) buffers per thread */
    MAX_PUBLISHED = 4, /* live published buffers per thread */
    MAX_WORDS = 1024,
    DEFAULT_OPS = 300,
};

/* v[i] = v[i] * a + b */
static const char axpb_src[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) buffer V { uint v[]; };\n"
                               "CUBEC_INFO(uint n; uint a; uint b;)\n"
                               "void main() {\n"
                               "  uint i = gl_GlobalInvocationID.x;\n"
                               "  if (i < info.n) v[i] = v[i] * info.a + info.b;\n"
                               "}\n";

/* c[i] = a[i] + b[i] * m */
static const char add_src[] = "#version 450\n"
                              "layout(local_size_x = 64) in;\n"
                              "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
                              "layout(std430, binding = 1) readonly buffer B { uint b[]; };\n"
                              "layout(std430, binding = 2) writeonly buffer C { uint c[]; };\n"
                              "CUBEC_INFO(uint n; uint m;)\n"
                              "void main() {\n"
                              "  uint i = gl_GlobalInvocationID.x;\n"
                              "  if (i < info.n) c[i] = a[i] + b[i] * info.m;\n"
                              "}\n";

/* A buffer this thread owns and may write. */
typedef struct own_buf {
    cubec_buffer h;
    uint32_t owner; /* index of the owner stream among the thread's streams */
    uint32_t words;
    uint32_t readers; /* bit s: a kernel on stream s (not the owner) may still read it */
    uint32_t *model;
} own_buf;

/* A buffer published by its owner: never written again. */
typedef struct published {
    int live;
    uint32_t owner_thread;
    cubec_buffer h;
    uint32_t words;
    uint32_t *model;
} published;

typedef struct shared_state {
    cubec_device *d;
    cubec_kernel axpb, add;
    uint32_t ops;
    uint32_t seed;
    pthread_mutex_t lock; /* the registry of published buffers */
    published registry[THREADS * MAX_PUBLISHED];
    cubec_stream streams[THREADS][STREAMS];
} shared_state;

typedef struct worker {
    shared_state *sh;
    uint32_t id;
    uint32_t rng;
    cubec_stream s[STREAMS];
    own_buf own[MAX_OWN];
    uint32_t own_count;
    uint32_t published_count;
    uint64_t reads_checked, words_checked;
    uint32_t counts[16]; /* operations done, by kind */
    int failed;
    char why[512];
} worker;

static uint32_t rnd(worker *w, uint32_t n)
{
    return test_rand(&w->rng) % n;
}

/* Records the first failure of the worker; returns 1 when `st` is an error. */
static int check(worker *w, cubec_status st, const char *what)
{
    if (!st) return 0;
    if (!w->failed) {
        w->failed = 1;
        snprintf(w->why, sizeof w->why, "thread %u: %s: %s", w->id, what, cubec_status_message(st));
    }
    cubec_status_free(st);
    return 1;
}

static void fail_worker(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_worker(worker *w, const char *fmt, ...)
{
    if (w->failed) return;
    w->failed = 1;
    int at = snprintf(w->why, sizeof w->why, "thread %u: ", w->id);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->why + at, sizeof w->why - (size_t)at, fmt, ap);
    va_end(ap);
}

/* Compares `got` with the model; names the first difference. */
static void compare(worker *w, const uint32_t *got, const uint32_t *want, uint32_t first,
                    uint32_t n, const char *what)
{
    w->reads_checked++;
    w->words_checked += n;
    for (uint32_t i = 0; i < n; i++)
        if (got[i] != want[first + i]) {
            fail_worker(w, "%s: word %u is 0x%08x, the model says 0x%08x", what, first + i, got[i],
                        want[first + i]);
            return;
        }
}

/* Before a write of `b` on stream `s`: kernels that read it on other non-owner streams are not
 * ordered before the write, so wait for those streams. */
static void before_write(worker *w, own_buf *b, uint32_t s)
{
    for (uint32_t t = 0; t < STREAMS && !w->failed; t++)
        if ((b->readers >> t & 1) && t != s)
            check(w, cubec_sync(w->sh->d, w->s[t]), "cubec_sync before a write");
    b->readers = 0;
}

static void note_read(own_buf *b, uint32_t s)
{
    if (s != b->owner) b->readers |= 1u << s;
}

static own_buf *random_own(worker *w)
{
    return w->own_count ? &w->own[rnd(w, w->own_count)] : NULL;
}

/* An input for a kernel or a copy: an own buffer or a published one (of any thread), whose
 * contents are copied into `model`. A published buffer is retained under the registry lock, so
 * its owner may release it at any time; the caller releases `*retained`. Returns 0 if none. */
typedef struct input {
    cubec_buffer h;
    uint32_t words;
    own_buf *own; /* NULL for a published buffer */
    cubec_buffer retained;
    uint32_t model[MAX_WORDS];
} input;

static int pick_input(worker *w, input *in, int allow_published)
{
    memset(&in->retained, 0, sizeof in->retained);
    in->own = NULL;
    if (allow_published && rnd(w, 2)) {
        shared_state *sh = w->sh;
        pthread_mutex_lock(&sh->lock);
        uint32_t live[THREADS * MAX_PUBLISHED], n = 0;
        for (uint32_t i = 0; i < THREADS * MAX_PUBLISHED; i++)
            if (sh->registry[i].live) live[n++] = i;
        int found = 0;
        if (n) {
            published *p = &sh->registry[live[rnd(w, n)]];
            if (!check(w, cubec_buffer_retain(sh->d, p->h), "cubec_buffer_retain of a published")) {
                if (p->owner_thread != w->id) w->counts[11]++;
                in->h = in->retained = p->h;
                in->words = p->words;
                memcpy(in->model, p->model, (size_t)p->words * 4);
                found = 1;
            }
        }
        pthread_mutex_unlock(&sh->lock);
        if (found || w->failed) return found;
    }
    own_buf *b = random_own(w);
    if (!b) return 0;
    in->h = b->h;
    in->words = b->words;
    in->own = b;
    memcpy(in->model, b->model, (size_t)b->words * 4);
    return 1;
}

static void drop_input(worker *w, input *in)
{
    if (in->retained.id)
        check(w, cubec_buffer_release(w->sh->d, in->retained), "cubec_buffer_release (retained)");
    in->retained.id = 0;
}

static void op_create(worker *w)
{
    if (w->own_count == MAX_OWN) return;
    cubec_device *d = w->sh->d;
    own_buf *b = &w->own[w->own_count];
    b->owner = rnd(w, STREAMS);
    b->words = 64 + rnd(w, MAX_WORDS - 63);
    b->readers = 0;
    b->model = malloc((size_t)b->words * 4);
    for (uint32_t i = 0; i < b->words; i++)
        b->model[i] = test_rand(&w->rng);
    cubec_stream s = w->s[b->owner];
    cubec_status st;
    switch (rnd(w, 3)) {
    case 0: st = cubec_buffer_from(d, s, b->model, (uint64_t)b->words * 4, &b->h); break;
    case 1:
        st = cubec_buffer_create(d, s, (uint64_t)b->words * 4, &b->h);
        /* Written from another of the thread's streams: ordered after the owner's work. */
        if (!st) st = cubec_write(d, w->s[rnd(w, STREAMS)], b->h, 0, b->model, b->words * 4ull);
        break;
    default: {
        st = cubec_buffer_create(d, s, (uint64_t)b->words * 4, &b->h);
        uint32_t pattern = test_rand(&w->rng);
        if (!st) st = cubec_fill(d, w->s[rnd(w, STREAMS)], b->h, 0, b->words * 4ull, pattern);
        for (uint32_t i = 0; i < b->words; i++)
            b->model[i] = pattern;
    }
    }
    if (check(w, st, "creating a buffer")) {
        free(b->model);
        return;
    }
    w->own_count++;
    w->counts[0]++;
}

static void op_axpb(worker *w)
{
    own_buf *b = random_own(w);
    if (!b) return;
    uint32_t s = rnd(w, STREAMS);
    before_write(w, b, s);
    uint32_t n = 1 + rnd(w, b->words);
    uint32_t info[3] = {n, test_rand(&w->rng) | 1, test_rand(&w->rng)};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = w->sh->axpb,
                            .buffers = &b->h,
                            .buffer_count = 1,
                            .info = info,
                            .info_size = sizeof info,
                            .groups = {(n + 63) / 64, 1, 1}};
    if (check(w, cubec_launch(w->sh->d, w->s[s], &ld), "cubec_launch(axpb)")) return;
    for (uint32_t i = 0; i < n; i++)
        b->model[i] = b->model[i] * info[1] + info[2];
    w->counts[1]++;
}

static void op_add(worker *w, input *a, input *bb)
{
    own_buf *c = random_own(w);
    if (!c) return;
    if (!pick_input(w, a, 1)) return;
    if (!pick_input(w, bb, 1)) {
        drop_input(w, a);
        return;
    }
    /* The output must not be one of the inputs. */
    if (a->own == c || bb->own == c) {
        drop_input(w, a);
        drop_input(w, bb);
        return;
    }
    uint32_t s = rnd(w, STREAMS);
    before_write(w, c, s);
    uint32_t n = c->words;
    if (a->words < n) n = a->words;
    if (bb->words < n) n = bb->words;
    uint32_t info[2] = {n, test_rand(&w->rng)};
    cubec_buffer bufs[3] = {a->h, bb->h, c->h};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = w->sh->add,
                            .buffers = bufs,
                            .buffer_count = 3,
                            .info = info,
                            .info_size = sizeof info,
                            .groups = {(n + 63) / 64, 1, 1}};
    cubec_status st = cubec_launch(w->sh->d, w->s[s], &ld);
    /* The launch holds what it reads: the retained references may go at once. */
    drop_input(w, a);
    drop_input(w, bb);
    if (check(w, st, "cubec_launch(add)")) return;
    if (a->own) note_read(a->own, s);
    if (bb->own) note_read(bb->own, s);
    for (uint32_t i = 0; i < n; i++)
        c->model[i] = a->model[i] + bb->model[i] * info[1];
    w->counts[2]++;
}

static void op_write(worker *w)
{
    own_buf *b = random_own(w);
    if (!b) return;
    uint32_t s = rnd(w, STREAMS);
    before_write(w, b, s);
    uint32_t first = rnd(w, b->words), n = 1 + rnd(w, b->words - first);
    uint32_t data[MAX_WORDS];
    for (uint32_t i = 0; i < n; i++)
        data[i] = test_rand(&w->rng);
    if (check(w, cubec_write(w->sh->d, w->s[s], b->h, first * 4ull, data, n * 4ull), "cubec_write"))
        return;
    memcpy(b->model + first, data, n * 4ull);
    w->counts[3]++;
}

static void op_fill(worker *w)
{
    own_buf *b = random_own(w);
    if (!b) return;
    uint32_t s = rnd(w, STREAMS);
    before_write(w, b, s);
    uint32_t first = rnd(w, b->words), n = 1 + rnd(w, b->words - first);
    uint32_t pattern = test_rand(&w->rng);
    if (check(w, cubec_fill(w->sh->d, w->s[s], b->h, first * 4ull, n * 4ull, pattern),
              "cubec_fill"))
        return;
    for (uint32_t i = 0; i < n; i++)
        b->model[first + i] = pattern;
    w->counts[4]++;
}

static void op_copy(worker *w, input *src)
{
    own_buf *dst = random_own(w);
    if (!dst) return;
    if (!pick_input(w, src, 1)) return;
    if (src->own == dst) {
        drop_input(w, src);
        return;
    }
    uint32_t s = rnd(w, STREAMS);
    before_write(w, dst, s);
    uint32_t max = src->words < dst->words ? src->words : dst->words;
    uint32_t n = 1 + rnd(w, max);
    uint32_t from = rnd(w, src->words - n + 1), to = rnd(w, dst->words - n + 1);
    cubec_status st =
        cubec_copy(w->sh->d, w->s[s], src->h, from * 4ull, dst->h, to * 4ull, n * 4ull);
    drop_input(w, src);
    if (check(w, st, "cubec_copy")) return;
    if (src->own) note_read(src->own, s);
    memcpy(dst->model + to, src->model + from, n * 4ull);
    w->counts[5]++;
}

static void op_read(worker *w, input *src)
{
    if (!pick_input(w, src, 1)) return;
    uint32_t s = rnd(w, STREAMS);
    uint32_t first = rnd(w, src->words), n = 1 + rnd(w, src->words - first);
    uint32_t got[MAX_WORDS];
    cubec_status st;
    int async = rnd(w, 4) == 0;
    if (async) {
        cubec_event *e = NULL;
        st = cubec_read_async(w->sh->d, w->s[s], src->h, first * 4ull, got, n * 4ull, &e);
        /* The event keeps the source alive: drop the reference before waiting. */
        drop_input(w, src);
        if (!st) st = cubec_event_wait(e);
        cubec_event_free(e);
    } else {
        st = cubec_read(w->sh->d, w->s[s], src->h, first * 4ull, got, n * 4ull);
        drop_input(w, src);
    }
    if (check(w, st, async ? "cubec_read_async" : "cubec_read")) return;
    char what[96];
    snprintf(what, sizeof what, "%s of %s buffer on stream %u, words [%u, +%u)",
             async ? "async read" : "read", src->own ? "an own" : "a published", s, first, n);
    compare(w, got, src->model, first, n, what);
    w->counts[6]++;
}

static void remove_own(worker *w, own_buf *b)
{
    uint32_t i = (uint32_t)(b - w->own);
    w->own[i] = w->own[--w->own_count];
}

/* Releases an own buffer, whatever is still queued on it. */
static void op_release(worker *w)
{
    own_buf *b = random_own(w);
    if (!b) return;
    if (check(w, cubec_buffer_release(w->sh->d, b->h), "cubec_buffer_release")) return;
    free(b->model);
    remove_own(w, b);
    w->counts[7]++;
}

/* Moves an own buffer to the registry: from now on it is only read. */
static void op_publish(worker *w)
{
    own_buf *b = random_own(w);
    if (!b || w->published_count == MAX_PUBLISHED) return;
    shared_state *sh = w->sh;
    /* Half of the time with a sync of the streams that wrote it; the rules order readers after
     * the queued work of the owner and of the last writer anyway. */
    if (rnd(w, 2))
        for (uint32_t t = 0; t < STREAMS; t++)
            if (check(w, cubec_sync(sh->d, w->s[t]), "cubec_sync before publishing")) return;
    pthread_mutex_lock(&sh->lock);
    published *slot = NULL;
    for (uint32_t i = 0; i < THREADS * MAX_PUBLISHED && !slot; i++)
        if (!sh->registry[i].live) slot = &sh->registry[i];
    if (slot) *slot = (published){1, w->id, b->h, b->words, b->model};
    pthread_mutex_unlock(&sh->lock);
    if (!slot) { /* cannot happen: MAX_PUBLISHED per thread */
        fail_worker(w, "the registry is full");
        return;
    }
    w->published_count++;
    remove_own(w, b);
    w->counts[8]++;
}

/* Takes one of this thread's published buffers out of the registry and releases it, while other
 * threads may still have work queued that reads it. */
static void op_unpublish(worker *w, int all)
{
    shared_state *sh = w->sh;
    for (;;) {
        pthread_mutex_lock(&sh->lock);
        uint32_t mine[THREADS * MAX_PUBLISHED], n = 0;
        for (uint32_t i = 0; i < THREADS * MAX_PUBLISHED; i++)
            if (sh->registry[i].live && sh->registry[i].owner_thread == w->id) mine[n++] = i;
        published p = {0};
        if (n) {
            published *e = &sh->registry[mine[all ? 0 : rnd(w, n)]];
            p = *e;
            e->live = 0;
            e->model = NULL;
        }
        pthread_mutex_unlock(&sh->lock);
        if (!n) return;
        w->published_count--;
        check(w, cubec_buffer_release(sh->d, p.h), "cubec_buffer_release of a published");
        free(p.model);
        w->counts[9]++;
        if (!all) return;
    }
}

static void *worker_run(void *arg)
{
    worker *w = arg;
    shared_state *sh = w->sh;
    input *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    for (uint32_t s = 0; s < STREAMS && !w->failed; s++)
        check(w, cubec_stream_new(sh->d, &w->s[s]), "cubec_stream_new");
    memcpy(sh->streams[w->id], w->s, sizeof w->s);
    for (uint32_t i = 0; i < sh->ops && !w->failed; i++) {
        uint32_t r = rnd(w, 100);
        if (w->own_count < 2 || r < 10)
            op_create(w);
        else if (r < 30)
            op_axpb(w);
        else if (r < 45)
            op_add(w, a, b);
        else if (r < 52)
            op_write(w);
        else if (r < 57)
            op_fill(w);
        else if (r < 64)
            op_copy(w, a);
        else if (r < 80)
            op_read(w, a);
        else if (r < 87)
            op_release(w);
        else if (r < 93)
            op_publish(w);
        else if (r < 97)
            op_unpublish(w, 0);
        else if (!check(w, cubec_sync(sh->d, w->s[rnd(w, STREAMS)]), "cubec_sync"))
            w->counts[10]++;
    }
    /* Every own buffer is read back and checked, then released; then the published ones. */
    for (uint32_t i = 0; i < w->own_count && !w->failed; i++) {
        own_buf *o = &w->own[i];
        uint32_t *got = malloc((size_t)o->words * 4);
        uint32_t s = rnd(w, STREAMS);
        if (!check(w, cubec_read(sh->d, w->s[s], o->h, 0, got, o->words * 4ull), "final read"))
            compare(w, got, o->model, 0, o->words, "final read of an own buffer");
        free(got);
    }
    while (w->own_count) {
        own_buf *o = &w->own[w->own_count - 1];
        check(w, cubec_buffer_release(sh->d, o->h), "final release");
        free(o->model);
        w->own_count--;
    }
    op_unpublish(w, 1);
    free(a);
    free(b);
    return NULL;
}

static uint32_t env_u32(const char *name, uint32_t fallback)
{
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end;
    unsigned long x = strtoul(v, &end, 0);
    if (*end || x == 0 || x > 100000000ul) fail_msg("%s='%s' is not a positive number", name, v);
    return (uint32_t)x;
}

static void test_streams_under_stress(void **state)
{
    (void)state;
    shared_state *sh = calloc(1, sizeof *sh);
    sh->ops = env_u32("CUBEC_STRESS_OPS", DEFAULT_OPS);
    sh->seed = env_u32("CUBEC_STRESS_SEED", 20250101);
    pthread_mutex_init(&sh->lock, NULL);
    sh->d = test_device_open();
    cubec_kernel_desc ka = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "axpb", .glsl = axpb_src};
    cubec_kernel_desc kb = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "add", .glsl = add_src};
    ASSERT_OK(cubec_kernel_create(sh->d, &ka, &sh->axpb));
    ASSERT_OK(cubec_kernel_create(sh->d, &kb, &sh->add));
    worker *w = calloc(THREADS, sizeof *w);
    pthread_t t[THREADS];
    for (uint32_t i = 0; i < THREADS; i++) {
        w[i].sh = sh;
        w[i].id = i;
        w[i].rng = sh->seed * 2654435761u + i * 97u + 1;
        assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
    }
    for (uint32_t i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    uint64_t reads = 0, words = 0;
    uint32_t counts[16] = {0};
    for (uint32_t i = 0; i < THREADS; i++) {
        if (w[i].failed) fail_msg("seed %u, %u ops per thread: %s", sh->seed, sh->ops, w[i].why);
        reads += w[i].reads_checked;
        words += w[i].words_checked;
        for (uint32_t k = 0; k < 16; k++)
            counts[k] += w[i].counts[k];
    }
    printf("seed %u, %u threads x %u ops: %" PRIu64 " reads (%" PRIu64 " words) checked; "
           "create %u axpb %u add %u write %u fill %u copy %u read %u release %u publish %u "
           "unpublish %u sync %u; %u uses of other threads' buffers\n",
           sh->seed, THREADS, sh->ops, reads, words, counts[0], counts[1], counts[2], counts[3],
           counts[4], counts[5], counts[6], counts[7], counts[8], counts[9], counts[10],
           counts[11]);
    /* The run must have exercised what it is about. */
    assert_true(reads > 0);
    assert_true(counts[2] > 0 && counts[7] > 0 && counts[8] > 0 && counts[11] > 0);
    /* Nothing leaks: every stream's pools are empty once the GPU is done. */
    for (uint32_t i = 0; i < THREADS; i++)
        for (uint32_t s = 0; s < STREAMS; s++) {
            cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
            ASSERT_OK(cubec_memory_cleanup(sh->d, sh->streams[i][s]));
            ASSERT_OK(cubec_memory_report_get(sh->d, sh->streams[i][s], &r));
            if (r.allocations)
                fail_msg("stream %u of thread %u: %" PRIu64 " allocations left", s, i,
                         r.allocations);
        }
    ASSERT_OK(cubec_kernel_destroy(sh->d, sh->axpb));
    ASSERT_OK(cubec_kernel_destroy(sh->d, sh->add));
    test_device_close(sh->d);
    pthread_mutex_destroy(&sh->lock);
    free(w);
    free(sh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_streams_under_stress)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
