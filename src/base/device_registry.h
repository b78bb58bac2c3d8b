/* The process-wide registry of open devices: which cubec_device pointers are open now, and which
 * were closed recently. Every public call checks its device pointer here before touching it, so
 * a closed or made-up device is refused by name rather than dereferenced (docs/api.md,
 * "Handles"). The memory of a closed device stays allocated ("parked") until
 * DEVICE_REGISTRY_CLOSED_KEPT more have closed, so no allocation, a new device's included, can
 * take its address meanwhile: a stale pointer does not turn into another device's. Documented
 * global state, like the device tags of handle_table.c. Thread-safe: checks take no lock;
 * registering and closing take one. */
#ifndef CUBEC_BASE_DEVICE_REGISTRY_H
#define CUBEC_BASE_DEVICE_REGISTRY_H

#include "base/status.h"

/* The most devices open at once in a process; one more is refused by cubec_device_open. */
#define DEVICE_REGISTRY_MAX_OPEN 1024u
/* How many closed devices stay parked (about 27 KiB each, so at most ~28 MiB). */
#define DEVICE_REGISTRY_CLOSED_KEPT 1024u

/* Records `device` as open. CUBEC_OUT_OF_MEMORY when DEVICE_REGISTRY_MAX_OPEN are open. */
MUST_USE cubec_status device_registry_add(const void *device);
/* Takes `device` out of the open set. Returns 0, changing nothing, when it is not open. */
int device_registry_remove(const void *device);
/* Parks the memory of a closed device (`block`, as allocated): it stays allocated so its
 * address is not reused. Returns the block parked DEVICE_REGISTRY_CLOSED_KEPT closes ago, which
 * the caller frees now, or NULL. */
void *device_registry_park(void *block);
/* Whether `device` is open now. Lock-free: the launch path calls it. */
int device_registry_is_open(const void *device);

#endif
