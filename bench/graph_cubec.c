/* The cubec side of the graph.* figures: a graph of `chain_launches` (1000) tiny launches,
 * captured once and replayed, and the same launches issued eagerly through cubec (the second
 * baseline of the issue: what a graph saves over eager launches).
 *
 *  graph.replay_host              host time of one cubec_graph_replay call
 *  graph.replay_device            device time per launch of a replay (cubec_profile_*), the
 *                                 launches forming a chain on one buffer (each reads the last)
 *  graph.replay_device_independent  the same over disjoint buffers (no barriers needed)
 *  graph.replay_host_vs_eager     replay host time against the eager launches + flush
 *  graph.replay_device_vs_eager   replay device time per launch against the eager chain's
 *
 * Each replay adds 1 to every word of the tiny buffers once per launch, so verify checks the
 * total number of launches that ran. */
#include "bench_graph.h"
#include "bench_kernels.h"

#include <cubec/cubec.h>

#include <stdlib.h>

#define CU_TRY(call) BENCH_TRY(bench_from_status((call), #call))

typedef struct graph_fig {
    cubec_device *dev;
    cubec_stream stream;
    bench_params p;
    cubec_kernel kernel;
    cubec_buffer *bufs; /* one (chain) or chain_launches (independent) */
    uint32_t buf_count;
    cubec_graph graph;
    uint64_t rounds; /* times the launches ran: what every word must hold */
} graph_fig;

static void graph_teardown(void *state)
{
    graph_fig *f = state;
    if (!f) return;
    bench_err_free(bench_from_status(cubec_graph_destroy(f->dev, f->stream, f->graph), "destroy"));
    for (uint32_t i = 0; i < f->buf_count; i++)
        cubec_status_free(cubec_buffer_release(f->dev, f->bufs[i]));
    free(f->bufs);
    cubec_status_free(cubec_kernel_destroy(f->dev, f->kernel));
    free(f);
}

/* The launches: on bufs[0] each time (a chain), or one per buffer. */
static bench_err issue(graph_fig *f)
{
    static const bench_tiny_info info = {.n = BENCH_TINY_WORDS, .step = 1};
    for (uint32_t i = 0; i < f->p.chain_launches; i++) {
        const cubec_launch_desc desc = {.struct_size = sizeof(cubec_launch_desc),
                                        .kernel = f->kernel,
                                        .buffers = &f->bufs[f->buf_count > 1 ? i : 0],
                                        .buffer_count = 1,
                                        .info = &info,
                                        .info_size = sizeof info,
                                        .groups = {1, 1, 1}};
        CU_TRY(cubec_launch(f->dev, f->stream, &desc));
    }
    return NULL;
}

static bench_err setup(void *dev, const bench_params *params, int independent, int capture,
                       void **out_state)
{
    graph_fig *f = calloc(1, sizeof *f);
    *out_state = f;
    if (!f) return bench_errorf("out of host memory");
    f->dev = dev;
    f->p = *params;
    CU_TRY(cubec_stream_new(f->dev, &f->stream));
    const cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "bench_tiny", .glsl = bench_glsl_tiny};
    CU_TRY(cubec_kernel_create(f->dev, &kd, &f->kernel));
    uint32_t n = independent ? f->p.chain_launches : 1;
    f->bufs = calloc(n, sizeof *f->bufs);
    if (!f->bufs) return bench_errorf("out of host memory");
    for (; f->buf_count < n; f->buf_count++) {
        cubec_buffer *b = &f->bufs[f->buf_count];
        CU_TRY(cubec_buffer_create(f->dev, f->stream, BENCH_RANGE_STRIDE, b));
        CU_TRY(cubec_fill(f->dev, f->stream, *b, 0, BENCH_RANGE_STRIDE, 0));
    }
    CU_TRY(cubec_sync(f->dev, f->stream));
    if (!capture) return NULL;
    /* Warm-up (pipelines made, memory placed), then the capture of the same launches. */
    CU_TRY(cubec_graph_prepare(f->dev, f->stream));
    BENCH_TRY(issue(f));
    f->rounds++;
    CU_TRY(cubec_graph_begin(f->dev, f->stream));
    BENCH_TRY(issue(f));
    CU_TRY(cubec_graph_end(f->dev, f->stream, &f->graph));
    CU_TRY(cubec_sync(f->dev, f->stream));
    return NULL;
}

static bench_err setup_chain(void *dev, const bench_params *params, void **out_state)
{
    return setup(dev, params, 0, 1, out_state);
}

static bench_err setup_independent(void *dev, const bench_params *params, void **out_state)
{
    return setup(dev, params, 1, 1, out_state);
}

static bench_err setup_eager(void *dev, const bench_params *params, void **out_state)
{
    return setup(dev, params, 0, 0, out_state);
}

static bench_err verify(void *state)
{
    graph_fig *f = state;
    uint64_t want = f->buf_count > 1 ? f->rounds : f->rounds * f->p.chain_launches;
    for (uint32_t b = 0; b < f->buf_count; b++) {
        uint32_t words[BENCH_TINY_WORDS];
        CU_TRY(cubec_read(f->dev, f->stream, f->bufs[b], 0, words, sizeof words));
        for (uint32_t i = 0; i < BENCH_TINY_WORDS; i++)
            if (words[i] != (uint32_t)want)
                return bench_errorf("buffer %u word %u holds %u, expected %u", b, i, words[i],
                                    (uint32_t)want);
    }
    return NULL;
}

static bench_err replay_host_run(void *state, bench_sample *out)
{
    graph_fig *f = state;
    double t0 = bench_now();
    CU_TRY(cubec_graph_replay(f->dev, f->stream, f->graph));
    double t1 = bench_now();
    CU_TRY(cubec_sync(f->dev, f->stream));
    f->rounds++;
    out->value = (t1 - t0) * 1e6;
    return NULL;
}

/* Device time of the work between a profile's begin and end, per launch. */
static bench_err profiled(graph_fig *f, int replay, bench_sample *out)
{
    cubec_profile prof;
    CU_TRY(cubec_profile_begin(f->dev, f->stream, &prof));
    if (replay)
        CU_TRY(cubec_graph_replay(f->dev, f->stream, f->graph));
    else
        BENCH_TRY(issue(f));
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    CU_TRY(cubec_profile_end(f->dev, f->stream, prof, &r));
    f->rounds++;
    out->value = (double)r.duration_ns / 1e3 / f->p.chain_launches;
    return NULL;
}

static bench_err replay_device_run(void *state, bench_sample *out)
{
    return profiled(state, 1, out);
}

static bench_err eager_device_run(void *state, bench_sample *out)
{
    return profiled(state, 0, out);
}

static bench_err eager_host_run(void *state, bench_sample *out)
{
    graph_fig *f = state;
    double t0 = bench_now();
    BENCH_TRY(issue(f));
    CU_TRY(cubec_flush(f->dev, f->stream));
    double t1 = bench_now();
    CU_TRY(cubec_sync(f->dev, f->stream));
    f->rounds++;
    out->value = (t1 - t0) * 1e6;
    return NULL;
}

const bench_impl bench_graph_replay_host = {setup_chain, replay_host_run, verify, graph_teardown};
const bench_impl bench_graph_replay_device = {setup_chain, replay_device_run, verify,
                                              graph_teardown};
const bench_impl bench_graph_replay_device_independent = {setup_independent, replay_device_run,
                                                          verify, graph_teardown};
const bench_impl bench_graph_eager_host = {setup_eager, eager_host_run, verify, graph_teardown};
const bench_impl bench_graph_eager_device = {setup_eager, eager_device_run, verify, graph_teardown};
