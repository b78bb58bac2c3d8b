/* Configuration: defaults, overridden by an ini file (libinih), overridden by CUBEC_* environment
 * variables. Every option is a row of one table in config.c, which says its ini key, its
 * environment variable, what values it takes (ranges included) and its default; the loader, the
 * refusals and the test that holds docs/configuration.md to the same values all read that table.
 * A value that does not parse or is out of range is an error naming the key, the value and where
 * it came from; it is never silently ignored. */
#ifndef CUBEC_BASE_CONFIG_H
#define CUBEC_BASE_CONFIG_H

#include "base/fault.h"
#include "base/log.h"
#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

/* The ini file: a regular file of at most this many bytes (docs/configuration.md). */
#define CONFIG_FILE_MAX_BYTES ((size_t)1 << 20)
/* Ranges that cubec_device_desc's fields share with their options. */
#define CONFIG_TASKS_MAX_LIMIT 65536
#define CONFIG_NULL_DELAY_US_LIMIT 10000000
#define CONFIG_NULL_HEAP_BYTES_LIMIT (1ll << 40)
/* Room for [memory] pools, every line of the file joined with "; ". */
#define CONFIG_POOLS_MAX_BYTES 2048
/* [memory] max_bytes: its largest value (a petabyte: no device comes near). */
#define CONFIG_MEMORY_MAX_BYTES_LIMIT (1ll << 50)
/* [compile] cache_max_bytes: its range and default. */
#define CONFIG_CACHE_MIN_BYTES 4096
#define CONFIG_CACHE_MAX_BYTES_LIMIT (1ll << 50)
#define CONFIG_CACHE_DEFAULT_BYTES (256ll << 20)
/* Room for the table's rows in cubec_config.sources. */
#define CONFIG_MAX_OPTIONS 48
/* Unknown keys kept for config_warn_once, and the room for each message. */
#define CONFIG_MAX_WARNINGS 4
#define CONFIG_WARNING_BYTES 800

/* Options whose choices are "auto|off|on", in that order. */
enum { CONFIG_AUTO, CONFIG_OFF, CONFIG_ON };
/* Whether such an option is in effect: on, or auto where `auto_on` says so. */
static inline int config_auto_on(int choice, int auto_on)
{
    return choice == CONFIG_ON || (choice == CONFIG_AUTO && auto_on);
}

/* [multi] path, in the order of its choices. */
enum { CONFIG_MULTI_PATH_AUTO, CONFIG_MULTI_PATH_HOST_STAGED, CONFIG_MULTI_PATH_CUDA_INTEROP };

/* [kernel] metadata, in the order of its choices. */
enum { CONFIG_INFO_AUTO, CONFIG_INFO_PUSH, CONFIG_INFO_BUFFER, CONFIG_INFO_UNIFORM };

typedef struct cubec_config {
    int log_level;                 /* [log] level        CUBEC_LOG_LEVEL   default warn  */
    int log_levels[LOG_SYS_COUNT]; /* [log] subsystems CUBEC_LOG   memory=debug,compile=info */
    char log_file[512];            /* [log] file         CUBEC_LOG_FILE    default stderr */
    char device[256];      /* [device] select    CUBEC_DEVICE      index or name substring */
    int device_by_index;   /* `device` is all digits: the index below */
    uint32_t device_index; /*   ... which fits 32 bits (a longer number is refused) */
    int validation;        /* [device] validation CUBEC_VALIDATION 0/1 */
    int64_t tasks_max;     /* [device] tasks_max CUBEC_TASKS_MAX   default 32 */
    int batch_growth;      /* [device] batch_growth CUBEC_BATCH_GROWTH: CONFIG_AUTO/OFF/ON */
    int submitter_poll;    /* [device] submitter_poll CUBEC_SUBMITTER_POLL: CONFIG_AUTO/OFF/ON */
    int copy_engine; /* [device] copy_engine CUBEC_COPY_ENGINE: auto, transfer (OFF), kernel (ON) */
    int64_t queue_family;  /* [device] queue_family CUBEC_QUEUE_FAMILY: -1 auto, or an index */
    int64_t poll_spin_us;  /* [device] poll_spin_us CUBEC_POLL_SPIN_US; -1 = 200 us */
    double wait_timeout_s; /* [device] wait_timeout CUBEC_WAIT_TIMEOUT: seconds, 0 = none; 60 */
    int64_t max_inflight_tasks; /* [device] max_inflight_tasks CUBEC_MAX_INFLIGHT_TASKS */
    int64_t max_streams;        /* [streaming] max_streams CUBEC_MAX_STREAMS      default 128 */
    int single_stream;          /* [streaming] policy CUBEC_STREAM_POLICY: per-thread | single */
    int sequential_streams; /* [streaming] strategy CUBEC_STREAM_STRATEGY interleave|sequential */
    int force_staging;      /* [device] force_staging CUBEC_FORCE_STAGING: discrete paths */
    int64_t copy_threads;   /* [transfer] copy_threads CUBEC_COPY_THREADS; -1 = auto */
    int info_mode; /* [kernel] metadata CUBEC_KERNEL_METADATA: CONFIG_INFO_AUTO ... (below) */
    int64_t max_source_bytes; /* [kernel] max_source_bytes CUBEC_MAX_SOURCE_BYTES; 4 MiB */
    int push_descriptors;     /* [device] push_descriptors CUBEC_PUSH_DESCRIPTORS: 0 = pools */
    int robust;               /* [device] robust CUBEC_ROBUST: bounds-checked buffer access */
    int timing_system;        /* [profiling] timing CUBEC_TIMING: device | system (host clock) */
    char trace_file[512]; /* [profiling] trace CUBEC_TRACE: Chrome trace JSON written at close */
    char cache_dir[448];  /* [compile] cache_dir CUBEC_CACHE_DIR: "" the XDG default, "none" off */
    int64_t cache_max_bytes;     /* [compile] cache_max_bytes CUBEC_CACHE_MAX_BYTES; 256 MiB */
    int64_t compile_parallelism; /* [compile] parallelism CUBEC_COMPILE_PARALLELISM; 0 = cores */
    int compile_async;           /* [compile] async_create CUBEC_COMPILE_ASYNC_CREATE: 0/1 */
    /* [device] disable_features CUBEC_DISABLE_FEATURES: cubec_feature bits not to enable */
    uint32_t disabled_features;
    int backend; /* CUBEC_BACKEND (environment only): a gpu_backend (a row of GPU_BACKENDS) */
    int64_t null_delay_us;   /* CUBEC_NULL_DELAY_US (environment only) */
    int64_t null_heap_bytes; /* CUBEC_NULL_HEAP_BYTES (environment only), 0 = no cap */
    int null_noncoherent;    /* CUBEC_NULL_NONCOHERENT (environment only): mappings need flushes */
    fault_plan faults;       /* CUBEC_FAULT (environment only), counted from zero */
    /* [memory] preset CUBEC_MEMORY_PRESET: a memory_preset (memory/pool_list.h), auto; custom
     * when only `pools` is given */
    int memory_preset;
    /* [memory] pools CUBEC_MEMORY_POOLS: the custom pool list's text, parsed (and refused) by
     * the device at open (server_memory_init) */
    char memory_pools[CONFIG_POOLS_MAX_BYTES];
    /* [memory] persistent_memory CUBEC_PERSISTENT_MEMORY: a persistent_memory
     * (memory/memory_modes.h), enabled */
    int persistent_memory;
    /* [memory] max_bytes CUBEC_MEMORY_MAX_BYTES: device memory the pools of every stream may hold
     * in all (0: the driver's limit) */
    int64_t memory_max_bytes;
    /* [multi] chunk_bytes CUBEC_MULTI_CHUNK_BYTES: the host-staged path's chunk; 8 MiB */
    int64_t multi_chunk_bytes;
    char source[600]; /* the ini file that was read, or "" */
    /* Where each option's value came from, by table row: 0 default, 1 the ini file, 2 the
     * environment (for config_describe). */
    unsigned char sources[CONFIG_MAX_OPTIONS];
    /* Keys of the ini file that name no option, one message each ("cubec.ini:2: unknown key [log]
     * levl, ignored (did you mean [log] level?)"). They are warned about, not refused: a stray
     * ./cubec.ini with a typo must not stop every program started in its directory. A value that
     * does not parse is still refused. `warning_count` counts them all; the first
     * CONFIG_MAX_WARNINGS are kept. */
    char warnings[CONFIG_MAX_WARNINGS][CONFIG_WARNING_BYTES];
    int warning_count;
    /* [multi] path (last: it fills the tail padding) CUBEC_MULTI_PATH: how cubec_copy_peer reaches
     * another device, a CONFIG_MULTI_PATH_* (docs/multi-device-paths.md) */
    int multi_path;
} cubec_config;
/* After loading, log_levels has every subsystem set: those [log] subsystems does not name have
 * log_level, the default, whichever source set it. */

/* Fills `out` from defaults, the first ini file found (CUBEC_CONFIG, ./cubec.ini,
 * $XDG_CONFIG_HOME/cubec/cubec.ini or ~/.config/cubec/cubec.ini) and the environment. The ini
 * file must be a regular file of at most CONFIG_FILE_MAX_BYTES; CUBEC_CONFIG naming anything else
 * (a directory, a FIFO, /dev/zero) is refused naming the variable and the path. */
MUST_USE cubec_status config_load(cubec_config *out);
/* Same, from an explicit ini path (NULL: none) and without the environment: for tests. */
MUST_USE cubec_status config_load_from(cubec_config *out, const char *ini_path,
                                       int use_environment);

/* Logs each of c->warnings (unknown keys) at warn level, once per process for each message: a
 * program that opens many devices is told once. Call after the logger is configured from `c`. */
void config_warn_once(const cubec_config *c);

/* "config <origin>: [section] key = '<value>'" for the option read from environment variable
 * `env` (its origin being "environment <env>", the ini file's path, or "default"), into `buf`;
 * returns `buf`. For errors found after loading, such as a trace file that cannot be created. */
const char *config_describe(const cubec_config *c, const char *env, char *buf, size_t cap);

/* The table, for the test that checks docs/configuration.md against it. */
typedef enum config_kind {
    CONFIG_BOOL,     /* int: 0/1, true/false, on/off, yes/no */
    CONFIG_INT,      /* int64_t in [min, max] */
    CONFIG_SECONDS,  /* double: seconds in [min, max], decimals allowed */
    CONFIG_CHOICE,   /* int: the index of the value in `choices` ("a|b|c") */
    CONFIG_LEVEL,    /* int: a log_level */
    CONFIG_LOG_LIST, /* int[LOG_SYS_COUNT]: subsystem=level,... */
    CONFIG_FEATURES, /* uint32_t: cubec_feature bits */
    CONFIG_DEVICE,   /* char[]: an index or a name substring; also device_by_index/_index */
    CONFIG_PATH,     /* char[]: an output file (regular; or a character device if allowed) */
    CONFIG_FAULTS,   /* fault_plan: kind:n,... */
    CONFIG_POOLS,    /* char[]: a pool list; the file's lines add up (docs/memory.md) */
    CONFIG_DIR,      /* char[]: a directory (created when used if missing), or "none" */
} config_kind;

typedef struct config_option {
    const char *section; /* NULL: environment only */
    const char *key;
    const char *env;
    config_kind kind;
    int64_t min, max;    /* CONFIG_INT, CONFIG_SECONDS */
    int64_t fallback;    /* the default of CONFIG_INT, CONFIG_SECONDS (whole seconds), CONFIG_BOOL,
                            CONFIG_CHOICE, CONFIG_LEVEL */
    const char *choices; /* CONFIG_CHOICE */
    int empty_ok;        /* CONFIG_CHOICE: an empty value is the default */
    int char_device_ok;  /* CONFIG_PATH */
    size_t offset, size; /* the field of cubec_config */
} config_option;

const config_option *config_options(size_t *count);

#endif
