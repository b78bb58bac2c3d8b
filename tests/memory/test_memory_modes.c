/* Allocation modes and their windows (cubec_memory_window_begin / _pop, [memory]
 * persistent_memory; docs/memory.md "Modes and windows") on a real device and, as
 * test_memory_modes_null, on the null backend. Each test routes buffers through nested windows
 * under one setting, and a model written here (the rule of docs/memory.md) says where each must
 * land: the report's persistent and dedicated entries and the layout's pools must hold exactly
 * the model's bytes, and every buffer read back must hold what was written. The report's windows
 * (mode and depth per slot) and setting, in the struct, the JSON and the table, are checked
 * against a model of each slot's window stack after every push and pop. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KiB 1024ull
#define MiB (1024ull * KiB)

enum { MAX_BUFFERS = 64 };
enum {
    AUTO = CUBEC_MEMORY_MODE_AUTO,
    PERS = CUBEC_MEMORY_MODE_PERSISTENT,
    DED = CUBEC_MEMORY_MODE_DEDICATED
};
typedef enum where { IN_POOLS, IN_PERSISTENT, IN_DEDICATED } where;
typedef enum setting { ENABLED, SIZE_MATCH, DISABLED, ENFORCED } setting;
static const char *const setting_names[] = {"enabled", "size-match", "disabled", "enforced"};

typedef struct model_buffer {
    cubec_buffer b;
    uint64_t size;
    where at;
    uint8_t *bytes;
} model_buffer;

typedef struct model {
    setting set;
    uint64_t alignment;
    int stack[80];
    int depth;
    model_buffer buf[MAX_BUFFERS];
    int count;
    /* effective sizes the persistent pool holds a slice of (live or free): size-match */
    uint64_t persistent_sizes[MAX_BUFFERS];
    int persistent_size_count;
} model;

static uint64_t effective(const model *m, uint64_t size)
{
    return (size + m->alignment - 1) / m->alignment * m->alignment;
}

static int holds_size(const model *m, uint64_t size)
{
    for (int i = 0; i < m->persistent_size_count; i++)
        if (m->persistent_sizes[i] == effective(m, size)) return 1;
    return 0;
}

/* docs/memory.md: the innermost window decides; Dedicated always; the setting bends Persistent. */
static where route(const model *m, uint64_t size)
{
    int w = m->depth ? m->stack[m->depth - 1] : AUTO;
    if (w == DED) return IN_DEDICATED;
    if (m->set == ENFORCED) return IN_PERSISTENT;
    if (m->set == DISABLED) return IN_POOLS;
    if (m->set == SIZE_MATCH && w == AUTO && holds_size(m, size)) return IN_PERSISTENT;
    return w == PERS ? IN_PERSISTENT : IN_POOLS;
}

static cubec_device *open_with(setting set, model *m)
{
    setenv("CUBEC_PERSISTENT_MEMORY", setting_names[set], 1);
    cubec_device *d = test_device_open();
    memset(m, 0, sizeof *m);
    m->set = set;
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    /* Allocations keep the largest of the storage and uniform alignments and 16. */
    m->alignment = info.storage_offset_alignment < 16 ? 16 : info.storage_offset_alignment;
    if (info.uniform_offset_alignment > m->alignment) m->alignment = info.uniform_offset_alignment;
    return d;
}

static void close_dev(cubec_device *d, model *m)
{
    for (int i = 0; i < m->count; i++)
        free(m->buf[i].bytes);
    test_device_close(d);
    unsetenv("CUBEC_PERSISTENT_MEMORY");
}

static void push(cubec_device *d, cubec_stream s, model *m, int mode)
{
    ASSERT_OK(cubec_memory_window_begin(d, s, (cubec_memory_mode)mode));
    m->stack[m->depth++] = mode;
    cubec_memory_mode got;
    uint32_t depth;
    ASSERT_OK(cubec_memory_window_get(d, s, &got, &depth));
    assert_int_equal(got, mode);
    assert_int_equal(depth, m->depth);
}

static void pop(cubec_device *d, cubec_stream s, model *m)
{
    ASSERT_OK(cubec_memory_window_end(d, s));
    m->depth--;
}

static void create(cubec_device *d, cubec_stream s, model *m, uint64_t size, uint32_t *rng)
{
    assert_true(m->count < MAX_BUFFERS);
    model_buffer *b = &m->buf[m->count++];
    b->size = size;
    b->at = route(m, size);
    if (b->at == IN_PERSISTENT && !holds_size(m, size))
        m->persistent_sizes[m->persistent_size_count++] = effective(m, size);
    ASSERT_OK(cubec_buffer_create(d, s, size, &b->b));
    b->bytes = malloc(size);
    assert_non_null(b->bytes);
    for (uint64_t i = 0; i < size; i++)
        b->bytes[i] = (uint8_t)test_rand(rng);
    ASSERT_OK(cubec_write(d, s, b->b, 0, b->bytes, size));
}

static void drop(cubec_device *d, model *m, int i)
{
    ASSERT_OK(cubec_buffer_release(d, m->buf[i].b));
    free(m->buf[i].bytes);
    m->buf[i] = m->buf[--m->count];
}

/* The report against the model: bytes in use and allocations of each place, and every buffer's
 * bytes. */
static void check(cubec_device *d, cubec_stream s, const model *m)
{
    uint64_t bytes[3] = {0, 0, 0}, count[3] = {0, 0, 0};
    for (int i = 0; i < m->count; i++) {
        bytes[m->buf[i].at] += m->buf[i].size;
        count[m->buf[i].at]++;
        uint8_t *got = malloc(m->buf[i].size);
        assert_non_null(got);
        ASSERT_OK(cubec_read(d, s, m->buf[i].b, 0, got, m->buf[i].size));
        if (memcmp(got, m->buf[i].bytes, m->buf[i].size) != 0)
            fail_msg("buffer %d (%llu bytes) does not hold what was written", i,
                     (unsigned long long)m->buf[i].size);
        free(got);
    }
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_string_equal(r.persistent.kind, "persistent");
    assert_string_equal(r.dedicated.kind, "dedicated");
    assert_int_equal(r.persistent.bytes_in_use, bytes[IN_PERSISTENT]);
    assert_int_equal(r.persistent.allocations, count[IN_PERSISTENT]);
    assert_int_equal(r.dedicated.bytes_in_use, bytes[IN_DEDICATED]);
    assert_int_equal(r.dedicated.allocations, count[IN_DEDICATED]);
    /* A dedicated allocation is one page of its size rounded up to the alignment. */
    uint64_t dedicated_pages = 0;
    for (int i = 0; i < m->count; i++)
        if (m->buf[i].at == IN_DEDICATED) dedicated_pages += effective(m, m->buf[i].size);
    assert_int_equal(r.dedicated.bytes_reserved, dedicated_pages);
    assert_int_equal(r.dedicated.pages, count[IN_DEDICATED]);
    uint64_t pools_in_use = 0, pools_count = 0;
    for (uint32_t i = 0; i < r.pool_count; i++) {
        pools_in_use += r.pools[i].bytes_in_use;
        pools_count += r.pools[i].allocations;
    }
    assert_int_equal(pools_in_use, bytes[IN_POOLS]);
    assert_int_equal(pools_count, count[IN_POOLS]);
    assert_int_equal(r.bytes_in_use, bytes[0] + bytes[1] + bytes[2]);
    assert_int_equal(r.allocations, count[0] + count[1] + count[2]);
}

/* Nested windows under one setting: every kind of window inside every other, sizes repeating so
 * that size-match has something to match. */
static void run_windows(setting set)
{
    model m;
    cubec_device *d = open_with(set, &m);
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(d, &s));
    uint32_t rng = 99u + (uint32_t)set;
    const uint64_t sizes[] = {1000, 4096, 70 * KiB, 3 * MiB + 5, 1000, 256};
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < 2; i++)
            create(d, s, &m, sizes[i + (size_t)round], &rng); /* no window */
        push(d, s, &m, PERS);
        for (size_t i = 0; i < 3; i++)
            create(d, s, &m, sizes[i + (size_t)round], &rng);
        push(d, s, &m, DED);
        create(d, s, &m, sizes[3], &rng);
        create(d, s, &m, 12345, &rng);
        push(d, s, &m, AUTO); /* Auto inside Dedicated inside Persistent */
        create(d, s, &m, sizes[2], &rng);
        create(d, s, &m, 1000, &rng);
        pop(d, s, &m);
        create(d, s, &m, 777, &rng); /* Dedicated again */
        pop(d, s, &m);
        create(d, s, &m, 4096, &rng); /* Persistent again */
        pop(d, s, &m);
        create(d, s, &m, sizes[4], &rng); /* no window: size-match takes 1000 */
        check(d, s, &m);
        /* Half of them go: the persistent pool keeps its free slices, dedicated pages return. */
        for (int i = m.count - 1; i >= 0; i -= 2)
            drop(d, &m, i);
        ASSERT_OK(cubec_flush(d, s));
        check(d, s, &m);
    }
    assert_int_equal(m.depth, 0);
    close_dev(d, &m);
}

static void test_windows_enabled(void **state)
{
    (void)state;
    run_windows(ENABLED);
}
static void test_windows_size_match(void **state)
{
    (void)state;
    run_windows(SIZE_MATCH);
}
static void test_windows_disabled(void **state)
{
    (void)state;
    run_windows(DISABLED);
}
static void test_windows_enforced(void **state)
{
    (void)state;
    run_windows(ENFORCED);
}

static uint32_t pages_of(cubec_device *d, cubec_stream s, int persistent)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    return persistent ? r.persistent.pages : r.dedicated.pages;
}

/* Persistent slices: exact fit, reused only by the same effective size, kept by everything but an
 * explicit cleanup; a dedicated page goes back once the GPU is done with its released buffer. */
static void test_persistent_reuse_and_dedicated_return(void **state)
{
    (void)state;
    model m;
    cubec_device *d = open_with(ENABLED, &m);
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(d, &s));
    uint32_t rng = 5;
    push(d, s, &m, PERS);
    create(d, s, &m, 100 * KiB, &rng);
    create(d, s, &m, 100 * KiB, &rng);
    assert_int_equal(pages_of(d, s, 1), 2);
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_int_equal(r.persistent.bytes_reserved, 2 * effective(&m, 100 * KiB));
    assert_int_equal(r.persistent.page_size, effective(&m, 100 * KiB));
    drop(d, &m, 1);
    ASSERT_OK(cubec_sync(d, s));
    assert_int_equal(pages_of(d, s, 1), 2); /* the free slice is kept */
    create(d, s, &m, 100 * KiB - 1, &rng);  /* same effective size: reused */
    assert_int_equal(pages_of(d, s, 1), 2);
    drop(d, &m, 1);
    ASSERT_OK(cubec_sync(d, s));
    create(d, s, &m, 100 * KiB + m.alignment, &rng); /* another size: a new slice */
    assert_int_equal(pages_of(d, s, 1), 3);
    /* Allocations in other pools (and their periodic cleanup) leave the free slice alone. */
    pop(d, s, &m);
    for (int i = 0; i < 20; i++) {
        create(d, s, &m, 64 * KiB, &rng);
        drop(d, &m, m.count - 1);
    }
    ASSERT_OK(cubec_sync(d, s));
    assert_int_equal(pages_of(d, s, 1), 3);
    check(d, s, &m);
    /* An explicit cleanup returns the one free slice, not the live ones. */
    ASSERT_OK(cubec_memory_cleanup(d, s));
    assert_int_equal(pages_of(d, s, 1), 2);
    check(d, s, &m);

    /* Dedicated: outside every pool, one page each, back as soon as the GPU is done. */
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    uint64_t pools_reserved = r.bytes_reserved - r.persistent.bytes_reserved;
    push(d, s, &m, DED);
    create(d, s, &m, 5 * MiB, &rng);
    create(d, s, &m, 5 * MiB, &rng);
    pop(d, s, &m);
    assert_int_equal(pages_of(d, s, 0), 2);
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_int_equal(r.bytes_reserved - r.persistent.bytes_reserved - r.dedicated.bytes_reserved,
                     pools_reserved);
    ASSERT_OK(cubec_copy(d, s, m.buf[m.count - 2].b, 0, m.buf[m.count - 1].b, 0, 5 * MiB));
    memcpy(m.buf[m.count - 1].bytes, m.buf[m.count - 2].bytes, 5 * MiB);
    check(d, s, &m);
    drop(d, &m, m.count - 2);
    ASSERT_OK(cubec_sync(d, s));
    assert_int_equal(pages_of(d, s, 0), 1);
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_int_equal(r.dedicated.bytes_reserved, effective(&m, 5 * MiB));
    assert_int_equal(r.dedicated.pages_peak, 2);
    check(d, s, &m);
    close_dev(d, &m);
}

/* Windows belong to the stream's slot: another stream's allocations do not see them. */
static void test_windows_per_stream(void **state)
{
    (void)state;
    model m;
    cubec_device *d = open_with(ENABLED, &m);
    cubec_stream a, b;
    ASSERT_OK(cubec_stream_new(d, &a));
    ASSERT_OK(cubec_stream_new(d, &b));
    ASSERT_OK(cubec_memory_window_begin(d, a, CUBEC_MEMORY_MODE_PERSISTENT));
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_create(d, b, 4096, &y));
    ASSERT_OK(cubec_buffer_create(d, a, 4096, &x));
    cubec_memory_report ra = CUBEC_MEMORY_REPORT_INIT, rb = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, a, &ra));
    ASSERT_OK(cubec_memory_report_get(d, b, &rb));
    assert_int_equal(ra.persistent.allocations, 1);
    assert_int_equal(rb.persistent.allocations, 0);
    assert_int_equal(rb.allocations, 1);
    cubec_memory_mode mode;
    uint32_t depth;
    ASSERT_OK(cubec_memory_window_get(d, b, &mode, &depth));
    assert_int_equal(mode, CUBEC_MEMORY_MODE_AUTO);
    assert_int_equal(depth, 0);
    ASSERT_OK(cubec_memory_window_end(d, a));
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, y));
    close_dev(d, &m);
}

/* Bad values are refused, naming the argument and the value; nothing changes. */
static void test_refusals(void **state)
{
    (void)state;
    model m;
    cubec_device *d = open_with(ENABLED, &m);
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(d, &s));
    ASSERT_ERROR(cubec_memory_window_end(d, s), CUBEC_INVALID_ARGUMENT,
                 "cubec_memory_window_end: stream");
    ASSERT_ERROR(cubec_memory_window_end(d, s), CUBEC_INVALID_ARGUMENT,
                 "no memory mode window is open");
    ASSERT_ERROR(cubec_memory_window_begin(d, s, (cubec_memory_mode)7), CUBEC_INVALID_ARGUMENT,
                 "cubec_memory_window_begin: mode 7 is not one of");
    ASSERT_ERROR(cubec_memory_window_begin(d, s, (cubec_memory_mode)-1), CUBEC_INVALID_ARGUMENT,
                 "mode 4294967295");
    ASSERT_ERROR(cubec_memory_window_begin(d, (cubec_stream)0x7777777, CUBEC_MEMORY_MODE_AUTO),
                 CUBEC_INVALID_ARGUMENT, "cubec_memory_window_begin");
    ASSERT_ERROR(cubec_memory_window_begin(NULL, s, CUBEC_MEMORY_MODE_AUTO), CUBEC_INVALID_ARGUMENT,
                 "device is NULL");
    for (int i = 0; i < 64; i++)
        ASSERT_OK(cubec_memory_window_begin(d, s, CUBEC_MEMORY_MODE_DEDICATED));
    ASSERT_ERROR(cubec_memory_window_begin(d, s, CUBEC_MEMORY_MODE_AUTO), CUBEC_INVALID_ARGUMENT,
                 "64 memory mode windows are open");
    uint32_t depth = 0;
    ASSERT_OK(cubec_memory_window_get(d, s, NULL, &depth));
    assert_int_equal(depth, 64);
    for (int i = 0; i < 64; i++)
        ASSERT_OK(cubec_memory_window_end(d, s));
    ASSERT_ERROR(cubec_memory_window_end(d, s), CUBEC_INVALID_ARGUMENT, "no memory mode window");
    close_dev(d, &m);

    /* A bad setting fails the open naming the key and the value. */
    setenv("CUBEC_PERSISTENT_MEMORY", "sometimes", 1);
    cubec_device *bad = NULL;
    ASSERT_ERROR(cubec_device_open(NULL, &bad), CUBEC_INVALID_ARGUMENT,
                 "[memory] persistent_memory = 'sometimes'");
    assert_null(bad);
    unsetenv("CUBEC_PERSISTENT_MEMORY");
}

/* --- The report's windows and setting ------------------------------------------------------ */

enum { REPORT_STEPS = 48, REPORT_MAX_DEPTH = 6 };
static const char *const mode_names[] = {"auto", "persistent", "dedicated"};

/* One stream's slot as the test models it: its window stack, and whether its pools exist (a
 * push creates them; the JSON and the table list only such slots). */
typedef struct slot_model {
    cubec_stream s;
    uint32_t slot;
    int stack[REPORT_MAX_DEPTH];
    int depth;
    int listed;
} slot_model;

static uint32_t slot_of(cubec_stream s)
{
    /* The documented folding: the stream's low 48 bits modulo max_streams. */
    const char *env = getenv("CUBEC_MAX_STREAMS");
    uint64_t max_streams = env && *env ? strtoull(env, NULL, 10) : 128;
    return (uint32_t)((s & 0xffffffffffffull) % max_streams);
}

static int model_mode(const slot_model *sm)
{
    return sm->depth ? sm->stack[sm->depth - 1] : AUTO;
}

static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The JSON's slot entry of `sm` (up to its "pools") names the model's window mode and depth. */
static void check_json_slot(const char *json, const slot_model *sm, const char *when)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"slot\": %u,", sm->slot);
    const char *entry = strstr(json, pattern);
    if (!sm->listed) {
        if (entry) fail_msg("%s: slot %u has no pools, yet is listed:\n%s", when, sm->slot, json);
        return;
    }
    if (!entry) fail_msg("%s: slot %u is missing from\n%s", when, sm->slot, json);
    const char *pools = strstr(entry, "\"pools\"");
    assert_non_null(pools);
    char want[96];
    snprintf(want, sizeof want, "\"window_mode\": \"%s\",", mode_names[model_mode(sm)]);
    const char *got = strstr(entry, want);
    if (!got || got > pools)
        fail_msg("%s: slot %u lacks %s before its pools in\n%.*s", when, sm->slot, want,
                 (int)(pools - entry), entry);
    snprintf(want, sizeof want, "\"window_depth\": %d,", sm->depth);
    got = strstr(entry, want);
    if (!got || got > pools)
        fail_msg("%s: slot %u lacks %s before its pools in\n%.*s", when, sm->slot, want,
                 (int)(pools - entry), entry);
}

/* The table's part for `sm` (its first row to its "preset" line) has the model's "windows" line,
 * or none when no window is open. */
static void check_table_slot(const char *table, const slot_model *sm, const char *when)
{
    char first[32];
    snprintf(first, sizeof first, "\n%-8u ", sm->slot);
    const char *from = strstr(table, first);
    if (!sm->listed) {
        if (from) fail_msg("%s: slot %u has no pools, yet is listed:\n%s", when, sm->slot, table);
        return;
    }
    if (!from) fail_msg("%s: slot %u is not in the table:\n%s", when, sm->slot, table);
    const char *end = strstr(from, " preset ");
    assert_non_null(end);
    end = strchr(end, '\n');
    assert_non_null(end);
    size_t n = (size_t)(end + 1 - from);
    char *section = malloc(n + 1);
    assert_non_null(section);
    memcpy(section, from, n);
    section[n] = 0;
    if (sm->depth) {
        char want[96];
        snprintf(want, sizeof want, "\n%-8s windows %s (%d open)\n", "", mode_names[model_mode(sm)],
                 sm->depth);
        if (!strstr(section, want) || count_of(section, " windows ") != 1)
            fail_msg("%s: slot %u lacks the line '%s' (alone) in\n%s", when, sm->slot, want + 1,
                     section);
    } else if (strstr(section, " windows ")) {
        fail_msg("%s: slot %u has no window open, yet:\n%s", when, sm->slot, section);
    }
    free(section);
}

/* The struct of each stream, the JSON and the table against the model, and the setting. */
static void check_windows_reported(cubec_device *d, const slot_model sm[2], setting set,
                                   const char *when)
{
    for (int k = 0; k < 2; k++) {
        cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
        ASSERT_OK(cubec_memory_report_get(d, sm[k].s, &r));
        if ((int)r.window_mode != model_mode(&sm[k]) || (int)r.window_depth != sm[k].depth)
            fail_msg("%s: slot %u reports window mode %d depth %u, the model %d depth %d", when,
                     sm[k].slot, (int)r.window_mode, r.window_depth, model_mode(&sm[k]),
                     sm[k].depth);
        assert_string_equal(r.persistent_memory, setting_names[set]);
    }
    char *json = NULL, *table = NULL;
    ASSERT_OK(cubec_memory_report_json(d, &json));
    ASSERT_OK(cubec_memory_report_table(d, &table));
    char want[64];
    snprintf(want, sizeof want, "\n  \"persistent_memory\": \"%s\",\n", setting_names[set]);
    if (!strstr(json, want) || count_of(json, "\"persistent_memory\"") != 1)
        fail_msg("%s: the JSON lacks %s (once):\n%s", when, want + 1, json);
    snprintf(want, sizeof want, "\nmemory   persistent_memory %s\n", setting_names[set]);
    if (!strstr(table, want) || count_of(table, "persistent_memory") != 1)
        fail_msg("%s: the table lacks '%s' (once):\n%s", when, want + 1, table);
    for (int k = 0; k < 2; k++) {
        check_json_slot(json, &sm[k], when);
        check_table_slot(table, &sm[k], when);
    }
    cubec_string_free(json);
    cubec_string_free(table);
}

/* Windows pushed and popped, each stream's in nested order, on two streams of different slots,
 * interleaved at random; the report is checked before the first push and after every push and
 * pop. A buffer now and then: routing does not change what the windows say. */
static void run_report_windows(setting set)
{
    model m;
    cubec_device *d = open_with(set, &m);
    slot_model sm[2];
    memset(sm, 0, sizeof sm);
    for (int k = 0; k < 2; k++) {
        ASSERT_OK(cubec_stream_new(d, &sm[k].s));
        sm[k].slot = slot_of(sm[k].s);
    }
    assert_int_not_equal(sm[0].slot, sm[1].slot);
    char when[96];
    snprintf(when, sizeof when, "%s, no window yet", setting_names[set]);
    check_windows_reported(d, sm, set, when);
    uint32_t rng = 31u + (uint32_t)set;
    cubec_buffer made[REPORT_STEPS];
    int made_count = 0;
    for (int step = 0; step < REPORT_STEPS; step++) {
        slot_model *x = &sm[test_rand(&rng) % 2];
        int do_push = x->depth == 0 || (x->depth < REPORT_MAX_DEPTH && test_rand(&rng) % 3 != 0);
        if (do_push) {
            int mode = (int)(test_rand(&rng) % 3);
            ASSERT_OK(cubec_memory_window_begin(d, x->s, (cubec_memory_mode)mode));
            x->stack[x->depth++] = mode;
            x->listed = 1;
        } else {
            ASSERT_OK(cubec_memory_window_end(d, x->s));
            x->depth--;
        }
        if (step % 5 == 0)
            ASSERT_OK(
                cubec_buffer_create(d, x->s, 1000 + 64 * (uint64_t)step, &made[made_count++]));
        snprintf(when, sizeof when, "%s, step %d (%s on slot %u)", setting_names[set], step,
                 do_push ? "push" : "pop", x->slot);
        check_windows_reported(d, sm, set, when);
    }
    /* Every window closed, innermost first: the slots stay listed, with no window. */
    for (int k = 0; k < 2; k++) {
        while (sm[k].depth) {
            ASSERT_OK(cubec_memory_window_end(d, sm[k].s));
            sm[k].depth--;
            snprintf(when, sizeof when, "%s, closing slot %u to depth %d", setting_names[set],
                     sm[k].slot, sm[k].depth);
            check_windows_reported(d, sm, set, when);
        }
        assert_true(sm[k].listed); /* the walk pushed on both */
    }
    for (int i = 0; i < made_count; i++)
        ASSERT_OK(cubec_buffer_release(d, made[i]));
    close_dev(d, &m);
}

static void test_report_windows_enabled(void **state)
{
    (void)state;
    run_report_windows(ENABLED);
}
static void test_report_windows_size_match(void **state)
{
    (void)state;
    run_report_windows(SIZE_MATCH);
}
static void test_report_windows_disabled(void **state)
{
    (void)state;
    run_report_windows(DISABLED);
}
static void test_report_windows_enforced(void **state)
{
    (void)state;
    run_report_windows(ENFORCED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_windows_enabled),
        cmocka_unit_test(test_windows_size_match),
        cmocka_unit_test(test_windows_disabled),
        cmocka_unit_test(test_windows_enforced),
        cmocka_unit_test(test_persistent_reuse_and_dedicated_return),
        cmocka_unit_test(test_windows_per_stream),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_report_windows_enabled),
        cmocka_unit_test(test_report_windows_size_match),
        cmocka_unit_test(test_report_windows_disabled),
        cmocka_unit_test(test_report_windows_enforced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
