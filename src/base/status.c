/* Status objects (see status.h). A static fallback keeps out-of-memory while reporting an error
 * from turning into a crash; cubec_status_free knows not to free it. */
#include "base/status.h"

#include "base/strfmt.h"

#include <stdlib.h>

static struct cubec_status_s oom_status = {CUBEC_OUT_OF_MEMORY,
                                           (char *)"host out of memory while reporting an error"};

cubec_status status_makev(cubec_code code, const char *fmt, va_list ap)
{
    cubec_status s = malloc(sizeof *s);
    if (!s) return &oom_status;
    s->code = code;
    s->message = strfmtv(fmt, ap);
    if (!s->message) {
        free(s);
        return &oom_status;
    }
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
    va_list ap;
    va_start(ap, fmt);
    char *prefix = strfmtv(fmt, ap);
    va_end(ap);
    /* Out of memory: the message stays without the context, which is better than losing it. */
    char *m = prefix ? strfmt("%s: %s", prefix, status->message) : NULL;
    free(prefix);
    if (!m) return status;
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

/* Whether `code` is one of CUBEC_CODES. */
static int known_code(cubec_code code)
{
#define CODE_KNOWN(name, value, description) || code == name
    return 0 CUBEC_CODES(CODE_KNOWN);
#undef CODE_KNOWN
}

cubec_status cubec_status_new(cubec_code code, const char *fmt, ...)
{
    if (code == CUBEC_OK) return NULL;
    if (!fmt) fmt = "(no message)";
    va_list ap;
    va_start(ap, fmt);
    char *message = strfmtv(fmt, ap);
    va_end(ap);
    if (!message) return &oom_status;
    /* A code outside the list would reach programs that switch over it: refused, keeping the
     * message so that the callback's failure is not lost. */
    cubec_status s = known_code(code)
                         ? status_make(code, "%s", message)
                         : status_make(CUBEC_INVALID_ARGUMENT,
                                       "cubec_status_new: code %d is not a cubec_code (see "
                                       "CUBEC_CODES); the message was: %s",
                                       (int)code, message);
    free(message);
    return s;
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
