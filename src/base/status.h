/* Status objects: NULL is success; an error owns a code and a message. Messages are built once,
 * where the error arises, and annotated on the way up ("while X: <cause>") so the root cause is
 * always the last part. */
#ifndef CUBEC_BASE_STATUS_H
#define CUBEC_BASE_STATUS_H

#include "cubec/cubec.h"

#include <stdarg.h>

/* CUBEC_MUST_USE for internal functions: every function declared in a header that returns a
 * cubec_status carries it. */
#define MUST_USE CUBEC_MUST_USE

struct cubec_status_s {
    cubec_code code;
    char *message;
};

/* Makes an error. Never returns NULL: if the host is out of memory a static status is used
 * (returns_nonnull tells the compiler and the analyzer so). */
MUST_USE cubec_status status_make(cubec_code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), returns_nonnull));
MUST_USE cubec_status status_makev(cubec_code code, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0), returns_nonnull));
/* Prefixes context to an error: "<context>: <old message>". NULL passes through. */
MUST_USE cubec_status status_annotate(cubec_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A deep copy (for errors handed to several waiters). NULL passes through. */
MUST_USE cubec_status status_clone(cubec_status status);

#define RETURN_IF_ERROR(expr)                                                                      \
    do {                                                                                           \
        cubec_status status_tmp_ = (expr);                                                         \
        if (status_tmp_) return status_tmp_;                                                       \
    } while (0)

#define INVALID_ARG(...) status_make(CUBEC_INVALID_ARGUMENT, __VA_ARGS__)

#endif
