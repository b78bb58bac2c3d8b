/* Configuration loading (see config.h). The ini handler records the first bad value and inih keeps
 * going; the error is returned after parsing so the message can name the file and line. */
#include "base/config.h"

#include "base/features.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef struct parse_state {
    cubec_config *config;
    const char *origin; /* file path or "environment" */
    cubec_status error;
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

static int parse_uint(const char *v, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > max) return 0;
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

/* Applies one key; returns NULL or an error naming it. */
static cubec_status apply(cubec_config *c, const char *section, const char *key, const char *value,
                          const char *origin)
{
    long x;
#define BAD(what)                                                                                  \
    INVALID_ARG("config %s: [%s] %s = '%s' is not %s", origin, section, key, value, what)
    if (!strcmp(section, "log") && !strcmp(key, "level")) {
        int l = log_level_parse(value);
        if (l < 0) return BAD("one of off|error|warn|info|summary|debug");
        c->log_level = l;
    } else if (!strcmp(section, "log") && !strcmp(key, "subsystems")) {
        char entry[64];
        const char *why = "";
        if (!parse_log_subsystems(value, c->log_levels, entry, sizeof entry, &why))
            return INVALID_ARG("config %s: [%s] %s = '%s': entry '%s' is not %s", origin, section,
                               key, value, entry, why);
    } else if (!strcmp(section, "log") && !strcmp(key, "file")) {
        if (strlen(value) >= sizeof c->log_file) return BAD("a path shorter than 512 bytes");
        snprintf(c->log_file, sizeof c->log_file, "%s", value);
    } else if (!strcmp(section, "device") && !strcmp(key, "select")) {
        if (strlen(value) >= sizeof c->device) return BAD("shorter than 256 bytes");
        snprintf(c->device, sizeof c->device, "%s", value);
    } else if (!strcmp(section, "device") && !strcmp(key, "validation")) {
        if (!parse_bool(value, &c->validation)) return BAD("a boolean (0/1/true/false/on/off)");
    } else if (!strcmp(section, "device") && !strcmp(key, "max_inflight_tasks")) {
        if (!parse_uint(value, 1, 1 << 24, &x)) return BAD("an integer in 1..16777216");
        c->max_inflight_tasks = (uint32_t)x;
    } else if (!strcmp(section, "device") && !strcmp(key, "push_descriptors")) {
        if (!parse_bool(value, &c->push_descriptors))
            return BAD("a boolean (0/1/true/false/on/off)");
    } else if (!strcmp(section, "device") && !strcmp(key, "disable_features")) {
        char entry[64];
        if (!parse_features(value, &c->disabled_features, entry, sizeof entry))
            return INVALID_ARG(
                "config %s: [%s] %s = '%s': entry '%s' is not a feature name "
                "(int8, float16, storage_buffer_16bit... as `cubec info` lists them)",
                origin, section, key, value, entry);
    } else if (!strcmp(section, "streaming") && !strcmp(key, "max_streams")) {
        if (!parse_uint(value, 1, 4096, &x)) return BAD("an integer in 1..4096");
        c->max_streams = (uint32_t)x;
    } else if (!strcmp(section, "streaming") && !strcmp(key, "policy")) {
        if (!strcmp(value, "per-thread"))
            c->single_stream = 0;
        else if (!strcmp(value, "single"))
            c->single_stream = 1;
        else
            return BAD("per-thread or single");
    } else if (!strcmp(section, "streaming") && !strcmp(key, "strategy")) {
        if (!strcmp(value, "interleave"))
            c->sequential_streams = 0;
        else if (!strcmp(value, "sequential"))
            c->sequential_streams = 1;
        else
            return BAD("interleave or sequential");
    } else if (!strcmp(section, "device") && !strcmp(key, "force_staging")) {
        if (!parse_bool(value, &c->force_staging)) return BAD("a boolean (0/1/true/false/on/off)");
    } else if (!strcmp(section, "device") && !strcmp(key, "tasks_max")) {
        if (!parse_uint(value, 1, 65536, &x)) return BAD("an integer in 1..65536");
        c->tasks_max = (uint32_t)x;
    } else if (!strcmp(section, "device") && !strcmp(key, "poll_spin_us")) {
        if (!parse_uint(value, -1, 1000000, &x)) return BAD("an integer in -1..1000000");
        c->poll_spin_us = (int)x;
    } else if (!strcmp(section, "device") && !strcmp(key, "wait_timeout")) {
        char *end;
        errno = 0;
        double t = strtod(value, &end);
        if (end == value || *end || errno || !(t >= 0 && t <= 86400))
            return BAD("seconds in 0..86400 (0: no limit), e.g. 60 or 0.5");
        c->wait_timeout_s = t;
    } else if (!strcmp(section, "profiling") && !strcmp(key, "timing")) {
        if (!strcmp(value, "device"))
            c->timing_system = 0;
        else if (!strcmp(value, "system"))
            c->timing_system = 1;
        else
            return BAD("device or system");
    } else if (!strcmp(section, "profiling") && !strcmp(key, "trace")) {
        if (strlen(value) >= sizeof c->trace_file) return BAD("a path shorter than 512 bytes");
        snprintf(c->trace_file, sizeof c->trace_file, "%s", value);
    } else {
        return INVALID_ARG("config %s: unknown key [%s] %s (see docs/configuration.md)", origin,
                           section, key);
    }
#undef BAD
    return NULL;
}

static int config_ini_handler(void *user, const char *section, const char *key, const char *value)
{
    parse_state *st = user;
    if (st->error) return 1;
    st->error = apply(st->config, section, key, value, st->origin);
    return 1;
}

static const struct {
    const char *env, *section, *key;
} env_keys[] = {
    {"CUBEC_LOG_LEVEL", "log", "level"},
    {"CUBEC_LOG", "log", "subsystems"},
    {"CUBEC_LOG_FILE", "log", "file"},
    {"CUBEC_DEVICE", "device", "select"},
    {"CUBEC_VALIDATION", "device", "validation"},
    {"CUBEC_TASKS_MAX", "device", "tasks_max"},
    {"CUBEC_POLL_SPIN_US", "device", "poll_spin_us"},
    {"CUBEC_WAIT_TIMEOUT", "device", "wait_timeout"},
    {"CUBEC_FORCE_STAGING", "device", "force_staging"},
    {"CUBEC_MAX_INFLIGHT_TASKS", "device", "max_inflight_tasks"},
    {"CUBEC_PUSH_DESCRIPTORS", "device", "push_descriptors"},
    {"CUBEC_DISABLE_FEATURES", "device", "disable_features"},
    {"CUBEC_MAX_STREAMS", "streaming", "max_streams"},
    {"CUBEC_STREAM_POLICY", "streaming", "policy"},
    {"CUBEC_STREAM_STRATEGY", "streaming", "strategy"},
    {"CUBEC_TIMING", "profiling", "timing"},
    {"CUBEC_TRACE", "profiling", "trace"},
};

static void config_defaults(cubec_config *c)
{
    memset(c, 0, sizeof *c);
    c->log_level = LOG_WARN;
    for (int i = 0; i < LOG_SYS_COUNT; i++)
        c->log_levels[i] = -1;
    c->tasks_max = 32;
    c->poll_spin_us = -1;
    c->wait_timeout_s = 60;
    c->max_inflight_tasks = 16384;
    c->push_descriptors = 1;
    c->max_streams = 128;
}

cubec_status config_load_from(cubec_config *out, const char *ini_path, int use_environment)
{
    cubec_config c;
    config_defaults(&c);
    if (ini_path) {
        parse_state st = {&c, ini_path, NULL};
        int rc = ini_parse(ini_path, config_ini_handler, &st);
        if (st.error) return st.error;
        if (rc < 0) return INVALID_ARG("config file '%s' cannot be opened", ini_path);
        if (rc > 0) return INVALID_ARG("config file '%s': syntax error on line %d", ini_path, rc);
        snprintf(c.source, sizeof c.source, "%s", ini_path);
    }
    if (use_environment) {
        for (size_t i = 0; i < sizeof env_keys / sizeof env_keys[0]; i++) {
            const char *v = getenv(env_keys[i].env);
            if (!v) continue;
            char origin[64];
            snprintf(origin, sizeof origin, "environment %s", env_keys[i].env);
            RETURN_IF_ERROR(apply(&c, env_keys[i].section, env_keys[i].key, v, origin));
        }
    }
    /* Resolved only now so that the default level, from whichever source, fills in what the
     * subsystem list leaves out. */
    for (int i = 0; i < LOG_SYS_COUNT; i++)
        if (c.log_levels[i] < 0) c.log_levels[i] = c.log_level;
    *out = c;
    return NULL;
}

static int readable(const char *path)
{
    return access(path, R_OK) == 0;
}

cubec_status config_load(cubec_config *out)
{
    char path[600];
    const char *explicit_path = getenv("CUBEC_CONFIG");
    if (explicit_path && *explicit_path) return config_load_from(out, explicit_path, 1);
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
