"""SAXPY (z = a * x + y) from Python: an element-wise template, checked against numpy.

What it shows: cubec.elementwise (a CuPy-style kernel from a one-line body: the GLSL, the
workgroup count and the metadata are generated), a scalar parameter that travels as metadata (a
new `a` recompiles nothing), dev.buffer from numpy arrays and buf.numpy() to read back.

    python3 examples/python/saxpy.py
"""

import sys
import time

import numpy as np

import cubec

N = 1 << 20

# One template, compiled once per device: the second call with another `a` reuses the kernel.
saxpy = cubec.elementwise("float a, float x, float y", "float z", "z = a * x + y", name="saxpy")


def run(dev, n=N, a=2.5, seed=1):
    """Runs SAXPY on `dev`; returns the inputs and the result as numpy arrays."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    z = saxpy(a, dev.buffer(x), dev.buffer(y))
    return {"a": a, "x": x, "y": y, "z": z.numpy()}


def main():
    with cubec.Device() as dev:
        t0 = time.perf_counter()
        r = run(dev)
        elapsed = time.perf_counter() - t0
        # float32 fused or not: a * x + y may differ from numpy by one rounding.
        expected = np.float32(r["a"]) * r["x"] + r["y"]
        ok = np.allclose(r["z"], expected, rtol=1e-6, atol=1e-6)
        print(f"device: {dev.info['name']}")
        print(f"saxpy: {N} elements, a = {r['a']}: "
              f"{'matches numpy' if ok else 'MISMATCH against numpy'} "
              f"(max abs error {np.max(np.abs(r['z'] - expected)):.2e}) in {elapsed * 1e3:.1f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
