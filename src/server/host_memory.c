/* Registered and pinned host memory (see host_memory.h).
 *
 * A registration imports the program's pages as a Vulkan buffer (VK_EXT_external_memory_host);
 * a pinned allocation is host-visible device memory whose mapping the program gets. Either way a
 * transfer whose host side lies within one range is a single DMA copy (server/transfer.c). A
 * device that cannot import still accepts registrations, so a program runs the same everywhere:
 * those transfers go through staging, as the log says once. */
#include "server/host_memory.h"
#include "base/log.h"
#include "server/device.h"
#include "server/submission.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void server_host_memory_init(cubec_device *d)
{
    uint64_t a = d->gpu->caps.host_import_alignment;
    if (!a) {
        long page = sysconf(_SC_PAGESIZE);
        a = page > 0 ? (uint64_t)page : 4096;
    }
    d->host->alignment = a;
}

/* The index of the first range whose end is past `p` (where a range holding p would be). */
static uint32_t first_ending_after(const host_memory *h, const unsigned char *p)
{
    uint32_t lo = 0, hi = h->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const host_range *r = &h->ranges[mid];
        if ((uintptr_t)r->base + r->size <= (uintptr_t)p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

host_range *server_host_find(host_memory *h, const void *ptr, uint64_t size)
{
    if (!h->count || !ptr) return NULL;
    const unsigned char *p = ptr;
    uint32_t i = first_ending_after(h, p);
    if (i == h->count) return NULL;
    host_range *r = &h->ranges[i];
    uintptr_t at = (uintptr_t)p, base = (uintptr_t)r->base;
    if (at < base || size > r->size - (at - base)) return NULL;
    return r->mem ? r : NULL;
}

/* Inserts a range known not to overlap any other. */
static cubec_status insert(host_memory *h, host_range r)
{
    if (h->count == HOST_MEMORY_MAX_RANGES)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "the device holds %u registered or pinned host ranges already, the "
                           "most it keeps",
                           HOST_MEMORY_MAX_RANGES);
    if (h->count == h->cap) {
        uint32_t cap = h->cap ? h->cap * 2 : 8;
        host_range *grown = realloc(h->ranges, cap * sizeof *grown);
        if (!grown) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (host ranges)");
        h->ranges = grown;
        h->cap = cap;
    }
    uint32_t i = first_ending_after(h, r.base);
    memmove(&h->ranges[i + 1], &h->ranges[i], (h->count - i) * sizeof *h->ranges);
    h->ranges[i] = r;
    h->count++;
    return NULL;
}

/* The range that starts exactly at ptr, or NULL. */
static host_range *at_base(host_memory *h, const void *ptr)
{
    uint32_t i = first_ending_after(h, ptr);
    return i < h->count && h->ranges[i].base == ptr ? &h->ranges[i] : NULL;
}

uint64_t server_host_range_size(host_memory *h, const void *ptr)
{
    const host_range *r = at_base(h, ptr);
    return r ? r->size : 0;
}

static void remove_range(cubec_device *d, host_range *r)
{
    host_memory *h = d->host;
    gpu_mem_free(d->gpu, r->mem);
    uint32_t i = (uint32_t)(r - h->ranges);
    memmove(&h->ranges[i], &h->ranges[i + 1], (h->count - i - 1) * sizeof *h->ranges);
    h->count--;
}

cubec_status server_host_register(cubec_device *d, void *ptr, uint64_t size)
{
    static const char fn[] = "cubec_host_register";
    host_memory *h = d->host;
    if ((uintptr_t)ptr % h->alignment || size % h->alignment)
        return INVALID_ARG("%s: ptr %p and size %" PRIu64 " must be multiples of %" PRIu64
                           " (cubec_device_info.host_register_alignment)",
                           fn, ptr, size, h->alignment);
    if (size > UINTPTR_MAX - (uintptr_t)ptr)
        return INVALID_ARG("%s: ptr %p + size %" PRIu64 " passes the end of the address space", fn,
                           ptr, size);
    uint32_t i = first_ending_after(h, ptr);
    if (i < h->count && (uintptr_t)h->ranges[i].base < (uintptr_t)ptr + size) {
        const host_range *o = &h->ranges[i];
        return INVALID_ARG("%s: [%p, +%" PRIu64 ") overlaps the %s range [%p, +%" PRIu64 ")", fn,
                           ptr, size, o->pinned ? "pinned (cubec_host_alloc)" : "registered",
                           (void *)o->base, o->size);
    }
    host_range r = {.base = ptr, .size = size};
    if (d->gpu->caps.host_import_alignment) {
        cubec_status err = gpu_mem_import(d->gpu, ptr, size, &r.mem);
        if (err) return status_annotate(err, "%s: importing [%p, +%" PRIu64 ")", fn, ptr, size);
    } else if (!h->warned_no_import) {
        h->warned_no_import = 1;
        LOG(LOG_WARN, LOG_SYS_MEMORY,
            "%s: device '%s' cannot import host memory (%s): "
            "registered ranges are accepted and copied through staging",
            fn, d->info.name, gpu_no_host_import(d->gpu));
    }
    cubec_status err = insert(h, r);
    if (err) gpu_mem_free(d->gpu, r.mem);
    return err;
}

/* Waits until no submitted transfer uses the range at `ptr` any more; the wait drops the device
 * lock, so the range is looked up again after it. NULL with *out the range, or an error. */
static cubec_status settle(cubec_device *d, void *ptr, const char *fn, int pinned, host_range **out)
{
    for (;;) {
        host_range *r = at_base(d->host, ptr);
        if (!r || r->pinned != pinned) {
            const char *hint = !r ? (pinned ? "was not returned by cubec_host_alloc (or was freed)"
                                            : "is not registered (or was unregistered)")
                                  : (pinned ? "is registered, not pinned: use cubec_host_unregister"
                                            : "is pinned: use cubec_host_free");
            return INVALID_ARG("%s: ptr %p %s", fn, ptr, hint);
        }
        if (r->last_use <= d->sub->completed_value) {
            *out = r;
            return NULL;
        }
        RETURN_IF_ERROR(sub_wait(d, r->last_use));
    }
}

cubec_status server_host_unregister(cubec_device *d, void *ptr)
{
    host_range *r = NULL;
    RETURN_IF_ERROR(settle(d, ptr, "cubec_host_unregister", 0, &r));
    if (r) remove_range(d, r);
    return NULL;
}

cubec_status server_host_alloc(cubec_device *d, uint64_t size, void **out)
{
    host_range r = {.size = size, .pinned = 1};
    cubec_status err = gpu_mem_alloc(d->gpu, GPU_MEM_HOST, size, &r.mem);
    if (err)
        return status_annotate(err, "cubec_host_alloc: %" PRIu64 " bytes of pinned memory", size);
    r.base = r.mem->mapped;
    err = insert(d->host, r);
    if (err) {
        gpu_mem_free(d->gpu, r.mem);
        return err;
    }
    *out = r.base;
    return NULL;
}

cubec_status server_host_free(cubec_device *d, void *ptr)
{
    host_range *r = NULL;
    RETURN_IF_ERROR(settle(d, ptr, "cubec_host_free", 1, &r));
    if (r) remove_range(d, r);
    return NULL;
}

void server_host_memory_destroy(cubec_device *d)
{
    host_memory *h = d->host;
    for (uint32_t i = 0; i < h->count; i++)
        gpu_mem_free(d->gpu, h->ranges[i].mem);
    free(h->ranges);
    memset(h, 0, sizeof *h);
}
