#!/bin/sh
# Tests of the wrapbake command: golden output of `check` (text and JSON) and
# of `emit`, exit codes, malformed lines reported without stopping the run,
# allowlists, YAML and text input, standard input.
#
#   sh tests/cli/run.sh WRAPBAKE TIER_SOURCE   the tests (make test)
#   sh tests/cli/run.sh --bench WRAPBAKE       the timing of check --json on
#                                              2,500 entries (make bench-check)
#
# WB_UPDATE_GOLDEN=1 rewrites tests/cli/golden/ from the current output first,
# as `make golden` does; review the diff.  The last line printed is
# "N passed, N failed"; the exit status is 1 when any check failed.
set -u

abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

bench=
if [ "${1:-}" = --bench ]; then
    bench=1
    shift
fi
if [ $# -lt 1 ] || { [ -z "$bench" ] && [ $# -lt 2 ]; }; then
    echo "usage: $0 WRAPBAKE TIER_SOURCE | $0 --bench WRAPBAKE" >&2
    exit 2
fi
wb=$(abs "$1")
tier_source=$(abs "${2:-}")
# Every path in the goldens is relative to the repository root.
cd "$(dirname "$0")/../.." || exit 2
golden_dir=tests/cli/golden
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wrapbake-cli.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() {
    failed=$((failed + 1))
    echo "FAIL: $*" >&2
}

# run NAME WANT_STATUS COMMAND...: runs COMMAND with stdin from /dev/null,
# keeping its stdout in $tmp/NAME.out and its stderr in $tmp/NAME.err, and
# checks its exit status.  A sanitizer report in stderr fails it too.
run() {
    name=$1 want=$2
    shift 2
    "$@" <"${run_stdin:-/dev/null}" >"$tmp/$name.out" 2>"$tmp/$name.err"
    status=$?
    run_stdin=
    if [ "$status" -eq "$want" ]; then
        pass
    else
        fail "$name: exit status $status, expected $want"
        sed 's/^/    /' "$tmp/$name.err" | head -20 >&2
    fi
    if grep -q 'Sanitizer' "$tmp/$name.err"; then
        fail "$name: sanitizer report"
        cat "$tmp/$name.err" >&2
    fi
}

# run_in FILE NAME WANT COMMAND...: run, with stdin from FILE.
run_in() {
    run_stdin=$1
    shift
    run "$@"
}

# golden NAME.EXT GOLDEN: the output file must equal the golden file.
golden() {
    if [ -n "${WB_UPDATE_GOLDEN:-}" ]; then
        mkdir -p "$golden_dir"
        cp "$tmp/$1" "$golden_dir/$2"
    fi
    if [ ! -f "$golden_dir/$2" ]; then
        fail "$golden_dir/$2 is missing; run 'make golden' and review it"
    elif cmp -s "$tmp/$1" "$golden_dir/$2"; then
        pass
    else
        fail "$1 differs from $golden_dir/$2 (if intended, run 'make golden' and review the diff):"
        diff -u "$golden_dir/$2" "$tmp/$1" | head -40 >&2
    fi
}

# has NAME.EXT TEXT...: the output file contains each TEXT (fixed strings).
has() {
    f=$1
    shift
    for text in "$@"; do
        if grep -qF -e "$text" "$tmp/$f"; then
            pass
        else
            fail "$f lacks '$text'"
            head -20 "$tmp/$f" | sed 's/^/    /' >&2
        fi
    done
}

# lacks NAME.EXT TEXT: the output file does not contain TEXT.
lacks() {
    if grep -qF -e "$2" "$tmp/$1"; then
        fail "$1 contains '$2'"
    else
        pass
    fi
}

# lines NAME.EXT N: the output file has N lines.
lines() {
    n=$(wc -l <"$tmp/$1" | tr -d ' ')
    if [ "$n" -eq "$2" ]; then pass; else fail "$1 has $n lines, expected $2"; fi
}

# same A B: two output files are equal.
same() {
    if cmp -s "$tmp/$1" "$tmp/$2"; then
        pass
    else
        fail "$1 and $2 differ:"
        diff -u "$tmp/$1" "$tmp/$2" | head -40 >&2
    fi
}

# json NAME.EXT: every line is valid JSON, when python3 is there to say so.
json() {
    command -v python3 >/dev/null 2>&1 || return 0
    if python3 -c '
import json, sys
for i, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    try:
        obj = json.loads(line)
    except ValueError as e:
        sys.exit("line %d: %s" % (i, e))
    if not isinstance(obj, dict) or "name" not in obj or "ok" not in obj:
        sys.exit("line %d: not a spec object" % i)
' "$tmp/$1" 2>"$tmp/json.err"; then
        pass
    else
        fail "$1 is not one JSON object per line: $(cat "$tmp/json.err")"
    fi
}

# The 2,500-entry YAML: the real entries of the corpus, then copies of them
# whose overload names are made unique (add.Tensor -> add.Tensor_r1, abs ->
# abs.r1), so that every entry is a distinct real schema shape.
make_corpus() {
    awk -v want=2500 '
        /^- func: / { n++; funcs[n] = substr($0, 9) }
        END {
            out = 0
            for (r = 0; out < want && n > 0; r++)
                for (i = 1; i <= n && out < want; i++) {
                    s = funcs[i]
                    if (r > 0) {
                        p = index(s, "(")
                        name = substr(s, 1, p - 1)
                        name = index(name, ".") ? name "_r" r : name ".r" r
                        s = name substr(s, p)
                    }
                    print "- func: " s
                    out++
                }
        }' tests/cli/native_functions.yaml >"$1"
}

finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}

if [ -n "$bench" ]; then
    corpus=$tmp/corpus.yaml
    make_corpus "$corpus"
    runs=7
    best= all=
    i=0
    while [ $i -lt $runs ]; do
        t0=$(date +%s%N)
        "$wb" check --json "$corpus" >"$tmp/bench.out" 2>"$tmp/bench.err"
        status=$?
        t1=$(date +%s%N)
        ms=$(( (t1 - t0) / 1000000 ))
        all="$all $ms"
        if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
        i=$((i + 1))
    done
    if [ "$status" -eq 0 ]; then pass; else fail "check --json exited $status"; fi
    lines bench.out 2500
    lacks bench.out '"ok": false'
    median=$(echo "$all" | tr ' ' '\n' | sed '/^$/d' | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
    echo "wrapbake check --json on 2500 YAML entries: best $best ms, median $median ms of $runs runs (all:$all ms)"
    echo "machine: $(uname -m), $(nproc 2>/dev/null || echo '?') cpus, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo 2>/dev/null | head -1)"
    if [ "$best" -lt 1000 ]; then pass; else fail "check took $best ms; the target is well under a second"; fi
    finish
fi

s=tests/cli/specs.txt

# ---- check, text output --------------------------------------------------
# Malformed and failing specs make the status 1, are reported on stderr
# where they are, and the run goes on to the last spec.
run check_text 1 "$wb" check $s
golden check_text.out check_specs.txt
golden check_text.err check_specs.err
has check_text.out 'mul.Tensor  (tests/cli/specs.txt:34)' \
    '26 specs: 18 wrappable, 4 not wrappable, 4 failed'
has check_text.err 'tests/cli/specs.txt:29:24: expected' \
    'tests/cli/specs.txt:30:' 'tests/cli/specs.txt:31:' \
    'tests/cli/specs.txt:32:'

# ---- check --json ----------------------------------------------------------
run check_json 1 "$wb" check --json $s
golden check_json.out check_specs.json
lines check_json.out 26
json check_json.out
lines check_json.err 0
# The spec after the failures is still checked, whole.
has check_json.out '{"name": "mul.Tensor", "ok": true, "wrappable": true, "arity": 1, "args": [{"name": "self", "type": "Tensor", "dir": "in", "ctype": "wb_tensor *"}, {"name": "other", "type": "Tensor", "dir": "in", "ctype": "wb_tensor *"}], "returns": [{"alias": "none", "base": null}], "signature": ["in", "in"], "effect_tokens": 0, "functional_rng": false, "graph_args": [0, 1], "synthetic_bases": [], "updated_bases": [], "updated": [], "outputs": 1, "intermediate_bases": 0, "new_views": [], "values": 1}'
# The example of the brief, to the byte.
has check_json.out '{"name": "add_.Tensor", "ok": true, "wrappable": true, "arity": 1, "args": [{"name": "self", "type": "Tensor(a!)", "dir": "inout", "ctype": "wb_tensor *", "mutation": "data"}, {"name": "other", "type": "Tensor", "dir": "in", "ctype": "wb_tensor *"}, {"name": "alpha", "type": "Scalar", "dir": "scalar", "ctype": "const void *", "kwonly": true, "default": "1"}], "returns": [{"alias": "is_input", "base": 0}], "signature": ["inout", "in"], "effect_tokens": 0, "functional_rng": false, "graph_args": [0, 1, 2], "synthetic_bases": [], "updated_bases": [], "updated": [0], "outputs": 1, "intermediate_bases": 0, "new_views": [], "values": 2}'
# A malformed line: its name, and the place with the caret.
has check_json.out '{"name": "f", "ok": false, "error": "tests/cli/specs.txt:29:24: expected'
has check_json.out '"name": "cat", "ok": true, "wrappable": false, "reason": '
has check_json.out '{"name": "unclosed", "ok": false, "error": "tests/cli/specs.txt:32:'

# ---- standard input ------------------------------------------------------
# The same file through `-` gives the same lines, named <stdin>.
run_in $s check_stdin 1 "$wb" check --json -
golden check_stdin.out check_stdin.json
sed 's|tests/cli/specs.txt|<stdin>|g' "$tmp/check_json.out" >"$tmp/check_json_as_stdin.out"
same check_stdin.out check_json_as_stdin.out
# Lines ending in CR LF read as lines ending in LF.
printf 'relu(Tensor self) -> Tensor\nrelu_(Tensor(a!) self,\n    int n) -> Tensor(a!)\n' >"$tmp/lf.txt"
printf 'relu(Tensor self) -> Tensor\r\nrelu_(Tensor(a!) self,\r\n    int n) -> Tensor(a!)\r\n' >"$tmp/crlf.txt"
run_in "$tmp/lf.txt" check_lf 0 "$wb" check --json -
run_in "$tmp/crlf.txt" check_crlf 0 "$wb" check --json -
lines check_crlf.out 2
same check_lf.out check_crlf.out

# ---- YAML ----------------------------------------------------------------
run check_yaml 1 "$wb" check --json tests/cli/ops.yaml
golden check_yaml.out check_ops.json
lines check_yaml.out 11
json check_yaml.out
has check_yaml.out '"error": "tests/cli/ops.yaml:30:3: expected a `func:` key in this entry"' \
    '{"name": "broken", "ok": false, "error": "tests/cli/ops.yaml:38:' \
    '{"name": "relu", "ok": true' '{"name": "cummax.out", "ok": true' \
    '{"name": "diagonal", "ok": true'
# A YAML error stops the file where it is; what came before is checked
# (here a `func:` whose value starts a list, which is no spec).
run check_bad_yaml 1 "$wb" check --json tests/cli/bad.yaml
lines check_bad_yaml.out 3
has check_bad_yaml.out '{"name": "relu", "ok": true' '{"name": "relu_", "ok": true' \
    '{"name": null, "ok": false, "error": "tests/cli/bad.yaml:3:9: expected a spec after `func:`, as text"}'
has check_bad_yaml.err 'tests/cli/bad.yaml:4:7: not valid YAML: '
# A second func: in one entry is an error of its own.
printf -- '- func: a(Tensor x) -> Tensor\n  func: b(Tensor x) -> Tensor\n' >"$tmp/dup.yaml"
run check_dup_func 1 "$wb" check "$tmp/dup.yaml"
has check_dup_func.err "$tmp/dup.yaml:2:3: a second \`func:\` key in this entry"
lacks check_bad_yaml.out sigmoid
# An empty `func:` is reported right after the key; an alias is no text.
printf -- '- func:\n- func: &a a(Tensor x) -> Tensor\n- func: *a\n- func: ""\n' >"$tmp/empty.yaml"
run check_empty_func 1 "$wb" check "$tmp/empty.yaml"
has check_empty_func.err "$tmp/empty.yaml:1:8: expected a spec after \`func:\`" \
    "$tmp/empty.yaml:3:9: expected a spec after \`func:\`, as text: YAML aliases (*a) are not supported" \
    "$tmp/empty.yaml:4:9: expected a spec after \`func:\`"
lines check_empty_func.err 3
has check_empty_func.out '4 specs: 1 wrappable, 0 not wrappable, 3 failed'
run check_not_list 1 "$wb" check tests/cli/notlist.yaml
has check_not_list.err 'tests/cli/notlist.yaml:1:1: expected a list of mappings'
# Every real schema of the corpus checks; so do the 2,500 entries the
# benchmark times.
run check_corpus 0 "$wb" check --json tests/cli/native_functions.yaml
lines check_corpus.out 513
lacks check_corpus.out '"ok": false'
make_corpus "$tmp/corpus.yaml"
run check_corpus_2500 0 "$wb" check --json "$tmp/corpus.yaml"
lines check_corpus_2500.out 2500
has check_corpus_2500.out '{"name": "add.Tensor_r4", "ok": true' '{"name": "abs.r1", "ok": true'

# ---- allowlist -------------------------------------------------------------
# `add` takes every overload of add (not add_), `cummax.out` that overload;
# the failing entries are not named by it, so the status is 0.
run check_allow 0 "$wb" check --json --allowlist tests/cli/allow.txt tests/cli/ops.yaml
golden check_allow.out check_allow.json
cut -d'"' -f4 "$tmp/check_allow.out" >"$tmp/allow_names.out"
printf 'add.Tensor\nadd.out\nadd.Scalar\ncummax.out\ndiagonal\n' >"$tmp/allow_names_want.out"
same allow_names.out allow_names_want.out
has check_allow.err "tests/cli/allow.txt:5: warning: allowlist entry 'nosuch' takes no spec"
run check_allow_text 0 "$wb" check -a tests/cli/allow.txt $s
has check_allow_text.out 'cummax.out  (tests/cli/specs.txt:19)' \
    '2 specs: 2 wrappable, 0 not wrappable, 0 failed; 24 left out by the allowlist'
lacks check_allow_text.out 'add_.Tensor'
# A byte order mark is not part of the first entry; a warning shows the
# bytes of an entry that are not printable ASCII escaped.
printf '\357\273\277cummax\nno\001such\n' >"$tmp/bom_allow.txt"
run check_allow_bom 0 "$wb" check --json --allowlist "$tmp/bom_allow.txt" tests/cli/ops.yaml
has check_allow_bom.out '{"name": "cummax.out", "ok": true'
has check_allow_bom.err "bom_allow.txt:2: warning: allowlist entry 'no\\x01such' takes no spec"
lines check_allow_bom.err 1
printf 'add mul\n' >"$tmp/two.txt"
run check_allow_bad 1 "$wb" check --allowlist "$tmp/two.txt" $s
has check_allow_bad.err 'two.txt:1: expected one name per line'
lines check_allow_bad.out 0

# ---- JSON escapes ----------------------------------------------------------
# The parser's messages echo the line, with bytes that are not printable
# ASCII written as \xNN; the JSON escapes their quotes and backslashes.
run check_escapes 1 "$wb" check --json tests/cli/escapes.txt
golden check_escapes.out check_escapes.json
json check_escapes.out
lines check_escapes.out 5
has check_escapes.out '{"name": "q", "ok": false' '{"name": "back", "ok": false' \
    'q\"uote(Tensor x)' 'back\\x5cslash(Tensor x)' 'ctl\\x01(Tensor x)'
# A file name reaches the messages as it is: quotes, backslashes and control
# characters are escaped, valid UTF-8 (2- and 4-byte sequences here) is
# kept, and each byte that is not part of valid UTF-8 (a stray 0xff, an
# overlong 0xc0 0xaf, a lone continuation byte) becomes \ufffd.
mkdir "$tmp/names"
odd=$(printf 'caf\303\251 q"b\\s\001\377\360\237\230\200\300\257\200.txt')
printf 'bad(\n' >"$tmp/names/$odd"
run check_odd_name 1 sh -c 'cd "$1" && shift && exec "$@"' sh "$tmp/names" "$wb" check --json "$odd"
want=$(printf '{"name": "bad", "ok": false, "error": "caf\303\251 q\\"b\\\\s\\u0001\\ufffd\360\237\230\200\\ufffd\\ufffd\\ufffd.txt:1:5: expected')
has check_odd_name.out "$want"
json check_odd_name.out

# ---- several files, one missing ------------------------------------------
run check_missing 1 "$wb" check --json tests/cli/nosuch.txt "$tmp/lf.txt"
has check_missing.err 'tests/cli/nosuch.txt: cannot read'
lines check_missing.out 2
run check_ok 0 "$wb" check "$tmp/lf.txt"
has check_ok.out '2 specs: 2 wrappable, 0 not wrappable, 0 failed'
# The graph's side of a call, in order, as docs/spec-format.md shows it.
sed -n '/^twice(/p; /^print_(/p; /^scale_all_(/p; /^upd_(/p' docs/spec-format.md >"$tmp/graph.txt"
run check_graph 0 "$wb" check "$tmp/graph.txt"
has check_graph.out "$(sed -n '/^twice  (doc)/,/^```/p' docs/spec-format.md | sed -n 2,3p)" \
    "$(sed -n '/^upd_  (doc)/,/^```/p' docs/spec-format.md | sed -n 2,3p)" \
    "$(sed -n '/^scale_all_  (doc)/,/^```/p' docs/spec-format.md | sed -n 2,3p)" \
    '  graph      2 args: 1 effect token, x' \
    '             2 values: 1 effect token, 1 return, 0 intermediate bases' \
    "             1  y  Tensor      in     wb_tensor *  duplicate of arg 0 'x'"
run check_graph_json 0 "$wb" check --json "$tmp/graph.txt"
has check_graph_json.out '"mutation": "data+metadata"}' '"duplicate_of": 0}' \
    '"effect_tokens": 0, "functional_rng": false, "graph_args": [0, 2], "synthetic_bases": [], "updated_bases": [], "updated": [0], "outputs": 1, "intermediate_bases": 0, "new_views": [], "values": 2}' \
    '"effect_tokens": 1, "functional_rng": false, "graph_args": [0], "synthetic_bases": [], "updated_bases": [], "updated": [], "outputs": 1, "intermediate_bases": 0, "new_views": [], "values": 2}' \
    '"elements": 2, "first_output": 0, "elementwise": true}' \
    '"graph_args": [0, 1, 2], "synthetic_bases": [], "updated_bases": [], "updated": [0, 1], "outputs": 2, "intermediate_bases": 0, "new_views": [], "values": 4}'
# What each index counts, as docs/cli.md shows it: arguments, or spec
# inputs, which a list of known length makes more of.
sed -n '/^<!-- json-indices -->/,/^```$/p' docs/cli.md | sed '1,2d;$d' >"$tmp/indices.md"
sed -n 1p "$tmp/indices.md" >"$tmp/indices.txt"
sed -n 2p "$tmp/indices.md" >"$tmp/indices_want.out"
run check_indices 0 "$wb" check --json "$tmp/indices.txt"
lines check_indices.out 1
same check_indices.out indices_want.out
# A synthetic base mutated in the graph has no updated value; one mutated
# after it comes first.
printf 'g(Tensor(a!) x [in_graph], Tensor(b) y [aliases=x], Tensor(c!) z) -> Tensor with keep_input_mutations\nh(Tensor(a!) x, Tensor(b) y [aliases=x], Tensor(c!) z) -> Tensor\n' >"$tmp/bases.txt"
run check_bases_json 0 "$wb" check --json "$tmp/bases.txt"
has check_bases_json.out \
    '"synthetic_bases": [[0, 1]], "updated_bases": [], "updated": [2], "outputs": 1, "intermediate_bases": 0, "new_views": [], "values": 2}' \
    '"synthetic_bases": [[0, 1]], "updated_bases": [0], "updated": [2], "outputs": 1, "intermediate_bases": 0, "new_views": [], "values": 3}'
# A member returned itself is a view of its synthetic base.
printf 'm(Tensor(a!) x, Tensor(b) y [aliases=x]) -> Tensor(b) [is_input]\n' >"$tmp/member.txt"
run check_member 0 "$wb" check "$tmp/member.txt"
has check_member.out "is_input of arg 1 'y', a view of its synthetic base"

# ---- emit ----------------------------------------------------------------
# A wrapper's source (wb_wrapper_source): the same text as `emit` prints.
run emit_decode 0 "$wb" emit --name decode_step $s
golden emit_decode.out emit_decode_step.c
lines emit_decode.err 0
run tier_decode 0 "$tier_source" "$(grep '^decode_step' $s | sed 's/#.*//')"
same emit_decode.out tier_decode.out
has emit_decode.out '#line 1 "decode_step"' 'wb_generated('
if cc -std=c11 -fsyntax-only -x c "$tmp/emit_decode.out" 2>"$tmp/cc.err"; then
    pass
else
    fail "the emitted C does not compile: $(head -5 "$tmp/cc.err")"
fi
# What the tcc tier compiles: libtcc's branch of every run, no banner or
# step comments, the same #line directives; C any compiler takes.
run emit_libtcc 0 "$wb" emit --libtcc --name decode_step $s
has emit_libtcc.out '#line 1 "decode_step"' 'wb_generated('
lacks emit_libtcc.out '__TINYC__'
lacks emit_libtcc.out 'Generated by wrapbake'
lacks emit_libtcc.out '/* the call:'
if cc -std=c11 -fsyntax-only -x c "$tmp/emit_libtcc.out" 2>"$tmp/cc.err"; then
    pass
else
    fail "libtcc's text does not compile: $(head -5 "$tmp/cc.err")"
fi
run usage_emit_libtcc_aot 2 "$wb" emit --aot --libtcc -o "$tmp/x" $s
has usage_emit_libtcc_aot.err 'emit --aot: --libtcc does not apply'
# A spec written over lines, from standard input, holding only it.
sed -n '/^fwd(/,/grad_at_end/p' $s >"$tmp/fwd.txt"
run_in "$tmp/fwd.txt" emit_fwd_stdin 0 "$wb" emit -
run emit_fwd 0 "$wb" emit -n fwd $s
same emit_fwd_stdin.out emit_fwd.out
run tier_fwd 0 "$tier_source" "$(sed 's/#.*//' "$tmp/fwd.txt")"
same emit_fwd.out tier_fwd.out
# A base name picks its one overload.
run emit_base 0 "$wb" emit --name add_ $s
has emit_base.out "from spec 'add_.Tensor'"
# NAME.default picks the spec without an overload among its overloads.
printf 'abs(Tensor self) -> Tensor\nabs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n' >"$tmp/abs.txt"
run emit_many_abs 1 "$wb" emit --name abs "$tmp/abs.txt"
has emit_many_abs.err "several specs in $tmp/abs.txt are named 'abs'"
run emit_default 0 "$wb" emit --name abs.default "$tmp/abs.txt"
has emit_default.out "from spec 'abs'"
# Every spec a name picks is listed with its own name.
printf '# ops\n\n\naten::mul.Tensor(Tensor self, Tensor other) -> Tensor\nmyops::mul.Tensor(Tensor self, Tensor other) -> Tensor\n' >"$tmp/mul.txt"
run emit_many_mul 1 "$wb" emit -n mul.Tensor "$tmp/mul.txt"
has emit_many_mul.err "several specs in $tmp/mul.txt are named 'mul.Tensor':" \
    "  $tmp/mul.txt:4: aten::mul.Tensor" "  $tmp/mul.txt:5: myops::mul.Tensor"
lines emit_many_mul.err 3
# Several specs and no --name: a usage error that lists them.
run emit_unnamed 2 "$wb" emit $s
has emit_unnamed.err 'holds 26 specs; pick one with --name' \
    'tests/cli/specs.txt:34: mul.Tensor'
lines emit_unnamed.out 0
run emit_nosuch 1 "$wb" emit --name nosuch $s
has emit_nosuch.err "no spec in tests/cli/specs.txt is named 'nosuch'"
run emit_unwrappable 1 "$wb" emit --name cat $s
lines emit_unwrappable.out 0
run emit_malformed 1 "$wb" emit --name f $s
has emit_malformed.err 'tests/cli/specs.txt:29:24: expected'
run emit_failing 1 "$wb" emit --name leaky_ $s
has emit_failing.err "tests/cli/specs.txt:31:22: parameter 0 'x': attribute 'in_graph' needs"
lines emit_failing.out 0

# ---- emit --aot -------------------------------------------------------------
# The ahead-of-time files of one spec, for review; tests/aot/run.sh builds,
# links and runs such files.  The allowlist skips the malformed lines.
printf 'decode_step\n' >"$tmp/aot_allow.txt"
run emit_aot 0 "$wb" emit --aot -o "$tmp/aot" -a "$tmp/aot_allow.txt" $s
lines emit_aot.out 3
golden aot/wb_aot.h aot_wb_aot.h
golden aot/wb_aot.c aot_wb_aot.c
golden aot/wb_aot_decode_step_0.c aot_wb_aot_decode_step_0.c
lines emit_aot.err 0
# The graph's file is the emitter's C for the spec, under a name of its own
# and without #line directives, after a banner.
sed -n '/^ \* Generated by wrapbake .* from spec/,$p' "$tmp/aot/wb_aot_decode_step_0.c" >"$tmp/aot_body.out"
grep -v '^#line' "$tmp/emit_decode.out" | sed -n '/^ \* Generated by wrapbake .* from spec/,$p' |
    sed 's/wb_generated(/wb_aot_decode_step_0(/' >"$tmp/emit_body.out"
same aot_body.out emit_body.out

# The output directory is created, but not its parent.
run emit_aot_noparent 1 "$wb" emit --aot -o "$tmp/no/such" "$tmp/lf.txt"
has emit_aot_noparent.err "cannot create the directory $tmp/no/such: " '(its parent must exist)'
lines emit_aot_noparent.out 0

# A file's NAME is cut to as many bytes as docs/aot.md says.
cut=$(sed -n 's/.*cut to its first \([0-9]*\) bytes.*/\1/p' docs/aot.md)
printf 'aten::a_very_long_operator_name_for_the_file.overload(Tensor x) -> Tensor\n' >"$tmp/long.txt"
run emit_aot_long 0 "$wb" emit --aot -o "$tmp/aot_long" "$tmp/long.txt"
long=$(printf 'aten__a_very_long_operator_name_for_the_file_overload' | cut -c "1-${cut:-0}")
has emit_aot_long.out "$tmp/aot_long/wb_aot_${long}_0.c"
lines emit_aot_long.out 3

# ---- entries that do not close ----------------------------------------------
# An unclosed bracket ends its entry at the next unindented line, so the
# specs after it are still checked; continuation lines are indented or start
# with ')', ']' or '->'.  A UTF-8 byte order mark is not part of a spec.
printf 'f(Tensor x -> Tensor\ng(Tensor x) -> Tensor\nh(Tensor x,\n  Tensor y\n) -> Tensor\n' >"$tmp/open.txt"
run check_open 1 "$wb" check --json "$tmp/open.txt"
lines check_open.out 3
has check_open.out '"name": "g", "ok": true' '"name": "h", "ok": true'
has check_open.out "open.txt:1:12: expected ',' or ')' after parameter 0 'x'"
# After its brackets close, a spec goes on where it cannot end (after the
# arrow, a comma or `with`) and onto a line that starts with what no spec
# starts with (the arrow, attributes, `with`); indented specs stay apart.
printf 'a(Tensor x)\n    -> Tensor\nb(Tensor x) ->\n  Tensor\n  [requires_grad]\nc(Tensor x) -> Tensor\n    with training\nd(Tensor x) -> Tensor with training,\n    grad_at_end=on\n  e(Tensor x) -> Tensor\n  f(Tensor x) -> Tensor\n' >"$tmp/wrapped.txt"
run check_wrapped 0 "$wb" check --json "$tmp/wrapped.txt"
lines check_wrapped.out 6
has check_wrapped.out '"name": "a", "ok": true' '"name": "b", "ok": true' \
    '"name": "c", "ok": true' '"name": "d", "ok": true' \
    '"name": "e", "ok": true' '"name": "f", "ok": true'
run emit_wrapped 0 "$wb" emit --name c "$tmp/wrapped.txt"
has emit_wrapped.out 'training: grad mode on during the call'
printf '\357\273\277k(Tensor x) -> Tensor\n' >"$tmp/bom.txt"
run check_bom 0 "$wb" check --json "$tmp/bom.txt"
has check_bom.out '{"name": "k", "ok": true'

# ---- YAML tags ---------------------------------------------------------------
# An op tagged inplace_view changes its arguments' views, not their data.
printf -- '- func: transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)\n  tags: inplace_view\n- func: unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)\n  tags: [core, inplace_view]\n- func: add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)\n  tags: core\n' >"$tmp/tags.yaml"
run check_tags 0 "$wb" check "$tmp/tags.yaml"
has check_tags.out 'wb_tensor *  metadata mutation'
run emit_tags 0 "$wb" emit --name transpose_ "$tmp/tags.yaml"
has emit_tags.out 'wb_rt_prep_meta('
run emit_tags_data 0 "$wb" emit --name add_.Tensor "$tmp/tags.yaml"
has emit_tags_data.out 'wb_rt_prep_data('
# The tag joins whatever `with` clause the text has: none but a default that
# says "with", one on a line of its own, or one that already names it.
printf -- '- func: wrapped_(Tensor(a!) self, str how="with care") -> Tensor(a!)\n  tags: inplace_view\n- func: |-\n    trained_(Tensor(a!) self) -> Tensor(a!)\n    with training\n  tags: inplace_view\n- func: viewed_(Tensor(a!) self) -> Tensor(a!) with inplace_view\n  tags: [inplace_view]\n' >"$tmp/tags_with.yaml"
run check_tags_with 0 "$wb" check "$tmp/tags_with.yaml"
has check_tags_with.out '3 specs: 3 wrappable, 0 not wrappable, 0 failed' \
    'default "with care"'
if [ "$(grep -c 'metadata mutation' "$tmp/check_tags_with.out")" = 3 ]; then
    pass
else
    fail "check_tags_with.out: not every tagged spec has a metadata mutation"
fi
run emit_tags_with 0 "$wb" emit --name trained_ "$tmp/tags_with.yaml"
has emit_tags_with.out 'training: grad mode on' 'wb_rt_prep_meta('
# A text that ends in a comment takes the tag too, with a `with` clause or
# without one, in a block or a quoted value.
printf -- '- func: |-\n    v1_(Tensor(a!) self) -> Tensor(a!)   # a comment\n  tags: inplace_view\n- func: "v2_(Tensor(a!) self) -> Tensor(a!) # c"\n  tags: inplace_view\n- func: |-\n    v3_(Tensor(a!) self) -> Tensor(a!) with training # c\n  tags: inplace_view\n' >"$tmp/tags_comment.yaml"
run check_tags_comment 0 "$wb" check "$tmp/tags_comment.yaml"
has check_tags_comment.out '3 specs: 3 wrappable, 0 not wrappable, 0 failed'
if [ "$(grep -c 'metadata mutation' "$tmp/check_tags_comment.out")" = 3 ]; then
    pass
else
    fail "check_tags_comment.out: not every tagged spec has a metadata mutation"
fi

# ---- namespaces ----------------------------------------------------------------
# A schema's namespace is part of the name it is shown and picked by.
printf 'aten::add.Tensor(Tensor self, Tensor other) -> Tensor\nmyops::foo(Tensor(a!) x) -> ()\n' >"$tmp/ns.txt"
printf 'aten::add\n' >"$tmp/ns_allow.txt"
run check_ns_allow 0 "$wb" check --json --allowlist "$tmp/ns_allow.txt" "$tmp/ns.txt"
lines check_ns_allow.out 1
has check_ns_allow.out '{"name": "aten::add.Tensor", "ok": true'
lacks check_ns_allow.err 'takes no spec'
run emit_ns 0 "$wb" emit --name myops::foo "$tmp/ns.txt"
has emit_ns.out "from spec 'foo'"

# ---- usage -----------------------------------------------------------------
run usage_none 2 "$wb"
has usage_none.err 'no COMMAND given'
run usage_command 2 "$wb" frobnicate
has usage_command.err "unknown command 'frobnicate'"
run usage_option 2 "$wb" --frobnicate
has usage_option.err "unknown option '--frobnicate'"
run usage_check_option 2 "$wb" check --frobnicate $s
has usage_check_option.err "check: unknown option '--frobnicate'"
run usage_check_short 2 "$wb" check -x $s
has usage_check_short.err "check: unknown option '-x'"
run usage_check_value 2 "$wb" check --json=1 $s
has usage_check_value.err "check: option '--json' takes no argument"
run usage_emit_value 2 "$wb" emit --libtcc=x $s
has usage_emit_value.err "emit: option '--libtcc' takes no argument"
run usage_check_nofile 2 "$wb" check --json
has usage_check_nofile.err 'check: no FILE given'
run usage_allow_noarg 2 "$wb" check $s --allowlist
has usage_allow_noarg.err "option '--allowlist' needs an argument"
run usage_emit_two 2 "$wb" emit $s $s
has usage_emit_two.err 'emit: one FILE only, 2 given'
run help 0 "$wb" --help
has help.out 'Usage: wrapbake' 'check [--json] [--allowlist LIST] FILE...' \
    'emit [--name NAME] [--libtcc] FILE' 'emit --aot -o DIR [--prefix PREFIX] [--allowlist LIST] FILE...' \
    'if it ends in `->`, a comma or `with`' 'Exit status: 0' \
    'created when missing; its parent must'
run help_check 0 "$wb" check --help
same help.out help_check.out
run version 0 "$wb" --version
has version.out 'wrapbake 0.1.0'
lines version.out 1
run usage_version_extra 2 "$wb" --version extra
has usage_version_extra.err "wrapbake: --version takes no argument, 'extra' given"
lines usage_version_extra.out 0
run usage_help_extra 2 "$wb" --help extra
has usage_help_extra.err "wrapbake: --help takes no argument, 'extra' given"
lines usage_help_extra.out 0
run usage_help_command 2 "$wb" -h check
has usage_help_command.err "wrapbake: -h takes no argument, 'check' given"
lines usage_help_command.out 0
run usage_version_help 2 "$wb" --version --help
has usage_version_help.err "wrapbake: --version takes no argument, '--help' given"
lines usage_version_help.out 0
# In a bundle the letters after the first are what follows it.
run usage_version_bundle 2 "$wb" -Vh
has usage_version_bundle.err "wrapbake: -V takes no argument, '-h' given"
lines usage_version_bundle.out 0
run usage_help_bundle 2 "$wb" -hVx
has usage_help_bundle.err "wrapbake: -h takes no argument, '-Vx' given"
lines usage_help_bundle.out 0
run help_short 0 "$wb" -h
same help.out help_short.out

finish
