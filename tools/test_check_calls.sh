#!/bin/sh
# check_calls.py passes on the project's server and fails on a planted circle of three files,
# naming the calls that tie it; a pair of files that call each other is allowed, a call through a
# function pointer is no edge, and a name in a comment or a string is no call. The fixture is a
# scratch folder, removed at exit.
# usage: test_check_calls.sh PROJECT_ROOT
root=$1
check="python3 $root/tools/check_calls.py"
fail() { echo "FAIL: $*"; exit 1; }

$check "$root/src/server" >/dev/null || fail "check_calls.py refuses src/server: $($check "$root/src/server")"
$check "$root/src/gpu/webgpu" >/dev/null ||
    fail "check_calls.py refuses src/gpu/webgpu: $($check "$root/src/gpu/webgpu")"

tmp=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/a.c" <<'C'
int a_top(int x)
{
    return b_mid(x) + 1;
}
C
cat > "$tmp/b.c" <<'C'
static int (*hook)(int);

int b_mid(int x)
{
    return c_low(x) + hook(x);
}

int b_back(int x)
{
    return x;
}
C
cat > "$tmp/c.c" <<'C'
int c_low(int x)
{
    /* a_top(x) in a comment is no call */
    const char *s = "a_top(x) in a string is no call";
    (void)s;
    return x;
}
C
$check "$tmp" >/dev/null || fail "a chain a -> b -> c is taken for a circle: $($check "$tmp")"

# b and c call each other: a pair, allowed.
sed -i 's/return x;/return b_back(x);/' "$tmp/c.c"
$check "$tmp" >/dev/null || fail "a pair of files calling each other is refused: $($check "$tmp")"

# c calls a: a circle of three files.
cat >> "$tmp/c.c" <<'C'

int c_up(
    int x)
{
    return a_top(x);
}
C
out=$($check "$tmp") && fail "a circle of three files passes: $out"
echo "$out" | grep -q "3 files" || fail "the circle's size is not named: $out"
echo "$out" | grep -q "c.c -> a.c: a_top" || fail "the call that closes the circle is not named: $out"
$check "$tmp" --max 3 >/dev/null || fail "--max 3 refuses a circle of three files"
echo "check_calls: all cases behave"
