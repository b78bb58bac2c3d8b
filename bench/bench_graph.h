/* The graph.* figures (graph_cubec.c, graph_raw.c), registered by name in the sides' tables. */
#ifndef CUBEC_BENCH_GRAPH_H
#define CUBEC_BENCH_GRAPH_H

#include "bench_figure.h"

/* cubec: a captured graph of chain_launches tiny launches, replayed. */
extern const bench_impl bench_graph_replay_host;
extern const bench_impl bench_graph_replay_device;
extern const bench_impl bench_graph_replay_device_independent;
/* cubec: the same launches issued eagerly (the baselines of the *_vs_eager figures). */
extern const bench_impl bench_graph_eager_host;
extern const bench_impl bench_graph_eager_device;
/* raw Vulkan: one command buffer recorded once and resubmitted. */
extern const bench_impl bench_graph_raw_host;
extern const bench_impl bench_graph_raw_device;
extern const bench_impl bench_graph_raw_device_independent;

#endif
