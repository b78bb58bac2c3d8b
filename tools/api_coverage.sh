#!/bin/sh
# How many of the public functions of cubec.h appear in the examples (examples/*.c, *.h), and
# which do not: the tutorial path (docs/tutorial.md) should show a user most of the API.
# A function counts when an example's source calls it by name.
# Usage: tools/api_coverage.sh [HEADER [EXAMPLES_DIR]]   (from the repository root)
# With --min N after them, fails when fewer than N functions appear (the test api_coverage).
set -u
hdr=${1:-include/cubec/cubec.h}
dir=${2:-examples}
min=
[ "${3:-}" = --min ] && min=${4:?--min needs a count}
total=0
used=0
missing=
for f in $(grep -oE '\bcubec_[a-z_0-9]+\(' "$hdr" | tr -d '(' | sort -u); do
    total=$((total + 1))
    if cat "$dir"/*.c "$dir"/*.h 2>/dev/null | grep -qE "\\b$f\\("; then
        used=$((used + 1))
    else
        missing="$missing $f"
    fi
done
echo "$used of $total public functions appear in an example; $((total - used)) do not:"
for f in $missing; do echo "  $f"; done
if [ -n "$min" ] && [ "$used" -lt "$min" ]; then
    echo "FAIL: fewer than $min functions appear in an example"
    exit 1
fi
