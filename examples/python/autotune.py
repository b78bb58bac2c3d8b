"""Autotuning a matrix multiply from Python, the winner checked against numpy.

What it shows: cubec.Tuner with Python candidates. Each candidate is a callable that queues one
run of the work (here a launch of examples/kernels/tune_matmul.comp built with one workgroup and
tile shape); the tuner runs and profiles each (warm-up, then samples), picks the lowest median
GPU time, remembers the choice for the key and stores it on disk (the kernel cache directory), so
a second run of this program measures nothing. A candidate that raises is rejected with the
exception as its reason, never chosen: one is included to show it.

    python3 examples/python/autotune.py [SIZE]
"""

import os
import struct
import sys

import numpy as np

import cubec

SIZE = 128
KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels",
                      "tune_matmul.comp")
# name: (workgroup x, workgroup y, rows per invocation, columns per invocation)
SHAPES = {
    "wg8x8_r1x1": (8, 8, 1, 1),
    "wg16x16_r1x1": (16, 16, 1, 1),
    "wg16x16_r2x2": (16, 16, 2, 2),
    "wg32x8_r1x4": (32, 8, 1, 4),
}


def run(dev, size=SIZE, seed=3, memory_only=False):
    """Tunes c = a @ b (size x size) on `dev`, runs the winner; returns the inputs, the result,
    the choice and the outcomes."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    ab, bb = dev.buffer(a), dev.buffer(b)
    cb = dev.empty((size, size), np.float32)
    info = struct.pack("<3I", size, size, size)

    def candidate(wg_x, wg_y, rm, rn):
        kernel = dev.kernel(path=KERNEL, name="tune_matmul",
                            defines={"WG_X": wg_x, "WG_Y": wg_y, "RM": rm, "RN": rn, "TK": 16})
        bm, bn = wg_y * rm, wg_x * rn
        groups = ((size + bn - 1) // bn, (size + bm - 1) // bm, 1)
        return lambda: kernel(ab, bb, cb, groups=groups, info=info)

    candidates = {name: candidate(*shape) for name, shape in SHAPES.items()}

    def broken():
        raise ValueError("this candidate is broken on purpose")

    candidates["broken"] = broken
    with cubec.Tuner(dev, "python_autotune_example", samples=5,
                     memory_only=memory_only) as tuner:
        best = tuner.choose(f"{size}x{size}x{size}", candidates)
        outcomes = tuner.outcomes()
    best.candidate()  # the winner, run once more for the result
    return {"a": a, "b": b, "c": cb.numpy(), "best": best, "outcomes": outcomes}


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else SIZE
    with cubec.Device() as dev:
        r = run(dev, size)
        expected = r["a"].astype(np.float64) @ r["b"]
        error = np.max(np.abs(r["c"] - expected))
        ok = error <= 2e-6 * size + 1e-4 * np.max(np.abs(expected))
        print(f"device: {dev.info['name']}")
        best = r["best"]
        print(f"autotune: {size}x{size} matmul, {len(r['outcomes'])} candidates: chose "
              f"{best.name} ({best.source}"
              + (f", median {best.median_ns / 1e3:.1f} us" if best.median_ns else "") + ")")
        for name, o in r["outcomes"].items():
            detail = (f"median {o['median_ns'] / 1e3:.1f} us over {o['samples']} samples"
                      if o["state"] == "timed" else o["reason"] or o["state"])
            print(f"  {name:14s} {o['state']:9s} {detail}")
        print(f"  the winner's result {'matches numpy' if ok else 'MISMATCHES numpy'} "
              f"(max abs error {error:.2e})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
