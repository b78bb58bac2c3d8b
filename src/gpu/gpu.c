/* The backend registry and the counted calls of the GPU seam (gpu.h). A new backend adds one case
 * to each switch below; a new fallible call gets one wrapper here, and fault injection covers it.
 */
#include "gpu/gpu.h"

#include "gpu/null/null_gpu.h"
#include "gpu/vulkan/vk_context.h"
#include "gpu/vulkan/vk_gpu.h"

#include <string.h>

cubec_status gpu_backend_parse(const char *name, gpu_backend *out)
{
    if (!name || !*name || !strcmp(name, "vulkan")) {
        *out = GPU_BACKEND_VULKAN;
        return NULL;
    }
    if (!strcmp(name, "null")) {
        *out = GPU_BACKEND_NULL;
        return NULL;
    }
    return INVALID_ARG("backend '%s' is unknown (backends: vulkan, null)", name);
}

cubec_status gpu_open(gpu_backend backend, const gpu_open_desc *desc, gpu **out)
{
    switch (backend) {
    case GPU_BACKEND_NULL: return null_gpu_open(desc, out);
    case GPU_BACKEND_VULKAN: break;
    }
    return vk_gpu_open(desc, out);
}

void gpu_close(gpu *g)
{
    if (g) g->ops->destroy(g);
}

cubec_status gpu_device_count(gpu_backend backend, uint32_t *out_count)
{
    if (backend == GPU_BACKEND_NULL) return null_gpu_count(out_count);
    return vk_physical_count(out_count);
}

cubec_status gpu_device_peek(gpu_backend backend, uint32_t index, cubec_device_info *out)
{
    if (backend == GPU_BACKEND_NULL) return null_gpu_peek(index, out);
    return vk_physical_info(index, out, NULL);
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

cubec_status gpu_pipeline_create(gpu *g, const gpu_pipeline_desc *desc, gpu_pipeline **out)
{
    return g->ops->pipeline_create(g, desc, out);
}

cubec_status gpu_submit(gpu *g, const gpu_submit_item *items, uint32_t n)
{
    RETURN_IF_ERROR(gpu_fault(g, CUBEC_FAULT_SUBMIT, CUBEC_INTERNAL));
    return g->ops->submit(g, items, n);
}
