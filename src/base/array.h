/* Growing a heap array: the one way cubec makes room in an array of elements that it reallocates
 * (task rings, slot tables, taint ranges, trace records). The capacity doubles, so appends cost
 * amortized constant time; the byte size is checked for overflow before anything is allocated;
 * and a failure leaves the old array and its capacity as they were, so a caller can reserve room
 * before it changes anything and undo nothing when the host is out of memory.
 *
 * Pass the array as (void **)&array: every pointer type is stored alike on the platforms cubec
 * supports, and the array is only read back through its own type. */
#ifndef CUBEC_BASE_ARRAY_H
#define CUBEC_BASE_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* realloc, or a test's stand-in that fails on purpose. */
typedef void *(*array_realloc_fn)(void *ptr, size_t size);

/* The capacity array_grow gives an empty array (unless more is needed). */
#define ARRAY_FIRST_CAPACITY 8u

/* Makes room for `need` elements of `elem` bytes in *array, which has room for *cap. When *cap is
 * smaller the capacity doubles (an empty array gets `first`) or becomes `need` if that is more,
 * but never exceeds `limit` (a table whose largest index is a marker passes the marker minus one);
 * then the array is reallocated once with `reallocate`. Returns 0 on success, also when there was
 * room already; -1 when `need` exceeds `limit`, the byte size does not fit a size_t, or the
 * reallocation fails, and then *array and *cap are unchanged. `need` is 64 bits wide so that
 * callers can pass count + n without wrapping. */
static inline int array_grow_ex(void **array, uint32_t *cap, uint64_t need, size_t elem,
                                uint32_t first, uint32_t limit, array_realloc_fn reallocate)
{
    if (need <= *cap) return 0;
    uint64_t new_cap = *cap ? (uint64_t)*cap * 2 : first;
    if (new_cap < need) new_cap = need;
    if (new_cap > limit) new_cap = limit;
    if (new_cap < need || elem == 0 || new_cap > SIZE_MAX / elem) return -1;
    void *grown = reallocate(*array, (size_t)new_cap * elem);
    if (!grown) return -1;
    *array = grown;
    *cap = (uint32_t)new_cap;
    return 0;
}

/* array_grow_ex with the defaults: realloc, a first capacity of ARRAY_FIRST_CAPACITY and no
 * limit below UINT32_MAX elements. */
static inline int array_grow(void **array, uint32_t *cap, uint64_t need, size_t elem)
{
    return array_grow_ex(array, cap, need, elem, ARRAY_FIRST_CAPACITY, UINT32_MAX, realloc);
}

#endif
