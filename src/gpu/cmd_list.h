/* The command list every backend's command buffer holds: what the server records into a gpu_cmd
 * (gpu.h's gpu_cmd_* functions), kept on the host as entries and carried out by the backend later:
 * Vulkan encodes it into a VkCommandBuffer when a batch is submitted or a graph's recording ends
 * (vk_command_list.c); the null backend checks it at cmd_end and interprets it at submit.
 *
 * Why one list in the seam rather than one per backend: recording is on the launch path, and an
 * append costs a few nanoseconds where a virtual call into a backend that notes the same ten
 * commands its own way costs as much again; and a new backend (WebGPU) gets recording for free and
 * only writes what it does with the entries.
 *
 * Only backends include this header: the server records through gpu.h and never reads the list.
 * Nothing is allocated once warm: the list keeps its capacity across cmd_begin. */
#ifndef CUBEC_GPU_CMD_LIST_H
#define CUBEC_GPU_CMD_LIST_H

#include "gpu/gpu.h"

#include <stddef.h>
#include <stdint.h>

typedef enum gpu_cmd_op {
    GPU_OP_BARRIER,
    GPU_OP_BIND_PIPELINE,
    GPU_OP_BIND_BUFFERS,
    GPU_OP_PUSH_CONSTANTS,
    GPU_OP_DISPATCH,
    GPU_OP_DISPATCH_INDIRECT,
    GPU_OP_COPY,
    GPU_OP_FILL,
    GPU_OP_TIMESTAMP,
    GPU_OP_RESET_QUERIES,
    GPU_OP_IMAGE_INIT,
    GPU_OP_COPY_IMAGE,
    GPU_OP_OWNERSHIP,
} gpu_cmd_op;

/* One entry; bindings and push-constant bytes follow it, padded to 8 bytes. */
typedef struct gpu_cmd_entry {
    uint32_t op;    /* gpu_cmd_op */
    uint32_t bytes; /* the whole entry, what follows included */
    union {
        struct {
            uint32_t src_stages, src_access, dst_stages, dst_access;
        } barrier;
        const gpu_pipeline *pipeline;
        struct {
            const gpu_pipeline *p;
            uint32_t n, info; /* n gpu_binding follow, and the metadata binding when info */
            uint32_t images;  /* then this many gpu_image_binding */
        } buffers;
        struct {
            const gpu_pipeline *p;
            uint32_t size; /* bytes that follow */
        } push;
        struct {
            uint32_t x, y, z;
        } dispatch;
        struct {
            gpu_mem *m;
            uint64_t offset;
        } indirect;
        struct {
            gpu_mem *src, *dst;
            uint64_t src_offset, dst_offset, size;
        } copy;
        struct {
            gpu_mem *dst;
            uint64_t offset, size;
            uint32_t pattern;
        } fill;
        struct {
            gpu_queries *q;
            uint32_t a, b; /* timestamp: query, stage; reset: first, count */
        } queries;
        struct {
            gpu_image *im;
            gpu_mem *m; /* GPU_OP_COPY_IMAGE: the packed bytes, at offset */
            uint64_t offset;
            uint32_t to_image;
        } image;
        struct {
            gpu_mem *m;
            uint32_t acquire; /* 1: taken back from other APIs; 0: handed to them */
        } ownership;
    } u;
} gpu_cmd_entry;

/* What every backend's command buffer starts with (its first member): the recording. Written by
 * the thread that records (under the device lock) and read by the one that encodes or submits,
 * after the hand-over; the server reuses a command buffer only once its submission is made. */
struct gpu_cmd {
    unsigned char *list;
    size_t len, cap;
    int failed; /* the host ran out of memory while recording: reported by the backend's cmd_end */
};

/* Empties the list (cmd_begin), keeping its capacity. */
void gpu_cmd_list_reset(gpu_cmd *c);
/* Frees the list's memory (cmd_destroy). */
void gpu_cmd_list_free(gpu_cmd *c);
/* CUBEC_OUT_OF_MEMORY when an append failed since the last reset, else NULL. */
MUST_USE cubec_status gpu_cmd_list_status(const gpu_cmd *c);

/* The entries in recording order: for (e = gpu_cmd_list_first(c); e; e = gpu_cmd_list_next(c, e)).
 */
static inline const gpu_cmd_entry *gpu_cmd_list_first(const gpu_cmd *c)
{
    return c->len ? (const gpu_cmd_entry *)c->list : NULL;
}
static inline const gpu_cmd_entry *gpu_cmd_list_next(const gpu_cmd *c, const gpu_cmd_entry *e)
{
    size_t at = (size_t)((const unsigned char *)e - c->list) + e->bytes;
    return at < c->len ? (const gpu_cmd_entry *)(c->list + at) : NULL;
}
/* The bindings of a GPU_OP_BIND_BUFFERS entry (n of them, then the metadata binding when info) and
 * the bytes of a GPU_OP_PUSH_CONSTANTS entry. */
static inline const gpu_binding *gpu_cmd_entry_bindings(const gpu_cmd_entry *e)
{
    return (const gpu_binding *)(e + 1);
}
/* The images of a GPU_OP_BIND_BUFFERS entry (u.buffers.images of them, after the bindings). */
static inline const gpu_image_binding *gpu_cmd_entry_images(const gpu_cmd_entry *e)
{
    return (const gpu_image_binding *)(gpu_cmd_entry_bindings(e) + e->u.buffers.n +
                                       e->u.buffers.info);
}
static inline const void *gpu_cmd_entry_bytes(const gpu_cmd_entry *e)
{
    return e + 1;
}

/* One buffer of a bind that goes in a given descriptor set (bind group), where the pipeline
 * places it. */
typedef struct gpu_set_buffer {
    const gpu_binding *b;
    uint32_t binding;
    int uniform; /* a uniform buffer; otherwise a storage buffer */
    int info;    /* the metadata buffer */
} gpu_set_buffer;

/* The buffers of a bind that descriptor set `set` takes, in order, into `out` (room for
 * GPU_MAX_BINDINGS); returns how many. Buffer i goes where slots[i] says; those past slot_count
 * and those at slots the module left unused are not bound (docs/kernels.md, "Bringing existing
 * shaders"). The metadata buffer `info` (NULL: none) comes last, in set 0 at GPU_INFO_BINDING, a
 * uniform buffer when `info_uniform`. One walk for every backend, so that they bind the same
 * buffers at the same places. */
uint32_t gpu_cmd_set_buffers(const gpu_slot *slots, uint32_t slot_count, int info_uniform,
                             const gpu_binding *b, uint32_t n, const gpu_binding *info,
                             uint32_t set, gpu_set_buffer *out);

#endif
