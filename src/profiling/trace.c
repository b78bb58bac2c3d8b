/* The trace-event writer (see trace.h for the contract).
 *
 * Adding an event must be cheap because the device adds them under its lock: it is an append of
 * a fixed 40-byte record to one array and of the name and arguments to one text arena, with no
 * allocation once both are warm and no formatting. Categories are few ("launch", "copy", ...), so
 * they are interned into a small table and a record holds their index. Everything else (escaping,
 * sorting, the row names) happens when the file is written (trace_write, trace_close).
 *
 * The file opened by trace_open serves the first write; every later write opens the path again
 * with truncation, so each write replaces the whole file and leaves it closed and complete. Sorting
 * is done in place and keeps each record's `seq`, so a later write sorts old and new events into
 * the same order as if they had all been added before the first. */
#include "profiling/trace.h"

#include "base/array.h"
#include "base/file.h"
#include "base/strfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A trace's strings live in one arena; past this size events are dropped like past the event
 * limit, so long argument strings cannot grow memory without bound either. */
#define TRACE_MAX_TEXT_BYTES ((size_t)1 << 30)
/* Categories are meant to be a handful of literals; a caller that formats them would otherwise
 * make the linear intern lookup slow. Events of further categories are dropped. */
#define TRACE_MAX_CATEGORIES 256u
/* The record's `seq` is 32 bits, which is what keeps a record at 40 bytes. */
#define TRACE_LIMIT_MAX ((size_t)UINT32_MAX)

typedef struct trace_event {
    uint64_t track;
    uint64_t ts;  /* ns, the caller's time base */
    uint64_t dur; /* ns; 0 for instants */
    size_t text;  /* arena offset of "name\0args\0" (args "" when none) */
    uint32_t seq; /* order of addition, so sorting keeps equal events in that order */
    uint16_t cat; /* index into categories */
    char ph;      /* 'X' or 'i' */
    uint8_t unused;
} trace_event;

typedef struct track_entry {
    uint64_t stream; /* 0 marks an empty entry: stream 0 is the host and is never stored */
    uint32_t slot;
} track_entry;

struct trace {
    pthread_mutex_t lock;
    FILE *file;     /* opened (and truncated) at trace_open; NULL after the first write */
    char *path;     /* as given, for messages */
    char *resolved; /* the absolute path that later writes open again */
    char *process_name;

    trace_event *events;
    size_t count;
    uint32_t cap; /* at most the limit, which fits 32 bits */
    size_t limit;
    uint64_t dropped;

    char *text;
    size_t text_len;
    uint32_t text_cap; /* at most TRACE_MAX_TEXT_BYTES */

    char *categories[TRACE_MAX_CATEGORIES];
    uint32_t category_count;

    /* Declared stream tracks: open addressing with linear probing, so that callers may declare
     * the track before every event without a cost that grows with the number of streams. */
    track_entry *tracks;
    size_t track_cap; /* a power of two, or 0 */
    size_t track_count;
};

/* "cannot <action> trace file '<path>': <reason>", malloc'd (NULL when out of memory). */
static char *format_error(const char *action, const char *path, int err)
{
    return strfmt("cannot %s trace file '%s': %s", action, path, strerror(err));
}

/* Opens the trace file for a whole write: a regular file, created or truncated, never a FIFO or
 * a device (base/file.h). Returns NULL with *err_message set (malloc'd, or NULL when out of
 * memory) when refused. */
static FILE *open_trace_file(const char *path, char **err_message)
{
    FILE *f = NULL;
    cubec_status st = file_open_output(path, FILE_OUTPUT_TRUNCATE, 0, &f);
    if (st) {
        *err_message = strfmt("trace file %s", cubec_status_message(st));
        cubec_status_free(st);
    }
    return f;
}

static void set_error(char **out_error, char *message)
{
    if (out_error)
        *out_error = message;
    else
        free(message);
}

trace *trace_open(const char *path, char **out_error)
{
    if (out_error) *out_error = NULL;
    if (!path || !*path) {
        set_error(out_error, strdup("trace file path is empty"));
        return NULL;
    }
    trace *t = calloc(1, sizeof *t);
    char *path_copy = strdup(path);
    char *name = strdup("cubec");
    if (!t || !path_copy || !name) {
        free(t);
        free(path_copy);
        free(name);
        set_error(out_error, format_error("open", path, ENOMEM));
        return NULL;
    }
    /* Close-on-exec: a child process started while tracing must not inherit the descriptor. */
    char *why = NULL;
    FILE *file = open_trace_file(path, &why);
    if (!file) {
        free(t);
        free(path_copy);
        free(name);
        set_error(out_error, why);
        return NULL;
    }
    /* Resolved once the file exists, so that a later chdir does not move the trace. Without an
     * absolute path (out of memory) later writes use the path as given. */
    char *resolved = realpath(path, NULL);
    pthread_mutex_init(&t->lock, NULL);
    t->file = file;
    t->path = path_copy;
    t->resolved = resolved;
    t->process_name = name;
    t->limit = TRACE_MAX_EVENTS;
    return t;
}

void trace_set_process_name(trace *t, const char *name)
{
    if (!t || !name) return;
    char *copy = strdup(name);
    if (!copy) return; /* the previous name stays: a trace must never fail the traced work */
    pthread_mutex_lock(&t->lock);
    free(t->process_name);
    t->process_name = copy;
    pthread_mutex_unlock(&t->lock);
}

void trace_set_event_limit(trace *t, size_t max_events)
{
    if (!t) return;
    pthread_mutex_lock(&t->lock);
    t->limit = max_events < TRACE_LIMIT_MAX ? max_events : TRACE_LIMIT_MAX;
    pthread_mutex_unlock(&t->lock);
}

size_t trace_event_count(const trace *t)
{
    if (!t) return 0;
    /* The mutex is part of the object, not of its observable value. */
    trace *mutable_t = (trace *)t;
    pthread_mutex_lock(&mutable_t->lock);
    size_t count = t->count;
    pthread_mutex_unlock(&mutable_t->lock);
    return count;
}

/* ---- tracks ----------------------------------------------------------------------------- */

static size_t track_home(uint64_t stream, size_t cap)
{
    /* Fibonacci hashing: consecutive stream numbers (the common case) spread over the table. */
    return (size_t)((stream * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static track_entry *track_find(const trace *t, uint64_t stream)
{
    if (!t->track_cap) return NULL;
    for (size_t i = track_home(stream, t->track_cap);; i = (i + 1) & (t->track_cap - 1)) {
        if (t->tracks[i].stream == stream) return &t->tracks[i];
        if (t->tracks[i].stream == 0) return NULL;
    }
}

static int tracks_grow(trace *t)
{
    size_t cap = t->track_cap ? t->track_cap * 2 : 64;
    track_entry *tracks = calloc(cap, sizeof *tracks);
    if (!tracks) return -1;
    for (size_t i = 0; i < t->track_cap; i++) {
        if (!t->tracks[i].stream) continue;
        size_t j = track_home(t->tracks[i].stream, cap);
        while (tracks[j].stream)
            j = (j + 1) & (cap - 1);
        tracks[j] = t->tracks[i];
    }
    free(t->tracks);
    t->tracks = tracks;
    t->track_cap = cap;
    return 0;
}

void trace_track(trace *t, uint64_t stream_number, uint32_t slot)
{
    if (!t || stream_number == TRACE_HOST) return;
    uint64_t stream = stream_number + 1; /* the row (see add_event) */
    pthread_mutex_lock(&t->lock);
    /* A table that cannot grow leaves the stream undeclared: its row is then named without the
     * slot, which is better than failing the traced work. */
    if (!track_find(t, stream) &&
        ((t->track_count + 1) * 2 <= t->track_cap || tracks_grow(t) == 0)) {
        size_t i = track_home(stream, t->track_cap);
        while (t->tracks[i].stream)
            i = (i + 1) & (t->track_cap - 1);
        t->tracks[i] = (track_entry){.stream = stream, .slot = slot};
        t->track_count++;
    }
    pthread_mutex_unlock(&t->lock);
}

/* ---- adding events ---------------------------------------------------------------------- */

/* Returns the category's index, or -1 when the table is full or out of memory. */
static int category_index(trace *t, const char *category)
{
    for (uint32_t i = 0; i < t->category_count; i++)
        if (strcmp(t->categories[i], category) == 0) return (int)i;
    if (t->category_count == TRACE_MAX_CATEGORIES) return -1;
    char *copy = strdup(category);
    if (!copy) return -1;
    t->categories[t->category_count] = copy;
    return (int)t->category_count++;
}

static int reserve_events(trace *t)
{
    return array_grow_ex((void **)&t->events, &t->cap, (uint64_t)t->count + 1, sizeof *t->events,
                         1024, (uint32_t)t->limit, realloc);
}

static int reserve_text(trace *t, size_t need)
{
    if (need > TRACE_MAX_TEXT_BYTES - t->text_len) return -1;
    return array_grow_ex((void **)&t->text, &t->text_cap, (uint64_t)t->text_len + need, 1,
                         64 * 1024, (uint32_t)TRACE_MAX_TEXT_BYTES, realloc);
}

static void add_event(trace *t, char ph, uint64_t track, const char *name, const char *category,
                      uint64_t ts_ns, uint64_t dur_ns, const char *args_json)
{
    if (!t) return;
    if (!name) name = "";
    if (!category) category = "";
    if (!args_json) args_json = "";
    size_t name_len = strlen(name);
    size_t args_len = strlen(args_json);

    pthread_mutex_lock(&t->lock);
    int cat = -1;
    /* Whatever cannot be stored is counted, so the file says that the timeline is incomplete. */
    if (t->count >= t->limit || name_len > TRACE_MAX_TEXT_BYTES ||
        args_len > TRACE_MAX_TEXT_BYTES || (cat = category_index(t, category)) < 0 ||
        reserve_events(t) != 0 || reserve_text(t, name_len + args_len + 2) != 0) {
        t->dropped++;
        pthread_mutex_unlock(&t->lock);
        return;
    }
    size_t text = t->text_len;
    memcpy(t->text + text, name, name_len + 1);
    memcpy(t->text + text + name_len + 1, args_json, args_len + 1);
    t->text_len += name_len + args_len + 2;
    /* Internally the host is row 0 and stream n is row n + 1: stream 0 (the `single` policy's
     * stream) must not share the host's row. */
    t->events[t->count] = (trace_event){.track = track == TRACE_HOST ? 0 : track + 1,
                                        .ts = ts_ns,
                                        .dur = dur_ns,
                                        .text = text,
                                        .seq = (uint32_t)t->count,
                                        .cat = (uint16_t)cat,
                                        .ph = ph};
    t->count++;
    pthread_mutex_unlock(&t->lock);
}

void trace_complete(trace *t, uint64_t track, const char *name, const char *category,
                    uint64_t ts_ns, uint64_t dur_ns, const char *args_json)
{
    add_event(t, 'X', track, name, category, ts_ns, dur_ns, args_json);
}

void trace_instant(trace *t, uint64_t track, const char *name, const char *category, uint64_t ts_ns,
                   const char *args_json)
{
    add_event(t, 'i', track, name, category, ts_ns, 0, args_json);
}

/* ---- writing ---------------------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at `s`, or 0 when the byte there does not start one
 * (overlong forms, surrogates and code points past U+10FFFF are invalid). A NUL is never a
 * continuation byte, so this never reads past the string's end. */
static size_t utf8_sequence(const unsigned char *s)
{
#define CONT(b) (((b)&0xc0u) == 0x80u)
    unsigned c = s[0];
    if (c < 0xc2u) return 0;
    if (c < 0xe0u) return CONT(s[1]) ? 2 : 0;
    if (c < 0xf0u) {
        if (!CONT(s[1]) || !CONT(s[2])) return 0;
        if (c == 0xe0u && s[1] < 0xa0u) return 0;
        if (c == 0xedu && s[1] >= 0xa0u) return 0;
        return 3;
    }
    if (c < 0xf5u) {
        if (!CONT(s[1]) || !CONT(s[2]) || !CONT(s[3])) return 0;
        if (c == 0xf0u && s[1] < 0x90u) return 0;
        if (c == 0xf4u && s[1] >= 0x90u) return 0;
        return 4;
    }
    return 0;
#undef CONT
}

/* Writes `s` as a JSON string. Bytes that are not valid UTF-8 become U+FFFD: a strict reader
 * (Python's json, Perfetto) would otherwise refuse the whole file for one odd kernel name. */
static void put_string(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *run = p;
    fputc('"', f);
    while (*p) {
        unsigned c = *p;
        if (c >= 0x20u && c != '"' && c != '\\' && c < 0x80u) {
            p++;
            continue;
        }
        size_t n = c >= 0x80u ? utf8_sequence(p) : 0;
        if (n) {
            p += n;
            continue;
        }
        fwrite(run, 1, (size_t)(p - run), f);
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (c < 0x20u)
                fprintf(f, "\\u%04x", c);
            else
                fputs("\\ufffd", f);
        }
        p++;
        run = p;
    }
    fwrite(run, 1, (size_t)(p - run), f);
    fputc('"', f);
}

/* Microseconds with 3 decimals, formatted from integers so that no rounding happens. */
static void put_us(FILE *f, uint64_t ns)
{
    fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static int event_order(const void *a, const void *b)
{
    const trace_event *x = a, *y = b;
    if (x->track != y->track) return x->track < y->track ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    /* An enclosing event first, as viewers that nest by file order expect. */
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

typedef struct trace_row {
    uint64_t track;
    int64_t slot; /* -1: undeclared stream (or the host) */
} trace_row;

static int row_order(const void *a, const void *b)
{
    const trace_row *x = a, *y = b;
    return x->track < y->track ? -1 : x->track > y->track;
}

/* The rows of the timeline in order: the host, then every declared stream and every track that
 * carries events, by number. `events` must be sorted. Returns NULL when out of memory. */
static trace_row *collect_rows(const trace *t, size_t *out_count)
{
    size_t undeclared = 0;
    for (size_t i = 0; i < t->count; i++) {
        uint64_t track = t->events[i].track;
        if (track != 0 && (i == 0 || track != t->events[i - 1].track) && !track_find(t, track))
            undeclared++;
    }
    size_t count = 0;
    trace_row *rows = malloc((1 + t->track_count + undeclared) * sizeof *rows);
    if (!rows) return NULL;
    rows[count++] = (trace_row){.track = 0, .slot = -1};
    for (size_t i = 0; i < t->track_cap; i++)
        if (t->tracks[i].stream)
            rows[count++] = (trace_row){.track = t->tracks[i].stream, .slot = t->tracks[i].slot};
    for (size_t i = 0; i < t->count; i++) {
        uint64_t track = t->events[i].track;
        if (track != 0 && (i == 0 || track != t->events[i - 1].track) && !track_find(t, track))
            rows[count++] = (trace_row){.track = track, .slot = -1};
    }
    qsort(rows, count, sizeof *rows, row_order);
    *out_count = count;
    return rows;
}

static void put_separator(FILE *f, int *first)
{
    fputs(*first ? "\n" : ",\n", f);
    *first = 0;
}

static void write_metadata(FILE *f, const trace *t, const trace_row *rows, size_t row_count,
                           int *first)
{
    put_separator(f, first);
    fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":", f);
    put_string(f, t->process_name);
    fputs("}}", f);
    for (size_t i = 0; i < row_count; i++) {
        char name[64];
        if (rows[i].track == 0)
            snprintf(name, sizeof name, "host");
        else if (rows[i].slot < 0)
            snprintf(name, sizeof name, "stream %" PRIu64, rows[i].track - 1);
        else
            snprintf(name, sizeof name, "stream %" PRIu64 " (slot %" PRId64 ")", rows[i].track - 1,
                     rows[i].slot);
        put_separator(f, first);
        fprintf(f,
                "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%" PRIu64
                ",\"args\":{\"name\":",
                rows[i].track);
        put_string(f, name);
        fputs("}}", f);
        /* Chrome orders rows by this index; the host is 0 and comes first. */
        put_separator(f, first);
        fprintf(f,
                "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%" PRIu64
                ",\"args\":{\"sort_index\":%zu}}",
                rows[i].track, i);
    }
}

static void write_events(FILE *f, const trace *t, uint64_t base, int *first)
{
    for (size_t i = 0; i < t->count; i++) {
        const trace_event *e = &t->events[i];
        const char *name = t->text + e->text;
        const char *args = name + strlen(name) + 1;
        put_separator(f, first);
        fputs("{\"name\":", f);
        put_string(f, name);
        fputs(",\"cat\":", f);
        put_string(f, t->categories[e->cat]);
        if (e->ph == 'X')
            fputs(",\"ph\":\"X\"", f);
        else
            fputs(",\"ph\":\"i\",\"s\":\"t\"", f);
        fprintf(f, ",\"pid\":1,\"tid\":%" PRIu64 ",\"ts\":", e->track);
        put_us(f, e->ts - base);
        if (e->ph == 'X') {
            fputs(",\"dur\":", f);
            put_us(f, e->dur);
        }
        if (*args) fprintf(f, ",\"args\":{%s}", args);
        fputc('}', f);
    }
}

static void trace_free(trace *t)
{
    pthread_mutex_destroy(&t->lock);
    if (t->file) fclose(t->file);
    free(t->path);
    free(t->resolved);
    free(t->process_name);
    free(t->events);
    free(t->text);
    for (uint32_t i = 0; i < t->category_count; i++)
        free(t->categories[i]);
    free(t->tracks);
    free(t);
}

/* Writes the whole file; the caller holds the lock. Returns 0, or an errno value with *action
 * ("create" or "write") saying what failed, or with the whole message in *message where the file
 * was refused. */
static int write_locked(trace *t, const char **action, char **message)
{
    *action = "write";
    /* A trace with no events has no array: qsort's pointer must not be NULL even for 0 items. */
    if (t->count) qsort(t->events, t->count, sizeof *t->events, event_order);
    uint64_t base = UINT64_MAX;
    for (size_t i = 0; i < t->count; i++)
        if (t->events[i].ts < base) base = t->events[i].ts;
    if (t->count == 0) base = 0;

    size_t row_count = 0;
    trace_row *rows = collect_rows(t, &row_count);
    if (!rows) return ENOMEM;

    FILE *f = t->file;
    t->file = NULL;
    if (!f) {
        /* Something else may have been put at the path since: it is checked again. */
        char *why = NULL;
        f = open_trace_file(t->resolved ? t->resolved : t->path, &why);
        if (!f) {
            free(rows);
            *action = "create";
            *message = why;
            return EINVAL;
        }
    }

    /* Large writes: a full trace is hundreds of megabytes. The stream is fresh (nothing was
     * read or written on it yet), which setvbuf requires. */
    size_t buffer_size = 1 << 20;
    char *buffer = malloc(buffer_size);
    if (buffer) setvbuf(f, buffer, _IOFBF, buffer_size);

    errno = 0;
    int first = 1;
    fputs("{\"traceEvents\":[", f);
    write_metadata(f, t, rows, row_count, &first);
    write_events(f, t, base, &first);
    fprintf(f,
            "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":\"cubec\","
            "\"time_base_ns\":%" PRIu64 ",\"events\":%zu,\"dropped_events\":%" PRIu64
            ",\"event_limit\":%zu}}\n",
            base, t->count, t->dropped, t->limit);

    int err = 0;
    if (fflush(f) != 0 || ferror(f)) err = errno ? errno : EIO;
    if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
    free(buffer);
    free(rows);
    return err;
}

int trace_write(trace *t, char **out_error)
{
    if (out_error) *out_error = NULL;
    if (!t) return 0;
    const char *action = "write";
    char *message = NULL;
    pthread_mutex_lock(&t->lock);
    int err = write_locked(t, &action, &message);
    pthread_mutex_unlock(&t->lock);
    if (err) set_error(out_error, message ? message : format_error(action, t->path, err));
    return err ? -1 : 0;
}

void trace_discard(trace *t)
{
    if (t) trace_free(t);
}

int trace_close(trace *t, char **out_error)
{
    int rc = trace_write(t, out_error);
    if (t) trace_free(t);
    return rc;
}
