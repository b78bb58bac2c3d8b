/* The disk cache's files (kernel/disk_cache.h): what is put is got back byte for byte, from
 * another cache object on the same directory too; every damaged, truncated, extended or foreign
 * entry is ignored (never returned), counted and replaced by the next write; the directory is
 * held to its limit by evicting the least recently used entries; writers' stale temporary files
 * are removed. Each test works in a directory of its own under /tmp. */
#include "test_util.h"

#include "base/log.h"
#include "kernel/disk_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER 96 /* the header's size (kernel/disk_cache.c) */

static char dir[128];
static char log_path[160]; /* the warnings go here, for the tests to read */

/* Whether a warning containing `needle` was logged. */
static int logged(const char *needle)
{
    FILE *f = fopen(log_path, "rb");
    assert_non_null(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    return strstr(text, needle) != NULL;
}

static int setup(void **state)
{
    (void)state;
    test_temp_dir(dir, sizeof dir, "cubec_test_disk_cache");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_remove_tree(dir);
    return 0;
}

static disk_cache *open_cache(uint64_t max_bytes, const char *version)
{
    disk_cache *c = NULL;
    ASSERT_OK(disk_cache_open(dir, max_bytes, version, &c));
    return c;
}

/* `n` pseudo-random bytes of `seed`: the reference each test compares with. */
static unsigned char *bytes_of(uint32_t seed, size_t n)
{
    unsigned char *p = malloc(n);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)test_rand(&seed);
    return p;
}

/* Asserts a hit holding exactly `want`. */
static void expect_hit(disk_cache *c, const char *kind, const char *key, const void *want,
                       size_t size)
{
    void *got = NULL;
    size_t got_size = 0;
    assert_int_equal(disk_cache_get(c, kind, key, strlen(key), &got, &got_size), 1);
    assert_int_equal(got_size, size);
    assert_memory_equal(got, want, size);
    free(got);
}

static void expect_miss(disk_cache *c, const char *kind, const char *key)
{
    void *got = (void *)1;
    size_t got_size = 1;
    assert_int_equal(disk_cache_get(c, kind, key, strlen(key), &got, &got_size), 0);
    assert_null(got);
    assert_int_equal(got_size, 0);
}

static disk_cache_stats stats_of(disk_cache *c)
{
    disk_cache_stats s;
    disk_cache_get_stats(c, &s);
    return s;
}

static size_t file_size(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) fail_msg("stat %s: %s", path, strerror(errno));
    return (size_t)st.st_size;
}

static unsigned char *read_file(const char *path, size_t *size)
{
    *size = file_size(path);
    unsigned char *p = malloc(*size);
    assert_non_null(p);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(p, 1, *size, f), *size);
    fclose(f);
    return p;
}

static void write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    fclose(f);
}

static void test_hit_and_miss(void **state)
{
    (void)state;
    disk_cache *c = open_cache(1 << 20, "test 1");
    unsigned char *a = bytes_of(1, 1000), *b = bytes_of(2, 4);
    expect_miss(c, "spirv", "kernel a");
    assert_int_equal(disk_cache_put(c, "spirv", "kernel a", 8, a, 1000), 1);
    assert_int_equal(disk_cache_put(c, "spirv", "kernel b", 8, b, 4), 1);
    expect_hit(c, "spirv", "kernel a", a, 1000);
    expect_hit(c, "spirv", "kernel b", b, 4);
    /* Another kind or key is another entry. */
    expect_miss(c, "pipelines", "kernel a");
    expect_miss(c, "spirv", "kernel c");
    /* A write replaces the entry. */
    assert_int_equal(disk_cache_put(c, "spirv", "kernel a", 8, b, 4), 1);
    expect_hit(c, "spirv", "kernel a", b, 4);
    disk_cache_stats s = stats_of(c);
    assert_int_equal(s.hits, 3);
    assert_int_equal(s.misses, 3);
    assert_int_equal(s.rejected, 0);
    assert_int_equal(s.writes, 3);
    disk_cache_close(c);
    /* Another cache object (another process) on the directory finds them; another version of
     * cubec does not. */
    c = open_cache(1 << 20, "test 1");
    expect_hit(c, "spirv", "kernel b", b, 4);
    disk_cache_close(c);
    c = open_cache(1 << 20, "test 2");
    expect_miss(c, "spirv", "kernel b");
    assert_int_equal(stats_of(c).rejected, 0);
    uint32_t valid = 0, invalid = 0;
    uint64_t bytes = 0;
    disk_cache_close(c);
    c = open_cache(1 << 20, "test 1");
    ASSERT_OK(disk_cache_verify(c, &valid, &invalid, &bytes));
    assert_int_equal(valid, 2);
    assert_int_equal(invalid, 0);
    assert_int_equal(bytes, 2 * (HEADER + 8 + 4));
    disk_cache_close(c);
    free(a);
    free(b);
}

/* An entry cut at every length short of its own is ignored, then rebuilt by a write. */
static void test_truncated(void **state)
{
    (void)state;
    disk_cache *c = open_cache(1 << 20, "test");
    unsigned char *a = bytes_of(3, 300);
    char path[1024];
    disk_cache_path(c, "spirv", "k", 1, path, sizeof path);
    assert_int_equal(disk_cache_put(c, "spirv", "k", 1, a, 300), 1);
    size_t size = 0;
    unsigned char *whole = read_file(path, &size);
    assert_int_equal(size, HEADER + 1 + 300);
    uint64_t rejected = 0;
    for (size_t len = 0; len < size; len += len < HEADER + 8 ? 1 : 37) {
        write_file(path, whole, len);
        expect_miss(c, "spirv", "k");
        assert_int_equal(stats_of(c).rejected, ++rejected);
    }
    /* Longer than it says is as bad. */
    unsigned char *longer = malloc(size + 1);
    memcpy(longer, whole, size);
    longer[size] = 0;
    write_file(path, longer, size + 1);
    expect_miss(c, "spirv", "k");
    assert_int_equal(stats_of(c).rejected, ++rejected);
    assert_int_equal(disk_cache_put(c, "spirv", "k", 1, a, 300), 1);
    expect_hit(c, "spirv", "k", a, 300);
    free(longer);
    free(whole);
    free(a);
    disk_cache_close(c);
}

/* Every single flipped bit of an entry, header, key or payload, makes it ignored. */
static void test_flipped_bytes(void **state)
{
    (void)state;
    disk_cache *c = open_cache(1 << 20, "test");
    unsigned char *a = bytes_of(4, 64);
    char path[1024];
    disk_cache_path(c, "spirv", "key", 3, path, sizeof path);
    assert_int_equal(disk_cache_put(c, "spirv", "key", 3, a, 64), 1);
    size_t size = 0;
    unsigned char *whole = read_file(path, &size);
    uint64_t rejected = 0;
    for (size_t i = 0; i < size; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            whole[i] ^= (unsigned char)(1u << bit);
            write_file(path, whole, size);
            whole[i] ^= (unsigned char)(1u << bit);
            expect_miss(c, "spirv", "key");
            if (stats_of(c).rejected != ++rejected)
                fail_msg("a flipped bit %d at byte %zu was not noticed", bit, i);
        }
    }
    write_file(path, whole, size);
    expect_hit(c, "spirv", "key", a, 64);
    free(whole);
    free(a);
    disk_cache_close(c);
}

/* Entries that are whole but not this cache's: another cubec version's file, another key's file
 * under this key's name, a file that is not an entry at all, and a directory. */
static void test_foreign(void **state)
{
    (void)state;
    disk_cache *mine = open_cache(1 << 20, "version mine");
    disk_cache *theirs = open_cache(1 << 20, "version theirs");
    unsigned char *a = bytes_of(5, 100);
    char path[1024], other[1024];
    disk_cache_path(mine, "spirv", "k", 1, path, sizeof path);
    /* Another version's entry of the same key, moved to this version's name. */
    assert_int_equal(disk_cache_put(theirs, "spirv", "k", 1, a, 100), 1);
    disk_cache_path(theirs, "spirv", "k", 1, other, sizeof other);
    assert_int_equal(rename(other, path), 0);
    expect_miss(mine, "spirv", "k");
    assert_int_equal(stats_of(mine).rejected, 1);
    /* Another key's entry of this version, under this key's name. */
    assert_int_equal(disk_cache_put(mine, "spirv", "j", 1, a, 100), 1);
    disk_cache_path(mine, "spirv", "j", 1, other, sizeof other);
    assert_int_equal(rename(other, path), 0);
    expect_miss(mine, "spirv", "k");
    assert_int_equal(stats_of(mine).rejected, 2);
    /* Not an entry: text, and an entry's header with another magic. */
    write_file(path, "hello, cache\n", 13);
    expect_miss(mine, "spirv", "k");
    assert_int_equal(stats_of(mine).rejected, 3);
    unlink(path);
    assert_int_equal(mkdir(path, 0700), 0);
    expect_miss(mine, "spirv", "k");
    assert_int_equal(stats_of(mine).rejected, 4);
    /* A write cannot replace a directory: it fails, and the entry stays a miss. */
    assert_int_equal(disk_cache_put(mine, "spirv", "k", 1, a, 100), 0);
    assert_int_equal(stats_of(mine).failed, 1);
    assert_int_equal(rmdir(path), 0);
    assert_int_equal(disk_cache_put(mine, "spirv", "k", 1, a, 100), 1);
    expect_hit(mine, "spirv", "k", a, 100);
    /* Each was ignored with a warning naming the file and why. */
    const char *reasons[] = {"written by another version of cubec", "another key",
                             "truncated: shorter than its header", "not a regular file"};
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
        char line[1200];
        snprintf(line, sizeof line, "kernel cache: ignoring %s: %s", path, reasons[i]);
        if (!logged(line)) fail_msg("no warning \"%s\"", line);
    }
    free(a);
    disk_cache_close(mine);
    disk_cache_close(theirs);
}

/* Sets an entry's mtime to `seconds` after the epoch (LRU order without sleeping). */
static void set_age(disk_cache *c, const char *key, time_t seconds)
{
    char path[1024];
    disk_cache_path(c, "spirv", key, strlen(key), path, sizeof path);
    struct timespec t[2] = {{seconds, 0}, {seconds, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

static int present(disk_cache *c, const char *key)
{
    char path[1024];
    disk_cache_path(c, "spirv", key, strlen(key), path, sizeof path);
    return access(path, F_OK) == 0;
}

/* The directory stays under its limit, evicting the least recently used first: a hit counts as a
 * use. The model: entries in order of last use, the oldest dropped until the sizes fit. */
static void test_eviction(void **state)
{
    (void)state;
    const size_t payload = 1000, entry = HEADER + 2 + payload;
    disk_cache *c = open_cache(4 * entry + entry / 2, "test"); /* room for four entries */
    unsigned char *a = bytes_of(6, payload);
    const char *keys[] = {"k0", "k1", "k2", "k3", "k4", "k5", "k6"};
    int used[7]; /* the model: a use counter per key, 0 = evicted or never written */
    int clock = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(disk_cache_put(c, "spirv", keys[i], 2, a, payload), 1);
        set_age(c, keys[i], 1000 + i);
        used[i] = ++clock;
    }
    assert_int_equal(stats_of(c).evictions, 0);
    /* k0 is used again: k1 is now the least recently used. */
    expect_hit(c, "spirv", "k0", a, payload);
    used[0] = ++clock;
    for (int i = 4; i < 7; i++) {
        assert_int_equal(disk_cache_put(c, "spirv", keys[i], 2, a, payload), 1);
        used[i] = ++clock;
        /* The model evicts the oldest use among the present entries. */
        int oldest = -1;
        for (int k = 0; k < i; k++)
            if (used[k] && (oldest < 0 || used[k] < used[oldest])) oldest = k;
        used[oldest] = 0;
        for (int k = 0; k <= i; k++)
            if (present(c, keys[k]) != (used[k] != 0))
                fail_msg("after writing %s: %s is %s", keys[i], keys[k],
                         used[k] ? "gone but used recently" : "kept but least recently used");
    }
    assert_true(present(c, "k0"));
    assert_false(present(c, "k1"));
    assert_int_equal(stats_of(c).evictions, 3);
    uint32_t valid = 0, invalid = 0;
    uint64_t bytes = 0;
    ASSERT_OK(disk_cache_verify(c, &valid, &invalid, &bytes));
    assert_int_equal(valid, 4);
    assert_int_equal(invalid, 0);
    assert_true(bytes <= 4 * entry + entry / 2);
    /* A payload larger than the whole limit is not written at all. */
    unsigned char *big = bytes_of(7, 5 * entry);
    assert_int_equal(disk_cache_put(c, "spirv", "big", 3, big, 5 * entry), 0);
    expect_miss(c, "spirv", "big");
    free(big);
    free(a);
    disk_cache_close(c);
}

/* A writer that died leaves its temporary file: removed by a later write once an hour old,
 * while a fresh one (a writer at work) is left alone. */
static void test_stale_temporary_files(void **state)
{
    (void)state;
    disk_cache *c = open_cache(1 << 20, "test");
    char stale[160], fresh[160];
    snprintf(stale, sizeof stale, "%s/.tmp-dead-writer", dir);
    snprintf(fresh, sizeof fresh, "%s/.tmp-live-writer", dir);
    write_file(stale, "x", 1);
    write_file(fresh, "x", 1);
    struct timespec t[2] = {{1000, 0}, {1000, 0}};
    assert_int_equal(utimensat(AT_FDCWD, stale, t, 0), 0);
    assert_int_equal(disk_cache_put(c, "spirv", "k", 1, "abcd", 4), 1);
    assert_int_equal(access(stale, F_OK), -1);
    assert_int_equal(access(fresh, F_OK), 0);
    disk_cache_close(c);
}

/* Where the cache goes: the configured directory, `none`, or the XDG default. */
static void test_directories(void **state)
{
    (void)state;
    char out[512];
    disk_cache_resolve_dir("none", out, sizeof out);
    assert_string_equal(out, "");
    disk_cache_resolve_dir("/some/where", out, sizeof out);
    assert_string_equal(out, "/some/where");
    setenv("XDG_CACHE_HOME", "/xdg/cache", 1);
    setenv("HOME", "/home/someone", 1);
    disk_cache_resolve_dir("", out, sizeof out);
    assert_string_equal(out, "/xdg/cache/cubec");
    setenv("XDG_CACHE_HOME", "relative/cache", 1); /* ignored, as the specification says */
    disk_cache_resolve_dir("", out, sizeof out);
    assert_string_equal(out, "/home/someone/.cache/cubec");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    disk_cache_resolve_dir("", out, sizeof out);
    assert_string_equal(out, "");
    /* A missing directory is created with its parents; a file in the way is refused. */
    char deep[160], file[160];
    snprintf(deep, sizeof deep, "%s/a/b/c", dir);
    disk_cache *c = NULL;
    ASSERT_OK(disk_cache_open(deep, 1 << 20, "test", &c));
    assert_string_equal(disk_cache_dir(c), deep);
    disk_cache_close(c);
    snprintf(file, sizeof file, "%s/file", dir);
    write_file(file, "x", 1);
    c = NULL;
    ASSERT_ERROR(disk_cache_open(file, 1 << 20, "test", &c), CUBEC_INVALID_ARGUMENT,
                 "is not a directory");
    assert_null(c);
}

int main(void)
{
    snprintf(log_path, sizeof log_path, "%s/cubec_test_disk_cache_%d.log", test_tmp_dir(),
             (int)getpid());
    unlink(log_path);
    if (log_configure(LOG_WARN, log_path)) fail_msg("cannot log to %s", log_path);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hit_and_miss, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flipped_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eviction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_temporary_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directories, setup, teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(log_path);
    return failed;
}
