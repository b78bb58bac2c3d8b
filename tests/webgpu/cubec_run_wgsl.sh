#!/usr/bin/env bash
# `cubec run` of a .wgsl kernel on the webgpu backend (CUBEC_BACKEND=webgpu, set by
# tests/webgpu/CMakeLists.txt): the saved output checked against values computed here; then the
# same file on the null backend, refused by name.
#
# usage: cubec_run_wgsl.sh PATH/TO/cubec
set -u

. "$(dirname "$0")/../../tools/cli_test_lib.sh"

cat >"$TMP/scale.wgsl" <<'WGSL'
// o[i] = a[i] * 3 + k for i < n; the info bytes are the immediates.
struct Info { n: u32, k: f32 }
var<immediate> info: Info;
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < info.n) { o[id.x] = a[id.x] * 3.0 + info.k; }
}
WGSL

if run_expect 0 wgsl "$CUBEC" run "$TMP/scale.wgsl" --groups 4 --info-u32 200 --info-f32 0.25 \
    --buf iota:256:f32 --buf zero:1K --out-dir "$TMP/out" --print 4; then
    python3 - "$TMP/out/binding1.bin" <<'PY' || fail "wgsl: wrong output"
import struct, sys
data = open(sys.argv[1], "rb").read()
got = struct.unpack("<256f", data)
f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]
for i, g in enumerate(got):
    want = f32(i * 3 + 0.25) if i < 200 else 0.0
    if g != want:
        sys.exit(f"element {i} is {g}, expected {want}")
PY
    expect_in wgsl "WGSL"
fi

CUBEC_BACKEND=null run_expect 1 wgsl_null "$CUBEC" run "$TMP/scale.wgsl" --groups 4 \
    --info-u32 200 --info-f32 0.25 --buf iota:256:f32 --buf zero:1K &&
    expect_in wgsl_null "WGSL kernels need the webgpu backend"

cli_test_end cubec_run_wgsl
