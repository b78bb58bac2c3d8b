/* The raw_vulkan side of every figure: the same work as cubec_figures.c, done the straightforward
 * way with the helpers of raw_vulkan.h. Device work is timed by the wall clock around
 * record + submit + wait (what a program without a runtime waits for), and where the figure is a
 * device time, timestamps around the recorded work are reported next to it. */
#include "bench_figure.h"
#include "bench_graph.h"
#include "bench_kernels.h"
#include "raw_vulkan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One state shape serves every figure; each uses the fields it needs, and one teardown frees
 * whatever was made. */
typedef struct raw_fig {
    raw_ctx *ctx;
    bench_params p;
    raw_kernel kernel;
    raw_buffer buf[3];
    void *host;
    VkCommandPool pool; /* launch.enqueue: its own command buffers, one per batch */
    VkCommandBuffer *cmds;
    uint32_t cmd_count;
    uint64_t count; /* increments applied so far: what the tiny kernel's buffer must hold */
    uint32_t salt;  /* compile.*: the last salt compiled and run */
    uint64_t kernel_hash;
    uint64_t alloc_short; /* alloc.pair: allocations smaller than asked (must stay 0) */
} raw_fig;

/* A zeroed state, already handed to the runner (so that teardown frees it whatever happens
 * next); NULL if out of memory. */
static raw_fig *fig_new(void *ctx, const bench_params *params, void **out_state)
{
    raw_fig *f = calloc(1, sizeof *f);
    if (f) {
        f->ctx = ctx;
        f->p = *params;
    }
    *out_state = f;
    return f;
}

static void fig_teardown(void *state)
{
    raw_fig *f = state;
    if (!f) return;
    raw_ctx *ctx = f->ctx;
    /* A failed run may have left work queued: nothing may be freed under it. */
    vkDeviceWaitIdle(ctx->device);
    raw_kernel_destroy(ctx, &f->kernel);
    for (int i = 0; i < 3; i++)
        raw_buffer_destroy(ctx, &f->buf[i]);
    if (f->pool) vkDestroyCommandPool(ctx->device, f->pool, NULL);
    free(f->cmds);
    bench_host_free(f->host);
    free(f);
}

/* The tiny kernel and its zeroed 256-byte buffer, shared by the launch and compile figures.
 * `buffer_bytes` is larger for launch.device_independent (one range per launch). */
static bench_err tiny_setup(raw_fig *f, uint64_t buffer_bytes)
{
    BENCH_TRY(raw_kernel_create(f->ctx, bench_glsl_tiny, NULL, 0, 1, sizeof(bench_tiny_info),
                                &f->kernel));
    BENCH_TRY(raw_buffer_create(f->ctx, buffer_bytes, RAW_MEMORY_DEVICE, &f->buf[0]));
    void *zeros = calloc(1, buffer_bytes);
    if (!zeros) return bench_errorf("out of host memory");
    bench_err err = raw_upload(f->ctx, &f->buf[0], 0, zeros, buffer_bytes);
    free(zeros);
    return err;
}

static VkDescriptorBufferInfo whole(const raw_buffer *b)
{
    return (VkDescriptorBufferInfo){.buffer = b->buffer, .offset = 0, .range = VK_WHOLE_SIZE};
}

/* Records one tiny launch, ordered after every earlier launch on the buffer: the straightforward
 * dependency is a global memory barrier (compute shader writes -> compute shader reads and
 * writes) before each launch. Each launch increments the buffer, a read-after-write on the one
 * before, so every path that records consecutive tiny launches on one buffer (launch.enqueue,
 * launch.roundtrip, launch.device_dependent) goes through here; without the barrier it would be
 * a data race, and not the work cubec does. The barrier also reaches launches of earlier
 * submissions on the queue (its first scope is everything earlier in submission order). */
static void record_tiny(raw_fig *f, VkCommandBuffer cmd, VkDescriptorBufferInfo buffer)
{
    static const bench_tiny_info info = {.n = BENCH_TINY_WORDS, .step = 1};
    raw_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, RAW_ACCESS_RW);
    raw_dispatch(f->ctx, cmd, &f->kernel, &buffer, &info, 1);
}

/* Checks that each of `ranges` 256-byte ranges of buf[0] holds `want` in every word. */
static bench_err check_words(raw_fig *f, uint32_t ranges, uint64_t want)
{
    size_t words = (size_t)ranges * BENCH_RANGE_STRIDE / 4;
    uint32_t *host = malloc(words * 4);
    if (!host) return bench_errorf("out of host memory");
    bench_err err = raw_download(f->ctx, &f->buf[0], 0, host, words * 4);
    for (size_t i = 0; !err && i < words; i++) {
        if (i % (BENCH_RANGE_STRIDE / 4) >= BENCH_TINY_WORDS) continue;
        if (host[i] != (uint32_t)want)
            err = bench_errorf("word %zu holds %u, expected %u", i, host[i], (uint32_t)want);
    }
    free(host);
    return err;
}

static bench_err tiny_verify(void *state)
{
    raw_fig *f = state;
    return check_words(f, 1, f->count);
}

/* ---- launch.enqueue: host time per launch, recording batches of `batch` launches into their own
 * command buffers and submitting each batch as it fills, like a runtime would. Consecutive
 * launches increment the same buffer, so a barrier separates each from the one before. ------- */

static bench_err enqueue_setup(void *ctx, const bench_params *params, void **out_state)
{
    raw_fig *f = fig_new(ctx, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    BENCH_TRY(tiny_setup(f, BENCH_RANGE_STRIDE));
    VkCommandPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
        .queueFamilyIndex = f->ctx->queue_family,
    };
    RAW_VK_TRY(vkCreateCommandPool(f->ctx->device, &pool, NULL, &f->pool));
    f->cmd_count = (f->p.enqueue_launches + f->p.batch - 1) / f->p.batch;
    f->cmds = calloc(f->cmd_count, sizeof(VkCommandBuffer));
    if (!f->cmds) return bench_errorf("out of host memory");
    VkCommandBufferAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = f->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = f->cmd_count,
    };
    RAW_VK_TRY(vkAllocateCommandBuffers(f->ctx->device, &alloc, f->cmds));
    return NULL;
}

static bench_err enqueue_run(void *state, bench_sample *out)
{
    raw_fig *f = state;
    raw_ctx *ctx = f->ctx;
    const uint32_t n = f->p.enqueue_launches, batch = f->p.batch;
    RAW_VK_TRY(vkResetCommandPool(ctx->device, f->pool, 0));
    VkDescriptorBufferInfo buffer = whole(&f->buf[0]);

    double t0 = bench_now();
    for (uint32_t i = 0; i < n; i++) {
        VkCommandBuffer cmd = f->cmds[i / batch];
        if (i % batch == 0) BENCH_TRY(raw_begin(cmd));
        record_tiny(f, cmd, buffer); /* barrier + dispatch, as launch.device_dependent records */
        if (i % batch == batch - 1 || i == n - 1) {
            RAW_VK_TRY(vkEndCommandBuffer(cmd));
            VkSubmitInfo submit = {
                .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                .commandBufferCount = 1,
                .pCommandBuffers = &cmd,
            };
            RAW_VK_TRY(
                vkQueueSubmit(ctx->queue, 1, &submit, i == n - 1 ? ctx->fence : VK_NULL_HANDLE));
        }
    }
    double t1 = bench_now();

    RAW_VK_TRY(vkWaitForFences(ctx->device, 1, &ctx->fence, VK_TRUE, UINT64_MAX));
    RAW_VK_TRY(vkResetFences(ctx->device, 1, &ctx->fence));
    f->count += n;
    out->value = (t1 - t0) / n * 1e6;
    return NULL;
}

static const bench_impl enqueue_impl = {enqueue_setup, enqueue_run, tiny_verify, fig_teardown};

/* ---- launch.roundtrip: record one launch, submit, wait on the fence. ------------------------ */

static bench_err tiny_only_setup(void *ctx, const bench_params *params, void **out_state)
{
    raw_fig *f = fig_new(ctx, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    return tiny_setup(f, BENCH_RANGE_STRIDE);
}

static bench_err roundtrip_run(void *state, bench_sample *out)
{
    raw_fig *f = state;
    double t0 = bench_now();
    BENCH_TRY(raw_begin(f->ctx->cmd));
    record_tiny(f, f->ctx->cmd, whole(&f->buf[0]));
    BENCH_TRY(raw_submit_wait(f->ctx, f->ctx->cmd));
    double t1 = bench_now();
    f->count++;
    out->value = (t1 - t0) * 1e6;
    return NULL;
}

static const bench_impl roundtrip_impl = {tiny_only_setup, roundtrip_run, tiny_verify,
                                          fig_teardown};

/* ---- launch.device_dependent: one command buffer of `chain` launches on one buffer, a barrier
 * before each, submitted once and waited for. ----------------------------------------------- */

static bench_err dependent_run(void *state, bench_sample *out)
{
    raw_fig *f = state;
    raw_ctx *ctx = f->ctx;
    const uint32_t n = f->p.chain_launches;
    VkDescriptorBufferInfo buffer = whole(&f->buf[0]);
    double t0 = bench_now();
    BENCH_TRY(raw_begin(ctx->cmd));
    raw_timestamps_begin(ctx, ctx->cmd);
    for (uint32_t i = 0; i < n; i++)
        record_tiny(f, ctx->cmd, buffer);
    raw_timestamps_end(ctx, ctx->cmd);
    BENCH_TRY(raw_submit_wait(ctx, ctx->cmd));
    double t1 = bench_now();
    double device;
    BENCH_TRY(raw_timestamps_read(ctx, &device));
    f->count += n;
    out->value = (t1 - t0) / n * 1e6;
    out->device_value = device / n * 1e6;
    return NULL;
}

static const bench_impl dependent_impl = {tiny_only_setup, dependent_run, tiny_verify,
                                          fig_teardown};

/* ---- launch.device_independent: `chain` launches on disjoint 256-byte ranges, no barrier
 * between them (one before the first orders the batch after the previous run). --------------- */

static bench_err independent_setup(void *ctx, const bench_params *params, void **out_state)
{
    raw_fig *f = fig_new(ctx, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    return tiny_setup(f, (uint64_t)f->p.chain_launches * BENCH_RANGE_STRIDE);
}

static bench_err independent_run(void *state, bench_sample *out)
{
    static const bench_tiny_info info = {.n = BENCH_TINY_WORDS, .step = 1};
    raw_fig *f = state;
    raw_ctx *ctx = f->ctx;
    const uint32_t n = f->p.chain_launches;
    double t0 = bench_now();
    BENCH_TRY(raw_begin(ctx->cmd));
    raw_timestamps_begin(ctx, ctx->cmd);
    raw_barrier(ctx->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, RAW_ACCESS_RW);
    for (uint32_t i = 0; i < n; i++) {
        VkDescriptorBufferInfo range = {.buffer = f->buf[0].buffer,
                                        .offset = (VkDeviceSize)i * BENCH_RANGE_STRIDE,
                                        .range = BENCH_RANGE_STRIDE};
        raw_dispatch(ctx, ctx->cmd, &f->kernel, &range, &info, 1);
    }
    raw_timestamps_end(ctx, ctx->cmd);
    BENCH_TRY(raw_submit_wait(ctx, ctx->cmd));
    double t1 = bench_now();
    double device;
    BENCH_TRY(raw_timestamps_read(ctx, &device));
    f->count++;
    out->value = (t1 - t0) / n * 1e6;
    out->device_value = device / n * 1e6;
    return NULL;
}

static bench_err independent_verify(void *state)
{
    raw_fig *f = state;
    return check_words(f, f->p.chain_launches, f->count);
}

static const bench_impl independent_impl = {independent_setup, independent_run, independent_verify,
                                            fig_teardown};

/* ---- write.h2d / read.d2h: 64 MiB between pageable host memory and a device buffer. -------- */

static bench_err transfer_setup(void *ctx, const bench_params *params, void **out_state)
{
    raw_fig *f = fig_new(ctx, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    const uint64_t bytes = f->p.transfer_bytes;
    BENCH_TRY(raw_buffer_create(f->ctx, bytes, RAW_MEMORY_DEVICE, &f->buf[0]));
    f->host = bench_host_alloc(bytes);
    if (!f->host) return bench_errorf("out of host memory (%llu bytes)", (unsigned long long)bytes);
    bench_content_fill(BENCH_CONTENT_PATTERN, BENCH_TRANSFER_SEED, 0, f->host, bytes / 4);
    /* read.d2h reads this back; write.h2d overwrites it with the same bytes. */
    return raw_upload(f->ctx, &f->buf[0], 0, f->host, bytes);
}

static bench_err h2d_run(void *state, bench_sample *out)
{
    raw_fig *f = state;
    double t0 = bench_now();
    BENCH_TRY(raw_upload(f->ctx, &f->buf[0], 0, f->host, f->p.transfer_bytes));
    double t1 = bench_now();
    out->value = (double)f->p.transfer_bytes / (t1 - t0) * 1e-9;
    return NULL;
}

static bench_err h2d_verify(void *state)
{
    raw_fig *f = state;
    uint32_t *back = bench_host_alloc(f->p.transfer_bytes);
    if (!back) return bench_errorf("out of host memory");
    bench_err err = raw_download(f->ctx, &f->buf[0], 0, back, f->p.transfer_bytes);
    if (!err)
        err = bench_content_check(BENCH_CONTENT_PATTERN, BENCH_TRANSFER_SEED, 0, back,
                                  f->p.transfer_bytes / 4);
    bench_host_free(back);
    return err;
}

static bench_err d2h_run(void *state, bench_sample *out)
{
    raw_fig *f = state;
    /* Cleared so that the check proves the last read wrote every byte (not timed). */
    memset(f->host, 0, f->p.transfer_bytes);
    double t0 = bench_now();
    BENCH_TRY(raw_download(f->ctx, &f->buf[0], 0, f->host, f->p.transfer_bytes));
    double t1 = bench_now();
    out->value = (double)f->p.transfer_bytes / (t1 - t0) * 1e-9;
    return NULL;
}

static bench_err d2h_verify(void *state)
{
    raw_fig *f = state;
    return bench_content_check(BENCH_CONTENT_PATTERN, BENCH_TRANSFER_SEED, 0, f->host,
                               f->p.transfer_bytes / 4);
}

static const bench_impl h2d_impl = {transfer_setup, h2d_run, h2d_verify, fig_teardown};
static const bench_impl d2h_impl = {transfer_setup, d2h_run, d2h_verify, fig_teardown};

/* ---- *_registered / *_pinned: one vkCmdCopyBuffer between host-visible memory and the buffer
 * (what a Vulkan program does with pinned memory; importing the program's pages gives the same
 * kind of buffer), then a fence wait. buf[1] is the host-visible side. ---------------------- */

static bench_err direct_setup(void *ctx, const bench_params *params, void **out_state)
{
    raw_fig *f = fig_new(ctx, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    const uint64_t bytes = f->p.transfer_bytes;
    BENCH_TRY(raw_buffer_create(f->ctx, bytes, RAW_MEMORY_DEVICE, &f->buf[0]));
    BENCH_TRY(raw_buffer_create(f->ctx, bytes, RAW_MEMORY_READBACK, &f->buf[1]));
    if (!f->buf[1].mapped || !f->buf[1].coherent)
        return bench_errorf("no host-visible coherent memory for the pinned side");
    bench_content_fill(BENCH_CONTENT_PATTERN, BENCH_TRANSFER_SEED, 0, f->buf[1].mapped, bytes / 4);
    return raw_upload(f->ctx, &f->buf[0], 0, f->buf[1].mapped, bytes);
}

static bench_err direct_copy(raw_fig *f, raw_buffer *from, raw_buffer *to)
{
    VkCommandBuffer cmd = f->ctx->cmd;
    BENCH_TRY(raw_begin(cmd));
    VkBufferCopy region = {0, 0, f->p.transfer_bytes};
    vkCmdCopyBuffer(cmd, from->buffer, to->buffer, 1, &region);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb,
                         0, NULL, 0, NULL);
    return raw_submit_wait(f->ctx, cmd);
}

static bench_err h2d_direct_run(void *state, bench_sample *out)
{
    raw_fig *f = state;
    double t0 = bench_now();
    BENCH_TRY(direct_copy(f, &f->buf[1], &f->buf[0]));
    double t1 = bench_now();
    out->value = (double)f->p.transfer_bytes / (t1 - t0) * 1e-9;
    return NULL;
}

static bench_err d2h_direct_run(void *state, bench_sample *out)
{
    raw_fig *f = state;
    memset(f->buf[1].mapped, 0, f->p.transfer_bytes);
    double t0 = bench_now();
    BENCH_TRY(direct_copy(f, &f->buf[0], &f->buf[1]));
    double t1 = bench_now();
    out->value = (double)f->p.transfer_bytes / (t1 - t0) * 1e-9;
    return NULL;
}

static bench_err d2h_direct_verify(void *state)
{
    raw_fig *f = state;
    return bench_content_check(BENCH_CONTENT_PATTERN, BENCH_TRANSFER_SEED, 0, f->buf[1].mapped,
                               f->p.transfer_bytes / 4);
}

static const bench_impl h2d_direct_impl = {direct_setup, h2d_direct_run, h2d_verify, fig_teardown};
static const bench_impl d2h_direct_impl = {direct_setup, d2h_direct_run, d2h_direct_verify,
                                           fig_teardown};

/* ---- copy.d2d: vkCmdCopyBuffer, the straightforward device-to-device copy. ----------------- */

/* Fills `b` with `what`, or checks it, a chunk at a time, so that a 1 GiB buffer needs no 1 GiB
 * host copy. */
static bench_err fill_device(raw_fig *f, raw_buffer *b, bench_content what, uint32_t seed)
{
    uint32_t *chunk = malloc(BENCH_CHUNK_BYTES);
    if (!chunk) return bench_errorf("out of host memory");
    bench_err err = NULL;
    for (uint64_t off = 0; !err && off < b->size; off += BENCH_CHUNK_BYTES) {
        uint64_t bytes = b->size - off < BENCH_CHUNK_BYTES ? b->size - off : BENCH_CHUNK_BYTES;
        bench_content_fill(what, seed, off / 4, chunk, bytes / 4);
        err = raw_upload(f->ctx, b, off, chunk, bytes);
    }
    free(chunk);
    return err;
}

static bench_err check_device(raw_fig *f, raw_buffer *b, bench_content what, uint32_t seed)
{
    uint32_t *chunk = malloc(BENCH_CHUNK_BYTES);
    if (!chunk) return bench_errorf("out of host memory");
    bench_err err = NULL;
    for (uint64_t off = 0; !err && off < b->size; off += BENCH_CHUNK_BYTES) {
        uint64_t bytes = b->size - off < BENCH_CHUNK_BYTES ? b->size - off : BENCH_CHUNK_BYTES;
        err = raw_download(f->ctx, b, off, chunk, bytes);
        if (!err) err = bench_content_check(what, seed, off / 4, chunk, bytes / 4);
    }
    free(chunk);
    return err;
}

static bench_err copy_setup(void *ctx, const bench_params *params, void **out_state)
{
    raw_fig *f = fig_new(ctx, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    BENCH_TRY(raw_buffer_create(f->ctx, f->p.copy_bytes, RAW_MEMORY_DEVICE, &f->buf[0]));
    BENCH_TRY(raw_buffer_create(f->ctx, f->p.copy_bytes, RAW_MEMORY_DEVICE, &f->buf[1]));
    return fill_device(f, &f->buf[0], BENCH_CONTENT_PATTERN, BENCH_COPY_SEED);
}

static bench_err copy_run(void *state, bench_sample *out)
{
    raw_fig *f = state;
    raw_ctx *ctx = f->ctx;
    double t0 = bench_now();
    BENCH_TRY(raw_begin(ctx->cmd));
    raw_timestamps_begin(ctx, ctx->cmd);
    raw_barrier(ctx->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                VK_PIPELINE_STAGE_TRANSFER_BIT, RAW_ACCESS_TRANSFER_RW);
    VkBufferCopy region = {.size = f->p.copy_bytes};
    vkCmdCopyBuffer(ctx->cmd, f->buf[0].buffer, f->buf[1].buffer, 1, &region);
    raw_timestamps_end(ctx, ctx->cmd);
    BENCH_TRY(raw_submit_wait(ctx, ctx->cmd));
    double t1 = bench_now();
    double device;
    BENCH_TRY(raw_timestamps_read(ctx, &device));
    double bytes = 2.0 * (double)f->p.copy_bytes; /* read + written */
    out->value = bytes / (t1 - t0) * 1e-9;
    out->device_value = bytes / device * 1e-9;
    return NULL;
}

static bench_err copy_verify(void *state)
{
    raw_fig *f = state;
    return check_device(f, &f->buf[1], BENCH_CONTENT_PATTERN, BENCH_COPY_SEED);
}

static const bench_impl copy_impl = {copy_setup, copy_run, copy_verify, fig_teardown};

/* ---- kernel.vector_add: c = a + b, one launch, grid-stride loop. --------------------------- */

static bench_err vector_setup(void *ctx, const bench_params *params, void **out_state)
{
    raw_fig *f = fig_new(ctx, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    BENCH_TRY(raw_kernel_create(f->ctx, bench_glsl_vector_add, NULL, 0, 3,
                                sizeof(bench_vector_info), &f->kernel));
    const uint64_t bytes = f->p.vector_n * 4;
    for (int i = 0; i < 3; i++)
        BENCH_TRY(raw_buffer_create(f->ctx, bytes, RAW_MEMORY_DEVICE, &f->buf[i]));
    BENCH_TRY(fill_device(f, &f->buf[0], BENCH_CONTENT_VECTOR_A, 0));
    return fill_device(f, &f->buf[1], BENCH_CONTENT_VECTOR_B, 0);
}

static bench_err vector_run(void *state, bench_sample *out)
{
    raw_fig *f = state;
    raw_ctx *ctx = f->ctx;
    const bench_vector_info info = {.n4 = (uint32_t)(f->p.vector_n / 4)};
    VkDescriptorBufferInfo buffers[3] = {whole(&f->buf[0]), whole(&f->buf[1]), whole(&f->buf[2])};
    double t0 = bench_now();
    BENCH_TRY(raw_begin(ctx->cmd));
    raw_timestamps_begin(ctx, ctx->cmd);
    /* Orders this run's writes of c after the previous run's (write after write). */
    raw_barrier(ctx->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, RAW_ACCESS_RW);
    raw_dispatch(ctx, ctx->cmd, &f->kernel, buffers, &info, f->p.vector_groups);
    raw_timestamps_end(ctx, ctx->cmd);
    BENCH_TRY(raw_submit_wait(ctx, ctx->cmd));
    double t1 = bench_now();
    double device;
    BENCH_TRY(raw_timestamps_read(ctx, &device));
    double bytes = 12.0 * (double)f->p.vector_n;
    out->value = bytes / (t1 - t0) * 1e-9;
    out->device_value = bytes / device * 1e-9;
    return NULL;
}

static bench_err vector_verify(void *state)
{
    raw_fig *f = state;
    return check_device(f, &f->buf[2], BENCH_CONTENT_VECTOR_SUM, 0);
}

static const bench_impl vector_impl = {vector_setup, vector_run, vector_verify, fig_teardown};

/* ---- alloc.pair: vkCreateBuffer + vkAllocateMemory + bind, then destroy + free. ------------ */

static bench_err alloc_setup(void *ctx, const bench_params *params, void **out_state)
{
    raw_fig *f = fig_new(ctx, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    return NULL;
}

static bench_err alloc_pair(raw_fig *f, VkDeviceSize size)
{
    VkDevice device = f->ctx->device;
    VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkBuffer buffer;
    RAW_VK_TRY(vkCreateBuffer(device, &info, NULL, &buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, buffer, &req);
    f->alloc_short += req.size < size;
    VkMemoryAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = f->ctx->memory_type[RAW_MEMORY_DEVICE],
    };
    VkDeviceMemory memory;
    VkResult result = vkAllocateMemory(device, &alloc, NULL, &memory);
    if (result == VK_SUCCESS) {
        result = vkBindBufferMemory(device, buffer, memory, 0);
        vkDestroyBuffer(device, buffer, NULL);
        vkFreeMemory(device, memory, NULL);
    } else {
        vkDestroyBuffer(device, buffer, NULL);
    }
    if (result != VK_SUCCESS)
        return bench_errorf("allocating %llu bytes: %s", (unsigned long long)size,
                            raw_result_name(result));
    return NULL;
}

static bench_err alloc_run(void *state, bench_sample *out)
{
    raw_fig *f = state;
    uint64_t pairs = 0;
    double t0 = bench_now();
    for (uint32_t c = 0; c < f->p.alloc_cycles; c++) {
        for (uint64_t s = f->p.alloc_min_bytes; s <= f->p.alloc_max_bytes; s *= 2, pairs++)
            BENCH_TRY(alloc_pair(f, s));
    }
    double t1 = bench_now();
    out->value = (t1 - t0) / (double)pairs * 1e9;
    return NULL;
}

static bench_err alloc_verify(void *state)
{
    raw_fig *f = state;
    if (f->alloc_short)
        return bench_errorf("%llu allocations were smaller than the buffer",
                            (unsigned long long)f->alloc_short);
    return NULL;
}

static const bench_impl alloc_impl = {alloc_setup, alloc_run, alloc_verify, fig_teardown};

/* ---- profile.empty: two timestamps with nothing between, in one command buffer. ---------- */

static bench_err empty_setup(void *ctx, const bench_params *params, void **out_state)
{
    raw_fig *f = fig_new(ctx, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    if (!f->ctx->timestamps) return bench_errorf("the queue writes no timestamps");
    return NULL;
}

static bench_err empty_run(void *state, bench_sample *out)
{
    raw_fig *f = state;
    BENCH_TRY(raw_begin(f->ctx->cmd));
    raw_timestamps_begin(f->ctx, f->ctx->cmd);
    raw_timestamps_end(f->ctx, f->ctx->cmd);
    BENCH_TRY(raw_submit_wait(f->ctx, f->ctx->cmd));
    double seconds = 0;
    BENCH_TRY(raw_timestamps_read(f->ctx, &seconds));
    out->value = seconds * 1e6;
    return NULL;
}

static bench_err empty_verify(void *state)
{
    (void)state;
    return NULL;
}

static const bench_impl empty_impl = {empty_setup, empty_run, empty_verify, fig_teardown};

/* ---- compile.cold / compile.warm_memory: the first launch of a kernel. -------------------- */

#define WARM_SALT 7u

static bench_err salted_setup(void *ctx, const bench_params *params, void **out_state)
{
    raw_fig *f = fig_new(ctx, params, out_state);
    if (!f) return bench_errorf("out of host memory");
    BENCH_TRY(raw_buffer_create(f->ctx, BENCH_RANGE_STRIDE, RAW_MEMORY_DEVICE, &f->buf[0]));
    /* The raw side's salts are odd, cubec's even: neither side can profit from the other. */
    f->salt = f->p.salt_base | 1u;
    return NULL;
}

/* Launches the salted kernel once and waits. */
static bench_err salted_launch(raw_fig *f, const raw_kernel *kernel)
{
    static const bench_tiny_info info = {.n = BENCH_TINY_WORDS, .step = 1};
    VkDescriptorBufferInfo buffer = whole(&f->buf[0]);
    BENCH_TRY(raw_begin(f->ctx->cmd));
    raw_barrier(f->ctx->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, RAW_ACCESS_RW);
    raw_dispatch(f->ctx, f->ctx->cmd, kernel, &buffer, &info, 1);
    return raw_submit_wait(f->ctx, f->ctx->cmd);
}

static bench_err cold_run(void *state, bench_sample *out)
{
    raw_fig *f = state;
    f->salt += 2;
    char value[16];
    snprintf(value, sizeof value, "%u", f->salt);
    const raw_define define = {"SALT", value};
    raw_kernel kernel;
    double t0 = bench_now();
    BENCH_TRY(raw_kernel_create(f->ctx, bench_glsl_salted, &define, 1, 1, sizeof(bench_tiny_info),
                                &kernel));
    bench_err err = salted_launch(f, &kernel);
    double t1 = bench_now();
    raw_kernel_destroy(f->ctx, &kernel);
    out->value = (t1 - t0) * 1e3;
    return err;
}

static bench_err salted_verify(void *state)
{
    raw_fig *f = state;
    uint32_t words[BENCH_TINY_WORDS];
    BENCH_TRY(raw_download(f->ctx, &f->buf[0], 0, words, sizeof words));
    for (uint32_t i = 0; i < BENCH_TINY_WORDS; i++) {
        if (words[i] != 1u + f->salt)
            return bench_errorf("word %u holds %u, expected %u", i, words[i], 1u + f->salt);
    }
    return NULL;
}

static const bench_impl cold_impl = {salted_setup, cold_run, salted_verify, fig_teardown};

/* The straightforward in-memory cache: the program keeps the pipeline it made and, asked for the
 * same kernel again, recognises it by a hash of its source and defines. */
static uint64_t warm_key(const char *source, const raw_define *define)
{
    uint64_t h = bench_hash_str(BENCH_FNV_INIT, source);
    h = bench_hash_str(h, define->name);
    return bench_hash_str(h, define->value);
}

static bench_err warm_setup(void *ctx, const bench_params *params, void **out_state)
{
    BENCH_TRY(salted_setup(ctx, params, out_state));
    raw_fig *f = *out_state;
    f->salt = WARM_SALT;
    const raw_define define = {"SALT", "7"};
    BENCH_TRY(raw_kernel_create(f->ctx, bench_glsl_salted, &define, 1, 1, sizeof(bench_tiny_info),
                                &f->kernel));
    f->kernel_hash = warm_key(bench_glsl_salted, &define);
    return salted_launch(f, &f->kernel);
}

static bench_err warm_run(void *state, bench_sample *out)
{
    raw_fig *f = state;
    const raw_define define = {"SALT", "7"};
    double t0 = bench_now();
    if (warm_key(bench_glsl_salted, &define) != f->kernel_hash)
        return bench_errorf("the cached kernel's key changed");
    BENCH_TRY(salted_launch(f, &f->kernel));
    double t1 = bench_now();
    out->value = (t1 - t0) * 1e3;
    return NULL;
}

static const bench_impl warm_impl = {warm_setup, warm_run, salted_verify, fig_teardown};

const bench_impl_entry bench_raw_impls[] = {
    {"graph.replay_host", &bench_graph_raw_host},
    {"graph.replay_device", &bench_graph_raw_device},
    {"graph.replay_device_independent", &bench_graph_raw_device_independent},
    {"launch.enqueue", &enqueue_impl},
    {"launch.roundtrip", &roundtrip_impl},
    {"launch.device_dependent", &dependent_impl},
    {"launch.device_independent", &independent_impl},
    {"write.h2d", &h2d_impl},
    {"read.d2h", &d2h_impl},
    {"write.h2d_registered", &h2d_direct_impl},
    {"read.d2h_registered", &d2h_direct_impl},
    {"write.h2d_pinned", &h2d_direct_impl},
    {"read.d2h_pinned", &d2h_direct_impl},
    {"copy.d2d", &copy_impl},
    {"kernel.vector_add", &vector_impl},
    {"alloc.pair", &alloc_impl},
    {"compile.cold", &cold_impl},
    {"compile.warm_memory", &warm_impl},
    {"profile.empty", &empty_impl},
    {NULL, NULL},
};
