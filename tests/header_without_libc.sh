#!/bin/sh
# cubec.h preprocesses without the C library's headers, as a binding's declaration extractor runs
# it (cc -E -nostdinc with stand-ins for <stddef.h> and <stdint.h> only): CUBEC_CHECK, which needs
# <stdio.h> and <stdlib.h>, is then left out instead of failing the run; with the C library's
# headers it is there. Usage: header_without_libc.sh CC INCLUDE_DIR
set -u
cc=$1 inc=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf 'typedef __SIZE_TYPE__ size_t;\n#define NULL ((void *)0)\n' > "$dir/stddef.h"
printf 'typedef __UINT8_TYPE__ uint8_t;\ntypedef __UINT16_TYPE__ uint16_t;\ntypedef __UINT32_TYPE__ uint32_t;\ntypedef __UINT64_TYPE__ uint64_t;\ntypedef __INT32_TYPE__ int32_t;\ntypedef __INT64_TYPE__ int64_t;\n' > "$dir/stdint.h"
printf '#include <cubec/cubec.h>\n#ifdef CUBEC_CHECK\nhas_check\n#endif\n' > "$dir/probe.c"
if ! "$cc" -E -P -std=c11 -nostdinc -I"$dir" -I"$inc" "$dir/probe.c" > "$dir/bare.i"; then
    echo "FAIL: cubec.h does not preprocess without the C library's headers"
    exit 1
fi
if grep -q has_check "$dir/bare.i"; then
    echo "FAIL: CUBEC_CHECK is defined although <stdio.h> cannot be found"
    exit 1
fi
"$cc" -E -P -std=c11 -I"$inc" "$dir/probe.c" > "$dir/full.i" || exit 1
if ! grep -q has_check "$dir/full.i"; then
    echo "FAIL: CUBEC_CHECK is missing with the C library's headers"
    exit 1
fi
echo "cubec.h: $(grep -c '' "$dir/bare.i") lines without the C library's headers (no CUBEC_CHECK), CUBEC_CHECK with them"
