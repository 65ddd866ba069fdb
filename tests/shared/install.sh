#!/bin/sh
# `make install` into a staging directory, as a package build does: the
# files land where pkg-config says, a program built from its flags runs
# the README example against the shared library (and, with --static,
# against the archive), and `make uninstall` takes back every file and
# every directory it made.
#
#   sh tests/shared/install.sh MAKE BUILD_DIR
#
# $CC compiles (default cc).  Prints a line per failed check and a
# summary; the status is 1 when any failed.
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 MAKE BUILD_DIR" >&2
    exit 2
fi
cd "$(dirname "$0")/../.." || exit 2
make=$1
build=$2
suite=install
. tests/shared/checks.sh

root=$tmp/root
usr=$root/usr
inst="$make -s --no-print-directory BUILD=$build PREFIX=/usr DESTDIR=$root"
check "make install" $inst install
for f in lib/libwrapbake.a lib/libwrapbake.so include/wrapbake.h \
         bin/wrapbake bin/wrapbake-bench lib/pkgconfig/wrapbake.pc \
         share/doc/wrapbake/README.md share/doc/wrapbake/docs/api.md; do
    if [ -e "$usr/$f" ]; then ok; else bad "make install left out $f"; fi
done

pc() {
    PKG_CONFIG_LIBDIR=$usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root \
        pkg-config "$@" wrapbake
}
sed -n '/^<!-- example -->/,/^```$/p' README.md | sed '1,2d;$d' >"$tmp/example.c"
# shellcheck disable=SC2046
if $cc -std=c11 $(pc --cflags) -o "$tmp/shared" "$tmp/example.c" $(pc --libs) &&
    LD_LIBRARY_PATH=$usr/lib "$tmp/shared" >"$tmp/out" 2>&1 &&
    grep -q "version 3" "$tmp/out" &&
    LD_LIBRARY_PATH=$usr/lib ldd "$tmp/shared" | grep -q "$usr/lib/libwrapbake.so"
then ok; else bad "the example built from pkg-config --libs"; fi
# --static: what the archive needs beside it, libtcc being inside.
case " $(pc --libs --static) " in
    *" -ltcc "*) bad "pkg-config --static names -ltcc" ;;
    *" -lwrapbake -ldl -lpthread -lm "*) ok ;;
    *) bad "pkg-config --static lacks -ldl -lpthread -lm: $(pc --libs --static)" ;;
esac
# docs/install.md's command for the archive, which names it by its path.
# shellcheck disable=SC2046
if $cc -std=c11 $(pc --cflags) -o "$tmp/static" "$tmp/example.c" \
        "$(pc --variable=libdir)/libwrapbake.a" -ldl -lpthread -lm &&
    "$tmp/static" | grep -q "version 3" &&
    ! readelf -d "$tmp/static" | grep NEEDED | grep -q libwrapbake
then ok; else bad "the example linked with the archive"; fi

check "make uninstall" $inst uninstall
left=$(cd "$root" && find . -mindepth 1 ! -type d)
if [ -z "$left" ]; then ok; else bad "make uninstall left:" $left; fi
# The directories it made, now empty, go too.
for d in lib/pkgconfig lib include bin share/doc/wrapbake; do
    if [ -d "$usr/$d" ]; then bad "make uninstall left $d"; else ok; fi
done

summary
