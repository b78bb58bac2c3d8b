/* Sorted ranges of numbers (see range_set.h). */
#include "base/range_set.h"

#include "base/array.h"
#include "base/assert.h"

#include <stdlib.h>
#include <string.h>

/* The index of the first range whose lo is greater than n (count when none). */
static uint32_t upper(const range_set *s, uint64_t n)
{
    uint32_t a = 0, b = s->count;
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (s->ranges[m].lo > n)
            b = m;
        else
            a = m + 1;
    }
    return a;
}

int range_set_has(const range_set *s, uint64_t n)
{
    if (!s->count) return 0;
    const range_set_range *last = &s->ranges[s->count - 1];
    if (n >= last->lo) return n < last->hi;
    uint32_t i = upper(s, n);
    return i > 0 && n < s->ranges[i - 1].hi;
}

int range_set_add(range_set *s, uint64_t n)
{
    if (n == UINT64_MAX) return -1;
    uint32_t i = upper(s, n);
    range_set_range *prev = i > 0 ? &s->ranges[i - 1] : NULL;
    range_set_range *next = i < s->count ? &s->ranges[i] : NULL;
    if (prev && n < prev->hi) return 0; /* held already */
    if (prev && prev->hi == n) {
        prev->hi = n + 1;
        if (next && next->lo == prev->hi) {
            /* n closed the gap: the two ranges become one. */
            prev->hi = next->hi;
            memmove(next, next + 1, (size_t)(s->count - i - 1) * sizeof *next);
            s->count--;
        }
        return 0;
    }
    if (next && next->lo == n + 1) {
        next->lo = n;
        return 0;
    }
    /* (array_grow leaves a non-NULL array when it succeeds; the analyzer cannot tell.) */
    if (array_grow((void **)&s->ranges, &s->cap, (uint64_t)s->count + 1, sizeof *s->ranges) ||
        !s->ranges)
        return -1;
    range_set_range *at = s->ranges + i;
    if (i < s->count) memmove(at + 1, at, (size_t)(s->count - i) * sizeof *at);
    *at = (range_set_range){n, n + 1};
    s->count++;
    CUBEC_ASSERT(range_set_has(s, n));
    return 0;
}

void range_set_free(range_set *s)
{
    free(s->ranges);
    memset(s, 0, sizeof *s);
}
