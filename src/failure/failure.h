/* Failures live on memory (spec section 5). A failure is a refcounted error (code + message,
 * root cause last) shared by every byte range that carries it. An allocation keeps a short list of
 * tainted ranges: work that should have written those bytes did not, so a read, check or sync of
 * them returns the failure instead of stale data, and a launch that reads them is skipped and
 * passes the failure on to what it would have written.
 *
 * In cubec most errors are returned by the call that causes them (a kernel that does not compile,
 * a buffer that cannot be allocated): nothing is queued then. What lands on memory is what goes
 * wrong after the call returned: recording or submitting queued work, a lost device, a queued
 * kernel that did not compile (on its launches' declared outputs), and the launches skipped
 * because of those. Not thread-safe: the device lock is held. */
#ifndef CUBEC_FAILURE_FAILURE_H
#define CUBEC_FAILURE_FAILURE_H

#include "base/status.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef struct failure {
    uint32_t refs; /* one per range that carries it, plus temporary holders */
    cubec_code code;
    char *message; /* "<what did not happen>: <cause>", root cause last */
} failure;

/* A failure from an error (the status is not consumed). NULL when the host is out of memory:
 * callers then fall back to a static failure (failure_oom). */
failure *failure_new(cubec_code code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
failure *failure_newv(cubec_code code, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* "<prefix>: <cause's message>" with the cause's code: the chain of a skipped launch. */
failure *failure_chain(const failure *cause, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
failure *failure_retain(failure *f);
void failure_release(failure *f);
/* The failure used when even recording a failure runs out of memory. */
failure *failure_oom(void);

typedef struct taint_range {
    uint64_t offset, size; /* within the allocation */
    failure *failure;
} taint_range;

/* The tainted ranges of one allocation, which never overlap. The first range is kept inline, so
 * a map can always record a failure without allocating, and the usual map (empty, or one range)
 * uses no heap memory; the others are in `more`. */
typedef struct taint_map {
    uint32_t count; /* ranges, the inline one included */
    uint32_t cap;   /* ranges `more` has room for */
    taint_range first;
    taint_range *more;
} taint_map;

/* The failure of the first tainted range overlapping [offset, offset+size), or NULL. */
failure *taint_find(const taint_map *m, uint64_t offset, uint64_t size);
/* Marks [offset, offset+size) as carrying `f` (replacing what those bytes carried). Returns 0;
 * -1 when the host was out of memory and the map recorded it conservatively instead: then every
 * byte that carried a failure still carries one, but some bytes carry a failure they should not
 * (a range that could not be split stays whole), or the new bytes carry the failure of the range
 * they were merged into. A failure is never dropped. */
int taint_set(taint_map *m, uint64_t offset, uint64_t size, failure *f);
/* Those bytes were written: they carry nothing any more (the rest of the map is unchanged).
 * Returns 0; -1 when the host was out of memory for splitting a range around them: that range
 * then stays whole, tainting the written bytes too. */
int taint_clear(taint_map *m, uint64_t offset, uint64_t size);
void taint_free(taint_map *m);

/* For tests: the function the maps reallocate with, to make the host run out of memory on
 * purpose (NULL restores realloc). Global and unsynchronized: set it only while no map changes. */
void taint_set_realloc_hook(void *(*reallocate)(void *ptr, size_t size));

#endif
