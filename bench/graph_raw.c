/* The raw Vulkan side of the graph.* figures: the best a program can do without a runtime, one
 * command buffer holding the chain_launches tiny launches, recorded once and resubmitted. In a
 * chain a barrier precedes every launch (each reads the last one's output); over disjoint ranges
 * one barrier orders the whole buffer after the previous submission. Timestamps bracket the
 * recorded work, so each run yields the host time of vkQueueSubmit and the device time. */
#include "bench_graph.h"
#include "bench_kernels.h"
#include "raw_vulkan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct graph_raw {
    raw_ctx *ctx;
    bench_params p;
    raw_kernel kernel;
    raw_buffer buf;
    int independent;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    uint64_t rounds;
} graph_raw;

static void raw_graph_teardown(void *state)
{
    graph_raw *f = state;
    if (!f) return;
    vkDeviceWaitIdle(f->ctx->device);
    if (f->pool) vkDestroyCommandPool(f->ctx->device, f->pool, NULL);
    raw_kernel_destroy(f->ctx, &f->kernel);
    raw_buffer_destroy(f->ctx, &f->buf);
    free(f);
}

static bench_err raw_graph_setup(void *ctx, const bench_params *params, int independent,
                                 void **out_state)
{
    static const bench_tiny_info info = {.n = BENCH_TINY_WORDS, .step = 1};
    graph_raw *f = calloc(1, sizeof *f);
    *out_state = f;
    if (!f) return bench_errorf("out of host memory");
    f->ctx = ctx;
    f->p = *params;
    f->independent = independent;
    uint32_t n = f->p.chain_launches;
    uint64_t bytes = (uint64_t)(independent ? n : 1) * BENCH_RANGE_STRIDE;
    BENCH_TRY(raw_kernel_create(f->ctx, bench_glsl_tiny, NULL, 0, 1, sizeof info, &f->kernel));
    BENCH_TRY(raw_buffer_create(f->ctx, bytes, RAW_MEMORY_DEVICE, &f->buf));
    void *zeros = calloc(1, bytes);
    if (!zeros) return bench_errorf("out of host memory");
    bench_err err = raw_upload(f->ctx, &f->buf, 0, zeros, bytes);
    free(zeros);
    BENCH_TRY(err);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .queueFamilyIndex = f->ctx->queue_family};
    RAW_VK_TRY(vkCreateCommandPool(f->ctx->device, &pci, NULL, &f->pool));
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = f->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    RAW_VK_TRY(vkAllocateCommandBuffers(f->ctx->device, &ai, &f->cmd));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    RAW_VK_TRY(vkBeginCommandBuffer(f->cmd, &bi));
    raw_timestamps_begin(f->ctx, f->cmd);
    if (independent)
        raw_barrier(f->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, RAW_ACCESS_RW);
    for (uint32_t i = 0; i < n; i++) {
        VkDescriptorBufferInfo range = {.buffer = f->buf.buffer,
                                        .offset =
                                            independent ? (VkDeviceSize)i * BENCH_RANGE_STRIDE : 0,
                                        .range = BENCH_RANGE_STRIDE};
        if (!independent)
            raw_barrier(f->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, RAW_ACCESS_RW);
        raw_dispatch(f->ctx, f->cmd, &f->kernel, &range, &info, 1);
    }
    raw_timestamps_end(f->ctx, f->cmd);
    RAW_VK_TRY(vkEndCommandBuffer(f->cmd));
    return NULL;
}

static bench_err setup_chain(void *ctx, const bench_params *params, void **out_state)
{
    return raw_graph_setup(ctx, params, 0, out_state);
}

static bench_err setup_independent(void *ctx, const bench_params *params, void **out_state)
{
    return raw_graph_setup(ctx, params, 1, out_state);
}

/* One resubmission: returns the host time of the submit and the device time of the work. */
static bench_err resubmit(graph_raw *f, double *host_s, double *device_s)
{
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &f->cmd};
    double t0 = bench_now();
    RAW_VK_TRY(vkQueueSubmit(f->ctx->queue, 1, &si, f->ctx->fence));
    double t1 = bench_now();
    RAW_VK_TRY(vkWaitForFences(f->ctx->device, 1, &f->ctx->fence, VK_TRUE, UINT64_MAX));
    RAW_VK_TRY(vkResetFences(f->ctx->device, 1, &f->ctx->fence));
    BENCH_TRY(raw_timestamps_read(f->ctx, device_s));
    f->rounds++;
    *host_s = t1 - t0;
    return NULL;
}

static bench_err host_run(void *state, bench_sample *out)
{
    graph_raw *f = state;
    double host = 0, device = 0;
    BENCH_TRY(resubmit(f, &host, &device));
    out->value = host * 1e6;
    out->device_value = device / f->p.chain_launches * 1e6;
    return NULL;
}

static bench_err device_run(void *state, bench_sample *out)
{
    graph_raw *f = state;
    double host = 0, device = 0;
    BENCH_TRY(resubmit(f, &host, &device));
    if (!isfinite(device)) return bench_errorf("the queue writes no timestamps");
    out->value = device / f->p.chain_launches * 1e6;
    return NULL;
}

static bench_err raw_graph_verify(void *state)
{
    graph_raw *f = state;
    uint32_t ranges = f->independent ? f->p.chain_launches : 1;
    uint64_t want = f->independent ? f->rounds : f->rounds * f->p.chain_launches;
    size_t words = (size_t)ranges * BENCH_RANGE_STRIDE / 4;
    uint32_t *host = malloc(words * 4);
    if (!host) return bench_errorf("out of host memory");
    bench_err err = raw_download(f->ctx, &f->buf, 0, host, words * 4);
    for (size_t i = 0; !err && i < words; i++) {
        if (i % (BENCH_RANGE_STRIDE / 4) >= BENCH_TINY_WORDS) continue;
        if (host[i] != (uint32_t)want)
            err = bench_errorf("word %zu holds %u, expected %u", i, host[i], (uint32_t)want);
    }
    free(host);
    return err;
}

const bench_impl bench_graph_raw_host = {setup_chain, host_run, raw_graph_verify,
                                         raw_graph_teardown};
const bench_impl bench_graph_raw_device = {setup_chain, device_run, raw_graph_verify,
                                           raw_graph_teardown};
const bench_impl bench_graph_raw_device_independent = {setup_independent, device_run,
                                                       raw_graph_verify, raw_graph_teardown};
