/* Status objects (see status.h). A static fallback keeps out-of-memory while reporting an error
 * from turning into a crash; cubec_status_free knows not to free it. */
#include "base/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct cubec_status_s oom_status = {CUBEC_OUT_OF_MEMORY,
                                           (char *)"host out of memory while reporting an error"};

cubec_status status_makev(cubec_code code, const char *fmt, va_list ap)
{
    cubec_status s = malloc(sizeof *s);
    if (!s) return &oom_status;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    s->code = code;
    s->message = malloc(n > 0 ? (size_t)n + 1 : 1);
    if (!s->message) {
        free(s);
        return &oom_status;
    }
    vsnprintf(s->message, (size_t)n + 1, fmt, ap);
    return s;
}

cubec_status status_make(cubec_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cubec_status s = status_makev(code, fmt, ap);
    va_end(ap);
    return s;
}

cubec_status status_annotate(cubec_status status, const char *fmt, ...)
{
    if (!status || status == &oom_status) return status;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    size_t n = strlen(prefix) + 2 + strlen(status->message) + 1;
    char *m = malloc(n);
    if (!m) return status;
    snprintf(m, n, "%s: %s", prefix, status->message);
    free(status->message);
    status->message = m;
    return status;
}

cubec_status status_clone(cubec_status status)
{
    if (!status || status == &oom_status) return status;
    return status_make(status->code, "%s", status->message);
}

cubec_code cubec_status_code(cubec_status status)
{
    return status ? status->code : CUBEC_OK;
}

const char *cubec_status_message(cubec_status status)
{
    return status ? status->message : "ok";
}

void cubec_status_free(cubec_status status)
{
    if (!status || status == &oom_status) return;
    free(status->message);
    free(status);
}

/* A switch rather than a table: a value listed twice in CUBEC_CODES does not compile. */
const char *cubec_code_name(cubec_code code)
{
    switch (code) {
#define CODE_NAME(name, value, description)                                                        \
    case name: return #name;
        CUBEC_CODES(CODE_NAME)
#undef CODE_NAME
    }
    return "CUBEC_UNKNOWN_CODE";
}
