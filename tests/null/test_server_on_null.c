/* The server's logic on the null backend (CUBEC_BACKEND=null, cubec.h "backend"), through the
 * public API only: the null device allocates host memory, carries out copies and fills when they
 * are submitted, runs no kernels (a launch's outputs count as written and keep their bytes) and
 * completes submissions at once or after null_delay_us. So everything but kernel arithmetic can
 * be checked exactly, in milliseconds:
 *  1. buffer operations (writes and reads at any byte offset, copies in words, views, views of
 *     views, fills, zero sizes) against a host shadow of every byte, and the refusals of
 *     out-of-range, misaligned and overlapping arguments;
 *  2. ordering across streams: a copy on stream B of a buffer stream A writes sees A's earlier
 *     write and not its later one (read after write, write after read), with tasks_max 1, 2 and
 *     32, with the buffer owned by either stream, and with a delayed device (device work of two
 *     streams on one buffer is ordered only as cubec.h "Streams" says: the test syncs where a
 *     write would race with another stream's queued read);
 *  3. failures on memory: a lost submission taints what its copies would have written and nothing
 *     else; a launch (and a copy) whose input carries a failure is skipped and its output names
 *     it; a host write clears the failure;
 *  4. graph rules: the state machine's refusals (docs/graphs.md), the window's refusals, a lazy
 *     write that dooms the capture, and replays of copies that copy what the inputs hold at
 *     replay time;
 *  5. profiles: a result on the host clock between the calls, and CUBEC_PROFILE_INVALID when a
 *     launch in it was skipped;
 *  6. memory: the report's bytes in use go up by exactly what was requested and back down on
 *     release; cleanup returns every page;
 *  7. a delayed device: an asynchronous read is not ready right after it starts, and the data
 *     arrives with cubec_event_wait.
 * Every expected value is computed here. Buffer numbers in messages ("buffer #n") follow the order
 * of creation on a fresh device; stream numbers are the low 48 bits of the ids.
 *
 * Bugs these tests and the random API runs (tests/common/api_model.c) found are fixed, each
 * guarded by its minimal reproduction: host-write-war by
 * test_host_write_waits_for_queued_read_on_other_stream, and lazy-write-war, read-async-late,
 * empty-check, profile-begin-dropped, lost-batch-holds-memory and error-but-ran by the tests
 * named after what they check (each comment names the bug it was). */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- helpers ------------------------------------------------------------------------------- */

typedef struct nulldev {
    cubec_device *d;
    uint64_t created; /* buffers created so far: the next one is #created+1 */
} nulldev;

static nulldev open_null(uint32_t tasks_max, uint32_t delay_us)
{
    cubec_device_desc desc = {.struct_size = sizeof(cubec_device_desc),
                              .backend = "null",
                              .tasks_max = tasks_max,
                              .null_delay_us = delay_us};
    nulldev n = {0};
    ASSERT_OK(cubec_device_open(&desc, &n.d));
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(n.d, &info));
    assert_int_equal(info.type, CUBEC_DEVICE_TYPE_CPU);
    assert_non_null(strstr(info.name, "null"));
    return n;
}

/* Where allocations start: the largest of the storage and uniform alignments (cubec.h). */
static uint64_t align_of(cubec_device *d)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    return info.storage_offset_alignment > info.uniform_offset_alignment
               ? info.storage_offset_alignment
               : info.uniform_offset_alignment;
}

/* A buffer of `bytes` on `s`, from `data` when not NULL; returns its number via *number. */
static cubec_buffer make(nulldev *n, cubec_stream s, const void *data, uint64_t bytes,
                         uint64_t *number)
{
    cubec_buffer b = {0};
    n->created++;
    if (data)
        ASSERT_OK(cubec_buffer_from(n->d, s, data, bytes, &b));
    else
        ASSERT_OK(cubec_buffer_create(n->d, s, bytes, &b));
    if (number) *number = n->created;
    return b;
}

static void pattern_bytes(unsigned char *p, uint64_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (uint64_t i = 0; i < n; i++)
        p[i] = (unsigned char)(test_rand(&x) >> 24);
}

static void pattern_words(uint32_t *w, uint32_t n, uint32_t base)
{
    for (uint32_t i = 0; i < n; i++)
        w[i] = base * 1000003u + i * 7u + 1u;
}

/* Reads [offset, +size) of b and compares it with want, naming the first difference. */
static void expect_bytes(cubec_device *d, cubec_stream s, cubec_buffer b, uint64_t offset,
                         const void *want, uint64_t size, const char *what)
{
    unsigned char *got = malloc(size ? size : 1);
    assert_non_null(got);
    memset(got, 0xee, size ? size : 1);
    cubec_status st = cubec_read(d, s, b, offset, got, size);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
        cubec_status_free(st);
        free(got);
        fail_msg("%s: cubec_read at %" PRIu64 " +%" PRIu64 " failed: %s", what, offset, size, msg);
    }
    const unsigned char *w = want;
    uint64_t i = 0;
    while (i < size && got[i] == w[i])
        i++;
    unsigned g = i < size ? got[i] : 0, x = i < size ? w[i] : 0;
    free(got);
    if (i < size)
        fail_msg("%s: byte %" PRIu64 " is 0x%02x, expected 0x%02x", what, offset + i, g, x);
}

/* The code and message of `st`, which must be an error; frees it. */
static cubec_code take_error(cubec_status st, char *msg, size_t cap, const char *what)
{
    if (!st) fail_msg("%s succeeded; expected an error", what);
    cubec_code c = cubec_status_code(st);
    snprintf(msg, cap, "%s", cubec_status_message(st));
    cubec_status_free(st);
    return c;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t fault_count(cubec_device *d, cubec_fault_kind kind)
{
    uint64_t c[CUBEC_FAULT_KIND_COUNT];
    ASSERT_OK(cubec_fault_get_counts(d, c));
    return c[kind];
}

/* ---- 1. buffer operations against a shadow --------------------------------------------------- */

/* The shadow of one buffer: every byte as the test last wrote it (0xff-free bytes are defined by
 * the writes below before they are read). */
#define SIZE_A 1000u
#define SIZE_B 4099u /* not a multiple of 4: the last bytes are reachable by writes only */

static void test_buffer_ops_against_shadow(void **state)
{
    (void)state;
    nulldev n = open_null(0, 0);
    cubec_device *d = n.d;
    cubec_stream s = new_stream(d);
    uint64_t al = align_of(d);
    assert_true(al >= 4 && al <= 256);

    unsigned char sa[SIZE_A], sb[SIZE_B], tmp[SIZE_B];
    pattern_bytes(sa, sizeof sa, 1);
    cubec_buffer a = make(&n, s, sa, sizeof sa, NULL);
    cubec_buffer b = make(&n, s, NULL, sizeof sb, NULL);
    pattern_bytes(sb, sizeof sb, 2);
    ASSERT_OK(cubec_write(d, s, b, 0, sb, sizeof sb));
    expect_bytes(d, s, a, 0, sa, sizeof sa, "a after cubec_buffer_from");
    expect_bytes(d, s, b, 0, sb, sizeof sb, "b after a whole write");

    uint64_t size = 0;
    ASSERT_OK(cubec_buffer_get_size(d, b, &size));
    assert_int_equal(size, SIZE_B);

    /* Writes and reads at unaligned offsets and sizes. */
    static const struct {
        uint64_t offset, size;
    } unaligned[] = {{1, 1}, {3, 17}, {7, 250}, {SIZE_B - 5, 5}, {SIZE_B - 1, 1}, {1001, 2049}};
    for (size_t i = 0; i < sizeof unaligned / sizeof unaligned[0]; i++) {
        pattern_bytes(tmp, unaligned[i].size, 10 + (uint32_t)i);
        ASSERT_OK(cubec_write(d, s, b, unaligned[i].offset, tmp, unaligned[i].size));
        memcpy(sb + unaligned[i].offset, tmp, unaligned[i].size);
        expect_bytes(d, s, b, unaligned[i].offset, tmp, unaligned[i].size, "unaligned read back");
    }
    expect_bytes(d, s, b, 0, sb, sizeof sb, "b after unaligned writes");
    for (uint64_t off = 0; off < 9; off++)
        expect_bytes(d, s, b, off, sb + off, 13, "unaligned window");

    /* Copies in words, within and between buffers, queued back to back, then read. */
    static const struct {
        int from_a;
        uint64_t src, dst, size;
    } copies[] = {{1, 0, 0, 1000},   {1, 4, 2000, 96},  {0, 0, 3000, 1000}, {0, 3000, 8, 16},
                  {1, 996, 4092, 4}, {0, 100, 200, 100} /* same buffer, disjoint */};
    for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++) {
        const unsigned char *src = copies[i].from_a ? sa : sb;
        memmove(tmp, src + copies[i].src, copies[i].size);
        memcpy(sb + copies[i].dst, tmp, copies[i].size);
        ASSERT_OK(cubec_copy(d, s, copies[i].from_a ? a : b, copies[i].src, b, copies[i].dst,
                             copies[i].size));
    }
    expect_bytes(d, s, b, 0, sb, sizeof sb, "b after copies");
    expect_bytes(d, s, a, 0, sa, sizeof sa, "a, the source, unchanged");

    /* Views: a view of b, a view of that view (offsets add up), written and copied through. */
    cubec_buffer v1 = {0}, v2 = {0};
    ASSERT_OK(cubec_buffer_view(d, b, 2 * al, 1024, &v1));
    ASSERT_OK(cubec_buffer_view(d, v1, al, 512, &v2));
    expect_bytes(d, s, v1, 0, sb + 2 * al, 1024, "view v1");
    expect_bytes(d, s, v2, 5, sb + 3 * al + 5, 300, "view of a view v2");
    pattern_bytes(tmp, 77, 30);
    ASSERT_OK(cubec_write(d, s, v2, 9, tmp, 77));
    memcpy(sb + 3 * al + 9, tmp, 77);
    ASSERT_OK(cubec_copy(d, s, v2, 0, a, 500, 200));
    memcpy(sa + 500, sb + 3 * al, 200);
    ASSERT_OK(cubec_copy(d, s, a, 0, v1, 1020, 4));
    memcpy(sb + 2 * al + 1020, sa, 4);
    expect_bytes(d, s, b, 0, sb, sizeof sb, "b after writes and copies through views");
    expect_bytes(d, s, a, 0, sa, sizeof sa, "a after a copy from a view");
    ASSERT_OK(cubec_buffer_get_size(d, v2, &size));
    assert_int_equal(size, 512);

    /* Fills (cubec.h: a repeated 32-bit pattern in host byte order) through a buffer and a view. */
    uint32_t pat = 0xa1b2c3d4u;
    ASSERT_OK(cubec_fill(d, s, b, 40, 64, pat));
    for (int i = 0; i < 16; i++)
        memcpy(sb + 40 + 4 * i, &pat, 4);
    ASSERT_OK(cubec_fill(d, s, v1, 8, 12, 0x01020304u));
    pat = 0x01020304u;
    for (int i = 0; i < 3; i++)
        memcpy(sb + 2 * al + 8 + 4 * i, &pat, 4);
    expect_bytes(d, s, b, 0, sb, sizeof sb, "b after fills");

    /* Releasing the parent leaves the views usable (they keep its memory). */
    ASSERT_OK(cubec_buffer_release(d, b));
    expect_bytes(d, s, v2, 0, sb + 3 * al, 512, "v2 after its parent was released");
    ASSERT_ERROR(cubec_read(d, s, b, 0, tmp, 4), CUBEC_INVALID_ARGUMENT, "cubec_read: src");

    /* Refusals: each changes nothing. */
    ASSERT_ERROR(cubec_copy(d, s, a, 2, v1, 0, 4), CUBEC_INVALID_ARGUMENT,
                 "src_offset = 2 is not a multiple of 4");
    ASSERT_ERROR(cubec_copy(d, s, a, 0, v1, 6, 4), CUBEC_INVALID_ARGUMENT,
                 "dst_offset = 6 is not a multiple of 4");
    ASSERT_ERROR(cubec_copy(d, s, a, 0, v1, 0, 10), CUBEC_INVALID_ARGUMENT,
                 "size = 10 is not a multiple of 4");
    ASSERT_ERROR(cubec_copy(d, s, a, 996, v1, 0, 8), CUBEC_INVALID_ARGUMENT, "past the end");
    ASSERT_ERROR(cubec_copy(d, s, a, 0, v1, 1024, 4), CUBEC_INVALID_ARGUMENT, "past the end");
    /* v2 lies inside v1: the same memory, overlapping ranges. */
    ASSERT_ERROR(cubec_copy(d, s, v1, al, v2, 4, 16), CUBEC_INVALID_ARGUMENT, "overlap");
    ASSERT_ERROR(cubec_write(d, s, a, SIZE_A, tmp, 1), CUBEC_INVALID_ARGUMENT, "past the end");
    ASSERT_ERROR(cubec_write(d, s, a, UINT64_MAX, tmp, 2), CUBEC_INVALID_ARGUMENT, "past the end");
    ASSERT_ERROR(cubec_read(d, s, a, 1, tmp, SIZE_A), CUBEC_INVALID_ARGUMENT, "past the end");
    ASSERT_ERROR(cubec_fill(d, s, a, 2, 4, 0), CUBEC_INVALID_ARGUMENT, "not a multiple of 4");
    ASSERT_ERROR(cubec_fill(d, s, a, 0, 1004, 0), CUBEC_INVALID_ARGUMENT, "past the end");
    cubec_buffer bad = {0};
    ASSERT_ERROR(cubec_buffer_view(d, a, al + 1, 4, &bad), CUBEC_INVALID_ARGUMENT,
                 "storage_offset_alignment");
    assert_int_equal(bad.id, 0);
    ASSERT_ERROR(cubec_buffer_view(d, a, 0, SIZE_A + 1, &bad), CUBEC_INVALID_ARGUMENT,
                 "past the end");
    ASSERT_ERROR(cubec_write(d, (cubec_stream)12345, a, 0, tmp, 1), CUBEC_INVALID_ARGUMENT,
                 "was not made by cubec_stream_new");
    expect_bytes(d, s, a, 0, sa, sizeof sa, "a after the refusals");
    expect_bytes(d, s, v1, 0, sb + 2 * al, 1024, "v1 after the refusals");

    /* Zero sizes: a buffer that holds no memory, and transfers of nothing. */
    cubec_buffer z = make(&n, s, NULL, 0, NULL);
    ASSERT_OK(cubec_write(d, s, z, 0, NULL, 0));
    ASSERT_OK(cubec_read(d, s, z, 0, NULL, 0));
    ASSERT_OK(cubec_copy(d, s, z, 0, a, 0, 0));
    ASSERT_OK(cubec_copy(d, s, a, SIZE_A, z, 0, 0));
    ASSERT_OK(cubec_fill(d, s, z, 0, 0, 7));
    ASSERT_ERROR(cubec_write(d, s, z, 0, tmp, 1), CUBEC_INVALID_ARGUMENT, "past the end");
    expect_bytes(d, s, a, 0, sa, sizeof sa, "a after zero-size copies");

    ASSERT_OK(cubec_buffer_release(d, z));
    ASSERT_OK(cubec_buffer_release(d, v2));
    ASSERT_OK(cubec_buffer_release(d, v1));
    ASSERT_OK(cubec_buffer_release(d, a));
    ASSERT_ERROR(cubec_buffer_release(d, a), CUBEC_INVALID_ARGUMENT, "cubec_buffer_release");
    ASSERT_OK(cubec_sync(d, s));
    cubec_device_close(d);
}

/* ---- 2. ordering across streams ------------------------------------------------------------ */

#define OW 256u /* words per buffer */

static void expect_ordered(cubec_device *d, cubec_stream s, cubec_buffer b, const uint32_t *want,
                           const char *config, const char *buffer)
{
    char what[256];
    snprintf(what, sizeof what, "%s: %s", config, buffer);
    expect_bytes(d, s, b, 0, want, OW * 4, what);
}

/* Stream A writes X, stream B copies X -> Y, A writes X again, B copies X -> Z and reads Y: Y
 * holds the first contents (B's copy saw A's earlier write, A's later write waited for B's
 * read), Z the second. The same with copies on the device: A copies P -> X, B copies X -> Y, A
 * copies Q -> X. */
static void ordering_case(nulldev *n, const cubec_stream *abc, uint32_t tasks_max,
                          uint32_t delay_us, int x_on_b)
{
    cubec_device *d = n->d;
    cubec_stream a = abc[0], b = abc[1], c = abc[2];
    uint32_t first[OW], second[OW], third[OW];
    pattern_words(first, OW, 1);
    pattern_words(second, OW, 2);
    pattern_words(third, OW, 3);
    const uint64_t bytes = sizeof first;
    char what[128];
    snprintf(what, sizeof what, "tasks_max %u, delay %u us, X on %s", tasks_max, delay_us,
             x_on_b ? "B" : "A");

    cubec_buffer x = make(n, x_on_b ? b : a, NULL, bytes, NULL);
    cubec_buffer y = make(n, b, NULL, bytes, NULL);
    cubec_buffer z = make(n, b, NULL, bytes, NULL);
    ASSERT_OK(cubec_write(d, a, x, 0, first, bytes));
    ASSERT_OK(cubec_copy(d, b, x, 0, y, 0, bytes));
    ASSERT_OK(cubec_write(d, a, x, 0, second, bytes));
    ASSERT_OK(cubec_copy(d, b, x, 0, z, 0, bytes));
    uint32_t ygot[OW];
    ASSERT_OK(cubec_read(d, b, y, 0, ygot, bytes));
    expect_ordered(d, b, y, first, what, "y (host writes: the first)");
    expect_ordered(d, b, z, second, what, "z (host writes: the second)");
    expect_ordered(d, a, x, second, what, "x (host writes: the second)");

    /* The same chain with device copies only: nothing waits on the host in between. */
    cubec_buffer p = make(n, a, first, bytes, NULL);
    cubec_buffer q = make(n, a, third, bytes, NULL);
    cubec_buffer y2 = make(n, b, NULL, bytes, NULL);
    cubec_buffer w = make(n, b, NULL, bytes, NULL);
    ASSERT_OK(cubec_sync(d, a));
    ASSERT_OK(cubec_sync(d, b));
    /* Across streams, device work is ordered only by the rule of cubec.h "Streams" (a use of
     * a buffer on B follows the work queued on its owner and on its last writer), so B syncs
     * before A overwrites X: a write after B's queued read would race (see docs/api.md). */
    ASSERT_OK(cubec_copy(d, a, p, 0, x, 0, bytes));  /* X = first */
    ASSERT_OK(cubec_copy(d, b, x, 0, y2, 0, bytes)); /* after A's queued copy: first */
    ASSERT_OK(cubec_sync(d, b));
    ASSERT_OK(cubec_copy(d, a, q, 0, x, 0, bytes)); /* X = third */
    ASSERT_OK(cubec_copy(d, b, x, 0, w, 0, bytes)); /* after A's queued copy: third */
    expect_ordered(d, b, w, third, what, "w (device copies: the third)");
    expect_ordered(d, b, y2, first, what, "y2 (device copies: the first)");
    expect_ordered(d, a, x, third, what, "x (device copies: the third)");

    /* Partial ranges on three streams: C copies the middle of Y (written by B's copy). */
    cubec_buffer out = make(n, c, NULL, bytes, NULL);
    uint32_t model[OW];
    memcpy(model, second, bytes);
    ASSERT_OK(cubec_write(d, c, out, 0, second, bytes));
    ASSERT_OK(cubec_copy(d, a, q, 0, x, 0, bytes));  /* X = third */
    ASSERT_OK(cubec_copy(d, b, x, 64, y, 128, 256)); /* Y[32..96) = third[16..80) */
    ASSERT_OK(cubec_copy(d, c, y, 96, out, 0, 512)); /* out[0..128) = Y[24..152) */
    uint32_t ymodel[OW];
    memcpy(ymodel, ygot, bytes);
    memcpy(ymodel + 32, third + 16, 256);
    memcpy(model, ymodel + 24, 512);
    expect_ordered(d, c, out, model, what, "out (partial ranges)");
    expect_ordered(d, a, y, ymodel, what, "y (partial ranges)");

    cubec_buffer all[] = {x, y, z, p, q, y2, w, out};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        ASSERT_OK(cubec_buffer_release(d, all[i]));
}

static void test_ordering_across_streams(void **state)
{
    (void)state;
    /* Completions that lag the submissions (a delay) too: the server must wait, not assume. */
    static const struct {
        uint32_t tasks_max, delay_us;
    } configs[] = {{1, 0}, {2, 0}, {32, 0}, {2, 300}, {32, 300}};
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        /* One device per configuration, its streams reused: each stream's slot allocates a page
         * of its own once (a memset of 8 MiB on null). */
        nulldev n = open_null(configs[i].tasks_max, configs[i].delay_us);
        cubec_stream abc[3] = {new_stream(n.d), new_stream(n.d), new_stream(n.d)};
        for (int x_on_b = 0; x_on_b < 2; x_on_b++)
            ordering_case(&n, abc, configs[i].tasks_max, configs[i].delay_us, x_on_b);
        cubec_device_close(n.d);
    }
}

/* Stream B queues a copy of X (owned by A); A then writes X. cubec_write "waits for queued GPU
 * work that still uses the buffer" (docs/api.md), so the copy sees the first bytes. Found by these
 * tests (the write drained only the caller's, the owner's and the last writer's slots) and fixed on
 * main by 3874f0b (queued_readers). */
static void test_host_write_waits_for_queued_read_on_other_stream(void **state)
{
    (void)state;
    nulldev n = open_null(0, 0);
    cubec_device *d = n.d;
    cubec_stream a = new_stream(d), b = new_stream(d);
    uint32_t first[4] = {1, 2, 3, 4}, second[4] = {5, 6, 7, 8};
    cubec_buffer x = make(&n, a, first, sizeof first, NULL);
    cubec_buffer y = make(&n, b, NULL, sizeof first, NULL);
    ASSERT_OK(cubec_copy(d, b, x, 0, y, 0, sizeof first)); /* queued on B */
    ASSERT_OK(cubec_write(d, a, x, 0, second, sizeof second));
    expect_bytes(d, b, y, 0, first, sizeof first, "y, copied before x was written again");
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, y));
    cubec_device_close(d);
}

/* Was known bug lazy-write-war: a cubec_write refused lazily inside a capture window taints its
 * bytes at once, without the ordering a write has (docs/api.md: it "waits for queued GPU work that
 * still uses the buffer"): a copy another stream queued before it is skipped for the refusal, and
 * a fill another stream queued before it, recorded later, clears the refusal's failure, so the
 * bytes read back as written. The fix of host-write-war (3874f0b) does not cover this path. */
static void test_lazy_write_waits_for_queued_work(void **state)
{
    (void)state;
    int skipped_copy = 0, lost_refusal = 0;
    for (int fill = 0; fill < 2; fill++) {
        nulldev n = open_null(0, 0);
        cubec_device *d = n.d;
        cubec_stream a = new_stream(d), b = new_stream(d);
        uint32_t first[4] = {1, 2, 3, 4}, second[4] = {5, 6, 7, 8}, got[4];
        cubec_buffer x = make(&n, a, first, sizeof first, NULL);
        cubec_buffer y = make(&n, b, NULL, sizeof first, NULL);
        ASSERT_OK(cubec_sync(d, a));
        if (fill)
            ASSERT_OK(cubec_fill(d, b, x, 0, sizeof first, 9)); /* queued on B */
        else
            ASSERT_OK(cubec_copy(d, b, x, 0, y, 0, sizeof first)); /* queued on B */
        ASSERT_OK(cubec_graph_prepare(d, a));
        ASSERT_OK(cubec_graph_begin(d, a));
        ASSERT_OK(cubec_write(d, a, x, 0, second, sizeof second)); /* refused lazily */
        cubec_graph g;
        ASSERT_ERROR(cubec_graph_end(d, a, &g), CUBEC_GRAPH_STATE, "inside the capture window");
        cubec_status st = cubec_read(d, b, fill ? x : y, 0, got, sizeof got);
        if (fill)
            lost_refusal = st == NULL; /* the refused write came last: x must carry it */
        else
            skipped_copy = st != NULL; /* the copy came first: y must hold the first bytes */
        cubec_status_free(st);
        cubec_device_close(d);
    }
    if (!skipped_copy && !lost_refusal) return;
    char msg[256];
    snprintf(msg, sizeof msg, "%s%s", skipped_copy ? "a copy queued before it was skipped; " : "",
             lost_refusal ? "a fill queued before it cleared its failure" : "");
    fail_msg("%s: %s", "lazy-write-war", msg);
}

/* Was known bug read-async-late, minimal: on unified memory (null, lavapipe) cubec_read_async
 * copies the bytes out when the event completes, from the mapped buffer, so a cubec_write (or a
 * copy) queued on the same stream after the read changes what the read returns. The staging path of
 * discrete GPUs (CUBEC_FORCE_STAGING=1) returns the bytes of when the read was queued, as stream
 * order says. */
static void test_read_async_ignores_later_write(void **state)
{
    (void)state;
    nulldev n = open_null(0, 0);
    cubec_device *d = n.d;
    cubec_stream s = new_stream(d);
    uint32_t first[4] = {1, 2, 3, 4}, second[4] = {5, 6, 7, 8}, got[4];
    cubec_buffer x = make(&n, s, first, sizeof first, NULL);
    cubec_event *e = NULL;
    ASSERT_OK(cubec_read_async(d, s, x, 0, got, sizeof got, &e));
    ASSERT_OK(cubec_write(d, s, x, 0, second, sizeof second));
    ASSERT_OK(cubec_event_wait(e));
    cubec_event_free(e);
    int bug = memcmp(got, first, sizeof got) != 0;
    ASSERT_OK(cubec_buffer_release(d, x));
    cubec_device_close(d);
    if (!bug) return;
    fail_msg("%s: %s", "read-async-late",
             "cubec_read_async returned bytes written on its stream after "
             "the read was queued");
}

/* Was known bug empty-check: cubec_check of an empty view inside a failed range returns the
 * failure, though the view has no bytes ("NULL when every byte ... was written"); a read of 0
 * bytes there succeeds. The taint lookup counts [off, off) as overlapping a range around off. */
static void test_check_of_empty_view_in_failed_range(void **state)
{
    (void)state;
    nulldev n = open_null(0, 0);
    cubec_device *d = n.d;
    cubec_stream s = new_stream(d);
    uint32_t words[32] = {0};
    cubec_buffer src = make(&n, s, words, sizeof words, NULL);
    cubec_buffer x = make(&n, s, words, sizeof words, NULL);
    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_copy(d, s, src, 0, x, 0, sizeof words)); /* lost: x carries a failure */
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_ERROR(cubec_flush(d, s), CUBEC_INTERNAL, "injected fault");
    cubec_buffer empty = {0};
    ASSERT_OK(cubec_buffer_view(d, x, 64, 0, &empty));
    ASSERT_OK(cubec_read(d, s, x, 64, words, 0));
    cubec_status st = cubec_check(d, &empty, 1);
    int bug = st != NULL;
    cubec_status_free(st);
    ASSERT_OK(cubec_buffer_release(d, empty));
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, src));
    cubec_device_close(d);
    if (!bug) return;
    fail_msg("%s: %s", "empty-check", "cubec_check of an empty view inside a failed range failed");
}

/* Was known bug profile-begin-dropped: with a capture prepared on stream A (slots drain one by
 * one), a drain of A and B whose A part is lost drops B's queued profile-begin timestamp. The
 * profile is never opened, so neither the loss nor anything later invalidates it, and
 * cubec_profile_end returns a time measured from the stale begin timestamp of the query pair's
 * previous profile (or CUBEC_NOT_READY when the pair was never written): "a measurement of work
 * that did not run is never returned as a time" (cubec.h) does not hold. Since issue 11's fault
 * sweep, B's queue is no longer dropped (it is submitted on its own after A's lost submission), so
 * the begin is recorded and the end may return a real time, taken after the profile began. */
static void test_profile_begin_survives_lost_drain(void **state)
{
    (void)state;
    nulldev n = open_null(0, 0);
    cubec_device *d = n.d;
    cubec_stream a = new_stream(d), b = new_stream(d), c = new_stream(d);
    uint32_t words[16] = {0};
    cubec_buffer xa = make(&n, a, words, sizeof words, NULL);
    cubec_buffer ya = make(&n, a, words, sizeof words, NULL);
    cubec_buffer xb = make(&n, b, words, sizeof words, NULL);
    cubec_profile p0 = {0}, p = {0};
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_OK(cubec_profile_begin(d, b, &p0)); /* writes the query pair p will reuse */
    ASSERT_OK(cubec_profile_end(d, b, p0, &r));
    ASSERT_OK(cubec_graph_prepare(d, a));
    ASSERT_OK(cubec_copy(d, a, xa, 0, ya, 0, sizeof words)); /* queued on A */
    uint64_t t0 = now_ns();
    ASSERT_OK(cubec_profile_begin(d, b, &p)); /* its begin timestamp queued on B */
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    /* a copy on C of A's and B's buffers drains A, then B: A's submission is lost */
    ASSERT_ERROR(cubec_copy(d, c, ya, 0, xb, 0, sizeof words), CUBEC_INTERNAL, "injected fault");
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    cubec_status st = cubec_profile_end(d, b, p, &r);
    cubec_code code = cubec_status_code(st);
    char msg[512];
    snprintf(msg, sizeof msg,
             "cubec_profile_end returned %s (%s), [%" PRIu64 ", %" PRIu64
             "] for a profile begun at %" PRIu64 " whose begin was dropped",
             cubec_code_name(code), cubec_status_message(st), r.begin_ns, r.end_ns, t0);
    cubec_status_free(st);
    cubec_graph g; /* drops the preparation */
    cubec_status_free(cubec_graph_end(d, a, &g));
    cubec_device_close(d);
    if (code == CUBEC_PROFILE_INVALID || code == CUBEC_INTERNAL) return;
    /* Not the stale begin of the pair's previous profile: a time measured after this one began. */
    if (code == CUBEC_OK && r.begin_ns >= t0 && r.end_ns >= r.begin_ns) return;
    fail_msg("%s: %s", "profile-begin-dropped", msg);
}

/* Was known bug lost-batch-holds-memory: a buffer used by work whose submission was lost keeps its
 * memory after it is released, the stream synced and cleaned up (cubec.h: memory returns "when
 * the last reference is released and no queued GPU work still uses it"; cleanup "waits for
 * queued work that still uses freed memory first"). It is let go when a later submission
 * completes. */
static void test_lost_submission_frees_memory(void **state)
{
    (void)state;
    nulldev n = open_null(0, 0);
    cubec_device *d = n.d;
    cubec_stream s = new_stream(d);
    uint8_t bytes[100] = {0};
    cubec_buffer x = make(&n, s, bytes, sizeof bytes, NULL);
    cubec_buffer y = make(&n, s, NULL, 176, NULL);
    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_copy(d, s, x, 0, y, 0, sizeof bytes));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_ERROR(cubec_flush(d, s), CUBEC_INTERNAL, "injected fault");
    ASSERT_OK(cubec_buffer_release(d, y));
    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_memory_cleanup(d, s));
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    uint64_t in_use = r.bytes_in_use;
    ASSERT_OK(cubec_buffer_release(d, x));
    cubec_device_close(d);
    if (in_use == sizeof bytes) return;
    char msg[256];
    snprintf(msg, sizeof msg, "%" PRIu64 " bytes in use after release, sync and cleanup; %zu live",
             in_use, sizeof bytes);
    fail_msg("%s: %s", "lost-batch-holds-memory", msg);
}

/* error-but-ran (was a known bug): tasks_max 2, a capture prepared on A (its slot drains alone).
 * A fill that fills stream S's queue drains S, then A, each in a submission of its own. When A's
 * submission was lost the fill returned that loss, though its own work ran and read back. Now
 * a launch, copy or fill returns a submission error only when its own work was in it: with the
 * fault on S's submission (the first) the fill fails and its bytes carry the loss while A's copy
 * runs; with the fault on A's (the second) the fill succeeds and A's copy carries the loss. */
static void test_error_means_own_work_lost(void **state)
{
    (void)state;
    for (uint64_t nth = 1; nth <= 2; nth++) {
        nulldev n = open_null(2, 0);
        cubec_device *d = n.d;
        cubec_stream a = new_stream(d), s = new_stream(d);
        uint32_t zero[16] = {0}, ones[16], got[16];
        for (int i = 0; i < 16; i++)
            ones[i] = 0x01010101u;
        uint32_t xs_bytes[16];
        pattern_words(xs_bytes, 16, 21);
        cubec_buffer xa = make(&n, a, xs_bytes, sizeof xs_bytes, NULL);
        uint64_t nya, nys;
        cubec_buffer ya = make(&n, a, zero, sizeof zero, &nya);
        cubec_buffer xs = make(&n, s, zero, sizeof zero, NULL);
        cubec_buffer ys = make(&n, s, zero, sizeof zero, &nys);
        ASSERT_OK(cubec_sync(d, a));
        ASSERT_OK(cubec_sync(d, s));
        ASSERT_OK(cubec_graph_prepare(d, a));
        ASSERT_OK(cubec_copy(d, a, xa, 0, ya, 0, sizeof zero)); /* queued on A */
        ASSERT_OK(cubec_copy(d, s, xs, 0, ys, 0, sizeof zero)); /* queued on S */
        uint64_t call = fault_count(d, CUBEC_FAULT_SUBMIT) + nth;
        ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, nth));
        char msg[2048], want[128], head[96];
        snprintf(want, sizeof want, "injected fault: submit call #%" PRIu64, call);
        cubec_status fill = cubec_fill(d, s, ys, 0, sizeof zero, 0x01010101u);
        /* The buffer whose work was in the lost submission, and the one whose work ran. */
        cubec_buffer lost = nth == 1 ? ys : ya, ran = nth == 1 ? ya : ys;
        uint64_t lost_number = nth == 1 ? nys : nya;
        const uint32_t *ran_bytes = nth == 1 ? xs_bytes : ones;
        if (nth == 1) {
            cubec_code c = take_error(fill, msg, sizeof msg, "the fill whose submission is lost");
            assert_int_equal(c, CUBEC_INTERNAL);
            if (!strstr(msg, want)) fail_msg("fill: \"%s\" lacks \"%s\"", msg, want);
        } else if (fill) {
            fail_msg("the fill returned \"%s\": only A's submission was lost",
                     cubec_status_message(fill));
        }
        cubec_code c = take_error(cubec_read(d, s, lost, 0, got, sizeof got), msg, sizeof msg,
                                  "read of the lost work's output");
        assert_int_equal(c, CUBEC_INTERNAL);
        snprintf(head, sizeof head, "read of buffer #%" PRIu64 ": not written: ", lost_number);
        if (strncmp(msg, head, strlen(head)) || !strstr(msg, want))
            fail_msg("read of the lost output: \"%s\" lacks \"%s\" or \"%s\"", msg, head, want);
        expect_bytes(d, s, ran, 0, ran_bytes, sizeof ones, "the output of the work that ran");
        cubec_graph g;
        cubec_status_free(cubec_graph_end(d, a, &g));
        cubec_buffer all[] = {xa, ya, xs, ys};
        for (int i = 0; i < 4; i++)
            ASSERT_OK(cubec_buffer_release(d, all[i]));
        cubec_device_close(d);
    }
}

/* ---- 3. failures on memory ----------------------------------------------------------------- */

#define FW 64u

static void test_lost_submission_taints_only_its_copies(void **state)
{
    (void)state;
    nulldev n = open_null(0, 0);
    cubec_device *d = n.d;
    cubec_stream s = new_stream(d);
    uint32_t xs[FW], hs[FW], ys[FW];
    pattern_words(xs, FW, 4);
    pattern_words(hs, FW, 5);
    pattern_words(ys, FW, 6);
    uint64_t nx, ny, nh;
    cubec_buffer x = make(&n, s, xs, sizeof xs, &nx);
    cubec_buffer y = make(&n, s, ys, sizeof ys, &ny);
    cubec_buffer h = make(&n, s, hs, sizeof hs, &nh);
    ASSERT_OK(cubec_sync(d, s));

    uint64_t call = fault_count(d, CUBEC_FAULT_SUBMIT) + 1;
    ASSERT_OK(cubec_copy(d, s, x, 0, y, 0, sizeof xs)); /* queued, not submitted */
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    char msg[2048], want[256];
    snprintf(want, sizeof want, "injected fault: submit call #%" PRIu64, call);
    cubec_code c = take_error(cubec_flush(d, s), msg, sizeof msg, "cubec_flush");
    assert_int_equal(c, CUBEC_INTERNAL);
    if (!strstr(msg, want)) fail_msg("flush: \"%s\" lacks \"%s\"", msg, want);

    /* The copy's destination: the root cause and the chain. */
    uint32_t got[FW];
    c = take_error(cubec_read(d, s, y, 0, got, sizeof got), msg, sizeof msg, "read of y");
    assert_int_equal(c, CUBEC_INTERNAL);
    char head[128];
    snprintf(head, sizeof head, "read of buffer #%" PRIu64 ": not written: ", ny);
    if (strncmp(msg, head, strlen(head))) fail_msg("read of y: \"%s\" lacks \"%s\"", msg, head);
    if (!strstr(msg, "the submission of its work failed: ") || !strstr(msg, want))
        fail_msg("read of y: \"%s\" does not name the lost submission", msg);
    /* Asking again gives the same failure (errors are read, never taken). */
    c = take_error(cubec_check(d, &y, 1), msg, sizeof msg, "check of y");
    assert_int_equal(c, CUBEC_INTERNAL);
    assert_non_null(strstr(msg, want));

    /* What the lost work only read, and what the host wrote before, are untouched. */
    expect_bytes(d, s, x, 0, xs, sizeof xs, "x, the lost copy's source");
    expect_bytes(d, s, h, 0, hs, sizeof hs, "h, written by the host before");
    ASSERT_OK(cubec_check(d, &h, 1));

    /* A copy from the tainted buffer is skipped and names it. */
    uint64_t nz;
    cubec_buffer z = make(&n, s, hs, sizeof hs, &nz);
    ASSERT_OK(cubec_copy(d, s, y, 0, z, 0, sizeof ys));
    c = take_error(cubec_read(d, s, z, 0, got, sizeof got), msg, sizeof msg, "read of z");
    assert_int_equal(c, CUBEC_INTERNAL);
    snprintf(head, sizeof head,
             "read of buffer #%" PRIu64 ": not written: launch \"cubec.copy\" on stream %" PRIu64
             " was skipped because its input buffer #%" PRIu64 " was not written",
             nz, stream_number(s), ny);
    if (strncmp(msg, head, strlen(head))) fail_msg("read of z: \"%s\"\n lacks \"%s\"", msg, head);
    assert_non_null(strstr(msg, want));

    /* A host write of half of y clears exactly that half. */
    ASSERT_OK(cubec_write(d, s, y, 0, xs, sizeof xs / 2));
    expect_bytes(d, s, y, 0, xs, sizeof xs / 2, "the rewritten half of y");
    c = take_error(cubec_read(d, s, y, sizeof xs / 2, got, 4), msg, sizeof msg, "other half");
    assert_int_equal(c, CUBEC_INTERNAL);
    ASSERT_OK(cubec_write(d, s, y, sizeof xs / 2, xs + FW / 2, sizeof xs / 2));
    expect_bytes(d, s, y, 0, xs, sizeof xs, "y rewritten whole");
    /* A copy from good bytes clears z. */
    ASSERT_OK(cubec_copy(d, s, y, 0, z, 0, sizeof xs));
    expect_bytes(d, s, z, 0, xs, sizeof xs, "z after a good copy");
    ASSERT_OK(cubec_sync(d, s));

    cubec_buffer all[] = {x, y, h, z};
    for (size_t i = 0; i < 4; i++)
        ASSERT_OK(cubec_buffer_release(d, all[i]));
    cubec_device_close(d);
}

/* Kernels compile on null (GLSL becomes SPIR-V on the host) and are recorded, not run. */
static void test_skipped_launch_names_its_input(void **state)
{
    (void)state;
    nulldev n = open_null(0, 0);
    cubec_device *d = n.d;
    cubec_stream s = new_stream(d);
    /* One kernel: compiling one costs some 100 ms; x is made to fail by a lost copy. */
    cubec_kernel consume = make_kernel(d, "consume", consume_src);

    uint32_t xs[FW], ys[FW], got[FW];
    pattern_words(xs, FW, 7);
    pattern_words(ys, FW, 8);
    uint64_t nx, ny;
    cubec_buffer x = make(&n, s, xs, sizeof xs, &nx);
    cubec_buffer y = make(&n, s, ys, sizeof ys, &ny);

    /* A launch that runs: its output counts as written and keeps its bytes (no kernels run). */
    ASSERT_OK(uint_launch(d, s, consume, x, y, FW, 3, 1));
    expect_bytes(d, s, y, 0, ys, sizeof ys, "y after a launch on null");
    ASSERT_OK(cubec_check(d, &y, 1));

    /* x loses the submission of the copy that writes it. */
    cubec_buffer src = make(&n, s, xs, sizeof xs, NULL);
    ASSERT_OK(cubec_sync(d, s));
    uint64_t call = fault_count(d, CUBEC_FAULT_SUBMIT) + 1;
    ASSERT_OK(cubec_copy(d, s, src, 0, x, 0, sizeof xs));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    char msg[2048], want[256], head[512];
    assert_int_equal(take_error(cubec_flush(d, s), msg, sizeof msg, "flush"), CUBEC_INTERNAL);
    snprintf(want, sizeof want, "injected fault: submit call #%" PRIu64, call);
    assert_non_null(strstr(msg, want));

    /* consume(x -> y) is skipped; y takes the failure with a link naming the launch. */
    ASSERT_OK(uint_launch(d, s, consume, x, y, FW, 3, 1));
    cubec_code c = take_error(cubec_read(d, s, y, 0, got, sizeof got), msg, sizeof msg, "read y");
    assert_int_equal(c, CUBEC_INTERNAL);
    snprintf(head, sizeof head,
             "read of buffer #%" PRIu64 ": not written: launch \"consume\" on stream %" PRIu64
             " was skipped because its input buffer #%" PRIu64
             " was not written: the submission of its work failed: %s",
             ny, stream_number(s), nx, want);
    if (strcmp(msg, head)) fail_msg("read of y:\n  \"%s\"\n  expected \"%s\"", msg, head);

    /* A host write of x clears it; the relaunch then clears y, which keeps its bytes. */
    ASSERT_OK(cubec_write(d, s, x, 0, xs, sizeof xs));
    ASSERT_OK(uint_launch(d, s, consume, x, y, FW, 3, 1));
    expect_bytes(d, s, y, 0, ys, sizeof ys, "y after the relaunch");
    ASSERT_OK(cubec_sync_check(d, s, &y, 1));

    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, y));
    ASSERT_OK(cubec_buffer_release(d, src));
    ASSERT_OK(cubec_kernel_destroy(d, consume));
    cubec_device_close(d);
}

/* ---- 4. graph rules ------------------------------------------------------------------------ */

static void test_graph_state_machine(void **state)
{
    (void)state;
    nulldev n = open_null(0, 0);
    cubec_device *d = n.d;
    cubec_stream s = new_stream(d), other = new_stream(d);
    uint32_t xs[FW], got[FW];
    pattern_words(xs, FW, 9);
    cubec_buffer x = make(&n, s, xs, sizeof xs, NULL);
    cubec_buffer y = make(&n, s, NULL, sizeof xs, NULL);
    cubec_graph g = {0};

    /* Wrong transitions: each refused with CUBEC_GRAPH_STATE, the stream still usable. */
    ASSERT_ERROR(cubec_graph_begin(d, s), CUBEC_GRAPH_STATE, "call cubec_graph_prepare");
    ASSERT_ERROR(cubec_graph_end(d, s, &g), CUBEC_GRAPH_STATE, "no graph capture is recording");
    assert_int_equal(g.id, 0);
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_ERROR(cubec_graph_prepare(d, s), CUBEC_GRAPH_STATE, "already prepared");
    /* end after a prepare that never began drops the preparation */
    ASSERT_ERROR(cubec_graph_end(d, s, &g), CUBEC_GRAPH_STATE, "the preparation is dropped");
    ASSERT_ERROR(cubec_graph_begin(d, s), CUBEC_GRAPH_STATE, "call cubec_graph_prepare");
    expect_bytes(d, s, x, 0, xs, sizeof xs, "x after wrong transitions");

    /* A capture of two copies: X -> Y, Y[0..32) -> Y[32..64) words. */
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(cubec_copy(d, s, x, 0, y, 0, sizeof xs)); /* the warm-up runs */
    ASSERT_OK(cubec_copy(d, s, y, 0, y, sizeof xs / 2, sizeof xs / 2));
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_ERROR(cubec_graph_begin(d, s), CUBEC_GRAPH_STATE, "already recording");
    ASSERT_ERROR(cubec_graph_prepare(d, s), CUBEC_GRAPH_STATE, "already recording");
    ASSERT_OK(cubec_copy(d, s, x, 0, y, 0, sizeof xs)); /* recorded, not run */
    ASSERT_OK(cubec_copy(d, s, y, 0, y, sizeof xs / 2, sizeof xs / 2));
    /* The window's refusals, which do not doom the capture. */
    cubec_event *e = NULL;
    cubec_profile p = {0};
    ASSERT_ERROR(cubec_read(d, s, y, 0, got, 4), CUBEC_GRAPH_STATE, "cubec_read: refused");
    ASSERT_ERROR(cubec_read_async(d, s, y, 0, got, 4, &e), CUBEC_GRAPH_STATE,
                 "cubec_read_async: refused");
    assert_null(e);
    ASSERT_ERROR(cubec_sync(d, s), CUBEC_GRAPH_STATE, "cubec_sync: refused");
    ASSERT_ERROR(cubec_sync_check(d, s, &y, 1), CUBEC_GRAPH_STATE, "cubec_sync_check: refused");
    ASSERT_ERROR(cubec_profile_begin(d, s, &p), CUBEC_GRAPH_STATE, "cubec_profile_begin");
    ASSERT_ERROR(cubec_memory_cleanup(d, other), CUBEC_GRAPH_STATE, NULL);
    ASSERT_ERROR(cubec_graph_replay(d, s, (cubec_graph){12345}), CUBEC_GRAPH_STATE, NULL);
    /* An end from a stream of another slot finds no capture and changes nothing. */
    ASSERT_ERROR(cubec_graph_end(d, other, &g), CUBEC_GRAPH_STATE, "no graph capture is recording");
    /* Another stream reads y: the recorded copies did not run, so it holds the warm-up's. */
    uint32_t warm[FW];
    memcpy(warm, xs, sizeof xs);
    memcpy(warm + FW / 2, xs, sizeof xs / 2);
    expect_bytes(d, other, y, 0, warm, sizeof warm, "y read by another stream in the window");
    ASSERT_OK(cubec_graph_end(d, s, &g));
    assert_true(g.id != 0);

    /* Replays copy what the inputs hold at replay time. */
    for (uint32_t round = 0; round < 3; round++) {
        uint32_t in[FW], model[FW];
        pattern_words(in, FW, 100 + round);
        ASSERT_OK(cubec_write(d, s, x, 0, in, sizeof in));
        ASSERT_OK(cubec_graph_replay(d, s, g));
        memcpy(model, in, sizeof in);
        memcpy(model + FW / 2, in, sizeof in / 2);
        expect_bytes(d, s, y, 0, model, sizeof model, "y after a replay");
        /* from another stream too */
        pattern_words(in, FW, 200 + round);
        ASSERT_OK(cubec_write(d, other, x, 0, in, sizeof in));
        ASSERT_OK(cubec_graph_replay(d, other, g));
        memcpy(model, in, sizeof in);
        memcpy(model + FW / 2, in, sizeof in / 2);
        expect_bytes(d, other, y, 0, model, sizeof model, "y after a replay on another stream");
    }

    /* The graph keeps x's memory after its handle is released: a replay copies x's last bytes. */
    uint32_t last[FW], model[FW];
    pattern_words(last, FW, 300);
    ASSERT_OK(cubec_write(d, s, x, 0, last, sizeof last));
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_write(d, s, y, 0, xs, sizeof xs)); /* something else in y */
    ASSERT_OK(cubec_graph_replay(d, s, g));
    memcpy(model, last, sizeof last);
    memcpy(model + FW / 2, last, sizeof last / 2);
    expect_bytes(d, s, y, 0, model, sizeof model, "y after a replay of a released input");

    ASSERT_OK(cubec_graph_destroy(d, s, g));
    ASSERT_OK(cubec_graph_destroy(d, s, g)); /* twice: accepted */
    ASSERT_OK(cubec_graph_destroy(d, s, (cubec_graph){0}));
    ASSERT_ERROR(cubec_graph_replay(d, s, g), CUBEC_GRAPH_STATE, "destroyed");
    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_buffer_release(d, y));
    cubec_device_close(d);
}

static void test_graph_lazy_write_dooms_capture(void **state)
{
    (void)state;
    nulldev n = open_null(0, 0);
    cubec_device *d = n.d;
    cubec_stream s = new_stream(d), other = new_stream(d);
    uint32_t xs[FW], ys[FW], zs[FW], got[FW];
    pattern_words(xs, FW, 10);
    pattern_words(ys, FW, 11);
    pattern_words(zs, FW, 12);
    uint64_t nx, ny;
    cubec_buffer x = make(&n, s, xs, sizeof xs, &nx);
    cubec_buffer y = make(&n, s, ys, sizeof ys, &ny);

    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(cubec_copy(d, s, x, 0, y, 0, sizeof xs)); /* recorded */
    ASSERT_OK(cubec_write(d, s, x, 0, zs, sizeof zs));  /* refused lazily: the call succeeds */
    cubec_graph g = {0};
    char msg[2048];
    cubec_code c =
        take_error(cubec_graph_end(d, s, &g), msg, sizeof msg, "end of a doomed capture");
    assert_int_equal(c, CUBEC_GRAPH_STATE);
    assert_int_equal(g.id, 0);
    assert_non_null(strstr(msg, "inside the capture window"));
    /* x carries the refusal; y what the discarded capture would have written. */
    c = take_error(cubec_read(d, s, x, 0, got, sizeof got), msg, sizeof msg, "read of x");
    assert_int_equal(c, CUBEC_GRAPH_STATE);
    assert_non_null(strstr(msg, "was refused"));
    c = take_error(cubec_read(d, other, y, 0, got, sizeof got), msg, sizeof msg, "read of y");
    assert_int_equal(c, CUBEC_GRAPH_STATE);
    assert_non_null(strstr(msg, "was discarded"));
    /* The stream is usable again at once; writes clear both. */
    ASSERT_OK(cubec_write(d, s, x, 0, zs, sizeof zs));
    ASSERT_OK(cubec_copy(d, s, x, 0, y, 0, sizeof zs));
    expect_bytes(d, s, y, 0, zs, sizeof zs, "y after the capture");
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, y));
    cubec_device_close(d);
}

/* A capture doomed by an input whose failure has come a long way (here twenty skipped copies,
 * each adding a link to the chain) still names the root cause: the doom keeps the whole chain,
 * and what the discarded capture would have written carries it. Found by test_random_null (seed
 * 0xbcf98482da490dc2, episode 16): the doom message was cut at 1024 bytes, root cause and all. */
static void test_doom_keeps_the_root_cause(void **state)
{
    (void)state;
    nulldev n = open_null(0, 0);
    cubec_device *d = n.d;
    cubec_stream s = new_stream(d), other = new_stream(d);
    uint32_t xs[FW], got[FW];
    pattern_words(xs, FW, 13);
    cubec_buffer src = make(&n, s, xs, sizeof xs, NULL);
    enum { HOPS = 20 };
    cubec_buffer hop[HOPS + 1];
    for (int i = 0; i <= HOPS; i++)
        hop[i] = make(&n, s, xs, sizeof xs, NULL);
    ASSERT_OK(cubec_sync(d, s));

    /* hop[0] loses the submission of the copy that writes it; each copy passes it on. */
    uint64_t call = fault_count(d, CUBEC_FAULT_SUBMIT) + 1;
    ASSERT_OK(cubec_copy(d, s, src, 0, hop[0], 0, sizeof xs));
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    char msg[16384], want[256];
    assert_int_equal(take_error(cubec_flush(d, s), msg, sizeof msg, "flush"), CUBEC_INTERNAL);
    snprintf(want, sizeof want, "injected fault: submit call #%" PRIu64, call);
    for (int i = 0; i < HOPS; i++)
        ASSERT_OK(cubec_copy(d, s, hop[i], 0, hop[i + 1], 0, sizeof xs));
    cubec_code c = take_error(cubec_read(d, s, hop[HOPS], 0, got, sizeof got), msg, sizeof msg,
                              "read of the last hop");
    assert_int_equal(c, CUBEC_INTERNAL);
    if (strlen(msg) < 1100) fail_msg("the chain is only %zu bytes: \"%s\"", strlen(msg), msg);
    assert_non_null(strstr(msg, want));

    /* A captured copy from the last hop dooms the capture. */
    uint64_t ny;
    cubec_buffer y = make(&n, s, xs, sizeof xs, &ny);
    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(cubec_copy(d, s, hop[HOPS], 0, y, 0, sizeof xs));
    cubec_graph g = {0};
    c = take_error(cubec_graph_end(d, s, &g), msg, sizeof msg, "end of a doomed capture");
    assert_int_equal(c, CUBEC_GRAPH_STATE);
    if (!strstr(msg, want)) fail_msg("graph end: \"%s\" lacks \"%s\"", msg, want);
    c = take_error(cubec_read(d, other, y, 0, got, sizeof got), msg, sizeof msg, "read of y");
    assert_int_equal(c, CUBEC_INTERNAL); /* the root cause's code */
    char head[128];
    snprintf(head, sizeof head, "read of buffer #%" PRIu64 ": not written: graph capture on", ny);
    if (strncmp(msg, head, strlen(head))) fail_msg("read of y: \"%.300s\" lacks \"%s\"", msg, head);
    if (!strstr(msg, want)) fail_msg("read of y: \"%s\" lacks \"%s\"", msg, want);

    ASSERT_OK(cubec_buffer_release(d, src));
    ASSERT_OK(cubec_buffer_release(d, y));
    for (int i = 0; i <= HOPS; i++)
        ASSERT_OK(cubec_buffer_release(d, hop[i]));
    cubec_device_close(d);
}

/* ---- 5. profiles --------------------------------------------------------------------------- */

static void test_profiles(void **state)
{
    (void)state;
    nulldev n = open_null(0, 0);
    cubec_device *d = n.d;
    cubec_stream s = new_stream(d), other = new_stream(d);
    uint32_t xs[FW];
    pattern_words(xs, FW, 13);
    cubec_buffer x = make(&n, s, xs, sizeof xs, NULL);
    cubec_buffer y = make(&n, s, NULL, sizeof xs, NULL);
    cubec_timing method;
    ASSERT_OK(cubec_profile_get_method(d, &method));
    assert_true(method == CUBEC_TIMING_DEVICE || method == CUBEC_TIMING_SYSTEM);

    /* A measurement of copies, on the host clock, between the calls. */
    uint64_t t0 = now_ns();
    cubec_profile p = {0};
    ASSERT_OK(cubec_profile_begin(d, s, &p));
    for (int i = 0; i < 8; i++)
        ASSERT_OK(cubec_copy(d, s, x, 0, y, 0, sizeof xs));
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_OK(cubec_profile_end(d, s, p, &r));
    uint64_t t1 = now_ns();
    assert_int_equal(r.method, method);
    assert_true(r.end_ns >= r.begin_ns);
    assert_int_equal(r.duration_ns, r.end_ns - r.begin_ns);
    /* Null timestamps are CLOCK_MONOTONIC: the instants lie between the calls (1 us of slack for
     * the conversion). */
    if (r.begin_ns + 1000 < t0 || r.end_ns > t1 + 1000)
        fail_msg("profile [%" PRIu64 ", %" PRIu64 "] is outside the calls [%" PRIu64 ", %" PRIu64
                 "]",
                 r.begin_ns, r.end_ns, t0, t1);
    expect_bytes(d, s, y, 0, xs, sizeof xs, "y after the profiled copies");

    /* The token is consumed; another stream is refused; nesting works. */
    ASSERT_ERROR(cubec_profile_end(d, s, p, &r), CUBEC_INVALID_ARGUMENT, NULL);
    cubec_profile outer = {0}, inner = {0};
    ASSERT_OK(cubec_profile_begin(d, s, &outer));
    ASSERT_OK(cubec_profile_begin(d, s, &inner));
    ASSERT_ERROR(cubec_profile_end(d, other, inner, &r), CUBEC_INVALID_ARGUMENT, "not on stream");
    ASSERT_OK(cubec_profile_end(d, s, inner, &r));
    cubec_profile_result ro = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_OK(cubec_profile_end(d, s, outer, &ro));
    assert_true(ro.begin_ns <= r.begin_ns && r.end_ns <= ro.end_ns);
    ASSERT_OK(cubec_profile_begin(d, s, &p));
    ASSERT_OK(cubec_profile_abandon(d, s, p));
    ASSERT_ERROR(cubec_profile_abandon(d, s, p), CUBEC_INVALID_ARGUMENT, NULL);

    /* A skipped launch inside a profile: CUBEC_PROFILE_INVALID naming it, a zeroed result. */
    cubec_kernel consume = make_kernel(d, "consume", consume_src);
    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_copy(d, s, y, 0, x, 0, sizeof xs)); /* lost: x carries the failure */
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_ERROR(cubec_flush(d, s), CUBEC_INTERNAL, "injected fault: submit call #");
    ASSERT_OK(cubec_profile_begin(d, s, &p));
    ASSERT_OK(uint_launch(d, s, consume, x, y, FW, 1, 0));
    memset(&r, 0xff, sizeof r);
    r.struct_size = sizeof r;
    char msg[2048];
    cubec_code c = take_error(cubec_profile_end(d, s, p, &r), msg, sizeof msg, "profile end");
    assert_int_equal(c, CUBEC_PROFILE_INVALID);
    assert_non_null(strstr(msg, "launch \"consume\""));
    assert_non_null(strstr(msg, "was skipped"));
    assert_int_equal(r.duration_ns, 0);
    assert_int_equal(r.begin_ns, 0);
    /* A copy skipped inside a profile is a skipped launch too. */
    ASSERT_OK(cubec_profile_begin(d, s, &p));
    ASSERT_OK(cubec_copy(d, s, x, 0, y, 0, sizeof xs));
    c = take_error(cubec_profile_end(d, s, p, &r), msg, sizeof msg, "profile end (copy)");
    assert_int_equal(c, CUBEC_PROFILE_INVALID);
    assert_non_null(strstr(msg, "cubec.copy"));
    /* After a host write of x, profiles measure again. */
    ASSERT_OK(cubec_write(d, s, x, 0, xs, sizeof xs));
    ASSERT_OK(cubec_profile_begin(d, s, &p));
    ASSERT_OK(cubec_copy(d, s, x, 0, y, 0, sizeof xs));
    ASSERT_OK(cubec_profile_end(d, s, p, &r));
    expect_bytes(d, s, y, 0, xs, sizeof xs, "y after recovery");

    ASSERT_OK(cubec_kernel_destroy(d, consume));
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, y));
    cubec_device_close(d);
}

/* ---- 6. memory ----------------------------------------------------------------------------- */

#define MANY 300

static void check_report_sums(const cubec_memory_report *r)
{
    uint64_t in_use = 0, reserved = 0, allocs = 0;
    uint32_t pages = 0;
    int buffer_pools = 1;
    for (uint32_t i = 0; i < r->pool_count; i++) {
        const cubec_pool_report *p = &r->pools[i];
        int is_buffer_pool = !strcmp(p->kind, "sliced") || !strcmp(p->kind, "exclusive");
        /* The buffer pools come first, then the rings. */
        if (!is_buffer_pool) buffer_pools = 0;
        if (is_buffer_pool && !buffer_pools) fail_msg("pool %u (%s) after a ring", i, p->kind);
        assert_true(p->pages_peak >= p->pages);
        if (!is_buffer_pool) continue;
        assert_true(p->bytes_reserved >= p->bytes_in_use + p->bytes_padding);
        if (!p->allocations) assert_int_equal(p->bytes_in_use, 0);
        in_use += p->bytes_in_use;
        reserved += p->bytes_reserved;
        allocs += p->allocations;
        pages += p->pages;
    }
    assert_int_equal(r->bytes_in_use, in_use);
    assert_int_equal(r->bytes_reserved, reserved);
    assert_int_equal(r->allocations, allocs);
    assert_int_equal(r->pages, pages);
}

static uint64_t report_padding(const cubec_memory_report *r)
{
    uint64_t pad = 0;
    for (uint32_t i = 0; i < r->pool_count; i++)
        if (!strcmp(r->pools[i].kind, "sliced") || !strcmp(r->pools[i].kind, "exclusive"))
            pad += r->pools[i].bytes_padding;
    return pad;
}

static void test_memory_report_follows_allocations(void **state)
{
    (void)state;
    nulldev n = open_null(0, 0);
    cubec_device *d = n.d;
    cubec_stream s = new_stream(d);
    uint64_t al = align_of(d);
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    check_report_sums(&r);
    assert_int_equal(r.bytes_in_use, 0);
    assert_int_equal(r.allocations, 0);

    cubec_buffer bufs[MANY];
    uint64_t sizes[MANY], total = 0, live = 0;
    uint32_t rng = 12345;
    for (int i = 0; i < MANY; i++) {
        /* mostly small, some of a few MiB, one for the exclusive pool, a few empty */
        uint64_t sz = 1 + test_rand(&rng) % 65536;
        if (i % 50 == 7) sz = (3u << 20) + test_rand(&rng) % 4096;
        if (i == 100) sz = (40u << 20) + 12; /* beyond the sliced pools: the exclusive pool */
        if (i % 97 == 5) sz = 0;             /* holds no memory */
        sizes[i] = sz;
        bufs[i] = make(&n, s, NULL, sz, NULL);
        total += sz;
        live += sz != 0;
    }
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    check_report_sums(&r);
    assert_int_equal(r.bytes_in_use, total);
    assert_int_equal(r.allocations, live);
    /* Padding rounds each allocation up to the alignment, no more. */
    assert_true(report_padding(&r) <= live * (al - 1));
    assert_true(r.pages >= 1);
    assert_true(r.bytes_reserved >= total);
    int exclusive = 0;
    for (uint32_t i = 0; i < r.pool_count; i++)
        if (!strcmp(r.pools[i].kind, "exclusive")) exclusive += (int)r.pools[i].allocations;
    assert_int_equal(exclusive, 1);

    /* Views take no memory of their own. */
    cubec_buffer view;
    ASSERT_OK(cubec_buffer_view(d, bufs[1], 0, sizes[1] / 2, &view));
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_int_equal(r.bytes_in_use, total);

    /* Release every other buffer: bytes in use go down by exactly their sizes. One of them is
     * used by a queued copy: it goes when the work is done (at once on null, or after a sync). */
    ASSERT_OK(cubec_copy(d, s, bufs[2], 0, bufs[4], 0,
                         (sizes[2] < sizes[4] ? sizes[2] : sizes[4]) / 4 * 4));
    for (int i = 0; i < MANY; i += 2) {
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
        total -= sizes[i];
        live -= sizes[i] != 0;
    }
    ASSERT_OK(cubec_sync(d, s));
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    check_report_sums(&r);
    assert_int_equal(r.bytes_in_use, total);
    assert_int_equal(r.allocations, live);
    uint32_t pages_before = r.pages;

    /* Cleanup keeps the pages that hold live buffers. */
    ASSERT_OK(cubec_memory_cleanup(d, s));
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    check_report_sums(&r);
    assert_int_equal(r.bytes_in_use, total);
    assert_true(r.pages <= pages_before && r.pages >= 1);

    /* The rest: back to nothing in use; pages stay reserved until cleanup returns them. */
    ASSERT_OK(cubec_buffer_release(d, view));
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_int_equal(r.bytes_in_use, total); /* the view's parent still lives */
    for (int i = 1; i < MANY; i += 2)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    check_report_sums(&r);
    assert_int_equal(r.bytes_in_use, 0);
    assert_int_equal(r.allocations, 0);
    assert_int_equal(report_padding(&r), 0);
    ASSERT_OK(cubec_memory_cleanup(d, s));
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    check_report_sums(&r);
    assert_int_equal(r.pages, 0);
    assert_int_equal(r.bytes_reserved, 0);

    /* The device-wide report agrees. */
    char *json = NULL;
    ASSERT_OK(cubec_memory_report_json(d, &json));
    assert_non_null(strstr(json, "\"slots\""));
    assert_non_null(strstr(json, "\"bytes_in_use\": 0"));
    cubec_string_free(json);
    cubec_device_close(d);
}

/* ---- 7. a delayed device ------------------------------------------------------------------- */

#define DELAY_US 2000u

static void test_delayed_device_async_read(void **state)
{
    (void)state;
    nulldev n = open_null(0, DELAY_US);
    cubec_device *d = n.d;
    cubec_stream s = new_stream(d);
    uint32_t xs[FW], got[FW];
    pattern_words(xs, FW, 14);
    cubec_buffer x = make(&n, s, xs, sizeof xs, NULL);
    cubec_buffer y = make(&n, s, NULL, sizeof xs, NULL);
    ASSERT_OK(cubec_sync(d, s));

    memset(got, 0, sizeof got);
    uint64_t t0 = now_ns();
    ASSERT_OK(cubec_copy(d, s, x, 0, y, 0, sizeof xs));
    cubec_event *e = NULL;
    ASSERT_OK(cubec_read_async(d, s, y, 0, got, sizeof got, &e));
    assert_non_null(e);
    cubec_status q = cubec_event_query(e);
    uint64_t t1 = now_ns();
    if (q) {
        char msg[512];
        assert_int_equal(take_error(q, msg, sizeof msg, "query"), CUBEC_NOT_READY);
    } else if (t1 - t0 < DELAY_US * 1000ull) {
        fail_msg("cubec_event_query was ready %" PRIu64 " us after the copy was queued, with a "
                 "%u us delay",
                 (t1 - t0) / 1000, DELAY_US);
    }
    ASSERT_OK(cubec_event_wait(e));
    uint64_t t2 = now_ns();
    /* The copy's submission completes no sooner than the delay after it was made. */
    if (t2 - t0 < DELAY_US * 1000ull)
        fail_msg("the read finished %" PRIu64 " us after its copy was queued (delay %u us)",
                 (t2 - t0) / 1000, DELAY_US);
    if (memcmp(got, xs, sizeof xs)) fail_msg("the asynchronous read returned other bytes");
    ASSERT_OK(cubec_event_query(e));
    cubec_event_free(e);

    /* A blocking read waits for the delay too, and sees the copy. */
    uint32_t other[FW];
    pattern_words(other, FW, 15);
    ASSERT_OK(cubec_write(d, s, x, 0, other, sizeof other));
    t0 = now_ns();
    ASSERT_OK(cubec_copy(d, s, x, 0, y, 0, sizeof other));
    expect_bytes(d, s, y, 0, other, sizeof other, "y after a delayed copy");
    assert_true(now_ns() - t0 >= DELAY_US * 1000ull);
    ASSERT_OK(cubec_buffer_release(d, x));
    ASSERT_OK(cubec_buffer_release(d, y));
    cubec_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buffer_ops_against_shadow),
        cmocka_unit_test(test_ordering_across_streams),
        cmocka_unit_test(test_host_write_waits_for_queued_read_on_other_stream),
        cmocka_unit_test(test_lazy_write_waits_for_queued_work),
        cmocka_unit_test(test_read_async_ignores_later_write),
        cmocka_unit_test(test_check_of_empty_view_in_failed_range),
        cmocka_unit_test(test_profile_begin_survives_lost_drain),
        cmocka_unit_test(test_lost_submission_frees_memory),
        cmocka_unit_test(test_error_means_own_work_lost),
        cmocka_unit_test(test_lost_submission_taints_only_its_copies),
        cmocka_unit_test(test_skipped_launch_names_its_input),
        cmocka_unit_test(test_graph_state_machine),
        cmocka_unit_test(test_graph_lazy_write_dooms_capture),
        cmocka_unit_test(test_doom_keeps_the_root_cause),
        cmocka_unit_test(test_profiles),
        cmocka_unit_test(test_memory_report_follows_allocations),
        cmocka_unit_test(test_delayed_device_async_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
