/* The registry of open devices (device_registry.h). Open devices are a short array of atomic
 * pointers that a check scans up to the highest slot ever used: a process holds a few devices,
 * so a check costs a few loads. Closed devices' blocks are a ring of the last ones: the
 * oldest is handed back for freeing when a newer one is parked. Parked blocks stay reachable
 * from the ring, so leak checkers do not count them. */
#include "base/device_registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(uintptr_t) open_devices[DEVICE_REGISTRY_MAX_OPEN];
/* Slots [0, open_used) may hold a device: the scan's end, which only grows. */
static atomic_uint open_used;
static void *parked[DEVICE_REGISTRY_CLOSED_KEPT]; /* registry_lock */
static uint32_t parked_next;                      /* registry_lock */

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
    pthread_mutex_unlock(&registry_lock);
    return found;
}

void *device_registry_park(void *block)
{
    pthread_mutex_lock(&registry_lock);
    void *oldest = parked[parked_next];
    parked[parked_next] = block;
    parked_next = (parked_next + 1) % DEVICE_REGISTRY_CLOSED_KEPT;
    pthread_mutex_unlock(&registry_lock);
    return oldest;
}

int device_registry_is_open(const void *device)
{
    uint32_t used = atomic_load_explicit(&open_used, memory_order_acquire);
    for (uint32_t i = 0; i < used; i++)
        if (atomic_load_explicit(&open_devices[i], memory_order_relaxed) == (uintptr_t)device)
            return 1;
    return 0;
}
