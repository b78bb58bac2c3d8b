/* Filling a table of entry points from a library loaded at run time (base/dl_table.h). */
#include "base/dl_table.h"

#include <dlfcn.h>
#include <string.h>

cubec_status dl_table_load(const char *path, const dl_entry *entries, size_t count, void *table,
                           size_t table_size, const char *what, const char *hint, void **out_lib)
{
    memset(table, 0, table_size);
    *out_lib = NULL;
    dlerror();
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        return status_make(CUBEC_UNSUPPORTED, "%s: cannot load %s (%s)", what, path,
                           why ? why : "no reason given");
    }
    for (size_t i = 0; i < count; i++) {
        void *fn = dlsym(lib, entries[i].name);
        if (!fn) {
            dlclose(lib);
            memset(table, 0, table_size);
            return status_make(CUBEC_UNSUPPORTED, "%s: %s has no %s (%s)", what, path,
                               entries[i].name, hint);
        }
        /* A function pointer stored through its table slot: POSIX guarantees dlsym's void *
         * converts to one. */
        memcpy((char *)table + entries[i].offset, &fn, sizeof fn);
    }
    *out_lib = lib;
    return NULL;
}
