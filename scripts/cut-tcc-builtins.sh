#!/bin/sh
# cut-tcc-builtins.sh TCCPP_O -- empties the built-in declarations that
# libtcc reads at the start of every compile; prints a C header that says
# whether it did (WB_TCC_BUILTINS_CUT, for the tests).
#
# Every compile of Debian's libtcc opens with a preamble: the target's
# defines (__x86_64__, __SIZE_TYPE__, __TINYC__, ...), formatted by
# tccpp.c, then a fixed text kept as one string in tccpp.o: the va_list
# typedef and macros, and nineteen declarations of __builtin_memcpy and
# its kin, made by token pasting.  Generated code uses none of them, and
# reading that text is nearly half of what compiling a one-line function
# costs (487k of 1,056k instructions).  libtcc appends the string up to
# its NUL, so a NUL over its first byte leaves the defines alone.
#
# The string is cut only where it is exactly the text this script knows
# (its bytes' SHA-256, with a NUL on either side); any other libtcc is
# left as it is, which costs time and nothing else.
set -eu

obj=$1
len=2226
sum=5d5595bdf502f1a024a027d2b8f07594ff60edbff3bd465a41cf56dd55c1d418

byte() { od -An -tx1 -j "$1" -N1 "$obj" | tr -d ' \n'; }
verdict() {
    echo "/* Written by scripts/cut-tcc-builtins.sh: whether libtcc's"
    echo "   built-in declarations were cut from $obj. */"
    echo "#define WB_TCC_BUILTINS_CUT $1"
}

if [ ! -f "$obj" ]; then
    echo "cut-tcc-builtins: no $obj in this libtcc; nothing cut" >&2
    verdict 0
    exit 0
fi
off=$(grep -obUaF 'typedef struct{' "$obj" | cut -d: -f1)
if [ "$(echo "$off" | wc -w)" -eq 1 ] &&
   [ "$(byte $((off - 1)))" = 00 ] && [ "$(byte $((off + len)))" = 00 ] &&
   [ "$(dd if="$obj" bs=1 skip="$off" count="$len" 2>/dev/null |
        sha256sum | cut -d' ' -f1)" = "$sum" ]; then
    printf '\0' | dd of="$obj" bs=1 seek="$off" conv=notrunc 2>/dev/null
    verdict 1
else
    echo "cut-tcc-builtins: $obj does not hold the built-in text of" \
         "Debian bookworm's libtcc; nothing cut" >&2
    verdict 0
fi
