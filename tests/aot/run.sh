#!/bin/sh
# The ahead-of-time path end to end: `wrapbake emit --aot` on the specs of
# tests/aot/specs.txt, every file built warning-free by the system compiler
# (and by clang when it is installed), a program linked against
# libwrapbake.a without libtcc, its behaviour equal to the interpreter's and
# the tcc tier's on the same inputs, byte-identical regeneration, stale code
# refused, and the command's failures.
#
#   sh tests/aot/run.sh WRAPBAKE LIBWRAPBAKE
#
# $CC is the compiler (default cc) and $AOT_FLAGS extra flags for compiling
# and linking (the sanitizer flags of the build, say).  The last line
# printed is "N passed, N failed"; the exit status is 1 when any check
# failed.
set -u

abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

if [ $# -ne 2 ]; then
    echo "usage: $0 WRAPBAKE LIBWRAPBAKE" >&2
    exit 2
fi
wb=$(abs "$1")
lib=$(abs "$2")
cd "$(dirname "$0")/../.." || exit 2
cc=${CC:-cc}
flags=${AOT_FLAGS:-}
strict="-std=c11 -Wall -Wextra -Wpedantic -Werror"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wrapbake-aot.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() {
    failed=$((failed + 1))
    echo "FAIL: $*" >&2
}

# check NAME WANT_STATUS COMMAND...: runs COMMAND, output in $tmp/NAME.out
# and $tmp/NAME.err, and checks its exit status.
check() {
    name=$1 want=$2
    shift 2
    "$@" </dev/null >"$tmp/$name.out" 2>"$tmp/$name.err"
    status=$?
    if [ "$status" -eq "$want" ]; then
        pass
    else
        fail "$name: exit status $status, expected $want"
        head -20 "$tmp/$name.err" | sed 's/^/    /' >&2
    fi
    if grep -q 'Sanitizer' "$tmp/$name.err"; then
        fail "$name: sanitizer report"
        cat "$tmp/$name.err" >&2
    fi
}

# has FILE TEXT...: FILE (under $tmp) contains each TEXT.
has() {
    f=$1
    shift
    for text in "$@"; do
        if grep -qF -e "$text" "$tmp/$f"; then
            pass
        else
            fail "$f lacks '$text'"
            head -10 "$tmp/$f" | sed 's/^/    /' >&2
        fi
    done
}

# same A B: two files under $tmp are equal.
same() {
    if cmp -s "$tmp/$1" "$tmp/$2"; then
        pass
    else
        fail "$1 and $2 differ:"
        diff -u "$tmp/$1" "$tmp/$2" | head -30 >&2
    fi
}

specs=tests/aot/specs.txt
count=$(grep -c '^[a-z]' $specs)
gen=$tmp/gen

# ---- generate ----------------------------------------------------------------
check gen 0 "$wb" emit --aot -o "$gen" $specs
n=$(wc -l <"$tmp/gen.out" | tr -d ' ')
if [ "$n" -eq $((count + 2)) ]; then pass; else fail "gen listed $n files, expected $((count + 2))"; fi
has gen.out "$gen/wb_aot.h" "$gen/wb_aot.c" "$gen/wb_aot_add__Tensor_0.c" \
    "$gen/wb_aot_myops__scale__6.c" "$gen/wb_aot_aten__add_Tensor_12.c"
# Names reach identifiers only as [A-Za-z0-9_]; the spec text only inside
# comments and literals, escaped.
has gen/wb_aot_myops__scale__6.c 'int wb_aot_myops__scale__6(' \
    'mode="a*\/b?\x3f/"' 'Fingerprint '
has gen/wb_aot.c '"myops::scale_(Tensor(a!) x, float s, bool flag, str mode=\"a*/b?\?/\") -> Tensor(a!)",'

# ---- build: every file, warnings as errors, with each compiler --------------
for compiler in "$cc" clang; do
    command -v "${compiler%% *}" >/dev/null 2>&1 || {
        echo "aot: $compiler not installed; skipped"
        continue
    }
    ok=1
    for f in "$gen"/*.c; do
        if ! $compiler $strict -O2 -Iinclude -I"$gen" -c "$f" -o "$tmp/x.o" 2>"$tmp/build.err"; then
            ok=
            fail "$compiler does not build $(basename "$f") cleanly:"
            head -10 "$tmp/build.err" >&2
        fi
    done
    [ -n "$ok" ] && pass
done

# ---- link without libtcc, run, compare with the JIT tiers --------------------
# The ahead-of-time program names no JIT: it links with libwrapbake.a and
# libc alone, and holds no symbol of libtcc's.
check link_aot 0 $cc $strict -O2 $flags -D_POSIX_C_SOURCE=200809L -Iinclude \
    -I"$gen" -o "$tmp/aot" tests/aot/driver.c "$gen"/*.c "$lib" -lpthread -lm
if nm "$tmp/aot" | grep -qi 'tcc_'; then
    fail "the ahead-of-time program holds libtcc symbols:"
    nm "$tmp/aot" | grep -i 'tcc_' | head -5 >&2
else
    pass
fi
check link_jit 0 $cc $strict -O2 $flags -D_POSIX_C_SOURCE=200809L -DDRIVER_JIT \
    -Iinclude -I"$gen" -o "$tmp/jit" tests/aot/driver.c "$gen"/*.c "$lib" \
    -ldl -lpthread -lm
# The same driver on the JIT tiers pulls libtcc's objects (which
# libwrapbake.a carries, their names local) into the program, which shows
# the nm check above proves something.
if nm "$tmp/jit" | grep -qi ' t tcc_compile_string'; then
    pass
else
    fail "the JIT program holds no libtcc: the nm check proves nothing"
fi
check run_aot 0 "$tmp/aot"
check run_interp 0 "$tmp/jit" interp
check run_tcc 0 "$tmp/jit" tcc
same run_aot.out run_interp.out
same run_aot.out run_tcc.out
# Every graph ran, succeeded in the rounds meant to, and failed in the
# others as the interpreter does.
graphs=$(grep -c '^graph ' "$tmp/run_aot.out")
if [ "$graphs" -eq "$count" ]; then pass; else fail "run_aot ran $graphs graphs, expected $count"; fi
oks=$(grep -c 'round [01]: WB_OK' "$tmp/run_aot.out")
if [ "$oks" -eq $((2 * count)) ]; then pass; else fail "run_aot: $oks calls succeeded, expected $((2 * count))"; fi
has run_aot.out 'round 2: WB_ERR_GRAPH' 'out0=in0 ' 'graph 12 aten::add.Tensor'

# ---- byte-identical regeneration ---------------------------------------------
check regen 0 "$wb" emit --aot -o "$tmp/gen2" $specs
if diff -r "$gen" "$tmp/gen2" >"$tmp/regen.diff"; then
    pass
else
    fail "regenerated files differ:"
    head -20 "$tmp/regen.diff" >&2
fi
# Regenerating into the same directory leaves every file untouched, so a
# build does not recompile anything.
touch -d '2000-01-01' "$gen"/*
check regen_same 0 "$wb" emit --aot -o "$gen" $specs
if [ -z "$(find "$gen" -type f -newer "$specs")" ]; then pass; else fail "regenerating rewrote unchanged files"; fi
same gen.out regen_same.out

# ---- stale code is refused -------------------------------------------------------
# The spec of mul.Tensor changes (other becomes mutated) but its code is not
# regenerated: making its wrapper fails and says what to do.
mkdir "$tmp/stale"
cp "$gen"/* "$tmp/stale/"
sed 's/"mul.Tensor(Tensor self, Tensor other) -> Tensor"/"mul.Tensor(Tensor self, Tensor(a!) other) -> Tensor"/' \
    "$gen/wb_aot.c" >"$tmp/stale/wb_aot.c"
if cmp -s "$gen/wb_aot.c" "$tmp/stale/wb_aot.c"; then fail "the stale edit did not apply"; else pass; fi
check link_stale 0 $cc $strict $flags -D_POSIX_C_SOURCE=200809L -Iinclude \
    -I"$tmp/stale" -o "$tmp/stale-aot" tests/aot/driver.c "$tmp/stale"/*.c \
    "$lib" -lpthread -lm
check verify_ok 0 "$tmp/aot" --verify
check verify_stale 1 "$tmp/stale-aot" --verify
has verify_stale.out "spec 'mul.Tensor': the ahead-of-time code was generated for fingerprint" \
    'regenerate it with `wrapbake emit --aot`'

# ---- a prefix, an allowlist, YAML input -----------------------------------------
printf 'decode_step\nmul\n' >"$tmp/allow.txt"
check prefix 0 "$wb" emit --aot -o "$tmp/pre" --prefix my_graphs -a "$tmp/allow.txt" $specs
has prefix.out "$tmp/pre/my_graphs.h" "$tmp/pre/my_graphs_decode_step_0.c" \
    "$tmp/pre/my_graphs_mul_Tensor_1.c"
has pre/my_graphs.h '#define MY_GRAPHS_GRAPHS 2' 'wb_status my_graphs_new(int graph'
# Two units with their own prefixes live in one program.
check link_two 0 $cc $strict $flags -D_POSIX_C_SOURCE=200809L -Iinclude \
    -I"$gen" -o "$tmp/two" tests/aot/driver.c "$gen"/*.c "$tmp/pre"/*.c \
    "$lib" -lpthread -lm
# The real schemas of native_functions.yaml that can be wrapped (an
# allowlist of them, without the bases that also name a list overload):
# generated, and checked by the compiler.
"$wb" check --json tests/cli/native_functions.yaml >"$tmp/nf.json" 2>/dev/null
grep '"wrappable": false' "$tmp/nf.json" | cut -d'"' -f4 | sed 's/\..*//' | sort -u >"$tmp/nf_bad"
grep '"wrappable": true' "$tmp/nf.json" | cut -d'"' -f4 | grep -vxFf "$tmp/nf_bad" >"$tmp/nf_allow"
check yaml 0 "$wb" emit --aot -o "$tmp/nf" -a "$tmp/nf_allow" tests/cli/native_functions.yaml
if [ "$(wc -l <"$tmp/yaml.out")" -gt 400 ]; then pass; else fail "native_functions.yaml gave $(wc -l <"$tmp/yaml.out") files"; fi
if (cd "$tmp/nf" && ls ./*.c | xargs -P2 -n 64 $cc $strict -I"$OLDPWD/include" -I. -fsyntax-only) 2>"$tmp/nf.err"; then
    pass
else
    fail "the native_functions.yaml code does not compile cleanly:"
    head -10 "$tmp/nf.err" >&2
fi

# A file of an earlier run with more specs draws a warning.
printf 'int x;\n' >"$tmp/pre/my_graphs_gone_7.c"
check leftover 0 "$wb" emit --aot -o "$tmp/pre" --prefix my_graphs -a "$tmp/allow.txt" $specs
has leftover.err "my_graphs_gone_7.c is not one of the files generated now"

# A spec whose name is one the dispatch unit also forms from the prefix.
printf 'text(Tensor(a!) x) -> Tensor(a!)\n' >"$tmp/text.txt"
check text_gen 0 "$wb" emit --aot -o "$tmp/text" "$tmp/text.txt"
check text_build 0 sh -c "cd '$tmp/text' && $cc $strict -I'$PWD/include' -I. -fsyntax-only ./*.c"

# ---- failures: reported, nothing written -------------------------------------------
check bad_spec 1 "$wb" emit --aot -o "$tmp/bad" tests/cli/specs.txt
has bad_spec.err "tests/cli/specs.txt:21: spec 'index.Tensor' cannot be wrapped" \
    'tests/cli/specs.txt:29:24: expected' 'nothing written to'
if [ -e "$tmp/bad" ]; then fail "a failed run created its directory"; else pass; fi
printf 'f(Tensor x) -> Tensor\nf(Tensor y) -> Tensor\n' >"$tmp/dup.txt"
check dup 1 "$wb" emit --aot -o "$tmp/dup" "$tmp/dup.txt"
has dup.err "dup.txt:2: a second spec named 'f'; the first is at"
# Every problem at once: a spec that cannot be wrapped and two names.
printf 'f(Tensor x) -> Tensor\nf(Tensor y) -> Tensor\ng(Tensor[] x) -> Tensor\n' >"$tmp/dup2.txt"
check dup_and_bad 1 "$wb" emit --aot -o "$tmp/dup2" "$tmp/dup2.txt"
has dup_and_bad.err "dup2.txt:2: a second spec named 'f'; the first is at" \
    "dup2.txt:3: spec 'g' cannot be wrapped" '2 problems; nothing written to'
printf '# nothing\n' >"$tmp/empty.txt"
check empty 1 "$wb" emit --aot -o "$tmp/empty" "$tmp/empty.txt"
has empty.err 'no spec to generate code for'
check no_dir 2 "$wb" emit --aot $specs
has no_dir.err 'no output directory (-o DIR)'
check bad_prefix 2 "$wb" emit --aot -o "$tmp/x" --prefix 9lives $specs
has bad_prefix.err "the prefix '9lives' is not a C identifier"
# Prefixes whose names or header would be the library's, the C
# library's, or a header's the files include.
for p in wb wb_spec WRAPBAKE stdint Dlpack _x; do
    check "lib_prefix_$p" 2 "$wb" emit --aot -o "$tmp/x" --prefix "$p" $specs
done
has lib_prefix_wb.err "the prefix 'wb' names the library's own (wb_*)"
has lib_prefix_wb_spec.err "the prefix 'wb_spec' names the library's own"
has lib_prefix_WRAPBAKE.err "would make a header that hides one the files include"
has lib_prefix_stdint.err "would make a header that hides one the files include"
has lib_prefix_Dlpack.err "would make a header that hides one the files include"
has lib_prefix__x.err "starts with '_'"
if [ -e "$tmp/x" ]; then fail "a refused prefix created its directory"; else pass; fi
# A file that cannot be written fails the run before any file changes:
# the header and the unit of an earlier run stay as they were.
printf 'add_one_(Tensor(a!) x) -> Tensor(a!)\n' >"$tmp/one.txt"
check one 0 "$wb" emit --aot -o "$tmp/one" "$tmp/one.txt"
cp "$tmp/one/wb_aot.c" "$tmp/one_unit.c"
printf 'add_one_(Tensor(a!) x) -> Tensor(a!)\nadd_two_(Tensor(a!) x) -> Tensor(a!)\n' >"$tmp/two.txt"
mkdir "$tmp/one/wb_aot_add_two__1.c"
check unwritable 1 "$wb" emit --aot -o "$tmp/one" "$tmp/two.txt"
has unwritable.err "cannot write $tmp/one/wb_aot_add_two__1.c: it is not a file"
if [ -s "$tmp/unwritable.out" ]; then fail "a failed run printed paths"; else pass; fi
if cmp -s "$tmp/one/wb_aot.c" "$tmp/one_unit.c" &&
    [ -z "$(find "$tmp/one" -name '.*')" ]; then
    pass
else
    fail "a failed run changed the unit or left a temporary file"
fi
# Files are staged under names of their own, created afresh: a link or a
# FIFO planted at a name a run could be expected to stage at (.NAME.tmp,
# say) is neither followed nor opened, and is left as it was.
printf 'victim\n' >"$tmp/victim"
mkdir "$tmp/plant"
for f in wb_aot.h wb_aot.c wb_aot_add_one__0.c; do
    ln -s "$tmp/victim" "$tmp/plant/.$f.tmp"
done
check planted_link 0 "$wb" emit --aot -o "$tmp/plant" "$tmp/one.txt"
if [ "$(cat "$tmp/victim")" = victim ] && [ -L "$tmp/plant/.wb_aot.h.tmp" ] &&
    [ -f "$tmp/plant/wb_aot.h" ] && [ ! -L "$tmp/plant/wb_aot.h" ] &&
    cmp -s "$tmp/plant/wb_aot.c" "$tmp/one_unit.c"; then
    pass
else
    fail "a link at a staging name was followed"
fi
mkdir "$tmp/fifo"
mkfifo "$tmp/fifo/.wb_aot.h.tmp"
check planted_fifo 0 timeout 30 "$wb" emit --aot -o "$tmp/fifo" "$tmp/one.txt"
if [ -p "$tmp/fifo/.wb_aot.h.tmp" ] && [ -f "$tmp/fifo/wb_aot.h" ]; then pass; else fail "a FIFO at a staging name was opened"; fi
# An output that is a symbolic link, even to a file, or that is not a
# regular file is refused, and the run changes nothing: the link and its
# target stay, and no output is read through it.
mkdir "$tmp/link"
cp "$tmp/one_unit.c" "$tmp/link/wb_aot.c"
ln -s "$tmp/victim" "$tmp/link/wb_aot.h"
check output_link 1 "$wb" emit --aot -o "$tmp/link" "$tmp/two.txt"
has output_link.err "cannot write $tmp/link/wb_aot.h: it is a symbolic link"
if [ -s "$tmp/output_link.out" ]; then fail "a refused link printed paths"; else pass; fi
if [ "$(cat "$tmp/victim")" = victim ] && [ -L "$tmp/link/wb_aot.h" ] &&
    cmp -s "$tmp/link/wb_aot.c" "$tmp/one_unit.c" &&
    [ -z "$(find "$tmp/link" -name '.*')" ]; then
    pass
else
    fail "a run with a link for an output changed a file"
fi
mkdir "$tmp/fifo_out"
mkfifo "$tmp/fifo_out/wb_aot.h"
check output_fifo 1 timeout 30 "$wb" emit --aot -o "$tmp/fifo_out" "$tmp/one.txt"
has output_fifo.err "cannot write $tmp/fifo_out/wb_aot.h: it is not a file"
if [ -p "$tmp/fifo_out/wb_aot.h" ] && [ ! -e "$tmp/fifo_out/wb_aot.c" ] &&
    [ -z "$(find "$tmp/fifo_out" -name '.*')" ]; then
    pass
else
    fail "a run with a FIFO for an output changed a file"
fi
check aot_name 2 "$wb" emit --aot -o "$tmp/x" --name mul $specs
check output_alone 2 "$wb" emit -o "$tmp/x" $specs
has output_alone.err 'go with --aot'
printf 'x' >"$tmp/afile"
check not_dir 1 "$wb" emit --aot -o "$tmp/afile" $specs
has not_dir.err 'is not a directory'

# ---- the example of docs/aot.md ---------------------------------------------------
sed -n '/^<!-- aot-specs -->/,/^```$/p' docs/aot.md | sed '1,2d;$d' >"$tmp/graphs.txt"
sed -n '/^<!-- aot-example -->/,/^```$/p' docs/aot.md | sed '1,2d;$d' >"$tmp/main.c"
check readme_gen 0 "$wb" emit --aot -o "$tmp/readme" "$tmp/graphs.txt"
has readme_gen.out "$tmp/readme/wb_aot_add_one__0.c"
check readme_build 0 $cc $strict -O2 $flags -Iinclude -I"$tmp/readme" -o "$tmp/readme-main" \
    "$tmp/main.c" "$tmp/readme"/*.c "$lib" -lpthread -lm
check readme_run 0 "$tmp/readme-main"
has readme_run.out 'x[0] = 3 after 3 calls, version 3, tier aot'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
