/* The library's version (cubec_version), as the header it was built with states it. */
#include "cubec/cubec.h"

uint32_t cubec_version(void)
{
    return CUBEC_VERSION;
}
