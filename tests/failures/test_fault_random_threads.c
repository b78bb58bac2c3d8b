/* Random faults at random points of a multi-threaded workload (issue 11).
 *
 * Each round opens a device (a random tasks_max), creates two kernels, arms one to three faults
 * of distinct random kinds at random call numbers (cubec_fault_inject), and starts four worker
 * threads and one graph thread, each on a stream of its own with buffers of its own. A worker
 * takes STEPS random steps: host writes, launches (y = a * 3 + b + c; acc += y), copies, fills,
 * blocking reads, asynchronous reads waited for a step later, flushes and syncs. The graph thread
 * prepares, warms up, captures and ends a graph, then writes its input, replays it and reads its
 * outputs a few times, and destroys it; and again. Every thread keeps a CPU model of its buffers.
 *
 * Checked, whatever the interleaving: every read (blocking, or an asynchronous read's wait)
 * returns exactly the model's bytes, or the bytes from before a call that returned an error, or
 * fails with a message naming an armed fault ("injected fault: <kind> call #"); a buffer that
 * fails is written again from the host, as a program would. Every call succeeds or fails naming
 * an armed fault. After a CUBEC_DEVICE_LOST (a wait or an encode fault) every later call of the
 * thread fails with CUBEC_DEVICE_LOST naming the cause. cubec_device_close returns (the ctest
 * timeout catches a hang); the validation layer says nothing; the ASan and TSan builds run it.
 *
 * Bounded by iterations, not time: CUBEC_FAULT_ROUNDS rounds (default 24) of STEPS steps per
 * thread. CUBEC_FAULT_SEED sets the seed (printed at the start and with any failure): it fixes
 * every random choice (the faults armed and each thread's steps), not the interleaving of the
 * threads, so a replay runs the same program with the same faults. */
#include "test_util.h"
#include "uint_kernels.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { WORKERS = 4, THREADS = WORKERS + 1, BUFS = 4, WORDS = 256, STEPS = 100, REPLAYS = 3 };

typedef struct mbuf {
    cubec_buffer h;
    uint32_t ref[WORDS], alt[WORDS];
    int has_alt; /* a call that wrote it returned an error: it may hold `alt` (its old bytes) */
} mbuf;

typedef struct round_state {
    cubec_device *d;
    cubec_kernel mix, acc;
    int armed[CUBEC_FAULT_KIND_COUNT];
    uint64_t seed;
    unsigned round;
} round_state;

typedef struct thread_state {
    round_state *rs;
    unsigned id;
    uint64_t rng;
    cubec_stream s;
    mbuf b[BUFS];
    int lost;
    char cause[512];
    unsigned step;
    uint64_t reads, failed_reads, errors;
    /* An asynchronous read in flight. */
    cubec_event *ev;
    int ev_buf;
    uint32_t ev_got[WORDS], ev_ref[WORDS], ev_alt[WORDS];
    int ev_has_alt;
} thread_state;

static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static char first_violation[2048];
static uint64_t violations;
static uint64_t seed_used;

static void violate(thread_state *t, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void violate(thread_state *t, const char *format, ...)
{
    char what[1536];
    va_list ap;
    va_start(ap, format);
    vsnprintf(what, sizeof what, format, ap);
    va_end(ap);
    pthread_mutex_lock(&report_lock);
    if (!violations++)
        snprintf(first_violation, sizeof first_violation,
                 "seed 0x%016" PRIx64 " round %u thread %u step %u: %s", t->rs->seed, t->rs->round,
                 t->id, t->step, what);
    pthread_mutex_unlock(&report_lock);
}

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static uint32_t below(uint64_t *x, uint32_t n)
{
    return (uint32_t)(next(x) % n);
}

/* Does `msg` name one of the armed faults? */
static int names_fault(const round_state *rs, const char *msg)
{
    for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++) {
        if (!rs->armed[k]) continue;
        char root[64];
        snprintf(root, sizeof root, "injected fault: %s call #",
                 cubec_fault_kind_name((cubec_fault_kind)k));
        if (strstr(msg, root)) return 1;
    }
    return 0;
}

/* After every call. Returns 1 when it failed (st is freed). */
static int outcome(thread_state *t, cubec_status st, const char *what)
{
    if (!st) {
        if (t->lost) violate(t, "%s succeeded after the device was lost (%s)", what, t->cause);
        return 0;
    }
    const char *msg = cubec_status_message(st);
    t->errors++;
    if (!names_fault(t->rs, msg))
        violate(t, "%s: %s: %s names no armed fault", what, cubec_code_name(cubec_status_code(st)),
                msg);
    if (cubec_status_code(st) == CUBEC_DEVICE_LOST) {
        if (!t->lost) snprintf(t->cause, sizeof t->cause, "%s", msg);
        t->lost = 1;
    } else if (t->lost) {
        violate(t, "%s after the loss: %s (not CUBEC_DEVICE_LOST)", what, msg);
    }
    cubec_status_free(st);
    return 1;
}

static void random_data(thread_state *t, uint32_t *w)
{
    for (uint32_t i = 0; i < WORDS; i++)
        w[i] = (uint32_t)next(&t->rng);
}

static void set_ref(mbuf *b, const uint32_t *ref)
{
    memcpy(b->ref, ref, sizeof b->ref);
    b->has_alt = 0;
}

/* A call that would have written `b` with `ref` returned an error. */
static void set_ambiguous(mbuf *b, const uint32_t *ref)
{
    if (!b->has_alt) memcpy(b->alt, b->ref, sizeof b->alt);
    memcpy(b->ref, ref, sizeof b->ref);
    b->has_alt = 1;
}

static void do_write(thread_state *t, mbuf *b, const uint32_t *data)
{
    if (t->lost || !b->h.id) return;
    if (outcome(t, cubec_write(t->rs->d, t->s, b->h, 0, data, WORDS * 4u), "cubec_write"))
        set_ambiguous(b, data);
    else
        set_ref(b, data);
}

/* Judges a read of `b` that returned `st` and `got`, against the model then (ref, alt). */
static void judge(thread_state *t, mbuf *b, cubec_status st, const uint32_t *got,
                  const uint32_t *ref, const uint32_t *alt, int has_alt, int current,
                  const char *what)
{
    t->reads++;
    if (!st) {
        if (t->lost) violate(t, "%s succeeded after the device was lost", what);
        int is_ref = !memcmp(got, ref, WORDS * 4u),
            is_alt = has_alt && !memcmp(got, alt, WORDS * 4u);
        if (!is_ref && !is_alt) {
            uint32_t i = 0;
            while (got[i] == ref[i])
                i++;
            violate(t, "%s returned wrong bytes: word %u is %u, expected %u%s", what, i, got[i],
                    ref[i], has_alt ? " or the bytes from before a failed call" : "");
        }
        if (current) set_ref(b, is_ref ? ref : got);
        return;
    }
    int lost = cubec_status_code(st) == CUBEC_DEVICE_LOST;
    t->failed_reads += !lost;
    outcome(t, st, what);
    if (!lost && current && !t->lost) { /* write it again, as a program would */
        uint32_t data[WORDS];
        memcpy(data, b->ref, sizeof data);
        do_write(t, b, data);
    }
}

static void do_read(thread_state *t, mbuf *b)
{
    if (t->lost || !b->h.id) return;
    uint32_t got[WORDS];
    cubec_status st = cubec_read(t->rs->d, t->s, b->h, 0, got, sizeof got);
    uint32_t ref[WORDS], alt[WORDS];
    memcpy(ref, b->ref, sizeof ref);
    memcpy(alt, b->alt, sizeof alt);
    judge(t, b, st, got, ref, alt, b->has_alt, 1, "cubec_read");
}

/* Inputs with ambiguous bytes are read before they are used. */
static int ready(thread_state *t, mbuf *b)
{
    if (b->has_alt) do_read(t, b);
    return !t->lost && b->h.id;
}

static void do_mix(thread_state *t, mbuf *a, mbuf *b, mbuf *y, uint32_t c)
{
    if (!ready(t, a) || !ready(t, b) || !y->h.id) return;
    uint32_t ref[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        ref[i] = a->ref[i] * 3u + b->ref[i] + c;
    cubec_buffer hs[3] = {a->h, b->h, y->h};
    uint32_t info[2] = {WORDS, c};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = t->rs->mix,
                            .buffers = hs,
                            .buffer_count = 3,
                            .info = info,
                            .info_size = sizeof info,
                            .groups = {WORDS / 64, 1, 1}};
    if (outcome(t, cubec_launch(t->rs->d, t->s, &ld), "cubec_launch mix"))
        set_ambiguous(y, ref);
    else
        set_ref(y, ref);
}

static void do_acc(thread_state *t, mbuf *acc, mbuf *y)
{
    if (!ready(t, acc) || !ready(t, y)) return;
    uint32_t ref[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        ref[i] = acc->ref[i] + y->ref[i];
    cubec_buffer hs[2] = {acc->h, y->h};
    uint32_t info[1] = {WORDS};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = t->rs->acc,
                            .buffers = hs,
                            .buffer_count = 2,
                            .info = info,
                            .info_size = sizeof info,
                            .groups = {WORDS / 64, 1, 1}};
    if (outcome(t, cubec_launch(t->rs->d, t->s, &ld), "cubec_launch acc"))
        set_ambiguous(acc, ref);
    else
        set_ref(acc, ref);
}

static void do_copy(thread_state *t, mbuf *src, mbuf *dst)
{
    if (!ready(t, src) || !dst->h.id) return;
    uint32_t ref[WORDS];
    memcpy(ref, src->ref, sizeof ref);
    if (outcome(t, cubec_copy(t->rs->d, t->s, src->h, 0, dst->h, 0, WORDS * 4u), "cubec_copy"))
        set_ambiguous(dst, ref);
    else
        set_ref(dst, ref);
}

static void do_fill(thread_state *t, mbuf *dst, uint32_t pattern)
{
    if (t->lost || !dst->h.id) return;
    uint32_t ref[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        ref[i] = pattern;
    if (outcome(t, cubec_fill(t->rs->d, t->s, dst->h, 0, WORDS * 4u, pattern), "cubec_fill"))
        set_ambiguous(dst, ref);
    else
        set_ref(dst, ref);
}

static void wait_async(thread_state *t)
{
    if (!t->ev) return;
    if (t->lost) { /* must not wait for a lost device */
        cubec_event_free(t->ev);
        t->ev = NULL;
        return;
    }
    cubec_status st = cubec_event_wait(t->ev);
    mbuf *b = &t->b[t->ev_buf];
    /* Still current when nothing wrote the buffer since: the model did not change. */
    int current = !memcmp(b->ref, t->ev_ref, sizeof b->ref) && b->has_alt == t->ev_has_alt;
    judge(t, b, st, t->ev_got, t->ev_ref, t->ev_alt, t->ev_has_alt, current, "cubec_event_wait");
    cubec_event_free(t->ev);
    t->ev = NULL;
}

static void start_async(thread_state *t, int i)
{
    mbuf *b = &t->b[i];
    if (t->lost || !b->h.id) return;
    wait_async(t);
    memcpy(t->ev_ref, b->ref, sizeof t->ev_ref);
    memcpy(t->ev_alt, b->alt, sizeof t->ev_alt);
    t->ev_has_alt = b->has_alt;
    t->ev_buf = i;
    cubec_status st =
        cubec_read_async(t->rs->d, t->s, b->h, 0, t->ev_got, sizeof t->ev_got, &t->ev);
    if (st) {
        if (t->ev) violate(t, "a failed cubec_read_async returned an event");
        t->ev = NULL;
        judge(t, b, st, t->ev_got, t->ev_ref, t->ev_alt, t->ev_has_alt, 1, "cubec_read_async");
    }
}

/* The end of a thread: every buffer read; after a loss, a few calls must fail at once. */
static void thread_end(thread_state *t)
{
    wait_async(t);
    for (int i = 0; i < BUFS; i++)
        do_read(t, &t->b[i]);
    if (t->lost) {
        uint32_t w = 0;
        cubec_buffer nb = {0};
        cubec_status st[3] = {cubec_sync(t->rs->d, t->s),
                              t->b[0].h.id ? cubec_write(t->rs->d, t->s, t->b[0].h, 0, &w, 4)
                                           : cubec_flush(t->rs->d, t->s),
                              cubec_buffer_create(t->rs->d, t->s, 64, &nb)};
        for (int i = 0; i < 3; i++) {
            if (cubec_status_code(st[i]) != CUBEC_DEVICE_LOST ||
                !names_fault(t->rs, cubec_status_message(st[i])))
                violate(t, "call %d after the loss: %s (%s)", i,
                        cubec_code_name(cubec_status_code(st[i])), cubec_status_message(st[i]));
            cubec_status_free(st[i]);
        }
        return; /* close frees what could no longer be released */
    }
    /* A buffer whose creation failed has handle 0, whose release is a no-op that succeeds even
     * after a loss (cubec.h); only real handles are judged. */
    for (int i = 0; i < BUFS; i++)
        if (t->b[i].h.id)
            outcome(t, cubec_buffer_release(t->rs->d, t->b[i].h), "cubec_buffer_release");
}

static void thread_begin(thread_state *t)
{
    if (outcome(t, cubec_stream_new(t->rs->d, &t->s), "cubec_stream_new")) return;
    for (int i = 0; i < BUFS; i++) {
        uint32_t data[WORDS];
        random_data(t, data);
        t->b[i].h.id = 0;
        if (!outcome(t, cubec_buffer_from(t->rs->d, t->s, data, sizeof data, &t->b[i].h),
                     "cubec_buffer_from"))
            set_ref(&t->b[i], data);
    }
}

static void *worker(void *arg)
{
    thread_state *t = arg;
    thread_begin(t);
    for (t->step = 0; t->step < STEPS && !t->lost; t->step++) {
        mbuf *x = &t->b[below(&t->rng, BUFS)], *y = &t->b[below(&t->rng, BUFS)];
        mbuf *z = &t->b[below(&t->rng, BUFS)];
        uint32_t op = below(&t->rng, 20), c = below(&t->rng, 100);
        uint32_t data[WORDS];
        if (op < 3) {
            random_data(t, data);
            do_write(t, x, data);
        } else if (op < 8) {
            if (x != z && y != z) do_mix(t, x, y, z, c);
        } else if (op < 10) {
            if (x != y) do_acc(t, x, y);
        } else if (op < 12) {
            if (x != y) do_copy(t, x, y);
        } else if (op < 13) {
            do_fill(t, x, c);
        } else if (op < 16) {
            do_read(t, x);
        } else if (op < 18) {
            start_async(t, (int)(x - t->b));
        } else if (op < 19) {
            if (!t->lost) outcome(t, cubec_sync(t->rs->d, t->s), "cubec_sync");
        } else {
            if (!t->lost) outcome(t, cubec_flush(t->rs->d, t->s), "cubec_flush");
        }
    }
    thread_end(t);
    return NULL;
}

/* b[0] = x (written before each replay), b[1] = p, b[2] = y = mix(x, p), b[3] = acc += y. */
static void graph_body(thread_state *t, uint32_t c)
{
    do_mix(t, &t->b[0], &t->b[1], &t->b[2], c);
    do_acc(t, &t->b[3], &t->b[2]);
}

static void *grapher(void *arg)
{
    thread_state *t = arg;
    thread_begin(t);
    cubec_device *d = t->rs->d;
    for (t->step = 0; t->step < STEPS / 10 && !t->lost; t->step++) {
        uint32_t c = below(&t->rng, 100);
        for (int i = 0; i < BUFS; i++)
            ready(t, &t->b[i]);
        if (t->lost || !t->b[0].h.id || !t->b[1].h.id || !t->b[2].h.id || !t->b[3].h.id) break;
        if (outcome(t, cubec_graph_prepare(d, t->s), "cubec_graph_prepare")) continue;
        graph_body(t, c); /* warm-up */
        int doubt = 0;
        for (int i = 0; i < BUFS; i++)
            doubt |= t->b[i].has_alt;
        if (doubt) { /* a warm-up call failed: drop the preparation (no read inside it) */
            cubec_graph none = {0};
            cubec_status_free(cubec_graph_end(d, t->s, &none));
            continue;
        }
        if (outcome(t, cubec_graph_begin(d, t->s), "cubec_graph_begin")) continue;
        /* Recorded, not run: the model does not change. */
        mbuf saved[BUFS];
        memcpy(saved, t->b, sizeof saved);
        graph_body(t, c);
        memcpy(t->b, saved, sizeof saved);
        cubec_graph g = {0};
        if (outcome(t, cubec_graph_end(d, t->s, &g), "cubec_graph_end")) {
            /* As a program would: read what the capture touched, writing again what fails. */
            for (int i = 0; i < BUFS; i++)
                do_read(t, &t->b[i]);
            continue;
        }
        for (int r = 0; r < REPLAYS && !t->lost; r++) {
            uint32_t data[WORDS];
            random_data(t, data);
            do_write(t, &t->b[0], data);
            for (int i = 0; i < BUFS; i++)
                ready(t, &t->b[i]);
            if (t->lost) break;
            int failed = outcome(t, cubec_graph_replay(d, t->s, g), "cubec_graph_replay");
            uint32_t y[WORDS], acc[WORDS];
            for (uint32_t i = 0; i < WORDS; i++) {
                y[i] = t->b[0].ref[i] * 3u + t->b[1].ref[i] + c;
                acc[i] = t->b[3].ref[i] + y[i];
            }
            if (failed) {
                set_ambiguous(&t->b[2], y);
                set_ambiguous(&t->b[3], acc);
            } else {
                set_ref(&t->b[2], y);
                set_ref(&t->b[3], acc);
            }
            do_read(t, &t->b[2]);
            do_read(t, &t->b[3]);
        }
        if (!t->lost) outcome(t, cubec_graph_destroy(d, t->s, g), "cubec_graph_destroy");
    }
    thread_end(t);
    return NULL;
}

static const char *kinds_armed(const round_state *rs, char *buf, size_t size)
{
    buf[0] = 0;
    size_t at = 0;
    for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++)
        if (rs->armed[k] && at < size)
            at += (size_t)snprintf(buf + at, size - at, "%s%s:%d", at ? "," : "",
                                   cubec_fault_kind_name((cubec_fault_kind)k), rs->armed[k]);
    return buf;
}

static uint64_t total_reads, total_failed_reads, total_errors, rounds_lost;

static void one_round(uint64_t seed, unsigned round)
{
    uint64_t rng = seed ^ (0x9e3779b97f4a7c15ull * (round + 1));
    if (!rng) rng = 1;
    round_state rs = {.seed = seed, .round = round};
    char tasks[16];
    snprintf(tasks, sizeof tasks, "%u", 2 + below(&rng, 7));
    setenv("CUBEC_TASKS_MAX", tasks, 1);
    rs.d = test_device_open();
    unsetenv("CUBEC_TASKS_MAX");
    cubec_kernel_desc mk = {.struct_size = sizeof(cubec_kernel_desc),
                            .name = "mix",
                            .glsl = mix_src},
                      ak = {
                          .struct_size = sizeof(cubec_kernel_desc), .name = "acc", .glsl = acc_src};
    ASSERT_OK(cubec_kernel_create(rs.d, &mk, &rs.mix));
    ASSERT_OK(cubec_kernel_create(rs.d, &ak, &rs.acc));
    /* One to three faults of distinct kinds, at call numbers in the range the workload makes. */
    static const uint32_t range[CUBEC_FAULT_KIND_COUNT] = {
        [CUBEC_FAULT_PAGE] = 6,     [CUBEC_FAULT_COMPILE] = 1, [CUBEC_FAULT_PIPELINE] = 2,
        [CUBEC_FAULT_SUBMIT] = 100, [CUBEC_FAULT_MAP] = 12,    [CUBEC_FAULT_WAIT] = 20,
        [CUBEC_FAULT_ENCODE] = 80,
    };
    uint32_t faults = 1 + below(&rng, 3);
    for (uint32_t i = 0; i < faults; i++) {
        int k = (int)below(&rng, CUBEC_FAULT_KIND_COUNT);
        if (rs.armed[k]) continue;
        rs.armed[k] = 1 + (int)below(&rng, range[k]);
        ASSERT_OK(cubec_fault_inject(rs.d, (cubec_fault_kind)k, (uint64_t)rs.armed[k]));
    }
    thread_state *ts = calloc(THREADS, sizeof *ts);
    assert_non_null(ts);
    pthread_t th[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        ts[i].rs = &rs;
        ts[i].id = i;
        ts[i].rng = next(&rng) | 1;
        assert_int_equal(pthread_create(&th[i], NULL, i < WORKERS ? worker : grapher, &ts[i]), 0);
    }
    int lost = 0;
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        total_reads += ts[i].reads;
        total_failed_reads += ts[i].failed_reads;
        total_errors += ts[i].errors;
        lost |= ts[i].lost;
    }
    rounds_lost += lost;
    uint64_t counts[CUBEC_FAULT_KIND_COUNT] = {0};
    cubec_status st = cubec_fault_get_counts(rs.d, counts);
    char armed[160];
    printf("round %u: faults %s, tasks_max %s: %s; %" PRIu64 " submits, %" PRIu64 " waits\n", round,
           kinds_armed(&rs, armed, sizeof armed), tasks,
           lost ? "device lost"
           : st ? cubec_status_message(st)
                : "device kept",
           counts[CUBEC_FAULT_SUBMIT], counts[CUBEC_FAULT_WAIT]);
    cubec_status_free(st);
    if (!lost) {
        ASSERT_OK(cubec_kernel_destroy(rs.d, rs.mix));
        ASSERT_OK(cubec_kernel_destroy(rs.d, rs.acc));
    }
    test_device_close(rs.d); /* must return, lost or not */
    free(ts);
}

static void test_random_faults_in_threads(void **state)
{
    (void)state;
    const char *v = getenv("CUBEC_FAULT_SEED");
    uint64_t seed = v && *v ? strtoull(v, NULL, 0)
                            : ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^ 0x5deece66dull;
    seed_used = seed;
    const char *r = getenv("CUBEC_FAULT_ROUNDS");
    unsigned rounds = r && *r ? (unsigned)strtoul(r, NULL, 10) : 24;
    printf("seed 0x%016" PRIx64 " (CUBEC_FAULT_SEED=0x%016" PRIx64 " replays it), %u rounds\n",
           seed, seed, rounds);
    fflush(stdout);
    for (unsigned i = 0; i < rounds; i++)
        one_round(seed, i);
    printf("%u rounds: %" PRIu64 " reads checked, %" PRIu64 " failed naming a fault, %" PRIu64
           " calls failed naming a fault, %" PRIu64 " devices lost\n",
           rounds, total_reads, total_failed_reads, total_errors, rounds_lost);
    if (violations)
        fail_msg("%" PRIu64 " violation(s); the first: %s", violations, first_violation);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_faults_in_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
