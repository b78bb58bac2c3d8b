/* A random run of an arena-only device against a CPU model of every buffer's bytes and of the
 * ranges that carry a failure (spec 3.9 relocation, 5 taint): buffers of growing sizes are
 * created, written, filled, copied, viewed, released, made to fail (an injected submission
 * failure of a fill) and relocated, and every read is checked against the model: the bytes where
 * no failure lies, an error where one does. Relocation comes from cubec_memory_cleanup, from
 * cubec_graph_prepare (a graph copying between two buffers is captured, replayed and destroyed)
 * and, in the epochs that cap the memory ([memory] max_bytes, or on the null backend its heap,
 * CUBEC_NULL_HEAP_BYTES), from memory pressure: there a creation may also be refused with
 * CUBEC_OUT_OF_MEMORY, which must change nothing. Raw resources are taken and released at random:
 * while guarded, a buffer's raw buffer and offset stay those of the first raw result (on the null
 * backend, where they are host memory, its bytes are those of the model, also after its handle
 * went), and the report's guarded pages are the distinct pages of the guards and the graph. A
 * second stream creates some of the buffers and writes, copies, fills and reads any of them (the
 * API orders a use after the owner's and the last writer's queued work, and a write after queued
 * reads: the model needs no sync). The arena restarts (a new device) every EPOCH steps so that it
 * keeps growing and outdating pages. Thousands of steps on the null backend
 * (test_relocation_model_null), fewer on lavapipe; CUBEC_FUZZ_SEED picks the sequence (the seed
 * is printed). */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KiB 1024u
#define MiB (1024u * KiB)
#define MAX_LIVE 24
#define MAX_GUARDS 4
#define EPOCH 250
#define STREAMS 2
/* The cap of a capped epoch: below what an uncapped epoch's pages reach, so that late in the
 * epoch creations find the pages within one page of it (pressure) or are refused. */
#define CAP_BYTES (20u * MiB)

typedef struct mbuf {
    cubec_buffer b;
    uint32_t size;
    uint32_t owner; /* the stream (index into run.s) that created it */
    uint8_t *bytes;
    uint8_t *failed; /* 1 where a failure lies */
} mbuf;

/* A guard from cubec_buffer_raw and the raw resource it came with. */
typedef struct mguard {
    cubec_guard g;
    cubec_buffer b; /* the buffer it was taken on; zero once the model released that buffer */
    uint32_t owner;
    uint32_t view_at; /* taken through a view of the buffer at this offset (0: the buffer) */
    cubec_raw_buffer first;
    uint64_t relocations_at; /* the run's relocations when it was taken */
    /* Once the buffer's handle went: its size, bytes and failures then (the allocation stays). */
    uint32_t size;
    uint8_t *bytes, *failed;
} mguard;

/* The live graph: one copy of [so, +n) of src to dofs of dst, both guarded by it. */
typedef struct mgraph {
    cubec_graph g;
    cubec_buffer src, dst;
    uint32_t so, dofs, n;
    uint64_t page[2]; /* the raw buffers (pages) of src and dst */
    uint32_t owner[2];
} mgraph;

typedef enum cap_kind { CAP_NONE, CAP_MAX_BYTES, CAP_NULL_HEAP } cap_kind;

typedef struct run {
    cubec_device *d;
    cubec_stream s[STREAMS];
    uint32_t rng;
    int null_backend;
    mbuf live[MAX_LIVE];
    uint32_t count;
    mguard guards[MAX_GUARDS];
    uint32_t guard_count;
    mgraph graph;  /* graph.g.id 0: none */
    uint32_t step; /* within the epoch */
    uint32_t epoch;
    cap_kind cap;
    uint64_t base_relocations; /* of the epochs closed */
    uint64_t checks, failed_reads;
    uint64_t by_cleanup, by_prepare, by_pressure; /* relocations each trigger made */
    uint64_t refusals, graphs, replays, guard_checks, guards_across_moves, second_stream_ops;
} run;

static uint32_t rnd(run *r, uint32_t n)
{
    return n ? test_rand(&r->rng) % n : 0;
}

/* The stream of an operation: the second one a third of the time. */
static uint32_t pick_stream(run *r)
{
    uint32_t i = rnd(r, 3) == 0;
    r->second_stream_ops += i;
    return i;
}

/* Small sizes mostly; the rest up to a limit that grows over the epoch, so the arena grows. */
static uint32_t pick_size(run *r)
{
    if (rnd(r, 10) < 7) return 4 + rnd(r, 16 * KiB);
    uint32_t limit = 64 * KiB + (uint32_t)((uint64_t)r->step * 6 * MiB / EPOCH);
    return 4 + rnd(r, limit);
}

/* The arena of a stream's slot; zeroes while the slot has allocated nothing (its report then
 * starts with the rings). */
static cubec_pool_report arena_of(run *r, uint32_t stream)
{
    cubec_memory_report rep = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(r->d, r->s[stream], &rep));
    cubec_pool_report none = {0};
    return strcmp(rep.pools[0].kind, "arena") == 0 ? rep.pools[0] : none;
}

/* Relocations so far: the closed epochs' and the device's (every stream's arena). */
static uint64_t relocations(run *r)
{
    uint64_t n = r->base_relocations;
    for (uint32_t i = 0; i < STREAMS; i++)
        n += arena_of(r, i).relocations;
    return n;
}

/* Epochs cycle through [memory] max_bytes, (null backend) the null heap's size and no cap, so
 * that lavapipe's four epochs have three capped ones. */
static void open_epoch(run *r)
{
    unsetenv("CUBEC_MEMORY_PRESET");
    setenv("CUBEC_MEMORY_POOLS", "arena:min_page=2MiB,max_page=16MiB", 1);
    char cap[24];
    snprintf(cap, sizeof cap, "%u", CAP_BYTES);
    r->cap = (cap_kind)((r->epoch + 1) % 3);
    if (r->cap == CAP_NULL_HEAP && !r->null_backend) r->cap = CAP_MAX_BYTES;
    const char *cap_env = r->cap == CAP_MAX_BYTES   ? "CUBEC_MEMORY_MAX_BYTES"
                          : r->cap == CAP_NULL_HEAP ? "CUBEC_NULL_HEAP_BYTES"
                                                    : NULL;
    if (cap_env) setenv(cap_env, cap, 1);
    r->d = test_device_open();
    if (cap_env) unsetenv(cap_env);
    for (uint32_t i = 0; i < STREAMS; i++)
        ASSERT_OK(cubec_stream_new(r->d, &r->s[i]));
    cubec_memory_report rep = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(r->d, r->s[0], &rep));
    if (r->cap != CAP_NONE) {
        assert_string_equal(rep.budget_source, r->cap == CAP_MAX_BYTES ? "max_bytes" : "null heap");
        assert_int_equal(rep.budget_bytes, CAP_BYTES);
    }
    r->count = 0;
    r->step = 0;
}

static int find(const run *r, cubec_buffer b)
{
    for (uint32_t i = 0; i < r->count; i++)
        if (r->live[i].b.id == b.id) return (int)i;
    return -1;
}

static void graph_destroy(run *r)
{
    if (!r->graph.g.id) return;
    ASSERT_OK(cubec_graph_destroy(r->d, r->s[rnd(r, STREAMS)], r->graph.g));
    memset(&r->graph, 0, sizeof r->graph);
}

static uint8_t *dup_bytes(const uint8_t *p, uint32_t n)
{
    uint8_t *q = malloc(n);
    assert_non_null(q);
    memcpy(q, p, n);
    return q;
}

static void release(run *r, uint32_t i)
{
    mbuf *m = &r->live[i];
    /* The graph would keep writing the model's buffer after the model forgot it. */
    if (r->graph.g.id && (r->graph.src.id == m->b.id || r->graph.dst.id == m->b.id))
        graph_destroy(r);
    /* A guard outlives the handle: its allocation keeps the bytes it holds now. */
    for (uint32_t k = 0; k < r->guard_count; k++) {
        mguard *g = &r->guards[k];
        if (g->b.id != m->b.id) continue;
        g->b = (cubec_buffer){0};
        g->size = m->size;
        g->bytes = dup_bytes(m->bytes, m->size);
        g->failed = dup_bytes(m->failed, m->size);
    }
    ASSERT_OK(cubec_buffer_release(r->d, m->b));
    free(m->bytes);
    free(m->failed);
    r->live[i] = r->live[--r->count];
}

static void guard_drop(run *r, uint32_t k)
{
    mguard *g = &r->guards[k];
    ASSERT_OK(cubec_guard_release(r->d, g->g));
    if (rnd(r, 4) == 0) ASSERT_OK(cubec_guard_release(r->d, g->g)); /* twice is harmless */
    free(g->bytes);
    free(g->failed);
    r->guards[k] = r->guards[--r->guard_count];
}

static void close_epoch(run *r)
{
    graph_destroy(r);
    while (r->guard_count)
        guard_drop(r, 0);
    r->base_relocations = relocations(r);
    while (r->count)
        release(r, 0);
    test_device_close(r->d);
    unsetenv("CUBEC_MEMORY_POOLS");
    r->epoch++;
}

static int any_failed(const uint8_t *failed, uint32_t off, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (failed[off + i]) return 1;
    return 0;
}

/* Reads [off, +n) of buffer (or a view of it at `base`) on `stream` and checks it against the
 * model. */
static void check_range(run *r, uint32_t stream, cubec_buffer b, const mbuf *m, uint32_t base,
                        uint32_t off, uint32_t n)
{
    if (!n) return;
    uint8_t *got = malloc(n);
    assert_non_null(got);
    cubec_status st = cubec_read(r->d, r->s[stream], b, off, got, n);
    r->checks++;
    if (any_failed(m->failed, base + off, n)) {
        if (!st) fail_msg("a read of bytes carrying a failure succeeded");
        r->failed_reads++;
        cubec_status_free(st);
    } else {
        if (st) fail_msg("cubec_read failed: %s", cubec_status_message(st));
        if (memcmp(got, m->bytes + base + off, n) != 0)
            fail_msg("buffer of %u bytes: [%u, +%u) differs from the model (read on stream %u)",
                     m->size, base + off, n, stream);
    }
    free(got);
}

/* On the null backend a raw resource is host memory: `n` bytes there hold the model's, except
 * where a failure lies (the work that failed did not run). */
static void check_host_bytes(const cubec_raw_buffer *raw, uint32_t view_at, const uint8_t *bytes,
                             const uint8_t *failed, uint32_t n)
{
    assert_true(raw->device_address != 0);
    const uint8_t *host = (const uint8_t *)(uintptr_t)(raw->device_address - view_at);
    for (uint32_t i = 0; i < n; i++)
        if (!failed[i] && host[i] != bytes[i])
            fail_msg("guarded memory: byte %u of %u is %u, the model says %u", i, n, host[i],
                     bytes[i]);
}

/* The report's guarded pages of each stream's arena: the distinct pages (raw buffers) of the
 * guards and of the graph, of the buffers that stream created. */
static void check_guarded_pages(run *r)
{
    for (uint32_t s = 0; s < STREAMS; s++) {
        uint64_t pages[MAX_GUARDS + 2];
        uint32_t n = 0;
        for (uint32_t k = 0; k < r->guard_count + 2; k++) {
            uint64_t page;
            if (k < r->guard_count) {
                if (r->guards[k].owner != s) continue;
                page = r->guards[k].first.buffer;
            } else {
                uint32_t j = k - r->guard_count;
                if (!r->graph.g.id || r->graph.owner[j] != s) continue;
                page = r->graph.page[j];
            }
            uint32_t i = 0;
            while (i < n && pages[i] != page)
                i++;
            if (i == n) pages[n++] = page;
        }
        cubec_pool_report a = arena_of(r, s);
        if (a.guarded_pages != n)
            fail_msg("stream %u's arena reports %u guarded pages; the guards and the graph hold %u",
                     s, a.guarded_pages, n);
    }
}

/* Every guard's buffer still has the raw resource of its first result (and, on the null
 * backend, the model's bytes there). */
static void check_guards(run *r)
{
    if (!r->guard_count) return;
    uint64_t moved = relocations(r);
    /* Released buffers' memory is read directly: nothing queued may still write it. */
    for (uint32_t i = 0; i < STREAMS; i++)
        ASSERT_OK(cubec_sync(r->d, r->s[i]));
    for (uint32_t k = 0; k < r->guard_count; k++) {
        const mguard *g = &r->guards[k];
        r->guard_checks++;
        r->guards_across_moves += moved > g->relocations_at;
        if (!g->b.id) {
            if (r->null_backend)
                check_host_bytes(&g->first, g->view_at, g->bytes, g->failed, g->size);
            continue;
        }
        const mbuf *m = &r->live[find(r, g->b)];
        cubec_raw_buffer now = CUBEC_RAW_BUFFER_INIT;
        cubec_guard again;
        ASSERT_OK(cubec_buffer_raw(r->d, r->s[rnd(r, STREAMS)], g->b, &now, &again));
        if (now.buffer != g->first.buffer || now.offset + g->view_at != g->first.offset)
            fail_msg("a guarded buffer moved: raw buffer %#llx offset %llu, first %#llx offset "
                     "%llu (view at %u)",
                     (unsigned long long)now.buffer, (unsigned long long)now.offset,
                     (unsigned long long)g->first.buffer, (unsigned long long)g->first.offset,
                     g->view_at);
        assert_int_equal(now.size, m->size);
        if (r->null_backend) check_host_bytes(&now, 0, m->bytes, m->failed, m->size);
        ASSERT_OK(cubec_guard_release(r->d, again));
    }
}

/* Once every stream's work finished (so that the frees it held back ran), each stream's arena
 * holds exactly the model's allocations: its live buffers and the released ones that guards
 * keep, their bytes in use as requested. */
static void check_usage(run *r, const char *when)
{
    for (uint32_t i = 0; i < STREAMS; i++)
        ASSERT_OK(cubec_sync(r->d, r->s[i]));
    for (uint32_t i = 0; i < STREAMS; i++) {
        uint64_t bytes = 0, allocations = 0;
        for (uint32_t k = 0; k < r->count; k++)
            if (r->live[k].owner == i) {
                bytes += r->live[k].size;
                allocations++;
            }
        for (uint32_t k = 0; k < r->guard_count; k++) {
            const mguard *g = &r->guards[k];
            if (g->b.id || g->owner != i) continue;
            /* Guards on one released buffer keep one allocation: its page and offset. */
            int seen = 0;
            for (uint32_t j = 0; j < k && !seen; j++) {
                const mguard *h = &r->guards[j];
                seen = !h->b.id && h->first.buffer == g->first.buffer &&
                       h->first.offset - h->view_at == g->first.offset - g->view_at;
            }
            if (seen) continue;
            bytes += g->size;
            allocations++;
        }
        cubec_pool_report a = arena_of(r, i);
        if (a.bytes_in_use != bytes || a.allocations != allocations)
            fail_msg(
                "%s: stream %u's arena holds %llu allocations of %llu bytes; the model %llu of "
                "%llu",
                when, i, (unsigned long long)a.allocations, (unsigned long long)a.bytes_in_use,
                (unsigned long long)allocations, (unsigned long long)bytes);
    }
}

/* Every byte of every buffer: runs without a failure as bytes, runs with one as an error; and
 * the guards. */
static void check_all(run *r)
{
    for (uint32_t i = 0; i < r->count; i++) {
        const mbuf *m = &r->live[i];
        for (uint32_t at = 0; at < m->size;) {
            uint32_t end = at;
            while (end < m->size && m->failed[end] == m->failed[at])
                end++;
            check_range(r, rnd(r, STREAMS), m->b, m, 0, at, end - at);
            at = end;
        }
    }
    check_guards(r);
    check_guarded_pages(r);
    check_usage(r, "at a check of every buffer");
}

static void op_create(run *r)
{
    if (r->count == MAX_LIVE) release(r, rnd(r, r->count));
    mbuf *m = &r->live[r->count];
    m->size = pick_size(r);
    m->owner = pick_stream(r);
    uint64_t before = relocations(r);
    cubec_status st = cubec_buffer_create(r->d, r->s[m->owner], m->size, &m->b);
    uint64_t moved = relocations(r) - before;
    if (r->cap != CAP_NONE) r->by_pressure += moved;
    if (st) {
        /* Under a cap a creation may be refused: then nothing was created or changed. */
        char want[64];
        snprintf(want, sizeof want, "creating a buffer of %u bytes", m->size);
        if (r->cap == CAP_NONE)
            fail_msg("an uncapped creation failed: %s", cubec_status_message(st));
        ASSERT_ERROR(st, CUBEC_OUT_OF_MEMORY, want);
        check_usage(r, "after a refused creation");
        r->refusals++;
        if (r->refusals % 8 == 1) check_all(r);
        return;
    }
    m->bytes = malloc(m->size);
    m->failed = calloc(m->size, 1);
    assert_true(m->bytes && m->failed);
    for (uint32_t i = 0; i < m->size; i++)
        m->bytes[i] = (uint8_t)test_rand(&r->rng);
    ASSERT_OK(cubec_write(r->d, r->s[m->owner], m->b, 0, m->bytes, m->size));
    r->count++;
}

/* A 4-byte aligned range of `m`: [*off, +*n), n > 0. */
static void pick_range(run *r, const mbuf *m, uint32_t *off, uint32_t *n)
{
    uint32_t words = m->size / 4;
    *off = 4 * rnd(r, words);
    *n = 4 * (1 + rnd(r, words - *off / 4));
}

static void op_write(run *r, mbuf *m)
{
    uint32_t off = rnd(r, m->size), n = 1 + rnd(r, m->size - off);
    for (uint32_t i = 0; i < n; i++)
        m->bytes[off + i] = (uint8_t)test_rand(&r->rng);
    ASSERT_OK(cubec_write(r->d, r->s[pick_stream(r)], m->b, off, m->bytes + off, n));
    memset(m->failed + off, 0, n); /* a successful write clears the failure */
}

static void op_fill(run *r, mbuf *m, int fail)
{
    if (m->size < 4) return;
    uint32_t off, n, pattern = test_rand(&r->rng);
    cubec_stream s = r->s[pick_stream(r)];
    pick_range(r, m, &off, &n);
    if (fail) {
        /* Only the fill's submission is lost: nothing else is queued on any stream. */
        for (uint32_t i = 0; i < STREAMS; i++)
            ASSERT_OK(cubec_sync(r->d, r->s[i]));
        ASSERT_OK(cubec_fault_inject(r->d, CUBEC_FAULT_SUBMIT, 1));
    }
    ASSERT_OK(cubec_fill(r->d, s, m->b, off, n, pattern));
    if (fail) {
        ASSERT_ERROR(cubec_sync(r->d, s), CUBEC_INTERNAL, "injected fault: submit");
        memset(m->failed + off, 1, n);
        return;
    }
    for (uint32_t i = 0; i < n; i += 4)
        memcpy(m->bytes + off + i, &pattern, 4);
    memset(m->failed + off, 0, n);
}

/* The model of a copy of [so, +n) of src to dofs of dst. */
static void model_copy(mbuf *src, uint32_t so, mbuf *dst, uint32_t dofs, uint32_t n)
{
    memcpy(dst->bytes + dofs, src->bytes + so, n);
    memset(dst->failed + dofs, 0, n);
}

/* A copy's ranges of two distinct buffers, from bytes without a failure (a failed input would
 * skip it and fail the output); 0 when there is none. */
static int pick_copy(run *r, const mbuf *src, const mbuf *dst, uint32_t *so, uint32_t *dofs,
                     uint32_t *n)
{
    if (src == dst || src->size < 4 || dst->size < 4) return 0;
    pick_range(r, src, so, n);
    if (*n > dst->size / 4 * 4) *n = dst->size / 4 * 4;
    *dofs = 4 * rnd(r, (dst->size - *n) / 4 + 1);
    return !any_failed(src->failed, *so, *n);
}

static void op_copy(run *r, mbuf *src, mbuf *dst)
{
    uint32_t so, dofs, n;
    if (!pick_copy(r, src, dst, &so, &dofs, &n)) return;
    ASSERT_OK(cubec_copy(r->d, r->s[pick_stream(r)], src->b, so, dst->b, dofs, n));
    model_copy(src, so, dst, dofs, n);
}

static void op_view(run *r, const mbuf *m)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(r->d, &info));
    uint32_t align = (uint32_t)info.storage_offset_alignment;
    uint32_t at = align * rnd(r, m->size / align + 1);
    if (at >= m->size) at = 0;
    uint32_t n = 1 + rnd(r, m->size - at);
    cubec_buffer v;
    ASSERT_OK(cubec_buffer_view(r->d, m->b, at, n, &v));
    uint32_t off = rnd(r, n), len = 1 + rnd(r, n - off);
    check_range(r, pick_stream(r), v, m, at, off, len);
    ASSERT_OK(cubec_buffer_release(r->d, v));
}

static void op_cleanup(run *r)
{
    uint64_t before = relocations(r);
    ASSERT_OK(cubec_memory_cleanup(r->d, r->s[pick_stream(r)]));
    r->by_cleanup += relocations(r) - before;
}

/* The raw buffer (page) of `b`, without keeping its guard. */
static uint64_t page_of(run *r, cubec_buffer b)
{
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    cubec_guard g;
    ASSERT_OK(cubec_buffer_raw(r->d, r->s[0], b, &raw, &g));
    ASSERT_OK(cubec_guard_release(r->d, g));
    return raw.buffer;
}

/* With no graph: cubec_graph_prepare (it relocates every stream's outdated pages), a copy of a
 * to b as the warm-up, and the same copy captured. With one: a replay of its copy, or its end. */
static void op_graph(run *r, mbuf *a, mbuf *b)
{
    mgraph *gr = &r->graph;
    if (gr->g.id) {
        int src = find(r, gr->src), dst = find(r, gr->dst);
        if (rnd(r, 3) == 0 || any_failed(r->live[src].failed, gr->so, gr->n)) {
            graph_destroy(r);
            return;
        }
        ASSERT_OK(cubec_graph_replay(r->d, r->s[pick_stream(r)], gr->g));
        model_copy(&r->live[src], gr->so, &r->live[dst], gr->dofs, gr->n);
        r->replays++;
        return;
    }
    uint32_t so, dofs, n;
    if (!pick_copy(r, a, b, &so, &dofs, &n)) return;
    cubec_stream s = r->s[pick_stream(r)];
    uint64_t before = relocations(r);
    ASSERT_OK(cubec_graph_prepare(r->d, s));
    r->by_prepare += relocations(r) - before;
    ASSERT_OK(cubec_copy(r->d, s, a->b, so, b->b, dofs, n)); /* the warm-up: runs */
    model_copy(a, so, b, dofs, n);
    ASSERT_OK(cubec_graph_begin(r->d, s));
    ASSERT_OK(cubec_copy(r->d, s, a->b, so, b->b, dofs, n)); /* recorded */
    ASSERT_OK(cubec_graph_end(r->d, s, &gr->g));
    gr->src = a->b;
    gr->dst = b->b;
    gr->so = so;
    gr->dofs = dofs;
    gr->n = n;
    gr->owner[0] = a->owner;
    gr->owner[1] = b->owner;
    gr->page[0] = page_of(r, a->b);
    gr->page[1] = page_of(r, b->b);
    r->graphs++;
}

/* Takes a raw resource of `m` (through a view half the time), checks the guards, or releases
 * one. */
static void op_guard(run *r, const mbuf *m)
{
    uint32_t what = rnd(r, 3);
    if (what == 0 && r->guard_count) {
        guard_drop(r, rnd(r, r->guard_count));
    } else if (what == 1 || r->guard_count == MAX_GUARDS) {
        check_guards(r);
    } else {
        mguard *g = &r->guards[r->guard_count];
        memset(g, 0, sizeof *g);
        cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
        ASSERT_OK(cubec_device_get_info(r->d, &info));
        uint32_t align = (uint32_t)info.storage_offset_alignment;
        g->view_at = rnd(r, 2) ? align * rnd(r, m->size / align + 1) : 0;
        if (g->view_at >= m->size) g->view_at = 0;
        cubec_buffer on = m->b;
        if (g->view_at)
            ASSERT_OK(cubec_buffer_view(r->d, m->b, g->view_at, m->size - g->view_at, &on));
        g->first = (cubec_raw_buffer)CUBEC_RAW_BUFFER_INIT;
        ASSERT_OK(cubec_buffer_raw(r->d, r->s[pick_stream(r)], on, &g->first, &g->g));
        if (g->view_at) ASSERT_OK(cubec_buffer_release(r->d, on)); /* the guard outlives it */
        assert_true(g->g.id != 0);
        assert_int_equal(g->first.size, m->size - g->view_at);
        g->b = m->b;
        g->owner = m->owner;
        g->relocations_at = relocations(r);
        r->guard_count++;
        if (r->null_backend)
            check_host_bytes(&g->first, 0, m->bytes + g->view_at, m->failed + g->view_at,
                             m->size - g->view_at);
    }
    check_guarded_pages(r);
}

static void step(run *r)
{
    uint32_t op = rnd(r, 100);
    if (r->count < 2 || op < 23) {
        op_create(r);
        return;
    }
    mbuf *a = &r->live[rnd(r, r->count)], *b = &r->live[rnd(r, r->count)];
    if (op < 34)
        release(r, (uint32_t)(a - r->live));
    else if (op < 42)
        op_write(r, a);
    else if (op < 48)
        op_fill(r, a, 0);
    else if (op < 51)
        op_fill(r, a, 1);
    else if (op < 59)
        op_copy(r, a, b);
    else if (op < 65)
        op_view(r, a);
    else if (op < 73)
        op_cleanup(r);
    else if (op < 79)
        op_graph(r, a, b);
    else if (op < 87)
        op_guard(r, a);
    else {
        uint32_t off = rnd(r, a->size), n = 1 + rnd(r, a->size - off);
        check_range(r, pick_stream(r), a->b, a, 0, off, n);
    }
}

static void test_random_relocation(void **state)
{
    (void)state;
    const char *backend = getenv("CUBEC_BACKEND");
    int null = backend && strcmp(backend, "null") == 0;
    uint32_t steps = null ? 4000 : 1000;
    const char *seed_env = getenv("CUBEC_FUZZ_SEED");
    static run r;
    memset(&r, 0, sizeof r);
    r.rng = seed_env ? (uint32_t)strtoul(seed_env, NULL, 10) : 20261201u;
    r.null_backend = null;
    printf("test_relocation_model: seed %u, %u steps\n", r.rng, steps);
    open_epoch(&r);
    for (uint32_t i = 0; i < steps; i++) {
        if (r.step == EPOCH) {
            check_all(&r);
            close_epoch(&r);
            open_epoch(&r);
        }
        step(&r);
        r.step++;
        if (i % 97 == 0) check_all(&r);
    }
    check_all(&r);
    close_epoch(&r);
    printf("test_relocation_model: %llu relocations (%llu by cleanup, %llu by graph prepare, %llu "
           "under pressure), %llu refused creations, %llu graphs (%llu replays), %llu guard checks "
           "(%llu across relocations), %llu second-stream operations, %llu checked reads (%llu of "
           "failed bytes)\n",
           (unsigned long long)r.base_relocations, (unsigned long long)r.by_cleanup,
           (unsigned long long)r.by_prepare, (unsigned long long)r.by_pressure,
           (unsigned long long)r.refusals, (unsigned long long)r.graphs,
           (unsigned long long)r.replays, (unsigned long long)r.guard_checks,
           (unsigned long long)r.guards_across_moves, (unsigned long long)r.second_stream_ops,
           (unsigned long long)r.checks, (unsigned long long)r.failed_reads);
    /* The run must have moved buffers and read failed bytes, or it tested little. */
    assert_true(r.base_relocations > 0);
    assert_true(r.failed_reads > 0);
    /* The default sequence covers every trigger and guard against a relocation (a change that
     * stops one from moving anything fails here); another seed may miss one, and says so. */
    const uint64_t covered[] = {r.by_cleanup, r.by_prepare,          r.by_pressure,
                                r.refusals,   r.guards_across_moves, r.replays};
    const char *const names[] = {
        "relocation by cleanup", "relocation by cubec_graph_prepare", "relocation under pressure",
        "a refused creation",    "a guard held across a relocation",  "a graph replay"};
    for (size_t i = 0; i < sizeof covered / sizeof covered[0]; i++) {
        if (covered[i]) continue;
        if (!seed_env) fail_msg("the default sequence had no %s", names[i]);
        printf("test_relocation_model: this sequence had no %s\n", names[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_random_relocation)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
