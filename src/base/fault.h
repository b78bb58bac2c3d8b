/* Fault injection: make the n-th fallible call of a kind fail, to test that every failure ends
 * as a clear error on the call or on the memory the work would have written (docs/errors.md).
 * Counting is always on (an increment per fallible call); a fault is armed by
 * cubec_fault_inject or CUBEC_FAULT=kind:n[,kind:n...] at device open. */
#ifndef CUBEC_BASE_FAULT_H
#define CUBEC_BASE_FAULT_H

#include "base/status.h"

#include <stdint.h>

typedef struct fault_plan {
    uint64_t count[CUBEC_FAULT_KIND_COUNT];   /* fallible calls so far */
    uint64_t fail_at[CUBEC_FAULT_KIND_COUNT]; /* the call number that fails; 0 = none */
} fault_plan;

/* Counts a call of `kind`; 1 when this call must fail. */
static inline int fault_hit(fault_plan *p, cubec_fault_kind kind)
{
    uint64_t n = ++p->count[kind];
    return p->fail_at[kind] && n == p->fail_at[kind];
}

/* Parses "page:3,submit:1" (counted from now) into the plan. */
MUST_USE cubec_status fault_parse(fault_plan *p, const char *spec);
/* "injected fault: <kind> #n" */
MUST_USE cubec_status fault_status(const fault_plan *p, cubec_fault_kind kind, cubec_code code);

#endif
