#!/usr/bin/env bash
# Configures the project afresh (without tests: a second of cmake) and checks what a new user
# reads: Vulkan is reported found, and nothing says "missing components" (CMake's FindVulkan used
# to list glslangValidator, a tool cubec never uses, as missing).
#
# usage: configure_messages.sh SOURCE_DIR C_COMPILER
set -u
SRC=${1:?usage: configure_messages.sh SOURCE_DIR C_COMPILER}
CC_PATH=${2:?usage: configure_messages.sh SOURCE_DIR C_COMPILER}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if ! cmake -S "$SRC" -B "$TMP/build" -DCUBEC_TESTS=OFF -DCMAKE_C_COMPILER="$CC_PATH" \
    >"$TMP/out" 2>&1; then
    cat "$TMP/out"
    echo "FAIL: cmake configure failed"
    exit 1
fi
rc=0
if grep -n "missing components" "$TMP/out"; then
    echo "FAIL: the configure output reports missing components (above)"
    rc=1
fi
if ! grep -q "^-- Found Vulkan: .*libvulkan" "$TMP/out"; then
    echo "FAIL: the configure output does not say where Vulkan was found:"
    cat "$TMP/out"
    rc=1
fi
[ $rc = 0 ] && echo "configure_messages: the output is clean"
exit $rc
