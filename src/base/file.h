/* Files that a user names (the ini file, the log and trace files, `cubec run`'s kernel, buffer
 * and output files): opened so that a bad name is refused instead of hanging or reading forever.
 *
 * A path can name a FIFO (opening it blocks until the other end opens; reading it blocks until
 * someone writes), a device such as /dev/zero (reading never ends), or a directory. These helpers
 * open without blocking (O_NONBLOCK), look at what was opened (fstat) before reading or writing a
 * byte, and refuse whatever is not a regular file (a character device such as /dev/null or a
 * terminal where the caller allows it), with a message that names the path and what it is. Reads
 * are bounded: a file larger than the caller's limit is refused, not read. The messages name the
 * path but not the setting it came from: callers annotate them with that. */
#ifndef CUBEC_BASE_FILE_H
#define CUBEC_BASE_FILE_H

#include "base/status.h"

#include <stddef.h>
#include <stdio.h>

/* What `path` names, as a phrase for messages: "a directory", "a FIFO", "a character device",
 * "a block device", "a socket", "a regular file". */
const char *file_kind_name(unsigned mode);

/* Reads the whole regular file `path` into a new buffer (free() it) with a NUL after the end: as
 * many bytes as its size said when it was opened, at most `limit`. Refuses
 * (CUBEC_INVALID_ARGUMENT) a path that cannot be opened, what is not a regular file, a file of
 * more than `limit` bytes, and a file that grows while it is read; the host out of memory is
 * CUBEC_OUT_OF_MEMORY. */
MUST_USE cubec_status file_read_regular(const char *path, size_t limit, char **out_data,
                                        size_t *out_size);

typedef enum file_output_mode {
    FILE_OUTPUT_TRUNCATE, /* replace what the file held */
    FILE_OUTPUT_APPEND,   /* add to its end */
} file_output_mode;

/* Refuses (CUBEC_INVALID_ARGUMENT) an output path that exists and is neither a regular file nor,
 * with `char_device_ok`, a character device. Opens nothing and creates nothing: for checking a
 * setting before it is used. A path that does not exist passes (it is created when opened). */
MUST_USE cubec_status file_check_output(const char *path, int char_device_ok);

/* Opens `path` for writing, creating a regular file if it does not exist, with close-on-exec.
 * Refuses as file_check_output does, and a path that cannot be opened (naming the reason). A FIFO
 * or socket that appears between the check and the open is refused too, without blocking. */
MUST_USE cubec_status file_open_output(const char *path, file_output_mode mode, int char_device_ok,
                                       FILE **out);

#endif
