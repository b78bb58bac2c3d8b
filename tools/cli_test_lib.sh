# shellcheck shell=bash
# The setup and checks shared by the `cubec` tool's shell tests (test_cli.sh, test_cli_env.sh),
# sourced by them with the tool's path as $1: CUBEC (made absolute, since a test may cd), a
# scratch directory TMP removed at exit, the failure count and the helpers below; cli_test_end
# reports and exits.

CUBEC=${1:?usage: $(basename "$0") PATH/TO/cubec}
CUBEC=$(cd "$(dirname "$CUBEC")" && pwd)/$(basename "$CUBEC")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILURES=0

fail() {
    echo "FAIL: $*" >&2
    FAILURES=$((FAILURES + 1))
}

# run_expect RC NAME CMD...: runs CMD, keeps its stdout/stderr in $TMP/NAME.{out,err}, and checks
# the exit code.
run_expect() {
    local want=$1 name=$2
    shift 2
    "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$name: exit code $rc, expected $want: $*"
        sed 's/^/    /' "$TMP/$name.out" "$TMP/$name.err" >&2
        return 1
    fi
    return 0
}

# expect_in NAME TEXT...: each TEXT must occur in $TMP/NAME.err or .out.
expect_in() {
    local name=$1
    shift
    for text in "$@"; do
        if ! grep -qF -- "$text" "$TMP/$name.err" "$TMP/$name.out"; then
            fail "$name: the output does not mention '$text':"
            sed 's/^/    /' "$TMP/$name.out" "$TMP/$name.err" >&2
        fi
    done
}

# count_in NAME TEXT: how many lines of $TMP/NAME.err and .out hold TEXT.
count_in() {
    cat "$TMP/$1.err" "$TMP/$1.out" | grep -cF -- "$2"
}

# cli_test_end NAME: the summary line, and the exit status ctest reads.
cli_test_end() {
    if [ "$FAILURES" -ne 0 ]; then
        echo "$1: $FAILURES failure(s)" >&2
        exit 1
    fi
    echo "$1: all checks passed"
}
