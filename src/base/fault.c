/* Fault injection (see fault.h). */
#include "base/fault.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[CUBEC_FAULT_KIND_COUNT] = {"page",   "compile", "pipeline",
                                                          "submit", "map",     "wait"};

const char *fault_kind_name(cubec_fault_kind kind)
{
    return (unsigned)kind < CUBEC_FAULT_KIND_COUNT ? names[kind] : "unknown";
}

cubec_status fault_parse(fault_plan *p, const char *spec)
{
    const char *s = spec;
    while (s && *s) {
        const char *colon = strchr(s, ':');
        if (!colon)
            return INVALID_ARG("CUBEC_FAULT: '%s' is not kind:n (kinds: page, compile, pipeline, "
                               "submit, map, wait)",
                               s);
        int kind = -1;
        for (int k = 0; k < CUBEC_FAULT_KIND_COUNT; k++)
            if (strlen(names[k]) == (size_t)(colon - s) && !strncmp(names[k], s, colon - s))
                kind = k;
        if (kind < 0)
            return INVALID_ARG("CUBEC_FAULT: unknown kind '%.*s' (kinds: page, compile, "
                               "pipeline, submit, map, wait)",
                               (int)(colon - s), s);
        char *end;
        unsigned long long n = strtoull(colon + 1, &end, 10);
        if (colon[1] < '0' || colon[1] > '9' || end == colon + 1 || n == 0 ||
            (*end && *end != ','))
            return INVALID_ARG("CUBEC_FAULT: '%s' needs a call number >= 1 after '%s:'", s,
                               names[kind]);
        p->fail_at[kind] = p->count[kind] + n;
        s = *end ? end + 1 : end;
    }
    return NULL;
}

cubec_status fault_status(const fault_plan *p, cubec_fault_kind kind, cubec_code code)
{
    return status_make(code, "injected fault: %s call #%" PRIu64, fault_kind_name(kind),
                       p->count[kind]);
}
