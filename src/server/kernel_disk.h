/* The disk cache as kernels use it (server/kernel_disk.c, docs/kernel-cache.md): the SPIR-V of
 * each GLSL kernel and metadata layout, and the driver's pipeline cache of the device. */
#ifndef CUBEC_SERVER_KERNEL_DISK_H
#define CUBEC_SERVER_KERNEL_DISK_H

#include "cubec/cubec.h"

#include "kernel/disk_cache.h"
#include "kernel/glsl_sources.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cubec_device_s cubec_device;

/* What a device did with the disk cache, for tests. */
typedef struct kernel_disk_stats {
    int enabled;            /* a cache directory is in use */
    disk_cache_stats files; /* every entry read and written */
    uint64_t spirv_hits;    /* GLSL kernels whose SPIR-V came from the disk */
    uint64_t blobs_loaded;  /* pipeline cache blobs given to the driver */
    uint64_t blobs_refused; /* blobs whose header or contents the backend or driver refused */
    uint64_t blobs_saved;   /* pipeline cache blobs written */
} kernel_disk_stats;

/* Under the device lock, before a build: the first call opens the cache the configuration names
 * and hands the driver the device's saved pipeline cache (no build is in flight then, which the
 * merge needs). A cache that cannot be opened is logged once and left off. */
void kernel_disk_begin(cubec_device *d);
/* The SPIR-V of a GLSL kernel compiled with its metadata in the form `form` (glsl_info_form), from
 * the disk: 1 with *out_words malloc'ed, or 0. The key holds the included files `includes`
 * (paths and bytes; NULL: none). Without the device lock. */
int kernel_disk_load_spirv(cubec_device *d, const cubec_kernel_desc *desc,
                           const glsl_sources *includes, int form, uint32_t **out_words,
                           size_t *out_count);
/* Stores what the compiler made of it. Without the device lock. */
void kernel_disk_store_spirv(cubec_device *d, const cubec_kernel_desc *desc,
                             const glsl_sources *includes, int form, const uint32_t *words,
                             size_t count);
/* At close, with the GPU idle: saves the pipeline cache when it holds something new (merging
 * what another process saved meanwhile), then closes the cache. */
void kernel_disk_end(cubec_device *d);
/* cubec's version as every disk cache entry carries it: the release and `git describe` of the
 * build (the autotuner's entries share it, src/tune/autotune.c). */
const char *kernel_disk_version(void);
/* Tests only: takes the device lock. */
void kernel_disk_get_stats(cubec_device *d, kernel_disk_stats *out);

#endif
