/* The WebGPU backend's errors and events: the device's uncaptured errors kept for the next
 * status, and polling for the implementation's callbacks. Every other file of the backend calls
 * these; they call none of them. */
#include "gpu/webgpu/wg_internal.h"

#include "base/log.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* A map's completion, written by its callback. On the heap: a wait that gives up (its limit)
 * leaves it to the callback, which may run later on any thread that polls; `abandoned` and
 * `done` are under wg_gpu.lock. */
typedef struct map_wait {
    wg_gpu *w;
    int done, abandoned;
    WGPUMapAsyncStatus status;
} map_wait;

static void on_map(WGPUMapAsyncStatus status, WGPUStringView message, void *user1, void *user2)
{
    (void)message;
    (void)user2;
    map_wait *mw = user1;
    wg_gpu *w = mw->w;
    pthread_mutex_lock(&w->lock);
    int abandoned = mw->abandoned;
    mw->status = status;
    mw->done = 1;
    pthread_mutex_unlock(&w->lock);
    if (abandoned) free(mw);
}

static int map_done(wg_gpu *w, map_wait *mw)
{
    pthread_mutex_lock(&w->lock);
    int done = mw->done;
    pthread_mutex_unlock(&w->lock);
    return done;
}

/* Waits for the map: without a limit, the implementation's blocking poll; with one, polls that
 * do not block with short sleeps between them, as wg_timeline_wait (wgpuDevicePoll has no
 * timeout). 0 when the map finished, -2 past the limit. */
static int wait_map(wg_gpu *w, map_wait *mw, uint64_t timeout_ns)
{
    uint64_t start = timeout_ns ? wg_now_ns() : 0;
    unsigned sleep_us = 0;
    while (!map_done(w, mw)) {
        wg_poll_events(w, !timeout_ns);
        if (!timeout_ns || map_done(w, mw)) continue;
        if (wg_now_ns() - start > timeout_ns) return WG_MAP_TIMED_OUT;
        usleep(sleep_us);
        if (sleep_us < 200) sleep_us += 10;
    }
    return 0;
}

int wg_map_read(wg_gpu *w, WGPUBuffer map, size_t bytes, size_t skip, void *dst, size_t n,
                uint64_t timeout_ns)
{
    const wg_procs *p = w->p;
    map_wait *mw = calloc(1, sizeof *mw);
    if (!mw) return WG_MAP_NO_MEMORY;
    mw->w = w;
    WGPUBufferMapCallbackInfo ci = {
        .mode = WGPUCallbackMode_AllowSpontaneous, .callback = on_map, .userdata1 = mw};
    p->BufferMapAsync(map, WGPUMapMode_Read, 0, bytes, ci);
    if (wait_map(w, mw, timeout_ns)) {
        /* Given up on: the unmap aborts the pending map (its callback then frees `mw`, now or
         * whenever it runs), so that the buffer can be mapped again. */
        pthread_mutex_lock(&w->lock);
        int done = mw->done;
        mw->abandoned = !done;
        pthread_mutex_unlock(&w->lock);
        p->BufferUnmap(map);
        if (done) free(mw);
        return WG_MAP_TIMED_OUT;
    }
    WGPUMapAsyncStatus status = mw->status;
    free(mw);
    if (status != WGPUMapAsyncStatus_Success) return (int)status;
    const void *src = p->BufferGetConstMappedRange(map, 0, bytes);
    if (src) memcpy(dst, (const unsigned char *)src + skip, n);
    p->BufferUnmap(map);
    return src ? 0 : WG_MAP_NO_RANGE;
}
