/* Texel-buffer views (docs/images.md, "Texel buffers"): a uniform or storage texel buffer is a
 * VkBufferView of a range of a page in a format, which a descriptor names. Views are kept per page,
 * keyed by (offset, size, format), and destroyed with the page: a launch that binds the same
 * buffer again (the common case, and every graph replay) finds its view without allocating, and a
 * view outlives every command buffer that names it, since a page is destroyed only once no queued
 * work or graph holds it. */
#include "base/image_formats.h"
#include "gpu/vulkan/vk_gpu.h"
#include "gpu/vulkan/vk_result.h"

#include <inttypes.h>
#include <stdlib.h>

struct vk_texel_view {
    uint64_t offset, size;
    uint32_t format;
    VkBufferView view;
};

/* Makes the view of the whole texels of the range (a buffer need not end on a texel). */
static cubec_status make_view(vk_gpu *v, vk_mem *m, uint64_t offset, uint64_t size, uint32_t format,
                              VkBufferView *out)
{
    uint64_t texel = image_format_bytes(format);
    uint64_t align = v->base.caps.texel_offset_alignment;
    /* The API checked all of it (api/api_resources.c); a page without the usages is one the
     * program imported, which no launch binds as a texel buffer. */
    if (!texel || size < texel || (align && offset % align) || !m->texel_usage)
        return status_make(CUBEC_INTERNAL,
                           "texel buffer view of %" PRIu64 " bytes at offset %" PRIu64
                           " as format %" PRIu32 ": not a texel range of a texel-buffer page",
                           size, offset, format);
    VkBufferViewCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                                 .buffer = m->buffer,
                                 .format = vk_image_format(format),
                                 .offset = offset,
                                 .range = size / texel * texel};
    VK_RETURN_IF_ERROR(vkCreateBufferView(v->vk.device, &ci, NULL, out), "vkCreateBufferView");
    return NULL;
}

cubec_status vk_texel_view(vk_gpu *v, vk_mem *m, uint64_t offset, uint64_t size, uint32_t format,
                           VkBufferView *out)
{
    cubec_status err = NULL;
    pthread_mutex_lock(&v->views_lock);
    for (uint32_t i = 0; i < m->view_count; i++) {
        const struct vk_texel_view *x = &m->views[i];
        if (x->offset == offset && x->size == size && x->format == format) {
            *out = x->view;
            pthread_mutex_unlock(&v->views_lock);
            return NULL;
        }
    }
    if (m->view_count == m->view_cap) {
        uint32_t cap = m->view_cap ? m->view_cap * 2 : 4;
        struct vk_texel_view *n = realloc(m->views, cap * sizeof *n);
        if (!n)
            err = status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (texel buffer views)");
        else {
            m->views = n;
            m->view_cap = cap;
        }
    }
    VkBufferView view = VK_NULL_HANDLE;
    if (!err) err = make_view(v, m, offset, size, format, &view);
    if (!err) {
        m->views[m->view_count++] = (struct vk_texel_view){offset, size, format, view};
        *out = view;
    }
    pthread_mutex_unlock(&v->views_lock);
    return err;
}

void vk_texel_views_destroy(vk_gpu *v, vk_mem *m)
{
    if (!v->abandoned)
        for (uint32_t i = 0; i < m->view_count; i++)
            vkDestroyBufferView(v->vk.device, m->views[i].view, NULL);
    free(m->views);
    m->views = NULL;
    m->view_count = m->view_cap = 0;
}
