/* Element types of `cubec run`'s buffers: their names on the command line (f16, f32, f64, i8,
 * u8, i16, u16, i32, u32, i64, u64), sizes, numpy descriptors, and how values of each are parsed,
 * printed and generated (iota, the seeded random fill). Buffers are bytes to the library; the
 * type only says how the tool makes and shows them. */
#ifndef CUBEC_TOOLS_DTYPE_H
#define CUBEC_TOOLS_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum dtype {
    DTYPE_NONE = 0, /* untyped bytes (zero:SIZE, a raw file:) */
    DTYPE_F16,
    DTYPE_F32,
    DTYPE_F64,
    DTYPE_I8,
    DTYPE_U8,
    DTYPE_I16,
    DTYPE_U16,
    DTYPE_I32,
    DTYPE_U32,
    DTYPE_I64,
    DTYPE_U64,
    DTYPE_COUNT
} dtype;

/* "f16" ... "u64" ("bytes" for DTYPE_NONE). */
const char *dtype_name(dtype t);
/* The type named `name`, or DTYPE_NONE. */
dtype dtype_parse(const char *name);
/* Bytes per element (1 for DTYPE_NONE). */
size_t dtype_size(dtype t);
/* numpy's little-endian descriptor: "<f2", "|i1", ... */
const char *dtype_npy_descr(dtype t);
/* The type of a numpy descriptor ("<f4", "=f4", "|u1", "<i8"...), or DTYPE_NONE (big-endian,
 * complex, structured and the other kinds are not buffers the tool makes). */
dtype dtype_from_npy_descr(const char *descr);
/* "f16, f32, f64, i8, u8, i16, u16, i32, u32, i64 or u64", for messages. */
const char *dtype_list(void);

/* Parses one value of type `t` (decimal, or 0x hex for integers; in range; floats may be
 * inf/nan) into `out` (dtype_size(t) bytes, little-endian). 0 on success. */
int dtype_parse_value(dtype t, const char *text, void *out);
/* Element i of iota: the value i in type `t` (wrapping for integers narrower than i). */
void dtype_iota(dtype t, uint64_t i, void *out);
/* Element i of the random fill with `seed`: x = splitmix64(seed + (i + 1) * 0x9E3779B97F4A7C15);
 * floats take the top bits as a fraction in [0, 1) (f16: 11 bits, f32: 24, f64: 53), integers
 * the low bytes of x (every value of the type equally likely). Documented in docs/cli.md, where
 * a few lines of Python reproduce it. */
void dtype_random(dtype t, uint64_t seed, uint64_t i, void *out);
/* Prints one element at `p` (shortest round-trip form for floats). */
void dtype_print(FILE *out, dtype t, const void *p);

/* IEEE binary16 conversions, round to nearest even. */
uint16_t dtype_f32_to_f16(float f);
float dtype_f16_to_f32(uint16_t h);

#endif
