/* Formatting into a new heap string (see strfmt.h): measure with vsnprintf, allocate, format. */
#include "base/strfmt.h"

#include <stdio.h>
#include <stdlib.h>

char *strfmtv(const char *fmt, va_list ap)
{
    va_list measure;
    va_copy(measure, ap);
    int n = vsnprintf(NULL, 0, fmt, measure);
    va_end(measure);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *strfmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = strfmtv(fmt, ap);
    va_end(ap);
    return s;
}
