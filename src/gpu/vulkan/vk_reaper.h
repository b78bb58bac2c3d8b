/* Returns large device pages to the driver on a thread of their own (vk_reaper.c).
 *
 * vkFreeMemory of a large allocation is slow on some drivers: an H200 took ~20 ms to free a
 * 1 GiB page, where relocating that page's live bytes took 0.8 ms. The caller that empties a page
 * (a relocation, a cleanup, a release) need not wait for that: the page is handed over here and
 * freed in the background. Whoever needs the memory back waits for the hand-overs first: a
 * refused allocation (vk_reaper_drain, then one more try) and device close. */
#ifndef CUBEC_GPU_VULKAN_VK_REAPER_H
#define CUBEC_GPU_VULKAN_VK_REAPER_H

#include <pthread.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

/* Pages at least this large go to the thread; smaller ones are freed at once (cheap). */
#define VK_REAPER_MIN_BYTES (64ull << 20)

typedef struct vk_reaped vk_reaped;

typedef struct vk_reaper {
    VkDevice device;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* work arrived, or stop */
    pthread_cond_t done; /* the queue emptied */
    vk_reaped *head, *tail;
    uint64_t pending_bytes; /* handed over, not yet freed */
    int busy;               /* the thread is freeing one it took off the queue */
    int started, stop;
    pthread_t thread;
} vk_reaper;

void vk_reaper_init(vk_reaper *r, VkDevice device);
/* Takes the buffer and its memory (unmapped first when `mapped`) to free later; 0 when it cannot
 * (no room for the record, or no thread): the caller frees them itself. */
int vk_reaper_take(vk_reaper *r, VkBuffer buffer, VkDeviceMemory memory, int mapped, uint64_t size);
/* Waits until everything handed over is freed. */
void vk_reaper_drain(vk_reaper *r);
/* Bytes handed over and not yet freed (they still count in the driver's usage). */
uint64_t vk_reaper_pending(vk_reaper *r);
/* Frees what is left and stops the thread (before the device is destroyed). */
void vk_reaper_destroy(vk_reaper *r);

#endif
