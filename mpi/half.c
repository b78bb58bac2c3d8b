/* binary16 <-> binary32 conversions (half.h), bit by bit so that they do not depend on the
 * compiler's _Float16 support. */
#include "half.h"

#include <string.h>

float mpi_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1fu) {
        bits = sign | 0x7f800000u | (mant << 13); /* infinity or NaN (payload kept) */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign; /* signed zero */
    } else {
        /* Subnormal: shift the mantissa up until its leading one is the implicit bit. */
        uint32_t e = 113u;
        while (!(mant & 0x400u)) {
            mant <<= 1;
            e--;
        }
        bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t mpi_float_to_half(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    uint32_t exp = (bits >> 23) & 0xffu, mant = bits & 0x7fffffu;
    if (exp == 0xffu) /* infinity, or NaN kept quiet and non-zero */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u); /* too large: infinity */
    if (e <= 0) {
        /* Subnormal or zero in binary16: the implicit bit joins the mantissa, shifted out by
         * 1 - e more places, rounded to nearest even. */
        if (e < -10) return sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (mant >> 13), rest = mant & 0x1fffu;
    /* A carry out of the mantissa moves into the exponent, up to infinity: what rounding needs. */
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) half++;
    return (uint16_t)(sign | half);
}

void mpi_half_widen(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = mpi_half_to_float(src[i]);
}

void mpi_half_narrow(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = mpi_float_to_half(src[i]);
}
