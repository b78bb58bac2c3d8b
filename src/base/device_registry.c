/* The registry of open devices (device_registry.h). Open devices are a short array of atomic
 * pointers that a check scans up to the highest slot ever used: a process holds a few devices,
 * so a check costs a few loads. Closed addresses are a ring of the last ones, scanned only when
 * a device opens. */
#include "base/device_registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(uintptr_t) open_devices[DEVICE_REGISTRY_MAX_OPEN];
/* Slots [0, open_used) may hold a device: the scan's end, which only grows. */
static atomic_uint open_used;
static uintptr_t closed_devices[DEVICE_REGISTRY_CLOSED_KEPT]; /* registry_lock */
static uint32_t closed_next;                                  /* registry_lock */

cubec_status device_registry_add(const void *device)
{
    pthread_mutex_lock(&registry_lock);
    uint32_t used = atomic_load(&open_used);
    uint32_t slot = 0;
    while (slot < used && atomic_load(&open_devices[slot])) /* the first free slot */
        slot++;
    if (slot == DEVICE_REGISTRY_MAX_OPEN) {
        pthread_mutex_unlock(&registry_lock);
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "cubec_device_open: %u devices are open in this process, the most "
                           "there may be (close one first)",
                           DEVICE_REGISTRY_MAX_OPEN);
    }
    atomic_store(&open_devices[slot], (uintptr_t)device);
    if (slot == used) atomic_store(&open_used, used + 1);
    /* The address may have been a closed device's long ago: it is open again now. */
    for (uint32_t i = 0; i < DEVICE_REGISTRY_CLOSED_KEPT; i++)
        if (closed_devices[i] == (uintptr_t)device) closed_devices[i] = 0;
    pthread_mutex_unlock(&registry_lock);
    return NULL;
}

int device_registry_remove(const void *device)
{
    pthread_mutex_lock(&registry_lock);
    uint32_t used = atomic_load(&open_used);
    int found = 0;
    for (uint32_t i = 0; i < used && !found; i++) {
        if (atomic_load(&open_devices[i]) != (uintptr_t)device) continue;
        atomic_store(&open_devices[i], 0);
        found = 1;
    }
    if (found) {
        closed_devices[closed_next] = (uintptr_t)device;
        closed_next = (closed_next + 1) % DEVICE_REGISTRY_CLOSED_KEPT;
    }
    pthread_mutex_unlock(&registry_lock);
    return found;
}

int device_registry_is_open(const void *device)
{
    uint32_t used = atomic_load_explicit(&open_used, memory_order_acquire);
    for (uint32_t i = 0; i < used; i++)
        if (atomic_load_explicit(&open_devices[i], memory_order_relaxed) == (uintptr_t)device)
            return 1;
    return 0;
}

int device_registry_was_closed(const void *address)
{
    if (!address) return 0;
    pthread_mutex_lock(&registry_lock);
    int found = 0;
    for (uint32_t i = 0; i < DEVICE_REGISTRY_CLOSED_KEPT && !found; i++)
        found = closed_devices[i] == (uintptr_t)address;
    pthread_mutex_unlock(&registry_lock);
    return found;
}
