#!/bin/sh
# Tests of wrapbake-bench's outputs (not of its timings): the table, JSON,
# CSV and SVG are well-formed, every case and every tier is there (a tier
# that cannot run here says why), the counting modes (calls, builds) print
# nothing on every tier (also with --unfixed, whose graph keeps values not
# fixed, and --fresh, whose graph hands over new values), and --spec benchmarks specs from a file, its aot column saying why
# it has none.  --device cuda runs on the CUDA runtime the library finds
# (without a GPU it must refuse, saying why) and, when FAKECUDA names the
# emulated runtime (tests/tools/fakecuda.c), on an emulated device, where
# every case must write its mutations back in one submission per call, and
# 1 to 32 mutations take one gather-copy kernel per 8 copies on the legacy
# default stream and one batched copy with --stream.
# --scale counts instructions under valgrind (not in a sanitizer build,
# which valgrind cannot run; the test says so).
# The last line is "N passed, N failed".
#
#   [FAKECUDA=libfakecudart.so] sh tests/bench/run.sh WRAPBAKE_BENCH
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
# The python3 that checks JSON, CSV and SVG, where there is one.
py=$(command -v /usr/bin/python3 python3 | head -n 1)

# Whether no line of file $1 is wider than the default table's 100 columns.
fits() {
    awk 'length > 100 { print "too wide: " $0 >"/dev/stderr"; bad = 1 } END { exit bad }' "$1"
}
# Whether file $1, a default table, has $3 rows of cases matching $2, each
# with ten figures: five tiers, four overheads above direct and allocs (n/a
# in a build that cannot count them).
rows_timed() {
    grep -E "^$2 " "$1" | awk -v n="$3" '{ if (NF != 11) bad = 1; for (i = 2; i <= NF; i++) if ($i !~ /^-?[0-9][0-9.e+]*$/ && !(i == NF && $i == "n/a")) bad = 1 } END { exit bad || NR != n }'
}

# shellcheck disable=SC2086
"$bench" $fast >"$tmp/table.out" 2>"$tmp/table.err"
check "the table runs" '[ $? -eq 0 ]'
for c in A B C D E; do
    check "table has case $c" "grep -q '^$c ' '$tmp/table.out'"
done
check "table fits 100 columns" "fits '$tmp/table.out'"
check "table gives the machine's calibration" "[ \"\$(uname -m)\" != x86_64 ] || tr '\\n' ' ' <'$tmp/table.out' | grep -Eq ', [0-9]+ +instructions/us'"
check "table has ns per call and overhead per tier" "grep -Eq '^case +direct +interp +tcc +cc +aot +interp-d +tcc-d +cc-d +aot-d +allocs$' '$tmp/table.out'"
check "table times every case on all five tiers" "rows_timed '$tmp/table.out' '[A-E]' 5"
check "table has aot for the builtin cases" "! grep -q '^aot: ' '$tmp/table.out'"
check "table leaves the wide columns out" "! grep -Eq 'tcc/cc|batch us|^libtcc alone' '$tmp/table.out'"

# shellcheck disable=SC2086
"$bench" $fast --wide >"$tmp/wide.out" 2>&1
check "--wide runs" '[ $? -eq 0 ]'
check "--wide has the ratios and build times" "grep -Eq '^case +desc +direct +interp +tcc +cc +aot +interp-d +tcc-d +cc-d +aot-d +tcc/int +tcc/cc +tcc us +batch us +cc ms +hit us +aot us +allocs$' '$tmp/wide.out'"
check "--wide has each case's description" "grep -Eq '^E +5 alias, 3 mut, 20 args ' '$tmp/wide.out'"
# Five timed cells (median, then min-max) per case: direct to aot.
check "--wide times every case on all five tiers, with the spread" "grep -E '^[A-E] ' '$tmp/wide.out' | awk '{ if (gsub(/[0-9.]+ [(][0-9.]+-[0-9.]+[)]/, \"\") != 5) bad = 1 } END { exit bad || NR != 5 }'"
check "--wide gives libtcc's floor" "grep -Eq '^libtcc alone .*: [0-9]+[.][0-9] us$' '$tmp/wide.out'"
# Without a system compiler the cc column says why instead.
# shellcheck disable=SC2086
CC=/nonexistent/cc "$bench" $fast --case A >"$tmp/nocc.out" 2>&1
check "table names a missing cc tier and why" "grep -q \"^cc: not available: cannot run the system compiler '/nonexistent/cc'\" '$tmp/nocc.out'"

# shellcheck disable=SC2086
"$bench" $fast --json --svg "$tmp/chart.svg" >"$tmp/out.json"
check "json and svg run" '[ $? -eq 0 ]'
check "json is one line" '[ "$(wc -l <"$tmp/out.json")" -eq 1 ]'
if [ -n "$py" ]; then
    check "json is well-formed, with every case and tier" "'$py' - '$tmp/out.json' <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r['machine'] and r['date'] and r['graph_values'] == 'fixed'
assert r['libtcc_floor_us'] > 0
# The calibration: a fixed loop on x86-64, none elsewhere.
import platform
assert (r['instructions_per_us'] > 0) == (platform.machine() == 'x86_64')
assert [c['case'] for c in r['cases']] == list('ABCDE')
for c in r['cases']:
    assert c['direct']['median'] > 0
    assert set(c['tiers']) == {'interp', 'tcc', 'cc', 'aot'}
    for t in ('interp', 'tcc', 'aot'):
        assert c['tiers'][t]['min'] <= c['tiers'][t]['median'] <= c['tiers'][t]['max']
        # null where the build cannot count (sanitizers), else none at all
        assert c['tiers'][t]['allocs_per_call'] in (0, None)
    assert c['tiers']['tcc']['compile_us'] > 0
    assert c['tiers']['tcc']['batch_compile_us'] > 0 and c['tiers']['tcc']['batch'] == 100
    cc = c['tiers']['cc']
    assert cc['min'] <= cc['median'] <= cc['max']
    assert cc['allocs_per_call'] in (0, None)
    assert cc['compile_us'] > 0 and cc['cache_hit_us'] > 0
    assert c['tiers']['aot']['compile_us'] > 0
PY"
    check "svg is well-formed XML with every case" "'$py' - '$tmp/chart.svg' <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
texts = [t.text for t in root.iter('{http://www.w3.org/2000/svg}text')]
assert all(c in texts for c in 'ABCDE'), texts
assert 'aot' in texts, texts
titles = [t.text for t in root.iter('{http://www.w3.org/2000/svg}title')]
assert all(any(t.startswith(c + ' aot: ') for t in titles) for c in 'ABCDE'), titles
assert len(list(root.iter('{http://www.w3.org/2000/svg}rect'))) >= 30
PY"
    check "svg has round ticks, a unit and a subtitle with the date" "'$py' - '$tmp/chart.svg' <<'PY'
import math, re, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
texts = list(root.iter('{http://www.w3.org/2000/svg}text'))
ticks = [float(t.text) for t in texts if t.get('class') == 'tick']
assert len(ticks) >= 3 and ticks[0] == 0, ticks
step = ticks[1]
mant = step / 10 ** math.floor(math.log10(step))
assert any(abs(mant - m) < 1e-9 for m in (1, 2, 2.5, 5)), ticks
assert all(abs(v - i * step) < 1e-9 * step for i, v in enumerate(ticks)), ticks
titles = [t.text for t in root.iter('{http://www.w3.org/2000/svg}title')]
top = max(float(re.search(r': ([0-9.]+) ns', t).group(1)) for t in titles)
assert ticks[-1] >= top > ticks[-2], (ticks, top)
assert [t.text for t in texts if t.get('class') == 'unit'] == ['ns per call']
sub = [t.text for t in texts if t.get('class') == 'subtitle']
assert len(sub) == 1 and re.search(r'[0-9]{4}-[0-9]{2}-[0-9]{2}', sub[0]), sub
assert 'runs of 50 calls' in sub[0] and 'CPUs' in sub[0], sub
# Each wrapper's bar: the floor, and its overhead above it.
assert all(', ' in t and t.endswith(' above direct') for t in titles if ' direct: ' not in t), titles
PY"
else
    echo "python3 is missing: JSON and SVG checked by grep only" >&2
    check "json names every case" "grep -q '\"case\": \"E\"' '$tmp/out.json'"
    check "json has the aot tier" "grep -q '\"aot\": {\"median\": ' '$tmp/out.json'"
    check "svg closes" "tail -1 '$tmp/chart.svg' | grep -q '</svg>'"
    check "svg has its unit" "grep -q '>ns per call</text>' '$tmp/chart.svg'"
fi

# shellcheck disable=SC2086
"$bench" $fast --csv >"$tmp/out.csv"
check "csv runs" '[ $? -eq 0 ]'
check "csv has a header and 5 tiers for 5 cases" '[ "$(wc -l <"$tmp/out.csv")" -eq 26 ]'
check "csv has an available aot row for every case" '[ "$(grep -c "^[A-E],\"[^\"]*\",aot,1,[0-9]" "$tmp/out.csv")" -eq 5 ]'
if [ -n "$py" ]; then
    check "csv rows have 11 fields" "'$py' -c 'import csv, sys; rows = list(csv.reader(open(sys.argv[1]))); assert all(len(r) == 11 for r in rows), rows' '$tmp/out.csv'"
fi
# A chart that cannot be written fails the run, saying so.
if [ -w /dev/full ]; then
    # shellcheck disable=SC2086
    "$bench" --case A $fast --svg /dev/full >/dev/null 2>"$tmp/full.err"
    check "svg that cannot be written fails" "[ $? -ne 0 ] && grep -q 'cannot write /dev/full' '$tmp/full.err'"
fi

# --unfixed and --fresh: the graph keeps values not fixed, or hands over
# new ones, every column still there.
for mode in unfixed:kept fresh:fresh; do
    opt=${mode%%:*} name=${mode#*:}
    # shellcheck disable=SC2086
    "$bench" $fast --$opt --case D >"$tmp/$opt.out" 2>&1
    check "--$opt table runs and says so" "[ \$? -eq 0 ] && grep -q 'graph values $name' '$tmp/$opt.out'"
    check "--$opt times case D on all five tiers" "rows_timed '$tmp/$opt.out' D 1"
    check "--$opt table fits 100 columns" "fits '$tmp/$opt.out'"
done
"$bench" --fresh --unfixed --case D >"$tmp/both.out" 2>&1
check "--fresh with --unfixed is refused, saying why" "[ \$? -eq 2 ] && grep -q 'exclude each other' '$tmp/both.out'"
if [ -n "$py" ]; then
    # shellcheck disable=SC2086
    "$bench" $fast --fresh --json >"$tmp/fresh.json"
    check "--fresh --json: every case and tier, no allocation per call" "'$py' - '$tmp/fresh.json' <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r['graph_values'] == 'fresh'
assert [c['case'] for c in r['cases']] == list('ABCDE')
for c in r['cases']:
    assert c['direct']['median'] > 0
    for t in ('interp', 'tcc', 'cc', 'aot'):
        x = c['tiers'][t]
        assert x['min'] <= x['median'] <= x['max'], (c['case'], t)
        assert x['allocs_per_call'] in (0, None), (c['case'], t)
PY"
fi

for t in direct interp tcc cc aot; do
    "$bench" --case E --tier "$t" --calls 100 >"$tmp/count.out" 2>&1
    check "counting mode on $t runs and prints nothing" '[ $? -eq 0 ] && [ ! -s "$tmp/count.out" ]'
    for opt in --unfixed --fresh; do
        "$bench" --case E --tier "$t" --calls 100 $opt >"$tmp/count.out" 2>&1
        check "counting mode on $t with $opt runs and prints nothing" '[ $? -eq 0 ] && [ ! -s "$tmp/count.out" ]'
    done
done
CC=/nonexistent/cc "$bench" --case E --tier cc --calls 1 >"$tmp/count.out" 2>&1
check "counting mode on cc without a compiler says why" "[ \$? -eq 1 ] && grep -q 'cannot run the system compiler' '$tmp/count.out'"
"$bench" --tier tcc --calls 1 >/dev/null 2>&1
check "counting mode needs --case" '[ $? -eq 2 ]'
for t in tcc cc aot libtcc; do
    "$bench" --case C --tier "$t" --builds 2 >"$tmp/count.out" 2>&1
    check "counting builds on $t runs and prints nothing" '[ $? -eq 0 ] && [ ! -s "$tmp/count.out" ]'
done
"$bench" --case C --tier tcc --builds 3 --batch >"$tmp/count.out" 2>&1
check "counting a batch of builds runs and prints nothing" '[ $? -eq 0 ] && [ ! -s "$tmp/count.out" ]'
for bad in "--tier interp --builds 2" "--tier tcc --builds 2 --calls 2" "--tier cc --builds 2 --batch" "--tier tcc --calls 2 --batch"; do
    # shellcheck disable=SC2086
    "$bench" --case C $bad >/dev/null 2>&1
    check "counting refuses $bad" '[ $? -eq 2 ]'
done
# A usage error says what is wrong before the usage.
while IFS='|' read -r args why; do
    # shellcheck disable=SC2086
    "$bench" $args >/dev/null 2>"$tmp/usage.err"
    st=$?
    printf '%s\n' "$why" >"$tmp/why"
    check "refuses $args" "[ $st -eq 2 ] && grep -qF -f '$tmp/why' '$tmp/usage.err'"
done <<'EOF2'
--case A --tier tcc --calls abc|--calls takes a whole number from 0 to 1000000000, not 'abc'
--case A --tier tcc --calls 10x|not '10x'
--case A --tier tcc --builds -1|--builds takes a whole number
--cpu -7|--cpu takes a whole number from 0 to
--reps 0|--reps takes a whole number from 1
--json --csv|--json and --csv exclude each other
--case A --tier bogus --calls 1|--tier takes direct, interp, tcc, cc, aot or libtcc
--case A --tier libtcc --calls 3|--tier libtcc counts builds alone
--builds 3|--builds counts the builds of one --tier
--calls 0|the table takes at least one call a run
--scale --case A|--scale takes --json, --svg, --unfixed and --fresh alone
operand|an operand, where options alone go
EOF2
printf '# no spec\n' >"$tmp/nospec.txt"
"$bench" --spec "$tmp/nospec.txt" >/dev/null 2>"$tmp/nospec.err"
check "--spec of a file without specs fails" "[ \$? -eq 1 ] && grep -q 'holds no spec' '$tmp/nospec.err'"
"$bench" --spec "$tmp" >/dev/null 2>"$tmp/dirspec.err"
check "--spec of a directory names it once" "[ \$? -eq 1 ] && [ \$(grep -o '$tmp' '$tmp/dirspec.err' | wc -l) -eq 1 ]"
"$bench" --help >"$tmp/help.out"
check "--help names the aot tier" "grep -q 'direct, interp, tcc, cc, aot' '$tmp/help.out'"
check "--help names --fresh and --unfixed" "grep -q -- '--fresh ' '$tmp/help.out' && grep -q -- '--unfixed ' '$tmp/help.out'"
check "--help names --wide" "grep -q -- '--wide ' '$tmp/help.out'"

printf '%s\n' 'decode_step(Tensor(a!) cache, Tensor(b) x, Tensor w, int pos, float scale) -> (Tensor, Tensor(b), Tensor(a!))' \
    'fwd(Tensor w [detach], Tensor x) -> (Tensor loss [requires_grad], Tensor(c) h, Tensor(c) h2) with training' >"$tmp/specs.txt"
# shellcheck disable=SC2086
"$bench" $fast --spec "$tmp/specs.txt" >"$tmp/spec.out" 2>&1
check "--spec runs" '[ $? -eq 0 ]'
check "--spec shows each spec" "grep -q '^decode_step ' '$tmp/spec.out' && grep -q '^fwd ' '$tmp/spec.out'"
check "--spec says why it has no aot column" "grep -q '^aot: not available: wrapbake-bench holds ahead-of-time code for its builtin cases A-E only' '$tmp/spec.out'"
# shellcheck disable=SC2086
"$bench" $fast --spec "$tmp/specs.txt" --json >"$tmp/spec.json" 2>&1
check "--spec --json runs" '[ $? -eq 0 ]'
if [ -n "$py" ]; then
    check "--spec --json: aot not available, with the reason" "'$py' - '$tmp/spec.json' <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert [c['case'] for c in r['cases']] == ['decode_step', 'fwd']
for c in r['cases']:
    a = c['tiers']['aot']
    assert a['available'] is False and 'builtin cases A-E only' in a['reason'], a
    assert c['tiers']['tcc']['median'] > 0
PY"
else
    check "--spec --json: aot not available" "grep -q '\"aot\": {\"available\": false, \"reason\": ' '$tmp/spec.json'"
fi
# shellcheck disable=SC2086
"$bench" $fast --spec "$tmp/specs.txt" --csv >"$tmp/spec.csv" 2>&1
check "--spec --csv: an aot row that is not available" "grep -q '^fwd,\"[^\"]*\",aot,0,,,,' '$tmp/spec.csv'"
"$bench" --spec "$tmp/specs.txt" --case fwd --tier aot --calls 1 >"$tmp/count.out" 2>&1
check "counting mode on aot of a --spec case says why" "[ \$? -eq 1 ] && grep -q 'aot: not available' '$tmp/count.out'"

# Names longer than the table's case column are cut, start and end kept,
# and given whole below it; the table still fits 100 columns.
long=a_spec_name_longer_than_the_case_column_of_the_table
printf '%s\n' "${long}_for_prefill(Tensor(a!) cache, Tensor x) -> (Tensor, Tensor(a!))" \
    "${long}_for_decode(Tensor x, Tensor w) -> Tensor" >"$tmp/long.txt"
# shellcheck disable=SC2086
"$bench" $fast --spec "$tmp/long.txt" >"$tmp/long.out" 2>&1
check "--spec with long names runs" '[ $? -eq 0 ]'
check "--spec with long names fits 100 columns" "fits '$tmp/long.out'"
check "--spec with long names cuts them in the table" "[ \"\$(grep -Ec '^a_spec_\\.\\.\\.(refill|decode) +[0-9]' '$tmp/long.out')\" -eq 2 ]"
check "--spec with long names gives them whole" "grep -q '^  a_spec_\\.\\.\\.refill: ${long}_for_prefill$' '$tmp/long.out' && grep -q ': ${long}_for_decode$' '$tmp/long.out'"

# The bench takes specs as large as the library does: 1,000 inputs, 200 of
# them mutated, and 1,000 outputs make 1,200 graph values.
awk 'BEGIN {
    printf "big("
    for (i = 0; i < 1000; i++)
        printf "%sTensor%s x%d", i ? ", " : "", i < 200 ? "(a" i "!)" : "", i
    printf ") -> ("
    for (i = 0; i < 1000; i++)
        printf "%sTensor", i ? ", " : ""
    print ")"
}' >"$tmp/big.txt"
"$bench" --calls 5 --reps 3 --spec "$tmp/big.txt" >"$tmp/big.out" 2>&1
check "--spec with 1,000 inputs and 1,000 outputs runs" '[ $? -eq 0 ]'
check "--spec with 1,000 inputs and 1,000 outputs times them" "grep -Eq '^big( +[0-9][0-9.e+]*){4} +n/a( +-?[0-9][0-9.e+]*){3} +n/a +([0-9.]+|n/a)$' '$tmp/big.out'"

# ---- --scale ----
# Specs growing from 1 to 100 arguments, mutations and views, counted by
# callgrind: every point there, no allocation, growth linear.
"$bench" --scale=100 --json --svg "$tmp/scale.svg" >"$tmp/scale.json" 2>"$tmp/scale.err"
rc=$?
if grep -q 'valgrind cannot run a sanitizer build' "$tmp/scale.err"; then
    echo "--scale: skipped, valgrind cannot run this sanitizer build" >&2
    check "--scale in a sanitizer build says why it cannot count" "[ $rc -eq 1 ]"
elif ! command -v valgrind >/dev/null 2>&1; then
    echo "--scale: skipped, valgrind is not installed" >&2
    check "--scale without valgrind says so" "[ $rc -eq 1 ] && grep -q 'apt-get install valgrind' '$tmp/scale.err'"
else
    check "--scale runs" "[ $rc -eq 0 ]"
    if [ -n "$py" ]; then
        check "--scale --json: every kind and size, linear, no allocation" "'$py' - '$tmp/scale.json' <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r['counter'].startswith('valgrind-') and r['graph_values'] == 'fixed'
assert list(r['kinds']) == ['args', 'mutations', 'views']
for kind, k in r['kinds'].items():
    assert [p['n'] for p in k['points']] == [1, 10, 100], kind
    for p in k['points']:
        assert 0 < p['direct'] < p['tcc'] < p['interp'], (kind, p)
        assert p['tcc_build'] > 0 and p['allocs_per_call'] in (0, None), (kind, p)
    # each item costs something per call; per build, the step from 10 to
    # 100 may shed a fixed cost (from 17 values on, r is cleared by one
    # memset and checked by one call), so only the whole range must grow
    pts = k['points']
    assert all(b['tcc'] - b['direct'] > a['tcc'] - a['direct'] for a, b in zip(pts, pts[1:])), kind
    assert pts[1]['tcc_build'] > pts[0]['tcc_build'] and pts[-1]['tcc_build'] > pts[0]['tcc_build'], kind
    assert k['linear'] is True and 0 < k['bend_per_call'] <= 1.5 and k['bend_per_build'] <= 1.5, (kind, k)
PY"
        check "--scale --svg: two panels, a line per kind, log axes" "'$py' - '$tmp/scale.svg' <<'PY'
import sys, xml.etree.ElementTree as ET
ns = '{http://www.w3.org/2000/svg}'
root = ET.parse(sys.argv[1]).getroot()
assert len([p for p in root.iter(ns + 'polyline') if p.get('class') == 'series']) == 6
assert len([l for l in root.iter(ns + 'line') if l.get('class') == 'linear']) == 2
ticks = [t.text for t in root.iter(ns + 'text') if t.get('class') == 'tick']
assert ticks.count('1') == 2 and ticks.count('100') >= 2, ticks
titles = [t.text for t in root.iter(ns + 'title')]
assert len(titles) == 18 and any(t.startswith('views_100: ') for t in titles), titles
PY"
    fi
    "$bench" --scale=10 >"$tmp/scale.out" 2>&1
    check "--scale table runs, fits 100 columns" "[ \$? -eq 0 ] && fits '$tmp/scale.out'"
    check "--scale table has every kind at 1 and 10" "[ \"\$(grep -Ec '^(args|mutations|views)? +(1|10) +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ ' '$tmp/scale.out')\" -eq 6 ]"
    PATH=/nonexistent "$bench" --scale=10 >"$tmp/scale.out" 2>&1
    check "--scale without valgrind says so" "[ \$? -eq 1 ] && grep -q 'apt-get install valgrind' '$tmp/scale.out'"
    # A valgrind whose counting runs fail, saying why in their logs: the
    # first failure is named with the end of its log, and no run or log
    # outlives the program.
    mkdir -p "$tmp/fakevg" "$tmp/scaletmp"
    printf '%s\n' '#!/bin/sh' '[ "$1" = --version ] && { echo valgrind-3.19.0; exit 0; }' 'echo "==1== the reason it failed" >"${3#--log-file=}"' 'sleep 1; exit 3' >"$tmp/fakevg/valgrind"
    chmod +x "$tmp/fakevg/valgrind"
    TMPDIR=$tmp/scaletmp PATH=$tmp/fakevg:$PATH "$bench" --scale=10 >"$tmp/scale.out" 2>&1
    check "--scale names the first counting run that failed, and why" "[ \$? -eq 1 ] && grep -q 'a counting run failed: --case args_1 --tier direct --calls 10000$' '$tmp/scale.out' && grep -q 'the reason it failed' '$tmp/scale.out'"
    check "--scale leaves nothing behind when a run fails" "[ -z \"\$(ls -A '$tmp/scaletmp')\" ]"
fi
for bad in "--scale=7" "--scale --case A" "--scale --device cuda" "--scale --csv" "--scale --calls 5" "--scale --reps 3" "--scale --cpu 0"; do
    # shellcheck disable=SC2086
    "$bench" $bad >/dev/null 2>&1
    check "refuses $bad" '[ $? -eq 2 ]'
done
"$bench" --case mutations_10 --tier tcc --calls 5 >"$tmp/count.out" 2>&1
check "counting mode takes a scaling spec's name" '[ $? -eq 0 ] && [ ! -s "$tmp/count.out" ]'
"$bench" --case views_7 --tier tcc --calls 5 >"$tmp/count.out" 2>&1
check "an unknown scaling size is no case" "[ \$? -eq 1 ] && grep -q 'views_7: no such case' '$tmp/count.out'"

# ---- --device cuda ----
# shellcheck disable=SC2086
"$bench" $fast --device cuda --case C >"$tmp/cuda.out" 2>&1
rc=$?
if grep -q 'no CUDA support' "$tmp/cuda.out"; then
    check "--device cuda in a build without CUDA says so" "[ $rc -eq 1 ]"
elif grep -q 'no CUDA device' "$tmp/cuda.out"; then
    check "--device cuda without a GPU says why" "[ $rc -eq 1 ]"
else
    check "--device cuda runs on the GPU" "[ $rc -eq 0 ] && grep -q 'tensors on cuda' '$tmp/cuda.out'"
fi
"$bench" $fast --device tpu >"$tmp/tpu.out" 2>&1
check "--device names what it takes" "[ \$? -eq 1 ] && grep -q 'takes cpu, cuda or cuda:N' '$tmp/tpu.out'"
"$bench" $fast --stream >/dev/null 2>&1
check "--stream needs --device cuda" "[ \$? -eq 2 ]"
"$bench" --device cuda --stream --case A --tier tcc --builds 1 >/dev/null 2>&1
check "--stream makes no sense with --builds" "[ \$? -eq 2 ]"
if [ -n "${FAKECUDA:-}" ] && [ -n "$py" ]; then
    # shellcheck disable=SC2086
    WRAPBAKE_CUDART=$FAKECUDA "$bench" $fast --device cuda --json >"$tmp/cuda.json" 2>&1
    check "--device cuda --json on an emulated device" "'$py' - '$tmp/cuda.json' <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r['device'] == 'cuda', r['device']
assert r['own_stream'] is False
muts = {'A': 0, 'B': 0, 'C': 2, 'D': 1, 'E': 3}
for c in r['cases']:
    assert c['direct']['launches_per_call'] == 0
    for t in ('interp', 'tcc', 'cc'):
        if c['tiers'][t].get('available', True):
            # all the mutations of a call in one submission
            want = 1 if muts[c['case']] else 0
            assert c['tiers'][t]['launches_per_call'] == want, (c['case'], t)
    assert c['tiers']['aot']['available'] is False
    assert 'built for the CPU' in c['tiers']['aot']['reason']
PY"
    # shellcheck disable=SC2086
    WRAPBAKE_CUDART=$FAKECUDA "$bench" $fast --device cuda --case E >"$tmp/cuda.out" 2>&1
    check "--device cuda table has submissions per call" "grep -q '^CUDA submissions' '$tmp/cuda.out' && grep -Eq '^E +0.00 +1.00 +1.00' '$tmp/cuda.out'"
    check "--device cuda table fits 100 columns" "fits '$tmp/cuda.out'"
    # shellcheck disable=SC2086
    WRAPBAKE_CUDART=$FAKECUDA "$bench" $fast --device cuda --spec "$tmp/long.txt" >"$tmp/cuda-long.out" 2>&1
    check "--device cuda with long names fits 100 columns" "[ \$? -eq 0 ] && grep -q '^CUDA submissions' '$tmp/cuda-long.out' && fits '$tmp/cuda-long.out'"
    # 1 to 32 mutations: one gather-copy kernel per 8 copies on the legacy
    # default stream, one batched copy of up to 32 on a stream of its own
    # (the interp and tcc columns: cc needs a system compiler).
    # shellcheck disable=SC2086
    WRAPBAKE_CUDART=$FAKECUDA "$bench" $fast --device cuda --spec bench/cuda-mutations.txt >"$tmp/cuda-mut.out" 2>&1
    check "--device cuda: a kernel per 8 copies on the legacy stream" "[ \$? -eq 0 ] && [ \"\$(grep -Ec '^mut_(1|2|4|8) +0.00 +1.00 +1.00 ' '$tmp/cuda-mut.out')\" -eq 4 ] && grep -Eq '^mut_16 +0.00 +2.00 +2.00 ' '$tmp/cuda-mut.out' && grep -Eq '^mut_32 +0.00 +4.00 +4.00 ' '$tmp/cuda-mut.out'"
    # shellcheck disable=SC2086
    WRAPBAKE_CUDART=$FAKECUDA "$bench" $fast --device cuda --stream --spec bench/cuda-mutations.txt >"$tmp/cuda-stream.out" 2>&1
    check "--device cuda --stream: one batched copy per call" "[ \$? -eq 0 ] && [ \"\$(grep -Ec '^mut_[0-9]+ +0.00 +1.00 +1.00 ' '$tmp/cuda-stream.out')\" -eq 6 ]"
    if [ -n "$py" ]; then
        # shellcheck disable=SC2086
        WRAPBAKE_CUDART=$FAKECUDA "$bench" $fast --device cuda --stream --case mut_1 --spec bench/cuda-mutations.txt --json >"$tmp/cuda-stream.json" 2>&1
        check "--device cuda --stream --json says so" "'$py' -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r[\"own_stream\"] is True and r[\"device\"] == \"cuda\"' '$tmp/cuda-stream.json'"
    fi
    WRAPBAKE_CUDART=$FAKECUDA "$bench" --device cuda --case E --tier tcc --calls 3 >"$tmp/count.out" 2>&1
    check "counting mode on a device prints nothing" "[ \$? -eq 0 ] && [ ! -s '$tmp/count.out' ]"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
