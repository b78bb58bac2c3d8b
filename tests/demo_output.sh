#!/bin/sh
# `make demo`'s output stays short and leads with results (examples/run_demo.sh): run on the
# build tree (its targets already built), it must pass, print no make directory lines and no
# per-file build lines, show the first verified result within the first 5 lines, end with a
# summary naming the device and each program as ok, and stay under 45 lines in all.
# Usage: demo_output.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
cd "$src" || exit 1
sh examples/run_demo.sh "$build" > "$out" 2>&1
rc=$?
cat "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ $rc = 0 ] || fail "run_demo.sh exited $rc"
lines=$(wc -l < "$out")
[ "$lines" -le 45 ] || fail "$lines lines of output (at most 45)"
! grep -qE 'Entering directory|Leaving directory' "$out" || fail "make's directory lines are shown"
! grep -qE '^\[ *[0-9]+%\]|Building C|Linking' "$out" || fail "per-file build lines are shown"
first=$(grep -n -m1 '^vector_add: .*match the CPU' "$out" | cut -d: -f1)
[ -n "$first" ] && [ "$first" -le 5 ] || fail "the first verified result is at line '${first:-none}' (at most 5)"
grep -q '^device:  [^(]' "$out" || fail "the summary names no device"
for name in vector_add reduction mlp; do
    grep -qE "^$name +ok " "$out" || fail "the summary has no ok line for $name"
done
echo "demo output: $lines lines, first result at line $first"
