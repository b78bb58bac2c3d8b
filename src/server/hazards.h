/* Hazard tracking: which byte ranges of which pages commands recorded since the last barrier
 * read and wrote. A new command needs a barrier only when it reads what was written (RAW) or
 * writes what was read or written (WAR/WAW); independent launches get none, because a barrier
 * costs ~2 us of device time on a GPU. Pipeline barriers order against every earlier command in
 * the queue, across command buffers, so the tracker persists across submissions. */
#ifndef CUBEC_SERVER_HAZARDS_H
#define CUBEC_SERVER_HAZARDS_H

#include <stdint.h>

typedef struct hazard_range {
    const void *page; /* identity of the memory (a vk_page) */
    uint64_t offset, size;
    int write; /* 0: read only; 1: written (maybe read too) */
} hazard_range;

#define HAZARD_CAPACITY 128

typedef struct hazard_tracker {
    hazard_range reads[HAZARD_CAPACITY];
    hazard_range writes[HAZARD_CAPACITY];
    uint32_t read_count, write_count;
    /* Opaque to this module (Vulkan pipeline stages and access bits): what the noted commands
     * ran in and how they wrote, so a barrier waits for exactly those. */
    uint32_t stages;
    uint32_t write_access;
    /* What commands before the last barrier did when that barrier made them visible to compute
     * shaders only (the common case: a dispatch after a dispatch). A later transfer or indirect
     * dispatch is not ordered after them and needs a barrier of its own. */
    uint32_t partial_stages;
    uint32_t partial_access;
} hazard_tracker;

/* 1 when a command touching `ranges` must wait for earlier commands; also 1 when the tracker is
 * full (a barrier then resets it). */
int hazard_needs_barrier(const hazard_tracker *t, const hazard_range *ranges, uint32_t n);
/* Forgets everything: a barrier was recorded. */
void hazard_reset(hazard_tracker *t);
/* Notes the ranges of a recorded command that ran in `stages` and writes with `write_access`. */
void hazard_note(hazard_tracker *t, const hazard_range *ranges, uint32_t n, uint32_t stages,
                 uint32_t write_access);

#endif
