/* Fault injection (see fault.h). */
#include "base/fault.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The kinds' names in enum order, and ", page, compile, ..." for messages (read from +2). Both
 * come from CUBEC_FAULT_KINDS, so a new kind is one row there. */
#define KIND_NAME(name, text, description) text,
static const char *const names[CUBEC_FAULT_KIND_COUNT] = {CUBEC_FAULT_KINDS(KIND_NAME)};
#undef KIND_NAME
#define KIND_IN_LIST(name, text, description) ", " text
static const char kind_list[] = "" CUBEC_FAULT_KINDS(KIND_IN_LIST);
#undef KIND_IN_LIST
#define KINDS (kind_list + 2)

const char *cubec_fault_kind_name(cubec_fault_kind kind)
{
    return (unsigned)kind < CUBEC_FAULT_KIND_COUNT ? names[kind] : "unknown";
}

cubec_status fault_parse(fault_plan *p, const char *spec)
{
    const char *s = spec;
    while (s && *s) {
        const char *colon = strchr(s, ':');
        if (!colon) return INVALID_ARG("CUBEC_FAULT: '%s' is not kind:n (kinds: %s)", s, KINDS);
        int kind = -1;
        for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++)
            if (strlen(names[k]) == (size_t)(colon - s) && !strncmp(names[k], s, colon - s))
                kind = k;
        if (kind < 0)
            return INVALID_ARG("CUBEC_FAULT: unknown kind '%.*s' (kinds: %s)", (int)(colon - s), s,
                               KINDS);
        char *end;
        errno = 0;
        unsigned long long n = strtoull(colon + 1, &end, 10);
        if (colon[1] < '0' || colon[1] > '9' || end == colon + 1 || n == 0 || (*end && *end != ','))
            return INVALID_ARG("CUBEC_FAULT: '%s' needs a call number >= 1 after '%s:'", s,
                               names[kind]);
        /* Past 2^64-1 strtoull saturates: that would be a fault that never fires. */
        if (errno == ERANGE || n > UINT64_MAX - p->count[kind])
            return INVALID_ARG("CUBEC_FAULT: '%s': the call number is larger than %" PRIu64, s,
                               UINT64_MAX - p->count[kind]);
        p->fail_at[kind] = p->count[kind] + n;
        if (*end && !end[1])
            return INVALID_ARG("CUBEC_FAULT: '%s' ends with an empty entry after ','", spec);
        s = *end ? end + 1 : end;
    }
    return NULL;
}

cubec_status fault_status(const fault_plan *p, cubec_fault_kind kind, cubec_code code)
{
    return status_make(code, "injected fault: %s call #%" PRIu64, cubec_fault_kind_name(kind),
                       p->count[kind]);
}
