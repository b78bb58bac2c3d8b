/* Public entry points of memory: the per-stream report, cleanup, and the whole device's report as
 * JSON or as a table.
 *
 * The device-wide reports copy the numbers under the device lock (a snapshot) and format them
 * after unlocking, so that building a string never holds up other threads' launches. The buffer
 * pools belong to stream slots; the rings belong to the device and so are reported once. */
#include "api/api_common.h"
#include "api/api_struct.h"
#include "base/array.h"
#include "server/buffers.h"
#include "server/memory_ops.h"
#include "server/raw.h"
#include "server/run_mode.h"
#include "server/streams.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

cubec_status cubec_memory_report_get(cubec_device *device, cubec_stream stream,
                                     cubec_memory_report *out_report)
{
    if (!out_report) return INVALID_ARG("cubec_memory_report_get: out_report is NULL");
    RETURN_IF_ERROR(API_STRUCT_CHECK(out_report, cubec_memory_report, CUBEC_MEMORY_REPORT_INIT,
                                     "cubec_memory_report_get", "out_report"));
    api_struct_clear(out_report);
    /* Large (several KiB): on the heap rather than the caller's stack. */
    cubec_memory_report *whole = malloc(sizeof *whole);
    if (!whole)
        return status_make(CUBEC_OUT_OF_MEMORY, "cubec_memory_report_get: host out of memory");
    cubec_status err = api_lock(device, "cubec_memory_report_get");
    if (err) {
        free(whole);
        return err;
    }
    stream_ref s;
    err = api_slot(device, stream, "cubec_memory_report_get", &s);
    if (!err) {
        memset(whole, 0, sizeof *whole);
        server_memory_report(device, s, whole);
        whole->pages_unbacked = device->runs->unbacked_pages;
        api_struct_write(out_report, whole);
    }
    free(whole);
    return api_unlock(device, err);
}

cubec_status cubec_memory_cleanup(cubec_device *device, cubec_stream stream)
{
    RETURN_IF_ERROR(api_lock(device, "cubec_memory_cleanup"));
    stream_ref s;
    cubec_status err = api_slot(device, stream, "cubec_memory_cleanup", &s);
    if (!err) err = server_memory_cleanup(device, s);
    return api_unlock(device, err);
}

cubec_status cubec_buffer_raw(cubec_device *device, cubec_stream stream, cubec_buffer buffer,
                              cubec_raw_buffer *out_raw, cubec_guard *out_guard)
{
    if (out_raw)
        RETURN_IF_ERROR(API_STRUCT_CHECK(out_raw, cubec_raw_buffer, CUBEC_RAW_BUFFER_INIT,
                                         "cubec_buffer_raw", "out_raw"));
    if (out_raw) api_struct_clear(out_raw);
    if (out_guard) out_guard->id = 0;
    if (!out_raw || !out_guard)
        return INVALID_ARG("cubec_buffer_raw: out_raw (%p) and out_guard (%p) are required",
                           (void *)out_raw, (void *)out_guard);
    RETURN_IF_ERROR(api_lock(device, "cubec_buffer_raw"));
    stream_ref s;
    buffer_obj *b;
    cubec_status err = api_slot(device, stream, "cubec_buffer_raw", &s);
    if (!err) err = api_buffer(device, buffer, "cubec_buffer_raw: buffer", &b);
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    if (!err) err = server_buffer_raw(device, s, b, &raw, out_guard);
    if (!err) api_struct_write(out_raw, &raw);
    return api_unlock(device, err);
}

cubec_status cubec_buffer_map(cubec_device *device, cubec_stream stream, cubec_buffer buffer,
                              void **out_ptr, cubec_guard *out_guard)
{
    if (out_ptr) *out_ptr = NULL;
    if (out_guard) out_guard->id = 0;
    if (!out_ptr || !out_guard)
        return INVALID_ARG("cubec_buffer_map: out_ptr (%p) and out_guard (%p) are required",
                           (void *)out_ptr, (void *)out_guard);
    RETURN_IF_ERROR(api_lock(device, "cubec_buffer_map"));
    stream_ref s;
    buffer_obj *b;
    cubec_status err = api_slot(device, stream, "cubec_buffer_map", &s);
    if (!err) err = api_buffer(device, buffer, "cubec_buffer_map: buffer", &b);
    if (!err) err = server_buffer_map(device, s, b, buffer.id, out_ptr, out_guard);
    return api_unlock(device, err);
}

cubec_status cubec_guard_release(cubec_device *device, cubec_guard guard)
{
    if (guard.id == 0) return NULL;
    RETURN_IF_ERROR(api_lock(device, "cubec_guard_release"));
    return api_unlock(device, server_guard_release(device, guard.id));
}

void cubec_string_free(char *s)
{
    free(s);
}

/* --- The device-wide snapshot ------------------------------------------------------------- */

typedef struct totals {
    uint64_t allocations, bytes_in_use, bytes_padding, bytes_reserved;
    uint32_t pages;
} totals;

typedef struct slot_memory {
    uint32_t slot;
    cubec_memory_report report;
    totals sum;
} slot_memory;

typedef struct snapshot {
    slot_memory *slots;
    uint32_t slot_count, slot_cap;
    cubec_pool_report aux[3];
    uint32_t aux_count;
    totals buffers; /* over every slot's pools */
    uint64_t aux_reserved;
    server_budget budget;       /* the device's (cubec_memory_report's budget fields) */
    char persistent_memory[16]; /* the device's [memory] persistent_memory */
} snapshot;

static void add_pool(totals *t, const cubec_pool_report *p)
{
    t->allocations += p->allocations;
    t->bytes_in_use += p->bytes_in_use;
    t->bytes_padding += p->bytes_padding;
    t->bytes_reserved += p->bytes_reserved;
    t->pages += p->pages;
}

static cubec_status add_slot_report(void *user, uint32_t slot, const cubec_memory_report *r)
{
    snapshot *out = user;
    /* (array_grow leaves a non-NULL array when it succeeds; the analyzer cannot tell.) */
    if (array_grow((void **)&out->slots, &out->slot_cap, (uint64_t)out->slot_count + 1,
                   sizeof(slot_memory)) != 0 ||
        !out->slots)
        return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (memory report)");
    slot_memory *s = &out->slots[out->slot_count++];
    memset(s, 0, sizeof *s);
    s->slot = slot;
    s->report = *r;
    for (uint32_t p = 0; p < s->report.pool_count; p++)
        add_pool(&s->sum, &s->report.pools[p]);
    add_pool(&s->sum, &s->report.persistent);
    add_pool(&s->sum, &s->report.dedicated);
    add_pool(&out->buffers, &(cubec_pool_report){.allocations = s->sum.allocations,
                                                 .bytes_in_use = s->sum.bytes_in_use,
                                                 .bytes_padding = s->sum.bytes_padding,
                                                 .bytes_reserved = s->sum.bytes_reserved,
                                                 .pages = s->sum.pages});
    return NULL;
}

/* The numbers, copied under the device lock; formatted after it is released. */
static cubec_status take_snapshot(cubec_device *device, const char *fn, snapshot *out)
{
    memset(out, 0, sizeof *out);
    RETURN_IF_ERROR(api_lock(device, fn));
    cubec_status err = server_memory_each_slot(device, add_slot_report, out);
    if (err) {
        free(out->slots);
        out->slots = NULL;
        return api_unlock(device, status_annotate(err, "%s", fn));
    }
    out->aux_count = server_rings_report(device, out->aux, 3);
    for (uint32_t i = 0; i < out->aux_count; i++)
        out->aux_reserved += out->aux[i].bytes_reserved;
    server_memory_budget(device, &out->budget);
    snprintf(out->persistent_memory, sizeof out->persistent_memory, "%s",
             persistent_memory_name((persistent_memory)device->config.persistent_memory));
    return api_unlock(device, NULL);
}

/* --- A growing string --------------------------------------------------------------------- */

typedef struct strbuf {
    char *data;
    size_t len, cap;
    int failed; /* the host ran out of memory: the result is dropped */
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...)
{
    if (b->failed) return;
    va_list ap;
    va_start(ap, fmt);
    /* `ap` was just started: the analyzer, exploring this function on its own once the file's
     * paths change, takes it for uninitialized (it flags no other va_start of the tree). */
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
    int n = vsnprintf(b->data ? b->data + b->len : NULL, b->data ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *data = realloc(b->data, cap);
        if (!data) {
            b->failed = 1;
            return;
        }
        b->data = data;
        b->cap = cap;
        va_start(ap, fmt);
        vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

/* Hands the string over, or the error if it could not be built. */
static cubec_status sb_finish(strbuf *b, const char *fn, char **out)
{
    if (b->failed) {
        free(b->data);
        return status_make(CUBEC_OUT_OF_MEMORY, "%s: host out of memory (report of %zu bytes)", fn,
                           b->len);
    }
    *out = b->data;
    return NULL;
}

/* "auto", "persistent", "dedicated": a window's mode in the JSON and the table. */
static const char *mode_name(cubec_memory_mode mode)
{
    switch (mode) {
    case CUBEC_MEMORY_MODE_AUTO: return "auto";
    case CUBEC_MEMORY_MODE_PERSISTENT: return "persistent";
    case CUBEC_MEMORY_MODE_DEDICATED: return "dedicated";
    }
    return "?";
}

/* --- JSON ------------------------------------------------------------------------------------ */

/* Pool kinds are the library's own constants ("sliced", "metadata", ...): nothing to escape. */
static void json_pool(strbuf *b, const char *indent, const cubec_pool_report *p, int last)
{
    sb_printf(b,
              "%s{\"kind\": \"%s\", \"page_size\": %llu, \"max_slice_size\": %llu, "
              "\"pages\": %u, \"pages_peak\": %u, \"allocations\": %llu, \"bytes_in_use\": %llu, "
              "\"bytes_padding\": %llu, \"bytes_reserved\": %llu, \"cap\": %llu, "
              "\"dealloc_period\": %llu, \"outdated_pages\": %u",
              indent, p->kind, (unsigned long long)p->page_size,
              (unsigned long long)p->max_slice_size, p->pages, p->pages_peak,
              (unsigned long long)p->allocations, (unsigned long long)p->bytes_in_use,
              (unsigned long long)p->bytes_padding, (unsigned long long)p->bytes_reserved,
              (unsigned long long)p->cap, (unsigned long long)p->dealloc_period, p->outdated_pages);
    /* Relocation and guards (docs/memory.md "Relocation and guards"). */
    sb_printf(b, ", \"guarded_pages\": %u, \"relocations\": %llu, \"relocated_bytes\": %llu}%s\n",
              p->guarded_pages, (unsigned long long)p->relocations,
              (unsigned long long)p->relocated_bytes, last ? "" : ",");
}

static void json_totals(strbuf *b, const char *indent, const totals *t)
{
    sb_printf(b,
              "%s\"totals\": {\"allocations\": %llu, \"bytes_in_use\": %llu, "
              "\"bytes_padding\": %llu, \"bytes_reserved\": %llu, \"pages\": %u",
              indent, (unsigned long long)t->allocations, (unsigned long long)t->bytes_in_use,
              (unsigned long long)t->bytes_padding, (unsigned long long)t->bytes_reserved,
              t->pages);
}

cubec_status cubec_memory_report_json(cubec_device *device, char **out_json)
{
    static const char fn[] = "cubec_memory_report_json";
    if (!out_json) return INVALID_ARG("%s: out_json is NULL", fn);
    *out_json = NULL;
    snapshot s;
    RETURN_IF_ERROR(take_snapshot(device, fn, &s));
    strbuf b = {0};
    sb_printf(&b, "{\n  \"slots\": [\n");
    for (uint32_t i = 0; s.slots && i < s.slot_count; i++) {
        const slot_memory *m = &s.slots[i];
        /* Preset and mode names are the library's own constants: nothing to escape. The
         * windows are the slot's open allocation windows (docs/memory.md "Modes and windows"). */
        sb_printf(&b,
                  "    {\n      \"slot\": %u,\n      \"preset\": \"%s\",\n"
                  "      \"window_mode\": \"%s\",\n      \"window_depth\": %u,\n"
                  "      \"pools\": [\n",
                  m->slot, m->report.preset, mode_name(m->report.window_mode),
                  m->report.window_depth);
        for (uint32_t p = 0; p < m->report.pool_count; p++)
            json_pool(&b, "        ", &m->report.pools[p], p + 1 == m->report.pool_count);
        sb_printf(&b, "      ],\n");
        /* Allocations outside the layout's pools (allocation windows), apart from its list. */
        sb_printf(&b, "      \"persistent\":\n");
        json_pool(&b, "        ", &m->report.persistent, 0);
        sb_printf(&b, "      \"dedicated\":\n");
        json_pool(&b, "        ", &m->report.dedicated, 0);
        json_totals(&b, "      ", &m->sum);
        sb_printf(&b, "}\n    }%s\n", i + 1 == s.slot_count ? "" : ",");
    }
    sb_printf(&b, "  ],\n  \"auxiliary\": [\n");
    for (uint32_t i = 0; i < s.aux_count; i++)
        json_pool(&b, "    ", &s.aux[i], i + 1 == s.aux_count);
    sb_printf(&b, "  ],\n");
    /* The buffer pools' totals, as in cubec_memory_report, and the rings apart: they are memory
     * the device holds but no stream can allocate from. */
    json_totals(&b, "  ", &s.buffers);
    sb_printf(&b, ", \"auxiliary_bytes_reserved\": %llu, \"all_bytes_reserved\": %llu},\n",
              (unsigned long long)s.aux_reserved,
              (unsigned long long)s.buffers.bytes_reserved + (unsigned long long)s.aux_reserved);
    /* The setting and budget sources are the library's own constants: nothing to escape. */
    sb_printf(&b, "  \"persistent_memory\": \"%s\",\n", s.persistent_memory);
    sb_printf(&b,
              "  \"budget\": {\"bytes\": %llu, \"used_bytes\": %llu, \"returning_bytes\": %llu, "
              "\"source\": \"%s\"}\n}\n",
              (unsigned long long)s.budget.budget, (unsigned long long)s.budget.used,
              (unsigned long long)s.budget.returning, s.budget.source);
    free(s.slots);
    return sb_finish(&b, fn, out_json);
}

/* --- Table ----------------------------------------------------------------------------------- */

/* "512 B", "1.5 KiB", "8.0 MiB": the table is for reading; the JSON has the exact bytes. */
static const char *human(uint64_t bytes, char buf[16])
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, 16, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, 16, "%.1f %s", v, units[u]);
    return buf;
}

#define TABLE_HEADER "%-8s %-10s %10s %10s %6s %6s %8s %10s %10s %10s\n"
#define TABLE_ROW "%-8s %-10s %10s %10s %6u %6u %8llu %10s %10s %10s\n"
#define TABLE_SUM "%-8s %-10s %10s %10s %6u %6s %8llu %10s %10s %10s\n"

static void table_pool(strbuf *b, const char *first, const cubec_pool_report *p)
{
    char h[5][16];
    sb_printf(b, TABLE_ROW, first, p->kind, human(p->page_size, h[0]),
              human(p->max_slice_size, h[1]), p->pages, p->pages_peak,
              (unsigned long long)p->allocations, human(p->bytes_in_use, h[2]),
              human(p->bytes_padding, h[3]), human(p->bytes_reserved, h[4]));
}

/* Under an arena (or a pool with guarded pages): its current and outdated pages, the guarded
 * ones, and what relocation moved so far. */
static void table_arena(strbuf *b, const cubec_pool_report *p)
{
    int arena = strcmp(p->kind, "arena") == 0;
    if (!arena && !p->guarded_pages) return;
    char h[16];
    if (arena)
        sb_printf(b,
                  "%-8s %-10s %u current pages, %u outdated, %u guarded; %llu relocations (%s)\n",
                  "", "", p->pages - p->outdated_pages, p->outdated_pages, p->guarded_pages,
                  (unsigned long long)p->relocations, human(p->relocated_bytes, h));
    else
        sb_printf(b, "%-8s %-10s %u guarded pages\n", "", "", p->guarded_pages);
}

static void table_sum(strbuf *b, const char *first, const char *what, const totals *t)
{
    char h[3][16];
    sb_printf(b, TABLE_SUM, first, what, "", "", t->pages, "", (unsigned long long)t->allocations,
              human(t->bytes_in_use, h[0]), human(t->bytes_padding, h[1]),
              human(t->bytes_reserved, h[2]));
}

cubec_status cubec_memory_report_table(cubec_device *device, char **out_text)
{
    static const char fn[] = "cubec_memory_report_table";
    if (!out_text) return INVALID_ARG("%s: out_text is NULL", fn);
    *out_text = NULL;
    snapshot s;
    RETURN_IF_ERROR(take_snapshot(device, fn, &s));
    strbuf b = {0};
    sb_printf(&b, TABLE_HEADER, "slot", "pool", "page size", "max slice", "pages", "peak", "allocs",
              "in use", "padding", "reserved");
    if (!s.slot_count) sb_printf(&b, "(no stream has allocated memory)\n");
    for (uint32_t i = 0; s.slots && i < s.slot_count; i++) {
        const slot_memory *m = &s.slots[i];
        char slot[16];
        snprintf(slot, sizeof slot, "%u", m->slot);
        for (uint32_t p = 0; p < m->report.pool_count; p++) {
            table_pool(&b, p == 0 ? slot : "", &m->report.pools[p]);
            table_arena(&b, &m->report.pools[p]);
        }
        /* Windows' allocations: shown once the slot has held some. */
        if (m->report.persistent.pages_peak) table_pool(&b, "", &m->report.persistent);
        if (m->report.dedicated.pages_peak) table_pool(&b, "", &m->report.dedicated);
        table_sum(&b, "", "total", &m->sum);
        /* Only while windows are open: the innermost one's mode and how many. */
        if (m->report.window_depth)
            sb_printf(&b, "%-8s windows %s (%u open)\n", "", mode_name(m->report.window_mode),
                      m->report.window_depth);
        sb_printf(&b, "%-8s preset %s\n", "", m->report.preset);
    }
    for (uint32_t i = 0; i < s.aux_count; i++)
        table_pool(&b, i == 0 ? "rings" : "", &s.aux[i]);
    table_sum(&b, "all", "buffers", &s.buffers);
    char h[16];
    sb_printf(&b, "%-8s %-10s %77s\n", "", "with rings",
              human(s.buffers.bytes_reserved + s.aux_reserved, h));
    sb_printf(&b, "%-8s persistent_memory %s\n", "memory", s.persistent_memory);
    char hb[3][16];
    sb_printf(&b, "%-8s %-10s %s of %s used (%s)", "budget", "device", human(s.budget.used, hb[0]),
              human(s.budget.budget, hb[1]), s.budget.source);
    /* Only while the driver is still freeing pages cubec handed back (docs/memory.md). */
    if (s.budget.returning) sb_printf(&b, ", %s being returned", human(s.budget.returning, hb[2]));
    sb_printf(&b, "\n");
    free(s.slots);
    return sb_finish(&b, fn, out_text);
}
