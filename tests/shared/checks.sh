# Sourced by the scripts of tests/shared, from the top of the tree: a
# temporary directory $tmp, removed at exit, and the checks, counted.
# $suite names the script in its summary.
cc=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wrapbake-$suite.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# Runs "$@", which must succeed; its output shows when it fails.
check() {
    what=$1
    shift
    if "$@" >"$tmp/out" 2>&1; then ok; else
        bad "$what"
        sed 's/^/    /' "$tmp/out"
    fi
}
# Runs "$@", which must succeed and print a line holding $want.
expect() {
    want=$1
    shift
    if out=$("$@" 2>&1) && printf '%s\n' "$out" | grep -qF "$want"; then
        ok
    else
        bad "$* (wanted '$want'):"
        printf '%s\n' "$out" | sed 's/^/    /'
    fi
}
# The last line: the counts, and the status.
summary() {
    echo "$suite: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
