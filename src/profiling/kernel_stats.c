/* Kernel statistics (see kernel_stats.h): an open-addressing table keyed by the kernel's name,
 * linear probing, grown to keep it at most half full so that probes stay short on the launch
 * path, which is where kernel_stats_add is called. Names are stored inline (64 bytes) rather than
 * pointed to because the kernel that owned the name may be destroyed before the summary. */
#include "profiling/kernel_stats.h"

#include "base/hash.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char name[KERNEL_STATS_NAME_MAX + 1]; /* "" marks a free slot */
    kernel_stat stat;
} entry;

struct kernel_stats {
    entry *slots;
    size_t capacity; /* a power of two */
    size_t used;
    uint64_t dropped; /* samples lost because the table could not grow */
};

enum { INITIAL_CAPACITY = 16 };

kernel_stats *kernel_stats_new(void)
{
    kernel_stats *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->slots = calloc(INITIAL_CAPACITY, sizeof *s->slots);
    if (!s->slots) {
        free(s);
        return NULL;
    }
    s->capacity = INITIAL_CAPACITY;
    return s;
}

void kernel_stats_free(kernel_stats *stats)
{
    if (!stats) return;
    free(stats->slots);
    free(stats);
}

/* The name as stored: cut to KERNEL_STATS_NAME_MAX, and "?" for NULL or "" (which marks a free
 * slot). */
static void key_of(const char *name, char key[KERNEL_STATS_NAME_MAX + 1])
{
    snprintf(key, KERNEL_STATS_NAME_MAX + 1, "%s", name && *name ? name : "?");
}

/* The slot holding `key`, or the free slot where it would go. The table is never full. */
static entry *find(entry *slots, size_t capacity, const char *key)
{
    size_t i = (size_t)hash_str(HASH_SEED, key) & (capacity - 1);
    while (slots[i].name[0] && strcmp(slots[i].name, key) != 0)
        i = (i + 1) & (capacity - 1);
    return &slots[i];
}

static int grow(kernel_stats *s)
{
    size_t capacity = s->capacity * 2;
    if (capacity < s->capacity || capacity > SIZE_MAX / sizeof(entry)) return 0;
    entry *slots = calloc(capacity, sizeof *slots);
    if (!slots) return 0;
    for (size_t i = 0; i < s->capacity; i++)
        if (s->slots[i].name[0]) *find(slots, capacity, s->slots[i].name) = s->slots[i];
    free(s->slots);
    s->slots = slots;
    s->capacity = capacity;
    return 1;
}

void kernel_stats_add(kernel_stats *stats, const char *name, uint64_t ns)
{
    if (!stats) return;
    char key[KERNEL_STATS_NAME_MAX + 1];
    key_of(name, key);
    entry *e = find(stats->slots, stats->capacity, key);
    if (!e->name[0]) {
        /* A failed grow is tolerated until one free slot is left, which keeps probes ending. */
        if ((stats->used + 1) * 2 > stats->capacity && !grow(stats) &&
            stats->used + 2 > stats->capacity) {
            stats->dropped++;
            return;
        }
        e = find(stats->slots, stats->capacity, key);
        memcpy(e->name, key, sizeof key);
        e->stat = (kernel_stat){.min_ns = UINT64_MAX};
        stats->used++;
    }
    e->stat.count++;
    e->stat.total_ns += ns;
    if (ns < e->stat.min_ns) e->stat.min_ns = ns;
    if (ns > e->stat.max_ns) e->stat.max_ns = ns;
}

void kernel_stats_reset(kernel_stats *stats)
{
    if (!stats) return;
    memset(stats->slots, 0, stats->capacity * sizeof *stats->slots);
    stats->used = 0;
    stats->dropped = 0;
}

int kernel_stats_empty(const kernel_stats *stats)
{
    return !stats || (stats->used == 0 && stats->dropped == 0);
}

int kernel_stats_get(const kernel_stats *stats, const char *name, kernel_stat *out)
{
    if (!stats) return 0;
    char key[KERNEL_STATS_NAME_MAX + 1];
    key_of(name, key);
    const entry *e = find(stats->slots, stats->capacity, key);
    if (!e->name[0]) return 0;
    if (out) *out = e->stat;
    return 1;
}

/* Appends like snprintf at *len, counting what does not fit so the caller can size a buffer. */
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = *len < cap ? vsnprintf(buf + *len, cap - *len, fmt, ap) : vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) *len += (size_t)n;
}

/* Most total time first; equal totals by name so that the table is the same on every run. */
static int by_total_desc(const void *a, const void *b)
{
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    if (x->stat.total_ns != y->stat.total_ns) return x->stat.total_ns > y->stat.total_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

size_t kernel_stats_format(const kernel_stats *stats, char *buf, size_t cap)
{
    size_t len = 0;
    if (buf && cap) buf[0] = 0;
    if (!buf) cap = 0;
    if (kernel_stats_empty(stats)) return 0;
    /* sizeof of the type: clang-tidy 14 reads `sizeof *rows` as a mistaken sizeof of a pointer. */
    const entry **rows = malloc((stats->used ? stats->used : 1) * sizeof(const entry *));
    if (!rows) {
        append(buf, cap, &len, "kernel statistics: host out of memory\n");
        return len;
    }
    size_t n = 0;
    uint64_t count = 0, total = 0;
    int width = (int)strlen("kernel");
    for (size_t i = 0; i < stats->capacity; i++) {
        const entry *e = &stats->slots[i];
        if (!e->name[0]) continue;
        rows[n++] = e;
        count += e->stat.count;
        total += e->stat.total_ns;
        if ((int)strlen(e->name) > width) width = (int)strlen(e->name);
    }
    qsort(rows, n, sizeof(const entry *), by_total_desc);
    append(buf, cap, &len, "%-*s %10s %12s %12s %8s\n", width, "kernel", "count", "total ms",
           "mean us", "share %");
    for (size_t i = 0; i < n; i++) {
        const kernel_stat *k = &rows[i]->stat;
        append(buf, cap, &len, "%-*s %10llu %12.3f %12.3f %8.1f\n", width, rows[i]->name,
               (unsigned long long)k->count, (double)k->total_ns / 1e6,
               (double)k->total_ns / (double)k->count / 1e3,
               total ? 100.0 * (double)k->total_ns / (double)total : 0.0);
    }
    append(buf, cap, &len, "%-*s %10llu %12.3f %12.3f %8.1f\n", width, "total",
           (unsigned long long)count, (double)total / 1e6,
           count ? (double)total / (double)count / 1e3 : 0.0, n ? 100.0 : 0.0);
    if (stats->dropped)
        append(buf, cap, &len, "(%llu samples dropped: the table could not grow)\n",
               (unsigned long long)stats->dropped);
    free(rows);
    return len;
}
