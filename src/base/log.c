/* The process-wide logger (documented global state, with the config). A mutex keeps lines whole
 * when several threads log; the level check is a relaxed atomic load of the subsystem's level so
 * disabled logging costs one load on hot paths. */
#include "base/log.h"

#include "base/clock.h"
#include "base/file.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static atomic_int current_level[LOG_SYS_COUNT] = {LOG_WARN, LOG_WARN, LOG_WARN,
                                                  LOG_WARN, LOG_WARN, LOG_WARN};
static const char *const subsystem_names[LOG_SYS_COUNT] = {
    [LOG_SYS_DEVICE] = "device",       [LOG_SYS_COMPILE] = "compile",
    [LOG_SYS_MEMORY] = "memory",       [LOG_SYS_STREAMS] = "streams",
    [LOG_SYS_PROFILING] = "profiling", [LOG_SYS_VALIDATION] = "validation",
};
static FILE *sink;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;

cubec_status log_configure(log_level level, const char *path)
{
    int levels[LOG_SYS_COUNT];
    for (int i = 0; i < LOG_SYS_COUNT; i++)
        levels[i] = (int)level;
    return log_configure_levels(levels, path);
}

cubec_status log_configure_levels(const int *levels, const char *path)
{
    /* Opened before anything changes, so that a refused path leaves the logger as it was. */
    FILE *opened = NULL;
    if (path && *path) RETURN_IF_ERROR(file_open_output(path, FILE_OUTPUT_APPEND, 1, &opened));
    pthread_mutex_lock(&sink_lock);
    if (sink && sink != stderr) fclose(sink);
    sink = opened;
    for (int i = 0; i < LOG_SYS_COUNT; i++)
        atomic_store(&current_level[i], levels[i]);
    pthread_mutex_unlock(&sink_lock);
    return NULL;
}

int log_enabled(log_level level, log_subsystem subsystem)
{
    if ((unsigned)subsystem >= LOG_SYS_COUNT) return 0;
    return (int)level <= atomic_load_explicit(&current_level[subsystem], memory_order_relaxed);
}

const char *log_subsystem_name(log_subsystem subsystem)
{
    return (unsigned)subsystem < LOG_SYS_COUNT ? subsystem_names[subsystem] : NULL;
}

int log_subsystem_parse(const char *text)
{
    if (!text) return -1;
    for (int i = 0; i < LOG_SYS_COUNT; i++)
        if (strcasecmp(text, subsystem_names[i]) == 0) return i;
    return -1;
}

static const char *level_name(log_level level)
{
    switch (level) {
    case LOG_ERROR: return "error";
    case LOG_WARN: return "warn";
    case LOG_INFO: return "info";
    case LOG_DEBUG: return "debug";
    default: return "off";
    }
}

void log_msg(log_level level, log_subsystem subsystem, const char *fmt, ...)
{
    uint64_t now = clock_wall_ns();
    pthread_mutex_lock(&sink_lock);
    FILE *out = sink ? sink : stderr;
    fprintf(out, "[cubec %ld.%06ld %s %s] ", (long)(now / 1000000000u),
            (long)(now % 1000000000u / 1000), level_name(level),
            log_subsystem_name(subsystem) ? log_subsystem_name(subsystem) : "?");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    fflush(out);
    pthread_mutex_unlock(&sink_lock);
}

int log_level_parse(const char *text)
{
    static const char *names[] = {"off", "error", "warn", "info", "debug"};
    if (!text) return -1;
    for (int i = 0; i < 5; i++)
        if (strcasecmp(text, names[i]) == 0) return i;
    /* For profiling, info is the level of the periodic summary: the name users will look for. */
    if (strcasecmp(text, "summary") == 0) return LOG_INFO;
    if (text[0] >= '0' && text[0] <= '4' && text[1] == 0) return text[0] - '0';
    return -1;
}
