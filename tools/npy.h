/* numpy's .npy files for `cubec run` (format versions 1.0, 2.0 and 3.0): reading one into a
 * buffer's bytes with its element type and shape, and writing a buffer back out as one. Only
 * C-order arrays of the types of dtype.h, little-endian, are buffers; anything else is refused
 * with a message saying what the file holds. */
#ifndef CUBEC_TOOLS_NPY_H
#define CUBEC_TOOLS_NPY_H

#include "dtype.h"

#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_DIMS 8

typedef struct npy_array {
    dtype type;
    uint32_t ndim; /* 0: a scalar (one element) */
    uint64_t shape[NPY_MAX_DIMS];
    size_t data_offset; /* where the elements start in the file's bytes */
    uint64_t data_size; /* product of shape times the element size */
} npy_array;

/* Parses the header of a .npy file's bytes. 0 on success; otherwise -1 with the reason in `err`
 * (not naming the file: the caller does). */
int npy_parse(const unsigned char *bytes, size_t size, npy_array *out, char *err, size_t err_size);

/* Writes `data` (`size` bytes of `type`) as a .npy file of `shape` (ndim 0: one dimension of
 * size / element size) to the open file `f`. 0 on success, -1 when a write failed. */
int npy_write(FILE *f, dtype type, const uint64_t *shape, uint32_t ndim, const void *data,
              uint64_t size);

#endif
