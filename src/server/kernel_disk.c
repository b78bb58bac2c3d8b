/* The disk cache as kernels use it (see kernel_disk.h and docs/kernel-cache.md).
 *
 * Two kinds of entries. "spirv": what shaderc made of a GLSL kernel, keyed by everything the
 * compiler reads (source, defines, entry point, optimization, metadata layout); the compiler is
 * cubec's own (linked in), so cubec's version, which every entry's name and header carry, covers
 * it. The SPIR-V read back goes through the same validation and reflection as freshly compiled
 * SPIR-V. "pipelines": the driver's VkPipelineCache, one per device identity (pipelineCacheUUID,
 * vendor, device, driver version), loaded before the device's first build and saved at close. */
#include "server/kernel_disk.h"

#include "base/hash.h"
#include "base/log.h"
#include "cubec_git.h" /* CUBEC_GIT_DESCRIBE, generated at build time */
#include "server/device.h"
#include "server/kernels.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define STR2(x) #x
#define STR(x) STR2(x)
/* Entries of another build of cubec are another version's: their names differ, so both coexist
 * (and the least used go first). */
#define CACHE_VERSION                                                                              \
    STR(CUBEC_VERSION_MAJOR)                                                                       \
    "." STR(CUBEC_VERSION_MINOR) "." STR(CUBEC_VERSION_PATCH) " " CUBEC_GIT_DESCRIBE

/* A key under construction: fields are length-prefixed, so no two field lists make one key. */
typedef struct key_buf {
    unsigned char *data;
    size_t size, cap;
    int failed;
} key_buf;

static void key_add(key_buf *k, const void *bytes, size_t n)
{
    if (k->failed) return;
    if (k->size + n > k->cap) {
        size_t cap = (k->size + n) * 2 + 64;
        unsigned char *grown = realloc(k->data, cap);
        if (!grown) {
            k->failed = 1;
            return;
        }
        k->data = grown;
        k->cap = cap;
    }
    memcpy(k->data + k->size, bytes, n);
    k->size += n;
}

static void key_u64(key_buf *k, uint64_t v)
{
    key_add(k, &v, sizeof v);
}

/* NULL is a length no string has. */
static void key_str(key_buf *k, const char *s)
{
    key_u64(k, s ? strlen(s) : UINT64_MAX);
    if (s) key_add(k, s, strlen(s));
}

/* What the compiler reads, and only that: specialization constants and the required subgroup
 * size are given to the pipeline, not to the compiler, so each of their values shares one SPIR-V
 * entry (the kernel's identity, server_kernel_identity, tells the pipelines apart, and the driver's
 * pipeline cache keys its entries by the whole create info). */
static void key_feed(void *ctx, const void *bytes, size_t n)
{
    key_add(ctx, bytes, n);
}

static int spirv_key(const cubec_kernel_desc *desc, const glsl_sources *includes, int form,
                     key_buf *k)
{
    *k = (key_buf){0};
    key_str(k, "glsl to spirv");
    key_u64(k, (uint64_t)form);
    key_u64(k, desc->optimize ? 1 : 0);
    key_str(k, desc->entry_point && desc->entry_point[0] ? desc->entry_point : "main");
    key_u64(k, desc->define_count);
    for (uint32_t i = 0; i < desc->define_count; i++) {
        key_str(k, desc->defines[i].name);
        key_str(k, desc->defines[i].value);
    }
    key_str(k, desc->glsl);
    /* What a project's shader brings (desc->glsl_path names the file in messages and is where
     * quoted includes are looked for first): added only when set, so that the entries of other
     * kernels keep their keys. The included files go in whole, paths and bytes. */
    if (desc->glsl_path || desc->include_dir_count || (desc->preamble && desc->preamble[0]) ||
        glsl_sources_any(includes)) {
        key_str(k, "project");
        key_str(k, desc->glsl_path);
        key_u64(k, desc->include_dir_count);
        for (uint32_t i = 0; i < desc->include_dir_count; i++)
            key_str(k, desc->include_dirs[i]);
        key_str(k, desc->preamble && desc->preamble[0] ? desc->preamble : NULL);
        glsl_sources_digest(includes, key_feed, k);
    }
    if (k->failed) free(k->data);
    return !k->failed;
}

static int blob_key(const gpu_cache_identity *id, key_buf *k)
{
    *k = (key_buf){0};
    key_str(k, "vulkan pipeline cache");
    key_add(k, id->uuid, sizeof id->uuid);
    key_u64(k, id->vendor_id);
    key_u64(k, id->device_id);
    key_u64(k, id->driver_version);
    /* Added only when on, so that the blob of a device without the mode keeps its key. */
    if (id->robust) {
        key_str(k, "robust");
        key_u64(k, (uint64_t)id->robust);
    }
    if (k->failed) free(k->data);
    return !k->failed;
}

static uint64_t blob_hash(const void *data, size_t size)
{
    return hash_bytes(HASH_SEED, data, size) | 1; /* 0 means none */
}

/* Hands a saved blob to the driver; a refused blob is logged and rebuilt (saved over at close). */
static void load_blob(cubec_device *d, const void *data, size_t size, const char *path)
{
    cubec_status err = d->gpu->ops->pipeline_cache_merge(d->gpu, data, size);
    if (err) {
        LOG(LOG_WARN, LOG_SYS_COMPILE, "kernel cache: ignoring %s: %s; rebuilding it", path,
            cubec_status_message(err));
        cubec_status_free(err);
        d->kernels->disk_blobs_refused++;
        return;
    }
    d->kernels->disk_blobs_loaded++;
    d->kernels->disk_blob_hash = blob_hash(data, size);
}

void kernel_disk_begin(cubec_device *d)
{
    if (d->kernels->disk_checked) return;
    d->kernels->disk_checked = 1;
    char dir[512];
    disk_cache_resolve_dir(d->config.cache_dir, dir, sizeof dir);
    if (!dir[0]) {
        if (strcmp(d->config.cache_dir, "none") != 0)
            LOG(LOG_WARN, LOG_SYS_COMPILE,
                "kernel cache: off: neither XDG_CACHE_HOME nor HOME names a directory (set "
                "[compile] cache_dir or CUBEC_CACHE_DIR, or `none`)");
        return;
    }
    cubec_status err =
        disk_cache_open(dir, (uint64_t)d->config.cache_max_bytes, CACHE_VERSION, &d->kernels->disk);
    if (err) {
        char what[1400];
        LOG(LOG_WARN, LOG_SYS_COMPILE, "kernel cache: off: %s (%s)", cubec_status_message(err),
            config_describe(&d->config, "CUBEC_CACHE_DIR", what, sizeof what));
        cubec_status_free(err);
        return;
    }
    if (!d->gpu->ops->pipeline_cache_merge) return;
    if (d->gpu->ops->pipeline_cache_enable) d->gpu->ops->pipeline_cache_enable(d->gpu);
    key_buf k;
    if (!blob_key(&d->gpu->cache_id, &k)) return;
    void *data = NULL;
    size_t size = 0;
    if (disk_cache_get(d->kernels->disk, "pipelines", k.data, k.size, &data, &size)) {
        char path[1024];
        load_blob(
            d, data, size,
            disk_cache_path(d->kernels->disk, "pipelines", k.data, k.size, path, sizeof path));
        free(data);
    }
    free(k.data);
}

int kernel_disk_load_spirv(cubec_device *d, const cubec_kernel_desc *desc,
                           const glsl_sources *includes, int form, uint32_t **out_words,
                           size_t *out_count)
{
    *out_words = NULL;
    *out_count = 0;
    key_buf k;
    if (!d->kernels->disk || !spirv_key(desc, includes, form, &k)) return 0;
    void *data = NULL;
    size_t size = 0;
    int hit = disk_cache_get(d->kernels->disk, "spirv", k.data, k.size, &data, &size);
    free(k.data);
    /* Checksummed, so whole; still not a module unless it is whole words (validation follows). */
    if (hit && (size == 0 || size % 4 != 0)) {
        free(data);
        return 0;
    }
    if (!hit) return 0;
    *out_words = data;
    *out_count = size / 4;
    return 1;
}

void kernel_disk_store_spirv(cubec_device *d, const cubec_kernel_desc *desc,
                             const glsl_sources *includes, int form, const uint32_t *words,
                             size_t count)
{
    key_buf k;
    if (!d->kernels->disk || !spirv_key(desc, includes, form, &k)) return;
    (void)disk_cache_put(d->kernels->disk, "spirv", k.data, k.size, words, count * 4);
    free(k.data);
}

/* Saves the driver's pipeline cache when it differs from what was loaded or saved. Another
 * process (or device) may have saved its own since: that blob is merged in first, so that the
 * last to save keeps both. */
static void save_blob(cubec_device *d)
{
    const gpu_ops *ops = d->gpu->ops;
    key_buf k;
    if (!ops->pipeline_cache_data || !d->kernels->compiles || !blob_key(&d->gpu->cache_id, &k))
        return;
    void *mine = NULL;
    size_t mine_size = 0;
    cubec_status err = ops->pipeline_cache_data(d->gpu, &mine, &mine_size);
    if (!err && blob_hash(mine, mine_size) != d->kernels->disk_blob_hash) {
        void *theirs = NULL;
        size_t theirs_size = 0;
        if (disk_cache_get(d->kernels->disk, "pipelines", k.data, k.size, &theirs, &theirs_size) &&
            blob_hash(theirs, theirs_size) != d->kernels->disk_blob_hash) {
            char path[1024];
            load_blob(
                d, theirs, theirs_size,
                disk_cache_path(d->kernels->disk, "pipelines", k.data, k.size, path, sizeof path));
            free(mine);
            mine = NULL;
            err = ops->pipeline_cache_data(d->gpu, &mine, &mine_size);
        }
        free(theirs);
        if (!err &&
            disk_cache_put(d->kernels->disk, "pipelines", k.data, k.size, mine, mine_size)) {
            d->kernels->disk_blobs_saved++;
            d->kernels->disk_blob_hash = blob_hash(mine, mine_size);
        }
    }
    if (err) {
        LOG(LOG_WARN, LOG_SYS_COMPILE, "kernel cache: the pipeline cache was not saved: %s",
            cubec_status_message(err));
        cubec_status_free(err);
    }
    free(mine);
    free(k.data);
}

void kernel_disk_end(cubec_device *d)
{
    if (!d->kernels->disk) return;
    /* A lost or hung device's driver may not be called for its cache. */
    if (!d->lost && !d->hung) save_blob(d);
    disk_cache_close(d->kernels->disk);
    d->kernels->disk = NULL;
}

const char *kernel_disk_version(void)
{
    return CACHE_VERSION;
}

void kernel_disk_get_stats(cubec_device *d, kernel_disk_stats *out)
{
    pthread_mutex_lock(&d->lock);
    *out = (kernel_disk_stats){.enabled = d->kernels->disk != NULL,
                               .spirv_hits = d->kernels->disk_spirv_hits,
                               .blobs_loaded = d->kernels->disk_blobs_loaded,
                               .blobs_refused = d->kernels->disk_blobs_refused,
                               .blobs_saved = d->kernels->disk_blobs_saved};
    if (d->kernels->disk) disk_cache_get_stats(d->kernels->disk, &out->files);
    pthread_mutex_unlock(&d->lock);
}
