#!/bin/sh
# run.sh BIN -- the library trusts none of its environment in a process
# running with privileges its user lacks.  It reads the environment only
# through wb_rt_getenv (secure_getenv).  BIN (env_trust.c) runs twice as
# the user nobody, with WRAPBAKE_CACHE_DIR set, WRAPBAKE_CUDART naming a
# library that leaves a mark when loaded (mark.c), and PATH leading to a
# "cc" that leaves one when run: plainly, where it must follow all three,
# and as a setuid-root copy, where it must follow none, and refuses the
# cc tier.  BIN also runs as root with a PATH leading to a cc in a
# directory of nobody's, which it must refuse to run.
set -u
if [ $# -ne 1 ]; then
    echo "usage: $0 ENV_TRUST" >&2
    exit 2
fi
bin=$(realpath "$1") || exit 2
cd "$(dirname "$0")/../.." || exit 2
suite=trust
. tests/shared/checks.sh
# shown CHECK: a failed CHECK, with the output below it.
shown() { bad "$1:"; sed 's/^/    /' "$tmp/out"; }

# The one way in: no getenv in the library but wb_rt_getenv's own.
if grep -n 'getenv *(' src/core/* src/spec/* src/abi/* src/gen/* src/tiers/* |
        grep -v 'wb_rt_getenv *(\|src/core/error.c:.*secure_getenv(name)' \
        >"$tmp/out"; then
    shown "the library reads its environment through wb_rt_getenv alone"
else ok; fi

# skip WHY: the setuid checks cannot run here.
skip() { echo "trust: the runs as nobody SKIPPED: $*"; summary; exit; }
[ "$(id -u)" -eq 0 ] || skip "making a setuid-root program needs root"
command -v setpriv >/dev/null || skip "no setpriv (util-linux)"
id nobody >/dev/null 2>&1 || skip "no user nobody"

chmod 755 "$tmp"
mkdir -m 777 "$tmp/marks"
check "mark.so builds" $cc -shared -fPIC -o "$tmp/mark.so" tests/trust/mark.c
mkdir "$tmp/bin"
printf '#!/bin/sh\n: >"$WB_TRUST_MARK-cc"\nexit 1\n' >"$tmp/bin/cc"
chmod 755 "$tmp/bin/cc"
cp "$bin" "$tmp/env-trust"
chmod 755 "$tmp/env-trust"

# run MARK: env-trust as nobody, printing into $tmp/out.
run() {
    setpriv --reuid=nobody --regid=nogroup --clear-groups \
        env WRAPBAKE_CACHE_DIR="$tmp/cache" WRAPBAKE_CUDART="$tmp/mark.so" \
        PATH="$tmp/bin:$PATH" CC= WB_TRUST_MARK="$tmp/marks/$1" \
        "$tmp/env-trust" >"$tmp/out" 2>&1
}

# Plainly: the environment is followed.
run plain || shown "the plain run failed"
grep -qx "cache $tmp/cache" "$tmp/out" && ok ||
    shown "a plain run takes WRAPBAKE_CACHE_DIR"
cuda=yes
if [ -e "$tmp/marks/plain" ]; then ok
elif grep -q "not supported by this build" "$tmp/out"; then cuda=no
else shown "a plain run loads WRAPBAKE_CUDART"; fi
[ -e "$tmp/marks/plain-cc" ] && ok || shown "a plain run's cc tier runs PATH's cc"

# Root with nobody's PATH, as sudo -E or a service started from a user's
# shell has it: the cc found there, in a directory of nobody's, is
# refused with the reason and not run, and nothing is stored.
mkdir "$tmp/theirs"
cp "$tmp/bin/cc" "$tmp/theirs/cc"
chown -R nobody "$tmp/theirs"
env WRAPBAKE_CACHE_DIR="$tmp/root-cache" WRAPBAKE_CUDART="$tmp/mark.so" \
    PATH="$tmp/theirs:$PATH" CC= WB_TRUST_MARK="$tmp/marks/root" \
    "$tmp/env-trust" >"$tmp/out" 2>&1 || shown "the root run failed"
[ ! -e "$tmp/marks/root-cc" ] && ok || shown "root runs no cc of nobody's"
grep "^cc WB_ERR_COMPILE: cannot run the system compiler 'cc': $tmp/theirs/cc is not trusted: " "$tmp/out" |
    grep -q "theirs belongs to uid $(id -u nobody)\$" && ok ||
    shown "root refuses nobody's cc, saying why"
[ -z "$(ls -A "$tmp/root-cache" 2>/dev/null)" ] && ok ||
    shown "root stores nothing for nobody's cc"

# Setuid root: nobody's environment is ignored.
chmod u+s "$tmp/env-trust"
run setuid || shown "the setuid run failed"
if ! grep -qx "uid 65534 euid 0" "$tmp/out"; then
    echo "trust: the setuid run SKIPPED: $tmp ignores the setuid bit"
else
    grep -qx "cache (none)" "$tmp/out" && ok ||
        shown "a setuid run ignores WRAPBAKE_CACHE_DIR"
    if [ -e "$tmp/marks/setuid" ]; then shown "a setuid run ignores WRAPBAKE_CUDART"
    elif [ $cuda = yes ]; then ok; fi
    [ ! -e "$tmp/marks/setuid-cc" ] && ok || shown "a setuid run runs no cc"
    grep -q "^cc WB_ERR_UNSUPPORTED: the cc tier runs no system compiler in a process running with privileges" "$tmp/out" &&
        ok || shown "a setuid run refuses the cc tier"
    grep -q "^auto WB_OK: stays on tcc: the cc tier runs no system compiler" "$tmp/out" &&
        ok || shown "a setuid run's auto wrapper stays on tcc"
fi
[ $cuda = yes ] || echo "trust: built without CUDA, which reads no WRAPBAKE_CUDART"
summary
