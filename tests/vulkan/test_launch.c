/* End-to-end launches on the default device with validation on: every result is compared with a
 * reference computed here on the CPU. */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char saxpy_src[] = "#version 450\n"
                                "layout(local_size_x = 64) in;\n"
                                "layout(std430, binding = 0) readonly buffer X { float x[]; };\n"
                                "layout(std430, binding = 1) buffer Y { float y[]; };\n"
                                "CUBEC_INFO(uint n; float a;)\n"
                                "void main() {\n"
                                "  uint stride = gl_NumWorkGroups.x * 64u;\n"
                                "  for (uint i = gl_GlobalInvocationID.x; i < info.n; i += stride) "
                                "y[i] = info.a * x[i] + y[i];\n"
                                "}\n";

typedef struct saxpy_info {
    uint32_t n;
    float a;
} saxpy_info;

static void test_saxpy_chain(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    enum { N = 10000, ROUNDS = 50 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *ref = malloc(N * sizeof *ref);
    uint32_t seed = 1;
    for (int i = 0; i < N; i++) {
        x[i] = test_randf(&seed);
        y[i] = ref[i] = test_randf(&seed);
    }
    cubec_buffer bx, by;
    ASSERT_OK(cubec_buffer_from(d, 0, x, N * sizeof *x, &bx));
    ASSERT_OK(cubec_buffer_from(d, 0, y, N * sizeof *y, &by));
    cubec_kernel k;
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "saxpy", .glsl = saxpy_src};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.binding_count, 2);
    assert_int_equal(ki.access[0], CUBEC_ACCESS_READ);
    assert_int_equal(ki.access[1], CUBEC_ACCESS_READ_WRITE);
    assert_int_equal(ki.info_size, sizeof(saxpy_info));
    /* A dependent chain: each launch reads what the previous one wrote (crosses tasks_max). */
    for (int r = 0; r < ROUNDS; r++) {
        saxpy_info info = {N, 0.5f + (float)r * 0.01f};
        cubec_buffer bufs[2] = {bx, by};
        cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                                .kernel = k,
                                .buffers = bufs,
                                .buffer_count = 2,
                                .info = &info,
                                .info_size = sizeof info,
                                .groups = {16, 1, 1}};
        ASSERT_OK(cubec_launch(d, 0, &ld));
        for (int i = 0; i < N; i++)
            ref[i] = info.a * x[i] + ref[i];
    }
    ASSERT_OK(cubec_read(d, 0, by, 0, y, N * sizeof *y));
    for (int i = 0; i < N; i++)
        assert_float_equal(y[i], ref[i], 1e-4f * (1 + fabsf(ref[i])));
    /* Same source again: same identity, no second compilation. */
    cubec_kernel k2;
    ASSERT_OK(cubec_kernel_create(d, &kd, &k2));
    cubec_kernel_info ki2 = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k2, &ki2));
    assert_true(ki2.hash == ki.hash);
    assert_true(k2.id != k.id);
    ASSERT_OK(cubec_kernel_destroy(d, k2));
    ASSERT_OK(cubec_buffer_release(d, bx));
    ASSERT_OK(cubec_buffer_release(d, by));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    free(x);
    free(y);
    free(ref);
    test_device_close(d);
}

static const char scale_src[] = "#version 450\n"
                                "layout(local_size_x = 32) in;\n"
                                "layout(std430, binding = 0) buffer B { uint v[]; };\n"
                                "CUBEC_INFO(uint mul;)\n"
                                "void main() { v[gl_GlobalInvocationID.x] *= info.mul; }\n";

/* Independent launches on disjoint views of one buffer, then an indirect launch whose group
 * count was written by a fill. */
static void test_views_and_indirect(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info di = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &di));
    uint64_t part = di.storage_offset_alignment > 128 ? di.storage_offset_alignment : 128;
    enum { PARTS = 8 };
    uint32_t words = (uint32_t)(part / 4);
    uint32_t *host = malloc(part * PARTS), *ref = malloc(part * PARTS);
    for (uint32_t i = 0; i < words * PARTS; i++)
        host[i] = ref[i] = i + 1;
    cubec_buffer whole;
    ASSERT_OK(cubec_buffer_from(d, 0, host, part * PARTS, &whole));
    cubec_kernel k;
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "scale", .glsl = scale_src};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    for (uint32_t p = 0; p < PARTS; p++) {
        cubec_buffer view;
        ASSERT_OK(cubec_buffer_view(d, whole, p * part, part, &view));
        uint32_t mul = p + 2;
        cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                                .kernel = k,
                                .buffers = &view,
                                .buffer_count = 1,
                                .info = &mul,
                                .info_size = 4,
                                .groups = {words / 32, 1, 1}};
        ASSERT_OK(cubec_launch(d, 0, &ld));
        /* The view may be released at once: queued work keeps the memory alive. */
        ASSERT_OK(cubec_buffer_release(d, view));
        for (uint32_t i = 0; i < words; i++)
            ref[p * words + i] *= mul;
    }
    /* Indirect: counts {words/32 of part 0, 1, 1} written on the device by a fill. */
    cubec_buffer counts;
    ASSERT_OK(cubec_buffer_create(d, 0, 16, &counts));
    ASSERT_OK(cubec_fill(d, 0, counts, 0, 16, 1));
    ASSERT_OK(cubec_fill(d, 0, counts, 0, 4, words / 32));
    uint32_t mul = 3;
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = &whole,
                            .buffer_count = 1,
                            .info = &mul,
                            .info_size = 4,
                            .indirect = counts};
    ASSERT_OK(cubec_launch(d, 0, &ld));
    for (uint32_t i = 0; i < words; i++)
        ref[i] *= 3;
    ASSERT_OK(cubec_read(d, 0, whole, 0, host, part * PARTS));
    assert_memory_equal(host, ref, part * PARTS);
    ASSERT_OK(cubec_buffer_release(d, whole));
    ASSERT_OK(cubec_buffer_release(d, counts));
    free(host);
    free(ref);
    test_device_close(d);
}

/* Copies (vec4 and word paths, at odd offsets), fills, async reads, partial writes. */
static void test_copy_fill_async(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    enum { N = 1 << 16 };
    uint32_t *a = malloc(N * 4), *b = malloc(N * 4), *ref = malloc(N * 4);
    for (uint32_t i = 0; i < N; i++)
        a[i] = i * 2654435761u;
    cubec_buffer ba, bb;
    ASSERT_OK(cubec_buffer_from(d, 0, a, N * 4, &ba));
    ASSERT_OK(cubec_buffer_create(d, 0, N * 4, &bb));
    ASSERT_OK(cubec_fill(d, 0, bb, 0, N * 4, 0xdeadbeefu));
    for (uint32_t i = 0; i < N; i++)
        ref[i] = 0xdeadbeefu;
    ASSERT_OK(cubec_copy(d, 0, ba, 0, bb, 0, 4096 * 4)); /* aligned: vec4 path */
    memcpy(ref, a, 4096 * 4);
    ASSERT_OK(cubec_copy(d, 0, ba, 4, bb, 8192 * 4 + 8, 1001 * 4)); /* odd: word path */
    memcpy(ref + 8192 + 2, a + 1, 1001 * 4);
    uint32_t patch[3] = {7, 8, 9};
    ASSERT_OK(cubec_write(d, 0, bb, 100 * 4, patch, sizeof patch));
    memcpy(ref + 100, patch, sizeof patch);
    cubec_event *ev;
    ASSERT_OK(cubec_read_async(d, 0, bb, 0, b, N * 4, &ev));
    ASSERT_OK(cubec_event_wait(ev));
    cubec_event_free(ev);
    assert_memory_equal(b, ref, N * 4);
    /* A partial read at an offset. */
    uint32_t part[5];
    ASSERT_OK(cubec_read(d, 0, bb, 8192 * 4 + 8, part, sizeof part));
    assert_memory_equal(part, a + 1, sizeof part);
    ASSERT_OK(cubec_sync(d, 0));
    ASSERT_OK(cubec_buffer_release(d, ba));
    ASSERT_OK(cubec_buffer_release(d, bb));
    free(a);
    free(b);
    free(ref);
    test_device_close(d);
}

/* Metadata too large for push constants goes through a buffer, transparently. */
static const char big_info_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) writeonly buffer O { float o[]; };\n"
    "CUBEC_INFO(float coef[80];)\n"
    "void main() { uint i = gl_GlobalInvocationID.x; o[i] = info.coef[i % 80u] * 2.0; }\n";

static void test_big_info(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info di = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &di));
    cubec_kernel k;
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "big_info", .glsl = big_info_src};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.info_size, 320);
    assert_int_equal(ki.info_in_push_constants, 320 <= di.max_push_constants_size);
    cubec_buffer out;
    ASSERT_OK(cubec_buffer_create(d, 0, 256 * 4, &out));
    for (int round = 0; round < 3; round++) {
        float coef[80];
        for (int i = 0; i < 80; i++)
            coef[i] = (float)(i * (round + 1));
        cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                                .kernel = k,
                                .buffers = &out,
                                .buffer_count = 1,
                                .info = coef,
                                .info_size = sizeof coef,
                                .groups = {4, 1, 1}};
        ASSERT_OK(cubec_launch(d, 0, &ld));
        float host[256];
        ASSERT_OK(cubec_read(d, 0, out, 0, host, sizeof host));
        for (int i = 0; i < 256; i++)
            assert_float_equal(host[i], coef[i % 80] * 2.0f, 0.0f);
    }
    ASSERT_OK(cubec_buffer_release(d, out));
    test_device_close(d);
}

/* The metadata block keeps std430 offsets in every form ([kernel] metadata = push, buffer or
 * uniform): a vec3 followed by a float packs into 16 bytes and a uint array has a 4-byte stride
 * (std140, a uniform block's default, would put the array at 16-byte strides). Launches of one
 * batch with equal metadata share a metadata slice in the buffer forms; the same metadata
 * again after a different block, from another kernel, across batches and in a graph must still
 * reach each launch as given. */
static const char layout_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) buffer O { float o[]; };\n"
    "CUBEC_INFO(vec3 v; float s; uint k[3];)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < 64u) o[i] = o[i] * info.s + info.v[i % 3u] + float(info.k[i % 3u]);\n"
    "}\n";

typedef struct layout_info {
    float v[3];
    float s;
    uint32_t k[3];
} layout_info;

static void layout_launch(cubec_device *d, cubec_stream s, cubec_kernel k, cubec_buffer b,
                          const layout_info *info, float *ref)
{
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = &b,
                            .buffer_count = 1,
                            .info = info,
                            .info_size = sizeof *info,
                            .groups = {1, 1, 1}};
    ASSERT_OK(cubec_launch(d, s, &ld));
    for (int i = 0; i < 64; i++)
        ref[i] = ref[i] * info->s + info->v[i % 3] + (float)info->k[i % 3];
}

static void test_metadata_layout_and_reuse(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k1, k2;
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "layout", .glsl = layout_src};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k1));
    /* The same source under another define: a second pipeline reading the same block. */
    cubec_define other = {"SECOND", "1"};
    cubec_kernel_desc kd2 = {.struct_size = sizeof(cubec_kernel_desc),
                             .name = "layout2",
                             .glsl = layout_src,
                             .defines = &other,
                             .define_count = 1};
    ASSERT_OK(cubec_kernel_create(d, &kd2, &k2));
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k1, &ki));
    assert_int_equal(ki.info_size, sizeof(layout_info));
    float host[64], ref[64];
    for (int i = 0; i < 64; i++)
        host[i] = ref[i] = (float)(i % 7);
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(d, 0, host, sizeof host, &b));
    const layout_info a = {{1, 2, 3}, 0.5f, {10, 20, 30}};
    const layout_info c = {{-1, 0.25f, 4}, 2.0f, {1, 2, 3}};
    /* Values stay bounded (three halvings, one doubling a round). */
    for (int round = 0; round < 40; round++) {
        layout_launch(d, 0, k1, b, &a, ref); /* a, a, a: one slice within a batch */
        layout_launch(d, 0, k1, b, &a, ref);
        layout_launch(d, 0, k2, b, &a, ref); /* another kernel, same bytes */
        layout_launch(d, 0, k1, b, &c, ref); /* different metadata */
        layout_launch(d, 0, k1, b, &a, ref); /* back to the first */
        if (round % 8 == 7) {
            /* Mid-sequence reads end batches; the next launch with the same metadata belongs
             * to a new batch. */
            ASSERT_OK(cubec_read(d, 0, b, 0, host, sizeof host));
            for (int i = 0; i < 64; i++)
                assert_float_equal(host[i], ref[i], 1e-3f * fabsf(ref[i]) + 1e-3f);
        }
    }
    /* The same launches in a graph: its metadata lives with the graph. */
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(d, &s));
    ASSERT_OK(cubec_sync(d, 0));
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(cubec_graph_begin(d, s));
    float scratch[64];
    memcpy(scratch, ref, sizeof scratch);
    layout_launch(d, s, k1, b, &a, scratch);
    layout_launch(d, s, k2, b, &a, scratch);
    layout_launch(d, s, k1, b, &c, scratch);
    cubec_graph g;
    ASSERT_OK(cubec_graph_end(d, s, &g));
    for (int r = 0; r < 3; r++) {
        ASSERT_OK(cubec_graph_replay(d, s, g));
        for (int i = 0; i < 64; i++) {
            ref[i] = ref[i] * a.s + a.v[i % 3] + (float)a.k[i % 3];
            ref[i] = ref[i] * a.s + a.v[i % 3] + (float)a.k[i % 3];
            ref[i] = ref[i] * c.s + c.v[i % 3] + (float)c.k[i % 3];
        }
    }
    ASSERT_OK(cubec_read(d, s, b, 0, host, sizeof host));
    for (int i = 0; i < 64; i++)
        assert_float_equal(host[i], ref[i], 1e-3f * fabsf(ref[i]) + 1e-3f);
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    ASSERT_OK(cubec_buffer_release(d, b));
    test_device_close(d);
}

/* [device] queue_family: a family the device lacks is refused at open naming the value; an
 * explicit compute family opens and runs launches like the chosen one. */
static void test_queue_family_choice(void **state)
{
    (void)state;
    setenv("CUBEC_QUEUE_FAMILY", "31", 1);
    cubec_device_desc desc = CUBEC_DEVICE_DESC_INIT;
    cubec_device *d = NULL;
    cubec_status st = cubec_device_open(&desc, &d);
    assert_int_equal(cubec_status_code(st), CUBEC_INVALID_ARGUMENT);
    assert_non_null(strstr(cubec_status_message(st), "queue_family = 31"));
    assert_null(d);
    cubec_status_free(st);
    setenv("CUBEC_QUEUE_FAMILY", "0", 1); /* lavapipe's one family, and the H200's universal one */
    d = test_device_open();
    unsetenv("CUBEC_QUEUE_FAMILY");
    cubec_kernel k;
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "layout", .glsl = layout_src};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    float host[64], ref[64];
    for (int i = 0; i < 64; i++)
        host[i] = ref[i] = (float)i;
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(d, 0, host, sizeof host, &b));
    const layout_info a = {{1, 2, 3}, 0.5f, {10, 20, 30}};
    for (int r = 0; r < 3; r++)
        layout_launch(d, 0, k, b, &a, ref);
    ASSERT_OK(cubec_read(d, 0, b, 0, host, sizeof host));
    for (int i = 0; i < 64; i++)
        assert_float_equal(host[i], ref[i], 1e-3f * fabsf(ref[i]) + 1e-3f);
    ASSERT_OK(cubec_buffer_release(d, b));
    test_device_close(d);
}

/* Released memory is reused and reported; cleanup returns empty pages. */
static void test_memory_report(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_buffer b[16];
    uint64_t total = 0;
    for (int i = 0; i < 16; i++) {
        uint64_t size = 1000u * (uint64_t)(i + 1);
        ASSERT_OK(cubec_buffer_create(d, 0, size, &b[i]));
        total += size;
    }
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, 0, &r));
    assert_int_equal(r.allocations, 16);
    assert_int_equal(r.bytes_in_use, total);
    assert_true(r.bytes_reserved >= total);
    assert_true(r.pages >= 1);
    for (int i = 0; i < 16; i++)
        ASSERT_OK(cubec_buffer_release(d, b[i]));
    ASSERT_OK(cubec_memory_report_get(d, 0, &r));
    assert_int_equal(r.allocations, 0);
    assert_int_equal(r.bytes_in_use, 0);
    ASSERT_OK(cubec_memory_cleanup(d, 0));
    ASSERT_OK(cubec_memory_report_get(d, 0, &r));
    assert_int_equal(r.pages, 0);
    assert_int_equal(r.bytes_reserved, 0);
    /* The buffer pools, then the runtime's rings, each named. */
    int metadata = 0, sliced = 0;
    for (uint32_t i = 0; i < r.pool_count; i++) {
        metadata += strcmp(r.pools[i].kind, "metadata") == 0;
        sliced += strcmp(r.pools[i].kind, "sliced") == 0;
        assert_true(r.pools[i].kind[0] != 0);
    }
    assert_int_equal(metadata, 1);
    assert_true(sliced >= 1);
    test_device_close(d);
}

/* Transfers bigger than a staging chunk (16 MiB) and a copy across them, at an odd size. */
static void test_large_transfer(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    const uint64_t n = (40u << 20) / 4 + 3; /* words */
    uint32_t *src = malloc(n * 4), *dst = malloc(n * 4);
    uint32_t seed = 7;
    for (uint64_t i = 0; i < n; i++)
        src[i] = test_rand(&seed);
    cubec_buffer a, b;
    ASSERT_OK(cubec_buffer_from(d, 0, src, n * 4, &a));
    ASSERT_OK(cubec_buffer_create(d, 0, n * 4, &b));
    ASSERT_OK(cubec_copy(d, 0, a, 0, b, 0, n * 4));
    memset(dst, 0, n * 4);
    ASSERT_OK(cubec_read(d, 0, b, 0, dst, n * 4));
    assert_memory_equal(dst, src, n * 4);
    ASSERT_OK(cubec_buffer_release(d, a));
    ASSERT_OK(cubec_buffer_release(d, b));
    free(src);
    free(dst);
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_saxpy_chain),
        cmocka_unit_test(test_views_and_indirect),
        cmocka_unit_test(test_copy_fill_async),
        cmocka_unit_test(test_big_info),
        cmocka_unit_test(test_memory_report),
        cmocka_unit_test(test_large_transfer),
        cmocka_unit_test(test_metadata_layout_and_reuse),
        cmocka_unit_test(test_queue_family_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
