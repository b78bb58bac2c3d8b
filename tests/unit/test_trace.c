/* The trace-event writer: the file it writes is read back with a small strict JSON scanner (no
 * JSON library is a dependency) and compared with the events the test added: names round-trip
 * through the escaping, timestamps are the added ones made relative to the earliest, rows are
 * named and ordered, and what is over the cap is counted rather than lost silently. */
#include "test_util.h"

#include "profiling/trace.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a strict JSON scanner that keeps what the checks need ------------------------------ */

typedef struct scanned_event {
    char name[128];
    char cat[32];
    char ph[4];
    double pid, tid, ts, dur;
    int has_pid, has_tid, has_ts, has_dur;
    char args_name[128]; /* args.name of metadata events */
    double args_sort_index, args_slot;
    int has_args_sort_index, has_args_slot;
} scanned_event;

typedef struct scanned_trace {
    scanned_event *events;
    size_t count;
    size_t cap;
    char display_time_unit[16];
    double other_events, other_dropped;
    int has_other_events, has_other_dropped;
} scanned_trace;

typedef struct scanner {
    const char *p;
    const char *end;
} scanner;

static void skip_ws(scanner *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

static int expect(scanner *s, char c)
{
    skip_ws(s);
    if (s->p >= s->end || *s->p != c) return -1;
    s->p++;
    return 0;
}

static size_t put_utf8(char *out, unsigned long cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static int hex4(scanner *s, unsigned long *out)
{
    if (s->end - s->p < 4) return -1;
    unsigned long v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *s->p++;
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return -1;
        v = v * 16 + (unsigned long)d;
    }
    *out = v;
    return 0;
}

/* Reads a string, unescaped, into out (NULL: only checks it). Raw control characters are
 * refused, as JSON requires. */
static int scan_string(scanner *s, char *out, size_t cap)
{
    if (expect(s, '"') != 0) return -1;
    size_t n = 0;
    char tmp[4];
    for (;;) {
        if (s->p >= s->end) return -1;
        unsigned char c = (unsigned char)*s->p++;
        size_t len = 1;
        tmp[0] = (char)c;
        if (c == '"') break;
        if (c < 0x20) return -1;
        if (c == '\\') {
            if (s->p >= s->end) return -1;
            char e = *s->p++;
            switch (e) {
            case '"': tmp[0] = '"'; break;
            case '\\': tmp[0] = '\\'; break;
            case '/': tmp[0] = '/'; break;
            case 'n': tmp[0] = '\n'; break;
            case 'r': tmp[0] = '\r'; break;
            case 't': tmp[0] = '\t'; break;
            case 'b': tmp[0] = '\b'; break;
            case 'f': tmp[0] = '\f'; break;
            case 'u': {
                unsigned long cp;
                if (hex4(s, &cp) != 0) return -1;
                if (cp >= 0xd800 && cp < 0xdc00) {
                    unsigned long lo;
                    if (s->end - s->p < 2 || s->p[0] != '\\' || s->p[1] != 'u') return -1;
                    s->p += 2;
                    if (hex4(s, &lo) != 0 || lo < 0xdc00 || lo >= 0xe000) return -1;
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                }
                len = put_utf8(tmp, cp);
                break;
            }
            default: return -1;
            }
        }
        if (out) {
            if (n + len >= cap) return -1; /* the test's names all fit */
            memcpy(out + n, tmp, len);
        }
        n += len;
    }
    if (out) out[n] = 0;
    return 0;
}

/* JSON's number grammar, then strtod. */
static int scan_number(scanner *s, double *out)
{
    skip_ws(s);
    const char *start = s->p;
    const char *p = s->p;
    if (p < s->end && *p == '-') p++;
    if (p >= s->end) return -1;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (p < s->end && *p >= '0' && *p <= '9')
            p++;
    else
        return -1;
    if (p < s->end && *p == '.') {
        p++;
        if (p >= s->end || *p < '0' || *p > '9') return -1;
        while (p < s->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < s->end && (*p == '+' || *p == '-')) p++;
        if (p >= s->end || *p < '0' || *p > '9') return -1;
        while (p < s->end && *p >= '0' && *p <= '9')
            p++;
    }
    char buf[64];
    if ((size_t)(p - start) >= sizeof buf) return -1;
    memcpy(buf, start, (size_t)(p - start));
    buf[p - start] = 0;
    if (out) *out = strtod(buf, NULL);
    s->p = p;
    return 0;
}

static int scan_value(scanner *s, int depth);

/* Walks an object, calling `member` for each key with the scanner at its value; `member`
 * returns 1 when it consumed the value, 0 to have it skipped, -1 on error. */
typedef int (*member_fn)(scanner *s, const char *key, void *ctx, int depth);

static int scan_object(scanner *s, member_fn member, void *ctx, int depth)
{
    if (depth > 32 || expect(s, '{') != 0) return -1;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return 0;
    }
    for (;;) {
        char key[64];
        if (scan_string(s, key, sizeof key) != 0 || expect(s, ':') != 0) return -1;
        int r = member ? member(s, key, ctx, depth + 1) : 0;
        if (r < 0) return -1;
        if (r == 0 && scan_value(s, depth + 1) != 0) return -1;
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        return expect(s, '}');
    }
}

static int scan_array(scanner *s, int (*element)(scanner *, void *, int), void *ctx, int depth)
{
    if (depth > 32 || expect(s, '[') != 0) return -1;
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return 0;
    }
    for (;;) {
        if ((element ? element(s, ctx, depth + 1) : scan_value(s, depth + 1)) != 0) return -1;
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        return expect(s, ']');
    }
}

static int scan_literal(scanner *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return -1;
    s->p += n;
    return 0;
}

static int scan_value(scanner *s, int depth)
{
    skip_ws(s);
    if (s->p >= s->end) return -1;
    switch (*s->p) {
    case '{': return scan_object(s, NULL, NULL, depth);
    case '[': return scan_array(s, NULL, NULL, depth);
    case '"': return scan_string(s, NULL, 0);
    case 't': return scan_literal(s, "true");
    case 'f': return scan_literal(s, "false");
    case 'n': return scan_literal(s, "null");
    default: return scan_number(s, NULL);
    }
}

static int args_member(scanner *s, const char *key, void *ctx, int depth)
{
    (void)depth;
    scanned_event *e = ctx;
    skip_ws(s);
    if (strcmp(key, "name") == 0 && s->p < s->end && *s->p == '"')
        return scan_string(s, e->args_name, sizeof e->args_name) == 0 ? 1 : -1;
    if (strcmp(key, "sort_index") == 0) {
        e->has_args_sort_index = 1;
        return scan_number(s, &e->args_sort_index) == 0 ? 1 : -1;
    }
    if (strcmp(key, "slot") == 0) {
        e->has_args_slot = 1;
        return scan_number(s, &e->args_slot) == 0 ? 1 : -1;
    }
    return 0;
}

static int event_member(scanner *s, const char *key, void *ctx, int depth)
{
    scanned_event *e = ctx;
    struct {
        const char *key;
        double *value;
        int *has;
    } numbers[] = {{"pid", &e->pid, &e->has_pid},
                   {"tid", &e->tid, &e->has_tid},
                   {"ts", &e->ts, &e->has_ts},
                   {"dur", &e->dur, &e->has_dur}};
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
        if (strcmp(key, numbers[i].key) == 0) {
            *numbers[i].has = 1;
            return scan_number(s, numbers[i].value) == 0 ? 1 : -1;
        }
    if (strcmp(key, "name") == 0) return scan_string(s, e->name, sizeof e->name) == 0 ? 1 : -1;
    if (strcmp(key, "cat") == 0) return scan_string(s, e->cat, sizeof e->cat) == 0 ? 1 : -1;
    if (strcmp(key, "ph") == 0) return scan_string(s, e->ph, sizeof e->ph) == 0 ? 1 : -1;
    if (strcmp(key, "args") == 0) return scan_object(s, args_member, e, depth) == 0 ? 1 : -1;
    return 0;
}

static int event_element(scanner *s, void *ctx, int depth)
{
    scanned_trace *t = ctx;
    if (t->count == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->events = realloc(t->events, t->cap * sizeof *t->events);
        assert_non_null(t->events);
    }
    scanned_event *e = &t->events[t->count++];
    memset(e, 0, sizeof *e);
    return scan_object(s, event_member, e, depth);
}

static int other_member(scanner *s, const char *key, void *ctx, int depth)
{
    (void)depth;
    scanned_trace *t = ctx;
    if (strcmp(key, "events") == 0) {
        t->has_other_events = 1;
        return scan_number(s, &t->other_events) == 0 ? 1 : -1;
    }
    if (strcmp(key, "dropped_events") == 0) {
        t->has_other_dropped = 1;
        return scan_number(s, &t->other_dropped) == 0 ? 1 : -1;
    }
    return 0;
}

static int top_member(scanner *s, const char *key, void *ctx, int depth)
{
    scanned_trace *t = ctx;
    if (strcmp(key, "traceEvents") == 0)
        return scan_array(s, event_element, t, depth) == 0 ? 1 : -1;
    if (strcmp(key, "displayTimeUnit") == 0)
        return scan_string(s, t->display_time_unit, sizeof t->display_time_unit) == 0 ? 1 : -1;
    if (strcmp(key, "otherData") == 0) return scan_object(s, other_member, t, depth) == 0 ? 1 : -1;
    return 0;
}

/* Reads and scans the whole file; fails the test unless it is one well-formed JSON object. */
static scanned_trace read_trace(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    scanned_trace t = {0};
    scanner s = {text, text + size};
    int r = scan_object(&s, top_member, &t, 0);
    if (r != 0) fail_msg("%s is not well-formed JSON near offset %ld", path, (long)(s.p - text));
    skip_ws(&s);
    if (s.p != s.end) fail_msg("%s has text after the JSON object", path);
    free(text);
    return t;
}

static const scanned_event *find_named(const scanned_trace *t, const char *ph, const char *name)
{
    const scanned_event *found = NULL;
    for (size_t i = 0; i < t->count; i++)
        if (strcmp(t->events[i].ph, ph) == 0 && strcmp(t->events[i].name, name) == 0) {
            if (found) fail_msg("event \"%s\" appears twice", name);
            found = &t->events[i];
        }
    return found;
}

static const scanned_event *find_metadata(const scanned_trace *t, const char *name, double tid)
{
    const scanned_event *found = NULL;
    for (size_t i = 0; i < t->count; i++)
        if (strcmp(t->events[i].ph, "M") == 0 && strcmp(t->events[i].name, name) == 0 &&
            t->events[i].tid == tid) {
            if (found) fail_msg("metadata %s for tid %g appears twice", name, tid);
            found = &t->events[i];
        }
    return found;
}

static size_t count_phase(const scanned_trace *t, const char *ph)
{
    size_t n = 0;
    for (size_t i = 0; i < t->count; i++)
        n += strcmp(t->events[i].ph, ph) == 0;
    return n;
}

/* Every non-metadata event has a row name, and timestamps never go back within a row. */
static void check_rows_ordered(const scanned_trace *t)
{
    double named_tid = -1; /* the last row whose name was checked: rows are contiguous */
    for (size_t i = 0; i < t->count; i++) {
        const scanned_event *e = &t->events[i];
        if (strcmp(e->ph, "M") == 0) continue;
        assert_true(e->has_pid && e->has_tid && e->has_ts);
        assert_true(e->ts >= 0);
        if (strcmp(e->ph, "X") == 0) assert_true(e->has_dur && e->dur >= 0);
        if (e->tid != named_tid) {
            if (!find_metadata(t, "thread_name", e->tid)) fail_msg("row %g has no name", e->tid);
            named_tid = e->tid;
        }
        for (size_t j = i + 1; j < t->count; j++) {
            const scanned_event *later = &t->events[j];
            if (strcmp(later->ph, "M") == 0 || later->tid != e->tid) continue;
            if (later->ts < e->ts)
                fail_msg("row %g: \"%s\" at %g us follows \"%s\" at %g us", e->tid, later->name,
                         later->ts, e->name, e->ts);
            break; /* the next event of the same row is enough: order is transitive */
        }
    }
}

static char *temp_path(const char *what)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/cubec_test_trace_%s_%d.json", test_tmp_dir(), what,
             (int)getpid());
    return path;
}

/* ---- tests ----------------------------------------------------------------------------- */

typedef struct added {
    uint64_t track;
    const char *name;
    const char *category;
    uint64_t ts_ns;
    uint64_t dur_ns;
    int instant;
    const char *args;
} added;

/* Added out of order on purpose: the writer must sort. The earliest timestamp is 1000 ns. */
static const added added_events[] = {
    {12, "k\"quote\"", "launch", 5000, 1000, 0, "\"grid\":[4,1,1],\"slot\":0"},
    {TRACE_HOST, "back\\slash", "compile", 1200, 300, 0, NULL},
    {7, "line\nbreak\ttab", "launch", 3000, 500, 0, "\"slot\":3"},
    {7, "plain", "launch", 2000, 500, 0, ""},
    {TRACE_HOST, "submit", "submit", 1000, 100, 0, "\"batch\":1"},
    {12, "ctl\x01\x1f", "launch", 4000, 10, 0, NULL},
    {7, "marker", "sync", 2600, 0, 1, NULL},
    {TRACE_HOST, "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x9a\x80", "write", 1500, 2, 0, NULL},
    /* A child added before its parent, both starting at 6000: the parent must come first. */
    {7, "child", "copy", 6000, 500, 0, NULL},
    {7, "parent", "profile", 6000, 2000, 0, NULL},
    {TRACE_HOST, "wait", "sync", 9000, 0, 1, "\"value\":17"},
};

static void add_all(trace *t, const added *events, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const added *a = &events[i];
        if (a->instant)
            trace_instant(t, a->track, a->name, a->category, a->ts_ns, a->args);
        else
            trace_complete(t, a->track, a->name, a->category, a->ts_ns, a->dur_ns, a->args);
    }
}

static void test_round_trip(void **state)
{
    (void)state;
    const char *path = temp_path("round_trip");
    char *error = NULL;
    trace *t = trace_open(path, &error);
    assert_non_null(t);
    assert_null(error);
    trace_set_process_name(t, "cubec: \"test\" device (0)");
    trace_track(t, 7, 3);
    trace_track(t, 7, 3); /* idempotent: one row */
    trace_track(t, 12, 0);
    trace_track(t, TRACE_HOST, 5); /* the host is always there and keeps its name */
    size_t n = sizeof added_events / sizeof added_events[0];
    add_all(t, added_events, n);
    assert_int_equal(trace_event_count(t), n);
    assert_int_equal(trace_close(t, &error), 0);
    assert_null(error);

    scanned_trace s = read_trace(path);
    assert_string_equal(s.display_time_unit, "ns");
    assert_true(s.has_other_dropped && s.other_dropped == 0);
    assert_true(s.has_other_events && s.other_events == (double)n);

    /* Each added event, found by its name after unescaping, is where and when it was added. */
    size_t complete = 0, instant = 0;
    for (size_t i = 0; i < n; i++) {
        const added *a = &added_events[i];
        const scanned_event *e = find_named(&s, a->instant ? "i" : "X", a->name);
        if (!e) fail_msg("event %zu (\"%s\") did not round-trip", i, a->name);
        assert_string_equal(e->cat, a->category);
        assert_true(e->pid == 1 && e->tid == (a->track == TRACE_HOST ? 0.0 : (double)a->track + 1));
        assert_true(fabs(e->ts - (double)(a->ts_ns - 1000) / 1000.0) < 1e-9);
        if (a->instant) {
            assert_false(e->has_dur);
            instant++;
        } else {
            assert_true(fabs(e->dur - (double)a->dur_ns / 1000.0) < 1e-9);
            complete++;
        }
    }
    assert_int_equal(count_phase(&s, "X"), complete);
    assert_int_equal(count_phase(&s, "i"), instant);
    check_rows_ordered(&s);

    /* The caller's arguments arrive as an object. */
    assert_true(find_named(&s, "X", "k\"quote\"")->has_args_slot);
    assert_true(find_named(&s, "X", "k\"quote\"")->args_slot == 0);
    assert_true(find_named(&s, "X", "line\nbreak\ttab")->args_slot == 3);

    /* Equal starts: the enclosing event first. */
    assert_true(find_named(&s, "X", "parent") < find_named(&s, "X", "child"));

    /* Rows: named, host first. */
    const scanned_event *process = find_metadata(&s, "process_name", 0);
    assert_non_null(process);
    assert_string_equal(process->args_name, "cubec: \"test\" device (0)");
    const char *row_names[] = {"host", "stream 7 (slot 3)", "stream 12 (slot 0)"};
    const double row_tids[] = {0, 8, 13}; /* stream n is tid n + 1 */
    for (size_t i = 0; i < 3; i++) {
        const scanned_event *row = find_metadata(&s, "thread_name", row_tids[i]);
        assert_non_null(row);
        assert_string_equal(row->args_name, row_names[i]);
        const scanned_event *sort = find_metadata(&s, "thread_sort_index", row_tids[i]);
        assert_non_null(sort);
        assert_true(sort->has_args_sort_index && sort->args_sort_index == (double)i);
    }
    assert_int_equal(count_phase(&s, "M"), 1 + 2 * 3);
    free(s.events);
    unlink(path);
}

/* Invalid UTF-8 becomes U+FFFD so that strict readers still take the file. */
static void test_invalid_utf8(void **state)
{
    (void)state;
    const char *path = temp_path("utf8");
    trace *t = trace_open(path, NULL);
    assert_non_null(t);
    trace_complete(t, TRACE_HOST, "bad\xff\xc0\x80 \xed\xa0\x80 \xe2\x82", "launch", 10, 1, NULL);
    assert_int_equal(trace_close(t, NULL), 0);
    scanned_trace s = read_trace(path);
    const char *expected =
        "bad\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
        "\xef\xbf\xbd\xef\xbf\xbd";
    assert_non_null(find_named(&s, "X", expected));
    free(s.events);
    unlink(path);
}

/* Past the cap events are counted, and the file says how many; an undeclared track still gets a
 * named row. */
static void test_cap_and_undeclared_track(void **state)
{
    (void)state;
    const char *path = temp_path("cap");
    trace *t = trace_open(path, NULL);
    assert_non_null(t);
    trace_set_event_limit(t, 5);
    for (uint64_t i = 0; i < 8; i++)
        trace_complete(t, 99, "k", "launch", 1000 * (8 - i), 10, NULL);
    assert_int_equal(trace_event_count(t), 5);
    assert_int_equal(trace_close(t, NULL), 0);
    scanned_trace s = read_trace(path);
    assert_int_equal(count_phase(&s, "X"), 5);
    assert_true(s.has_other_dropped && s.other_dropped == 3);
    const scanned_event *row = find_metadata(&s, "thread_name", 100); /* stream 99 */
    assert_non_null(row);
    assert_string_equal(row->args_name, "stream 99");
    assert_non_null(find_metadata(&s, "thread_name", 0));
    check_rows_ordered(&s);
    free(s.events);
    unlink(path);
}

/* Checks the file against the first `n` of added_events: every one there, nothing else. */
static void check_holds_first(const char *path, size_t n)
{
    scanned_trace s = read_trace(path);
    assert_true(s.has_other_events && s.other_events == (double)n);
    size_t complete = 0, instant = 0;
    for (size_t i = 0; i < n; i++) {
        const added *a = &added_events[i];
        const scanned_event *e = find_named(&s, a->instant ? "i" : "X", a->name);
        if (!e) fail_msg("%s: event %zu (\"%s\") is missing", path, i, a->name);
        assert_string_equal(e->cat, a->category);
        assert_true(e->tid == (a->track == TRACE_HOST ? 0.0 : (double)a->track + 1));
        complete += !a->instant;
        instant += a->instant;
    }
    assert_int_equal(count_phase(&s, "X"), complete);
    assert_int_equal(count_phase(&s, "i"), instant);
    check_rows_ordered(&s);
    free(s.events);
}

/* trace_write writes what was recorded so far and keeps it: a later write, and the close, write
 * everything, each replacing the file (a shorter content leaves nothing of the longer one). */
static void test_write_keeps_events(void **state)
{
    (void)state;
    const char *path = temp_path("rewrite");
    trace *t = trace_open(path, NULL);
    assert_non_null(t);
    /* A long process name first, a short one later: the second file is the shorter one. */
    char long_name[100]; /* the scanner keeps names shorter than 128 bytes */
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    trace_set_process_name(t, long_name);
    trace_track(t, 7, 3);
    size_t n = sizeof added_events / sizeof added_events[0];
    size_t first = 4, second = 8;
    add_all(t, added_events, first);

    char *error = (char *)"untouched";
    assert_int_equal(trace_write(t, &error), 0);
    assert_null(error);
    check_holds_first(path, first);

    trace_set_process_name(t, "short");
    add_all(t, added_events + first, second - first);
    assert_int_equal(trace_event_count(t), second);
    assert_int_equal(trace_write(t, NULL), 0);
    check_holds_first(path, second);
    scanned_trace s = read_trace(path);
    assert_string_equal(find_metadata(&s, "process_name", 0)->args_name, "short");
    free(s.events);

    add_all(t, added_events + second, n - second);
    assert_int_equal(trace_close(t, &error), 0);
    assert_null(error);
    check_holds_first(path, n);
    unlink(path);
}

/* A write after the first opens the path again: it fails while the path cannot be created,
 * naming it, keeps the events, and a later write succeeds with all of them. The path is relative
 * and the working directory changes in between: the file stays where it was created. */
static void test_write_failure_keeps_events(void **state)
{
    (void)state;
    char dir[4096], cwd[4096], path[8192];
    snprintf(dir, sizeof dir, "%s/cubec_test_trace_dir_%d", test_tmp_dir(), (int)getpid());
    snprintf(path, sizeof path, "%s/trace.json", dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    trace *t = trace_open("trace.json", NULL);
    assert_int_equal(chdir("/"), 0);
    assert_non_null(t);
    add_all(t, added_events, 3);
    assert_int_equal(trace_write(t, NULL), 0);
    check_holds_first(path, 3);

    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
    add_all(t, added_events + 3, 2);
    char *error = NULL;
    assert_int_equal(trace_write(t, &error), -1);
    assert_non_null(error);
    assert_non_null(strstr(error, "trace.json"));
    free(error);

    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(trace_write(t, NULL), 0);
    check_holds_first(path, 5);
    assert_int_equal(trace_close(t, NULL), 0);
    check_holds_first(path, 5);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(chdir(cwd), 0);
}

static void test_open_failure(void **state)
{
    (void)state;
    const char *path = "/nonexistent-cubec-dir/sub/trace.json";
    char *error = NULL;
    assert_null(trace_open(path, &error));
    assert_non_null(error);
    assert_non_null(strstr(error, path));
    free(error);
    assert_null(trace_open(path, NULL)); /* no message wanted: nothing leaks */
    error = NULL;
    assert_null(trace_open("", &error));
    assert_non_null(error);
    free(error);
}

/* A file that takes no more bytes (a file-size limit, so that the trace is a regular file as
 * trace_open requires): the failure surfaces at each write and at close, naming the path. */
static void test_write_failure(void **state)
{
    (void)state;
    const char *path = temp_path("full");
    trace *t = trace_open(path, NULL);
    assert_non_null(t);
    for (int i = 0; i < 1000; i++)
        trace_complete(t, 1, "k", "launch", (uint64_t)i, 1, NULL);
    /* Writes past 4 KiB fail with EFBIG instead of raising SIGXFSZ. */
    struct rlimit saved;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
    void (*saved_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = {4096, saved.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    char *error = NULL;
    int first = trace_write(t, &error); /* the file opened by trace_open */
    char *error2 = NULL;
    int second = trace_close(t, &error2); /* the path opened again */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
    signal(SIGXFSZ, saved_handler);
    assert_int_equal(first, -1);
    assert_non_null(error);
    assert_non_null(strstr(error, path));
    free(error);
    assert_int_equal(second, -1);
    assert_non_null(error2);
    assert_non_null(strstr(error2, path));
    free(error2);
    unlink(path);
}

/* What is not a regular file is refused at once, naming the path and what it is, and nothing is
 * written to it: a FIFO (opening it for writing would wait for a reader), a character device, a
 * directory. */
static void test_open_refuses_what_is_not_a_file(void **state)
{
    (void)state;
    char fifo[4096];
    snprintf(fifo, sizeof fifo, "%s", temp_path("fifo")); /* temp_path reuses its buffer */
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", temp_path("dir"));
    rmdir(dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    const struct {
        const char *path, *kind;
    } cases[] = {
        {fifo, "is a FIFO"}, {"/dev/null", "is a character device"}, {dir, "is a directory"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *error = NULL;
        assert_null(trace_open(cases[i].path, &error));
        assert_non_null(error);
        if (!strstr(error, cases[i].path) || !strstr(error, cases[i].kind))
            fail_msg("trace_open(%s): '%s' does not say '%s'", cases[i].path, error, cases[i].kind);
        free(error);
    }
    struct stat st;
    assert_int_equal(stat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode)); /* left as it was */
    assert_int_equal(unlink(fifo), 0);
    assert_int_equal(rmdir(dir), 0);
}

static void test_null_trace(void **state)
{
    (void)state;
    trace_set_process_name(NULL, "x");
    trace_track(NULL, 1, 1);
    trace_complete(NULL, 0, "x", "launch", 1, 1, NULL);
    trace_instant(NULL, 0, "x", "launch", 1, NULL);
    assert_int_equal(trace_event_count(NULL), 0);
    char *error = (char *)"untouched";
    assert_int_equal(trace_write(NULL, &error), 0);
    assert_null(error);
    error = (char *)"untouched";
    assert_int_equal(trace_close(NULL, &error), 0);
    assert_null(error);
}

enum { THREADS = 4, PER_THREAD = 10000 };

typedef struct worker {
    trace *t;
    uint64_t stream;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        trace_track(w->t, w->stream, (uint32_t)w->stream % 3);
        /* Newest first: the order in the file must come from sorting. */
        trace_complete(w->t, w->stream, "k", "launch", 100000000 - i * 10, 5, "\"i\":1");
    }
    return NULL;
}

/* Several devices may trace into one file at once. */
static void test_threads(void **state)
{
    (void)state;
    const char *path = temp_path("threads");
    trace *t = trace_open(path, NULL);
    assert_non_null(t);
    pthread_t threads[THREADS];
    worker workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (worker){t, (uint64_t)i + 1};
        assert_int_equal(pthread_create(&threads[i], NULL, worker_main, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    assert_int_equal(trace_event_count(t), THREADS * PER_THREAD);
    assert_int_equal(trace_close(t, NULL), 0);
    scanned_trace s = read_trace(path);
    assert_int_equal(count_phase(&s, "X"), THREADS * PER_THREAD);
    assert_int_equal(count_phase(&s, "M"), 1 + 2 * (THREADS + 1));
    check_rows_ordered(&s);
    free(s.events);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_cap_and_undeclared_track),
        cmocka_unit_test(test_write_keeps_events),
        cmocka_unit_test(test_write_failure_keeps_events),
        cmocka_unit_test(test_open_failure),
        cmocka_unit_test(test_write_failure),
        cmocka_unit_test(test_open_refuses_what_is_not_a_file),
        cmocka_unit_test(test_null_trace),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
