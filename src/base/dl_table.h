/* A table of entry points filled from a library loaded at run time (dlopen + dlsym): what the
 * CUDA driver and NCCL loaders (interop/) share, so that a missing library or entry point is
 * refused the same way, by name, with nothing half-loaded left behind. */
#ifndef CUBEC_BASE_DL_TABLE_H
#define CUBEC_BASE_DL_TABLE_H

#include "base/status.h"

#include <stddef.h>

/* One entry point: its exported name and where the table keeps it (offsetof). */
typedef struct dl_entry {
    const char *name;
    size_t offset;
} dl_entry;

/* Loads `path` and stores every entry's function into `table` (`table_size` bytes, zeroed
 * first). On success *out_lib is the library's handle. On failure the table is zero again, the
 * library is closed, and the status is CUBEC_UNSUPPORTED: "<what>: cannot load <path> (<why>)"
 * or "<what>: <path> has no <name> (<hint>)". */
MUST_USE cubec_status dl_table_load(const char *path, const dl_entry *entries, size_t count,
                                    void *table, size_t table_size, const char *what,
                                    const char *hint, void **out_lib);

#endif
