/* The multi-stream scheduler (src/stream/scheduler.h) on a fake backend that logs every record
 * (slot, task id), every submit and every discard: FIFO order per slot, auto-drain at max_tasks,
 * the interleave and sequential strategies, isolation, duplicate slots, empty drains, ring growth
 * with wrap-around, record and submit errors, and destroy. Every expectation is an explicit list
 * of events written out in the test. */
#include "test_util.h"

#include "stream/scheduler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A task record: the id, its slot, and a body derived from the id, checked when the task is
 * recorded or discarded so that a record mangled by the ring (growth, wrap) is caught. */
typedef struct fake_task {
    uint32_t id;
    uint32_t slot;
    uint32_t body[6];
} fake_task;

enum { EV_RECORD = 1, EV_SUBMIT = 2, EV_DISCARD = 3, MAX_EVENTS = 4096 };

typedef struct event {
    int kind;
    uint32_t slot; /* records and discards */
    uint32_t id;
} event;

typedef struct fake_backend {
    event events[MAX_EVENTS];
    uint32_t count;
    uint32_t records, submits, discards;
    uint32_t discards_with_cause; /* discards handed the error that stopped their drain */
    /* Fail the record call with this 1-based index (0: never); the failing task is consumed by
     * the backend, as the real one does (it releases what the task holds itself). */
    uint32_t fail_record_at;
    uint32_t fail_submit_at; /* the same for submits */
    uint32_t bad_bodies;     /* records or discards whose body did not match the id */
    uint32_t last_mode;      /* the mode the last submit was handed */
    int busy;                /* what the busy callback answers */
    uint32_t busy_calls;
} fake_backend;

static void body_for(uint32_t id, uint32_t body[6])
{
    for (uint32_t i = 0; i < 6; i++)
        body[i] = id * 2654435761u + i * 40503u + 17u;
}

static int body_ok(const fake_task *t)
{
    uint32_t want[6];
    body_for(t->id, want);
    return memcmp(want, t->body, sizeof want) == 0;
}

static void log_event(fake_backend *f, int kind, uint32_t slot, uint32_t id)
{
    if (f->count == MAX_EVENTS) fail_msg("fake backend: event log full");
    f->events[f->count++] = (event){kind, slot, id};
}

static cubec_status fake_record(void *user, uint32_t slot, void *task)
{
    fake_backend *f = user;
    fake_task *t = task;
    if (t->slot != slot || !body_ok(t)) f->bad_bodies++;
    f->records++;
    if (f->fail_record_at && f->records == f->fail_record_at)
        return status_make(CUBEC_INTERNAL, "fake record failure on task %u", t->id);
    log_event(f, EV_RECORD, slot, t->id);
    return NULL;
}

static cubec_status fake_submit(void *user, uint32_t mode)
{
    fake_backend *f = user;
    f->submits++;
    f->last_mode = mode;
    if (f->fail_submit_at && f->submits == f->fail_submit_at)
        return status_make(CUBEC_DEVICE_LOST, "fake submit failure");
    log_event(f, EV_SUBMIT, 0, 0);
    return NULL;
}

static void fake_discard(void *user, void *task, cubec_status cause)
{
    fake_backend *f = user;
    fake_task *t = task;
    if (!body_ok(t)) f->bad_bodies++;
    f->discards++;
    if (cause) f->discards_with_cause++;
    log_event(f, EV_DISCARD, t->slot, t->id);
}

static int fake_busy(void *user)
{
    fake_backend *f = user;
    f->busy_calls++;
    return f->busy;
}

static fake_backend *fake_new(void)
{
    fake_backend *f = calloc(1, sizeof *f);
    assert_non_null(f);
    return f;
}

static void init(scheduler *s, fake_backend *f, uint32_t slots, uint32_t max_tasks,
                 sched_strategy strategy)
{
    sched_backend be = {.user = f,
                        .record = fake_record,
                        .submit = fake_submit,
                        .discard = fake_discard,
                        .busy = fake_busy};
    ASSERT_OK(sched_init(s, slots, sizeof(fake_task), max_tasks, strategy, be));
}

/* Queues task `id` on `slot`; returns what sched_commit returned. */
static cubec_status push(scheduler *s, uint32_t slot, uint32_t id)
{
    void *p = NULL;
    cubec_status err = sched_reserve(s, slot, &p);
    if (err) return err;
    assert_non_null(p);
    fake_task t = {.id = id, .slot = slot};
    body_for(id, t.body);
    memcpy(p, &t, sizeof t);
    return sched_commit(s, slot);
}

static void push_ok(scheduler *s, uint32_t slot, uint32_t id)
{
    ASSERT_OK(push(s, slot, id));
}

/* Expected events, written compactly: R(slot, id), S, D(slot, id). */
#define R(slot, id)                                                                                \
    {                                                                                              \
        EV_RECORD, (slot), (id)                                                                    \
    }
#define S                                                                                          \
    {                                                                                              \
        EV_SUBMIT, 0, 0                                                                            \
    }
#define D(slot, id)                                                                                \
    {                                                                                              \
        EV_DISCARD, (slot), (id)                                                                   \
    }

static const char *kind_name(int k)
{
    return k == EV_RECORD ? "record" : k == EV_SUBMIT ? "submit" : "discard";
}

/* The log must equal `want` exactly; then it is cleared. */
static void expect_events(fake_backend *f, const event *want, uint32_t n)
{
    char got[2048] = "", exp[2048] = "";
    size_t at = 0;
    for (uint32_t i = 0; i < f->count && at + 32 < sizeof got; i++)
        at += (size_t)snprintf(got + at, sizeof got - at, " %s(%u,%u)",
                               kind_name(f->events[i].kind), f->events[i].slot, f->events[i].id);
    at = 0;
    for (uint32_t i = 0; i < n && at + 32 < sizeof exp; i++)
        at += (size_t)snprintf(exp + at, sizeof exp - at, " %s(%u,%u)", kind_name(want[i].kind),
                               want[i].slot, want[i].id);
    if (f->count != n) fail_msg("got %u events:%s\nexpected %u:%s", f->count, got, n, exp);
    for (uint32_t i = 0; i < n; i++)
        if (f->events[i].kind != want[i].kind || f->events[i].slot != want[i].slot ||
            f->events[i].id != want[i].id)
            fail_msg("event %u differs\ngot:%s\nexpected:%s", i, got, exp);
    assert_int_equal(f->bad_bodies, 0);
    f->count = 0;
}

#define EXPECT(f, ...)                                                                             \
    do {                                                                                           \
        static const event want_[] = {__VA_ARGS__};                                                \
        expect_events((f), want_, (uint32_t)(sizeof want_ / sizeof want_[0]));                     \
    } while (0)

static void expect_nothing(fake_backend *f)
{
    expect_events(f, NULL, 0);
}

static void test_init_refuses_zeros(void **state)
{
    (void)state;
    scheduler s;
    sched_backend be = {0};
    ASSERT_ERROR(sched_init(&s, 0, 8, 4, SCHED_INTERLEAVE, be), CUBEC_INVALID_ARGUMENT, "slots 0");
    ASSERT_ERROR(sched_init(&s, 2, 0, 4, SCHED_INTERLEAVE, be), CUBEC_INVALID_ARGUMENT,
                 "task size 0");
    ASSERT_ERROR(sched_init(&s, 2, 8, 0, SCHED_INTERLEAVE, be), CUBEC_INVALID_ARGUMENT,
                 "max_tasks 0");
}

/* Tasks of one slot come out in the order they were queued; other slots are left alone. */
static void test_fifo_per_slot(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 4, 100, SCHED_INTERLEAVE);
    push_ok(&s, 0, 10);
    push_ok(&s, 2, 20);
    push_ok(&s, 0, 11);
    push_ok(&s, 0, 12);
    push_ok(&s, 2, 21);
    push_ok(&s, 0, 13);
    expect_nothing(f); /* nothing recorded before a drain */
    assert_int_equal(sched_pending(&s, 0), 4);
    assert_int_equal(sched_pending(&s, 2), 2);
    uint32_t zero = 0, two = 2;
    ASSERT_OK(sched_execute(&s, &zero, 1));
    EXPECT(f, R(0, 10), R(0, 11), R(0, 12), R(0, 13), S);
    assert_int_equal(sched_pending(&s, 0), 0);
    assert_int_equal(sched_pending(&s, 2), 2);
    ASSERT_OK(sched_execute(&s, &two, 1));
    EXPECT(f, R(2, 20), R(2, 21), S);
    /* The slot keeps working after a drain: order still holds. */
    push_ok(&s, 0, 14);
    push_ok(&s, 0, 15);
    ASSERT_OK(sched_execute_mode(&s, &zero, 1, 7));
    EXPECT(f, R(0, 14), R(0, 15), S);
    assert_int_equal(f->last_mode, 7); /* the caller's drain mode reaches the submit */
    push_ok(&s, 2, 22);
    ASSERT_OK(sched_execute_all_mode(&s, 3));
    EXPECT(f, R(2, 22), S);
    assert_int_equal(f->last_mode, 3);
    ASSERT_OK(sched_execute(&s, &zero, 1)); /* nothing queued: nothing submitted */
    expect_nothing(f);
    assert_int_equal(s.drains, 4);
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* A slot is drained by sched_commit exactly when it holds max_tasks tasks. Under Sequential only
 * that slot is drained. */
static void test_auto_drain_sequential_only_that_slot(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 3, 4, SCHED_SEQUENTIAL);
    push_ok(&s, 1, 1);
    push_ok(&s, 1, 2);
    push_ok(&s, 1, 3);
    push_ok(&s, 0, 100);
    push_ok(&s, 0, 101);
    push_ok(&s, 0, 102);
    push_ok(&s, 2, 200);
    expect_nothing(f);
    assert_int_equal(s.drains, 0);
    push_ok(&s, 1, 4); /* the fourth task of slot 1 */
    EXPECT(f, R(1, 1), R(1, 2), R(1, 3), R(1, 4), S);
    assert_int_equal(sched_pending(&s, 0), 3);
    assert_int_equal(sched_pending(&s, 1), 0);
    assert_int_equal(sched_pending(&s, 2), 1);
    assert_int_equal(s.drains, 1);
    push_ok(&s, 1, 5); /* a fresh count: no drain */
    expect_nothing(f);
    push_ok(&s, 0, 103);
    EXPECT(f, R(0, 100), R(0, 101), R(0, 102), R(0, 103), S);
    assert_int_equal(sched_pending(&s, 1), 1);
    assert_int_equal(sched_pending(&s, 2), 1);
    sched_destroy(&s);
    EXPECT(f, D(1, 5), D(2, 200));
    free(f);
}

/* Under Interleave a slot that reaches max_tasks drains first, together with every other slot
 * that has pending work (in slot order), round-robin, one submit. Nothing happens before. */
static void test_auto_drain_interleave_takes_pending_slots(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 4, 4, SCHED_INTERLEAVE);
    push_ok(&s, 2, 1);
    push_ok(&s, 2, 2);
    push_ok(&s, 2, 3);
    push_ok(&s, 3, 300);
    push_ok(&s, 3, 301);
    push_ok(&s, 0, 100);
    expect_nothing(f);
    assert_int_equal(s.drains, 0);
    push_ok(&s, 2, 4); /* the fourth task of slot 2 */
    EXPECT(f, R(2, 1), R(0, 100), R(3, 300), R(2, 2), R(3, 301), R(2, 3), R(2, 4), S);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(sched_pending(&s, i), 0);
    assert_int_equal(s.drains, 1);
    /* Alone: only its own tasks. */
    for (uint32_t i = 0; i < 3; i++)
        push_ok(&s, 1, 10 + i);
    expect_nothing(f);
    push_ok(&s, 1, 13);
    EXPECT(f, R(1, 10), R(1, 11), R(1, 12), R(1, 13), S);
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* max_tasks 1: every commit records and submits its own task at once. */
static void test_max_tasks_one(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 2, 1, SCHED_INTERLEAVE);
    push_ok(&s, 0, 1);
    EXPECT(f, R(0, 1), S);
    push_ok(&s, 1, 2);
    EXPECT(f, R(1, 2), S);
    push_ok(&s, 1, 3);
    EXPECT(f, R(1, 3), S);
    assert_int_equal(sched_pending(&s, 0) + sched_pending(&s, 1), 0);
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

static void fill_three_slots(scheduler *s)
{
    /* slot 0: 10..12; slot 1: 20..24; slot 3: 30 (slot 2 stays empty) */
    for (uint32_t i = 0; i < 5; i++) {
        if (i < 3) push_ok(s, 0, 10 + i);
        push_ok(s, 1, 20 + i);
    }
    push_ok(s, 3, 30);
}

/* Interleave: task 0 of each slot in the order given, then task 1, ...; one submit. */
static void test_interleave_round_robin(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 4, 100, SCHED_INTERLEAVE);
    fill_three_slots(&s);
    uint32_t order[] = {1, 2, 0, 3};
    ASSERT_OK(sched_execute(&s, order, 4));
    EXPECT(f, R(1, 20), R(0, 10), R(3, 30), R(1, 21), R(0, 11), R(1, 22), R(0, 12), R(1, 23),
           R(1, 24), S);
    assert_int_equal(s.drains, 1);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(sched_pending(&s, i), 0);
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* Sequential: each slot's tasks in turn, a submit after each slot that had any. */
static void test_sequential_slot_by_slot(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 4, 100, SCHED_SEQUENTIAL);
    fill_three_slots(&s);
    uint32_t order[] = {1, 2, 0, 3};
    ASSERT_OK(sched_execute(&s, order, 4));
    EXPECT(f, R(1, 20), R(1, 21), R(1, 22), R(1, 23), R(1, 24), S, R(0, 10), R(0, 11), R(0, 12), S,
           R(3, 30), S);
    /* Auto-drain under sequential: the one slot, one submit. */
    for (uint32_t i = 0; i < 99; i++)
        push_ok(&s, 2, 1000 + i);
    expect_nothing(f);
    push_ok(&s, 2, 1099);
    assert_int_equal(f->count, 101);
    for (uint32_t i = 0; i < 100; i++) {
        assert_int_equal(f->events[i].kind, EV_RECORD);
        assert_int_equal(f->events[i].slot, 2);
        assert_int_equal(f->events[i].id, 1000 + i);
    }
    assert_int_equal(f->events[100].kind, EV_SUBMIT);
    f->count = 0;
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* One drained slot that requires isolation makes that whole drain sequential; a slot that
 * requires it but is not drained (or is empty) does not; the next drain interleaves again. */
static void test_isolation_forces_sequential(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 4, 100, SCHED_INTERLEAVE);
    push_ok(&s, 0, 1);
    push_ok(&s, 0, 2);
    push_ok(&s, 1, 11);
    push_ok(&s, 1, 12);
    s.queues[1].requires_isolation = 1;
    uint32_t both[] = {0, 1};
    ASSERT_OK(sched_execute(&s, both, 2));
    EXPECT(f, R(0, 1), R(0, 2), S, R(1, 11), R(1, 12), S);

    /* Isolated slot 3 not among the drained ones: interleave. */
    s.queues[1].requires_isolation = 0;
    s.queues[3].requires_isolation = 1;
    push_ok(&s, 0, 3);
    push_ok(&s, 0, 4);
    push_ok(&s, 1, 13);
    push_ok(&s, 1, 14);
    push_ok(&s, 3, 31);
    ASSERT_OK(sched_execute(&s, both, 2));
    EXPECT(f, R(0, 3), R(1, 13), R(0, 4), R(1, 14), S);

    /* Isolated slot 2 listed but empty: still interleave. */
    s.queues[2].requires_isolation = 1;
    push_ok(&s, 0, 5);
    push_ok(&s, 1, 15);
    uint32_t three[] = {2, 1, 0};
    ASSERT_OK(sched_execute(&s, three, 3));
    EXPECT(f, R(1, 15), R(0, 5), S);

    /* Isolation is looked at per drain: slot 3 (isolated, queued) with slot 0. */
    push_ok(&s, 0, 6);
    push_ok(&s, 0, 7);
    uint32_t with3[] = {0, 3};
    ASSERT_OK(sched_execute(&s, with3, 2));
    EXPECT(f, R(0, 6), R(0, 7), S, R(3, 31), S);

    /* Auto-drain of an isolated slot: its own tasks, one submit. */
    s.queues[3].requires_isolation = 1;
    for (uint32_t i = 0; i < 100; i++)
        push_ok(&s, 3, 300 + i);
    assert_int_equal(f->count, 101);
    assert_int_equal(f->events[100].kind, EV_SUBMIT);
    f->count = 0;
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* A slot that fills up while an isolated slot has work drains slot by slot, the full slot first.
 * The commit returns an error only when it lost the full slot's own work: a fill must not return
 * another slot's lost submission while its own bytes were written (known bug error-but-ran), and
 * that other slot's failure stays on its outputs (the backend taints them). */
static void test_commit_returns_only_its_own_loss(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 3, 2, SCHED_INTERLEAVE);
    s.queues[1].requires_isolation = 1;
    push_ok(&s, 1, 11);
    push_ok(&s, 0, 1);
    push_ok(&s, 0, 2); /* slot 0 is full: drains first, then slot 1 on its own */
    EXPECT(f, R(0, 1), R(0, 2), S, R(1, 11), S);
    /* The isolated slot's submission (the second) fails: not the committer's loss. */
    push_ok(&s, 1, 12);
    push_ok(&s, 0, 3);
    f->fail_submit_at = f->submits + 2;
    push_ok(&s, 0, 4);
    EXPECT(f, R(0, 3), R(0, 4), S, R(1, 12));
    assert_int_equal(f->discards, 0);
    /* The committer's own submission (the first) fails: returned, and slot 1 still runs. */
    push_ok(&s, 1, 13);
    push_ok(&s, 0, 5);
    f->fail_submit_at = f->submits + 1;
    ASSERT_ERROR(push(&s, 0, 6), CUBEC_DEVICE_LOST, "fake submit failure");
    EXPECT(f, R(0, 5), R(0, 6), R(1, 13), S);
    /* An explicit drain still returns whichever error it met. */
    push_ok(&s, 1, 14);
    f->fail_submit_at = f->submits + 1;
    uint32_t both[] = {0, 1};
    ASSERT_ERROR(sched_execute(&s, both, 2), CUBEC_DEVICE_LOST, "fake submit failure");
    EXPECT(f, R(1, 14));
    assert_int_equal(f->discards, 0);
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* Duplicate slot ids are drained once, in first-seen order. */
static void test_duplicates_first_seen(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 3, 100, SCHED_INTERLEAVE);
    push_ok(&s, 0, 1);
    push_ok(&s, 0, 2);
    push_ok(&s, 1, 11);
    push_ok(&s, 2, 21);
    push_ok(&s, 2, 22);
    uint32_t order[] = {2, 0, 2, 0, 1, 2};
    ASSERT_OK(sched_execute(&s, order, 6));
    EXPECT(f, R(2, 21), R(0, 1), R(1, 11), R(2, 22), R(0, 2), S);
    assert_int_equal(s.drains, 1);

    /* Sequential: the same, slot by slot. */
    s.strategy = SCHED_SEQUENTIAL;
    push_ok(&s, 0, 3);
    push_ok(&s, 1, 12);
    push_ok(&s, 1, 13);
    uint32_t order2[] = {1, 1, 0, 1, 0};
    ASSERT_OK(sched_execute(&s, order2, 5));
    EXPECT(f, R(1, 12), R(1, 13), S, R(0, 3), S);
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* Draining empty queues records and submits nothing. */
static void test_empty_queues_submit_nothing(void **state)
{
    (void)state;
    for (int strategy = 0; strategy < 2; strategy++) {
        fake_backend *f = fake_new();
        scheduler s;
        init(&s, f, 5, 8, (sched_strategy)strategy);
        uint32_t all[] = {0, 1, 2, 3, 4};
        ASSERT_OK(sched_execute(&s, all, 5));
        ASSERT_OK(sched_execute(&s, all, 0));
        ASSERT_OK(sched_execute_all(&s));
        expect_nothing(f);
        assert_int_equal(s.drains, 0);
        /* One non-empty slot among empty ones: one submit either way. */
        push_ok(&s, 3, 7);
        ASSERT_OK(sched_execute(&s, all, 5));
        EXPECT(f, R(3, 7), S);
        /* And once drained, again nothing. */
        ASSERT_OK(sched_execute(&s, all, 5));
        ASSERT_OK(sched_execute_all(&s));
        expect_nothing(f);
        sched_destroy(&s);
        expect_nothing(f);
        free(f);
    }
}

/* sched_execute_all drains every slot, in slot order. */
static void test_execute_all(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 4, 100, SCHED_INTERLEAVE);
    push_ok(&s, 3, 31);
    push_ok(&s, 1, 11);
    push_ok(&s, 3, 32);
    push_ok(&s, 1, 12);
    push_ok(&s, 1, 13);
    ASSERT_OK(sched_execute_all(&s));
    EXPECT(f, R(1, 11), R(3, 31), R(1, 12), R(3, 32), R(1, 13), S);
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* Growth (sched_set_growth): a full queue waits for max_tasks more while the backend is busy, up
 * to max_grown; not busy, it drains at max_tasks; a queue emptied by an execute starts again at
 * max_tasks; without sched_set_growth the busy callback is never asked. */
static void test_growth_while_busy(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 2, 4, SCHED_SEQUENTIAL);
    f->busy = 1;
    for (uint32_t i = 1; i <= 4; i++)
        push_ok(&s, 0, i);
    EXPECT(f, R(0, 1), R(0, 2), R(0, 3), R(0, 4), S);
    assert_int_equal(f->busy_calls, 0);
    sched_set_growth(&s, 12);
    for (uint32_t i = 1; i <= 11; i++)
        push_ok(&s, 0, 10 + i);
    expect_nothing(f);
    assert_int_equal(f->busy_calls, 2); /* at 4 and at 8 */
    push_ok(&s, 0, 22);                 /* 12: no room to grow */
    EXPECT(f, R(0, 11), R(0, 12), R(0, 13), R(0, 14), R(0, 15), R(0, 16), R(0, 17), R(0, 18),
           R(0, 19), R(0, 20), R(0, 21), R(0, 22), S);
    /* Busy at 4, then not at 8. */
    for (uint32_t i = 1; i <= 7; i++)
        push_ok(&s, 0, 30 + i);
    expect_nothing(f);
    f->busy = 0;
    push_ok(&s, 0, 38);
    EXPECT(f, R(0, 31), R(0, 32), R(0, 33), R(0, 34), R(0, 35), R(0, 36), R(0, 37), R(0, 38), S);
    /* Grown, then emptied by an execute: the next queue drains at 4 again when not busy. */
    f->busy = 1;
    for (uint32_t i = 1; i <= 5; i++)
        push_ok(&s, 1, 40 + i);
    uint32_t one = 1;
    ASSERT_OK(sched_execute(&s, &one, 1));
    EXPECT(f, R(1, 41), R(1, 42), R(1, 43), R(1, 44), R(1, 45), S);
    f->busy = 0;
    for (uint32_t i = 1; i <= 4; i++)
        push_ok(&s, 1, 50 + i);
    EXPECT(f, R(1, 51), R(1, 52), R(1, 53), R(1, 54), S);
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* The ring: records wrap around its end after a drain, and growth unwraps them in order. */
static void test_ring_growth_and_wrap(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 2, 1000, SCHED_INTERLEAVE);
    uint32_t one = 1;
    uint32_t id = 0;
    /* Move the head to the middle of the first ring (8 records), then wrap and grow. */
    for (int round = 0; round < 6; round++) {
        uint32_t first = id;
        uint32_t n = 5 + (uint32_t)round * 7; /* 5, 12, 19, ...: wraps, then grows */
        for (uint32_t i = 0; i < n; i++)
            push_ok(&s, 1, id++);
        assert_int_equal(sched_pending(&s, 1), n);
        /* Another slot grows at the same time without disturbing this one. */
        push_ok(&s, 0, 100000 + (uint32_t)round);
        ASSERT_OK(sched_execute(&s, &one, 1));
        assert_int_equal(f->count, n + 1);
        for (uint32_t i = 0; i < n; i++) {
            assert_int_equal(f->events[i].kind, EV_RECORD);
            assert_int_equal(f->events[i].slot, 1);
            assert_int_equal(f->events[i].id, first + i);
        }
        assert_int_equal(f->events[n].kind, EV_SUBMIT);
        assert_int_equal(f->bad_bodies, 0);
        f->count = 0;
    }
    /* Slot 0 held its six tasks throughout, in order. */
    assert_int_equal(sched_pending(&s, 0), 6);
    uint32_t zero = 0;
    ASSERT_OK(sched_execute(&s, &zero, 1));
    EXPECT(f, R(0, 100000), R(0, 100001), R(0, 100002), R(0, 100003), R(0, 100004), R(0, 100005),
           S);
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* A small max_tasks: the ring is max_tasks+1 records, auto-drains keep it from growing, and the
 * head walks around it. */
static void test_ring_wrap_small_max_tasks(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 1, 3, SCHED_SEQUENTIAL);
    uint32_t zero = 0;
    uint32_t id = 0, expect_id = 0;
    for (int round = 0; round < 20; round++) {
        /* 1 or 2 tasks and an explicit drain, or 3 tasks and an auto-drain. */
        uint32_t n = 1 + (uint32_t)round % 3;
        for (uint32_t i = 0; i < n; i++)
            push_ok(&s, 0, id++);
        if (n < 3) ASSERT_OK(sched_execute(&s, &zero, 1));
        assert_int_equal(f->count, n + 1);
        for (uint32_t i = 0; i < n; i++)
            assert_int_equal(f->events[i].id, expect_id++);
        assert_int_equal(f->events[n].kind, EV_SUBMIT);
        assert_int_equal(f->bad_bodies, 0);
        f->count = 0;
        assert_true(s.queues[0].cap <= 4);
    }
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* A record error stops the drain: the rest of every drained queue goes to discard, the error is
 * returned, nothing is submitted; queues not drained keep their tasks. */
static void test_record_error_discards_interleave(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 3, 100, SCHED_INTERLEAVE);
    for (uint32_t i = 0; i < 4; i++)
        push_ok(&s, 0, 10 + i);
    for (uint32_t i = 0; i < 3; i++)
        push_ok(&s, 1, 20 + i);
    push_ok(&s, 2, 30);
    f->fail_record_at = 3; /* the order is 10 20 11 21 ...: 11 fails */
    uint32_t order[] = {0, 1};
    ASSERT_ERROR(sched_execute(&s, order, 2), CUBEC_INTERNAL, "task 11");
    EXPECT(f, R(0, 10), R(1, 20), D(0, 12), D(0, 13), D(1, 21), D(1, 22));
    assert_int_equal(f->discards, 4);
    assert_int_equal(f->submits, 0);
    assert_int_equal(sched_pending(&s, 0), 0);
    assert_int_equal(sched_pending(&s, 1), 0);
    assert_int_equal(sched_pending(&s, 2), 1);
    /* The scheduler works on afterwards. */
    f->fail_record_at = 0;
    push_ok(&s, 0, 14);
    uint32_t all[] = {2, 0};
    ASSERT_OK(sched_execute(&s, all, 2));
    EXPECT(f, R(2, 30), R(0, 14), S);
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

static void test_record_error_discards_sequential(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 3, 100, SCHED_SEQUENTIAL);
    for (uint32_t i = 0; i < 2; i++)
        push_ok(&s, 0, 10 + i);
    for (uint32_t i = 0; i < 4; i++)
        push_ok(&s, 1, 20 + i);
    for (uint32_t i = 0; i < 2; i++)
        push_ok(&s, 2, 30 + i);
    f->fail_record_at = 4; /* 10 11 | 20 21: 21 fails */
    uint32_t order[] = {0, 1, 2};
    ASSERT_ERROR(sched_execute(&s, order, 3), CUBEC_INTERNAL, "task 21");
    /* Slot 0 was submitted; the rest of slot 1 and all of slot 2 are discarded. */
    EXPECT(f, R(0, 10), R(0, 11), S, R(1, 20), D(1, 22), D(1, 23), D(2, 30), D(2, 31));
    assert_int_equal(f->discards, 4);
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(sched_pending(&s, i), 0);
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* The error of an auto-drain comes back from sched_commit. */
static void test_record_error_in_auto_drain(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 2, 4, SCHED_SEQUENTIAL);
    push_ok(&s, 1, 99);
    for (uint32_t i = 0; i < 3; i++)
        push_ok(&s, 0, i);
    f->fail_record_at = 2;
    ASSERT_ERROR(push(&s, 0, 3), CUBEC_INTERNAL, "task 1");
    EXPECT(f, R(0, 0), D(0, 2), D(0, 3));
    assert_int_equal(sched_pending(&s, 0), 0);
    assert_int_equal(sched_pending(&s, 1), 1);
    sched_destroy(&s);
    EXPECT(f, D(1, 99));
    free(f);
}

/* Under Interleave the auto-drain takes the other pending slots along: a record error discards
 * what is left of all of them. */
static void test_record_error_in_interleaved_auto_drain(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 3, 3, SCHED_INTERLEAVE);
    push_ok(&s, 2, 20);
    push_ok(&s, 2, 21);
    push_ok(&s, 1, 10);
    push_ok(&s, 1, 11);
    f->fail_record_at = 4; /* 10 20 11 | 21 fails */
    ASSERT_ERROR(push(&s, 1, 12), CUBEC_INTERNAL, "task 21");
    EXPECT(f, R(1, 10), R(2, 20), R(1, 11), D(1, 12));
    assert_int_equal(f->discards, 1);
    assert_int_equal(f->submits, 0);
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(sched_pending(&s, i), 0);
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* A submit error is returned. Under sequential the slots after the failed one are unrelated
 * work in submissions of their own: they are still recorded and submitted (they used to be
 * discarded, and their outputs read as dropped from a submission they were never part of). */
static void test_submit_error(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 3, 100, SCHED_SEQUENTIAL);
    push_ok(&s, 0, 1);
    push_ok(&s, 1, 2);
    push_ok(&s, 1, 3);
    push_ok(&s, 2, 4);
    f->fail_submit_at = 1;
    uint32_t order[] = {0, 1, 2};
    ASSERT_ERROR(sched_execute(&s, order, 3), CUBEC_DEVICE_LOST, "fake submit failure");
    EXPECT(f, R(0, 1), R(1, 2), R(1, 3), S, R(2, 4), S);
    assert_int_equal(f->discards, 0);
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(sched_pending(&s, i), 0);
    /* Interleave: everything was recorded before the one submit fails. */
    s.strategy = SCHED_INTERLEAVE;
    f->fail_submit_at = f->submits + 1;
    push_ok(&s, 0, 5);
    push_ok(&s, 2, 6);
    ASSERT_ERROR(sched_execute(&s, order, 3), CUBEC_DEVICE_LOST, "fake submit failure");
    EXPECT(f, R(0, 5), R(2, 6));
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

/* sched_destroy hands every queued task to discard, per slot in FIFO order, and records
 * nothing. */
static void test_destroy_discards_queued(void **state)
{
    (void)state;
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, 3, 100, SCHED_INTERLEAVE);
    push_ok(&s, 2, 21);
    push_ok(&s, 0, 1);
    push_ok(&s, 2, 22);
    push_ok(&s, 0, 2);
    push_ok(&s, 0, 3);
    sched_destroy(&s);
    EXPECT(f, D(0, 1), D(0, 2), D(0, 3), D(2, 21), D(2, 22));
    assert_int_equal(f->discards_with_cause, 0); /* no drain failed: the device closed */
    assert_int_equal(f->records, 0);
    assert_int_equal(f->submits, 0);
    free(f);
}

/* More distinct slots than one drain collects (64): every task is still recorded once, in
 * first-seen order, and submitted. */
static void test_many_slots_in_one_execute(void **state)
{
    (void)state;
    enum { SLOTS = 150 };
    fake_backend *f = fake_new();
    scheduler s;
    init(&s, f, SLOTS, 100, SCHED_INTERLEAVE);
    uint32_t order[2 * SLOTS];
    for (uint32_t i = 0; i < SLOTS; i++) {
        uint32_t slot = (i * 7) % SLOTS; /* a permutation */
        push_ok(&s, slot, slot);
        order[2 * i] = slot;
        order[2 * i + 1] = (i * 7 + 7) % SLOTS; /* a duplicate, seen earlier or later */
    }
    ASSERT_OK(sched_execute(&s, order, 2 * SLOTS));
    uint32_t recorded = 0;
    uint32_t last_submit = 0;
    for (uint32_t i = 0; i < f->count; i++) {
        if (f->events[i].kind == EV_SUBMIT) {
            last_submit = i;
            continue;
        }
        assert_int_equal(f->events[i].kind, EV_RECORD);
        recorded++;
    }
    assert_int_equal(recorded, SLOTS);
    assert_int_equal(last_submit, f->count - 1);
    /* The expected first-seen order, computed from order[]. */
    uint32_t want[SLOTS], nw = 0;
    for (uint32_t i = 0; i < 2 * SLOTS; i++) {
        int seen = 0;
        for (uint32_t j = 0; j < nw; j++)
            seen |= want[j] == order[i];
        if (!seen) want[nw++] = order[i];
    }
    assert_int_equal(nw, SLOTS);
    uint32_t k = 0;
    for (uint32_t i = 0; i < f->count; i++)
        if (f->events[i].kind == EV_RECORD) {
            assert_int_equal(f->events[i].slot, want[k]);
            assert_int_equal(f->events[i].id, want[k]);
            k++;
        }
    for (uint32_t i = 0; i < SLOTS; i++)
        assert_int_equal(sched_pending(&s, i), 0);
    f->count = 0;
    sched_destroy(&s);
    expect_nothing(f);
    free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_refuses_zeros),
        cmocka_unit_test(test_fifo_per_slot),
        cmocka_unit_test(test_auto_drain_sequential_only_that_slot),
        cmocka_unit_test(test_auto_drain_interleave_takes_pending_slots),
        cmocka_unit_test(test_max_tasks_one),
        cmocka_unit_test(test_interleave_round_robin),
        cmocka_unit_test(test_sequential_slot_by_slot),
        cmocka_unit_test(test_isolation_forces_sequential),
        cmocka_unit_test(test_duplicates_first_seen),
        cmocka_unit_test(test_empty_queues_submit_nothing),
        cmocka_unit_test(test_execute_all),
        cmocka_unit_test(test_ring_growth_and_wrap),
        cmocka_unit_test(test_growth_while_busy),
        cmocka_unit_test(test_ring_wrap_small_max_tasks),
        cmocka_unit_test(test_record_error_discards_interleave),
        cmocka_unit_test(test_record_error_discards_sequential),
        cmocka_unit_test(test_record_error_in_auto_drain),
        cmocka_unit_test(test_record_error_in_interleaved_auto_drain),
        cmocka_unit_test(test_submit_error),
        cmocka_unit_test(test_commit_returns_only_its_own_loss),
        cmocka_unit_test(test_destroy_discards_queued),
        cmocka_unit_test(test_many_slots_in_one_execute),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
