"""The MLP of examples/mlp.c from Python, replayed from a captured graph and checked against
numpy.

    x [64 x 256] -> Linear(256 -> 512) + bias -> ReLU -> Linear(512 -> 10) + bias -> logits

What it shows: one GLSL source compiled into two kernels with different defines (with and
without the fused ReLU), a tiled shared-memory matmul, the forward pass run once as a warm-up
and then captured with `with dev.capture(stream) as g:` (the launches inside are recorded, not
run), replays with fresh inputs written between them (one submission per replay, whatever the
number of launches), and the GPU time of one replay from `with dev.profile(stream) as p:`.

    python3 examples/python/mlp_graph.py
"""

import struct
import sys
import time

import numpy as np

import cubec

BATCH, IN_FEATURES, HIDDEN, OUT_FEATURES = 64, 256, 512, 10
TILE = 16
REPLAYS = 20

# The kernel of examples/mlp.c: y[m x n] = x[m x k] * w[k x n] + bias[n] (then ReLU), row-major;
# each TILE x TILE workgroup stages a tile of x and of w in shared memory per step of k.
LINEAR_GLSL = """
#version 450
layout(local_size_x = TILE, local_size_y = TILE) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float w[]; };
layout(set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
CUBEC_INFO(uint m; uint n; uint k;)
shared float tile_x[TILE][TILE];
shared float tile_w[TILE][TILE];
void main()
{
    uint tx = gl_LocalInvocationID.x;
    uint ty = gl_LocalInvocationID.y;
    uint row = gl_WorkGroupID.y * TILE + ty;
    uint col = gl_WorkGroupID.x * TILE + tx;
    float acc = 0.0;
    for (uint t = 0; t < info.k; t += TILE) {
        float xv = 0.0;
        if (row < info.m && t + tx < info.k) xv = x[row * info.k + t + tx];
        float wv = 0.0;
        if (t + ty < info.k && col < info.n) wv = w[(t + ty) * info.n + col];
        tile_x[ty][tx] = xv;
        tile_w[ty][tx] = wv;
        barrier();
        for (uint j = 0; j < TILE; j++) acc += tile_x[ty][j] * tile_w[j][tx];
        barrier();
    }
    if (row < info.m && col < info.n) {
        float v = acc + bias[col];
#ifdef APPLY_RELU
        v = max(v, 0.0);
#endif
        y[row * info.n + col] = v;
    }
}
"""


def parameters(seed=7):
    """Weights uniform in +-1/sqrt(fan_in) (activations of order one), biases in +-0.1."""
    rng = np.random.default_rng(seed)

    def uniform(shape, scale):
        return rng.uniform(-scale, scale, shape).astype(np.float32)

    return {
        "w1": uniform((IN_FEATURES, HIDDEN), 1 / np.sqrt(IN_FEATURES)),
        "b1": uniform(HIDDEN, 0.1),
        "w2": uniform((HIDDEN, OUT_FEATURES), 1 / np.sqrt(HIDDEN)),
        "b2": uniform(OUT_FEATURES, 0.1),
    }


def reference(x, p):
    """The network in float64 with numpy."""
    hidden = np.maximum(x.astype(np.float64) @ p["w1"] + p["b1"], 0.0)
    return hidden @ p["w2"] + p["b2"]


def run(dev, batches=REPLAYS, seed=8):
    """Captures the forward pass and replays it on `batches` random inputs; returns the inputs,
    the parameters, the logits of each replay and the profile of one replay."""
    p = parameters()
    rng = np.random.default_rng(seed)
    inputs = [rng.uniform(-1, 1, (BATCH, IN_FEATURES)).astype(np.float32) for _ in range(batches)]
    linear_relu = dev.kernel(glsl=LINEAR_GLSL, defines={"TILE": TILE, "APPLY_RELU": None},
                             name="linear_relu", optimize=True)
    linear = dev.kernel(glsl=LINEAR_GLSL, defines={"TILE": TILE}, name="linear", optimize=True)
    stream = dev.stream()
    w1, b1, w2, b2 = (dev.buffer(p[k], stream=stream) for k in ("w1", "b1", "w2", "b2"))
    x = dev.empty((BATCH, IN_FEATURES), np.float32, stream=stream)
    hidden = dev.empty((BATCH, HIDDEN), np.float32, stream=stream)
    logits = dev.empty((BATCH, OUT_FEATURES), np.float32, stream=stream)

    def forward():
        # One workgroup per TILE x TILE block of each output, rounding up.
        linear_relu(x, w1, b1, hidden, stream=stream,
                    groups=((HIDDEN + TILE - 1) // TILE, (BATCH + TILE - 1) // TILE, 1),
                    info=struct.pack("<3I", BATCH, HIDDEN, IN_FEATURES))
        linear(hidden, w2, b2, logits, stream=stream,
               groups=((OUT_FEATURES + TILE - 1) // TILE, (BATCH + TILE - 1) // TILE, 1),
               info=struct.pack("<3I", BATCH, OUT_FEATURES, HIDDEN))

    # The warm-up: pipelines made, buffers placed. Then the same launches, recorded.
    x.write(inputs[0], stream=stream)
    forward()
    stream.sync()
    with dev.capture(stream) as graph:
        forward()

    results, replay_s = [], 0.0
    for batch in inputs:
        x.write(batch, stream=stream)  # ordered before the replay on the stream
        t0 = time.perf_counter()
        graph.replay()
        replay_s += time.perf_counter() - t0
        results.append(logits.numpy(stream=stream, copy=True))  # kept across replays
    with dev.profile(stream) as prof:
        graph.replay()
    return {"params": p, "inputs": inputs, "logits": results, "profile": prof.result,
            "replay_enqueue_s": replay_s / len(inputs)}


def main():
    with cubec.Device() as dev:
        r = run(dev)
        errors = [np.max(np.abs(out - reference(x, r["params"])))
                  for x, out in zip(r["inputs"], r["logits"])]
        ok = max(errors) <= 1e-4
        print(f"device: {dev.info['name']}")
        print(f"mlp_graph: {BATCH} x {IN_FEATURES} -> Linear({IN_FEATURES}->{HIDDEN})+ReLU -> "
              f"Linear({HIDDEN}->{OUT_FEATURES}), captured once, replayed {len(errors)} times "
              f"on fresh inputs: {'every replay matches numpy' if ok else 'MISMATCH'} "
              f"(max abs error {max(errors):.2e})")
        print(f"  replay enqueue {r['replay_enqueue_s'] * 1e6:.1f} us; one replay on the GPU "
              f"{r['profile']['duration_ns'] / 1e3:.1f} us ({r['profile']['method']} timing)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
