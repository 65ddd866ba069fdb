#!/bin/sh
# libwrapbake.a in use (static.c): a program that links it beside libtcc
# of its own builds with -ltcc on either side of the archive, and each
# runs its own code; one with globals named as libtcc's inside keeps them.
# Also: the archive defines no global name without wb_ (tests/exports.sh).
#
#   sh tests/shared/static.sh LIBWRAPBAKE_A
#
# $CC compiles (default cc).  Prints a line per check and a summary; the
# status is 1 when any failed.
set -u
if [ $# -ne 1 ]; then
    echo "usage: $0 LIBWRAPBAKE_A" >&2
    exit 2
fi
cd "$(dirname "$0")/../.." || exit 2
lib=$1
suite=static
. tests/shared/checks.sh

expect "1 passed, 0 failed" sh tests/exports.sh "$lib"
for order in "$lib -ltcc" "-ltcc $lib"; do
    if $cc -std=c11 -DOWN_LIBTCC -Iinclude -o "$tmp/static" \
            tests/shared/static.c $order -ldl -lpthread -lm; then
        expect "twice(21) = 42" "$tmp/static"
        expect "tcc    x[0] = 3, version 3, served by tcc" "$tmp/static"
    else
        bad "static.c does not link as: $order"
    fi
done
if $cc -std=c11 -Iinclude -o "$tmp/names" tests/shared/static.c "$lib" \
        -ldl -lpthread -lm; then
    expect "file 7, tok 5, next(1) 2" "$tmp/names"
    expect "tcc    x[0] = 3, version 3, served by tcc" "$tmp/names"
else
    bad "static.c, with libtcc's names, does not link"
fi
summary
