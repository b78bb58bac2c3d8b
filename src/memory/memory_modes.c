/* Allocation modes and their windows (see memory_modes.h). */
#include "memory/memory_modes.h"

#include <string.h>

void memory_modes_init(memory_modes *mm, persistent_memory setting, uint64_t alignment)
{
    memset(mm, 0, sizeof *mm);
    mm->setting = setting;
    persistent_pool_init(&mm->persistent, alignment);
    dedicated_pool_init(&mm->dedicated, alignment);
    dedicated_pool_init(&mm->external, alignment);
}

void memory_modes_destroy(memory_modes *mm, const page_source *source)
{
    persistent_pool_destroy(&mm->persistent, source);
    dedicated_pool_destroy(&mm->dedicated, source);
    dedicated_pool_destroy(&mm->external, source);
}

cubec_status memory_modes_push(memory_modes *mm, uint32_t mode)
{
    if (mode > MEMORY_MODE_DEDICATED)
        return INVALID_ARG("mode %u is not one of CUBEC_MEMORY_MODE_AUTO (0), "
                           "CUBEC_MEMORY_MODE_PERSISTENT (1), CUBEC_MEMORY_MODE_DEDICATED (2)",
                           mode);
    if (mm->depth == MEMORY_MODE_MAX_DEPTH)
        return INVALID_ARG("%u memory mode windows are open already, the most that nest (a begin "
                           "without its end?)",
                           MEMORY_MODE_MAX_DEPTH);
    mm->windows[mm->depth++] = (uint8_t)mode;
    return NULL;
}

cubec_status memory_modes_pop(memory_modes *mm)
{
    if (mm->depth == 0)
        return INVALID_ARG("no memory mode window is open on this stream's slot (an end without "
                           "its begin?)");
    mm->depth--;
    return NULL;
}

uint32_t memory_modes_route(const memory_modes *mm, uint64_t size)
{
    memory_mode w = memory_modes_window(mm);
    if (w == MEMORY_MODE_DEDICATED) return MEMORY_POOL_DEDICATED;
    switch (mm->setting) {
    case PERSISTENT_MEMORY_ENFORCED: return MEMORY_POOL_PERSISTENT;
    case PERSISTENT_MEMORY_DISABLED: return 0;
    case PERSISTENT_MEMORY_SIZE_MATCH:
        if (w == MEMORY_MODE_AUTO && persistent_pool_has_size(&mm->persistent, size))
            return MEMORY_POOL_PERSISTENT;
        break;
    case PERSISTENT_MEMORY_ENABLED: break;
    }
    return w == MEMORY_MODE_PERSISTENT ? MEMORY_POOL_PERSISTENT : 0;
}

cubec_status memory_modes_alloc(memory_modes *mm, const page_source *source, uint32_t route,
                                uint64_t size, int new_page, int *out_found, pool_slice *out)
{
    *out_found = 0;
    if (route == MEMORY_POOL_PERSISTENT) {
        *out_found = persistent_pool_try_reserve(&mm->persistent, size, out);
        if (*out_found || !new_page) return NULL;
        RETURN_IF_ERROR(persistent_pool_add_page(&mm->persistent, source, size, out));
    } else {
        if (!new_page) return NULL;
        dedicated_pool *p = route == MEMORY_POOL_EXTERNAL ? &mm->external : &mm->dedicated;
        RETURN_IF_ERROR(dedicated_pool_alloc(p, source, size, out));
    }
    *out_found = 1;
    return NULL;
}

int memory_modes_free(memory_modes *mm, const page_source *source, uint32_t pool, uint32_t slot,
                      const void *page, uint64_t size)
{
    if (pool == MEMORY_POOL_PERSISTENT)
        return persistent_pool_free(&mm->persistent, slot, page, size);
    if (pool == MEMORY_POOL_DEDICATED)
        return dedicated_pool_free(&mm->dedicated, source, slot, page, size);
    if (pool == MEMORY_POOL_EXTERNAL)
        return dedicated_pool_free(&mm->external, source, slot, page, size);
    return 0;
}

uint32_t memory_modes_release(memory_modes *mm, const page_source *source)
{
    return persistent_pool_release_free(&mm->persistent, source);
}

const char *memory_modes_route_name(uint32_t route)
{
    return route == MEMORY_POOL_PERSISTENT ? "persistent pool"
           : route == MEMORY_POOL_EXTERNAL ? "exportable allocations"
                                           : "dedicated allocations";
}

const char *persistent_memory_name(persistent_memory setting)
{
    switch (setting) {
    case PERSISTENT_MEMORY_ENABLED: return "enabled";
    case PERSISTENT_MEMORY_SIZE_MATCH: return "size-match";
    case PERSISTENT_MEMORY_DISABLED: return "disabled";
    case PERSISTENT_MEMORY_ENFORCED: return "enforced";
    }
    return "?";
}
