/* The process-wide logger (documented global state, with the config). A mutex keeps lines whole
 * when several threads log; the level check is a relaxed atomic load so disabled logging costs
 * one load on hot paths. */
#include "base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static atomic_int current_level = LOG_WARN;
static FILE *sink;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;

void log_configure(log_level level, const char *path)
{
    pthread_mutex_lock(&sink_lock);
    if (sink && sink != stderr) fclose(sink);
    sink = NULL;
    if (path && *path) {
        sink = fopen(path, "a");
        if (!sink) fprintf(stderr, "cubec: cannot open log file '%s'; logging to stderr\n", path);
    }
    atomic_store(&current_level, (int)level);
    pthread_mutex_unlock(&sink_lock);
}

int log_enabled(log_level level)
{
    return (int)level <= atomic_load_explicit(&current_level, memory_order_relaxed);
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

void log_msg(log_level level, const char *subsystem, const char *fmt, ...)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    pthread_mutex_lock(&sink_lock);
    FILE *out = sink ? sink : stderr;
    fprintf(out, "[cubec %ld.%06ld %s %s] ", (long)ts.tv_sec, ts.tv_nsec / 1000, level_name(level),
            subsystem);
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
    if (text[0] >= '0' && text[0] <= '4' && text[1] == 0) return text[0] - '0';
    return -1;
}
