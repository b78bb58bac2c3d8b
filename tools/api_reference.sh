#!/bin/sh
# Builds the API reference (docs/Doxyfile: Doxygen over include/cubec/cubec.h, HTML in
# OUT_DIR/html) and fails on any Doxygen warning except the undocumented items listed in
# docs/dev/api-undocumented.txt: a public item added without a comment fails, and so does a
# listed item that is now documented (remove its line: the list only shrinks).
# Usage: tools/api_reference.sh OUT_DIR [--update]   (from the repository root; --update rewrites
# the list from this run, for a deliberate change such as a rename)
set -u
out=${1:?usage: tools/api_reference.sh OUT_DIR [--update]}
list=docs/dev/api-undocumented.txt
command -v doxygen > /dev/null || { echo "FAIL: doxygen is not installed (apt-get install doxygen, or make docs as root)"; exit 1; }
rm -rf "$out"
mkdir -p "$out"
CUBEC_DOXYGEN_OUT=$(cd "$out" && pwd) doxygen docs/Doxyfile || { echo "FAIL: doxygen exited $?"; exit 1; }
# One line per warning, without the path and line number, which move with every edit.
sed -nE 's/^[^:]*cubec\.h:[0-9]+: (warning|error): //p' "$out/warnings.log" | sort -u > "$out/undocumented.txt"
other=$(grep -vE 'cubec\.h:[0-9]+: (warning|error): ' "$out/warnings.log" | grep -v '^$')
if [ "${2:-}" = --update ]; then
    { sed -n '/^#/p' "$list"; grep 'is not documented' "$out/undocumented.txt"; } > "$out/list.new"
    mv "$out/list.new" "$list"
    echo "rewrote $list: $(grep -vc '^#' "$list") items"
fi
sed '/^#/d' "$list" | sort -u > "$out/allowed.txt"
new=$(comm -23 "$out/undocumented.txt" "$out/allowed.txt")
gone=$(comm -13 "$out/undocumented.txt" "$out/allowed.txt")
fail=0
if [ -n "$other" ]; then
    echo "FAIL: Doxygen warnings outside cubec.h:"; echo "$other"; fail=1
fi
if [ -n "$new" ]; then
    echo "FAIL: undocumented or badly documented in include/cubec/cubec.h (a comment before the item, or after it on its line):"
    echo "$new"
    fail=1
fi
if [ -n "$gone" ]; then
    echo "FAIL: documented now; remove from $list:"
    echo "$gone"
    fail=1
fi
[ $fail = 0 ] && echo "API reference: $out/html/index.html ($(wc -l < "$out/allowed.txt") items still undocumented, listed in $list)"
exit $fail
