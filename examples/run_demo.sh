#!/bin/sh
# `make demo` after the Debian packages: builds only what the demo runs, quietly, then runs each
# demo program and ends with a summary (device, what ran, what each result was checked against,
# how long). The build's output goes to BUILD/demo-build.log and is shown only when the build fails
# (then without make's directory lines), so the first result is a few lines from the top.
#
# Usage: run_demo.sh BUILD_DIR [CMAKE_ARGS...]
# Each demo program prints its verified result on a line starting with "<name>:" and exits
# non-zero on a mismatch or an error; the summary quotes that line.
#
# Hook for the Python package (branch wip-pycore): CUBEC_DEMO_TARGETS adds build targets (e.g. the
# extension's), and CUBEC_DEMO_EXTRA adds demos, one per line as "name|command|checked against",
# e.g. "saxpy_py|python3 python/examples/saxpy.py|numpy on the same arrays". The Makefile's demo
# target passes both.
set -u
build=${1:?usage: run_demo.sh BUILD_DIR [CMAKE_ARGS...]}
shift
log=$build/demo-build.log
start=$(date +%s.%N)

elapsed() { echo "$(date +%s.%N) $1" | awk '{ printf "%.1f", $1 - $2 }'; }

# name|command|what its result is checked against
demos="vector_add|$build/bin/example_vector_add|the same sums on the CPU, exactly
reduction|$build/bin/example_reduction|a double-precision sum on the CPU, relative error <= 1e-5
mlp|$build/bin/example_mlp|the same forward pass on the CPU, error <= 1e-4 + 1e-4 x |value|"
if [ -n "${CUBEC_DEMO_EXTRA:-}" ]; then
    demos="$demos
$CUBEC_DEMO_EXTRA"
fi
targets="example_vector_add example_reduction example_mlp ${CUBEC_DEMO_TARGETS:-}"

mkdir -p "$build"
printf 'building the library and the demo programs (log: %s) ... ' "$log"
: > "$log"
if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >> "$log" 2>&1 || {
        echo "FAILED"; cat "$log"; exit 1
    }
fi
# -j: every core; --no-print-directory: make's "Entering/Leaving directory" lines.
if ! cmake --build "$build" -j "$(nproc)" --target $targets -- --no-print-directory >> "$log" 2>&1; then
    echo "FAILED"
    grep -vE '^\[ *[0-9]+%\] |^(g?make)(\[[0-9]+\])?: (Entering|Leaving)' "$log"
    exit 1
fi
build_s=$(elapsed "$start")
echo "done in $build_s s"

summary=$(mktemp)
out=$(mktemp)
trap 'rm -f "$summary" "$out"' EXIT
failed=0
device=
examples_start=$(date +%s.%N)
echo "$demos" | while IFS='|' read -r name cmd reference; do
    [ -n "$name" ] || continue
    echo
    echo "== $name"
    t0=$(date +%s.%N)
    # Not `sh -c`: the command is a program and its arguments, split on spaces.
    $cmd > "$out" 2>&1
    rc=$?
    cat "$out"
    secs=$(elapsed "$t0")
    result=$(grep -m1 "^$name:" "$out" | sed "s/^$name: *//")
    [ -n "$result" ] || result="(no result line)"
    if [ $rc = 0 ]; then verdict=ok; else verdict="FAILED (exit $rc)"; fi
    printf '%s|%s|%s|%s|%s\n' "$name" "$verdict" "$secs" "$result" "$reference" >> "$summary"
    grep -m1 '^device: ' "$out" >> "$summary.device" 2>/dev/null
done
examples_s=$(elapsed "$examples_start")
device=$(head -n1 "$summary.device" 2>/dev/null | sed 's/^device: //')
rm -f "$summary.device"

echo
echo "== summary"
echo "device:  ${device:-(not reported)}"
while IFS='|' read -r name verdict secs result reference; do
    printf '%-11s %-4s %6s s  %s\n' "$name" "$verdict" "$secs" "$result"
    printf '%-11s %-4s %6s    checked against %s\n' "" "" "" "$reference"
    [ "$verdict" = ok ] || failed=1
done < "$summary"
echo "build $build_s s, programs $examples_s s, total $(elapsed "$start") s"
exit $failed
