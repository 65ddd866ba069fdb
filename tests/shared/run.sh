#!/bin/sh
# libwrapbake.so in use: a program linked against it runs the README's
# graph on every tier (tiers.c, with the aot code `wrapbake emit --aot`
# writes), a plugin that links it is dlopen'ed, runs a tcc wrapper and an
# auto one, and is unloaded while the thread that ran it lives on
# (plugin.c, host.c), and Python loads it with ctypes and wraps a Python
# graph (ctypes_test.py).  Also: no text relocation, the soname, the API
# and helpers alone exported (tests/exports.sh).
#
#   sh tests/shared/run.sh WRAPBAKE LIBWRAPBAKE_SO
#
# LIBWRAPBAKE_SO is the library as built, libwrapbake.so.N, with the link
# libwrapbake.so beside it.
# $CC compiles (default cc).  Prints a line per check and a summary; the
# status is 1 when any failed.
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 WRAPBAKE LIBWRAPBAKE_SO" >&2
    exit 2
fi
cd "$(dirname "$0")/../.." || exit 2
wb=$1
so=$2
lib=$(dirname "$so")
suite=shared
. tests/shared/checks.sh

[ -f "$so" ] || { echo "shared: no $so"; exit 1; }
name=$(basename "$so")
abi=$(sed -n 's/^#define WB_ABI_VERSION \([0-9]*\).*/\1/p' include/wrapbake.h)
expect "[libwrapbake.so.$abi]" sh -c "readelf -d '$so' | grep SONAME"
if readelf -d "$so" | grep -q TEXTREL; then bad "$name has text relocations"
else ok; fi
# It exports the public API and the helpers, nothing else: libtcc's
# names stay inside.
expect "1 passed, 0 failed" sh tests/exports.sh "$so"

run() { env LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }

# The README example, linked against the shared library.
sed -n '/^<!-- example -->/,/^```$/p' README.md | sed '1,2d;$d' >"$tmp/example.c"
if $cc -std=c11 -Iinclude -o "$tmp/example" "$tmp/example.c" -L"$lib" \
        -lwrapbake; then
    expect "x[0] = 3 after 3 calls, version 3" run "$tmp/example"
    expect "$name => $lib/$name" sh -c \
        "LD_LIBRARY_PATH='$lib' ldd '$tmp/example' | tr -s ' \t' ' '"
else
    bad "the README example does not link against $name"
fi

# Every tier, aot included.
echo 'add_one_(Tensor(a!) x) -> Tensor(a!) x' >"$tmp/graphs.txt"
if "$wb" emit --aot -o "$tmp/aot" "$tmp/graphs.txt" >/dev/null &&
    $cc -std=c11 -Iinclude -I"$tmp/aot" -o "$tmp/tiers" tests/shared/tiers.c \
        "$tmp"/aot/*.c -L"$lib" -lwrapbake; then
    expect "interp x[0] = 3, version 3" run "$tmp/tiers"
    expect "tcc    x[0] = 3, version 3" run "$tmp/tiers"
    expect "cc     x[0] = 3, version 3" run "$tmp/tiers"
    expect "auto   x[0] = 3, version 3" run "$tmp/tiers"
    expect "aot    x[0] = 3, version 3, served by aot" run "$tmp/tiers"
else
    bad "the tiers program does not build against $name"
fi

# A plugin that links the library, loaded by a host that does not.
if $cc -std=c11 -Iinclude -fPIC -shared -o "$tmp/plugin.so" \
        tests/shared/plugin.c -L"$lib" -lwrapbake &&
    $cc -std=c11 -o "$tmp/host" tests/shared/host.c -ldl -lpthread; then
    run "$tmp/host" "$tmp/plugin.so" >"$tmp/host.out" 2>&1
    expect "plugin: a tcc wrapper ran" cat "$tmp/host.out"
    # The library stays loaded (-z nodelete): its thread-exit destructor
    # and its promoter thread outlive the plugin that brought it.
    expect "plugin: unloaded; its thread exited" cat "$tmp/host.out"
else
    bad "the plugin or its host does not build"
fi

# Python's ctypes: a graph written in Python.
if [ -x /usr/bin/python3 ]; then
    expect "ctypes: x[0] = 3 after 3 calls, version 3, served by tcc" \
        /usr/bin/python3 tests/shared/ctypes_test.py "$so"
else
    echo "shared: ctypes: SKIPPED: no /usr/bin/python3"
fi

summary
