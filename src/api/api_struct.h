/* The caller's sized structs (cubec.h, "Structs that grow"): checking the struct_size a caller
 * declared, reading only the bytes it declared into a whole struct of this library's size (the
 * rest takes the defaults, zero), and writing only that many back into an output struct. The
 * entry points hand the rest of the library whole structs, so nothing past src/api/ reads
 * struct_size. */
#ifndef CUBEC_API_STRUCT_H
#define CUBEC_API_STRUCT_H

#include "base/status.h"

#include <stdint.h>
#include <string.h>

/* The error for a struct_size that is not one of `type` in this library: 0 or below 4 (the
 * INIT macro forgotten) or past `known` (a newer header). Out of line: only refusals build it. */
MUST_USE cubec_status api_struct_refuse(const char *fn, const char *arg, uint32_t size,
                                        size_t known, const char *type, const char *init);

/* The struct_size a caller declared: the first four bytes of every sized struct. */
static inline uint32_t api_struct_declared(const void *user)
{
    uint32_t size;
    memcpy(&size, user, sizeof size);
    return size;
}

/* NULL when `user` (not NULL) declares a size this library can read or write. */
MUST_USE static inline cubec_status api_struct_check(const void *user, size_t known, const char *fn,
                                                     const char *arg, const char *type,
                                                     const char *init)
{
    uint32_t size = api_struct_declared(user);
    if (size >= sizeof(uint32_t) && size <= known) return NULL;
    return api_struct_refuse(fn, arg, size, known, type, init);
}

/* The caller's input struct as a whole one of this library's size: its declared bytes, then
 * zeros (every field's default). `local` is `known` bytes. */
static inline void api_struct_read(const void *user, void *local, size_t known)
{
    uint32_t size = api_struct_declared(user);
    memset(local, 0, known);
    memcpy(local, user, size);
    uint32_t whole = (uint32_t)known;
    memcpy(local, &whole, sizeof whole);
}

/* Clears the caller's output struct past its struct_size field, as far as it declared. */
static inline void api_struct_clear(void *user)
{
    uint32_t size = api_struct_declared(user);
    memset((char *)user + sizeof size, 0, size - sizeof size);
}

/* Writes the library's whole `local` into the caller's output struct, as far as it declared; its
 * struct_size stays the caller's. */
static inline void api_struct_write(void *user, const void *local)
{
    uint32_t size = api_struct_declared(user);
    memcpy((char *)user + sizeof size, (const char *)local + sizeof size, size - sizeof size);
}

/* api_struct_check for a struct `type` whose INIT macro is `init`, named in the message. */
#define API_STRUCT_CHECK(user, type, init, fn, arg)                                                \
    api_struct_check((user), sizeof(type), (fn), (arg), #type, #init)

#endif
