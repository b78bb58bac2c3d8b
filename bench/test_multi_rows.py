#!/usr/bin/env python3
"""Checks the multi.allreduce and multi.cuda_roundtrip rows of `cubec bench` on the default device.

    bench/test_multi_rows.py CUBEC

Runs `CUBEC bench --quick --json --filter multi.allreduce --filter multi.cuda` and checks that
every all-reduce size is there with its note (bus bandwidth as NCCL defines it) and either a
number against the peer-copy baseline (ratio = value / baseline) or, past the device's binding
limit only, a skip naming that limit; and that the CUDA round trip is skipped naming libcuda where
libcuda.so.1 does not load (there it must not be an error), or else measured or skipped with its
reason. The table form must print the note. Speeds are not judged."""
import ctypes
import json
import subprocess
import sys


def fail(msg):
    print("test_multi_rows: FAILED: " + msg)
    sys.exit(1)


def libcuda_loads():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip())
        return 2
    args = [argv[1], "bench", "--quick", "--filter", "multi.allreduce", "--filter", "multi.cuda"]
    run = subprocess.run(args + ["--json"], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        fail("cubec bench exited %d: %s" % (run.returncode, run.stderr[-2000:]))
    rows = {r["name"]: r for r in json.loads(run.stdout)["results"]}
    for mib in (1, 16, 256):
        name = "multi.allreduce.%dMiB" % mib
        r = rows.get(name)
        if not r:
            fail("no row %s in %s" % (name, sorted(rows)))
        if "2(n-1)/n" not in r.get("note", ""):
            fail("%s: the note does not define bus bandwidth: %r" % (name, r.get("note")))
        if "error" in r:
            fail("%s: %s" % (name, r["error"]))
        if "skipped" in r:
            # Only a size past the binding limit may be skipped (256 MiB on lavapipe).
            if mib == 1 or "max_storage_buffer_range" not in r["skipped"]:
                fail("%s skipped: %s" % (name, r["skipped"]))
            continue
        if not (r["value"] > 0 and r["baseline_value"] > 0):
            fail("%s: value %r, baseline %r" % (name, r["value"], r["baseline_value"]))
        if r["baseline"] != "cubec_copy_peer" or r["unit"] != "GB/s" or r["lower_is_better"]:
            fail("%s: baseline %r unit %r lower_is_better %r" % (
                name, r["baseline"], r["unit"], r["lower_is_better"]))
        if abs(r["ratio"] - r["value"] / r["baseline_value"]) > 1e-3 * r["ratio"]:
            fail("%s: ratio %r is not value / baseline" % (name, r["ratio"]))
    r = rows.get("multi.cuda_roundtrip")
    if not r:
        fail("no row multi.cuda_roundtrip in %s" % sorted(rows))
    if "error" in r:
        fail("multi.cuda_roundtrip: %s" % r["error"])
    if not libcuda_loads():
        if "libcuda" not in r.get("skipped", ""):
            fail("multi.cuda_roundtrip without libcuda is not skipped naming it: %r" % r)
    elif "skipped" not in r and not (r["value"] > 0 and r["baseline"] == "cubec_only"):
        fail("multi.cuda_roundtrip: %r" % r)
    table = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if table.returncode != 0 or "note: f32 sum over 2 ranks" not in table.stdout:
        fail("the table has no all-reduce note (rc %d):\n%s" % (table.returncode, table.stdout))
    print("test_multi_rows: ok (%s)" % ", ".join(
        "%s %s" % (n, "skipped" if "skipped" in r else "%.3g" % r["value"])
        for n, r in sorted(rows.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
