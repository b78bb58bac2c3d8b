/* The logger: one process-wide sink (stderr or a file from the config) and one level per
 * subsystem, so that e.g. memory can log at debug while the rest stays at warn. It is the
 * documented global state of the library, with the config. */
#ifndef CUBEC_BASE_LOG_H
#define CUBEC_BASE_LOG_H

#include "base/status.h"

typedef enum log_level {
    LOG_OFF = 0,
    LOG_ERROR = 1,
    LOG_WARN = 2,
    LOG_INFO = 3,
    LOG_DEBUG = 4,
} log_level;

typedef enum log_subsystem {
    LOG_SYS_DEVICE,
    LOG_SYS_COMPILE,
    LOG_SYS_MEMORY,
    LOG_SYS_STREAMS,
    LOG_SYS_PROFILING,
    LOG_SYS_VALIDATION,
    LOG_SYS_COUNT
} log_subsystem;

/* Sets every subsystem to `level` and the sink; path NULL or "" means stderr. Safe to call
 * again. The file is appended to; a path that cannot be opened, or names something other than a
 * regular file or a character device (a FIFO, a directory), is refused (base/file.h) and leaves
 * the logger as it was. */
MUST_USE cubec_status log_configure(log_level level, const char *path);
/* Same with one level per subsystem (levels[LOG_SYS_COUNT], each a log_level). */
MUST_USE cubec_status log_configure_levels(const int *levels, const char *path);
int log_enabled(log_level level, log_subsystem subsystem);
void log_msg(log_level level, log_subsystem subsystem, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Parses "off|error|warn|info|summary|debug" (or 0..4; summary is info); returns -1 when
 * unknown. */
int log_level_parse(const char *text);
/* "device", "compile", ...; NULL for a value out of range. */
const char *log_subsystem_name(log_subsystem subsystem);
/* The subsystem named `text` (case-insensitive), or -1. */
int log_subsystem_parse(const char *text);

#define LOG(level, subsystem, ...)                                                                 \
    do {                                                                                           \
        if (log_enabled(level, subsystem)) log_msg(level, subsystem, __VA_ARGS__);                 \
    } while (0)

#endif
