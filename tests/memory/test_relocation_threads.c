/* Relocation while other streams work (spec 3.9: every stream's queued and running work comes
 * first): worker threads, each on its own stream (and slot), grow their arenas with buffers of
 * growing sizes, keep small buffers on the pages that become outdated, copy, read back and
 * release, while a relocating thread calls cubec_graph_prepare (which relocates every slot's
 * outdated pages, then is dropped by cubec_graph_end) and a worker's own cubec_memory_cleanup
 * relocates too. Every read is checked against the bytes the worker wrote; the run must have
 * relocated. On lavapipe and (test_relocation_threads_null) on the null backend; under TSan in
 * make test. */
#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KiB 1024u
#define MiB (1024u * KiB)
#define WORKERS 3
#define ROUNDS 24
#define KEEP 8

typedef struct kept {
    cubec_buffer b;
    uint32_t size;
    uint8_t *bytes;
} kept;

typedef struct worker {
    cubec_device *d;
    cubec_stream s;
    uint32_t rng;
    kept keep[KEEP];
    uint32_t count;
    char error[512]; /* the first failure, reported by the main thread */
} worker;

static atomic_int workers_done;

#define CHECK(w, expr)                                                                             \
    do {                                                                                           \
        cubec_status st_ = (expr);                                                                 \
        if (st_) {                                                                                 \
            if (!(w)->error[0])                                                                    \
                snprintf((w)->error, sizeof(w)->error, "%s: %s", #expr,                            \
                         cubec_status_message(st_));                                               \
            cubec_status_free(st_);                                                                \
            return 0;                                                                              \
        }                                                                                          \
    } while (0)

static int verify(worker *w, const kept *k)
{
    uint8_t *got = malloc(k->size);
    if (!got) return 0;
    cubec_status st = cubec_read(w->d, w->s, k->b, 0, got, k->size);
    int same = !st && memcmp(got, k->bytes, k->size) == 0;
    if (!same && !w->error[0])
        snprintf(w->error, sizeof w->error, "a kept buffer of %u bytes: %s", k->size,
                 st ? cubec_status_message(st) : "its bytes changed");
    cubec_status_free(st);
    free(got);
    return same;
}

static int round_of(worker *w, uint32_t round)
{
    /* A buffer that grows the arena (the sizes grow with the rounds), written and copied. */
    uint32_t big = 64 * KiB + round * (MiB / 2) + test_rand(&w->rng) % (64 * KiB);
    cubec_buffer grow, copy;
    CHECK(w, cubec_buffer_create(w->d, w->s, big, &grow));
    CHECK(w, cubec_fill(w->d, w->s, grow, 0, big / 4 * 4, round));
    /* A small buffer kept on the current page, which a later round outdates. */
    if (w->count == KEEP) {
        CHECK(w, cubec_buffer_release(w->d, w->keep[0].b));
        free(w->keep[0].bytes);
        memmove(&w->keep[0], &w->keep[1], (KEEP - 1) * sizeof(kept));
        w->count--;
    }
    kept *k = &w->keep[w->count];
    k->size = 256 + test_rand(&w->rng) % (16 * KiB);
    k->bytes = malloc(k->size);
    if (!k->bytes) return 0;
    for (uint32_t i = 0; i < k->size; i++)
        k->bytes[i] = (uint8_t)test_rand(&w->rng);
    CHECK(w, cubec_buffer_create(w->d, w->s, k->size, &k->b));
    CHECK(w, cubec_write(w->d, w->s, k->b, 0, k->bytes, k->size));
    w->count++;
    /* A copy of a kept buffer (queued work on a page relocation may move) and its read. */
    const kept *src = &w->keep[test_rand(&w->rng) % w->count];
    uint32_t n = src->size / 4 * 4;
    CHECK(w, cubec_buffer_create(w->d, w->s, n, &copy));
    CHECK(w, cubec_copy(w->d, w->s, src->b, 0, copy, 0, n));
    kept c = {copy, n, src->bytes};
    if (!verify(w, &c)) return 0;
    CHECK(w, cubec_buffer_release(w->d, copy));
    CHECK(w, cubec_buffer_release(w->d, grow));
    if (round % 5 == 4) CHECK(w, cubec_memory_cleanup(w->d, w->s));
    for (uint32_t i = 0; i < w->count; i++)
        if (!verify(w, &w->keep[i])) return 0;
    return 1;
}

static void *work(void *arg)
{
    worker *w = arg;
    for (uint32_t r = 0; r < ROUNDS; r++)
        if (!round_of(w, r)) break;
    atomic_fetch_add(&workers_done, 1);
    return NULL;
}

typedef struct relocator {
    cubec_device *d;
    cubec_stream s;
    uint32_t prepares;
    char error[512];
} relocator;

static void *relocate(void *arg)
{
    relocator *r = arg;
    while (atomic_load(&workers_done) < WORKERS) {
        cubec_status st = cubec_graph_prepare(r->d, r->s);
        if (!st) {
            r->prepares++;
            cubec_graph g;
            st = cubec_graph_end(r->d, r->s, &g); /* prepared, never begun: dropped */
            if (st && cubec_status_code(st) == CUBEC_GRAPH_STATE) {
                cubec_status_free(st);
                st = NULL;
            }
        }
        if (st) {
            snprintf(r->error, sizeof r->error, "%s", cubec_status_message(st));
            cubec_status_free(st);
            return NULL;
        }
        nanosleep(&(struct timespec){0, 100000}, NULL); /* the workers get the lock too */
    }
    return NULL;
}

static void test_relocation_while_streams_work(void **state)
{
    (void)state;
    unsetenv("CUBEC_MEMORY_PRESET");
    setenv("CUBEC_MEMORY_POOLS", "arena:min_page=2MiB,max_page=16MiB", 1);
    cubec_device *d = test_device_open();
    atomic_store(&workers_done, 0);
    worker w[WORKERS];
    relocator rel = {.d = d};
    ASSERT_OK(cubec_stream_new(d, &rel.s));
    pthread_t t[WORKERS], tr;
    for (int i = 0; i < WORKERS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].d = d;
        w[i].rng = 100u + (uint32_t)i;
        ASSERT_OK(cubec_stream_new(d, &w[i].s));
    }
    for (int i = 0; i < WORKERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
    assert_int_equal(pthread_create(&tr, NULL, relocate, &rel), 0);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    pthread_join(tr, NULL);
    uint64_t relocations = 0;
    for (int i = 0; i < WORKERS; i++) {
        if (w[i].error[0]) fail_msg("worker %d: %s", i, w[i].error);
        cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
        ASSERT_OK(cubec_memory_report_get(d, w[i].s, &r));
        relocations += r.pools[0].relocations;
    }
    if (rel.error[0]) fail_msg("relocator: %s", rel.error);
    printf("test_relocation_threads: %u preparations, %llu relocations\n", rel.prepares,
           (unsigned long long)relocations);
    assert_true(relocations > 0);
    for (int i = 0; i < WORKERS; i++)
        for (uint32_t k = 0; k < w[i].count; k++) {
            ASSERT_OK(cubec_buffer_release(d, w[i].keep[k].b));
            free(w[i].keep[k].bytes);
        }
    test_device_close(d);
    unsetenv("CUBEC_MEMORY_POOLS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_relocation_while_streams_work)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
