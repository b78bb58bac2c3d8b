/* The backend registry and the counted calls of the GPU seam (gpu.h). The registry is generated
 * from GPU_BACKENDS (gpu/gpu_backends.h): a new backend adds its header below and a row there; a
 * new fallible call gets one wrapper here, and fault injection covers it. */
#include "gpu/gpu.h"

#include "gpu/null/null_gpu.h"
#include "gpu/vulkan/vk_gpu.h"
#include "gpu/webgpu/wg_gpu.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const backend_names[] = {
#define BACKEND_NAME(name, open, count, peek) #name,
    GPU_BACKENDS(BACKEND_NAME)
#undef BACKEND_NAME
};

const char *gpu_backend_name(gpu_backend backend)
{
    return (unsigned)backend < GPU_BACKEND_COUNT ? backend_names[backend] : NULL;
}

cubec_status gpu_backend_parse(const char *name, gpu_backend *out)
{
    if (!name || !*name) {
        *out = (gpu_backend)0;
        return NULL;
    }
    for (unsigned i = 0; i < GPU_BACKEND_COUNT; i++)
        if (!strcmp(name, backend_names[i])) {
            *out = (gpu_backend)i;
            return NULL;
        }
    char list[256] = "";
    for (unsigned i = 0; i < GPU_BACKEND_COUNT; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 backend_names[i]);
    return INVALID_ARG("backend '%s' is unknown (backends: %s)", name, list);
}

/* An enum value outside the table is a caller's bug; it is refused, never sent to a default. */
static cubec_status unknown_backend(gpu_backend backend)
{
    return INVALID_ARG("backend %d is not a row of GPU_BACKENDS (0..%d)", (int)backend,
                       GPU_BACKEND_COUNT - 1);
}

cubec_status gpu_open(gpu_backend backend, const gpu_open_desc *desc, gpu **out)
{
    switch (backend) {
#define BACKEND_OPEN(name, open, count, peek)                                                      \
    case GPU_BACKEND_##name: return open(desc, out);
        GPU_BACKENDS(BACKEND_OPEN)
#undef BACKEND_OPEN
    case GPU_BACKEND_COUNT: break;
    }
    return unknown_backend(backend);
}

void gpu_close(gpu *g)
{
    if (g) g->ops->destroy(g);
}

cubec_status gpu_device_count(gpu_backend backend, uint32_t *out_count)
{
    switch (backend) {
#define BACKEND_COUNT(name, open, count, peek)                                                     \
    case GPU_BACKEND_##name: return count(out_count);
        GPU_BACKENDS(BACKEND_COUNT)
#undef BACKEND_COUNT
    case GPU_BACKEND_COUNT: break;
    }
    return unknown_backend(backend);
}

cubec_status gpu_device_peek(gpu_backend backend, uint32_t index, cubec_device_info *out)
{
    switch (backend) {
#define BACKEND_PEEK(name, open, count, peek)                                                      \
    case GPU_BACKEND_##name: return peek(index, out);
        GPU_BACKENDS(BACKEND_PEEK)
#undef BACKEND_PEEK
    case GPU_BACKEND_COUNT: break;
    }
    return unknown_backend(backend);
}

cubec_status gpu_mem_alloc(gpu *g, gpu_mem_kind kind, uint64_t size, gpu_mem **out)
{
    if (kind == GPU_MEM_DEVICE)
        RETURN_IF_ERROR(gpu_fault(g, CUBEC_FAULT_PAGE, CUBEC_OUT_OF_MEMORY));
    gpu_mem *m = NULL;
    RETURN_IF_ERROR(g->ops->mem_create(g, kind, size, &m));
    if (kind != GPU_MEM_DEVICE || g->caps.unified) {
        cubec_status err = gpu_fault(g, CUBEC_FAULT_MAP, CUBEC_INTERNAL);
        if (!err) err = g->ops->mem_map(g, m);
        if (err) {
            g->ops->mem_destroy(g, m);
            return err;
        }
    }
    *out = m;
    return NULL;
}

cubec_status gpu_mem_alloc_unbacked(gpu *g, uint64_t size, gpu_mem **out)
{
    return g->ops->mem_create_unbacked(g, size, out);
}

cubec_status gpu_mem_back(gpu *g, gpu_mem *m)
{
    if (m->unbacked) {
        RETURN_IF_ERROR(gpu_fault(g, CUBEC_FAULT_PAGE, CUBEC_OUT_OF_MEMORY));
        RETURN_IF_ERROR(g->ops->mem_back(g, m));
    }
    if (g->caps.unified && !m->mapped) {
        /* Mapped like every page of unified memory (gpu_mem_alloc); a failed map leaves the
         * memory bound, so the next use only retries the map. */
        RETURN_IF_ERROR(gpu_fault(g, CUBEC_FAULT_MAP, CUBEC_INTERNAL));
        RETURN_IF_ERROR(g->ops->mem_map(g, m));
    }
    return NULL;
}

cubec_status gpu_mem_import(gpu *g, void *ptr, uint64_t size, gpu_mem **out)
{
    if (!g->caps.host_import_alignment || !g->ops->mem_import_host)
        return status_make(CUBEC_UNSUPPORTED, "the device cannot import host memory");
    RETURN_IF_ERROR(gpu_fault(g, CUBEC_FAULT_MAP, CUBEC_INTERNAL));
    return g->ops->mem_import_host(g, ptr, size, out);
}

/* Pages of unified memory are mapped once, at creation: an external page is one too. */
static cubec_status map_unified_page(gpu *g, gpu_mem *m)
{
    if (!g->caps.unified) return NULL;
    cubec_status err = gpu_fault(g, CUBEC_FAULT_MAP, CUBEC_INTERNAL);
    if (!err) err = g->ops->mem_map(g, m);
    if (err) g->ops->mem_destroy(g, m);
    return err;
}

cubec_status gpu_mem_alloc_exportable(gpu *g, uint64_t size, gpu_mem **out)
{
    if (!g->caps.export_memory || !g->ops->mem_create_exportable)
        return status_make(CUBEC_UNSUPPORTED,
                           "the %s device cannot allocate exportable memory (opaque file "
                           "descriptors: VK_KHR_external_memory_fd)",
                           g->ops->name);
    RETURN_IF_ERROR(gpu_fault(g, CUBEC_FAULT_PAGE, CUBEC_OUT_OF_MEMORY));
    gpu_mem *m = NULL;
    RETURN_IF_ERROR(g->ops->mem_create_exportable(g, size, &m));
    RETURN_IF_ERROR(map_unified_page(g, m));
    *out = m;
    return NULL;
}

cubec_status gpu_mem_export(gpu *g, gpu_mem *m, gpu_export *out)
{
    if (!g->caps.export_memory || !g->ops->mem_export)
        return status_make(CUBEC_UNSUPPORTED, "the %s device cannot export memory", g->ops->name);
    return g->ops->mem_export(g, m, out);
}

cubec_status gpu_mem_import_fd(gpu *g, int fd, uint64_t allocation_size, int dedicated,
                               gpu_mem **out)
{
    if (!g->caps.export_memory || !g->ops->mem_import_fd)
        return status_make(CUBEC_UNSUPPORTED,
                           "the %s device cannot import memory from a file descriptor",
                           g->ops->name);
    RETURN_IF_ERROR(gpu_fault(g, CUBEC_FAULT_MAP, CUBEC_INTERNAL));
    /* A duplicate is imported, so that the caller's fd stays its own until its whole import
     * succeeded (a failed map below frees the memory, and the duplicate with it). */
    int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (mine < 0)
        return status_make(errno == EBADF ? CUBEC_INVALID_ARGUMENT : CUBEC_INTERNAL,
                           "fd %d cannot be duplicated: %s", fd, strerror(errno));
    gpu_mem *m = NULL;
    cubec_status err = g->ops->mem_import_fd(g, mine, allocation_size, dedicated, &m);
    if (err) {
        close(mine); /* not taken by a failed import */
        return err;
    }
    RETURN_IF_ERROR(map_unified_page(g, m));
    *out = m;
    return NULL;
}

cubec_status gpu_timeline_export(gpu *g, int *out_fd)
{
    if (!g->caps.export_timeline || !g->ops->timeline_export)
        return status_make(CUBEC_UNSUPPORTED,
                           "the %s device cannot export its timeline (timeline semaphores as "
                           "opaque file descriptors: VK_KHR_external_semaphore_fd)",
                           g->ops->name);
    return g->ops->timeline_export(g, out_fd);
}

cubec_status gpu_inbound_export(gpu *g, int *out_fd)
{
    if (!g->caps.export_timeline || !g->ops->inbound_export)
        return status_make(CUBEC_UNSUPPORTED,
                           "the %s device cannot export a timeline for another API to signal "
                           "(timeline semaphores as opaque file descriptors: "
                           "VK_KHR_external_semaphore_fd)",
                           g->ops->name);
    return g->ops->inbound_export(g, out_fd);
}

cubec_status gpu_pipeline_create(gpu *g, const gpu_pipeline_desc *desc, gpu_pipeline **out)
{
    return g->ops->pipeline_create(g, desc, out);
}

cubec_status gpu_submit(gpu *g, const gpu_submit_item *items, uint32_t n)
{
    RETURN_IF_ERROR(gpu_fault(g, CUBEC_FAULT_SUBMIT, CUBEC_INTERNAL));
    return g->ops->submit(g, items, n);
}
