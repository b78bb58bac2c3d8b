#!/usr/bin/env bash
# cubec against its peers on the device machine (NVIDIA H200), side by side, one process at a time.
#
#   bench/h200_side_by_side.sh [NAME=]BUILD_DIR...
#
# Each BUILD_DIR holds a cubec binary (BUILD_DIR/bin/cubec or BUILD_DIR/cubec); NAME defaults to the
# folder's base name, e.g. `before=build-h200/before after=build-h200/after`. For each round the
# script runs, in this order and never two at once: `cubec bench --json` of every build, the CUDA C
# peer, the wgpu-native peer (../shared/peers/, built with `make OUT=<folder>`), with SLEEP seconds
# between processes: a process started within ~3 s after the wgpu peer exited was seen running the
# tiny round trip 3x slower (reviews/h200-side-by-side.md), raw Vulkan included.
#
# Outputs: $OUT/<name>-<round>.json (cubec), $OUT/cuda_c-<round>.txt, $OUT/wgpu-<round>.txt,
# $OUT/torch-<round>.txt (PEERS/cuda_peer.py, where PyTorch is installed), $OUT/torch_matmul-<round>.txt
# (torch_matmul_peer.py beside this script: kernel.gemm_f16's peer), $OUT/nccl_torch-<round>.txt
# (nccl_torch_peer.py beside this script: NCCL all-reduce and torch peer copies, the peer of the
# multi.* rows, over every GPU torch sees), the merged table of all
# of them $OUT/side_by_side.md and .json (bench/side_by_side.py, beside this script), and
# $OUT/run.log (versions, exit codes, stderr, timings, SM clock before each process). The device
# machine returns at most 8 files from $OUT: when more would be there (PACK=auto, the default), all
# of them go into $OUT/side_by_side.tgz instead; PACK=1 always packs, PACK=0 never does.
#
# Environment (defaults in brackets):
#   GL      folder with the loader's .deb files and vk-setup.sh [.gl]
#   PEERS   folder with cuda_c_peer, wgpu_peer and libwgpu_native.so [build-peers/bin]; a peer
#           that is missing is skipped (noted in run.log)
#   PY      the Python that has PyTorch [python3, or /opt/torch/.venv/bin/python when python3
#           cannot import torch and that one exists]
#   ROUNDS  rounds [2]      SLEEP  seconds between processes [5]
#   TMO     seconds each process may run before it is killed [180]
#   BENCH_ARGS  extra arguments of `cubec bench` (e.g. --quick) []
#   WEBGPU=1  also `cubec bench --json --backend webgpu` of every build, right after its Vulkan
#           run, into $OUT/<name>-webgpu-<round>.json (its own column "<name>-webgpu" in the
#           table, with "<name>-webgpu / wgpu": how many times slower than wgpu-native direct);
#           the library is CUBEC_WEBGPU_LIBRARY [PEERS/libwgpu_native.so: the wgpu peer's, the
#           same wheel's]; where it is missing the webgpu runs are skipped (noted in run.log)
#   WGPU_PEER_QUICK=1  passed on to the wgpu peer (smaller sizes, for lavapipe)
#   GL=none  no loader to set up (a machine whose Vulkan loader is installed, e.g. lavapipe)
#   PERF=1  afterwards, if `perf` exists there, `perf stat` and `perf record` of
#           `cubec bench --filter launch.enqueue` of the first build (perf-stat.txt, perf-report.txt);
#           skipped (noted in run.log) where perf is absent, as on the images seen so far
#
# Example (device call; carry .gl, build-peers and the build folders):
#   OUT=$OUT bench/h200_side_by_side.sh before=build-h200/before after=build-h200/after
# The device call sends the session's own checkout, not a helper's worktree, so everything can
# also travel as one git-ignored folder (/build*/) with a copy of this script in it:
#   S=build-h200-sbs: $S/gl (the files of .gl), $S/peers, $S/before/bin/cubec, $S/after/bin/cubec
#   carry ["build-h200-sbs"]; command:
#   GL=$S/gl PEERS=$S/peers $S/h200_side_by_side.sh before=$S/before after=$S/after
set -u

GL=${GL:-.gl}
PEERS=${PEERS:-build-peers/bin}
ROUNDS=${ROUNDS:-2}
SLEEP=${SLEEP:-5}
TMO=${TMO:-180}
BENCH_ARGS=${BENCH_ARGS:-}
PERF=${PERF:-0}
WEBGPU=${WEBGPU:-0}
PACK=${PACK:-auto}
PY=${PY:-python3}
if ! "$PY" -c "import torch" 2>/dev/null && [ -x /opt/torch/.venv/bin/python ]; then
  PY=/opt/torch/.venv/bin/python
fi
OUT=${OUT:?set OUT to the folder the results go to}

[ $# -ge 1 ] || { sed -n '2,30p' "$0"; exit 2; }
mkdir -p "$OUT"
log="$OUT/run.log"
: >"$log"
note() { echo "[$(date +%T.%N | cut -c1-12)] $*" | tee -a "$log"; }

names=() bins=()
for a in "$@"; do
  case $a in *=*) n=${a%%=*} d=${a#*=} ;; *) d=$a n=$(basename "$a") ;; esac
  if [ -x "$d/bin/cubec" ]; then b=$d/bin/cubec; elif [ -x "$d/cubec" ]; then b=$d/cubec; else
    note "no cubec binary in $d (looked for $d/bin/cubec and $d/cubec)"; exit 2
  fi
  names+=("$n") bins+=("$(cd "$(dirname "$b")" && pwd)/cubec")
done

if [ "$GL" != none ]; then
  [ -f "$GL/vk-setup.sh" ] || { note "no $GL/vk-setup.sh (run ../shared/device/fetch-loader.sh here first)"; exit 2; }
  # shellcheck disable=SC1091
  . "$GL/vk-setup.sh"
fi
if [ "$WEBGPU" = 1 ]; then
  CUBEC_WEBGPU_LIBRARY=${CUBEC_WEBGPU_LIBRARY:-$PEERS/libwgpu_native.so}
  if [ -f "$CUBEC_WEBGPU_LIBRARY" ]; then
    CUBEC_WEBGPU_LIBRARY=$(cd "$(dirname "$CUBEC_WEBGPU_LIBRARY")" && pwd)/$(basename "$CUBEC_WEBGPU_LIBRARY")
    export CUBEC_WEBGPU_LIBRARY
  else
    note "WEBGPU=1 but no $CUBEC_WEBGPU_LIBRARY: the webgpu runs are skipped"
    WEBGPU=0
  fi
fi

clock() { nvidia-smi --query-gpu=clocks.sm,clocks.mem,pstate,temperature.gpu,utilization.gpu \
  --format=csv,noheader 2>/dev/null | head -1; }

# run NAME-ROUND FILE CMD...: stdout to FILE, stderr to run.log, after the pause before it.
first=1
run() {
  local tag=$1 file=$2; shift 2
  [ $first = 1 ] || sleep "$SLEEP"
  first=0
  note "start $tag (sm,mem clock,pstate,temp,util: $(clock)): $*"
  local t0 t1 rc
  t0=$(date +%s.%N)
  echo "----- $tag stderr" >>"$log"
  timeout "$TMO" "$@" >"$file" 2>>"$log"
  rc=$?
  t1=$(date +%s.%N)
  note "end $tag rc=$rc $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f s", b-a}')"
}

note "host $(hostname) $(uname -r); $(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader 2>/dev/null)"
for i in "${!names[@]}"; do note "${names[$i]}: ${bins[$i]}: $("${bins[$i]}" version 2>&1)"; done
"${bins[0]}" info >>"$log" 2>&1 || note "cubec info failed"
[ "$WEBGPU" = 1 ] && { CUBEC_BACKEND=webgpu "${bins[0]}" info >>"$log" 2>&1 ||
  note "cubec info on webgpu failed"; }
for p in cuda_c_peer wgpu_peer; do [ -x "$PEERS/$p" ] || note "peer $PEERS/$p missing: skipped"; done
"$PY" -c "import torch" 2>/dev/null || note "$PY cannot import torch: the PyTorch peers are skipped"

for r in $(seq 1 "$ROUNDS"); do
  for i in "${!names[@]}"; do
    # shellcheck disable=SC2086
    run "${names[$i]}-$r" "$OUT/${names[$i]}-$r.json" "${bins[$i]}" bench --json $BENCH_ARGS
    # shellcheck disable=SC2086
    [ "$WEBGPU" = 1 ] && run "${names[$i]}-webgpu-$r" "$OUT/${names[$i]}-webgpu-$r.json" \
      "${bins[$i]}" bench --json --backend webgpu $BENCH_ARGS
  done
  [ -x "$PEERS/cuda_c_peer" ] && run "cuda_c-$r" "$OUT/cuda_c-$r.txt" "$PEERS/cuda_c_peer"
  [ -x "$PEERS/wgpu_peer" ] && run "wgpu-$r" "$OUT/wgpu-$r.txt" "$PEERS/wgpu_peer"
  [ -f "$PEERS/cuda_peer.py" ] && "$PY" -c "import torch" 2>/dev/null &&
    run "torch-$r" "$OUT/torch-$r.txt" "$PY" "$PEERS/cuda_peer.py"
  # kernel.gemm_f16's peer: torch.matmul, float16 at 4096^3 (beside this script).
  [ -f "$(dirname "$0")/torch_matmul_peer.py" ] && "$PY" -c "import torch" 2>/dev/null &&
    run "torch_matmul-$r" "$OUT/torch_matmul-$r.txt" "$PY" "$(dirname "$0")/torch_matmul_peer.py"
  # The multi.* rows' peer: NCCL all-reduce and peer copies through PyTorch (beside this script).
  [ -f "$(dirname "$0")/nccl_torch_peer.py" ] && "$PY" -c "import torch" 2>/dev/null &&
    run "nccl_torch-$r" "$OUT/nccl_torch-$r.txt" "$PY" "$(dirname "$0")/nccl_torch_peer.py"
done

if [ "$PERF" = 1 ]; then
  if command -v perf >/dev/null 2>&1; then
    sleep "$SLEEP"
    note "perf stat of ${names[0]} launch.enqueue"
    perf stat -d -o "$OUT/perf-stat.txt" -- "${bins[0]}" bench --filter launch.enqueue >>"$log" 2>&1
    sleep "$SLEEP"
    note "perf record of ${names[0]} launch.enqueue"
    perf record -g -F 4999 -o /tmp/perf.data -- "${bins[0]}" bench --filter launch.enqueue >>"$log" 2>&1
    perf report -i /tmp/perf.data --stdio --no-children --percent-limit 0.5 >"$OUT/perf-report.txt" 2>>"$log"
  else
    note "perf is not installed here: no perf stat / perf record"
  fi
fi
note "done"

# One table (and JSON) of every build and peer: bench/side_by_side.py beside this script.
merge=$(dirname "$0")/side_by_side.py
if [ -f "$merge" ] && command -v python3 >/dev/null 2>&1; then
  python3 "$merge" "$OUT" --json "$OUT/side_by_side.json" --markdown "$OUT/side_by_side.md" \
    >/dev/null 2>>"$log" || note "side_by_side.py failed"
else
  note "no $merge or python3: no merged table"
fi

n=$(find "$OUT" -maxdepth 1 -type f | wc -l)
if [ "$PACK" = 1 ] || { [ "$PACK" = auto ] && [ "$n" -gt 8 ]; }; then
  (cd "$OUT" && mapfile -t files < <(find . -maxdepth 1 -type f -printf '%f\n' | sort) &&
     tar czf side_by_side.tgz "${files[@]}" && rm -f "${files[@]}")
  echo "packed $n files into $OUT/side_by_side.tgz"
fi
