#!/usr/bin/env python3
"""The ggml shader corpus through cubec (issue 24, "Measured and tested").

Builds one variant of every ggml Vulkan shader (tests/corpus/ggml/vulkan-shaders/*.comp) with
ggml's own generator (vulkan-shaders-gen, built by tests/corpus/CMakeLists.txt with
ggml-first-variant.patch: the first variant each source declares), in parallel, then hands every
module to cubec_kernel_create on the default device (lavapipe in CI) through corpus_create, with
its default specialization constants (ggml's own values where the defaults make no valid module:
SPEC_OVERRIDES) and the validation layer on. Prints one line per module
(accepted, or the refusal's code and message with its kind) and the summary

    shaders.ggml_accepted: A / T modules accepted = P %

A source the generator gives no variant, or whose variant glslc refuses for an extension it does
not know, is reported as "toolchain" and not counted: that is Debian's glslc, not cubec.

As a test (the default) it fails when
  - a refusal is of no kind listed in DEVICE_KINDS (a real device limit or a feature the device
    lacks) nor in PENDING_KINDS (cubec gaps issue 24 is closing; --strict refuses those too),
  - the share accepted is below --min-accepted (percent),
  - the validation layer said anything, or a source failed to build for another reason.
With --bench it measures and prints the figure (with --json, as a cubec bench result) and exits 0
whatever the figure.

  ggml_corpus.py --build-dir BUILD [--min-accepted P] [--strict] [--jobs N] [--bench [--json]]
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.join(HERE, "ggml", "vulkan-shaders")

# Refusals that name a real limit of the device or a feature it lacks: these are right to refuse.
# (kind, pattern on "CODE: message")
DEVICE_KINDS = [
    ("device limit: push constants", r"^CUBEC_UNSUPPORTED: .*push-constant block of \d+ bytes exceeds the device limit"),
    ("device limit: shared memory", r"^CUBEC_UNSUPPORTED: .*shared memory .*exceeds the device limit"),
    ("device limit: workgroup size", r"^CUBEC_UNSUPPORTED: .*workgroup .*exceeds the device limit"),
    ("device feature missing", r"^CUBEC_UNSUPPORTED: .*needs SPIR-V capability \w+"),
    ("device feature missing", r"^CUBEC_UNSUPPORTED: .*needs the device feature"),
]

# cubec's own gaps that issue 24 is closing (its "What must work" 1-3). Allowed while listed, so
# that the test measures today's share; each line goes when the work that closes it has landed
# (points 1-3 have: spec-constant shapes, binding gaps, push blocks over the limit; none is left).
PENDING_KINDS = []

# Modules whose default specialization is not a valid module, created with the values ggml gives
# them instead (ggml never runs them with the defaults). flash_attn's defaults (HSV 32, D_split 16)
# leave a zero-length array (HSV / D_split / 4), which the validation layer reports after
# specialization (VUID-VkPipelineShaderStageCreateInfo-pSpecializationInfo-06719); these are
# get_fa_spec_constants() of ggml-vulkan.cpp for the scalar path at a decode step (one row,
# HSK = HSV = 128, f16 K and V, unaligned) on a device with subgroups of 8.
SPEC_OVERRIDES = {
    "flash_attn_f32_f16_fp32": "0=32,1=1,2=64,3=128,4=128,5=1,6=8,7=1,8=8,9=0,10=0,11=0,"
                               "12=1,13=1,14=2,15=2",
}

# What glslc says of an extension it does not know.
TOOLCHAIN_PATTERN = re.compile(r"extension not supported: (\S+)|'(\S+)' : extension not supported")


def classify(code, message, strict):
    text = code + ": " + message
    for kind, pattern in DEVICE_KINDS:
        if re.search(pattern, text):
            return kind, True
    for kind, pattern in PENDING_KINDS:
        if re.search(pattern, text):
            return kind, not strict
    return "not a device limit", False


def build_source(gen, glslc, source, out_root):
    """Runs ggml's generator on one source; returns (stem, rc, log, [spv paths])."""
    stem = os.path.splitext(os.path.basename(source))[0]
    out = os.path.join(out_root, stem)
    os.makedirs(out)
    proc = subprocess.run([gen, "--glslc", glslc, "--source", source, "--output-dir", out],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    spv = sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".spv"))
    return stem, proc.returncode, proc.stdout, spv


def create_modules(create, paths, validation):
    """corpus_create over `paths`; returns (rc, lines)."""
    cmd = [create] + ([] if validation else ["--no-validation"])
    for path in paths:
        spec = SPEC_OVERRIDES.get(os.path.splitext(os.path.basename(path))[0])
        cmd += (["--spec", spec] if spec else []) + [path]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)
    return proc.returncode, proc.stdout.splitlines()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--glslc", default=shutil.which("glslc") or "glslc")
    ap.add_argument("--min-accepted", type=float, default=95.0)
    ap.add_argument("--strict", action="store_true", help="refuse PENDING_KINDS too")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--bench", action="store_true", help="measure only: print the figure")
    ap.add_argument("--json", action="store_true", help="with --bench: the figure as JSON")
    ap.add_argument("--no-validation", action="store_true")
    args = ap.parse_args()

    gen_dir = os.path.join(args.build_dir, "tests", "corpus", "ggml-gen")
    gen = os.path.join(gen_dir, "vulkan-shaders-gen")
    create = os.path.join(args.build_dir, "bin", "corpus_create")
    for tool in (gen, create):
        if not os.access(tool, os.X_OK):
            print(f"ggml_corpus: {tool} is not built (cmake --build {args.build_dir})")
            return 1
    with open(os.path.join(gen_dir, "glslc-lacks.txt"), encoding="utf-8") as f:
        lacks = [line.strip() for line in f if line.strip()]

    sources = sorted(os.path.join(SOURCES, f) for f in os.listdir(SOURCES) if f.endswith(".comp"))
    failures = []
    out_root = tempfile.mkdtemp(prefix="cubec-ggml-corpus-")
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            built = list(pool.map(lambda s: build_source(gen, args.glslc, s, out_root), sources))
        modules, toolchain = [], []
        for stem, rc, log, spv in built:
            if rc == 0 and spv:
                modules.extend(spv)
            elif rc == 0:
                # ggml declares this source's variants only under a GGML_VULKAN_*_GLSLC_SUPPORT
                # define, which the probes of CMakeLists.txt left out.
                toolchain.append((stem, "ggml declares no variant for a glslc without: " + (", ".join(lacks) or "?")))
            else:
                m = TOOLCHAIN_PATTERN.search(log)
                if m:
                    toolchain.append((stem, "glslc: extension not supported: " + (m.group(1) or m.group(2))))
                else:
                    failures.append(f"{stem}: the generator failed (exit {rc}):\n{log}")

        # One corpus_create per job, over interleaved slices: lavapipe compiles each pipeline
        # with LLVM on one thread.
        slices = [modules[i::args.jobs] for i in range(args.jobs) if modules[i::args.jobs]]
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(slices) or 1) as pool:
            results = list(pool.map(lambda s: create_modules(create, s, not args.no_validation),
                                    slices))
    finally:
        shutil.rmtree(out_root, ignore_errors=True)

    accepted, refused = [], []
    for rc, lines in results:
        # A validation message comes while its module is created: before that module's line.
        pending_validation = []
        seen_validation = False
        for line in lines:
            parts = line.split("\t")
            if parts[0] in ("ACCEPTED", "REFUSED") and len(parts) >= 2:
                for message in pending_validation:
                    failures.append(f"validation layer on {parts[1]}: {message}")
                pending_validation = []
            if parts[0] == "ACCEPTED":
                accepted.append(parts[1])
            elif parts[0] == "REFUSED" and len(parts) >= 4:
                refused.append((parts[1], parts[2], "\t".join(parts[3:])))
            elif parts[0] == "VALIDATION":
                seen_validation = True
                pending_validation.append("\t".join(parts[1:]))
            else:
                print(line)
        for message in pending_validation:
            failures.append(f"validation layer: {message}")
        if rc != 0 and not seen_validation:
            failures.append(f"corpus_create exited {rc}")

    total = len(accepted) + len(refused)
    if total != len(modules):
        failures.append(f"{len(modules)} modules built but {total} reported by corpus_create")
    share = 100.0 * len(accepted) / total if total else 0.0

    if args.bench:
        figure = {"name": "shaders.ggml_accepted", "unit": "%", "value": round(share, 1),
                  "accepted": len(accepted), "total": total, "toolchain": len(toolchain),
                  "lower_is_better": False}
        if args.json:
            print(json.dumps(figure))
        else:
            print(f"shaders.ggml_accepted  {share:5.1f} %  ({len(accepted)} of {total} ggml modules;"
                  f" {len(toolchain)} sources left to the toolchain)")
        return 0

    for name in sorted(accepted):
        how = " (with ggml's specialization constants)" if name in SPEC_OVERRIDES else ""
        print(f"accepted   {name}{how}")
    bad = 0
    for name, code, message in sorted(refused):
        kind, allowed = classify(code, message, args.strict)
        if not allowed:
            bad += 1
        print(f"refused    {name}  [{kind}{'' if allowed else ', FAILS THE TEST'}]  {code}: {message}")
    for stem, why in toolchain:
        print(f"toolchain  {stem}.comp  {why}")
    kinds = {}
    for _, code, message in refused:
        kind = classify(code, message, args.strict)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    print()
    for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"{n:4d} refused: {kind}")
    print(f"{len(toolchain):4d} sources without a module: toolchain (not counted)")
    print(f"shaders.ggml_accepted: {len(accepted)} / {total} modules accepted = {share:.1f} %"
          f" (threshold {args.min_accepted:.1f} %, target 95 %)")
    if bad:
        failures.append(f"{bad} refusal(s) name no device limit or missing feature")
    if share + 1e-9 < args.min_accepted:
        failures.append(f"{share:.1f} % accepted, below the threshold {args.min_accepted:.1f} %")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
