#!/usr/bin/env python3
"""Checks `cubec bench --backend NAME` on the default device.

    bench/test_bench_backend.py CUBEC

Runs `CUBEC bench --quick --json --backend webgpu` on three figures and checks that the JSON
names the backend, that a figure the backend can run is measured against raw Vulkan (both
numbers there, ratio = value / baseline), and that one it refuses (write.h2d_pinned:
cubec_host_alloc is CUBEC_UNSUPPORTED on webgpu) is skipped naming the backend and the refusal,
never an error, so the run exits 0; then that the table's header names the backend, that a
run without --backend says "vulkan", and that profile.empty (a profile's device time) is skipped
as host-measured under CUBEC_TIMING=system and measured otherwise. Speeds are not judged."""
import json
import os
import subprocess
import sys

FIGURES = ["--filter", "launch.roundtrip", "--filter", "write.h2d_pinned"]


def fail(msg):
    print("test_bench_backend: FAILED: " + msg)
    sys.exit(1)


def bench(cubec, args, env):
    p = subprocess.run([cubec, "bench", "--quick"] + args + FIGURES, capture_output=True,
                       text=True, env=env, timeout=280)
    if p.returncode != 0:
        fail("cubec bench %s exited %d: %s" % (" ".join(args), p.returncode, p.stderr[-2000:]))
    return p.stdout


def main():
    cubec = sys.argv[1]
    env = dict(os.environ)
    env.pop("CUBEC_BACKEND", None)  # --backend alone decides
    run = json.loads(bench(cubec, ["--json", "--backend", "webgpu"], env))
    if run.get("backend") != "webgpu":
        fail("the JSON names backend %r, not webgpu" % run.get("backend"))
    rows = {r["name"]: r for r in run["results"]}
    rt = rows.get("launch.roundtrip")
    if not rt or "error" in rt or "skipped" in rt:
        fail("launch.roundtrip was not measured on webgpu: %r" % rt)
    if rt["baseline"] != "raw_vulkan" or not rt["value"] > 0 or not rt["baseline_value"] > 0:
        fail("launch.roundtrip is not measured against raw Vulkan: %r" % rt)
    if abs(rt["ratio"] - rt["value"] / rt["baseline_value"]) > 1e-3 * rt["ratio"]:
        fail("ratio %g is not value / baseline: %r" % (rt["ratio"], rt))
    pinned = rows.get("write.h2d_pinned")
    if not pinned or "error" in pinned:
        fail("write.h2d_pinned on webgpu is an error, not a skip: %r" % pinned)
    why = pinned.get("skipped", "")
    if "webgpu backend refuses" not in why or "CUBEC_UNSUPPORTED" not in why:
        fail("write.h2d_pinned's skip does not name the backend's refusal: %r" % pinned)
    table = bench(cubec, ["--backend=webgpu"], env)
    head = table.splitlines()[0]
    if "backend webgpu" not in head:
        fail("the table's header does not name the backend: %r" % head)
    if "skipped: the webgpu backend refuses it" not in table:
        fail("the table does not show write.h2d_pinned's skip:\n" + table)
    default = json.loads(bench(cubec, ["--json", "--filter", "launch.roundtrip"], env))
    if default.get("backend") != "vulkan":
        fail("without --backend the JSON names %r, not vulkan" % default.get("backend"))
    # A figure whose number is a profile's device time (method "device") is skipped where
    # profiles are host-measured, saying so, and measured where timestamps are written.
    for timing, skipped in (("system", True), (None, False)):
        e = dict(env)
        if timing:
            e["CUBEC_TIMING"] = timing
        rows = {r["name"]: r for r in json.loads(
            bench(cubec, ["--json", "--backend", "webgpu", "--filter", "profile.empty"], e))[
                "results"]}
        empty = rows.get("profile.empty", {})
        if "error" in empty:
            fail("profile.empty failed (CUBEC_TIMING=%s): %r" % (timing, empty))
        why = empty.get("skipped", "")
        if skipped and ("host-measured" not in why or "webgpu" not in why):
            fail("profile.empty with CUBEC_TIMING=system is not skipped as host-measured: %r"
                 % empty)
        if not skipped and why:
            fail("profile.empty is skipped though webgpu writes timestamps here: %r" % empty)
    print("test_bench_backend: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
