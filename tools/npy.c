/* .npy reading and writing (see npy.h). The header is a Python dict literal, written by numpy as
 * {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with spaces to a multiple of
 * 64 bytes; the parser reads that literal and no other Python (keys in any order, either quote). */
#include "npy.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && isspace((unsigned char)*p))
        p++;
    return p;
}

/* A quoted string at p (either quote, no escapes: numpy's keys and descriptors have none). */
static const char *parse_quoted(const char *p, const char *end, char *out, size_t cap)
{
    if (p >= end || (*p != '\'' && *p != '"')) return NULL;
    const char q = *p++;
    size_t n = 0;
    while (p < end && *p != q) {
        if (n + 1 >= cap) return NULL;
        out[n++] = *p++;
    }
    if (p >= end) return NULL;
    out[n] = '\0';
    return p + 1;
}

/* "(3, 4)", "(5,)" or "()" at p. */
static const char *parse_shape(const char *p, const char *end, npy_array *a)
{
    if (p >= end || *p != '(') return NULL;
    p++;
    a->ndim = 0;
    for (;;) {
        p = skip_space(p, end);
        if (p < end && *p == ')') return p + 1;
        if (a->ndim == NPY_MAX_DIMS || p >= end || !isdigit((unsigned char)*p)) return NULL;
        char *num_end = NULL;
        errno = 0;
        const unsigned long long v = strtoull(p, &num_end, 10);
        if (errno != 0 || num_end > end) return NULL;
        a->shape[a->ndim++] = v;
        p = skip_space(num_end, end);
        if (p < end && *p == ',')
            p++;
        else if (p >= end || *p != ')')
            return NULL;
    }
}

int npy_parse(const unsigned char *bytes, size_t size, npy_array *out, char *err, size_t err_size)
{
    npy_array a = {0};
    if (size < 10 || memcmp(bytes, magic, sizeof magic) != 0) {
        snprintf(err, err_size, "not a .npy file (it does not start with \\x93NUMPY)");
        return -1;
    }
    const unsigned major = bytes[6];
    size_t header_len, header_at;
    if (major == 1) {
        header_len = (size_t)bytes[8] | (size_t)bytes[9] << 8;
        header_at = 10;
    } else if (major == 2 || major == 3) {
        if (size < 12) {
            snprintf(err, err_size, "the .npy header is cut short");
            return -1;
        }
        header_len = (size_t)bytes[8] | (size_t)bytes[9] << 8 | (size_t)bytes[10] << 16 |
                     (size_t)bytes[11] << 24;
        header_at = 12;
    } else {
        snprintf(err, err_size, ".npy format version %u.%u is not one of 1.0, 2.0, 3.0", major,
                 bytes[7]);
        return -1;
    }
    if (header_len > size - header_at) {
        snprintf(err, err_size, "the .npy header says %zu bytes but the file has %zu after it",
                 header_len, size - header_at);
        return -1;
    }
    const char *p = (const char *)bytes + header_at, *end = p + header_len;
    char descr[32] = "";
    int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
    p = skip_space(p, end);
    if (p >= end || *p != '{') goto malformed;
    p++;
    for (;;) {
        p = skip_space(p, end);
        if (p < end && *p == '}') break;
        char key[32];
        p = parse_quoted(p, end, key, sizeof key);
        if (!p) goto malformed;
        p = skip_space(p, end);
        if (p >= end || *p != ':') goto malformed;
        p = skip_space(p + 1, end);
        if (strcmp(key, "descr") == 0) {
            p = parse_quoted(p, end, descr, sizeof descr);
            have_descr = p != NULL;
        } else if (strcmp(key, "fortran_order") == 0) {
            if ((size_t)(end - p) >= 4 && memcmp(p, "True", 4) == 0) {
                fortran = 1;
                p += 4;
            } else if ((size_t)(end - p) >= 5 && memcmp(p, "False", 5) == 0) {
                p += 5;
            } else {
                p = NULL;
            }
            have_order = p != NULL;
        } else if (strcmp(key, "shape") == 0) {
            p = parse_shape(p, end, &a);
            have_shape = p != NULL;
        } else {
            snprintf(err, err_size, "the .npy header has an unknown key '%s'", key);
            return -1;
        }
        if (!p) goto malformed;
        p = skip_space(p, end);
        if (p < end && *p == ',') p++;
    }
    if (!have_descr || !have_order || !have_shape) goto malformed;
    a.type = dtype_from_npy_descr(descr);
    if (a.type == DTYPE_NONE) {
        snprintf(err, err_size,
                 "dtype '%s' is not a buffer type (little-endian f16, f32, f64, i8, u8, i16, u16, "
                 "i32, u32, i64 or u64: numpy's float16 ... uint64)",
                 descr);
        return -1;
    }
    uint64_t count = 1;
    for (uint32_t i = 0; i < a.ndim; i++) {
        if (a.shape[i] && count > UINT64_MAX / a.shape[i]) goto too_big;
        count *= a.shape[i];
    }
    if (fortran && a.ndim > 1) {
        snprintf(err, err_size,
                 "the array is in Fortran order; save a C-order one "
                 "(numpy.ascontiguousarray)");
        return -1;
    }
    if (count > UINT64_MAX / dtype_size(a.type)) goto too_big;
    a.data_offset = header_at + header_len;
    a.data_size = count * dtype_size(a.type);
    if (a.data_size != size - a.data_offset) {
        snprintf(err, err_size,
                 "its shape and dtype make %" PRIu64 " bytes of data, but the file has %zu",
                 a.data_size, size - a.data_offset);
        return -1;
    }
    *out = a;
    return 0;
malformed:
    snprintf(err, err_size,
             "the .npy header is not a dict of 'descr', 'fortran_order' and "
             "'shape'");
    return -1;
too_big:
    snprintf(err, err_size, "the .npy shape is too large");
    return -1;
}

int npy_write(FILE *f, dtype type, const uint64_t *shape, uint32_t ndim, const void *data,
              uint64_t size)
{
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     dtype_npy_descr(type));
    if (ndim == 0) {
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%" PRIu64 ",", size / dtype_size(type));
    } else {
        for (uint32_t i = 0; i < ndim; i++)
            n += snprintf(dict + n, sizeof dict - (size_t)n, "%" PRIu64 "%s", shape[i],
                          ndim == 1 || i + 1 < ndim ? "," : "");
    }
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    /* Version 1.0: magic, version, a 2-byte length, then the dict padded with spaces and ended
     * with a newline so that the data starts at a multiple of 64 bytes, as numpy writes it. */
    size_t total = 10 + (size_t)n + 1;
    const size_t padded = (total + 63) / 64 * 64;
    const size_t header_len = padded - 10;
    unsigned char head[10] = {0x93,
                              'N',
                              'U',
                              'M',
                              'P',
                              'Y',
                              1,
                              0,
                              (unsigned char)(header_len & 0xFF),
                              (unsigned char)(header_len >> 8)};
    int ok = fwrite(head, 1, sizeof head, f) == sizeof head;
    ok = ok && fwrite(dict, 1, (size_t)n, f) == (size_t)n;
    for (size_t i = total; ok && i < padded; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    ok = ok && (size == 0 || fwrite(data, 1, (size_t)size, f) == (size_t)size);
    return ok ? 0 : -1;
}
