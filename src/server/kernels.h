/* Kernels and their pipelines (server/kernels.c): identity, the pipeline table shared by kernel
 * handles of one definition, and the handles' names. */
#ifndef CUBEC_SERVER_KERNELS_H
#define CUBEC_SERVER_KERNELS_H

#include "base/handle_table.h"
#include "gpu/gpu.h"
#include "kernel/glsl_compiler.h"
#include "kernel/reflect.h"

/* A compiled pipeline for one (kernel identity, metadata layout). Shared by every kernel handle
 * created from the same definition; lives until the device closes. */
typedef struct pipeline_entry {
    uint64_t key;
    char name[64];
    kernel_reflection refl;
    int info_in_push;
    uint32_t info_size;
    gpu_pipeline *pipeline;
    /* The names kernel handles of this definition go by (at most 31 characters each): they
     * live as long as the entry, so a queued task points at its name instead of copying it. */
    char **names;
    uint32_t name_count;
    struct pipeline_entry *next; /* hash chain */
} pipeline_entry;

typedef struct kernel_obj {
    pipeline_entry *entry; /* shared by kernels with the same definition */
    const char *name;      /* this handle's name, for failure messages (in entry->names) */
} kernel_obj;

/* Kernels and pipelines (server/kernels.c, built-ins in copy_fill.c). Device lock. */
typedef struct kernel_cache {
    handle_table handles;                /* kernel_obj per handle */
    glsl_compiler *compiler;             /* created on the first GLSL kernel */
    pipeline_entry *pipelines[256];      /* by identity hash; entries live until close */
    pipeline_entry *copy, *copy4, *fill; /* the built-in kernels, compiled on first use */
} kernel_cache;

MUST_USE cubec_status server_kernel_create(cubec_device *d, const cubec_kernel_desc *desc,
                                           pipeline_entry **out);
void server_kernels_destroy(cubec_device *d);
/* A kernel handle's name, kept with its pipeline until the device closes. */
MUST_USE cubec_status server_kernel_name(pipeline_entry *e, const char *name, const char **out);

#endif
