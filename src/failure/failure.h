/* Failures live on memory (spec section 5). A failure is a refcounted error (code + message,
 * root cause last) shared by every byte range that carries it. An allocation keeps a short list of
 * tainted ranges: work that should have written those bytes did not, so a read, check or sync of
 * them returns the failure instead of stale data, and a launch that reads them is skipped and
 * passes the failure on to what it would have written.
 *
 * In cubec most errors are returned by the call that causes them (a kernel that does not compile,
 * a buffer that cannot be allocated): nothing is queued then. What lands on memory is what goes
 * wrong after the call returned: recording or submitting queued work, a lost device, and the
 * launches skipped because of those. Not thread-safe: the device lock is held. */
#ifndef CUBEC_FAILURE_FAILURE_H
#define CUBEC_FAILURE_FAILURE_H

#include "base/status.h"

#include <stdint.h>

typedef struct failure {
    uint32_t refs; /* one per range that carries it, plus temporary holders */
    cubec_code code;
    char *message; /* "<what did not happen>: <cause>", root cause last */
} failure;

/* A failure from an error (the status is not consumed). NULL when the host is out of memory:
 * callers then fall back to a static failure (failure_oom). */
failure *failure_new(cubec_code code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
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

/* The tainted ranges of one allocation (usually empty: then no memory is used). */
typedef struct taint_map {
    taint_range *ranges;
    uint32_t count, cap;
} taint_map;

/* The failure of the first tainted range overlapping [offset, offset+size), or NULL. */
failure *taint_find(const taint_map *m, uint64_t offset, uint64_t size);
/* Marks [offset, offset+size) as carrying `f` (replacing what those bytes carried). */
void taint_set(taint_map *m, uint64_t offset, uint64_t size, failure *f);
/* Those bytes were written: they carry nothing any more (the rest of the map is unchanged). */
void taint_clear(taint_map *m, uint64_t offset, uint64_t size);
void taint_free(taint_map *m);

#endif
