/* Helpers shared by both sides of every figure (see bench_util.h). */
#include "bench_util.h"

#include "base/clock.h"
#include "base/strfmt.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Returned when formatting an error itself runs out of memory: an error must never read as
 * success, so it cannot be NULL, and it must not be freed. */
static char bench_oom_message[] = "out of host memory while reporting an error";

static bench_err vformat(const char *fmt, va_list args)
{
    char *text = strfmtv(fmt, args);
    return text ? text : bench_oom_message;
}

bench_err bench_errorf(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    bench_err err = vformat(fmt, args);
    va_end(args);
    return err;
}

bench_err bench_wrap(bench_err err, const char *fmt, ...)
{
    if (!err) return NULL;
    va_list args;
    va_start(args, fmt);
    bench_err prefix = vformat(fmt, args);
    va_end(args);
    bench_err joined = bench_errorf("%s: %s", prefix, err);
    bench_err_free(prefix);
    bench_err_free(err);
    return joined;
}

void bench_err_free(bench_err err)
{
    if (err != bench_oom_message) free(err);
}

bench_err bench_from_status(cubec_status status, const char *call)
{
    if (!status) return NULL;
    bench_err err = bench_errorf("%s: %s: %s", call, cubec_code_name(cubec_status_code(status)),
                                 cubec_status_message(status));
    cubec_status_free(status);
    return err;
}

double bench_now(void)
{
    return (double)clock_now_ns() * 1e-9;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *values, size_t n)
{
    if (n == 0) return NAN;
    qsort(values, n, sizeof *values, compare_double);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

void *bench_host_alloc(size_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t align = page > 0 ? (size_t)page : 4096;
    size_t rounded = (size + align - 1) / align * align;
    void *ptr = aligned_alloc(align, rounded ? rounded : align);
    if (ptr) memset(ptr, 0, rounded ? rounded : align);
    return ptr;
}

void bench_host_free(void *ptr)
{
    free(ptr);
}

/* A cheap 32-bit mix (the finaliser of MurmurHash3): neighbouring words get unrelated values. */
static uint32_t pattern_word(uint64_t index, uint32_t seed)
{
    uint32_t x = (uint32_t)index ^ (uint32_t)(index >> 32) * 0x9e3779b9u ^ seed;
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

/* kernel.vector_add's inputs; their sums are exact in float32. */
static float vector_input(uint64_t index, bench_content what)
{
    return what == BENCH_CONTENT_VECTOR_A ? (float)(index & 1023)
                                          : (float)((index >> 10) & 1023) * 0.5f;
}

static uint32_t content_word(bench_content what, uint32_t seed, uint64_t index)
{
    float value;
    switch (what) {
    case BENCH_CONTENT_PATTERN: return pattern_word(index, seed);
    case BENCH_CONTENT_VECTOR_A:
    case BENCH_CONTENT_VECTOR_B: value = vector_input(index, what); break;
    default:
        value = vector_input(index, BENCH_CONTENT_VECTOR_A) +
                vector_input(index, BENCH_CONTENT_VECTOR_B);
        break;
    }
    uint32_t word;
    memcpy(&word, &value, sizeof word);
    return word;
}

void bench_content_fill(bench_content what, uint32_t seed, uint64_t first_word, void *words,
                        size_t count)
{
    uint32_t *out = words;
    for (size_t i = 0; i < count; i++)
        out[i] = content_word(what, seed, first_word + i);
}

bench_err bench_content_check(bench_content what, uint32_t seed, uint64_t first_word,
                              const void *words, size_t count)
{
    const uint32_t *in = words;
    for (size_t i = 0; i < count; i++) {
        uint32_t want = content_word(what, seed, first_word + i);
        if (in[i] != want)
            return bench_errorf("word %llu holds 0x%08x, expected 0x%08x",
                                (unsigned long long)first_word + i, in[i], want);
    }
    return NULL;
}

uint64_t bench_hash_str(uint64_t hash, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        hash ^= *p;
        hash *= 1099511628211ull;
    }
    return hash;
}
