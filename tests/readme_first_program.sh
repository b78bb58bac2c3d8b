#!/bin/sh
# The README's first program as a user copies it: the first ```c block under "## A first program"
# is compiled with warnings as errors against the build (the shared library, found through an
# rpath) and run; it checks its own sums against the CPU and exits non-zero on a mismatch.
# Usage: readme_first_program.sh README.md CC INCLUDE_DIR LIB_DIR
set -u
readme=$1 cc=$2 inc=$3 lib=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
awk '/^## A first program/ { section = 1 }
     section && !inside && /^```c$/ { inside = 1; next }
     inside && /^```$/ { exit }
     inside { print }' "$readme" > "$dir/first.c"
if [ ! -s "$dir/first.c" ]; then
    echo "FAIL: no \`\`\`c block under '## A first program' in $readme"
    exit 1
fi
"$cc" -std=c11 -Wall -Wextra -Werror "$dir/first.c" -I"$inc" -L"$lib" -lcubec \
    -Wl,-rpath,"$lib" -o "$dir/first" || { echo "FAIL: the README's first program does not compile"; exit 1; }
"$dir/first"
