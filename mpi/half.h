/* IEEE binary16 <-> binary32 on the host, for the f16 collectives of cubec_mpi: MPI has no f16
 * type, so f16 data is widened to f32 before MPI reduces it and rounded back once after
 * (docs/mpi.md, "f16"). */
#ifndef CUBEC_MPI_HALF_H
#define CUBEC_MPI_HALF_H

#include <stddef.h>
#include <stdint.h>

/* Exact: every binary16 value (subnormals, infinities, NaNs) is a binary32 value. */
float mpi_half_to_float(uint16_t h);
/* Rounded to nearest, ties to even; overflow gives infinity, NaN stays NaN. */
uint16_t mpi_float_to_half(float f);
void mpi_half_widen(const uint16_t *src, float *dst, size_t n);
void mpi_half_narrow(const float *src, uint16_t *dst, size_t n);

#endif
