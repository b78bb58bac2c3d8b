#!/usr/bin/env bash
# The webgpu backend against wgpu-native used directly, in one run: builds the wgpu peer
# (../shared/peers/wgpu_peer) if it is not built yet, then runs bench/h200_side_by_side.sh with
# WEBGPU=1: `cubec bench --json` (Vulkan backend), `cubec bench --json --backend webgpu` and the
# wgpu peer, one process at a time, ROUNDS times, merged by bench/side_by_side.py into
# $OUT/side_by_side.md (columns cubec, cubec-webgpu, raw Vulkan, wgpu, cubec-webgpu / wgpu).
#
#   bench/wg_side_by_side.sh BUILD_DIR
#
# Environment (defaults in brackets), besides h200_side_by_side.sh's own (ROUNDS, SLEEP, TMO,
# BENCH_ARGS, GL, PACK...):
#   OUT     where the results go [build-wg-sbs/out]
#   PEERS   where the wgpu peer is built, next to its libwgpu_native.so, which the webgpu runs
#           load too (CUBEC_WEBGPU_LIBRARY) [build-peers/bin]
#   PEER_SRC  the peer's sources [../shared/peers/wgpu_peer, beside this checkout]
# The peer's Makefile downloads the PyPI `wgpu` wheel (pip download) unless BUILD_DIR/webgpu/wheel
# has it already (cmake/WebGPU.cmake put it there); it builds in PEERS/../wgpu_peer-src, as the
# shared folder is read-only.
#
# On lavapipe (2 cores), the quick suite, the Vulkan loader installed:
#   GL=none ROUNDS=1 BENCH_ARGS=--quick WGPU_PEER_QUICK=1 TMO=900 bench/wg_side_by_side.sh build
# On the H200 (device call; carry .gl, build-peers and the build folder; the peer built here):
#   OUT=$OUT GL=.gl TMO=600 bench/wg_side_by_side.sh build-h200
set -eu
[ $# -eq 1 ] || { sed -n '2,26p' "$0"; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=$1
OUT=${OUT:-build-wg-sbs/out}
PEERS=${PEERS:-build-peers/bin}
PEER_SRC=${PEER_SRC:-$here/../../shared/peers/wgpu_peer}

if [ ! -x "$PEERS/wgpu_peer" ] || [ ! -f "$PEERS/libwgpu_native.so" ]; then
  src=$PEERS/../wgpu_peer-src
  mkdir -p "$src" "$PEERS"
  cp "$PEER_SRC/Makefile" "$PEER_SRC/wgpu_peer.c" "$src/"
  chmod u+w "$src/Makefile" "$src/wgpu_peer.c"
  wheel=$(find "$(cd "$build" && pwd)/webgpu/wheel" -name 'wgpu-*.whl' 2>/dev/null | head -1 || true)
  if [ -n "$wheel" ] && [ ! -f "$src/wheel/wgpu/resources/webgpu.h" ]; then
    mkdir -p "$src/wheel"
    (cd "$src/wheel" && unzip -q -o "$wheel" 'wgpu/resources/*')
  fi
  make -C "$src" OUT="$(cd "$PEERS" && pwd)" >&2
fi
mkdir -p "$OUT"
OUT=$OUT PEERS=$PEERS WEBGPU=1 "$here/h200_side_by_side.sh" "cubec=$build"
