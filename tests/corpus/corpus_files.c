/* Reads the vendored shader files of tests/corpus for the kernel tests (corpus_files.h), and
 * converts the halves their fp16 variants store. */
#include "corpus_files.h"

#include "test_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CUBEC_CORPUS_DIR
#error "CUBEC_CORPUS_DIR: tests/corpus in the source tree (tests/corpus/CMakeLists.txt)"
#endif

void corpus_path(char *out, size_t cap, const char *relative)
{
    int n = snprintf(out, cap, "%s/%s", CUBEC_CORPUS_DIR, relative);
    if (n < 0 || (size_t)n >= cap) fail_msg("path too long: %s/%s", CUBEC_CORPUS_DIR, relative);
}

char *corpus_read_text(const char *relative)
{
    char path[1024];
    corpus_path(path, sizeof path, relative);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s (a vendored corpus file)", path);
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    assert_true(bytes > 0);
    char *text = malloc((size_t)bytes + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)bytes, f), (size_t)bytes);
    fclose(f);
    text[bytes] = '\0';
    return text;
}

unsigned short corpus_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u)
        return (unsigned short)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u); /* rounds past 65504 */
    if (ax < 0x38800000u) {                                         /* a subnormal half or 0 */
        /* The value in units of 2^-24, rounded to nearest even. */
        float a;
        memcpy(&a, &ax, 4);
        float units = a * 16777216.0f;
        uint32_t u = (uint32_t)units;
        float rest = units - (float)u;
        if (rest > 0.5f || (rest == 0.5f && (u & 1u))) u++;
        return (unsigned short)(sign | u);
    }
    uint32_t mant = ax & 0x7fffffu;
    uint32_t exp = (ax >> 23) - 127 + 15;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++; /* a carry into exp is right too */
    return (unsigned short)(sign | h);
}

float corpus_half_to_float(unsigned short h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1fu) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    } else if (mant == 0) {
        x = sign;
    } else { /* subnormal: mant * 2^-24 */
        float f = (float)mant / 16777216.0f;
        return sign ? -f : f;
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint32_t *corpus_read_spirv(const char *dir, const char *stem, const char *built_by,
                            size_t *out_words)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.spv", dir, stem);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s (built by the target %s)", path, built_by);
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    assert_true(bytes > 0 && bytes % 4 == 0);
    uint32_t *words = malloc((size_t)bytes);
    assert_non_null(words);
    assert_int_equal(fread(words, 1, (size_t)bytes, f), (size_t)bytes);
    fclose(f);
    *out_words = (size_t)bytes / 4;
    return words;
}
