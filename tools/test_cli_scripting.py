#!/usr/bin/python3
"""The `cubec` tool in scripts (issue 23): `cubec info --json`, typed buffers (f16 ... u64),
.npy in and out, the seeded random fill, `--device NAME|INDEX`, `bench --help`.

Every result is checked against a reference computed here: numpy arrays for the kernels'
outputs, a Python SplitMix64 for the random fill, and `cubec info`'s text for the JSON (two
printers of one cubec_device_info). Runs with Debian's python3, which has python3-numpy (the
Makefile's DEB_PACKAGES); without numpy it fails rather than skips.

usage: test_cli_scripting.py PATH/TO/cubec
"""

import json
import os
import re
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    sys.exit("test_cli_scripting: FAIL: numpy is missing (apt-get install python3-numpy)")

CUBEC = os.path.abspath(sys.argv[1])
SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
failures = []


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    failures.append(message)


def run(args, want_rc, name, env=None):
    """Runs cubec with `args`; returns (stdout, stderr), or None after a failure."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.run([CUBEC] + args, capture_output=True, text=True, env=full_env)
    if p.returncode != want_rc:
        fail(f"{name}: exit code {p.returncode}, expected {want_rc}: cubec {' '.join(args)}\n"
             f"{p.stdout}{p.stderr}")
        return None
    return p.stdout, p.stderr


def expect_in(name, text, *wanted):
    for w in wanted:
        if w not in text:
            fail(f"{name}: the output does not mention {w!r}:\n{text}")


# --- cubec info --json, against cubec info's text ------------------------------------------------
def text_devices(text):
    """{index: {"name", "default", rows: {label: [values]}}} from `cubec info`."""
    devices, cur, label = {}, None, None
    for line in text.splitlines():
        m = re.match(r"device (\d+): (.*?)(  \[default\])?$", line)
        if m:
            cur = {"name": m.group(2), "default": bool(m.group(3)), "rows": {}}
            devices[int(m.group(1))] = cur
            continue
        if cur is None or not line.startswith("  "):
            continue
        key, value = line[:31].strip(), line[31:].strip()
        if key:
            label = key
            cur["rows"][label] = [value]
        elif label:
            cur["rows"][label].append(value)
    return devices


def first_number(value):
    return int(re.match(r"(\d+)", value).group(1))


def check_info_json():
    out = run(["info", "--json"], 0, "info_json")
    text = run(["info"], 0, "info_text")
    if not out or not text:
        return None
    # Valid JSON for the standard tool too, not only for this parser.
    tool = subprocess.run([sys.executable, "-m", "json.tool"], input=out[0], capture_output=True,
                          text=True)
    if tool.returncode != 0:
        fail(f"info_json: python3 -m json.tool refuses it: {tool.stderr}")
        return None
    info = json.loads(out[0])
    devs = text_devices(text[0])
    if info["backend"] != "vulkan" or "vulkan" not in info["backends"]:
        fail(f"info_json: backends {info['backends']} / {info['backend']}")
    if len(info["devices"]) != len(devs) or not devs:
        fail(f"info_json: {len(info['devices'])} devices, the text lists {len(devs)}")
        return None
    if info["default_error"] is not None:
        fail(f"info_json: default_error {info['default_error']!r}")
    for d in info["devices"]:
        t = devs[d["index"]]
        rows = t["rows"]
        want = {
            "name": t["name"],
            "default": t["default"],
            "type": rows["type"][0],
            "driver": rows["driver"][0],
            "api_version": rows["Vulkan API version"][0],
            "vendor_id": int(rows["vendor id"][0].split()[0], 16),
            "vendor": rows["vendor id"][0].split("(")[1].rstrip(")"),
            "device_id": int(rows["device id"][0], 16),
            "unified_memory": rows["unified memory"][0].startswith("yes"),
            "push_descriptors": rows["push descriptors"][0] == "yes",
            "device_local_heap_size": first_number(rows["device-local heap"][0]),
            "max_storage_buffer_range": first_number(rows["max storage buffer range"][0]),
            "max_allocation_size": first_number(rows["max allocation size"][0]),
            "storage_offset_alignment": first_number(rows["storage offset alignment"][0]),
            "max_push_constants_size": first_number(rows["max push constants"][0]),
            "max_workgroup_count": [int(x) for x in rows["max workgroup count"][0].split(" x ")],
            "max_workgroup_size": [int(x) for x in rows["max workgroup size"][0].split(" x ")],
            "max_workgroup_invocations": int(rows["max workgroup invocations"][0]),
            "max_shared_memory_size": first_number(rows["max shared memory"][0]),
            "subgroup_size": first_number(rows["subgroup size"][0]),
            "timestamp_period_ns": float(rows["timestamp period"][0].split()[0]),
            "features": " ".join(rows["shader features"]).split(),
            "backend": rows["backend"][0],
            "capabilities": " ".join(rows["capabilities"]).split(),
        }
        for key in ("features", "capabilities"):
            if want[key] == ["none"]:
                want[key] = []
        if "host register alignment" in rows:
            want["host_register_alignment"] = first_number(rows["host register alignment"][0])
        for key, value in want.items():
            got = d.get(key)
            if key == "timestamp_period_ns":
                ok = got is not None and abs(got - value) <= 1e-5 * max(1.0, abs(value))
            else:
                ok = got == value
            if not ok:
                fail(f"info_json: device {d['index']} {key} is {got!r}, the text says {value!r}")
        shapes = rows["cooperative matrix shapes"]
        if (shapes == ["none"]) != (not d["cooperative_matrix_shapes"]) or (
            shapes != ["none"] and len(shapes) != len(d["cooperative_matrix_shapes"])
        ):
            fail(f"info_json: matrix shapes {d['cooperative_matrix_shapes']} against {shapes}")
        if d["default"] and d.get("features_off_by_config") != []:
            fail(f"info_json: features off by config {d.get('features_off_by_config')}")
    default = [d for d in info["devices"] if d["default"]]
    if len(default) != 1:
        fail(f"info_json: {len(default)} devices marked default")
        return None
    dev = default[0]
    # A feature turned off by configuration is listed as such for the default device.
    if dev["features"]:
        off = dev["features"][-1]
        out = run(["info", "--json"], 0, "info_json_off", {"CUBEC_DISABLE_FEATURES": off})
        if out:
            got = [d for d in json.loads(out[0])["devices"] if d["default"]][0]
            if off not in got["features_off_by_config"]:
                fail(f"info_json_off: {off} not in {got['features_off_by_config']}")
    # No driver: stdout stays empty (no half object), the message says what to install.
    out = run(["info", "--json"], 1, "info_json_no_driver",
              {"VK_ICD_FILENAMES": "/nonexistent.json", "VK_DRIVER_FILES": "/nonexistent.json"})
    if out:
        if out[0]:
            fail(f"info_json_no_driver: stdout is not empty: {out[0]!r}")
        expect_in("info_json_no_driver", out[1], "mesa-vulkan-drivers")
    return info, dev


# --- Capabilities (docs/api.md, "Device capabilities") -----------------------------------------
CAPABILITIES = ("pinned_host_memory", "host_import", "vulkan_handles", "reusable_graphs",
                "calibrated_clock", "device_timestamps", "texel_buffers", "images", "wgsl",
                "runs_kernels")
WGSL_STORE = """@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(1)
fn main() { o[0] = 42u; }
"""


def check_capabilities(dev, backend, env=None):
    """`dev` (a device of `cubec info --json`) is on `backend`, names only known capabilities,
    has those its backend always has, and `cubec run` of a WGSL kernel on it succeeds exactly
    where it lists "wgsl" (refused CUBEC_UNSUPPORTED elsewhere), the store landing where it lists
    "runs_kernels" (the null backend runs no kernel)."""
    tag = f"capabilities_{backend}_{dev['index']}"
    caps = dev.get("capabilities")
    if dev.get("backend") != backend or not isinstance(caps, list):
        fail(f"{tag}: backend {dev.get('backend')!r}, capabilities {caps!r}")
        return
    unknown = [c for c in caps if c not in CAPABILITIES]
    if unknown:
        fail(f"{tag}: unknown capabilities {unknown}")
    always = {"vulkan": ("pinned_host_memory", "vulkan_handles", "reusable_graphs", "images",
                         "runs_kernels"),
              "webgpu": ("wgsl", "images", "runs_kernels"),
              "null": ("pinned_host_memory", "host_import", "reusable_graphs", "images")}
    never = {"vulkan": ("wgsl",),
             "webgpu": ("pinned_host_memory", "host_import", "vulkan_handles", "reusable_graphs",
                        "calibrated_clock", "texel_buffers"),
             "null": ("vulkan_handles", "wgsl", "runs_kernels")}
    for c in always[backend]:
        if c not in caps:
            fail(f"{tag}: {c} missing from {caps}")
    for c in never[backend]:
        if c in caps:
            fail(f"{tag}: {c} listed, which the {backend} backend never has")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "store.wgsl")
        with open(path, "w") as f:
            f.write(WGSL_STORE)
        has = "wgsl" in caps
        out = run(["run", path, "--groups", "1", "--buf", "zero:4:u32", "--device",
                   str(dev["index"])], 0 if has else 1, f"{tag}_wgsl", env)
        if out and has:
            value = 42 if "runs_kernels" in caps else 0
            expect_in(f"{tag}_wgsl", out[0], f"binding 0 (read-write, 4 bytes, u32): {value}")
        elif out:
            expect_in(f"{tag}_wgsl", out[1], "CUBEC_UNSUPPORTED", "WGSL kernels need")


def check_null_capabilities():
    """The null backend's device, listed with CUBEC_BACKEND=null."""
    env = {"CUBEC_BACKEND": "null"}
    out = run(["info", "--json"], 0, "info_json_null", env)
    if out:
        devices = json.loads(out[0])["devices"]
        if len(devices) != 1:
            fail(f"info_json_null: {len(devices)} devices")
        for d in devices:
            check_capabilities(d, "null", env)


# --- Typed kernels, .npy in and out -------------------------------------------------------------
# o[i] = a[i] * MUL + ADD and a[i] += 1, for i < n, in type T (all the explicit arithmetic types).
KERNEL = r"""#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer A { T a[]; };
layout(set = 0, binding = 1) writeonly buffer O { T o[]; };
CUBEC_INFO(uint n;)
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n) {
        T x = a[i];
        o[i] = x * T(MUL) + T(ADD);
        a[i] = x + T(1);
    }
}
"""
# name: (numpy dtype, GLSL type, device features it needs)
TYPES = {
    "f16": (np.float16, "float16_t", ["float16", "storage_buffer_16bit"]),
    "f32": (np.float32, "float", []),
    "f64": (np.float64, "double", ["float64"]),
    "i8": (np.int8, "int8_t", ["int8", "storage_buffer_8bit"]),
    "u8": (np.uint8, "uint8_t", ["int8", "storage_buffer_8bit"]),
    "i16": (np.int16, "int16_t", ["int16", "storage_buffer_16bit"]),
    "u16": (np.uint16, "uint16_t", ["int16", "storage_buffer_16bit"]),
    "i32": (np.int32, "int", []),
    "u32": (np.uint32, "uint", []),
    "i64": (np.int64, "int64_t", ["int64"]),
    "u64": (np.uint64, "uint64_t", ["int64"]),
}


def splitmix_reference(name, count, seed):
    """docs/cli.md's random fill, element by element."""
    dtype = TYPES[name][0]
    mask = (1 << 64) - 1
    values = []
    for i in range(count):
        x = (seed + (i + 1) * 0x9E3779B97F4A7C15) & mask
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
        x ^= x >> 31
        if name[0] == "f":
            bits = {"f16": 11, "f32": 24, "f64": 53}[name]
            values.append((x >> (64 - bits)) / float(1 << bits))
        else:
            values.append(x)
    if name[0] == "f":
        return np.array(values, dtype=dtype)
    # The low bytes of x: its bit pattern, read as the type.
    return np.array(values, dtype=np.uint64).astype(np.dtype(dtype).newbyteorder("<").str
                                                      .replace("i", "u")).view(dtype)


def run_typed(tmp, name, bufs, n, mul, add, tag):
    """Runs KERNEL for type `name` over --buf `bufs`; returns the two outputs read back with
    numpy from --out-dir ... --npy, or None after a failure."""
    dtype, glsl, _ = TYPES[name]
    out_dir = os.path.join(tmp, f"out_{tag}")
    args = ["run", os.path.join(tmp, "typed.comp"), "--groups", str((n + 63) // 64),
            "--define", f"T={glsl}", "--define", f"MUL={mul}", "--define", f"ADD={add}",
            "--info-u32", str(n), "--out-dir", out_dir, "--npy", "--print", "3"]
    for b in bufs:
        args += ["--buf", b]
    out = run(args, 0, tag)
    if not out:
        return None
    expect_in(tag, out[0], f"bytes, {name}):", "binding0.npy", "binding1.npy")
    a = np.load(os.path.join(out_dir, "binding0.npy"))
    o = np.load(os.path.join(out_dir, "binding1.npy"))
    for arr, which in ((a, "binding 0"), (o, "binding 1")):
        if arr.dtype != np.dtype(dtype):
            fail(f"{tag}: {which} has dtype {arr.dtype}, expected {np.dtype(dtype)}")
    return a, o


def check_types(tmp, features):
    with open(os.path.join(tmp, "typed.comp"), "w") as f:
        f.write(KERNEL)
    rng = np.random.default_rng(23)
    for name, (dtype, _, needs) in TYPES.items():
        missing = [f for f in needs if f not in features]
        if missing:
            print(f"test_cli_scripting: {name} skipped: the device lacks {missing}")
            continue
        es = np.dtype(dtype).itemsize
        # 1. A (4, 24) .npy array in; out: the same shape for the read-write binding 0 (a + 1),
        # one dimension for binding 1 (a * 3 + 1). Small integers are exact in every type.
        if name[0] == "f":
            x = rng.integers(-20, 21, size=(4, 24)).astype(dtype)
        else:
            info = np.iinfo(dtype)
            x = rng.integers(info.min, info.max, size=(4, 24), dtype=dtype, endpoint=True)
        path = os.path.join(tmp, f"x_{name}.npy")
        np.save(path, x)
        got = run_typed(tmp, name, [f"file:{path}", f"zero:{x.size * es}:{name}"], x.size, 3, 1,
                        f"npy_{name}")
        if got:
            with np.errstate(over="ignore"):
                want_a, want_o = x + dtype(1), x * dtype(3) + dtype(1)
            if got[0].shape != x.shape or not np.array_equal(got[0], want_a):
                fail(f"npy_{name}: binding 0 {got[0].shape} differs from x + 1 {x.shape}")
            if got[1].shape != (x.size,) or not np.array_equal(got[1], want_o.reshape(-1)):
                fail(f"npy_{name}: binding 1 {got[1].shape} differs from x * 3 + 1")
        # 2. The seeded random fill, against the Python reference (MUL 1, ADD 0: a copy).
        count, seed = 100, 12345
        got = run_typed(tmp, name, [f"rand:{count}:{name}:{seed}", f"zero:{count * es}:{name}"], count,
                        1, 0, f"rand_{name}")
        if got:
            want = splitmix_reference(name, count, seed)
            if not np.array_equal(got[1], want):
                fail(f"rand_{name}: the values differ from the reference: {got[1][:4]} "
                     f"against {want[:4]}")
            if name[0] == "f" and not ((want >= 0) & (want < 1)).all():
                fail(f"rand_{name}: reference values outside [0, 1)")
            if len(set(want.tolist())) < count // 2:
                fail(f"rand_{name}: the reference has few distinct values")
        # 3. iota and fill (a repeated word on the device for <= 4 bytes, the host for 8).
        got = run_typed(tmp, name, [f"iota:64:{name}", f"fill:{64 * es}:{name}:7"], 64, 2, 5,
                        f"iota_{name}")
        if got:
            want = np.arange(64).astype(dtype)
            if not np.array_equal(got[0], want + dtype(1)) or not np.array_equal(
                    got[1], want * dtype(2) + dtype(5)):
                fail(f"iota_{name}: wrong values {got[0][:4]} {got[1][:4]}")
        got = run_typed(tmp, name, [f"fill:{24 * es}:{name}:7", f"zero:{24 * es}:{name}"], 24, 2, 5,
                        f"fill_{name}")
        if got and (not np.array_equal(got[0], np.full(24, 8, dtype)) or
                    not np.array_equal(got[1], np.full(24, 19, dtype))):
            fail(f"fill_{name}: wrong values {got[0][:4]} {got[1][:4]}")
    # The same seed gives the same values, another seed others (bytes of two runs' files).
    a = run(["run", os.path.join(tmp, "typed.comp"), "--groups", "1", "--define", "T=float",
             "--define", "MUL=1", "--define", "ADD=0", "--info-u32", "64", "--buf",
             "rand:64:f32:9", "--buf", "zero:256", "--out-dir", os.path.join(tmp, "seed9")],
            0, "seed9")
    if a:
        again = splitmix_reference("f32", 64, 9)
        got = np.fromfile(os.path.join(tmp, "seed9", "binding1.bin"), dtype=np.float32)
        if not np.array_equal(got, again) or np.array_equal(again, splitmix_reference("f32", 64, 8)):
            fail("seed9: the random fill is not the documented function of its seed")


def check_bad_input(tmp):
    k = os.path.join(tmp, "typed.comp")
    base = ["run", k, "--groups", "1", "--define", "T=float", "--define", "MUL=1", "--define",
            "ADD=0", "--info-u32", "4"]
    usage = [
        (["--buf", "rand:8:f17", "--buf", "zero:32"], "unknown type 'f17' (f16, f32, f64"),
        (["--buf", "fill:3:f16:1", "--buf", "zero:32"], "SIZE '3' is not a positive multiple of 2"),
        (["--buf", "fill:4:i8:300", "--buf", "zero:32"], "VALUE '300' is not a valid i8"),
        (["--buf", "fill:4:f16:70000", "--buf", "zero:32"], "VALUE '70000' is not a valid f16"),
        (["--buf", "rand:8:f32:x", "--buf", "zero:32"], "SEED 'x'"),
        (["--buf", "zero:6:f32", "--buf", "zero:32"], "SIZE '6'"),
        (["--buf", "zero:32", "--buf", "zero:32", "--npy"], "--npy needs --out-dir"),
        (["--buf", "zero:32", "--buf", "zero:32", "--device", ""], "--device: the value is empty"),
        (["--buf", "zero:32", "--buf", "zero:32", "--device", "4294967296"],
         "--device '4294967296': not a device index"),
    ]
    for i, (extra, message) in enumerate(usage):
        out = run(base + extra, 2, f"usage_{i}")
        if out:
            expect_in(f"usage_{i}", out[1], message)
    # .npy files that are not buffers: refused at once, naming the flag, the file and why.
    big_endian = os.path.join(tmp, "be.npy")
    np.save(big_endian, np.arange(4, dtype=">f4"))
    fortran = os.path.join(tmp, "fortran.npy")
    np.save(fortran, np.asfortranarray(np.ones((2, 3), dtype=np.float32)))
    junk = os.path.join(tmp, "junk.npy")
    with open(junk, "wb") as f:
        f.write(b"not numpy at all")
    cut = os.path.join(tmp, "cut.npy")
    np.save(cut, np.arange(16, dtype=np.float32))
    with open(cut, "r+b") as f:
        f.truncate(os.path.getsize(cut) - 4)
    empty = os.path.join(tmp, "empty.npy")
    np.save(empty, np.zeros((0,), dtype=np.float32))
    for path, rc, message in ((big_endian, 1, "dtype '>f4' is not a buffer type"),
                              (fortran, 1, "Fortran order"),
                              (junk, 1, "not a .npy file"),
                              (cut, 1, "make 64 bytes of data, but the file has 60"),
                              (empty, 2, "the array has no elements")):
        name = os.path.basename(path)
        out = run(base + ["--buf", f"file:{path}", "--buf", "zero:32"], rc, f"npy_{name}")
        if out:
            expect_in(f"npy_{name}", out[1], f"--buf 'file:{path}'", message)


def expect_device(name, text, device):
    """The run's "device:" line names exactly `device` (what follows a comma is the run's mode)."""
    if not re.search(rf"^device:  {re.escape(device)}(,.*)?$", text, re.M):
        fail(f"{name}: no 'device:  {device}' line:\n{text}")


def check_device(tmp, info, dev):
    k = os.path.join(tmp, "typed.comp")
    base = ["run", k, "--groups", "1", "--define", "T=uint", "--define", "MUL=1", "--define",
            "ADD=0", "--info-u32", "4", "--buf", "iota:4:u32", "--buf", "zero:16:u32"]
    # A part of the name (the flag and the environment variable), and the index.
    part = dev["name"][: max(3, len(dev["name"]) // 2)]
    for tag, extra, env in (("device_name", ["--device", part], None),
                            ("device_index", ["--device", str(dev["index"])], None),
                            ("device_env_name", [], {"CUBEC_DEVICE": part}),
                            ("device_env_index", [], {"CUBEC_DEVICE": str(dev["index"])})):
        out = run(base + extra, 0, tag, env)
        if out:
            expect_device(tag, out[0], dev["name"])
            expect_in(tag, out[0], "binding 1 (write, 16 bytes, u32): 0 1 2 3")
    # The flag wins over the variable.
    out = run(base + ["--device", part], 0, "device_flag_wins", {"CUBEC_DEVICE": "no such"})
    if out:
        expect_device("device_flag_wins", out[0], dev["name"])
    for tag, value in (("device_missing_name", "RTX 9090 that is not here"),
                       ("device_missing_index", str(len(info["devices"])))):
        out = run(base + ["--device", value], 1, tag)
        if out:
            expect_in(tag, out[1], "opening the device", value)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        got = check_info_json()
        features = got[1]["features"] if got else []
        check_types(tmp, features)
        check_bad_input(tmp)
        if got:
            check_device(tmp, *got)
            for d in got[0]["devices"]:
                check_capabilities(d, "vulkan")
        check_null_capabilities()
    out = run(["bench", "--help"], 0, "bench_help")
    if out:
        expect_in("bench_help", out[0], "docs/benchmarks.md")
        if not os.path.isfile(os.path.join(SOURCE, "docs", "benchmarks.md")):
            fail("bench_help: docs/benchmarks.md does not exist")
    if failures:
        print(f"test_cli_scripting: {len(failures)} failure(s)", file=sys.stderr)
        return 1
    print("test_cli_scripting: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
