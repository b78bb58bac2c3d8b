#!/bin/sh
# How many of the public functions of cubec.h appear in the examples (examples/*.c, *.h), and
# which do not: the tutorial path (docs/tutorial.md) should show a user most of the API.
# A function counts when an example's source calls it by name.
# Usage: tools/api_coverage.sh [HEADER [EXAMPLES_DIR]]   (from the repository root)
# With --min N after them, fails when fewer than N functions appear (raise N as examples grow; a
# function added to the header without an example lowers the share but not the count), or when
# an example has no step in docs/tutorial.md (the test api_coverage).
set -u
hdr=${1:-include/cubec/cubec.h}
dir=${2:-examples}
min=
[ "${3:-}" = --min ] && min=${4:?--min needs a count}
total=0
used=0
missing=
# Aliases kept for a release (a CUBEC_DEPRECATED line before the declaration) do not count: the
# examples use the names that replace them.
deprecated=$(awk '/CUBEC_DEPRECATED\(/ { want = 1; next }
                  want && match($0, /cubec_[a-z_0-9]+\(/) { print substr($0, RSTART, RLENGTH - 1); want = 0 }' "$hdr")
for f in $(grep -oE '\bcubec_[a-z_0-9]+\(' "$hdr" | tr -d '(' | sort -u); do
    case " $(echo $deprecated) " in *" $f "*) continue ;; esac
    total=$((total + 1))
    if cat "$dir"/*.c "$dir"/*.h 2>/dev/null | grep -qE "\\b$f\\("; then
        used=$((used + 1))
    else
        missing="$missing $f"
    fi
done
echo "$used of $total public functions appear in an example; $((total - used)) do not:"
for f in $missing; do echo "  $f"; done
# Every example has its step in the tutorial.
tutorial=$(dirname "$dir")/docs/tutorial.md
unlisted=
if [ -f "$tutorial" ]; then
    for f in "$dir"/*.c; do
        grep -q "\`$(basename "$f")\`" "$tutorial" || unlisted="$unlisted $(basename "$f")"
    done
    [ -z "$unlisted" ] || echo "not in $tutorial:$unlisted"
fi
if [ -n "$unlisted" ] && [ -n "$min" ]; then
    echo "FAIL: every example needs its step in $tutorial"
    exit 1
fi
if [ -n "$min" ] && [ "$used" -lt "$min" ]; then
    echo "FAIL: fewer than $min functions appear in an example"
    exit 1
fi
