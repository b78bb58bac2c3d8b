/* Configuration loading (see config.h). Every option is a row of `options` below; applying a value
 * from the ini file or the environment goes through apply(), which parses and range-checks it by
 * the row's kind, so no option has a path of its own that could skip a check.
 *
 * The ini file is read whole (bounded, non-blocking: base/file.h) and handed to inih as a string;
 * the handler records the first bad value and inih keeps going; the error is returned after
 * parsing so the message can name the file and line. */
#include "base/config.h"

#include "base/features.h"
#include "base/file.h"
#include "base/hash.h"
#include "gpu/gpu_backends.h"

#include <errno.h>
#include <ini.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct parse_state {
    cubec_config *config;
    const char *path; /* the ini file */
    cubec_status error;
    /* The string reader's position: inih reads line by line, so the line last handed to it is
     * the one whose key the handler sees (its own line numbers reach only syntax errors). */
    const char *next;
    int line;
} parse_state;

static int parse_bool(const char *v, int *out)
{
    if (!strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "on") ||
        !strcasecmp(v, "yes")) {
        *out = 1;
        return 1;
    }
    if (!strcasecmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "off") ||
        !strcasecmp(v, "no")) {
        *out = 0;
        return 1;
    }
    return 0;
}

/* A decimal integer in [min, max]: an optional '-' and digits, nothing else (no spaces, no '+',
 * no exponent, no hex), so that "4e9" or " 32" is refused rather than read as a prefix. */
static int parse_int(const char *v, int64_t min, int64_t max, int64_t *out)
{
    const char *digits = v[0] == '-' ? v + 1 : v;
    if (!*digits) return 0;
    for (const char *p = digits; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x < min || x > max) return 0;
    *out = x;
    return 1;
}

/* Parses "memory=debug,compile=info" (a bare level sets every subsystem) into levels, which it
 * resets first: the key's value replaces an earlier one, as for every key. On a bad entry returns
 * 0 with the entry in `entry` and what it should have been in *why. */
static int parse_log_subsystems(const char *v, int *levels, char *entry, size_t entry_cap,
                                const char **why)
{
    for (int i = 0; i < LOG_SYS_COUNT; i++)
        levels[i] = -1;
    const char *p = v;
    while (*p == ' ' || *p == '\t')
        p++;
    if (!*p) return 1;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n && (*p == ' ' || *p == '\t'))
            p++, n--;
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        snprintf(entry, entry_cap, "%.*s", (int)n, p);
        if (n == 0 || n >= entry_cap) {
            *why = "subsystem=level or a level";
            return 0;
        }
        char *eq = strchr(entry, '=');
        if (!eq) {
            int l = log_level_parse(entry);
            if (l < 0) {
                *why = "a level (off|error|warn|info|summary|debug) or subsystem=level";
                return 0;
            }
            for (int i = 0; i < LOG_SYS_COUNT; i++)
                levels[i] = l;
        } else {
            *eq = 0;
            int s = log_subsystem_parse(entry);
            int l = log_level_parse(eq + 1);
            *eq = '=';
            if (s < 0) {
                *why = "a subsystem of device|compile|memory|streams|profiling|validation";
                return 0;
            }
            if (l < 0) {
                *why = "a level of off|error|warn|info|summary|debug";
                return 0;
            }
            levels[s] = l;
        }
        if (!end) return 1;
        p = end + 1;
    }
}

/* Parses "float64, storage_buffer_16bit" (cubec_feature short names; empty: none) into bits. On
 * a bad entry returns 0 with the entry in `entry`. */
static int parse_features(const char *v, uint32_t *out, char *entry, size_t entry_cap)
{
    uint32_t bits = 0;
    const char *p = v;
    while (*p == ' ' || *p == '\t')
        p++;
    /* A blank value names nothing; otherwise every entry, the last one too, must be a name. */
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n && (*p == ' ' || *p == '\t'))
            p++, n--;
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        uint32_t bit = feature_from_name(p, n);
        if (!bit) {
            snprintf(entry, entry_cap, "%.*s", (int)n, p);
            return 0;
        }
        bits |= bit;
        if (!end) break;
        p = end + 1;
        if (!*p) { /* "float64," ends on an empty entry */
            entry[0] = 0;
            return 0;
        }
    }
    *out = bits;
    return 1;
}

#define FIELD(f) .offset = offsetof(cubec_config, f), .size = sizeof(((cubec_config *)0)->f)

/* Every option, in the order of docs/configuration.md's table. The ranges and choices here are
 * what the refusals quote and what tests/badinput/test_bad_config.c holds the document to. */
static const config_option options[] = {
    {"log", "level", "CUBEC_LOG_LEVEL", CONFIG_LEVEL, .fallback = LOG_WARN, FIELD(log_level)},
    {"log", "subsystems", "CUBEC_LOG", CONFIG_LOG_LIST, FIELD(log_levels)},
    {"log", "file", "CUBEC_LOG_FILE", CONFIG_PATH, .char_device_ok = 1, FIELD(log_file)},
    {"device", "select", "CUBEC_DEVICE", CONFIG_DEVICE, FIELD(device)},
    {"device", "validation", "CUBEC_VALIDATION", CONFIG_BOOL, FIELD(validation)},
    {"device", "queue_family", "CUBEC_QUEUE_FAMILY", CONFIG_INT, -1, 31, -1, FIELD(queue_family)},
    {"device", "submitter_poll", "CUBEC_SUBMITTER_POLL", CONFIG_CHOICE, .choices = "auto|off|on",
     FIELD(submitter_poll)},
    {"device", "batch_growth", "CUBEC_BATCH_GROWTH", CONFIG_CHOICE, .choices = "auto|off|on",
     FIELD(batch_growth)},
    {"device", "copy_engine", "CUBEC_COPY_ENGINE", CONFIG_CHOICE, .choices = "auto|transfer|kernel",
     FIELD(copy_engine)},
    {"device", "tasks_max", "CUBEC_TASKS_MAX", CONFIG_INT, 1, CONFIG_TASKS_MAX_LIMIT, 32,
     FIELD(tasks_max)},
    {"device", "poll_spin_us", "CUBEC_POLL_SPIN_US", CONFIG_INT, -1, 1000000, -1,
     FIELD(poll_spin_us)},
    {"device", "wait_timeout", "CUBEC_WAIT_TIMEOUT", CONFIG_SECONDS, 0, 86400, 60,
     FIELD(wait_timeout_s)},
    {"device", "push_descriptors", "CUBEC_PUSH_DESCRIPTORS", CONFIG_BOOL, .fallback = 1,
     FIELD(push_descriptors)},
    {"device", "robust", "CUBEC_ROBUST", CONFIG_BOOL, FIELD(robust)},
    {"device", "max_inflight_tasks", "CUBEC_MAX_INFLIGHT_TASKS", CONFIG_INT, 1, 1 << 24, 16384,
     FIELD(max_inflight_tasks)},
    {"device", "disable_features", "CUBEC_DISABLE_FEATURES", CONFIG_FEATURES,
     FIELD(disabled_features)},
    /* The choices are the rows of GPU_BACKENDS, in order: `backend` is a gpu_backend. */
    {NULL, "backend", "CUBEC_BACKEND", CONFIG_CHOICE, .choices = GPU_BACKEND_CHOICES, .empty_ok = 1,
     FIELD(backend)},
    {NULL, "null_delay_us", "CUBEC_NULL_DELAY_US", CONFIG_INT, 0, CONFIG_NULL_DELAY_US_LIMIT, 0,
     FIELD(null_delay_us)},
    {NULL, "null_heap_bytes", "CUBEC_NULL_HEAP_BYTES", CONFIG_INT, 0, CONFIG_NULL_HEAP_BYTES_LIMIT,
     0, FIELD(null_heap_bytes)},
    {NULL, "null_noncoherent", "CUBEC_NULL_NONCOHERENT", CONFIG_BOOL, FIELD(null_noncoherent)},
    {"device", "force_staging", "CUBEC_FORCE_STAGING", CONFIG_BOOL, FIELD(force_staging)},
    {"transfer", "copy_threads", "CUBEC_COPY_THREADS", CONFIG_INT, -1, 64, -1, FIELD(copy_threads)},
    {"kernel", "metadata", "CUBEC_KERNEL_METADATA", CONFIG_CHOICE,
     .choices = "auto|push|buffer|uniform", FIELD(info_mode)},
    {"kernel", "max_source_bytes", "CUBEC_MAX_SOURCE_BYTES", CONFIG_INT, 1024,
     16 * (int64_t)CUBEC_KERNEL_MAX_SOURCE_BYTES, CUBEC_KERNEL_MAX_SOURCE_BYTES,
     FIELD(max_source_bytes)},
    {"streaming", "policy", "CUBEC_STREAM_POLICY", CONFIG_CHOICE, .choices = "per-thread|single",
     FIELD(single_stream)},
    {"streaming", "max_streams", "CUBEC_MAX_STREAMS", CONFIG_INT, 1, 4096, 128, FIELD(max_streams)},
    {"profiling", "timing", "CUBEC_TIMING", CONFIG_CHOICE, .choices = "device|system",
     FIELD(timing_system)},
    {"profiling", "trace", "CUBEC_TRACE", CONFIG_PATH, FIELD(trace_file)},
    {"streaming", "strategy", "CUBEC_STREAM_STRATEGY", CONFIG_CHOICE,
     .choices = "interleave|sequential", FIELD(sequential_streams)},
    {"compile", "cache_dir", "CUBEC_CACHE_DIR", CONFIG_DIR, FIELD(cache_dir)},
    {"compile", "cache_max_bytes", "CUBEC_CACHE_MAX_BYTES", CONFIG_INT, CONFIG_CACHE_MIN_BYTES,
     CONFIG_CACHE_MAX_BYTES_LIMIT, CONFIG_CACHE_DEFAULT_BYTES, FIELD(cache_max_bytes)},
    {"compile", "parallelism", "CUBEC_COMPILE_PARALLELISM", CONFIG_INT, 0, 256, 0,
     FIELD(compile_parallelism)},
    {"compile", "async_create", "CUBEC_COMPILE_ASYNC_CREATE", CONFIG_BOOL, FIELD(compile_async)},
    {NULL, "fault", "CUBEC_FAULT", CONFIG_FAULTS, FIELD(faults)},
    {"memory", "preset", "CUBEC_MEMORY_PRESET", CONFIG_CHOICE,
     .choices = "ladder|exclusive|custom|adaptive|auto", .fallback = 4 /* auto */,
     FIELD(memory_preset)},
    {"memory", "pools", "CUBEC_MEMORY_POOLS", CONFIG_POOLS, FIELD(memory_pools)},
    {"memory", "persistent_memory", "CUBEC_PERSISTENT_MEMORY", CONFIG_CHOICE,
     .choices = "enabled|size-match|disabled|enforced", FIELD(persistent_memory)},
    {"memory", "max_bytes", "CUBEC_MEMORY_MAX_BYTES", CONFIG_INT, 0, CONFIG_MEMORY_MAX_BYTES_LIMIT,
     0, FIELD(memory_max_bytes)},
    {"multi", "path", "CUBEC_MULTI_PATH", CONFIG_CHOICE, .choices = "auto|host-staged|cuda-interop",
     FIELD(multi_path)},
    {"multi", "chunk_bytes", "CUBEC_MULTI_CHUNK_BYTES", CONFIG_INT, 4096, 1 << 30, 8 << 20,
     FIELD(multi_chunk_bytes)},
};
#define OPTION_COUNT (sizeof options / sizeof options[0])
_Static_assert(OPTION_COUNT <= CONFIG_MAX_OPTIONS, "cubec_config.sources has a slot per option");

enum { SOURCE_DEFAULT, SOURCE_FILE, SOURCE_ENVIRONMENT };

const config_option *config_options(size_t *count)
{
    *count = OPTION_COUNT;
    return options;
}

static void *field_of(cubec_config *c, const config_option *o)
{
    return (char *)c + o->offset;
}

/* Stores an integer into the option's field, which is an int64_t (CONFIG_INT) or an int (the
 * others): the field's size says which, so a row cannot write past its field. */
static void set_int(cubec_config *c, const config_option *o, int64_t v)
{
    if (o->size == sizeof v) {
        memcpy(field_of(c, o), &v, sizeof v);
    } else {
        int x = (int)v;
        memcpy(field_of(c, o), &x, o->size < sizeof x ? o->size : sizeof x);
    }
}

/* The index of `value` among the '|'-separated `choices`, or -1. */
static int choice_index(const char *choices, const char *value)
{
    size_t n = strlen(value);
    int i = 0;
    for (const char *p = choices;; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, value, n)) return i;
        if (!bar) return -1;
        p = bar + 1;
    }
}

/* The `index`-th of "a|b|c", into buf ("" past the end). */
static const char *choice_name(const char *choices, int index, char *buf, size_t cap)
{
    const char *p = choices;
    for (int k = 0; k < index && p; k++) {
        p = strchr(p, '|');
        if (p) p++;
    }
    snprintf(buf, cap, "%.*s", p ? (int)strcspn(p, "|") : 0, p ? p : "");
    return buf;
}

/* "a, b or c" from "a|b|c", into buf. */
static const char *choice_list(const char *choices, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = 0;
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        const char *sep = used == 0 ? "" : strchr(p, '|') ? ", " : " or ";
        int w = snprintf(buf + used, cap - used, "%s%.*s", sep, (int)len, p);
        if (w < 0 || (size_t)w >= cap - used) break;
        used += (size_t)w;
        p = bar ? bar + 1 : p + len;
    }
    return buf;
}

/* "config <origin>: [section] key" or, for an option of the environment only, "config <origin>"
 * (the origin names the variable). */
static void describe_key(const config_option *o, const char *origin, char *buf, size_t cap)
{
    if (o->section)
        snprintf(buf, cap, "config %s: [%s] %s", origin, o->section, o->key);
    else
        snprintf(buf, cap, "config %s", origin);
}

/* Applies one value of option `o`; returns NULL or an error naming the option, the value and
 * `origin` ("environment CUBEC_X" or the ini file's path). */
static cubec_status apply(cubec_config *c, const config_option *o, const char *value,
                          const char *origin)
{
    char what[700];
    describe_key(o, origin, what, sizeof what);
    switch (o->kind) {
    case CONFIG_BOOL: {
        int b;
        if (!parse_bool(value, &b))
            return INVALID_ARG("%s = '%s' is not a boolean (0/1/true/false/on/off/yes/no)", what,
                               value);
        set_int(c, o, b);
        break;
    }
    case CONFIG_INT: {
        int64_t x;
        if (!parse_int(value, o->min, o->max, &x))
            return INVALID_ARG("%s = '%s' is not an integer in %lld..%lld", what, value,
                               (long long)o->min, (long long)o->max);
        set_int(c, o, x);
        break;
    }
    case CONFIG_SECONDS: {
        /* Decimal seconds ("60", "0.5"): no sign, spaces, exponent or hex. */
        int ok = *value != 0;
        for (const char *p = value; *p; p++)
            if (!((*p >= '0' && *p <= '9') || *p == '.')) ok = 0;
        char *end;
        errno = 0;
        double t = ok ? strtod(value, &end) : -1;
        if (!ok || errno || *end || !(t >= (double)o->min && t <= (double)o->max))
            return INVALID_ARG("%s = '%s' is not a number of seconds in %lld..%lld "
                               "(decimals allowed; 0: no limit)",
                               what, value, (long long)o->min, (long long)o->max);
        memcpy(field_of(c, o), &t, sizeof t);
        break;
    }
    case CONFIG_CHOICE: {
        int i = *value || !o->empty_ok ? choice_index(o->choices, value) : (int)o->fallback;
        if (i < 0) {
            char list[128];
            return INVALID_ARG("%s = '%s' is not %s", what, value,
                               choice_list(o->choices, list, sizeof list));
        }
        set_int(c, o, i);
        break;
    }
    case CONFIG_LEVEL: {
        int l = log_level_parse(value);
        if (l < 0)
            return INVALID_ARG("%s = '%s' is not one of off|error|warn|info|summary|debug", what,
                               value);
        set_int(c, o, l);
        break;
    }
    case CONFIG_LOG_LIST: {
        char entry[64];
        const char *why = "";
        if (!parse_log_subsystems(value, field_of(c, o), entry, sizeof entry, &why))
            return INVALID_ARG("%s = '%s': entry '%s' is not %s", what, value, entry, why);
        break;
    }
    case CONFIG_FEATURES: {
        char entry[64];
        if (!parse_features(value, field_of(c, o), entry, sizeof entry))
            return INVALID_ARG(
                "%s = '%s': entry '%s' is not a feature name "
                "(int8, float16, storage_buffer_16bit... as `cubec info` lists them)",
                what, value, entry);
        break;
    }
    case CONFIG_DEVICE: {
        if (strlen(value) >= o->size)
            return INVALID_ARG("%s = '%s' is not shorter than %zu bytes", what, value, o->size);
        /* All digits is an index, and must be one: 4294967296 does not wrap to device 0. */
        int64_t index = 0;
        int digits = *value && strspn(value, "0123456789") == strlen(value);
        if (digits && !parse_int(value, 0, UINT32_MAX, &index))
            return INVALID_ARG("%s = '%s' is not a device index in 0..4294967295 (or a part of a "
                               "device name, which is not all digits)",
                               what, value);
        snprintf(field_of(c, o), o->size, "%s", value);
        c->device_by_index = digits;
        c->device_index = (uint32_t)index;
        break;
    }
    case CONFIG_PATH: {
        if (strlen(value) >= o->size)
            return INVALID_ARG("%s = '%s' is not a path shorter than %zu bytes", what, value,
                               o->size);
        /* Only what exists is looked at here: the file is opened (and created) by the device. */
        if (*value)
            RETURN_IF_ERROR(status_annotate(file_check_output(value, o->char_device_ok),
                                            "%s = '%s'", what, value));
        snprintf(field_of(c, o), o->size, "%s", value);
        break;
    }
    case CONFIG_POOLS: {
        /* Only the length here: the list is parsed against the device's limits at open. */
        if (strlen(value) >= o->size)
            return INVALID_ARG("%s = '%.64s...' is not shorter than %zu bytes", what, value,
                               o->size);
        snprintf(field_of(c, o), o->size, "%s", value);
        break;
    }
    case CONFIG_DIR: {
        if (strlen(value) >= o->size)
            return INVALID_ARG("%s = '%s' is not a path shorter than %zu bytes", what, value,
                               o->size);
        /* What exists must be a directory; a missing one is created when it is first used. */
        struct stat st;
        if (*value && strcmp(value, "none") != 0 && stat(value, &st) == 0 && !S_ISDIR(st.st_mode))
            return INVALID_ARG("%s = '%s' is %s, not a directory (or `none` for no cache)", what,
                               value, file_kind_name((unsigned)st.st_mode));
        snprintf(field_of(c, o), o->size, "%s", value);
        break;
    }
    case CONFIG_FAULTS: {
        /* fault_parse's messages name CUBEC_FAULT and the entry (docs/errors.md). */
        fault_plan plan = {{0}, {0}};
        if (*value) RETURN_IF_ERROR(fault_parse(&plan, value));
        memcpy(field_of(c, o), &plan, sizeof plan);
        break;
    }
    }
    return NULL;
}

/* Levenshtein distance of a and b, each cut to 63 bytes (keys are shorter). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strnlen(a, 63), m = strnlen(b, 63);
    size_t row[64];
    for (size_t j = 0; j <= m; j++)
        row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[m];
}

/* The ini option nearest to [section] key: the fewest edits to the key plus those to the
 * section, so a key in the wrong section ([device] level) finds its own ([log] level). */
static const config_option *nearest_option(const char *section, const char *key)
{
    const config_option *best = NULL;
    size_t best_cost = SIZE_MAX;
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        const config_option *o = &options[i];
        if (!o->section) continue;
        size_t cost = edit_distance(key, o->key) + edit_distance(section, o->section);
        if (cost < best_cost) {
            best_cost = cost;
            best = o;
        }
    }
    return best;
}

/* Records an unknown key as a warning (config.h: warned, not refused). */
static void note_unknown_key(parse_state *st, const char *section, const char *key)
{
    cubec_config *c = st->config;
    if (c->warning_count < CONFIG_MAX_WARNINGS) {
        const config_option *near = nearest_option(section, key);
        snprintf(c->warnings[c->warning_count], sizeof c->warnings[0],
                 "config %s:%d: unknown key [%s] %s, ignored (did you mean [%s] %s? "
                 "docs/configuration.md lists the keys)",
                 st->path, st->line, section, key, near ? near->section : "",
                 near ? near->key : "");
    }
    c->warning_count++;
}

static int config_ini_handler(void *user, const char *section, const char *key, const char *value)
{
    parse_state *st = user;
    if (st->error) return 1;
    /* Values are named by file and line: "config cubec.ini:3: [device] tasks_max = ...". */
    char origin[700];
    snprintf(origin, sizeof origin, "%s:%d", st->path, st->line);
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        const config_option *o = &options[i];
        if (o->section && !strcmp(section, o->section) && !strcmp(key, o->key)) {
            const char *held = field_of(st->config, o);
            if (o->kind == CONFIG_POOLS && st->config->sources[i] == SOURCE_FILE &&
                held[strspn(held, " \t")]) {
                /* A pool list goes on over several lines (a line holds at most 198 bytes). */
                char joined[CONFIG_POOLS_MAX_BYTES + 256];
                snprintf(joined, sizeof joined, "%s; %s", held, value);
                st->error = apply(st->config, o, joined, origin);
                return 1;
            }
            st->error = apply(st->config, o, value, origin);
            st->config->sources[i] = SOURCE_FILE;
            return 1;
        }
    }
    note_unknown_key(st, section, key);
    return 1;
}

/* inih's reader over the file's text: one line per call (parse_file has checked that each fits
 * in `size`), counting them. */
static char *config_ini_reader(char *buf, int size, void *user)
{
    parse_state *st = user;
    if (!*st->next) return NULL;
    const char *eol = strchr(st->next, '\n');
    size_t len = eol ? (size_t)(eol - st->next) + 1 : strlen(st->next);
    if (len > (size_t)size - 1) len = (size_t)size - 1;
    memcpy(buf, st->next, len);
    buf[len] = 0;
    st->next += len;
    st->line++;
    return buf;
}

static void config_defaults(cubec_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        const config_option *o = &options[i];
        if (o->kind == CONFIG_INT || o->kind == CONFIG_BOOL || o->kind == CONFIG_CHOICE ||
            o->kind == CONFIG_LEVEL)
            set_int(c, o, o->fallback);
        if (o->kind == CONFIG_SECONDS) {
            double t = (double)o->fallback;
            memcpy(field_of(c, o), &t, sizeof t);
        }
    }
    for (int i = 0; i < LOG_SYS_COUNT; i++)
        c->log_levels[i] = -1;
}

/* The longest line inih reads whole: a longer one would be split, and its tail read as a line of
 * its own (a value cut short, then a confusing error or a key that was never written). */
#define INI_LINE_MAX (INI_MAX_LINE - 2)

/* Reads and parses the ini file at `path` into `c`; `named_by` says where the path came from in
 * the messages of a file that cannot be read ("config file", "CUBEC_CONFIG"). */
static cubec_status parse_file(cubec_config *c, const char *path, const char *named_by)
{
    char *text = NULL;
    size_t size = 0;
    RETURN_IF_ERROR(status_annotate(file_read_regular(path, CONFIG_FILE_MAX_BYTES, &text, &size),
                                    "%s", named_by));
    cubec_status err = NULL;
    const char *nul = memchr(text, 0, size);
    if (nul)
        err = INVALID_ARG("%s '%s' holds a NUL byte at offset %zu: it is not a text file", named_by,
                          path, (size_t)(nul - text));
    int line = 1;
    for (const char *p = text; !err && p < text + size; line++) {
        const char *eol = memchr(p, '\n', (size_t)(text + size - p));
        size_t len = eol ? (size_t)(eol - p) : (size_t)(text + size - p);
        if (len > INI_LINE_MAX)
            err = INVALID_ARG("%s '%s': line %d is %zu bytes, longer than the limit of %d",
                              named_by, path, line, len, INI_LINE_MAX);
        p += len + 1;
    }
    if (!err) {
        parse_state st = {c, path, NULL, text, 0};
        int rc = ini_parse_stream(config_ini_reader, &st, config_ini_handler, &st);
        err = st.error;
        if (!err && rc > 0)
            err = INVALID_ARG("%s '%s': syntax error on line %d", named_by, path, rc);
        else if (!err && rc < 0)
            err = status_make(CUBEC_OUT_OF_MEMORY, "%s '%s': host out of memory", named_by, path);
    }
    free(text);
    return err;
}

/* "config <origin>: [section] key" for row `i`, its origin being where its value came from. */
static void describe_source(const cubec_config *c, size_t i, char *buf, size_t cap)
{
    char origin[640];
    if (c->sources[i] == SOURCE_FILE)
        snprintf(origin, sizeof origin, "%s", c->source);
    else if (c->sources[i] == SOURCE_ENVIRONMENT)
        snprintf(origin, sizeof origin, "environment %s", options[i].env);
    else
        snprintf(origin, sizeof origin, "default");
    describe_key(&options[i], origin, buf, cap);
}

/* The row of the field at `offset`. */
static size_t row_of(size_t offset)
{
    size_t i = 0;
    while (i + 1 < OPTION_COUNT && options[i].offset != offset)
        i++;
    return i;
}

/* A pool list alone means the custom preset; with another preset set too it would be ignored,
 * and the custom preset needs a list: both are refused, naming the two keys. */
static cubec_status resolve_memory_preset(cubec_config *c)
{
    size_t preset_row = row_of(offsetof(cubec_config, memory_preset));
    size_t pools_row = row_of(offsetof(cubec_config, memory_pools));
    int custom = choice_index(options[preset_row].choices, "custom");
    int has_pools = c->memory_pools[strspn(c->memory_pools, " \t")] != 0;
    if (has_pools && c->sources[preset_row] == SOURCE_DEFAULT) c->memory_preset = custom;
    if (has_pools == (c->memory_preset == custom)) return NULL;
    char preset_key[700], pools_key[700];
    describe_source(c, preset_row, preset_key, sizeof preset_key);
    describe_source(c, pools_row, pools_key, sizeof pools_key);
    if (!has_pools)
        return INVALID_ARG("%s = 'custom' needs a pool list, but %s is empty (docs/memory.md)",
                           preset_key, pools_key);
    char name[32];
    choice_name(options[preset_row].choices, c->memory_preset, name, sizeof name);
    return INVALID_ARG("%s = '%s' is not custom, so %s = '%s' would be ignored: remove one of "
                       "them",
                       preset_key, name, pools_key, c->memory_pools);
}

/* config_load_from, with what named the ini file for its messages. */
static cubec_status load(cubec_config *out, const char *ini_path, const char *named_by,
                         int use_environment)
{
    cubec_config c;
    config_defaults(&c);
    if (ini_path) {
        RETURN_IF_ERROR(parse_file(&c, ini_path, named_by));
        snprintf(c.source, sizeof c.source, "%s", ini_path);
    }
    if (use_environment) {
        for (size_t i = 0; i < OPTION_COUNT; i++) {
            const char *v = getenv(options[i].env);
            if (!v) continue;
            char origin[64];
            snprintf(origin, sizeof origin, "environment %s", options[i].env);
            RETURN_IF_ERROR(apply(&c, &options[i], v, origin));
            c.sources[i] = SOURCE_ENVIRONMENT;
        }
    }
    RETURN_IF_ERROR(resolve_memory_preset(&c));
    /* Resolved only now so that the default level, from whichever source, fills in what the
     * subsystem list leaves out. */
    for (int i = 0; i < LOG_SYS_COUNT; i++)
        if (c.log_levels[i] < 0) c.log_levels[i] = c.log_level;
    *out = c;
    return NULL;
}

cubec_status config_load_from(cubec_config *out, const char *ini_path, int use_environment)
{
    return load(out, ini_path, "config file", use_environment);
}

const char *config_describe(const cubec_config *c, const char *env, char *buf, size_t cap)
{
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        const config_option *o = &options[i];
        if (strcmp(o->env, env) != 0) continue;
        char key[700];
        describe_source(c, i, key, sizeof key);
        char choice[64] = "";
        if (o->kind == CONFIG_CHOICE) {
            int index;
            memcpy(&index, (const char *)c + o->offset, sizeof index);
            choice_name(o->choices, index, choice, sizeof choice);
        }
        const char *value = o->kind == CONFIG_PATH || o->kind == CONFIG_DEVICE ||
                                    o->kind == CONFIG_POOLS || o->kind == CONFIG_DIR
                                ? (const char *)c + o->offset
                                : choice;
        snprintf(buf, cap, "%s = '%s'", key, value);
        return buf;
    }
    snprintf(buf, cap, "%s", env);
    return buf;
}

static int readable(const char *path)
{
    return access(path, R_OK) == 0;
}

cubec_status config_load(cubec_config *out)
{
    char path[600];
    const char *explicit_path = getenv("CUBEC_CONFIG");
    if (explicit_path && *explicit_path)
        return load(out, explicit_path, "CUBEC_CONFIG: config file", 1);
    if (readable("cubec.ini")) return config_load_from(out, "cubec.ini", 1);
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(path, sizeof path, "%s/cubec/cubec.ini", xdg);
    else if (home && *home)
        snprintf(path, sizeof path, "%s/.config/cubec/cubec.ini", home);
    else
        path[0] = 0;
    return config_load_from(out, path[0] && readable(path) ? path : NULL, 1);
}

/* The messages config_warn_once has logged, by hash: a process opening a device per thread or
 * per test is told of a stray key once, not at every open. Past the table's size a message is
 * logged again rather than forgotten. */
#define WARNED_MAX 64
static uint64_t warned[WARNED_MAX];
static int warned_count;
static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;

void config_warn_once(const cubec_config *c)
{
    int kept = c->warning_count < CONFIG_MAX_WARNINGS ? c->warning_count : CONFIG_MAX_WARNINGS;
    for (int i = 0; i <= kept; i++) {
        char more[CONFIG_WARNING_BYTES];
        const char *message = c->warnings[i];
        if (i == kept) {
            if (c->warning_count <= kept) break;
            snprintf(more, sizeof more, "config %s: %d more unknown keys, ignored", c->source,
                     c->warning_count - kept);
            message = more;
        }
        uint64_t h = hash_str(HASH_SEED, message);
        int seen = 0;
        pthread_mutex_lock(&warned_lock);
        for (int k = 0; k < warned_count && !seen; k++)
            seen = warned[k] == h;
        if (!seen && warned_count < WARNED_MAX) warned[warned_count++] = h;
        pthread_mutex_unlock(&warned_lock);
        if (!seen) LOG(LOG_WARN, LOG_SYS_DEVICE, "%s", message);
    }
}
