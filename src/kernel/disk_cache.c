/* The disk cache of compiled kernels (see disk_cache.h and docs/kernel-cache.md).
 *
 * An entry file: a header of HEADER_SIZE bytes, the key, the payload. Numbers are in the host's
 * byte order (a cache written on a host of the other order fails the magic and header checks and
 * is rebuilt). The header checksum covers the header; the entry checksum covers key and payload;
 * both are FNV-1a (base/hash.h), which catches truncation and flipped bytes, not forgery: whoever
 * can write the directory can make cubec run any kernel anyway. */
#include "kernel/disk_cache.h"

#include "base/hash.h"
#include "base/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* "CUBECKC\n", without a terminator. */
static const unsigned char magic[8] = {'C', 'U', 'B', 'E', 'C', 'K', 'C', '\n'};
#define HEADER_SIZE 96u
/* A second FNV-1a basis: the two halves of an entry's name, and the entry checksum. */
#define HASH_SEED_B 0x84222325cbf29ce4ull
/* Temporary files of writers that died are removed when older than this. */
#define STALE_TEMP_SECONDS 3600
/* Room for a path in the directory: the directory (at most 447 bytes) and a name. */
#define PATH_CAP 1024

struct disk_cache {
    char dir[448];
    char version[DISK_CACHE_VERSION_BYTES];
    uint64_t max_bytes;
    atomic_uint_fast64_t hits, misses, rejected, writes, failed, evictions;
    atomic_int warned_write; /* one warning for failed writes, the rest at debug */
};

/* Field offsets in the header. */
enum {
    OFF_MAGIC = 0,
    OFF_FORMAT = 8,
    OFF_HEADER_SIZE = 12,
    OFF_VERSION = 16,
    OFF_KEY_SIZE = 64,
    OFF_PAYLOAD_SIZE = 72,
    OFF_CHECKSUM = 80,
    OFF_HEADER_CHECKSUM = 88,
};
_Static_assert(OFF_VERSION + DISK_CACHE_VERSION_BYTES == OFF_KEY_SIZE, "header layout");
_Static_assert(OFF_HEADER_CHECKSUM + 8 == HEADER_SIZE, "header layout");

void disk_cache_resolve_dir(const char *configured, char *out, size_t cap)
{
    out[0] = 0;
    if (configured && !strcmp(configured, "none")) return;
    if (configured && *configured) {
        snprintf(out, cap, "%s", configured);
        return;
    }
    /* The XDG base directory specification: a relative XDG_CACHE_HOME is to be ignored. */
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        snprintf(out, cap, "%s/cubec", xdg);
    else if (home && *home)
        snprintf(out, cap, "%s/.cache/cubec", home);
}

/* mkdir -p, each missing component with mode 0700 (a cache holds the user's kernels). */
static cubec_status make_dirs(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s", dir);
    size_t n = strlen(path);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != 0) continue;
        char keep = path[i];
        path[i] = 0;
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return status_make(CUBEC_INVALID_ARGUMENT, "cannot create the directory '%s': %s", path,
                               strerror(errno));
        path[i] = keep;
    }
    struct stat st;
    if (stat(dir, &st) != 0)
        return status_make(CUBEC_INVALID_ARGUMENT, "'%s': %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return status_make(CUBEC_INVALID_ARGUMENT, "'%s' is not a directory", dir);
    if (access(dir, R_OK | W_OK | X_OK) != 0)
        return status_make(CUBEC_INVALID_ARGUMENT, "the directory '%s' is not writable: %s", dir,
                           strerror(errno));
    return NULL;
}

cubec_status disk_cache_open(const char *dir, uint64_t max_bytes, const char *version,
                             disk_cache **out)
{
    *out = NULL;
    if (!dir || !*dir) return status_make(CUBEC_INVALID_ARGUMENT, "no cache directory");
    if (strlen(dir) >= sizeof((disk_cache *)0)->dir)
        return status_make(CUBEC_INVALID_ARGUMENT, "the cache directory '%s' is too long", dir);
    RETURN_IF_ERROR(make_dirs(dir));
    disk_cache *c = calloc(1, sizeof *c);
    if (!c) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (disk cache)");
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    snprintf(c->version, sizeof c->version, "%s", version ? version : "");
    c->max_bytes = max_bytes;
    *out = c;
    return NULL;
}

void disk_cache_close(disk_cache *c)
{
    free(c);
}

const char *disk_cache_dir(const disk_cache *c)
{
    return c->dir;
}

static void digest(const disk_cache *c, const char *kind, const void *key, size_t key_size,
                   uint64_t out[2])
{
    const uint64_t seeds[2] = {HASH_SEED, HASH_SEED_B};
    for (int i = 0; i < 2; i++) {
        uint64_t h = hash_str(seeds[i], c->version);
        h = hash_str(h, kind);
        h = hash_u64(h, key_size);
        out[i] = hash_bytes(h, key, key_size);
    }
}

const char *disk_cache_path(const disk_cache *c, const char *kind, const void *key, size_t key_size,
                            char *buf, size_t cap)
{
    uint64_t d[2];
    digest(c, kind, key, key_size, d);
    snprintf(buf, cap, "%s/%016" PRIx64 "%016" PRIx64 ".%s", c->dir, d[0], d[1], kind);
    return buf;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t entry_checksum(const void *key, size_t key_size, const void *data, size_t size)
{
    return hash_bytes(hash_bytes(HASH_SEED_B, key, key_size), data, size);
}

/* Why the entry file `buf` (of `size` bytes) is not the entry of `key`, or NULL when it is. */
static const char *entry_problem(const disk_cache *c, const unsigned char *buf, size_t size,
                                 const void *key, size_t key_size)
{
    if (size < HEADER_SIZE) return "truncated: shorter than its header";
    if (memcmp(buf + OFF_MAGIC, magic, sizeof magic) != 0) return "not a cubec cache entry (magic)";
    if (get_u64(buf + OFF_HEADER_CHECKSUM) != hash_bytes(HASH_SEED, buf, OFF_HEADER_CHECKSUM))
        return "damaged header (checksum)";
    if (get_u32(buf + OFF_FORMAT) != DISK_CACHE_FORMAT) return "another format version";
    if (get_u32(buf + OFF_HEADER_SIZE) != HEADER_SIZE) return "another header size";
    char version[DISK_CACHE_VERSION_BYTES];
    memcpy(version, buf + OFF_VERSION, sizeof version);
    version[sizeof version - 1] = 0;
    if (strcmp(version, c->version) != 0) return "written by another version of cubec";
    uint64_t ks = get_u64(buf + OFF_KEY_SIZE), ps = get_u64(buf + OFF_PAYLOAD_SIZE);
    if (ks > size || ps > size || HEADER_SIZE + ks + ps != size)
        return "truncated or extended: the sizes in its header do not add up to the file's";
    if (key && (ks != key_size || memcmp(buf + HEADER_SIZE, key, key_size) != 0))
        return "another key (a foreign entry under this name)";
    if (get_u64(buf + OFF_CHECKSUM) !=
        entry_checksum(buf + HEADER_SIZE, (size_t)ks, buf + HEADER_SIZE + ks, (size_t)ps))
        return "damaged contents (checksum)";
    return NULL;
}

/* Reads the whole regular file at `path`, refusing files larger than `limit`, and leaves it open
 * in *out_fd (to touch it on a hit). Returns 0 and sets errno (ENOENT: absent) on failure. */
static int read_entry(const char *path, uint64_t limit, unsigned char **out, size_t *out_size,
                      int *out_fd)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return 0;
    struct stat st;
    int e = 0;
    if (fstat(fd, &st) != 0)
        e = errno;
    else if (!S_ISREG(st.st_mode))
        e = EINVAL;
    else if ((uint64_t)st.st_size > limit)
        e = EFBIG;
    if (e) {
        close(fd);
        errno = e;
        return 0;
    }
    size_t size = (size_t)st.st_size;
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        errno = ENOMEM;
        return 0;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    *out = buf;
    *out_size = got; /* a file cut short while it was read fails the size check */
    *out_fd = fd;
    return 1;
}

static void warn_ignored(const char *path, const char *why)
{
    LOG(LOG_WARN, LOG_SYS_COMPILE, "kernel cache: ignoring %s: %s; rebuilding it", path, why);
}

int disk_cache_get(disk_cache *c, const char *kind, const void *key, size_t key_size,
                   void **out_data, size_t *out_size)
{
    *out_data = NULL;
    *out_size = 0;
    char path[PATH_CAP];
    disk_cache_path(c, kind, key, key_size, path, sizeof path);
    unsigned char *buf = NULL;
    size_t size = 0;
    int fd = -1;
    if (!read_entry(path, c->max_bytes + HEADER_SIZE + key_size, &buf, &size, &fd)) {
        if (errno != ENOENT) {
            warn_ignored(path, errno == EFBIG    ? "larger than the cache's limit"
                               : errno == EINVAL ? "not a regular file"
                                                 : strerror(errno));
            atomic_fetch_add(&c->rejected, 1);
        }
        atomic_fetch_add(&c->misses, 1);
        return 0;
    }
    const char *problem = entry_problem(c, buf, size, key, key_size);
    if (problem) {
        warn_ignored(path, problem);
        close(fd);
        free(buf);
        atomic_fetch_add(&c->rejected, 1);
        atomic_fetch_add(&c->misses, 1);
        return 0;
    }
    /* Recently used: eviction goes by mtime. Failing to touch costs only LRU accuracy. */
    (void)futimens(fd, NULL);
    close(fd);
    size_t payload = (size_t)get_u64(buf + OFF_PAYLOAD_SIZE);
    memmove(buf, buf + HEADER_SIZE + key_size, payload);
    *out_data = buf;
    *out_size = payload;
    atomic_fetch_add(&c->hits, 1);
    return 1;
}

static int write_all(int fd, const void *data, size_t size)
{
    const unsigned char *p = data;
    while (size) {
        ssize_t w = write(fd, p, size);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return 0;
        p += w;
        size -= (size_t)w;
    }
    return 1;
}

static int is_entry_name(const char *name)
{
    size_t hex = strspn(name, "0123456789abcdef");
    return hex == 32 && name[32] == '.' && name[33] &&
           strspn(name + 33, "abcdefghijklmnopqrstuvwxyz") == strlen(name + 33);
}

static int is_temp_name(const char *name)
{
    return !strncmp(name, ".tmp-", 5);
}

typedef struct file_age {
    struct timespec mtime;
    uint64_t size;
    char name[48];
} file_age;

static int older_first(const void *a, const void *b)
{
    const file_age *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Removes the least recently used entries until the directory holds at most max_bytes, and
 * temporary files that writers which died left behind. Other processes may evict at the same
 * time: a file already gone is no error. */
static void evict(disk_cache *c)
{
    DIR *dir = opendir(c->dir);
    if (!dir) return;
    file_age *files = NULL;
    size_t count = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    char path[PATH_CAP];
    for (struct dirent *e; (e = readdir(dir));) {
        int entry = is_entry_name(e->d_name), temp = is_temp_name(e->d_name);
        if ((!entry && !temp) || strlen(e->d_name) >= sizeof files[0].name) continue;
        struct stat st;
        if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (temp) {
            if (now - st.st_mtime > STALE_TEMP_SECONDS) (void)unlinkat(dirfd(dir), e->d_name, 0);
            continue;
        }
        if (count == cap) {
            size_t grown = cap ? cap * 2 : 64;
            file_age *more = realloc(files, grown * sizeof *files);
            if (!more) break;
            files = more;
            cap = grown;
        }
        files[count].mtime = st.st_mtim;
        files[count].size = (uint64_t)st.st_size;
        memcpy(files[count].name, e->d_name, strlen(e->d_name) + 1); /* shorter: checked above */
        total += (uint64_t)st.st_size;
        count++;
    }
    if (total > c->max_bytes) {
        qsort(files, count, sizeof *files, older_first);
        for (size_t i = 0; i < count && total > c->max_bytes; i++) {
            snprintf(path, sizeof path, "%s/%s", c->dir, files[i].name);
            if (unlinkat(dirfd(dir), files[i].name, 0) == 0) {
                atomic_fetch_add(&c->evictions, 1);
                LOG(LOG_DEBUG, LOG_SYS_COMPILE, "kernel cache: evicted %s (%" PRIu64 " bytes)",
                    path, files[i].size);
            }
            total -= files[i].size; /* gone either way, by us or by another process */
        }
    }
    free(files);
    closedir(dir);
}

static void write_failed(disk_cache *c, const char *path, const char *what)
{
    atomic_fetch_add(&c->failed, 1);
    int first = atomic_exchange(&c->warned_write, 1) == 0;
    LOG(first ? LOG_WARN : LOG_DEBUG, LOG_SYS_COMPILE,
        "kernel cache: cannot write %s (%s: %s); going on without it", path, what, strerror(errno));
}

int disk_cache_put(disk_cache *c, const char *kind, const void *key, size_t key_size,
                   const void *data, size_t size)
{
    if (size > c->max_bytes || HEADER_SIZE + key_size > c->max_bytes - size) return 0;
    char path[PATH_CAP], temp[PATH_CAP + 64];
    disk_cache_path(c, kind, key, key_size, path, sizeof path);
    const char *name = strrchr(path, '/') + 1;
    snprintf(temp, sizeof temp, "%s/.tmp-%.40s-XXXXXX", c->dir, name);
    int fd = mkstemp(temp);
    if (fd < 0) {
        write_failed(c, path, "creating a temporary file");
        return 0;
    }
    unsigned char header[HEADER_SIZE] = {0};
    memcpy(header + OFF_MAGIC, magic, sizeof magic);
    const uint32_t format = DISK_CACHE_FORMAT, header_size = HEADER_SIZE;
    memcpy(header + OFF_FORMAT, &format, 4);
    memcpy(header + OFF_HEADER_SIZE, &header_size, 4);
    memcpy(header + OFF_VERSION, c->version, sizeof c->version); /* NUL-padded */
    const uint64_t ks = key_size, ps = size, sum = entry_checksum(key, key_size, data, size);
    memcpy(header + OFF_KEY_SIZE, &ks, 8);
    memcpy(header + OFF_PAYLOAD_SIZE, &ps, 8);
    memcpy(header + OFF_CHECKSUM, &sum, 8);
    const uint64_t hsum = hash_bytes(HASH_SEED, header, OFF_HEADER_CHECKSUM);
    memcpy(header + OFF_HEADER_CHECKSUM, &hsum, 8);
    /* No fsync: an entry cut short by a crash fails its checks and is rebuilt. */
    int ok = write_all(fd, header, sizeof header) && write_all(fd, key, key_size) &&
             write_all(fd, data, size);
    if (close(fd) != 0) ok = 0;
    if (!ok) {
        write_failed(c, path, "writing");
        unlink(temp);
        return 0;
    }
    /* rename() replaces atomically: readers see the old entry or the new one, never a part. */
    if (rename(temp, path) != 0) {
        write_failed(c, path, "renaming the temporary file");
        unlink(temp);
        return 0;
    }
    atomic_fetch_add(&c->writes, 1);
    evict(c);
    return 1;
}

void disk_cache_get_stats(disk_cache *c, disk_cache_stats *out)
{
    *out = (disk_cache_stats){.hits = atomic_load(&c->hits),
                              .misses = atomic_load(&c->misses),
                              .rejected = atomic_load(&c->rejected),
                              .writes = atomic_load(&c->writes),
                              .failed = atomic_load(&c->failed),
                              .evictions = atomic_load(&c->evictions)};
}

cubec_status disk_cache_verify(disk_cache *c, uint32_t *out_valid, uint32_t *out_invalid,
                               uint64_t *out_bytes)
{
    *out_valid = *out_invalid = 0;
    *out_bytes = 0;
    DIR *dir = opendir(c->dir);
    if (!dir) return status_make(CUBEC_INVALID_ARGUMENT, "'%s': %s", c->dir, strerror(errno));
    char path[PATH_CAP];
    for (struct dirent *e; (e = readdir(dir));) {
        if (!is_entry_name(e->d_name)) continue;
        snprintf(path, sizeof path, "%s/%s", c->dir, e->d_name);
        unsigned char *buf = NULL;
        size_t size = 0;
        int fd = -1;
        if (!read_entry(path, UINT64_MAX, &buf, &size, &fd)) {
            (*out_invalid)++;
            continue;
        }
        close(fd);
        *out_bytes += size;
        const char *problem = entry_problem(c, buf, size, NULL, 0);
        /* The name must be the digest of the key the file holds. */
        if (!problem) {
            char want[PATH_CAP];
            const char *kind = strchr(e->d_name, '.') + 1;
            disk_cache_path(c, kind, buf + HEADER_SIZE, (size_t)get_u64(buf + OFF_KEY_SIZE), want,
                            sizeof want);
            if (strcmp(want, path) != 0) problem = "named by another key";
        }
        if (problem) {
            LOG(LOG_WARN, LOG_SYS_COMPILE, "kernel cache: %s: %s", path, problem);
            (*out_invalid)++;
        } else {
            (*out_valid)++;
        }
        free(buf);
    }
    closedir(dir);
    return NULL;
}
