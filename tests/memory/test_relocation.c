/* Relocation and page guards on a device (spec 3.9, docs/memory.md "Relocation and guards"), on
 * lavapipe and (test_relocation_null) on the null backend. Each trigger moves a live buffer off
 * an outdated arena page: cubec_memory_cleanup, cubec_graph_prepare, a full arena (64 page sizes:
 * over 4 GiB of pages, which only a few bytes of each touch) and memory pressure (a heap capped
 * by [memory] max_bytes, and on the null backend by the null heap's size too). Every test checks
 * the bytes before and after and reads through the old handles; those built on outdated_scene
 * also through a view, and that a failure carried by part of the buffer moved with it. Guards: a
 * graph's pages and a raw resource's (or a host mapping's) page stay where they are until the graph
 * or the guard goes. Around them: nothing relocates while another stream records a graph, another
 * stream's queued work runs before a relocation's copies, a failed copy leaves its buffers carrying
 * the failure, and a raw resource waits for other streams' work. */
#include "test_util.h"

#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KiB 1024ull
#define MiB (1024ull * KiB)

typedef struct held {
    cubec_buffer b;
    uint64_t size;
    uint8_t *bytes; /* what the buffer must hold */
} held;

static int null_backend(void)
{
    const char *b = getenv("CUBEC_BACKEND");
    return b && strcmp(b, "null") == 0;
}

/* A device whose buffers all come from one arena (2 MiB pages to the device's page limit). */
static cubec_device *open_arena(cubec_stream *s)
{
    unsetenv("CUBEC_MEMORY_PRESET");
    setenv("CUBEC_MEMORY_POOLS", "arena", 1);
    cubec_device *d = test_device_open();
    ASSERT_OK(cubec_stream_new(d, s));
    return d;
}

static void close_arena(cubec_device *d)
{
    test_device_close(d);
    unsetenv("CUBEC_MEMORY_POOLS");
}

static cubec_pool_report arena(cubec_device *d, cubec_stream s)
{
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_string_equal(r.pools[0].kind, "arena");
    return r.pools[0];
}

static held make(cubec_device *d, cubec_stream s, uint64_t size, uint32_t *rng)
{
    held h = {.size = size, .bytes = malloc(size)};
    assert_non_null(h.bytes);
    for (uint64_t i = 0; i < size; i++)
        h.bytes[i] = (uint8_t)test_rand(rng);
    ASSERT_OK(cubec_buffer_create(d, s, size, &h.b));
    ASSERT_OK(cubec_write(d, s, h.b, 0, h.bytes, size));
    return h;
}

static void drop(cubec_device *d, held *h)
{
    ASSERT_OK(cubec_buffer_release(d, h->b));
    free(h->bytes);
    h->bytes = NULL;
}

/* [offset, +size) of `b` reads back as `want`. */
static void expect_bytes(cubec_device *d, cubec_stream s, cubec_buffer b, uint64_t offset,
                         const uint8_t *want, uint64_t size, const char *what)
{
    uint8_t *got = malloc(size);
    assert_non_null(got);
    ASSERT_OK(cubec_read(d, s, b, offset, got, size));
    if (memcmp(got, want, size) != 0) fail_msg("%s: the bytes changed", what);
    free(got);
}

/* A buffer `a` of 100 KiB (and a view of part of it) on the arena's first, 2 MiB page, with its
 * first 256 bytes carrying a failure (an injected submission failure of the copy that would have
 * written them); then a buffer of 2 MiB + 1 grows the arena to 4 MiB pages: a's page is
 * outdated. */
typedef struct scene {
    held a, grow;
    cubec_buffer view; /* a's bytes [VIEW_AT, +VIEW_SIZE) */
} scene;

#define VIEW_AT (4 * KiB)
#define VIEW_SIZE (8 * KiB)
#define TAINTED 256u

static scene outdated_scene(cubec_device *d, cubec_stream s, uint32_t *rng, int taint)
{
    scene sc;
    sc.a = make(d, s, 100 * KiB, rng);
    ASSERT_OK(cubec_buffer_view(d, sc.a.b, VIEW_AT, VIEW_SIZE, &sc.view));
    if (taint) {
        cubec_buffer src;
        ASSERT_OK(cubec_buffer_create(d, s, TAINTED, &src));
        ASSERT_OK(cubec_sync(d, s));
        ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
        ASSERT_OK(cubec_copy(d, s, src, 0, sc.a.b, 0, TAINTED));
        ASSERT_ERROR(cubec_sync(d, s), CUBEC_INTERNAL, "injected fault: submit");
        ASSERT_OK(cubec_buffer_release(d, src));
    }
    cubec_pool_report before = arena(d, s);
    assert_int_equal(before.outdated_pages, 0);
    sc.grow = make(d, s, 2 * MiB + 1, rng);
    cubec_pool_report r = arena(d, s);
    assert_int_equal(r.page_size, 4 * MiB);
    assert_int_equal(r.outdated_pages, 1);
    assert_int_equal(r.relocations, 0);
    return sc;
}

/* Every byte through the buffer and its view; the failure on the first TAINTED bytes too. */
static void expect_scene(cubec_device *d, cubec_stream s, const scene *sc, int taint,
                         const char *when)
{
    uint64_t from = taint ? TAINTED : 0;
    expect_bytes(d, s, sc->a.b, from, sc->a.bytes + from, sc->a.size - from, when);
    expect_bytes(d, s, sc->view, 0, sc->a.bytes + VIEW_AT, VIEW_SIZE, when);
    expect_bytes(d, s, sc->grow.b, 0, sc->grow.bytes, sc->grow.size, when);
    if (taint) {
        uint8_t got[TAINTED];
        ASSERT_ERROR(cubec_read(d, s, sc->a.b, 0, got, TAINTED), CUBEC_INTERNAL,
                     "injected fault: submit");
        ASSERT_ERROR(cubec_check(d, &sc->a.b, 1), CUBEC_INTERNAL, "injected fault: submit");
    }
}

static void drop_scene(cubec_device *d, scene *sc)
{
    ASSERT_OK(cubec_buffer_release(d, sc->view));
    drop(d, &sc->a);
    drop(d, &sc->grow);
}

/* The JSON and the table show the arena's entry of `r`: its guarded pages and relocations. */
static void expect_reports(cubec_device *d, const cubec_pool_report *r)
{
    char want[256];
    char *json = NULL, *table = NULL;
    ASSERT_OK(cubec_memory_report_json(d, &json));
    snprintf(want, sizeof want,
             "\"outdated_pages\": %u, \"guarded_pages\": %u, \"relocations\": %llu, "
             "\"relocated_bytes\": %llu}",
             r->outdated_pages, r->guarded_pages, (unsigned long long)r->relocations,
             (unsigned long long)r->relocated_bytes);
    if (!strstr(json, want)) fail_msg("the JSON lacks '%s':\n%s", want, json);
    ASSERT_OK(cubec_memory_report_table(d, &table));
    snprintf(want, sizeof want, "%u current pages, %u outdated, %u guarded; %llu relocations",
             r->pages - r->outdated_pages, r->outdated_pages, r->guarded_pages,
             (unsigned long long)r->relocations);
    if (!strstr(table, want)) fail_msg("the table lacks '%s':\n%s", want, table);
    cubec_string_free(json);
    cubec_string_free(table);
}

static void test_cleanup_relocates(void **state)
{
    (void)state;
    cubec_stream s;
    cubec_device *d = open_arena(&s);
    uint32_t rng = 11;
    scene sc = outdated_scene(d, s, &rng, 1);
    expect_scene(d, s, &sc, 1, "before the cleanup");
    ASSERT_OK(cubec_memory_cleanup(d, s));
    cubec_pool_report r = arena(d, s);
    assert_int_equal(r.outdated_pages, 0);
    assert_int_equal(r.pages, 1);
    assert_int_equal(r.relocations, 1);
    assert_int_equal(r.relocated_bytes, sc.a.size);
    assert_int_equal(r.allocations, 2);
    expect_reports(d, &r);
    expect_scene(d, s, &sc, 1, "after the cleanup");
    /* The moved buffer is an ordinary buffer: written and copied again in its new place. */
    for (uint64_t i = 0; i < sc.a.size; i++)
        sc.a.bytes[i] = (uint8_t)(i * 7);
    ASSERT_OK(cubec_write(d, s, sc.a.b, 0, sc.a.bytes, sc.a.size));
    ASSERT_OK(cubec_copy(d, s, sc.a.b, 0, sc.grow.b, 0, 64 * KiB));
    memcpy(sc.grow.bytes, sc.a.bytes, 64 * KiB);
    expect_scene(d, s, &sc, 0, "after writing the moved buffer");
    /* Nothing more to move: the counters stay. */
    ASSERT_OK(cubec_memory_cleanup(d, s));
    assert_int_equal(arena(d, s).relocations, 1);
    drop_scene(d, &sc);
    close_arena(d);
}

static void test_graph_prepare_relocates_and_graphs_guard(void **state)
{
    (void)state;
    cubec_stream s;
    cubec_device *d = open_arena(&s);
    uint32_t rng = 12;
    scene sc = outdated_scene(d, s, &rng, 0);
    ASSERT_OK(cubec_graph_prepare(d, s));
    cubec_pool_report r = arena(d, s);
    assert_int_equal(r.outdated_pages, 0);
    assert_int_equal(r.relocations, 1);
    expect_scene(d, s, &sc, 0, "after cubec_graph_prepare");

    /* A graph copying a's first 64 KiB into `grow` guards both buffers' page. */
    ASSERT_OK(cubec_copy(d, s, sc.a.b, 0, sc.grow.b, 0, 64 * KiB)); /* the warm-up */
    ASSERT_OK(cubec_graph_begin(d, s));
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    cubec_guard guard;
    ASSERT_ERROR(cubec_buffer_raw(d, s, sc.a.b, &raw, &guard), CUBEC_GRAPH_STATE,
                 "cubec_buffer_raw: refused while stream");
    ASSERT_OK(cubec_copy(d, s, sc.a.b, 0, sc.grow.b, 0, 64 * KiB));
    cubec_graph g;
    ASSERT_OK(cubec_graph_end(d, s, &g));
    memcpy(sc.grow.bytes, sc.a.bytes, 64 * KiB);
    assert_int_equal(arena(d, s).guarded_pages, 1);
    /* 4 MiB + 1 grows the arena to 6 MiB pages: the guarded page is outdated and stays. */
    held more = make(d, s, 4 * MiB + 1, &rng);
    ASSERT_OK(cubec_memory_cleanup(d, s));
    r = arena(d, s);
    assert_int_equal(r.outdated_pages, 1);
    assert_int_equal(r.guarded_pages, 1);
    assert_int_equal(r.relocations, 1);
    /* The replay writes where the graph recorded. */
    for (uint64_t i = 0; i < 64 * KiB; i++)
        sc.a.bytes[i] = (uint8_t)(i * 13 + 1);
    ASSERT_OK(cubec_write(d, s, sc.a.b, 0, sc.a.bytes, 64 * KiB));
    ASSERT_OK(cubec_graph_replay(d, s, g));
    memcpy(sc.grow.bytes, sc.a.bytes, 64 * KiB);
    expect_scene(d, s, &sc, 0, "after the replay");
    /* Without the graph the page moves: a and grow need more than the room the current page
     * holds, and a capture's relocation may add a page. */
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    assert_int_equal(arena(d, s).guarded_pages, 0);
    ASSERT_OK(cubec_memory_cleanup(d, s));
    assert_int_equal(arena(d, s).relocations, 1); /* held room only: the page stays whole */
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_ERROR(cubec_graph_end(d, s, &g), CUBEC_GRAPH_STATE, "never begun");
    r = arena(d, s);
    assert_int_equal(r.outdated_pages, 0);
    assert_int_equal(r.relocations, 3);
    assert_int_equal(r.relocated_bytes, 2 * sc.a.size + sc.grow.size);
    expect_scene(d, s, &sc, 0, "after the graph was destroyed");
    expect_bytes(d, s, more.b, 0, more.bytes, more.size, "the buffer that grew the arena");
    drop(d, &more);
    drop_scene(d, &sc);
    close_arena(d);
}

/* The device address of a raw resource: where the device has bufferDeviceAddress (cubec then
 * enables it: the feature bit) that of the first byte, never 0, else 0; on the null backend,
 * which reports every feature, the host address of the bytes (docs/memory.md). */
static void expect_device_address(cubec_device *d, const cubec_raw_buffer *raw)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (!(info.features & CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS)) {
        assert_int_equal(raw->device_address, 0);
        return;
    }
    assert_true(raw->device_address != 0);
    if (null_backend()) assert_int_equal(raw->device_address, raw->buffer + raw->offset);
}

static void test_raw_guard_keeps_the_page(void **state)
{
    (void)state;
    cubec_stream s;
    cubec_device *d = open_arena(&s);
    uint32_t rng = 13;
    scene sc = outdated_scene(d, s, &rng, 0);
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    cubec_guard guard;
    ASSERT_OK(cubec_buffer_raw(d, s, sc.view, &raw, &guard));
    assert_true(guard.id != 0);
    assert_true(raw.buffer != 0);
    assert_int_equal(raw.size, VIEW_SIZE);
    cubec_raw_buffer whole = CUBEC_RAW_BUFFER_INIT;
    cubec_guard g2;
    ASSERT_OK(cubec_buffer_raw(d, s, sc.a.b, &whole, &g2));
    assert_true(whole.buffer == raw.buffer);
    assert_int_equal(raw.offset, whole.offset + VIEW_AT);
    expect_device_address(d, &raw);
    expect_device_address(d, &whole);
    if (null_backend()) {
        /* The null backend's raw resource is the host memory itself. */
        assert_memory_equal((const void *)(uintptr_t)raw.device_address, sc.a.bytes + VIEW_AT,
                            VIEW_SIZE);
    }
    if (raw.device_address) assert_int_equal(raw.device_address, whole.device_address + VIEW_AT);
    ASSERT_OK(cubec_guard_release(d, g2));
    assert_int_equal(arena(d, s).guarded_pages, 1);
    ASSERT_OK(cubec_memory_cleanup(d, s));
    cubec_pool_report r = arena(d, s);
    assert_int_equal(r.outdated_pages, 1);
    assert_int_equal(r.relocations, 0);
    assert_int_equal(r.guarded_pages, 1);
    expect_reports(d, &r);
    /* The guard outlives the view it came from. */
    ASSERT_OK(cubec_buffer_release(d, sc.view));
    ASSERT_OK(cubec_memory_cleanup(d, s));
    assert_int_equal(arena(d, s).guarded_pages, 1);
    if (null_backend())
        assert_memory_equal((const void *)(uintptr_t)raw.device_address, sc.a.bytes + VIEW_AT,
                            VIEW_SIZE);
    ASSERT_OK(cubec_buffer_view(d, sc.a.b, VIEW_AT, VIEW_SIZE, &sc.view));
    ASSERT_OK(cubec_guard_release(d, guard));
    ASSERT_OK(cubec_guard_release(d, guard)); /* twice is harmless */
    assert_int_equal(arena(d, s).guarded_pages, 0);
    ASSERT_OK(cubec_memory_cleanup(d, s));
    r = arena(d, s);
    assert_int_equal(r.outdated_pages, 0);
    assert_int_equal(r.relocations, 1);
    expect_bytes(d, s, sc.a.b, 0, sc.a.bytes, sc.a.size, "after the guard went");
    ASSERT_ERROR(cubec_buffer_raw(d, s, sc.a.b, NULL, &guard), CUBEC_INVALID_ARGUMENT, "out_raw");
    drop_scene(d, &sc);
    close_arena(d);
}

/* A host mapping guards its page as a raw resource does: relocation skips it while mapped, the
 * pointer keeps showing the bytes (and host writes through it land in the buffer), and once the
 * guard goes the buffer moves with those bytes. */
static void test_map_keeps_the_page(void **state)
{
    (void)state;
    cubec_stream s;
    cubec_device *d = open_arena(&s);
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (!info.unified_memory) {
        /* Device memory the host cannot map (a discrete GPU, the webgpu backend): nothing to
         * map, and cubec_buffer_map refuses it (tests/vulkan/test_buffer_map.c). */
        print_message("skipped: device '%s' has no host-visible device memory\n", info.name);
        close_arena(d);
        skip();
    }
    uint32_t rng = 17;
    scene sc = outdated_scene(d, s, &rng, 0);
    void *p;
    cubec_guard guard;
    ASSERT_OK(cubec_buffer_map(d, s, sc.view, &p, &guard));
    assert_memory_equal(p, sc.a.bytes + VIEW_AT, VIEW_SIZE);
    assert_int_equal(arena(d, s).guarded_pages, 1);
    ASSERT_OK(cubec_memory_cleanup(d, s));
    cubec_pool_report r = arena(d, s);
    assert_int_equal(r.outdated_pages, 1);
    assert_int_equal(r.relocations, 0);
    memset(p, 0x3d, 64);
    memset(sc.a.bytes + VIEW_AT, 0x3d, 64);
    /* The mapping outlives the view it came from. */
    ASSERT_OK(cubec_buffer_release(d, sc.view));
    ASSERT_OK(cubec_memory_cleanup(d, s));
    assert_int_equal(arena(d, s).relocations, 0);
    assert_memory_equal(p, sc.a.bytes + VIEW_AT, VIEW_SIZE);
    ASSERT_OK(cubec_buffer_view(d, sc.a.b, VIEW_AT, VIEW_SIZE, &sc.view));
    ASSERT_OK(cubec_guard_release(d, guard));
    assert_int_equal(arena(d, s).guarded_pages, 0);
    ASSERT_OK(cubec_memory_cleanup(d, s));
    r = arena(d, s);
    assert_int_equal(r.outdated_pages, 0);
    assert_int_equal(r.relocations, 1);
    expect_bytes(d, s, sc.a.b, 0, sc.a.bytes, sc.a.size, "after the mapping went");
    /* Mapped again, the pointer is the new place's. */
    ASSERT_OK(cubec_buffer_map(d, s, sc.view, &p, &guard));
    assert_memory_equal(p, sc.a.bytes + VIEW_AT, VIEW_SIZE);
    ASSERT_OK(cubec_guard_release(d, guard));
    drop_scene(d, &sc);
    close_arena(d);
}

/* Pages 2, 4, ..., 128 MiB, each kept by a small live buffer, take all 64 page-size slots; the
 * next buffer's reservation relocates them all into the current page (spec 3.9 ArenaFull).
 * A full arena cannot be small: a request grows the arena only when it is larger than the
 * current page, to the request plus 1 MiB rounded up to 1 MiB (min_page only raises that,
 * max_page at most trims the last), so the k-th page size is at least 2k MiB and the 64 live
 * pages hold over 4 GiB whatever the layout. It is cheap all the same: lavapipe and the null
 * backend take pages from the host, which backs only what is written, and only keep[k]'s bytes
 * are (a few MiB resident). */
static void test_full_arena_relocates(void **state)
{
    (void)state;
    cubec_stream s;
    cubec_device *d = open_arena(&s);
    uint32_t rng = 14;
    held keep[64];
    /* The ladder outgrows a small heap (lavapipe's is 2 GiB): from about the 43rd page on, each
     * reservation would see the device's pages within one page of the heap and relocate for
     * pressure, emptying the outdated pages before the arena fills. A raw guard holds each
     * keep[k]'s page in place until the 64th page size is there. */
    cubec_guard guard[63];
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    keep[0] = make(d, s, 100, &rng);
    ASSERT_OK(cubec_buffer_raw(d, s, keep[0].b, &raw, &guard[0]));
    cubec_buffer big = {0};
    for (int k = 1; k < 64; k++) {
        ASSERT_OK(cubec_buffer_create(d, s, (uint64_t)(2 * k + 1) * MiB, &big));
        if (k == 63) break; /* the 128 MiB page: the last slot */
        keep[k] = make(d, s, 100 + (uint64_t)k, &rng);
        ASSERT_OK(cubec_buffer_raw(d, s, keep[k].b, &raw, &guard[k]));
        ASSERT_OK(cubec_buffer_release(d, big));
    }
    /* Every slot is taken, the last by the 128 MiB page of the 127 MiB buffer still held: the
     * arena is full, and nothing moved yet. */
    cubec_pool_report r = arena(d, s);
    assert_int_equal(r.page_size, 128 * MiB);
    assert_int_equal(r.pages, 64);
    assert_int_equal(r.outdated_pages, 63);
    assert_int_equal(r.guarded_pages, 63);
    assert_int_equal(r.relocations, 0);
    for (int k = 0; k < 63; k++)
        expect_bytes(d, s, keep[k].b, 0, keep[k].bytes, keep[k].size, "before the arena was full");
    for (int k = 0; k < 63; k++)
        ASSERT_OK(cubec_guard_release(d, guard[k]));
    /* keep[63]'s reservation finds every slot taken: everything older moves. */
    keep[63] = make(d, s, 163, &rng);
    r = arena(d, s);
    assert_int_equal(r.page_size, 128 * MiB);
    assert_int_equal(r.outdated_pages, 0);
    assert_int_equal(r.guarded_pages, 0);
    assert_int_equal(r.pages, 1);
    assert_int_equal(r.relocations, 63);
    uint64_t moved = 0;
    for (int k = 0; k < 63; k++)
        moved += keep[k].size;
    assert_int_equal(r.relocated_bytes, moved);
    for (int k = 0; k < 64; k++)
        expect_bytes(d, s, keep[k].b, 0, keep[k].bytes, keep[k].size, "after the arena was full");
    ASSERT_OK(cubec_buffer_release(d, big));
    for (int k = 0; k < 64; k++)
        drop(d, &keep[k]);
    close_arena(d);
}

/* A heap of 9 MiB: a's 2 MiB page and the 4 MiB page leave no room for another 4 MiB page until a
 * moves into the room the current page holds and its page goes back (spec 3.9 MemoryPressure,
 * after cleanup found nothing to return). `cap` names how the heap is capped:
 * - CUBEC_MEMORY_MAX_BYTES ([memory] max_bytes, any backend): the page is refused the way a
 *   driver refuses one, and the out-of-memory path (server_memory_relieve) relocates and retries;
 * - CUBEC_NULL_HEAP_BYTES (the null backend's heap; a driver's cannot be capped): the device's
 *   heap is 9 MiB, so the reservation sees its pages within one page of the heap and relocates
 *   before it asks for the page. */
static void pressure_scene(const char *cap, const char *source, uint32_t seed)
{
    setenv(cap, "9437184", 1);
    cubec_stream s;
    cubec_device *d = open_arena(&s);
    unsetenv(cap);
    cubec_memory_report m = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &m));
    assert_string_equal(m.budget_source, source);
    assert_int_equal(m.budget_bytes, 9 * MiB);
    uint32_t rng = seed;
    scene sc = outdated_scene(d, s, &rng, 1);
    expect_scene(d, s, &sc, 1, "before the pressure");
    held c = make(d, s, 2 * MiB, &rng);
    cubec_pool_report r = arena(d, s);
    assert_int_equal(r.relocations, 1);
    assert_int_equal(r.relocated_bytes, sc.a.size);
    assert_int_equal(r.outdated_pages, 0);
    assert_int_equal(r.pages, 2);
    assert_int_equal(r.bytes_reserved, 8 * MiB);
    expect_scene(d, s, &sc, 1, "after the pressure relocation");
    expect_bytes(d, s, c.b, 0, c.bytes, c.size, "the buffer that needed room");
    drop(d, &c);
    drop_scene(d, &sc);
    close_arena(d);
}

static void test_pressure_relocates(void **state)
{
    (void)state;
    pressure_scene("CUBEC_MEMORY_MAX_BYTES", "max_bytes", 15);
    if (null_backend()) pressure_scene("CUBEC_NULL_HEAP_BYTES", "null heap", 16);
}

/* The bytes a cubec_fill of `pattern` leaves in the model: the pattern's four bytes in memory
 * order (little-endian), repeated. */
static void model_fill(uint8_t *bytes, uint64_t size, uint32_t pattern)
{
    for (uint64_t i = 0; i < size; i++)
        bytes[i] = (uint8_t)(pattern >> (8 * (i % 4)));
}

/* `st` failed with `code`, and its message says each of the NULL-terminated `says`. */
static void expect_failure(cubec_status st, cubec_code code, const char *const *says,
                           const char *what)
{
    if (!st) fail_msg("%s succeeded", what);
    const char *msg = cubec_status_message(st);
    if (cubec_status_code(st) != code)
        fail_msg("%s gave %s (%s), not %s", what, cubec_code_name(cubec_status_code(st)), msg,
                 cubec_code_name(code));
    for (; *says; says++)
        if (!strstr(msg, *says)) fail_msg("%s: '%s' does not say '%s'", what, msg, *says);
    cubec_status_free(st);
}

/* Nothing relocates while another stream records a graph (docs/memory.md "Relocation and
 * guards"): stream a records a copy; meanwhile stream b outdates a page of its own arena and
 * tries every trigger it can pull. Its cleanup is refused naming a's capture; its
 * cubec_graph_prepare succeeds without moving anything (b's capture would be AddOnly too); a
 * creation that only a pressure relocation could serve (the pages of both slots under an 11 MiB
 * [memory] max_bytes) is refused as out of memory and leaves a's capture whole. The relocation
 * count stays 0 and every byte stays through b's handles; once a's capture ended, b's cleanup
 * moves the page's buffer, the creation fits, and a's graph replays the copy it recorded. */
static void test_no_relocation_while_another_stream_records(void **state)
{
    (void)state;
    setenv("CUBEC_MEMORY_MAX_BYTES", "11534336", 1);
    cubec_stream b;
    cubec_device *d = open_arena(&b);
    unsetenv("CUBEC_MEMORY_MAX_BYTES");
    cubec_stream a;
    ASSERT_OK(cubec_stream_new(d, &a));
    uint32_t rng = 17;
    /* a's capture: a copy between two buffers of its own 2 MiB page. */
    held src = make(d, a, 64 * KiB, &rng), dst = make(d, a, 64 * KiB, &rng);
    ASSERT_OK(cubec_graph_prepare(d, a));
    ASSERT_OK(cubec_copy(d, a, src.b, 0, dst.b, 0, 64 * KiB)); /* the warm-up */
    memcpy(dst.bytes, src.bytes, 64 * KiB);
    ASSERT_OK(cubec_graph_begin(d, a));
    ASSERT_OK(cubec_copy(d, a, src.b, 0, dst.b, 0, 64 * KiB));

    /* b's arena: a 2 MiB page outdated by a 4 MiB one (6 MiB of pages, 8 MiB with a's). */
    scene sc = outdated_scene(d, b, &rng, 0);
    expect_scene(d, b, &sc, 0, "while stream a records");
    char says[160];
    snprintf(says, sizeof says, "cubec_memory_cleanup: refused while stream %llu records a graph",
             (unsigned long long)(a & 0xffffffffffffull));
    ASSERT_ERROR(cubec_memory_cleanup(d, b), CUBEC_GRAPH_STATE, says);
    cubec_pool_report r = arena(d, b);
    assert_int_equal(r.relocations, 0);
    assert_int_equal(r.outdated_pages, 1);
    expect_scene(d, b, &sc, 0, "after the refused cleanup");

    ASSERT_OK(cubec_graph_prepare(d, b));
    r = arena(d, b);
    assert_int_equal(r.relocations, 0);
    assert_int_equal(r.outdated_pages, 1);
    cubec_graph none;
    ASSERT_ERROR(cubec_graph_end(d, b, &none), CUBEC_GRAPH_STATE, "never begun");
    expect_scene(d, b, &sc, 0, "after b's cubec_graph_prepare");

    /* 2 MiB needs a third 4 MiB page: 12 MiB of pages, past the cap, unless a moved. */
    cubec_buffer c;
    char want[64];
    snprintf(want, sizeof want, "creating a buffer of %llu bytes", 2 * MiB);
    const char *const oom[] = {
        want, "arena pool 0", "max_bytes = 11534336",
        "no buffer was relocated to make room, since a stream records a graph", NULL};
    expect_failure(cubec_buffer_create(d, b, 2 * MiB, &c), CUBEC_OUT_OF_MEMORY, oom,
                   "the creation under pressure while stream a records");
    r = arena(d, b);
    assert_int_equal(r.relocations, 0);
    assert_int_equal(r.outdated_pages, 1);
    assert_int_equal(r.bytes_reserved, 6 * MiB);
    expect_scene(d, b, &sc, 0, "after the refused creation");

    /* The capture was not b's to doom: it ends with its copy. */
    cubec_graph g;
    ASSERT_OK(cubec_graph_end(d, a, &g));
    assert_int_equal(arena(d, a).relocations, 0);
    ASSERT_OK(cubec_memory_cleanup(d, b));
    r = arena(d, b);
    assert_int_equal(r.relocations, 1);
    assert_int_equal(r.relocated_bytes, sc.a.size);
    assert_int_equal(r.outdated_pages, 0);
    expect_scene(d, b, &sc, 0, "after the cleanup once a's capture ended");
    held more = make(d, b, 2 * MiB, &rng);
    expect_bytes(d, b, more.b, 0, more.bytes, more.size, "the buffer that needed room");
    for (uint64_t i = 0; i < src.size; i++)
        src.bytes[i] = (uint8_t)(i * 5 + 3);
    ASSERT_OK(cubec_write(d, a, src.b, 0, src.bytes, src.size));
    ASSERT_OK(cubec_graph_replay(d, a, g));
    memcpy(dst.bytes, src.bytes, 64 * KiB);
    expect_bytes(d, a, dst.b, 0, dst.bytes, dst.size, "a's replay");
    ASSERT_OK(cubec_graph_destroy(d, a, g));
    drop(d, &more);
    drop(d, &src);
    drop(d, &dst);
    drop_scene(d, &sc);
    close_arena(d);
}

/* A relocation orders every stream's queued work before its copies (docs/memory.md "Order"):
 * buffer a lives on an outdated page of stream s's arena; stream o queues, without a sync or
 * flush, a fill of part of a and a copy of another part of a into a buffer of its own; then s
 * relocates a (its cleanup, or its cubec_graph_prepare, which drains only s's own slot before
 * relocating every slot). The fill must land in a's new place and the copy must read a's
 * bytes, the fill's included: o's work ran before the move. */
static void queued_work_scene(int by_prepare, uint32_t seed)
{
    cubec_stream s, o;
    cubec_device *d = open_arena(&s);
    ASSERT_OK(cubec_stream_new(d, &o));
    uint32_t rng = seed;
    scene sc = outdated_scene(d, s, &rng, 0);
    held y = make(d, o, 32 * KiB, &rng);
    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_sync(d, o));
    const uint32_t pattern = 0xa5c3e1f0u ^ seed;
    ASSERT_OK(cubec_fill(d, o, sc.a.b, 16 * KiB, 8 * KiB, pattern));
    model_fill(sc.a.bytes + 16 * KiB, 8 * KiB, pattern);
    ASSERT_OK(cubec_copy(d, o, sc.a.b, 12 * KiB, y.b, 0, 32 * KiB));
    memcpy(y.bytes, sc.a.bytes + 12 * KiB, 32 * KiB);
    if (by_prepare) {
        ASSERT_OK(cubec_graph_prepare(d, s));
        cubec_graph none;
        ASSERT_ERROR(cubec_graph_end(d, s, &none), CUBEC_GRAPH_STATE, "never begun");
    } else {
        ASSERT_OK(cubec_memory_cleanup(d, s));
    }
    cubec_pool_report r = arena(d, s);
    assert_int_equal(r.relocations, 1);
    assert_int_equal(r.relocated_bytes, sc.a.size);
    assert_int_equal(r.outdated_pages, 0);
    const char *when = by_prepare ? "relocated by cubec_graph_prepare" : "relocated by the cleanup";
    expect_scene(d, s, &sc, 0, when);
    expect_bytes(d, o, y.b, 0, y.bytes, y.size, when);
    drop(d, &y);
    drop_scene(d, &sc);
    close_arena(d);
}

static void test_relocation_orders_other_streams_work(void **state)
{
    (void)state;
    queued_work_scene(0, 18);
    queued_work_scene(1, 19);
}

/* A relocation whose copy fails (src/server/relocate.c): an injected failure of its submission.
 * The buffers it moved already point at their new places, whose bytes the copy may not have
 * written: reads through every handle fail naming "relocating this buffer failed" and the
 * cause, the old page is kept (never reused: the old places stay held until the device closes),
 * and the cleanup that relocated returns the failure. The rest goes on: the buffer that did not
 * move keeps its bytes, a write clears the moved buffer's failure, and new buffers, copies and
 * cleanups work. */
static void test_relocation_copy_fails(void **state)
{
    (void)state;
    cubec_stream s;
    cubec_device *d = open_arena(&s);
    uint32_t rng = 20;
    scene sc = outdated_scene(d, s, &rng, 0);
    ASSERT_OK(cubec_sync(d, s)); /* the next submission is the relocation's */
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    const char *const cleanup[] = {"relocation (explicit cleanup)", "injected fault: submit", NULL};
    expect_failure(cubec_memory_cleanup(d, s), CUBEC_INTERNAL, cleanup, "the cleanup");
    cubec_pool_report r = arena(d, s);
    assert_int_equal(r.outdated_pages, 1);
    assert_int_equal(r.page_size, 4 * MiB);
    const char *const moved[] = {"relocating this buffer failed", "injected fault: submit", NULL};
    uint8_t got[64];
    expect_failure(cubec_read(d, s, sc.a.b, 0, got, sizeof got), CUBEC_INTERNAL, moved,
                   "reading the moved buffer");
    expect_failure(cubec_read(d, s, sc.a.b, sc.a.size - sizeof got, got, sizeof got),
                   CUBEC_INTERNAL, moved, "reading the moved buffer's end");
    expect_failure(cubec_read(d, s, sc.view, 0, got, sizeof got), CUBEC_INTERNAL, moved,
                   "reading its view");
    expect_failure(cubec_check(d, &sc.a.b, 1), CUBEC_INTERNAL, moved, "cubec_check");
    expect_bytes(d, s, sc.grow.b, 0, sc.grow.bytes, sc.grow.size, "the buffer that did not move");
    ASSERT_OK(cubec_check(d, &sc.grow.b, 1));

    /* Usable: a new buffer, the moved one written again, a copy between them. */
    held n = make(d, s, 300 * KiB, &rng);
    expect_bytes(d, s, n.b, 0, n.bytes, n.size, "a buffer made after the failure");
    for (uint64_t i = 0; i < sc.a.size; i++)
        sc.a.bytes[i] = (uint8_t)(i * 11 + 7);
    ASSERT_OK(cubec_write(d, s, sc.a.b, 0, sc.a.bytes, sc.a.size));
    ASSERT_OK(cubec_check(d, &sc.a.b, 1));
    ASSERT_OK(cubec_copy(d, s, sc.a.b, 0, n.b, 4 * KiB, 64 * KiB));
    memcpy(n.bytes + 4 * KiB, sc.a.bytes, 64 * KiB);
    expect_scene(d, s, &sc, 0, "after writing the moved buffer again");
    expect_bytes(d, s, n.b, 0, n.bytes, n.size, "the copy after the failure");
    /* The old page stays held: nothing relocates off it again, and a cleanup succeeds. */
    ASSERT_OK(cubec_memory_cleanup(d, s));
    r = arena(d, s);
    assert_int_equal(r.outdated_pages, 1);
    expect_scene(d, s, &sc, 0, "after a later cleanup");
    drop(d, &n);
    drop_scene(d, &sc);
    close_arena(d);
}

/* cubec_buffer_raw waits for every stream's queued use of the bytes (docs/memory.md): stream o
 * queues, unsynced, a fill of x and a copy of z into x (both buffers of stream s); s takes x's
 * raw resource. On the null backend the bytes at its device address (host memory) are the
 * filled and copied ones at once. Then x's and z's pages are both outdated; a cleanup moves z
 * and leaves x's guarded page (a second raw resource of x names the same place); once the guard
 * goes, x moves too. */
static void test_raw_waits_for_other_streams(void **state)
{
    (void)state;
    cubec_stream s, o;
    cubec_device *d = open_arena(&s);
    ASSERT_OK(cubec_stream_new(d, &o));
    uint32_t rng = 21;
    held x = make(d, s, 64 * KiB, &rng);     /* the 2 MiB page */
    held g1 = make(d, s, 2 * MiB + 1, &rng); /* 4 MiB pages: x's is outdated */
    held z = make(d, s, 100 * KiB, &rng);    /* on the 4 MiB page */
    drop(d, &g1);
    held g2 = make(d, s, 4 * MiB + 1, &rng); /* 6 MiB pages: z's is outdated too */
    cubec_pool_report r = arena(d, s);
    assert_int_equal(r.outdated_pages, 2);
    assert_int_equal(r.relocations, 0);
    ASSERT_OK(cubec_sync(d, s));

    ASSERT_OK(cubec_fill(d, o, x.b, 0, 16 * KiB, 0x01020304u));
    model_fill(x.bytes, 16 * KiB, 0x01020304u);
    ASSERT_OK(cubec_copy(d, o, z.b, 0, x.b, 32 * KiB, 8 * KiB));
    memcpy(x.bytes + 32 * KiB, z.bytes, 8 * KiB);
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    cubec_guard guard;
    ASSERT_OK(cubec_buffer_raw(d, s, x.b, &raw, &guard));
    assert_int_equal(raw.size, x.size);
    expect_device_address(d, &raw);
    if (null_backend())
        assert_memory_equal((const void *)(uintptr_t)raw.device_address, x.bytes, x.size);
    expect_bytes(d, s, x.b, 0, x.bytes, x.size, "x after o's queued work");

    ASSERT_OK(cubec_memory_cleanup(d, s));
    r = arena(d, s);
    assert_int_equal(r.relocations, 1);
    assert_int_equal(r.relocated_bytes, z.size);
    assert_int_equal(r.outdated_pages, 1);
    assert_int_equal(r.guarded_pages, 1);
    cubec_raw_buffer again = CUBEC_RAW_BUFFER_INIT;
    cubec_guard g;
    ASSERT_OK(cubec_buffer_raw(d, s, x.b, &again, &g));
    ASSERT_OK(cubec_guard_release(d, g));
    assert_true(again.buffer == raw.buffer);
    assert_int_equal(again.offset, raw.offset);
    assert_int_equal(again.device_address, raw.device_address);
    if (null_backend())
        assert_memory_equal((const void *)(uintptr_t)raw.device_address, x.bytes, x.size);
    expect_bytes(d, s, x.b, 0, x.bytes, x.size, "x, guarded, after the cleanup");
    expect_bytes(d, s, z.b, 0, z.bytes, z.size, "z, moved by the cleanup");
    expect_bytes(d, s, g2.b, 0, g2.bytes, g2.size, "the buffer on the current page");

    ASSERT_OK(cubec_guard_release(d, guard));
    ASSERT_OK(cubec_memory_cleanup(d, s));
    r = arena(d, s);
    assert_int_equal(r.relocations, 2);
    assert_int_equal(r.relocated_bytes, z.size + x.size);
    assert_int_equal(r.outdated_pages, 0);
    expect_bytes(d, s, x.b, 0, x.bytes, x.size, "x, moved once its guard went");
    drop(d, &x);
    drop(d, &z);
    drop(d, &g2);
    close_arena(d);
}

/* The budget is the capacity pressure is judged against (spec 3.9 UnderPressure), so under a
 * max_bytes budget the relocation runs at the reservation, while a copy target can still be had:
 * no page is refused first (the out-of-memory path's line would say so). */
static void test_pressure_relocates_before_a_refusal(void **state)
{
    (void)state;
    char log_path[4096];
    snprintf(log_path, sizeof log_path, "%s/cubec_pressure_logXXXXXX", test_tmp_dir());
    int fd = mkstemp(log_path);
    assert_true(fd >= 0);
    close(fd);
    /* The device configures the log when it opens. */
    const char *level = getenv("CUBEC_LOG_LEVEL");
    char *was = level ? strdup(level) : NULL;
    setenv("CUBEC_LOG_LEVEL", "info", 1);
    setenv("CUBEC_LOG_FILE", log_path, 1);
    pressure_scene("CUBEC_MEMORY_MAX_BYTES", "max_bytes", 17);
    unsetenv("CUBEC_LOG_FILE");
    if (was)
        setenv("CUBEC_LOG_LEVEL", was, 1);
    else
        unsetenv("CUBEC_LOG_LEVEL");
    free(was);
    ASSERT_OK(log_configure(LOG_WARN, NULL));
    assert_int_equal(test_count_lines_with(log_path, "relocation (memory pressure): moved 1 "), 1);
    assert_int_equal(test_count_lines_with(log_path, "out of device memory"), 0);
    unlink(log_path);
}

/* A page of 64 MiB or more that a relocation empties goes back to the driver on the Vulkan
 * backend's own thread: the report counts it in budget_returning_bytes (the JSON's
 * "returning_bytes") until the driver freed it, and never counts it in a pool again. The null
 * backend frees at once. */
static void test_returning_pages_reported(void **state)
{
    (void)state;
    cubec_stream s;
    cubec_device *d = open_arena(&s);
    uint32_t rng = 23;
    held a = make(d, s, 65 * MiB, &rng);
    const uint64_t old_page = arena(d, s).page_size;
    assert_true(old_page >= 64 * MiB);
    cubec_buffer grow;
    ASSERT_OK(cubec_buffer_create(d, s, old_page + 4, &grow));
    ASSERT_OK(cubec_buffer_release(d, grow));
    ASSERT_OK(cubec_memory_cleanup(d, s));
    cubec_pool_report r = arena(d, s);
    assert_int_equal(r.relocations, 1);
    assert_int_equal(r.outdated_pages, 0);
    assert_int_equal(r.bytes_reserved, r.page_size); /* the old page is no pool's */
    cubec_memory_report m = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &m));
    if (m.budget_returning_bytes != 0 && m.budget_returning_bytes != old_page)
        fail_msg("returning %llu bytes, not 0 or the old page's %llu",
                 (unsigned long long)m.budget_returning_bytes, (unsigned long long)old_page);
    char *json = NULL;
    ASSERT_OK(cubec_memory_report_json(d, &json));
    assert_non_null(strstr(json, "\"returning_bytes\": "));
    cubec_string_free(json);
    /* The free finishes (bounded: 30 s), and the report then says so. */
    for (int i = 0; i < 30000 && m.budget_returning_bytes; i++) {
        usleep(1000);
        ASSERT_OK(cubec_memory_report_get(d, s, &m));
    }
    assert_int_equal(m.budget_returning_bytes, 0);
    ASSERT_OK(cubec_memory_report_json(d, &json));
    assert_non_null(strstr(json, "\"returning_bytes\": 0,"));
    cubec_string_free(json);
    expect_bytes(d, s, a.b, 0, a.bytes, a.size, "after its page went back");
    drop(d, &a);
    close_arena(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cleanup_relocates),
        cmocka_unit_test(test_graph_prepare_relocates_and_graphs_guard),
        cmocka_unit_test(test_raw_guard_keeps_the_page),
        cmocka_unit_test(test_map_keeps_the_page),
        cmocka_unit_test(test_full_arena_relocates),
        cmocka_unit_test(test_pressure_relocates),
        cmocka_unit_test(test_pressure_relocates_before_a_refusal),
        cmocka_unit_test(test_returning_pages_reported),
        cmocka_unit_test(test_no_relocation_while_another_stream_records),
        cmocka_unit_test(test_relocation_orders_other_streams_work),
        cmocka_unit_test(test_relocation_copy_fails),
        cmocka_unit_test(test_raw_waits_for_other_streams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
