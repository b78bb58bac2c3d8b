/* Failure objects and per-allocation taint maps (see failure.h). The maps are small sorted-free
 * arrays: ranges never overlap, and setting or clearing a range splits the ranges it cuts. */
#include "failure/failure.h"

#include "base/array.h"
#include "base/strfmt.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static failure oom_failure = {1u << 30, CUBEC_OUT_OF_MEMORY,
                              (char *)"host out of memory while recording a failure"};

failure *failure_oom(void)
{
    return &oom_failure;
}

static failure *make(cubec_code code, char *message)
{
    if (!message) return failure_oom();
    failure *f = malloc(sizeof *f);
    if (!f) {
        free(message);
        return failure_oom();
    }
    f->refs = 1;
    f->code = code;
    f->message = message;
    return f;
}

failure *failure_new(cubec_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *m = strfmtv(fmt, ap);
    va_end(ap);
    return make(code, m);
}

/* Chains longer than this keep their newest links and the root cause. */
#define CHAIN_LIMIT 4096

failure *failure_chain(const failure *cause, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *prefix = strfmtv(fmt, ap);
    va_end(ap);
    if (!prefix) return failure_oom();
    const char *rest = cause->message;
    size_t len = strlen(rest);
    const char *elide = "";
    if (len > CHAIN_LIMIT) {
        /* Keep the last part: it holds the root cause. */
        rest += len - CHAIN_LIMIT;
        elide = "...";
    }
    char *m = strfmt("%s: %s%s", prefix, elide, rest);
    free(prefix);
    return make(cause->code, m);
}

failure *failure_retain(failure *f)
{
    f->refs++;
    return f;
}

void failure_release(failure *f)
{
    if (!f || f == &oom_failure) return;
    if (--f->refs) return;
    free(f->message);
    free(f);
}

failure *taint_find(const taint_map *m, uint64_t offset, uint64_t size)
{
    for (uint32_t i = 0; i < m->count; i++) {
        const taint_range *r = &m->ranges[i];
        if (r->offset < offset + size && offset < r->offset + r->size) return r->failure;
    }
    return NULL;
}

static int push(taint_map *m, uint64_t offset, uint64_t size, failure *f)
{
    if (size == 0) return 1;
    if (array_grow((void **)&m->ranges, &m->cap, (uint64_t)m->count + 1, sizeof *m->ranges))
        return 0;
    m->ranges[m->count++] = (taint_range){offset, size, failure_retain(f)};
    return 1;
}

void taint_clear(taint_map *m, uint64_t offset, uint64_t size)
{
    uint64_t end = offset + size;
    for (uint32_t i = 0; i < m->count;) {
        taint_range r = m->ranges[i];
        if (!(r.offset < end && offset < r.offset + r.size)) {
            i++;
            continue;
        }
        /* Remove r, then put back the parts outside [offset, end). */
        m->ranges[i] = m->ranges[--m->count];
        if (r.offset < offset) push(m, r.offset, offset - r.offset, r.failure);
        if (r.offset + r.size > end) push(m, end, r.offset + r.size - end, r.failure);
        failure_release(r.failure);
        /* Pieces pushed at the end are outside the range: the scan does not revisit them. */
    }
    if (m->count == 0) taint_free(m);
}

void taint_set(taint_map *m, uint64_t offset, uint64_t size, failure *f)
{
    taint_clear(m, offset, size);
    push(m, offset, size, f);
}

void taint_free(taint_map *m)
{
    for (uint32_t i = 0; i < m->count; i++)
        failure_release(m->ranges[i].failure);
    free(m->ranges);
    m->ranges = NULL;
    m->count = m->cap = 0;
}
