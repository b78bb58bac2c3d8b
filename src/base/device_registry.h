/* The process-wide registry of open devices: which cubec_device pointers are open now, and which
 * were closed recently. Every public call checks its device pointer here before touching it, so
 * a closed or made-up device is refused by name rather than dereferenced (docs/api.md,
 * "Handles"); a new device is never placed at the address of a recently closed one, so a stale
 * pointer does not turn into another device's. Documented global state, like the device tags of
 * handle_table.c. Thread-safe: checks take no lock; registering and closing take one. */
#ifndef CUBEC_BASE_DEVICE_REGISTRY_H
#define CUBEC_BASE_DEVICE_REGISTRY_H

#include "base/status.h"

/* The most devices open at once in a process; one more is refused by cubec_device_open. */
#define DEVICE_REGISTRY_MAX_OPEN 1024u
/* How many closed devices' addresses are remembered (and never handed to a new device). */
#define DEVICE_REGISTRY_CLOSED_KEPT 4096u

/* Records `device` as open. CUBEC_OUT_OF_MEMORY when DEVICE_REGISTRY_MAX_OPEN are open. */
MUST_USE cubec_status device_registry_add(const void *device);
/* Records `device` as closed (remembered among the last DEVICE_REGISTRY_CLOSED_KEPT). Returns 0,
 * changing nothing, when it is not open. */
int device_registry_remove(const void *device);
/* Whether `device` is open now. Lock-free: the launch path calls it. */
int device_registry_is_open(const void *device);
/* Whether `address` is that of a device closed recently (a new device must not take it). */
int device_registry_was_closed(const void *address);

#endif
