#!/usr/bin/env bash
# End-to-end test of the `cubec` tool: `cubec run` on GLSL and SPIR-V kernels written here, with
# the saved outputs checked against values computed in the script; then the usage errors, which
# must exit 2 and name the flag and the value.
#
# usage: test_cli.sh PATH/TO/cubec
set -u

. "$(dirname "$0")/cli_test_lib.sh"

# check_floats FILE COUNT EXPR: FILE must hold exactly COUNT float32 values equal to EXPR (a
# Python expression of i, evaluated in float32 by rounding through struct).
check_floats() {
    python3 - "$1" "$2" "$3" <<'EOF'
import struct, sys
path, count, expr = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = open(path, "rb").read()
if len(data) != 4 * count:
    sys.exit(f"{path}: {len(data)} bytes, expected {4 * count}")
got = struct.unpack(f"<{count}f", data)
f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]
for i, g in enumerate(got):
    want = f32(eval(expr, {"i": i}))
    if g != want:
        sys.exit(f"{path}: element {i} is {g}, expected {want} ({expr})")
EOF
}

# --- A GLSL kernel: out[i] = a[i] * 2 + info.k for i < info.n -----------------------------------
cat >"$TMP/scale.comp" <<'EOF'
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer O { float o[]; };
CUBEC_INFO(uint n; float k;)
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n) {
        o[i] = a[i] * 2.0 + info.k;
    }
}
EOF

# 256 elements in 4 groups of 64, over iota input; the output buffer is 1 KiB of zeros.
if run_expect 0 glsl "$CUBEC" run "$TMP/scale.comp" --groups 4 --info-u32 256 --info-f32 0.5 \
    --buf iota:256:f32 --buf zero:1K --out-dir "$TMP/out" --print 4; then
    check_floats "$TMP/out/binding1.bin" 256 "i * 2 + 0.5" || fail "glsl: wrong output"
    # Binding 0 is readonly: it is not an output, so it is neither printed nor saved.
    [ ! -e "$TMP/out/binding0.bin" ] || fail "glsl: the readonly binding 0 was saved"
    expect_in glsl "binding 1" "0.5 2.5 4.5 6.5 ..."

    # Feed that output back in as a file: o = (2i + 0.5) * 2 + 1.
    if run_expect 0 file "$CUBEC" run "$TMP/scale.comp" --groups 4 --info-u32 256 --info-f32 1 \
        --buf "file:$TMP/out/binding1.bin" --buf zero:1K --out-dir "$TMP/out_file"; then
        check_floats "$TMP/out_file/binding1.bin" 256 "(i * 2 + 0.5) * 2 + 1" ||
            fail "file: wrong output"
    fi
fi

# The same kernel over a constant input, with --flag=value syntax and a define that is unused.
if run_expect 0 fill "$CUBEC" run "$TMP/scale.comp" --groups=2,1,1 --define UNUSED=3 \
    --info-u32=100 --info-f32=-1 --buf fill:400:f32:1.25 --buf fill:400:u32:0 \
    --out-dir "$TMP/out2"; then
    check_floats "$TMP/out2/binding1.bin" 100 "1.5" || fail "fill: wrong output"
fi

# More --buf than the kernel's bindings: a project's layout may be larger than what its module
# still uses, and the library takes such a launch (docs/kernels.md); the extra buffer is passed,
# not bound, and said so. Fewer stay refused (buf_count, below).
if run_expect 0 extra_buf "$CUBEC" run "$TMP/scale.comp" --groups 4 --info-u32 256 --info-f32 0.5 \
    --buf iota:256:f32 --buf zero:1K --buf fill:64:f32:7 --out-dir "$TMP/out_extra"; then
    check_floats "$TMP/out_extra/binding1.bin" 256 "i * 2 + 0.5" || fail "extra_buf: wrong output"
    expect_in extra_buf "unbound: buffer 2 (past the kernel's last binding"
    [ ! -e "$TMP/out_extra/binding2.bin" ] || fail "extra_buf: the unbound buffer 2 was saved"
fi

# --- A SPIR-V kernel (glslc is a required package): a push-constant block declared directly ------
command -v glslc >/dev/null || fail "glslc is missing (make install-deps installs it)"
{
    cat >"$TMP/scale_pc.comp" <<'EOF'
#version 450
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) buffer O { float o[]; };
layout(push_constant) uniform Info { uint n; float k; } info;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n) {
        o[i] = o[i] + a[i] * 2.0 + info.k;
    }
}
EOF
    glslc --target-env=vulkan1.2 -fshader-stage=comp -o "$TMP/scale_pc.spv" "$TMP/scale_pc.comp" ||
        fail "glslc failed"
    if run_expect 0 spirv "$CUBEC" run "$TMP/scale_pc.spv" --groups 2 --info-u32 64 \
        --info-f32 3 --buf iota:64:f32 --buf fill:256:f32:10 --out-dir "$TMP/out3"; then
        check_floats "$TMP/out3/binding1.bin" 64 "10 + i * 2 + 3" || fail "spirv: wrong output"
        expect_in spirv "read-write"
    fi
}

# --- --trace: the library writes a Chrome trace of the run, checked by check_trace.py ----------
CHECK_TRACE="$(cd "$(dirname "$0")/.." && pwd)/tests/profiling/check_trace.py"
# The run launches the kernel once, and fills its zero:1K buffer with one launch of the builtin
# cubec.fill; the iota buffer is written from the host, which is no launch.
echo stale >"$TMP/run.trace.json" # replaced: an old file must not pass for this run's trace
if run_expect 0 trace "$CUBEC" run "$TMP/scale.comp" --groups 4 --info-u32 256 --info-f32 0.5 \
    --buf iota:256:f32 --buf zero:1K --out-dir "$TMP/out_trace" --trace "$TMP/run.trace.json"; then
    check_floats "$TMP/out_trace/binding1.bin" 256 "i * 2 + 0.5" || fail "trace: wrong output"
    expect_in trace "trace:" "$TMP/run.trace.json"
    python3 "$CHECK_TRACE" "$TMP/run.trace.json" --launches 2 --min-streams 1 --submit-streams \
        --kernel scale.comp --kernel cubec.fill >"$TMP/trace_check.out" 2>&1 || {
        fail "trace: check_trace.py refused the trace:"
        sed 's/^/    /' "$TMP/trace_check.out" >&2
    }
    # The fill of zero:1K says its 1024 bytes; every submit names the stream of the run's work
    # (the stream of its launches), not 0; a compilation names no stream (null, not 0).
    python3 - "$TMP/run.trace.json" <<'EOF' || fail "trace: fill size or submit streams wrong"
import json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
fills = [e for e in events if e["name"] == "cubec.fill"]
assert len(fills) == 1 and fills[0]["args"]["bytes"] == 1024, fills
work = {e["args"]["stream"] for e in events if e.get("cat") == "launch"}
assert len(work) == 1 and 0 not in work, work
submits = [e for e in events if e["name"] == "submit"]
assert submits and all(e["args"]["stream"] in work for e in submits if e["args"]["tasks"]), submits
compiles = [e for e in events if e.get("cat") == "compile"]
assert compiles and all(e["args"]["stream"] is None for e in compiles), compiles
EOF
fi
# A trace file that cannot be created fails the run (the device refuses to open).
run_expect 1 trace_unwritable "$CUBEC" run "$TMP/scale.comp" --groups 1 --info-u32 1 \
    --info-f32 0 --buf zero:4 --buf zero:4 --trace "$TMP/no/such/dir/t.json" &&
    expect_in trace_unwritable "$TMP/no/such/dir/t.json"

# --- Usage errors: exit 2, naming the flag and the value ---------------------------------------
K="$TMP/scale.comp"
run_expect 2 bad_groups "$CUBEC" run "$K" --groups 4x --buf zero:1K --buf zero:1K &&
    expect_in bad_groups "--groups" "4x"
run_expect 2 bad_flag "$CUBEC" run "$K" --groups 4 --bogus 1 && expect_in bad_flag "--bogus"
run_expect 2 bad_buf "$CUBEC" run "$K" --groups 4 --buf fill:10:f32:1 &&
    expect_in bad_buf "--buf" "fill:10:f32:1"
run_expect 2 bad_info "$CUBEC" run "$K" --groups 4 --info-f32 x1 --buf zero:1K &&
    expect_in bad_info "--info-f32" "x1"
run_expect 2 no_value "$CUBEC" run "$K" --buf zero:1K --groups && expect_in no_value "--groups"
run_expect 2 info_size "$CUBEC" run "$K" --groups 4 --info-u32 256 --buf iota:256:f32 \
    --buf zero:1K && expect_in info_size "8 bytes of info" "give 4"
run_expect 2 buf_count "$CUBEC" run "$K" --groups 4 --info-u32 256 --info-f32 0 \
    --buf zero:1K && expect_in buf_count "2 storage bindings" "1 --buf"
run_expect 2 empty_trace "$CUBEC" run "$K" --groups 1 --buf zero:4 --trace "" &&
    expect_in empty_trace "--trace" "empty"
run_expect 2 empty_trace_eq "$CUBEC" run "$K" --groups 1 --buf zero:4 --trace= &&
    expect_in empty_trace_eq "--trace" "empty"
run_expect 2 bench_empty_trace "$CUBEC" bench --quick --trace "" &&
    expect_in bench_empty_trace "--trace" "empty"
run_expect 2 bench_bad_backend "$CUBEC" bench --quick --backend nosuch &&
    expect_in bench_bad_backend "--backend" "nosuch" "vulkan" "webgpu"
run_expect 2 bench_no_backend "$CUBEC" bench --quick --backend && expect_in bench_no_backend "--backend"
run_expect 2 bad_command "$CUBEC" frobnicate && expect_in bad_command "frobnicate"
run_expect 2 no_command "$CUBEC"

# --- Runtime errors: exit 1 -------------------------------------------------------------------
printf '#version 450\nlayout(local_size_x = 1) in;\nvoid main() { this is not glsl; }\n' \
    >"$TMP/broken.comp"
run_expect 1 compile_error "$CUBEC" run "$TMP/broken.comp" --groups 1 --buf zero:4 &&
    expect_in compile_error "CUBEC_COMPILE_FAILED"
# An entry point that names no function of the source is refused, not replaced by main.
run_expect 1 no_entry "$CUBEC" run "$K" --entry nothere --groups 1 --info-u32 1 --info-f32 0 \
    --buf zero:4 --buf zero:4 && expect_in no_entry "CUBEC_COMPILE_FAILED" "entry_point 'nothere'"
run_expect 1 missing_file "$CUBEC" run "$TMP/nonexistent.comp" --groups 1 --buf zero:4 &&
    expect_in missing_file "nonexistent.comp"

run_expect 1 bad_device "$CUBEC" run "$K" --groups 1 --device 999 --info-u32 1 --info-f32 0 \
    --buf zero:4 --buf zero:4 && expect_in bad_device "opening the device"

# --- Files that are not regular files: refused at once, naming the argument (exit 1) ------------
# Before, /dev/zero as a source was read until the host ran out of memory, and a FIFO blocked
# the run until something wrote to it (the ctest timeout catches a hang; nothing here is timed).
mkfifo "$TMP/fifo" || fail "mkfifo failed"
mkdir -p "$TMP/a_dir"
run_expect 1 buf_dev_zero "$CUBEC" run "$K" --groups 1 --info-u32 1 --info-f32 0 \
    --buf file:/dev/zero --buf zero:4 &&
    expect_in buf_dev_zero "--buf 'file:/dev/zero'" "is a character device, not a regular file"
run_expect 1 buf_fifo "$CUBEC" run "$K" --groups 1 --info-u32 1 --info-f32 0 \
    --buf "file:$TMP/fifo" --buf zero:4 && expect_in buf_fifo "--buf 'file:$TMP/fifo'" "is a FIFO"
run_expect 1 buf_dir "$CUBEC" run "$K" --groups 1 --info-u32 1 --info-f32 0 \
    --buf "file:$TMP/a_dir" --buf zero:4 && expect_in buf_dir "file:$TMP/a_dir" "is a directory"
run_expect 1 kernel_dev_zero "$CUBEC" run /dev/zero --groups 1 --buf zero:4 &&
    expect_in kernel_dev_zero "kernel '/dev/zero'" "is a character device"
run_expect 1 kernel_fifo "$CUBEC" run "$TMP/fifo" --groups 1 --buf zero:4 &&
    expect_in kernel_fifo "kernel '$TMP/fifo'" "is a FIFO"
# A kernel file over the documented 64 MiB is refused unread (a sparse file: no disk used).
truncate -s $((64 * 1024 * 1024 + 1)) "$TMP/huge.comp"
run_expect 1 kernel_huge "$CUBEC" run "$TMP/huge.comp" --groups 1 --buf zero:4 &&
    expect_in kernel_huge "kernel '$TMP/huge.comp'" "67108865 bytes" "limit of 67108864"
# --trace at a FIFO or a directory: refused, and left in place (before, the FIFO was removed).
run_expect 1 trace_fifo "$CUBEC" run "$K" --groups 1 --info-u32 1 --info-f32 0 --buf zero:4 \
    --buf zero:4 --trace "$TMP/fifo" && expect_in trace_fifo "--trace" "$TMP/fifo" "is a FIFO"
[ -p "$TMP/fifo" ] || fail "trace_fifo: the FIFO was removed"
run_expect 1 trace_dir "$CUBEC" run "$K" --groups 1 --info-u32 1 --info-f32 0 --buf zero:4 \
    --buf zero:4 --trace "$TMP/a_dir" && expect_in trace_dir "--trace" "is a directory"
# CUBEC_TRACE and CUBEC_CONFIG at a FIFO: the device refuses to open, naming the variable.
CUBEC_TRACE="$TMP/fifo" run_expect 1 env_trace_fifo "$CUBEC" run "$K" --groups 1 --info-u32 1 \
    --info-f32 0 --buf zero:4 --buf zero:4 &&
    expect_in env_trace_fifo "CUBEC_TRACE" "$TMP/fifo" "is a FIFO"
CUBEC_CONFIG="$TMP/fifo" run_expect 1 env_config_fifo "$CUBEC" info --memory &&
    expect_in env_config_fifo "CUBEC_CONFIG" "$TMP/fifo" "is a FIFO"
# An output file that is a FIFO: refused, naming it (the run itself succeeded).
mkdir -p "$TMP/out_fifo"
mkfifo "$TMP/out_fifo/binding1.bin"
run_expect 1 out_fifo "$CUBEC" run "$K" --groups 4 --info-u32 256 --info-f32 0.5 \
    --buf iota:256:f32 --buf zero:1K --out-dir "$TMP/out_fifo" &&
    expect_in out_fifo "--out-dir" "$TMP/out_fifo/binding1.bin" "is a FIFO"

# --- The other commands ------------------------------------------------------------------------
run_expect 0 help "$CUBEC" --help && expect_in help "info" "run" "bench" "version"
run_expect 0 run_help "$CUBEC" run --help &&
    expect_in run_help "--buf" "--groups" "--out-dir" "--trace"
run_expect 0 bench_help "$CUBEC" bench --help &&
    expect_in bench_help "--trace" "docs/benchmarks.md" "--backend NAME" "webgpu"
run_expect 0 info_help "$CUBEC" info --help
run_expect 0 version "$CUBEC" version && expect_in version "cubec 0.2.14"
run_expect 0 info "$CUBEC" info && expect_in info "[default]" "max storage buffer range"
# The backends line names every row of GPU_BACKENDS (src/gpu/gpu_backends.h), vulkan selected.
SRC_DIR="$(cd "$(dirname "$0")/.." && pwd)"
BACKENDS=$(sed -n 's/^ *X(\([a-z0-9_]*\), .*/\1/p' "$SRC_DIR/src/gpu/gpu_backends.h")
[ -n "$BACKENDS" ] || fail "info: no backend rows found in src/gpu/gpu_backends.h"
for b in $BACKENDS; do expect_in info "$b"; done
expect_in info "backends: vulkan [selected]"
CUBEC_BACKEND=null run_expect 0 info_null "$CUBEC" info &&
    expect_in info_null "null [selected]" "cubec null device"
# --- cubec info: the features and cooperative-matrix lines, held to the library ----------------
# The labels are cmd_info.c's and the feature names cubec_feature_name's (src/base/features.h),
# read from the sources rather than written again here. Every device has a features line of
# known names and a cooperative-matrix line ("none" unless a cooperative-matrix feature is
# listed). For the default device the list is held to what the opened device enabled
# (cubec_device_get_info): no "features off by config" line without configuration, exactly the
# disabled names with CUBEC_DISABLE_FEATURES, and a kernel needing a listed feature runs (checked
# here) while one needing a disabled or missing feature is refused naming its capability.
SRC="$(cd "$(dirname "$0")/.." && pwd)"
FEATURES_LABEL=$(grep -o 'print_features("[a-z ]*", d->features)' "$SRC/tools/cmd_info.c" |
    sed 's/print_features("\([^"]*\)".*/\1/')
OFF_LABEL=$(grep -o 'print_features("features off[a-z ]*"' "$SRC/tools/cmd_info.c" |
    sed 's/print_features("\([^"]*\)".*/\1/')
MATRIX_LABEL=$(grep -o '"cooperative matrix shapes"' "$SRC/tools/cmd_info.c" | head -n 1 | tr -d '"')
# feature_name ENUMERATOR: its short name in features.h's FEATURE_LIST.
feature_name() {
    grep -o "X($1, \"[a-z0-9_]*\"" "$SRC/src/base/features.h" | sed 's/.*"\(.*\)"/\1/'
}
ALL_FEATURES=$(grep -o 'X(CUBEC_FEATURE_[A-Z0-9_]*, "[a-z0-9_]*"' "$SRC/src/base/features.h" |
    sed 's/.*"\(.*\)"/\1/' | tr '\n' ' ')
F_SUBGROUP=$(feature_name CUBEC_FEATURE_SUBGROUP_ARITHMETIC)
F_INT64=$(feature_name CUBEC_FEATURE_INT64)
if [ -z "$FEATURES_LABEL" ] || [ -z "$OFF_LABEL" ] || [ -z "$MATRIX_LABEL" ] ||
    [ -z "$F_SUBGROUP" ] || [ -z "$F_INT64" ]; then
    fail "info: a label or feature name was not found in cmd_info.c / features.h"
fi

# info_lists OUT LABEL: the names on the default device's LABEL line (and the unlabelled lines
# under it) of `cubec info` output OUT, one a line; checks the output's shape on the way (every
# device: a features line of known names, a cooperative-matrix line), exit 1 if it is wrong.
info_lists() {
    python3 - "$1" "$2" "$FEATURES_LABEL" "$MATRIX_LABEL" "$ALL_FEATURES" <<'EOF'
import re, sys
out, label, features_label, matrix_label, known = sys.argv[1:6]
known = set(known.split())
devices, cur = [], None
for line in open(out).read().splitlines():
    if re.match(r"device \d+: ", line):
        cur = {"default": line.endswith("[default]"), "rows": []}
        devices.append(cur)
    elif cur is not None:
        cur["rows"].append(line)
if not devices:
    sys.exit("no device blocks")

def field(rows, name):
    """The values of row `name` and of the unlabelled rows under it, or None."""
    for i, r in enumerate(rows):
        if r.startswith("  " + name + " ") and r[:31].strip() == name:
            vals = [r[31:].strip()]
            for more in rows[i + 1:]:
                if more[:31].strip() or not more.strip():
                    break
                vals.append(more[31:].strip())
            return vals
    return None

picked = None
for d in devices:
    feats = field(d["rows"], features_label)
    if feats is None:
        sys.exit(f"a device has no '{features_label}' line")
    names = " ".join(feats).split()
    if names != ["none"] and (set(names) - known or len(set(names)) != len(names)):
        sys.exit(f"'{features_label}' lists unknown or repeated names: {names}")
    shapes = field(d["rows"], matrix_label)
    if shapes is None:
        sys.exit(f"a device has no '{matrix_label}' line")
    coop = {"cooperative_matrix", "cooperative_matrix_nv"} & set(names)
    if (shapes == ["none"]) != (not coop):
        sys.exit(f"'{matrix_label}' is {shapes} with cooperative-matrix features {sorted(coop)}")
    shape = r"\d+x\d+x\d+ \w+\*\w+\+\w+->\w+( saturating)? \((KHR|NV)\)"
    for s in shapes:
        if s != "none" and not re.fullmatch(shape, s):
            sys.exit(f"'{matrix_label}' row '{s}' is not 'MxNxK a*b+c->result (extension)'")
    if d["default"]:
        picked = field(d["rows"], label)
if not any(d["default"] for d in devices):
    sys.exit("no device is marked [default]")
for name in " ".join(picked or []).split():
    print(name)
EOF
}

# check_u32 FILE COUNT EXPR: FILE holds exactly COUNT uint32 values equal to EXPR (Python, of i).
check_u32() {
    python3 - "$1" "$2" "$3" <<'EOF'
import struct, sys
path, count, expr = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = open(path, "rb").read()
if len(data) != 4 * count:
    sys.exit(f"{path}: {len(data)} bytes, expected {4 * count}")
for i, g in enumerate(struct.unpack(f"<{count}I", data)):
    want = eval(expr, {"i": i}) & 0xFFFFFFFF
    if g != want:
        sys.exit(f"{path}: element {i} is {g}, expected {want} ({expr})")
EOF
}

# Kernels needing one feature each, over 256 words: per invocation the sum of 1 over its subgroup
# and the subgroup size (128 invocations, both must be the size `cubec info` reports), and 64-bit
# arithmetic, o[i] = (i * (2^32 + 1) + 2^32 - 1) >> 32 = i + (i > 0) (256 invocations).
cat >"$TMP/subgroup_add.comp" <<'EOF'
#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) writeonly buffer O { uint o[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    o[2u * i] = subgroupAdd(1u);
    o[2u * i + 1u] = gl_SubgroupSize;
}
EOF
cat >"$TMP/int64.comp" <<'EOF'
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) writeonly buffer O { uint o[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    o[i] = uint((uint64_t(i) * 0x100000001ul + 0xfffffffful) >> 32);
}
EOF

# feature_kernel NAME KERNEL GROUPS FEATURE CAPABILITY HOW EXPR [VAR=VALUE...]: with FEATURE
# enabled (HOW=on) the kernel runs and its binding 0 (256 words) equals EXPR; otherwise it is
# refused naming the capability and the feature, as turned off (HOW=off) or lacking (absent).
feature_kernel() {
    local name=$1 kernel=$2 groups=$3 feature=$4 cap=$5 how=$6 expr=$7
    shift 7
    if [ "$how" = on ]; then
        if run_expect 0 "$name" env "$@" "$CUBEC" run "$kernel" --groups "$groups" \
            --buf zero:1K --out-dir "$TMP/$name.d"; then
            check_u32 "$TMP/$name.d/binding0.bin" 256 "$expr" || fail "$name: wrong output"
        fi
        return
    fi
    local why="lacks it"
    [ "$how" = off ] && why="turned off"
    run_expect 1 "$name" env "$@" "$CUBEC" run "$kernel" --groups "$groups" --buf zero:1K &&
        expect_in "$name" "CUBEC_UNSUPPORTED" "SPIR-V capability $cap," "device feature $feature " \
            "$why"
}

if run_expect 0 info_features "$CUBEC" info; then
    if info_lists "$TMP/info_features.out" "$FEATURES_LABEL" >"$TMP/features.list" \
        2>"$TMP/features.why"; then
        has() { grep -qx -- "$1" "$TMP/features.list"; }
        ! grep -qF "$OFF_LABEL" "$TMP/info_features.out" ||
            fail "info: '$OFF_LABEL' printed with nothing disabled"
        SUBGROUP_SIZE=$(grep -m1 -o 'subgroup size  *[0-9]*' "$TMP/info_features.out" |
            grep -o '[0-9]*$')
        sub_how=absent
        int64_how=absent
        has "$F_SUBGROUP" && sub_how=on
        has "$F_INT64" && int64_how=on
        feature_kernel info_subgroup "$TMP/subgroup_add.comp" 2 "$F_SUBGROUP" \
            GroupNonUniformArithmetic "$sub_how" "${SUBGROUP_SIZE:-0}"
        feature_kernel info_int64 "$TMP/int64.comp" 4 "$F_INT64" Int64 "$int64_how" "i + (i > 0)"
        # Those of the two the device has, turned off by the configuration: listed as off by
        # config (the opened device's features against peek's, which the features line shows)
        # and their kernels refused as turned off.
        disable=""
        for f in "$F_SUBGROUP" "$F_INT64"; do
            if has "$f"; then disable="$disable${disable:+,}$f"; fi
        done
        if [ -n "$disable" ] &&
            CUBEC_DISABLE_FEATURES="$disable" run_expect 0 info_disabled "$CUBEC" info; then
            want=$(echo "$disable" | tr , '\n' | sort | tr '\n' ' ')
            got=$(info_lists "$TMP/info_disabled.out" "$OFF_LABEL" | sort | tr '\n' ' ')
            [ "$got" = "$want" ] ||
                fail "info_disabled: '$OFF_LABEL' lists '$got', expected '$want'"
            [ "$sub_how" = absent ] || feature_kernel info_subgroup_off "$TMP/subgroup_add.comp" 2 \
                "$F_SUBGROUP" GroupNonUniformArithmetic off "" CUBEC_DISABLE_FEATURES="$disable"
            [ "$int64_how" = absent ] || feature_kernel info_int64_off "$TMP/int64.comp" 4 \
                "$F_INT64" Int64 off "" CUBEC_DISABLE_FEATURES="$disable"
        fi
    else
        fail "info: $(cat "$TMP/features.why")"
        sed 's/^/    /' "$TMP/info_features.out" >&2
    fi
fi

# The memory report of a device nothing was allocated on: no stream slot, the metadata ring.
run_expect 0 info_memory "$CUBEC" info --memory &&
    expect_in info_memory "in use" "reserved" "no stream has allocated memory" "metadata" \
        "persistent_memory"
if run_expect 0 info_memory_json "$CUBEC" info --memory --json; then
    python3 - "$TMP/info_memory_json.out" <<'EOF' || fail "info_memory_json: unexpected report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["slots"] == [], r["slots"]
kinds = [p["kind"] for p in r["auxiliary"]]
assert "metadata" in kinds, kinds
t = r["totals"]
assert t["allocations"] == 0 and t["bytes_in_use"] == 0 and t["bytes_reserved"] == 0, t
aux = sum(p["bytes_reserved"] for p in r["auxiliary"])
assert t["auxiliary_bytes_reserved"] == aux and t["all_bytes_reserved"] == aux, t
assert r["persistent_memory"] in ("enabled", "size-match", "disabled", "enforced"), r
EOF
fi
# The topology: on one device (lavapipe) the pair (0,0) and, from a second open, (0,1), each with
# a path, a link class and a bandwidth measured; [multi] path = host-staged overrides (0,0).
run_expect 0 info_topology "$CUBEC" info --topology &&
    expect_in info_topology "src" "same-device" "cuda-interop: not available"
if run_expect 0 info_topology_json "$CUBEC" info --topology --json; then
    python3 - "$TMP/info_topology_json.out" <<'EOF' || fail "info_topology_json: unexpected matrix"
import json, sys
r = json.load(open(sys.argv[1]))
n = len(r["devices"])
assert n >= 2 and len(r["pairs"]) == n * n, r
pairs = {(p["src"], p["dst"]): p for p in r["pairs"]}
assert pairs[(0, 0)]["path"] == "same-device" and pairs[(0, 0)]["link"] == "same-device", pairs
assert pairs[(0, 1)]["path"] in ("host-staged", "cuda-interop"), pairs
for p in r["pairs"]:
    assert p["bandwidth_gbs"] > 0 and p["error"] == "", p
EOF
fi
CUBEC_MULTI_PATH=host-staged run_expect 0 info_topology_forced "$CUBEC" info --topology --json &&
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["pairs"][0]; assert p["path"]=="host-staged", p' \
        "$TMP/info_topology_forced.out" || fail "info_topology_forced: [multi] path not applied"
run_expect 2 info_topology_memory "$CUBEC" info --topology --memory &&
    expect_in info_topology_memory "exclude each other"
# --json alone is the device list as JSON (tools/test_cli_scripting.sh checks its fields).
run_expect 0 info_json_alone "$CUBEC" info --json &&
    python3 -m json.tool "$TMP/info_json_alone.out" >/dev/null || fail "info --json: not JSON"

# --- The bounds-checked mode: on by default in `cubec run` ----------------------------------------
# 256 invocations write o[i] = i + 1 into a 16-word buffer: the first 16 words are right, and
# the run says whether the stores past the end were checked (per buffer where the device has
# robustBufferAccess2, as `cubec info` says).
cat >"$TMP/oob.comp" <<'EOF'
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) writeonly buffer O { uint o[]; };
void main() { o[gl_GlobalInvocationID.x] = gl_GlobalInvocationID.x + 1u; }
EOF
run_expect 0 info_robust "$CUBEC" info
robust_line=$(grep -F "bounds checks (robust)" "$TMP/info_robust.out" | head -n 1)
case "$robust_line" in
*"per buffer"*) want_checks="bounds:  checked per buffer" ;;
*"per pool page"*) want_checks="bounds:  checked per pool page only" ;;
*) want_checks="bounds:  not checked" ;;
esac
if run_expect 0 run_oob "$CUBEC" run "$TMP/oob.comp" --groups 4 --buf zero:64 --print-u32 \
    --out-dir "$TMP/out_oob"; then
    expect_in run_oob "$want_checks"
    check_u32 "$TMP/out_oob/binding0.bin" 16 "i + 1" || fail "run_oob: wrong in-bounds values"
fi
if run_expect 0 run_oob_unchecked "$CUBEC" run "$TMP/oob.comp" --groups 1 --buf zero:256 \
    --no-robust --print-u32 --out-dir "$TMP/out_oob_unchecked"; then
    expect_in run_oob_unchecked "bounds:  not checked (--no-robust)"
    check_u32 "$TMP/out_oob_unchecked/binding0.bin" 64 "i + 1" ||
        fail "run_oob_unchecked: wrong values"
fi
run_expect 2 run_no_robust_value "$CUBEC" run "$TMP/oob.comp" --groups 1 --buf zero:256 \
    --no-robust=1 && expect_in run_no_robust_value "--no-robust takes no value"

# --- GLSL as projects keep it: -I, --define, --preamble, --spec ----------------------------------
# #include "lib/f.glsl" next to the kernel's file, <consts.glsl> through -I, SCALE from --define,
# and one specialization constant of each type: o[i] = -(f(i * MUL + ADD + SUB + BIAS)).
mkdir -p "$TMP/proj/lib" "$TMP/proj/inc"
cat >"$TMP/proj/k.comp" <<'EOF'
#version 450
#include "lib/f.glsl"
#include <consts.glsl>
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint MUL = 1;
layout(constant_id = 1) const float ADD = 0.0;
layout(constant_id = 2) const int SUB = 0;
layout(constant_id = 3) const bool NEG = false;
layout(set = 0, binding = 0) writeonly buffer O { float o[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    float v = f(float(i) * float(MUL) + ADD + float(SUB) + BIAS);
    o[i] = NEG ? -v : v;
}
EOF
echo 'float f(float x) { return x * SCALE; }' >"$TMP/proj/lib/f.glsl"
echo '#define BIAS 0.25' >"$TMP/proj/inc/consts.glsl"
if run_expect 0 run_project "$CUBEC" run "$TMP/proj/k.comp" --groups 1 --buf zero:256:f32 \
    --define SCALE=2.0 -I "$TMP/proj/inc" --spec 0=3 --spec 1=1.5f --spec 2=-1 --spec 3=true \
    --out-dir "$TMP/out_project"; then
    check_floats "$TMP/out_project/binding0.bin" 64 "-((i * 3 + 1.5 - 1 + 0.25) * 2)" ||
        fail "run_project: wrong output"
fi
# -IDIR, the suffixes u and i, a float written 2f, NEG left at its default.
if run_expect 0 run_project_suffixes "$CUBEC" run "$TMP/proj/k.comp" --groups 1 \
    --buf zero:256:f32 --define SCALE=1.0 "-I$TMP/proj/inc" --spec 0=2u --spec 2=4i --spec 1=2f \
    --out-dir "$TMP/out_project_suffixes"; then
    check_floats "$TMP/out_project_suffixes/binding0.bin" 64 "i * 2 + 2 + 4 + 0.25" ||
        fail "run_project_suffixes: wrong output"
fi
# An include not found names the file, the line and where it looked.
run_expect 1 run_missing_include "$CUBEC" run "$TMP/proj/k.comp" --groups 1 --buf zero:256:f32 \
    --define SCALE=1.0 && expect_in run_missing_include "k.comp:3: error: '#include'" \
    "consts.glsl" "no include directory to search"
# A preamble: the extension the kernel needs, which its source does not enable.
cat >"$TMP/int8.comp" <<'EOF'
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) writeonly buffer O { uint o[]; };
void main() { int8_t v = int8_t(gl_GlobalInvocationID.x); o[gl_GlobalInvocationID.x] = uint(v + int8_t(1)); }
EOF
run_expect 1 run_no_preamble "$CUBEC" run "$TMP/int8.comp" --groups 1 --buf zero:256 &&
    expect_in run_no_preamble "int8.comp:4: error"
if run_expect 0 run_preamble "$CUBEC" run "$TMP/int8.comp" --groups 1 --buf zero:256 \
    --preamble "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require" --print-u32 \
    --out-dir "$TMP/out_preamble"; then
    check_u32 "$TMP/out_preamble/binding0.bin" 64 "i + 1" || fail "run_preamble: wrong values"
fi
run_expect 2 spec_no_eq "$CUBEC" run "$TMP/proj/k.comp" --groups 1 --buf zero:4 --spec 3 &&
    expect_in spec_no_eq "--spec '3': expected ID=VALUE"
run_expect 2 spec_bad_value "$CUBEC" run "$TMP/proj/k.comp" --groups 1 --buf zero:4 \
    --spec 1=x1.5 && expect_in spec_bad_value "--spec '1=x1.5': the value 'x1.5' is not"
run_expect 2 spec_bad_id "$CUBEC" run "$TMP/proj/k.comp" --groups 1 --buf zero:4 --spec a=1 &&
    expect_in spec_bad_id "the id 'a' is not a uint32"
run_expect 2 spec_twice "$CUBEC" run "$TMP/proj/k.comp" --groups 1 --buf zero:4 --spec 0=1 \
    --spec 0=2 && expect_in spec_twice "id 0 is given twice"
run_expect 2 include_no_dir "$CUBEC" run "$TMP/proj/k.comp" --groups 1 --buf zero:4 -I &&
    expect_in include_no_dir "-I needs a directory"

cli_test_end test_cli
