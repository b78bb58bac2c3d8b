#!/usr/bin/env python3
"""Checks bench/side_by_side.py on files made here: every number of the merged JSON is the median
(and range) of the inputs, computed here, and a missing peer or figure leaves its cell empty."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def cubec_run(commit, roundtrip, copy, copy_ts):
    return {"device": {"name": "Test GPU"}, "commit": commit, "results": [
        {"name": "launch.roundtrip", "unit": "us", "value": roundtrip, "baseline": "raw_vulkan",
         "baseline_value": 40.0, "lower_is_better": True},
        {"name": "copy.d2d", "unit": "GB/s", "value": copy, "timestamp_value": copy_ts,
         "baseline": "raw_vulkan", "baseline_value": 800.0, "baseline_timestamp_value": 850.0,
         "lower_is_better": False},
        {"name": "alloc.pair", "unit": "ns", "error": "failed"},
        {"name": "kernel.gemm_f16", "unit": "TFLOP/s", "value": 200.0, "baseline": "cubec_scalar",
         "baseline_value": 8.0, "lower_is_better": False},
        {"name": "kernel.skipped", "unit": "x", "skipped": "the device lacks it"},
        {"name": "multi.allreduce.256MiB", "unit": "GB/s", "value": 12.0,
         "baseline": "cubec_copy_peer", "baseline_value": 16.0, "lower_is_better": False,
         "note": "bus bandwidth"},
        {"name": "multi.copy_peer.1MiB", "unit": "GB/s", "value": 2.0, "baseline": "cubec_copy",
         "baseline_value": 55.0, "lower_is_better": False},
        {"name": "multi.copy_peer_exportable.1MiB", "unit": "GB/s", "value": 30.0,
         "baseline": "cubec_copy", "baseline_value": 55.0, "lower_is_better": False,
         "note": "path (cubec_device_get_path): cuda-interop; copied by CUDA"}]}


def main():
    with tempfile.TemporaryDirectory() as d:
        rts, copies, ts = [15.5, 17.0], [3000.0, 3400.0], [4100.0, 4300.0]
        for i in range(2):
            with open(os.path.join(d, "after-%d.json" % (i + 1)), "w") as f:
                json.dump(cubec_run("abc123", rts[i], copies[i], ts[i]), f)
        cuda = [9.5, 10.5]
        for i in range(2):
            with open(os.path.join(d, "cuda_c-%d.txt" % (i + 1)), "w") as f:
                f.write("# figure median min max n unit\n")
                f.write("cuda.roundtrip_launch_sync %g 1 2 201 us\n" % cuda[i])
        with open(os.path.join(d, "torch-1.txt"), "w") as f:
            f.write("a. tiny launch round trip (launch+sync) us: 12.25 (best 11.9)\n")
        matmul = [700.5, 710.5]
        for i in range(2):
            with open(os.path.join(d, "torch_matmul-%d.txt" % (i + 1)), "w") as f:
                f.write("torch.matmul_f16 %g (best 720.0) TFLOP/s at 4096^3\n" % matmul[i])
        allreduce = [280.5, 299.0]
        for i in range(2):
            with open(os.path.join(d, "nccl_torch-%d.txt" % (i + 1)), "w") as f:
                f.write("# figure median min max n unit\n")
                f.write("nccl.allreduce_256MiB %g 250 310 11  GB/s busbw ranks=2\n" % allreduce[i])
                # 1 MiB of the all-reduce is not a row of this cubec run: not shown.
                f.write("nccl.allreduce_1MiB 21 20 22 21  GB/s busbw ranks=2\n")
                f.write("torch.copy_peer_1MiB 40 38 41 21  GB/s gpu0->gpu1\n")
        # The same build on the webgpu backend (its own column whatever the file's name), and
        # the wgpu peer at lavapipe's quick sizes (the "*" of the mapping picks any size).
        wg_rts, wg_enq, wg_h2d = [44.0, 46.0], [0.15, 0.17], [1.5, 2.5]
        for i in range(2):
            run = {"device": {"name": "Test GPU"}, "commit": "abc123", "backend": "webgpu",
                   "results": [
                       {"name": "launch.roundtrip", "unit": "us", "value": wg_rts[i],
                        "baseline": "raw_vulkan", "baseline_value": 33.0,
                        "lower_is_better": True},
                       {"name": "launch.enqueue", "unit": "us", "value": wg_enq[i],
                        "baseline": "raw_vulkan", "baseline_value": 2.5, "lower_is_better": True},
                       {"name": "graph.replay_host", "unit": "us", "value": 120.0,
                        "baseline": "raw_vulkan", "baseline_value": 30.0,
                        "lower_is_better": True},
                       {"name": "write.h2d", "unit": "GB/s", "value": wg_h2d[i],
                        "baseline": "raw_vulkan", "baseline_value": 6.0,
                        "lower_is_better": False},
                       {"name": "write.h2d_registered", "unit": "GB/s",
                        "skipped": "the webgpu backend refuses it"}]}
            with open(os.path.join(d, "wg-%d.json" % (i + 1)), "w") as f:
                json.dump(run, f)
        wgpu_rt, wgpu_enq, wgpu_h2d = [40.0, 42.0], [0.30, 0.34], [2.0, 2.4]
        for i in range(2):
            with open(os.path.join(d, "wgpu-%d.txt" % (i + 1)), "w") as f:
                f.write("# figure median min max n unit\n")
                f.write("wgpu.roundtrip_poll %g 39 50 51 us\n" % wgpu_rt[i])
                f.write("wgpu.enqueue_one_pass_one_submit %g 0.2 0.4 5 us/dispatch\n" % wgpu_enq[i])
                f.write("wgpu.h2d_writeBuffer_16MiB %g 0.7 3 3 GB/s\n" % wgpu_h2d[i])
                f.write("wgpu.d2h_mapread_16MiB_memcpy_part 1.6 1.5 9 3 ms\n")
        out = os.path.join(d, "t.json")
        subprocess.run([sys.executable, os.path.join(HERE, "side_by_side.py"), d, "--json", out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            merged = json.load(f)
        rows = {r["figure"]: r for r in merged["rows"]}
        assert merged["commit"] == "abc123", merged
        assert merged["builds"] == ["after", "wg-webgpu"], merged["builds"]
        assert merged["backends"] == {"after": "vulkan", "wg-webgpu": "webgpu"}, merged
        rt = rows["launch.roundtrip"]
        v = rt["cubec"]["after"]["value"]
        assert v["median"] == statistics.median(rts) and (v["min"], v["max"]) == (15.5, 17.0), v
        c = rt["peers"]["cuda_c"]
        assert c["median"] == statistics.median(cuda) and c["rounds"] == 2, c
        assert rt["peers"]["torch"]["median"] == 12.25, rt["peers"]
        w = rt["peers"]["wgpu"]
        assert w["median"] == statistics.median(wgpu_rt) and w["rounds"] == 2, w
        wv = rt["cubec"]["wg-webgpu"]["value"]
        assert wv["median"] == statistics.median(wg_rts), wv
        # lower is better: the factor is webgpu / wgpu; only the non-default backend gets one
        want = statistics.median(wg_rts) / statistics.median(wgpu_rt)
        assert abs(rt["vs_wgpu"]["wg-webgpu"] - want) < 1e-12, rt["vs_wgpu"]
        assert "after" not in rt["vs_wgpu"], rt["vs_wgpu"]
        enq = rows["launch.enqueue"]
        want = statistics.median(wg_enq) / statistics.median(wgpu_enq)
        assert abs(enq["vs_wgpu"]["wg-webgpu"] - want) < 1e-12 and want < 1, enq
        # graph replay: 1000 dispatches encoded and submitted, the peer's per-dispatch figure x 1000
        gr = rows["graph.replay_host"]["peers"]["wgpu"]
        assert abs(gr["median"] - 1000 * statistics.median(wgpu_enq)) < 1e-9, gr
        assert gr["words"] == "x 1000", gr
        # higher is better: the factor is wgpu / webgpu; "*" took the 16 MiB line and says so
        h2d = rows["write.h2d"]
        assert h2d["peers"]["wgpu"]["median"] == statistics.median(wgpu_h2d), h2d
        assert h2d["peers"]["wgpu"]["words"] == "wgpu.h2d_writeBuffer_16MiB", h2d
        want = statistics.median(wgpu_h2d) / statistics.median(wg_h2d)
        assert abs(h2d["vs_wgpu"]["wg-webgpu"] - want) < 1e-12, h2d
        assert "write.h2d_registered" not in rows  # skipped on webgpu, absent elsewhere
        assert "wgpu" not in rows["copy.d2d"]["peers"]  # no copy line in the peer's file
        assert "vs_wgpu" not in rows["copy.d2d"], rows["copy.d2d"]
        cp = rows["copy.d2d"]["cubec"]["after"]
        assert cp["timestamp_value"]["median"] == statistics.median(ts), cp
        assert cp["baseline_timestamp_value"]["median"] == 850.0, cp
        assert rows["copy.d2d"]["peers"] == {}, rows["copy.d2d"]  # no peer printed it
        assert "alloc.pair" not in rows  # only an error: nothing to show
        assert "kernel.skipped" not in rows  # skipped: nothing to show
        g = rows["kernel.gemm_f16"]["peers"]["torch_matmul"]
        assert g["median"] == statistics.median(matmul) and g["note"] == "device", g
        assert "torch_matmul" not in rt["peers"]  # its file is not the torch peer's
        ar = rows["multi.allreduce.256MiB"]["peers"]["nccl_torch"]
        assert ar["median"] == statistics.median(allreduce) and ar["rounds"] == 2, ar
        assert ar["words"] == "busbw ranks=2", ar
        cp1 = rows["multi.copy_peer.1MiB"]["peers"]["nccl_torch"]
        assert cp1["median"] == 40.0 and cp1["words"] == "gpu0->gpu1", cp1
        ex1 = rows["multi.copy_peer_exportable.1MiB"]
        assert ex1["peers"]["nccl_torch"]["median"] == 40.0, ex1  # torch's copy maps onto it too
        assert ex1["note"] == "path (cubec_device_get_path): cuda-interop; copied by CUDA", ex1
        assert "note" not in rows["multi.copy_peer.1MiB"]  # none in its input
        assert "multi.allreduce.1MiB" not in rows  # no cubec row: the peer's line alone is not one
        assert "nccl_torch" not in rt["peers"]  # nccl_torch maps only the multi.* rows
        md = subprocess.run([sys.executable, os.path.join(HERE, "side_by_side.py"), d],
                            check=True, capture_output=True, text=True).stdout
        assert "(busbw ranks=2)" in md, md
        assert "- multi.copy_peer_exportable.1MiB: path (cubec_device_get_path): cuda-interop" in md
        assert md.count("- multi.allreduce.256MiB: bus bandwidth") == 1, md
        assert "| wg-webgpu | wg-webgpu (ts) |" in md and "| wg-webgpu / wgpu |" in md, md
        assert "after / wgpu" not in md, md
        rt_line = [l for l in md.splitlines() if l.startswith("| launch.roundtrip |")][0]
        assert rt_line.endswith("| %.2fx slower |" % (45.0 / 41.0)), rt_line
        enq_line = [l for l in md.splitlines() if l.startswith("| launch.enqueue |")][0]
        assert enq_line.endswith("| %.2fx ahead |" % (0.16 / 0.32)), enq_line
    print("test_side_by_side: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
