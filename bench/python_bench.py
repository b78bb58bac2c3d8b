#!/usr/bin/env python3
"""The Python binding's cost against C, in one process on one device (issue 23, section 3).

  launch.c          C loop of cubec_launch (3 buffers, 8 bytes of info) + flush, per launch
  launch.python     k(a, b, c, groups=1, info=record) from Python, per launch
  launch.bound      l() of l = k.bind(a, b, c, groups=1, info=record), per launch
  launch.dict       k(a, b, c, groups=1, info={"n": 64, "alpha": 2.0}): members by name
  replay.c          C loop of cubec_graph_replay of a one-launch graph (g._replay_loop_c), per
                    replay
  replay.python     g.replay() from Python on the same graph and stream, per replay
  replay.dry.c/.python  the same two inside a dry-run window of the stream: each replay is
                    checked and dropped, no submission, so what is left is the call's own cost
                    (on lavapipe a real replay is a 30-60 us submission whose noise hides the
                    binding's fraction of a microsecond)
  import            `import cubec` in a fresh interpreter (median of runs)
  h2d/d2h.c         pinned memory (cubec_host_alloc) <-> a buffer, cubec_write + sync and
                    cubec_read from C, GB/s
  h2d/d2h.python    host_empty arrays (the same kind of memory) <-> a buffer through
                    Buffer.write + Device.sync and Buffer.read, GB/s

The launch figures alternate C, Python and bound rounds of 1000 launches, each round ending in
a sync that is not timed, and keep each one's median, so that drift of the machine hits all
three alike; rounds this short measure the enqueue (a long run measures how fast the device
drains the queue, since cubec waits when it is full). Transfers alternate C and Python and keep
the best of each. Replays alternate C and Python rounds the
same way. Targets: Python <= 0.7 us over C, bound <= 0.2 us over C, replay <= 0.5 us over C,
import <= 100 ms, host_empty within 10 % of C. Run from the build tree:
  PYTHONPATH=build/python python3 bench/python_bench.py [--quick] [--json]
(`make bench` runs it after `cubec bench`). Exits 0 whatever the figures: it measures.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import cubec

# The kernel the Python tests check (3 buffers, 8 bytes of info), defined once beside them; no
# bytecode is left in the source tree for it.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "python"))
from saxpy_kernel import SAXPY, saxpy_info  # noqa: E402 (found through the path above)


def launch_figures(dev, n, rounds):
    k = dev.kernel(glsl=SAXPY, name="bench_saxpy")
    x = np.arange(64, dtype=np.float32)
    a, b, c = dev.buffer(x), dev.buffer(x), dev.empty(64)
    info = saxpy_info(64, 2.0)
    s = dev.stream()
    bound = k.bind(a, b, c, groups=1, info=info, stream=s)
    bufs = (a, b, c)

    def c_round():
        return cubec._cubec._bench_launch(k, bufs, 1, info, n, s)

    def py_round():
        t0 = time.perf_counter()
        for _ in range(n):
            k(a, b, c, groups=1, info=info, stream=s)
        s.flush()
        return (time.perf_counter() - t0) / n

    def dict_round():
        t0 = time.perf_counter()
        for _ in range(n):
            k(a, b, c, groups=1, info={"n": 64, "alpha": 2.0}, stream=s)
        s.flush()
        return (time.perf_counter() - t0) / n

    def bound_round():
        t0 = time.perf_counter()
        for _ in range(n):
            bound()
        s.flush()
        return (time.perf_counter() - t0) / n

    samples = {"launch.c": [], "launch.python": [], "launch.bound": [], "launch.dict": []}
    for r in range(rounds + 1):
        for name, fn in (("launch.c", c_round), ("launch.python", py_round),
                         ("launch.bound", bound_round), ("launch.dict", dict_round)):
            value = fn()
            s.sync()
            if r:  # the first round warms caches and pools
                samples[name].append(value * 1e6)
    np.testing.assert_allclose(c.numpy(), 2.0 * x + x)  # the launches ran
    return {name: statistics.median(v) for name, v in samples.items()}


def replay_figures(dev, n, rounds):
    """g.replay() from Python against cubec_graph_replay from a C loop, on one graph of the
    launch above (3 buffers, 8 bytes of info) and one stream, rounds alternating."""
    k = dev.kernel(glsl=SAXPY, name="bench_saxpy")
    s = dev.stream()
    x = np.arange(64, dtype=np.float32)
    a, b, c = dev.buffer(x, stream=s), dev.buffer(x, stream=s), dev.empty(64, stream=s)
    info = saxpy_info(64, 3.0)
    k(a, b, c, groups=1, info=info, stream=s)  # the warm-up
    s.sync()
    with dev.capture(s) as g:
        k(a, b, c, groups=1, info=info, stream=s)
    replay = g.replay

    def c_round():
        return g._replay_loop_c(n) / n

    def py_round():
        t0 = time.perf_counter()
        for _ in range(n):
            replay()
        return (time.perf_counter() - t0) / n

    def alternate(prefix, count):
        nonlocal n
        n = count
        samples = {prefix + ".c": [], prefix + ".python": []}
        for r in range(rounds + 1):
            for name, fn in ((prefix + ".c", c_round), (prefix + ".python", py_round)):
                value = fn()
                s.sync()
                if r:  # the first round warms caches
                    samples[name].append(value * 1e6)
        return {name: statistics.median(v) for name, v in samples.items()}

    real_count = n
    fig = alternate("replay", real_count)
    np.testing.assert_allclose(c.numpy(stream=s), 3.0 * x + x)  # the replays ran
    c.fill(0.0, stream=s)
    with dev.run_window("dry", s):
        fig.update(alternate("replay.dry", real_count * 10))
    np.testing.assert_array_equal(c.numpy(stream=s), 0.0)  # the dry replays were dropped
    g.close()
    return fig


def import_time(runs):
    code = "import time; t = time.perf_counter(); import cubec; print(time.perf_counter() - t)"
    times = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env=dict(os.environ))
        times.append(float(out.stdout) * 1e3)
    return statistics.median(times)


def transfer_figures(dev, nbytes, reps):
    """Best of `reps` of each, C and Python turn about, on the same buffer and pinned memory."""
    c_host = dev.host_empty(nbytes, "uint8")
    py_host = dev.host_empty(nbytes, "uint8")
    c_host[:] = 0x5A
    py_host[:] = 0xA5
    c_buf, py_buf = dev.empty(nbytes, "uint8"), dev.empty(nbytes, "uint8")
    c_up = c_down = up = down = float("inf")
    for _ in range(reps):
        u, d = cubec._cubec._bench_transfer(c_buf, c_host)
        c_up, c_down = min(c_up, u), min(c_down, d)
        t0 = time.perf_counter()
        py_buf.write(py_host)
        dev.sync()
        t1 = time.perf_counter()
        py_buf.read(out=py_host)
        t2 = time.perf_counter()
        up, down = min(up, t1 - t0), min(down, t2 - t1)
    assert c_host[-1] == 0x5A and py_host[-1] == 0xA5  # each read brought its bytes back
    gbs = lambda seconds: nbytes / seconds * 1e-9  # noqa: E731
    return {"h2d.c": gbs(c_up), "h2d.python": gbs(up), "d2h.c": gbs(c_down),
            "d2h.python": gbs(down)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few launches and rounds (a smoke run)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    # 16 MiB, many times: on a busy CPU device short transfers find quiet moments; `cubec
    # bench` moves 64 MiB (--mib 64 compares at its size).
    ap.add_argument("--mib", type=int, default=None, help="MiB per transfer (default 16)")
    args = ap.parse_args()
    n, rounds, mib, reps, imports = (500, 5, 8, 3, 3) if args.quick else (1000, 41, 16, 21, 7)
    mib = args.mib or mib
    with cubec.Device() as dev:
        fig = {"device": dev.info["name"]}
        fig.update(launch_figures(dev, n, rounds))
        # Each replay is a submission: fewer per round than launches (lavapipe runs each).
        fig.update(replay_figures(dev, max(n // 10, 20), rounds))
        fig.update(transfer_figures(dev, mib << 20, reps))
    fig["import_ms"] = import_time(imports)
    fig["python_over_c_us"] = fig["launch.python"] - fig["launch.c"]
    fig["bound_over_c_us"] = fig["launch.bound"] - fig["launch.c"]
    fig["replay_over_c_us"] = fig["replay.python"] - fig["replay.c"]
    fig["replay_dry_over_c_us"] = fig["replay.dry.python"] - fig["replay.dry.c"]
    if args.json:
        print(json.dumps(fig, indent=2))
        return
    ok = lambda good: "ok" if good else "OVER TARGET"  # noqa: E731
    print("cubec Python binding on %s" % fig["device"])
    print("  launch, C loop           %7.3f us" % fig["launch.c"])
    print("  launch, Python k(...)    %7.3f us   +%.3f us over C (target <= 0.7)  %s" % (
        fig["launch.python"], fig["python_over_c_us"], ok(fig["python_over_c_us"] <= 0.7)))
    print("  launch, info= a dict     %7.3f us   +%.3f us over C (no target)" % (
        fig["launch.dict"], fig["launch.dict"] - fig["launch.c"]))
    print("  launch, pre-bound l()    %7.3f us   +%.3f us over C (target <= 0.2)  %s" % (
        fig["launch.bound"], fig["bound_over_c_us"], ok(fig["bound_over_c_us"] <= 0.2)))
    print("  graph replay, C loop     %7.3f us" % fig["replay.c"])
    print("  graph replay, g.replay() %7.3f us   %+.3f us over C (target <= 0.5)  %s" % (
        fig["replay.python"], fig["replay_over_c_us"], ok(fig["replay_over_c_us"] <= 0.5)))
    print("  dry replay, C / Python   %7.3f / %.3f us   %+.3f us over C (the call alone)  %s" % (
        fig["replay.dry.c"], fig["replay.dry.python"], fig["replay_dry_over_c_us"],
        ok(fig["replay_dry_over_c_us"] <= 0.5)))
    print("  import cubec             %7.1f ms   (target <= 100)  %s" % (
        fig["import_ms"], ok(fig["import_ms"] <= 100)))
    for d in ("h2d", "d2h"):
        c, p = fig[d + ".c"], fig[d + ".python"]
        print("  %s %d MiB, pinned C   %7.2f GB/s; host_empty from Python %7.2f GB/s (%+.1f %%, "
              "target within 10 %%)  %s" % (d, mib, c, p, (p / c - 1) * 100, ok(p >= 0.9 * c)))


if __name__ == "__main__":
    main()
