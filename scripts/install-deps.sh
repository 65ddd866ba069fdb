#!/bin/sh
# The Debian packages wrapbake builds and tests with.
#
#   sh scripts/install-deps.sh          installs those missing (root or sudo)
#   sh scripts/install-deps.sh --check  says which the build lacks, installs
#                                       nothing, and fails if any
#
# `make deps`, `make test` and `make bench` install; any other make target
# only checks.  Safe to run again.
set -eu

# What the library, the wrapbake command and the benchmark build with.
build="build-essential binutils pkg-config libtcc-dev tcc libdlpack-dev
libyaml-dev"
# What the tests and the benchmark add: Criterion, PyTorch for the
# conformance suite (tests/torch), and valgrind, whose callgrind counts the
# instructions of `wrapbake-bench --scale`.
tests="libcriterion-dev python3-torch valgrind"

missing_of() {
    out=""
    for p in $1; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
            out="$out $p"
    done
    echo "$out"
}

if [ "${1:-}" = "--check" ]; then
    missing=$(missing_of "$build")
    [ -z "$missing" ] && exit 0
    echo "install-deps: the build needs these Debian packages:$missing" >&2
    echo "install-deps: run 'make deps' (as root, or with sudo), or" \
        "apt-get install$missing" >&2
    exit 1
fi

missing=$(missing_of "$build $tests")
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing"
if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
else
    echo "install-deps: not root and no sudo; install these yourself:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing
