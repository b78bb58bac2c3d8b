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

/* Whether the texels of `format` are unsigned (1) or signed (2) integers, else 0 (floats and
 * unorm): a kernel's usampler/uimage reads only the first, isampler/iimage the second
 * (kernel/reflect.h KERNEL_NUMERIC_*). */
static inline uint32_t image_format_numeric(uint32_t format)
{
    switch (format) {
    case CUBEC_IMAGE_FORMAT_R32_UINT:
    case CUBEC_IMAGE_FORMAT_RGBA32_UINT: return 1;
    case CUBEC_IMAGE_FORMAT_R32_SINT: return 2;
    default: return 0;
    }
}

/* The GLSL format qualifier of `format`, for messages ("?" for a value that is not one). */
static inline const char *image_format_name(uint32_t format)
{
    static const char *const names[] = {
        "(none)", "r8", "rgba8", "r16f", "rgba16f", "r32f", "rgba32f", "r32ui", "rgba32ui", "r32i",
    };
    return format < sizeof names / sizeof names[0] ? names[format] : "?";
}

#endif
