/* Loading NCCL at run time (interop/nccl_driver.h). */
#include "interop/nccl_driver.h"

#include "base/dl_table.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENTRY(field, symbol)                                                                       \
    {                                                                                              \
        symbol, offsetof(nccl_driver, field)                                                       \
    }

static const dl_entry entries[] = {
    ENTRY(get_version, "ncclGetVersion"),
    ENTRY(get_error_string, "ncclGetErrorString"),
    ENTRY(comm_init_all, "ncclCommInitAll"),
    ENTRY(comm_destroy, "ncclCommDestroy"),
    ENTRY(comm_get_async_error, "ncclCommGetAsyncError"),
    ENTRY(group_start, "ncclGroupStart"),
    ENTRY(group_end, "ncclGroupEnd"),
    ENTRY(all_reduce, "ncclAllReduce"),
    ENTRY(broadcast, "ncclBroadcast"),
    ENTRY(reduce, "ncclReduce"),
    ENTRY(all_gather, "ncclAllGather"),
    ENTRY(reduce_scatter, "ncclReduceScatter"),
};

cubec_status nccl_driver_load(const char *path, nccl_driver *out)
{
    void *lib = NULL;
    RETURN_IF_ERROR(dl_table_load(path, entries, sizeof entries / sizeof entries[0], out,
                                  sizeof *out, "NCCL", "not NCCL 2?", &lib));
    int version = 0;
    nccl_result r = out->get_version(&version);
    if (r != NCCL_SUCCESS || version < NCCL_OLDEST_VERSION) {
        dlclose(lib);
        memset(out, 0, sizeof *out);
        return status_make(CUBEC_UNSUPPORTED,
                           "NCCL: %s is version code %d (ncclGetVersion returned %d): cubec needs "
                           "NCCL 2.4 or newer (code %d)",
                           path, version, r, NCCL_OLDEST_VERSION);
    }
    out->version = version;
    return NULL;
}

static struct {
    pthread_once_t once;
    nccl_driver table;
    cubec_code code; /* CUBEC_OK when the table is usable */
    char why[512];
} loaded = {.once = PTHREAD_ONCE_INIT};

static void load_once(void)
{
    const char *path = getenv("CUBEC_NCCL_LIBRARY");
    if (!path || !path[0]) path = "libnccl.so.2";
    cubec_status st = nccl_driver_load(path, &loaded.table);
    loaded.code = st ? cubec_status_code(st) : CUBEC_OK;
    if (st) snprintf(loaded.why, sizeof loaded.why, "%s", cubec_status_message(st));
    cubec_status_free(st);
}

cubec_status nccl_driver_get(const nccl_driver **out)
{
    *out = NULL;
    pthread_once(&loaded.once, load_once);
    if (loaded.code != CUBEC_OK) return status_make(loaded.code, "%s", loaded.why);
    *out = &loaded.table;
    return NULL;
}

cubec_status nccl_status(const nccl_driver *nc, nccl_result r, const char *what)
{
    const char *text = nc->get_error_string ? nc->get_error_string(r) : NULL;
    return status_make(CUBEC_INTERNAL, "%s: NCCL error %d (%s)", what, r,
                       text ? text : "no description");
}
