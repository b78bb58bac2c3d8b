#!/bin/sh
# The layer rules that `make lint` keeps (docs/ARCHITECTURE.md, "Layers"):
#  1. src/api/ writes no field of the device: a public call acts through server functions, and
#     what a call is for travels as arguments, never as device state set around a server call.
#     A write is `device->...` or `d->...` on the left of =, op=, ++ or --.
#  2. src/server/device.h includes no server component header: the device holds its components
#     by pointer, so editing one component's header rebuilds only that component's users.
# usage: check_layers.sh [ROOT]   (ROOT: the project's root, default .). Exit 1 on a violation,
# naming each file and line.
root=${1:-.}
status=0

field='(device|d)->[A-Za-z0-9_]+(\[[^]]*\])?((->|\.)[A-Za-z0-9_]+(\[[^]]*\])?)*'
writes=$(grep -nHE "(^|[^A-Za-z0-9_>.])${field}[[:space:]]*([-+*/%&|^]?=[^=]|<<=|>>=|\+\+|--)|(\+\+|--)[[:space:]]*${field}" \
    "$root"/src/api/*.c "$root"/src/api/*.h 2>/dev/null)
if [ -n "$writes" ]; then
    echo "check_layers: src/api/ writes device fields (call a server function instead):"
    echo "$writes" | sed 's/^/  /'
    status=1
fi

includes=$(grep -nHE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"server/' "$root"/src/server/device.h)
if [ -n "$includes" ]; then
    echo "check_layers: src/server/device.h includes a server component header (hold the component"
    echo "by pointer and forward-declare it):"
    echo "$includes" | sed 's/^/  /'
    status=1
fi
exit $status
