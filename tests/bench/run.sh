#!/bin/sh
# Tests of wrapbake-bench's outputs (not of its timings): the table, JSON,
# CSV and SVG are well-formed, every case and every tier is there (a tier
# that cannot run here says why), the counting mode prints nothing, and --spec
# benchmarks specs from a file.  The last line is "N passed, N failed".
#
#   sh tests/bench/run.sh WRAPBAKE_BENCH
set -u
bench=$1
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wrapbake-bench.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

passed=0
failed=0
check() {
    if eval "$2"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $1" >&2
    fi
}
fast="--calls 50 --reps 3"

# shellcheck disable=SC2086
"$bench" $fast >"$tmp/table.out" 2>"$tmp/table.err"
check "the table runs" '[ $? -eq 0 ]'
for c in A B C D E; do
    check "table has case $c" "grep -q '^$c ' '$tmp/table.out'"
done
check "table has the cc column" "grep -q 'tcc/cc' '$tmp/table.out'"
# Without a system compiler the cc column says why instead.
# shellcheck disable=SC2086
CC=/nonexistent/cc "$bench" $fast --case A >"$tmp/nocc.out" 2>&1
check "table names a missing cc tier and why" "grep -q \"^cc: not available: cannot run the system compiler '/nonexistent/cc'\" '$tmp/nocc.out'"

# shellcheck disable=SC2086
"$bench" $fast --json --svg "$tmp/chart.svg" >"$tmp/out.json"
check "json and svg run" '[ $? -eq 0 ]'
check "json is one line" '[ "$(wc -l <"$tmp/out.json")" -eq 1 ]'
if command -v python3 >/dev/null 2>&1; then
    check "json is well-formed, with every case and tier" "python3 - '$tmp/out.json' <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r['machine'] and r['date']
assert [c['case'] for c in r['cases']] == list('ABCDE')
for c in r['cases']:
    assert c['direct']['median'] > 0
    assert set(c['tiers']) == {'interp', 'tcc', 'cc'}
    for t in ('interp', 'tcc'):
        assert c['tiers'][t]['min'] <= c['tiers'][t]['median'] <= c['tiers'][t]['max']
        # null where the build cannot count (sanitizers), else none at all
        assert c['tiers'][t]['allocs_per_call'] in (0, None)
    assert c['tiers']['tcc']['compile_us'] > 0
    assert c['tiers']['tcc']['batch_compile_us'] > 0 and c['tiers']['tcc']['batch'] == 100
    cc = c['tiers']['cc']
    assert cc['min'] <= cc['median'] <= cc['max']
    assert cc['allocs_per_call'] in (0, None)
    assert cc['compile_us'] > 0 and cc['cache_hit_us'] > 0
PY"
    check "svg is well-formed XML with every case" "python3 - '$tmp/chart.svg' <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
texts = [t.text for t in root.iter('{http://www.w3.org/2000/svg}text')]
assert all(c in texts for c in 'ABCDE'), texts
assert len(list(root.iter('{http://www.w3.org/2000/svg}rect'))) >= 15
PY"
else
    echo "python3 is missing: JSON and SVG checked by grep only" >&2
    check "json names every case" "grep -q '\"case\": \"E\"' '$tmp/out.json'"
    check "svg closes" "tail -1 '$tmp/chart.svg' | grep -q '</svg>'"
fi

# shellcheck disable=SC2086
"$bench" $fast --csv >"$tmp/out.csv"
check "csv runs" '[ $? -eq 0 ]'
check "csv has a header and 4 tiers for 5 cases" '[ "$(wc -l <"$tmp/out.csv")" -eq 21 ]'
if command -v python3 >/dev/null 2>&1; then
    check "csv rows have 11 fields" "python3 -c 'import csv, sys; rows = list(csv.reader(open(sys.argv[1]))); assert all(len(r) == 11 for r in rows), rows' '$tmp/out.csv'"
fi

for t in direct interp tcc cc; do
    "$bench" --case E --tier "$t" --calls 100 >"$tmp/count.out" 2>&1
    check "counting mode on $t runs and prints nothing" '[ $? -eq 0 ] && [ ! -s "$tmp/count.out" ]'
done
CC=/nonexistent/cc "$bench" --case E --tier cc --calls 1 >"$tmp/count.out" 2>&1
check "counting mode on cc without a compiler says why" "[ \$? -eq 1 ] && grep -q 'cannot run the system compiler' '$tmp/count.out'"
"$bench" --tier tcc --calls 1 >/dev/null 2>&1
check "counting mode needs --case" '[ $? -eq 2 ]'

printf '%s\n' 'decode_step(Tensor(a!) cache, Tensor(b) x, Tensor w, int pos, float scale) -> (Tensor, Tensor(b), Tensor(a!))' \
    'fwd(Tensor w [detach], Tensor x) -> (Tensor loss [requires_grad], Tensor(c) h, Tensor(c) h2) with training' >"$tmp/specs.txt"
# shellcheck disable=SC2086
"$bench" $fast --spec "$tmp/specs.txt" >"$tmp/spec.out" 2>&1
check "--spec runs" '[ $? -eq 0 ]'
check "--spec shows each spec" "grep -q '^decode_step ' '$tmp/spec.out' && grep -q '^fwd ' '$tmp/spec.out'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
