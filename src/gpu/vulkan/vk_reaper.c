/* The page reaper: see vk_reaper.h for why. One thread per device, started at the first page
 * handed over; the queue is a list under one mutex (a page freed per relocation or release of a
 * large buffer: never hot). */
#include "gpu/vulkan/vk_reaper.h"

#include <stdlib.h>

struct vk_reaped {
    vk_reaped *next;
    VkBuffer buffer;
    VkDeviceMemory memory;
    int mapped;
    uint64_t size;
};

static void free_one(VkDevice device, const vk_reaped *p)
{
    vkDestroyBuffer(device, p->buffer, NULL);
    if (p->mapped) vkUnmapMemory(device, p->memory);
    vkFreeMemory(device, p->memory, NULL);
}

static void *reaper_main(void *arg)
{
    vk_reaper *r = arg;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (!r->head && !r->stop)
            pthread_cond_wait(&r->wake, &r->lock);
        if (!r->head) break; /* stop, and nothing left */
        vk_reaped *p = r->head;
        r->head = p->next;
        if (!r->head) r->tail = NULL;
        r->busy = 1;
        pthread_mutex_unlock(&r->lock);
        /* The memory object is this thread's alone now: nothing else names it. */
        free_one(r->device, p);
        pthread_mutex_lock(&r->lock);
        r->busy = 0;
        r->pending_bytes -= p->size;
        free(p);
        if (!r->head) pthread_cond_broadcast(&r->done);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

void vk_reaper_init(vk_reaper *r, VkDevice device)
{
    *r = (vk_reaper){.device = device};
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    pthread_cond_init(&r->done, NULL);
}

int vk_reaper_take(vk_reaper *r, VkBuffer buffer, VkDeviceMemory memory, int mapped, uint64_t size)
{
    vk_reaped *p = malloc(sizeof *p);
    if (!p) return 0;
    *p = (vk_reaped){NULL, buffer, memory, mapped, size};
    pthread_mutex_lock(&r->lock);
    if (!r->started && !r->stop) {
        if (pthread_create(&r->thread, NULL, reaper_main, r) == 0)
            r->started = 1;
        else
            r->stop = 1; /* no thread: every page is freed by its caller from now on */
    }
    if (!r->started || r->stop) {
        pthread_mutex_unlock(&r->lock);
        free(p);
        return 0;
    }
    if (r->tail)
        r->tail->next = p;
    else
        r->head = p;
    r->tail = p;
    r->pending_bytes += size;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    return 1;
}

void vk_reaper_drain(vk_reaper *r)
{
    pthread_mutex_lock(&r->lock);
    while (r->head || r->busy)
        pthread_cond_wait(&r->done, &r->lock);
    pthread_mutex_unlock(&r->lock);
}

uint64_t vk_reaper_pending(vk_reaper *r)
{
    pthread_mutex_lock(&r->lock);
    uint64_t n = r->pending_bytes;
    pthread_mutex_unlock(&r->lock);
    return n;
}

void vk_reaper_destroy(vk_reaper *r)
{
    pthread_mutex_lock(&r->lock);
    r->stop = 1;
    int started = r->started;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    /* The thread frees what is queued before it leaves. */
    if (started) pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->done);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
}
