#!/bin/sh
# check_layers.sh passes on the project and fails on planted violations, naming each one: a write
# of a device field from src/api/ (four forms) and a component header included by device.h. The
# fixture is a scratch copy of the two places the check reads, removed at exit.
# usage: test_check_layers.sh PROJECT_ROOT
root=$1
check="$root/tools/check_layers.sh"
fail() { echo "FAIL: $*"; exit 1; }

sh "$check" "$root" || fail "check_layers.sh refuses the project itself"

tmp=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/api" "$tmp/src/server"
cp "$root"/src/api/*.c "$root"/src/api/*.h "$tmp/src/api/"
cp "$root/src/server/device.h" "$tmp/src/server/"
sh "$check" "$tmp" >/dev/null || fail "check_layers.sh refuses an untouched copy"

# Reads, comparisons and writes of locals must not be taken for writes of the device.
cat > "$tmp/src/api/api_reads.c" <<'C'
static int reads(cubec_device *device, int x)
{
    x = device->runs->dry_launches;
    if (device->lost == x) return device->config.tasks_max;
    return x;
}
C
sh "$check" "$tmp" >/dev/null || fail "check_layers.sh takes reads for writes"

cat > "$tmp/src/api/api_planted.c" <<'C'
static void planted(cubec_device *device, cubec_device *d)
{
    device->runs->dry_launches++;
    d->faults.fail_at[0] = 1;
    device->lost += 1;
    --d->hung;
}
C
out=$(sh "$check" "$tmp") && fail "check_layers.sh passes writes of device fields from src/api/"
for line in 3 4 5 6; do
    echo "$out" | grep -q "api_planted.c:$line:" || fail "the write on line $line is not named: $out"
done
rm "$tmp/src/api/api_planted.c"

sed -i 's|#include "gpu/gpu.h"|#include "gpu/gpu.h"\n#include "server/graph.h"|' "$tmp/src/server/device.h"
out=$(sh "$check" "$tmp") && fail "check_layers.sh passes a component header included by device.h"
echo "$out" | grep -q 'device.h:[0-9]*:#include "server/graph.h"' ||
    fail "the include is not named: $out"
echo "check_layers: all cases behave"
