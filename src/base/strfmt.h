/* Formatting into a new heap string, like vasprintf: the one way cubec builds a text whose length
 * it does not know in advance (error messages, failure chains). The string is the caller's, to
 * free with free(). */
#ifndef CUBEC_BASE_STRFMT_H
#define CUBEC_BASE_STRFMT_H

#include <stdarg.h>

/* The formatted text in a new string, or NULL when the host is out of memory (or the format
 * cannot be produced, which vsnprintf reports for an invalid multibyte sequence). */
char *strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same with a va_list, which is consumed as by vsnprintf. */
char *strfmtv(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
