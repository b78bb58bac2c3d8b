#!/usr/bin/env python3
"""Checks the multi.* rows of `cubec bench` on the default device.

    bench/test_multi_rows.py CUBEC

Runs `CUBEC bench --quick --json --filter multi.` and checks that every all-reduce size is there
with its note (bus bandwidth as NCCL defines it) and either a number against the peer-copy
baseline (ratio = value / baseline) or, past the device's binding limit only, a skip naming that
limit; that every size of multi.copy_peer (plain buffers) and multi.copy_peer_exportable is
measured against cubec_copy; that the notes of the copy and all-reduce rows name the pair's path
(cubec_device_get_path) and the path the copies took: plain buffers never go through CUDA, and
where libcuda.so.1 does not load the exportable ones fall back to host-staged, saying so; and that
the CUDA round trip is skipped naming libcuda where libcuda.so.1 does not load (there it must not
be an error), or else measured or skipped with its reason. The table form must print the notes.
Speeds are not judged."""
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


PATH_NOTE = "path (cubec_device_get_path): "


def check_path_note(name, note, exportable, cuda):
    """The note names the pair's path and the one the copies took (multi_figures.c): plain
    buffers never go through CUDA; without libcuda exportable ones fall back to host-staged."""
    if PATH_NOTE not in note:
        fail("%s: the note does not name the pair's path: %r" % (name, note))
    pair = note.split(PATH_NOTE, 1)[1].split(";")[0].split(" ")[0]
    if pair not in ("host-staged", "cuda-interop", "same-device"):
        fail("%s: the note names no known path: %r" % (name, note))
    if "copied by CUDA" in note and (not exportable or pair != "cuda-interop"):
        fail("%s: CUDA cannot have copied these buffers: %r" % (name, note))
    if pair == "cuda-interop" and not exportable and "fell back to host-staged" not in note:
        fail("%s: plain buffers of a cuda-interop pair go host-staged, unsaid: %r" % (name, note))
    if exportable and pair == "cuda-interop" and "copied by CUDA" not in note:
        fail("%s: exportable buffers of a cuda-interop pair go through CUDA: %r" % (name, note))
    if exportable and pair == "host-staged" and "fell back to host-staged" not in note:
        fail("%s: the fall back to host-staged is unsaid: %r" % (name, note))
    if not cuda and pair != "host-staged":
        fail("%s: without libcuda the pair's path is host-staged: %r" % (name, note))


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip())
        return 2
    args = [argv[1], "bench", "--quick", "--filter", "multi."]
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
    cuda = libcuda_loads()
    for kind in ("copy_peer", "copy_peer_exportable"):
        for mib in (1, 16, 256):
            name = "multi.%s.%dMiB" % (kind, mib)
            r = rows.get(name)
            if not r:
                fail("no row %s in %s" % (name, sorted(rows)))
            if "error" in r or "skipped" in r:
                fail("%s: %r" % (name, r))
            if not (r["value"] > 0 and r["baseline_value"] > 0 and r["baseline"] == "cubec_copy"):
                fail("%s: value %r, baseline %r %r" % (
                    name, r["value"], r["baseline"], r["baseline_value"]))
            check_path_note(name, r.get("note", ""), kind == "copy_peer_exportable", cuda)
    for mib in (1, 16, 256):
        name = "multi.allreduce.%dMiB" % mib
        if "skipped" not in rows[name]:
            check_path_note(name, rows[name].get("note", ""), False, cuda)
    r = rows.get("multi.cuda_roundtrip")
    if not r:
        fail("no row multi.cuda_roundtrip in %s" % sorted(rows))
    if "error" in r:
        fail("multi.cuda_roundtrip: %s" % r["error"])
    if not cuda:
        if "libcuda" not in r.get("skipped", ""):
            fail("multi.cuda_roundtrip without libcuda is not skipped naming it: %r" % r)
    elif "skipped" not in r and not (r["value"] > 0 and r["baseline"] == "cubec_only"):
        fail("multi.cuda_roundtrip: %r" % r)
    table = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if table.returncode != 0 or "note: f32 sum over 2 ranks" not in table.stdout:
        fail("the table has no all-reduce note (rc %d):\n%s" % (table.returncode, table.stdout))
    if "note: path (cubec_device_get_path): " not in table.stdout:
        fail("the table has no copy rows' path note:\n%s" % table.stdout)
    print("test_multi_rows: ok (%s)" % ", ".join(
        "%s %s" % (n, "skipped" if "skipped" in r else "%.3g" % r["value"])
        for n, r in sorted(rows.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
