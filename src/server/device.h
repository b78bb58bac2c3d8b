/* The device: one cubec_device composes the server's components (one header each, in
 * src/server/) and holds little else. It holds them by pointer and includes none of their headers,
 * so editing a component's header rebuilds that component's users only: each .c includes the
 * headers of what it calls. All server_* functions expect the device lock to be held by the
 * caller (the api/ layer takes it). */
#ifndef CUBEC_SERVER_DEVICE_H
#define CUBEC_SERVER_DEVICE_H

#include "base/config.h"
#include "base/fault.h"
#include "gpu/gpu.h"
#include <pthread.h>
#include <stdatomic.h>

/* The components (their headers define them; allocated with the device, see device.c). */
typedef struct buffer_store buffer_store;
typedef struct kernel_cache kernel_cache;
typedef struct stream_slots stream_slots;
typedef struct submission submission;
typedef struct host_rings host_rings;
typedef struct host_memory host_memory;
typedef struct profile_table profile_table;
typedef struct graph_table graph_table;
typedef struct submitter submitter;
typedef struct launch_timing launch_timing;
typedef struct run_modes run_modes;
typedef struct device_clock device_clock;
typedef struct task_hooks task_hooks;
typedef struct image_table image_table;

/* A device composes its components; the comment says which lock guards each member. */
struct cubec_device_s {
    pthread_mutex_t lock;   /* orders every public call (api/ takes it) */
    cubec_config config;    /* immutable after open */
    gpu *gpu;               /* the backend; immutable after open (its objects: device lock) */
    cubec_device_info info; /* device lock (get_info copies it under it) */
    uint16_t tag;           /* immutable: the high bits of every handle of this device */
    int lost;               /* device lock: a device-lost error was seen; every later call fails */
    char lost_reason[256];  /* device lock: the message of that error */
    int hung;               /* device lock: a wait timed out; close abandons the GPU's objects */
    fault_plan faults;      /* device lock: counted by the gpu seam */
    /* Atomic: batches of other devices' submission threads that wait on this timeline (peer
     * copies, server/peer.c); close waits for none to be left before the GPU goes. */
    atomic_uint peer_gates;

    buffer_store *buffers;   /* device lock */
    kernel_cache *kernels;   /* device lock */
    stream_slots *streams;   /* device lock */
    submission *sub;         /* device lock (waits drop it, see submission) */
    host_rings *rings;       /* device lock */
    host_memory *host;       /* device lock: registered and pinned host ranges */
    profile_table *profiles; /* device lock */
    graph_table *graphs;     /* device lock */
    submitter *submitter;    /* its own lock (submitter.lock), shared with its thread */
    launch_timing *timing;   /* device lock */
    run_modes *runs;         /* device lock: dry-run windows, pages made under them */
    device_clock *clock;     /* device lock */
    task_hooks *tasks;       /* set once at open: what components above do with tasks */
    image_table *images;     /* device lock */
};

/* What tests and logs read of a device's work, copied under its lock. */
typedef struct server_stats {
    uint64_t tasks;    /* recorded tasks (launches, copies, fills, timestamps, replayed launches) */
    uint64_t skipped;  /* tasks and replays skipped because an input carried a failure */
    uint64_t barriers; /* barriers recorded between commands */
    uint64_t submissions; /* command buffers submitted */
    uint32_t max_streams; /* slots stream ids fold onto */
    uint64_t compiles;    /* kernel pipelines built and published (built-in kernels included) */
    uint64_t build_waits; /* kernel creations that waited for the same kernel's build */
    uint64_t host_dma_transfers, host_dma_bytes; /* transfers straight from or to host ranges */
    uint64_t dry_launches;                       /* launches and replays a dry run dropped */
} server_stats;
server_stats server_stats_get(cubec_device *d);

MUST_USE cubec_status server_open(const cubec_device_desc *desc, cubec_device **out);
void server_close(cubec_device *d);
/* cubec_fault_inject: the nth next call of `kind` into the gpu seam fails (0: none). */
void server_fault_inject(cubec_device *d, cubec_fault_kind kind, uint64_t nth);

#endif
