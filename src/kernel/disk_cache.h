/* A directory of compiled kernels shared by processes (docs/kernel-cache.md): entries of bytes
 * (SPIR-V, the driver's pipeline cache) found by a key of bytes (what defines the entry).
 *
 * Every entry is a file of its own, named by a 128-bit digest of its kind, key and cubec's
 * version, holding a header (magic, format version, cubec version, sizes, checksums), the key
 * itself and the payload. Nothing read is trusted: an entry whose header, size, key or checksum
 * does not match is ignored with a warning (the caller rebuilds it, and its write replaces the
 * file). Writes go to a temporary file that is renamed into place, so a reader sees a whole entry
 * or none, whichever process wrote it. The directory is held to a size by evicting the least
 * recently used entries (a hit touches its file's mtime). Thread-safe: it keeps no state but its
 * settings and counters. */
#ifndef CUBEC_KERNEL_DISK_CACHE_H
#define CUBEC_KERNEL_DISK_CACHE_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct disk_cache disk_cache;

/* What a cache did since it was opened. */
typedef struct disk_cache_stats {
    uint64_t hits;      /* entries found and valid */
    uint64_t misses;    /* entries absent or ignored */
    uint64_t rejected;  /* entries ignored: corrupt, truncated, foreign (counted in misses too) */
    uint64_t writes;    /* entries written */
    uint64_t failed;    /* writes that failed (the cache goes on without the entry) */
    uint64_t evictions; /* entries removed to stay under the size limit */
} disk_cache_stats;

/* The format of the files (the header's format version): a change of layout bumps it. */
#define DISK_CACHE_FORMAT 1u
/* The header's room for cubec's version; longer versions are cut (their digest still differs). */
#define DISK_CACHE_VERSION_BYTES 48

/* The directory a configured value names: `configured` as given, or for "" the default,
 * $XDG_CACHE_HOME/cubec (an absolute XDG_CACHE_HOME) or else $HOME/.cache/cubec. Writes "" when
 * the cache is off: `configured` is "none", or the default is asked for and neither variable
 * gives one. */
void disk_cache_resolve_dir(const char *configured, char *out, size_t cap);

/* Opens (creating it and its parents, mode 0700) the cache directory `dir`, holding it to
 * `max_bytes`; `version` is cubec's version, which entries must carry. */
MUST_USE cubec_status disk_cache_open(const char *dir, uint64_t max_bytes, const char *version,
                                      disk_cache **out);
/* NULL is accepted. */
void disk_cache_close(disk_cache *c);
const char *disk_cache_dir(const disk_cache *c);

/* The entry of `kind` (a short name of letters: the file's extension) and `key`: returns 1 with
 * a malloc'ed copy of its payload (free() it) in *out_data, or 0 when it is absent or ignored. */
int disk_cache_get(disk_cache *c, const char *kind, const void *key, size_t key_size,
                   void **out_data, size_t *out_size);
/* Stores the entry, replacing one of the same kind and key, then evicts what exceeds the limit.
 * Returns 1 when written; 0 when not (a payload larger than the limit, or a failure, logged). */
int disk_cache_put(disk_cache *c, const char *kind, const void *key, size_t key_size,
                   const void *data, size_t size);
void disk_cache_get_stats(disk_cache *c, disk_cache_stats *out);

/* The path of the entry of `kind` and `key` (for tests that damage entries), into buf. */
const char *disk_cache_path(const disk_cache *c, const char *kind, const void *key, size_t key_size,
                            char *buf, size_t cap);
/* Checks every entry file of the directory as a read would (without touching it): *out_valid
 * entries pass, *out_invalid do not; *out_bytes is the size of all of them. For tests. */
MUST_USE cubec_status disk_cache_verify(disk_cache *c, uint32_t *out_valid, uint32_t *out_invalid,
                                        uint64_t *out_bytes);

#endif
