#!/bin/sh
# Runs RUNS inputs of a libFuzzer harness in all, over JOBS processes started at once (one per
# core), for the issue's count of fuzzed call sequences (docs/reliability.md, "Fuzzing"):
#   fuzz/run_parallel.sh BUILD_FUZZ JOBS RUNS [HARNESS]      (HARNESS: api, the default)
# Worker i runs RUNS/JOBS inputs (rounded up) with seed i, its own log (BUILD_FUZZ/runs/wI.log)
# and its own artifact prefix (BUILD_FUZZ/artifacts/runs-START-wI-, START the start time), on
# the tracked corpus (read only) and BUILD_FUZZ/corpus/HARNESS, which the workers share
# (libFuzzer reloads it as it grows).
# Prints each worker's executions, exec/s and peak RSS, then the totals; exits 1 when a worker
# found a crash, a leak, a sanitizer report or a broken invariant, after printing its log's end.
set -u
build=${1:?usage: run_parallel.sh BUILD_FUZZ JOBS RUNS [HARNESS]}
jobs=${2:?jobs}
runs=${3:?runs}
name=${4:-api}
corpus=$name
opts=${ASAN_OPTIONS:-}
if [ "$name" = api_lavapipe ]; then corpus=api; opts=detect_leaks=0; fi
per=$(((runs + jobs - 1) / jobs))
mkdir -p "$build/runs" "$build/artifacts" "$build/corpus/$name"
echo "== fuzz_$name: $jobs workers x $per inputs"
start=$(date +%s)
pids=
i=1
while [ "$i" -le "$jobs" ]; do
    ASAN_OPTIONS=$opts CUBEC_LOG_LEVEL=error CUBEC_CACHE_DIR=none "$build/bin/fuzz_$name" -runs="$per" -seed="$i" \
        -timeout=60 -print_final_stats=1 -artifact_prefix="$build/artifacts/runs-$start-w$i-" \
        "$build/corpus/$name" "fuzz/corpus/$corpus" > "$build/runs/w$i.log" 2>&1 &
    pids="$pids $!"
    i=$((i + 1))
done
failed=0
for pid in $pids; do
    wait "$pid" || failed=1
done
elapsed=$(($(date +%s) - start))
total=0
i=1
while [ "$i" -le "$jobs" ]; do
    log=$build/runs/w$i.log
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    if [ -z "$n" ] || ! grep -q '^Done' "$log"; then
        echo "-- worker $i failed: $log"
        tail -n 40 "$log"
        failed=1
        n=0
    fi
    echo "worker $i: $n executions, $(sed -n 's/^stat::average_exec_per_sec: *//p' "$log") exec/s," \
        "peak RSS $(sed -n 's/^stat::peak_rss_mb: *//p' "$log") MB"
    total=$((total + n))
    i=$((i + 1))
done
echo "total: $total executions in ${elapsed} s ($((total / (elapsed > 0 ? elapsed : 1))) exec/s)"
ls "$build/artifacts" | grep "^runs-$start-" && failed=1
exit $failed
