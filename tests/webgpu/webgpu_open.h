/* The webgpu tests' device: the webgpu backend's default adapter, or NULL (the case then skips,
 * saying why) where no WebGPU implementation loads. */
#ifndef CUBEC_TESTS_WEBGPU_OPEN_H
#define CUBEC_TESTS_WEBGPU_OPEN_H

#include "test_util.h"

#include <stdio.h>

static inline cubec_device *open_webgpu(void)
{
    cubec_device_desc desc = CUBEC_DEVICE_DESC_INIT;
    desc.backend = "webgpu";
    cubec_device *d = NULL;
    cubec_status st = cubec_device_open(&desc, &d);
    if (st && cubec_status_code(st) == CUBEC_NOT_FOUND) {
        printf("skipped: no WebGPU implementation: %s\n", cubec_status_message(st));
        cubec_status_free(st);
        return NULL;
    }
    ASSERT_OK(st);
    return d;
}

#endif
