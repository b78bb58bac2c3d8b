/* The device-wide memory report (JSON and table) against what the test allocated: buffers of
 * known sizes on two streams, each slot's totals and the device's equal to the sums computed
 * here, the JSON's pools equal to cubec_memory_report_get's, and the numbers back to zero after
 * releasing and cleaning up; the table's persistent and dedicated rows, slot totals and budget
 * line equal to the struct's and the JSON's numbers. Labels vulkan, profiling and memory. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N1 = 12, N2 = 7 };

typedef struct json_totals {
    uint64_t allocations, bytes_in_use, bytes_padding, bytes_reserved, pages;
} json_totals;

/* The number after "key": in [from, end); fails the test when it is not there. */
static uint64_t json_u64(const char *from, const char *end, const char *key)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\": ", key);
    const char *p = strstr(from, pattern);
    if (!p || p >= end) fail_msg("key '%s' not found in %.*s", key, (int)(end - from), from);
    char *after;
    unsigned long long v = strtoull(p + strlen(pattern), &after, 10);
    assert_true(after > p + strlen(pattern));
    return v;
}

static json_totals parse_totals(const char *totals)
{
    assert_non_null(totals);
    const char *end = strchr(totals, '}');
    assert_non_null(end);
    json_totals t = {
        json_u64(totals, end, "allocations"),   json_u64(totals, end, "bytes_in_use"),
        json_u64(totals, end, "bytes_padding"), json_u64(totals, end, "bytes_reserved"),
        json_u64(totals, end, "pages"),
    };
    return t;
}

/* The entry of `slot` in the "slots" array, or NULL. */
static const char *find_slot(const char *json, uint32_t slot)
{
    char pattern[48];
    snprintf(pattern, sizeof pattern, "\"slot\": %u,", slot);
    return strstr(json, pattern);
}

/* The device's totals: the last "totals" of the document. */
static const char *device_totals(const char *json)
{
    const char *last = NULL;
    for (const char *p = strstr(json, "\"totals\""); p; p = strstr(p + 1, "\"totals\""))
        last = p;
    return last;
}

static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The slot entry's pools equal the stream's own report (its buffer pools, in order), and its
 * totals equal the report's totals and the padding summed here. */
static void check_slot(const char *json, uint32_t slot, const cubec_memory_report *r)
{
    const char *entry = find_slot(json, slot);
    if (!entry) fail_msg("slot %u is missing from %s", slot, json);
    const char *totals = strstr(entry, "\"totals\"");
    assert_non_null(totals);
    const char *p = entry;
    uint64_t padding = 0;
    uint32_t buffer_pools = 0;
    /* The layout's pools, then the persistent pool and the dedicated allocations. */
    for (uint32_t i = 0; i < r->pool_count + 2; i++) {
        const cubec_pool_report *want = i < r->pool_count    ? &r->pools[i]
                                        : i == r->pool_count ? &r->persistent
                                                             : &r->dedicated;
        if (!strcmp(want->kind, "metadata") || !strcmp(want->kind, "upload") ||
            !strcmp(want->kind, "readback"))
            continue; /* the rings are reported once, under "auxiliary" */
        if (i >= r->pool_count) {
            char key[32];
            snprintf(key, sizeof key, "\"%s\":", want->kind);
            p = strstr(p, key);
            assert_non_null(p);
        } else {
            buffer_pools++;
        }
        p = strstr(p, "{\"kind\": ");
        assert_non_null(p);
        assert_true(p < totals);
        const char *end = strchr(p, '}');
        char kind[32];
        assert_int_equal(sscanf(p, "{\"kind\": \"%31[a-z]\"", kind), 1);
        assert_string_equal(kind, want->kind);
        assert_int_equal(json_u64(p, end, "page_size"), want->page_size);
        assert_int_equal(json_u64(p, end, "max_slice_size"), want->max_slice_size);
        assert_int_equal(json_u64(p, end, "pages"), want->pages);
        assert_int_equal(json_u64(p, end, "pages_peak"), want->pages_peak);
        assert_int_equal(json_u64(p, end, "allocations"), want->allocations);
        assert_int_equal(json_u64(p, end, "bytes_in_use"), want->bytes_in_use);
        assert_int_equal(json_u64(p, end, "bytes_padding"), want->bytes_padding);
        assert_int_equal(json_u64(p, end, "bytes_reserved"), want->bytes_reserved);
        padding += want->bytes_padding;
        p = end;
    }
    assert_true(buffer_pools >= 2);               /* sliced and exclusive */
    const char *extra = strstr(p, "{\"kind\": "); /* no pool the stream does not have */
    assert_true(!extra || extra > totals);
    json_totals t = parse_totals(totals);
    assert_int_equal(t.allocations, r->allocations);
    assert_int_equal(t.bytes_in_use, r->bytes_in_use);
    assert_int_equal(t.bytes_reserved, r->bytes_reserved);
    assert_int_equal(t.pages, r->pages);
    assert_int_equal(t.bytes_padding, padding);
}

static uint32_t slot_of(cubec_stream s)
{
    /* The documented folding: the stream's low 48 bits modulo max_streams. */
    const char *env = getenv("CUBEC_MAX_STREAMS");
    uint64_t max_streams = env && *env ? strtoull(env, NULL, 10) : 128;
    return (uint32_t)((s & 0xffffffffffffull) % max_streams);
}

static void test_report_matches_allocations(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_stream s[2];
    ASSERT_OK(cubec_stream_new(d, &s[0]));
    ASSERT_OK(cubec_stream_new(d, &s[1]));
    uint32_t slot[2] = {slot_of(s[0]), slot_of(s[1])};
    assert_int_not_equal(slot[0], slot[1]);

    /* Small and odd sizes (sliced pools, with padding), one large enough for the exclusive pool
     * on any device's page limit, and a size-0 buffer, which holds no memory. */
    cubec_buffer b1[N1 + 1], b2[N2];
    uint64_t sum[2] = {0, 0};
    for (int i = 0; i < N1; i++) {
        uint64_t size = 1000u * (uint64_t)(i + 1) + (uint64_t)i * 7u;
        ASSERT_OK(cubec_buffer_create(d, s[0], size, &b1[i]));
        sum[0] += size;
    }
    ASSERT_OK(cubec_buffer_create(d, s[0], 0, &b1[N1]));
    uint32_t seed = 7;
    for (int i = 0; i < N2; i++) {
        uint64_t size = i == N2 - 1 ? (uint64_t)200 << 20 : 1 + test_rand(&seed) % 300000u;
        ASSERT_OK(cubec_buffer_create(d, s[1], size, &b2[i]));
        sum[1] += size;
    }
    const uint64_t count[2] = {N1, N2};

    cubec_memory_report r[2] = {CUBEC_MEMORY_REPORT_INIT, CUBEC_MEMORY_REPORT_INIT};
    for (int k = 0; k < 2; k++) {
        ASSERT_OK(cubec_memory_report_get(d, s[k], &r[k]));
        assert_int_equal(r[k].allocations, count[k]);
        assert_int_equal(r[k].bytes_in_use, sum[k]);
        assert_true(r[k].bytes_reserved >= sum[k]);
    }

    char *json = NULL;
    ASSERT_ERROR(cubec_memory_report_json(d, NULL), CUBEC_INVALID_ARGUMENT, "out_json is NULL");
    ASSERT_ERROR(cubec_memory_report_table(d, NULL), CUBEC_INVALID_ARGUMENT, "out_text is NULL");
    ASSERT_ERROR(cubec_memory_report_json(NULL, &json), CUBEC_INVALID_ARGUMENT, "device is NULL");
    assert_null(json);
    ASSERT_OK(cubec_memory_report_json(d, &json));
    for (int k = 0; k < 2; k++)
        check_slot(json, slot[k], &r[k]);
    assert_int_equal(count_of(json, "\"slot\": "), 2); /* only the streams that allocated */
    json_totals t = parse_totals(device_totals(json));
    assert_int_equal(t.allocations, count[0] + count[1]);
    assert_int_equal(t.bytes_in_use, sum[0] + sum[1]);
    assert_int_equal(t.bytes_reserved, r[0].bytes_reserved + r[1].bytes_reserved);
    assert_int_equal(t.pages, r[0].pages + r[1].pages);
    /* The rings once, as the per-stream report lists them after the buffer pools. */
    const char *aux = strstr(json, "\"auxiliary\"");
    assert_non_null(aux);
    uint64_t aux_reserved = 0;
    for (uint32_t i = 0; i < r[0].pool_count; i++) {
        const cubec_pool_report *p = &r[0].pools[i];
        char pattern[48];
        snprintf(pattern, sizeof pattern, "{\"kind\": \"%s\"", p->kind);
        if (strcmp(p->kind, "metadata") && strcmp(p->kind, "upload") && strcmp(p->kind, "readback"))
            continue;
        const char *e = strstr(aux, pattern);
        assert_non_null(e);
        assert_int_equal(json_u64(e, strchr(e, '}'), "bytes_reserved"), p->bytes_reserved);
        assert_int_equal(count_of(json, pattern), 1);
        aux_reserved += p->bytes_reserved;
    }
    assert_true(aux_reserved > 0); /* the metadata ring at least */
    const char *dt = device_totals(json);
    assert_int_equal(json_u64(dt, dt + strlen(dt), "auxiliary_bytes_reserved"), aux_reserved);
    assert_int_equal(json_u64(dt, dt + strlen(dt), "all_bytes_reserved"),
                     t.bytes_reserved + aux_reserved);
    cubec_string_free(json);

    /* The table names every pool of both reports and both slots. */
    char *table = NULL;
    ASSERT_OK(cubec_memory_report_table(d, &table));
    assert_non_null(table);
    for (int k = 0; k < 2; k++) {
        for (uint32_t i = 0; i < r[k].pool_count; i++)
            if (!strstr(table, r[k].pools[i].kind))
                fail_msg("pool kind '%s' is not in the table:\n%s", r[k].pools[i].kind, table);
        char line[32];
        snprintf(line, sizeof line, "\n%-8u ", slot[k]);
        if (!strstr(table, line)) fail_msg("slot %u is not in the table:\n%s", slot[k], table);
    }
    assert_non_null(strstr(table, "in use"));
    cubec_string_free(table);

    /* Released, the memory is free but the pages stay; cleaned up, they go back. */
    for (int i = 0; i <= N1; i++)
        ASSERT_OK(cubec_buffer_release(d, b1[i]));
    for (int i = 0; i < N2; i++)
        ASSERT_OK(cubec_buffer_release(d, b2[i]));
    ASSERT_OK(cubec_memory_report_json(d, &json));
    t = parse_totals(device_totals(json));
    assert_int_equal(t.allocations, 0);
    assert_int_equal(t.bytes_in_use, 0);
    assert_int_equal(t.bytes_padding, 0);
    for (int k = 0; k < 2; k++) {
        ASSERT_OK(cubec_memory_report_get(d, s[k], &r[k]));
        assert_int_equal(r[k].allocations, 0);
        assert_int_equal(r[k].bytes_in_use, 0);
        check_slot(json, slot[k], &r[k]);
    }
    cubec_string_free(json);
    for (int k = 0; k < 2; k++)
        ASSERT_OK(cubec_memory_cleanup(d, s[k]));
    ASSERT_OK(cubec_memory_report_json(d, &json));
    t = parse_totals(device_totals(json));
    assert_int_equal(t.allocations, 0);
    assert_int_equal(t.bytes_reserved, 0);
    assert_int_equal(t.pages, 0);
    cubec_string_free(json);
    test_device_close(d);
}

static void test_refusals(void **state)
{
    (void)state;
    char *text = (char *)"unchanged";
    ASSERT_ERROR(cubec_memory_report_json(NULL, &text), CUBEC_INVALID_ARGUMENT,
                 "cubec_memory_report_json: device is NULL");
    assert_null(text);
    text = (char *)"unchanged";
    ASSERT_ERROR(cubec_memory_report_table(NULL, &text), CUBEC_INVALID_ARGUMENT,
                 "cubec_memory_report_table: device is NULL");
    assert_null(text);
    cubec_device *d = test_device_open();
    ASSERT_ERROR(cubec_memory_report_json(d, NULL), CUBEC_INVALID_ARGUMENT, "out_json is NULL");
    ASSERT_ERROR(cubec_memory_report_table(d, NULL), CUBEC_INVALID_ARGUMENT, "out_text is NULL");
    cubec_string_free(NULL);
    /* Nothing allocated: no slot, and the table says so. */
    char *json = NULL;
    ASSERT_OK(cubec_memory_report_json(d, &json));
    assert_int_equal(count_of(json, "\"slot\": "), 0);
    json_totals t = parse_totals(device_totals(json));
    assert_int_equal(t.allocations, 0);
    assert_int_equal(t.bytes_reserved, 0);
    cubec_string_free(json);
    ASSERT_OK(cubec_memory_report_table(d, &text));
    assert_non_null(strstr(text, "no stream has allocated memory"));
    cubec_string_free(text);
    test_device_close(d);
}

/* The table's sizes as the documentation shows them (docs/api.md "binary units"): bytes below
 * 1 KiB, else one decimal of the largest binary unit that leaves at least 1. */
static const char *human(uint64_t bytes, char buf[16])
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, 16, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, 16, "%.1f %s", v, units[u]);
    return buf;
}

/* The table row of pool `p` (its kind, limits, pages, allocations and bytes; no slot column). */
static void pool_row(const cubec_pool_report *p, char *out, size_t cap)
{
    char h[5][16];
    snprintf(out, cap, "%-8s %-10s %10s %10s %6u %6u %8llu %10s %10s %10s\n", "", p->kind,
             human(p->page_size, h[0]), human(p->max_slice_size, h[1]), p->pages, p->pages_peak,
             (unsigned long long)p->allocations, human(p->bytes_in_use, h[2]),
             human(p->bytes_padding, h[3]), human(p->bytes_reserved, h[4]));
}

/* The lines of slot `slot`'s part of the table: from its first row to its "preset" line. */
static char *slot_section(const char *table, uint32_t slot)
{
    char first[32];
    snprintf(first, sizeof first, "\n%-8u ", slot);
    const char *from = strstr(table, first);
    if (!from) fail_msg("slot %u is not in the table:\n%s", slot, table);
    from++;
    const char *end = strstr(from, " preset ");
    assert_non_null(end);
    end = strchr(end, '\n');
    assert_non_null(end);
    size_t n = (size_t)(end + 1 - from);
    char *out = malloc(n + 1);
    assert_non_null(out);
    memcpy(out, from, n);
    out[n] = 0;
    return out;
}

/* The table's persistent and dedicated rows, its slot totals and its budget line against the
 * struct report and the JSON of the same moment: a slot that held Persistent and Dedicated
 * allocations (one persistent slice released, so pages and allocations differ) shows a row of
 * each with the struct's numbers, and a total that counts them; a slot that never held any
 * shows neither; the budget line is the JSON's budget (equal to the struct's) in the table's
 * units. */
static void test_table_rows_match_report(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_stream s[3];
    for (int k = 0; k < 3; k++)
        ASSERT_OK(cubec_stream_new(d, &s[k]));
    cubec_buffer plain[2], kept[3], gone;
    ASSERT_OK(cubec_buffer_create(d, s[0], 5000, &plain[0]));
    ASSERT_OK(cubec_buffer_create(d, s[1], 7000, &plain[1]));
    ASSERT_OK(cubec_memory_window_begin(d, s[0], CUBEC_MEMORY_MODE_PERSISTENT));
    ASSERT_OK(cubec_buffer_create(d, s[0], 3000, &kept[0]));
    ASSERT_OK(cubec_buffer_create(d, s[0], 70001, &kept[1]));
    ASSERT_OK(cubec_memory_window_begin(d, s[0], CUBEC_MEMORY_MODE_DEDICATED));
    ASSERT_OK(cubec_buffer_create(d, s[0], (1u << 20) + 5, &kept[2]));
    ASSERT_OK(cubec_memory_window_end(d, s[0]));
    ASSERT_OK(cubec_memory_window_end(d, s[0]));
    ASSERT_OK(cubec_buffer_release(d, kept[0])); /* its slice stays, free */
    ASSERT_OK(cubec_sync(d, s[0]));
    /* A third slot held a dedicated allocation, whose page went back with it. */
    ASSERT_OK(cubec_memory_window_begin(d, s[2], CUBEC_MEMORY_MODE_DEDICATED));
    ASSERT_OK(cubec_buffer_create(d, s[2], 12345, &gone));
    ASSERT_OK(cubec_memory_window_end(d, s[2]));
    ASSERT_OK(cubec_buffer_release(d, gone));
    ASSERT_OK(cubec_sync(d, s[2]));

    cubec_memory_report r[3] = {CUBEC_MEMORY_REPORT_INIT, CUBEC_MEMORY_REPORT_INIT,
                                CUBEC_MEMORY_REPORT_INIT};
    for (int k = 0; k < 3; k++)
        ASSERT_OK(cubec_memory_report_get(d, s[k], &r[k]));
    assert_int_equal(r[2].dedicated.pages, 0);
    assert_int_equal(r[2].dedicated.pages_peak, 1);
    assert_int_equal(r[0].persistent.pages, 2);
    assert_int_equal(r[0].persistent.allocations, 1);
    assert_int_equal(r[0].persistent.bytes_in_use, 70001);
    assert_int_equal(r[0].dedicated.pages, 1);
    assert_int_equal(r[0].dedicated.allocations, 1);
    assert_int_equal(r[0].dedicated.bytes_in_use, (1u << 20) + 5);
    assert_int_equal(r[1].persistent.pages_peak, 0);
    assert_int_equal(r[1].dedicated.pages_peak, 0);
    char *json = NULL, *table = NULL;
    ASSERT_OK(cubec_memory_report_json(d, &json));
    ASSERT_OK(cubec_memory_report_table(d, &table));
    for (int k = 0; k < 3; k++)
        check_slot(json, slot_of(s[k]), &r[k]); /* the JSON's entries are the struct's */

    char row[256], h[3][16];
    char *section = slot_section(table, slot_of(s[0]));
    const cubec_pool_report *windows[] = {&r[0].persistent, &r[0].dedicated};
    for (int i = 0; i < 2; i++) {
        pool_row(windows[i], row, sizeof row);
        if (!strstr(section, row))
            fail_msg("slot %u lacks the row\n%s in\n%s", slot_of(s[0]), row, section);
    }
    /* The slot's total counts the windows' allocations too (the struct's totals do). */
    uint64_t padding = r[0].persistent.bytes_padding + r[0].dedicated.bytes_padding;
    for (uint32_t i = 0; i < r[0].pool_count; i++)
        if (strcmp(r[0].pools[i].kind, "metadata") && strcmp(r[0].pools[i].kind, "upload") &&
            strcmp(r[0].pools[i].kind, "readback"))
            padding += r[0].pools[i].bytes_padding;
    snprintf(row, sizeof row, "%-8s %-10s %10s %10s %6u %6s %8llu %10s %10s %10s\n", "", "total",
             "", "", r[0].pages, "", (unsigned long long)r[0].allocations,
             human(r[0].bytes_in_use, h[0]), human(padding, h[1]),
             human(r[0].bytes_reserved, h[2]));
    if (!strstr(section, row))
        fail_msg("slot %u lacks the total\n%s in\n%s", slot_of(s[0]), row, section);
    free(section);
    section = slot_section(table, slot_of(s[1]));
    if (strstr(section, " persistent ") || strstr(section, " dedicated "))
        fail_msg("slot %u never held window allocations, yet:\n%s", slot_of(s[1]), section);
    free(section);
    section = slot_section(table, slot_of(s[2]));
    pool_row(&r[2].dedicated, row, sizeof row);
    if (!strstr(section, row) || strstr(section, " persistent "))
        fail_msg("slot %u held only a dedicated allocation, now returned; rows:\n%s", slot_of(s[2]),
                 section);
    free(section);

    /* The budget line: the JSON's numbers, which are the struct's. */
    const char *budget = strstr(json, "\"budget\": {");
    assert_non_null(budget);
    const char *end = strchr(budget + 11, '}');
    uint64_t bytes = json_u64(budget, end, "bytes"), used = json_u64(budget, end, "used_bytes");
    char source[24];
    const char *src = strstr(budget, "\"source\": \"");
    assert_true(src && src < end);
    assert_int_equal(sscanf(src, "\"source\": \"%23[^\"]\"", source), 1);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(bytes, r[k].budget_bytes);
        assert_int_equal(used, r[k].budget_used_bytes);
        assert_string_equal(source, r[k].budget_source);
    }
    assert_true(used >= r[0].bytes_reserved + r[1].bytes_reserved);
    snprintf(row, sizeof row, "\n%-8s %-10s %s of %s used (%s)\n", "budget", "device",
             human(used, h[0]), human(bytes, h[1]), source);
    const char *line = strstr(table, row);
    if (!line) fail_msg("the table lacks the budget line '%s':\n%s", row + 1, table);
    assert_int_equal(line[strlen(row)], 0); /* the last line */
    cubec_string_free(json);
    cubec_string_free(table);

    ASSERT_OK(cubec_buffer_release(d, kept[1]));
    ASSERT_OK(cubec_buffer_release(d, kept[2]));
    ASSERT_OK(cubec_buffer_release(d, plain[0]));
    ASSERT_OK(cubec_buffer_release(d, plain[1]));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_matches_allocations),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_table_rows_match_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
