/* Kernels and their pipelines (server/kernels.c): identity, the pipeline table shared by kernel
 * handles of one definition, and the handles' names. */
#ifndef CUBEC_SERVER_KERNELS_H
#define CUBEC_SERVER_KERNELS_H

#include "base/handle_table.h"
#include "gpu/gpu.h"
#include "kernel/disk_cache.h"
#include "kernel/glsl_compiler.h"
#include "kernel/info_layout.h"
#include "kernel/reflect.h"

#include <pthread.h>

/* A compiled pipeline for one (kernel identity, metadata layout). Shared by every kernel handle
 * created from the same definition; lives until the device closes. */
typedef struct pipeline_entry {
    uint64_t key;
    char name[64];
    kernel_reflection refl;
    kernel_info_layout *layout; /* the metadata block's members; NULL without one */
    int info_in_push;
    /* The push block is the module's own, not CUBEC_INFO's: a launch may pass more bytes than it
     * declares, up to maxPushConstantsSize, as a Vulkan push range may be larger than the block
     * (api_kernel.c). */
    int push_block_own;
    uint32_t info_size;
    int spirv_from_disk; /* its SPIR-V came from the disk cache (server/kernel_disk.h) */
    double pipeline_ms;  /* of the build, the driver's pipeline creation (the compile log line) */
    gpu_pipeline *pipeline;
    /* The names kernel handles of this definition go by (at most 31 characters each): they
     * live as long as the entry, so a queued task points at its name instead of copying it. */
    char **names;
    uint32_t name_count, name_cap;
    struct pipeline_entry *next; /* hash chain */
} pipeline_entry;

struct compile_job;

typedef struct kernel_obj {
    pipeline_entry *entry; /* shared by kernels with the same definition; NULL while queued */
    const char *name;      /* this handle's name, for failure messages (in entry->names) */
    /* A queued kernel (server/compile_queue.h): its compilation while it runs, and after it
     * failed (the error stays with the handle); NULL once the handle has its entry. */
    struct compile_job *job;
    char queued_name[32]; /* a queued handle's name until it has its entry */
} kernel_obj;

/* A test's hook into kernel creation, reached only through server_kernel_set_compile_hook, which
 * no public function calls: tests use it to hold a build while other threads work, and to see a
 * creation wait for another thread's build. It must not call cubec. */
typedef enum server_hook_event {
    SERVER_HOOK_BUILD, /* a build starts (without the device lock, except for built-in kernels) */
    SERVER_HOOK_WAIT,  /* a creation waits for another thread's build (under the device lock) */
} server_hook_event;
typedef void (*server_compile_hook)(void *user, server_hook_event event, const char *name);

/* A build in flight: its identity, listed while its thread compiles without the device lock, so
 * that a second creation of the same kernel waits for it instead of compiling it again. */
typedef struct kernel_build {
    uint64_t key;
    struct kernel_build *next;
} kernel_build;

/* Kernels and pipelines (server/kernels.c, built-ins in copy_fill.c). Device lock. */
typedef struct kernel_cache {
    handle_table handles;                /* kernel_obj per handle */
    glsl_compiler *compiler;             /* created on the first GLSL kernel; used unlocked */
    pipeline_entry *pipelines[256];      /* by identity hash; entries live until close */
    pipeline_entry *copy, *copy4, *fill; /* the built-in kernels, compiled on first use */
    pipeline_entry *move;     /* relocation's copy: push constants always (no metadata slice) */
    kernel_build *building;   /* builds in flight (compiling without the lock) */
    pipeline_entry *dropped;  /* built but not published; destroyed at close */
    pthread_cond_t built;     /* broadcast when a build in flight ends */
    uint64_t compiles;        /* pipelines built and published */
    uint64_t build_waits;     /* creations that waited for another thread's build */
    server_compile_hook hook; /* tests only (server_kernel_set_compile_hook) */
    int info_form;            /* glsl_info_form of CUBEC_INFO, set at open */
    void *hook_user;
    /* The disk cache (server/kernel_disk.c): set by the first build, under the lock, before any
     * build reads it without the lock; NULL when off. */
    disk_cache *disk;
    int disk_checked;         /* the first build looked at the configuration */
    uint64_t disk_blob_hash;  /* the pipeline cache blob last loaded or saved (0: none) */
    uint64_t disk_spirv_hits; /* published entries whose SPIR-V came from the disk */
    uint64_t disk_blobs_loaded, disk_blobs_refused, disk_blobs_saved;
    struct compile_queue *queue; /* server/compile_queue.c: made by the first queued kernel */
} kernel_cache;

/* The identity of a kernel on a device in the bounds-checked mode `robust` (cubec_device_info's,
 * immutable after open): a hash of what defines its pipeline, the files a GLSL kernel includes
 * (`includes`, gathered from the disk when it was created; NULL: none) among them. Needs no
 * lock. */
uint64_t server_kernel_identity(const cubec_kernel_desc *desc, const glsl_sources *includes,
                                int robust);
/* The pipeline of `desc` (identity `key`, its included files `includes`), built when the device has
 * none. Called with the device lock held and returns with it held, but releases it while compiling,
 * reflecting, checking and creating the driver's pipeline, so other threads keep working:
 * everything the caller resolved before may have changed meanwhile (api_kernel.c resolves nothing
 * before). A build of the same identity already in flight on another thread is waited for. */
MUST_USE cubec_status server_kernel_create(cubec_device *d, const cubec_kernel_desc *desc,
                                           glsl_sources *includes, uint64_t key,
                                           pipeline_entry **out);
/* The same, keeping the device lock throughout: for cubec's built-in kernels, compiled from the
 * copy and fill paths, which hold resolved buffers. */
MUST_USE cubec_status server_kernel_create_locked(cubec_device *d, const cubec_kernel_desc *desc,
                                                  pipeline_entry **out);
void server_kernels_destroy(cubec_device *d);
/* cubec_kernel_destroy of handle `id` (object `k`): the handle goes, the pipeline stays cached
 * (queued launches may still use it) until the device closes. The compile queue lets go of `k`
 * first (compile_queue_drop_handle). */
void server_kernel_destroy(cubec_device *d, uint64_t id, kernel_obj *k);
/* The published pipeline of identity `key`, or NULL. */
pipeline_entry *server_kernel_find(cubec_device *d, uint64_t key);
/* Where GLSL kernels' CUBEC_INFO block goes on this device ([kernel] metadata): set at open. */
void server_kernels_configure(cubec_device *d);
/* A kernel handle's name, kept with its pipeline until the device closes. */
MUST_USE cubec_status server_kernel_name(pipeline_entry *e, const char *name, const char **out);
/* Tests only: sets (NULL: clears) the compile hook; takes the device lock. */
void server_kernel_set_compile_hook(cubec_device *d, server_compile_hook hook, void *user);

#endif
