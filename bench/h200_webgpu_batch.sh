#!/usr/bin/env bash
# Issue 26's H200 half in as few device calls as possible: the webgpu backend's tests, `cubec
# info`, and the side-by-side of cubec (Vulkan), cubec (webgpu) and wgpu-native used directly.
# The device machine cannot reach the network and returns few files, so this script has two
# halves:
#
#   bench/h200_webgpu_batch.sh prep            here: builds build-h200wg/ (below), ~40 MB
#   bench/h200_webgpu_batch.sh run [STEPS]     there: runs STEPS [info tests images sbs] (or
#                                              rows: the per-launch rows and transfers, both
#                                              layouts; variants: launch.device_independent
#                                              under wait and batch settings) into
#                                              $OUT/h200-webgpu.tgz
#
# `prep` builds, in the Release build BUILD [build], cubec and the tests `run` needs, builds the
# wgpu peer (../shared/peers/wgpu_peer, from the wheel cmake/WebGPU.cmake fetched) and copies
# what travels, stripped, into build-h200wg/{bin,peers,gl} (git-ignored, as every /build*/): the
# device call then carries ["build-h200wg"] only:
#
#   run(command="OUT=$OUT bash build-h200wg/h200_webgpu_batch.sh run", carry=["build-h200wg"])
#
# Environment of `run`: ROUNDS [1] side-by-side rounds (one round of all three took ~5 min on
# lavapipe's quick suite; the H200's full suite is the unknown, so one round per call), TMO [420]
# seconds per bench process, SBS_ARGS extra environment for wg_side_by_side.sh (e.g.
# "BENCH_ARGS=--quick"). The webgpu library is the peer's libwgpu_native.so (the same wheel).
set -u
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-}

prep() {
  set -e
  local top dest build src
  top=$(cd "$here/.." && pwd)
  dest=$top/build-h200wg
  build=${BUILD:-$top/build}
  grep -q 'CMAKE_BUILD_TYPE:STRING=Release' "$build/CMakeCache.txt"
  cmake --build "$build" -j2 --target cubec test_webgpu_backend test_webgpu_features \
    test_webgpu_images test_profile test_trace_file test_subgroup_size test_launch test_graphs \
    test_capabilities test_random_api
  src=$top/build-h200wg-peer
  if [ ! -x "$src/out/wgpu_peer" ]; then
    mkdir -p "$src/out"
    cp "$top/../shared/peers/wgpu_peer/Makefile" "$top/../shared/peers/wgpu_peer/wgpu_peer.c" "$src/"
    chmod u+w "$src/Makefile" "$src/wgpu_peer.c"
    wheel=$(find "$build/webgpu/wheel" -name 'wgpu-*.whl' 2>/dev/null | head -1 || true)
    if [ -n "$wheel" ]; then mkdir -p "$src/wheel" && (cd "$src/wheel" && unzip -q -o "$wheel" 'wgpu/resources/*'); fi
    make -C "$src" OUT="$src/out" >&2
  fi
  rm -rf "${dest:?}/bin" "${dest:?}/peers" "${dest:?}/gl" "${dest:?}/cubec"
  mkdir -p "$dest/bin" "$dest/peers" "$dest/gl" "$dest/cubec/bin"
  for t in cubec test_webgpu_backend test_webgpu_features test_webgpu_images test_profile \
    test_trace_file test_subgroup_size test_launch test_graphs test_capabilities test_random_api; do
    strip -o "$dest/bin/$t" "$build/bin/$t"
  done
  cp /usr/lib/x86_64-linux-gnu/libcmocka.so.0 "$dest/bin/"
  strip -o "$dest/peers/wgpu_peer" "$src/out/wgpu_peer"
  cp "$src/out/libwgpu_native.so" "$dest/peers/"
  cp "$top"/.gl/* "$dest/gl/"
  cp "$top/bench/h200_webgpu_batch.sh" "$top/bench/h200_side_by_side.sh" \
    "$top/bench/side_by_side.py" "$dest/"
  # The side-by-side script runs BUILD/bin/cubec.
  ln -sf ../../bin/cubec "$dest/cubec/bin/cubec"
  # Each binary holds the library and shaderc whole: ~100 MB, past the carry's 64 MiB. xz's
  # 64 MiB window finds the copies: ~10 MB (a few minutes of one core).
  tar cf - -C "$dest" bin peers cubec | xz -9 -T1 >"$dest/payload.tar.xz"
  rm -rf "${dest:?}/bin" "${dest:?}/peers" "${dest:?}/cubec"
  du -sh "$dest"
  echo "device call: carry [\"build-h200wg\"]," \
    "command: OUT=\$OUT bash build-h200wg/h200_webgpu_batch.sh run"
}

run_steps() {
  local steps=${1:-info tests images sbs} res
  OUT=${OUT:?OUT must name the folder whose files come back}
  res=$OUT/h200-webgpu
  mkdir -p "$res"
  # shellcheck disable=SC1091
  [ "${GL:-}" = none ] || . "$here/gl/vk-setup.sh" >/dev/null 2>&1
  if [ ! -x "$here/bin/cubec" ]; then
    local data=${TMPDIR:-/tmp}/cubec-h200wg
    mkdir -p "$data" && xz -dc "$here/payload.tar.xz" | tar xf - -C "$data" || return 1
    cp "$here"/*.sh "$here"/*.py "$data/" && here=$data
  fi
  export LD_LIBRARY_PATH="$here/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CUBEC_WEBGPU_LIBRARY=$here/peers/libwgpu_native.so CUBEC_TEST_VALIDATION=0
  {
    date -u
    nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv 2>&1 | head -3
  } >"$res/machine.txt"
  for s in $steps; do
    case $s in
    info)
      {
        echo "== cubec info (vulkan)"; "$here/bin/cubec" info 2>&1
        echo "== cubec info (webgpu)"; CUBEC_BACKEND=webgpu "$here/bin/cubec" info 2>&1
      } >"$res/info.txt"
      ;;
    tests)
      : >"$res/tests.txt"
      for t in test_webgpu_backend test_webgpu_features test_webgpu_images; do
        {
          echo "== $t"
          timeout 300 "$here/bin/$t" 2>&1
          echo "== $t exit $?"
        } >>"$res/tests.txt"
      done
      # The Vulkan backend's capability bits and API model on a discrete GPU (mappings refused).
      for t in test_capabilities test_random_api; do
        {
          echo "== $t (vulkan)"
          CUBEC_FUZZ_SECONDS=20 timeout 300 "$here/bin/$t" 2>&1
          echo "== $t (vulkan) exit $?"
        } >>"$res/tests.txt"
      done
      for t in test_profile test_trace_file test_subgroup_size test_launch test_graphs \
        test_capabilities test_random_api; do
        echo "== $t (CUBEC_BACKEND=webgpu)" >>"$res/tests.txt"
        # test_launch checks the ladder's pools in a report: with the ladder, as in ctest
        # (tests/webgpu/CMakeLists.txt); webgpu's default layout is exclusive.
        preset=auto
        [ $t = test_launch ] && preset=ladder
        CUBEC_BACKEND=webgpu CUBEC_MEMORY_PRESET=$preset CUBEC_FUZZ_SECONDS=20 timeout 300 \
          "$here/bin/$t" >>"$res/tests.txt" 2>&1
        echo "== $t (webgpu) exit $?" >>"$res/tests.txt"
      done
      grep -E "^== .* exit" "$res/tests.txt"
      ;;
    images)
      # The webgpu image copy ways against each other and the Vulkan backend (wg_image.c).
      {
        "$here/bin/cubec" bench --filter image. 2>&1
        for way in default texture-rows buffer-rows kernel; do
          echo "== webgpu, image copies: $way"
          if [ $way = default ]; then env -u CUBEC_WEBGPU_IMAGE_COPIES "$here/bin/cubec" bench \
            --backend webgpu --filter image. 2>&1; else CUBEC_WEBGPU_IMAGE_COPIES=$way \
            "$here/bin/cubec" bench --backend webgpu --filter image. 2>&1; fi
        done
      } >"$res/images.txt"
      ;;
    rows)
      # The per-launch rows and the transfers on webgpu, three times each, with the default
      # layout (auto: exclusive) and with the ladder (pages shared, so wgpu adds barriers), and
      # the peer's launch and transfer figures beside them.
      {
        for preset in auto ladder; do
          for r in 1 2 3; do
            echo "== webgpu, CUBEC_MEMORY_PRESET=$preset, round $r"
            CUBEC_MEMORY_PRESET=$preset "$here/bin/cubec" bench --backend webgpu \
              --filter launch.enqueue --filter launch.device --filter graph.replay \
              --filter write.h2d --filter read.d2h 2>&1
          done
        done
        echo "== wgpu peer"
        timeout 300 "$here/peers/wgpu_peer" 2>&1 | grep -E "^#|enqueue|dependent|independent|h2d|d2h"
      } >"$res/rows.txt"
      ;;
    variants)
      # launch.device_independent moved 1.57-2.62 us between runs of one binary (2026-12-05):
      # the waits and the submission thread's polling against each other, three runs each.
      {
        for v in "" CUBEC_WAIT_TIMEOUT=0 CUBEC_SUBMITTER_POLL=off CUBEC_POLL_SPIN_US=0 \
          CUBEC_POLL_SPIN_US=5000 CUBEC_TASKS_MAX=128; do
          for r in 1 2 3; do
            echo "== webgpu, ${v:-defaults}, round $r"
            env ${v:+"$v"} "$here/bin/cubec" bench --backend webgpu \
              --filter launch.device_independent 2>&1 | grep -E "^launch"
          done
        done
      } >"$res/variants.txt"
      ;;
    sbs)
      # SBS_ARGS holds NAME=VALUE words, split on blanks.
      local extra=()
      read -ra extra <<<"${SBS_ARGS:-}"
      env "${extra[@]}" OUT="$res/sbs" GL=none PEERS="$here/peers" WEBGPU=1 \
        ROUNDS="${ROUNDS:-1}" TMO="${TMO:-420}" PACK=0 \
        bash "$here/h200_side_by_side.sh" "cubec=$here/cubec" >"$res/sbs.log" 2>&1
      tail -40 "$res/sbs/side_by_side.md" 2>/dev/null
      ;;
    *) echo "unknown step $s (info, tests, images, rows, variants, sbs)" >&2; return 2 ;;
    esac
  done
  tar czf "$OUT/h200-webgpu.tgz" -C "$OUT" h200-webgpu && rm -rf "$res"
}

case $mode in
prep) prep ;;
run) run_steps "${2:-}" ;;
*) sed -n '2,22p' "$0"; exit 2 ;;
esac
