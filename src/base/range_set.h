/* A set of 64-bit numbers kept as sorted, disjoint, non-adjacent ranges [lo, hi). Numbers that
 * arrive mostly in order (ids from a counter) cost one range for a whole run, so the set stays
 * small however many are added; a lookup is a binary search, with the last range checked first.
 * Not thread-safe: the owner holds its lock. */
#ifndef CUBEC_BASE_RANGE_SET_H
#define CUBEC_BASE_RANGE_SET_H

#include "base/status.h"

#include <stdint.h>

typedef struct range_set_range {
    uint64_t lo, hi; /* [lo, hi), hi > lo */
} range_set_range;

typedef struct range_set {
    range_set_range *ranges; /* sorted by lo; never touching or overlapping */
    uint32_t count, cap;
} range_set;

/* Adds `n` (UINT64_MAX cannot be held: a range ends past its last number). Returns 0, or -1 when
 * the host is out of memory; the set is unchanged then. */
MUST_USE int range_set_add(range_set *s, uint64_t n);
/* 1 when `n` was added. */
int range_set_has(const range_set *s, uint64_t n);
void range_set_free(range_set *s);

#endif
