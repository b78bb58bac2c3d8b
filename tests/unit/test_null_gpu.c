/* Unit tests of the null backend (src/gpu/null/), called through g->ops as the server will: the
 * memory it carries out copies and fills on is compared with a CPU reference, the timeline with
 * and without a delay, timestamps, reusable and one-time command buffers, the checks that turn a
 * server bug into an error, and a submission from a second thread while the first waits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/status.h"
#include "gpu/null/null_gpu.h"
#include "test_util.h"

#include <inttypes.h>
#include <pthread.h>
#include <time.h>

/* ---- helpers ------------------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_us(unsigned us)
{
    struct timespec ts = {.tv_sec = us / 1000000u, .tv_nsec = (long)(us % 1000000u) * 1000};
    nanosleep(&ts, NULL);
}

static gpu *open_null(uint32_t delay_us)
{
    gpu_open_desc desc = {.null_delay_us = delay_us};
    gpu *g = NULL;
    ASSERT_OK(null_gpu_open(&desc, &g));
    assert_non_null(g);
    return g;
}

static gpu_mem *mem_new(gpu *g, gpu_mem_kind kind, uint64_t size)
{
    gpu_mem *m = NULL;
    ASSERT_OK(g->ops->mem_create(g, kind, size, &m));
    assert_non_null(m);
    assert_int_equal(m->size, size);
    ASSERT_OK(g->ops->mem_map(g, m));
    assert_non_null(m->mapped);
    assert_int_equal((uintptr_t)m->mapped % 64, 0);
    return m;
}

static gpu_cmd *cmd_new(gpu *g, gpu_cmd_use use)
{
    gpu_cmd *c = NULL;
    ASSERT_OK(g->ops->cmd_create(g, use, 4, &c));
    assert_non_null(c);
    return c;
}

static void submit_one(gpu *g, gpu_cmd *c, uint64_t signal)
{
    gpu_submit_item item = {c, signal};
    ASSERT_OK(g->ops->submit(g, &item, 1));
}

static uint64_t timeline(gpu *g)
{
    uint64_t v = UINT64_MAX;
    ASSERT_OK(g->ops->timeline_value(g, &v));
    return v;
}

/* The smallest module vkCreateShaderModule would look at: the header. */
static const uint32_t spirv_header[5] = {0x07230203u, 0x00010000u, 0, 1, 0};

static gpu_pipeline *pipeline_new(gpu *g, uint32_t bindings, int info, uint32_t push)
{
    gpu_pipeline_desc d = {.spirv = spirv_header,
                           .words = 5,
                           .entry_point = "main",
                           .binding_count = bindings,
                           .info_buffer = info,
                           .push_size = push,
                           .name = "test_kernel"};
    gpu_pipeline *p = NULL;
    ASSERT_OK(g->ops->pipeline_create(g, &d, &p));
    assert_non_null(p);
    return p;
}

/* The CPU reference of vkCmdFillBuffer: the 32-bit pattern in host byte order. */
static void ref_fill(unsigned char *dst, uint64_t offset, uint64_t size, uint32_t pattern)
{
    for (uint64_t i = 0; i < size; i++)
        dst[offset + i] = (unsigned char)(pattern >> (8 * (i % 4)));
}

static void random_bytes(unsigned char *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)test_rand(&seed);
}

/* ---- enumeration, ops and caps -------------------------------------------------------------- */

static void test_enumeration(void **state)
{
    (void)state;
    uint32_t n = 0;
    ASSERT_OK(null_gpu_count(&n));
    assert_int_equal(n, 1);
    ASSERT_ERROR(null_gpu_count(NULL), CUBEC_INVALID_ARGUMENT, "out_count");

    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(null_gpu_peek(0, &info));
    assert_string_equal(info.name, "cubec null device");
    assert_int_equal(info.type, CUBEC_DEVICE_TYPE_CPU);
    assert_int_equal(info.unified_memory, 1);
    assert_int_equal(info.push_descriptors, 1);
    assert_int_equal(info.max_storage_buffer_range, 128u << 20);
    assert_int_equal(info.max_allocation_size, 1u << 30);
    assert_int_equal(info.storage_offset_alignment, 16);
    assert_int_equal(info.max_push_constants_size, 256);
    assert_int_equal(info.max_workgroup_count[0], 65535);
    assert_int_equal(info.max_workgroup_count[2], 65535);
    assert_int_equal(info.max_workgroup_size[0], 1024);
    assert_int_equal(info.max_workgroup_size[1], 1024);
    assert_int_equal(info.max_workgroup_size[2], 64);
    assert_int_equal(info.max_workgroup_invocations, 1024);
    assert_true(info.max_shared_memory_size > 0);
    assert_true(info.subgroup_size > 0);
    assert_true(info.device_local_heap_size > 0);
    assert_true(info.timestamp_period_ns == 1.0);
    assert_true(info.driver[0] != '\0');

    ASSERT_ERROR(null_gpu_peek(1, &info), CUBEC_INVALID_ARGUMENT, "index: 1");
    ASSERT_ERROR(null_gpu_peek(0, NULL), CUBEC_INVALID_ARGUMENT, "out");

    gpu *g = NULL;
    gpu_open_desc by_index = {.select_by_index = 1, .index = 1};
    ASSERT_ERROR(null_gpu_open(&by_index, &g), CUBEC_NOT_FOUND, "index 1");
    assert_null(g);
    gpu_open_desc by_name = {.name = "lavapipe"};
    ASSERT_ERROR(null_gpu_open(&by_name, &g), CUBEC_NOT_FOUND, "lavapipe");
    by_name.name = "null";
    ASSERT_OK(null_gpu_open(&by_name, &g));
    g->ops->destroy(g);
    g = NULL;
    ASSERT_OK(null_gpu_open(NULL, &g)); /* NULL desc: the defaults */
    assert_string_equal(g->info.name, "cubec null device");
    g->ops->destroy(g);
}

static void test_ops_and_caps(void **state)
{
    (void)state;
    gpu *g = open_null(0);
    const gpu_ops *o = g->ops;
    assert_string_equal(o->name, "null");
    /* Every entry but the optional cmd_recycle. */
#define HAS(f)                                                                                     \
    do {                                                                                           \
        if (!o->f) fail_msg("gpu_ops." #f " is NULL");                                             \
    } while (0)
    HAS(destroy);
    HAS(mem_create);
    HAS(mem_map);
    HAS(mem_invalidate);
    HAS(mem_destroy);
    HAS(pipeline_create);
    HAS(pipeline_destroy);
    HAS(cmd_create);
    HAS(cmd_destroy);
    HAS(cmd_begin);
    HAS(cmd_end);
    HAS(queries_create);
    HAS(queries_destroy);
    HAS(queries_host_reset);
    HAS(queries_read);
    HAS(submit);
    HAS(timeline_value);
    HAS(timeline_wait);
    HAS(timeline_signal);
    HAS(queue_idle);
    HAS(calibrate);
#undef HAS

    assert_int_equal(g->caps.unified, 1);
    assert_int_equal(g->caps.push_descriptors, 1);
    assert_int_equal(g->caps.timestamps, 1);
    assert_int_equal(g->caps.timestamp_bits, 64);
    assert_int_equal(g->caps.host_query_reset, 1);
    assert_int_equal(g->caps.calibrated_clock, 1);
    assert_int_equal(g->caps.physical_index, 0);
    assert_null(g->faults);
    cubec_device_info peeked = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(null_gpu_peek(0, &peeked));
    assert_memory_equal(&g->info, &peeked, sizeof peeked);
    assert_int_equal(timeline(g), 0);

    /* Memory of every kind, zeroed and 64-byte aligned, small and large (a large one is mapped
     * rather than allocated, ending at a guard page); too large and empty refused. Every byte is
     * written once after the check, so that a guard page inside the size would fault here. */
    gpu_mem *m = NULL;
    static const uint64_t sizes[] = {100, (3u << 20) + 100};
    for (int kind = GPU_MEM_DEVICE; kind <= GPU_MEM_READBACK; kind++) {
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            m = mem_new(g, (gpu_mem_kind)kind, sizes[k]);
            assert_int_equal(m->kind, kind);
            assert_int_equal(m->size, sizes[k]);
            assert_int_equal((uintptr_t)m->mapped % 64, 0);
            for (uint64_t i = 0; i < sizes[k]; i++)
                if (m->mapped[i]) fail_msg("byte %" PRIu64 " of %" PRIu64 " is not 0", i, sizes[k]);
            memset(m->mapped, 0x5a, sizes[k]);
            gpu_mem_invalidate(g, m, 0, m->size);
            o->mem_destroy(g, m);
        }
    }
    m = NULL;
    ASSERT_ERROR(o->mem_create(g, GPU_MEM_DEVICE, (1ull << 30) + 1, &m), CUBEC_OUT_OF_MEMORY,
                 "max_allocation_size");
    ASSERT_ERROR(o->mem_create(g, GPU_MEM_DEVICE, 0, &m), CUBEC_INVALID_ARGUMENT, "size 0");
    assert_null(m);
    o->destroy(g);

    /* The discrete paths: device memory is not host-visible, descriptor sets instead. */
    gpu_open_desc d = {.force_staging = 1, .no_push_descriptors = 1};
    ASSERT_OK(null_gpu_open(&d, &g));
    assert_int_equal(g->caps.unified, 0);
    assert_int_equal(g->caps.push_descriptors, 0);
    assert_int_equal(g->info.unified_memory, 0);
    assert_int_equal(g->info.push_descriptors, 0);
    ASSERT_OK(g->ops->mem_create(g, GPU_MEM_DEVICE, 64, &m));
    ASSERT_ERROR(g->ops->mem_map(g, m), CUBEC_UNSUPPORTED, "force_staging");
    assert_null(m->mapped);
    g->ops->mem_destroy(g, m);
    m = mem_new(g, GPU_MEM_UPLOAD, 64);
    g->ops->mem_destroy(g, m);
    g->ops->destroy(g);
}

/* ---- copies and fills against a CPU reference ------------------------------------------------ */

static void test_fill_and_copy(void **state)
{
    (void)state;
    gpu *g = open_null(0);
    const gpu_ops *o = g->ops;
    enum { SA = 4096, SB = 3000 };
    gpu_mem *a = mem_new(g, GPU_MEM_DEVICE, SA), *b = mem_new(g, GPU_MEM_READBACK, SB);
    unsigned char ref_a[SA], ref_b[SB];
    random_bytes(a->mapped, SA, 7);
    memcpy(ref_a, a->mapped, SA);
    memset(ref_b, 0, SB);

    gpu_cmd *c = cmd_new(g, GPU_CMD_ONCE);
    ASSERT_OK(o->cmd_begin(g, c));
    gpu_cmd_fill(c, a, 64, 512, 0xDEADBEEFu);
    ref_fill(ref_a, 64, 512, 0xDEADBEEFu);
    gpu_cmd_barrier(c, GPU_STAGE_TRANSFER, GPU_ACCESS_TRANSFER_WRITE, GPU_STAGE_TRANSFER,
                    GPU_ACCESS_TRANSFER_READ);
    gpu_cmd_copy(c, a, 3, b, 7, 1001); /* unaligned on both sides, across the fill */
    memmove(ref_b + 7, ref_a + 3, 1001);
    gpu_cmd_fill(c, b, 1200, 400, 0x01020304u);
    ref_fill(ref_b, 1200, 400, 0x01020304u);
    gpu_cmd_copy(c, b, 1201, a, 2501, 333);
    memmove(ref_a + 2501, ref_b + 1201, 333);
    gpu_cmd_copy(c, a, 0, a, 4000, 96); /* within one memory, not overlapping */
    memmove(ref_a + 4000, ref_a, 96);
    gpu_cmd_copy(c, b, SB - 5, a, SA - 5, 5); /* the last bytes of both */
    memmove(ref_a + SA - 5, ref_b + SB - 5, 5);
    ASSERT_OK(o->cmd_end(g, c));

    /* Recording runs nothing. */
    unsigned char before[SA];
    random_bytes(before, SA, 7);
    assert_memory_equal(a->mapped, before, SA);

    submit_one(g, c, 1);
    ASSERT_OK(o->timeline_wait(g, 1, 0));
    assert_int_equal(timeline(g), 1);
    gpu_mem_invalidate(g, a, 0, a->size);
    gpu_mem_invalidate(g, b, 0, b->size);
    assert_memory_equal(a->mapped, ref_a, SA);
    assert_memory_equal(b->mapped, ref_b, SB);

    o->cmd_destroy(g, c);
    o->mem_destroy(g, a);
    o->mem_destroy(g, b);
    o->destroy(g);
}

/* ---- timestamps and queries ----------------------------------------------------------------- */

static void test_timestamps(void **state)
{
    (void)state;
    gpu *g = open_null(0);
    const gpu_ops *o = g->ops;
    gpu_mem *m = mem_new(g, GPU_MEM_DEVICE, 1 << 20);
    gpu_queries *q = NULL;
    ASSERT_ERROR(o->queries_create(g, 0, &q), CUBEC_INVALID_ARGUMENT, "count 0");
    ASSERT_OK(o->queries_create(g, 4, &q));
    uint64_t ticks[4] = {0};
    ASSERT_ERROR(o->queries_read(g, q, 0, 1, ticks), CUBEC_NOT_READY, "query 0");
    o->queries_host_reset(g, q, 0, 4);

    uint64_t host_before = now_ns();
    gpu_cmd *c = cmd_new(g, GPU_CMD_ONCE);
    ASSERT_OK(o->cmd_begin(g, c));
    gpu_cmd_reset_queries(c, q, 0, 4);
    gpu_cmd_timestamp(c, q, 0, GPU_STAGE_TOP);
    gpu_cmd_fill(c, m, 0, 1 << 20, 0x55555555u);
    gpu_cmd_timestamp(c, q, 1, GPU_STAGE_BOTTOM);
    ASSERT_OK(o->cmd_end(g, c));
    submit_one(g, c, 1);
    ASSERT_OK(o->timeline_wait(g, 1, 0));
    ASSERT_OK(o->queries_read(g, q, 0, 2, ticks));
    assert_true(ticks[0] >= host_before);
    assert_true(ticks[1] >= ticks[0]);
    ASSERT_ERROR(o->queries_read(g, q, 2, 1, ticks + 2), CUBEC_NOT_READY, "query 2");

    /* Ticks are host ns: calibration samples one clock for both. */
    uint64_t cal_ticks = 0, cal_host = 0;
    assert_int_equal(o->calibrate(g, &cal_ticks, &cal_host), 1);
    assert_int_equal(cal_ticks, cal_host);
    assert_true(cal_ticks >= ticks[1]);

    /* A later submission stamps later. */
    sleep_us(1000);
    ASSERT_OK(o->cmd_begin(g, c));
    gpu_cmd_reset_queries(c, q, 2, 2);
    gpu_cmd_timestamp(c, q, 2, GPU_STAGE_TOP);
    gpu_cmd_timestamp(c, q, 3, GPU_STAGE_BOTTOM);
    ASSERT_OK(o->cmd_end(g, c));
    submit_one(g, c, 2);
    ASSERT_OK(o->timeline_wait(g, 2, 0));
    ASSERT_OK(o->queries_read(g, q, 0, 4, ticks));
    assert_true(ticks[2] > ticks[1] + 500000u);
    assert_true(ticks[3] >= ticks[2]);

    /* A host reset makes them unavailable again; out of range is refused. */
    o->queries_host_reset(g, q, 0, 1);
    ASSERT_ERROR(o->queries_read(g, q, 0, 1, ticks), CUBEC_NOT_READY, "query 0");
    ASSERT_OK(o->queries_read(g, q, 1, 3, ticks));
    ASSERT_ERROR(o->queries_read(g, q, 3, 2, ticks), CUBEC_INVALID_ARGUMENT, "of 4");

    o->cmd_destroy(g, c);
    o->queries_destroy(g, q);
    o->mem_destroy(g, m);
    o->destroy(g);
}

/* ---- the timeline ---------------------------------------------------------------------------- */

static void test_delayed_completion(void **state)
{
    (void)state;
    const uint64_t delay_ns = 2000u * 1000u;
    gpu *g = open_null(2000);
    const gpu_ops *o = g->ops;
    gpu_mem *m = mem_new(g, GPU_MEM_DEVICE, 256);
    gpu_cmd *c = cmd_new(g, GPU_CMD_ONCE);
    int seen_pending = 0;
    uint64_t value = 0;
    /* On a loaded machine the check right after submit may come late: then the value may be
     * reached, but never before the delay. A few tries see it pending. */
    for (int attempt = 0; attempt < 20 && !seen_pending; attempt++) {
        value++;
        ASSERT_OK(o->cmd_begin(g, c));
        gpu_cmd_fill(c, m, 0, 256, (uint32_t)value);
        ASSERT_OK(o->cmd_end(g, c));
        uint64_t t0 = now_ns();
        submit_one(g, c, value);
        uint64_t v = timeline(g);
        uint64_t t1 = now_ns();
        if (v >= value)
            assert_true(t1 - t0 >= delay_ns);
        else
            seen_pending = 1;
        /* Carried out at submission even though it completes later (null_gpu.c says why). */
        uint32_t word;
        memcpy(&word, m->mapped + 252, 4);
        assert_int_equal(word, (uint32_t)value);
        ASSERT_OK(o->timeline_wait(g, value, 0));
        assert_true(now_ns() - t0 >= delay_ns);
        assert_true(timeline(g) >= value);
    }
    assert_true(seen_pending);

    /* queue_idle waits for the delay too. */
    ASSERT_OK(o->cmd_begin(g, c));
    gpu_cmd_fill(c, m, 0, 4, 0);
    ASSERT_OK(o->cmd_end(g, c));
    uint64_t t0 = now_ns();
    submit_one(g, c, ++value);
    o->queue_idle(g);
    assert_true(now_ns() - t0 >= delay_ns);
    assert_int_equal(timeline(g), value);

    o->cmd_destroy(g, c);
    o->mem_destroy(g, m);
    o->destroy(g);
}

/* A long delay, ended from the host: what the submitter does when a submission fails. */
static void test_in_flight_and_host_signal(void **state)
{
    (void)state;
    gpu *g = open_null(10u * 1000u * 1000u); /* 10 s: never reached within the test */
    const gpu_ops *o = g->ops;
    gpu_mem *m = mem_new(g, GPU_MEM_DEVICE, 64);
    gpu_cmd *c = cmd_new(g, GPU_CMD_ONCE);
    ASSERT_OK(o->cmd_begin(g, c));
    gpu_cmd_fill(c, m, 0, 64, 1);
    ASSERT_OK(o->cmd_end(g, c));
    submit_one(g, c, 1);
    assert_int_equal(timeline(g), 0);
    ASSERT_ERROR(o->cmd_begin(g, c), CUBEC_INTERNAL, "in flight");

    ASSERT_OK(o->timeline_signal(g, 1));
    assert_int_equal(timeline(g), 1);
    ASSERT_OK(o->timeline_wait(g, 1, 0));
    ASSERT_OK(o->timeline_signal(g, 0)); /* lower: nothing changes */
    assert_int_equal(timeline(g), 1);
    ASSERT_OK(o->cmd_begin(g, c));
    gpu_cmd_fill(c, m, 0, 64, 2);
    ASSERT_OK(o->cmd_end(g, c));

    /* Signal values must increase, past what the host signalled too. */
    gpu_submit_item item = {c, 1};
    ASSERT_ERROR(o->submit(g, &item, 1), CUBEC_INTERNAL, "not above 1");
    submit_one(g, c, 2);
    ASSERT_OK(o->timeline_signal(g, 5));
    assert_int_equal(timeline(g), 5);
    o->queue_idle(g); /* everything submitted is reached: returns at once */
    item.signal = 5;
    ASSERT_OK(o->cmd_begin(g, c));
    ASSERT_OK(o->cmd_end(g, c));
    ASSERT_ERROR(o->submit(g, &item, 1), CUBEC_INTERNAL, "not above 5");

    o->cmd_destroy(g, c);
    o->mem_destroy(g, m);
    o->destroy(g);
}

/* ---- command buffers ------------------------------------------------------------------------ */

static void test_reusable_and_once(void **state)
{
    (void)state;
    gpu *g = open_null(0);
    const gpu_ops *o = g->ops;
    gpu_mem *a = mem_new(g, GPU_MEM_UPLOAD, 256), *b = mem_new(g, GPU_MEM_READBACK, 256);
    unsigned char expect[256];

    gpu_cmd *graph = cmd_new(g, GPU_CMD_REUSABLE);
    ASSERT_OK(o->cmd_begin(g, graph));
    gpu_cmd_copy(graph, a, 0, b, 0, 256);
    ASSERT_OK(o->cmd_end(g, graph));
    for (uint64_t replay = 1; replay <= 2; replay++) {
        memset(a->mapped, (int)replay, 256);
        submit_one(g, graph, replay);
        ASSERT_OK(o->timeline_wait(g, replay, 0));
        memset(expect, (int)replay, 256);
        assert_memory_equal(b->mapped, expect, 256);
    }

    /* A one-time command buffer runs once per recording; a refused submission runs nothing. */
    gpu_cmd *batch = cmd_new(g, GPU_CMD_ONCE);
    ASSERT_OK(o->cmd_begin(g, batch));
    gpu_cmd_fill(batch, b, 0, 256, 0x07070707u);
    ASSERT_OK(o->cmd_end(g, batch));
    submit_one(g, batch, 3);
    ASSERT_OK(o->timeline_wait(g, 3, 0));
    memset(b->mapped, 9, 256);
    gpu_submit_item again = {batch, 4};
    ASSERT_ERROR(o->submit(g, &again, 1), CUBEC_INTERNAL, "one-time");
    memset(expect, 9, 256);
    assert_memory_equal(b->mapped, expect, 256);
    assert_int_equal(timeline(g), 3);
    /* Nor does a list whose second item is refused. */
    gpu_submit_item two[2] = {{graph, 4}, {batch, 5}};
    ASSERT_ERROR(o->submit(g, two, 2), CUBEC_INTERNAL, "item 1");
    assert_memory_equal(b->mapped, expect, 256);
    ASSERT_OK(o->cmd_begin(g, batch));
    gpu_cmd_fill(batch, b, 0, 256, 0x07070707u);
    ASSERT_OK(o->cmd_end(g, batch));
    /* Both in one submission, in order: the graph's copy, then the fill. */
    ASSERT_OK(o->submit(g, two, 2));
    ASSERT_OK(o->timeline_wait(g, 5, 0));
    memset(expect, 7, 256);
    assert_memory_equal(b->mapped, expect, 256);
    assert_int_equal(timeline(g), 5);

    o->cmd_destroy(g, graph);
    o->cmd_destroy(g, batch);
    o->mem_destroy(g, a);
    o->mem_destroy(g, b);
    o->destroy(g);
}

static void test_bad_spirv(void **state)
{
    (void)state;
    gpu *g = open_null(0);
    const gpu_ops *o = g->ops;
    gpu_pipeline *p = NULL;
    gpu_pipeline_desc d = {.spirv = spirv_header, .words = 4, .name = "my_kernel"};
    ASSERT_ERROR(o->pipeline_create(g, &d, &p), CUBEC_INVALID_SPIRV, "my_kernel");
    const uint32_t swapped[5] = {0x03022307u, 0x00010000u, 0, 1, 0};
    d.spirv = swapped;
    d.words = 5;
    ASSERT_ERROR(o->pipeline_create(g, &d, &p), CUBEC_INVALID_SPIRV, "my_kernel");
    d.spirv = NULL;
    ASSERT_ERROR(o->pipeline_create(g, &d, &p), CUBEC_INVALID_SPIRV, "my_kernel");
    d.spirv = spirv_header;
    d.push_size = 260;
    ASSERT_ERROR(o->pipeline_create(g, &d, &p), CUBEC_INVALID_ARGUMENT, "push_size 260");
    d.push_size = 16;
    d.binding_count = 33;
    ASSERT_ERROR(o->pipeline_create(g, &d, &p), CUBEC_INVALID_ARGUMENT, "binding_count 33");
    assert_null(p);
    d.binding_count = 3;
    ASSERT_OK(o->pipeline_create(g, &d, &p));
    assert_non_null(p);
    o->pipeline_destroy(g, p);
    o->destroy(g);
}

/* Dispatches are recorded and do nothing; what Vulkan's validation would refuse is an error. */
static void test_recording(void **state)
{
    (void)state;
    gpu *g = open_null(0);
    const gpu_ops *o = g->ops;
    gpu_mem *m = mem_new(g, GPU_MEM_DEVICE, 4096), *meta = mem_new(g, GPU_MEM_UPLOAD, 256);
    random_bytes(m->mapped, 4096, 3);
    unsigned char before[4096];
    memcpy(before, m->mapped, sizeof before);
    gpu_pipeline *p = pipeline_new(g, 2, 1, 16);
    gpu_cmd *c = cmd_new(g, GPU_CMD_ONCE);

    gpu_binding bind[GPU_MAX_BINDINGS + 1];
    for (int i = 0; i <= GPU_MAX_BINDINGS; i++)
        bind[i] = (gpu_binding){m, 0, 64};
    gpu_binding info = {meta, 0, 256};
    /* Bindings Vulkan's validation would refuse: cmd_end names them (recording cannot fail). */
    struct {
        uint32_t n, offset;
        const char *needle;
    } bad[] = {{GPU_MAX_BINDINGS + 1, 0, "GPU_MAX_BINDINGS"},
               {3, 0, "binding_count 2"},
               {2, 8, "storage_offset_alignment"},
               {2, 4096 - 32, "outside"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_OK(o->cmd_begin(g, c));
        bind[1].offset = bad[i].offset;
        gpu_cmd_bind_pipeline(c, p);
        gpu_cmd_bind_buffers(c, p, bind, bad[i].n, &info);
        ASSERT_ERROR(o->cmd_end(g, c), CUBEC_INVALID_ARGUMENT, bad[i].needle);
    }
    bind[1].offset = 1024;

    ASSERT_OK(o->cmd_begin(g, c));
    gpu_cmd_bind_pipeline(c, p);
    gpu_cmd_bind_buffers(c, p, bind, 2, &info);
    uint32_t push[4] = {1, 2, 3, 4}, push20[5] = {1, 2, 3, 4, 5};
    gpu_cmd_push_constants(c, p, push, sizeof push);
    gpu_cmd_dispatch(c, 4, 1, 1);
    gpu_cmd_barrier(c, GPU_STAGE_COMPUTE, GPU_ACCESS_SHADER_WRITE, GPU_STAGE_INDIRECT,
                    GPU_ACCESS_INDIRECT_READ);
    gpu_cmd_dispatch_indirect(c, m, 16);
    ASSERT_OK(o->cmd_end(g, c));
    submit_one(g, c, 1);
    ASSERT_OK(o->timeline_wait(g, 1, 0));
    assert_memory_equal(m->mapped, before, sizeof before); /* no kernel ran */

    /* Each mistake is reported by cmd_end, and such a recording cannot be submitted. */
    struct {
        const char *needle;
        int which;
    } cases[] = {{"no pipeline bound", 0}, {"unaligned", 1},      {"out of range", 2},
                 {"overlapping", 3},       {"push_constants", 4}, {"query 4 of 2", 5},
                 {"too large", 6},         {"reset_queries", 7}};
    gpu_queries *q = NULL;
    ASSERT_OK(o->queries_create(g, 2, &q));
    uint64_t value = 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ASSERT_OK(o->cmd_begin(g, c));
        switch (cases[i].which) {
        case 0: gpu_cmd_dispatch(c, 1, 1, 1); break;
        case 1: gpu_cmd_fill(c, m, 0, 6, 0); break;
        case 2: gpu_cmd_copy(c, m, 4000, meta, 0, 100); break;
        case 3: gpu_cmd_copy(c, m, 0, m, 50, 100); break;
        case 4:
            gpu_cmd_bind_pipeline(c, p);
            /* 20 bytes of a pipeline that takes 16 (the bytes are copied when recorded). */
            gpu_cmd_push_constants(c, p, push20, sizeof push20);
            break;
        case 5: gpu_cmd_timestamp(c, q, 4, GPU_STAGE_TOP); break;
        case 6:
            gpu_cmd_bind_pipeline(c, p);
            gpu_cmd_dispatch(c, 65536, 1, 1);
            break;
        case 7: gpu_cmd_reset_queries(c, q, 1, 2); break;
        }
        gpu_cmd_fill(c, m, 0, 4, 0); /* later commands still record */
        cubec_status err = o->cmd_end(g, c);
        if (!err) fail_msg("case %zu: cmd_end succeeded", i);
        ASSERT_ERROR(err, CUBEC_INTERNAL, cases[i].needle);
        gpu_submit_item item = {c, value + 1};
        ASSERT_ERROR(o->submit(g, &item, 1), CUBEC_INTERNAL, "no good recording");
    }
    assert_memory_equal(m->mapped, before, sizeof before);

    /* The state rules of vkBegin/EndCommandBuffer. */
    ASSERT_OK(o->cmd_begin(g, c));
    ASSERT_ERROR(o->cmd_begin(g, c), CUBEC_INTERNAL, "already recording");
    gpu_submit_item item = {c, value + 1};
    ASSERT_ERROR(o->submit(g, &item, 1), CUBEC_INTERNAL, "still recording");
    ASSERT_OK(o->cmd_end(g, c));
    ASSERT_ERROR(o->cmd_end(g, c), CUBEC_INTERNAL, "not recording");
    gpu_cmd_fill(c, m, 0, 4, 0); /* after cmd_end */
    ASSERT_ERROR(o->submit(g, &item, 1), CUBEC_INTERNAL, "outside cmd_begin");
    assert_memory_equal(m->mapped, before, sizeof before);
    assert_int_equal(timeline(g), value);

    o->queries_destroy(g, q);
    o->cmd_destroy(g, c);
    o->pipeline_destroy(g, p);
    o->mem_destroy(g, m);
    o->mem_destroy(g, meta);
    o->destroy(g);
}

/* Recordings far beyond the first capacity grow, and the grown room is kept across cmd_begin. */
static void test_growth(void **state)
{
    (void)state;
    gpu *g = open_null(0);
    const gpu_ops *o = g->ops;
    enum { WORDS = 4096, FILLS = 5000 };
    gpu_mem *m = mem_new(g, GPU_MEM_DEVICE, WORDS * 4);
    gpu_pipeline *p = pipeline_new(g, 1, 0, 256);
    gpu_cmd *c = cmd_new(g, GPU_CMD_REUSABLE);
    unsigned char ref[WORDS * 4];
    uint32_t seed = 11;
    unsigned char push[256];
    memset(push, 0xAB, sizeof push);
    gpu_binding bind = {m, 0, 64};
    for (int round = 1; round <= 2; round++) {
        memset(ref, 0, sizeof ref);
        memset(m->mapped, 0, WORDS * 4);
        ASSERT_OK(o->cmd_begin(g, c));
        gpu_cmd_bind_pipeline(c, p);
        for (int i = 0; i < FILLS; i++) {
            uint32_t first = test_rand(&seed) % WORDS;
            uint32_t count = 1 + test_rand(&seed) % (WORDS - first);
            uint32_t pattern = test_rand(&seed);
            gpu_cmd_fill(c, m, first * 4u, count * 4u, pattern);
            ref_fill(ref, first * 4u, count * 4u, pattern);
            if (i % 10 == 0) {
                gpu_cmd_push_constants(c, p, push, sizeof push);
                gpu_cmd_bind_buffers(c, p, &bind, 1, NULL);
                gpu_cmd_dispatch(c, 1, 1, 1);
            }
        }
        ASSERT_OK(o->cmd_end(g, c));
        submit_one(g, c, (uint64_t)round);
        ASSERT_OK(o->timeline_wait(g, (uint64_t)round, 0));
        assert_memory_equal(m->mapped, ref, sizeof ref);
    }
    o->cmd_destroy(g, c);
    o->pipeline_destroy(g, p);
    o->mem_destroy(g, m);
    o->destroy(g);
}

/* null_noncoherent: a mapping is a host copy of the device's bytes. Only a flushed range reaches
 * the device, only an invalidated one is refreshed, and a submission that reads upload or
 * metadata bytes written without a flush is refused; pinned host memory stays coherent. */
static void test_noncoherent(void **state)
{
    (void)state;
    gpu_open_desc desc = {.null_noncoherent = 1};
    gpu *g = NULL;
    ASSERT_OK(null_gpu_open(&desc, &g));
    const gpu_ops *o = g->ops;
    enum { N = 512 };
    gpu_mem *up = mem_new(g, GPU_MEM_UPLOAD, N), *page = mem_new(g, GPU_MEM_DEVICE, N);
    gpu_mem *host = mem_new(g, GPU_MEM_HOST, N);
    assert_true(up->noncoherent);
    assert_true(page->noncoherent);
    assert_false(host->noncoherent);
    unsigned char ref[N], zero[N] = {0};
    random_bytes(ref, N, 21);
    gpu_cmd *c = cmd_new(g, GPU_CMD_REUSABLE);

    /* Written, not flushed: the copy would read stale bytes, so the submission is refused. */
    memcpy(up->mapped, ref, N);
    ASSERT_OK(o->cmd_begin(g, c));
    gpu_cmd_copy(c, up, 0, page, 0, N);
    ASSERT_OK(o->cmd_end(g, c));
    gpu_submit_item item = {c, 1};
    ASSERT_ERROR(o->submit(g, &item, 1), CUBEC_INTERNAL, "without gpu_mem_flush");

    /* Flushed in two ranges: the copy carries every byte; the page's mapping shows them only
     * after an invalidate of their range. */
    gpu_mem_flush(g, up, 0, 100);
    gpu_mem_flush(g, up, 100, N - 100);
    submit_one(g, c, 1);
    ASSERT_OK(o->timeline_wait(g, 1, 0));
    assert_memory_equal(page->mapped, zero, N);
    gpu_mem_invalidate(g, page, 0, 64);
    assert_memory_equal(page->mapped, ref, 64);
    assert_memory_equal(page->mapped + 64, zero, N - 64);
    gpu_mem_invalidate(g, page, 64, N - 64);
    assert_memory_equal(page->mapped, ref, N);

    /* A host write that is not flushed is lost at the next invalidate, as a cache line is. */
    memset(page->mapped, 0x11, 16);
    gpu_mem_invalidate(g, page, 0, N);
    assert_memory_equal(page->mapped, ref, N);

    /* Metadata bound to a launch is checked like a copy's source. */
    gpu_mem *meta = mem_new(g, GPU_MEM_METADATA, 256);
    gpu_pipeline *p = pipeline_new(g, 1, 1, 0);
    gpu_binding bind = {page, 0, 64}, info = {meta, 0, 256};
    memset(meta->mapped, 0x22, 256);
    ASSERT_OK(o->cmd_begin(g, c));
    gpu_cmd_bind_pipeline(c, p);
    gpu_cmd_bind_buffers(c, p, &bind, 1, &info);
    gpu_cmd_dispatch(c, 1, 1, 1);
    ASSERT_OK(o->cmd_end(g, c));
    item.signal = 2;
    ASSERT_ERROR(o->submit(g, &item, 1), CUBEC_INTERNAL, "metadata memory");
    gpu_mem_flush(g, meta, 0, 256);
    submit_one(g, c, 2);
    ASSERT_OK(o->timeline_wait(g, 2, 0));

    o->cmd_destroy(g, c);
    o->pipeline_destroy(g, p);
    o->mem_destroy(g, meta);
    o->mem_destroy(g, up);
    o->mem_destroy(g, page);
    o->mem_destroy(g, host);
    o->destroy(g);
}

/* ---- threads --------------------------------------------------------------------------------- */

typedef struct submitter_arg {
    gpu *g;
    gpu_mem *m;
    uint32_t submissions;
    unsigned start_delay_us;
    uint64_t host_signal; /* then signalled from the host; 0: none */
} submitter_arg;

/* Submits from a second thread, as the server's submitter does, with its own command buffer. */
/* null_heap_bytes caps device memory like a full driver heap: a page that would pass the cap is
 * refused with CUBEC_OUT_OF_MEMORY naming the sizes, staging memory is not counted, and memory
 * freed goes back under the cap. */
static void test_heap_cap(void **state)
{
    (void)state;
    const uint64_t cap = 10000;
    gpu_open_desc desc = {.null_heap_bytes = cap};
    gpu *g = NULL;
    ASSERT_OK(null_gpu_open(&desc, &g));
    assert_int_equal(g->info.device_local_heap_size, cap);
    gpu_mem *a = mem_new(g, GPU_MEM_DEVICE, 6000);
    gpu_mem *b = mem_new(g, GPU_MEM_DEVICE, cap - 6000); /* exactly the cap */
    gpu_mem *up = mem_new(g, GPU_MEM_UPLOAD, 2 * cap);   /* not device memory */
    gpu_mem *m = NULL;
    ASSERT_ERROR(g->ops->mem_create(g, GPU_MEM_DEVICE, 1, &m), CUBEC_OUT_OF_MEMORY,
                 "1 bytes of device memory would pass the heap cap of 10000 bytes");
    assert_null(m);
    g->ops->mem_destroy(g, a);
    ASSERT_ERROR(g->ops->mem_create(g, GPU_MEM_DEVICE, 6001, &m), CUBEC_OUT_OF_MEMORY,
                 "(CUBEC_NULL_HEAP_BYTES; 4000 bytes granted)");
    a = mem_new(g, GPU_MEM_DEVICE, 6000);
    g->ops->mem_destroy(g, a);
    g->ops->mem_destroy(g, b);
    g->ops->mem_destroy(g, up);
    g->ops->destroy(g);
}

static void *submitter(void *p)
{
    submitter_arg *a = p;
    const gpu_ops *o = a->g->ops;
    sleep_us(a->start_delay_us); /* the main thread is waiting by then */
    gpu_cmd *c = NULL;
    cubec_status err = o->cmd_create(a->g, GPU_CMD_ONCE, 0, &c);
    for (uint32_t i = 1; i <= a->submissions && !err; i++) {
        if (i > 1) err = o->timeline_wait(a->g, i - 1, 0); /* the recording is free again */
        if (!err) err = o->cmd_begin(a->g, c);
        if (err) break;
        gpu_cmd_fill(c, a->m, 0, 64, i);
        err = o->cmd_end(a->g, c);
        gpu_submit_item item = {c, i};
        if (!err) err = o->submit(a->g, &item, 1);
    }
    if (!err && a->host_signal) err = o->timeline_signal(a->g, a->host_signal);
    if (c) {
        o->queue_idle(a->g);
        o->cmd_destroy(a->g, c);
    }
    return err;
}

static void wait_while_another_thread_submits(uint32_t delay_us)
{
    gpu *g = open_null(delay_us);
    gpu_mem *m = mem_new(g, GPU_MEM_DEVICE, 64);
    submitter_arg arg = {g, m, 100, 20000, 150};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, submitter, &arg), 0);
    ASSERT_OK(g->ops->timeline_wait(g, 1, 0)); /* before the first submission */
    ASSERT_OK(g->ops->timeline_wait(g, 100, 0));
    /* The last fill: no submission writes the memory after it. */
    uint32_t word;
    memcpy(&word, m->mapped, 4);
    assert_int_equal(word, 100);
    ASSERT_OK(g->ops->timeline_wait(g, 150, 0)); /* reached by the host signal */
    void *result = NULL;
    assert_int_equal(pthread_join(t, &result), 0);
    ASSERT_OK((cubec_status)result);
    assert_int_equal(timeline(g), 150);
    g->ops->mem_destroy(g, m);
    g->ops->destroy(g);
}

static void test_submit_from_another_thread(void **state)
{
    (void)state;
    wait_while_another_thread_submits(0);
    wait_while_another_thread_submits(300);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enumeration),
        cmocka_unit_test(test_ops_and_caps),
        cmocka_unit_test(test_fill_and_copy),
        cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_delayed_completion),
        cmocka_unit_test(test_in_flight_and_host_signal),
        cmocka_unit_test(test_reusable_and_once),
        cmocka_unit_test(test_bad_spirv),
        cmocka_unit_test(test_recording),
        cmocka_unit_test(test_growth),
        cmocka_unit_test(test_heap_cap),
        cmocka_unit_test(test_noncoherent),
        cmocka_unit_test(test_submit_from_another_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
