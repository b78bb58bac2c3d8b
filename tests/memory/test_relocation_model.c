/* A random run of an arena-only device against a CPU model of every buffer's bytes and of the
 * ranges that carry a failure (spec 3.9 relocation, 5 taint): buffers of growing sizes are
 * created, written, filled, copied, viewed, released, made to fail (an injected submission
 * failure of a fill) and relocated (cubec_memory_cleanup), and every read is checked against the
 * model: the bytes where no failure lies, an error where one does. The arena restarts (a new
 * device) every EPOCH steps so that it keeps growing and outdating pages. Thousands of steps on
 * the null backend (test_relocation_model_null), fewer on lavapipe; CUBEC_FUZZ_SEED picks the
 * sequence (the seed is printed). */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KiB 1024u
#define MiB (1024u * KiB)
#define MAX_LIVE 24
#define EPOCH 250

typedef struct mbuf {
    cubec_buffer b;
    uint32_t size;
    uint8_t *bytes;
    uint8_t *failed; /* 1 where a failure lies */
} mbuf;

typedef struct run {
    cubec_device *d;
    cubec_stream s;
    uint32_t rng;
    mbuf live[MAX_LIVE];
    uint32_t count;
    uint32_t step; /* within the epoch */
    uint64_t relocations, checks, failed_reads;
} run;

static uint32_t rnd(run *r, uint32_t n)
{
    return n ? test_rand(&r->rng) % n : 0;
}

/* Small sizes mostly; the rest up to a limit that grows over the epoch, so the arena grows. */
static uint32_t pick_size(run *r)
{
    if (rnd(r, 10) < 7) return 4 + rnd(r, 16 * KiB);
    uint32_t limit = 64 * KiB + (uint32_t)((uint64_t)r->step * 6 * MiB / EPOCH);
    return 4 + rnd(r, limit);
}

static void open_epoch(run *r)
{
    unsetenv("CUBEC_MEMORY_PRESET");
    setenv("CUBEC_MEMORY_POOLS", "arena:min_page=2MiB,max_page=16MiB", 1);
    r->d = test_device_open();
    ASSERT_OK(cubec_stream_new(r->d, &r->s));
    r->count = 0;
    r->step = 0;
}

static void release(run *r, uint32_t i)
{
    ASSERT_OK(cubec_buffer_release(r->d, r->live[i].b));
    free(r->live[i].bytes);
    free(r->live[i].failed);
    r->live[i] = r->live[--r->count];
}

static void close_epoch(run *r)
{
    cubec_memory_report rep;
    ASSERT_OK(cubec_memory_report_get(r->d, r->s, &rep));
    r->relocations += rep.pools[0].relocations;
    while (r->count)
        release(r, 0);
    test_device_close(r->d);
    unsetenv("CUBEC_MEMORY_POOLS");
}

static int any_failed(const mbuf *m, uint32_t off, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (m->failed[off + i]) return 1;
    return 0;
}

/* Reads [off, +n) of buffer (or a view of it at view_at) and checks it against the model. */
static void check_range(run *r, cubec_buffer b, const mbuf *m, uint32_t base, uint32_t off,
                        uint32_t n)
{
    if (!n) return;
    uint8_t *got = malloc(n);
    assert_non_null(got);
    cubec_status st = cubec_read(r->d, r->s, b, off, got, n);
    r->checks++;
    if (any_failed(m, base + off, n)) {
        if (!st) fail_msg("a read of bytes carrying a failure succeeded");
        r->failed_reads++;
        cubec_status_free(st);
    } else {
        if (st) fail_msg("cubec_read failed: %s", cubec_status_message(st));
        if (memcmp(got, m->bytes + base + off, n) != 0)
            fail_msg("buffer of %u bytes: [%u, +%u) differs from the model", m->size, base + off,
                     n);
    }
    free(got);
}

/* Every byte of every buffer: runs without a failure as bytes, runs with one as an error. */
static void check_all(run *r)
{
    for (uint32_t i = 0; i < r->count; i++) {
        const mbuf *m = &r->live[i];
        for (uint32_t at = 0; at < m->size;) {
            uint32_t end = at;
            while (end < m->size && m->failed[end] == m->failed[at])
                end++;
            check_range(r, m->b, m, 0, at, end - at);
            at = end;
        }
    }
}

static void op_create(run *r)
{
    if (r->count == MAX_LIVE) release(r, rnd(r, r->count));
    mbuf *m = &r->live[r->count];
    m->size = pick_size(r);
    m->bytes = malloc(m->size);
    m->failed = calloc(m->size, 1);
    assert_true(m->bytes && m->failed);
    for (uint32_t i = 0; i < m->size; i++)
        m->bytes[i] = (uint8_t)test_rand(&r->rng);
    ASSERT_OK(cubec_buffer_create(r->d, r->s, m->size, &m->b));
    ASSERT_OK(cubec_write(r->d, r->s, m->b, 0, m->bytes, m->size));
    r->count++;
}

/* A 4-byte aligned range of `m`: [*off, +*n), n > 0. */
static void pick_range(run *r, const mbuf *m, uint32_t *off, uint32_t *n)
{
    uint32_t words = m->size / 4;
    *off = 4 * rnd(r, words);
    *n = 4 * (1 + rnd(r, words - *off / 4));
}

static void op_write(run *r, mbuf *m)
{
    uint32_t off = rnd(r, m->size), n = 1 + rnd(r, m->size - off);
    for (uint32_t i = 0; i < n; i++)
        m->bytes[off + i] = (uint8_t)test_rand(&r->rng);
    ASSERT_OK(cubec_write(r->d, r->s, m->b, off, m->bytes + off, n));
    memset(m->failed + off, 0, n); /* a successful write clears the failure */
}

static void op_fill(run *r, mbuf *m, int fail)
{
    if (m->size < 4) return;
    uint32_t off, n, pattern = test_rand(&r->rng);
    pick_range(r, m, &off, &n);
    if (fail) {
        ASSERT_OK(cubec_sync(r->d, r->s)); /* only the fill's submission is lost */
        ASSERT_OK(cubec_fault_inject(r->d, CUBEC_FAULT_SUBMIT, 1));
    }
    ASSERT_OK(cubec_fill(r->d, r->s, m->b, off, n, pattern));
    if (fail) {
        ASSERT_ERROR(cubec_sync(r->d, r->s), CUBEC_INTERNAL, "injected fault: submit");
        memset(m->failed + off, 1, n);
        return;
    }
    for (uint32_t i = 0; i < n; i += 4)
        memcpy(m->bytes + off + i, &pattern, 4);
    memset(m->failed + off, 0, n);
}

/* A copy from bytes without a failure (a failed input would skip it and fail the output). */
static void op_copy(run *r, const mbuf *src, mbuf *dst)
{
    if (src == dst || src->size < 4 || dst->size < 4) return;
    uint32_t so, n;
    pick_range(r, src, &so, &n);
    if (n > dst->size / 4 * 4) n = dst->size / 4 * 4;
    uint32_t dofs = 4 * rnd(r, (dst->size - n) / 4 + 1);
    if (any_failed(src, so, n)) return;
    ASSERT_OK(cubec_copy(r->d, r->s, src->b, so, dst->b, dofs, n));
    memcpy(dst->bytes + dofs, src->bytes + so, n);
    memset(dst->failed + dofs, 0, n);
}

static void op_view(run *r, const mbuf *m)
{
    cubec_device_info info;
    ASSERT_OK(cubec_device_get_info(r->d, &info));
    uint32_t align = (uint32_t)info.storage_offset_alignment;
    uint32_t at = align * rnd(r, m->size / align + 1);
    if (at >= m->size) at = 0;
    uint32_t n = 1 + rnd(r, m->size - at);
    cubec_buffer v;
    ASSERT_OK(cubec_buffer_view(r->d, m->b, at, n, &v));
    uint32_t off = rnd(r, n), len = 1 + rnd(r, n - off);
    check_range(r, v, m, at, off, len);
    ASSERT_OK(cubec_buffer_release(r->d, v));
}

static void step(run *r)
{
    uint32_t op = rnd(r, 100);
    if (r->count < 2 || op < 25) {
        op_create(r);
        return;
    }
    mbuf *a = &r->live[rnd(r, r->count)], *b = &r->live[rnd(r, r->count)];
    if (op < 37)
        release(r, (uint32_t)(a - r->live));
    else if (op < 47)
        op_write(r, a);
    else if (op < 55)
        op_fill(r, a, 0);
    else if (op < 59)
        op_fill(r, a, 1);
    else if (op < 69)
        op_copy(r, a, b);
    else if (op < 77)
        op_view(r, a);
    else if (op < 87)
        ASSERT_OK(cubec_memory_cleanup(r->d, r->s));
    else {
        uint32_t off = rnd(r, a->size), n = 1 + rnd(r, a->size - off);
        check_range(r, a->b, a, 0, off, n);
    }
}

static void test_random_relocation(void **state)
{
    (void)state;
    const char *backend = getenv("CUBEC_BACKEND");
    int null = backend && strcmp(backend, "null") == 0;
    uint32_t steps = null ? 4000 : 1000;
    const char *seed_env = getenv("CUBEC_FUZZ_SEED");
    run r = {.rng = seed_env ? (uint32_t)strtoul(seed_env, NULL, 10) : 20261201u};
    printf("test_relocation_model: seed %u, %u steps\n", r.rng, steps);
    open_epoch(&r);
    for (uint32_t i = 0; i < steps; i++) {
        if (r.step == EPOCH) {
            check_all(&r);
            close_epoch(&r);
            open_epoch(&r);
        }
        step(&r);
        r.step++;
        if (i % 97 == 0) check_all(&r);
    }
    check_all(&r);
    close_epoch(&r);
    printf("test_relocation_model: %llu relocations, %llu checked reads (%llu of failed bytes)\n",
           (unsigned long long)r.relocations, (unsigned long long)r.checks,
           (unsigned long long)r.failed_reads);
    /* The run must have moved buffers and read failed bytes, or it tested little. */
    assert_true(r.relocations > 0);
    assert_true(r.failed_reads > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_random_relocation)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
