#!/bin/sh
# Conformance with PyTorch: tests/torch/gen.py runs real ATen ops eagerly
# with Debian's python3-torch and writes what each did as cases
# (docs/conformance.md); tests/torch/driver.c replays every case through
# wrapbake and compares what a caller observes.  The driver is built
# twice: plain, for the tiers interp, tcc and cc, and with the code
# `wrapbake emit --aot` generated from the cases' specs, for the tier aot.
#
#   sh tests/torch/run.sh WRAPBAKE LIBWRAPBAKE BUILD_DIR
#
# Everything it writes goes to BUILD_DIR/torch: cases.txt, specs.txt (the
# specs wrapbake accepts), aot/ (the generated code), driver and
# driver-aot.  $CC is the compiler (default cc) and $CFLAGS extra flags for
# compiling and linking (the sanitizer flags of the build, say).  Without
# python3-torch the run is skipped, saying so, with status 0; otherwise
# the status is 1 when any check failed or a step could not run.
set -u

abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

if [ $# -ne 3 ]; then
    echo "usage: $0 WRAPBAKE LIBWRAPBAKE BUILD_DIR" >&2
    exit 2
fi
wb=$(abs "$1")
lib=$(abs "$2")
out=$(abs "$3")/torch
cd "$(dirname "$0")/../.." || exit 2
cc=${CC:-cc}
flags=${CFLAGS:-}
strict="-std=c11 -Wall -Wextra -Werror"
python=/usr/bin/python3

if ! $python -c 'import torch' >/dev/null 2>&1; then
    echo 'torch conformance: SKIPPED: python3-torch is not installed' \
        '(apt-get install python3-torch)'
    exit 0
fi

die() {
    echo "torch conformance: $*" >&2
    exit 1
}

mkdir -p "$out" || die "cannot make $out"
$python tests/torch/gen.py "$out/cases.txt" || die "gen.py failed"
$cc $strict $flags -Iinclude -o "$out/driver" tests/torch/driver.c "$lib" \
    -ldl -lpthread -lm || die "the driver does not build"

# The ahead-of-time code: one graph for each spec wrapbake accepts (a
# refused spec would stop `wrapbake emit --aot` altogether), generated
# afresh so that no file of an earlier run is built in.
"$out/driver" --specs "$out/cases.txt" >"$out/specs.txt" ||
    die "driver --specs failed"
rm -rf "$out/aot"
aot=
if [ -s "$out/specs.txt" ]; then
    "$wb" emit --aot -o "$out/aot" "$out/specs.txt" >/dev/null ||
        die "wrapbake emit --aot failed"
    $cc $strict $flags -DDRIVER_AOT -Iinclude -I"$out/aot" \
        -o "$out/driver-aot" tests/torch/driver.c "$out/aot"/*.c "$lib" \
        -ldl -lpthread -lm || die "the aot driver does not build"
    aot=1
else
    echo "torch conformance: no spec wrapbake accepts; tier aot skipped"
fi

status=0
"$out/driver" "$out/cases.txt" interp tcc cc || status=1
if [ -n "$aot" ]; then
    "$out/driver-aot" "$out/cases.txt" aot || status=1
fi
exit $status
