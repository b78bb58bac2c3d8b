#!/usr/bin/env bash
# Runs a program (an example, the CLI test) with the Khronos validation layer on and fails if the
# layer said anything: cubec logs each message as "[cubec <time> error validation] ...". The
# cmocka tests count messages through the device's callback instead (tests/common/test_util.c).
set -u
out=$(mktemp)
CUBEC_VALIDATION=1 "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if grep -q "error validation\]" "$out"; then
  echo "FAIL: the validation layer reported the messages above"
  rc=1
fi
rm -f "$out"
exit "$rc"
