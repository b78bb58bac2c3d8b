/* The report of a broken invariant (see assert.h). */
#include "base/assert.h"

#include <stdio.h>
#include <stdlib.h>

void invariant_failed(const char *cond, const char *file, int line, const char *func)
{
    fprintf(stderr, "cubec: internal invariant broken at %s:%d in %s: %s\n", file, line, func,
            cond);
    fflush(stderr);
    abort();
}
