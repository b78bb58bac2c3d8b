/* Configuration: defaults, overridden by an ini file (libinih), overridden by CUBEC_* environment
 * variables. Every key is listed in docs/configuration.md. A value that does not parse is an
 * error naming the key, the value and where it came from; it is never silently ignored. */
#ifndef CUBEC_BASE_CONFIG_H
#define CUBEC_BASE_CONFIG_H

#include "base/log.h"
#include "base/status.h"

#include <stdint.h>

typedef struct cubec_config {
    int log_level;                 /* [log] level        CUBEC_LOG_LEVEL   default warn  */
    int log_levels[LOG_SYS_COUNT]; /* [log] subsystems CUBEC_LOG   memory=debug,compile=info */
    char log_file[512];            /* [log] file         CUBEC_LOG_FILE    default stderr */
    char device[256];      /* [device] select    CUBEC_DEVICE      index or name substring */
    int validation;        /* [device] validation CUBEC_VALIDATION 0/1 */
    uint32_t tasks_max;    /* [device] tasks_max CUBEC_TASKS_MAX   default 32 */
    int poll_spin_us;      /* [device] poll_spin_us CUBEC_POLL_SPIN_US; -1 = by device type */
    double wait_timeout_s; /* [device] wait_timeout CUBEC_WAIT_TIMEOUT: seconds, 0 = none; 60 */
    uint32_t max_inflight_tasks; /* [device] max_inflight_tasks CUBEC_MAX_INFLIGHT_TASKS */
    uint32_t max_streams;        /* [streaming] max_streams CUBEC_MAX_STREAMS      default 128 */
    int single_stream;           /* [streaming] policy CUBEC_STREAM_POLICY: per-thread | single */
    int sequential_streams; /* [streaming] strategy CUBEC_STREAM_STRATEGY interleave|sequential */
    int force_staging;      /* [device] force_staging CUBEC_FORCE_STAGING: discrete paths */
    int push_descriptors;   /* [device] push_descriptors CUBEC_PUSH_DESCRIPTORS: 0 = pools */
    int timing_system;      /* [profiling] timing CUBEC_TIMING: device | system (host clock) */
    char trace_file[512];   /* [profiling] trace CUBEC_TRACE: Chrome trace JSON written at close */
    char source[600];       /* the ini file that was read, or "" */
    /* [device] disable_features CUBEC_DISABLE_FEATURES: cubec_feature bits not to enable */
    uint32_t disabled_features;
} cubec_config;
/* After loading, log_levels has every subsystem set: those [log] subsystems does not name have
 * log_level, the default, whichever source set it. */

/* Fills `out` from defaults, the first ini file found (CUBEC_CONFIG, ./cubec.ini,
 * $XDG_CONFIG_HOME/cubec/cubec.ini or ~/.config/cubec/cubec.ini) and the environment. */
MUST_USE cubec_status config_load(cubec_config *out);
/* Same, from an explicit ini path (NULL: none) and without the environment: for tests. */
MUST_USE cubec_status config_load_from(cubec_config *out, const char *ini_path,
                                       int use_environment);

#endif
