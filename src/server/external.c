/* Export and import (docs/multi-device.md): buffers whose memory another device or CUDA maps,
 * memory another cubec device exported, and the values of the device timeline an importer of it
 * waits for. An exportable buffer has a page of its own among the slot's external allocations
 * (memory/memory_modes.h): the whole allocation is what an importer maps, so it must hold no
 * other buffer's bytes, and that pool is never relocated nor reused while the buffer lives. */
#include "server/external.h"
#include "server/device.h"
#include "server/graph.h"
#include "server/memory_ops.h"
#include "server/sync.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

cubec_status server_buffer_create_exportable(cubec_device *d, stream_ref s, uint64_t size,
                                             cubec_buffer *out)
{
    if (!(d->gpu->caps.export_memory))
        return status_make(CUBEC_UNSUPPORTED,
                           "cubec_buffer_create_exportable: the device \"%s\" (%s backend) cannot "
                           "export memory (cubec_device_info.external_handles has no "
                           "CUBEC_EXTERNAL_MEMORY_FD)",
                           d->info.name, d->gpu->ops->name);
    return server_buffer_create(d, s, size, MEMORY_EXPORTABLE_PAGE, out);
}

cubec_status server_buffer_export(cubec_device *d, uint64_t id, const buffer_obj *b,
                                  cubec_export_info *out)
{
    const gpu_mem *page = b->alloc->mem.size ? buffer_page(b) : NULL;
    if (!page || page->external != GPU_EXTERNAL_EXPORTABLE)
        return INVALID_ARG("cubec_buffer_export: buffer 0x%" PRIx64 " (buffer #%" PRIu64
                           ") %s: only a buffer made by cubec_buffer_create_exportable (or a view "
                           "of one) can be exported",
                           id, b->alloc->number,
                           !page ? "holds no memory"
                           : page->external == GPU_EXTERNAL_IMPORTED
                               ? "is imported memory (the device that made it exports it)"
                               : "was not created exportable");
    gpu_export e;
    RETURN_IF_ERROR(gpu_mem_export(d->gpu, buffer_page(b), &e));
    out->fd = e.fd;
    out->allocation_size = e.allocation_size;
    out->offset = buffer_device_offset(b);
    out->size = b->size;
    out->dedicated = e.dedicated;
    memcpy(out->device_uuid, d->gpu->caps.device_uuid, sizeof out->device_uuid);
    return NULL;
}

static void uuid_text(const uint8_t u[16], char out[33])
{
    for (size_t i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", u[i]);
}

cubec_status server_buffer_import(cubec_device *d, stream_ref s, const cubec_import_desc *desc,
                                  cubec_buffer *out)
{
    if (!d->gpu->caps.export_memory)
        return status_make(CUBEC_UNSUPPORTED,
                           "cubec_buffer_import: the device \"%s\" (%s backend) cannot import "
                           "memory (cubec_device_info.external_handles has no "
                           "CUBEC_EXTERNAL_MEMORY_FD)",
                           d->info.name, d->gpu->ops->name);
    /* Opaque fds carry memory of one physical device only (VkImportMemoryFdInfoKHR): another
     * GPU's fd would import garbage or fail deep in the driver, so it is refused by name. */
    if (memcmp(desc->device_uuid, d->gpu->caps.device_uuid, 16) != 0) {
        char theirs[33], ours[33];
        uuid_text(desc->device_uuid, theirs);
        uuid_text(d->gpu->caps.device_uuid, ours);
        return INVALID_ARG("cubec_buffer_import: desc->device_uuid %s is not this device's %s "
                           "(\"%s\"): memory imports only on the physical device that exported it",
                           theirs, ours, d->info.name);
    }
    uint64_t align = d->info.storage_offset_alignment ? d->info.storage_offset_alignment : 1;
    if (desc->offset % align)
        return INVALID_ARG("cubec_buffer_import: desc->offset %" PRIu64
                           " is not a multiple of the device's storage_offset_alignment %" PRIu64,
                           desc->offset, align);
    gpu_mem *page = NULL;
    cubec_status err =
        gpu_mem_import_fd(d->gpu, desc->fd, desc->allocation_size, desc->dedicated, &page);
    if (err)
        return status_annotate(
            err, "cubec_buffer_import: desc->fd %d (allocation_size %" PRIu64 ", dedicated %d)",
            desc->fd, desc->allocation_size, desc->dedicated);
    err = server_buffer_adopt(d, s, page, desc->offset, desc->size, out);
    if (err) {
        gpu_mem_free(d->gpu, page);
        return err;
    }
    /* The memory holds a duplicate of the fd (gpu_mem_import_fd): the caller's goes now, as a
     * successful import takes it. */
    close(desc->fd);
    return NULL;
}

cubec_status server_stream_timeline_value(cubec_device *d, stream_ref s, uint64_t *out)
{
    RETURN_IF_ERROR(server_flush(d, s));
    *out = d->streams->slots[s.slot].last_value;
    return NULL;
}

cubec_status server_inbound_export(cubec_device *d, int *out_fd)
{
    cubec_status err = gpu_inbound_export(d->gpu, out_fd);
    return err ? status_annotate(err, "device \"%s\"", d->info.name) : NULL;
}

/* Whether `a` sits on an external page: the only memory ownership moves for. */
static int external_page(const alloc_obj *a)
{
    return a->mem.size && ((const gpu_mem *)a->mem.page)->external;
}

cubec_status server_stream_hand_out(cubec_device *d, stream_ref s, alloc_obj *const *hand_out,
                                    uint32_t n, uint64_t *out)
{
    RETURN_IF_ERROR(server_flush(d, s));
    uint32_t releases = 0;
    for (uint32_t i = 0; i < n; i++)
        releases += external_page(hand_out[i]) && !hand_out[i]->handed_out;
    if (releases) {
        /* After the stream's work in submission order: the release's first scope covers it. */
        gpu_cmd *cmd;
        RETURN_IF_ERROR(sub_begin(d, &cmd));
        for (uint32_t i = 0; i < n; i++)
            if (external_page(hand_out[i]) && !hand_out[i]->handed_out) {
                gpu_cmd_ownership(cmd, (gpu_mem *)hand_out[i]->mem.page, 0);
                hand_out[i]->handed_out = 1;
            }
        uint64_t value = d->sub->next_value;
        RETURN_IF_ERROR(sub_flush(d, 0));
        d->streams->slots[s.slot].last_value = value;
    }
    *out = d->streams->slots[s.slot].last_value;
    return NULL;
}

cubec_status server_stream_wait_inbound(cubec_device *d, stream_ref s, uint64_t value,
                                        alloc_obj *const *take_back, uint32_t n, const char *fn)
{
    if (!gpu_has_inbound(d->gpu))
        return status_make(CUBEC_UNSUPPORTED,
                           "%s: the device \"%s\" (%s backend) has no timeline another API can "
                           "signal",
                           fn, d->info.name, d->gpu->ops->name);
    /* A graph replays its recording as it is: a wait for one value of another API's timeline
     * would be replayed against a value long passed. */
    RETURN_IF_ERROR(server_graph_refuse(d, s, fn));
    if (!value) return INVALID_ARG("%s: inbound timeline value 0 (values start at 1)", fn);
    /* What the stream queued before the call is not held back by the wait. */
    RETURN_IF_ERROR(server_flush(d, s));
    gpu_cmd *cmd;
    RETURN_IF_ERROR(sub_begin(d, &cmd));
    for (uint32_t i = 0; i < n; i++)
        if (take_back[i]->handed_out) {
            gpu_cmd_ownership(cmd, (gpu_mem *)take_back[i]->mem.page, 1);
            take_back[i]->handed_out = 0;
        }
    uint64_t waits = 0;
    RETURN_IF_ERROR(sub_flush_inbound(d, value, &waits));
    slot_state *ss = &d->streams->slots[s.slot];
    ss->last_value = waits;
    ss->inbound_after = waits;
    return NULL;
}

cubec_status server_inbound_signal(cubec_device *d, uint64_t value)
{
    if (!d->gpu->ops->inbound_signal)
        return status_make(CUBEC_UNSUPPORTED, "the %s backend has no inbound timeline",
                           d->gpu->ops->name);
    return d->gpu->ops->inbound_signal(d->gpu, value);
}
