"""Row-wise softmax from Python: a GLSL kernel with a shared-memory reduction, checked against
numpy.

What it shows: dev.kernel(glsl=..., defines=...) with a workgroup per row, metadata
(CUBEC_INFO) passed as bytes, the two reductions of a numerically stable softmax (the row's
maximum, then the sum of exponentials) done in shared memory, and a result read with buf.numpy().

    python3 examples/python/softmax.py
"""

import struct
import sys
import time

import numpy as np

import cubec

ROWS, COLS = 512, 1000
LOCAL = 128  # invocations per row; each walks the row with a stride of LOCAL

SOFTMAX_GLSL = """
#version 450
layout(local_size_x = LOCAL) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
CUBEC_INFO(uint cols;)
shared float partial[LOCAL];

// partial[0] = the reduction of every invocation's value (max when MAX_OP, else sum).
float workgroup_reduce(float v, bool take_max)
{
    uint t = gl_LocalInvocationID.x;
    partial[t] = v;
    barrier();
    for (uint s = LOCAL / 2; s > 0u; s >>= 1) {
        if (t < s) partial[t] = take_max ? max(partial[t], partial[t + s])
                                         : partial[t] + partial[t + s];
        barrier();
    }
    float r = partial[0];
    barrier(); // everyone has read partial[0] before it is reused
    return r;
}

void main()
{
    uint row = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint base = row * info.cols;
    // Subtracting the row's maximum keeps exp() from overflowing; the result is unchanged.
    float m = -3.402823466e38;
    for (uint c = t; c < info.cols; c += LOCAL) m = max(m, x[base + c]);
    m = workgroup_reduce(m, true);
    float s = 0.0;
    for (uint c = t; c < info.cols; c += LOCAL) s += exp(x[base + c] - m);
    s = workgroup_reduce(s, false);
    for (uint c = t; c < info.cols; c += LOCAL) y[base + c] = exp(x[base + c] - m) / s;
}
"""


def reference(x):
    """numpy's softmax of each row, in float64."""
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run(dev, rows=ROWS, cols=COLS, seed=2):
    """Runs the softmax of a random rows x cols matrix on `dev`; returns input and output."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    kernel = dev.kernel(glsl=SOFTMAX_GLSL, defines={"LOCAL": LOCAL}, name="softmax")
    xb = dev.buffer(x)
    yb = dev.empty((rows, cols), np.float32)
    kernel(xb, yb, groups=(rows, 1, 1), info=struct.pack("<I", cols))
    return {"x": x, "y": yb.numpy()}


def main():
    with cubec.Device() as dev:
        t0 = time.perf_counter()
        r = run(dev)
        elapsed = time.perf_counter() - t0
        expected = reference(r["x"])
        error = np.max(np.abs(r["y"] - expected))
        ok = error <= 5e-6 and np.allclose(r["y"].sum(axis=1), 1.0, atol=1e-5)
        print(f"device: {dev.info['name']}")
        print(f"softmax: {ROWS} rows of {COLS}: {'matches numpy' if ok else 'MISMATCH'} "
              f"(max abs error {error:.2e}) in {elapsed * 1e3:.1f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
