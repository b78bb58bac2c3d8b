/* Reading a webgpu device's driver string (webgpu_driver.h) back into its parts. */
#include "webgpu_driver.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define PREFIX "WebGPU ("
#define IMPLEMENTATION "wgpu-native "

/* The length of the backend name at `p` when ": " follows it, else 0: backend names are one
 * word (backend_of in wg_gpu.c), which tells the separator from a ") on " inside the path. */
static size_t backend_word(const char *p)
{
    size_t n = 0;
    while (isalnum((unsigned char)p[n]))
        n++;
    return n && p[n] == ':' && p[n + 1] == ' ' ? n : 0;
}

int webgpu_driver_parse(const char *driver, webgpu_driver *out)
{
    memset(out, 0, sizeof *out);
    if (strncmp(driver, PREFIX, strlen(PREFIX)) != 0) return 0;
    const char *inside = driver + strlen(PREFIX), *close = inside;
    size_t word = 0;
    while ((close = strstr(close, ") on ")) != NULL && (word = backend_word(close + 5)) == 0)
        close++;
    if (!close) return 0;
    const char *library = inside;
    const char *comma = strstr(inside, ", ");
    if (strncmp(inside, IMPLEMENTATION, strlen(IMPLEMENTATION)) == 0 && comma && comma < close) {
        snprintf(out->implementation, sizeof out->implementation, "%.*s", (int)(comma - inside),
                 inside);
        library = comma + 2;
    }
    snprintf(out->library, sizeof out->library, "%.*s", (int)(close - library), library);
    snprintf(out->backend, sizeof out->backend, "%.*s", (int)word, close + 5);
    snprintf(out->description, sizeof out->description, "%s", close + 5 + word + 2);
    return 1;
}
