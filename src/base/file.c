/* Files a user names, opened without blocking and refused unless regular (see file.h). */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *file_kind_name(unsigned mode)
{
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

/* "'<path>' is a FIFO, not a regular file" (or "... nor a character device" when one is allowed).
 */
static cubec_status refuse_kind(const char *path, unsigned mode, int char_device_ok)
{
    return INVALID_ARG("'%s' is %s, not a regular file%s", path, file_kind_name(mode),
                       char_device_ok ? " or a character device" : "");
}

static int kind_allowed(unsigned mode, int char_device_ok)
{
    return S_ISREG(mode) || (char_device_ok && S_ISCHR(mode));
}

cubec_status file_read_regular(const char *path, size_t limit, char **out_data, size_t *out_size)
{
    *out_data = NULL;
    *out_size = 0;
    /* O_NONBLOCK: opening a FIFO for reading must not wait for a writer. It does not change how a
     * regular file is read, and nothing else is read. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return INVALID_ARG("'%s' cannot be opened: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return INVALID_ARG("'%s' cannot be examined: %s", path, strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return refuse_kind(path, st.st_mode, 0);
    }
    if (st.st_size < 0 || (uintmax_t)st.st_size > limit) {
        close(fd);
        return INVALID_ARG("'%s' is %jd bytes, more than the limit of %zu bytes", path,
                           (intmax_t)st.st_size, limit);
    }
    /* The size fstat gave bounds the read (a file whose size says 0, as those of /proc do, reads
     * as empty). One byte more is asked for, so that a file that grew while it was read is
     * refused instead of cut short. */
    const size_t bound = (size_t)st.st_size;
    size_t cap = bound < ((size_t)1 << 16) ? bound + 2 : ((size_t)1 << 16) + 2;
    char *data = malloc(cap);
    size_t size = 0;
    int err = 0;
    while (data) {
        if (size + 1 >= cap) { /* full: one byte stays for the NUL */
            if (size > bound) break;
            size_t next = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
            if (bound <= SIZE_MAX - 2 && next > bound + 2) next = bound + 2;
            char *grown = realloc(data, next);
            if (!grown) {
                free(data);
                data = NULL;
                break;
            }
            data = grown;
            cap = next;
        }
        ssize_t n = read(fd, data + size, cap - 1 - size);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            err = errno;
            break;
        }
        if (n == 0) break;
        size += (size_t)n;
        if (size > bound) break;
    }
    close(fd);
    if (!data)
        return status_make(CUBEC_OUT_OF_MEMORY, "'%s': host out of memory reading %zu bytes", path,
                           bound);
    if (err || size > bound) {
        free(data);
        if (err) return INVALID_ARG("'%s' cannot be read: %s", path, strerror(err));
        return INVALID_ARG("'%s' grew while it was read (it was %zu bytes)", path, bound);
    }
    data[size] = 0;
    *out_data = data;
    *out_size = size;
    return NULL;
}

cubec_status file_check_output(const char *path, int char_device_ok)
{
    struct stat st;
    /* A path that does not exist (or cannot be looked at) is left to the open, which names why
     * it fails. */
    if (stat(path, &st) != 0) return NULL;
    return kind_allowed(st.st_mode, char_device_ok) ? NULL
                                                    : refuse_kind(path, st.st_mode, char_device_ok);
}

cubec_status file_open_output(const char *path, file_output_mode mode, int char_device_ok,
                              FILE **out)
{
    *out = NULL;
    RETURN_IF_ERROR(file_check_output(path, char_device_ok));
    /* O_NONBLOCK: a FIFO put there since the check makes the open fail (ENXIO) instead of waiting
     * for a reader; no O_TRUNC before the kind is known. */
    int flags = O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    if (mode == FILE_OUTPUT_APPEND) flags |= O_APPEND;
    int fd = open(path, flags, 0666);
    if (fd < 0) return INVALID_ARG("'%s' cannot be opened for writing: %s", path, strerror(errno));
    struct stat st;
    cubec_status status = NULL;
    if (fstat(fd, &st) != 0)
        status = INVALID_ARG("'%s' cannot be examined: %s", path, strerror(errno));
    else if (!kind_allowed(st.st_mode, char_device_ok))
        status = refuse_kind(path, st.st_mode, char_device_ok);
    else if (S_ISREG(st.st_mode) && mode == FILE_OUTPUT_TRUNCATE && ftruncate(fd, 0) != 0)
        status = INVALID_ARG("'%s' cannot be truncated: %s", path, strerror(errno));
    /* Writes block as they would on any file (a terminal may make them wait). */
    int fl = status ? 0 : fcntl(fd, F_GETFL);
    if (!status && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0))
        status = INVALID_ARG("'%s': cannot set its descriptor's flags: %s", path, strerror(errno));
    FILE *f = status ? NULL : fdopen(fd, mode == FILE_OUTPUT_APPEND ? "a" : "w");
    if (!status && !f)
        status = INVALID_ARG("'%s' cannot be opened as a stream: %s", path, strerror(errno));
    if (status) {
        close(fd);
        return status;
    }
    *out = f;
    return NULL;
}
