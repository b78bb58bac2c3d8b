#!/usr/bin/env python3
"""One side-by-side table of cubec and its peers from the files of one run.

    bench/side_by_side.py DIR [--json OUT.json] [--markdown OUT.md]

DIR holds what bench/h200_side_by_side.sh leaves there: <name>-<round>.json from `cubec bench
--json`, and the peers' outputs cuda_c-<round>.txt (../shared/peers/cuda_c_peer), wgpu-<round>.txt
(wgpu_peer), torch-<round>.txt (cuda_peer.py), torch_matmul-<round>.txt
(bench/torch_matmul_peer.py) and nccl_torch-<round>.txt (bench/nccl_torch_peer.py), any of which
may be missing. For every cubec figure the table shows each cubec build's value, raw Vulkan's,
and each peer's counterpart (the median over rounds of the peer's own medians; the range over
rounds in parentheses when it has more than one). Peers measure their own way: the mapping below
names the peer line each figure is compared with, and says "device" where the peer's number is
device time (timestamps or events) while cubec's is wall time; words a peer prints after the
unit ("ranks=1 copy") follow its number. The JSON carries the same numbers, and each row cubec's
note (the multi.* rows': the path the pair's copies took), which the markdown lists under the
table.

A run on another backend (`cubec bench --json --backend webgpu`: "backend" in its JSON) is a
column of its own, "<name>-<backend>" (e.g. cubec-webgpu), whatever its file is called; and
where the wgpu peer ran, each such column gets a "<name>-<backend> / wgpu" column: how many times
slower than wgpu-native used directly it is (above 1 slower, below 1 ahead, whichever way the
unit reads), the issue's measure for the webgpu backend (within 1.5x; ahead on enqueue and
graph replay).
"""
import fnmatch
import glob
import json
import os
import re
import statistics
import sys

# cubec figure -> [(peer, peer figure or regex over its text, note)]
PEERS = {
    "launch.enqueue": [("cuda_c", "cuda.enqueue_per_launch_10000", ""),
                       ("wgpu", "wgpu.enqueue_one_pass_one_submit", ""),
                       ("torch", r"b\. torch enqueue per launch us: ([\d.]+)", "")],
    "launch.roundtrip": [("cuda_c", "cuda.roundtrip_launch_sync", ""),
                         ("wgpu", "wgpu.roundtrip_poll", ""),
                         ("torch", r"a\. tiny launch round trip \(launch\+sync\) us: ([\d.]+)", "")],
    # cubec's value is wall time per launch: wgpu's wall time per dispatch of one pass.
    "launch.device_dependent": [("cuda_c", "cuda.dependent_device_per_launch_queued", "device"),
                                ("wgpu", "wgpu.dependent_wall_one_pass", ""),
                                ("torch", r"b\. device time per launch \(events\) us: ([\d.]+)",
                                 "device")],
    "launch.device_independent": [("cuda_c", "cuda.independent_device_per_launch_queued", "device"),
                                  ("wgpu", "wgpu.independent_wall_one_pass", "")],
    # WebGPU has no graphs: CubeCL's wgpu server replays one by encoding its dispatches again, so
    # the peer's counterpart of a 1000-launch replay is encoding and submitting 1000 dispatches
    # in one pass (its per-dispatch figure x 1000), and the per-node device times are its
    # device times per dispatch.
    "graph.replay_host": [("cuda_c", "cuda.graph1000_replay_host", ""),
                          ("wgpu", "wgpu.enqueue_one_pass_one_submit", "", 1000),
                          ("torch", r"c\. graph\(1000\) replay CPU cost us: ([\d.]+)", "")],
    "graph.replay_device": [("cuda_c", "cuda.graph1000_device_per_node", ""),
                            ("wgpu", "wgpu.dependent_device_ts", ""),
                            ("torch", r"c\. graph\(1000\) device time per node us: ([\d.]+)", "")],
    "graph.replay_device_independent": [("cuda_c", "cuda.graph1000_indep_device_per_node", ""),
                                        ("wgpu", "wgpu.independent_device_ts", "")],
    # The peer's sizes follow WGPU_PEER_QUICK (16 MiB / 64 MiB / 2^22 on lavapipe): a name with
    # a "*" takes the line of any size, and the table says which it was.
    "write.h2d": [("cuda_c", "cuda.h2d_64MiB_pageable", ""),
                  ("wgpu", "wgpu.h2d_writeBuffer_*", ""),
                  ("torch", r"d\. H2D pageable GB/s: ([\d.]+)", "")],
    "read.d2h": [("cuda_c", "cuda.d2h_64MiB_pageable", ""),
                 ("wgpu", "wgpu.d2h_mapread_*iB", ""),
                 ("torch", r"d\. D2H pageable GB/s: ([\d.]+)", "")],
    "write.h2d_registered": [("cuda_c", "cuda.h2d_64MiB_registered", "")],
    "read.d2h_registered": [("cuda_c", "cuda.d2h_64MiB_registered", "")],
    "write.h2d_pinned": [("cuda_c", "cuda.h2d_64MiB_pinned", ""),
                         ("torch", r"d\. H2D pinned GB/s: ([\d.]+)", "")],
    "read.d2h_pinned": [("cuda_c", "cuda.d2h_64MiB_pinned", ""),
                        ("torch", r"d\. D2H pinned GB/s: ([\d.]+)", "")],
    # wgpu: copyBufferToBuffer, wall time (what cubec_copy is on the webgpu backend).
    "copy.d2d": [("cuda_c", "cuda.d2d_cuMemcpyDtoD_1GiB_device", "device"),
                 ("wgpu", "wgpu.copy_b2b_*_wall", ""),
                 ("torch", r"e\. d2d copy 1 GiB: ([\d.]+) GB/s", "device")],
    "kernel.vector_add": [("wgpu", "wgpu.vector_add_2^*_wall", ""),
                          ("torch", r"e\. vector add n=2\^28 device us [\d.]+ -> ([\d.]+) GB/s",
                           "device")],
    "kernel.gemm_f16": [("torch_matmul", r"torch\.matmul_f16 ([\d.]+)", "device")],
    "alloc.pair": [("cuda_c", "cuda.alloc_pair_cuMemAllocAsync_pool", ""),
                   ("wgpu", "wgpu.alloc_pair_256B-16MiB", "")],
    "compile.cold": [("cuda_c", "cuda.compile_cold_ptx_jit+load+launch", ""),
                     ("wgpu", "wgpu.compile_cold_module+pipeline+launch", "")],
    "compile.warm_memory": [("cuda_c", "cuda.compile_same_ptx_again_jit_cache", ""),
                            ("wgpu", "wgpu.compile_same_source_again", "")],
}
# The multi.* rows against NCCL through PyTorch (bench/nccl_torch_peer.py): all-reduce bus
# bandwidth and peer copies, by size. torch's peer copy is device memory to device memory, what
# multi.copy_peer_exportable does on the cuda-interop path; multi.copy_peer (plain buffers,
# host-staged) is shown against it too, as the figures compare both with NCCL's.
for _mib in (1, 16, 256):
    PEERS["multi.allreduce.%dMiB" % _mib] = [("nccl_torch", "nccl.allreduce_%dMiB" % _mib, "")]
    for _row in ("copy_peer", "copy_peer_exportable"):
        PEERS["multi.%s.%dMiB" % (_row, _mib)] = [("nccl_torch", "torch.copy_peer_%dMiB" % _mib,
                                                   "")]
PEER_FILES = {"cuda_c": "cuda_c", "wgpu": "wgpu", "torch": "torch", "torch_matmul": "torch_matmul",
              "nccl_torch": "nccl_torch"}
# The backend of a cubec JSON without "backend" (runs before `cubec bench --backend`).
DEFAULT_BACKEND = "vulkan"
# Peers whose lines are "<figure> <median> ..." (the rest are matched by a regex).
NAMED_PREFIXES = ("cuda.", "wgpu.", "nccl.", "torch.copy_peer_")


def peer_line(text, key):
    """The words of the line a named peer printed for `key` (a "*" in it matches any text, e.g.
    the size), or None."""
    for line in text.splitlines():
        parts = line.split()
        if parts and len(parts) > 1 and fnmatch.fnmatchcase(parts[0], key):
            return parts
    return None


def peer_value(text, key):
    """The median a peer printed for `key`: a figure name (first number after it) or a regex."""
    if key.startswith(NAMED_PREFIXES):
        parts = peer_line(text, key)
        try:
            return float(parts[1]) if parts else None
        except ValueError:
            return None
    m = re.search(key, text)
    return float(m.group(1)) if m else None


def peer_words(text, key):
    """What a named peer line says after its unit (e.g. "busbw ranks=2"), led by the line's own
    name where `key` has a "*" (which size it was), or ""."""
    if not key.startswith(NAMED_PREFIXES):
        return ""
    parts = peer_line(text, key)
    if not parts:
        return ""
    return " ".join(([parts[0]] if "*" in key else []) + parts[6:])


def spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "rounds": len(values)}


def fmt(s):
    if not s:
        return "-"
    text = "%.4g" % s["median"]
    if s["rounds"] > 1 and s["min"] != s["max"]:
        text += " (%.4g-%.4g)" % (s["min"], s["max"])
    return text


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 2
    folder = argv[1]
    out_json = out_md = None
    if "--json" in argv:
        out_json = argv[argv.index("--json") + 1]
    if "--markdown" in argv:
        out_md = argv[argv.index("--markdown") + 1]

    builds = {}  # name -> figure -> list of (value, baseline, cubec ts, raw ts)
    backends = {}  # name -> the backend its cubec sides ran on ("backend" of its JSON)
    device = commit = None
    for path in sorted(glob.glob(os.path.join(folder, "*-*.json"))):
        name = os.path.basename(path).rsplit("-", 1)[0]
        try:
            with open(path) as f:
                run = json.load(f)
        except (OSError, ValueError):
            continue
        if "results" not in run:
            continue
        # A run on another backend (`cubec bench --backend webgpu`) is a column of its own,
        # "<name>-<backend>", whatever its file is called.
        backend = run.get("backend") or DEFAULT_BACKEND
        if backend != DEFAULT_BACKEND and not name.endswith("-" + backend):
            name += "-" + backend
        backends[name] = backend
        device = device or run.get("device", {}).get("name")
        commit = commit or run.get("commit")
        for r in run["results"]:
            if "error" in r or "skipped" in r:
                continue
            builds.setdefault(name, {}).setdefault(r["name"], []).append(r)
    peers = {}
    for peer, stem in PEER_FILES.items():
        texts = []
        for path in sorted(glob.glob(os.path.join(folder, stem + "-*.txt"))):
            with open(path, errors="replace") as f:
                texts.append(f.read())
        if texts:
            peers[peer] = texts

    figures = []
    for build in builds.values():
        for fig in build:
            if fig not in figures:
                figures.append(fig)
    rows = []
    for fig in figures:
        row = {"figure": fig, "cubec": {}, "peers": {}}
        for name, build in builds.items():
            rs = build.get(fig, [])
            if not rs:
                continue
            row["unit"] = rs[0]["unit"]
            row["lower_is_better"] = rs[0]["lower_is_better"]
            row["baseline"] = rs[0]["baseline"]
            if rs[0].get("note"):
                row.setdefault("note", rs[0]["note"])
            row["cubec"][name] = {
                "value": spread([r["value"] for r in rs]),
                "timestamp_value": spread([r.get("timestamp_value") for r in rs]),
                "baseline_value": spread([r["baseline_value"] for r in rs]),
                "baseline_timestamp_value": spread([r.get("baseline_timestamp_value") for r in rs]),
            }
        for peer, key, note, *scale in PEERS.get(fig, []):
            if peer in peers:
                values = [peer_value(t, key) for t in peers[peer]]
                s = spread([v * scale[0] if scale and v is not None else v for v in values])
                if s:
                    words = peer_words(peers[peer][0], key)
                    if scale:
                        words = ("x %g " % scale[0] + words).strip()
                    row["peers"][peer] = dict(s, source=key, note=note, words=words)
        # How many times slower a build on another backend is than wgpu-native used directly
        # (medians; above 1: slower, whichever way the unit reads).
        wgpu = row["peers"].get("wgpu")
        for name in builds:
            c = row["cubec"].get(name, {}).get("value")
            if wgpu and c and backends.get(name, DEFAULT_BACKEND) != DEFAULT_BACKEND:
                row.setdefault("vs_wgpu", {})[name] = (
                    c["median"] / wgpu["median"] if row["lower_is_better"]
                    else wgpu["median"] / c["median"])
        rows.append(row)

    names = list(builds)
    peer_names = [p for p in PEER_FILES if p in peers]
    head = ["figure", "unit"]
    for n in names:
        head += [n, n + " (ts)"]
    head += ["raw Vulkan"] + peer_names
    vs_names = [n for n in names if "wgpu" in peer_names and backends[n] != DEFAULT_BACKEND]
    head += [n + " / wgpu" for n in vs_names]
    lines = ["cubec and its peers on %s, commit %s (median over rounds; range in parentheses)" %
             (device or "?", commit or "?")]
    if vs_names:
        lines.append("<build> / wgpu: how many times slower than wgpu-native used directly (above "
                     "1: slower, whichever way the unit reads; below 1: ahead)")
    lines += ["",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row["figure"], row.get("unit", "")]
        raw = None
        for n in names:
            c = row["cubec"].get(n, {})
            cells += [fmt(c.get("value")), fmt(c.get("timestamp_value"))]
            raw = raw or (c.get("baseline_value") if row.get("baseline") == "raw_vulkan" else None)
        cells.append(fmt(raw))
        for p in peer_names:
            s = row["peers"].get(p)
            cells.append(fmt(s) + (" (device)" if s and s["note"] == "device" else "") +
                         (" (%s)" % s["words"] if s and s["words"] else ""))
        for n in vs_names:
            f = row.get("vs_wgpu", {}).get(n)
            cells.append("-" if f is None else "%.2fx %s" % (f, "slower" if f > 1 else "ahead"))
        lines.append("| " + " | ".join(cells) + " |")
    # Notes once each, under the first figure that has it (multi.*: the pair's path).
    noted = []
    for row in rows:
        if row.get("note") and row["note"] not in noted:
            if not noted:
                lines.append("")
            noted.append(row["note"])
            lines.append("- %s: %s" % (row["figure"], row["note"]))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if out_md:
        with open(out_md, "w") as f:
            f.write(text)
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"device": device, "commit": commit, "builds": names,
                       "backends": backends, "peers": peer_names, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
