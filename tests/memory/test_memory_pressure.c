/* Memory pressure and out-of-memory (docs/memory.md "Budget" and "Out of memory") on a real
 * device and, as test_memory_pressure_null, on the null backend. A [memory] max_bytes cap stands
 * for a full heap, and on the null backend also the null heap's size (CUBEC_NULL_HEAP_BYTES),
 * whose refusal of a page is the "driver's": buffers are allocated until one is refused, some
 * are released, more are allocated, and every surviving buffer must still hold the bytes a host
 * copy holds; the refusal names the request, the pool, the bytes reserved and in use, and the
 * cap's (or the driver's) words with the bytes of pages held. The budget the report shows is
 * checked against the cap, the device's heap, and the pages the report counts. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KiB 1024ull
#define MiB (1024ull * KiB)

enum { MAX_BUFFERS = 400 };

typedef struct model_buffer {
    cubec_buffer b;
    uint64_t size;
    uint8_t *bytes;
} model_buffer;

typedef struct model {
    model_buffer buf[MAX_BUFFERS];
    int count;
} model;

/* How a test caps the device's memory: [memory] max_bytes (every backend), or the null backend's
 * heap (CUBEC_NULL_HEAP_BYTES), which refuses a page past it the way a driver refuses one. */
typedef struct cap_kind {
    const char *env;    /* the variable that sets the cap */
    const char *source; /* the report's budget_source under it */
    /* What a refusal's message says of the cap, given its value and the bytes of pages held
     * (the cap's words, or the null "driver's"). */
    const char *says, *held;
} cap_kind;

static const cap_kind MAX_BYTES = {"CUBEC_MEMORY_MAX_BYTES", "max_bytes", "max_bytes = %llu (",
                                   "%llu bytes of pages held)"};
static const cap_kind NULL_HEAP = {"CUBEC_NULL_HEAP_BYTES", "null heap",
                                   "would pass the heap cap of %llu bytes (CUBEC_NULL_HEAP_BYTES; ",
                                   "%llu bytes granted)"};

static int null_backend(void)
{
    const char *b = getenv("CUBEC_BACKEND");
    return b && strcmp(b, "null") == 0;
}

static cubec_device *open_with(const char *preset, const cap_kind *kind, const char *cap)
{
    if (preset)
        setenv("CUBEC_MEMORY_PRESET", preset, 1);
    else
        unsetenv("CUBEC_MEMORY_PRESET");
    if (cap)
        setenv(kind->env, cap, 1);
    else
        unsetenv(kind->env);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_MEMORY_PRESET");
    unsetenv(kind->env);
    return d;
}

static cubec_device *open_capped(const char *preset, const char *cap)
{
    return open_with(preset, &MAX_BYTES, cap);
}

/* Creates and fills a buffer; returns the status of the creation (NULL: added to the model). */
static cubec_status try_create(cubec_device *d, cubec_stream s, model *m, uint64_t size,
                               uint32_t *rng)
{
    assert_true(m->count < MAX_BUFFERS);
    model_buffer *b = &m->buf[m->count];
    cubec_status st = cubec_buffer_create(d, s, size, &b->b);
    if (st) return st;
    b->size = size;
    b->bytes = malloc(size);
    assert_non_null(b->bytes);
    for (uint64_t i = 0; i < size; i++)
        b->bytes[i] = (uint8_t)test_rand(rng);
    ASSERT_OK(cubec_write(d, s, b->b, 0, b->bytes, size));
    m->count++;
    return NULL;
}

static void drop(cubec_device *d, model *m, int i)
{
    ASSERT_OK(cubec_buffer_release(d, m->buf[i].b));
    free(m->buf[i].bytes);
    m->buf[i] = m->buf[--m->count];
}

static void check_all(cubec_device *d, cubec_stream s, const model *m)
{
    for (int i = 0; i < m->count; i++) {
        uint8_t *got = malloc(m->buf[i].size);
        assert_non_null(got);
        ASSERT_OK(cubec_read(d, s, m->buf[i].b, 0, got, m->buf[i].size));
        if (memcmp(got, m->buf[i].bytes, m->buf[i].size) != 0)
            fail_msg("buffer %d (%llu bytes) lost its bytes", i,
                     (unsigned long long)m->buf[i].size);
        free(got);
    }
}

static void drop_all(cubec_device *d, model *m)
{
    while (m->count)
        drop(d, m, m->count - 1);
}

/* The report's budget under a cap: the cap, and the pages of the (one) stream's pools (under the
 * null heap its use, which is those pages: nothing else takes device memory there). */
static void check_budget_of(cubec_device *d, cubec_stream s, const cap_kind *kind, uint64_t cap)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_string_equal(r.budget_source, kind->source);
    assert_int_equal(r.budget_bytes, cap);
    assert_int_equal(r.budget_used_bytes, r.bytes_reserved);
    assert_true(r.budget_used_bytes <= cap);
}

static void check_budget(cubec_device *d, cubec_stream s, uint64_t cap)
{
    check_budget_of(d, s, &MAX_BYTES, cap);
}

/* The words of the out-of-memory message that name the pool a request of `size` tried
 * (docs/memory.md "Routing"): the first pool of the layout that takes the size, as "<kind> pool
 * <index> even after". A sliced pool takes up to its max_slice, and the ladder's (uncapped) ones
 * also a request that fills at least 80 % of a page; the adaptive preset's small pool has no such
 * rule; an exclusive pool or an arena takes up to its max_slice_size. */
static void pool_tried(cubec_device *d, cubec_stream s, uint64_t size, char *out, size_t cap)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    int fill_rule = strcmp(r.preset, "ladder") == 0;
    for (uint32_t i = 0; i < r.pool_count; i++) {
        const cubec_pool_report *p = &r.pools[i];
        int sliced = !strcmp(p->kind, "sliced");
        if (!sliced && strcmp(p->kind, "exclusive") && strcmp(p->kind, "arena")) break; /* rings */
        int takes =
            size <= p->max_slice_size || (sliced && fill_rule && !p->cap && size <= p->page_size &&
                                          p->page_size - size < p->page_size / 5);
        if (!takes) continue;
        snprintf(out, cap, "%s pool %u even after", p->kind, i);
        return;
    }
    fail_msg("no pool of the %s layout takes %llu bytes", r.preset, (unsigned long long)size);
}

/* Allocate until refused, free every other buffer, allocate their sizes again, and check every
 * byte; the device stays usable throughout. The memory is capped at 40 MiB as `kind` says. The
 * refusal names the pool it tried: `pool_named`, or (NULL) the layout's pool for the size
 * (pool_tried). */
static void fill_free_refill_under(const cap_kind *kind, const char *preset, cubec_memory_mode mode,
                                   const char *pool_named)
{
    const uint64_t cap = 40 * MiB;
    char cap_says[96];
    snprintf(cap_says, sizeof cap_says, kind->says, (unsigned long long)cap);
    cubec_device *d = open_with(preset, kind, "41943040");
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(d, &s));
    if (mode != CUBEC_MEMORY_MODE_AUTO) ASSERT_OK(cubec_memory_window_begin(d, s, mode));
    static model m;
    memset(&m, 0, sizeof m);
    uint32_t rng = 77;
    cubec_status refusal = NULL;
    uint64_t refused_size = 0;
    while (!refusal) {
        uint64_t size = 64 * KiB + test_rand(&rng) % (3 * MiB);
        refusal = try_create(d, s, &m, size, &rng);
        refused_size = size;
    }
    assert_int_equal(cubec_status_code(refusal), CUBEC_OUT_OF_MEMORY);
    const char *msg = cubec_status_message(refusal);
    char want[64];
    snprintf(want, sizeof want, "creating a buffer of %llu bytes",
             (unsigned long long)refused_size);
    char pool[64];
    if (pool_named)
        snprintf(pool, sizeof pool, "%s", pool_named);
    else
        pool_tried(d, s, refused_size, pool, sizeof pool);
    /* The bytes reserved and in use (one stream's pools are every stream's here), and the pages
     * held that the cap refused to go past. */
    check_budget_of(d, s, kind, cap);
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    char totals[128], held[96], cap_held[192];
    snprintf(totals, sizeof totals,
             "the pools of every stream hold %llu bytes reserved, %llu bytes "
             "in use",
             (unsigned long long)r.bytes_reserved, (unsigned long long)r.bytes_in_use);
    snprintf(held, sizeof held, kind->held, (unsigned long long)r.budget_used_bytes);
    snprintf(cap_held, sizeof cap_held, "%s%s", cap_says, held);
    const char *says[] = {want, totals, cap_held, pool};
    for (size_t i = 0; i < sizeof says / sizeof says[0]; i++)
        if (!strstr(msg, says[i])) fail_msg("'%s' does not say '%s'", msg, says[i]);
    cubec_status_free(refusal);
    assert_true(m.count > 8); /* the cap held a fair number first */
    check_all(d, s, &m);

    /* Half go; then allocate again, smallest first, until the room they left is used: at least
     * one fits, and a refusal is the same clean one. */
    uint64_t sizes[MAX_BUFFERS];
    int freed = 0;
    for (int i = m.count - 1; i >= 0; i -= 2) {
        sizes[freed++] = m.buf[i].size;
        drop(d, &m, i);
    }
    for (int i = 1; i < freed; i++)
        for (int k = i; k > 0 && sizes[k - 1] > sizes[k]; k--) {
            uint64_t t = sizes[k];
            sizes[k] = sizes[k - 1];
            sizes[k - 1] = t;
        }
    int again = 0;
    for (int i = 0; i < freed; i++) {
        cubec_status st = try_create(d, s, &m, sizes[i], &rng);
        if (!st) {
            again++;
            continue;
        }
        ASSERT_ERROR(st, CUBEC_OUT_OF_MEMORY, cap_says);
        break;
    }
    assert_true(again >= 1);
    /* The device works as before: a copy on the device, then every byte. */
    uint64_t n = (m.buf[0].size < m.buf[1].size ? m.buf[0].size : m.buf[1].size) / 4 * 4;
    ASSERT_OK(cubec_copy(d, s, m.buf[0].b, 0, m.buf[1].b, 0, n));
    memcpy(m.buf[1].bytes, m.buf[0].bytes, n);
    check_all(d, s, &m);
    check_budget_of(d, s, kind, cap);
    if (mode != CUBEC_MEMORY_MODE_AUTO) ASSERT_OK(cubec_memory_window_end(d, s));
    drop_all(d, &m);
    test_device_close(d);
}

static void fill_free_refill(const char *preset, cubec_memory_mode mode, const char *pool_named)
{
    fill_free_refill_under(&MAX_BYTES, preset, mode, pool_named);
}

static void test_oom_ladder(void **state)
{
    (void)state;
    fill_free_refill("ladder", CUBEC_MEMORY_MODE_AUTO, NULL);
}

static void test_oom_adaptive(void **state)
{
    (void)state;
    fill_free_refill("adaptive", CUBEC_MEMORY_MODE_AUTO, NULL);
}

static void test_oom_exclusive(void **state)
{
    (void)state;
    fill_free_refill("exclusive", CUBEC_MEMORY_MODE_AUTO, NULL);
}

static void test_oom_persistent(void **state)
{
    (void)state;
    fill_free_refill("ladder", CUBEC_MEMORY_MODE_PERSISTENT, "for the persistent pool even after");
}

static void test_oom_dedicated(void **state)
{
    (void)state;
    fill_free_refill("ladder", CUBEC_MEMORY_MODE_DEDICATED,
                     "for the dedicated allocations even after");
}

/* The same under the null backend's heap of 40 MiB (test_memory_pressure_null): the page is
 * refused by the "driver", whose words the message carries. */
static void null_heap_fill_free_refill(const char *preset, cubec_memory_mode mode,
                                       const char *pool_named)
{
    if (!null_backend()) skip(); /* CUBEC_NULL_HEAP_BYTES caps only the null backend's heap */
    fill_free_refill_under(&NULL_HEAP, preset, mode, pool_named);
}

static void test_null_heap_oom_ladder(void **state)
{
    (void)state;
    null_heap_fill_free_refill("ladder", CUBEC_MEMORY_MODE_AUTO, NULL);
}

static void test_null_heap_oom_adaptive(void **state)
{
    (void)state;
    null_heap_fill_free_refill("adaptive", CUBEC_MEMORY_MODE_AUTO, NULL);
}

static void test_null_heap_oom_exclusive(void **state)
{
    (void)state;
    null_heap_fill_free_refill("exclusive", CUBEC_MEMORY_MODE_AUTO, NULL);
}

static void test_null_heap_oom_persistent(void **state)
{
    (void)state;
    null_heap_fill_free_refill("ladder", CUBEC_MEMORY_MODE_PERSISTENT,
                               "for the persistent pool even after");
}

static void test_null_heap_oom_dedicated(void **state)
{
    (void)state;
    null_heap_fill_free_refill("ladder", CUBEC_MEMORY_MODE_DEDICATED,
                               "for the dedicated allocations even after");
}

/* Free persistent slices survive every cleanup but an explicit one, and pressure: a request the
 * cap could not hold otherwise gets their room. */
static void test_pressure_returns_persistent_slices(void **state)
{
    (void)state;
    cubec_device *d = open_capped("ladder", "25165824");
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(d, &s));
    static model m;
    memset(&m, 0, sizeof m);
    uint32_t rng = 3;
    ASSERT_OK(try_create(d, s, &m, 1000, &rng)); /* lives on, in a sliced page */
    ASSERT_OK(cubec_memory_window_begin(d, s, CUBEC_MEMORY_MODE_PERSISTENT));
    for (int i = 0; i < 6; i++)
        ASSERT_OK(try_create(d, s, &m, 2 * MiB, &rng));
    ASSERT_OK(cubec_memory_window_end(d, s));
    for (int i = 0; i < 5; i++)
        drop(d, &m, m.count - 1);
    ASSERT_OK(cubec_sync(d, s));
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_int_equal(r.persistent.pages, 6);
    assert_int_equal(r.persistent.allocations, 1);
    /* 12 MiB of persistent slices + an 8 MiB sliced page + 9 MiB: past 24 MiB unless the free
     * slices go back. */
    ASSERT_OK(try_create(d, s, &m, 9 * MiB, &rng));
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_int_equal(r.persistent.pages, 1);
    check_all(d, s, &m);
    check_budget(d, s, 24 * MiB);
    drop_all(d, &m);
    test_device_close(d);
}

/* An injected page failure is absorbed on every route: the page is tried again. */
static void test_page_fault_absorbed(void **state)
{
    (void)state;
    cubec_device *d = open_capped(NULL, NULL);
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(d, &s));
    static model m;
    memset(&m, 0, sizeof m);
    uint32_t rng = 11;
    const cubec_memory_mode modes[] = {CUBEC_MEMORY_MODE_AUTO, CUBEC_MEMORY_MODE_PERSISTENT,
                                       CUBEC_MEMORY_MODE_DEDICATED};
    for (size_t i = 0; i < 3; i++) {
        ASSERT_OK(cubec_memory_window_begin(d, s, modes[i]));
        uint64_t before[CUBEC_FAULT_KIND_COUNT], after[CUBEC_FAULT_KIND_COUNT];
        ASSERT_OK(cubec_fault_get_counts(d, before));
        ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_PAGE, 1));
        ASSERT_OK(try_create(d, s, &m, 20 * MiB + i * 4096, &rng)); /* needs a new page */
        ASSERT_OK(cubec_fault_get_counts(d, after));
        assert_int_equal(after[CUBEC_FAULT_PAGE], before[CUBEC_FAULT_PAGE] + 2);
        ASSERT_OK(cubec_memory_window_end(d, s));
    }
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_int_equal(r.persistent.allocations, 1);
    assert_int_equal(r.dedicated.allocations, 1);
    check_all(d, s, &m);
    drop_all(d, &m);
    test_device_close(d);
}

/* Without a cap the budget is the driver's (VK_EXT_memory_budget) or the heap's size. */
static void test_budget_reported(void **state)
{
    (void)state;
    cubec_device *d = open_capped(NULL, NULL);
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(d, &s));
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_create(d, s, 1 * MiB, &b));
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_true(r.budget_bytes > 0);
    if (!strcmp(r.budget_source, "heap size")) {
        assert_int_equal(r.budget_bytes, info.device_local_heap_size);
        assert_int_equal(r.budget_used_bytes, r.bytes_reserved); /* cubec's own pages */
    } else if (!strcmp(r.budget_source, "VK_EXT_memory_budget")) {
        assert_true(r.budget_used_bytes >= r.bytes_reserved); /* the process's use, rings too */
    } else {
        fail_msg("budget source '%s'", r.budget_source);
    }
    char *json = NULL;
    ASSERT_OK(cubec_memory_report_json(d, &json));
    char want[96];
    snprintf(want, sizeof want, "\"budget\": {\"bytes\": %llu,",
             (unsigned long long)r.budget_bytes);
    if (!strstr(json, want)) fail_msg("%s lacks %s", json, want);
    cubec_string_free(json);
    ASSERT_OK(cubec_buffer_release(d, b));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oom_ladder),
        cmocka_unit_test(test_oom_adaptive),
        cmocka_unit_test(test_oom_exclusive),
        cmocka_unit_test(test_oom_persistent),
        cmocka_unit_test(test_oom_dedicated),
        cmocka_unit_test(test_null_heap_oom_ladder),
        cmocka_unit_test(test_null_heap_oom_adaptive),
        cmocka_unit_test(test_null_heap_oom_exclusive),
        cmocka_unit_test(test_null_heap_oom_persistent),
        cmocka_unit_test(test_null_heap_oom_dedicated),
        cmocka_unit_test(test_pressure_returns_persistent_slices),
        cmocka_unit_test(test_page_fault_absorbed),
        cmocka_unit_test(test_budget_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
