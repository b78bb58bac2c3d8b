/* The WebGPU backend (src/gpu/webgpu/, docs/device.md "The WebGPU backend") end to end through
 * the public API, on the implementation tests/webgpu/CMakeLists.txt points CUBEC_WEBGPU_LIBRARY
 * at (wgpu-native on lavapipe here): kernels against CPU references, two tensors of one pooled
 * page read and written by one dispatch (WebGPU's usage rule), pattern fills (a kernel of the
 * backend's own), copies, a graph replayed (re-encoded), profiles timed by device timestamps at
 * each of their placements (and host-measured without them), and what cannot map refused by
 * name; and, at the backend's seam, queue writes made while another thread submits. Skipped, by
 * name, where the library does not load. */
#include "launch_util.h"
#include "test_flags.h"
#include "test_util.h"
#include "uint_kernels.h"
#include "webgpu_open.h"

#include "base/clock.h"
#include "gpu/gpu.h"
#include "gpu/webgpu/wg_internal.h"
#include "server/device.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 1024u

/* o[i] = a[i] * mul + b[i] with {n, mul} in push constants: metadata as immediates. */
static const char saxpy_src[] = "#version 450\n"
                                "layout(local_size_x = 64) in;\n"
                                "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
                                "layout(std430, binding = 1) readonly buffer B { uint b[]; };\n"
                                "layout(std430, binding = 2) writeonly buffer O { uint o[]; };\n"
                                "layout(push_constant) uniform P { uint n; uint mul; } pc;\n"
                                "void main() {\n"
                                "    uint i = gl_GlobalInvocationID.x;\n"
                                "    if (i < pc.n) o[i] = a[i] * pc.mul + b[i];\n"
                                "}\n";

static cubec_launch_desc saxpy_launch(cubec_kernel k, const cubec_buffer *bufs, const void *info)
{
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = bufs;
    ld.buffer_count = 3;
    ld.info = info;
    ld.info_size = 8;
    ld.groups[0] = N / 64;
    ld.groups[1] = ld.groups[2] = 1;
    return ld;
}

static void test_kernel_matches_cpu(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    cubec_kernel k = make_kernel(d, "saxpy", saxpy_src);
    uint32_t a[N], b[N], want[N], zero[N] = {0};
    uint32_t seed = 5;
    for (uint32_t i = 0; i < N; i++) {
        a[i] = test_rand(&seed) % 100000u;
        b[i] = test_rand(&seed);
    }
    cubec_buffer bufs[3];
    ASSERT_OK(cubec_buffer_from(d, 0, a, sizeof a, &bufs[0]));
    ASSERT_OK(cubec_buffer_from(d, 0, b, sizeof b, &bufs[1]));
    ASSERT_OK(cubec_buffer_from(d, 0, zero, sizeof zero, &bufs[2]));
    /* Several launches with different metadata, the last one counts: immediates per launch. */
    for (uint32_t mul = 1; mul <= 5; mul++) {
        uint32_t info[2] = {N - mul, mul};
        cubec_launch_desc ld = saxpy_launch(k, bufs, info);
        ASSERT_OK(cubec_launch(d, 0, &ld));
    }
    /* Word i holds the last launch whose n covered it (mul = m covers i < N - m). */
    for (uint32_t i = 0; i < N; i++) {
        want[i] = 0;
        for (uint32_t mul = 1; mul <= 5; mul++)
            if (i < N - mul) want[i] = a[i] * mul + b[i];
    }
    expect_range_in(d, 0, bufs[2], N, 0, N, want, "saxpy on webgpu");
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    cubec_device_close(d);
}

/* Views of one buffer (so of one WGPUBuffer) bound read-only and writable in one dispatch: the
 * backend declares every storage binding read_write, so WebGPU's rule against a buffer that is
 * both in one usage scope is not broken (a validation error would fail the launch). */
static void test_one_page_read_and_written(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    uint64_t part = (N * 4u + info.storage_offset_alignment - 1) / info.storage_offset_alignment *
                    info.storage_offset_alignment;
    cubec_kernel k = make_kernel(d, "saxpy", saxpy_src);
    uint32_t *host = calloc(3 * part / 4, 4);
    assert_non_null(host);
    uint32_t seed = 9;
    for (uint32_t i = 0; i < N; i++) {
        host[i] = test_rand(&seed) % 1000u;
        host[part / 4 + i] = test_rand(&seed) % 1000u;
    }
    cubec_buffer whole, v[3];
    ASSERT_OK(cubec_buffer_from(d, 0, host, 3 * part, &whole));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_view(d, whole, (uint64_t)i * part, N * 4u, &v[i]));
    uint32_t pc[2] = {N, 3};
    cubec_launch_desc ld = saxpy_launch(k, v, pc);
    ASSERT_OK(cubec_launch(d, 0, &ld));
    uint32_t want[N];
    for (uint32_t i = 0; i < N; i++)
        want[i] = host[i] * 3u + host[part / 4 + i];
    expect_range_in(d, 0, v[2], N, 0, N, want, "a view written beside the views read");
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_release(d, v[i]));
    ASSERT_OK(cubec_buffer_release(d, whole));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    free(host);
    cubec_device_close(d);
}

/* Fills with a pattern (WebGPU clears only to zero: the backend's fill kernel), zero fills and
 * copies, at offsets inside a buffer, against the host's model of the bytes. */
static void test_fill_and_copy(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    uint32_t model[N], other[N];
    uint32_t seed = 3;
    for (uint32_t i = 0; i < N; i++) {
        model[i] = test_rand(&seed);
        other[i] = test_rand(&seed);
    }
    cubec_buffer b, c;
    ASSERT_OK(cubec_buffer_from(d, 0, model, sizeof model, &b));
    ASSERT_OK(cubec_buffer_from(d, 0, other, sizeof other, &c));
    ASSERT_OK(cubec_fill(d, 0, b, 12, 400, 0xa5a5f00du));
    for (uint32_t i = 3; i < 103; i++)
        model[i] = 0xa5a5f00du;
    ASSERT_OK(cubec_fill(d, 0, b, 2048, 64, 0));
    for (uint32_t i = 512; i < 528; i++)
        model[i] = 0;
    ASSERT_OK(cubec_copy(d, 0, c, 100 * 4, b, 700 * 4, 200 * 4));
    memcpy(&model[700], &other[100], 200 * 4);
    /* Bytes that are not whole words (staging copies that copyBufferToBuffer refuses): a write
     * of 7 bytes at an odd offset (the backend's byte-copy kernel) and a read of 3. */
    const unsigned char seven[7] = {1, 2, 3, 4, 5, 6, 7};
    ASSERT_OK(cubec_write(d, 0, b, 4001, seven, 7));
    memcpy((unsigned char *)model + 4001, seven, 7);
    expect_range_in(d, 0, b, N, 0, N, model, "fills and copies on webgpu");
    unsigned char three[3];
    ASSERT_OK(cubec_read(d, 0, b, 4002, three, 3));
    assert_memory_equal(three, (const unsigned char *)model + 4002, 3);
    ASSERT_OK(cubec_buffer_release(d, b));
    ASSERT_OK(cubec_buffer_release(d, c));
    cubec_device_close(d);
}

/* A graph's command buffer is re-encoded at each replay: each replay runs the launch again. */
static void test_graph_replays(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    cubec_kernel k = make_kernel(d, "saxpy", saxpy_src);
    uint32_t a[N], b[N], want[N], zero[N] = {0};
    for (uint32_t i = 0; i < N; i++) {
        a[i] = i;
        b[i] = 7u * i;
    }
    cubec_stream s = new_stream(d);
    cubec_buffer bufs[3];
    ASSERT_OK(cubec_buffer_from(d, s, a, sizeof a, &bufs[0]));
    ASSERT_OK(cubec_buffer_from(d, s, b, sizeof b, &bufs[1]));
    ASSERT_OK(cubec_buffer_from(d, s, zero, sizeof zero, &bufs[2]));
    ASSERT_OK(cubec_sync(d, s));
    cubec_graph g = {0};
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(cubec_graph_begin(d, s));
    uint32_t pc[2] = {N, 2};
    cubec_launch_desc ld = saxpy_launch(k, bufs, pc);
    ASSERT_OK(cubec_launch(d, s, &ld));
    ASSERT_OK(cubec_graph_end(d, s, &g));
    for (int r = 0; r < 3; r++) {
        for (uint32_t i = 0; i < N; i++)
            b[i] = 7u * i + (uint32_t)r;
        ASSERT_OK(cubec_write(d, s, bufs[1], 0, b, sizeof b));
        ASSERT_OK(cubec_graph_replay(d, s, g));
        for (uint32_t i = 0; i < N; i++)
            want[i] = 2u * i + 7u * i + (uint32_t)r;
        expect_range_in(d, s, bufs[2], N, 0, N, want, "a graph's replay on webgpu");
    }
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    cubec_device_close(d);
}

/* The bind-group cache holds the working set of a round of 1000 launches over 1000 buffers:
 * the second round makes no bind group (a direct-mapped cache of 1024 slots made 638 of them
 * again, every round). Each launch adds its immediates to its buffer's words. */
static const char add_src[] = "#version 450\n"
                              "layout(local_size_x = 4) in;\n"
                              "layout(std430, binding = 0) buffer B { uint v[]; };\n"
                              "layout(push_constant) uniform P { uint add; } pc;\n"
                              "void main() { v[gl_GlobalInvocationID.x] += pc.add; }\n";

/* A launch of add_src over one buffer of 4 words, adding *add to each. */
static cubec_launch_desc add_launch(cubec_kernel k, const cubec_buffer *b, const uint32_t *add)
{
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = b;
    ld.buffer_count = 1;
    ld.info = add;
    ld.info_size = sizeof *add;
    ld.groups[0] = ld.groups[1] = ld.groups[2] = 1;
    return ld;
}

static void test_bind_cache_keeps_a_round(void **state)
{
    (void)state;
    enum { BUFS = 1000, WORDS = 4, ROUNDS = 3 };
    cubec_device *d = open_webgpu();
    if (!d) skip();
    cubec_kernel k = make_kernel(d, "add", add_src);
    cubec_stream s = new_stream(d);
    static cubec_buffer bufs[BUFS];
    static uint32_t init[BUFS][WORDS];
    uint32_t seed = 17;
    for (uint32_t b = 0; b < BUFS; b++) {
        for (uint32_t i = 0; i < WORDS; i++)
            init[b][i] = test_rand(&seed) % 1000000u;
        ASSERT_OK(cubec_buffer_from(d, s, init[b], sizeof init[b], &bufs[b]));
    }
    const uint32_t add = 3;
    const wg_gpu *w = (const wg_gpu *)d->gpu;
    uint64_t made[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        for (uint32_t b = 0; b < BUFS; b++) {
            cubec_launch_desc ld = add_launch(k, &bufs[b], &add);
            ASSERT_OK(cubec_launch(d, s, &ld));
        }
        ASSERT_OK(cubec_sync(d, s));
        made[r] = w->bind_groups_made;
    }
    printf("bind groups made after each round: %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", made[0],
           made[1], made[2]);
    assert_true(made[0] >= BUFS); /* the first round made one per buffer */
    assert_int_equal(made[1], made[0]);
    assert_int_equal(made[2], made[0]);
    for (uint32_t b = 0; b < BUFS; b++) {
        uint32_t want[WORDS];
        for (uint32_t i = 0; i < WORDS; i++)
            want[i] = init[b][i] + ROUNDS * add;
        expect_range_in(d, s, bufs[b], WORDS, 0, WORDS, want, "a buffer after the rounds");
        ASSERT_OK(cubec_buffer_release(d, bufs[b]));
    }
    ASSERT_OK(cubec_kernel_destroy(d, k));
    cubec_device_close(d);
}

/* A replay goes to the queue in one submission with the batch before it, which holds the
 * begin timestamp of a profile around the replay: encoded and submitted one by one, the device
 * wrote that timestamp while the host still encoded the replay, and the profile counted the
 * encoding as device time. The profile's end goes in the next submission. */
static void test_replay_submitted_with_its_profile(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    cubec_kernel k = make_kernel(d, "add", add_src);
    cubec_stream s = new_stream(d);
    uint32_t init[4] = {11, 22, 33, 44};
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(d, s, init, sizeof init, &b));
    const uint32_t add = 5;
    cubec_launch_desc ld = add_launch(k, &b, &add);
    cubec_graph g = {0};
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(cubec_graph_begin(d, s));
    for (int i = 0; i < 8; i++)
        ASSERT_OK(cubec_launch(d, s, &ld));
    ASSERT_OK(cubec_graph_end(d, s, &g));
    ASSERT_OK(cubec_sync(d, s));
    const wg_gpu *w = (const wg_gpu *)d->gpu;
    const int replays = 3;
    for (int r = 0; r < replays; r++) {
        uint64_t before = w->queue_submits;
        cubec_profile prof;
        ASSERT_OK(cubec_profile_begin(d, s, &prof));
        ASSERT_OK(cubec_graph_replay(d, s, g));
        cubec_profile_result res = CUBEC_PROFILE_RESULT_INIT;
        ASSERT_OK(cubec_profile_end(d, s, prof, &res));
        /* The begin's batch with the replay, then the end's batch. */
        assert_int_equal(w->queue_submits - before, 2);
        assert_int_equal(res.method, CUBEC_TIMING_DEVICE);
        assert_true(res.end_ns >= res.begin_ns);
    }
    uint32_t want[4];
    for (int i = 0; i < 4; i++)
        want[i] = init[i] + (uint32_t)(8 * replays) * add;
    expect_range_in(d, s, b, 4, 0, 4, want, "the buffer after the replays");
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    ASSERT_OK(cubec_buffer_release(d, b));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    cubec_device_close(d);
}

/* Plain batches that queue up while the submission thread is busy go to the queue together, in
 * one command buffer: wgpu's work per submission is then shared. The test holds the backend's
 * queue lock, so the thread blocks in its first submission while eight more batches of 4 launches
 * queue behind it; before, each went on its own (9 submissions or more). */
static void test_queued_batches_submitted_together(void **state)
{
    (void)state;
    enum { TASKS = 4, BATCHES = 8 };
    setenv("CUBEC_TASKS_MAX", "4", 1);
    cubec_device *d = open_webgpu();
    unsetenv("CUBEC_TASKS_MAX");
    if (!d) skip();
    cubec_kernel k = make_kernel(d, "add", add_src);
    cubec_stream s = new_stream(d);
    uint32_t init[4] = {7, 70, 700, 7000};
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(d, s, init, sizeof init, &b));
    const uint32_t add = 9;
    cubec_launch_desc ld = add_launch(k, &b, &add);
    ASSERT_OK(cubec_launch(d, s, &ld)); /* the pipeline and the bind group made */
    ASSERT_OK(cubec_sync(d, s));
    wg_gpu *w = (wg_gpu *)d->gpu;
    uint64_t before = w->queue_submits;
    pthread_mutex_lock(&w->queue_lock);
    for (int i = 0; i < (BATCHES + 1) * TASKS; i++)
        ASSERT_OK(cubec_launch(d, s, &ld));
    usleep(20000); /* the thread has taken the first batch and waits for the lock */
    pthread_mutex_unlock(&w->queue_lock);
    ASSERT_OK(cubec_sync(d, s));
    uint64_t submits = w->queue_submits - before;
    printf("%d launches in batches of %d: %" PRIu64 " submissions\n", (BATCHES + 1) * TASKS, TASKS,
           submits);
    /* The first batch, the eight behind it in calls of up to GPU_SUBMIT_MAX_ITEMS, the sync's. */
    assert_true(submits <= 1 + (BATCHES + GPU_SUBMIT_MAX_ITEMS - 1) / GPU_SUBMIT_MAX_ITEMS + 1);
    uint32_t want[4];
    for (int i = 0; i < 4; i++)
        want[i] = init[i] + (uint32_t)(1 + (BATCHES + 1) * TASKS) * add;
    expect_range_in(d, s, b, 4, 0, 4, want, "the buffer after the launches");
    ASSERT_OK(cubec_buffer_release(d, b));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    cubec_device_close(d);
}

/* A read waits for its map without the device lock, as waits for the GPU do: another thread's
 * launch goes through meanwhile. The test holds the backend's queue lock, so the read stops in
 * gpu_ops.mem_read (wg_mem_read counts it first); a launch from another thread then returns at
 * once. While the read kept the device lock, the launch waited for the read, which waited for
 * the test: the launch had not returned after 30 s. */
typedef struct read_job {
    cubec_device *d;
    cubec_stream s;
    cubec_buffer b;
    uint32_t *dst;
    size_t bytes;
    cubec_status st;
} read_job;

static void *read_job_run(void *arg)
{
    read_job *j = arg;
    j->st = cubec_read(j->d, j->s, j->b, 0, j->dst, j->bytes);
    return NULL;
}

typedef struct launch_job {
    cubec_device *d;
    cubec_stream s;
    cubec_launch_desc ld;
    cubec_status st;
    int done;
    test_flags flags;
} launch_job;

static void *launch_job_run(void *arg)
{
    launch_job *j = arg;
    j->st = cubec_launch(j->d, j->s, &j->ld);
    test_flags_set(&j->flags, &j->done);
    return NULL;
}

static void test_read_map_wait_lets_others_in(void **state)
{
    (void)state;
    enum { WORDS = 4096 };
    cubec_device *d = open_webgpu();
    if (!d) skip();
    cubec_kernel k = make_kernel(d, "add", add_src);
    cubec_stream s1 = new_stream(d), s2 = new_stream(d);
    static uint32_t want[WORDS], got[WORDS];
    uint32_t seed = 23;
    for (uint32_t i = 0; i < WORDS; i++)
        want[i] = test_rand(&seed);
    uint32_t init[4] = {1, 2, 3, 4};
    const uint32_t add = 6;
    cubec_buffer rb, lb;
    ASSERT_OK(cubec_buffer_from(d, s1, want, sizeof want, &rb));
    ASSERT_OK(cubec_buffer_from(d, s2, init, sizeof init, &lb));
    ASSERT_OK(cubec_sync(d, s1));
    ASSERT_OK(cubec_sync(d, s2));
    wg_gpu *w = (wg_gpu *)d->gpu;
    unsigned begun = atomic_load(&w->reads_begun);
    pthread_mutex_lock(&w->queue_lock);
    read_job rj = {d, s1, rb, got, sizeof got, NULL};
    pthread_t reader, launcher;
    assert_int_equal(pthread_create(&reader, NULL, read_job_run, &rj), 0);
    uint64_t until = clock_now_ns() + 30000000000ull;
    while (atomic_load(&w->reads_begun) == begun && clock_now_ns() < until)
        sched_yield();
    int reading = atomic_load(&w->reads_begun) != begun;
    launch_job lj = {.d = d, .s = s2, .ld = add_launch(k, &lb, &add)};
    test_flags_init(&lj.flags);
    assert_int_equal(pthread_create(&launcher, NULL, launch_job_run, &lj), 0);
    int launched_during_read = test_flags_await(&lj.flags, &lj.done, 30);
    pthread_mutex_unlock(&w->queue_lock);
    pthread_join(reader, NULL);
    pthread_join(launcher, NULL);
    test_flags_destroy(&lj.flags);
    assert_true(reading);
    ASSERT_OK(rj.st);
    ASSERT_OK(lj.st);
    assert_true(launched_during_read);
    assert_memory_equal(got, want, sizeof want);
    uint32_t lwant[4];
    for (int i = 0; i < 4; i++)
        lwant[i] = init[i] + add;
    expect_range_in(d, s2, lb, 4, 0, 4, lwant, "the buffer launched on during the read");
    ASSERT_OK(cubec_buffer_release(d, rb));
    ASSERT_OK(cubec_buffer_release(d, lb));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    cubec_device_close(d);
}

/* A WGSL kernel (cubec_kernel_desc.wgsl): read-only storage, a read_write output, the launch's
 * info bytes as immediates, against the CPU; the inputs are views of the output's buffer, so the
 * read-only declarations must reach WebGPU as read_write (wgsl_reflect's rewrite), or the
 * dispatch breaks WebGPU's usage rule. */
static const char saxpy_wgsl[] =
    "// o = a * mul + b, n elements\n"
    "struct Info { n: u32, mul: u32 }\n"
    "var<immediate> info: Info;\n"
    "@group(0) @binding(0) var<storage, read> a: array<u32>;\n"
    "@group(0) @binding(1) var<storage> b: array<u32>; /* read: the default */\n"
    "@group(0) @binding(2) var<storage, read_write> o: array<u32>;\n"
    "@compute @workgroup_size(64)\n"
    "fn saxpy(@builtin(global_invocation_id) id: vec3<u32>) {\n"
    "    if (id.x < info.n) { o[id.x] = a[id.x] * info.mul + b[id.x]; }\n"
    "}\n";

static void test_wgsl_kernel(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = "saxpy_wgsl";
    kd.wgsl = saxpy_wgsl;
    kd.entry_point = "saxpy";
    cubec_kernel k;
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.binding_count, 3);
    assert_int_equal(ki.workgroup_size[0], 64);
    assert_int_equal(ki.info_size, 8);
    assert_int_equal(ki.access[0], CUBEC_ACCESS_READ);
    assert_int_equal(ki.access[2], CUBEC_ACCESS_READ_WRITE);
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    uint64_t part = (N * 4u + info.storage_offset_alignment - 1) / info.storage_offset_alignment *
                    info.storage_offset_alignment;
    uint32_t *host = calloc(3 * part / 4, 4);
    assert_non_null(host);
    uint32_t seed = 21;
    for (uint32_t i = 0; i < N; i++) {
        host[i] = test_rand(&seed) % 5000u;
        host[part / 4 + i] = test_rand(&seed);
    }
    cubec_buffer whole, v[3];
    ASSERT_OK(cubec_buffer_from(d, 0, host, 3 * part, &whole));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_view(d, whole, (uint64_t)i * part, N * 4u, &v[i]));
    uint32_t pc[2] = {N - 3, 7};
    cubec_launch_desc ld = saxpy_launch(k, v, pc);
    ASSERT_OK(cubec_launch(d, 0, &ld));
    uint32_t want[N];
    for (uint32_t i = 0; i < N; i++)
        want[i] = i < N - 3 ? host[i] * 7u + host[part / 4 + i] : 0u;
    expect_range_in(d, 0, v[2], N, 0, N, want, "a WGSL kernel on webgpu");
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_release(d, v[i]));
    ASSERT_OK(cubec_buffer_release(d, whole));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    /* What the reflection cannot take is refused by name. */
    kd.wgsl = "@group(1) @binding(0) var<storage, read_write> x: array<u32>;\n"
              "@compute @workgroup_size(1) fn saxpy() { x[0] = 1u; }\n";
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED, "@group(1)");
    kd.wgsl = "@compute @workgroup_size(1) fn other() {}\n";
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_COMPILE_FAILED, "no function 'saxpy'");
    free(host);
    cubec_device_close(d);
}

/* The CPU model of busy_src: `steps` steps of the LCG on each word. */
static uint32_t lcg_steps(uint32_t x, uint32_t steps)
{
    for (uint32_t k = 0; k < steps; k++)
        x = x * LCG_MUL + LCG_ADD;
    return x;
}

#define BUSY_WORDS 4096u
#define BUSY_STEPS 3000u

/* One profile around busy launches (and, with `copy`, a copy between two of them, which the
 * pass-boundary placement must not leave outside its window); the duration must be above 0 and
 * at most the host's wall time around the profile, and the words the model's. */
static void profile_within_wall(cubec_device *d, cubec_kernel busy, cubec_timing want, int copy)
{
    uint32_t *host = malloc(BUSY_WORDS * 4u), *want_words = malloc(BUSY_WORDS * 4u);
    assert_non_null(host);
    assert_non_null(want_words);
    uint32_t seed = 77;
    for (uint32_t i = 0; i < BUSY_WORDS; i++)
        host[i] = test_rand(&seed);
    cubec_buffer v, w;
    ASSERT_OK(cubec_buffer_from(d, 0, host, BUSY_WORDS * 4u, &v));
    ASSERT_OK(cubec_buffer_create(d, 0, BUSY_WORDS * 4u, &w));
    ASSERT_OK(cubec_sync(d, 0));
    uint64_t t0 = clock_now_ns();
    cubec_profile p;
    ASSERT_OK(cubec_profile_begin(d, 0, &p));
    ASSERT_OK(busy_launch(d, 0, busy, v, BUSY_WORDS, BUSY_STEPS));
    if (copy) {
        ASSERT_OK(cubec_copy(d, 0, v, 0, w, 0, BUSY_WORDS * 4u));
        ASSERT_OK(busy_launch(d, 0, busy, w, BUSY_WORDS, BUSY_STEPS));
    }
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    ASSERT_OK(cubec_profile_end(d, 0, p, &r));
    uint64_t now = clock_now_ns(), wall = now - t0;
    assert_int_equal(r.method, want);
    assert_int_equal(r.duration_ns, r.end_ns - r.begin_ns);
    if (r.duration_ns == 0 || r.duration_ns > wall)
        fail_msg("profile (%s timing) says %" PRIu64 " ns; the host saw %" PRIu64 " ns around it",
                 want == CUBEC_TIMING_DEVICE ? "device" : "system", r.duration_ns, wall);
    /* The instants are on the host's clock, inside the window the host saw: without a
     * calibrated clock the server takes the offset from the timestamps it reads (late by the
     * completion latency at most, never early). */
    if (r.begin_ns < t0 || r.end_ns > now)
        fail_msg("profile [%" PRIu64 ", %" PRIu64 "] ns is not inside the host's [%" PRIu64
                 ", %" PRIu64 "]",
                 r.begin_ns, r.end_ns, t0, now);
    for (uint32_t i = 0; i < BUSY_WORDS; i++)
        want_words[i] = lcg_steps(lcg_steps(host[i], BUSY_STEPS), copy ? BUSY_STEPS : 0);
    expect_range_in(d, 0, copy ? w : v, BUSY_WORDS, 0, BUSY_WORDS, want_words,
                    "busy words after the profile");
    ASSERT_OK(cubec_buffer_release(d, v));
    ASSERT_OK(cubec_buffer_release(d, w));
    free(host);
    free(want_words);
}

/* Profiles at each placement of timestamps (CUBEC_WEBGPU_TIMESTAMPS caps it: wg_queries.c):
 * inside passes, on the encoder, at pass boundaries, and none (host-measured, said so by the
 * method). The reference: wgpu-native on lavapipe and on NVIDIA has all three placements, so
 * every capped run but "off" times on the device. */
static void test_profiles_at_every_placement(void **state)
{
    (void)state;
    static const char *const modes[] = {"passes", "encoders", "boundaries", "off"};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        assert_int_equal(setenv("CUBEC_WEBGPU_TIMESTAMPS", modes[m], 1), 0);
        cubec_device *d = open_webgpu();
        if (!d) {
            unsetenv("CUBEC_WEBGPU_TIMESTAMPS");
            skip();
        }
        cubec_timing want = strcmp(modes[m], "off") ? CUBEC_TIMING_DEVICE : CUBEC_TIMING_SYSTEM;
        cubec_timing method = 0;
        ASSERT_OK(cubec_profile_get_method(d, &method));
        if (method != want)
            fail_msg("CUBEC_WEBGPU_TIMESTAMPS=%s: profile method %d, not %d", modes[m], (int)method,
                     (int)want);
        cubec_kernel busy = make_kernel(d, "busy", busy_src);
        profile_within_wall(d, busy, want, 0);
        profile_within_wall(d, busy, want, 1);
        ASSERT_OK(cubec_kernel_destroy(d, busy));
        cubec_device_close(d);
    }
    unsetenv("CUBEC_WEBGPU_TIMESTAMPS");
}

/* At the seam: a query pool larger than one WebGPU query set (4096 queries), timestamps written
 * around a copy on both sides of the sets' boundary, and one read across it. The reference: the
 * ticks are written (non-zero), in the order of the command list, and span no more than the
 * host's wall time around the submission. At pass boundaries, timestamps in a row each take an
 * empty pass of their own. A read past the pool is refused. */
static void test_query_pool_across_sets(void **state)
{
    (void)state;
    static const char *const modes[] = {"passes", "encoders", "boundaries"};
    enum { FIRST = 4090, COUNT = 12, POOL = 5000 };
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        assert_int_equal(setenv("CUBEC_WEBGPU_TIMESTAMPS", modes[m], 1), 0);
        gpu_open_desc desc = {0};
        gpu *g = NULL;
        cubec_status st = gpu_open(GPU_BACKEND_webgpu, &desc, &g);
        unsetenv("CUBEC_WEBGPU_TIMESTAMPS");
        if (st && cubec_status_code(st) == CUBEC_NOT_FOUND) {
            cubec_status_free(st);
            skip();
        }
        ASSERT_OK(st);
        assert_true(g->caps.timestamps);
        const gpu_ops *ops = g->ops;
        gpu_queries *q = NULL;
        gpu_mem *a = NULL, *b = NULL;
        gpu_cmd *c = NULL;
        ASSERT_OK(ops->queries_create(g, POOL, &q));
        ASSERT_OK(ops->mem_create(g, GPU_MEM_DEVICE, 1u << 16, &a));
        ASSERT_OK(ops->mem_create(g, GPU_MEM_DEVICE, 1u << 16, &b));
        ASSERT_OK(ops->cmd_create(g, GPU_CMD_ONCE, 1, &c));
        ASSERT_OK(ops->cmd_begin(g, c));
        gpu_cmd_reset_queries(c, q, 0, POOL);
        for (uint32_t i = 0; i < COUNT; i++) {
            gpu_cmd_timestamp(c, q, FIRST + i, i % 2 ? GPU_STAGE_BOTTOM : GPU_STAGE_TOP);
            if (i % 3 == 0) gpu_cmd_copy(c, a, 0, b, 0, 1u << 16);
        }
        ASSERT_OK(ops->cmd_end(g, c));
        uint64_t t0 = clock_now_ns();
        gpu_submit_item item = {.cmd = c, .signal = 1};
        ASSERT_OK(ops->submit(g, &item, 1));
        ASSERT_OK(ops->timeline_wait(g, 1, 0));
        uint64_t wall = clock_now_ns() - t0;
        uint64_t ticks[COUNT];
        ASSERT_OK(ops->queries_read(g, q, FIRST, COUNT, ticks));
        for (uint32_t i = 0; i < COUNT; i++) {
            if (!ticks[i]) fail_msg("%s: query %u was not written", modes[m], FIRST + i);
            if (i && ticks[i] < ticks[i - 1])
                fail_msg("%s: query %u (%" PRIu64 ") is earlier than query %u (%" PRIu64 ")",
                         modes[m], FIRST + i, ticks[i], FIRST + i - 1, ticks[i - 1]);
        }
        double span = (double)(ticks[COUNT - 1] - ticks[0]) * g->info.timestamp_period_ns;
        if (span > (double)wall)
            fail_msg("%s: the timestamps span %.0f ns; the host saw %" PRIu64 " ns", modes[m], span,
                     wall);
        ASSERT_ERROR(ops->queries_read(g, q, POOL - 1, 2, ticks), CUBEC_INTERNAL, "of a pool of");
        ops->cmd_destroy(g, c);
        ops->mem_destroy(g, a);
        ops->mem_destroy(g, b);
        ops->queries_destroy(g, q);
        gpu_close(g);
    }
}

/* The "ts" and "dur" of a trace line (microseconds); 0 when the line has none. */
static int trace_times(const char *line, double *ts, double *dur)
{
    const char *t = strstr(line, "\"ts\":"), *u = strstr(line, "\"dur\":");
    return t && u && sscanf(t + 5, "%lf", ts) == 1 && sscanf(u + 6, "%lf", dur) == 1;
}

/* A trace with device-timed launches on a clock that is not calibrated (WebGPU has none): a
 * launch followed by a sync must end, in the trace, before that sync does (the host waited for
 * it), and begin after its batch's submission began (the GPU had nothing to run before). The
 * offset comes from host times on both sides of the timestamps; converting a batch's first begin
 * first put its launches in the host's future by their own duration. */
static void test_trace_launches_end_before_their_sync(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/cubec_wg_trace_%d.json", test_tmp_dir(), (int)getpid());
    unlink(path);
    assert_int_equal(setenv("CUBEC_TRACE", path, 1), 0);
    cubec_device *d = open_webgpu();
    unsetenv("CUBEC_TRACE");
    if (!d) skip();
    cubec_kernel busy = make_kernel(d, "busy", busy_src);
    cubec_buffer v;
    ASSERT_OK(cubec_buffer_create(d, 0, BUSY_WORDS * 4u, &v));
    ASSERT_OK(busy_launch(d, 0, busy, v, BUSY_WORDS, BUSY_STEPS));
    ASSERT_OK(cubec_sync(d, 0));
    ASSERT_OK(cubec_buffer_release(d, v));
    ASSERT_OK(cubec_kernel_destroy(d, busy));
    cubec_device_close(d);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("no trace at %s", path);
    char line[1024];
    double launch_begin = -1, launch_end = -1, sync_end = -1, submit_begin = -1, ts = 0, dur = 0;
    while (fgets(line, sizeof line, f)) {
        if (!trace_times(line, &ts, &dur)) continue;
        /* Rows follow each other in the file (the host's first): the last sync, the launch, and
         * the submission that took the launch (the one batch this test records). */
        if (strstr(line, "\"name\":\"busy\"") && strstr(line, "\"cat\":\"launch\"")) {
            launch_begin = ts;
            launch_end = ts + dur;
        } else if (strstr(line, "\"name\":\"sync\"")) {
            sync_end = ts + dur;
        } else if (strstr(line, "\"name\":\"submit\"")) {
            const char *t = strstr(line, "\"tasks\":");
            unsigned tasks = 0;
            if (t && sscanf(t + 8, "%u", &tasks) == 1 && tasks > 0) submit_begin = ts;
        }
    }
    fclose(f);
    unlink(path);
    if (launch_end < 0 || sync_end < 0 || submit_begin < 0)
        fail_msg("the trace has no busy launch (%.3f), no sync (%.3f) or no submission of a "
                 "launch (%.3f)",
                 launch_end, sync_end, submit_begin);
    if (launch_end > sync_end)
        fail_msg("the launch ends at %.3f us in the trace, after the sync that waited for it "
                 "(%.3f us)",
                 launch_end, sync_end);
    if (launch_begin < submit_begin)
        fail_msg("the launch begins at %.3f us in the trace, before its batch was submitted "
                 "(%.3f us)",
                 launch_begin, submit_begin);
}

/* A placement that is not one is refused by name when the device opens. */
static void test_bad_timestamp_placement(void **state)
{
    (void)state;
    assert_int_equal(setenv("CUBEC_WEBGPU_TIMESTAMPS", "inside", 1), 0);
    cubec_device_desc desc = CUBEC_DEVICE_DESC_INIT;
    desc.backend = "webgpu";
    cubec_device *d = NULL;
    cubec_status st = cubec_device_open(&desc, &d);
    unsetenv("CUBEC_WEBGPU_TIMESTAMPS");
    if (st && cubec_status_code(st) == CUBEC_NOT_FOUND) {
        cubec_status_free(st);
        skip();
    }
    ASSERT_ERROR(st, CUBEC_INVALID_ARGUMENT, "CUBEC_WEBGPU_TIMESTAMPS: 'inside'");
    assert_null(d);
}

/* What WebGPU cannot do is refused by name, never aborted on. */
static void test_unsupported_by_name(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    void *p = NULL;
    ASSERT_ERROR(cubec_host_alloc(d, 4096, &p), CUBEC_UNSUPPORTED, "webgpu");
    cubec_vulkan_handles h = CUBEC_VULKAN_HANDLES_INIT;
    ASSERT_ERROR(cubec_device_get_vulkan_handles(d, &h), CUBEC_UNSUPPORTED, "");
    cubec_device_close(d);
}

/* cubec_write straight into a device page (gpu_ops.mem_write: a queue write, no upload ring):
 * it lands after the launches queued before it have read the old bytes and before the launches
 * queued after it; writes that are not whole words take the ring and land as well; one larger
 * than the backend's write chunk (8 MiB) lands whole, and only where it was aimed. */
static void test_direct_writes_keep_stream_order(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    cubec_kernel k = make_kernel(d, "saxpy", saxpy_src);
    uint32_t a[N], a2[N], b[N], zero[N] = {0}, want[N];
    uint32_t seed = 21;
    for (uint32_t i = 0; i < N; i++) {
        a[i] = test_rand(&seed) % 1000u;
        a2[i] = test_rand(&seed) % 1000u;
        b[i] = test_rand(&seed) % 1000u;
    }
    cubec_buffer bufs[3];
    ASSERT_OK(cubec_buffer_from(d, 0, a, sizeof a, &bufs[0]));
    ASSERT_OK(cubec_buffer_from(d, 0, b, sizeof b, &bufs[1]));
    ASSERT_OK(cubec_buffer_from(d, 0, zero, sizeof zero, &bufs[2]));
    uint32_t pc[2] = {N, 2};
    cubec_launch_desc ld = saxpy_launch(k, bufs, pc);
    for (int r = 0; r < 8; r++)
        ASSERT_OK(cubec_launch(d, 0, &ld));
    /* The launches above read `a`; this write must not reach them. */
    ASSERT_OK(cubec_write(d, 0, bufs[0], 0, a2, sizeof a2));
    for (uint32_t i = 0; i < N; i++)
        want[i] = a[i] * 2u + b[i];
    expect_range_in(d, 0, bufs[2], N, 0, N, want, "launches before a write read the old bytes");
    ASSERT_OK(cubec_launch(d, 0, &ld));
    for (uint32_t i = 0; i < N; i++)
        want[i] = a2[i] * 2u + b[i];
    expect_range_in(d, 0, bufs[2], N, 0, N, want, "a launch after a write reads the new bytes");
    /* Bytes 6..13 of `b` (not whole words: the upload ring), then words 4..7 (direct). */
    uint8_t bytes[8];
    for (int i = 0; i < 8; i++)
        bytes[i] = (uint8_t)(0xa0 + i);
    ASSERT_OK(cubec_write(d, 0, bufs[1], 6, bytes, sizeof bytes));
    memcpy((uint8_t *)b + 6, bytes, sizeof bytes);
    uint32_t words[4] = {11, 22, 33, 44};
    ASSERT_OK(cubec_write(d, 0, bufs[1], 16, words, sizeof words));
    memcpy(b + 4, words, sizeof words);
    expect_range_in(d, 0, bufs[1], N, 0, N, b, "byte and word writes");
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));

    /* Three of the backend's 8 MiB queue-write chunks, the last one partial, into a filled
     * buffer one word in: the words around the write keep the fill. */
    const uint64_t big = (20ull << 20) + 12u, words_all = big / 4 + 2;
    uint32_t *host = malloc(big), *back = malloc(words_all * 4);
    assert_non_null(host);
    assert_non_null(back);
    for (uint64_t i = 0; i < big / 4; i++)
        host[i] = (uint32_t)(i * 2654435761u);
    cubec_buffer large;
    ASSERT_OK(cubec_buffer_create(d, 0, words_all * 4, &large));
    ASSERT_OK(cubec_fill(d, 0, large, 0, words_all * 4, 0xdeadbeefu));
    ASSERT_OK(cubec_write(d, 0, large, 4, host, big));
    ASSERT_OK(cubec_read(d, 0, large, 0, back, words_all * 4));
    for (uint64_t i = 0; i < words_all; i++) {
        uint32_t want_i = i == 0 || i == words_all - 1 ? 0xdeadbeefu : host[i - 1];
        if (back[i] != want_i)
            fail_msg("word %llu of a 20 MiB write at word 1: %u, want %u", (unsigned long long)i,
                     back[i], want_i);
    }
    ASSERT_OK(cubec_buffer_release(d, large));
    free(host);
    free(back);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    cubec_device_close(d);
}

/* --- A queue write beside a submission (the backend's seam, gpu/gpu.h) ---------------------- */

/* One read of [at, +size) of `b` (whose bytes are `model`) into a host array at an odd address
 * between guard bytes: exactly the range's bytes land, and nothing around them. */
static void expect_read_exact(cubec_device *d, cubec_buffer b, const uint8_t *model, uint64_t at,
                              uint64_t size)
{
    enum { GUARD = 7 };
    uint8_t *host = malloc(size + 2 * GUARD + 1);
    assert_non_null(host);
    uint8_t *into = host + 1 + GUARD; /* odd: the host side has no alignment to lean on */
    memset(host, 0xee, size + 2 * GUARD + 1);
    ASSERT_OK(cubec_read(d, 0, b, at, into, size));
    for (uint64_t i = 0; i < size; i++)
        if (into[i] != model[at + i])
            fail_msg("byte %llu of a read of [%llu, +%llu): 0x%02x, want 0x%02x",
                     (unsigned long long)i, (unsigned long long)at, (unsigned long long)size,
                     into[i], model[at + i]);
    for (int i = 0; i < GUARD; i++)
        if (into[-1 - i] != 0xee || into[size + (uint64_t)i] != 0xee)
            fail_msg("a read of [%llu, +%llu) wrote outside its %llu bytes", (unsigned long long)at,
                     (unsigned long long)size, (unsigned long long)size);
    free(host);
}

/* cubec_read straight from a device page (gpu_ops.mem_read: one copy into the backend's map
 * buffer, mapped and copied out, instead of the readback ring): reads at every offset and size
 * class of a buffer in a pooled page land exactly their bytes, a read after launches returns what
 * they wrote, and one longer than the backend's read chunk (64 MiB) from an odd offset lands
 * whole. A read of bytes no pending work writes submits no command buffer of cubec's: the ring's
 * copy was one, so the count tells the direct path from the ring's. */
static void test_direct_reads_land_exact_bytes(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    enum { SMALL = 4099 }; /* odd: the page's neighbour starts within the last word's padding */
    uint8_t model[SMALL];
    uint32_t seed = 33;
    for (uint32_t i = 0; i < SMALL; i++)
        model[i] = (uint8_t)test_rand(&seed);
    cubec_buffer before, b, after;
    ASSERT_OK(cubec_buffer_create(d, 0, 100, &before));
    ASSERT_OK(cubec_buffer_from(d, 0, model, SMALL, &b));
    ASSERT_OK(cubec_buffer_create(d, 0, 100, &after));
    ASSERT_OK(cubec_fill(d, 0, before, 0, 100, 0x5a5a5a5au));
    ASSERT_OK(cubec_fill(d, 0, after, 0, 100, 0xa5a5a5a5u));
    ASSERT_OK(cubec_sync(d, 0));
    const uint64_t submissions = server_stats_get(d).submissions;
    static const uint64_t offsets[] = {0, 1, 2, 3, 4, 5, 6, 7, 1021, 4092, 4095, 4098};
    static const uint64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 13, 1024, 4095};
    for (size_t i = 0; i < sizeof offsets / sizeof *offsets; i++)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
            if (offsets[i] + sizes[k] <= SMALL)
                expect_read_exact(d, b, model, offsets[i], sizes[k]);
    expect_read_exact(d, b, model, 0, SMALL);
    expect_read_exact(d, b, model, 3, SMALL - 3);
    assert_int_equal(server_stats_get(d).submissions, submissions);

    /* After launches, without a sync: the read waits for them. */
    cubec_kernel k = make_kernel(d, "saxpy", saxpy_src);
    uint32_t a[N], c[N], zero[N] = {0};
    for (uint32_t i = 0; i < N; i++) {
        a[i] = test_rand(&seed);
        c[i] = test_rand(&seed);
    }
    cubec_buffer bufs[3];
    ASSERT_OK(cubec_buffer_from(d, 0, a, sizeof a, &bufs[0]));
    ASSERT_OK(cubec_buffer_from(d, 0, c, sizeof c, &bufs[1]));
    ASSERT_OK(cubec_buffer_from(d, 0, zero, sizeof zero, &bufs[2]));
    uint32_t pc[2] = {N, 7};
    cubec_launch_desc ld = saxpy_launch(k, bufs, pc);
    for (int r = 0; r < 4; r++)
        ASSERT_OK(cubec_launch(d, 0, &ld));
    uint32_t want[N];
    for (uint32_t i = 0; i < N; i++)
        want[i] = a[i] * 7u + c[i];
    expect_read_exact(d, bufs[2], (const uint8_t *)want, 5, sizeof want - 9);
    /* The neighbours of the odd-sized buffer kept their fills. */
    uint8_t fills[200];
    memset(fills, 0x5a, 100);
    memset(fills + 100, 0xa5, 100);
    expect_read_exact(d, before, fills, 1, 99);
    expect_read_exact(d, after, fills + 100, 0, 97);
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_buffer_release(d, before));
    ASSERT_OK(cubec_buffer_release(d, b));
    ASSERT_OK(cubec_buffer_release(d, after));

    /* 80 MiB less 3 bytes at each end: two of the backend's chunks, the first from an odd
     * offset. */
    const uint64_t big = 80ull << 20;
    uint8_t *host = malloc(big);
    assert_non_null(host);
    for (uint64_t i = 0; i < big / 4; i++)
        ((uint32_t *)host)[i] = (uint32_t)(i * 2654435761u);
    cubec_buffer large;
    ASSERT_OK(cubec_buffer_from(d, 0, host, big, &large));
    expect_read_exact(d, large, host, 3, big - 6);
    ASSERT_OK(cubec_buffer_release(d, large));
    free(host);
    cubec_device_close(d);
}

/* A direct read's failures as a staged read's: bytes that carry a failure (cubec_write_failure)
 * report it and nothing is copied, and the read's wait on the device is a point of the fault
 * plan (CUBEC_FAULT_WAIT): when it fails the device is lost, and later reads say so. */
static void test_direct_read_failures(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    uint32_t words[64], back[64];
    for (uint32_t i = 0; i < 64; i++)
        words[i] = i * 3u + 1u;
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_from(d, 0, words, sizeof words, &b));
    ASSERT_OK(cubec_write_failure(d, 0, b, 128, 8, CUBEC_INTERNAL, "lost on purpose"));
    memset(back, 0xee, sizeof back);
    ASSERT_ERROR(cubec_read(d, 0, b, 120, back, 16), CUBEC_INTERNAL, "lost on purpose");
    for (uint32_t i = 0; i < 64; i++)
        assert_int_equal(back[i], 0xeeeeeeeeu);
    ASSERT_OK(cubec_read(d, 0, b, 0, back, 128)); /* the bytes before it are fine */
    assert_memory_equal(back, words, 128);
    ASSERT_OK(cubec_fault_inject(d, CUBEC_FAULT_WAIT, 1));
    ASSERT_ERROR(cubec_read(d, 0, b, 4, back, 8), CUBEC_DEVICE_LOST, "injected");
    ASSERT_ERROR(cubec_read(d, 0, b, 4, back, 8), CUBEC_DEVICE_LOST, "lost earlier");
    cubec_device_close(d);
}

#define RACE_BYTES 65536u /* the upload buffer, new each round */
#define RACE_AT 4096u     /* the range the writer flushes */
#define RACE_SIZE 4096u
#define RACE_TARGETS 2048u /* buffers the submission copies into besides (see below) */

/* The writer: flushes [RACE_AT, +RACE_SIZE) of `upload` `delay_ns` after `go`. */
typedef struct race_writer {
    gpu *g;
    gpu_mem *upload;
    atomic_int ready, go;
    uint64_t start_ns, delay_ns;
} race_writer;

static void *race_write(void *arg)
{
    race_writer *r = arg;
    atomic_store(&r->ready, 1);
    while (!atomic_load(&r->go))
        ;
    while (clock_now_ns() - r->start_ns < r->delay_ns)
        ;
    gpu_mem_flush(r->g, r->upload, RACE_AT, RACE_SIZE);
    return NULL;
}

/* A flush (a queue write) of one range of an upload buffer made while another thread submits a
 * copy of another range of it (docs/device.md, the WebGPU backend; the defect that failed
 * test_memory_modes now and then under load with a buffer read back as zeros): the byte copy
 * binds the buffer from the copy to the buffer's end, and wgpu zero-fills at submission the parts
 * of a binding no write has reached; it picks those parts before it takes the pending queue
 * writes, which run first, so a write made in between was zeroed after it landed. The write must
 * land whole wherever it falls. Whether one falls in between is up to the scheduler, so the test
 * widens the gap and tries many times: the submission also copies into RACE_TARGETS other
 * buffers (wgpu computes their barriers in that gap), and the writer's delays sweep the time a
 * submission takes. Before the fix, 4 runs of 6 lost writes at 64 rounds on the 2-core machine. */
static void test_queue_write_beside_a_submission(void **state)
{
    (void)state;
    gpu *g = NULL;
    cubec_status st = gpu_open(GPU_BACKEND_webgpu, NULL, &g);
    if (st && cubec_status_code(st) == CUBEC_NOT_FOUND) {
        printf("skipped: no WebGPU implementation: %s\n", cubec_status_message(st));
        cubec_status_free(st);
        skip();
    }
    ASSERT_OK(st);
    gpu_cmd *first = NULL, *second = NULL;
    ASSERT_OK(g->ops->cmd_create(g, GPU_CMD_ONCE, 0, &first));
    ASSERT_OK(g->ops->cmd_create(g, GPU_CMD_ONCE, 0, &second));
    gpu_mem *device = NULL, *readback = NULL;
    ASSERT_OK(gpu_mem_alloc(g, GPU_MEM_DEVICE, RACE_BYTES, &device));
    ASSERT_OK(gpu_mem_alloc(g, GPU_MEM_READBACK, RACE_SIZE, &readback));
    gpu_mem *targets[RACE_TARGETS];
    for (uint32_t i = 0; i < RACE_TARGETS; i++)
        ASSERT_OK(gpu_mem_alloc(g, GPU_MEM_DEVICE, 256, &targets[i]));
    uint64_t value = 0, submit_ns = 200000, lost = 0;
    const uint32_t rounds = 160;
    for (uint32_t k = 0; k < rounds; k++) {
        /* A new upload buffer each round: none of it written yet, as a new staging ring. */
        gpu_mem *upload = NULL;
        ASSERT_OK(gpu_mem_alloc(g, GPU_MEM_UPLOAD, RACE_BYTES, &upload));
        for (uint32_t i = 0; i < RACE_BYTES; i++)
            upload->mapped[i] = (unsigned char)(1u + (i + k) % 251u); /* never 0 */
        gpu_mem_flush(g, upload, 0, 8);
        ASSERT_OK(g->ops->cmd_begin(g, first));
        gpu_cmd_copy(first, upload, 0, device, 0, 5); /* 5 bytes: the byte-copy kernel */
        for (uint32_t i = 0; i < RACE_TARGETS; i++)
            gpu_cmd_copy(first, upload, 16, targets[i], 0, 4);
        ASSERT_OK(g->ops->cmd_end(g, first));
        race_writer r = {.g = g, .upload = upload, .delay_ns = submit_ns * (k % 16u) / 16u};
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, race_write, &r), 0);
        while (!atomic_load(&r.ready))
            sched_yield();
        r.start_ns = clock_now_ns();
        atomic_store(&r.go, 1);
        gpu_submit_item item = {.cmd = first, .signal = ++value};
        ASSERT_OK(gpu_submit(g, &item, 1));
        uint64_t took = clock_now_ns() - r.start_ns;
        submit_ns = (submit_ns * 7u + took) / 8u; /* the sweep follows the submissions' time */
        assert_int_equal(pthread_join(t, NULL), 0);
        ASSERT_OK(g->ops->cmd_begin(g, second));
        gpu_cmd_copy(second, upload, RACE_AT, device, RACE_AT, RACE_SIZE);
        gpu_cmd_copy(second, device, RACE_AT, readback, 0, RACE_SIZE);
        ASSERT_OK(g->ops->cmd_end(g, second));
        item = (gpu_submit_item){.cmd = second, .signal = ++value};
        ASSERT_OK(gpu_submit(g, &item, 1));
        ASSERT_OK(g->ops->timeline_wait(g, value, 0));
        gpu_mem_invalidate(g, readback, 0, RACE_SIZE);
        if (memcmp(readback->mapped, upload->mapped + RACE_AT, RACE_SIZE) != 0) lost++;
        gpu_mem_free(g, upload);
    }
    g->ops->cmd_destroy(g, first);
    g->ops->cmd_destroy(g, second);
    gpu_mem_free(g, device);
    gpu_mem_free(g, readback);
    for (uint32_t i = 0; i < RACE_TARGETS; i++)
        gpu_mem_free(g, targets[i]);
    gpu_close(g);
    if (lost)
        fail_msg("%llu of %u queue writes made beside a submission did not land",
                 (unsigned long long)lost, rounds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_matches_cpu),
        cmocka_unit_test(test_one_page_read_and_written),
        cmocka_unit_test(test_fill_and_copy),
        cmocka_unit_test(test_graph_replays),
        cmocka_unit_test(test_bind_cache_keeps_a_round),
        cmocka_unit_test(test_replay_submitted_with_its_profile),
        cmocka_unit_test(test_queued_batches_submitted_together),
        cmocka_unit_test(test_read_map_wait_lets_others_in),
        cmocka_unit_test(test_wgsl_kernel),
        cmocka_unit_test(test_unsupported_by_name),
        cmocka_unit_test(test_profiles_at_every_placement),
        cmocka_unit_test(test_query_pool_across_sets),
        cmocka_unit_test(test_trace_launches_end_before_their_sync),
        cmocka_unit_test(test_bad_timestamp_placement),
        cmocka_unit_test(test_queue_write_beside_a_submission),
        cmocka_unit_test(test_direct_writes_keep_stream_order),
        cmocka_unit_test(test_direct_reads_land_exact_bytes),
        cmocka_unit_test(test_direct_read_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
