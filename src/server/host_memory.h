/* Registered and pinned host memory (server/host_memory.c): ranges of the program's memory the
 * GPU copies to and from directly, so transfers through them skip the staging memcpy. */
#ifndef CUBEC_SERVER_HOST_MEMORY_H
#define CUBEC_SERVER_HOST_MEMORY_H

#include "gpu/gpu.h"

#include <stdint.h>

/* One registered range. */
typedef struct host_range {
    unsigned char *base;
    uint64_t size;
    gpu_mem *mem;      /* the range as a transfer buffer; NULL: registered, not imported */
    uint64_t last_use; /* timeline value of the last transfer through it */
    int pinned;        /* allocated by cubec_host_alloc (mem owns the bytes) */
} host_range;

/* Device lock. Ranges are sorted by base and never overlap. */
typedef struct host_memory {
    host_range *ranges;
    uint32_t count, cap;
    uint64_t alignment;                /* of registered addresses and sizes (cubec_device_info) */
    int warned_no_import;              /* the "registered, but staged" notice was logged */
    uint64_t dma_transfers, dma_bytes; /* transfers that went straight through a range */
    /* Asynchronous reads whose bytes are copied into the program's memory when they complete
     * (server/transfer.c keeps the list): freeing or unregistering a range lands those first. */
    struct cubec_event_s *deferred_reads;
} host_memory;

/* Registrations one device holds at most. */
#define HOST_MEMORY_MAX_RANGES 65536u

struct cubec_device_s;
void server_host_memory_init(struct cubec_device_s *d);
MUST_USE cubec_status server_host_register(struct cubec_device_s *d, void *ptr, uint64_t size);
MUST_USE cubec_status server_host_unregister(struct cubec_device_s *d, void *ptr);
MUST_USE cubec_status server_host_alloc(struct cubec_device_s *d, uint64_t size, void **out);
MUST_USE cubec_status server_host_free(struct cubec_device_s *d, void *ptr);
/* The size of the registered or pinned range that starts at `ptr`; 0 when none does. */
uint64_t server_host_range_size(host_memory *h, const void *ptr);
/* The imported range holding all of [ptr, +size), or NULL (not registered, or not imported). */
host_range *server_host_find(host_memory *h, const void *ptr, uint64_t size);
/* At close, after the GPU is idle: every range goes. */
void server_host_memory_destroy(struct cubec_device_s *d);

#endif
