/* Launches (server/launch.c): a dispatch's arguments checked by api/, turned into a task on the
 * stream's slot (server/task.h). */
#ifndef CUBEC_SERVER_LAUNCH_H
#define CUBEC_SERVER_LAUNCH_H

#include "server/task.h"

typedef struct launch_args {
    const pipeline_entry *entry;
    const char *name; /* the kernel handle's name (NULL: the pipeline's) */
    /* buffer_count bound buffers, then address_count reached by device address (not bound;
     * cubec_launch_desc.address_buffers). */
    buffer_obj *const *buffers;
    uint32_t buffer_count;
    uint32_t address_count;
    uint32_t address_reads;  /* bit i: the launch reads buffers[buffer_count + i] */
    uint32_t address_writes; /* bit i: the launch writes buffers[buffer_count + i] */
    const void *info;
    uint32_t groups[3];
    buffer_obj *indirect;
    uint64_t indirect_offset;
    const uint32_t *leads; /* per buffer: bytes bound but not accessed (NULL: none) */
    /* Images and texel buffers: `buffers` holds this many more, their memory in the order of
     * entry->refl.resources (api/api_resources.c resolves them); samplers have none. */
    uint32_t resource_count;
    /* The kernel's resource k is sampled with linear filtering where bit k is set, and with
     * address mode (bits 8 + 2k, 9 + 2k): 0 clamp to edge, 1 repeat, 2 mirrored repeat. */
    uint32_t sampler_bits;
    uint32_t texel_formats; /* 4 bits per resource k: a texel buffer's cubec_image_format */
} launch_args;
/* Queues a launch on `slot` (arguments were checked by api/). */
MUST_USE cubec_status server_launch(cubec_device *d, stream_ref s, const launch_args *a);

#endif
