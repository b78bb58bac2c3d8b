/* The logger: one process-wide sink (stderr or a file from the config), levels error..debug.
 * It is the documented global state of the library, with the config. */
#ifndef CUBEC_BASE_LOG_H
#define CUBEC_BASE_LOG_H

typedef enum log_level {
    LOG_OFF = 0,
    LOG_ERROR = 1,
    LOG_WARN = 2,
    LOG_INFO = 3,
    LOG_DEBUG = 4,
} log_level;

/* Sets the level and sink; path NULL or "" means stderr. Safe to call again. */
void log_configure(log_level level, const char *path);
int log_enabled(log_level level);
void log_msg(log_level level, const char *subsystem, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Parses "off|error|warn|info|debug" (or 0..4); returns -1 when unknown. */
int log_level_parse(const char *text);

#define LOG(level, subsystem, ...)                                                                 \
    do {                                                                                           \
        if (log_enabled(level)) log_msg(level, subsystem, __VA_ARGS__);                            \
    } while (0)

#endif
