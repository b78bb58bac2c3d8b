#!/usr/bin/env bash
# Runs examples/tune_matmul twice on a new cache directory: the first run must measure the
# candidates and the second must reuse the stored choice (the same one) without measuring. Each run
# checks the winner's result against the CPU itself (its exit status).
#
# usage: tune_matmul_twice.sh PATH/TO/example_tune_matmul
set -u
EXE=${1:?usage: tune_matmul_twice.sh PATH/TO/example_tune_matmul}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export CUBEC_CACHE_DIR=$TMP/cache

"$EXE" >"$TMP/first.out" 2>&1 || { cat "$TMP/first.out"; echo "FAIL: the first run failed"; exit 1; }
cat "$TMP/first.out"
"$EXE" >"$TMP/second.out" 2>&1 || { cat "$TMP/second.out"; echo "FAIL: the second run failed"; exit 1; }
cat "$TMP/second.out"

first=$(sed -n 's/^choice: \([^ ]*\) (measured now.*/\1/p' "$TMP/first.out")
second=$(sed -n 's/^choice: \([^ ]*\) (stored by an earlier run.*/\1/p' "$TMP/second.out")
if [ -z "$first" ]; then echo "FAIL: the first run did not measure"; exit 1; fi
if [ "$first" != "$second" ]; then
  echo "FAIL: the second run did not reuse the first run's choice ($first): '$second'"
  exit 1
fi
if ! grep -q "(1 of [0-9]* kernels compiled)" "$TMP/second.out"; then
  echo "FAIL: the second run compiled more than the winner's kernel"
  exit 1
fi
echo "OK: the second run reused $first"
