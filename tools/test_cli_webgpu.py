#!/usr/bin/python3
"""The `cubec` tool on the webgpu backend (CUBEC_BACKEND=webgpu, set by
tests/webgpu/CMakeLists.txt): every line it prints must be true of a WebGPU device.

`cubec info` shows the implementation, its library and the adapter's backend and description
instead of a Vulkan API version, and no Vulkan wording but the adapter's backend itself; each is
checked against a reference found here: the library named by CUBEC_WEBGPU_LIBRARY, its
wgpuGetVersion called through ctypes, and, where wgpu runs on Vulkan, the Vulkan backend's own
report of the same device. The JSON form says the same. `cubec run` neither asks for nor warns
about Vulkan's robust mode (WebGPU checks every access itself) and says so on its bounds line.

usage: test_cli_webgpu.py PATH/TO/cubec
"""

import ctypes
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
import test_cli_scripting as cli  # noqa: E402  (run, fail, expect_in, text_devices)

LIBRARY = os.environ.get("CUBEC_WEBGPU_LIBRARY", "")
# Labels that name what Vulkan has and WebGPU does not: none may be printed for a webgpu device.
VULKAN_ONLY = ("Vulkan API version", "push descriptors", "device-local heap",
               "max push constants")


def implementation_version():
    """"wgpu-native A.B.C.D" from the library itself, or "unknown version" where it has none."""
    lib = ctypes.CDLL(LIBRARY)
    try:
        get = lib.wgpuGetVersion
    except AttributeError:
        return "unknown version"
    get.restype = ctypes.c_uint32
    v = get()
    return f"wgpu-native {v >> 24}.{(v >> 16) & 255}.{(v >> 8) & 255}.{v & 255}"


def check_info():
    text = cli.run(["info"], 0, "info_text")
    out = cli.run(["info", "--json"], 0, "info_json")
    if not text or not out:
        return None
    devs = cli.text_devices(text[0])
    info = json.loads(out[0])
    if info["backend"] != "webgpu" or not devs or len(devs) != len(info["devices"]):
        cli.fail(f"info: backend {info['backend']}, {len(devs)} devices in the text, "
                 f"{len(info['devices'])} in the JSON")
        return None
    version = implementation_version()
    vulkan = None  # the Vulkan backend's devices, read once where an adapter runs on Vulkan
    for d in info["devices"]:
        rows = devs[d["index"]]["rows"]
        name = f"info: device {d['index']}"
        if not isinstance(d.get("webgpu"), dict):
            cli.fail(f"{name}: no \"webgpu\" object in the JSON")
            d["webgpu"] = dict.fromkeys(("implementation", "library", "adapter_backend",
                                         "description"))
        for label, values in rows.items():
            if label in VULKAN_ONLY:
                cli.fail(f"{name}: a Vulkan-only line '{label}'")
            if label != "WebGPU adapter backend" and "Vulkan" in " ".join(values):
                cli.fail(f"{name}: '{label}' says Vulkan: {values}")
        want = {
            "WebGPU library": LIBRARY,
            "WebGPU implementation": version,
            "WebGPU adapter backend": d["webgpu"]["adapter_backend"],
            "driver": d["webgpu"]["description"],
        }
        for label, value in want.items():
            got = rows.get(label, [None])[0]
            if got != value:
                cli.fail(f"{name}: '{label}' is {got!r}, expected {value!r}")
        # The backend and its capabilities: the text's rows as the JSON, each bit as the calls
        # behave (test_cli_scripting.check_capabilities).
        caps_text = " ".join(rows.get("capabilities", ["none"])).split()
        if rows.get("backend", [None])[0] != "webgpu" or caps_text != (d["capabilities"] or
                                                                      ["none"]):
            cli.fail(f"{name}: backend {rows.get('backend')}, capabilities {caps_text} in the "
                     f"text, {d['capabilities']} in the JSON")
        cli.check_capabilities(d, "webgpu")
        if d["webgpu"]["library"] != LIBRARY:
            cli.fail(f"{name}: JSON webgpu.library {d['webgpu']['library']!r}, not {LIBRARY!r}")
        if (d["webgpu"]["implementation"] or "unknown version") != version:
            cli.fail(f"{name}: JSON webgpu.implementation {d['webgpu']['implementation']!r}")
        if not rows.get("bounds checks (robust)", [""])[0].startswith("always (WebGPU"):
            cli.fail(f"{name}: bounds line {rows.get('bounds checks (robust)')}")
        if d.get("robust") != "always" or d.get("api_version", "missing") is not None:
            cli.fail(f"{name}: JSON robust {d['robust']!r}, api_version {d['api_version']!r}")
        for label, key in (("memory (estimated)", "device_local_heap_size"),
                           ("max immediates", "max_push_constants_size"),
                           ("host register alignment", "host_register_alignment")):
            got = rows.get(label, [""])[0].split(" ")[0]
            if got != str(d.get(key)):
                cli.fail(f"{name}: '{label}' is {got!r}, JSON {key} {d[key]}")
        # The adapter's backend and description, against the Vulkan backend's report of the same
        # device (its driver is "driverName driverInfo"; wgpu's description is driverInfo).
        if d["webgpu"]["adapter_backend"] == "Vulkan":
            if vulkan is None:
                vk = cli.run(["info", "--json"], 0, "info_vulkan", {"CUBEC_BACKEND": "vulkan"})
                vulkan = json.loads(vk[0])["devices"] if vk else []
            drivers = [v["driver"] for v in vulkan if v["name"] == d["name"]]
            if not any(x.endswith(" " + d["webgpu"]["description"]) for x in drivers):
                cli.fail(f"{name}: description {d['webgpu']['description']!r} is not the Vulkan "
                         f"driver's of '{d['name']}': {drivers}")
    return info


def check_no_library():
    """No implementation loads: the reason, with the path tried, rather than "no adapter"."""
    missing = "/nonexistent/libwgpu_native.so"
    out = cli.run(["info"], 1, "info_no_library", {"CUBEC_WEBGPU_LIBRARY": missing})
    if out:
        cli.expect_in("info_no_library", out[0], "no webgpu devices: CUBEC_NOT_FOUND", missing)
    out = cli.run(["info", "--json"], 1, "info_json_no_library", {"CUBEC_WEBGPU_LIBRARY": missing})
    if out:
        got = json.loads(out[0])
        if got["devices"] or not got["default_error"].startswith("CUBEC_NOT_FOUND") or \
                missing not in got["default_error"]:
            cli.fail(f"info_json_no_library: {got}")


KERNEL = r"""#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer O { float o[]; };
CUBEC_INFO(uint n; float k;)
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n) o[i] = a[i] * 2.0 + info.k;
}
"""


def check_run(tmp):
    kernel = os.path.join(tmp, "scale.comp")
    with open(kernel, "w") as f:
        f.write(KERNEL)
    base = ["run", kernel, "--groups", "2", "--info-u32", "128", "--info-f32", "0.5",
            "--buf", "iota:128:f32", "--buf", "zero:512:f32", "--print", "4"]
    cases = (("run", [], {}, "checked by WebGPU, always (within each buffer's binding)"),
             ("run_robust_env", [], {"CUBEC_ROBUST": "1"}, "checked by WebGPU, always"),
             ("run_no_robust", ["--no-robust"], {},
              "checked by WebGPU, always (--no-robust cannot turn it off)"))
    for name, extra, env, bounds in cases:
        out = cli.run(base + extra, 0, name, env)
        if not out:
            continue
        cli.expect_in(name, out[0], "bounds:  " + bounds, "binding 1", "0.5 2.5 4.5 6.5 ...")
        for word in ("robustBufferAccess", "bounds-checked mode asked", "push constants",
                     "Vulkan"):
            if word in out[0] + out[1]:
                cli.fail(f"{name}: the output says '{word}':\n{out[0]}{out[1]}")


def check_help():
    out = cli.run(["help"], 0, "help")
    if out:
        cli.expect_in("help", out[0], "WGSL (.wgsl, webgpu)", "CUBEC_BACKEND",
                      "devices of the selected backend")
    out = cli.run(["info", "--memory"], 0, "info_memory")
    if out and "Vulkan" in out[0]:
        cli.fail(f"info_memory: says Vulkan:\n{out[0]}")
    # Validation asked of a webgpu device is said to be WebGPU's own, not silently dropped.
    out = cli.run(["info"], 0, "info_validation", {"CUBEC_VALIDATION": "1", "CUBEC_LOG": "info"})
    if out:
        cli.expect_in("info_validation", out[1], "webgpu: validation asked: WebGPU validates")
    # The topology's reasons name what WebGPU lacks, not a Vulkan extension.
    out = cli.run(["info", "--topology"], 0, "info_topology")
    if out:
        cli.expect_in("info_topology", out[0], "(WebGPU has no import of host memory)")
        if "VK_" in out[0]:
            cli.fail(f"info_topology: names a Vulkan extension:\n{out[0]}")


def main():
    if not LIBRARY or os.environ.get("CUBEC_BACKEND") != "webgpu":
        sys.exit("test_cli_webgpu: FAIL: run it with CUBEC_BACKEND=webgpu and "
                 "CUBEC_WEBGPU_LIBRARY set (tests/webgpu/CMakeLists.txt does)")
    check_info()
    check_no_library()
    with tempfile.TemporaryDirectory() as tmp:
        check_run(tmp)
    check_help()
    if cli.failures:
        print(f"test_cli_webgpu: {len(cli.failures)} failure(s)", file=sys.stderr)
        return 1
    print("test_cli_webgpu: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
