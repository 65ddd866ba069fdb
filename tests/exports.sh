#!/bin/sh
# The names the library's objects export (global, default visibility) are
# exactly the public API -- the WB_API declarations of include/wrapbake.h --
# and the helpers generated code links to (src/abi/helpers.def), and
# every one of those is defined; no other name is global, hidden or not;
# no test hook (wb_test_*) is in them at all.  Usage: exports.sh OBJECT or
# ARCHIVE...
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wrapbake-exports.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

readelf -Ws --wide "$@" |
    awk '$5 == "GLOBAL" && $6 == "DEFAULT" && $7 != "UND" { print $8 }' |
    sort -u >"$tmp/exported"
# Declarations may span lines: join the header, then take each name
# between WB_API and its opening parenthesis.
tr '\n' ' ' <include/wrapbake.h | grep -oE 'WB_API [^;(]*\(' |
    grep -oE 'wb_[a-z0-9_]+ *\($' | tr -d ' (' >"$tmp/api"
tr '\n' ' ' <src/abi/helpers.def |
    grep -oE 'WB_ABI\([^,]*,[^,]*, *[a-z0-9_]+' |
    sed 's/.*, *//' | grep '^wb_' >"$tmp/abi"
sort -u "$tmp/api" "$tmp/abi" >"$tmp/allowed"

bad=0
extra=$(comm -23 "$tmp/exported" "$tmp/allowed")
if [ -n "$extra" ]; then
    echo "exports: exported but neither WB_API nor in helpers.def:" $extra
    bad=1
fi
missing=$(comm -13 "$tmp/exported" "$tmp/allowed")
if [ -n "$missing" ]; then
    echo "exports: declared but not exported:" $missing
    bad=1
fi
# No other name is global, even hidden: a static link sees hidden names
# too, and would take libtcc's (file, next, tcc_new...) for the program's.
# Names in __, reserved to the toolchain, are its own (a sanitizer's
# __odr_asan.NAME).
foreign=$(readelf -Ws --wide "$@" |
    awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" &&
         $8 !~ /^wb_/ && $8 !~ /^__/ { print $8 }' | sort -u)
if [ -n "$foreign" ]; then
    echo "exports: global names without wb_:" $foreign
    bad=1
fi
# Test hooks are compiled into the test build alone.
hooks=$(readelf -Ws --wide "$@" |
    awk '$7 != "UND" && $8 ~ /^wb_test_/ { print $8 }' | sort -u)
if [ -n "$hooks" ]; then
    echo "exports: test hooks in the library:" $hooks
    bad=1
fi
n=$(wc -l <"$tmp/exported")
if [ $bad -eq 0 ]; then
    echo "exports: $n names, each WB_API or a helper, no test hook:" \
        "1 passed, 0 failed"
else
    echo "exports: 0 passed, 1 failed"
fi
exit $bad
