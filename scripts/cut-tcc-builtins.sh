#!/bin/sh
# cut-tcc-builtins.sh TCCPP_O -- empties the built-in declarations that
# libtcc reads at the start of every compile.
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

off=$(grep -obUaF 'typedef struct{' "$obj" | cut -d: -f1)
if [ "$(echo "$off" | wc -w)" -eq 1 ] &&
   [ "$(byte $((off - 1)))" = 00 ] && [ "$(byte $((off + len)))" = 00 ] &&
   [ "$(dd if="$obj" bs=1 skip="$off" count="$len" 2>/dev/null |
        sha256sum | cut -d' ' -f1)" = "$sum" ]; then
    printf '\0' | dd of="$obj" bs=1 seek="$off" conv=notrunc 2>/dev/null
else
    echo "cut-tcc-builtins: $obj holds a built-in text other than" \
         "Debian bookworm's; left as it is" >&2
fi
