#!/bin/sh
# trim-libtcc.sh DIR -- cuts from Debian's libtcc, whose objects DIR
# holds, three texts that it reads at the start of every compile and
# generated code never needs; prints a C header that says which it cut
# (for the tests).
#
# 1. The built-in declarations.  Every compile opens with a preamble: the
#    target's defines (__x86_64__, __SIZE_TYPE__, __TINYC__, ...), which
#    libtcc.o writes, then a fixed text kept as one string in tccpp.o:
#    the va_list typedef and macros, and nineteen declarations of
#    __builtin_memcpy and its kin, made by token pasting, which read
#    __SIZE_TYPE__.  Reading it was nearly half of what compiling a
#    one-line function cost (487k of 1,056k instructions).  libtcc appends
#    the string up to its NUL, so a NUL over its first byte cuts it alone
#    (3 below cuts the defines).
#
# 2. The assembler's keywords.  tccpp_new enters every keyword of one
#    NUL-separated list into fresh hash tables, 1,011 of them; the 830
#    from ".byte" on are the assembler's directives, registers and
#    instructions, which only inline assembly and .S files use, and
#    generated code has neither.  The list ends at an empty string, so a
#    NUL over the '.' of ".byte" ends it after the C keywords, the
#    preprocessor's and the helpers' (whose token numbers, their places in
#    the list, are unchanged): 189k of the 572k instructions a one-line
#    function cost.  This libtcc then cannot assemble, nor read
#    "#pragma pack(push, N)" or "#pragma pack(pop)", whose push and pop
#    are the assembler's tokens on x86-64; each fails to compile, loudly,
#    and generated code has none of them.  Everything else in tccpp.c,
#    tccgen.c and the x86-64 back end uses keywords before ".byte" only.
#
# 3. The target's predefined macros.  tcc_new and tcc_set_output_type
#    write thirty "#define" lines (__x86_64__, __SIZE_TYPE__, __TINYC__,
#    ...) into the state through cstr_printf, each formatted by the C
#    library's vsnprintf, and every compile then reads them: about 113k
#    instructions a compile, of 383k for a one-line function.  Generated
#    code tests no macro (the tcc tier compiles libtcc's own branch of
#    its text), so libtcc.o's calls of cstr_printf go to wb_jit_tcc_predef
#    (src/tiers/jit.c), which writes nothing.  They write nothing else
#    this library uses: the rest are tcc_define_symbol,
#    tcc_undefine_symbol and the options -D, -U and -include, which it
#    never calls or gives.  __BASE_FILE__, which tccpp.o defines, stays.
#
# The first two texts are cut only where each is exactly the one this
# script knows (its bytes' SHA-256, with a NUL on either side), the third
# only where the first was (the built-in text reads the defines) and
# libtcc.o calls cstr_printf; any other libtcc is left as it is, which
# costs time and nothing else.
set -eu

dir=$1
obj=$dir/tccpp.o

byte() { od -An -tx1 -j "$1" -N1 "$obj" | tr -d ' \n'; }
sum() { dd if="$obj" bs=1 skip="$1" count="$2" 2>/dev/null |
        sha256sum | cut -d' ' -f1; }
# exact OFFSET LEN SHA256: whether the LEN bytes at OFFSET are the text
# with that SHA-256 and a NUL on either side.
exact() {
    [ "$(echo "$1" | wc -w)" -eq 1 ] &&
    [ "$(byte $(($1 - 1)))" = 00 ] && [ "$(byte $(($1 + $2)))" = 00 ] &&
    [ "$(sum "$1" "$2")" = "$3" ]
}
nul() { printf '\0' | dd of="$obj" bs=1 seek="$1" conv=notrunc 2>/dev/null; }

echo "/* Written by scripts/trim-libtcc.sh: what it cut from $dir. */"
if [ ! -f "$obj" ]; then
    echo "trim-libtcc: no $obj in this libtcc; its texts are left" >&2
    echo "#define WB_TCC_BUILTINS_CUT 0"
    echo "#define WB_TCC_ASM_KEYWORDS_CUT 0"
    echo "#define WB_TCC_PREDEFS_CUT 0"
    exit 0
fi

off=$(grep -obUaF 'typedef struct{' "$obj" | cut -d: -f1)
if exact "$off" 2226 \
        5d5595bdf502f1a024a027d2b8f07594ff60edbff3bd465a41cf56dd55c1d418; then
    nul "$off"
    echo "#define WB_TCC_BUILTINS_CUT 1"
    builtins=1
else
    echo "trim-libtcc: $obj does not hold the built-in text of Debian" \
         "bookworm's libtcc; it is left" >&2
    echo "#define WB_TCC_BUILTINS_CUT 0"
    builtins=0
fi

if [ $builtins = 1 ] &&
   nm -u "$dir/libtcc.o" 2>/dev/null | grep -q ' cstr_printf$'; then
    objcopy --redefine-sym cstr_printf=wb_jit_tcc_predef "$dir/libtcc.o"
    echo "#define WB_TCC_PREDEFS_CUT 1"
else
    echo "trim-libtcc: the predefined macros of $dir/libtcc.o are left" >&2
    echo "#define WB_TCC_PREDEFS_CUT 0"
fi

off=$(grep -obUaP 'int\x00void\x00char\x00if\x00else\x00' "$obj" |
      cut -d: -f1)
if exact "$off" 6541 \
        522c692330b2d1730716c9ee7621bcc3c36e7e9de388b4f42f4a7a945647fa22; then
    nul $((off + 1851))  # ".byte", after "_setjmp"
    echo "#define WB_TCC_ASM_KEYWORDS_CUT 1"
else
    echo "trim-libtcc: $obj does not hold the keyword list of Debian" \
         "bookworm's libtcc; it is left" >&2
    echo "#define WB_TCC_ASM_KEYWORDS_CUT 0"
fi
