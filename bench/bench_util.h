/* Small helpers every part of the benchmark suite uses: errors as heap strings, the clock,
 * medians, the host-side contents that results are checked against, and a string hash.
 *
 * Errors are `bench_err`: NULL means success, anything else is a malloc'd message the receiver
 * owns. A figure that fails keeps its message and is reported as an error instead of a number,
 * so that the suite never prints the speed of work that did not happen or came out wrong. */
#ifndef CUBEC_BENCH_UTIL_H
#define CUBEC_BENCH_UTIL_H

#include <cubec/cubec.h>

#include <stddef.h>
#include <stdint.h>

typedef char *bench_err;

#if defined(__GNUC__)
#define BENCH_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define BENCH_NONNULL __attribute__((returns_nonnull))
#else
#define BENCH_PRINTF(f, a)
#define BENCH_NONNULL
#endif

/* A new error message. Never returns NULL: if memory runs out it returns a fixed message that
 * bench_err_free knows not to free. */
bench_err bench_errorf(const char *fmt, ...) BENCH_PRINTF(1, 2) BENCH_NONNULL;
/* Prefixes an error with context; takes ownership of `err`, NULL passes through. */
bench_err bench_wrap(bench_err err, const char *fmt, ...) BENCH_PRINTF(2, 3);
void bench_err_free(bench_err err);

/* Turns a failed cubec call into an error naming the call, the code and cubec's message, and
 * frees the status; NULL passes through. */
bench_err bench_from_status(cubec_status status, const char *call);

#define BENCH_TRY(expr)                                                                            \
    do {                                                                                           \
        bench_err bench_try_err_ = (expr);                                                         \
        if (bench_try_err_) return bench_try_err_;                                                 \
    } while (0)

/* Monotonic host time in seconds. */
double bench_now(void);

/* Median of `n` values (sorted in place); NaN for n == 0. */
double bench_median(double *values, size_t n);

/* A zero-initialised allocation aligned to the page, so that host buffers are ordinary pageable
 * memory with every page already touched: the first-touch page faults are not timed. */
void *bench_host_alloc(size_t size);
void bench_host_free(void *ptr);

/* What a figure fills a buffer with and checks it against: a pattern that depends on the position
 * and a seed (so that a misplaced, shifted or truncated copy is caught, not only a missing one),
 * or the inputs and the sum of kernel.vector_add (small integers and halves, so every sum is exact
 * in float32 and compared for equality). `first_word` is the index of words[0] in the whole
 * range, so that a large buffer can be filled and checked in chunks. */
typedef enum bench_content {
    BENCH_CONTENT_PATTERN,
    BENCH_CONTENT_VECTOR_A,
    BENCH_CONTENT_VECTOR_B,
    BENCH_CONTENT_VECTOR_SUM,
} bench_content;

void bench_content_fill(bench_content what, uint32_t seed, uint64_t first_word, void *words,
                        size_t count);
/* Returns an error naming the first word that differs, or NULL. */
bench_err bench_content_check(bench_content what, uint32_t seed, uint64_t first_word,
                              const void *words, size_t count);

/* Host chunk for filling and checking large device buffers piecewise. */
#define BENCH_CHUNK_BYTES (64ull << 20)

/* FNV-1a over a string, continuing from `hash` (start with BENCH_FNV_INIT). */
#define BENCH_FNV_INIT 14695981039346656037ull
uint64_t bench_hash_str(uint64_t hash, const char *text);

#endif
