/* The autotuner (tune/autotune.c, cubec.h "Autotuning", docs/autotune.md): internals that tests
 * reach for. */
#ifndef CUBEC_TUNE_AUTOTUNE_H
#define CUBEC_TUNE_AUTOTUNE_H

#include "cubec/cubec.h"

#include "kernel/disk_cache.h"

#include <stddef.h>

/* The format of a stored choice's payload: a change of layout bumps it. */
#define TUNE_ENTRY_FORMAT 1u

/* The path of the file that holds the tuner's stored choice for `key`, into buf; "" when the
 * tuner has no persistent cache (memory_only, `none`, or a directory that could not be used).
 * Opens the cache like a lookup would. For tests that damage entries. */
const char *tune_entry_path(cubec_tuner *t, const char *key, char *buf, size_t cap);

/* What the tuner's persistent cache did (zeros without one). */
void tune_disk_stats(cubec_tuner *t, disk_cache_stats *out);

#endif
