/* The refusal of a struct_size that is not one this library can read or write (api_struct.h). */
#include "api/api_struct.h"

#include <inttypes.h>

cubec_status api_struct_refuse(const char *fn, const char *arg, uint32_t size, size_t known,
                               const char *type, const char *init)
{
    if (size < sizeof(uint32_t))
        return INVALID_ARG("%s: %s->struct_size is %" PRIu32 ", not a size of %s: initialise it "
                           "with %s (a caller that forgot it declares nothing)",
                           fn, arg, size, type, init);
    return INVALID_ARG("%s: %s->struct_size is %" PRIu32 ", larger than %s in this library "
                       "(%zu bytes, cubec %d.%d.%d): the program was built against a newer "
                       "cubec.h; build it against this library's header (%s)",
                       fn, arg, size, type, known, CUBEC_VERSION_MAJOR, CUBEC_VERSION_MINOR,
                       CUBEC_VERSION_PATCH, init);
}
