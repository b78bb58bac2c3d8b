/* Element types of `cubec run` (see dtype.h): one table row per type, and the value parsers,
 * printers and generators that read it. */
#include "dtype.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct dtype_row {
    const char *name;
    size_t size;
    const char *descr; /* numpy, little-endian */
    char kind;         /* 'f' float, 'i' signed, 'u' unsigned */
} dtype_row;

static const dtype_row rows[DTYPE_COUNT] = {
    [DTYPE_NONE] = {"bytes", 1, "|u1", 'u'}, [DTYPE_F16] = {"f16", 2, "<f2", 'f'},
    [DTYPE_F32] = {"f32", 4, "<f4", 'f'},    [DTYPE_F64] = {"f64", 8, "<f8", 'f'},
    [DTYPE_I8] = {"i8", 1, "|i1", 'i'},      [DTYPE_U8] = {"u8", 1, "|u1", 'u'},
    [DTYPE_I16] = {"i16", 2, "<i2", 'i'},    [DTYPE_U16] = {"u16", 2, "<u2", 'u'},
    [DTYPE_I32] = {"i32", 4, "<i4", 'i'},    [DTYPE_U32] = {"u32", 4, "<u4", 'u'},
    [DTYPE_I64] = {"i64", 8, "<i8", 'i'},    [DTYPE_U64] = {"u64", 8, "<u8", 'u'},
};

const char *dtype_name(dtype t)
{
    return rows[t].name;
}

size_t dtype_size(dtype t)
{
    return rows[t].size;
}

const char *dtype_npy_descr(dtype t)
{
    return rows[t].descr;
}

const char *dtype_list(void)
{
    return "f16, f32, f64, i8, u8, i16, u16, i32, u32, i64 or u64";
}

dtype dtype_parse(const char *name)
{
    for (int t = 1; t < DTYPE_COUNT; t++)
        if (strcmp(name, rows[t].name) == 0) return (dtype)t;
    return DTYPE_NONE;
}

dtype dtype_from_npy_descr(const char *descr)
{
    /* The byte order: '<' little, '|' not applicable (one byte), '=' native (little on the
     * machines cubec runs on: x86-64 and aarch64 Linux). */
    if (descr[0] != '<' && descr[0] != '|' && descr[0] != '=') return DTYPE_NONE;
    for (int t = 1; t < DTYPE_COUNT; t++) {
        if (strcmp(descr + 1, rows[t].descr + 1) != 0) continue;
        if (descr[0] == '|' && rows[t].size != 1) return DTYPE_NONE;
        return (dtype)t;
    }
    return DTYPE_NONE;
}

uint16_t dtype_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);  /* NaN: a quiet one */
    if (abs >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* rounds past 65504: inf */
    if (abs < 0x38800000u) {
        /* A subnormal half (or zero): the value in units of 2^-24, rounded to nearest even. */
        if (abs < 0x33000000u) return (uint16_t)sign; /* below half of the smallest: +-0 */
        const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
        const int shift = 126 - (int)(abs >> 23); /* 14..24 */
        uint32_t h = mant >> shift;
        const uint32_t rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    /* Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even. */
    uint32_t h = ((abs - 0x38000000u) >> 13);
    const uint32_t rest = abs & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

float dtype_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
    float f;
    if (exp == 0) {
        f = ldexpf((float)mant, -24); /* zero or subnormal: exact in float */
        uint32_t x;
        memcpy(&x, &f, 4);
        x |= sign;
        memcpy(&f, &x, 4);
        return f;
    }
    uint32_t x =
        exp == 31 ? sign | 0x7F800000u | (mant << 13) : sign | ((exp + 112u) << 23) | (mant << 13);
    memcpy(&f, &x, 4);
    return f;
}

static void store(dtype t, uint64_t bits, void *out)
{
    /* Little-endian hosts (dtype_from_npy_descr): the low bytes of the integer. */
    memcpy(out, &bits, rows[t].size);
}

static void store_float(dtype t, double v, void *out)
{
    if (t == DTYPE_F64) {
        memcpy(out, &v, 8);
    } else if (t == DTYPE_F32) {
        const float f = (float)v;
        memcpy(out, &f, 4);
    } else {
        const uint16_t h = dtype_f32_to_f16((float)v);
        memcpy(out, &h, 2);
    }
}

int dtype_parse_value(dtype t, const char *text, void *out)
{
    if (text[0] == '\0' || text[0] == ' ' || t == DTYPE_NONE) return -1;
    char *end = NULL;
    errno = 0;
    if (rows[t].kind == 'f') {
        const double v = strtod(text, &end);
        if (*end != '\0' || (errno == ERANGE && isinf(v))) return -1;
        /* A finite value beyond the type's range is refused rather than turned into inf. */
        const double max = t == DTYPE_F16   ? 65504.0
                           : t == DTYPE_F32 ? (double)3.4028234663852886e38f
                                            : INFINITY;
        if (isfinite(v) && fabs(v) > max) return -1;
        store_float(t, v, out);
        return 0;
    }
    const int bits = (int)rows[t].size * 8;
    if (rows[t].kind == 'u') {
        if (text[0] == '-' || text[0] == '+') return -1;
        const unsigned long long v = strtoull(text, &end, 0);
        if (errno != 0 || *end != '\0') return -1;
        if (bits < 64 && v >> bits) return -1;
        store(t, (uint64_t)v, out);
        return 0;
    }
    const long long v = strtoll(text, &end, 0);
    if (errno != 0 || *end != '\0') return -1;
    if (bits < 64) {
        const long long lo = -(1ll << (bits - 1)), hi = (1ll << (bits - 1)) - 1;
        if (v < lo || v > hi) return -1;
    }
    store(t, (uint64_t)v, out);
    return 0;
}

void dtype_iota(dtype t, uint64_t i, void *out)
{
    if (rows[t].kind == 'f')
        store_float(t, (double)i, out);
    else
        store(t, i, out);
}

static uint64_t splitmix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

void dtype_random(dtype t, uint64_t seed, uint64_t i, void *out)
{
    const uint64_t x = splitmix64(seed + (i + 1) * 0x9E3779B97F4A7C15ull);
    if (rows[t].kind != 'f') {
        store(t, x, out);
        return;
    }
    /* The top bits as a fraction: exact in the type, so every value is in [0, 1). */
    const int bits = t == DTYPE_F16 ? 11 : t == DTYPE_F32 ? 24 : 53;
    store_float(t, ldexp((double)(x >> (64 - bits)), -bits), out);
}

void dtype_print(FILE *out, dtype t, const void *p)
{
    union {
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        float f32;
        double f64;
    } v;
    memcpy(&v, p, rows[t].size);
    switch (t) {
    case DTYPE_F16: fprintf(out, "%.5g", (double)dtype_f16_to_f32(v.u16)); break;
    case DTYPE_F32: fprintf(out, "%.9g", (double)v.f32); break;
    case DTYPE_F64: fprintf(out, "%.17g", v.f64); break;
    case DTYPE_I8: fprintf(out, "%" PRId8, v.i8); break;
    case DTYPE_NONE:
    case DTYPE_U8: fprintf(out, "%" PRIu8, v.u8); break;
    case DTYPE_I16: fprintf(out, "%" PRId16, v.i16); break;
    case DTYPE_U16: fprintf(out, "%" PRIu16, v.u16); break;
    case DTYPE_I32: fprintf(out, "%" PRId32, v.i32); break;
    case DTYPE_U32: fprintf(out, "%" PRIu32, v.u32); break;
    case DTYPE_I64: fprintf(out, "%" PRId64, v.i64); break;
    case DTYPE_U64: fprintf(out, "%" PRIu64, v.u64); break;
    case DTYPE_COUNT: break;
    }
}
