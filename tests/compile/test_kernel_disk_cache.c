/* The disk cache under cubec_kernel_create (server/kernel_disk.c, docs/kernel-cache.md), on
 * lavapipe with validation: a second device finds the SPIR-V and the driver's pipeline cache the
 * first one saved; a damaged SPIR-V entry (truncated, flipped bytes, another version's) and a
 * pipeline cache entry of another device are ignored and rebuilt; processes compiling the same
 * and different kernels into one directory at once all get right results and leave a consistent
 * cache that a later device reads whole; CUBEC_CACHE_MAX_BYTES holds the directory to a size by
 * evicting what a least-recently-used model says (a hit is a use); a directory that cannot be
 * made is a warning, and the device compiles without it. Every launch's output is checked against
 * the CPU.
 *
 * On a backend without a driver pipeline cache (webgpu) only SPIR-V entries are expected, and
 * the cases about the pipeline cache skip, saying why.
 *
 * Before the disk cache existed, the hit counts here were zero and no entry was written. */
#include "test_util.h"
#include "uint_kernels.h"

#include "kernel/disk_cache.h"
#include "server/device.h"
#include "server/kernel_disk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define HEADER 96 /* the entry header's size (kernel/disk_cache.c) */
#define N 1000u

/* o[i] = i * mul + add + SALT: one source, a kernel per SALT. */
static const char salted_src[] = UINT_KERNEL_HEAD
    "layout(set = 0, binding = 0) writeonly buffer O { uint o[]; };\n" UINT_KERNEL_INFO
    "void main()\n"
    "{\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i < info.n) o[i] = i * info.mul + info.add + uint(SALT);\n"
    "}\n";

static char dir[128];
/* 1 where the backend keeps a driver pipeline cache that the disk cache saves at close (the
 * Vulkan backend's); 0 where it has none (the webgpu backend: webgpu.h has no pipeline cache), so
 * that only SPIR-V entries are written and the pipeline-cache cases skip. */
static int pipes;

static int setup(void **state)
{
    (void)state;
    test_temp_dir(dir, sizeof dir, "cubec_test_kernel_disk_cache");
    /* Asked of a device that uses no cache directory, so that it writes nothing there. */
    setenv("CUBEC_CACHE_DIR", "none", 1);
    cubec_device *d = test_device_open();
    pipes = d->gpu->ops->pipeline_cache_data != NULL;
    test_device_close(d);
    setenv("CUBEC_CACHE_DIR", dir, 1);
    return 0;
}

/* Skips a case about the driver's pipeline cache where the backend has none. */
static void needs_pipeline_cache(void)
{
    if (pipes) return;
    print_message("skipped: the device's backend keeps no pipeline cache to save\n");
    skip();
}

static int teardown(void **state)
{
    (void)state;
    test_remove_tree(dir);
    setenv("CUBEC_CACHE_DIR", "none", 1);
    return 0;
}

static cubec_kernel create_salted(cubec_device *d, uint32_t salt)
{
    char value[16];
    snprintf(value, sizeof value, "%u", salt);
    const cubec_define define = {"SALT", value};
    const cubec_kernel_desc desc = {.struct_size = sizeof(cubec_kernel_desc),
                                    .name = "salted",
                                    .glsl = salted_src,
                                    .defines = &define,
                                    .define_count = 1};
    cubec_kernel k = {0};
    ASSERT_OK(cubec_kernel_create(d, &desc, &k));
    return k;
}

/* Launches kernel `salt` and compares its output with the CPU's; returns 0 when it differs (for
 * the child processes, which report through their exit status). */
static int run_salted(cubec_device *d, uint32_t salt)
{
    cubec_kernel k = create_salted(d, salt);
    cubec_buffer o = {0};
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, N * 4, &o));
    const uint32_t mul = 3 + salt, add = 7;
    ASSERT_OK(uint_launch(d, CUBEC_STREAM_CURRENT, k, o, NONE, N, mul, add));
    static uint32_t got[N], want[N];
    ASSERT_OK(cubec_read(d, CUBEC_STREAM_CURRENT, o, 0, got, sizeof got));
    cpu_produce(want, N, mul, add + salt);
    ASSERT_OK(cubec_buffer_release(d, o));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    return memcmp(got, want, sizeof got) == 0;
}

static kernel_disk_stats stats_of(cubec_device *d)
{
    kernel_disk_stats s;
    kernel_disk_get_stats(d, &s);
    return s;
}

/* An entry file of `kind` in the directory, into path: the one there is (fails the test unless
 * one), or with `any` one of them (fails the test if none). */
static void find_entry(const char *kind, int any, char *path, size_t cap)
{
    DIR *dp = opendir(dir);
    assert_non_null(dp);
    int found = 0;
    for (struct dirent *e; (e = readdir(dp));) {
        const char *dot = strrchr(e->d_name, '.');
        if (e->d_name[0] == '.' || !dot || strcmp(dot + 1, kind) != 0) continue;
        snprintf(path, cap, "%s/%s", dir, e->d_name);
        found++;
    }
    closedir(dp);
    if (found != 1 && !(any && found > 1))
        fail_msg("%d entries of kind %s, expected %s", found, kind, any ? "some" : "1");
}

static void entry_path(const char *kind, char *path, size_t cap)
{
    find_entry(kind, 0, path, cap);
}

static uint32_t count_entries(const char *kind)
{
    return test_count_entries(dir, kind);
}

/* Every entry file in the directory passes the checks a read makes: `spirv` SPIR-V entries and,
 * where the backend saves one, the pipeline cache's. */
static void expect_consistent(uint32_t spirv)
{
    const uint32_t entries = spirv + (uint32_t)pipes;
    /* The version is read from an entry: the test does not know the build's. */
    char path[1024];
    find_entry("spirv", 1, path, sizeof path);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char header[HEADER];
    assert_int_equal(fread(header, 1, HEADER, f), HEADER);
    fclose(f);
    char version[DISK_CACHE_VERSION_BYTES];
    memcpy(version, header + 16, sizeof version);
    version[sizeof version - 1] = 0;
    disk_cache *c = NULL;
    ASSERT_OK(disk_cache_open(dir, 1 << 30, version, &c));
    uint32_t valid = 0, invalid = 0;
    uint64_t bytes = 0;
    ASSERT_OK(disk_cache_verify(c, &valid, &invalid, &bytes));
    disk_cache_close(c);
    assert_int_equal(invalid, 0);
    assert_int_equal(valid, entries);
}

/* A second device finds the SPIR-V and loads the pipeline cache the first saved at close. */
static void test_second_device_hits(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    assert_true(run_salted(d, 1));
    kernel_disk_stats s = stats_of(d);
    assert_true(s.enabled);
    assert_int_equal(s.spirv_hits, 0);
    assert_int_equal(s.blobs_loaded, 0);
    assert_int_equal(s.files.writes, 1); /* the SPIR-V; the pipeline cache is saved at close */
    test_device_close(d);
    assert_int_equal(count_entries("spirv"), 1);
    assert_int_equal(count_entries("pipelines"), pipes);
    expect_consistent(1);
    d = test_device_open();
    assert_true(run_salted(d, 1));
    s = stats_of(d);
    assert_int_equal(s.spirv_hits, 1);
    assert_int_equal(s.blobs_loaded, pipes);
    assert_int_equal(s.files.rejected, 0);
    /* Another kernel is compiled and added. */
    assert_true(run_salted(d, 2));
    assert_int_equal(stats_of(d).spirv_hits, 1);
    test_device_close(d);
    expect_consistent(2);
}

/* The bounds-checked mode (CUBEC_ROBUST) compiles other pipelines from the same SPIR-V: the
 * driver's pipeline cache of each mode is a blob of its own, so neither loads the other's. */
static void test_robust_pipelines_apart(void **state)
{
    (void)state;
    needs_pipeline_cache();
    cubec_device *d = test_device_open();
    assert_true(run_salted(d, 1));
    test_device_close(d);
    assert_int_equal(count_entries("pipelines"), 1);
    setenv("CUBEC_ROBUST", "1", 1);
    d = test_device_open();
    unsetenv("CUBEC_ROBUST");
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    assert_true(run_salted(d, 1));
    kernel_disk_stats s = stats_of(d);
    assert_int_equal(s.spirv_hits, 1); /* the mode does not change the SPIR-V */
    test_device_close(d);
    if (!info.robust) { /* a device without robust buffer access: nothing differs */
        assert_int_equal(s.blobs_loaded, 1);
        skip();
    }
    assert_int_equal(s.blobs_loaded, 0);
    assert_int_equal(count_entries("pipelines"), 2);
    d = test_device_open(); /* the plain device finds its own blob again */
    assert_true(run_salted(d, 1));
    assert_int_equal(stats_of(d).blobs_loaded, 1);
    test_device_close(d);
    assert_int_equal(count_entries("spirv"), 1);
    assert_int_equal(count_entries("pipelines"), 2);
}

/* Only SPIR-V that passed validation and reflection is stored (a hit skips the validator): a
 * kernel that compiles but is refused, here for an image in a set past Vulkan's guaranteed four,
 * leaves no entry, and asking
 * again refuses it again with the same message. */
static void test_refused_kernel_not_stored(void **state)
{
    (void)state;
    static const char src[] = "#version 450\nlayout(local_size_x = 1) in;\n"
                              "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                              "layout(set = 5, binding = 1, r32f) uniform image2D img;\n"
                              "void main() { a[0] = uint(imageLoad(img, ivec2(0)).x); }\n";
    for (int round = 0; round < 2; round++) {
        cubec_device *d = test_device_open();
        cubec_kernel k;
        cubec_kernel_desc kd = {
            .struct_size = sizeof(cubec_kernel_desc), .name = "refused", .glsl = src};
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_SPIRV,
                     "storage image 'img' is in descriptor set 5");
        assert_int_equal(stats_of(d).spirv_hits, 0);
        test_device_close(d);
        assert_int_equal(count_entries("spirv"), 0);
    }
}

/* Replaces the file's bytes [offset, +n) by their complement (n = 0: cuts the file at offset). */
static void damage(const char *path, long offset, size_t n)
{
    if (n == 0) {
        assert_int_equal(truncate(path, offset), 0);
        return;
    }
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    unsigned char buf[64];
    assert_true(n <= sizeof buf);
    assert_int_equal(fseek(f, offset, SEEK_SET), 0);
    assert_int_equal(fread(buf, 1, n, f), n);
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)~buf[i];
    assert_int_equal(fseek(f, offset, SEEK_SET), 0);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
}

/* A damaged SPIR-V entry is ignored (counted, never used), the kernel is compiled again and
 * right, and the entry is written anew. */
static void test_damaged_spirv_rebuilt(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    assert_true(run_salted(d, 3));
    test_device_close(d);
    char path[1024];
    entry_path("spirv", path, sizeof path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    /* Cut in the payload, a flipped byte in the payload, in the key, in the header's version. */
    const long cuts[][2] = {{(long)st.st_size - 5, 0},
                            {(long)st.st_size - 40, 1},
                            {HEADER + 3, 2},
                            {20, 4},
                            {HEADER / 2, 0}};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        damage(path, cuts[i][0], (size_t)cuts[i][1]);
        d = test_device_open();
        assert_true(run_salted(d, 3));
        kernel_disk_stats s = stats_of(d);
        if (s.spirv_hits != 0 || s.files.rejected != 1)
            fail_msg("damage %zu: %llu SPIR-V hits, %llu rejected entries", i,
                     (unsigned long long)s.spirv_hits, (unsigned long long)s.files.rejected);
        test_device_close(d);
        expect_consistent(1);
    }
    d = test_device_open();
    assert_true(run_salted(d, 3));
    assert_int_equal(stats_of(d).spirv_hits, 1);
    test_device_close(d);
}

/* Rewrites the pipeline cache entry with its Vulkan header's pipelineCacheUUID changed, framed
 * as a valid entry (the right version, key and checksums): another driver's blob. */
static void make_blob_foreign(void)
{
    char path[1024];
    entry_path("pipelines", path, sizeof path);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static unsigned char file[1 << 20];
    size_t size = fread(file, 1, sizeof file, f);
    fclose(f);
    assert_true(size > HEADER + 32);
    char version[DISK_CACHE_VERSION_BYTES];
    memcpy(version, file + 16, sizeof version);
    version[sizeof version - 1] = 0;
    uint64_t key_size;
    memcpy(&key_size, file + 64, 8);
    unsigned char *key = file + HEADER, *blob = key + key_size;
    size_t blob_size = size - HEADER - key_size;
    blob[16] ^= 0xff; /* VkPipelineCacheHeaderVersionOne.pipelineCacheUUID[0] */
    disk_cache *c = NULL;
    ASSERT_OK(disk_cache_open(dir, 1 << 30, version, &c));
    assert_int_equal(disk_cache_put(c, "pipelines", key, key_size, blob, blob_size), 1);
    disk_cache_close(c);
}

/* A pipeline cache of another driver is refused before the driver sees it, the kernel still
 * works, and the device saves its own blob at close, which the next device loads. */
static void test_foreign_pipeline_cache_refused(void **state)
{
    (void)state;
    needs_pipeline_cache();
    cubec_device *d = test_device_open();
    assert_true(run_salted(d, 4));
    test_device_close(d);
    make_blob_foreign();
    d = test_device_open();
    assert_true(run_salted(d, 4));
    kernel_disk_stats s = stats_of(d);
    assert_int_equal(s.blobs_refused, 1);
    assert_int_equal(s.blobs_loaded, 0);
    assert_int_equal(s.spirv_hits, 1);
    test_device_close(d);
    expect_consistent(1);
    d = test_device_open();
    assert_true(run_salted(d, 4));
    s = stats_of(d);
    assert_int_equal(s.blobs_refused, 0);
    assert_int_equal(s.blobs_loaded, 1);
    test_device_close(d);
}

/* ---- The size limit and an unusable directory, through the configuration ------------------ */

/* o[i] = i * mul + add + SALT + EXTRA: a SPIR-V entry per SALT, and per EXTRA (a specialization
 * constant, given to the pipeline) a kernel of its own that reads that entry, so that one device
 * can use an entry again (a disk hit) without writing anything. The comment makes an entry about
 * a kilobyte larger, so that a few fill the smallest limit. */
static const char lru_src[] = UINT_KERNEL_HEAD
    "/* Padding, part of the entry's key. Lorem ipsum dolor sit amet, consectetur adipiscing\n"
    " * elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim\n"
    " * veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo "
    "consequat.\n"
    " * Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat\n"
    " * nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia\n"
    " * deserunt mollit anim id est laborum. Sed ut perspiciatis unde omnis iste natus error sit\n"
    " * voluptatem accusantium doloremque laudantium, totam rem aperiam, eaque ipsa quae ab illo\n"
    " * inventore veritatis et quasi architecto beatae vitae dicta sunt explicabo. Nemo enim\n"
    " * ipsam voluptatem quia voluptas sit aspernatur aut odit aut fugit, sed quia consequuntur\n"
    " * magni dolores eos qui ratione voluptatem sequi nesciunt. Neque porro quisquam est, qui\n"
    " * dolorem ipsum quia dolor sit amet, consectetur, adipisci velit, sed quia non numquam. */\n"
    "layout(constant_id = 0) const uint EXTRA = 0u;\n"
    "layout(set = 0, binding = 0) writeonly buffer O { uint o[]; };\n" UINT_KERNEL_INFO
    "void main()\n"
    "{\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i < info.n) o[i] = i * info.mul + info.add + uint(SALT) + EXTRA;\n"
    "}\n";

/* Creates and launches lru kernel (salt, extra) and compares its output with the CPU's. */
static void run_lru(cubec_device *d, uint32_t salt, uint32_t extra)
{
    char value[16];
    snprintf(value, sizeof value, "%u", salt);
    const cubec_define define = {"SALT", value};
    const cubec_spec_constant spec = {0, extra};
    const cubec_kernel_desc desc = {.struct_size = sizeof(cubec_kernel_desc),
                                    .name = "lru",
                                    .glsl = lru_src,
                                    .defines = &define,
                                    .define_count = 1,
                                    .spec_constants = &spec,
                                    .spec_constant_count = 1};
    cubec_kernel k = {0};
    ASSERT_OK(cubec_kernel_create(d, &desc, &k));
    cubec_buffer o = {0};
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, N * 4, &o));
    ASSERT_OK(uint_launch(d, CUBEC_STREAM_CURRENT, k, o, NONE, N, 5, 11));
    static uint32_t got[N], want[N];
    ASSERT_OK(cubec_read(d, CUBEC_STREAM_CURRENT, o, 0, got, sizeof got));
    cpu_produce(want, N, 5, 11 + salt + extra);
    assert_memory_equal(got, want, sizeof got);
    ASSERT_OK(cubec_buffer_release(d, o));
    ASSERT_OK(cubec_kernel_destroy(d, k));
}

/* The test's model of the directory: each entry file, its size and when it was last used. */
#define MAX_FILES 16
typedef struct lru_model {
    char name[MAX_FILES][64];
    uint64_t size[MAX_FILES];
    uint64_t used[MAX_FILES]; /* the model's clock; UINT64_MAX: just written */
    int count;
    uint64_t limit, clock;
    int evictions;
} lru_model;

/* Entries were stamped to this time and later (1970): whatever cubec touches is newer. */
#define STAMP_BASE 1000000

static int model_find(const lru_model *m, const char *name)
{
    for (int i = 0; i < m->count; i++)
        if (!strcmp(m->name[i], name)) return i;
    return -1;
}

/* The entry files in the directory (names into names[], up to MAX_FILES). */
static int list_entries(char names[][64])
{
    DIR *dp = opendir(dir);
    assert_non_null(dp);
    int n = 0;
    for (struct dirent *e; (e = readdir(dp));) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || !strchr(e->d_name, '.')) continue;
        assert_true(n < MAX_FILES && len < 64);
        memcpy(names[n++], e->d_name, len + 1);
    }
    closedir(dp);
    return n;
}

static struct stat stat_entry(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    if (stat(path, &st) != 0) fail_msg("stat %s: %s", path, strerror(errno));
    return st;
}

/* The file `name` was touched (mtime set to now by cubec, past every stamp), and is stamped
 * again with the model's next tick: uses a clock tick apart never tie, however coarse the
 * file system's clock. */
static void model_touched(lru_model *m, const char *name)
{
    int i = model_find(m, name);
    assert_true(i >= 0);
    struct stat st = stat_entry(name);
    if (st.st_mtime <= STAMP_BASE + 100000)
        fail_msg("%s was used but its mtime was not updated", name);
    m->used[i] = ++m->clock;
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct timespec t[2] = {{STAMP_BASE + (time_t)m->clock, 0}, {STAMP_BASE + (time_t)m->clock, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* After a write: the one new file goes into the model as the most recent, the model evicts the
 * least recently used until the sizes fit, and the directory must hold exactly the model's files.
 * Returns the new file's index in the model; with `may_be_none`, -1 when nothing was written (an
 * entry larger than the limit is not). */
static int model_written(lru_model *m, const char *what, int may_be_none)
{
    char names[MAX_FILES][64];
    int n = list_entries(names), added = -1;
    for (int i = 0; i < n; i++) {
        if (model_find(m, names[i]) >= 0) continue;
        if (added >= 0) fail_msg("%s: more than one new file in the cache", what);
        added = i;
    }
    if (added < 0 && may_be_none) {
        assert_int_equal(n, m->count);
        return -1;
    }
    if (added < 0) fail_msg("%s: no new file in the cache", what);
    assert_true(m->count < MAX_FILES);
    snprintf(m->name[m->count], 64, "%s", names[added]);
    m->size[m->count] = (uint64_t)stat_entry(names[added]).st_size;
    m->used[m->count] = UINT64_MAX;
    m->count++;
    for (;;) {
        uint64_t total = 0;
        int oldest = 0;
        for (int i = 0; i < m->count; i++) {
            total += m->size[i];
            if (m->used[i] < m->used[oldest]) oldest = i;
        }
        if (total <= m->limit) break;
        m->evictions++;
        m->count--;
        memmove(m->name[oldest], m->name[oldest + 1], (size_t)(m->count - oldest) * 64);
        memmove(&m->size[oldest], &m->size[oldest + 1],
                (size_t)(m->count - oldest) * sizeof m->size[0]);
        memmove(&m->used[oldest], &m->used[oldest + 1],
                (size_t)(m->count - oldest) * sizeof m->used[0]);
    }
    int ok = n == m->count;
    for (int i = 0; i < n && ok; i++)
        ok = model_find(m, names[i]) >= 0;
    if (!ok) {
        for (int i = 0; i < n; i++)
            print_message("in the directory: %s\n", names[i]);
        for (int i = 0; i < m->count; i++)
            print_message("in the model: %s (used at %llu)\n", m->name[i],
                          (unsigned long long)m->used[i]);
        fail_msg("%s: the directory does not hold the least recently used model's entries", what);
    }
    return model_find(m, names[added]);
}

/* CUBEC_CACHE_MAX_BYTES room for three SPIR-V entries: kernels of six sources, some used again,
 * leave in the directory exactly what a least-recently-used model of it holds (a disk hit counts
 * as a use: it touches the file), the evictions are counted, and a second device finds the
 * survivors without compiling and misses an evicted one. Each output is checked against the CPU.
 * Under first-in-first-out eviction the entry used again would be gone after the fourth. */
static void test_size_limit_evicts_lru(void **state)
{
    (void)state;
    /* An entry's size: the same for every salt of three digits (the key and the SPIR-V differ
     * only in those digits and in a constant's value). */
    char probe[128];
    test_temp_dir(probe, sizeof probe, "cubec_test_kernel_disk_cache_probe");
    setenv("CUBEC_CACHE_DIR", probe, 1);
    cubec_device *d = test_device_open();
    run_lru(d, 999, 0);
    test_device_close(d);
    setenv("CUBEC_CACHE_DIR", dir, 1);
    uint64_t entry = 0;
    DIR *dp = opendir(probe);
    assert_non_null(dp);
    for (struct dirent *e; (e = readdir(dp));) {
        const char *dot = strrchr(e->d_name, '.');
        if (e->d_name[0] == '.' || !dot || strcmp(dot + 1, "spirv")) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", probe, e->d_name);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        entry = (uint64_t)st.st_size;
    }
    closedir(dp);
    test_remove_tree(probe);
    assert_true(entry > 0);

    lru_model m = {.limit = 3 * entry + entry / 2};
    assert_true(m.limit >= 4096); /* [compile] cache_max_bytes' least */
    char limit[32];
    snprintf(limit, sizeof limit, "%llu", (unsigned long long)m.limit);
    setenv("CUBEC_CACHE_MAX_BYTES", limit, 1);
    d = test_device_open();
    int file_of[6]; /* salt 100 + i: its file's index in the model at the time */
    char name_of[6][64];
    uint32_t extra = 0;
    /* write: a new source; use: a new kernel of an old source, a disk hit. */
    const struct {
        char op;
        int salt;
    } steps[] = {{'w', 0}, {'w', 1}, {'w', 2}, {'u', 0}, {'w', 3},
                 {'w', 4}, {'u', 3}, {'u', 4}, {'w', 5}};
    uint64_t hits = 0;
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        int salt = steps[s].salt;
        char what[64];
        snprintf(what, sizeof what, "step %zu (%s of kernel %d)", s,
                 steps[s].op == 'w' ? "write" : "use", salt);
        run_lru(d, 100u + (uint32_t)salt, steps[s].op == 'w' ? 0 : ++extra);
        kernel_disk_stats ds = stats_of(d);
        if (steps[s].op == 'w') {
            assert_int_equal(ds.spirv_hits, hits);
            file_of[salt] = model_written(&m, what, 0);
            snprintf(name_of[salt], 64, "%s", m.name[file_of[salt]]);
            assert_int_equal(m.size[file_of[salt]], entry);
            model_touched(&m, name_of[salt]);
        } else {
            if (ds.spirv_hits != ++hits) fail_msg("%s: not a disk hit", what);
            model_touched(&m, name_of[salt]);
        }
        assert_int_equal(ds.files.evictions, m.evictions);
    }
    assert_int_equal(m.evictions, 3);
    /* Left: 3 (used again), 4 (used again) and 5; 0 went although it had been used again, after
     * 1 and 2 which had not. */
    const int kept[] = {3, 4, 5}, gone[] = {0, 1, 2};
    for (int i = 0; i < 3; i++) {
        assert_true(model_find(&m, name_of[kept[i]]) >= 0);
        assert_true(model_find(&m, name_of[gone[i]]) < 0);
    }
    /* The pipeline cache saved at close is one more entry, under the same limit (lavapipe's is
     * small; a GPU driver's may evict more, or exceed the limit and not be written). */
    test_device_close(d);
    (void)model_written(&m, "the pipeline cache saved at close", 1);

    /* A new device reads what is left and misses what is not. */
    d = test_device_open();
    uint64_t left = 0;
    for (int i = 0; i < 3; i++) {
        run_lru(d, 100u + (uint32_t)kept[i], 0);
        left += model_find(&m, name_of[kept[i]]) >= 0;
    }
    kernel_disk_stats ds = stats_of(d);
    assert_int_equal(ds.spirv_hits, left);
    assert_int_equal(ds.files.writes, 3 - left);
    run_lru(d, 100u + (uint32_t)gone[0], 0);
    assert_int_equal(stats_of(d).spirv_hits, left);
    assert_int_equal(stats_of(d).files.writes, 4 - left);
    test_device_close(d);
    unsetenv("CUBEC_CACHE_MAX_BYTES");
}

/* Whether the file holds a line containing each of `needles` (NULL-terminated) and how many
 * lines contain the first. */
static int lines_with(const char *path, const char *const *needles)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        int all = 1;
        for (const char *const *p = needles; *p && all; p++)
            all = strstr(line, *p) != NULL;
        n += all;
    }
    fclose(f);
    return n;
}

/* A cache directory that cannot be made (its parent is a regular file): the device logs one
 * warning naming it and the setting, runs without the cache, and its kernels compile and run
 * right; the file in the way is left as it was. */
static void test_unusable_dir_warns(void **state)
{
    (void)state;
    char file[160], bad[192], log_path[192];
    snprintf(file, sizeof file, "%s/a_file", dir);
    snprintf(bad, sizeof bad, "%s/cache", file);
    snprintf(log_path, sizeof log_path, "%s/log.txt", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("not a directory\n", f);
    fclose(f);
    setenv("CUBEC_CACHE_DIR", bad, 1);
    setenv("CUBEC_LOG_FILE", log_path, 1);
    cubec_device *d = test_device_open();
    assert_true(run_salted(d, 7));
    assert_true(run_salted(d, 8));
    kernel_disk_stats s = stats_of(d);
    test_device_close(d);
    unsetenv("CUBEC_LOG_FILE");
    setenv("CUBEC_CACHE_DIR", dir, 1);
    assert_false(s.enabled);
    assert_int_equal(s.spirv_hits, 0);
    const char *const warning[] = {"kernel cache: off", "warn", bad, "Not a directory",
                                   "CUBEC_CACHE_DIR",   NULL};
    int n = lines_with(log_path, warning);
    if (n != 1) {
        fail_msg("%d warnings naming %s and why in %s, expected 1", n, bad, log_path);
    }
    struct stat st;
    assert_int_equal(stat(file, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_size, strlen("not a directory\n"));
}

/* ---- processes ---------------------------------------------------------------------------- */

#define CHILDREN 4
/* Child i runs kernel 100 (all of them), 200 + i % 2 (half each) and 300 + i (its own). */
static int child_main(int i)
{
    cubec_device *d = test_device_open();
    int ok = run_salted(d, 100) && run_salted(d, 200 + (uint32_t)i % 2) &&
             run_salted(d, 300 + (uint32_t)i);
    cubec_device_close(d);
    if (test_validation_messages()) ok = 0;
    return ok ? 0 : 1;
}

/* Processes compiling into one directory at once: each checks its results; afterwards every
 * entry is whole, there is one per kernel and one pipeline cache, and a new device reads them
 * all (no compilation). Twice: the second round starts from what the first left. */
static void test_processes_share_cache(void **state)
{
    (void)state;
    for (int round = 0; round < 2; round++) {
        pid_t pids[CHILDREN];
        for (int i = 0; i < CHILDREN; i++) {
            char arg[16];
            snprintf(arg, sizeof arg, "%d", i);
            char *argv[] = {"test_kernel_disk_cache", "--child", arg, NULL};
            int rc = posix_spawn(&pids[i], "/proc/self/exe", NULL, NULL, argv, environ);
            if (rc) fail_msg("posix_spawn: %s", strerror(rc));
        }
        for (int i = 0; i < CHILDREN; i++) {
            int status = 0;
            assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("round %d: child %d failed (status %d)", round, i, status);
        }
        const uint32_t kernels = 1 + 2 + CHILDREN;
        assert_int_equal(count_entries("spirv"), kernels);
        expect_consistent(kernels);
    }
    cubec_device *d = test_device_open();
    uint32_t salts[] = {100, 200, 201, 300, 301, 302, 303};
    for (size_t i = 0; i < sizeof salts / sizeof salts[0]; i++)
        assert_true(run_salted(d, salts[i]));
    kernel_disk_stats s = stats_of(d);
    assert_int_equal(s.spirv_hits, sizeof salts / sizeof salts[0]);
    assert_int_equal(s.files.rejected, 0);
    assert_int_equal(s.blobs_loaded, pipes);
    test_device_close(d);
}

/* The bytes of the driver's pipeline cache saved in this test's directory (the one entry). */
static long saved_blob_bytes(void)
{
    char path[1024];
    entry_path("pipelines", path, sizeof path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long)st.st_size;
}

/* Kernels salted first..first+n-1 built on a new device of an empty directory, one after another
 * or through the compile queue's 4 threads (each build then uses a pipeline cache of its own,
 * gpu/vulkan/vk_pipeline_cache.h), each launch checked; the size of the blob saved at close. */
static long blob_after_builds(uint32_t first, uint32_t n, int queued)
{
    test_remove_tree(dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    setenv("CUBEC_COMPILE_PARALLELISM", "4", 1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_COMPILE_PARALLELISM");
    cubec_kernel ks[16];
    assert_true(n <= 16);
    for (uint32_t i = 0; queued && i < n; i++) {
        char value[16];
        snprintf(value, sizeof value, "%u", first + i);
        const cubec_define define = {"SALT", value};
        const cubec_kernel_desc desc = {.struct_size = sizeof(cubec_kernel_desc),
                                        .name = "salted",
                                        .glsl = salted_src,
                                        .defines = &define,
                                        .define_count = 1};
        ASSERT_OK(cubec_kernel_queue(d, &desc, &ks[i]));
    }
    if (queued) ASSERT_OK(cubec_kernel_compile_queued(d));
    for (uint32_t i = 0; i < n; i++)
        assert_true(run_salted(d, first + i));
    for (uint32_t i = 0; queued && i < n; i++)
        ASSERT_OK(cubec_kernel_destroy(d, ks[i]));
    test_device_close(d);
    return saved_blob_bytes();
}

/* What parallel builds put in their own pipeline caches is all saved: the blob after eight
 * kernels built by the queue's threads is the blob after the same eight built one by one. Where
 * the driver's cache holds pipelines (the H200's: it grows with each), that fails if a build's
 * cache were left out of the save; lavapipe's stays empty (its blob is the header alone, as
 * large for one kernel as for eight), so there the test holds only the saves to one size. */
static void test_parallel_builds_all_saved(void **state)
{
    (void)state;
    needs_pipeline_cache();
    const long one = blob_after_builds(500, 1, 0);
    const long serial = blob_after_builds(500, 8, 0);
    const long queued = blob_after_builds(500, 8, 1);
    printf("saved pipeline cache: %ld bytes for one kernel, %ld for eight built one by one, %ld "
           "for eight built in parallel\n",
           one, serial, queued);
    assert_true(one <= serial);
    assert_int_equal(queued, serial);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--child")) return child_main(atoi(argv[2]));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_second_device_hits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_spirv_rebuilt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_kernel_not_stored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_robust_pipelines_apart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_pipeline_cache_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processes_share_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_size_limit_evicts_lru, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unusable_dir_warns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parallel_builds_all_saved, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
