/* The disk cache under cubec_kernel_create (server/kernel_disk.c, docs/kernel-cache.md), on
 * lavapipe with validation: a second device finds the SPIR-V and the driver's pipeline cache the
 * first one saved; a damaged SPIR-V entry (truncated, flipped bytes, another version's) and a
 * pipeline cache entry of another device are ignored and rebuilt; processes compiling the same
 * and different kernels into one directory at once all get right results and leave a consistent
 * cache that a later device reads whole. Every launch's output is checked against the CPU.
 *
 * Before the disk cache existed, the hit counts here were zero and no entry was written. */
#include "test_util.h"
#include "uint_kernels.h"

#include "kernel/disk_cache.h"
#include "server/kernel_disk.h"

#include <dirent.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

static char dir[64];

static int setup(void **state)
{
    (void)state;
    test_temp_dir(dir, sizeof dir, "cubec_test_kernel_disk_cache");
    setenv("CUBEC_CACHE_DIR", dir, 1);
    return 0;
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
    const cubec_kernel_desc desc = {
        .name = "salted", .glsl = salted_src, .defines = &define, .define_count = 1};
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

/* The one entry file of `kind` in the directory, into path (fails the test unless one). */
static void entry_path(const char *kind, char *path, size_t cap)
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
    if (found != 1) fail_msg("%d entries of kind %s, expected 1", found, kind);
}

static uint32_t count_entries(const char *kind)
{
    DIR *dp = opendir(dir);
    assert_non_null(dp);
    uint32_t n = 0;
    for (struct dirent *e; (e = readdir(dp));) {
        const char *dot = strrchr(e->d_name, '.');
        n += e->d_name[0] != '.' && dot && !strcmp(dot + 1, kind);
    }
    closedir(dp);
    return n;
}

/* Every entry file in the directory passes the checks a read makes. */
static void expect_consistent(uint32_t entries)
{
    /* The version is read from an entry: the test does not know the build's. */
    char path[1024];
    entry_path("pipelines", path, sizeof path);
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
    assert_int_equal(count_entries("pipelines"), 1);
    expect_consistent(2);
    d = test_device_open();
    assert_true(run_salted(d, 1));
    s = stats_of(d);
    assert_int_equal(s.spirv_hits, 1);
    assert_int_equal(s.blobs_loaded, 1);
    assert_int_equal(s.files.rejected, 0);
    /* Another kernel is compiled and added. */
    assert_true(run_salted(d, 2));
    assert_int_equal(stats_of(d).spirv_hits, 1);
    test_device_close(d);
    expect_consistent(3);
}

/* Only SPIR-V that passed validation and reflection is stored (a hit skips the validator): a
 * kernel that compiles but is refused, here for a uniform buffer outside the metadata binding,
 * leaves no entry, and asking again refuses it again with the same message. */
static void test_refused_kernel_not_stored(void **state)
{
    (void)state;
    static const char src[] = "#version 450\nlayout(local_size_x = 1) in;\n"
                              "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                              "layout(std140, binding = 1) uniform U { uint u; };\n"
                              "void main() { a[0] = u; }\n";
    for (int round = 0; round < 2; round++) {
        cubec_device *d = test_device_open();
        cubec_kernel k;
        cubec_kernel_desc kd = {.name = "refused", .glsl = src};
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_SPIRV, "uniform buffer 'U'");
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
        expect_consistent(2);
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
    expect_consistent(2);
    d = test_device_open();
    assert_true(run_salted(d, 4));
    s = stats_of(d);
    assert_int_equal(s.blobs_refused, 0);
    assert_int_equal(s.blobs_loaded, 1);
    test_device_close(d);
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
        expect_consistent(kernels + 1);
    }
    cubec_device *d = test_device_open();
    uint32_t salts[] = {100, 200, 201, 300, 301, 302, 303};
    for (size_t i = 0; i < sizeof salts / sizeof salts[0]; i++)
        assert_true(run_salted(d, salts[i]));
    kernel_disk_stats s = stats_of(d);
    assert_int_equal(s.spirv_hits, sizeof salts / sizeof salts[0]);
    assert_int_equal(s.files.rejected, 0);
    assert_int_equal(s.blobs_loaded, 1);
    test_device_close(d);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--child")) return child_main(atoi(argv[2]));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_second_device_hits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_spirv_rebuilt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_kernel_not_stored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_pipeline_cache_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processes_share_cache, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
