/* 64-bit FNV-1a: kernel identities and pipeline keys. Not cryptographic; stable across runs and
 * builds, which is what keys persisted to disk need. */
#ifndef CUBEC_BASE_HASH_H
#define CUBEC_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_SEED 0xcbf29ce484222325ull

static inline uint64_t hash_bytes(uint64_t h, const void *data, size_t size)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Hashes a string including its terminator, so ("ab","c") and ("a","bc") differ. NULL hashes as
 * a distinct marker. */
static inline uint64_t hash_str(uint64_t h, const char *s)
{
    if (!s) return hash_bytes(h, "\xff", 1);
    size_t n = 0;
    while (s[n])
        n++;
    return hash_bytes(h, s, n + 1);
}

static inline uint64_t hash_u64(uint64_t h, uint64_t v)
{
    return hash_bytes(h, &v, sizeof v);
}

#endif
