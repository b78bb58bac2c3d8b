/* A cubec_write refused inside a capture window (docs/graphs.md: the call succeeds, the bytes
 * carry a CUBEC_GRAPH_STATE failure and the capture is doomed) keeps its failure whatever
 * happens to work another stream queued on those bytes before it (issue 11). On the null backend
 * with a delay (submissions complete null_delay_us after they are made, so the earlier work is
 * still in flight when the checks run), for every combination of:
 *  - where: stream 2's work and the refused write cover the same buffer; overlapping views (the
 *    write's view starts inside stream 2's); neighbouring views of one buffer;
 *  - the earlier work: a copy, a fill or a launch that succeeds; a copy whose input carries a
 *    failure (skipped when recorded); a copy or a launch whose submission fails (an injected
 *    `submit` fault strikes the submission the write makes of it);
 *  - how it settles: cubec_sync of stream 2, cubec_flush of stream 2, cubec_flush of the
 *    capturing stream, or nothing before the checks;
 *  - when the checks run: inside the window, or after cubec_graph_end;
 *  - which stream owns the buffer; unified memory or the staging paths (CUBEC_FORCE_STAGING);
 * the refused range checks and reads as refused (the write came last), the rest of stream 2's
 * range holds what its work wrote (a launch on null keeps the bytes) or that work's failure, and
 * the capture is doomed. Every expected byte is computed here.
 * Before the fix the cases whose earlier submission fails broke the rule: the write returned the
 * submission's error before refusing, so the refused range carried the submission failure (or,
 * for neighbouring views, nothing: it read back the old bytes) and cubec_graph_end succeeded.
 * The other cases passed before the fix as well. */
#include "test_util.h"
#include "uint_kernels.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORDS 256u /* of X: 1 KiB, four quarters of 256 bytes */
#define QUARTER (WORDS * 4u / 4u)
#define DELAY_US 2000u

typedef enum where { SAME, OVERLAP, NEIGHBOUR, WHERE_COUNT } where;
typedef enum earlier {
    COPY_OK,
    FILL_OK,
    LAUNCH_OK,
    COPY_BAD_INPUT,
    COPY_LOST,
    LAUNCH_LOST,
    EARLIER_COUNT
} earlier;
typedef enum settle { SYNC_OTHER, FLUSH_OTHER, FLUSH_CAPTURING, NOTHING, SETTLE_COUNT } settle;

static const char *const where_names[] = {"same buffer", "overlapping views", "neighbour views"};
static const char *const earlier_names[] = {"copy",
                                            "fill",
                                            "launch",
                                            "copy of a failed input",
                                            "copy whose submission fails",
                                            "launch whose submission fails"};
static const char *const settle_names[] = {"sync of stream 2", "flush of stream 2",
                                           "flush of the capturing stream", "nothing"};

#define FILL_PATTERN 0x5eed1234u

typedef struct ranges {
    uint64_t other_at, other_size; /* what stream 2's work writes, in X */
    uint64_t write_at, write_size; /* what the refused write covers */
} ranges;

static ranges ranges_of(where w)
{
    if (w == SAME) return (ranges){0, 4 * QUARTER, 0, 4 * QUARTER};
    if (w == OVERLAP) return (ranges){0, 3 * QUARTER, QUARTER, 3 * QUARTER};
    return (ranges){0, 2 * QUARTER, 2 * QUARTER, 2 * QUARTER};
}

static void expect_code(cubec_status st, cubec_code code, const char *needle, const char *what)
{
    if (!st) fail_msg("%s: succeeded; expected %s", what, cubec_code_name(code));
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
    cubec_code got = cubec_status_code(st);
    cubec_status_free(st);
    if (got != code || (needle && !strstr(msg, needle)))
        fail_msg("%s: %s \"%s\"; expected %s naming \"%s\"", what, cubec_code_name(got), msg,
                 cubec_code_name(code), needle ? needle : "");
}

typedef struct variant {
    where w;
    earlier e;
    settle how;
    int check_inside; /* the checks run inside the capture window */
    int x_on_other;   /* X belongs to stream 2 (else to the capturing stream) */
    int staged;       /* CUBEC_FORCE_STAGING: transfers through the staging rings */
} variant;

/* One device per staging mode, its streams and kernel reused by every case: a case leaves no
 * capture, no queued work and no armed fault behind. */
typedef struct rig {
    cubec_device *d;
    cubec_stream s1, s2, s3; /* s1 captures; s2 queues the earlier work; s3 taints an input */
    cubec_kernel produce;
} rig;

static rig rig_open(int staged)
{
    if (staged) setenv("CUBEC_FORCE_STAGING", "1", 1);
    cubec_device_desc desc = {.struct_size = sizeof(cubec_device_desc),
                              .backend = "null",
                              .tasks_max = 64,
                              .null_delay_us = DELAY_US};
    rig g = {0};
    cubec_status opened = cubec_device_open(&desc, &g.d);
    unsetenv("CUBEC_FORCE_STAGING");
    ASSERT_OK(opened);
    ASSERT_OK(cubec_stream_new(g.d, &g.s1));
    ASSERT_OK(cubec_stream_new(g.d, &g.s2));
    ASSERT_OK(cubec_stream_new(g.d, &g.s3));
    const cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "produce", .glsl = produce_src};
    ASSERT_OK(cubec_kernel_create(g.d, &kd, &g.produce));
    return g;
}

static void run_case(const rig *g, variant v)
{
    const where w = v.w;
    const earlier e = v.e;
    const int lost = e == COPY_LOST || e == LAUNCH_LOST;
    char what[256];
    snprintf(what, sizeof what, "%s, %s, settled by %s, checked %s, X of stream %d%s",
             where_names[w], earlier_names[e], settle_names[v.how],
             v.check_inside ? "inside the window" : "after it", v.x_on_other ? 2 : 1,
             v.staged ? ", staged" : "");
    cubec_device *d = g->d;
    const cubec_stream s1 = g->s1, s2 = g->s2, s3 = g->s3;
    const ranges r = ranges_of(w);

    /* The reference: X's first bytes, what stream 2's work writes, what the refused write
     * carries (never to be seen). */
    uint32_t x0[WORDS], src[WORDS], refused[WORDS];
    for (uint32_t i = 0; i < WORDS; i++) {
        x0[i] = 0x10000000u + i;
        src[i] = 0x20000000u + i * 7u;
        refused[i] = 0x30000000u + i;
    }
    cubec_buffer x, s, xw;
    ASSERT_OK(cubec_buffer_from(d, v.x_on_other ? s2 : s1, x0, sizeof x0, &x));
    ASSERT_OK(cubec_buffer_from(d, s2, src, sizeof src, &s));
    ASSERT_OK(cubec_buffer_view(d, x, r.write_at, r.write_size, &xw));
    cubec_buffer xo;
    ASSERT_OK(cubec_buffer_view(d, x, r.other_at, r.other_size, &xo));
    ASSERT_OK(cubec_sync(d, s1));
    ASSERT_OK(cubec_sync(d, s2));
    if (e == COPY_BAD_INPUT) {
        /* The source carries the failure of a lost submission on stream 3. */
        ASSERT_OK(cubec_copy(d, s3, x, 0, s, 0, sizeof src));
        ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
        expect_code(cubec_flush(d, s3), CUBEC_INTERNAL, "injected fault", what);
        expect_code(cubec_check(d, &s, 1), CUBEC_INTERNAL, "injected fault", what);
    }

    /* Stream 2's work on X, queued (tasks_max 64: nothing submits it yet). */
    if (e == FILL_OK)
        ASSERT_OK(cubec_fill(d, s2, x, r.other_at, r.other_size, FILL_PATTERN));
    else if (e == LAUNCH_OK || e == LAUNCH_LOST)
        ASSERT_OK(uint_launch(d, s2, g->produce, xo, NONE, (uint32_t)(r.other_size / 4), 3, 1));
    else
        ASSERT_OK(cubec_copy(d, s2, s, r.other_at, x, r.other_at, r.other_size));

    ASSERT_OK(cubec_graph_prepare(d, s1));
    ASSERT_OK(cubec_graph_begin(d, s1));
    char where_what[384];
    /* The write submits stream 2's work first (it must land after it); with COPY_LOST that
     * submission fails. */
    uint64_t submits_before = 0;
    if (lost) {
        uint64_t counts[CUBEC_FAULT_KIND_COUNT];
        ASSERT_OK(cubec_fault_get_counts(d, counts));
        submits_before = counts[CUBEC_FAULT_SUBMIT];
        ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    }
    cubec_status wst = cubec_write(d, s1, xw, 0, refused, r.write_size);
    /* Refused lazily: the call succeeds, even when stream 2's submission fails in it (that
     * failure lands on what stream 2's work would have written). */
    if (wst) fail_msg("%s: the refused write returned %s", what, cubec_status_message(wst));
    if (lost) {
        uint64_t counts[CUBEC_FAULT_KIND_COUNT];
        ASSERT_OK(cubec_fault_get_counts(d, counts));
        if (counts[CUBEC_FAULT_SUBMIT] < submits_before + 1)
            fail_msg("%s: the write submitted nothing: the fault did not strike", what);
    }

    switch (v.how) {
    case SYNC_OTHER: cubec_status_free(cubec_sync(d, s2)); break;
    case FLUSH_OTHER: cubec_status_free(cubec_flush(d, s2)); break;
    case FLUSH_CAPTURING: cubec_status_free(cubec_flush(d, s1)); break;
    case NOTHING: break;
    case SETTLE_COUNT: break;
    }
    cubec_graph graph = {0};
    if (!v.check_inside)
        expect_code(cubec_graph_end(d, s1, &graph), CUBEC_GRAPH_STATE, "inside the capture window",
                    what);
    /* The refused range: refused, from a check and a read on either stream. */
    snprintf(where_what, sizeof where_what, "%s: check of the refused range", what);
    expect_code(cubec_check(d, &xw, 1), CUBEC_GRAPH_STATE, "was refused", where_what);
    uint32_t got[WORDS];
    snprintf(where_what, sizeof where_what, "%s: read of the refused range", what);
    expect_code(cubec_read(d, s2, xw, 0, got, r.write_size), CUBEC_GRAPH_STATE, "was refused",
                where_what);
    if (!v.check_inside) {
        expect_code(cubec_read(d, s1, xw, 0, got, r.write_size), CUBEC_GRAPH_STATE, "was refused",
                    where_what);
    }
    /* Stream 2's bytes outside the refused range: its work's result, or its failure. */
    if (r.other_at < r.write_at) {
        uint64_t n = r.write_at - r.other_at;
        cubec_status st = cubec_read(d, s2, x, r.other_at, got, n);
        snprintf(where_what, sizeof where_what, "%s: stream 2's bytes before the refused range",
                 what);
        if (e == COPY_BAD_INPUT || lost) {
            expect_code(st, CUBEC_INTERNAL, "injected fault", where_what);
        } else {
            if (st) fail_msg("%s: %s", where_what, cubec_status_message(st));
            for (uint64_t i = 0; i < n / 4; i++) {
                /* The null backend runs no kernel: a launch's output keeps its bytes. */
                uint32_t want = e == FILL_OK     ? FILL_PATTERN
                                : e == LAUNCH_OK ? x0[r.other_at / 4 + i]
                                                 : src[r.other_at / 4 + i];
                if (got[i] != want)
                    fail_msg("%s: word %" PRIu64 " is 0x%08x, expected 0x%08x", where_what, i,
                             got[i], want);
            }
        }
    }
    if (v.check_inside)
        expect_code(cubec_graph_end(d, s1, &graph), CUBEC_GRAPH_STATE, "inside the capture window",
                    what);
    /* After the end too, and after everything settled. */
    ASSERT_OK(cubec_sync(d, s1));
    cubec_status_free(cubec_sync(d, s2));
    snprintf(where_what, sizeof where_what, "%s: check after everything settled", what);
    expect_code(cubec_check(d, &xw, 1), CUBEC_GRAPH_STATE, "was refused", where_what);
    ASSERT_OK(cubec_buffer_release(d, xw));
    ASSERT_OK(cubec_buffer_release(d, xo));
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, s));
}

static void test_refused_write_keeps_its_failure(void **state)
{
    (void)state;
    for (int staged = 0; staged < 2; staged++) {
        rig g = rig_open(staged);
        for (int w = 0; w < WHERE_COUNT; w++)
            for (int e = 0; e < EARLIER_COUNT; e++)
                for (int how = 0; how < SETTLE_COUNT; how++)
                    for (int bits = 0; bits < 4; bits++)
                        run_case(&g, (variant){(where)w, (earlier)e, (settle)how, bits & 1,
                                               (bits >> 1) & 1, staged});
        ASSERT_OK(cubec_kernel_destroy(g.d, g.produce));
        cubec_device_close(g.d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_write_keeps_its_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
