/* The WebGPU backend's errors and events: the device's uncaptured errors kept for the next
 * status, and polling for the implementation's callbacks. Every other file of the backend calls
 * these; they call none of them. */
#include "gpu/webgpu/wg_internal.h"

#include "base/log.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void wg_on_uncaptured(WGPUDevice const *device, WGPUErrorType type, WGPUStringView message,
                      void *user1, void *user2)
{
    (void)device;
    (void)user2;
    wg_gpu *w = user1;
    size_t len =
        message.length == WGPU_STRLEN && message.data ? strlen(message.data) : message.length;
    LOG(LOG_WARN, LOG_SYS_DEVICE, "webgpu error (type %d): %.*s", (int)type, (int)len,
        message.data ? message.data : "");
    pthread_mutex_lock(&w->lock);
    if (len > 4096) len = 4096; /* a message is kept for a status, not a log */
    if (!w->error) {
        w->error = malloc(len + 1);
        if (w->error) {
            if (len && message.data) memcpy(w->error, message.data, len);
            w->error[len] = 0;
        }
    }
    pthread_mutex_unlock(&w->lock);
}

cubec_status wg_take_error(wg_gpu *w, const char *what)
{
    pthread_mutex_lock(&w->lock);
    char *e = w->error;
    w->error = NULL;
    pthread_mutex_unlock(&w->lock);
    if (!e) return NULL;
    cubec_status s = status_make(CUBEC_INTERNAL, "webgpu: %s: %s", what, e);
    free(e);
    return s;
}

/* Lets the implementation run its callbacks (work done, maps). */
void wg_poll_events(wg_gpu *w, int wait)
{
    if (w->p->DevicePoll) w->p->DevicePoll(w->device, wait ? 1 : 0, NULL);
    w->p->InstanceProcessEvents(w->instance);
}

uint64_t wg_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

typedef struct map_wait {
    int done;
    WGPUMapAsyncStatus status;
} map_wait;

static void on_map(WGPUMapAsyncStatus status, WGPUStringView message, void *user1, void *user2)
{
    (void)message;
    (void)user2;
    map_wait *mw = user1;
    mw->status = status;
    mw->done = 1;
}

int wg_map_read(wg_gpu *w, WGPUBuffer map, size_t bytes, size_t skip, void *dst, size_t n)
{
    const wg_procs *p = w->p;
    map_wait mw = {0};
    WGPUBufferMapCallbackInfo ci = {
        .mode = WGPUCallbackMode_AllowSpontaneous, .callback = on_map, .userdata1 = &mw};
    p->BufferMapAsync(map, WGPUMapMode_Read, 0, bytes, ci);
    while (!mw.done)
        wg_poll_events(w, 1);
    if (mw.status != WGPUMapAsyncStatus_Success) return (int)mw.status;
    const void *src = p->BufferGetConstMappedRange(map, 0, bytes);
    if (src) memcpy(dst, (const unsigned char *)src + skip, n);
    p->BufferUnmap(map);
    return src ? 0 : -1;
}
