/* The bytes of one texel of each cubec_image_format, in one place for the API's checks, the
 * server's sizes and every backend (docs/images.md). */
#ifndef CUBEC_BASE_IMAGE_FORMATS_H
#define CUBEC_BASE_IMAGE_FORMATS_H

#include "cubec/cubec.h"

#include <stdint.h>

/* 0 for a value that is not a format. */
static inline uint32_t image_format_bytes(uint32_t format)
{
    static const uint8_t bytes[] = {
        [CUBEC_IMAGE_FORMAT_R8_UNORM] = 1,   [CUBEC_IMAGE_FORMAT_RGBA8_UNORM] = 4,
        [CUBEC_IMAGE_FORMAT_R16_SFLOAT] = 2, [CUBEC_IMAGE_FORMAT_RGBA16_SFLOAT] = 8,
        [CUBEC_IMAGE_FORMAT_R32_SFLOAT] = 4, [CUBEC_IMAGE_FORMAT_RGBA32_SFLOAT] = 16,
        [CUBEC_IMAGE_FORMAT_R32_UINT] = 4,   [CUBEC_IMAGE_FORMAT_RGBA32_UINT] = 16,
        [CUBEC_IMAGE_FORMAT_R32_SINT] = 4,
    };
    return format < sizeof bytes ? bytes[format] : 0;
}

#endif
